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
  if (m->has_queue_limit && m->kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "queue_limit needs the erlang model: the capacity model "
                   "has no queue");
  if (m->has_queue_limit &&
      (st = MS_PARAM_CHECK(MS_PARAM_QUEUE_LIMIT, (double)m->queue_limit, err)))
    return st;
  switch (m->kind) {
  case MS_MODEL_CAPACITY:
    return MS_PARAM_CHECK(MS_PARAM_CAPACITY, m->capacity, err);
  case MS_MODEL_ERLANG:
    if ((st = MS_PARAM_CHECK(MS_PARAM_SERVERS, (double)m->servers, err)) ||
        (st = MS_PARAM_CHECK(MS_PARAM_SERVICE_RATE, m->service_rate, err)) ||
        (st = MS_PARAM_CHECK(MS_PARAM_TIMEOUT, m->timeout, err)))
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

/* p(x) and x p'(x) for a valid model and x >= 0. */
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
  double c = (double)m->servers, mu = m->service_rate, T = m->timeout;
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

/* ln P_block, ln(1 - P_block), ln W and ln(1 - W) of the M/M/c/K queue at
 * x (W = P(W > T | admitted)), and p, p_retry from them:
 *   1 - p = (1 - P_block)(1 - base)(1 - W),  p_retry = p - P_block. */
typedef struct {
  double ln_block, ln_admit, ln_wait, ln_wait_c;
} queue_logs;

static void queue_logs_at(const ms_failure_model *m, double x, queue_logs *q) {
  ms_mmck_terms t;
  ms_mmck_terms_unchecked(m->servers, m->queue_limit, m->service_rate, x,
                          m->timeout, &t);
  q->ln_block = t.ln_block;
  q->ln_admit = t.ln_admit;
  q->ln_wait = t.ln_wait;
  q->ln_wait_c =
      t.ln_wait < -M_LN2 ? log1p(-exp(t.ln_wait)) : log(-expm1(t.ln_wait));
}

/*
 * The queue-limited erlang model (doc/design.md §1.9).  p and p_retry
 * come from the logs without cancellation: 1 - p = exp(ln(1 - P_block) +
 * ln(1 - base) + ln(1 - W)), p_retry = (1 - P_block) (1 - (1 - base)(1 -
 * W)).  The slopes are central differences of ln P_block and ln W in ln x
 * (below), from which x d(1 - P)/dx = -P d ln P / d ln x and likewise for
 * W: within 1.1e-7 of a Richardson-extrapolated difference of p itself in
 * tests/check_mmck.c (test_failure_slope).  The landscape uses x p' for
 * the sign of 1 - E and for Newton steps; an error in it moves a sign
 * change of 1 - E, and lambda being flat there, the tipping or recovery
 * load only by its square.  An analytic slope is left to do.
 */
static void queue_limited_eval(const ms_failure_model *m, double x,
                               ms_failure_eval *f) {
  double a = x / m->service_rate;
  if (!(a >= MS_MMCK_MIN_TRAFFIC)) {
    *f = (ms_failure_eval){m->base_failure, 0.0, m->base_failure, 0.0};
    return;
  }
  if (!(x <= MS_MAX_RATE)) {
    /* beyond any load: every attempt is rejected */
    double retried = m->rejections_final ? 0.0 : 1.0;
    *f = (ms_failure_eval){1.0, 0.0, retried, 0.0};
    return;
  }
  /* ln P and ln W are cumulant generating functions of the queue seen by
   * an arrival (in ln x), whose third cumulant grows like K^3: a step of
   * 2^-10 / (K + 1) keeps the truncation of the central difference below
   * about 1e-6 of the slope for every K, and 2^-17 (near the cube root of
   * the rounding) is the step where K is small */
  const double h = fmin(0x1p-17, 0x1p-10 / ((double)m->queue_limit + 1.0));
  queue_logs q, lo, hi;
  queue_logs_at(m, x, &q);
  queue_logs_at(m, x * exp(-h), &lo);
  queue_logs_at(m, x * exp(h), &hi);
  double ln_ok = log1p(-m->base_failure);
  double block = exp(q.ln_block), wait = exp(q.ln_wait);
  double dlnb = (hi.ln_block - lo.ln_block) / (2.0 * h);
  double dlnw = (hi.ln_wait - lo.ln_wait) / (2.0 * h);
  if (q.ln_wait <= -DBL_MAX)
    dlnw = 0.0; /* K = 0: no admitted arrival waits */
  /* x d ln(1 - P)/dx = -P/(1 - P) x d ln P/dx, and the same for W while
   * W <= 1/2; above, the difference of ln(1 - W) itself (0 where 1 - W
   * rounds to 0: then 1 - p is 0 and so is its slope) */
  double dadmit = -block * dlnb / exp(q.ln_admit);
  double dwait_c = wait <= 0.5 ? -wait * dlnw / exp(q.ln_wait_c)
                               : (hi.ln_wait_c - lo.ln_wait_c) / (2.0 * h);
  if (!isfinite(dwait_c))
    dwait_c = 0.0;
  double ln_survive = q.ln_admit + ln_ok + q.ln_wait_c;
  double survive = exp(ln_survive);
  f->p = -expm1(ln_survive);
  f->xdp = survive > 0.0 ? -survive * (dadmit + dwait_c) : 0.0;
  if (!m->rejections_final) {
    f->p_retry = f->p;
    f->xdp_retry = f->xdp;
    return;
  }
  /* p_retry = (1 - P) g with g = 1 - (1 - base)(1 - W) */
  double admit = exp(q.ln_admit);
  double g = -expm1(ln_ok + q.ln_wait_c);
  double xdg = -exp(ln_ok + q.ln_wait_c) * dwait_c;
  f->p_retry = admit * g;
  f->xdp_retry = admit * (dadmit * g + xdg);
}

void ms_failure_eval_at(const ms_failure_model *m, double x,
                        ms_failure_eval *f) {
  if (m->has_queue_limit) {
    queue_limited_eval(m, x, f);
    return;
  }
  failure_and_slope(m, x, &f->p, &f->xdp);
  f->p_retry = f->p;
  f->xdp_retry = f->xdp;
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
  double A, dA;
  ms_failure_eval f;
  ms_failure_eval_at(&s->model, x, &f);
  /* a chain whose rejections end it retries only p_retry: A(p_retry) */
  ms_tier_amplification(&s->policy, f.p_retry, &A, &dA);
  double k = (double)s->policy.tiers;
  pt->p = f.p;
  pt->ln_amp = k * log(A);
  pt->lambda = x / exp(pt->ln_amp);
  pt->elast = f.xdp_retry * k * dA / A;
}

int ms_failure_probability(const ms_failure_model *m, double x, double *p,
                           ms_error *err) {
  int st = ms_failure_model_check(m, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(x) || x < 0.0)
    return ms_fail(err, MS_EINVAL,
                   "effective load x = %g/s must be finite and >= 0", x);
  ms_failure_eval f;
  ms_failure_eval_at(m, x, &f);
  *p = f.p;
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
