/* SPDX-License-Identifier: MIT */
/*
 * The retry feedback loop: the failure model p(x), the retry policies
 * A(p), the offered load lambda(x) = x / A(p(x)) whose equilibrium is x,
 * and MS_PARAMS, the one table of every parameter's unit and range
 * (doc/design.md §1.1-§1.3, §1.9).  Conventions: base.h.
 */
#ifndef METASTABLE_LOOP_H
#define METASTABLE_LOOP_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the erlang model's client timeout T times (doc/design.md §1.1).
 * The zero value is WAIT, so that a model built field by field keeps the
 * meaning it had before the field existed; the user-facing default, the
 * one service files and the command line apply when the key is absent, is
 * MS_TIMEOUT_COVERS_DEFAULT. */
typedef enum {
  MS_TIMEOUT_COVERS_WAIT = 0,     /* the wait for a server only: an
                                     attempt fails when W > T */
  MS_TIMEOUT_COVERS_RESPONSE = 1, /* wait plus service, as HAProxy's
                                     `timeout server`, nginx's
                                     proxy_read_timeout, gRPC deadlines
                                     and most HTTP clients: W + S > T */
} ms_timeout_covers;

/* The default of the key timeout_covers and of --timeout-covers. */
#define MS_TIMEOUT_COVERS_DEFAULT MS_TIMEOUT_COVERS_RESPONSE

/* "wait", "response": the value's name in service files and options;
 * NULL for a value that is not one. */
const char *ms_timeout_covers_name(ms_timeout_covers v);

/* The value named name ("wait", "response"); MS_OK, or MS_EINVAL. */
int ms_timeout_covers_from_name(const char *name, ms_timeout_covers *v);

typedef enum {
  MS_MODEL_CAPACITY = 0, /* hard capacity C (doc/design.md §1.1) */
  MS_MODEL_ERLANG = 1,   /* M/M/c with client timeout (doc/design.md §1.1) */
} ms_model_kind;

/*
 * The failure probability of one attempt as a function of the effective
 * load x (doc/design.md §1.1):
 *   capacity: p(x) = base + (1 - base) max(0, (x - C) / x)
 *   erlang:   p(x) = 1 - (1 - base)(1 - q(x)), x an M/M/c arrival rate,
 *             q = P(W > T) when the timeout covers the wait, P(W + S > T)
 *             when it covers the response (timeout_covers);
 *             with a queue limit K (M/M/c/K, doc/design.md §1.9)
 *             p(x) = 1 - (1 - P_block)(1 - base)(1 - P(W > T | admitted)),
 *             and the retried part p - P_block when rejections are final.
 */
typedef struct {
  ms_model_kind kind;
  double capacity;     /* capacity: C, requests/s, finite, > 0 */
  long servers;        /* erlang: c, 1 <= c <= MS_MAX_SERVERS */
  double service_rate; /* erlang: mu per server, 1/s, finite, > 0 */
  double timeout;      /* erlang: client timeout T, s, finite, >= 0, and
                          c mu T <= MS_MAX_TIMEOUT_COMPLETIONS */
  double base_failure; /* failure probability when not overloaded, [0, 1) */
  /* erlang: coefficient of variation of the service time (standard
   * deviation / mean), [0, MS_MAX_SERVICE_TIME_CV]; absent: 1, exponential
   * service (M/M/c).  Given, the wait tail is the M/G/c approximation of
   * ms_effective_timeout (doc/design.md §1.1); the capacity model refuses
   * it. */
  bool has_service_time_cv;
  double service_time_cv;
  /* erlang: the width w of a uniform spread of the timeout, s, finite,
   * >= 0: each attempt's timeout is uniform on [timeout, timeout + w]
   * (a client timer that fires late: `timeout: {min, max}` or
   * timeout_granularity in service files; doc/design.md §1.1).  0: every
   * attempt times out at `timeout`, the model without it bit for bit. */
  double timeout_spread;
  bool has_queue_limit;  /* erlang: the queue holds at most queue_limit
                            waiting attempts and rejects the rest (M/M/c/K,
                            doc/design.md §1.9) */
  long queue_limit;      /* K, waiting places, 0..MS_MAX_QUEUE_LIMIT */
  bool rejections_final; /* with a queue limit: a rejected attempt ends its
                            request instead of being retried (false, the
                            default: retried as any failure) */
  /* erlang: what T times, the wait (0) or the whole response; the
   * capacity model ignores it */
  ms_timeout_covers timeout_covers;
} ms_failure_model;

