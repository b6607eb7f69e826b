/* SPDX-License-Identifier: MIT */
/*
 * Every public model function at the edges of the doubles (doc/design.md
 * §4: "No NaN or infinity leaves the library"): each double argument, and
 * each double field of a model struct argument, is taken through an edge
 * set (the infinities, +-DBL_MAX, +-1, +-DBL_MIN, +-DBL_TRUE_MIN, a
 * subnormal, +-0, NaN, the documented bounds and their neighbours one ulp
 * away, typical values) with the other arguments typical, and through
 * pairs of edges for the core functions (Erlang B and C, the wait tails).
 * Every call must return MS_OK with finite outputs or an error status, and
 * never crash (Check forks each test; the sanitizers rerun it).
 *
 * Complete by construction: the public headers (MS_PUBLIC_HEADERS, given
 * by tests/Makefile.inc) are parsed here, and every function they declare
 * must have a row of `functions` below, either a driver or the reason it
 * takes no double; a row without a driver whose parameters hold a double
 * fails the test too.
 */
#include <check.h>
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_run.h"
#include "exact.h"
#include "metastable.h"
#include "outputs.h"

/* ------------------------------------------------------------------ */
/* Edge sets and the verdict on one call                               */
/* ------------------------------------------------------------------ */

#define MAX_EDGES 80

typedef struct {
  int n;
  double v[MAX_EDGES];
} edges;

static void edge_add(edges *e, double v) {
  for (int i = 0; i < e->n; i++)
    if (memcmp(&e->v[i], &v, sizeof v) == 0)
      return;
  ck_assert_int_lt(e->n, MAX_EDGES);
  e->v[e->n++] = v;
}

/* The fixed edges, then each point of pts (domain bounds and typical
 * values) with its neighbours one ulp below and above. */
static edges edge_set(int n, const double *pts) {
  static const double fixed[] = {-INFINITY,    -DBL_MAX,      -1.0,    -DBL_MIN,
                                 -0x1p-1060,   -DBL_TRUE_MIN, -0.0,    0.0,
                                 DBL_TRUE_MIN, 0x1p-1060,     DBL_MIN, 1.0,
                                 DBL_MAX,      INFINITY,      NAN};
  edges e = {0};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    edge_add(&e, fixed[i]);
  for (int i = 0; i < n; i++) {
    edge_add(&e, pts[i]);
    edge_add(&e, nextafter(pts[i], -INFINITY));
    edge_add(&e, nextafter(pts[i], INFINITY));
  }
  return e;
}
#define EDGES(...)                                                             \
  edge_set((int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)),            \
           (double[]){__VA_ARGS__})

/* Whole-number arguments (servers, queue limits) at their edges. */
static const long server_edges[] = {LONG_MIN,
                                    -1,
                                    0,
                                    1,
                                    2,
                                    10,
                                    1000,
                                    MS_MAX_SERVERS - 1,
                                    MS_MAX_SERVERS,
                                    MS_MAX_SERVERS + 1,
                                    LONG_MAX};
#define N_SERVER_EDGES ((int)(sizeof server_edges / sizeof server_edges[0]))
static const long queue_edges[] = {LONG_MIN,
                                   -1,
                                   0,
                                   1,
                                   10,
                                   MS_MAX_QUEUE_LIMIT - 1,
                                   MS_MAX_QUEUE_LIMIT,
                                   MS_MAX_QUEUE_LIMIT + 1,
                                   LONG_MAX};
#define N_QUEUE_EDGES ((int)(sizeof queue_edges / sizeof queue_edges[0]))

static long calls, failures;

/* The verdict on one call: rc an ms_status, and on MS_OK every one of the
 * n outputs finite.  The inputs (fmt, ...) are printed on a failure. */
