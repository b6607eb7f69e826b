/* SPDX-License-Identifier: MIT */
/*
 * The M/M/c/K queue (model/mmck.c) against independent references: the
 * 50-digit sums over states of tools/gen_mmck.py, Erlang B for K = 0 (the
 * fast path below c, the exact O(c) recursion at and above it), and the
 * M/M/c limits of a long queue.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_suites.h"
#include "internal.h"
#include "testutil.h"

typedef struct {
  long c, K;
  double mu, x, T, ln_block, ln_wait;
  bool has_wait;
  int line;
} mmck_row;

static bool mmck_row_of(const char *line, int lineno, void *row) {
  mmck_row *x = row;
  x->line = lineno;
  int used = 0;
  int got = sscanf(line, "%ld,%ld,%lf,%lf,%lf,%lf,%n", &x->c, &x->K, &x->mu,
                   &x->x, &x->T, &x->ln_block, &used);
  if (got != 6 || used == 0)
    return false;
  x->has_wait = sscanf(line + used, "%lf", &x->ln_wait) == 1;
  return true;
}

static size_t read_mmck_csv(mmck_row **rows) {
  return test_data_rows("mmck_reference.csv", "servers", sizeof **rows,
                        mmck_row_of, (void **)rows);
}

/* What the tests allow: 1e-12 up to c + K = 10^4, 1e-10 beyond, where the
 * doubles tau = c mu T and x T carry a rounding that the tail's slope in
 * them (about K) multiplies. */
static double required(long c, long K) {
  return c + K <= 10000 ? 1e-12 : 1e-10;
}

START_TEST(test_reference) {
  mmck_row *rows;
  size_t n = read_mmck_csv(&rows);
  double worst_b[2] = {0, 0}, worst_w[2] = {0, 0};
  size_t worst_bi[2] = {0, 0}, worst_wi[2] = {0, 0}, summed = 0;
  for (size_t i = 0; i < n; i++) {
    const mmck_row *r = &rows[i];
    ms_error err;
    double lb, lw;
    ck_assert_int_eq(ms_mmck_ln_block(r->c, r->K, r->x / r->mu, &lb, &err),
                     MS_OK);
    ck_assert_int_eq(
        ms_mmck_ln_wait_tail(r->c, r->K, r->mu, r->x, r->T, &lw, &err), MS_OK);
    int cls = r->c + r->K <= 10000 ? 0 : 1;
    double eb = ln_value_error(lb, r->ln_block);
    ck_assert_msg(eb <= required(r->c, r->K),
                  "line %d: c=%ld K=%ld x=%.17g: ln P_block %.17g (ref %.17g), "
                  "error %.3g",
                  r->line, r->c, r->K, r->x, lb, r->ln_block, eb);
    if (eb > worst_b[cls]) {
      worst_b[cls] = eb;
      worst_bi[cls] = i;
    }
    if (!r->has_wait) {
      ck_assert(lw == -DBL_MAX); /* K = 0: no admitted arrival waits */
      continue;
    }
    ms_mmck_terms t;
    ms_mmck_terms_unchecked(r->c, r->K, r->mu, r->x, r->T, &t);
    summed += t.wait_terms > 0;
    double ew = ln_value_error(lw, r->ln_wait);
    ck_assert_msg(ew <= required(r->c, r->K),
                  "line %d: c=%ld K=%ld x=%.17g T=%.17g: ln wait %.17g (ref "
                  "%.17g), error %.3g (%ld terms)",
                  r->line, r->c, r->K, r->x, r->T, lw, r->ln_wait, ew,
                  t.wait_terms);
    if (ew > worst_w[cls]) {
      worst_w[cls] = ew;
      worst_wi[cls] = i;
    }
  }
  for (int cls = 0; cls < 2; cls++)
    printf("mmck_reference.csv: c + K %s 10^4: worst relative error of "
           "blocking %.2e (line %d), of the wait tail %.2e (line %d)\n",
           cls ? ">" : "<=", worst_b[cls], rows[worst_bi[cls]].line,
           worst_w[cls], rows[worst_wi[cls]].line);
  printf("mmck_reference.csv: %zu rows, %zu wait tails summed near rho = 1\n",
         n, summed);
  free(rows);
}
END_TEST

/* K = 0 is the loss system: P_block = B(c, a), for a below c against the
 * fast Erlang B, at and above c against the exact recursion. */
