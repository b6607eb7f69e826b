/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: scenario files for `metastable simulate`.
 *
 * A scenario file says what happens to a service during a simulated run
 * (model/sim.h): the baseline offered load, the triggers, and optionally
 * the simulation's settings.  The service itself (model and retry policy)
 * comes from the command line or a service file.
 *
 *   # a 3-second database stall under 60 requests/s
 *   duration: 300s            # required
 *   offered_load: 60/s        # required: the baseline
 *   sample_interval: 1s       # optional: output window
 *   dt: 50ms                  # optional: fluid bin width
 *   seed: 7                   # optional: DES seed
 *   backoff:                  # optional
 *     kind: full-jitter       # none, constant, exponential, full-jitter,
 *     base: 100ms             #   equal-jitter, decorrelated-jitter
 *     cap: 5s
 *   budget_window: 10s        # optional: retry budget window
 *   token_capacity: 100       # optional: token bucket size
 *   triggers:                 # optional
 *     - kind: stall           # the pool shrinks: servers (erlang model)
 *       start: 60s            #   or capacity (capacity model), for hold
 *       hold: 3s
 *       servers: 0
 *     - kind: spike           # extra load: load, start, hold; rise and
 *       start: 10s            #   fall optional (0)
 *       hold: 20s
 *       load: 60/s
 *     - kind: ramp            # the same with ramps: up over rise, hold,
 *       start: 100s           #   down over fall
 *       rise: 60s
 *       fall: 120s
 *       load: 80/s
 *     - kind: drop            # less load (a positive amount, subtracted)
 *       start: 200s
 *       hold: 30s
 *       load: 50/s
 *
 * Durations are seconds or a number with s, ms, us; rates are per second,
 * optionally written with /s (ms_parse_duration, ms_parse_rate).
 */
#ifndef METASTABLE_SCENARIO_H
#define METASTABLE_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A scenario file: the scenario, and which optional settings it gave. */
typedef struct {
  ms_scenario scenario;
  bool has_sample_interval, has_dt, has_seed, has_backoff;
  bool has_budget_window, has_token_capacity;
  double sample_interval, dt; /* s */
  uint64_t seed;
  ms_backoff backoff;
  double budget_window;  /* s */
  double token_capacity; /* tokens */
} ms_scenario_file;

/*
 * ms_scenario_file_load: read and check a scenario file.
 *   path    file to read
 *   out     the scenario and settings on success, zeroed on failure
 *   errbuf  on failure "path:line:column: what is wrong (key 'k')"
 * Returns 0, or -1.  Every field is checked for its type, unit and range
 * here; whether a stall's servers or capacity fits the service's model is
 * checked when the scenario meets the service (ms_sim_config_check).
 */
int ms_scenario_file_load(const char *path, ms_scenario_file *out, char *errbuf,
                          size_t errlen);

/* As ms_scenario_file_load, from a buffer; name is used in messages. */
int ms_scenario_file_parse(const char *text, size_t len, const char *name,
                           ms_scenario_file *out, char *errbuf, size_t errlen);

/* Copy the scenario and every setting the file gave into *c. */
void ms_scenario_file_apply(const ms_scenario_file *f, ms_sim_config *c);

#ifdef __cplusplus
}
#endif

#endif