/* The named retry policies of real stacks (doc/design.md §1.2). */
typedef enum {
  MS_POLICY_COUNT = 0,   /* a fixed retry count, with the optional share
                            budget and token bucket below */
  MS_POLICY_GRPC = 1,    /* gRPC retry throttling (gRFC A6) */
  MS_POLICY_ENVOY = 2,   /* Envoy's retry_budget (concurrent retries) */
  MS_POLICY_FINAGLE = 3, /* Finagle's / Linkerd's RetryBudget */
  MS_POLICY_AWS = 4,     /* the AWS SDKs' standard-mode retry quota */
} ms_policy_kind;

/* How a tier's retries compose with the tier below it (doc/design.md §1.2):
 * independent when the upper tier gives up on an attempt before the chain
 * below has finished (each tier's attempt then fails with the dependency's
 * p: A^k), nested when the upper tier's timeout covers the whole chain below
 * (an upper attempt fails only when that chain failed). */
typedef enum {
  MS_LAYERING_INDEPENDENT = 0,
  MS_LAYERING_NESTED = 1,
} ms_layering;

/*
 * The retry policy (doc/design.md §1.2).  Per tier, with p the probability
 * that one attempt fails in a way the tier retries:
 *   A(p)  = 1 + p + ... + p^r                       fixed retry count r
 *   A_b   = min(A, 1/(1 - b))                       retry budget b
 *           (Beyer et al., Site Reliability Engineering, O'Reilly 2016,
 *            ch. 21 "Handling Overload", the per-client retry budget)
 *   A_t   = min(A, 1/(1 - t (1 - p)))               token bucket, ratio t
 *           (a quota refilled by successes; doc/design.md §1.2)
 *   gRPC  A = sum_{i<=r} (p f)^i, f the share of retry decisions that find
 *         more than max_tokens/2 tokens (gRFC A6, "Retry Throttling")
 *   AWS   A = 1 + sum_{k<=r} (p a)^k, a the share of retry decisions
 *         the quota admits (the SDKs' standard retry quota): a = 1 while
 *         first successes refund what the failed retries cost; above, the
 *         bucket sits near empty and a = the balance of its levels (one
 *         cost: A = 1 + refund (1 - p) / (cost p))
 *   Finagle  retries/s <= percent x requests/s + min_per_second
 *   Envoy    concurrent retries <= max(min_retry_concurrency,
 *            budget_percent x active attempts), active = rate x hold time
 *            (Little's law)
 * and the tiers compose independently (A_total = prod A_i(p)) or nested
 * (A_total = prod A_i(p_i), p_(i+1) = 1 - (1 - p_i) A_i(p_i): a chain
 * fails unless one of its attempts succeeds).
 */
