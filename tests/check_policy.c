/* SPDX-License-Identifier: MIT */
/*
 * The retry policies' closed forms (doc/design.md §1.2) against what each
 * must be independently of the code: the telescoping identity of nested
 * tiers, their limits, gRPC throttling's sharp-switch limit and its
 * midpoint, the AWS quota's balance, the caps of Finagle's and Envoy's
 * budgets where the failure probability is 1, the hold time's limits, and
 * the elasticity against a numerical derivative of lambda(x).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/internal.h"
#include "check_suites.h"
#include "testutil.h"

/* 1 + p + ... + p^n, summed directly (n may be large). */
static double geometric(double p, long n) {
  double s = 0.0, t = 1.0;
  for (long i = 0; i <= n; i++, t *= p)
    s += t;
  return s;
}

static ms_service_params erlang(long c, double mu, double T, int r) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, c, mu, T);
  ms_retry_policy_fixed(&s.policy, r);
  return s;
}

static ms_retry_policy uniform(int r, int k, bool nested) {
  ms_retry_policy p;
  ms_retry_policy_fixed(&p, r);
  p.tiers = k;
  p.nested = nested ? ((1u << k) - 1u) & ~1u : 0u;
  return p;
}

/* k nested tiers of r retries are one tier of (r + 1)^k - 1 retries; k
 * independent tiers are A^k; both reach (r + 1)^k at p = 1 and 1 at 0. */
START_TEST(test_nested_telescopes) {
  const int rs[] = {1, 2, 3, 5};
  const double ps[] = {0.0, 1e-6, 0.05, 0.3, 0.5, 0.9, 0.999, 1.0};
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
    for (int k = 1; k <= 4; k++)
      for (size_t j = 0; j < sizeof ps / sizeof ps[0]; j++) {
        int r = rs[i];
        double p = ps[j], A, B;
        ms_retry_policy nested = uniform(r, k, true);
        ms_retry_policy indep = uniform(r, k, false);
        ck_assert_int_eq(ms_amplification(&nested, p, &A, NULL), MS_OK);
        ck_assert_int_eq(ms_amplification(&indep, p, &B, NULL), MS_OK);
        long n = lround(pow(r + 1.0, k)) - 1;
        double want = geometric(p, n);
        ck_assert_msg(fabs(A - want) <= 1e-13 * want,
                      "r=%d k=%d p=%g: nested %.17g, one tier of %ld %.17g", r,
                      k, p, A, n, want);
        double wi = pow(geometric(p, r), k);
        ck_assert_msg(fabs(B - wi) <= 1e-13 * wi, "independent %.17g %.17g", B,
                      wi);
        if (p == 1.0)
          ck_assert(A == (double)(n + 1) && B == (double)(n + 1));
      }
  /* the example: at p = 0.5, 4 tiers of 3 nested are 2.0 attempts,
   * not 12.4 */
  double A;
  ms_retry_policy p4 = uniform(3, 4, true);
  ms_amplification(&p4, 0.5, &A, NULL);
  ck_assert(fabs(A - 2.0) < 1e-4);
  p4 = uniform(3, 4, false);
  ms_amplification(&p4, 0.5, &A, NULL);
  ck_assert(fabs(A - pow(1.875, 4)) < 1e-12 && A > 12.3);
}
END_TEST

/* Past 64 retries the fixed count is summed in closed form: against the
 * direct sum in long double, and its slope against the lambda(x) it gives
 * (test_elasticity_matches_lambda covers the slope for small counts). */
START_TEST(test_many_retries) {
  ms_retry_policy pol;
  ms_retry_policy_fixed(&pol, MS_MAX_RETRIES);
  double worst = 0;
  for (int i = 0; i <= 4096; i++) {
    double p = i / 4096.0, A;
    ck_assert_int_eq(ms_amplification(&pol, p, &A, NULL), MS_OK);
    long double sum = 0, t = 1;
    for (int k = 0; k <= MS_MAX_RETRIES; k++, t *= p)
      sum += t;
    worst = fmax(worst, fabs(A - (double)sum) / (double)sum);
  }
  ck_assert_msg(worst < 2e-15, "worst relative error %.3g", worst);
  ms_service_params s = erlang(30, 10, 1, MS_MAX_RETRIES);
  for (double rho = 0.9; rho < 0.99999; rho += 0.00731) {
    double x = rho * 300.0, h = 1e-6 * x, l1, l0;
    ms_point pt;
    ms_point_eval(&s, x, &pt);
    ms_offered_load_at(&s, x + h, &l1, NULL);
    ms_offered_load_at(&s, x - h, &l0, NULL);
    double num = 1.0 - (log(l1) - log(l0)) / (log(x + h) - log(x - h));
    ck_assert_msg(fabs(pt.elast - num) <= 1e-4 * (1 + fabs(num)),
                  "x=%g E=%.12g numerical %.12g", x, pt.elast, num);
  }
}
END_TEST

