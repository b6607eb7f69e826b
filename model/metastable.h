/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: the model library.
 *
 * The mathematics of retry-driven metastable failure (doc/design.md §1):
 * Erlang B/C and the M/M/c wait tail, the failure probability of one attempt,
 * retry amplification under fixed, layered, budgeted and token-bucket
 * policies, the equilibria of the retry feedback loop, the tipping and
 * recovery loads, the state of a service, and exact (GMP) enclosures for the
 * capacity model.
 *
 * Conventions, for every function below:
 *   - rates are per second (requests or attempts), times are in seconds;
 *   - a function returns MS_OK (0) on success or a negative ms_status on
 *     failure, and then writes a one-line message into *err when err is not
 *     NULL; results are written only on success, and no result is ever NaN
 *     or infinite;
 *   - nothing allocates memory except the exact (GMP) functions, nothing
 *     prints, nothing aborts; all functions are reentrant.
 */
#ifndef METASTABLE_MODEL_H
#define METASTABLE_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Status                                                              */
/* ------------------------------------------------------------------ */

typedef enum {
  MS_OK = 0,
  MS_EINVAL = -1,  /* an argument is outside its documented domain */
  MS_ENOCONV = -2, /* an iteration did not converge, or the model's shape
                      is outside what the analysis covers */
  MS_ELIMIT = -3,  /* a documented limit (digits, array size, simulation
                      bins) was reached */
  MS_ENOMEM = -4,  /* memory could not be allocated (exact functions and
                      simulations only) */
} ms_status;

/* A diagnostic: what was wrong and with which value. */
typedef struct {
  char msg[192];
} ms_error;

/* The version of collectd-metastable ("0.2.0"), from configure.ac's
 * AC_INIT: the one home of the version, which `metastable --version` shows
 * and the plugin logs at init. */
const char *ms_version(void);

/* The name of a status ("invalid argument", ...); never NULL. */
const char *ms_status_name(int status);

/* ------------------------------------------------------------------ */
/* Erlang B, Erlang C and the M/M/c wait tail                          */
/* ------------------------------------------------------------------ */

/* Largest pool size accepted by the Erlang functions. */
#define MS_MAX_SERVERS 10000000L

/*
 * ms_erlang_ln_b: natural log of the Erlang B blocking probability
 * B(c, a) = (a^c / c!) / sum_{k=0}^{c} a^k / k!  of an M/M/c/c loss system.
 *
 *   c   servers, integer, 1 <= c <= MS_MAX_SERVERS
 *   a   offered traffic in erlangs (arrival rate / per-server service rate),
 *       finite, a > 0 (a >= c too: a loss system has a steady state at any
 *       load; B(10, 20) = 0.537963...)
 *   ln_b  out: ln B(c, a), <= 0, finite even where B underflows a double
 *
 * Method for a >= c: 1/B = sum_{j=0}^{c} prod_{i<j} (c - i)/a, positive
 * terms shrinking by c/a each, summed in long double until they fall
 * below 1e-19 of the sum (at most about 9 sqrt(c) terms, 26,000 at
 * c = 1e7 and a = c; under 100 once c/a <= 0.65); B >= 1/(c + 1) there.
 * Accuracy for a >= c: relative error of B at most 1.1e-16 for c <= 1000
 * and 1e-16 up to 1e7 (B formed as 1/(1 + sum) in long double), measured
 * against 50-digit references at 423 points, c from 1 to 1e7 and a/c from
 * 1 to 1e6 (tests/data/erlang_overload.csv, tools/gen_erlang_dense.py
 * --overload).
 * Method for a < c: B = Poisson pmf(c; a) / Poisson cdf(c; a).  The pmf in log
 * space by Loader's saddle-point form (C. Loader, "Fast and accurate
 * computation of binomial probabilities", 2000: stirlerr and bd0), with the
 * deviance bd0 and ln pmf carried as double-doubles (an extended deviance in
 * the manner of M. Welinder's for R, PR#15628; doc/design.md §5) through to
 * B = exp(ln B); the cdf through the regularized incomplete gamma function
 * Q(c+1, a) (DLMF 8.4.10), by its power series when it converges fast and
 * otherwise by Temme's uniform asymptotic expansion (N. M. Temme, SIAM J.
 * Math. Anal. 10, 1979; DLMF 8.12).  Cost is bounded independently of c (at
 * most a few hundred flops).  Accuracy: relative error of B (of the value
 * ms_erlang returns; of C likewise) of at most 3.7e-16 for c <= 1000 and
 * 2.8e-16 up to 1e7 where it is a normal double, and where it underflows
 * the relative error
 * of ln B, measured against 50/60-digit references at 6,479 points
 * (tests/check_erlang.c, doc/design.md §5; the tests allow 2e-15 and
 * 1e-14).  ln_b is the double nearest ln B to within that: where |ln B| is
 * large exp(ln_b) is further from B than B is (one ulp of ln B = 705 is
 * 1.1e-13 of B); ms_erlang gives B itself.
 * for a < c. Errors: MS_EINVAL when c or a is outside the domain.
 */
int ms_erlang_ln_b(long c, double a, double *ln_b, ms_error *err);

/*
 * ms_erlang_ln_c: natural log of the Erlang C probability of waiting
 * C(c, a) = c B / (c - a (1 - B)) in an M/M/c queue (Kleinrock, Queueing
 * Systems vol. 1, 1975, eq. 3.40; Gross & Harris, Fundamentals of Queueing
 * Theory, sec. 2.3).  Same arguments, method and accuracy as
 * ms_erlang_ln_b for 0 < a < c; ln_c <= 0.  At a >= c the M/M/c queue has
 * no steady state and C is undefined: MS_EINVAL (ms_erlang gives C = 1
 * there, by convention).
 */
int ms_erlang_ln_c(long c, double a, double *ln_c, ms_error *err);

/* Erlang B and C together, with their logs; b and c may underflow to 0. */
typedef struct {
  double erlang_b, erlang_c;       /* probabilities in [0, 1] */
  double ln_erlang_b, ln_erlang_c; /* natural logs, finite, <= 0 */
  bool steady_state;               /* a < c: C is the M/M/c queue's */
} ms_erlang_values;

/* Both Erlang values for (c, a); domain and errors as ms_erlang_ln_b.
 * For a >= c, where the M/M/c queue has no steady state (its queue grows
 * without bound, so every arrival waits), C is 1 by convention (its limit
 * as a rises to c, and the wait tail's value, ms_ln_wait_tail), ln C = 0
 * and steady_state is false. */
int ms_erlang(long c, double a, ms_erlang_values *out, ms_error *err);

/*
 * ms_erlang_ln_b_recursive: ln B(c, a) by the classic exact recursion
 * B_0 = 1, B_k = a B_{k-1} / (k + a B_{k-1}) (Jagerman 1974), run in
 * extended precision with rescaling, O(c) time.  An independent
 * cross-check for tests and the naive baseline of the benchmarks; not for
 * the per-interval path.  Domain: 1 <= c <= MS_MAX_SERVERS, a > 0 finite
 * (a >= c allowed).  Errors: MS_EINVAL.
 */
int ms_erlang_ln_b_recursive(long c, double a, double *ln_b, ms_error *err);