static void verdict(const char *fn, int rc, int n, const double *out,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void verdict(const char *fn, int rc, int n, const double *out,
                    const char *fmt, ...) {
  calls++;
  const char *why = NULL;
  int bad = -1;
  if (rc > 0 || rc < MS_ENOMEM)
    why = "status is not an ms_status";
  else if (rc == MS_OK)
    for (int i = 0; i < n && why == NULL; i++)
      if (!isfinite(out[i])) {
        why = "output not finite";
        bad = i;
      }
  if (why == NULL)
    return;
  if (failures++ < 60) {
    char in[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(in, sizeof in, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s(%s): rc %d, %s", fn, in, rc, why);
    if (bad >= 0)
      fprintf(stderr, " (output %d = %g)", bad, out[bad]);
    fputc('\n', stderr);
  }
}
#define OUTS(...)                                                              \
  (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), (double[]) {        \
    __VA_ARGS__                                                                \
  }
/* A function with no status: its result must be finite. */
#define VALUE(fn, v, ...) verdict(fn, MS_OK, OUTS(v), __VA_ARGS__)
/* A call that has nothing to be finite (a bool, a check): counted. */
#define CALLED(fn, rc, ...) verdict(fn, rc, 0, NULL, __VA_ARGS__)
/* A function with no status and nothing to be finite (a bool): counted. */
#define COUNTED(fn, expr, ...)                                                 \
  do {                                                                         \
    (void)(expr);                                                              \
    verdict(fn, MS_OK, 0, NULL, __VA_ARGS__);                                  \
  } while (0)

/* ------------------------------------------------------------------ */
/* Erlang B and C, the wait tails, M/M/c/K: edges and pairs of edges   */
/* ------------------------------------------------------------------ */

/* Offered traffic a, erlangs: the domain a > 0, MS_MMCK_MIN_TRAFFIC and
 * MS_MAX_RATE, and loads around the pools of server_edges. */
static edges traffic_edges(void) {
  return EDGES(0.0, MS_MMCK_MIN_TRAFFIC, 1e-12, 0.5, 1.0, 2.0, 9.5, 10.0,
               1000.0, 1e6, 1e7, 1e9, MS_MAX_RATE);
}

static void drive_erlang(void) {
  edges a = traffic_edges();
  for (int i = 0; i < N_SERVER_EDGES; i++) {
    long c = server_edges[i];
    for (int j = 0; j < a.n; j++) {
      double x = a.v[j], lb = NAN, lc = NAN;
      ms_erlang_values v;
      int rc = ms_erlang_ln_b(c, x, &lb, NULL);
      verdict("ms_erlang_ln_b", rc, OUTS(lb), "%ld, %a", c, x);
      rc = ms_erlang_ln_c(c, x, &lc, NULL);
      verdict("ms_erlang_ln_c", rc, OUTS(lc), "%ld, %a", c, x);
      rc = ms_erlang(c, x, &v, NULL);
      verdict("ms_erlang", rc,
              OUTS(v.erlang_b, v.erlang_c, v.ln_erlang_b, v.ln_erlang_c),
              "%ld, %a", c, x);
      /* O(c): the largest pools only at a few loads */
      if (c <= 1000 || (x >= 1.0 && x <= 1e7) || !isfinite(x) || x <= 0) {
        rc = ms_erlang_ln_b_recursive(c, x, &lb, NULL);
        verdict("ms_erlang_ln_b_recursive", rc, OUTS(lb), "%ld, %a", c, x);
      }
    }
  }
}

/* ms_ln_wait_tail and ms_mmck_ln_wait_tail at one (c, K, mu, x, T). */
static void wait_tails(long c, long K, double mu, double x, double T) {
  double t = NAN;
  int rc = ms_ln_wait_tail(c, mu, x, T, &t, NULL);
  verdict("ms_ln_wait_tail", rc, OUTS(t), "%ld, %a, %a, %a", c, mu, x, T);
  rc = ms_ln_wait_tail_erlangs(c, mu, x / mu, T, &t, NULL);
  verdict("ms_ln_wait_tail_erlangs", rc, OUTS(t), "%ld, %a, %a, %a", c, mu,
          x / mu, T);
  const double cvs[] = {1.0, 0.0, 0.5, 3.0};
  for (int i = 0; i < 4; i++) {
    rc = ms_ln_response_tail(c, mu, x, T, cvs[i], &t, NULL);
    verdict("ms_ln_response_tail", rc, OUTS(t), "%ld, %a, %a, %a, cv %g", c, mu,
            x, T, cvs[i]);
  }
  rc = ms_mmck_ln_wait_tail(c, K, mu, x, T, &t, NULL);
  verdict("ms_mmck_ln_wait_tail", rc, OUTS(t), "%ld, %ld, %a, %a, %a", c, K, mu,
          x, T);
  rc = ms_mmck_ln_response_tail(c, K, mu, x, T, &t, NULL);
  verdict("ms_mmck_ln_response_tail", rc, OUTS(t), "%ld, %ld, %a, %a, %a", c, K,
          mu, x, T);
}

static void drive_wait_tails(void) {
  const long c = 10, K = 10;
  const double mu = 10, x = 50, T = 1;
  edges em = EDGES(0.0, 10.0, 1e-30, MS_MAX_SERVICE_RATE, MS_MAX_RATE / c);
  edges ex = EDGES(0.0, 50.0, 100.0, 1e-299, MS_MAX_RATE);
  edges et = EDGES(0.0, 1.0, 1e-3, MS_MAX_DURATION,
                   MS_MAX_TIMEOUT_COMPLETIONS / (c * mu));
  for (int i = 0; i < N_SERVER_EDGES; i++)
    for (int j = 0; j < ex.n; j++)
      wait_tails(server_edges[i], K, mu, ex.v[j], T);
  for (int i = 0; i < N_QUEUE_EDGES; i++)
    for (int j = 0; j < ex.n; j++)
      wait_tails(c, queue_edges[i], mu, ex.v[j], T);
  for (int i = 0; i < em.n; i++)
    for (int j = 0; j < ex.n; j++)
      wait_tails(c, K, em.v[i], ex.v[j], T);
  for (int i = 0; i < ex.n; i++)
    for (int j = 0; j < et.n; j++)
      wait_tails(c, K, mu, ex.v[i], et.v[j]);
  for (int i = 0; i < em.n; i++)
    for (int j = 0; j < et.n; j++)
      wait_tails(c, K, em.v[i], x, et.v[j]);
}

static void drive_mmck_block(void) {
  edges a = traffic_edges();
  for (int j = 0; j < a.n; j++) {
    double lb = NAN;
    for (int i = 0; i < N_SERVER_EDGES; i++) {
      int rc = ms_mmck_ln_block(server_edges[i], 10, a.v[j], &lb, NULL);
      verdict("ms_mmck_ln_block", rc, OUTS(lb), "%ld, 10, %a", server_edges[i],
              a.v[j]);
    }
    for (int i = 0; i < N_QUEUE_EDGES; i++) {
      int rc = ms_mmck_ln_block(10, queue_edges[i], a.v[j], &lb, NULL);
      verdict("ms_mmck_ln_block", rc, OUTS(lb), "10, %ld, %a", queue_edges[i],
              a.v[j]);
    }
  }
}

/* ------------------------------------------------------------------ */
/* Scalar functions of doubles only                                    */
/* ------------------------------------------------------------------ */

static void drive_param_check(void) {
  for (int id = -1; id <= MS_PARAM_COUNT; id++) {
    const ms_param_info *p = ms_param_get((ms_param)id);
    edges e = p ? EDGES(p->lo, p->hi, (p->lo + p->hi) / 2) : EDGES(0.5);
    for (int i = 0; i < e.n; i++) {
      CALLED("ms_param_check", ms_param_check((ms_param)id, e.v[i], NULL),
             "%d, %a", id, e.v[i]);
      /* a range message's value against each bound, every pair of edges:
       * the text reads back on the side of the bound the value is on */
      for (int j = 0; p != NULL && j < e.n; j++) {
        char buf[32];
        double x = e.v[i], b = e.v[j];
        ms_format_against(buf, x, b);
        double y = strtod(buf, NULL);
        int sx = (x > b) - (x < b), sy = (y > b) - (y < b);
        verdict("ms_format_against",
                !isfinite(x) || isnan(b) || sx == sy ? MS_OK : MS_EINVAL, 0,
                NULL, "%a against %a: %s", x, b, buf);
      }
    }
  }
}

/* The summaries of repeated runs: Wilson's interval at every edge of z
 * and of the counts, a sort of every edge (NaN and the infinities
 * included), and the quantiles of the finite ones at every edge of q. */
static void drive_statistics(void) {
  edges z = EDGES(0.0, 1.0, MS_Z95, 1e300);
  const long counts[] = {LONG_MIN, -1, 0, 1, 2, 1000, LONG_MAX};
  int nc = (int)(sizeof counts / sizeof counts[0]);
  for (int i = 0; i < z.n; i++)
    for (int k = 0; k < nc; k++)
      for (int n = 0; n < nc; n++) {
        double lo = NAN, hi = NAN;
        ms_wilson_interval(counts[k], counts[n], z.v[i], &lo, &hi);
        verdict("ms_wilson_interval", MS_OK, OUTS(lo, hi), "%ld of %ld, z %a",
                counts[k], counts[n], z.v[i]);
        ck_assert_msg(lo >= 0 && lo <= hi && hi <= 1,
                      "ms_wilson_interval(%ld, %ld, %a) = [%a, %a]", counts[k],
                      counts[n], z.v[i], lo, hi);
      }
  edges x = EDGES(-1.0, 0.0, 1.0, 1e300);
  ms_sort_doubles(x.v, (size_t)x.n);
  int finite = 0;
  for (int i = 0; i < x.n; i++) {
    CALLED("ms_sort_doubles", MS_OK, "at %d", i);
    ck_assert_msg(i == 0 || !(x.v[i] < x.v[i - 1]) ||
                      (isnan(x.v[i - 1]) && isnan(x.v[i])),
                  "ms_sort_doubles: %a before %a", x.v[i - 1], x.v[i]);
    ck_assert_msg(!isnan(x.v[i]) || i + 1 == x.n || isnan(x.v[i + 1]),
                  "ms_sort_doubles: NaN before %a", x.v[i + 1]);
    if (isfinite(x.v[i]))
      x.v[finite++] = x.v[i];
  }
  edges q = EDGES(0.0, 0.5, 1.0);
  for (int i = 0; i < q.n; i++)
    for (int n = 1; n <= finite; n++)
      VALUE("ms_quantile_sorted", ms_quantile_sorted(x.v, (size_t)n, q.v[i]),
            "%d values, q %a", n, q.v[i]);
}

static void drive_probabilities(void) {
  edges pr = EDGES(0.0, 0.5, 1.0, 1e-300);
  edges n = EDGES(0.0, 1.0, 1000.0, 0x1p53, 1e300);
  edges r = EDGES(0.0, 10.0, 1e12, MS_MAX_RATE);
  for (int i = 0; i < pr.n; i++)
    for (int j = 0; j < pr.n; j++)
      for (int k = 0; k < n.n; k++) {
        double z = ms_failure_residual(pr.v[i], pr.v[j], n.v[k]);
        VALUE("ms_failure_residual", z, "%a, %a, %a", pr.v[i], pr.v[j], n.v[k]);
      }
  for (int i = 0; i < r.n; i++)
    for (int j = 0; j < r.n; j++)
      for (int k = 0; k < n.n; k++) {
        COUNTED("ms_beyond_noise", ms_beyond_noise(r.v[i], r.v[j], n.v[k]),
                "%a, %a, %a", r.v[i], r.v[j], n.v[k]);
        COUNTED("ms_recommend_recovery_safe",
                ms_recommend_recovery_safe(r.v[i], r.v[j], n.v[k]),
                "%a, %a, %a", r.v[i], r.v[j], n.v[k]);
      }
}

/* ------------------------------------------------------------------ */
/* The estimator (doc/design.md §1.8)                                  */
/* ------------------------------------------------------------------ */

/* Every field of a fed estimator is finite, and so is what it gives. */
static void estimator_state(const ms_estimator *e, const char *what, double x,
                            double w, double dt) {
  double mean = 0, se = 0;
  bool got = ms_estimator_get(e, &mean, &se);
  verdict("ms_estimator_get", MS_OK,
          OUTS(e->weight, e->mean, e->scatter, e->count, e->count_sq,
               e->weight_sq, got ? mean : 0, got ? se : 0),
          "%s after add(%a, %a, %a)", what, x, w, dt);
  VALUE("ms_estimator_effective_samples", ms_estimator_effective_samples(e),
        "%s after add(%a, %a, %a)", what, x, w, dt);
}

static void drive_estimator(void) {
  edges ex = EDGES(0.0, 1.0, 0.01, 1e300, -1e300);
  edges ew = EDGES(1.0, 1000.0, 1e300);
  edges et = EDGES(0.0, 1.0, 600.0, 1e300);
  for (int i = 0; i < et.n; i++) {
    ms_estimator e;
    ms_estimator_init(&e, et.v[i]);
    verdict("ms_estimator_init", MS_OK, 0, NULL, "%a", et.v[i]);
    for (int j = 0; j < ex.n; j++) {
      int rc = ms_estimator_add(&e, ex.v[j], 10.0, 1.0, NULL);
      verdict("ms_estimator_add", rc, 0, NULL, "tc %a: %a, 10, 1", et.v[i],
              ex.v[j]);
      estimator_state(&e, "tc", ex.v[j], 10.0, 1.0);
    }
  }
  /* pairs of a sample and its weight, and of a sample and a time step,
   * on an estimator holding two typical samples */
  for (int i = 0; i < ex.n; i++)
    for (int j = 0; j < ew.n + et.n; j++) {
      ms_estimator e;
      ms_estimator_init(&e, 600.0);
      ck_assert_int_eq(ms_estimator_add(&e, 0.01, 100.0, 1.0, NULL), MS_OK);
      ck_assert_int_eq(ms_estimator_add(&e, 0.02, 100.0, 1.0, NULL), MS_OK);
      double w = j < ew.n ? ew.v[j] : 10.0;
      double dt = j < ew.n ? 1.0 : et.v[j - ew.n];
      int rc = ms_estimator_add(&e, ex.v[i], w, dt, NULL);
      verdict("ms_estimator_add", rc, 0, NULL, "%a, %a, %a", ex.v[i], w, dt);
      estimator_state(&e, "two samples", ex.v[i], w, dt);
      /* and the opposite extreme next: the spread of the two */
      rc = ms_estimator_add(&e, -ex.v[i], w, dt, NULL);
      verdict("ms_estimator_add", rc, 0, NULL, "then %a, %a, %a", -ex.v[i], w,
              dt);
      estimator_state(&e, "opposite", -ex.v[i], w, dt);
      /* a new sample judged against it: finite whenever judged */
      for (int k = 0; k < ex.n; k++) {
        double z = 0;
        COUNTED("ms_estimator_standardize",
                ms_estimator_standardize(&e, ex.v[k], w, &z), "%a, %a", ex.v[k],
                w);
        VALUE("ms_estimator_standardize", z, "%a, %a", ex.v[k], w);
      }
    }
  /* the change detector at every edge of z, twice each so that an alarm
   * can come; its level stays finite */
  ms_cusum cu = {0};
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < ex.n; i++) {
      unsigned long since = 0;
      COUNTED("ms_cusum_add", ms_cusum_add(&cu, ex.v[i], &since), "%a",
              ex.v[i]);
      VALUE("ms_cusum_level", ms_cusum_level(&cu, NULL), "after %a", ex.v[i]);
    }
}

/* ------------------------------------------------------------------ */
/* Model structs: each double field through its edges                  */
/* ------------------------------------------------------------------ */

/* The services every struct driver starts from. */
#define N_BASES 9
static ms_service_params base_service(int i) {
  ms_service_params s;
  memset(&s, 0, sizeof s);
  ms_failure_model_erlang(&s.model, 10, 10.0, 1.0);
  ms_retry_policy_fixed(&s.policy, 3);
  switch (i) {
  case 0: /* the capacity model */
    ms_failure_model_capacity(&s.model, 100.0);
    s.model.base_failure = 0.01;
    break;
  case 1: /* M/G/c with a cv and a base failure */
    s.model.has_service_time_cv = true;
    s.model.service_time_cv = 2.0;
    s.model.base_failure = 0.01;
    break;
  case 2: /* M/M/c/K, rejections final */
    s.model.has_queue_limit = true;
    s.model.queue_limit = 20;
    s.model.rejections_final = true;
    break;
  case 3: /* a share budget and a token bucket, three nested tiers */
    s.policy.has_budget = true;
    s.policy.retry_budget = 0.1;
    s.policy.has_token = true;
    s.policy.token_ratio = 0.5;
    s.policy.tiers = 3;
    s.policy.nested = 6;
    break;
  case 4:
    ms_policy_defaults(&s.policy, MS_POLICY_GRPC);
    s.policy.grpc_max_tokens = 10;
    s.policy.grpc_token_ratio = 0.1;
    break;
  case 5:
    ms_policy_defaults(&s.policy, MS_POLICY_ENVOY);
    break;
  case 6:
    ms_policy_defaults(&s.policy, MS_POLICY_FINAGLE);
    break;
  case 7:
    ms_policy_defaults(&s.policy, MS_POLICY_AWS);
    break;
  case 8: /* a timeout near its c mu T limit */
    s.model.timeout = MS_MAX_TIMEOUT_COMPLETIONS / 100.0;
    break;
  default: /* M/M/c, 10 servers of 10/s, 1 s timeout, 3 retries */
    break;
  }
  return s;
}

typedef struct {
  const char *name;
  double *(*field)(ms_service_params *s);
  double lo, hi, typical;
} dfield;

#define FIELD(path, lo, hi, typ)                                               \
  { #path, field_##path, lo, hi, typ }
#define FIELD_FN(path, member)                                                 \
  static double *field_##path(ms_service_params *s) { return &s->member; }
FIELD_FN(capacity, model.capacity)
FIELD_FN(service_rate, model.service_rate)
FIELD_FN(timeout, model.timeout)
FIELD_FN(base_failure, model.base_failure)
FIELD_FN(service_time_cv, model.service_time_cv)
FIELD_FN(timeout_spread, model.timeout_spread)
FIELD_FN(retry_budget, policy.retry_budget)
FIELD_FN(token_ratio, policy.token_ratio)
FIELD_FN(grpc_max_tokens, policy.grpc_max_tokens)
FIELD_FN(grpc_token_ratio, policy.grpc_token_ratio)
FIELD_FN(envoy_budget, policy.envoy_budget)
FIELD_FN(envoy_min_concurrency, policy.envoy_min_concurrency)
FIELD_FN(finagle_percent, policy.finagle_percent)
FIELD_FN(finagle_min_per_second, policy.finagle_min_per_second)
FIELD_FN(finagle_ttl, policy.finagle_ttl)
FIELD_FN(aws_capacity, policy.aws_capacity)
FIELD_FN(aws_retry_cost, policy.aws_retry_cost)
FIELD_FN(aws_timeout_cost, policy.aws_timeout_cost)
FIELD_FN(aws_refund, policy.aws_refund)

/* Every double field of ms_failure_model and ms_retry_policy. */
static const dfield service_fields[] = {
    FIELD(capacity, 0, MS_MAX_RATE, 100),
    FIELD(service_rate, 0, MS_MAX_SERVICE_RATE, 10),
    FIELD(timeout, 0, MS_MAX_DURATION, 1),
    FIELD(base_failure, 0, 1, 0.01),
    FIELD(service_time_cv, 0, MS_MAX_SERVICE_TIME_CV, 2),
    FIELD(timeout_spread, 0, MS_MAX_DURATION, 0.5),
    FIELD(retry_budget, 0, 1, 0.1),
    FIELD(token_ratio, 0, 1, 0.5),
    FIELD(grpc_max_tokens, 1, 1000, 10),
    FIELD(grpc_token_ratio, 0, 1, 0.1),
    FIELD(envoy_budget, 0, 1, 0.2),
    FIELD(envoy_min_concurrency, 0, 1e9, 3),
    FIELD(finagle_percent, 0, 10, 0.2),
    FIELD(finagle_min_per_second, 0, MS_MAX_RATE, 10),
    FIELD(finagle_ttl, 1, 60, 10),
    FIELD(aws_capacity, 0, 1e12, 500),
    FIELD(aws_retry_cost, 0, 1e12, 5),
    FIELD(aws_timeout_cost, 0, 1e12, 10),
    FIELD(aws_refund, 0, 1e12, 1),
};
#define N_FIELDS ((int)(sizeof service_fields / sizeof service_fields[0]))

/* The functions of a failure model alone, at a few loads. */
static void model_calls(const ms_failure_model *m, const char *in) {
  int ok = ms_failure_model_check(m, NULL);
  CALLED("ms_failure_model_check", ok, "%s", in);
  COUNTED("ms_failure_model_same", ms_failure_model_same(m, m), "%s", in);
  if (ok != MS_OK)
    return; /* the functions below take a valid model */
  double sat = ms_saturation_load(m), p = NAN, r = NAN;
  VALUE("ms_saturation_load", sat, "%s", in);
  VALUE("ms_effective_timeout", ms_effective_timeout(m), "%s", in);
  VALUE("ms_timeout_longest", ms_timeout_longest(m), "%s", in);
  double h = ms_timeout_horizon(m);
  /* documented: +infinity for the capacity model, which has no timeout */
  if (m->kind != MS_MODEL_CAPACITY || h != INFINITY)
    VALUE("ms_timeout_horizon", h, "%s", in);
  int rc = ms_inflight_capacity(m, &r, NULL);
  verdict("ms_inflight_capacity", rc, OUTS(r), "%s", in);
  const double xs[] = {0, 0.5 * sat, sat, 2 * sat};
  ms_failure_model mr = *m;
  mr.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
  CALLED("ms_sim_fluid_supports", ms_sim_fluid_supports(&mr, NULL),
         "%s, response", in);
  for (int i = 0; i < 4; i++) {
    rc = ms_failure_probability(m, xs[i], &p, NULL);
    verdict("ms_failure_probability", rc, OUTS(p), "%s, x %a", in, xs[i]);
    rc = ms_failure_probability(&mr, xs[i], &p, NULL);
    verdict("ms_failure_probability", rc, OUTS(p), "%s, response, x %a", in,
            xs[i]);
    double lq = NAN, sl = NAN;
    rc = ms_failure_tail(&mr, xs[i], &lq, &sl, NULL);
    verdict("ms_failure_tail", rc, OUTS(lq, sl), "%s, response, x %a", in,
            xs[i]);
    rc = ms_failure_tail(m, xs[i], &lq, &sl, NULL);
    verdict("ms_failure_tail", rc, OUTS(lq, sl), "%s, x %a", in, xs[i]);
    rc = ms_response_tail(m, xs[i], 0.5, &p, NULL);
    verdict("ms_response_tail", rc, OUTS(p), "%s, x %a, H 0.5", in, xs[i]);
  }
  rc = ms_health_check_load(m, 0.5, 0.05, &r, NULL);
  verdict("ms_health_check_load", rc, OUTS(r), "%s, 0.5, 0.05", in);
}

/* The functions of a policy alone. */
static void policy_calls(const ms_retry_policy *pol, const char *in) {
  int ok = ms_retry_policy_check(pol, NULL);
  CALLED("ms_retry_policy_check", ok, "%s", in);
  COUNTED("ms_retry_policy_same", ms_retry_policy_same(pol, pol), "%s", in);
  COUNTED("ms_policy_load_dependent", ms_policy_load_dependent(pol), "%s", in);
  if (ok != MS_OK)
    return;
  VALUE("ms_worst_amplification", ms_worst_amplification(pol), "%s", in);
  COUNTED("ms_policy_tier_retries", ms_policy_tier_retries(pol, 0), "%s", in);
  const double ps[] = {0, 0.5, 1};
  for (int i = 0; i < 3; i++) {
    double A = NAN;
    int rc = ms_amplification(pol, ps[i], &A, NULL);
    verdict("ms_amplification", rc, OUTS(A), "%s, p %g", in, ps[i]);
  }
}

static void landscape_verdict(int rc, const ms_landscape *ls, const char *in) {
  verdict("ms_landscape_build", rc,
          OUTS(ls->saturation_load, ls->tipping_load, ls->recovery_load,
               ls->tipping_effective_load, ls->recovery_effective_load,
               ls->healthy_ceiling),
          "%s", in);
  if (rc != MS_OK)
    return;
  for (int i = 0; i < ls->n_breaks && i <= MS_MAX_EXTREMA; i++)
    verdict("ms_landscape_build", rc, OUTS(ls->break_x[i], ls->break_lambda[i]),
            "%s, break %d", in, i);
}

static void equilibria_verdict(const ms_landscape *ls, double lambda,
                               const char *in) {
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n = 0;
  int rc = ms_equilibria(ls, lambda, eq, &n, NULL);
  verdict("ms_equilibria", rc, 0, NULL, "%s, %a", in, lambda);
  for (int i = 0; rc == MS_OK && i < n && i < MS_MAX_EQUILIBRIA; i++)
    verdict("ms_equilibria", rc,
            OUTS(eq[i].effective_load, eq[i].failure_probability,
                 eq[i].amplification),
            "%s, %a: eq %d", in, lambda, i);
}

/* Every output of a report, and its equilibria, finite. */
static void report_verdict(int rc, const ms_analysis *r, const char *in) {
  verdict("ms_analyze", rc, 0, NULL, "%s", in);
  if (rc != MS_OK)
    return;
  ms_report rep;
  ms_report_of(&rep, r);
  for (int id = 0; id < MS_OUT_COUNT; id++) {
    double v = 0;
    if (ms_report_output(&rep, (ms_output)id, &v))
      verdict("ms_analyze", rc, OUTS(v), "%s: output %s", in,
              ms_output_get((ms_output)id)->name);
  }
  for (int i = 0; i < r->equilibria && i < MS_MAX_EQUILIBRIA; i++)
    verdict("ms_analyze", rc,
            OUTS(r->eq[i].effective_load, r->eq[i].failure_probability,
                 r->eq[i].amplification),
            "%s: eq %d", in, i);
}

static ms_observation typical_observation(double lambda) {
  ms_observation o;
  memset(&o, 0, sizeof o);
  o.offered_load = lambda;
  o.has_observed_attempts = true;
  o.observed_attempts = 1.1 * lambda;
  o.has_observed_failure = true;
  o.observed_failure = 0.05;
  o.interval = 10;
  o.has_queue_length = true;
  o.queue_length = 3;
  return o;
}

static void exact_calls(const ms_service_params *s, double lambda, double x,
                        const char *in) {
  ms_exact_capacity e;
  ms_exact_capacity_init(&e);
  CALLED("ms_exact_capacity_set", ms_exact_capacity_set(&e, s, lambda, NULL),
         "%s, %a", in, lambda);
  ms_exact_capacity_clear(&e);
  double lo = NAN, hi = NAN;
  int rc = ms_exact_certify(s, lambda, x, &lo, &hi, NULL);
  verdict("ms_exact_certify", rc, OUTS(lo, hi), "%s, %a, %a", in, lambda, x);
}

/* The functions of a whole service at typical loads. */
static void service_calls(const ms_service_params *s, const char *in) {
  int ok = ms_service_params_check(s, NULL);
  CALLED("ms_service_params_check", ok, "%s", in);
  ms_sim_config sc;
  ms_sim_config_init(&sc, s);
  verdict("ms_sim_config_init", MS_OK, 0, NULL, "%s", in);
  double v = NAN, sat = ok == MS_OK ? ms_saturation_load(&s->model) : 100;
  int rc = ms_amplification_at(s, 0.5, 0.5 * sat, &v, NULL);
  verdict("ms_amplification_at", rc, OUTS(v), "%s, 0.5, %a", in, 0.5 * sat);
  rc = ms_offered_load_given(s, 0.5 * sat, 0.5, &v, NULL);
  verdict("ms_offered_load_given", rc, OUTS(v), "%s, %a, 0.5", in, 0.5 * sat);
  rc = ms_offered_load_at(s, 0.9 * sat, &v, NULL);
  verdict("ms_offered_load_at", rc, OUTS(v), "%s, %a", in, 0.9 * sat);
  bool found = false;
  rc = ms_failure_onset_load(s, 0.02, sat, &v, &found, NULL);
  verdict("ms_failure_onset_load", rc, OUTS(v), "%s, 0.02, %a", in, sat);
  rc = ms_drain_time(s, 0.3 * sat, 10.0, &v, NULL);
  /* documented: +infinity when the backlog does not drain */
  verdict("ms_drain_time", rc, OUTS(v == INFINITY ? 0 : v), "%s, %a, 10", in,
          0.3 * sat);
  exact_calls(s, 0.5 * sat, 0.6 * sat, in);
  ms_landscape ls;
  rc = ms_landscape_build(s, &ls, NULL);
  landscape_verdict(rc, &ls, in);
  if (ok != MS_OK || rc != MS_OK)
    return;
  int counts = ms_recommend_retry_counts(s);
  VALUE("ms_recommend_retry_counts", (double)counts, "%s", in);
  rc = ms_recommend_retry_recovery(s, counts - 1, &v, NULL);
  verdict("ms_recommend_retry_recovery", rc, OUTS(v), "%s, %d", in, counts - 1);
  bool safe;
  rc = ms_recommend_safe(s, 0.5 * ls.recovery_load, 0.2, &safe, NULL, NULL);
  verdict("ms_recommend_safe", rc, 0, NULL, "%s, %a, 0.2", in,
          0.5 * ls.recovery_load);
  const double loads[] = {0, ls.recovery_load, ls.tipping_load,
                          2 * ls.tipping_load};
  for (int i = 0; i < 4; i++) {
    equilibria_verdict(&ls, loads[i], in);
    ms_observation o = typical_observation(loads[i]);
    ms_analysis r;
    rc = ms_analyze(&ls, &o, &r, NULL);
    report_verdict(rc, &r, in);
  }
}

/* Each double field of each base service through its edges. */
static void drive_service_fields(void) {
  for (int b = 0; b < N_BASES; b++)
    for (int f = 0; f < N_FIELDS; f++) {
      const dfield *d = &service_fields[f];
      edges e = EDGES(d->lo, d->hi, d->typical);
      for (int i = 0; i < e.n; i++) {
        ms_service_params s = base_service(b);
        *d->field(&s) = e.v[i];
        char in[96];
        snprintf(in, sizeof in, "base %d, %s = %a", b, d->name, e.v[i]);
        model_calls(&s.model, in);
        policy_calls(&s.policy, in);
        service_calls(&s, in);
      }
    }
}

/* The scalar double arguments of the service functions, on each base. */
static void service_args(const ms_service_params *s, int b) {
  double sat = ms_saturation_load(&s->model), v = NAN;
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(s, &ls, NULL), MS_OK);
  edges p = EDGES(0.0, 0.5, 1.0);
  edges x = EDGES(0.0, 0.5 * sat, sat, ls.tipping_load, MS_MAX_RATE);
  for (int i = 0; i < x.n; i++) {
    for (int j = 0; j < p.n; j++) {
      int rc = ms_amplification_at(s, p.v[j], x.v[i], &v, NULL);
      verdict("ms_amplification_at", rc, OUTS(v), "base %d, %a, %a", b, p.v[j],
              x.v[i]);
      rc = ms_offered_load_given(s, x.v[i], p.v[j], &v, NULL);
      verdict("ms_offered_load_given", rc, OUTS(v), "base %d, %a, %a", b,
              x.v[i], p.v[j]);
      bool found;
      rc = ms_failure_onset_load(s, p.v[j], x.v[i], &v, &found, NULL);
      verdict("ms_failure_onset_load", rc, OUTS(v), "base %d, %a, %a", b,
              p.v[j], x.v[i]);
      rc = ms_health_check_load(&s->model, x.v[i] / sat, p.v[j], &v, NULL);
      verdict("ms_health_check_load", rc, OUTS(v), "base %d, %a, %a", b,
              x.v[i] / sat, p.v[j]);
      rc = ms_response_tail(&s->model, x.v[i], p.v[j], &v, NULL);
      verdict("ms_response_tail", rc, OUTS(v), "base %d, %a, %a", b, x.v[i],
              p.v[j]);
    }
    int rc = ms_offered_load_at(s, x.v[i], &v, NULL);
    verdict("ms_offered_load_at", rc, OUTS(v), "base %d, %a", b, x.v[i]);
    rc = ms_failure_probability(&s->model, x.v[i], &v, NULL);
    verdict("ms_failure_probability", rc, OUTS(v), "base %d, %a", b, x.v[i]);
    equilibria_verdict(&ls, x.v[i], "base");
    for (int j = 0; j < x.n; j++) {
      rc = ms_drain_time(s, x.v[i], x.v[j], &v, NULL);
      verdict("ms_drain_time", rc, OUTS(v == INFINITY ? 0 : v),
              "base %d, %a, %a", b, x.v[i], x.v[j]);
      if (b == 0)
        exact_calls(s, x.v[i], x.v[j], "base 0");
    }
  }
  edges m = EDGES(0.0, 0.2, MS_RECOMMEND_MAX_MARGIN);
  for (int i = 0; i < x.n; i += 4) {
    for (int j = 0; j < m.n; j++) {
      bool safe;
      double peak = x.v[i];
      int rc = ms_recommend_safe(s, peak, m.v[j], &safe, NULL, NULL);
      CALLED("ms_recommend_safe", rc, "base %d, %a, %a", b, peak, m.v[j]);
    }
  }
}

/* The planners, whose cost is many landscapes: their two doubles one at
 * a time (the other typical). */
static void plan_args(const ms_service_params *s, int b) {
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(s, &ls, NULL), MS_OK);
  double peak = 0.5 * ls.recovery_load;
  edges ep = EDGES(0.0, peak, MS_MAX_RATE);
  edges em = EDGES(0.0, 0.2, MS_RECOMMEND_MAX_MARGIN);
  for (int i = 0; i < ep.n + em.n; i++) {
    double pk = i < ep.n ? ep.v[i] : peak;
    double mg = i < ep.n ? 0.2 : em.v[i - ep.n];
    ms_recommend_answer a;
    int rc = ms_recommend_max_retries(s, pk, mg, &a, NULL);
    verdict("ms_recommend_max_retries", rc,
            OUTS(a.value, a.tipping_load, a.recovery_load), "base %d, %a, %a",
            b, pk, mg);
    rc =
        ms_recommend_knob(s,
                          s->model.kind == MS_MODEL_CAPACITY ? MS_PARAM_CAPACITY
                                                             : MS_PARAM_TIMEOUT,
                          s->model.kind == MS_MODEL_CAPACITY, pk, mg, &a, NULL);
    verdict("ms_recommend_knob", rc,
            OUTS(a.value, a.tipping_load, a.recovery_load), "base %d, %a, %a",
            b, pk, mg);
    rc = ms_recommend_min_servers(s, pk, mg, &a, NULL);
    verdict("ms_recommend_min_servers", rc,
            OUTS(a.value, a.tipping_load, a.recovery_load), "base %d, %a, %a",
            b, pk, mg);
  }
  /* the service an answer describes: each knob's value at its edges */
  static const ms_param ids[] = {MS_PARAM_RETRIES,      MS_PARAM_SERVERS,
                                 MS_PARAM_TIMEOUT,      MS_PARAM_CAPACITY,
                                 MS_PARAM_RETRY_BUDGET, MS_PARAM_AWS_REFUND};
  edges ev = EDGES(0.0, 0.5, 1.0, 3.0, 1e6, MS_MAX_DURATION);
  for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++)
    for (int i = 0; i < ev.n; i++) {
      ms_service_params t = *s;
      int rc = ms_recommend_apply(s, ids[k], ev.v[i], &t, NULL);
      verdict("ms_recommend_apply", rc,
              OUTS((double)t.policy.retries, (double)t.model.servers),
              "base %d, %d, %a", b, (int)ids[k], ev.v[i]);
    }
}