START_TEST(test_loss_system) {
  const long cs[] = {1, 2, 10, 39, 40, 41, 100, 1000, 10000, 100000};
  const double rhos[] = {0.01, 0.5, 0.9, 0.999, 1.0,   1.001,
                         1.2,  1.6, 1.7, 3.0,   100.0, 1e6};
  double worst = 0.0;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
    for (size_t j = 0; j < sizeof rhos / sizeof rhos[0]; j++) {
      long c = cs[i];
      double a = rhos[j] * (double)c, lb, ref;
      ck_assert_int_eq(ms_mmck_ln_block(c, 0, a, &lb, NULL), MS_OK);
      if (a < (double)c)
        ck_assert_int_eq(ms_erlang_ln_b(c, a, &ref, NULL), MS_OK);
      else
        ck_assert_int_eq(ms_erlang_ln_b_recursive(c, a, &ref, NULL), MS_OK);
      double e = ln_value_error(lb, ref);
      ck_assert_msg(e <= 1e-12, "c=%ld a=%.17g: ln P %.17g vs ln B %.17g (%g)",
                    c, a, lb, ref, e);
      worst = fmax(worst, e);
    }
  printf("M/M/c/c against Erlang B: worst relative error %.2e\n", worst);
}
END_TEST

/* A long queue below saturation is the M/M/c queue: the wait tail tends to
 * C(c, a) e^(-(c mu - x) T) and P_block to C (1 - rho) rho^K, both to a
 * relative O(rho^K), far below rounding at K = 10^7. */
START_TEST(test_long_queue) {
  const long cs[] = {1, 10, 100, 10000, 1000000};
  const double rhos[] = {0.1, 0.5, 0.9, 0.99, 0.995};
  const double mu = 2.0;
  const long K = MS_MAX_QUEUE_LIMIT;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
    for (size_t j = 0; j < sizeof rhos / sizeof rhos[0]; j++) {
      long c = cs[i];
      double x = rhos[j] * (double)c * mu;
      double T = 3.0 / ((double)c * mu * (1.0 - rhos[j]));
      double lw, ref, lb, lc;
      ck_assert_int_eq(ms_mmck_ln_wait_tail(c, K, mu, x, T, &lw, NULL), MS_OK);
      ck_assert_int_eq(ms_ln_wait_tail(c, mu, x, T, &ref, NULL), MS_OK);
      ck_assert_msg(ln_value_error(lw, ref) <= 1e-12,
                    "c=%ld rho=%g: ln wait %.17g vs M/M/c %.17g", c, rhos[j],
                    lw, ref);
      ck_assert_int_eq(ms_mmck_ln_block(c, K, x / mu, &lb, NULL), MS_OK);
      ck_assert_int_eq(ms_erlang_ln_c(c, x / mu, &lc, NULL), MS_OK);
      double lref = lc + log1p(-rhos[j]) + (double)K * log(rhos[j]);
      ck_assert_msg(fabs(lb - lref) <= 1e-12 * fabs(lref),
                    "c=%ld rho=%g: ln P_block %.17g vs %.17g", c, rhos[j], lb,
                    lref);
    }
}
END_TEST

/* The cost: the closed form everywhere but a band around x = c mu, where
 * the sum over Poisson terms stays within 40 sqrt(min(K, c mu T)) + 40
 * terms, at the largest pool and queue too. */
START_TEST(test_cost_bounded) {
  const long cs[] = {1, 1000, 10000000};
  const long Ks[] = {1, 100, 10000, 10000000};
  const double taus[] = {0.01, 1.0, 100.0};
  const double gaps[] = {-1e-2, -1e-4, -1e-7, 0.0, 1e-7, 1e-4, 1e-2};
  long most = 0;
  for (size_t i = 0; i < 3; i++)
    for (size_t k = 0; k < 4; k++)
      for (size_t t = 0; t < 3; t++)
        for (size_t g = 0; g < 7; g++) {
          long c = cs[i], K = Ks[k];
          double mu = 1.0, cmu = (double)c * mu;
          double T = taus[t] * (double)K / cmu, x = cmu * (1.0 + gaps[g]);
          ms_mmck_terms tm;
          ms_mmck_terms_unchecked(c, K, mu, x, T, &tm);
          double bound = 40.0 * sqrt(fmin((double)K, cmu * T)) + 40.0;
          ck_assert_msg((double)tm.wait_terms <= bound,
                        "c=%ld K=%ld tau=%g gap=%g: %ld terms > %g", c, K,
                        cmu * T, gaps[g], tm.wait_terms, bound);
          ck_assert(isfinite(tm.ln_wait) && tm.ln_wait <= 0.0);
          ck_assert(isfinite(tm.ln_block) && tm.ln_block <= 0.0);
          if (tm.wait_terms > most)
            most = tm.wait_terms;
        }
  printf("M/M/c/K wait tail: at most %ld terms summed (c up to 10^7, K up to "
         "10^7)\n",
         most);
}
END_TEST