/*
 * ms_ln_wait_tail: ln P(W > T), the probability that an arrival to an M/M/c
 * queue waits longer than T before service starts:
 *   P(W > T) = C(c, x/mu) exp(-(c mu - x) T) for x < c mu  (Kleinrock 1975,
 *   eq. 3.41; Gross & Harris sec. 2.3), and 1 (ln = 0) for x >= c mu, where
 *   the queue has no steady state and every wait grows without bound.
 *
 *   c   servers, 1 <= c <= MS_MAX_SERVERS
 *   mu  service rate of one server, 1/s, finite, > 0
 *   x   arrival rate, 1/s, finite, > 0
 *   T   client timeout, s, finite, >= 0
 *   ln_tail  out: ln P(W > T), finite, <= 0
 * Accuracy: ln C as a double-double (ms_erlang_ln_b) less (c mu - x) T,
 * rounded once: |error| / max(1, |ln P|) at most 3.1e-16 over the 5,000
 * points of tests/data/erlang_wide.csv (mu = 1, so x / mu is exact; a
 * rounded x / mu adds its own rounding, amplified by c / (c - a) near
 * saturation).  Errors: MS_EINVAL outside the domain.
 */
int ms_ln_wait_tail(long c, double mu, double x, double T, double *ln_tail,
                    ms_error *err);

/* ------------------------------------------------------------------ */
/* The M/M/c/K queue: a bounded queue that rejects (doc/design.md §1.9) */
/* ------------------------------------------------------------------ */

/* Largest queue limit K (waiting places) of the M/M/c/K model. */
#define MS_MAX_QUEUE_LIMIT 10000000L
/* Smallest offered traffic a = x / mu, erlangs, of the M/M/c/K functions:
 * below it every probability they give is below e^-690. */
#define MS_MMCK_MIN_TRAFFIC 1e-300

/*
 * ms_mmck_ln_block: ln P_{c+K}, the blocking probability of an M/M/c/K
 * queue: the stationary probability that all c servers are busy and all K
 * waiting places taken, which by PASTA is the share of arrivals rejected.
 * With rho = a / c and B = B(c, a) Erlang B:
 *   P_{c+K} = B rho^K / (1 + B sum_{j=1}^{K} rho^j)
 * (Gross & Harris, Fundamentals of Queueing Theory, ch. 2, M/M/c/K; K = 0
 * is the loss system M/M/c/c and gives Erlang B itself).
 *
 *   c   servers, 1 <= c <= MS_MAX_SERVERS
 *   K   waiting places, 0 <= K <= MS_MAX_QUEUE_LIMIT
 *   a   offered traffic, erlangs (arrival rate / per-server service rate),
 *       MS_MMCK_MIN_TRAFFIC <= a <= MS_MAX_RATE; a >= c is allowed (the
 *       system is finite and has a steady state at any load)
 *   ln_block  out: finite, <= 0, also where P underflows a double
 * Method and cost: doc/design.md §1.9; a bounded number of operations for
 * any c and K (Erlang B by model/erlang.c's methods, or for a >= c the
 * Poisson cdf ratio; geometric sums in closed form, scaled by rho^-K for
 * rho > 1).  Accuracy: relative error of P (of ln P where P underflows),
 * measured over the 4,346 rows of tests/data/mmck_reference.csv (50-digit
 * sums over states; c from 1 to 10^5, K from 0 to 10^6, rho from 0.01 to
 * 100): at most 1.1e-13 for c + K <= 10^4 and 2.3e-13 beyond
 * (tests/check_mmck.c, which allows 1e-12 and 1e-10); K = 0 agrees with
 * Erlang B to 8.4e-15.
 * Errors: MS_EINVAL outside the domain.
 */
int ms_mmck_ln_block(long c, long K, double a, double *ln_block, ms_error *err);

/*
 * ms_mmck_ln_wait_tail: ln P(W > T | admitted) in an M/M/c/K queue, the
 * probability that an admitted arrival waits longer than T for a server.
 * An arrival that finds n >= c in the system (n < c + K) waits for n - c + 1
 * service completions at rate c mu, an Erlang (gamma) time, so with
 * tau = c mu T, pi_n the stationary probabilities and Q the regularized
 * upper incomplete gamma function (P(Poisson(tau) <= n - c)):
 *   P(W > T | admitted) = sum_{n=c}^{c+K-1} pi_n Q(n - c + 1, tau)
 *                         / (1 - P_{c+K})
 * (Gross & Harris, ch. 2, M/M/c/K waiting times).  As K grows it tends to
 * the M/M/c tail C(c, a) e^(-(c mu - x) T) of ms_ln_wait_tail for x < c mu.
 *
 *   c, K  as ms_mmck_ln_block
 *   mu    service rate of one server, 1/s, > 0, c mu <= MS_MAX_RATE
 *   x     arrival rate, 1/s, finite, x <= MS_MAX_RATE and x / mu >=
 *         MS_MMCK_MIN_TRAFFIC; x >= c mu allowed
 *   T     timeout, s, >= 0, c mu T <= MS_MAX_TIMEOUT_COMPLETIONS
 *   ln_tail  out: finite, <= 0; -DBL_MAX (the log of 0) for K = 0, where
 *            no admitted arrival waits
 * Method: the sum over states in closed form through two Poisson cdfs
 * (doc/design.md §1.9), bounded cost; within a band around x = c mu where
 * the closed form would cancel, a sum over the Poisson terms from their
 * mode outwards, stopped by a proven bound at 1e-17 of the sum: at most
 * about 40 sqrt(min(K, c mu T)) + 40 terms (measured at most 28,522 for c
 * and K up to 10^7).  Accuracy: relative error of P (of ln P where P
 * underflows) at most 1.1e-13 for c + K <= 10^4 and 3.8e-13 beyond, over
 * tests/data/mmck_reference.csv, tau = c mu T from 0 to 3K
 * (tests/check_mmck.c, which allows 1e-12 and 1e-10).
 * Errors: MS_EINVAL outside the domain.
 */
int ms_mmck_ln_wait_tail(long c, long K, double mu, double x, double T,
                         double *ln_tail, ms_error *err);

/* ------------------------------------------------------------------ */
/* Failure model p(x) and retry policy A(p)                            */
/* ------------------------------------------------------------------ */

typedef enum {
  MS_MODEL_CAPACITY = 0, /* hard capacity C (doc/design.md §1.1) */
  MS_MODEL_ERLANG = 1,   /* M/M/c with client timeout (doc/design.md §1.1) */
} ms_model_kind;

/*
 * The failure probability of one attempt as a function of the effective
 * load x (doc/design.md §1.1):
 *   capacity: p(x) = base + (1 - base) max(0, (x - C) / x)
 *   erlang:   p(x) = 1 - (1 - base)(1 - P(W > T)), x an M/M/c arrival rate;
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
  bool has_queue_limit;  /* erlang: the queue holds at most queue_limit
                            waiting attempts and rejects the rest (M/M/c/K,
                            doc/design.md §1.9) */
  long queue_limit;      /* K, waiting places, 0..MS_MAX_QUEUE_LIMIT */
  bool rejections_final; /* with a queue limit: a rejected attempt ends its
                            request instead of being retried (false, the
                            default: retried as any failure) */
} ms_failure_model;