/* ms_analyze: each double of the observation through its edges. */
static void analyze_args(const ms_service_params *s, int b) {
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(s, &ls, NULL), MS_OK);
  double lam = 0.5 * (ls.recovery_load + ls.tipping_load);
  edges e = EDGES(0.0, 1.0, lam, ls.tipping_load, MS_MAX_RATE, MS_MAX_DURATION);
  for (int f = 0; f < 5; f++)
    for (int i = 0; i < e.n; i++) {
      ms_observation o = typical_observation(lam);
      double *field[] = {&o.offered_load, &o.observed_attempts,
                         &o.observed_failure, &o.interval, &o.queue_length};
      *field[f] = e.v[i];
      ms_analysis r;
      char in[64];
      snprintf(in, sizeof in, "base %d, observation field %d = %a", b, f,
               e.v[i]);
      report_verdict(ms_analyze(&ls, &o, &r, NULL), &r, in);
    }
}

/* ------------------------------------------------------------------ */
/* Simulation (sim.h)                                                  */
/* ------------------------------------------------------------------ */

static int sink_verdict(void *ctx, const ms_sim_sample *w) {
  verdict("ms_sim_run sample", MS_OK,
          OUTS(w->time, w->width, w->nominal_offered, w->offered, w->attempts,
               w->retries, w->failures, w->goodput, w->given_up, w->refused,
               w->backlog, w->capacity, w->busy_servers, w->completion_rate,
               w->latency, w->failure_ratio, w->amplification, w->tipping_load,
               w->recovery_load, w->healthy_load, w->collapsed_load),
          "%s", (const char *)ctx);
  return 0;
}

