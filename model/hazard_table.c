/* SPDX-License-Identifier: MIT */
/*
 * The time to a storm over the offered load, tabulated per service
 * (doc/design.md §1.12, "The table").
 */
#include "hazard_table.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "internal.h"

/* The grid's load at point i: quadratic in the distance to the tipping
 * load below it, cubic above it up to MS_HAZARD_TABLE_TOP times it (steps
 * shrink toward the fold, where ln time changes fastest; just past it a
 * large pool's time falls by e^7 within 0.2 %). */
static double grid_load(double rec, double tip, int i) {
  const int below = MS_HAZARD_TABLE_BELOW;
  const int above = MS_HAZARD_TABLE_POINTS - MS_HAZARD_TABLE_BELOW;
  if (i < below) {
    double u = 1.0 - (double)i / (double)(below - 1);
    return i == below - 1 ? tip : tip - (tip - rec) * u * u;
  }
  double v = (double)(i - below + 1) / (double)above;
  return tip * (1.0 + (MS_HAZARD_TABLE_TOP - 1.0) * v * v * v);
}

double ms_hazard_states(const ms_service_params *s) {
  if (s->model.kind != MS_MODEL_ERLANG)
    return 0.0;
  return (double)s->model.servers *
         (1.0 + s->model.service_rate * s->model.timeout);
}

int ms_hazard_table_init(ms_hazard_table *t, const ms_service_params *s,
                         double recovery_load, double tipping_load,
                         ms_error *err) {
  memset(t, 0, sizeof *t);
  if (!(isfinite(recovery_load) && isfinite(tipping_load) &&
        recovery_load > 0 && recovery_load <= tipping_load))
    return ms_fail(err, MS_EINVAL,
                   "hazard table: recovery load %g and tipping load %g "
                   "must be finite, > 0, the first at most the second",
                   recovery_load, tipping_load);
  double never;
  int st = ms_time_to_storm(s, 0.0, &never, err);
  if (st != MS_OK)
    return st;
  double states = ms_hazard_states(s);
  if (!(states <= MS_HAZARD_TABLE_MAX_STATES))
    return ms_fail(err, MS_ELIMIT,
                   "hazard table: c + c mu T = %g states passes %g: no table",
                   states, MS_HAZARD_TABLE_MAX_STATES);
  t->calls = 1;
  t->recovery_load = recovery_load;
  t->tipping_load = tipping_load;
  for (int i = 0; i < MS_HAZARD_TABLE_POINTS; i++)
    t->load[i] = grid_load(recovery_load, tipping_load, i);
  t->valid = true;
  return MS_OK;
}

bool ms_hazard_table_complete(const ms_hazard_table *t) {
  return t->valid && t->built == MS_HAZARD_TABLE_POINTS;
}

/* The finished table: monotone from the bottom up (the method's time
 * falls with the load; a point that rose would only be rounding), and the
 * time at the fold. */
static void finish(ms_hazard_table *t) {
  for (int i = 1; i < MS_HAZARD_TABLE_POINTS; i++)
    t->ln_time[i] = fmin(t->ln_time[i], t->ln_time[i - 1]);
  t->fold_time = exp(t->ln_time[MS_HAZARD_TABLE_BELOW - 1]);
  if (t->fold_time > MS_TIME_TO_STORM_NEVER)
    t->fold_time = MS_TIME_TO_STORM_NEVER;
}

int ms_hazard_table_step(ms_hazard_table *t, const ms_service_params *s,
                         int (*stop)(void *ctx), void *ctx, ms_error *err) {
  if (!t->valid)
    return ms_fail(err, MS_EINVAL, "hazard table: not valid");
  if (t->built == MS_HAZARD_TABLE_POINTS)
    return MS_OK;
  const double ln_never = log(MS_TIME_TO_STORM_NEVER);
  int i = MS_HAZARD_TABLE_POINTS - 1 - t->built;
  double v;
  if (t->walk.n == 0)
    t->calls++;
  int st = ms_time_to_storm_walk(s, t->load[i], &t->walk, stop, ctx, &v, err);
  if (st != MS_OK) {
    t->valid = false;
    return st;
  }
  if (!t->walk.done)
    return MS_OK; /* stopped part way: the next step goes on */
  t->walk = (ms_storm_walk){0};
  t->ln_time[i] = fmin(log(v), ln_never);
  t->built++;
  /* never here is never at every lower load */
  if (v >= MS_TIME_TO_STORM_NEVER)
    for (; t->built < MS_HAZARD_TABLE_POINTS; t->built++)
      t->ln_time[MS_HAZARD_TABLE_POINTS - 1 - t->built] = ln_never;
  if (t->built == MS_HAZARD_TABLE_POINTS)
    finish(t);
  return MS_OK;
}

int ms_hazard_table_build(ms_hazard_table *t, const ms_service_params *s,
                          double recovery_load, double tipping_load,
                          ms_error *err) {
  int st = ms_hazard_table_init(t, s, recovery_load, tipping_load, err);
  while (st == MS_OK && !ms_hazard_table_complete(t))
    st = ms_hazard_table_step(t, s, NULL, NULL, err);
  return st;
}

int ms_hazard_table_lookup(const ms_hazard_table *t, double offered_load,
                           double *seconds, ms_error *err) {
  if (!ms_hazard_table_complete(t))
    return ms_fail(err, MS_EINVAL, "hazard table: not complete");
  if (!(isfinite(offered_load) && offered_load >= 0))
    return ms_fail(err, MS_EINVAL,
                   "hazard table: offered load %g must be finite and >= 0",
                   offered_load);
  const int n = MS_HAZARD_TABLE_POINTS;
  const double ln_never = log(MS_TIME_TO_STORM_NEVER);
  double ln;
  if (offered_load < t->recovery_load) {
    *seconds = MS_TIME_TO_STORM_NEVER;
    return MS_OK;
  }
  if (offered_load >= t->load[n - 1]) {
    ln = t->ln_time[n - 1];
  } else {
    /* the last point at or under the load: load[lo] <= x < load[hi] */
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
      int mid = lo + (hi - lo) / 2;
      if (t->load[mid] <= offered_load)
        lo = mid;
      else
        hi = mid;
    }
    double w = t->load[hi] - t->load[lo];
    double f = w > 0 ? (offered_load - t->load[lo]) / w : 1.0;
    /* From never to a finite time the chain's time climbs without bound
     * toward the lower point (at the recovery load itself it is never):
     * the upper point's time, a lower bound, and so a storm no later than
     * the table says. */
    if (t->ln_time[lo] >= ln_never && t->ln_time[hi] < ln_never && f > 0)
      f = 1.0;
    ln = t->ln_time[lo] + f * (t->ln_time[hi] - t->ln_time[lo]);
  }
  double v = exp(ln);
  *seconds = ln >= ln_never || v > MS_TIME_TO_STORM_NEVER
                 ? MS_TIME_TO_STORM_NEVER
                 : fmax(v, DBL_MIN);
  return MS_OK;
}
