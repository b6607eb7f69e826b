/* SPDX-License-Identifier: MIT */
/*
 * The retry feedback loop: failure probability of one attempt p(x)
 * (doc/design.md §1.1), amplification A(p) (doc/design.md §1.2), and lambda(x)
 * = x / A(p(x)) with the elasticity that decides where lambda(x) rises or falls
 * (§1.3).
 */
#include <float.h>
#include <math.h>
#include <string.h>

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

bool ms_failure_model_same(const ms_failure_model *x,
                           const ms_failure_model *y) {
  return x->kind == y->kind && x->capacity == y->capacity &&
         x->servers == y->servers && x->service_rate == y->service_rate &&
         x->timeout == y->timeout && x->timeout_spread == y->timeout_spread &&
         x->base_failure == y->base_failure &&
         x->has_service_time_cv == y->has_service_time_cv &&
         (!x->has_service_time_cv ||
          x->service_time_cv == y->service_time_cv) &&
         x->has_queue_limit == y->has_queue_limit &&
         (!x->has_queue_limit ||
          (x->queue_limit == y->queue_limit &&
           x->rejections_final == y->rejections_final)) &&
         (x->kind != MS_MODEL_ERLANG || x->timeout_covers == y->timeout_covers);
}

const char *ms_timeout_covers_name(ms_timeout_covers v) {
  switch (v) {
  case MS_TIMEOUT_COVERS_WAIT:
    return "wait";
  case MS_TIMEOUT_COVERS_RESPONSE:
    return "response";
  }
  return NULL;
}

int ms_timeout_covers_from_name(const char *name, ms_timeout_covers *v) {
  if (name != NULL && strcmp(name, "wait") == 0) {
    *v = MS_TIMEOUT_COVERS_WAIT;
    return MS_OK;
  }
  if (name != NULL && strcmp(name, "response") == 0) {
    *v = MS_TIMEOUT_COVERS_RESPONSE;
    return MS_OK;
  }
  return MS_EINVAL;
}

bool ms_retry_policy_same(const ms_retry_policy *p, const ms_retry_policy *q) {
  if (p->retries != q->retries || p->tiers != q->tiers ||
      p->has_budget != q->has_budget ||
      (p->has_budget && p->retry_budget != q->retry_budget) ||
      p->has_token != q->has_token ||
      (p->has_token && p->token_ratio != q->token_ratio) ||
      p->nested != q->nested || p->kind != q->kind)
    return false;
  for (int i = 1; i < p->tiers; i++)
    if (ms_policy_tier_retries(p, i) != ms_policy_tier_retries(q, i))
      return false;
  switch (p->kind) {
  case MS_POLICY_GRPC:
    return p->grpc_max_tokens == q->grpc_max_tokens &&
           p->grpc_token_ratio == q->grpc_token_ratio;
  case MS_POLICY_ENVOY:
    return p->envoy_budget == q->envoy_budget &&
           p->envoy_min_concurrency == q->envoy_min_concurrency;
  case MS_POLICY_FINAGLE:
    return p->finagle_percent == q->finagle_percent &&
           p->finagle_min_per_second == q->finagle_min_per_second &&
           p->finagle_ttl == q->finagle_ttl;
  case MS_POLICY_AWS:
    return p->aws_capacity == q->aws_capacity &&
           p->aws_retry_cost == q->aws_retry_cost &&
           p->aws_timeout_cost == q->aws_timeout_cost &&
           p->aws_refund == q->aws_refund &&
           p->aws_throttling_cost == q->aws_throttling_cost &&
           p->aws_throttling_share == q->aws_throttling_share;
  case MS_POLICY_COUNT:
    break;
  }
  return true;
}

int ms_policy_tier_retries(const ms_retry_policy *p, int i) {
  return i > 0 && p->has_tier_retries ? p->tier_retries[i] : p->retries;
}

bool ms_policy_load_dependent(const ms_retry_policy *p) {
  return p->kind == MS_POLICY_ENVOY ||
         (p->kind == MS_POLICY_FINAGLE && p->finagle_min_per_second > 0.0);
}

const char *ms_policy_name(ms_policy_kind kind) {
  switch (kind) {
  case MS_POLICY_COUNT:
    return "count";
  case MS_POLICY_GRPC:
    return "grpc_throttling";
  case MS_POLICY_ENVOY:
    return "envoy_retry_budget";
  case MS_POLICY_FINAGLE:
    return "retry_budget";
  case MS_POLICY_AWS:
    return "aws_retry_quota";
  }
  return "unknown";
}

const ms_param *ms_policy_params(ms_policy_kind kind, int *n) {
  static const ms_param grpc[] = {MS_PARAM_GRPC_MAX_TOKENS,
                                  MS_PARAM_GRPC_TOKEN_RATIO};
  static const ms_param envoy[] = {MS_PARAM_ENVOY_BUDGET,
                                   MS_PARAM_ENVOY_MIN_CONCURRENCY};
  static const ms_param finagle[] = {MS_PARAM_FINAGLE_PERCENT,
                                     MS_PARAM_FINAGLE_MIN_PER_SECOND,
                                     MS_PARAM_FINAGLE_TTL};
  static const ms_param aws[] = {
      MS_PARAM_AWS_CAPACITY,        MS_PARAM_AWS_RETRY_COST,
      MS_PARAM_AWS_TIMEOUT_COST,    MS_PARAM_AWS_REFUND,
      MS_PARAM_AWS_THROTTLING_COST, MS_PARAM_AWS_THROTTLING_SHARE};
#define RET(a)                                                                 \
  do {                                                                         \
    *n = (int)(sizeof a / sizeof a[0]);                                        \
    return a;                                                                  \
  } while (0)
  switch (kind) {
  case MS_POLICY_GRPC:
    RET(grpc);
  case MS_POLICY_ENVOY:
    RET(envoy);
  case MS_POLICY_FINAGLE:
    RET(finagle);
  case MS_POLICY_AWS:
    RET(aws);
  case MS_POLICY_COUNT:
    break;
  }
#undef RET
  *n = 0;
  return NULL;
}

double *ms_policy_field(ms_retry_policy *p, ms_param id) {
  switch (id) {
  case MS_PARAM_GRPC_MAX_TOKENS:
    return &p->grpc_max_tokens;
  case MS_PARAM_GRPC_TOKEN_RATIO:
    return &p->grpc_token_ratio;
  case MS_PARAM_ENVOY_BUDGET:
    return &p->envoy_budget;
  case MS_PARAM_ENVOY_MIN_CONCURRENCY:
    return &p->envoy_min_concurrency;
  case MS_PARAM_FINAGLE_PERCENT:
    return &p->finagle_percent;
  case MS_PARAM_FINAGLE_MIN_PER_SECOND:
    return &p->finagle_min_per_second;
  case MS_PARAM_FINAGLE_TTL:
    return &p->finagle_ttl;
  case MS_PARAM_AWS_CAPACITY:
    return &p->aws_capacity;
  case MS_PARAM_AWS_RETRY_COST:
    return &p->aws_retry_cost;
  case MS_PARAM_AWS_TIMEOUT_COST:
    return &p->aws_timeout_cost;
  case MS_PARAM_AWS_REFUND:
    return &p->aws_refund;
  case MS_PARAM_AWS_THROTTLING_COST:
    return &p->aws_throttling_cost;
  case MS_PARAM_AWS_THROTTLING_SHARE:
    return &p->aws_throttling_share;
  default:
    return NULL;
  }
}