static void summary_verdict(const char *fn, int rc, const ms_sim_summary *u,
                            const char *in) {
  verdict(fn, rc,
          OUTS(u->duration, u->requests, u->attempts, u->retries, u->failures,
               u->successes, u->given_up, u->refused, u->peak_attempts,
               u->amplification, u->peak_backlog, u->storm_time,
               u->first_storm_at, u->trigger_end, u->storm_after_trigger,
               u->storm_ended_at, u->verdict_ended_at, u->draining_time,
               u->settled_at, u->final_offered, u->final_attempts,
               u->final_failure_ratio, u->events),
          "%s", in);
}

/* A short run: 30 s at 60 req/s of 100, a spike of 50 req/s at 10 s. */
static ms_sim_config base_config(void) {
  ms_service_params s = base_service(-1);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.duration = 30;
  c.scenario.offered_load = 60;
  c.scenario.n_triggers = 1;
  ms_trigger *t = &c.scenario.triggers[0];
  memset(t, 0, sizeof *t);
  t->kind = MS_TRIGGER_LOAD;
  t->start = 10;
  t->rise = 1;
  t->hold = 2;
  t->fall = 1;
  t->load = 50;
  c.backoff.kind = MS_BACKOFF_EXPONENTIAL;
  c.backoff.base = 0.1;
  c.backoff.cap = 1;
  c.backoff.multiplier = 2;
  return c;
}