/* The domain: each argument outside it is refused. */
START_TEST(test_domain) {
  double v;
  ms_error err;
  ck_assert_int_eq(ms_mmck_ln_block(0, 1, 1.0, &v, &err), MS_EINVAL);
  ck_assert_int_eq(ms_mmck_ln_block(1, -1, 1.0, &v, &err), MS_EINVAL);
  ck_assert_int_eq(ms_mmck_ln_block(1, MS_MAX_QUEUE_LIMIT + 1, 1.0, &v, &err),
                   MS_EINVAL);
  ck_assert_int_eq(ms_mmck_ln_block(1, 1, 0.0, &v, &err), MS_EINVAL);
  ck_assert_int_eq(ms_mmck_ln_block(1, 1, NAN, &v, &err), MS_EINVAL);
  ck_assert_int_eq(ms_mmck_ln_wait_tail(1, 1, 0.0, 1.0, 1.0, &v, &err),
                   MS_EINVAL);
  ck_assert_int_eq(ms_mmck_ln_wait_tail(1, 1, 1.0, 1.0, -1.0, &v, &err),
                   MS_EINVAL);
  ck_assert_int_eq(ms_mmck_ln_wait_tail(1, 1, 1.0, 1.0, 1e16, &v, &err),
                   MS_EINVAL);
  ck_assert_int_eq(ms_mmck_ln_wait_tail(1, 1, 1.0, INFINITY, 1.0, &v, &err),
                   MS_EINVAL);
  /* x / mu past MS_MAX_RATE, or overflowing with a subnormal mu: the
   * response's mode was NaN, cast to long (fuzz_model_fast, corpus
   * crash-mmck-traffic-overflow.bin) */
  const double mus[] = {1.2e-322, 1e-311};
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(
        ms_mmck_ln_wait_tail(4, 20, mus[i], 6e-10, 5e-13, &v, &err), MS_EINVAL);
    ck_assert_int_eq(
        ms_mmck_ln_response_tail(4, 20, mus[i], 6e-10, 5e-13, &v, &err),
        MS_EINVAL);
  }
  /* either side of x / mu = MS_MAX_RATE */
  ck_assert_int_eq(ms_mmck_ln_wait_tail(4, 20, 1e-290, 1e9, 1.0, &v, &err),
                   MS_OK);
  ck_assert_int_eq(ms_mmck_ln_response_tail(4, 20, 1e-290, 1e9, 1.0, &v, &err),
                   MS_OK);
  ck_assert_int_eq(ms_mmck_ln_wait_tail(4, 20, 1e-290, 1e11, 1.0, &v, &err),
                   MS_EINVAL);
}
END_TEST

/* A subnormal service rate: rho = x / (c mu) overflowed and c mu T
 * underflowed to 0, so the response's mode was inf x 0, NaN, cast to long
 * (fuzz_model_fast, corpus crash-mmck-response-mode-nan.bin).  The model
 * now refuses a service rate below 1 / MS_MAX_DURATION, the reciprocal of
 * service_time's range (model/loop.h), as the service file does. */
START_TEST(test_subnormal_rate) {
  ms_failure_model m;
  ms_failure_model_erlang(&m, 1, 8.28905e-317, 1.4920973387269794e-154);
  m.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
  m.has_queue_limit = true;
  m.queue_limit = 25;
  const double xs[] = {60000687.85157071, 5.0, 9.5};
  for (int i = 0; i < 3; i++) {
    double p = -1;
    ms_error err;
    ck_assert_int_eq(ms_failure_probability(&m, xs[i], &p, &err), MS_EINVAL);
    ck_assert_msg(strstr(err.msg, "service_rate") != NULL &&
                      strstr(err.msg, "at least 1e-300") != NULL,
                  "%s", err.msg);
  }
  m.service_rate = 1e-300; /* the smallest accepted: p is 1 */
  double p;
  ck_assert_int_eq(ms_failure_probability(&m, 5.0, &p, NULL), MS_OK);
  ck_assert_msg(p == 1.0, "p %.17g", p);
}
END_TEST