typedef struct {
  int retries;         /* r, retries per request of the tier next to the
                          dependency (tier 0), 0..MS_MAX_RETRIES */
  int tiers;           /* k, layers that each retry, 1..MS_MAX_TIERS */
  bool has_budget;     /* whether retry_budget applies (MS_POLICY_COUNT) */
  double retry_budget; /* b, retries at most this share of requests, [0, 1) */
  bool has_token;      /* whether token_ratio applies (MS_POLICY_COUNT) */
  double token_ratio;  /* t, tokens per success, (0, 1] */
  /* tiers above tier 0: their own retry counts when has_tier_retries, else
   * `retries` each; tier_retries[0] is ignored (it is `retries`) */
  bool has_tier_retries;
  int tier_retries[MS_MAX_TIERS];
  /* bit i (1 <= i < tiers): tier i's timeout covers the chain of tier i-1
   * (nested); clear: independent.  0 is today's A^k. */
  unsigned nested;
  ms_policy_kind kind; /* the named policy of every tier (COUNT: none) */
  /* MS_POLICY_GRPC: gRFC A6's retryThrottling */
  double grpc_max_tokens;  /* max_tokens, whole, [1, 1000] */
  double grpc_token_ratio; /* token_ratio, (0, 1] */
  /* MS_POLICY_ENVOY: the cluster's retry_budget */
  double envoy_budget;          /* budget_percent as a share, [0, 1] */
  double envoy_min_concurrency; /* min_retry_concurrency, whole, >= 0 */
  /* MS_POLICY_FINAGLE: RetryBudget(ttl, minRetriesPerSec, percentCanRetry) */
  double finagle_percent;        /* percentCanRetry as a share, [0, 10] */
  double finagle_min_per_second; /* minRetriesPerSec, retries/s, >= 0 */
  double finagle_ttl;            /* ttl, s, [1, 60] (transients only) */
  /* MS_POLICY_AWS: the standard retry quota */
  double aws_capacity;        /* tokens, > 0 (transients only) */
  double aws_retry_cost;      /* tokens a retry after a transient error
                                 (5xx, a dropped connection) takes, > 0 */
  double aws_timeout_cost;    /* ... a retry after a timeout, > 0 */
  double aws_refund;          /* tokens a first-attempt success returns, >= 0 */
  double aws_throttling_cost; /* ... a retry after a throttling error, > 0 */
  double aws_throttling_share; /* the share of the failures other than
                                  timeouts that are throttling errors,
                                  [0, 1] */
} ms_retry_policy;

/* The defaults of the named policies, as their stacks ship them: gRFC A6
 * has none (the service config must give both); Envoy's retry_budget
 * 20 % and 3; Finagle's RetryBudget() 20 %, 10/s, 10 s; the AWS SDK's
 * standard mode 500 tokens, a retry 14 after a transient error or a
 * timeout and 5 after a throttling error, a first success 1 (the AWS SDK
 * for JavaScript v3: @smithy/core 3.41.1,
 * dist-es/submodules/retry/util-retry/constants.js INITIAL_RETRY_TOKENS
 * and NO_RETRY_INCREMENT, retries-2026-config.js Retry.cost() and
 * Retry.throttlingCost(), the default since @smithy/core 3.40.0). */
#define MS_ENVOY_BUDGET_DEFAULT 0.2
#define MS_ENVOY_MIN_CONCURRENCY_DEFAULT 3.0
#define MS_FINAGLE_PERCENT_DEFAULT 0.2
#define MS_FINAGLE_MIN_PER_SECOND_DEFAULT 10.0
#define MS_FINAGLE_TTL_DEFAULT 10.0
#define MS_AWS_CAPACITY_DEFAULT 500.0
#define MS_AWS_RETRY_COST_DEFAULT 14.0
#define MS_AWS_TIMEOUT_COST_DEFAULT 14.0
#define MS_AWS_REFUND_DEFAULT 1.0
#define MS_AWS_THROTTLING_COST_DEFAULT 5.0
#define MS_AWS_THROTTLING_SHARE_DEFAULT 0.0
/* The older costs (`costs: legacy`): 5 a retry, 10 after a timeout, 5
 * after a throttling error (@smithy/core 3.41.1, util-retry/constants.js
 * RETRY_COST and TIMEOUT_RETRY_COST, kept by the deprecated
 * middleware-retry/retry-pre-sra-deprecated/defaultRetryQuota.js; the
 * SDKs and Tools Reference Guide's standard mode). */