static void sim_calls(const ms_sim_config *c, const char *in) {
  int ok = ms_sim_config_check(c, NULL);
  CALLED("ms_sim_config_check", ok, "%s", in);
  CALLED("ms_backoff_check", ms_backoff_check(&c->backoff, NULL), "%s", in);
  int sok = ms_scenario_check(&c->scenario, &c->service.model, NULL);
  CALLED("ms_scenario_check", sok, "%s", in);
  if (sok == MS_OK) {
    const ms_scenario *sc = &c->scenario;
    VALUE("ms_scenario_trigger_end", ms_scenario_trigger_end(sc), "%s", in);
    edges t = EDGES(0.0, 10.0, 11.5, sc->duration);
    for (int i = 0; i < t.n; i++) {
      ms_failure_model m;
      VALUE("ms_scenario_offered_load", ms_scenario_offered_load(sc, t.v[i]),
            "%s, %a", in, t.v[i]);
      ms_scenario_pool(sc, &c->service.model, t.v[i], &m);
      verdict("ms_scenario_pool", MS_OK, OUTS(m.capacity), "%s, %a", in,
              t.v[i]);
      /* every pair of times: infinite ones, and spans past DBL_MAX
       * (-DBL_MAX to DBL_MAX) gave inf or NaN, as did a subnormal rise */
      for (int j = 0; j < t.n; j++)
        VALUE("ms_scenario_mean_offered_load",
              ms_scenario_mean_offered_load(sc, t.v[i], t.v[j]), "%s, %a, %a",
              in, t.v[i], t.v[j]);
    }
  }
  if (ms_backoff_check(&c->backoff, NULL) == MS_OK)
    for (int k = -1; k <= 3; k++) {
      double mean = NAN;
      VALUE("ms_backoff_ceiling",
            ms_backoff_ceiling(&c->backoff, k < 0 ? 0 : k), "%s, %d", in, k);
      int rc = ms_backoff_mean_delay(&c->backoff, k, &mean, NULL);
      verdict("ms_backoff_mean_delay", rc, OUTS(mean), "%s, %d", in, k);
      double means[3] = {NAN, NAN, NAN};
      rc = ms_backoff_mean_delays(&c->backoff, k, k >= 1 ? means : NULL, NULL);
      verdict("ms_backoff_mean_delays", rc, k >= 1 ? k : 0, means, "%s, %d", in,
              k);
    }
  ms_sim_summary u;
  for (int e = 0; e < 2; e++) {
    if (ok == MS_OK) {
      double bytes = NAN;
      int mrc = ms_sim_memory_estimate((ms_sim_engine)e, c, &bytes, NULL);
      verdict("ms_sim_memory_estimate", mrc, OUTS(bytes), "%s, engine %d", in,
              e);
    }
    int rc =
        ms_sim_run((ms_sim_engine)e, c, sink_verdict, (void *)in, &u, NULL);
    summary_verdict(e ? "ms_sim_des" : "ms_sim_fluid", rc, &u, in);
  }
}