void ms_policy_defaults(ms_retry_policy *p, ms_policy_kind kind) {
  p->kind = kind;
  switch (kind) {
  case MS_POLICY_ENVOY:
    p->envoy_budget = MS_ENVOY_BUDGET_DEFAULT;
    p->envoy_min_concurrency = MS_ENVOY_MIN_CONCURRENCY_DEFAULT;
    break;
  case MS_POLICY_FINAGLE:
    p->finagle_percent = MS_FINAGLE_PERCENT_DEFAULT;
    p->finagle_min_per_second = MS_FINAGLE_MIN_PER_SECOND_DEFAULT;
    p->finagle_ttl = MS_FINAGLE_TTL_DEFAULT;
    break;
  case MS_POLICY_AWS:
    p->aws_capacity = MS_AWS_CAPACITY_DEFAULT;
    p->aws_refund = MS_AWS_REFUND_DEFAULT;
    p->aws_throttling_share = MS_AWS_THROTTLING_SHARE_DEFAULT;
    ms_aws_costs_defaults(p, MS_AWS_COSTS_CURRENT);
    break;
  case MS_POLICY_COUNT:
  case MS_POLICY_GRPC:
    break;
  }
}

const char *ms_aws_costs_name(int costs) {
  static const char *const names[] = {"current", "legacy"};
  return costs >= 0 && costs < 2 ? names[costs] : NULL;
}

int ms_aws_costs_find(const char *name) {
  for (int i = 0; name != NULL && ms_aws_costs_name(i) != NULL; i++)
    if (strcmp(name, ms_aws_costs_name(i)) == 0)
      return i;
  return -1;
}

void ms_aws_costs_defaults(ms_retry_policy *p, ms_aws_costs costs) {
  bool legacy = costs == MS_AWS_COSTS_LEGACY;
  p->aws_retry_cost =
      legacy ? MS_AWS_LEGACY_RETRY_COST : MS_AWS_RETRY_COST_DEFAULT;
  p->aws_timeout_cost =
      legacy ? MS_AWS_LEGACY_TIMEOUT_COST : MS_AWS_TIMEOUT_COST_DEFAULT;
  p->aws_throttling_cost =
      legacy ? MS_AWS_LEGACY_THROTTLING_COST : MS_AWS_THROTTLING_COST_DEFAULT;
}

/* The rule across servers, service rate and timeout
 * (MS_MAX_TIMEOUT_COMPLETIONS): a longer timeout would fire only closer to
 * c mu than the landscape resolves. */
/* "failure probability p = 1.0000000000000002 is outside [0, 1]". */
static int fail_p_outside(ms_error *err, double p) {
  char v[32];
  return ms_fail(err, MS_EINVAL, "failure probability p = %s is outside [0, 1]",
                 ms_format_against(v, p, p < 0.0 ? 0.0 : 1.0));
}

static int timeout_span_check(const ms_failure_model *m, ms_error *err) {
  double cmu = (double)m->servers * m->service_rate;
  double longest = ms_timeout_longest(m);
  double span = cmu * longest;
  if (span <= MS_MAX_TIMEOUT_COMPLETIONS)
    return MS_OK;
  return ms_fail(err, MS_EINVAL,
                 "%s = %.8g s: timeout x servers x service rate = %.8g "
                 "must be at most %g; a longer timeout never fires before "
                 "the queue is unbounded (no timeout: %g s)",
                 m->timeout_spread > 0.0 ? "longest timeout" : "timeout",
                 longest, span, MS_MAX_TIMEOUT_COMPLETIONS,
                 MS_MAX_TIMEOUT_COMPLETIONS / cmu);
}

/* The spread of the timeout: a width >= 0 of the erlang model, whose
 * longest timeout is a duration. */
static int timeout_spread_check(const ms_failure_model *m, ms_error *err) {
  double w = m->timeout_spread;
  if (w == 0.0)
    return MS_OK;
  if (m->kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "timeout spread = %g s: the capacity model has no "
                   "timeout; it needs the erlang model",
                   w);
  if (!(w >= 0.0 && w <= MS_MAX_DURATION))
    return ms_fail(err, MS_EINVAL,
                   "timeout spread = %g s (the longest timeout less the "
                   "shortest) must be >= 0 and at most %g s",
                   w, MS_MAX_DURATION);
  if (!(m->timeout + w <= MS_MAX_DURATION))
    return ms_fail(err, MS_EINVAL,
                   "longest timeout = %g s + %g s must be at most %g s",
                   m->timeout, w, MS_MAX_DURATION);
  return MS_OK;
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
  if ((st = timeout_spread_check(m, err)) != MS_OK)
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
    if (ms_timeout_covers_name(m->timeout_covers) == NULL)
      return ms_fail(err, MS_EINVAL,
                     "timeout_covers = %d is neither wait nor response",
                     (int)m->timeout_covers);
    /* the M/M/c/K response tail (doc/design.md §1.9) is that of
     * exponential service: refused rather than computed for another cv */
    if (m->has_queue_limit && m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE &&
        m->has_service_time_cv && m->service_time_cv != 1.0)
      return ms_fail(err, MS_EINVAL,
                     "timeout_covers response with queue_limit = %lld and "
                     "service_time_cv = %g: the queue-limited response is "
                     "that of exponential service; drop service_time_cv",
                     (long long)m->queue_limit, m->service_time_cv);
    return timeout_span_check(m, err);
  }
  return ms_fail(err, MS_EINVAL, "model kind %d is neither capacity nor erlang",
                 (int)m->kind);
}

/* The fields of the named policy p->kind. */
static int named_policy_check(const ms_retry_policy *p, ms_error *err) {
  int st = MS_OK;
  switch (p->kind) {
  case MS_POLICY_COUNT:
    return MS_OK;
  case MS_POLICY_GRPC:
    (void)((st = MS_PARAM_CHECK(MS_PARAM_GRPC_MAX_TOKENS, p->grpc_max_tokens,
                                err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_GRPC_TOKEN_RATIO, p->grpc_token_ratio,
                                err)));
    break;
  case MS_POLICY_ENVOY:
    (void)((st = MS_PARAM_CHECK(MS_PARAM_ENVOY_BUDGET, p->envoy_budget, err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_ENVOY_MIN_CONCURRENCY,
                                p->envoy_min_concurrency, err)));
    break;
  case MS_POLICY_FINAGLE:
    (void)((st = MS_PARAM_CHECK(MS_PARAM_FINAGLE_PERCENT, p->finagle_percent,
                                err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_FINAGLE_MIN_PER_SECOND,
                                p->finagle_min_per_second, err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_FINAGLE_TTL, p->finagle_ttl, err)));
    break;
  case MS_POLICY_AWS:
    (void)((st = MS_PARAM_CHECK(MS_PARAM_AWS_CAPACITY, p->aws_capacity, err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_AWS_RETRY_COST, p->aws_retry_cost,
                                err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_AWS_TIMEOUT_COST, p->aws_timeout_cost,
                                err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_AWS_REFUND, p->aws_refund, err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_AWS_THROTTLING_COST,
                                p->aws_throttling_cost, err)) ||
           (st = MS_PARAM_CHECK(MS_PARAM_AWS_THROTTLING_SHARE,
                                p->aws_throttling_share, err)));
    break;
  default:
    return ms_fail(err, MS_EINVAL, "retry policy kind %d is not a policy",
                   (int)p->kind);
  }
  if (st != MS_OK)
    return st;
  if (p->has_budget || p->has_token)
    return ms_fail(err, MS_EINVAL,
                   "%s replaces retry_budget and token_ratio: give one "
                   "policy",
                   ms_policy_name(p->kind));
  if (ms_policy_load_dependent(p) && p->tiers > 1)
    return ms_fail(err, MS_EINVAL,
                   "%s depends on the load of the tier it guards: it applies "
                   "to one tier (tiers = %d)",
                   ms_policy_name(p->kind), p->tiers);
  return MS_OK;
}