#define MS_AWS_LEGACY_RETRY_COST 5.0
#define MS_AWS_LEGACY_TIMEOUT_COST 10.0
#define MS_AWS_LEGACY_THROTTLING_COST 5.0

/* The AWS quota's sets of costs: the SDK's current ones and the older
 * ones.  Their names, "current" and "legacy", are the values of
 * `aws_retry_quota: {costs: ...}` and the first field of
 * --aws-retry-quota. */
typedef enum {
  MS_AWS_COSTS_CURRENT = 0,
  MS_AWS_COSTS_LEGACY = 1,
} ms_aws_costs;

/* "current" or "legacy"; NULL for another value. */
const char *ms_aws_costs_name(int costs);

/* The set named `name`, or -1. */
int ms_aws_costs_find(const char *name);

/* Set the three costs of *p to the set's (the capacity, the refund and
 * the throttling share are the same in both). */
void ms_aws_costs_defaults(ms_retry_policy *p, ms_aws_costs costs);

/* Whether two failure models are the same model (every field that applies
 * to them equal). */
bool ms_failure_model_same(const ms_failure_model *a,
                           const ms_failure_model *b);

/* Whether two policies are the same policy (every field that applies to
 * their kind and tiers equal). */
bool ms_retry_policy_same(const ms_retry_policy *a, const ms_retry_policy *b);

/* The retries of tier i (0 = next to the dependency), for a valid policy. */
int ms_policy_tier_retries(const ms_retry_policy *p, int i);

/* Whether the policy's amplification depends on the load and not only on
 * p (Envoy; Finagle with min_per_second > 0): such a policy applies to a
 * single tier. */
bool ms_policy_load_dependent(const ms_retry_policy *p);

/* "count", "grpc_throttling", "envoy_retry_budget", "retry_budget",
 * "aws_retry_quota": the policy's key in service files. */
const char *ms_policy_name(ms_policy_kind kind);

/* Set *p to kind's defaults (above) on top of its retry count and tiers;
 * gRPC's fields are left for the caller (they have no default). */
void ms_policy_defaults(ms_retry_policy *p, ms_policy_kind kind);

/* A service: its failure model and its retry policy. */
typedef struct {
  ms_failure_model model;
  ms_retry_policy policy;
} ms_service_params;

/* What a row of MS_PARAMS is a parameter of. */
typedef enum {
  MS_SCOPE_SERVICE,  /* the service: ms_service_params */
  MS_SCOPE_INTERVAL, /* one interval: ms_observation */
  MS_SCOPE_POLICY,   /* a field of a named retry policy: a key of its map
                        in service files ("grpc_throttling.max_tokens"),
                        a field of its command-line option */
} ms_param_scope;

/* Bounds of a range: closed unless a flag opens an end. */
enum {
  MS_BOUND_CLOSED = 0,
  MS_BOUND_LO_OPEN = 1, /* the value must be > lo, not >= lo */
  MS_BOUND_HI_OPEN = 2, /* the value must be < hi, not <= hi */
  MS_BOUND_LIMIT = 4,   /* lo or hi (the one that is not 0) is a limit of
                           the arithmetic rather than of the quantity:
                           messages say "> 0 and at most 1e+300" */
  MS_BOUND_SHARE = 8,   /* a share whose range passes 1 (Finagle's percent
                           of up to 1000 %): written as a percentage too */
};

