/* SPDX-License-Identifier: MIT */
/*
 * The storm hazard of a finite pool: a birth-death chain over the
 * attempts in the system, the retries fed back as a state-dependent
 * arrival rate, and its mean first-passage time (doc/design.md §1.12).
 */
#include "hazard.h"

#include <math.h>

#include "internal.h"

/* ln(e^u + e^v), either may be -inf. */
static double log_add(double u, double v) {
  if (u < v) {
    double t = u;
    u = v;
    v = t;
  }
  if (v == -INFINITY)
    return u;
  return u + log1p(exp(v - u));
}

/* The domain of ms_time_to_storm: MS_OK or MS_EINVAL with a message. */
static int hazard_domain(const ms_service_params *s, double lambda,
                         ms_error *err) {
  int st = ms_service_params_check(s, err);
  if (st != MS_OK)
    return st;
  st = MS_PARAM_CHECK(MS_PARAM_OFFERED_LOAD, lambda, err);
  if (st != MS_OK)
    return st;
  const ms_failure_model *m = &s->model;
  if (m->kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "time to a storm: the erlang model only (a pool of "
                   "servers, not a capacity)");
  if (m->has_service_time_cv && m->service_time_cv != 1.0)
    return ms_fail(err, MS_EINVAL,
                   "time to a storm: exponential service only "
                   "(service_time_cv %g)",
                   m->service_time_cv);
  if (m->timeout_spread > 0)
    return ms_fail(err, MS_EINVAL,
                   "time to a storm: a timeout spread is not modelled");
  if (m->has_queue_limit)
    return ms_fail(err, MS_EINVAL,
                   "time to a storm: a queue limit is not modelled");
  if (ms_policy_load_dependent(&s->policy))
    return ms_fail(err, MS_EINVAL,
                   "time to a storm: the %s policy's retries depend on the "
                   "load, not only on the failure probability",
                   ms_policy_name(s->policy.kind));
  return MS_OK;
}

/* The birth rate lambda A(p) at a wait tail q. */
static int hazard_birth(const ms_service_params *s, double lambda, double q,
                        double *birth, ms_error *err) {
  double base = s->model.base_failure, amp;
  int st = ms_amplification(&s->policy, base + (1.0 - base) * q, &amp, err);
  if (st == MS_OK)
    *birth = lambda * amp;
  return st;
}

/* P(W > T) of an attempt that finds n (whole) in the system: the wait for
 * k = n - c + 1 completions at rate c mu, P(Poisson(c mu T) <= k - 1). */
static double wait_tail_whole(long n, long c, double mean) {
  if (n < c)
    return 0.0;
  if (!(mean > 0))
    return 1.0; /* T = 0: every wait outlasts it */
  double ln_f, ratio;
  ms_poisson_cdf(n - c, mean, &ln_f, &ratio);
  return fmin(exp(ln_f), 1.0);
}

/* P(W + S > T) of an attempt that finds n in the system, S exponential of
 * rate mu: e^(-mu T) below c; from c on, with k = n - c + 1, theta = c mu,
 *   P(W > T) + e^(-mu T) (theta / (theta - mu))^k P(Poisson((theta - mu)
 *   T) >= k),
 * the second term the service outlasting what the wait left of T (the
 * convolution of the Erlang wait with the service's tail; for c = 1,
 * P(Poisson(mu T) <= k), the wait and the service one Erlang). */
static double response_tail_whole(long n, long c, double mu, double T) {
  if (!(T > 0))
    return 1.0;
  if (n < c)
    return exp(-mu * T);
  long k = n - c + 1;
  double ln_f, ratio;
  if (c == 1) {
    ms_poisson_cdf(k, mu * T, &ln_f, &ratio);
    return fmin(exp(ln_f), 1.0);
  }
  double wait = wait_tail_whole(n, c, (double)c * mu * T);
  ms_poisson_cdf(k - 1, (double)(c - 1) * mu * T, &ln_f, &ratio);
  double upper = -expm1(ln_f); /* P(Poisson((c - 1) mu T) >= k) */
  if (!(upper > 0))
    return wait;
  double ln_late =
      -mu * T + (double)k * log1p(1.0 / (double)(c - 1)) + log(upper);
  return fmin(wait + exp(ln_late), 1.0);
}

/* The tail q at y in the system (y real, linear between whole states):
 * the wait's or the response's, as the timeout covers. */
static double tail_at(const ms_failure_model *m, double y) {
  if (y < 0)
    y = 0;
  double k0 = floor(y), f = y - k0;
  long n = (long)k0;
  double mean = (double)m->servers * m->service_rate * m->timeout;
  bool resp = m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE;
  double lo =
      resp ? response_tail_whole(n, m->servers, m->service_rate, m->timeout)
           : wait_tail_whole(n, m->servers, mean);
  if (f == 0.0)
    return lo;
  double hi =
      resp ? response_tail_whole(n + 1, m->servers, m->service_rate, m->timeout)
           : wait_tail_whole(n + 1, m->servers, mean);
  return lo + f * (hi - lo);
}

/* The birth rate at state y once the retries' delay T is counted: the
 * retries arriving now were sent T ago, when the most likely path, moving
 * at v states/s, was v T states back (doc/design.md §1.12).  Below the
 * barrier (b_now <= death) the path is the time reverse of the relaxation
 * and v = death - b_now.  Past it the path is the relaxation itself, whose
 * speed is the delayed birth's excess: v solves v = b(y - v T) - death,
 * which has one root in [0, b_now - death] since the right side falls as
 * v grows; bracketed to a thousandth of a state.  Taking b_now there
 * instead overstates the lag, and more retries then read as a later
 * storm. */
