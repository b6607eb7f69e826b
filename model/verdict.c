/* SPDX-License-Identifier: MIT */
/*
 * Verdicts from observations (doc/design.md §1.7): whether a storm is
 * happening, the load to shed, and how long a backlog takes to drain.
 * The state (ms_analyze) says where the service is headed; this file says
 * whether the observations show users failing now.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "internal.h"

bool ms_beyond_noise(double obs, double ref, double tau) {
  if (!(tau > 0.0))
    return false;
  double z = MS_EVIDENCE_Z;
  return obs > ref + z * sqrt(ref / tau) + z * z / tau;
}

double ms_timeout_horizon(const ms_failure_model *m) {
  return m->kind == MS_MODEL_ERLANG ? ms_saturation_load(m) * m->timeout
                                    : (double)INFINITY;
}

/* A backlog past the timeout horizon: every attempt joining it waits
 * longer than the timeout. */
static bool backlog_beyond_horizon(const ms_landscape *ls,
                                   const ms_observation *o) {
  return o->has_queue_length &&
         o->queue_length > ms_timeout_horizon(&ls->params.model);
}

/*
 * An observation weighed against a reference, as two rates per second for
 * ms_beyond_noise (doc/design.md §1.4, §1.7).  weigh_failures: the failed
 * attempts, p_obs x against p x, x the observed attempts (else x_ref),
 * when the failure ratio is observed.  weigh_retries: the retries,
 * x_obs - lambda against a reference retry rate, when the attempts are
 * observed.  Each returns false when it has nothing to weigh.
 */
static bool weigh_failures(const ms_observation *o, double p, double x_ref,
                           double *obs, double *ref) {
  if (!o->has_observed_failure)
    return false;
  double x = o->has_observed_attempts ? o->observed_attempts : x_ref;
  *obs = o->observed_failure * x;
  *ref = p * x;
  return true;
}

static bool weigh_retries(const ms_observation *o, double retries, double *obs,
                          double *ref) {
  if (!o->has_observed_attempts)
    return false;
  *obs = fmax(o->observed_attempts - o->offered_load, 0.0);
  *ref = retries;
  return true;
}

/* The retries per second that failure probability p gives at the offered
 * load, lambda (A(p) - 1); NAN when the policy cannot retry at all
 * (A(1) = 1: the attempts then show nothing). */
static double retries_at(const ms_landscape *ls, double lambda, double p) {
  double A = 1.0, a_fail = 1.0;
  ms_amplification_at(&ls->params, 1.0, lambda, &a_fail, NULL);
  if (!(a_fail > 1.0))
    return NAN;
  ms_amplification_at(&ls->params, p, lambda, &A, NULL);
  return lambda * (A - 1.0);
}

/* The interval the rates cover; an unknown one counts as 1 s. */
static double interval_of(const ms_observation *o) {
  return o->interval > 0.0 ? o->interval : 1.0;
}

/*
 * Whether the observations show more failing than failure probability
 * p_ref does at the observed load: a backlog past the timeout horizon, else
 * the failed attempts when the failure ratio is observed, else the retries.
 */
static bool fails_beyond(const ms_landscape *ls, const ms_observation *o,
                         double p_ref, double x_ref) {
  double obs, ref;
  if (backlog_beyond_horizon(ls, o))
    return true;
  if (weigh_failures(o, p_ref, x_ref, &obs, &ref))
    return ms_beyond_noise(obs, ref, interval_of(o));
  double retries =
      o->has_observed_attempts ? retries_at(ls, o->offered_load, p_ref) : NAN;
  if (!isnan(retries) && weigh_retries(o, retries, &obs, &ref))
    return ms_beyond_noise(obs, ref, interval_of(o));
  return false;
}

/* The side of the boundaries a state is on: the band for both of its
 * basins. */
static ms_state side_of(ms_state s) {
  return s == MS_STATE_METASTABLE ? MS_STATE_VULNERABLE : s;
}

/*
 * Which side of the recovery and tipping loads the offered load is on
 * (doc/design.md §1.4): MS_STATE_STABLE below the recovery load,
 * MS_STATE_VULNERABLE in the band (either basin), MS_STATE_OVERLOADED
 * above the tipping load.  After a previous state the load crosses a
 * boundary only when it lies beyond the noise of counting it over the
 * interval (ms_beyond_noise: above, the boundary as the reference; below,
 * the offered load as the reference); within the noise the previous side
 * holds.  A landscape without a band (no fold) has no band side: a
 * previous band state there goes by the plain comparison.
 */