/*
 * MS_PARAMS: every parameter of a service, and every value ms_analyze is
 * given each interval, with its unit and range.
 *   X(ID, key, unit, lo, hi, bounds, whole, scope)
 *     ID      the constant MS_PARAM_<ID>
 *     key     its name in service files and messages (the command-line
 *             option is the key with '-' for '_')
 *     unit    "req/s", "1/s", "s" or "" (a probability, share or count)
 *     lo, hi  the range; bounds: MS_BOUND_* flags
 *     whole   1 for whole numbers (servers, retries, tiers)
 *     scope   MS_SCOPE_SERVICE: a key of the service file and a model option
 *             of the command line (tests/cli/test_usage.py holds both, and
 *             the documents, to the table); MS_SCOPE_INTERVAL: a value of
 *             ms_observation (the command takes it as solve --load,
 *             --observed-load, --observed-failure, --interval,
 *             --queue-length)
 * service_time is 1 / service_rate, so its range is the reciprocal one.
 * Every check of these parameters, in the model, the service file loader
 * and the command line, is ms_param_check over this table.
 */
/* clang-format off */
#define MS_PARAMS(X)                                                          \
  X(CAPACITY, "capacity", "req/s", 0.0, MS_MAX_RATE,                          \
    MS_BOUND_LO_OPEN | MS_BOUND_LIMIT, 0, MS_SCOPE_SERVICE)                   \
  X(SERVERS, "servers", "", 1.0, (double)MS_MAX_SERVERS,                      \
    MS_BOUND_CLOSED, 1, MS_SCOPE_SERVICE)                                     \
  X(SERVICE_RATE, "service_rate", "1/s", 1.0 / MS_MAX_DURATION,              \
    MS_MAX_SERVICE_RATE, MS_BOUND_LIMIT, 0, MS_SCOPE_SERVICE)                 \
  X(SERVICE_TIME, "service_time", "s", 1.0 / MS_MAX_SERVICE_RATE,           \
    MS_MAX_DURATION, MS_BOUND_LIMIT, 0, MS_SCOPE_SERVICE)                     \
  X(TIMEOUT, "timeout", "s", 0.0, MS_MAX_DURATION,                            \
    MS_BOUND_CLOSED | MS_BOUND_LIMIT, 0, MS_SCOPE_SERVICE)                    \
  X(BASE_FAILURE, "base_failure", "", 0.0, 1.0,                               \
    MS_BOUND_HI_OPEN, 0, MS_SCOPE_SERVICE)                                    \
  X(SERVICE_TIME_CV, "service_time_cv", "", 0.0, MS_MAX_SERVICE_TIME_CV,      \
    MS_BOUND_CLOSED, 0, MS_SCOPE_SERVICE)                                     \
  X(TIMEOUT_GRANULARITY, "timeout_granularity", "s", 0.0, MS_MAX_DURATION,    \
    MS_BOUND_CLOSED | MS_BOUND_LIMIT, 0, MS_SCOPE_SERVICE)                    \
  X(RETRIES, "retries", "", 0.0, (double)MS_MAX_RETRIES,                      \
    MS_BOUND_CLOSED, 1, MS_SCOPE_SERVICE)                                     \
  X(TIERS, "tiers", "", 1.0, (double)MS_MAX_TIERS,                            \
    MS_BOUND_CLOSED, 1, MS_SCOPE_SERVICE)                                     \
  X(RETRY_BUDGET, "retry_budget", "", 0.0, 1.0,                               \
    MS_BOUND_HI_OPEN, 0, MS_SCOPE_SERVICE)                                    \
  X(TOKEN_RATIO, "token_ratio", "", 0.0, 1.0,                                 \
    MS_BOUND_LO_OPEN, 0, MS_SCOPE_SERVICE)                                    \
  X(GRPC_MAX_TOKENS, "grpc_throttling.max_tokens", "", 1.0, 1000.0,          \
    MS_BOUND_CLOSED, 1, MS_SCOPE_POLICY)                                      \
  X(GRPC_TOKEN_RATIO, "grpc_throttling.token_ratio", "", 0.0, 1.0,            \
    MS_BOUND_LO_OPEN, 0, MS_SCOPE_POLICY)                                     \
  X(ENVOY_BUDGET, "envoy_retry_budget.budget_percent", "", 0.0, 1.0,          \
    MS_BOUND_CLOSED, 0, MS_SCOPE_POLICY)                                      \
  X(ENVOY_MIN_CONCURRENCY, "envoy_retry_budget.min_retry_concurrency", "",    \
    0.0, 1e9, MS_BOUND_CLOSED, 1, MS_SCOPE_POLICY)                            \
  X(FINAGLE_PERCENT, "retry_budget.percent", "", 0.0, 10.0,                   \
    MS_BOUND_CLOSED | MS_BOUND_SHARE, 0, MS_SCOPE_POLICY)                     \
  X(FINAGLE_MIN_PER_SECOND, "retry_budget.min_per_second", "1/s", 0.0,        \
    MS_MAX_RATE, MS_BOUND_CLOSED | MS_BOUND_LIMIT, 0, MS_SCOPE_POLICY)        \
  X(FINAGLE_TTL, "retry_budget.ttl", "s", 1.0, 60.0,                          \
    MS_BOUND_CLOSED, 0, MS_SCOPE_POLICY)                                      \
  X(AWS_CAPACITY, "aws_retry_quota.capacity", "", 0.0, 1e12,                  \
    MS_BOUND_LO_OPEN, 0, MS_SCOPE_POLICY)                                     \
  X(AWS_RETRY_COST, "aws_retry_quota.retry_cost", "", 0.0, 1e12,              \
    MS_BOUND_LO_OPEN, 0, MS_SCOPE_POLICY)                                     \
  X(AWS_TIMEOUT_COST, "aws_retry_quota.timeout_cost", "", 0.0, 1e12,          \
    MS_BOUND_LO_OPEN, 0, MS_SCOPE_POLICY)                                     \
  X(AWS_REFUND, "aws_retry_quota.refund", "", 0.0, 1e12,                      \
    MS_BOUND_CLOSED, 0, MS_SCOPE_POLICY)                                      \
  X(AWS_THROTTLING_COST, "aws_retry_quota.throttling_cost", "", 0.0, 1e12,    \
    MS_BOUND_LO_OPEN, 0, MS_SCOPE_POLICY)                                     \
  X(AWS_THROTTLING_SHARE, "aws_retry_quota.throttling_share", "", 0.0, 1.0,   \
    MS_BOUND_CLOSED, 0, MS_SCOPE_POLICY)                                      \
  X(QUEUE_LIMIT, "queue_limit", "", 0.0, (double)MS_MAX_QUEUE_LIMIT,         \
    MS_BOUND_CLOSED, 1, MS_SCOPE_SERVICE)                                     \
  X(OFFERED_LOAD, "offered_load", "req/s", 0.0, MS_MAX_RATE,                  \
    MS_BOUND_CLOSED | MS_BOUND_LIMIT, 0, MS_SCOPE_INTERVAL)                   \
  X(OBSERVED_ATTEMPTS, "observed_attempts", "attempts/s", 0.0, MS_MAX_RATE,   \
    MS_BOUND_CLOSED | MS_BOUND_LIMIT, 0, MS_SCOPE_INTERVAL)                   \
  X(OBSERVED_FAILURE, "observed_failure", "", 0.0, 1.0,                       \
    MS_BOUND_CLOSED, 0, MS_SCOPE_INTERVAL)                                    \
  X(INTERVAL, "interval", "s", 0.0, MS_MAX_DURATION,                          \
    MS_BOUND_CLOSED | MS_BOUND_LIMIT, 0, MS_SCOPE_INTERVAL)                   \
  X(QUEUE_LENGTH, "queue_length", "", 0.0, MS_MAX_RATE,                       \
    MS_BOUND_CLOSED | MS_BOUND_LIMIT, 0, MS_SCOPE_INTERVAL)
