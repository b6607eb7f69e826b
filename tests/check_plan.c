/* SPDX-License-Identifier: MIT */
/*
 * The capacity plan's formulas (doc/design.md §1.10): the M/M/c response
 * time tail P(W + S > H) against a Simpson quadrature of the wait's
 * density (long double), across gamma = c mu - x below, at and above mu,
 * and against a simulation of the FIFO M/M/c queue itself; the
 * health-check threshold as the first crossing of the tolerance; the
 * domain errors.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "check_run.h"
#include "metastable.h"

static ms_failure_model mmc(long c, double mu, double base) {
  ms_failure_model m;
  ms_failure_model_erlang(&m, c, mu, 1.0);
  m.base_failure = base;
  return m;
}

/* P(W + S > H) = (1 - C) e^(-mu H) + C [e^(-g H) + int_0^H g e^(-g w)
 * e^(-mu (H - w)) dw], the integral by Simpson's rule in long double. */
static long double quad_tail(long c, double mu, double x, double H) {
  ms_erlang_values v;
  ck_assert_int_eq(ms_erlang(c, x / mu, &v, NULL), MS_OK);
  long double C = v.erlang_c, g = (long double)c * mu - x, s = 0;
  const int n = 20000;
  long double h = (long double)H / n;
  for (int i = 0; i <= n; i++) {
    long double w = i * h;
    long double f = g * expl(-g * w) * expl(-(long double)mu * (H - w));
    s += (i == 0 || i == n) ? f : (i % 2 ? 4 * f : 2 * f);
  }
  return (1 - C) * expl(-(long double)mu * H) + C * (expl(-g * H) + s * h / 3);
}

START_TEST(test_tail_against_quadrature) {
  /* 4 servers at 1/s: gamma = 4 - x, equal to mu at x = 3 */
  ms_failure_model m = mmc(4, 1.0, 0.0);
  const double xs[] = {0.5, 2.0, 2.9, 3.0 - 1e-9, 3.0, 3.0 + 1e-9, 3.1, 3.99};
  const double hs[] = {0.1, 1.0, 3.0, 20.0};
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
    for (size_t k = 0; k < sizeof hs / sizeof hs[0]; k++) {
      double t;
      ck_assert_int_eq(ms_response_tail(&m, xs[i], hs[k], &t, NULL), MS_OK);
      double want = (double)quad_tail(4, 1.0, xs[i], hs[k]);
      ck_assert_msg(fabs(t - want) <= 1e-12 + 1e-10 * want,
                    "x %g H %g: %.17g, quadrature %.17g", xs[i], hs[k], t,
                    want);
    }
}
END_TEST

START_TEST(test_tail_ends) {
  ms_failure_model m = mmc(10, 10.0, 0.0);
  double t;
  ck_assert_int_eq(ms_response_tail(&m, 0.0, 0.2, &t, NULL), MS_OK);
  ck_assert(fabs(t - exp(-2.0)) <= 1e-15);
  ck_assert_int_eq(ms_response_tail(&m, 50.0, 0.0, &t, NULL), MS_OK);
  ck_assert(fabs(t - 1.0) <= 1e-15);
  ck_assert_int_eq(ms_response_tail(&m, 100.0, 0.2, &t, NULL), MS_OK);
  ck_assert(t == 1.0);
}
END_TEST

/* The FIFO M/M/c queue simulated customer by customer: each arrival
 * takes the server that frees first; its response time is its wait plus
 * its service.  The share slower than H, against the formula, within 4.5
 * standard errors (batches of 20,000, the first dropped). */
static unsigned short rng[3] = {0x330e, 15, 0};
static double expo(double rate) { return -log1p(-erand48(rng)) / rate; }

START_TEST(test_tail_against_simulation) {
  const long c = 3;
  const double mu = 1.0, x = 2.4, H = 2.0;
  double free_at[3] = {0, 0, 0}, now = 0;
  const int batches = 31, per = 20000;
  double share[31];
  for (int b = 0; b < batches; b++) {
    int slow = 0;
    for (int i = 0; i < per; i++) {
      now += expo(x);
      int k = 0;
      for (int j = 1; j < c; j++)
        if (free_at[j] < free_at[k])
          k = j;
      double start = fmax(now, free_at[k]);
      free_at[k] = start + expo(mu);
      slow += free_at[k] - now > H;
    }
    share[b] = (double)slow / per;
  }
  double mean = 0, var = 0;
  for (int b = 1; b < batches; b++)
    mean += share[b] / (batches - 1);
  for (int b = 1; b < batches; b++)
    var += (share[b] - mean) * (share[b] - mean) / (batches - 2);
  double se = sqrt(var / (batches - 1)), t;
  ms_failure_model m = mmc(c, mu, 0.0);
  ck_assert_int_eq(ms_response_tail(&m, x, H, &t, NULL), MS_OK);
  ck_assert_msg(fabs(mean - t) <= 4.5 * se, "simulated %g +- %g, model %g",
                mean, se, t);
}
END_TEST

START_TEST(test_health_check_crossing) {
  /* 50 servers at 5/s, check timeout 1 s, 1 % tolerance, base 0.2 % */
  ms_failure_model m = mmc(50, 5.0, 0.002);
  double x, t0, t1;
  ck_assert_int_eq(ms_health_check_load(&m, 1.0, 0.01, &x, NULL), MS_OK);
  ck_assert(x > 0 && x < 250);
  ck_assert_int_eq(ms_response_tail(&m, x, 1.0, &t1, NULL), MS_OK);
  ck_assert_int_eq(ms_response_tail(&m, x * (1 - 1e-12), 1.0, &t0, NULL),
                   MS_OK);
  ck_assert(1 - 0.998 * (1 - t1) >= 0.01);
  ck_assert(1 - 0.998 * (1 - t0) < 0.01);
  /* an idle probe already fails more often: e^(-5 * 0.5) > 5 % */
  ck_assert_int_eq(ms_health_check_load(&m, 0.5, 0.05, &x, NULL), MS_OK);
  ck_assert(x == 0.0);
}
END_TEST

START_TEST(test_errors) {
  ms_failure_model m = mmc(4, 1.0, 0.0), q = m, cap;
  double t;
  q.has_queue_limit = true;
  q.queue_limit = 5;
  ms_failure_model_capacity(&cap, 10.0);
  ck_assert_int_eq(ms_response_tail(&q, 1.0, 1.0, &t, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_response_tail(&cap, 1.0, 1.0, &t, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_response_tail(&m, -1.0, 1.0, &t, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_response_tail(&m, 1.0, NAN, &t, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_health_check_load(&m, 1.0, 1.0, &t, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_inflight_capacity(&cap, &t, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_inflight_capacity(&m, &t, NULL), MS_OK);
  ck_assert(t == 4.0); /* 4 slots / 1 s */
}
END_TEST

static Suite *plan_suite(void) {
  Suite *s = suite_create("plan");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_tail_against_quadrature);
  tcase_add_test(tc, test_tail_ends);
  tcase_add_test(tc, test_tail_against_simulation);
  tcase_add_test(tc, test_health_check_crossing);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ms_check_run(srunner_create(plan_suite())); }