/* Mixed tiers: tier 0 (2 retries) under tier 1 (3 retries, nested) under
 * tier 2 (1 retry, independent): A = A_2(p) A_3(p^3) A_1(p). */
START_TEST(test_mixed_tiers) {
  ms_retry_policy pol = uniform(2, 3, false);
  pol.has_tier_retries = true;
  pol.tier_retries[1] = 3;
  pol.tier_retries[2] = 1;
  pol.nested = 2u;
  for (double p = 0.0; p <= 1.0; p += 0.125) {
    double A;
    ck_assert_int_eq(ms_amplification(&pol, p, &A, NULL), MS_OK);
    double want = geometric(p, 2) * geometric(p * p * p, 3) * geometric(p, 1);
    ck_assert_msg(fabs(A - want) <= 1e-14 * want, "p=%g %.17g %.17g", p, A,
                  want);
  }
}
END_TEST

static ms_retry_policy grpc(int r, double M, double t) {
  ms_retry_policy p;
  ms_retry_policy_fixed(&p, r);
  ms_policy_defaults(&p, MS_POLICY_GRPC);
  p.grpc_max_tokens = M;
  p.grpc_token_ratio = t;
  return p;
}

/* gRFC A6: retries are on while successes refill faster than failures
 * drain (p < t / (1 + t)) and off above; the switch is sharp for a large
 * bucket, and at the balance point half the decisions find the bucket above
 * half. */
START_TEST(test_grpc_switch) {
  double A, t = 0.1, pstar = t / (1 + t);
  ms_retry_policy g = grpc(4, 1000, t);
  ms_amplification(&g, 0.05, &A, NULL);
  ck_assert_msg(fabs(A - geometric(0.05, 4)) < 1e-12, "%.17g", A);
  ms_amplification(&g, 0.2, &A, NULL);
  ck_assert_msg(fabs(A - 1.0) < 1e-12, "%.17g", A);
  /* at the balance the count is uniform on [0, M]: the share above
   * M/2 + 1 (a decision follows its failure's decrement) is 1/2 - 1/M */
  ms_amplification(&g, pstar, &A, NULL);
  ck_assert_msg(fabs(A - geometric(pstar * (0.5 - 1.0 / 1000), 4)) < 1e-12,
                "%.17g", A);
  g = grpc(4, 2, t); /* 2 tokens: after its decrement never above 1 */
  ms_amplification(&g, 0.001, &A, NULL);
  ck_assert(A == 1.0);
  /* the example, 10 tokens: 1.000 where the share formula of the
   * token bucket says 1.087 */
  g = grpc(4, 10, t);
  ms_amplification(&g, 0.2, &A, NULL);
  ck_assert_msg(A > 1.0 && A < 1.001, "%.17g", A);
  ms_retry_policy tb;
  ms_retry_policy_fixed(&tb, 4);
  tb.has_token = true;
  tb.token_ratio = t;
  ms_amplification(&tb, 0.2, &A, NULL);
  ck_assert(fabs(A - 1.0 / (1 - 0.1 * 0.8)) < 1e-12 && A > 1.086);
  /* monotone in the bucket size on each side of the switch */
  double prev_lo = 0, prev_hi = 1e9;
  for (double M = 4; M <= 1000; M *= 2) {
    double lo, hi;
    g = grpc(4, M, t);
    ms_amplification(&g, 0.07, &lo, NULL);
    ms_amplification(&g, 0.12, &hi, NULL);
    ck_assert(lo >= prev_lo && hi <= prev_hi);
    prev_lo = lo;
    prev_hi = hi;
  }
}
END_TEST

/* The AWS quota: below the balance the count rules; above, retries are let
 * through as refunds arrive, R = refund (1 - p) / (cost p), with the
 * capacity model's failures costing retry_cost: 14 in the SDK's current
 * costs, 5 in the older ones. */