/* ---- the queue-limited failure model and its landscape ---- */

/* p_retry(x) as the test composes it from the public M/M/c/K functions:
 * 1 - p = (1 - P_block)(1 - base)(1 - W), p_retry = p, or p - P_block when
 * rejections end the request. */
static double brute_p_retry(const ms_failure_model *m, double x) {
  double lb, lw;
  ck_assert_int_eq(ms_mmck_ln_block(m->servers, m->queue_limit,
                                    x / m->service_rate, &lb, NULL),
                   MS_OK);
  ck_assert_int_eq(ms_mmck_ln_wait_tail(m->servers, m->queue_limit,
                                        m->service_rate, x, m->timeout, &lw,
                                        NULL),
                   MS_OK);
  double block = exp(lb), wait = exp(lw);
  double p = 1.0 - (1.0 - block) * (1.0 - m->base_failure) * (1.0 - wait);
  return m->rejections_final ? p - block : p;
}

/* lambda(x) = x / A(p_retry)^k with A = 1 + p + ... + p^r. */
static double brute_lambda(const ms_service_params *s, double x) {
  double p = brute_p_retry(&s->model, x), A = 0.0, pw = 1.0;
  for (int i = 0; i <= s->policy.retries; i++, pw *= p)
    A += pw;
  return x / pow(A, (double)s->policy.tiers);
}

/* Refine an extremum of the scan bracketed by [lo, hi] by golden-section
 * search on brute_lambda (a maximum when sign = 1, a minimum for -1). */
static void refine_extremum(const ms_service_params *s, double lo, double hi,
                            double sign, double *x_out, double *l_out) {
  const double g = 0.5 * (sqrt(5.0) - 1.0);
  double a = lo, b = hi;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = sign * brute_lambda(s, x1), f2 = sign * brute_lambda(s, x2);
  for (int i = 0; i < 200 && b - a > 1e-15 * b; i++) {
    if (f1 > f2) {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - g * (b - a);
      f1 = sign * brute_lambda(s, x1);
    } else {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + g * (b - a);
      f2 = sign * brute_lambda(s, x2);
    }
  }
  *x_out = f1 > f2 ? x1 : x2;
  *l_out = sign * fmax(f1, f2);
}

typedef struct {
  long c, K;
  double mu, T, base;
  int retries, tiers;
  bool final;
} queue_case;

/* The dense scan: 200,000 points log-spaced over x from 10^-3 to 10^6 c mu
 * (Delta ln x = 1e-4); its local maxima and minima against the landscape's
 * breakpoints, and the number of equilibria at loads between them. */