ms_state ms_load_side(const ms_landscape *ls, const ms_observation *o) {
  double lambda = o->offered_load, rec = ls->recovery_load,
         tip = ls->tipping_load;
  ms_state plain = lambda > tip   ? MS_STATE_OVERLOADED
                   : lambda < rec ? MS_STATE_STABLE
                                  : MS_STATE_VULNERABLE;
  bool band = ls->has_fold && tip > rec;
  if (!o->has_previous)
    return plain;
  ms_state before = side_of(o->previous);
  if (before == MS_STATE_VULNERABLE && !band)
    return plain;
  double tau = interval_of(o);
  if (before != MS_STATE_OVERLOADED && ms_beyond_noise(lambda, tip, tau))
    return MS_STATE_OVERLOADED;
  if (before != MS_STATE_STABLE && ms_beyond_noise(rec, lambda, tau))
    return MS_STATE_STABLE;
  if (band &&
      ((before == MS_STATE_STABLE && ms_beyond_noise(lambda, rec, tau)) ||
       (before == MS_STATE_OVERLOADED && ms_beyond_noise(tip, lambda, tau))))
    return MS_STATE_VULNERABLE;
  return before;
}

/* The load the model is read at on a side: the offered load, else the
 * side's boundary it is within the noise of. */
double ms_side_load(const ms_landscape *ls, ms_state side, double lambda) {
  switch (side) {
  case MS_STATE_STABLE:
    return fmin(lambda, ls->recovery_load);
  case MS_STATE_OVERLOADED:
    return fmax(lambda, ls->tipping_load);
  default:
    return fmin(fmax(lambda, ls->recovery_load), ls->tipping_load);
  }
}

/*
 * Which basin of a bistable band the service sits in (doc/design.md §1.4):
 * the unstable middle equilibrium separates them.  The observed attempts
 * (their retries) and the observed failure ratio (the failed attempts),
 * each where known, say on which side the service is, beyond the noise of
 * the interval's counts: coming from the healthy basin one of them must
 * be clearly above the split; coming from the collapsed one, one clearly
 * below it and neither above; else the previous basin holds.  Else a
 * backlog says it (past the timeout horizon: collapsed); else the previous
 * state holds (hysteresis); a cold start is healthy.  eq, n: the
 * equilibria at lambda_m, the load the model is read at.
 */
bool ms_collapsed_basin(const ms_landscape *ls, const ms_equilibrium *eq, int n,
                        const ms_observation *o, double lambda_m) {
  const ms_equilibrium *split = NULL;
  for (int i = 0; i < n && split == NULL; i++)
    if (!eq[i].stable)
      split = &eq[i];
  bool before = o->has_previous && ms_state_storm(o->previous) != 0;
  if (split == NULL)
    return before;
  /* the split is an equilibrium at lambda_m: its retries are x - lambda_m.
   * Each observation weighs on its own: with one retry a storm's retries
   * are at most lambda, within the noise of the split's at short intervals
   * (8 x 100 ms, 500 ms, 1 retry at 50 req/s and 1 s: 50/s against
   * 28.7 + 25.1), where its failed attempts (100/s against 57.5 + 31.7)
   * are far beyond it: the gunicorn lab's trigger run, doc/design.md §1.4 */
  double obs[2], ref[2], x = split->effective_load;
  bool has[2] = {
      weigh_retries(o, fmax(x - lambda_m, 0.0), &obs[0], &ref[0]),
      weigh_failures(o, split->failure_probability, x, &obs[1], &ref[1])};
  if (has[0] || has[1]) {
    /* Where observations weigh, the previous basin is the collapsed one
     * after a metastable interval, and after an overloaded or a stable one
     * only if its storm flag was up: past the tipping load the model has
     * no healthy equilibrium, but an interval there with nothing failing
     * (storm 0) was not in a storm, and coming back inside the band with
     * no retries is none; below the recovery load it has no collapsed
     * one, but a storm that goes on there (recovering) is on the collapsed
     * side when the load comes back into the band.  A vulnerable interval
     * was in the healthy basin, storm or not (§1.7). */
    bool seen = o->has_previous &&
                (o->previous == MS_STATE_METASTABLE ||
                 (o->previous != MS_STATE_VULNERABLE && o->previous_storm));
    /* above: one is clearly beyond the split; below: one is clearly under
     * it.  Coming from the healthy basin, above moves it; from the
     * collapsed one, below moves it unless the other is above. */
    bool above = false, below = false;
    double tau = interval_of(o);
    for (int i = 0; i < 2; i++)
      if (has[i]) {
        above = above || ms_beyond_noise(obs[i], ref[i], tau);
        below = below || ms_beyond_noise(ref[i], obs[i], tau);
      }
    return seen ? above || !below : above;
  }
  if (o->has_queue_length && isfinite(ms_timeout_horizon(&ls->params.model)))
    return backlog_beyond_horizon(ls, o);
  return before;
}