/* Largest retries per request per tier, and largest number of tiers. */
#define MS_MAX_RETRIES 10000
#define MS_MAX_TIERS 10

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
 *   AWS   A = 1 + min(A - 1, refund (1 - p) / (cost p))   (the SDKs'
 *         standard retry quota, whose bucket drains to empty when retries
 *         cost more than first successes refund)
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
  double aws_capacity;     /* tokens, > 0 (transients only) */
  double aws_retry_cost;   /* tokens a retry takes, > 0 */
  double aws_timeout_cost; /* ... a retry after a timeout, > 0 */
  double aws_refund;       /* tokens a first-attempt success returns, >= 0 */
} ms_retry_policy;

/* The defaults of the named policies, as their stacks ship them: gRFC A6
 * has none (the service config must give both); Envoy's retry_budget
 * 20 % and 3; Finagle's RetryBudget() 20 %, 10/s, 10 s; the AWS SDKs'
 * standard mode 500, 5, 10, 1. */
#define MS_ENVOY_BUDGET_DEFAULT 0.2
#define MS_ENVOY_MIN_CONCURRENCY_DEFAULT 3.0
#define MS_FINAGLE_PERCENT_DEFAULT 0.2
#define MS_FINAGLE_MIN_PER_SECOND_DEFAULT 10.0
#define MS_FINAGLE_TTL_DEFAULT 10.0
#define MS_AWS_CAPACITY_DEFAULT 500.0
#define MS_AWS_RETRY_COST_DEFAULT 5.0
#define MS_AWS_TIMEOUT_COST_DEFAULT 10.0
#define MS_AWS_REFUND_DEFAULT 1.0

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

/* ------------------------------------------------------------------ */
/* Parameter rules: the one place a parameter's range is decided       */
/* ------------------------------------------------------------------ */

/* Largest rate (a capacity, an offered or effective load), per second:
 * far beyond any service, and far enough below DBL_MAX (1.8e308) that the
 * model's intermediate products stay finite. */
#define MS_MAX_RATE 1e300
/* Largest service rate of one server, 1/s: c mu stays at most
 * MS_MAX_SERVERS x MS_MAX_SERVICE_RATE = 1e297, below MS_MAX_RATE. */
#define MS_MAX_SERVICE_RATE 1e290
/* Largest duration (a timeout, a service time), seconds. */
#define MS_MAX_DURATION 1e300

/*
 * Largest c mu T of the erlang model: servers x service rate (1/s) x
 * timeout (s), a dimensionless count, the requests the whole pool
 * completes in one timeout.  The one rule that ties the three together,
 * checked by ms_failure_model_check (so by the service file loader, the
 * command line and the plugin alike).  Why: the wait tail
 * P(W > T) = C(c, a) e^(-(c mu - x) T) makes lambda(x) turn down only
 * where (c mu - x) T is about ln(c mu T), at a relative distance
 * ln(c mu T) / (c mu T) below c mu; the landscape's grid (model/
 * landscape.c) reaches 1e-15 c mu, and a fold closer than that is missed:
 * the landscape then reports no band and tipping = recovery = c mu /
 * A(1), so a service at half its capacity reads as overloaded.  Measured
 * (solve, bisection over T): the fold is still found up to c mu T =
 * 3.2e16 (base 0.999) to 4.1e16 (100 retries x 10 tiers), for c from 1 to
 * 1e7 and mu from 0.01 to 1000/s, and lost above.  At 1e15 the grid's
 * last point lies at (c mu - x) T <= 1.2, where any fold of depth above
 * 1e-12 still falls (its turning point is at ln(c mu T K) >= 6.9, K >=
 * 1e-12 its depth), a margin of 30 over the measured loss.  A timeout
 * at the limit fires only within 7.4e-13 c mu of saturation (below, the
 * wait tail underflows to 0): the model is already the one without a
 * timeout (tipping load c mu / A(base)^k, recovery c mu / A(1)^k,
 * doc/design.md §1.3), so "no timeout" is timeout = 1e15 / (c mu).
 */
#define MS_MAX_TIMEOUT_COMPLETIONS 1e15

/* Largest coefficient of variation of the service time (erlang model).  At
 * cv = 10 the effective timeout of the M/G/c wait tail is 2/101 of the
 * timeout (ms_effective_timeout).  The approximation's error is measured
 * up to cv = 4 (doc/design.md §1.1), where it is larger than at cv = 2;
 * beyond, it is not known. */
#define MS_MAX_SERVICE_TIME_CV 10.0

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
  X(SERVICE_RATE, "service_rate", "1/s", 0.0, MS_MAX_SERVICE_RATE,            \
    MS_BOUND_LO_OPEN | MS_BOUND_LIMIT, 0, MS_SCOPE_SERVICE)                   \
  X(SERVICE_TIME, "service_time", "s", 1.0 / MS_MAX_SERVICE_RATE,           \
    MS_MAX_DURATION, MS_BOUND_LIMIT, 0, MS_SCOPE_SERVICE)                     \
  X(TIMEOUT, "timeout", "s", 0.0, MS_MAX_DURATION,                            \
    MS_BOUND_CLOSED | MS_BOUND_LIMIT, 0, MS_SCOPE_SERVICE)                    \
  X(BASE_FAILURE, "base_failure", "", 0.0, 1.0,                               \
    MS_BOUND_HI_OPEN, 0, MS_SCOPE_SERVICE)                                    \
  X(SERVICE_TIME_CV, "service_time_cv", "", 0.0, MS_MAX_SERVICE_TIME_CV,      \
    MS_BOUND_CLOSED, 0, MS_SCOPE_SERVICE)                                     \
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
/* Set *m to a valid erlang model (c, mu, T), base 0. */
void ms_failure_model_erlang(ms_failure_model *m, long servers,
                             double service_rate, double timeout);
/* Set *p to r retries, one tier, no budget, no token bucket. */
void ms_retry_policy_fixed(ms_retry_policy *p, int retries);

/*
 * Validate a failure model, a retry policy, or both.  Returns MS_OK or
 * MS_EINVAL with a message naming the field and its accepted range.
 */
int ms_failure_model_check(const ms_failure_model *m, ms_error *err);
int ms_retry_policy_check(const ms_retry_policy *p, ms_error *err);
int ms_service_params_check(const ms_service_params *s, ms_error *err);

/*
 * ms_effective_timeout: the timeout T' for which the M/M/c wait tail
 * C(c, a) e^(-(c mu - x) T') stands for the wait tail of the model's queue
 * (doc/design.md §1.1): T itself for exponential service (no
 * service_time_cv, or cv = 1, bit for bit), and with a service time of
 * coefficient of variation cv (M/G/c)
 *   T' = T 2 / (1 + cv^2)
 * the Allen-Cunneen approximation: the probability of waiting stays
 * Erlang's C(c, a) and the mean wait of those who wait is the M/M/c one,
 * 1/(c mu - x), times (1 + cv^2)/2 (A. O. Allen, Probability, Statistics
 * and Queueing Theory, 2nd ed., Academic Press 1990, sec. 6.4; the same
 * factor as Kingman's heavy-traffic limit, J. F. C. Kingman, Proc.
 * Cambridge Philos. Soc. 57, 1961), with the wait kept exponential.  Its
 * error against simulation: doc/design.md §1.1.
 *   m  a valid erlang model (the capacity model has no timeout: 0)
 * Returns seconds, finite, >= 0, at most 2 T.
 */
double ms_effective_timeout(const ms_failure_model *m);

/* ms_saturation_load: x_cap, the attempts/s the dependency can serve: C
 * for the capacity model, c mu for the erlang model (doc/design.md §1.1).
 * m: a valid model; the result is finite and > 0. */