int ms_retry_policy_check(const ms_retry_policy *p, ms_error *err) {
  if (p == NULL)
    return ms_fail(err, MS_EINVAL, "retry policy is NULL");
  int st;
  if ((st = MS_PARAM_CHECK(MS_PARAM_RETRIES, p->retries, err)) ||
      (st = MS_PARAM_CHECK(MS_PARAM_TIERS, p->tiers, err)))
    return st;
  for (int i = 1; p->has_tier_retries && i < p->tiers; i++)
    if ((st = MS_PARAM_CHECK(MS_PARAM_RETRIES, p->tier_retries[i], err)))
      return st;
  if (p->tiers < 32 && (p->nested >> p->tiers) != 0)
    return ms_fail(err, MS_EINVAL,
                   "nested layering names a tier above the %d tiers", p->tiers);
  if ((p->nested & 1u) != 0)
    return ms_fail(err, MS_EINVAL, "tier 0 has no tier below it to nest over");
  if ((st = named_policy_check(p, err)) != MS_OK)
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
  if (st != MS_OK || (st = ms_retry_policy_check(&s->policy, err)) != MS_OK)
    return st;
  if (s->policy.kind == MS_POLICY_ENVOY && s->model.kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "envoy_retry_budget counts concurrent attempts: it needs "
                   "the erlang model, whose wait gives the time an attempt "
                   "holds its slot");
  if (s->policy.kind == MS_POLICY_ENVOY && s->model.has_queue_limit)
    return ms_fail(err, MS_EINVAL,
                   "envoy_retry_budget with a queue_limit: the time an "
                   "attempt holds its slot is modelled for an unbounded "
                   "queue only");
  return MS_OK;
}

double ms_saturation_load(const ms_failure_model *m) {
  return m->kind == MS_MODEL_CAPACITY ? m->capacity
                                      : (double)m->servers * m->service_rate;
}

double ms_effective_timeout(const ms_failure_model *m) {
  /* the capacity model has no timeout and its check does not look at the
   * field: returning it let an unchecked inf or NaN out of a valid model */
  if (m->kind != MS_MODEL_ERLANG)
    return 0.0;
  if (!m->has_service_time_cv)
    return m->timeout;
  /* 2 T / (1 + 1) is T exactly: cv = 1 is the M/M/c model bit for bit */
  double cv = m->service_time_cv;
  return 2.0 * m->timeout / (1.0 + cv * cv);
}

double ms_timeout_longest(const ms_failure_model *m) {
  if (m->kind != MS_MODEL_ERLANG)
    return 0.0;
  return m->timeout + m->timeout_spread;
}

/* ln q(x) and x d ln q / dx of a valid erlang model without a queue limit
 * at 0 <= x < c mu, gamma = c mu - x > 0 formed with one rounding (fma:
 * c mu rounded first would lose digits near saturation).  The wait: q =
 * P(W > T'), with general service T' = ms_effective_timeout, a constant in
 * x, so ln q and its slope are the M/M/c ones with T' for T.  The
 * response: q = P(W + S > T) (ms_response_terms_unchecked; doc/design.md
 * §1.1). */
static void erlang_tail(const ms_failure_model *m, double x, double gamma,
                        double *ln_q, double *dlnq) {
  double c = (double)m->servers, mu = m->service_rate;
  double a = x / mu;
  if (m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE) {
    ms_response_terms_unchecked(
        m->servers, mu, x, a, gamma, m->timeout,
        m->has_service_time_cv ? m->service_time_cv : 1.0, ln_q, dlnq);
    return;
  }
  double T = ms_effective_timeout(m);
  if (!(a >= DBL_MIN)) {
    *ln_q = -INFINITY;
    *dlnq = 0.0;
  } else if (a >= c) {
    *ln_q = -gamma * T;
    *dlnq = x * T;
  } else {
    ms_erlang_terms t;
    ms_erlang_terms_unchecked(m->servers, a, &t);
    *ln_q = t.ln_c - gamma * T;
    /* a d ln C / da = (c - a) + a (1 - B) / (c - a + a B), from
     * dB/da = B (c/a - 1 + B) (Jagerman 1974). */
    double ca = c - a;
    *dlnq = ca + a * (1.0 - t.b) / (ca + a * t.b) + x * T;
  }
}

/* p(x) and x p'(x) for a valid model and x >= 0. */
static void failure_and_slope(const ms_failure_model *m, double x, double *p,
                              double *xdp, double *q_out) {
  double ok = 1.0 - m->base_failure;
  if (m->kind == MS_MODEL_CAPACITY) {
    double C = m->capacity;
    if (x <= C) {
      *p = m->base_failure;
      *xdp = 0.0;
      *q_out = ok;
    } else {
      /* 1 - p = (1 - base) C / x: no cancellation, unlike base + ... */
      double survive = ok * (C / x);
      *p = 1.0 - survive;
      *xdp = survive;
      *q_out = survive;
    }
    return;
  }
  /* saturated from c mu as rounded (ms_saturation_load) on */
  double gamma = fma((double)m->servers, m->service_rate, -x);
  if (!(x < (double)m->servers * m->service_rate) || !(gamma > 0.0)) {
    *p = 1.0;
    *xdp = 0.0;
    *q_out = 0.0;
    return;
  }
  double ln_q, dlnq; /* ln q and x d ln q / dx */
  erlang_tail(m, x, gamma, &ln_q, &dlnq);
  if (ln_q == -INFINITY) {
    *p = m->base_failure;
    *xdp = 0.0;
    *q_out = ok;
    return;
  }
  double q = exp(ln_q);
  /* 1 - p = (1 - base)(1 - q), with 1 - q = -expm1(ln q) accurate; p
   * itself as base + (1 - base) q, a sum of two positive terms, so that a
   * wait tail of 1e-40 gives p = 1e-40 and not 1 - (1 - 1e-40) = 0 */
  *q_out = ok * -expm1(ln_q);
  *p = fmin(1.0, m->base_failure + ok * q);
  *xdp = ok * q * dlnq;
}

int ms_failure_tail(const ms_failure_model *m, double x, double *ln_q,
                    double *xdlnq, ms_error *err) {
  int st = ms_failure_model_check(m, err);
  if (st != MS_OK)
    return st;
  if (m->kind != MS_MODEL_ERLANG || m->has_queue_limit)
    return ms_fail(err, MS_EINVAL,
                   "the failure tail is that of the erlang model without a "
                   "queue limit");
  if (m->timeout + m->timeout_spread > m->timeout)
    return ms_fail(err, MS_EINVAL,
                   "the failure tail is that of one timeout: timeout spread "
                   "= %g s averages it (ms_failure_probability)",
                   m->timeout_spread);
  if (!isfinite(x) || !(x >= 0.0))
    return ms_fail(err, MS_EINVAL,
                   "effective load x = %g attempts/s must be finite and >= 0",
                   x);
  /* saturated from c mu as rounded (ms_saturation_load) on */
  double gamma = fma((double)m->servers, m->service_rate, -x);
  if (!(x < (double)m->servers * m->service_rate) || !(gamma > 0.0)) {
    *ln_q = 0.0;
    *xdlnq = 0.0;
    return MS_OK;
  }
  erlang_tail(m, x, gamma, ln_q, xdlnq);
  if (*ln_q < -DBL_MAX)
    *ln_q = -DBL_MAX;
  return MS_OK;
}

/* ln P_block, ln(1 - P_block), ln W and ln(1 - W) of the M/M/c/K queue at
 * x (W = P(W > T | admitted), or P(W + S > T | admitted) when the timeout
 * covers the response), and p, p_retry from them:
 *   1 - p = (1 - P_block)(1 - base)(1 - W),  p_retry = p - P_block. */
typedef struct {
  double ln_block, ln_admit, ln_wait, ln_wait_c;
} queue_logs;