/* clang-format on */

typedef enum {
#define MS_PARAM_ENUM(ID, key, unit, lo, hi, bounds, whole, scope)             \
  MS_PARAM_##ID,
  MS_PARAMS(MS_PARAM_ENUM)
#undef MS_PARAM_ENUM
      MS_PARAM_COUNT
} ms_param;

/* One row of MS_PARAMS. */
typedef struct {
  const char *key, *unit;
  double lo, hi;
  int bounds; /* MS_BOUND_* */
  bool whole;
  ms_param_scope scope;
} ms_param_info;

/* The row of a parameter; NULL when id is not one. */
const ms_param_info *ms_param_get(ms_param id);

/* The parameter whose key is `key` ("service_rate"), or -1. */
int ms_param_find(const char *key);

/*
 * ms_param_range: the accepted range in words, for messages: "in [1, 10]",
 * "in [0, 1)", "> 0 and at most 1e+300", "> 0, at least 1e-290 and at
 * most 1e+300".
 * Written into buf (64 bytes are enough), which is returned; "" when id is
 * not a parameter.
 */
const char *ms_param_range(ms_param id, char *buf, size_t len);

/*
 * ms_param_check: whether v is an accepted value of parameter id.
 *   v  in the parameter's unit; whole parameters must be whole numbers
 * Returns MS_OK, or MS_EINVAL with a message naming the key, the value and
 * the range: "servers = 0 is outside [1, 10000000]", "capacity = 0 req/s
 * must be > 0 and at most 1e+300".  The service file loader adds the
 * position and the command line the option's name.
 */