typedef struct {
  const char *name;
  double *(*field)(ms_sim_config *c);
  double lo, hi, typical;
} sfield;
#define SFIELD_FN(path, member)                                                \
  static double *sfield_##path(ms_sim_config *c) { return &c->member; }
SFIELD_FN(budget_window, budget_window)
SFIELD_FN(token_capacity, token_capacity)
SFIELD_FN(sample_interval, sample_interval)
SFIELD_FN(dt, dt)
SFIELD_FN(settle_tolerance, settle_tolerance)
SFIELD_FN(backoff_base, backoff.base)
SFIELD_FN(backoff_cap, backoff.cap)
SFIELD_FN(backoff_multiplier, backoff.multiplier)
SFIELD_FN(duration, scenario.duration)
SFIELD_FN(offered_load, scenario.offered_load)
SFIELD_FN(start, scenario.triggers[0].start)
SFIELD_FN(rise, scenario.triggers[0].rise)
SFIELD_FN(hold, scenario.triggers[0].hold)
SFIELD_FN(fall, scenario.triggers[0].fall)
SFIELD_FN(load, scenario.triggers[0].load)
SFIELD_FN(trigger_capacity, scenario.triggers[0].capacity)
#define SFIELD(path, lo, hi, typ)                                              \
  { #path, sfield_##path, lo, hi, typ }
static const sfield sim_fields[] = {
    SFIELD(budget_window, 0, MS_SIM_MAX_DURATION, 10),
    SFIELD(token_capacity, 1, MS_SIM_MAX_TOKENS, 100),
    SFIELD(sample_interval, 0, MS_SIM_MAX_DURATION, 1),
    SFIELD(dt, 0, 1, 0.05),
    SFIELD(settle_tolerance, 0, 1, 0.02),
    SFIELD(backoff_base, 0, MS_BACKOFF_MAX, 0.1),
    SFIELD(backoff_cap, 0, MS_BACKOFF_MAX, 1),
    SFIELD(backoff_multiplier, 1, MS_BACKOFF_MAX_MULTIPLIER, 2),
    SFIELD(duration, 0, MS_SIM_MAX_DURATION, 30),
    SFIELD(offered_load, 0, 100, 60),
    SFIELD(start, 0, MS_SIM_MAX_DURATION, 10),
    SFIELD(rise, 0, MS_SIM_MAX_DURATION, 1),
    SFIELD(hold, 0, MS_SIM_MAX_DURATION, 2),
    SFIELD(fall, 0, MS_SIM_MAX_DURATION, 1),
    SFIELD(load, -100, 100, 50),
    SFIELD(trigger_capacity, 0, 100, 50),
};

/* Each double of the configuration through its edges (the fluid and the
 * discrete-event engine run each accepted one).  The edges of a long run
 * (a duration, a load up to MS_SIM_MAX_DURATION, MS_SIM_MAX_RATE) are
 * left out of the edge set of the engines: they are valid and slow. */
static void drive_sim(void) {
  for (size_t f = 0; f < sizeof sim_fields / sizeof sim_fields[0]; f++) {
    const sfield *d = &sim_fields[f];
    edges e = EDGES(d->lo, d->hi, d->typical);
    for (int i = 0; i < e.n; i++) {
      ms_sim_config c = base_config();
      *d->field(&c) = e.v[i];
      if (d->field == sfield_trigger_capacity)
        c.scenario.triggers[0].kind = MS_TRIGGER_SERVERS;
      char in[96];
      snprintf(in, sizeof in, "config %s = %a", d->name, e.v[i]);
      if (e.v[i] > 3600 && e.v[i] <= MS_SIM_MAX_DURATION)
        continue; /* a valid long run: minutes of the engines */
      sim_calls(&c, in);
    }
  }
  edges cv = EDGES(0.0, 1.0, MS_MAX_SERVICE_TIME_CV);
  for (int i = 0; i < cv.n; i++)
    for (int d = -1; d <= 3; d++)
      CALLED("ms_service_dist_check",
             ms_service_dist_check((ms_service_dist)d, cv.v[i], NULL), "%d, %a",
             d, cv.v[i]);
  for (int k = -1; k <= MS_SIM_VALUE_KINDS; k++) {
    edges v = EDGES(0.0, 1.0, MS_SIM_MAX_DURATION, MS_SIM_MAX_RATE);
    for (int i = 0; i < v.n; i++)
      CALLED("ms_sim_value_check",
             ms_sim_value_check((ms_sim_value)k, "v", v.v[i], NULL), "%d, %a",
             k, v.v[i]);
  }
}

/* The searches of fluid runs: their doubles one at a time, at a load in
 * the band (60 req/s of a recovery load of about 30). */
static void drive_sim_searches(void) {
  ms_sim_config c = base_config();
  c.scenario.duration = 60;
  edges h = EDGES(0.0, 1.0, 30.0);
  for (int i = 0; i < h.n; i++)
    for (int j = 0; j < 3; j++) {
      double lo = j == 0 ? h.v[i] : 0, hi = j == 1 ? h.v[i] : 30;
      double tol = j == 2 ? h.v[i] : 0.1, th = NAN;
      int rc = ms_sim_latch_threshold(MS_ENGINE_FLUID, &c, 0, lo, hi, tol, &th,
                                      NULL);
      verdict("ms_sim_latch_threshold", rc, OUTS(th), "%a, %a, %a", lo, hi,
              tol);
    }
  ms_tolerance_query q;
  memset(&q, 0, sizeof q);
  q.kind = MS_TRIGGER_LOAD;
  q.spike_load = 50;
  q.rel_tol = 0.1;
  q.max_hold = 60;
  edges e = EDGES(0.0, 0.1, 0.5, 50.0, 60.0, 86400.0);
  for (int f = 0; f < 4; f++)
    for (int i = 0; i < e.n; i++) {
      ms_tolerance_query r = q;
      double hold = 1;
      double *field[] = {&r.spike_load, &r.rel_tol, &r.max_hold, &hold};
      *field[f] = e.v[i];
      if (f > 1 && e.v[i] > 60 && e.v[i] <= 86400)
        continue; /* a valid long search */
      ms_tolerance t;
      int rc = ms_trigger_tolerance(&c, &r, &t, NULL);
      verdict(
          "ms_trigger_tolerance", rc,
          OUTS(t.tolerance, t.latch, t.resolution, t.lead_in, t.horizon, t.dt),
          "query field %d = %a", f, e.v[i]);
      /* the same through either engine's entry (the DES's search itself
       * is driven by tests/check_sim.c and tests/cli/test_tolerance.py) */
      rc = ms_tolerance_run(&c, &r, &t, NULL);
      verdict("ms_tolerance_run", rc, OUTS(t.tolerance, t.latch, t.resolution),
              "query field %d = %a", f, e.v[i]);
      bool latched;
      rc = ms_tolerance_probe(&c, &r, hold, &latched, NULL, NULL);
      CALLED("ms_tolerance_probe", rc, "query field %d = %a", f, e.v[i]);
      /* --engine auto's estimate and pick: no simulation */
      ms_tolerance_cost k;
      rc = ms_tolerance_des_cost(&c, &r, &k, NULL);
      verdict("ms_tolerance_des_cost", rc, OUTS(k.per_probe, k.requests),
              "query field %d = %a", f, e.v[i]);
      ms_tolerance_pick_result p;
      rc = ms_tolerance_pick(&c, &r, &p, NULL);
      verdict("ms_tolerance_pick", rc, OUTS(p.cost.requests, p.budget),
              "query field %d = %a", f, e.v[i]);
    }
}

/* ------------------------------------------------------------------ */
/* The public headers, parsed: every function must have a row          */
/* ------------------------------------------------------------------ */

/* A function of the public headers: driven by `driver` (which may drive
 * others too, through `by`), or taking no double, for `reason`. */
typedef struct {
  const char *name;
  const char *by; /* the driver that calls it */
  const char *reason;
} row;

#define DRIVEN(name, by)                                                       \
  { #name, by, NULL }
#define NO_DOUBLE(name, why)                                                   \
  { #name, NULL, why }
static const row functions[] = {
    NO_DOUBLE(ms_version, "no argument"),
    NO_DOUBLE(ms_status_name, "an int"),
    DRIVEN(ms_format_against, "param_check"),
    DRIVEN(ms_erlang_ln_b, "erlang"),
    DRIVEN(ms_erlang_ln_c, "erlang"),
    DRIVEN(ms_erlang, "erlang"),
    DRIVEN(ms_erlang_ln_b_recursive, "erlang"),
    DRIVEN(ms_ln_wait_tail, "wait_tails"),
    DRIVEN(ms_ln_wait_tail_erlangs, "wait_tails"),
    DRIVEN(ms_ln_response_tail, "wait_tails"),
    DRIVEN(ms_mmck_ln_block, "mmck_block"),
    DRIVEN(ms_mmck_ln_wait_tail, "wait_tails"),
    DRIVEN(ms_mmck_ln_response_tail, "wait_tails"),
    DRIVEN(ms_failure_model_same, "service_fields"),
    DRIVEN(ms_retry_policy_same, "service_fields"),
    DRIVEN(ms_policy_tier_retries, "service_fields"),
    DRIVEN(ms_policy_load_dependent, "service_fields"),
    NO_DOUBLE(ms_policy_name, "an enum"),
    NO_DOUBLE(ms_policy_defaults, "sets fields, reads no double"),
    NO_DOUBLE(ms_aws_costs_name, "an enum"),
    NO_DOUBLE(ms_aws_costs_find, "a name"),
    NO_DOUBLE(ms_aws_costs_defaults, "sets fields, reads no double"),
    NO_DOUBLE(ms_param_get, "an enum"),
    NO_DOUBLE(ms_param_find, "a string"),
    NO_DOUBLE(ms_param_range, "an enum and a buffer"),
    DRIVEN(ms_param_check, "param_check"),
    NO_DOUBLE(ms_policy_params, "an enum"),
    NO_DOUBLE(ms_policy_field, "an enum; returns a pointer"),
    DRIVEN(ms_failure_model_capacity, "constructors"),
    DRIVEN(ms_failure_model_erlang, "constructors"),
    NO_DOUBLE(ms_retry_policy_fixed, "an int"),
    DRIVEN(ms_failure_model_check, "service_fields"),
    DRIVEN(ms_retry_policy_check, "service_fields"),
    DRIVEN(ms_service_params_check, "service_fields"),
    DRIVEN(ms_effective_timeout, "service_fields"),
    DRIVEN(ms_timeout_longest, "service_fields"),
    DRIVEN(ms_saturation_load, "service_fields"),
    DRIVEN(ms_failure_probability, "service_fields, service_args"),
    DRIVEN(ms_failure_tail, "service_fields"),
    DRIVEN(ms_sim_fluid_supports, "service_fields"),
    NO_DOUBLE(ms_timeout_covers_name, "an enum"),
    NO_DOUBLE(ms_timeout_covers_from_name, "a string"),
    DRIVEN(ms_amplification, "service_fields"),
    DRIVEN(ms_amplification_at, "service_fields, service_args"),
    DRIVEN(ms_offered_load_given, "service_fields, service_args"),
    DRIVEN(ms_offered_load_at, "service_fields, service_args"),
    DRIVEN(ms_landscape_build, "service_fields"),
    DRIVEN(ms_equilibria, "service_fields, service_args"),
    DRIVEN(ms_response_tail, "service_fields, service_args"),
    DRIVEN(ms_health_check_load, "service_fields, service_args"),
    DRIVEN(ms_failure_onset_load, "service_fields, service_args"),
    DRIVEN(ms_inflight_capacity, "service_fields"),
    DRIVEN(ms_worst_amplification, "service_fields"),
    DRIVEN(ms_recommend_safe, "service_fields, service_args"),
    DRIVEN(ms_recommend_recovery_safe, "probabilities"),
    DRIVEN(ms_recommend_retry_counts, "service_fields"),
    DRIVEN(ms_recommend_retry_recovery, "service_fields"),
    DRIVEN(ms_recommend_max_retries, "plan_args"),
    DRIVEN(ms_recommend_knob, "plan_args"),
    DRIVEN(ms_recommend_min_servers, "plan_args"),
    DRIVEN(ms_recommend_apply, "plan_args"),
    NO_DOUBLE(ms_state_name, "an enum"),
    NO_DOUBLE(ms_state_storm, "an enum"),
    NO_DOUBLE(ms_output_get, "an enum"),
    NO_DOUBLE(ms_output_find, "a string"),
    DRIVEN(ms_report_output, "service_fields, analyze_args (reports made)"),
    NO_DOUBLE(ms_report_of, "copies an analysis, reads no double"),
    DRIVEN(ms_beyond_noise, "probabilities"),
    DRIVEN(ms_timeout_horizon, "service_fields"),
    DRIVEN(ms_drain_time, "service_fields, service_args"),
    DRIVEN(ms_estimator_init, "estimator"),
    DRIVEN(ms_estimator_add, "estimator"),
    DRIVEN(ms_estimator_get, "estimator"),
    DRIVEN(ms_estimator_effective_samples, "estimator"),
    DRIVEN(ms_failure_residual, "probabilities"),
    DRIVEN(ms_estimator_standardize, "estimator"),
    DRIVEN(ms_cusum_add, "estimator"),
    NO_DOUBLE(ms_cusum_level, "reads a detector"),
    DRIVEN(ms_wilson_interval, "statistics"),
    DRIVEN(ms_sort_doubles, "statistics"),
    DRIVEN(ms_quantile_sorted, "statistics"),
    DRIVEN(ms_analyze, "service_fields, analyze_args"),
    NO_DOUBLE(ms_backoff_name, "an enum"),
    NO_DOUBLE(ms_backoff_from_name, "a string"),
    NO_DOUBLE(ms_backoff_multiplies, "an enum"),
    DRIVEN(ms_backoff_check, "sim"),
    DRIVEN(ms_backoff_ceiling, "sim"),
    DRIVEN(ms_backoff_mean_delay, "sim"),
    DRIVEN(ms_backoff_mean_delays, "sim"),
    NO_DOUBLE(ms_service_dist_name, "an enum"),
    NO_DOUBLE(ms_service_dist_from_name, "a string"),
    DRIVEN(ms_service_dist_check, "sim"),
    DRIVEN(ms_sim_value_check, "sim"),
    DRIVEN(ms_scenario_check, "sim"),
    DRIVEN(ms_scenario_offered_load, "sim"),
    DRIVEN(ms_scenario_mean_offered_load, "sim"),
    DRIVEN(ms_scenario_pool, "sim"),
    DRIVEN(ms_scenario_trigger_end, "sim"),
    DRIVEN(ms_sim_config_init, "service_fields"),
    DRIVEN(ms_sim_config_check, "sim"),
    NO_DOUBLE(ms_sim_engine_name, "an enum"),
    DRIVEN(ms_sim_fluid, "sim (through ms_sim_run)"),
    DRIVEN(ms_sim_des, "sim (through ms_sim_run)"),
    DRIVEN(ms_sim_run, "sim"),
    DRIVEN(ms_sim_memory_estimate, "sim"),
    DRIVEN(ms_sim_latch_threshold, "sim_searches"),
    NO_DOUBLE(ms_tolerance_kind_name, "an enum"),
    DRIVEN(ms_trigger_tolerance, "sim_searches"),
    DRIVEN(ms_tolerance_probe, "sim_searches"),
    DRIVEN(ms_tolerance_run, "sim_searches"),
    DRIVEN(ms_tolerance_des_cost, "sim_searches"),
    DRIVEN(ms_tolerance_pick, "sim_searches"),
    NO_DOUBLE(ms_exact_capacity_init, "no double"),
    NO_DOUBLE(ms_exact_capacity_clear, "no double"),
    DRIVEN(ms_exact_capacity_set, "service_fields, service_args"),
    NO_DOUBLE(ms_exact_check, "exact numbers only"),
    NO_DOUBLE(ms_exact_parse, "a string"),
    NO_DOUBLE(ms_exact_map, "exact numbers only"),
    NO_DOUBLE(ms_exact_sign, "exact numbers only"),
    NO_DOUBLE(ms_exact_enclose, "exact numbers only"),
    NO_DOUBLE(ms_exact_fixed_point, "exact numbers only"),
    DRIVEN(ms_exact_certify, "service_fields, service_args"),
    NO_DOUBLE(ms_analysis_certify,
              "an analysis of ms_analyze; no double given"),
    NO_DOUBLE(ms_exact_digits, "an integer"),
    NO_DOUBLE(ms_exact_iterate, "exact numbers only"),
};
#define N_ROWS ((int)(sizeof functions / sizeof functions[0]))

static const row *row_of(const char *name) {
  for (int i = 0; i < N_ROWS; i++)
    if (strcmp(functions[i].name, name) == 0)
      return &functions[i];
  return NULL;
}

/* The text of a header without its comments and preprocessor lines. */
static char *header_text(const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  static char raw[1 << 20];
  size_t n = fread(raw, 1, sizeof raw - 1, f);
  fclose(f);
  raw[n] = '\0';
  char *out = calloc(n + 1, 1), *o = out;
  ck_assert_ptr_nonnull(out);
  bool line_start = true;
  for (const char *s = raw; *s;) {
    if (s[0] == '/' && s[1] == '*') {
      const char *e = strstr(s + 2, "*/");
      s = e ? e + 2 : s + strlen(s);
      *o++ = ' ';
    } else if (s[0] == '/' && s[1] == '/') {
      s += strcspn(s, "\n");
    } else if (line_start && *s == '#') {
      while (*s && !(s[0] == '\n' && s[-1] != '\\'))
        s++;
    } else {
      line_start = *s == '\n' || (line_start && isspace((unsigned char)*s));
      *o++ = *s++;
    }
  }
  return out;
}

/* Each declaration at file scope of the form `... ms_name(params);`: its
 * row must exist, and a row without a driver must take no double. */
static int check_header(const char *path, int *seen) {
  char *text = header_text(path);
  int found = 0, depth = 0;
  char *start = text;
  for (char *s = text; *s; s++) {
    if (*s == '{') {
      /* extern "C" { opens no scope that matters */
      if (!(s - start >= 3 && strstr(start, "extern") != NULL))
        depth++;
      start = s + 1;
    } else if (*s == '}') {
      depth -= depth > 0;
      start = s + 1;
    } else if (*s == ';') {
      *s = '\0';
      char *paren = strchr(start, '(');
      while (*start && isspace((unsigned char)*start))
        start++;
      if (depth == 0 && paren && strncmp(start, "typedef", 7) != 0) {
        char *e = paren;
        while (e > start && isspace((unsigned char)e[-1]))
          e--;
        char *b = e;
        while (b > start && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
          b--;
        char name[64] = "";
        snprintf(name, sizeof name, "%.*s", (int)(e - b), b);
        if (strncmp(name, "ms_", 3) == 0) {
          found++;
          const row *r = row_of(name);
          ck_assert_msg(r != NULL, "%s: %s has no row in check_edges.c", path,
                        name);
          seen[r - functions] = 1;
          ck_assert_msg(r->by != NULL || strstr(paren, "double") == NULL,
                        "%s: %s takes a double but has no driver", path, name);
        }
      }
      start = s + 1;
    }
  }
  free(text);
  return found;
}

START_TEST(test_every_function_has_a_row) {
  int seen[N_ROWS] = {0}, found = 0;
  char list[] = MS_PUBLIC_HEADERS;
  for (char *h = strtok(list, " "); h; h = strtok(NULL, " ")) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", MS_TOP_SRCDIR, h);
    found += check_header(path, seen);
  }
  for (int i = 0; i < N_ROWS; i++)
    ck_assert_msg(seen[i], "%s has a row but is not in the public headers",
                  functions[i].name);
  int driven = 0;
  for (int i = 0; i < N_ROWS; i++)
    driven += functions[i].by != NULL;
  fprintf(stderr, "check_edges: %d public functions, %d driven\n", found,
          driven);
  ck_assert_int_eq(found, N_ROWS);
}
END_TEST

static void drive_constructors(void) {
  edges e =
      EDGES(0.0, 1.0, 10.0, MS_MAX_RATE, MS_MAX_SERVICE_RATE, MS_MAX_DURATION);
  for (int i = 0; i < e.n; i++)
    for (int j = 0; j < 3; j++) {
      ms_failure_model m;
      char in[64];
      snprintf(in, sizeof in, "constructor %d, %a", j, e.v[i]);
      if (j == 0)
        ms_failure_model_capacity(&m, e.v[i]);
      else
        ms_failure_model_erlang(&m, 10, j == 1 ? e.v[i] : 10.0,
                                j == 2 ? e.v[i] : 1.0);
      verdict(j ? "ms_failure_model_erlang" : "ms_failure_model_capacity",
              MS_OK, 0, NULL, "%s", in);
      model_calls(&m, in);
    }
}

/* One test per driver; each fails with every call that failed listed. */
#define EDGE_TEST(driver)                                                      \
  START_TEST(test_##driver) {                                                  \
    calls = failures = 0;                                                      \
    drive_##driver();                                                          \
    fprintf(stderr, "check_edges: %s: %ld calls, %ld failed\n", #driver,       \
            calls, failures);                                                  \
    ck_assert_msg(failures == 0, "%ld of %ld calls failed", failures, calls);  \
  }                                                                            \
  END_TEST

static void drive_service_args(void) {
  for (int b = 0; b < N_BASES; b++) {
    ms_service_params s = base_service(b);
    service_args(&s, b);
    analyze_args(&s, b);
  }
}

static void drive_plan_args(void) {
  for (int b = 0; b < N_BASES; b++) {
    ms_service_params s = base_service(b);
    plan_args(&s, b);
  }
}

EDGE_TEST(erlang)
EDGE_TEST(wait_tails)
EDGE_TEST(mmck_block)
EDGE_TEST(param_check)
EDGE_TEST(probabilities)
EDGE_TEST(statistics)
EDGE_TEST(estimator)
EDGE_TEST(constructors)
EDGE_TEST(service_fields)
EDGE_TEST(service_args)
EDGE_TEST(plan_args)
EDGE_TEST(sim)
EDGE_TEST(sim_searches)

/* One case per driver, so that CK_RUN_CASE=sim runs one. */
static void add_case(Suite *s, const char *name, const TTest *t) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, t);
  suite_add_tcase(s, tc);
}
#define ADD(name) add_case(s, #name, test_##name)

int main(void) {
  Suite *s = suite_create("edges");
  add_case(s, "rows", test_every_function_has_a_row);
  ADD(erlang);
  ADD(wait_tails);
  ADD(mmck_block);
  ADD(param_check);
  ADD(probabilities);
  ADD(statistics);
  ADD(estimator);
  ADD(constructors);
  ADD(service_fields);
  ADD(service_args);
  ADD(plan_args);
  ADD(sim);
  ADD(sim_searches);
  return ms_check_run(srunner_create(s));
}
