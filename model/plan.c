/* SPDX-License-Identifier: MIT */
/*
 * The quantities of a capacity plan (doc/design.md §1.10): the response
 * time tail of the M/M/c queue, the load at which a health check starts
 * failing, the load at which overload failures (and so retries) begin,
 * the in-flight capacity while a dependency times out, and the worst-case
 * amplification of the tiers.
 */
#include <float.h>
#include <math.h>

#include "internal.h"

/* The M/M/c model the response time tail is defined for: erlang, no queue
 * limit, exponential service. */
static int check_mmc(const ms_failure_model *m, ms_error *err) {
  int rc = ms_failure_model_check(m, err);
  if (rc != MS_OK)
    return rc;
  if (m->kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "the response time needs the erlang model (servers, "
                   "service time)");
  if (m->has_queue_limit)
    return ms_fail(err, MS_EINVAL,
                   "the response time is derived for an unbounded queue "
                   "(M/M/c); this service has a queue limit");
  if (m->has_service_time_cv && m->service_time_cv != 1.0)
    return ms_fail(err, MS_EINVAL,
                   "the response time is derived for exponential service "
                   "(M/M/c); this service has service_time_cv %g",
                   m->service_time_cv);
  return MS_OK;
}

int ms_response_tail(const ms_failure_model *m, double x, double H,
                     double *tail, ms_error *err) {
  int rc = check_mmc(m, err);
  if (rc != MS_OK)
    return rc;
  if (!(x >= 0.0) || !isfinite(x))
    return ms_fail(err, MS_EINVAL,
                   "effective load %g attempts/s: it must be finite and >= 0",
                   x);
  if (!(H >= 0.0) || !isfinite(H))
    return ms_fail(err, MS_EINVAL,
                   "response time limit %g s: it must be finite and >= 0", H);
  double mu = m->service_rate, cmu = (double)m->servers * mu;
  if (!(x < cmu)) {
    *tail = 1.0; /* no steady state: every wait grows without bound */
    return MS_OK;
  }
  double e_mu = exp(-mu * H);
  double a = x / mu;
  if (!(a >= DBL_MIN)) {
    *tail = e_mu; /* nobody waits: the service time alone */
    return MS_OK;
  }
  double ln_c;
  if ((rc = ms_erlang_ln_c(m->servers, a, &ln_c, err)) != MS_OK)
    return rc;
  /* P(W + S > H) = e^(-mu H) + C mu (e^(-gamma H) - e^(-mu H)) / (mu -
   * gamma), with the difference quotient written as e^(-min H) times
   * (1 - e^(-|d| H)) / |d|, d = mu - gamma: no cancellation near d = 0,
   * no overflow for either sign. */
  double gamma = cmu - x;
  double d = fabs(mu - gamma), lo = fmin(mu, gamma);
  double quot = d * H > 0.0 ? -expm1(-d * H) / d : H;
  double t = e_mu + exp(ln_c) * mu * exp(-lo * H) * quot;
  *tail = fmin(1.0, fmax(0.0, t));
  return MS_OK;
}

/* The probability that a health check fails at x: the probe errors (the
 * base failure) or takes longer than H. */
static int check_failure(const ms_failure_model *m, double x, double H,
                         double *f, ms_error *err) {
  double t;
  int rc = ms_response_tail(m, x, H, &t, err);
  if (rc != MS_OK)
    return rc;
  *f = 1.0 - (1.0 - m->base_failure) * (1.0 - t);
  return MS_OK;
}

int ms_health_check_load(const ms_failure_model *m, double H, double tolerance,
                         double *x, ms_error *err) {
  if (!(tolerance > 0.0 && tolerance < 1.0))
    return ms_fail(err, MS_EINVAL,
                   "health check tolerance %g: it must be in (0, 1)",
                   tolerance);
  double f;
  int rc = check_failure(m, 0.0, H, &f, err);
  if (rc != MS_OK)
    return rc;
  if (f >= tolerance) {
    *x = 0.0; /* the check fails too often even on an idle replica */
    return MS_OK;
  }
  /* f rises with x (C(c, a) rises, gamma falls) and reaches 1 at c mu:
   * bisection keeps lo below and hi at or above the tolerance. */
  double lo = 0.0, hi = (double)m->servers * m->service_rate;
  for (int i = 0; i < 200 && hi - lo > 4 * DBL_EPSILON * hi; i++) {
    double mid = 0.5 * (lo + hi);
    if ((rc = check_failure(m, mid, H, &f, err)) != MS_OK)
      return rc;
    if (f >= tolerance)
      hi = mid;
    else
      lo = mid;
  }
  *x = hi;
  return MS_OK;
}

int ms_failure_onset_load(const ms_service_params *s, double target,
                          double x_hi, double *x, bool *found, ms_error *err) {
  int rc = ms_service_params_check(s, err);
  if (rc != MS_OK)
    return rc;
  if (!(target >= 0.0 && target <= 1.0))
    return ms_fail(err, MS_EINVAL,
                   "failure probability %g: it must be in [0, 1]", target);
  if (!(x_hi >= 0.0) || !(x_hi <= MS_MAX_RATE))
    return ms_fail(err, MS_EINVAL,
                   "effective load %g attempts/s: it must be in [0, %g]", x_hi,
                   MS_MAX_RATE);
  double p;
  if ((rc = ms_failure_probability(&s->model, 0.0, &p, err)) != MS_OK)
    return rc;
  *found = true;
  if (p >= target) {
    *x = 0.0;
    return MS_OK;
  }
  if ((rc = ms_failure_probability(&s->model, x_hi, &p, err)) != MS_OK)
    return rc;
  if (p < target) {
    *x = x_hi;
    *found = false;
    return MS_OK;
  }
  /* p(x) does not fall with x (doc/design.md §1.1, §1.9) */
  double lo = 0.0, hi = x_hi;
  for (int i = 0; i < 2200 && hi - lo > 4 * DBL_EPSILON * hi; i++) {
    double mid = 0.5 * (lo + hi);
    if ((rc = ms_failure_probability(&s->model, mid, &p, err)) != MS_OK)
      return rc;
    if (p >= target)
      hi = mid;
    else
      lo = mid;
  }
  *x = hi;
  return MS_OK;
}

int ms_inflight_capacity(const ms_failure_model *m, double *rate,
                         ms_error *err) {
  int rc = ms_failure_model_check(m, err);
  if (rc != MS_OK)
    return rc;
  if (m->kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "the in-flight capacity needs the erlang model (servers "
                   "and a timeout)");
  if (!(m->timeout > 0.0))
    return ms_fail(err, MS_EINVAL,
                   "the in-flight capacity needs a timeout > 0 s");
  /* c / T overflows for a timeout below c / DBL_MAX (a subnormal T, which
   * the model accepts: T >= 0): the rate would be +inf, so refuse it */
  double rate_v = (double)m->servers / m->timeout;
  if (!isfinite(rate_v))
    return ms_fail(err, MS_EINVAL,
                   "the in-flight capacity %ld / %g s overflows a double",
                   m->servers, m->timeout);
  *rate = rate_v;
  return MS_OK;
}

double ms_worst_amplification(const ms_retry_policy *p) {
  double w = 1.0;
  for (int i = 0; i < p->tiers; i++)
    w *= (double)ms_policy_tier_retries(p, i) + 1.0;
  return w;
}