double ms_saturation_load(const ms_failure_model *m);

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

/* ------------------------------------------------------------------ */
/* Equilibria, tipping and recovery loads                              */
/* ------------------------------------------------------------------ */

#define MS_MAX_EXTREMA 8
#define MS_MAX_EQUILIBRIA (MS_MAX_EXTREMA + 1)

/*
 * The bifurcation diagram of one service: lambda(x) cut into monotone
 * pieces.  It depends only on the service parameters, never on the offered
 * load, so it is built once and reused every interval until a parameter
 * (pool size, service time, timeout, policy) changes.
 */
typedef struct {
  ms_service_params params;
  double saturation_load;         /* x_cap: C or c mu, attempts/s */
  bool has_fold;                  /* lambda(x) has an interior local maximum */
  double tipping_load;            /* lambda_tip, req/s (doc/design.md §1.3) */
  double recovery_load;           /* lambda_rec, req/s, <= tipping_load */
  double tipping_effective_load;  /* x at the tipping point, attempts/s */
  double recovery_effective_load; /* x at the recovery point, attempts/s */
  double healthy_ceiling;         /* the most failing the healthy branch
                                     gives: p at the tipping point, the base
                                     failure without a fold (§1.7) */
  /* Breakpoints x_0 = 0 < x_1 < ... < x_n, the local extrema of lambda(x),
   * and lambda at each; lambda(x) is monotone between consecutive
   * breakpoints and increasing beyond x_n (to infinity). */
  int n_breaks;
  double break_x[MS_MAX_EXTREMA + 1];
  double break_lambda[MS_MAX_EXTREMA + 1];
} ms_landscape;

/*
 * ms_landscape_build: compute the bifurcation diagram of a service.
 *   s    valid service parameters
 *   out  the landscape; tipping_load and recovery_load always set: without a
 *        fold both equal lambda(x_cap) (doc/design.md §1.3).
 * Method: the sign of d lambda/dx, evaluated in closed form, is sampled on a
 * grid that resolves the wait tail's transition near saturation (log-spaced
 * distance to c mu, or to C), then every sign change is bracketed to full
 * precision by the ITP method (Oliveira and Takahashi 2020; bisection's
 * worst case, superlinear at a smooth extremum), kinks (x = C, x = c mu,
 * budget and token caps) included.
 * Errors: MS_EINVAL for invalid parameters; MS_ELIMIT when lambda(x) has more
 * than MS_MAX_EXTREMA extrema (not seen for any model in doc/design.md §1);
 * MS_ENOCONV when lambda(x) does not rise at the ends of the grid, which
 * only parameters at the far limits of their ranges give (10^7 servers at
 * 1e290/s behind a 1e300 s timeout).
 */
int ms_landscape_build(const ms_service_params *s, ms_landscape *out,
                       ms_error *err);

typedef struct {
  double effective_load;      /* x, attempts/s */
  double failure_probability; /* p(x) */
  double amplification;       /* A_total(p(x)) = x / lambda */
  bool stable;                /* lambda(x) increasing at x */
} ms_equilibrium;

/*
 * ms_equilibria: every equilibrium x = lambda A(p(x)) at offered load
 * lambda, in ascending order of x.
 *   ls      a landscape from ms_landscape_build
 *   lambda  offered load, req/s, finite, >= 0
 *   eq      out: array of MS_MAX_EQUILIBRIA entries
 *   n       out: number found, >= 1; it changes exactly where lambda
 *           crosses a breakpoint value (tipping or recovery load); at a
 *           tangency the double root is reported once, as unstable.
 * Each root is found in its monotone piece by safeguarded Newton iteration
 * to a relative accuracy of a few ulps.  Errors: MS_EINVAL, MS_ENOCONV.
 */
int ms_equilibria(const ms_landscape *ls, double lambda, ms_equilibrium *eq,
                  int *n, ms_error *err);

/* ------------------------------------------------------------------ */
/* Capacity plan (doc/design.md §1.10)                                 */
/* ------------------------------------------------------------------ */

/*
 * ms_response_tail: P(W + S > H), the probability that an attempt's
 * response time (its wait for a server plus its service) exceeds H, in
 * the M/M/c queue at arrival rate x.  W is 0 with probability 1 - C(c, a)
 * and exponential of rate gamma = c mu - x otherwise, S is exponential of
 * rate mu, independent of W; so
 *   P(W + S > H) = e^(-mu H) + C(c, a) mu (e^(-gamma H) - e^(-mu H))
 *                  / (mu - gamma)       (H e^(-mu H) at gamma = mu)
 * (Kleinrock, Queueing Systems vol. 1, 1975, sec. 3.4, the response time
 * of M/M/c; Gross and Harris, Fundamentals of Queueing Theory, sec. 2.3).
 *   m     a valid erlang model without a queue limit and with exponential
 *         service (no service_time_cv, or 1)
 *   x     effective load, attempts/s, finite, >= 0; at and above c mu the
 *         queue has no steady state and the tail is 1
 *   H     response time limit, s, finite, >= 0
 *   tail  out: in [0, 1]
 * Errors: MS_EINVAL for another model, a queue limit, cv != 1, or x or H
 * outside their domain.
 */
int ms_response_tail(const ms_failure_model *m, double x, double H,
                     double *tail, ms_error *err);

/*
 * ms_health_check_load: the effective load, attempts/s, at which a health
 * check with timeout H sent through the replica's queue fails more often
 * than `tolerance`: the smallest x with
 *   1 - (1 - base)(1 - P(W + S > H)) >= tolerance
 * (the probe errors with the base failure or is slower than H;
 * ms_response_tail), found by bisection to a few ulps of c mu.  The
 * failure share rises with x, so above this load the check starts
 * removing replicas that are slow, not dead (doc/design.md §1.10).
 *   m          as ms_response_tail
 *   H          s, finite, >= 0
 *   tolerance  the share of failed checks the balancer tolerates, (0, 1)
 *   x          out: in [0, c mu]; 0 when the check fails too often even
 *              on an idle replica (e^(-mu H) or the base failure too large)
 * Errors: MS_EINVAL as ms_response_tail, or a tolerance outside (0, 1).
 */
int ms_health_check_load(const ms_failure_model *m, double H, double tolerance,
                         double *x, ms_error *err);

/*
 * ms_failure_onset_load: the smallest effective load x in [0, x_hi] at
 * which one attempt's failure probability p(x) (doc/design.md §1.1, §1.9)
 * reaches target, by bisection (p does not fall with x) to a few ulps.
 * The capacity plan's "load at which retries begin to fire" is this x for
 * target = 1 - (1 - base)(1 - 1 %): one attempt in a hundred fails from
 * overload (doc/design.md §1.10).
 *   s       valid service parameters
 *   target  failure probability, [0, 1]
 *   x_hi    attempts/s, [0, MS_MAX_RATE]: where to stop looking (the
 *           tipping point's effective load: beyond it the healthy branch
 *           does not go)
 *   x       out: attempts/s; found: whether p reaches target by x_hi (when
 *           not, *x = x_hi)
 * Errors: MS_EINVAL for invalid parameters, target or x_hi.
 */
int ms_failure_onset_load(const ms_service_params *s, double target,
                          double x_hi, double *x, bool *found, ms_error *err);