static void queue_logs_at(const ms_failure_model *m, double x, queue_logs *q) {
  ms_mmck_terms t;
  if (m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE)
    ms_mmck_response_terms_unchecked(m->servers, m->queue_limit,
                                     m->service_rate, x, m->timeout, &t);
  else
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
    double ok = 1.0 - m->base_failure;
    *f = (ms_failure_eval){m->base_failure, 0.0, m->base_failure, 0.0, ok, ok};
    return;
  }
  if (!(x <= MS_MAX_RATE)) {
    /* beyond any load: every attempt is rejected */
    double retried = m->rejections_final ? 0.0 : 1.0;
    *f = (ms_failure_eval){1.0, 0.0, retried, 0.0, 0.0, 1.0 - retried};
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
  /* x d ln(1 - P)/dx = -P/(1 - P) x d ln P/dx while P <= 1/2, and the
   * same for W; above, the difference of ln(1 - P) (ln(1 - W)) itself,
   * whose digits ln P loses near P = 1 (0 where 1 - W rounds to 0: then
   * 1 - p is 0 and so is its slope) */
  double dadmit = block <= 0.5 ? -block * dlnb / exp(q.ln_admit)
                               : (hi.ln_admit - lo.ln_admit) / (2.0 * h);
  double dwait_c = wait <= 0.5 ? -wait * dlnw / exp(q.ln_wait_c)
                               : (hi.ln_wait_c - lo.ln_wait_c) / (2.0 * h);
  if (!isfinite(dwait_c))
    dwait_c = 0.0;
  double ln_survive = q.ln_admit + ln_ok + q.ln_wait_c;
  double survive = exp(ln_survive);
  /* p >= base: -expm1(log1p(-base)) can round one ulp below base */
  f->p = fmax(m->base_failure, -expm1(ln_survive));
  f->q = survive;
  f->xdp = survive > 0.0 ? -survive * (dadmit + dwait_c) : 0.0;
  if (!m->rejections_final) {
    f->p_retry = f->p;
    f->q_retry = f->q;
    f->xdp_retry = f->xdp;
    return;
  }
  /* p_retry = (1 - P) g with g = 1 - (1 - base)(1 - W) */
  double admit = exp(q.ln_admit);
  double g = -expm1(ln_ok + q.ln_wait_c);
  double xdg = -exp(ln_ok + q.ln_wait_c) * dwait_c;
  f->p_retry = admit * g;
  /* 1 - p_retry = P_block + (1 - P_block)(1 - base)(1 - W): the
   * rejected, whose requests end, and the successes */
  f->q_retry = fmin(1.0, exp(q.ln_block) + survive);
  f->xdp_retry = admit * (dadmit * g + xdg);
}

/* The failure split at x when every attempt times out at m->timeout. */
static void failure_eval_fixed(const ms_failure_model *m, double x,
                               ms_failure_eval *f) {
  if (m->has_queue_limit) {
    queue_limited_eval(m, x, f);
    return;
  }
  failure_and_slope(m, x, &f->p, &f->xdp, &f->q);
  f->p_retry = f->p;
  f->q_retry = f->q;
  f->xdp_retry = f->xdp;
}

/*
 * A spread timeout (doc/design.md §1.1): each attempt draws its timeout T
 * uniformly from [T0, T0 + w], independently of the queue, so every part
 * of the failure split is the average of the fixed-timeout one over T:
 * p(x) = (1/w) integral p(x; T) dT, and x p'(x) likewise (T does not
 * depend on x).  1 - p is averaged on its own, not formed as 1 - p, so
 * that its digits stay where p is near 1.  The per-T split is
 * failure_eval_fixed, whatever tail it uses: this layer only integrates.
 *
 * The integral is adaptive Gauss-Kronrod (7 and 15 points, the pair of
 * QUADPACK's QK15; Piessens et al., QUADPACK, Springer 1983): the segment
 * with the largest error estimate |K15 - G7| is halved until every part's
 * estimate is within SPREAD_TOL of its value (SPREAD_TOL_SLOPE for
 * the slopes), or SPREAD_SEGMENTS segments.  The wait tail decays like
 * e^(-(c mu - x) T), so segments gather near the shortest timeout when
 * (c mu - x) w is large.
 */
enum { SPREAD_PARTS = 6, SPREAD_SEGMENTS = 40 };
#define SPREAD_TOL 1e-11
#define SPREAD_TOL_SLOPE 1e-9

typedef struct {
  double lo, hi;
  double v[SPREAD_PARTS], err[SPREAD_PARTS];
} spread_segment;

/* QK15's nodes and weights (internal.h). */
const double ms_qk15_x[8] = {
    0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
    0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
    0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
    0.207784955007898467600689403773245, 0.0};
const double ms_qk15_wk[8] = {
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
    0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
    0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714};
const double ms_qk15_wg[4] = {
    0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
    0.381830050505118944950369775488975, 0.417959183673469387755102040816327};

static void spread_parts(const ms_failure_model *m, double x, double T,
                         double v[SPREAD_PARTS]) {
  ms_failure_model one = *m;
  one.timeout = T;
  one.timeout_spread = 0.0;
  ms_failure_eval f;
  failure_eval_fixed(&one, x, &f);
  v[0] = f.p;
  v[1] = f.xdp;
  v[2] = f.p_retry;
  v[3] = f.xdp_retry;
  v[4] = f.q;
  v[5] = f.q_retry;
}

/* One segment's share of the average (its integral over w) and the
 * error estimate of each part. */
static void spread_segment_eval(const ms_failure_model *m, double x, double w,
                                spread_segment *s) {
  double mid = 0.5 * (s->lo + s->hi), half = 0.5 * (s->hi - s->lo);
  double k[SPREAD_PARTS] = {0}, g[SPREAD_PARTS] = {0}, v[SPREAD_PARTS];
  for (int i = 0; i < 8; i++) {
    int sides = i < 7 ? 2 : 1;
    for (int side = 0; side < sides; side++) {
      double t = side ? mid - half * ms_qk15_x[i] : mid + half * ms_qk15_x[i];
      spread_parts(m, x, fmin(s->hi, fmax(s->lo, t)), v);
      for (int j = 0; j < SPREAD_PARTS; j++) {
        k[j] += ms_qk15_wk[i] * v[j];
        if (i % 2 == 1)
          g[j] += ms_qk15_wg[i / 2] * v[j];
      }
    }
  }
  double scale = half / w;
  for (int j = 0; j < SPREAD_PARTS; j++) {
    s->v[j] = k[j] * scale;
    s->err[j] = fabs(k[j] - g[j]) * scale;
  }
}

/* Whether the error estimates are within the tolerance of the values;
 * else the segment whose error weighs most. */
static bool spread_converged(const spread_segment *seg, int n, int *worst) {
  double tot[SPREAD_PARTS] = {0}, err[SPREAD_PARTS] = {0};
  for (int i = 0; i < n; i++)
    for (int j = 0; j < SPREAD_PARTS; j++) {
      tot[j] += seg[i].v[j];
      err[j] += seg[i].err[j];
    }
  bool ok = true;
  double most = -1.0;
  for (int j = 0; j < SPREAD_PARTS; j++) {
    /* parts 1 and 3 are slopes, which the queue-limited model takes by
     * central differences good to about 1e-7: asking more of them would
     * halve segments on rounding noise */
    double tol = j == 1 || j == 3 ? SPREAD_TOL_SLOPE : SPREAD_TOL;
    double allowed = tol * fabs(tot[j]) + DBL_MIN;
    if (err[j] <= allowed)
      continue;
    ok = false;
    for (int i = 0; i < n; i++)
      if (seg[i].err[j] / allowed > most) {
        most = seg[i].err[j] / allowed;
        *worst = i;
      }
  }
  return ok;
}