/* Whether anything observes the service: a failure ratio, attempts, or a
 * backlog with a timeout horizon to weigh it against. */
static bool observed(const ms_landscape *ls, const ms_observation *o) {
  return o->has_observed_failure || o->has_observed_attempts ||
         (o->has_queue_length &&
          isfinite(ms_timeout_horizon(&ls->params.model)));
}

int ms_drain_time(const ms_service_params *s, double lambda, double queue,
                  double *t, ms_error *err) {
  if (s == NULL || t == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_drain_time");
  int st = ms_service_params_check(s, err);
  if (st == MS_OK)
    st = MS_PARAM_CHECK(MS_PARAM_OFFERED_LOAD, lambda, err);
  if (st == MS_OK)
    st = MS_PARAM_CHECK(MS_PARAM_QUEUE_LENGTH, queue, err);
  if (st != MS_OK)
    return st;
  const ms_failure_model *m = &s->model;
  double x_cap = ms_saturation_load(m), horizon = ms_timeout_horizon(m);
  double a_fail = 1.0, a_base = 1.0;
  ms_amplification_at(s, 1.0, lambda, &a_fail, NULL);
  ms_amplification_at(s, m->base_failure, lambda, &a_base, NULL);
  /* A rate within the rounding of x_cap is none: at the recovery load
   * x_cap / A(1), where the model is read while a storm's state holds
   * (§1.4), lambda A(1) rounds to a few ulps under x_cap. */
  double least = 8.0 * DBL_EPSILON * x_cap;
  double total = 0.0;
  if (queue > horizon) {
    double rate = x_cap - lambda * a_fail;
    if (!(rate > least)) {
      *t = INFINITY;
      return MS_OK;
    }
    total += (queue - horizon) / rate;
  }
  double rest = fmin(queue, horizon);
  if (rest > 0.0) {
    double rate = x_cap - lambda * a_base;
    if (!(rate > least)) {
      *t = INFINITY;
      return MS_OK;
    }
    total += rest / rate;
  }
  *t = total;
  return MS_OK;
}

void ms_verdict(const ms_landscape *ls, const ms_observation *o,
                ms_analysis *r) {
  /* the shed load and the drain time are the model's, at its load */
  double lambda = r->model_load;
  bool storm;
  if (!observed(ls, o)) {
    storm = ms_state_storm(r->state) != 0;
  } else if (r->state == MS_STATE_METASTABLE) {
    storm = true; /* an observation beyond the unstable equilibrium */
  } else if (r->state != MS_STATE_OVERLOADED &&
             !(o->has_previous && o->previous_storm) &&
             !(r->state == MS_STATE_STABLE &&
               o->offered_load >= ls->recovery_load)) {
    /* no storm starts where the model has no collapse.  A stable state
     * held by hysteresis while the measured load is already at or above
     * the recovery load (the load came up from below within the noise
     * of its counts) is no proof of that: there a collapsed equilibrium
     * exists, and the failures decide (the gunicorn lab: every attempt
     * failing at 50 req/s, recovery load 40, state held stable) */
    storm = false;
  } else {
    /* the most failing a healthy service shows: the top of the healthy
     * branch, or the healthy equilibrium where that fails more (no fold) */
    double x_ref = ls->tipping_effective_load, p_ref = ls->healthy_ceiling;
    if (r->state != MS_STATE_OVERLOADED &&
        r->eq[0].failure_probability > p_ref) {
      p_ref = r->eq[0].failure_probability;
      x_ref = r->eq[0].effective_load;
    }
    storm = fails_beyond(ls, o, p_ref, x_ref);
  }
  r->storm = storm;
  r->recovering = storm && !ms_state_storm(r->state);
  r->shed_load = 0.0;
  if (storm) {
    double shed = lambda - ls->recovery_load;
    if (backlog_beyond_horizon(ls, o)) {
      double a_fail = 1.0;
      ms_amplification_at(&ls->params, 1.0, lambda, &a_fail, NULL);
      shed = fmax(shed, lambda - ls->saturation_load / a_fail);
    }
    r->shed_load = fmax(shed, 0.0);
  }
  r->has_drain_time = false;
  r->drain_time = 0.0;
  if (o->has_queue_length) {
    double t;
    if (ms_drain_time(&ls->params, lambda, o->queue_length, &t, NULL) ==
            MS_OK &&
        isfinite(t)) {
      r->has_drain_time = true;
      r->drain_time = t;
    }
  }
}