START_TEST(test_aws_balance) {
  ms_retry_policy a;
  ms_retry_policy_fixed(&a, 2);
  ms_policy_defaults(&a, MS_POLICY_AWS);
  const double ps[] = {0.01, 0.1, 0.15, 0.2, 0.3, 0.6, 0.9, 1.0};
  for (int legacy = 0; legacy < 2; legacy++) {
    if (legacy)
      ms_aws_costs_defaults(&a, MS_AWS_COSTS_LEGACY);
    double cost = legacy ? 5.0 : 14.0;
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
      double p = ps[i], A;
      ck_assert_int_eq(ms_amplification(&a, p, &A, NULL), MS_OK);
      double fixed = geometric(p, 2) - 1.0, quota = (1 - p) / (cost * p);
      double want = 1.0 + fmin(fixed, quota);
      ck_assert_msg(fabs(A - want) < 1e-14, "p=%g %.17g %.17g", p, A, want);
    }
  }
}
END_TEST

/* A refund far below the costs: the refunds pay for every admitted retry
 * (a p cost <= (1 - p) refund), so 1 <= A <= 1 + (1 - p) refund /
 * (cost p) per tier; the levels overflowed into NaN from a refund 1e-100
 * of the cost on (fuzz_model_fast, corpus crash-aws-tiny-refund-nan.bin). */
START_TEST(test_aws_tiny_refund) {
  const double refunds[] = {1e-10, 1e-20, 1e-60, 1e-100, 1e-300, 2.78e-313};
  const double ps[] = {0.01, 0.25, 0.9};
  for (int i = 0; i < 6; i++)
    for (int share = 0; share < 2; share++)
      for (int j = 0; j < 3; j++) {
        ms_retry_policy a;
        ms_retry_policy_fixed(&a, 3);
        a.tiers = 1 + share;
        ms_policy_defaults(&a, MS_POLICY_AWS);
        a.aws_refund = refunds[i];
        a.aws_throttling_share = 0.5 * share;
        double p = ps[j], A;
        ck_assert_int_eq(ms_amplification(&a, p, &A, NULL), MS_OK);
        /* the throttling cost, 5, is the cheapest */
        double bound = (1 - p) * refunds[i] / (5.0 * p);
        double top = pow(1.0 + bound, a.tiers);
        ck_assert_msg(A >= 1.0 && A <= top * (1 + 1e-15),
                      "refund %g share %d p %g: A %.17g, bound %.17g",
                      refunds[i], share, p, A, top);
      }
  /* the fuzzer's policy: two tiers, every cost tiny, the refund subnormal */
  ms_retry_policy f;
  ms_retry_policy_fixed(&f, 1);
  f.tiers = 2;
  f.has_tier_retries = true;
  f.tier_retries[1] = 2;
  ms_policy_defaults(&f, MS_POLICY_AWS);
  f.aws_capacity = 6128.544920619704;
  f.aws_retry_cost = 2.345276112282946e-12;
  f.aws_timeout_cost = 1.0943627825692209e-13;
  f.aws_refund = 2.77981449883e-313;
  f.aws_throttling_cost = 5.1246024680148355e-15;
  f.aws_throttling_share = 8.203124862211553e-13;
  double A;
  ck_assert_int_eq(ms_amplification(&f, 1.0156250002364686e-13, &A, NULL),
                   MS_OK);
  ck_assert_msg(A == 1.0, "A %.17g", A);
}
END_TEST

/* One row of tests/data/aws_quota.csv (tools/aws_quota_sim.py): the AWS
 * SDK's quota simulated, retries per request one request at a time and
 * with 100 in flight. */
typedef struct {
  int line, retries;
  double retry_cost, timeout_cost, throttling_cost, w, th, p;
  double seq, seq_se, con, con_se;
} aws_row;

static bool aws_row_of(const char *line, int lineno, void *row) {
  aws_row *x = row;
  x->line = lineno;
  return sscanf(line, "%d,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &x->retries,
                &x->retry_cost, &x->timeout_cost, &x->throttling_cost, &x->w,
                &x->th, &x->p, &x->seq, &x->seq_se, &x->con, &x->con_se) == 11;
}

/* The model's retries per request against the SDK's algorithm simulated:
 * within 4 standard errors and 3 % of the simulation one request at a
 * time, and 8 % with 100 in flight (a retry's cost is then away from the
 * bucket while it runs, which starves the dear retries a little more:
 * doc/design.md §1.2).  The cheap and dear retries of a mix pass at
 * different rates, which a mean cost misses by up to half. */