static void spread_eval(const ms_failure_model *m, double x,
                        ms_failure_eval *f) {
  /* the width as the doubles hold it: dividing by the spread itself would
   * be off by the rounding of T + w, relative to a tiny w */
  double w = (m->timeout + m->timeout_spread) - m->timeout;
  spread_segment seg[SPREAD_SEGMENTS];
  seg[0].lo = m->timeout;
  seg[0].hi = m->timeout + w;
  int n = 1, worst = 0;
  /* the response's tail of a general service has a kink at the fit's
   * shift D (P(S > T) = 1 below it): a segment across it converges
   * slowly, and the bisection's SPREAD_SEGMENTS can run out first (an
   * idle pool, cv 0.997, w = 36 s: 5e-6 off).  Split there at once. */
  if (m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE &&
      m->has_service_time_cv && m->service_time_cv != 1.0) {
    ms_service_fit fit;
    ms_service_fit_of(m->service_rate, m->service_time_cv, &fit);
    if (fit.D > seg[0].lo && fit.D < seg[0].hi) {
      seg[1].lo = fit.D;
      seg[1].hi = seg[0].hi;
      seg[0].hi = fit.D;
      spread_segment_eval(m, x, w, &seg[1]);
      n = 2;
    }
  }
  spread_segment_eval(m, x, w, &seg[0]);
  while (n < SPREAD_SEGMENTS && !spread_converged(seg, n, &worst)) {
    spread_segment *a = &seg[worst];
    double mid = 0.5 * (a->lo + a->hi);
    if (!(mid > a->lo && mid < a->hi))
      break; /* the segment is as short as doubles allow */
    spread_segment *b = &seg[n++];
    b->lo = mid;
    b->hi = a->hi;
    a->hi = mid;
    spread_segment_eval(m, x, w, a);
    spread_segment_eval(m, x, w, b);
  }
  double v[SPREAD_PARTS] = {0};
  for (int i = 0; i < n; i++)
    for (int j = 0; j < SPREAD_PARTS; j++)
      v[j] += seg[i].v[j];
  /* each timeout's p is at least the base failure, so is their mean; the
   * quadrature's sum can round an ulp below it */
  f->p = fmin(1.0, fmax(m->base_failure, v[0]));
  f->xdp = v[1];
  f->p_retry = fmin(1.0, fmax(0.0, v[2]));
  f->xdp_retry = v[3];
  f->q = fmin(1.0, fmax(0.0, v[4]));
  f->q_retry = fmin(1.0, fmax(0.0, v[5]));
}

void ms_failure_eval_at(const ms_failure_model *m, double x,
                        ms_failure_eval *f) {
  /* a spread below the rounding of T is no spread; nor is one below
   * 2^39 DBL_MIN (1.2e-296 s): halved by the SPREAD_SEGMENTS segments its
   * widths turn subnormal and their halves round (6e-323 s gave weights
   * summing to 5/6).  p(T) stands for the mean then, exact unless c mu w
   * nears 1, mu near MS_MAX_SERVICE_RATE. */
  if (m->kind == MS_MODEL_ERLANG &&
      m->timeout + m->timeout_spread > m->timeout &&
      (m->timeout + m->timeout_spread) - m->timeout >= 0x1p39 * DBL_MIN) {
    spread_eval(m, x, f);
    return;
  }
  failure_eval_fixed(m, x, f);
}

/* 1 + p + ... + p^r and its derivative: by Horner's rule up to 64 retries
 * and within 0.1/(r + 1) of p = 1 (where the closed form's derivative
 * cancels), else in closed form with n = r + 1, q = 1 - p:
 *   A = (1 - p^n) / q = -expm1(n log1p(-q)) / q,
 *   dA = ((1 - p^n) - n p^(n-1) q) / q^2
 * (at n q >= 0.1 the subtraction loses at most 20x, under 2 digits), so
 * the cost stays bounded at any retry count. */
static void fixed_amplification(int r, double p, double *A, double *dA) {
  double n = r + 1.0, q = 1.0 - p;
  if (r > 64 && n * q >= 0.1) {
    /* ln p directly where 1 - p would round p away (p below 1e-17) */
    double lp = p < 0.5 ? log(p) : log1p(-q);
    double one_minus_pn = -expm1(n * lp);
    double pn1 = exp((n - 1.0) * lp); /* p^(n-1); 0 at p = 0 */
    *A = one_minus_pn / q;
    *dA = (one_minus_pn - n * pn1 * q) / (q * q);
    return;
  }
  double a = 1.0, da = 0.0;
  for (int i = 0; i < r; i++) {
    da = da * p + a;
    a = a * p + 1.0;
  }
  *A = a;
  *dA = da;
}

/* P(y > tau) for the stationary density proportional to exp(theta y) on
 * [0, M] (0 <= tau <= M):
 *   (e^(theta M) - e^(theta tau)) / (e^(theta M) - 1), (M - tau)/M at 0,
 * written with expm1 so that neither sign of theta overflows. */
static double reflected_tail(double theta, double M, double tau) {
  double a = M - tau;
  if (theta == 0.0)
    return a / M;
  if (theta > 0.0)
    return expm1(-theta * a) / expm1(-theta * M);
  return exp(theta * tau) * (expm1(theta * a) / expm1(theta * M));
}

/*
 * gRFC A6's throttle: the share f of retry decisions that find more than
 * max_tokens/2 tokens, and df/dp.  Each attempt moves the token count by
 * +t (success, 1 - p) or -1 (failure, p), reflected at 0 and M: a walk of
 * drift d = t - p (1 + t) and variance v = (1 + t)^2 p (1 - p) per attempt.
 * Its diffusion limit, reflected Brownian motion on [0, M], has the
 * stationary density proportional to exp(theta y), theta = 2 d / v.  A
 * retry is decided after the failure that calls for it has taken its token
 * (the count must then still exceed M/2), so f = P(y > M/2 + 1)
 * (doc/design.md §1.2): f -> 1 when successes refill faster than failures
 * drain (p < t/(1 + t)), f -> 0 above, and the switch sharpens with M.
 */
static void grpc_share(double M, double t, double p, double *f, double *df) {
  double tau = 0.5 * M + 1.0;
  double w = p * (1.0 - p);
  if (tau >= M) { /* at most 2 tokens: no retry ever passes */
    *f = 0.0;
    *df = 0.0;
    return;
  }
  if (!(w > 0.0)) {
    *f = p < 0.5 ? 1.0 : 0.0;
    *df = 0.0;
    return;
  }
  double u = t - p * (1.0 + t), k = 2.0 / ((1.0 + t) * (1.0 + t));
  double theta = k * u / w;
  double dtheta = k * (-(1.0 + t) * w - u * (1.0 - 2.0 * p)) / (w * w);
  *f = reflected_tail(theta, M, tau);
  /* df/dtheta by central differences: f is smooth in theta */
  double h = 1e-5 * fmax(1.0, fabs(theta)) / M;
  double dfdt =
      (reflected_tail(theta + h, M, tau) - reflected_tail(theta - h, M, tau)) /
      (2.0 * h);
  *df = isfinite(dtheta) && isfinite(dfdt) ? dfdt * dtheta : 0.0;
}

/* The AWS quota's retries by the error before them: a share of the retry
 * decisions and a cost, at most three kinds (timeouts, throttling errors,
 * other transient errors), those of the same cost merged. */
enum { AWS_KINDS = 3, AWS_LEVELS = 256 };
typedef struct {
  int n;
  double share[AWS_KINDS], cost[AWS_KINDS];
} aws_mix;

static void aws_mix_add(aws_mix *mx, double share, double cost) {
  if (!(share > 0.0))
    return;
  for (int i = 0; i < mx->n; i++)
    if (mx->cost[i] == cost) {
      mx->share[i] += share;
      return;
    }
  mx->share[mx->n] = share;
  mx->cost[mx->n++] = cost;
}

