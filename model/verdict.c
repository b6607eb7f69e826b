/* SPDX-License-Identifier: MIT */
/*
 * Verdicts from observations (doc/design.md §1.7): whether a storm is
 * happening, the load to shed, and how long a backlog takes to drain.
 * The state (ms_analyze) says where the service is headed; this file says
 * whether the observations show users failing now.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

bool ms_beyond_noise(double obs, double ref, double tau) {
  if (!(tau > 0.0))
    return false;
  double z = MS_EVIDENCE_Z;
  return obs > ref + z * sqrt(ref / tau) + z * z / tau;
}

bool ms_backlog_beyond_horizon(const ms_landscape *ls,
                               const ms_observation *o) {
  const ms_failure_model *m = &ls->params.model;
  return o->has_queue_length && m->kind == MS_MODEL_ERLANG &&
         o->queue_length > ls->saturation_load * m->timeout;
}

/*
 * Whether the observations show more failing than failure probability
 * p_ref does at the observed load: the failed attempts per second when the
 * failure ratio is observed, else the retries per second (observed
 * attempts - offered load against lambda (A(p_ref) - 1)); and, for the
 * erlang model, a backlog longer than the timeout horizon, which every
 * attempt joining it waits out.
 */
static bool fails_beyond(const ms_landscape *ls, const ms_observation *o,
                         double p_ref, double x_ref) {
  double tau = o->interval > 0.0 ? o->interval : 1.0;
  if (ms_backlog_beyond_horizon(ls, o))
    return true;
  if (o->has_observed_failure) {
    double x = o->has_observed_attempts ? o->observed_attempts : x_ref;
    return ms_beyond_noise(o->observed_failure * x, p_ref * x, tau);
  }
  if (o->has_observed_attempts) {
    double A = 1.0, a_fail = 1.0;
    ms_amplification(&ls->params.policy, 1.0, &a_fail, NULL);
    if (!(a_fail > 1.0)) /* no retries possible: attempts show nothing */
      return false;
    ms_amplification(&ls->params.policy, p_ref, &A, NULL);
    double lambda = o->offered_load;
    return ms_beyond_noise(o->observed_attempts - lambda, lambda * (A - 1.0),
                           tau);
  }
  return false;
}

static bool observed(const ms_landscape *ls, const ms_observation *o) {
  return o->has_observed_failure || o->has_observed_attempts ||
         (o->has_queue_length && ls->params.model.kind == MS_MODEL_ERLANG);
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
  double x_cap = m->kind == MS_MODEL_ERLANG
                     ? (double)m->servers * m->service_rate
                     : m->capacity;
  /* the capacity model has no timeout: waiting fails nothing */
  double horizon =
      m->kind == MS_MODEL_ERLANG ? x_cap * m->timeout : (double)INFINITY;
  double a_fail = 1.0, a_base = 1.0;
  ms_amplification(&s->policy, 1.0, &a_fail, NULL);
  ms_amplification(&s->policy, m->base_failure, &a_base, NULL);
  double total = 0.0;
  if (queue > horizon) {
    double rate = x_cap - lambda * a_fail;
    if (!(rate > 0.0)) {
      *t = INFINITY;
      return MS_OK;
    }
    total += (queue - horizon) / rate;
  }
  double rest = fmin(queue, horizon);
  if (rest > 0.0) {
    double rate = x_cap - lambda * a_base;
    if (!(rate > 0.0)) {
      *t = INFINITY;
      return MS_OK;
    }
    total += rest / rate;
  }
  *t = total;
  return MS_OK;
}

void ms_verdict(const ms_landscape *ls, const ms_observation *o, ms_report *r) {
  double lambda = o->offered_load;
  bool storm;
  if (!observed(ls, o)) {
    storm = ms_state_storm(r->state) != 0;
  } else if (r->state == MS_STATE_METASTABLE) {
    storm = true; /* an observation beyond the unstable equilibrium */
  } else {
    /* the most failing a healthy service shows: the top of the healthy
     * branch, or the healthy equilibrium where that fails more (no fold) */
    double x_ref = ls->tipping_effective_load, p_ref = ls->healthy_ceiling;
    if (r->state != MS_STATE_OVERLOADED &&
        r->eq[0].failure_probability > p_ref) {
      p_ref = r->eq[0].failure_probability;
      x_ref = r->eq[0].effective_load;
    }
    bool failing = fails_beyond(ls, o, p_ref, x_ref);
    storm = failing && (r->state == MS_STATE_OVERLOADED ||
                        (o->has_previous && o->previous_storm));
  }
  r->storm = storm;
  r->recovering = storm && !ms_state_storm(r->state);
  r->shed_load = 0.0;
  if (storm) {
    double shed = lambda - ls->recovery_load;
    if (ms_backlog_beyond_horizon(ls, o)) {
      double a_fail = 1.0;
      ms_amplification(&ls->params.policy, 1.0, &a_fail, NULL);
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
  r->reporting = 1;
}