/*
 * ms_inflight_capacity: c / T, requests/s, the most attempts per second the
 * pool of c slots can start while every attempt holds its slot for the
 * whole timeout T (a dependency that does not answer): the capacity while
 * a dependency times out, which is c mu x 1 / (mu T) of the normal one
 * (doc/design.md §1.10).
 *   m     a valid erlang model with T > 0
 *   rate  out: requests/s, finite, > 0
 * Errors: MS_EINVAL for the capacity model (no pool, no timeout), T = 0,
 * or a T so small (below c / DBL_MAX) that c / T overflows.
 */
int ms_inflight_capacity(const ms_failure_model *m, double *rate,
                         ms_error *err);

/*
 * ms_worst_amplification: prod_i (r_i + 1), the attempts one request can
 * cause at the dependency when every attempt of every tier fails and each
 * tier retries its own count: (r + 1)^k for k tiers of r retries (4 tiers
 * of 3 retries: 256).  The retry counts' bound; a budget or quota caps
 * the policy's amplification below it (ms_amplification at p = 1).
 *   p  a valid policy.  Result: >= 1, at most 10001^10.
 */
double ms_worst_amplification(const ms_retry_policy *p);

/* ------------------------------------------------------------------ */
/* Capacity planning: safe settings at a peak load                     */
/* ------------------------------------------------------------------ */

/* Largest margin above the peak load (10: safe up to 11 times the peak). */
#define MS_PLAN_MAX_MARGIN 10.0
/* The margin `metastable recommend` and the plugin's safe_retries use when
 * none is given: stable up to 1.2 times the load. */
#define MS_PLAN_DEFAULT_MARGIN 0.2
/* Largest retry count ms_plan_max_retries examines. */
#define MS_PLAN_MAX_RETRIES 100
/* Relative width of the bracket at which ms_plan_knob stops. */
#define MS_PLAN_TOLERANCE 1e-9
/* max_tokens of gRPC throttling where a service without it is given it
 * (gRFC A6 has no default; its example's 10). */
#define MS_PLAN_GRPC_MAX_TOKENS 10.0

/* One answer of the planning functions. */
typedef struct {
  double value;         /* the setting (retries, servers, a share, s) */
  bool safe;            /* the service with that value is safe; false:
                           nothing in the searched range is, and value is
                           the closest (the range's safest end) */
  bool at_bound;        /* value is an end of the searched range (safe at
                           the end: perhaps beyond it too) */
  double tipping_load;  /* req/s, of the service with that value */
  double recovery_load; /* req/s, likewise */
} ms_plan_answer;

/*
 * ms_plan_safe: whether service s is safe at peak load `peak` with margin
 * `margin`: its state is stable (doc/design.md §1.4) at every offered load
 * up to (1 + margin) peak, so no collapsed equilibrium exists there and a
 * storm started by any trigger ends once the trigger is gone.  The state
 * is stable exactly below the recovery load, with a band or without one
 * (then the recovery load is the load whose equilibrium reaches capacity,
 * above which the one equilibrium is the overloaded one), so safe is
 * recovery_load > (1 + margin) peak; tests/check_recommend.c holds it to a
 * scan of ms_equilibria over the loads.
 *   s       valid service parameters
 *   peak    req/s, finite, in [0, MS_MAX_RATE]
 *   margin  share, in [0, MS_PLAN_MAX_MARGIN]
 *   safe    out; ls out (may be NULL): the landscape of s
 * Errors: those of ms_landscape_build; MS_EINVAL for peak or margin.
 */
int ms_plan_safe(const ms_service_params *s, double peak, double margin,
                 bool *safe, ms_landscape *ls, ms_error *err);

/*
 * ms_plan_recovery_safe: the rule of ms_plan_safe on a recovery load
 * already known: whether recovery_load (req/s) makes a service safe at
 * peak load `peak` (req/s) with margin `margin` (share).  The one home of
 * the rule; every planning answer and the plugin's safe_retries use it.
 * Any doubles (NaN is never safe); no errors.
 */
bool ms_plan_recovery_safe(double recovery_load, double peak, double margin);

/*
 * ms_plan_retry_counts: how many retry counts r = 0, 1, ... the planner
 * examines for s: up to MS_PLAN_MAX_RETRIES, or fewer where the policy has
 * its own cap (gRPC's 5 attempts).  r is policy.retries, tier 0 and the
 * tiers without their own count.  No landscape is built.
 *   s  valid service parameters.  Result: 1 to MS_PLAN_MAX_RETRIES + 1.
 */
int ms_plan_retry_counts(const ms_service_params *s);

/*
 * ms_plan_retry_recovery: the recovery load (req/s) of s with r retries
 * (as ms_plan_retry_counts counts them), by one landscape build
 * (doc/design.md §1.3).  It does not depend on a load, so a caller that
 * asks at many loads (the plugin, every interval) keeps it.
 *   r  in [0, ms_plan_retry_counts(s))
 * Errors: MS_EINVAL for r outside that range; those of ms_landscape_build.
 */
int ms_plan_retry_recovery(const ms_service_params *s, int r, double *recovery,
                           ms_error *err);

/*
 * ms_plan_max_retries: the largest retry count r (policy.retries, tier 0
 * and the tiers without their own count) in [0, MS_PLAN_MAX_RETRIES] for
 * which s is safe (ms_plan_safe), every count examined (no monotonicity
 * assumed), up to the policy's own cap (gRPC's 5 attempts).  When none is,
 * out->safe is false and out->value is 0 with its loads.
 * Errors: those of ms_plan_safe.
 */
int ms_plan_max_retries(const ms_service_params *s, double peak, double margin,
                        ms_plan_answer *out, ms_error *err);

/*
 * ms_plan_knob: the largest (larger_safer false) or smallest (true) value
 * of parameter id over its MS_PARAMS range for which s, with only that
 * parameter changed, is safe; by bisection to MS_PLAN_TOLERANCE relative,
 * which assumes safety changes once over the range (tests/check_recommend.c
 * scans it for the services it tests).  The timeout is the exception:
 * safety is not monotone in it (a very short timeout removes the band, one
 * in between can be the least safe; tests/check_recommend.c), so the answer is
 * where the safe stretch that reaches the longest timeout begins, found by
 * a scan down from the longest by factors of 10^(1/8), then bisection;
 * shorter timeouts may be safe as well.  out->value is the safe end of
 * the final bracket.
 *   id  MS_PARAM_RETRY_BUDGET or MS_PARAM_TOKEN_RATIO (the count policy
 *       with that cap, a named policy replaced), MS_PARAM_GRPC_TOKEN_RATIO,
 *       MS_PARAM_ENVOY_BUDGET, MS_PARAM_FINAGLE_PERCENT, MS_PARAM_AWS_REFUND
 *       (that named policy, with its defaults when s has another one;
 *       gRPC with MS_PLAN_GRPC_MAX_TOKENS), MS_PARAM_TIMEOUT (erlang, up
 *       to MS_MAX_TIMEOUT_COMPLETIONS / (c mu)), MS_PARAM_CAPACITY
 *       (capacity model)
 * When the safe end of the range is not safe, out->safe is false and
 * out->value is that end; when both ends are safe, out->value is the
 * other end (at_bound).
 * Errors: MS_EINVAL for an id that is not a knob of s; those of
 * ms_plan_safe.
 */
int ms_plan_knob(const ms_service_params *s, ms_param id, bool larger_safer,
                 double peak, double margin, ms_plan_answer *out,
                 ms_error *err);