/*
 * The bucket near empty, in levels of one up-step (doc/design.md §1.2): it
 * rises one level at rate 1, and falls C_t levels at rate kap[t] when it
 * holds at least C_t (a retry of kind t admitted that then fails; one that
 * succeeds returns its cost at once).  A fractional C = m + f falls m
 * levels or m + 1 with probabilities 1 - f and f, and needs m + 1.  The
 * chain rises by one level at most, so above the highest threshold its
 * stationary distribution is geometric, pi_k ~ z^k with z in (0, 1) the
 * root of sum_t kap_t E[z + ... + z^C_t] = 1 (Neuts, Matrix-Geometric
 * Solutions in Stochastic Models, 1981, ch. 1: the GI/M/1 type); below
 * it each cut between levels k and k + 1 balances the rise from k with
 * the falls across it, which gives pi_k from the levels above.  Out:
 * a[t] = P(level >= C_t), the share of kind t's decisions admitted; 1
 * when the falls do not outweigh the rise (the bucket fills).
 */
static void aws_levels(const aws_mix *mx, const double *C, const double *kap,
                       double *a) {
  int m[AWS_KINDS], thr[AWS_KINDS], top = 1, mmax = 0;
  double f[AWS_KINDS], drift = -1.0;
  for (int t = 0; t < mx->n; t++) {
    m[t] = (int)floor(C[t] * (1.0 + 1e-12));
    f[t] = fmax(0.0, C[t] - m[t]);
    if (f[t] < 1e-9 * C[t])
      f[t] = 0.0;
    thr[t] = m[t] + (f[t] > 0.0);
    top = thr[t] > top ? thr[t] : top;
    mmax = m[t] + 1 > mmax ? m[t] + 1 : mmax;
    drift += kap[t] * C[t];
    a[t] = 1.0;
  }
  if (!(drift > 0.0))
    return;
  /* z: Newton from 1, where phi(z) = sum kap E[z + ... + z^C] - 1 is
   * increasing and convex, so the steps fall monotonically to the root */
  double z = 1.0;
  for (int it = 0; it < 100; it++) {
    double phi = -1.0, dphi = 0.0;
    for (int t = 0; t < mx->n; t++) {
      double g = 0.0, dg = 0.0, zi = 1.0; /* z^(i-1) */
      for (int i = 1; i <= m[t] + 1; i++) {
        double w = i <= m[t] ? 1.0 : f[t];
        dg += w * i * zi;
        zi *= z;
        g += w * zi;
      }
      phi += kap[t] * g;
      dphi += kap[t] * dg;
    }
    double step = phi / dphi;
    z -= step;
    if (!(z > 0.0))
      z = 0.0;
    if (!(fabs(step) > 1e-16 * z))
      break;
  }
  if (!(z < 1.0))
    return;
  /* pi_k for k <= top - 1 + mmax: geometric from n = top - 1 on (pi_n =
   * 1), then down the cuts; T[k] sums pi from k to the last stored level,
   * tail the rest */
  int n = top - 1, last = n + mmax;
  double pi[2 * AWS_LEVELS + 4], T[2 * AWS_LEVELS + 5], scale = 1.0;
  T[last + 1] = 0.0;
  for (int k = last; k >= n; k--) {
    pi[k] = pow(z, (double)(k - n));
    T[k] = T[k + 1] + pi[k];
  }
  for (int k = n - 1; k >= 0; k--) {
    double flow = 0.0;
    for (int t = 0; t < mx->n; t++) {
      int lo = k + 1 > thr[t] ? k + 1 : thr[t];
      double w0 = lo <= k + m[t] ? T[lo] - T[k + m[t] + 1] : 0.0;
      double w1 = lo <= k + m[t] + 1 ? T[lo] - T[k + m[t] + 2] : 0.0;
      flow += kap[t] * ((1.0 - f[t]) * w0 + f[t] * w1);
    }
    pi[k] = flow;
    T[k] = T[k + 1] + flow;
    if (T[k] > 1e250) { /* the levels near empty outweigh those above */
      for (int i = k; i <= last; i++) {
        pi[i] *= 1e-250;
        T[i] *= 1e-250;
      }
      scale *= 1e-250;
    }
  }
  double tail = scale * pow(z, (double)(mmax + 1)) / (1.0 - z);
  for (int t = 0; t < mx->n; t++)
    a[t] = (T[thr[t]] + tail) / (T[0] + tail);
}

/* The share of the retry decisions the quota admits, a, for r retries at
 * p (q = 1 - p) when the bucket sits near empty: per request, first
 * successes raise it q refund; the decisions of kind t, share_t p E with
 * E = 1 + (p a) + ... + (p a)^(r-1), take cost_t when admitted, and the
 * admitted retry keeps it when it fails (p).  a = sum share_t a_t, a
 * fixed point: a_t falls as a raises the decisions. */
static double aws_admitted(const aws_mix *mx, double refund, int r, double p,
                           double q) {
  if (!(p > 0.0) || r < 1)
    return 1.0;
  if (!(q > 0.0) || !(refund > 0.0))
    return 0.0;
  double cmax = 0.0, cmin = INFINITY;
  for (int t = 0; t < mx->n; t++)
    cmax = fmax(cmax, mx->cost[t]), cmin = fmin(cmin, mx->cost[t]);
  /* the refunds pay for every admitted retry: a p cmin <= q refund.  Where
   * that bound is below 2^-60, A differs from its a = 0 value by less
   * than an ulp of 1, and the levels below would overflow (a refund 1e-100
   * of the cost gave NaN): a is 0 as far as a double sees */
  if (q * refund <= 0x1p-60 * cmin * p)
    return 0.0;
  /* levels of k refunds, so that no cost spans more than AWS_LEVELS */
  double k = fmax(1.0, cmax / (refund * AWS_LEVELS));
  double C[AWS_KINDS], kap[AWS_KINDS], at[AWS_KINDS];
  for (int t = 0; t < mx->n; t++)
    C[t] = mx->cost[t] / (refund * k);
  double lo = 0.0, hi = 1.0, glo = NAN, ghi = NAN, a = 1.0;
  for (int it = 0; it < 200; it++) {
    double E = 0.0, pa = p * a;
    for (int i = r - 1; i >= 0; i--)
      E = E * pa + 1.0;
    for (int t = 0; t < mx->n; t++)
      kap[t] = mx->share[t] * p * p * E * k / q;
    aws_levels(mx, C, kap, at);
    double g = -a;
    for (int t = 0; t < mx->n; t++)
      g += mx->share[t] * at[t];
    if (it == 0 && g >= 0.0)
      return 1.0; /* every retry admitted: the bucket fills */
    if (r == 1)
      return g + a; /* E does not depend on a */
    if (g > 0.0)
      lo = a, glo = g;
    else
      hi = a, ghi = g;
    if (hi - lo < 1e-14 * hi)
      break;
    /* regula falsi once both ends are known, bisection otherwise */
    double next = isnan(glo) || isnan(ghi) ? 0.5 * (lo + hi)
                                           : lo + glo * (hi - lo) / (glo - ghi);
    if (!(next > lo && next < hi) || it % 3 == 2)
      next = 0.5 * (lo + hi);
    a = next;
  }
  return a;
}

/*
 * The AWS quota's A(p) and dA/dp (doc/design.md §1.2).  A retry takes the
 * cost of the error before it: timeout_cost after a timeout (a share w of
 * the failures), throttling_cost after a throttling error (a share
 * throttling_share of the others), retry_cost after the rest; a retry
 * that succeeds returns its cost, a first-attempt success adds refund.
 * While the refunds pay for the failed retries the fixed count rules;
 * above, with one cost, the balance p cost R = refund (1 - p) gives R; with
 * several the bucket near empty admits the cheap retries more often than
 * the dear ones (aws_admitted), and dA/dp is taken by central differences.
 */
