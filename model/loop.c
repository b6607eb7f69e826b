/* SPDX-License-Identifier: MIT */
/*
 * The retry feedback loop: failure probability of one attempt p(x)
 * (doc/design.md §1.1), amplification A(p) (doc/design.md §1.2), and lambda(x)
 * = x / A(p(x)) with the elasticity that decides where lambda(x) rises or falls
 * (§1.3).
 */
#include <float.h>
#include <math.h>

#include "internal.h"

void ms_failure_model_capacity(ms_failure_model *m, double capacity) {
  *m = (ms_failure_model){.kind = MS_MODEL_CAPACITY, .capacity = capacity};
}

void ms_failure_model_erlang(ms_failure_model *m, long servers,
                             double service_rate, double timeout) {
  *m = (ms_failure_model){.kind = MS_MODEL_ERLANG,
                          .servers = servers,
                          .service_rate = service_rate,
                          .timeout = timeout};
}

void ms_retry_policy_fixed(ms_retry_policy *p, int retries) {
  *p = (ms_retry_policy){.retries = retries, .tiers = 1};
}

/* The rule across servers, service rate and timeout
 * (MS_MAX_TIMEOUT_COMPLETIONS): a longer timeout would fire only closer to
 * c mu than the landscape resolves. */
static int timeout_span_check(const ms_failure_model *m, ms_error *err) {
  double cmu = (double)m->servers * m->service_rate;
  double span = cmu * m->timeout;
  if (span <= MS_MAX_TIMEOUT_COMPLETIONS)
    return MS_OK;
  return ms_fail(err, MS_EINVAL,
                 "timeout = %.8g s: timeout x servers x service rate = %.8g "
                 "must be at most %g; a longer timeout never fires before "
                 "the queue is unbounded (no timeout: %g s)",
                 m->timeout, span, MS_MAX_TIMEOUT_COMPLETIONS,
                 MS_MAX_TIMEOUT_COMPLETIONS / cmu);
}

int ms_failure_model_check(const ms_failure_model *m, ms_error *err) {
  if (m == NULL)
    return ms_fail(err, MS_EINVAL, "failure model is NULL");
  int st = MS_PARAM_CHECK(MS_PARAM_BASE_FAILURE, m->base_failure, err);
  if (st != MS_OK)
    return st;
  switch (m->kind) {
  case MS_MODEL_CAPACITY:
    if (m->has_service_time_cv)
      return ms_fail(err, MS_EINVAL,
                     "service_time_cv = %g: the capacity model has no queue "
                     "and no service time; it needs the erlang model",
                     m->service_time_cv);
    return MS_PARAM_CHECK(MS_PARAM_CAPACITY, m->capacity, err);
  case MS_MODEL_ERLANG:
    if ((st = MS_PARAM_CHECK(MS_PARAM_SERVERS, (double)m->servers, err)) ||
        (st = MS_PARAM_CHECK(MS_PARAM_SERVICE_RATE, m->service_rate, err)) ||
        (st = MS_PARAM_CHECK(MS_PARAM_TIMEOUT, m->timeout, err)))
      return st;
    if (m->has_service_time_cv &&
        (st =
             MS_PARAM_CHECK(MS_PARAM_SERVICE_TIME_CV, m->service_time_cv, err)))
      return st;
    return timeout_span_check(m, err);
  }
  return ms_fail(err, MS_EINVAL, "model kind %d is neither capacity nor erlang",
                 (int)m->kind);
}

int ms_retry_policy_check(const ms_retry_policy *p, ms_error *err) {
  if (p == NULL)
    return ms_fail(err, MS_EINVAL, "retry policy is NULL");
  int st;
  if ((st = MS_PARAM_CHECK(MS_PARAM_RETRIES, p->retries, err)) ||
      (st = MS_PARAM_CHECK(MS_PARAM_TIERS, p->tiers, err)))
    return st;
  if (p->has_budget &&
      (st = MS_PARAM_CHECK(MS_PARAM_RETRY_BUDGET, p->retry_budget, err)))
    return st;
  if (p->has_token &&
      (st = MS_PARAM_CHECK(MS_PARAM_TOKEN_RATIO, p->token_ratio, err)))
    return st;
  return MS_OK;
}

int ms_service_params_check(const ms_service_params *s, ms_error *err) {
  if (s == NULL)
    return ms_fail(err, MS_EINVAL, "service parameters are NULL");
  int st = ms_failure_model_check(&s->model, err);
  if (st != MS_OK)
    return st;
  return ms_retry_policy_check(&s->policy, err);
}

double ms_saturation_load(const ms_failure_model *m) {
  return m->kind == MS_MODEL_CAPACITY ? m->capacity
                                      : (double)m->servers * m->service_rate;
}