/*
 * ms_plan_min_servers: the fewest servers (erlang) for which s is safe, by
 * bisection over [1, min(MS_MAX_SERVERS, MS_MAX_TIMEOUT_COMPLETIONS /
 * (mu T))], which assumes more servers are never less safe.  When the
 * largest is not safe, out->safe is false and out->value is that largest.
 * Errors: MS_EINVAL for the capacity model; those of ms_plan_safe.
 */
int ms_plan_min_servers(const ms_service_params *s, double peak, double margin,
                        ms_plan_answer *out, ms_error *err);

/* ------------------------------------------------------------------ */
/* State of a service (doc/design.md §1.4) and what is reported (doc/design.md
 * §1.5)   */
/* ------------------------------------------------------------------ */

typedef enum {
  MS_STATE_STABLE = 0,     /* lambda < lambda_rec */
  MS_STATE_VULNERABLE = 1, /* bistable band, healthy basin */
  MS_STATE_METASTABLE = 2, /* bistable band, collapsed basin: storm */
  MS_STATE_OVERLOADED = 3, /* lambda > lambda_tip: storm */
} ms_state;

/* "stable", "vulnerable", "metastable", "overloaded"; "unknown" otherwise. */
const char *ms_state_name(ms_state s);
/* 1 for metastable and overloaded, else 0. */
int ms_state_storm(ms_state s);

/* What is known about a service this interval, besides its parameters. */
typedef struct {
  double offered_load;        /* lambda, req/s, finite, >= 0 (required) */
  bool has_observed_attempts; /* x_obs known */
  double observed_attempts;   /* attempts/s reaching the dependency */
  bool has_observed_failure;  /* p_obs known */
  double observed_failure;    /* failed attempts / attempts, [0, 1] */
  bool has_previous;          /* a state from the previous interval */
  ms_state previous;          /* that state */
  bool previous_storm;        /* that interval's storm flag (has_previous);
                                 with observations, an overloaded previous
                                 interval is the collapsed basin only if
                                 this is set */
  double interval;            /* s the observed rates were measured over,
                                 finite, >= 0; 0: unknown, taken as 1 s */
  bool has_queue_length;      /* the backlog is known */
  double queue_length;        /* requests waiting for a server, >= 0 */
} ms_observation;

/*
 * MS_OUTPUTS: every value reported per service (doc/design.md §1.5), in the
 * order the plugin dispatches them and conf/types.db declares them.  The
 * plugin's dispatch, the command line's CSV and JSON writers, the
 * finiteness checks and the types.db test all derive from this table:
 * adding an output is one row here, one member of ms_report of the same
 * name, its computation in ms_analyze and its row in conf/types.db.
 *   X(ID, name, kind, unit, ds_min, ds_max, meaning)
 *     ID      the constant MS_OUT_<ID>
 *     name    the ms_report member, the collectd type and the key in the
 *             command's CSV and JSON (Prometheus: collectd_metastable_<name>)
 *     kind    an ms_output_kind
 *     unit    for people: "req/s", "attempts/s", "attempts per request",
 *             "probability", "ratio", "count", "code", "0 or 1", "s",
 *             "z-score"; the unit column of the documents' tables
 *             (tests/cli/test_docs.py)
 *     ds_min, ds_max  the range of its types.db data source ("U": none)
 *     meaning one line for people
 */
typedef enum {
  MS_OUTPUT_NUMBER,   /* a finite double */
  MS_OUTPUT_COUNT,    /* a whole number (an int member) */
  MS_OUTPUT_STATE,    /* an ms_state code, written by name by the command */
  MS_OUTPUT_FLAG,     /* 0 or 1 (an int member) */
  MS_OUTPUT_OBSERVED, /* a finite double, present only when observed:
                         ms_report.has_<name> */
  MS_OUTPUT_OPTIONAL  /* a finite double computed from an optional input,
                         present only when ms_report.has_<name> */
} ms_output_kind;

/* clang-format off */
#define MS_OUTPUTS(X)                                                         \
  X(OFFERED_LOAD, offered_load, MS_OUTPUT_NUMBER,                             \
    "req/s", "0", "U",                                                        \
    "offered load: first attempts per second, what the users ask for")        \
  X(EFFECTIVE_LOAD, effective_load, MS_OUTPUT_NUMBER,                         \
    "attempts/s", "0", "U",                                                   \
    "all attempts per second at the equilibrium of the current basin")        \
  X(SELF_INFLICTED_LOAD, self_inflicted_load, MS_OUTPUT_NUMBER,               \
    "attempts/s", "U", "U",                                                   \
    "effective minus offered load: the attempts the retries add")             \
  X(AMPLIFICATION, amplification, MS_OUTPUT_NUMBER,                           \
    "attempts per request", "0", "U",                                         \
    "effective / offered load: attempts per request")                         \
  X(FAILURE_PROBABILITY, failure_probability, MS_OUTPUT_NUMBER,               \
    "probability", "0", "1",                                                  \
    "failure probability of one attempt at that equilibrium")                 \
  X(UTILIZATION, utilization, MS_OUTPUT_NUMBER,                               \
    "ratio", "0", "U",                                                        \
    "effective load / saturation load (capacity, or servers x rate)")         \
  X(TIPPING_LOAD, tipping_load, MS_OUTPUT_NUMBER,                             \
    "req/s", "0", "U",                                                        \
    "offered load above which the healthy equilibrium disappears")            \
  X(RECOVERY_LOAD, recovery_load, MS_OUTPUT_NUMBER,                           \
    "req/s", "0", "U",                                                        \
    "offered load below which the collapsed equilibrium disappears")          \
  X(TIPPING_DISTANCE, tipping_distance, MS_OUTPUT_NUMBER,                     \
    "req/s", "U", "U",                                                        \
    "tipping load minus offered load (negative past it)")                     \
  X(TIPPING_HEADROOM, tipping_headroom, MS_OUTPUT_NUMBER,                     \
    "ratio", "U", "U",                                                        \
    "tipping distance / tipping load")                                        \
  X(EQUILIBRIA, equilibria, MS_OUTPUT_COUNT,                                  \
    "count", "0", "U",                                                        \
    "number of equilibria at the offered load")                               \
  X(STATE, state, MS_OUTPUT_STATE,                                            \
    "code", "0", "3",                                                         \
    "0 stable, 1 vulnerable, 2 metastable, 3 overloaded")                     \
  X(STORM, storm, MS_OUTPUT_FLAG,                                             \
    "0 or 1", "0", "1",                                                       \
    "1 while a retry storm is observed (the model's states 2, 3 if unobserved)")                      \
  X(OBSERVED_EFFECTIVE_LOAD, observed_effective_load, MS_OUTPUT_OBSERVED,     \
    "attempts/s", "0", "U",                                                   \
    "attempts per second observed reaching the service")                      \
  X(OBSERVED_FAILURE_RATIO, observed_failure_ratio, MS_OUTPUT_OBSERVED,       \
    "ratio", "0", "1",                                                        \
    "failed attempts / attempts, as observed")                                \
  X(SHED_LOAD, shed_load, MS_OUTPUT_NUMBER,                                   \
    "req/s", "0", "U",                                                        \
    "in a storm, the offered load to shed for it to end; else 0")             \
  X(RECOVERING, recovering, MS_OUTPUT_FLAG,                                   \
    "0 or 1", "0", "1",                                                       \
    "1 in a storm the model says is over while attempts still fail")          \
  X(DRAIN_TIME, drain_time, MS_OUTPUT_OPTIONAL,                               \
    "s", "0", "U",                                                            \
    "seconds to serve the observed queue at this offered load")               \
  X(STALL_TOLERANCE, stall_tolerance, MS_OUTPUT_OPTIONAL,                     \
    "s", "0", "U",                                                            \
    "longest full stall survived at this offered load without a storm")       \
  X(SAFE_RETRIES, safe_retries, MS_OUTPUT_OPTIONAL,                           \
    "count", "0", "U",                                                        \
    "most retries per request that keep this load with its margin stable")    \
  X(SERVICE_TIME_ESTIMATE, service_time_estimate, MS_OUTPUT_OPTIONAL,       \
    "s", "0", "U",                                                            \
    "service time learned from busy_servers, completion_rate or latency")     \
  X(SERVICE_TIME_ERROR, service_time_error, MS_OUTPUT_OPTIONAL,             \
    "s", "0", "U",                                                            \
    "standard error of the learned service time")                             \
  X(SERVICE_TIME_RATIO, service_time_ratio, MS_OUTPUT_OPTIONAL,             \
    "ratio", "0", "U",                                                        \
    "learned / configured service time (1: as configured)")                   \
  X(BASE_FAILURE_ESTIMATE, base_failure_estimate, MS_OUTPUT_OPTIONAL,       \
    "probability", "0", "1",                                                  \
    "base failure learned from the failure ratio at low utilisation")         \
  X(SERVERS_ESTIMATE, servers_estimate, MS_OUTPUT_OPTIONAL,                 \
    "count", "0", "U",                                                        \
    "pool size learned from busy_servers while the pool is saturated")        \
  X(CALIBRATED, calibrated, MS_OUTPUT_OPTIONAL,                             \
    "count", "0", "3",                                                        \
    "how many learned values the model uses (calibrate: in the file)")        \
  X(MODEL_FAILURE_RATIO, model_failure_ratio, MS_OUTPUT_OPTIONAL,           \
    "probability", "0", "1",                                                  \
    "the model's failure probability at the observed attempt rate")           \
  X(MODEL_RESIDUAL, model_residual, MS_OUTPUT_OPTIONAL,                     \
    "z-score", "U", "U",                                                      \
    "observed vs model failure ratio, signed likelihood-ratio z (0: fits)")   \
  X(REPORTING, reporting, MS_OUTPUT_FLAG,                                     \
    "0 or 1", "0", "1",                                                       \
    "1 for a report; 0, alone, when this interval's inputs gave none")