static void aws_amplification(const ms_retry_policy *pol, int r, double p,
                              double q, double w, double *A, double *dA) {
  double s, ds;
  fixed_amplification(r, p, &s, &ds);
  aws_mix mx = {0};
  double th = pol->aws_throttling_share;
  aws_mix_add(&mx, w, pol->aws_timeout_cost);
  aws_mix_add(&mx, (1.0 - w) * th, pol->aws_throttling_cost);
  aws_mix_add(&mx, (1.0 - w) * (1.0 - th), pol->aws_retry_cost);
  double cost = 0.0;
  for (int t = 0; t < mx.n; t++)
    cost += mx.share[t] * mx.cost[t];
  if (p > 0.0 && mx.n > 0 && pol->aws_refund * q < cost * p * (s - 1.0)) {
    if (mx.n == 1) {
      s = 1.0 + pol->aws_refund * q / (cost * p);
      ds = -pol->aws_refund / (cost * p * p);
    } else {
      /* the difference of p a, not of A: near p = 1 A is 1 + a sliver
       * whose digits A's own rounding would lose */
      double h = 1e-5 * fmin(p, q);
      double pa = p * aws_admitted(&mx, pol->aws_refund, r, p, q);
      double pap =
          (p + h) * aws_admitted(&mx, pol->aws_refund, r, p + h, q - h);
      double pam =
          (p - h) * aws_admitted(&mx, pol->aws_refund, r, p - h, q + h);
      fixed_amplification(r, pa, &s, &ds);
      ds *= h > 0.0 ? (pap - pam) / (2.0 * h) : 0.0;
    }
  }
  *A = s;
  *dA = ds;
}

void ms_tier_amplification(const ms_retry_policy *pol, int r, double p,
                           double q, double timeout_share, double *A,
                           double *dA) {
  double s, ds;
  switch (pol->kind) {
  case MS_POLICY_GRPC: {
    double f, df;
    grpc_share(pol->grpc_max_tokens, pol->grpc_token_ratio, p, &f, &df);
    fixed_amplification(r, p * f, &s, &ds);
    ds *= f + p * df;
    break;
  }
  case MS_POLICY_AWS:
    aws_amplification(pol, r, p, q, timeout_share, &s, &ds);
    break;
  case MS_POLICY_FINAGLE:
  case MS_POLICY_ENVOY:
    /* the share part of Finagle's budget caps A at 1 + percent; its
     * min_per_second and Envoy's budget depend on the load (ms_point_eval) */
    fixed_amplification(r, p, &s, &ds);
    if (pol->kind == MS_POLICY_FINAGLE && pol->finagle_min_per_second == 0.0 &&
        1.0 + pol->finagle_percent < s) {
      s = 1.0 + pol->finagle_percent;
      ds = 0.0;
    }
    break;
  default:
    fixed_amplification(r, p, &s, &ds);
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
    break;
  }
  *A = s;
  *dA = ds;
}

/* g(k) = (1 - e^(-k T)) / k = integral_0^T e^(-k s) ds, and g'(k). */
static double hold_g(double k, double T) {
  return k * T > 1e-300 ? -expm1(-k * T) / k : T;
}

static double hold_dg(double k, double T) {
  double kT = k * T;
  if (kT < 1e-4) /* -T^2/2 + k T^3/3 - ... */
    return T * T * (-0.5 + kT / 3.0);
  return (kT * exp(-kT) + expm1(-kT)) / (k * k);
}

/*
 * The mean time an attempt holds its client's slot at effective load x:
 * h = E[min(R, T)] with R = W + S the M/M/c response time, for the erlang
 * model without a queue limit.  With q = C(c, a), gamma = c mu - x:
 *   P(R > s) = (1 - C) e^(-mu s) + C (mu e^(-gamma s) - gamma e^(-mu s))
 *              / (mu - gamma)   (W | W > 0 ~ Exp(gamma), S ~ Exp(mu))
 *   h = g(mu) + C mu (g(gamma) - g(mu)) / (mu - gamma)
 * (Kleinrock 1975, sec. 3.4: the response time of M/M/c); h = T when
 * x >= c mu, where every attempt waits its whole timeout.
 */
static double hold_time_fixed(const ms_failure_model *m, double x, double T) {
  double mu = m->service_rate;
  double cmu = (double)m->servers * mu;
  if (!(x < cmu))
    return T;
  double a = x / mu;
  double gm = hold_g(mu, T);
  if (!(a >= DBL_MIN))
    return gm;
  ms_erlang_terms t;
  ms_erlang_terms_unchecked(m->servers, a, &t);
  double C = exp(t.ln_c), gamma = cmu - x;
  double diff = mu - gamma, dd;
  if (fabs(diff) > 1e-4 * mu)
    dd = (hold_g(gamma, T) - gm) / diff;
  else
    dd = -hold_dg(0.5 * (mu + gamma), T);
  return gm + C * mu * dd;
}

/* With a spread timeout, the average of E[min(R, T)] over T: the 15-point
 * Kronrod rule, ample for a function of T whose derivative, P(R > T), is
 * bounded by 1. */
double ms_hold_time(const ms_failure_model *m, double x) {
  double w = (m->timeout + m->timeout_spread) - m->timeout;
  if (!(w > 0.0))
    return hold_time_fixed(m, x, m->timeout);
  double mid = m->timeout + 0.5 * w, half = 0.5 * w, h = 0.0;
  for (int i = 0; i < 8; i++) {
    h += ms_qk15_wk[i] * hold_time_fixed(m, x, mid + half * ms_qk15_x[i]);
    if (i < 7)
      h += ms_qk15_wk[i] * hold_time_fixed(m, x, mid - half * ms_qk15_x[i]);
  }
  return 0.5 * h;
}

/* The failure split at x: p, x dp/dx, and the share of failures that are
 * timeouts (the AWS quota's timeout_cost).  The erlang model's overload is
 * its wait tail q, 1 - p = (1 - base)(1 - q); the capacity model's overload
 * is a rejection. */
static double timeout_share(const ms_failure_model *m, double p) {
  if (m->kind != MS_MODEL_ERLANG || m->has_queue_limit || !(p > 0.0))
    return 0.0; /* with a queue limit: every retry at retry_cost */
  double q = (p - m->base_failure) / (1.0 - m->base_failure);
  return q > 0.0 ? fmin(1.0, q / p) : 0.0;
}

/*
 * The tiers of a policy that depends on p alone, from the dependency up
 * (doc/design.md §1.2): tier i sees failure probability p_i, x dp_i/dx =
 * xd_i.  Tier 0 retries pr (the failures it retries, x dpr/dx = xdpr) of
 * the failures p (xdp); a chain fails unless one of its attempts succeeds,
 * each with 1 - p, so the tier above a nested boundary sees
 * p_(i+1) = 1 - (1 - p_i) A_i and retries every failure of it; above an
 * independent boundary a tier sees the dependency's again.  w: the share of
 * failures that are timeouts (the AWS quota's cost).  Out: prod A_i, its
 * log summed tier by tier, and the elasticity sum_i xd_i A_i' / A_i.
 */
static void tier_chain(const ms_retry_policy *pol, const ms_failure_eval *f,
                       double w, double *amp, double *ln_amp, double *elast) {
  double pi = f->p_retry, qi = f->q_retry, xdi = f->xdp_retry;
  double pall = f->p, qall = f->q, xdall = f->xdp;
  double prod = 1.0, ln = 0.0, e = 0.0;
  for (int i = 0; i < pol->tiers; i++) {
    if (i > 0 && !(pol->nested & (1u << i))) {
      pi = f->p_retry, qi = f->q_retry, xdi = f->xdp_retry;
      pall = f->p, qall = f->q, xdall = f->xdp;
    }
    double A, dA;
    ms_tier_amplification(pol, ms_policy_tier_retries(pol, i), pi, qi, w, &A,
                          &dA);
    prod *= A;
    ln += log(A);
    e += xdi * dA / A;
    if (i + 1 < pol->tiers && (pol->nested & (1u << (i + 1)))) {
      /* the chain succeeds when one of its attempts does: 1 - p_next =
       * (1 - p) A */
      double q_next = fmin(1.0, fmax(0.0, qall * A));
      double xdnext = xdall * A - qall * dA * xdi;
      pi = pall = 1.0 - q_next;
      qi = qall = q_next;
      xdi = xdall = xdnext;
    }
  }
  *amp = prod;
  *ln_amp = ln;
  *elast = e;
}