static void check_queue_landscape(const queue_case *qc) {
  ms_service_params s;
  memset(&s, 0, sizeof s);
  ms_failure_model_erlang(&s.model, qc->c, qc->mu, qc->T);
  s.model.base_failure = qc->base;
  s.model.has_queue_limit = true;
  s.model.queue_limit = qc->K;
  s.model.rejections_final = qc->final;
  ms_retry_policy_fixed(&s.policy, qc->retries);
  s.policy.tiers = qc->tiers;
  ms_landscape ls;
  ms_error err;
  ck_assert_msg(ms_landscape_build(&s, &ls, &err) == MS_OK, "%s", err.msg);
  const int N = 200000;
  double cmu = (double)qc->c * qc->mu;
  double ext_x[16], ext_l[16];
  int n_ext = 0;
  double l_prev2 = 0.0, l_prev = 0.0, x_prev = 0.0, x_prev2 = 0.0;
  for (int i = 0; i < N; i++) {
    double x = cmu * exp(log(1e-3) + (log(1e9) * i) / (N - 1));
    double l = brute_lambda(&s, x);
    bool is_max = l_prev > l_prev2 && l_prev >= l;
    if (i >= 2 && n_ext < 16 && (is_max || (l_prev < l_prev2 && l_prev <= l))) {
      refine_extremum(&s, x_prev2, x, is_max ? 1.0 : -1.0, &ext_x[n_ext],
                      &ext_l[n_ext]);
      n_ext++;
    }
    l_prev2 = l_prev;
    l_prev = l;
    x_prev2 = x_prev;
    x_prev = x;
  }
  ck_assert_msg(n_ext == ls.n_breaks - 1,
                "c=%ld K=%ld T=%g final=%d: %d extrema by the scan, %d by the "
                "landscape",
                qc->c, qc->K, qc->T, qc->final, n_ext, ls.n_breaks - 1);
  for (int i = 0; i < n_ext; i++) {
    double rel = fabs(ls.break_lambda[i + 1] - ext_l[i]) / ext_l[i];
    ck_assert_msg(rel <= 1e-9,
                  "c=%ld K=%ld: extremum %d at x=%.10g lambda=%.12g, scan "
                  "x=%.10g lambda=%.12g",
                  qc->c, qc->K, i, ls.break_x[i + 1], ls.break_lambda[i + 1],
                  ext_x[i], ext_l[i]);
    ck_assert_msg(fabs(ls.break_x[i + 1] - ext_x[i]) <= 1e-4 * ext_x[i],
                  "c=%ld K=%ld: extremum %d at x=%.10g, scan x=%.10g", qc->c,
                  qc->K, i, ls.break_x[i + 1], ext_x[i]);
  }
  if (n_ext >= 2) {
    ck_assert_msg(ls.has_fold &&
                      fabs(ls.tipping_load - ext_l[0]) <= 1e-9 * ext_l[0],
                  "tipping %.12g vs scan %.12g", ls.tipping_load, ext_l[0]);
    ck_assert(fabs(ls.recovery_load - ext_l[1]) <= 1e-9 * ext_l[1]);
    /* inside the band three equilibria, each a root of the scan's lambda */
    double lam = 0.5 * (ls.tipping_load + ls.recovery_load);
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n;
    ck_assert_int_eq(ms_equilibria(&ls, lam, eq, &n, &err), MS_OK);
    ck_assert_int_eq(n, 3);
    for (int i = 0; i < n; i++) {
      double l = brute_lambda(&s, eq[i].effective_load);
      ck_assert_msg(fabs(l - lam) <= 1e-9 * lam,
                    "equilibrium %d at x=%.12g: lambda %.15g, not %.15g", i,
                    eq[i].effective_load, l, lam);
    }
    ck_assert(eq[2].effective_load > eq[1].effective_load);
  }
  printf("queue_limit %ld (c=%ld, mu=%g, T=%g, %d retries x %d, rejections "
         "%s): tipping %.10g, recovery %.10g req/s (%d extrema)\n",
         qc->K, qc->c, qc->mu, qc->T, qc->retries, qc->tiers,
         qc->final ? "final" : "retried", ls.tipping_load, ls.recovery_load,
         n_ext);
}

