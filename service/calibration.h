/* SPDX-License-Identifier: MIT */
/*
 * The tracker's calibration (doc/design.md §1.8): learn the service time,
 * the base failure and the pool size from what collectd reads, hand the
 * model the learned values once they are known well enough, and say how
 * far the model is from what is observed.  Internal to the service layer:
 * ms_tracker_step (tracker.c) is its only caller.
 */
#ifndef METASTABLE_CALIBRATION_H
#define METASTABLE_CALIBRATION_H

#include <stddef.h>

#include "service.h"

/* Low load, where the base failure is learned (online) or estimated
 * (service/fit.c): the overload part of p(x) (the wait tail, or the
 * excess over the capacity) under MS_LOW_LOAD_OVERLOAD and the attempt
 * rate under MS_LOW_LOAD_UTILIZATION of the saturation load
 * (doc/design.md §1.8). */
#define MS_LOW_LOAD_OVERLOAD 1e-3
#define MS_LOW_LOAD_UTILIZATION 0.9
/* The largest base failure learned or estimated (the model needs
 * base < 1). */
#define MS_BASE_FAILURE_MAX 0.999

/*
 * ms_calibration_update: take this interval's samples and decide the
 * parameters the model uses.
 *   c        the service's calibration memory
 *   spec     the service
 *   current  the landscape in use, or NULL before the first one: a learned
 *            value closer than calibration_threshold to the one it was
 *            built with keeps it (the landscape is not rebuilt)
 *   storm    the previous interval's storm flag (base failure is sampled
 *            only outside storms)
 *   inf      this interval's inference
 *   tau      seconds the rates cover, > 0
 *   params   in: the file's parameters with this interval's pool size;
 *            out: with the learned values in use substituted
 *   info     out: "" or a line for the log (a learned value taken into use)
 *   problem  out: "" or why a calibration input gave no sample (busy
 *            servers above the pool, completions above the attempts)
 */
void ms_calibration_update(ms_calibration *c, const ms_service_spec *spec,
                           const ms_landscape *current, bool storm,
                           const ms_inference *inf, double tau,
                           ms_service_params *params, char *info,
                           size_t info_len, char *problem, size_t problem_len);

/*
 * ms_calibration_report: the calibration outputs of report r (service time
 * estimate, its error and ratio, the learned base failure and pool, how
 * many learned values are in use, the model's failure probability at the
 * observed attempt rate and the residual), from the landscape in use.
 */
void ms_calibration_report(const ms_calibration *c, const ms_service_spec *spec,
                           const ms_landscape *ls, const ms_inference *inf,
                           double tau, ms_report *r);

/*
 * ms_calibration_misfit: whether the misfit WARNING goes out this interval:
 * |model_residual| beyond misfit_threshold (or a service time estimate more
 * than misfit_threshold standard errors and 10 % from the one in use) for
 * misfit_intervals consecutive intervals outside storms, and not while a
 * value calibrate: asks for has fewer than calibration_intervals samples
 * (the file's value is then a prior about to be replaced); once, armed
 * again after clear_after intervals that fit.  room: whether the step can
 * still take a notification; without it the WARNING waits for the next
 * interval that has room (it is never marked sent unsent).  msg: the text,
 * under 256 bytes.
 */
bool ms_calibration_misfit(ms_calibration *c, const ms_service_spec *spec,
                           const ms_landscape *ls, const ms_report *r,
                           bool previous_storm, int clear_after, bool room,
                           char *msg, size_t len);

#endif