START_TEST(test_aws_against_sdk) {
  aws_row *rows;
  size_t n = test_data_rows("aws_quota.csv", "retries", sizeof *rows,
                            aws_row_of, (void **)&rows);
  ck_assert_uint_ge(n, 60);
  double worst_seq = 0.0, worst_con = 0.0, worst_mean = 0.0;
  for (size_t i = 0; i < n; i++) {
    const aws_row *r = &rows[i];
    ms_retry_policy a;
    ms_retry_policy_fixed(&a, r->retries);
    ms_policy_defaults(&a, MS_POLICY_AWS);
    a.aws_retry_cost = r->retry_cost;
    a.aws_timeout_cost = r->timeout_cost;
    a.aws_throttling_cost = r->throttling_cost;
    a.aws_throttling_share = r->th;
    double A, dA;
    ms_tier_amplification(&a, r->retries, r->p, 1.0 - r->p, r->w, &A, &dA);
    double R = A - 1.0;
    double e_seq = R / r->seq - 1.0, e_con = R / r->con - 1.0;
    ck_assert_msg(fabs(R - r->seq) <= 4.0 * r->seq_se + 0.03 * r->seq,
                  "aws_quota.csv:%d: model %.5f, SDK one at a time %.5f "
                  "+- %.5f",
                  r->line, R, r->seq, r->seq_se);
    ck_assert_msg(fabs(R - r->con) <= 4.0 * r->con_se + 0.08 * r->con,
                  "aws_quota.csv:%d: model %.5f, SDK 100 in flight %.5f "
                  "+- %.5f",
                  r->line, R, r->con, r->con_se);
    /* what a mean cost would say */
    double cost =
        r->w * r->timeout_cost + (1.0 - r->w) * (r->th * r->throttling_cost +
                                                 (1.0 - r->th) * r->retry_cost);
    double mean =
        fmin(geometric(r->p, r->retries) - 1.0, (1.0 - r->p) / (cost * r->p));
    if (fabs(e_seq) > fabs(worst_seq))
      worst_seq = e_seq;
    if (fabs(e_con) > fabs(worst_con))
      worst_con = e_con;
    if (fabs(mean / r->seq - 1.0) > fabs(worst_mean))
      worst_mean = mean / r->seq - 1.0;
  }
  printf("aws_quota.csv: %zu rows; model against the SDK one at a time: "
         "worst %+.1f %%, 100 in flight: %+.1f %%; a mean cost: %+.1f %%\n",
         n, 100 * worst_seq, 100 * worst_con, 100 * worst_mean);
  free(rows);
}
END_TEST

/* Where every attempt fails (x >= c mu), Finagle lets through percent of
 * the requests plus min_per_second, and Envoy budget_percent of the
 * attempts in flight (or min_retry_concurrency of them, each holding its
 * slot for the whole timeout). */
START_TEST(test_budget_caps_at_saturation) {
  ms_service_params s = erlang(20, 10, 0.5, 3);
  ms_policy_defaults(&s.policy, MS_POLICY_FINAGLE);
  for (double x = 200; x < 1e5; x *= 3) {
    double lam;
    ck_assert_int_eq(ms_offered_load_at(&s, x, &lam, NULL), MS_OK);
    double want = fmax(x / 4.0, (x - 10.0) / 1.2);
    ck_assert_msg(fabs(lam - want) <= 1e-13 * want, "finagle x=%g %.17g %.17g",
                  x, lam, want);
  }
  s = erlang(20, 10, 0.5, 3);
  ms_policy_defaults(&s.policy, MS_POLICY_ENVOY);
  for (double x = 200; x < 1e5; x *= 3) {
    double lam;
    ck_assert_int_eq(ms_offered_load_at(&s, x, &lam, NULL), MS_OK);
    double cap = fmax(3.0 / 0.5, 0.2 * x);
    double want = x - fmin(0.75 * x, cap);
    ck_assert_msg(fabs(lam - want) <= 1e-13 * want, "envoy x=%g %.17g %.17g", x,
                  lam, want);
  }
}
END_TEST

/* The hold time E[min(R, T)] against a quadrature of the M/M/c response
 * time's tail, P(R > s) = (1 - C) e^(-mu s) + C P(W + S > s | W > 0),
 * the latter integrated numerically from its two exponential densities
 * (not the closed form's divided difference). */