/* clang-format on */

typedef enum {
#define MS_OUT_ENUM(ID, name, kind, unit, ds_min, ds_max, meaning) MS_OUT_##ID,
  MS_OUTPUTS(MS_OUT_ENUM)
#undef MS_OUT_ENUM
      MS_OUT_COUNT
} ms_output;

/* One row of MS_OUTPUTS. */
typedef struct {
  const char *name;
  ms_output_kind kind;
  const char *unit, *ds_min, *ds_max, *meaning;
} ms_output_info;

/* The row of an output; NULL when id is not one. */
const ms_output_info *ms_output_get(ms_output id);

/* The output called name ("tipping_load"), or -1. */
int ms_output_find(const char *name);

/* Every value of MS_OUTPUTS for one service, plus the equilibria. */
typedef struct {
  double offered_load;        /* req/s */
  double effective_load;      /* attempts/s, equilibrium of current basin */
  double self_inflicted_load; /* effective - offered, attempts/s */
  double amplification;       /* effective / offered (A(p) at lambda = 0) */
  double failure_probability; /* p at that equilibrium */
  double utilization;         /* effective / saturation_load */
  double tipping_load;        /* req/s */
  double recovery_load;       /* req/s */
  double tipping_distance;    /* tipping - offered, req/s */
  double tipping_headroom;    /* (tipping - offered) / tipping */
  int equilibria;             /* number of equilibria */
  ms_state state;
  int storm;                        /* 0 or 1 */
  bool has_observed_effective_load; /* the observation was given */
  double observed_effective_load;   /* attempts/s, as observed */
  bool has_observed_failure_ratio;  /* the observation was given */
  double observed_failure_ratio;    /* failed / attempts, as observed */
  double shed_load;                 /* req/s to shed in a storm, else 0 */
  int recovering;                   /* 0 or 1: storm in state 0 or 1 */
  bool has_drain_time;              /* queue given and it drains */
  double drain_time;                /* s to serve the queue at lambda */
  /* set by ms_tracker_step, never by ms_analyze (a search of fluid runs,
   * cached per offered-load bucket: service/service.h) */
  bool has_stall_tolerance; /* erlang, one tier, at or above the recovery
                               load (below it every stall is survived) */
  double stall_tolerance;   /* s, ms_trigger_tolerance: 0 overloaded */
  bool has_safe_retries;    /* set by ms_tracker_step: some count is safe */
  double safe_retries;      /* retries, whole, [0, MS_PLAN_MAX_RETRIES] */
  /* calibration (doc/design.md §1.8): set by ms_tracker_step, never by
   * ms_analyze, which knows one interval only */
  bool has_service_time_estimate; /* busy/completion or latency inputs */
  double service_time_estimate;   /* s */
  bool has_service_time_error;    /* with the estimate */
  double service_time_error;      /* s, standard error */
  bool has_service_time_ratio;    /* with the estimate (erlang) */
  double service_time_ratio;      /* learned / configured */
  bool has_base_failure_estimate; /* calibrate: [base_failure] */
  double base_failure_estimate;   /* probability */
  bool has_servers_estimate;      /* calibrate: [servers] */
  double servers_estimate;        /* servers, whole */
  bool has_calibrated;            /* calibrate: given */
  double calibrated;              /* learned values in use, 0..3 */
  bool has_model_failure_ratio;   /* observed attempts and failures */
  double model_failure_ratio;     /* p(x_obs) */
  bool has_model_residual;        /* observed failure ratio known */
  double model_residual;          /* ms_failure_residual */
  int reporting;                  /* 1 (the plugin sends 0 alone) */
  bool collapsed_basin;           /* the operating point is the high branch */
  bool certified;                 /* capacity model: effective_load is the
                                     midpoint of an exact enclosure
                                     (ms_report_certify; never by
                                     ms_analyze) */
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
} ms_report;

/*
 * ms_report_output: output id of report r as a double (counts, state codes
 * and flags converted exactly).
 *   v  out: the value, when present
 * Returns true when present: always, except an MS_OUT_OBSERVED or
 * MS_OUT_OPTIONAL output without its value, and every output but
 * reporting in a report whose reporting is 0 (an interval without a
 * report: ms_report zeroed carries only the heartbeat); false (v
 * untouched) also for an id that is not an output.
 */
bool ms_report_output(const ms_report *r, ms_output id, double *v);

/* The z of the noise bound that decides whether an observed rate exceeds
 * the model's healthy level (doc/design.md §1.7): obs > ref + z sqrt(ref/T)
 * + z^2/T over an interval of T seconds. */
#define MS_EVIDENCE_Z 3.0

