/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: the model library, one header per concern.
 *
 *   base.h       status codes, messages, the model's limits
 *   erlang.h     queues: Erlang B and C, the wait tail, M/M/c/K
 *   hazard.h     the storm hazard: the mean time to a storm of a pool
 *   hazard_table.h  that time over the offered load, per service
 *   loop.h       the retry loop: p(x), A(p), lambda(x); MS_PARAMS
 *   landscape.h  equilibria, tipping and recovery loads, the state and
 *                the verdict of one interval (ms_analyze)
 *   plan.h       the capacity plan and the safe settings at a peak
 *   retrial.h    the M/M/c/K queue whose rejections retry soon
 *   stats.h      calibration's estimator and residual; run summaries
 *   sim.h        the fluid and discrete-event engines
 *   tolerance.h  the longest stall or spike survived
 *   exact.h      GMP enclosures (not included here: it needs gmp.h)
 *
 * This header includes them all, for code that wants the whole model.
 * The design behind every formula: doc/design.md.
 */
#ifndef METASTABLE_MODEL_H
#define METASTABLE_MODEL_H

#include "base.h"
#include "erlang.h"
#include "hazard.h"
#include "hazard_table.h"
#include "landscape.h"
#include "loop.h"
#include "plan.h"
#include "retrial.h"
#include "sim.h"
#include "stats.h"
#include "tolerance.h"

#endif