/* A_total(p) of a valid policy that depends on p alone, over a model whose
 * p(x) is p everywhere (every failure retried). */
static double tiers_amplification(const ms_retry_policy *pol, double p,
                                  double w) {
  double a, da;
  if (pol->kind == MS_POLICY_COUNT && pol->nested == 0 &&
      !pol->has_tier_retries) {
    ms_tier_amplification(pol, pol->retries, p, 1.0 - p, w, &a, &da);
    return pow(a, (double)pol->tiers);
  }
  double ln, e;
  ms_failure_eval f = {p, 0.0, p, 0.0, 1.0 - p, 1.0 - p};
  tier_chain(pol, &f, w, &a, &ln, &e);
  return a;
}

/* The load-dependent policies of one tier: lambda(x) = x - R(x), R the
 * retries/s the policy lets through at x attempts/s failing with p
 * (doc/design.md §1.2).  xdp: x dp/dx along p(x), for the elasticity
 * (0 when p is held fixed). */
static void load_dependent_eval(const ms_service_params *s, double x, double p,
                                double xdp, ms_point *pt) {
  const ms_retry_policy *pol = &s->policy;
  double A, dA;
  fixed_amplification(pol->retries, p, &A, &dA);
  double lam_f = x / A, e_f = xdp * dA / A;
  double lam = lam_f, e = e_f;
  if (pol->kind == MS_POLICY_FINAGLE) {
    /* retries/s <= percent lambda + min: x <= lambda (1 + percent) + min */
    double lam_b =
        (x - pol->finagle_min_per_second) / (1.0 + pol->finagle_percent);
    if (lam_b > lam_f) {
      lam = lam_b;
      e = -pol->finagle_min_per_second / (x - pol->finagle_min_per_second);
    }
  } else {
    /* concurrent retries R h <= max(m, budget x h): R <= max(m/h, budget x) */
    double h = ms_hold_time(&s->model, x);
    double m = pol->envoy_min_concurrency;
    double cap_m = h > 0.0 ? m / h : (m > 0.0 ? INFINITY : 0.0);
    double cap_b = pol->envoy_budget * x;
    double cap = fmax(cap_m, cap_b);
    if (x - lam_f > cap) {
      lam = x - cap;
      double dlam; /* d lambda / dx */
      if (cap_b >= cap_m) {
        dlam = 1.0 - pol->envoy_budget;
      } else {
        /* d(m/h)/dx = -m h'/h^2, h' by central differences (h is smooth
         * below c mu and constant above) */
        double dx = 1e-6 * x;
        double h1 = ms_hold_time(&s->model, x + dx);
        double h0 = ms_hold_time(&s->model, x - dx);
        dlam = 1.0 + m * ((h1 - h0) / (2.0 * dx)) / (h * h);
      }
      e = lam > 0.0 ? 1.0 - dlam * x / lam : 0.0;
    }
  }
  pt->p = p;
  pt->lambda = lam;
  pt->ln_amp = lam > 0.0 ? log(x / lam) : 0.0;
  pt->elast = e;
}

/* lambda for x attempts/s failing with probability p (held fixed), for a
 * valid service: the tiers of ms_point_eval, or the load-dependent cap. */
static double lambda_given(const ms_service_params *s, double x, double p) {
  if (x <= 0.0)
    return 0.0;
  ms_point pt;
  if (ms_policy_load_dependent(&s->policy)) {
    load_dependent_eval(s, x, p, 0.0, &pt);
    return pt.lambda;
  }
  return x / tiers_amplification(&s->policy, p, timeout_share(&s->model, p));
}

int ms_offered_load_given(const ms_service_params *s, double x, double p,
                          double *lambda, ms_error *err) {
  int st = ms_service_params_check(s, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(x) || x < 0.0 || x > MS_MAX_RATE)
    return ms_fail(err, MS_EINVAL,
                   "effective load x = %g/s must be finite and >= 0", x);
  if (!(p >= 0.0 && p <= 1.0))
    return fail_p_outside(err, p);
  *lambda = lambda_given(s, x, p);
  return MS_OK;
}

int ms_amplification_at(const ms_service_params *s, double p, double lambda,
                        double *A, ms_error *err) {
  int st = ms_service_params_check(s, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(lambda) || lambda < 0.0 || lambda > MS_MAX_RATE)
    return ms_fail(err, MS_EINVAL, "offered load %g/s must be finite and >= 0",
                   lambda);
  if (!(p >= 0.0 && p <= 1.0))
    return fail_p_outside(err, p);
  if (!ms_policy_load_dependent(&s->policy)) {
    *A = tiers_amplification(&s->policy, p, timeout_share(&s->model, p));
    return MS_OK;
  }
  /* x in [lambda, lambda A_fixed(p)] with lambda_given(x) = lambda, which
   * rises with x: bisection to a relative 1e-15 (at most 64 halvings); at
   * no load the policy lets every retry through */
  double a, da;
  fixed_amplification(s->policy.retries, p, &a, &da);
  double lo = lambda, hi = lambda * a;
  if (lambda == 0.0 || lambda_given(s, hi, p) <= lambda) {
    *A = a;
    return MS_OK;
  }
  for (int i = 0; i < 64 && hi - lo > 1e-15 * hi; i++) {
    double mid = 0.5 * (lo + hi);
    if (lambda_given(s, mid, p) < lambda)
      lo = mid;
    else
      hi = mid;
  }
  *A = 0.5 * (lo + hi) / lambda;
  return MS_OK;
}

void ms_point_eval(const ms_service_params *s, double x, ms_point *pt) {
  /* p: any failure; pr: a failure the client retries (a rejection that ends
   * its request is a failure it does not retry: doc/design.md §1.9) */
  ms_failure_eval f;
  ms_failure_eval_at(&s->model, x, &f);
  double p = f.p, pr = f.p_retry, xdpr = f.xdp_retry;
  const ms_retry_policy *pol = &s->policy;
  if (pol->kind == MS_POLICY_COUNT && pol->nested == 0 &&
      !pol->has_tier_retries) {
    /* the same policy at each of k independent tiers: A_total = A^k */
    double A, dA;
    ms_tier_amplification(pol, pol->retries, pr, f.q_retry, 0.0, &A, &dA);
    double k = (double)pol->tiers;
    pt->p = p;
    pt->ln_amp = k * log(A);
    pt->lambda = x / exp(pt->ln_amp);
    pt->elast = xdpr * k * dA / A;
    return;
  }
  if (ms_policy_load_dependent(pol)) {
    load_dependent_eval(s, x, pr, xdpr, pt);
    pt->p = p;
    return;
  }
  double amp;
  tier_chain(pol, &f, timeout_share(&s->model, p), &amp, &pt->ln_amp,
             &pt->elast);
  pt->p = p;
  pt->lambda = x / exp(pt->ln_amp);
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
    return fail_p_outside(err, p);
  if (ms_policy_load_dependent(pol))
    return ms_fail(err, MS_EINVAL,
                   "%s depends on the load, not only on p: use "
                   "ms_offered_load_at",
                   ms_policy_name(pol->kind));
  *A = tiers_amplification(pol, p, 0.0);
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