int ms_param_check(ms_param id, double v, ms_error *err);

/* The parameters of named policy kind (MS_SCOPE_POLICY rows of MS_PARAMS,
 * in the order of its service-file map and command-line option): *n of
 * them, none for MS_POLICY_COUNT. */
const ms_param *ms_policy_params(ms_policy_kind kind, int *n);

/* The field of *p that the policy parameter id sets; NULL when id is not
 * an MS_SCOPE_POLICY parameter. */
double *ms_policy_field(ms_retry_policy *p, ms_param id);

/* Set *m to a valid capacity model with capacity C, base 0. */
void ms_failure_model_capacity(ms_failure_model *m, double capacity);
/* Set *m to a valid erlang model (c, mu, T), base 0, its timeout on the
 * wait (timeout_covers 0: set the field for the response). */
void ms_failure_model_erlang(ms_failure_model *m, long servers,
                             double service_rate, double timeout);
/* Set *p to r retries, one tier, no budget, no token bucket. */
void ms_retry_policy_fixed(ms_retry_policy *p, int retries);

/*
 * Validate a failure model, a retry policy, or both.  Returns MS_OK or
 * MS_EINVAL with a message naming the field and its accepted range (and
 * for timeout_covers response with a queue_limit, which the M/M/c/K
 * model does not time yet).
 */
int ms_failure_model_check(const ms_failure_model *m, ms_error *err);
int ms_retry_policy_check(const ms_retry_policy *p, ms_error *err);
int ms_service_params_check(const ms_service_params *s, ms_error *err);

/*
 * ms_effective_timeout: the timeout T' for which the M/M/c wait tail
 * C(c, a) e^(-(c mu - x) T') stands for the model's queue: T itself for
 * exponential service (no service_time_cv, or cv = 1, bit for bit), and
 * T' = 2 T / (1 + cv^2) for a service time of coefficient of variation cv
 * (M/G/c; its error against simulation: doc/design.md §1.1).
 *   m  a valid erlang model (the capacity model has no timeout: 0)
 * Returns seconds, finite, >= 0, at most 2 T.
 * Source: the Allen-Cunneen approximation (A. O. Allen, Probability,
 * Statistics and Queueing Theory, 2nd ed., 1990, sec. 6.4).
 */
double ms_effective_timeout(const ms_failure_model *m);

/*
 * ms_timeout_longest: the longest timeout an attempt can draw, T + w with
 * w = timeout_spread (doc/design.md §1.1): T itself without a spread.
 *   m  a valid erlang model (the capacity model has no timeout: 0)
 * Returns seconds, finite, >= 0.
 */
