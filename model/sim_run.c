/* SPDX-License-Identifier: MIT */
/*
 * Either engine by name (sim.h): ms_sim_run and the latch threshold's
 * bisection.  Apart from sim.c so that a program that runs only the fluid
 * engine (the plugin's stall tolerance) does not link the DES.
 */
#include <math.h>
#include <string.h>

#include "sim_internal.h"

const char *ms_sim_engine_name(ms_sim_engine e) {
  switch (e) {
  case MS_ENGINE_FLUID:
    return "fluid";
  case MS_ENGINE_DES:
    return "des";
  }
  return "unknown";
}

int ms_sim_run(ms_sim_engine engine, const ms_sim_config *c, ms_sim_sink sink,
               void *ctx, ms_sim_summary *summary, ms_error *err) {
  switch (engine) {
  case MS_ENGINE_FLUID:
    return ms_sim_fluid(c, sink, ctx, summary, err);
  case MS_ENGINE_DES:
    return ms_sim_des(c, sink, ctx, summary, err);
  }
  return ms_fail(err, MS_EINVAL, "engine %d is neither fluid nor des",
                 (int)engine);
}

/* Whether a run with trigger i held for `hold` ends in a storm. */
static int latches(ms_sim_engine engine, const ms_sim_config *c, int i,
                   double hold, bool *storm, ms_error *err) {
  ms_sim_config probe = *c;
  probe.scenario.triggers[i].hold = hold;
  ms_sim_summary sum;
  int st = ms_sim_run(engine, &probe, NULL, NULL, &sum, err);
  if (st == MS_OK)
    *storm = !sum.recovered;
  return st;
}

int ms_sim_latch_threshold(ms_sim_engine engine, const ms_sim_config *c,
                           int trigger, double lo, double hi, double rel_tol,
                           double *threshold, ms_error *err) {
  if (c == NULL || threshold == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_sim_latch_threshold");
  if (trigger < 0 || trigger >= c->scenario.n_triggers)
    return ms_fail(err, MS_EINVAL, "trigger index %d is outside [0, %d)",
                   trigger, c->scenario.n_triggers);
  if (!isfinite(lo) || !isfinite(hi) || lo < 0.0 || !(hi > lo))
    return ms_fail(err, MS_EINVAL,
                   "hold bracket [%g, %g] s needs 0 <= lo < hi, finite", lo,
                   hi);
  if (!(rel_tol > 0.0 && rel_tol < 1.0)) {
    char v[32];
    return ms_fail(err, MS_EINVAL, "relative tolerance %s is outside (0, 1)",
                   ms_format_against(v, rel_tol, rel_tol <= 0.0 ? 0.0 : 1.0));
  }
  bool storm;
  int st = latches(engine, c, trigger, lo, &storm, err);
  if (st != MS_OK)
    return st;
  if (storm)
    return ms_fail(err, MS_EINVAL,
                   "a hold of lo = %g s already ends in a storm", lo);
  st = latches(engine, c, trigger, hi, &storm, err);
  if (st != MS_OK)
    return st;
  if (!storm)
    return ms_fail(err, MS_EINVAL,
                   "a hold of hi = %g s still ends out of storm", hi);
  while (hi - lo > rel_tol * hi) {
    double mid = lo + 0.5 * (hi - lo);
    st = latches(engine, c, trigger, mid, &storm, err);
    if (st != MS_OK)
      return st;
    if (storm)
      hi = mid;
    else
      lo = mid;
  }
  *threshold = lo + 0.5 * (hi - lo);
  return MS_OK;
}

/* ---- memory --------------------------------------------------------- */

int ms_tolerance_run(const ms_sim_config *c, const ms_tolerance_query *q,
                     ms_tolerance *out, ms_error *err) {
  return ms_tolerance_with(c, q, ms_sim_des, out, err);
}