/*
 * ms_beyond_noise: whether a rate observed over tau seconds exceeds a
 * reference rate by more than the Poisson noise of counting it
 * (doc/design.md §1.7): obs > ref + z sqrt(ref / tau) + z^2 / tau, z =
 * MS_EVIDENCE_Z.
 *   obs, ref  rates, per second, finite, >= 0 (a negative obs is not beyond)
 *   tau       seconds; <= 0 or NaN: no time, no evidence (false)
 * Never overflows (rates, not counts).  Source: the normal bound on a
 * Poisson count m + z sqrt(m) + z^2 (m = ref tau), the z^2 term as in
 * Wilson's score interval (Wilson 1927) for small counts.
 */
bool ms_beyond_noise(double obs, double ref, double tau);

/*
 * ms_timeout_horizon: the backlog the pool serves within one timeout, x_cap
 * T = c mu T requests (erlang): an attempt that joins a longer one waits
 * longer than T (doc/design.md §1.7).  +infinity for the capacity model,
 * which has no timeout.  m: a valid model.
 */
double ms_timeout_horizon(const ms_failure_model *m);

/*
 * ms_drain_time: seconds until a backlog of `queue` waiting requests is
 * served at offered load lambda (doc/design.md §1.7), fluid approximation.
 * While the backlog holds more than the timeout horizon x_cap T (erlang;
 * none for the capacity model), every attempt that joins it waits longer
 * than T and fails, so each request brings A(1) attempts; below the
 * horizon attempts fail with the base failure only, A(base):
 *   t = (queue - x_cap T)^+ / (x_cap - lambda A(1))
 *       + min(queue, x_cap T) / (x_cap - lambda A(base))
 *   s       valid service parameters
 *   lambda  offered load, req/s, finite, >= 0
 *   queue   requests waiting, finite, >= 0
 *   t       out: seconds, finite and >= 0; +infinity when the backlog does
 *           not drain at this load (a denominator above is <= 0 for a
 *           phase the backlog is in)
 * Errors: MS_EINVAL for invalid parameters or arguments.
 */
int ms_drain_time(const ms_service_params *s, double lambda, double queue,
                  double *t, ms_error *err);

/* ------------------------------------------------------------------ */
/* Calibration (doc/design.md §1.8)                                    */
/* ------------------------------------------------------------------ */

/*
 * ms_estimator: an exponentially weighted mean of samples x_i with weights
 * w_i, and the standard error of that mean (doc/design.md §1.8).  Each
 * sample's weight is its count of events (the completions behind a
 * service-time sample, the attempts behind a failure ratio), so that the
 * sample's variance is sigma^2 / w_i; older samples fade by exp(-dt /
 * time_constant).  With a_i the fading factor of sample i:
 *   mean      m = sum a_i w_i x_i / sum a_i w_i
 *   sigma^2     = [sum a_i w_i (x_i - m)^2 / sum a_i] * k / (k - 1),
 *                 k = (sum a_i)^2 / sum a_i^2 the effective samples
 *   std error   = sqrt(sigma^2 sum a_i^2 w_i) / sum a_i w_i
 * The sums are updated by West's weighted incremental algorithm (D. H. D.
 * West, "Updating mean and variance estimates: an improved method", CACM
 * 22(9), 1979), which keeps the scatter without the cancellation of sum
 * w x^2 - (sum w x)^2 / sum w.  Constant memory, a few flops per sample.
 * The scatter is measured, not assumed: the error holds whatever the
 * samples' distribution, as long as intervals are roughly independent.
 */
typedef struct {
  double time_constant;  /* s, > 0; +infinity: nothing fades */
  double weight;         /* sum a_i w_i */
  double mean;           /* m, in the samples' unit */
  double scatter;        /* sum a_i w_i (x_i - m)^2 */
  double count;          /* sum a_i */
  double count_sq;       /* sum a_i^2 */
  double weight_sq;      /* sum a_i^2 w_i */
  unsigned long samples; /* samples taken since ms_estimator_init */
} ms_estimator;

/* An empty estimator whose samples fade with time_constant seconds
 * (finite and > 0, or +infinity; anything else is taken as +infinity). */
void ms_estimator_init(ms_estimator *e, double time_constant);

/*
 * ms_estimator_add: fade the estimator by dt seconds, then take sample x
 * with weight w.
 *   x   finite
 *   w   finite, > 0 (events behind the sample)
 *   dt  seconds since the previous sample, finite, >= 0
 * Errors: MS_EINVAL, also for a sample whose sums overflow a double (x
 * and the mean of opposite signs near 1e308, w (x - m)^2 beyond DBL_MAX);
 * the estimator is then unchanged.
 */
int ms_estimator_add(ms_estimator *e, double x, double w, double dt,
                     ms_error *err);

/*
 * ms_estimator_get: the mean and its standard error.
 *   mean, se  out (either may be NULL); se >= 0, 0 when every sample was
 *             equal
 * Returns false (outputs untouched) before the estimator has two samples.
 */
bool ms_estimator_get(const ms_estimator *e, double *mean, double *se);

/* k = (sum a_i)^2 / sum a_i^2: how many samples the estimate rests on
 * (the samples taken, at most, once they fade); 0 when empty. */
double ms_estimator_effective_samples(const ms_estimator *e);

/*
 * ms_failure_residual: how far a failure ratio observed over n attempts is
 * from the model's failure probability p, as a signed likelihood-ratio
 * statistic (doc/design.md §1.8): with Anscombe's half-count correction
 * (F. J. Anscombe, Biometrika 43, 1956) q~ = (k + 1/2)/(n + 1) and p~ =
 * (n p + 1/2)/(n + 1), k = q n failures,
 *   D = 2 (n + 1) [q~ ln(q~/p~) + (1 - q~) ln((1 - q~)/(1 - p~))]
 *   r = sign(q~ - p~) sqrt(D)
 * r is about a standard normal when the model is right (|r| > 3 about 3
 * times in a thousand intervals), 0 when q = p, and finite for every
 * input, p = 0 included: one failure where none is predicted is not a
 * misfit, ten in a thousand are (r = 6.6).  The same scale for every
 * service, whatever its traffic.
 *   observed   q, failed attempts / attempts, in [0, 1]
 *   predicted  p, in [0, 1]
 *   attempts   n, attempts counted over the interval, finite, >= 0
 * Returns r; 0 for arguments outside their domain (NaN, n = 0: no
 * attempts, no evidence).
 */
double ms_failure_residual(double observed, double predicted, double attempts);

/*
 * ms_analyze: the state and every reported value of one service.
 *   ls   landscape of the service
 *   obs  offered load and what was observed (doc/design.md §1.4: which basin is
 *        decided by the observed attempt rate, else the observed failure
 *        ratio, against the unstable middle equilibrium; else by the
 *        previous state; a cold start is healthy)
 *   out  the report
 * Allocates nothing and its cost is bounded (no iteration grows with the
 * parameters; doc/performance.md gives the worst allowed configuration's
 * cost): this is the per-interval path.  The capacity model's equilibrium
 * is the double root: within a few ulps of the exact one where the root is
 * well conditioned, within 3e-14 relative just past the tipping load,
 * where the map's slope nears 1 (measured against the certified root over
 * 100,000 loads).  ms_report_certify (exact.h) certifies it by an exact
 * enclosure where an allocation is affordable (the command line).
 * The storm flag, recovering and shed_load follow doc/design.md §1.7: from
 * the observations and the previous storm flag when there are
 * observations, from the state alone when there are none.
 * Errors: MS_EINVAL, MS_ENOCONV.
 */
int ms_analyze(const ms_landscape *ls, const ms_observation *obs,
               ms_report *out, ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
