/* SPDX-License-Identifier: MIT */
/* Helpers shared by the simulation engines; not installed. */
#ifndef METASTABLE_SIM_INTERNAL_H
#define METASTABLE_SIM_INTERNAL_H

#include "internal.h"
#include "sim.h"
#include "tolerance.h"

/* Cells of the discretised decorrelated-jitter distribution. */
#define MS_DECORR_CELLS 4096

/*
 * The distribution of one backoff delay, as a mixture of point masses and
 * uniform pieces: exactly for every kind but decorrelated jitter, whose
 * pieces are the cells of its discretised recursion.  Each component is
 * (lo, hi, weight); lo == hi is a point mass.  Weights sum to 1.
 */
typedef struct {
  int n;
  double *lo, *hi, *w; /* n entries each */
} ms_delay_dist;

/*
 * The delay distributions of retries 1 .. r for a valid backoff, r >= 0,
 * dist room for r: dist[min(k, n) - 1] for retry k, where *n_built = n
 * <= r is the number built.  Later retries share the last one, which is
 * where the delay stops changing: from the first for none and constant,
 * from the first capped ceiling for exponential and the two jitters, and
 * for decorrelated jitter once its recursion is stationary (every weight
 * within 2^-53 of the previous retry's; a few dozen retries).  So memory
 * and time stay bounded however many retries there are.  Allocates;
 * release with ms_delay_dists_free(dist, r).  Returns MS_OK or MS_ENOMEM.
 */
int ms_delay_dists_build(const ms_backoff *b, int r, ms_delay_dist *dist,
                         int *n_built, ms_error *err);
void ms_delay_dists_free(ms_delay_dist *dist, int r);

/* What happened in one output window, in counts (not rates).  The last
 * three are the service's own view, measured by the DES only (the fluid
 * engine leaves them 0 and `served` false): the integral of the busy
 * servers over the window (server-seconds), the attempts whose service
 * completed in it (abandoned ones and failed ones included), and the sum
 * of those attempts' service times (s). */
typedef struct {
  double first, retries, failures, successes, given_up, refused;
  bool served; /* the three below were measured */
  double busy_time, completions, service_time;
} ms_sim_counts;

/*
 * Turns windows of counts into samples (the plugin's verdict included),
 * passes them to the sink and keeps the summary.  The landscape of every
 * pool the scenario uses is built once, at init.
 */
typedef struct {
  const ms_sim_config *cfg;
  ms_sim_sink sink;
  void *ctx;
  ms_sim_summary sum;
  int n_pools;
  ms_failure_model pool[MS_SIM_MAX_TRIGGERS + 1];
  bool pool_ok[MS_SIM_MAX_TRIGGERS + 1]; /* landscape built (servers > 0) */
  ms_landscape ls[MS_SIM_MAX_TRIGGERS + 1];
  double collapse_amp; /* A(1): amplification when every attempt fails */
  bool counted; /* rates are counts of events (the DES), with their noise;
                   the fluid engine's are expectations */
  bool has_prev;
  ms_state prev;
  bool prev_storm; /* the previous window's storm flag (ms_sim_sample.storm) */
  double off_healthy_at, off_collapsed_at; /* end of last window outside */
  bool in_storm; /* the last window was in a storm (summary's sense) */
  bool stop;
} ms_sim_recorder;

int ms_sim_recorder_init(ms_sim_recorder *r, const ms_sim_config *c,
                         ms_sim_sink sink, void *ctx, ms_error *err);

/*
 * One window [t_end - width, t_end) with counts cnt and backlog at t_end.
 * Sets r->stop when the sink asks to stop.  Errors of ms_analyze.
 */
int ms_sim_recorder_window(ms_sim_recorder *r, double t_end, double width,
                           const ms_sim_counts *cnt, double backlog,
                           ms_error *err);

/* Final summary (duration, events as given). */
void ms_sim_recorder_finish(ms_sim_recorder *r, double duration, double events,
                            ms_sim_summary *out);

/*
 * The fluid engine's bin width dt, s, and bins per sample window: c->dt
 * when set (it must divide the sample interval), else the default of
 * ms_sim_config.dt.  MS_OK, MS_EINVAL, MS_ELIMIT (sim_fluid.c).
 */
int ms_sim_fluid_dt(const ms_sim_config *c, double *dt, long *spb,
                    ms_error *err);

/* An engine: ms_sim_fluid or ms_sim_des. */
typedef int (*ms_sim_runner)(const ms_sim_config *c, ms_sim_sink sink,
                             void *ctx, ms_sim_summary *summary, ms_error *err);

/* ms_trigger_tolerance with the discrete-event engine des for a query of
 * MS_ENGINE_DES (NULL: such a query is MS_EINVAL), so that the plugin's
 * library links no DES (tolerance.c; ms_tolerance_run in sim_run.c). */
int ms_tolerance_with(const ms_sim_config *c, const ms_tolerance_query *q,
                      ms_sim_runner des, ms_tolerance *out, ms_error *err);

#endif