START_TEST(test_hold_time) {
  const long cs[] = {1, 5, 50};
  const double rhos[] = {0.1, 0.5, 0.9, 0.99};
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 4; j++) {
      long c = cs[i];
      double mu = 4.0, T = 0.7, x = rhos[j] * c * mu, gam = c * mu - x;
      ms_failure_model m;
      ms_failure_model_erlang(&m, c, mu, T);
      double lnc;
      ms_erlang_ln_c(c, x / mu, &lnc, NULL);
      double C = exp(lnc);
      /* P(W + S > s | W > 0) = int_0^s gam e^(-gam w) e^(-mu (s - w)) dw
       * + e^(-gam s); h = int_0^T P(R > s) ds, both by Simpson */
      int n = 2000;
      double h = 0;
      for (int k = 0; k <= n; k++) {
        double s = T * k / n, inner = 0;
        for (int q = 0; q <= 200; q++) {
          double w = s * q / 200;
          double f = gam * exp(-gam * w) * exp(-mu * (s - w));
          inner += f * (q == 0 || q == 200 ? 1 : (q % 2 ? 4 : 2));
        }
        inner *= s / 600.0;
        double tail = (1 - C) * exp(-mu * s) + C * (inner + exp(-gam * s));
        h += tail * (k == 0 || k == n ? 1 : (k % 2 ? 4 : 2));
      }
      h *= T / (3.0 * n);
      double got = ms_hold_time(&m, x);
      ck_assert_msg(fabs(got - h) <= 1e-7 * h, "c=%ld rho=%g %.12g %.12g", c,
                    rhos[j], got, h);
    }
  ms_failure_model m;
  ms_failure_model_erlang(&m, 3, 2.0, 0.5);
  ck_assert(fabs(ms_hold_time(&m, 1e-300) - (1 - exp(-1.0)) / 2.0) < 1e-15);
  ck_assert(ms_hold_time(&m, 6.0) == 0.5 && ms_hold_time(&m, 60.0) == 0.5);
  /* gamma = mu: the two branches of the divided difference meet */
  double a = ms_hold_time(&m, 6.0 - 2.0 * (1 + 1.00001e-4));
  double b = ms_hold_time(&m, 6.0 - 2.0 * (1 + 0.99999e-4));
  ck_assert_msg(fabs(a - b) < 1e-9 * b, "%.17g %.17g", a, b);
}
END_TEST

/* The elasticity E = 1 - d ln lambda / d ln x that the landscape follows,
 * against central differences of ln lambda(x), for every policy, away from
 * the kinks where a cap starts to bind. */
START_TEST(test_elasticity_matches_lambda) {
  ms_service_params cases[7];
  for (int i = 0; i < 7; i++)
    cases[i] = erlang(30, 10, 1, 3);
  cases[0].policy = grpc(3, 10, 0.2);
  ms_policy_defaults(&cases[1].policy, MS_POLICY_AWS);
  ms_policy_defaults(&cases[2].policy, MS_POLICY_FINAGLE);
  ms_policy_defaults(&cases[3].policy, MS_POLICY_ENVOY);
  cases[4].policy = uniform(2, 3, true);
  cases[5].policy = uniform(2, 3, false);
  cases[5].policy.has_tier_retries = true;
  cases[5].policy.tier_retries[1] = 4;
  cases[5].policy.tier_retries[2] = 1;
  cases[5].policy.nested = 4u;
  ms_policy_defaults(&cases[6].policy, MS_POLICY_ENVOY);
  cases[6].policy.envoy_min_concurrency = 100;
  int checked = 0;
  for (int i = 0; i < 7; i++)
    for (double rho = 0.80; rho < 0.9999; rho += 0.0037) {
      double x = rho * 300.0, h = 1e-5 * x, l1, l0;
      ms_point pt;
      ms_point_eval(&cases[i], x, &pt);
      ms_offered_load_at(&cases[i], x + h, &l1, NULL);
      ms_offered_load_at(&cases[i], x - h, &l0, NULL);
      double num = 1.0 - (log(l1) - log(l0)) / (log(x + h) - log(x - h));
      ms_point p1, p0;
      ms_point_eval(&cases[i], x + h, &p1);
      ms_point_eval(&cases[i], x - h, &p0);
      if (fabs(p1.elast - p0.elast) > 1e-3 * (1 + fabs(pt.elast)))
        continue; /* a cap starts to bind between the two points */
      ck_assert_msg(fabs(pt.elast - num) <= 1e-5 * (1 + fabs(num)),
                    "case %d x=%g E=%.12g numerical %.12g", i, x, pt.elast,
                    num);
      checked++;
    }
  ck_assert_int_gt(checked, 7 * 40);
}
END_TEST