static int delayed_birth(const ms_service_params *s, double lambda, double y,
                         double b_now, double death, double *birth,
                         ms_error *err) {
  const ms_failure_model *m = &s->model;
  const double T = m->timeout;
  if (b_now <= death)
    return hazard_birth(s, lambda, tail_at(m, y - (death - b_now) * T), birth,
                        err);
  /* f(v) = b(y - v T) - death - v falls with v: f(0) > 0 >= f(hi).  The
   * Illinois variant of regula falsi (Dowell and Jarratt, BIT 11, 1971):
   * the bracket closes superlinearly, a few births a state */
  double lo = 0.0, hi = b_now - death, f_lo = hi, f_hi, b;
  int st = hazard_birth(s, lambda, tail_at(m, y - hi * T), &b, err);
  if (st != MS_OK)
    return st;
  f_hi = b - death - hi;
  int side = 0;
  for (int k = 0; k < 200 && (hi - lo) * T > 1e-3; k++) {
    double v = f_hi < f_lo ? hi - f_hi * (hi - lo) / (f_hi - f_lo) : hi;
    if (!(v > lo && v < hi))
      v = 0.5 * (lo + hi);
    st = hazard_birth(s, lambda, tail_at(m, y - v * T), &b, err);
    if (st != MS_OK)
      return st;
    double f = b - death - v;
    if (f > 0) {
      lo = v, f_lo = f;
      if (side < 0)
        f_hi *= 0.5;
      side = -1;
    } else {
      hi = v, f_hi = f;
      if (side > 0)
        f_lo *= 0.5;
      side = 1;
    }
  }
  return hazard_birth(s, lambda, tail_at(m, y - lo * T), birth, err);
}

int ms_time_to_storm_walk(const ms_service_params *s, double offered_load,
                          ms_storm_walk *w, int (*stop)(void *ctx), void *ctx,
                          double *seconds, ms_error *err) {
  int st = hazard_domain(s, offered_load, err);
  if (st != MS_OK)
    return st;
  const ms_failure_model *m = &s->model;
  const long c = m->servers;
  const double mu = m->service_rate, T = m->timeout;
  const double cmu = (double)c * mu, mean = cmu * T; /* Poisson mean */
  const double lambda = offered_load;
  double a_max;
  st = ms_amplification(&s->policy, 1.0, &a_max, err);
  if (st != MS_OK)
    return st;
  w->done = true;
  /* No collapsed equilibrium: the chain never leaves for good. */
  if (lambda * a_max <= cmu) {
    *seconds = MS_TIME_TO_STORM_NEVER;
    return MS_OK;
  }
  if ((double)c + mean + 10.0 * sqrt(mean) + 10.0 >
      (double)MS_HAZARD_MAX_STATES)
    return ms_fail(err, MS_ELIMIT,
                   "time to a storm: c + c mu T = %g passes %ld states",
                   (double)c + mean, MS_HAZARD_MAX_STATES);
  const double ln_never = log(MS_TIME_TO_STORM_NEVER);
  if (w->n == 0) {
    w->ln_pi = 0.0;
    w->ln_s = w->ln_t = -INFINITY;
  }
  double ln_pi = w->ln_pi, ln_s = w->ln_s, ln_t = w->ln_t;
  for (long n = w->n;; n++) {
    if (stop != NULL && n > w->n && n % MS_HAZARD_WALK_STRIDE == 0 &&
        stop(ctx)) {
      *w = (ms_storm_walk){
          .n = n, .ln_pi = ln_pi, .ln_s = ln_s, .ln_t = ln_t, .done = false};
      return MS_OK;
    }
    double q = tail_at(m, (double)n), b_now, birth;
    st = hazard_birth(s, lambda, q, &b_now, err);
    if (st != MS_OK)
      return st;
    if (n >= c && q >= 0.5 && b_now > cmu)
      break; /* the storm: half the arrivals time out, past the barrier */
    if (n >= MS_HAZARD_MAX_STATES)
      return ms_fail(err, MS_ELIMIT, "time to a storm: more than %ld states",
                     MS_HAZARD_MAX_STATES);
    double death = (double)(n < c ? n : c) * mu;
    st = delayed_birth(s, lambda, (double)n, b_now, death, &birth, err);
    if (st != MS_OK)
      return st;
    ln_s = log_add(ln_s, ln_pi);
    ln_t = log_add(ln_t, ln_s - log(birth) - ln_pi);
    if (ln_t > ln_never) {
      *seconds = MS_TIME_TO_STORM_NEVER;
      return MS_OK;
    }
    ln_pi += log(birth) - log((double)(n + 1 < c ? n + 1 : c) * mu);
  }
  *seconds = exp(ln_t);
  return MS_OK;
}

int ms_time_to_storm(const ms_service_params *s, double offered_load,
                     double *seconds, ms_error *err) {
  ms_storm_walk w = {0};
  return ms_time_to_storm_walk(s, offered_load, &w, NULL, NULL, seconds, err);
}

int ms_storm_hazard(double time_to_storm, double horizon, double *hazard,
                    ms_error *err) {
  if (!(time_to_storm > 0 && time_to_storm <= MS_TIME_TO_STORM_NEVER))
    return ms_fail(err, MS_EINVAL,
                   "storm hazard: time to a storm %g s is not in (0, %g]",
                   time_to_storm, MS_TIME_TO_STORM_NEVER);
  if (!(horizon >= 0 && isfinite(horizon)))
    return ms_fail(err, MS_EINVAL,
                   "storm hazard: horizon %g s is not finite and >= 0",
                   horizon);
  *hazard = -expm1(-horizon / time_to_storm);
  return MS_OK;
}