START_TEST(test_queue_landscape) {
  const queue_case cases[] = {
      {10, 20, 10.0, 0.2, 0.0, 3, 1, false},
      {10, 20, 10.0, 0.2, 0.0, 3, 1, true},
      {30, 300, 10.0, 1.0, 0.0, 3, 1, false},
      {30, 300, 10.0, 1.0, 0.0, 3, 1, true},
      {30, 30, 10.0, 1.0, 0.01, 3, 1, false},
      {1, 5, 1.0, 2.0, 0.01, 2, 2, false},
      {1000, 100, 1.0, 0.05, 0.0, 2, 1, false},
      {1000, 100, 1.0, 0.05, 0.0, 2, 1, true},
      {10, 0, 10.0, 0.2, 0.0, 3, 1, false},
      {100, 100000, 1.0, 50.0, 0.0, 3, 1, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_queue_landscape(&cases[i]);
}
END_TEST

/* A Richardson-extrapolated central difference of p (retried: p_retry) in
 * ln x, steps h and h/2: error O(h^4). */
static double richardson(const ms_failure_model *m, double x, double h,
                         bool retried) {
  double d[2];
  for (int i = 0; i < 2; i++, h *= 0.5) {
    ms_failure_eval lo, hi;
    ms_failure_eval_at(m, x * exp(-h), &lo);
    ms_failure_eval_at(m, x * exp(h), &hi);
    d[i] = retried ? (hi.p_retry - lo.p_retry) / (2.0 * h)
                   : (hi.p - lo.p) / (2.0 * h);
  }
  return (4.0 * d[1] - d[0]) / 3.0;
}

/* The slopes x p' and x p'_retry of ms_failure_eval_at against a
 * Richardson-extrapolated difference of p itself taken in the test, from
 * below to far above c mu; and a queue limit refused with the capacity
 * model. */
START_TEST(test_failure_slope) {
  ms_failure_model m;
  ms_failure_model_erlang(&m, 30, 10.0, 1.0);
  m.has_queue_limit = true;
  double worst = 0.0;
  const long Ks[] = {3, 300, 100000};
  /* no base failure with the long queue, whose p is then tiny below c mu
   * and keeps its digits for the test's difference */
  const double bases[] = {0.01, 0.01, 0.0};
  for (int k = 0; k < 3; k++)
    for (int fin = 0; fin < 2; fin++) {
      m.queue_limit = Ks[k];
      m.base_failure = bases[k];
      m.rejections_final = fin;
      for (double r = 0.9; r < 30.0; r *= 1.0123) {
        double x = 300.0 * r, h = 0x1p-6 / ((double)Ks[k] + 1.0);
        ms_failure_eval f;
        ms_failure_eval_at(&m, x, &f);
        double xdp = richardson(&m, x, h, false);
        double xdr = richardson(&m, x, h, true);
        /* where 1 - p is below 1e-6 the test's difference of p is
         * rounding: there the slopes are compared in absolute terms */
        double e1 = 1.0 - f.p < 1e-6
                        ? 1e-2 * fabs(f.xdp - xdp)
                        : fabs(f.xdp - xdp) / fmax(fabs(xdp), 1e-3 * f.p);
        double e2 = 1.0 - f.p_retry < 1e-6
                        ? 1e-2 * fabs(f.xdp_retry - xdr)
                        : fabs(f.xdp_retry - xdr) / fmax(fabs(xdr), 1e-3 * f.p);
        ck_assert_msg(e1 <= 1e-6 && e2 <= 1e-6,
                      "K=%ld x=%.10g final=%d: x p' %.10g vs %.10g, retried "
                      "%.10g vs %.10g",
                      Ks[k], x, fin, f.xdp, xdp, f.xdp_retry, xdr);
        worst = fmax(worst, fmax(e1, e2));
        if (!fin)
          ck_assert(f.p_retry == f.p && f.xdp_retry == f.xdp);
        else
          ck_assert(f.p_retry <= f.p);
      }
    }
  printf("x p' of the queue-limited model: within %.2e of the "
         "extrapolated difference of p\n",
         worst);
  ms_failure_model cap;
  ms_failure_model_capacity(&cap, 100.0);
  cap.has_queue_limit = true;
  cap.queue_limit = 10;
  ms_error err;
  ck_assert_int_eq(ms_failure_model_check(&cap, &err), MS_EINVAL);
  ck_assert_msg(strstr(err.msg, "erlang") != NULL, "%s", err.msg);
  m.queue_limit = MS_MAX_QUEUE_LIMIT + 1;
  ck_assert_int_eq(ms_failure_model_check(&m, &err), MS_EINVAL);
}
END_TEST

/* The response's tail P(W + S > T | admitted) against the 40-digit sums
 * over states of tools/mmck_response_reference.py, which integrate the
 * wait's Gamma density against the service's exponential tail rather than
 * thinning the completions as model/mmck.c does. */
typedef struct {
  long c, K;
  double mu, x, T, ln_resp;
  int line;
} resp_row;

static bool resp_row_of(const char *line, int lineno, void *row) {
  resp_row *x = row;
  x->line = lineno;
  return sscanf(line, "%ld,%ld,%lf,%lf,%lf,%lf", &x->c, &x->K, &x->mu, &x->x,
                &x->T, &x->ln_resp) == 6;
}

START_TEST(test_response_reference) {
  resp_row *rows;
  size_t n = test_data_rows("mmck_response.csv", "servers", sizeof *rows,
                            resp_row_of, (void **)&rows);
  ck_assert_uint_ge(n, 600);
  double worst = 0.0;
  int worst_line = 0;
  for (size_t i = 0; i < n; i++) {
    const resp_row *r = &rows[i];
    double lr, lw;
    ms_error err;
    ck_assert_int_eq(
        ms_mmck_ln_response_tail(r->c, r->K, r->mu, r->x, r->T, &lr, &err),
        MS_OK);
    ck_assert_int_eq(
        ms_mmck_ln_wait_tail(r->c, r->K, r->mu, r->x, r->T, &lw, &err), MS_OK);
    double e = ln_value_error(lr, r->ln_resp);
    ck_assert_msg(e <= 1e-12,
                  "line %d: c=%ld K=%ld x=%.17g T=%.17g: ln P(R > T) %.17g "
                  "(ref %.17g), error %.3g",
                  r->line, r->c, r->K, r->x, r->T, lr, r->ln_resp, e);
    ck_assert_msg(lr >= lw, "line %d: the response's tail below the wait's",
                  r->line);
    if (e > worst) {
      worst = e;
      worst_line = r->line;
    }
  }
  printf("mmck_response.csv: %zu rows, worst relative error %.2e (line %d)\n",
         n, worst, worst_line);
  free(rows);
}
END_TEST

/* A long queue below saturation tends to the M/M/c response (the rest is
 * O(rho^K)); K = 0 is the service alone, e^(-mu T). */
START_TEST(test_response_limits) {
  const long cs[] = {1, 2, 10, 100};
  const double rhos[] = {0.3, 0.9}, Ts[] = {0.5, 5.0, 50.0};
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 2; j++)
      for (size_t k = 0; k < 3; k++) {
        long c = cs[i];
        double mu = 2.0, x = rhos[j] * (double)c * mu, T = Ts[k], lr, ref;
        ck_assert_int_eq(
            ms_mmck_ln_response_tail(c, 10000, mu, x, T, &lr, NULL), MS_OK);
        ck_assert_int_eq(ms_ln_response_tail(c, mu, x, T, 1.0, &ref, NULL),
                         MS_OK);
        double e = ln_value_error(lr, ref);
        ck_assert_msg(e <= 1e-11, "c=%ld x=%g T=%g: %.17g vs M/M/c %.17g", c, x,
                      T, lr, ref);
        ck_assert_int_eq(ms_mmck_ln_response_tail(c, 0, mu, x, T, &lr, NULL),
                         MS_OK);
        ck_assert(lr == -mu * T);
      }
}
END_TEST

/* A large pool under a light load: almost every arrival is served at
 * once, and the response tail is the service's, e^(-mu T), to far below a
 * rounding (the waiting states weigh less than (a / c)^c).  ln G is then
 * of order c ln(c / a), up to 3e9, and the tail was once read as the
 * difference of two such logs: 2.3e-7 off at c = 4,140,350 (found by
 * fuzz_model_fast), 1.8e-8 at c = 655,897. */
START_TEST(test_response_light_load) {
  const long cs[] = {1000, 655897, 4140350, 10000000}, Ks[] = {1, 19, 1000};
  const double mu_ts[] = {3.5700e-6, 0.006, 1.0},
               as[] = {1e-300, 1e-100, 1e-8, 1.0};
  for (size_t i = 0; i < 4; i++)
    for (size_t k = 0; k < 3; k++)
      for (size_t u = 0; u < 3; u++)
        for (size_t j = 0; j < 4; j++) {
          double mu = 0.5, T = mu_ts[u] / mu, x = as[j] * mu, lr;
          ck_assert_int_eq(
              ms_mmck_ln_response_tail(cs[i], Ks[k], mu, x, T, &lr, NULL),
              MS_OK);
          double e = ln_value_error(lr, -mu * T);
          ck_assert_msg(e <= 1e-14,
                        "c=%ld K=%ld a=%g mu T=%g: %.17g, error %.3g", cs[i],
                        Ks[k], as[j], mu_ts[u], lr, e);
        }
}
END_TEST

/* The response's cost: the wait's sum and its own, each at most about
 * 40 sqrt(min(K, tau)) + 40 terms, at c and K up to 10^7 and tau up to
 * 10^15 (a start at the wrong mode once cost 9 million terms). */
START_TEST(test_response_cost) {
  const long cs[] = {1, 10, 10000000}, Ks[] = {1, 100000, 10000000};
  const double rhos[] = {0.5, 1.0, 1.001, 10.0}, taus[] = {1.0, 1e6, 1e15};
  long most = 0;
  for (size_t i = 0; i < 3; i++)
    for (size_t k = 0; k < 3; k++)
      for (size_t r = 0; r < 4; r++)
        for (size_t u = 0; u < 3; u++) {
          long c = cs[i], K = Ks[k];
          ms_mmck_terms t;
          ms_mmck_response_terms_unchecked(c, K, 1.0, rhos[r] * (double)c,
                                           taus[u] / (double)c, &t);
          double bound =
              2.0 * (40.0 * sqrt(fmin((double)K, taus[u])) + 40.0) + 2.0;
          ck_assert_msg((double)t.wait_terms <= bound,
                        "c=%ld K=%ld rho=%g tau=%g: %ld terms", c, K, rhos[r],
                        taus[u], t.wait_terms);
          ck_assert(t.ln_wait <= 0.0 && t.ln_wait >= -DBL_MAX);
          if (t.wait_terms > most)
            most = t.wait_terms;
        }
  printf("M/M/c/K response tail: at most %ld terms summed\n", most);
}
END_TEST

/* Large K and c mu T (K up to 10^6, tau up to 10^6, c from 10 to 1000),
 * where the wait's sum and the response's closed form and sum are long or
 * cancel: against tools/mmck_large_reference.py, 34-digit sums over all
 * c + K states with the per-state tails by recurrences.  The references
 * are those of the binary arguments and c mu is exact (mu = 1/2), so 1e-12
 * is allowed, not required()'s 1e-10: a closed form that cancelled once
 * erred by 1.04e-12 here. */
typedef struct {
  long c, K;
  double mu, x, T, ln_wait, ln_resp;
  int line;
} large_row;

static bool large_row_of(const char *line, int lineno, void *row) {
  large_row *x = row;
  x->line = lineno;
  return sscanf(line, "%ld,%ld,%lf,%lf,%lf,%lf,%lf", &x->c, &x->K, &x->mu,
                &x->x, &x->T, &x->ln_wait, &x->ln_resp) == 7;
}

START_TEST(test_large_reference) {
  large_row *rows;
  size_t n = test_data_rows("mmck_large.csv", "servers", sizeof *rows,
                            large_row_of, (void **)&rows);
  ck_assert_uint_ge(n, 45);
  double worst[2] = {0.0, 0.0};
  int worst_line[2] = {0, 0};
  size_t closed = 0;
  for (size_t i = 0; i < n; i++) {
    const large_row *r = &rows[i];
    ms_mmck_terms w, s;
    ms_mmck_terms_unchecked(r->c, r->K, r->mu, r->x, r->T, &w);
    ms_mmck_response_terms_unchecked(r->c, r->K, r->mu, r->x, r->T, &s);
    closed += s.wait_terms == 0;
    double e[2] = {ln_value_error(w.ln_wait, r->ln_wait),
                   ln_value_error(s.ln_wait, r->ln_resp)};
    for (int k = 0; k < 2; k++) {
      ck_assert_msg(e[k] <= 1e-12,
                    "line %d: c=%ld K=%ld x=%.17g T=%.17g: ln %s tail %.17g "
                    "(ref %.17g), error %.3g",
                    r->line, r->c, r->K, r->x, r->T,
                    k == 0 ? "wait" : "response",
                    k == 0 ? w.ln_wait : s.ln_wait,
                    k == 0 ? r->ln_wait : r->ln_resp, e[k]);
      if (e[k] > worst[k]) {
        worst[k] = e[k];
        worst_line[k] = r->line;
      }
    }
  }
  /* the response's closed form away from rho = 1 and rho = r */
  ck_assert_uint_ge(closed, 10);
  printf("mmck_large.csv: %zu rows, worst relative error of the wait tail "
         "%.2e (line %d), of the response tail %.2e (line %d); %zu responses "
         "in closed form\n",
         n, worst[0], worst_line[0], worst[1], worst_line[1], closed);
  free(rows);
}
END_TEST

Suite *mmck_suite(void) {
  Suite *s = suite_create("mmck");
  TCase *tc = tcase_create("mmck");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_reference);
  tcase_add_test(tc, test_response_reference);
  tcase_add_test(tc, test_response_limits);
  tcase_add_test(tc, test_response_light_load);
  tcase_add_test(tc, test_large_reference);
  tcase_add_test(tc, test_response_cost);
  tcase_add_test(tc, test_loss_system);
  tcase_add_test(tc, test_long_queue);
  tcase_add_test(tc, test_cost_bounded);
  tcase_add_test(tc, test_domain);
  tcase_add_test(tc, test_subnormal_rate);
  tcase_add_test(tc, test_queue_landscape);
  tcase_add_test(tc, test_failure_slope);
  suite_add_tcase(s, tc);
  return s;
}