double ms_timeout_longest(const ms_failure_model *m);

/* ms_saturation_load: x_cap, the attempts/s the dependency can serve: C
 * for the capacity model, c mu for the erlang model (doc/design.md §1.1).
 * m: a valid model; the result is finite and > 0. */
double ms_saturation_load(const ms_failure_model *m);

/*
 * ms_failure_tail: ln q(x) and x d ln q / dx, the overload part of the
 * erlang model's failure without its base failure: ln P(W > T) when the
 * timeout covers the wait, ln P(W + S > T) when it covers the response
 * (doc/design.md §1.1), each with service_time_cv's M/G/c approximation.
 *   m        a valid erlang model without a queue limit
 *   x        attempts/s, finite, >= 0
 *   ln_q     out: in [-DBL_MAX, 0]; 0 at and above c mu
 *   xdlnq    out: >= 0, finite
 * Errors: MS_EINVAL for another model, a queue limit, a timeout spread
 * (the tail is that of one T: ms_failure_probability averages it), or a
 * bad x.
 */
int ms_failure_tail(const ms_failure_model *m, double x, double *ln_q,
                    double *xdlnq, ms_error *err);

/*
 * ms_failure_probability: p(x), the probability that one attempt fails when
 * the dependency receives x attempts/s (doc/design.md §1.1).
 *   m  a valid model (ms_failure_model_check)
 *   x  effective load, attempts/s, finite, >= 0
 *   p  out: in [base, 1]
 * Errors: MS_EINVAL for an invalid model or x.
 */
int ms_failure_probability(const ms_failure_model *m, double x, double *p,
                           ms_error *err);

/*
 * ms_amplification: A_total(p), expected attempts per request when each
 * attempt fails with probability p, under policy pol (doc/design.md §1.2),
 * its tiers composed independently or nested.
 *   p  in [0, 1];  A  out: >= 1, <= prod (r_i + 1), and <= 1/(1-b)^k with
 *   a budget.  Errors: MS_EINVAL for an invalid policy or p, and for a
 *   policy that depends on the load (Envoy's budget, Finagle's
 *   min_per_second: ms_amplification_at).
 */
int ms_amplification(const ms_retry_policy *pol, double p, double *A,
                     ms_error *err);

/*
 * ms_amplification_at: attempts per request at failure probability p and
 * offered load lambda, for every policy: ms_amplification's A_total(p)
 * when the policy depends on p alone; for Envoy's budget and Finagle's
 * min_per_second, the x / lambda that their caps give at that load
 * (doc/design.md §1.2; solved by bisection, to 1e-15).
 *   p in [0, 1]; lambda req/s, finite, >= 0 (at 0: the uncapped count)
 *   A  out: >= 1, at most ms_amplification's fixed-count bound
 * Errors: MS_EINVAL for an invalid service, p or lambda.
 */
int ms_amplification_at(const ms_service_params *s, double p, double lambda,
                        double *A, ms_error *err);

/*
 * ms_offered_load_given: the offered load lambda, req/s, whose requests
 * send x attempts/s when each attempt fails with probability p (held
 * fixed, not p(x)): x / A_total(p), or the load-dependent cap's
 * lambda = x - R(x) (doc/design.md §1.2).  Inverts ms_amplification_at.
 *   x attempts/s, finite, >= 0; p in [0, 1]
 * Errors: MS_EINVAL for an invalid service, x or p.
 */
int ms_offered_load_given(const ms_service_params *s, double x, double p,
                          double *lambda, ms_error *err);

/*
 * ms_offered_load_at: lambda(x) = x / A_total(p(x)), the offered load for
 * which x is an equilibrium (doc/design.md §1.3).  x >= 0 attempts/s; result
 * req/s. Errors: MS_EINVAL.
 */
int ms_offered_load_at(const ms_service_params *s, double x, double *lambda,
                       ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