double ms_effective_timeout(const ms_failure_model *m) {
  if (!m->has_service_time_cv)
    return m->timeout;
  /* 2 T / (1 + 1) is T exactly: cv = 1 is the M/M/c model bit for bit */
  double cv = m->service_time_cv;
  return 2.0 * m->timeout / (1.0 + cv * cv);
}

/* p(x) and x p'(x) for a valid model and x >= 0.  With general service the
 * tail's exponent is -(c mu - x) T' with T' = ms_effective_timeout, a
 * constant in x: ln q and x d ln q / dx are the M/M/c ones with T' for T
 * (doc/design.md §1.1). */
static void failure_and_slope(const ms_failure_model *m, double x, double *p,
                              double *xdp) {
  double ok = 1.0 - m->base_failure;
  if (m->kind == MS_MODEL_CAPACITY) {
    double C = m->capacity;
    if (x <= C) {
      *p = m->base_failure;
      *xdp = 0.0;
    } else {
      /* 1 - p = (1 - base) C / x: no cancellation, unlike base + ... */
      double survive = ok * (C / x);
      *p = 1.0 - survive;
      *xdp = survive;
    }
    return;
  }
  double c = (double)m->servers, mu = m->service_rate;
  double T = ms_effective_timeout(m);
  double cmu = c * mu;
  if (x >= cmu) {
    *p = 1.0;
    *xdp = 0.0;
    return;
  }
  double a = x / mu;
  if (!(a >= DBL_MIN)) {
    *p = m->base_failure;
    *xdp = 0.0;
    return;
  }
  double ln_q, dlnq; /* ln P(W > T) and x d ln P(W > T) / dx */
  if (a >= c) {
    ln_q = -(cmu - x) * T;
    dlnq = x * T;
  } else {
    ms_erlang_terms t;
    ms_erlang_terms_unchecked(m->servers, a, &t);
    ln_q = t.ln_c - (cmu - x) * T;
    /* a d ln C / da = (c - a) + a (1 - B) / (c - a + a B), from
     * dB/da = B (c/a - 1 + B) (Jagerman 1974). */
    double ca = c - a;
    dlnq = ca + a * (1.0 - t.b) / (ca + a * t.b) + x * T;
  }
  double q = exp(ln_q);
  /* 1 - p = (1 - base)(1 - q), with 1 - q = -expm1(ln q) accurate */
  *p = 1.0 - ok * -expm1(ln_q);
  *xdp = ok * q * dlnq;
}

void ms_tier_amplification(const ms_retry_policy *pol, double p, double *A,
                           double *dA) {
  /* Horner for sum_{i<=r} p^i and its derivative. */
  double s = 1.0, ds = 0.0;
  for (int i = 0; i < pol->retries; i++) {
    ds = ds * p + s;
    s = s * p + 1.0;
  }
  if (pol->has_budget) {
    double cap = 1.0 / (1.0 - pol->retry_budget);
    if (cap < s) {
      s = cap;
      ds = 0.0;
    }
  }
  if (pol->has_token) {
    double cap = 1.0 / (1.0 - pol->token_ratio * (1.0 - p));
    if (cap < s) {
      s = cap;
      ds = -pol->token_ratio * cap * cap;
    }
  }
  *A = s;
  *dA = ds;
}

void ms_point_eval(const ms_service_params *s, double x, ms_point *pt) {
  double p, xdp, A, dA;
  failure_and_slope(&s->model, x, &p, &xdp);
  ms_tier_amplification(&s->policy, p, &A, &dA);
  double k = (double)s->policy.tiers;
  pt->p = p;
  pt->ln_amp = k * log(A);
  pt->lambda = x / exp(pt->ln_amp);
  pt->elast = xdp * k * dA / A;
}

int ms_failure_probability(const ms_failure_model *m, double x, double *p,
                           ms_error *err) {
  int st = ms_failure_model_check(m, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(x) || x < 0.0)
    return ms_fail(err, MS_EINVAL,
                   "effective load x = %g/s must be finite and >= 0", x);
  double xdp;
  failure_and_slope(m, x, p, &xdp);
  return MS_OK;
}

int ms_amplification(const ms_retry_policy *pol, double p, double *A,
                     ms_error *err) {
  int st = ms_retry_policy_check(pol, err);
  if (st != MS_OK)
    return st;
  if (!(p >= 0.0 && p <= 1.0))
    return ms_fail(err, MS_EINVAL,
                   "failure probability p = %g is outside "
                   "[0, 1]",
                   p);
  double a, da;
  ms_tier_amplification(pol, p, &a, &da);
  *A = pow(a, (double)pol->tiers);
  return MS_OK;
}

int ms_offered_load_at(const ms_service_params *s, double x, double *lambda,
                       ms_error *err) {
  int st = ms_service_params_check(s, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(x) || x < 0.0)
    return ms_fail(err, MS_EINVAL,
                   "effective load x = %g/s must be finite and >= 0", x);
  ms_point pt;
  ms_point_eval(s, x, &pt);
  *lambda = pt.lambda;
  return MS_OK;
}