/* Attempts per request at a given offered load: Finagle's closed form
 * A = 1 + min(A(p) - 1, percent + min_per_second / lambda), and for every
 * policy the inverse of ms_offered_load_given. */
START_TEST(test_amplification_at_load) {
  ms_service_params s = erlang(20, 10, 0.5, 3);
  ms_policy_defaults(&s.policy, MS_POLICY_FINAGLE);
  const double ps[] = {0.0, 0.05, 0.3, 0.7, 1.0};
  const double lams[] = {1.0, 20.0, 150.0, 1e4};
  for (size_t i = 0; i < 5; i++)
    for (size_t j = 0; j < 4; j++) {
      double A, p = ps[i], lam = lams[j];
      ck_assert_int_eq(ms_amplification_at(&s, p, lam, &A, NULL), MS_OK);
      double want = 1.0 + fmin(geometric(p, 3) - 1.0, 0.2 + 10.0 / lam);
      ck_assert_msg(fabs(A - want) <= 1e-13 * want,
                    "p=%g lambda=%g %.17g %.17g", p, lam, A, want);
    }
  ms_service_params all[4];
  for (int i = 0; i < 4; i++)
    all[i] = erlang(20, 10, 0.5, 3);
  ms_policy_defaults(&all[0].policy, MS_POLICY_ENVOY);
  ms_policy_defaults(&all[1].policy, MS_POLICY_FINAGLE);
  ms_policy_defaults(&all[2].policy, MS_POLICY_AWS);
  all[3].policy = uniform(2, 3, true);
  for (int i = 0; i < 4; i++)
    for (size_t j = 0; j < 5; j++)
      for (size_t k = 0; k < 4; k++) {
        double A, lam, p = ps[j];
        ck_assert_int_eq(ms_amplification_at(&all[i], p, lams[k], &A, NULL),
                         MS_OK);
        ck_assert_int_eq(
            ms_offered_load_given(&all[i], lams[k] * A, p, &lam, NULL), MS_OK);
        ck_assert_msg(fabs(lam - lams[k]) <= 1e-12 * lams[k],
                      "policy %d p=%g: %.17g back to %.17g", i, p, lams[k],
                      lam);
      }
}
END_TEST

/* Policies that cannot hold are refused with the field and the reason. */
START_TEST(test_policy_checks) {
  ms_error e;
  ms_retry_policy p = grpc(3, 0, 0.1);
  ck_assert_int_eq(ms_retry_policy_check(&p, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg,
                   "grpc_throttling.max_tokens = 0 is outside [1, 1000]");
  ms_retry_policy_fixed(&p, 3);
  ms_policy_defaults(&p, MS_POLICY_ENVOY);
  p.tiers = 2;
  ck_assert_int_eq(ms_retry_policy_check(&p, &e), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "applies to one tier"));
  ms_retry_policy_fixed(&p, 3);
  ms_policy_defaults(&p, MS_POLICY_AWS);
  p.has_budget = true;
  p.retry_budget = 0.1;
  ck_assert_int_eq(ms_retry_policy_check(&p, &e), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "give one policy"));
  ms_service_params s;
  ms_failure_model_capacity(&s.model, 10);
  ms_retry_policy_fixed(&s.policy, 2);
  ms_policy_defaults(&s.policy, MS_POLICY_ENVOY);
  ck_assert_int_eq(ms_service_params_check(&s, &e), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "needs the erlang model"));
  ms_retry_policy q = uniform(2, 3, true);
  q.nested |= 1u;
  ck_assert_int_eq(ms_retry_policy_check(&q, &e), MS_EINVAL);
}
END_TEST

Suite *policy_suite(void) {
  Suite *s = suite_create("policy");
  TCase *tc = tcase_create("closed forms");
  tcase_add_test(tc, test_nested_telescopes);
  tcase_add_test(tc, test_mixed_tiers);
  tcase_add_test(tc, test_many_retries);
  tcase_add_test(tc, test_grpc_switch);
  tcase_add_test(tc, test_aws_balance);
  tcase_add_test(tc, test_aws_tiny_refund);
  tcase_add_test(tc, test_aws_against_sdk);
  tcase_add_test(tc, test_budget_caps_at_saturation);
  tcase_add_test(tc, test_hold_time);
  tcase_add_test(tc, test_elasticity_matches_lambda);
  tcase_add_test(tc, test_amplification_at_load);
  tcase_add_test(tc, test_policy_checks);
  suite_add_tcase(s, tc);
  return s;
}
