/* SPDX-License-Identifier: MIT */
/*
 * The timeout on the response (doc/design.md §1.1, timeout_covers):
 * ms_ln_response_tail, its slope, its service_time_cv counterpart and the
 * tipping loads with it against the 40-digit references of
 * tools/response_reference.py (tests/data/response_reference.csv); the
 * wait tail near saturation (issue 34, item 6) against the same file;
 * the landscape's elasticity bounds against the evaluated elasticity.
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
  char kind[24];
  long c;
  double mu, x, T, cv, slope;
  long double value;
  int line;
} resp_row;

static bool resp_row_of(const char *line, int lineno, void *row) {
  resp_row *r = row;
  r->line = lineno;
  int used = 0;
  if (sscanf(line, "%23[^,],%ld,%lf,%lf,%lf,%lf,%n", r->kind, &r->c, &r->mu,
             &r->x, &r->T, &r->cv, &used) != 6 ||
      used == 0)
    return false;
  char *end;
  r->value = strtold(line + used, &end);
  if (*end != ',')
    return false;
  r->slope = strtod(end + 1, NULL);
  return true;
}

static size_t read_rows(resp_row **rows) {
  return test_data_rows("response_reference.csv", "kind,", sizeof **rows,
                        resp_row_of, (void **)rows);
}

static void response_model(ms_failure_model *m, long c, double mu, double T) {
  ms_failure_model_erlang(m, c, mu, T);
  m->timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
}

/* The tails and slopes.  Bounds: the wait tail near saturation 1e-14
 * (measured 1.4e-15; the old c mu - x lost up to 5.8e-11); the response
 * tail 1e-13 of P (measured below); its slope 1e-9 of the reference's
 * numerical derivative; the fitted phases 1e-12. */
START_TEST(test_reference) {
  resp_row *rows;
  size_t n = read_rows(&rows);
  double worst[4] = {0}, worst_slope = 0;
  int counted[4] = {0};
  for (size_t i = 0; i < n; i++) {
    const resp_row *r = &rows[i];
    double ref = (double)r->value, got = 0, err;
    int k;
    if (strcmp(r->kind, "wait") == 0) {
      k = 0;
      ck_assert_int_eq(ms_ln_wait_tail(r->c, r->mu, r->x, r->T, &got, NULL),
                       MS_OK);
      err = ln_value_error(got, ref);
      ck_assert_msg(err <= 1e-14, "line %d: wait tail %.17g, want %.17g",
                    r->line, got, ref);
    } else if (strcmp(r->kind, "erlangs") == 0) {
      k = 0;
      ck_assert_int_eq(
          ms_ln_wait_tail_erlangs(r->c, r->mu, r->x, r->T, &got, NULL), MS_OK);
      err = ln_value_error(got, ref);
      ck_assert_msg(err <= 1e-14, "line %d: wait tail %.17g, want %.17g",
                    r->line, got, ref);
    } else if (strcmp(r->kind, "response") == 0) {
      k = 1;
      ck_assert_int_eq(
          ms_ln_response_tail(r->c, r->mu, r->x, r->T, 1.0, &got, NULL), MS_OK);
      err = ln_value_error(got, ref);
      ck_assert_msg(err <= 1e-13, "line %d: response tail %.17g, want %.17g",
                    r->line, got, ref);
      ms_failure_model m;
      response_model(&m, r->c, r->mu, r->T);
      double lq, sl;
      ck_assert_int_eq(ms_failure_tail(&m, r->x, &lq, &sl, NULL), MS_OK);
      ck_assert_msg(ln_value_error(lq, ref) <= 1e-13, "line %d", r->line);
      double se = fabs(sl - r->slope) / fmax(1e-300, fabs(r->slope));
      if (r->slope == 0.0)
        se = fabs(sl);
      ck_assert_msg(se <= 1e-9, "line %d: slope %.17g, want %.17g", r->line, sl,
                    r->slope);
      worst_slope = fmax(worst_slope, se);
    } else if (strcmp(r->kind, "fitted") == 0) {
      k = 2;
      ck_assert_int_eq(
          ms_ln_response_tail(r->c, r->mu, r->x, r->T, r->cv, &got, NULL),
          MS_OK);
      err = ln_value_error(got, ref);
      ck_assert_msg(err <= 1e-12,
                    "line %d: cv %g: response tail %.17g, want %.17g", r->line,
                    r->cv, got, ref);
    } else {
      k = 3;
      ms_service_params s;
      response_model(&s.model, r->c, r->mu, r->T);
      if (strcmp(r->kind, "tipping_wait") == 0)
        s.model.timeout_covers = MS_TIMEOUT_COVERS_WAIT;
      ms_retry_policy_fixed(&s.policy, (int)r->x);
      ms_landscape ls;
      ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
      got = ls.tipping_load;
      err = fabs(got - ref) / ref;
      ck_assert_msg(err <= 1e-12, "line %d: %s at T %g: %.17g, want %.17g",
                    r->line, r->kind, r->T, got, ref);
    }
    worst[k] = fmax(worst[k], err);
    counted[k]++;
  }
  ck_assert_int_gt(counted[0], 10);
  ck_assert_int_gt(counted[1], 100);
  ck_assert_int_gt(counted[2], 50);
  ck_assert_int_eq(counted[3], 8);
  printf("response_reference.csv: worst relative error: wait tail near "
         "saturation %.2e, response tail %.2e (slope %.2e), fitted %.2e, "
         "tipping loads %.2e\n",
         worst[0], worst[1], worst_slope, worst[2], worst[3]);
  free(rows);
}
END_TEST

/* The slope x d ln q / dx of every variant against a central difference
 * of ln q in ln x (step 1e-5: truncation ~1e-10 of the slope). */
START_TEST(test_slope_difference) {
  const double cvs[] = {1.0, 0.0, 0.3, 0.8, 1.2, 2.5, 10.0};
  const double rhos[] = {0.05, 0.4, 0.8, 0.97, 0.9999};
  const long cs[] = {1, 4, 30};
  const double Ts[] = {0.03, 0.15, 0.6};
  double worst = 0;
  for (size_t ic = 0; ic < sizeof cs / sizeof *cs; ic++)
    for (size_t iv = 0; iv < sizeof cvs / sizeof *cvs; iv++)
      for (size_t it = 0; it < sizeof Ts / sizeof *Ts; it++)
        for (size_t ir = 0; ir < sizeof rhos / sizeof *rhos; ir++) {
          ms_failure_model m;
          response_model(&m, cs[ic], 10.0, Ts[it]);
          m.has_service_time_cv = cvs[iv] != 1.0;
          m.service_time_cv = cvs[iv];
          double x = rhos[ir] * 10.0 * (double)cs[ic], h = 1e-5;
          double l0, s0, lm, lp, sd;
          ck_assert_int_eq(ms_failure_tail(&m, x, &l0, &s0, NULL), MS_OK);
          ck_assert_int_eq(ms_failure_tail(&m, x * exp(-h), &lm, &sd, NULL),
                           MS_OK);
          ck_assert_int_eq(ms_failure_tail(&m, x * exp(h), &lp, &sd, NULL),
                           MS_OK);
          double fd = (lp - lm) / (2 * h);
          double e = fabs(s0 - fd) / fmax(1e-3, fabs(fd));
          ck_assert_msg(e <= 1e-6,
                        "c %ld cv %g T %g rho %g: slope %.10g, "
                        "difference %.10g",
                        cs[ic], cvs[iv], Ts[it], rhos[ir], s0, fd);
          worst = fmax(worst, e);
        }
  printf("response slope against central differences: worst %.2e\n", worst);
}
END_TEST

/* Exact values that need no reference: the idle service's tail is
 * P(S > T); T = 0 fails every attempt; cv = 1 given is the exponential
 * model bit for bit; at and beyond c mu the tail is 1; the tail rises
 * with x; the wait model's zero value is what ms_failure_model_erlang
 * builds. */
START_TEST(test_exact_values) {
  double l;
  ck_assert_int_eq(ms_ln_response_tail(10, 10.0, 0.0, 0.2, 1.0, &l, NULL),
                   MS_OK);
  ck_assert_double_eq_tol(l, -2.0, 1e-15);
  ck_assert_int_eq(ms_ln_response_tail(10, 10.0, 0.0, 0.2, 0.0, &l, NULL),
                   MS_OK);
  ck_assert(l <= -DBL_MAX); /* a constant 100 ms never exceeds 200 ms */
  ck_assert_int_eq(ms_ln_response_tail(10, 10.0, 0.0, 0.05, 0.0, &l, NULL),
                   MS_OK);
  ck_assert(l == 0.0); /* ... and always exceeds 50 ms */
  ck_assert_int_eq(ms_ln_response_tail(10, 10.0, 50.0, 0.0, 1.0, &l, NULL),
                   MS_OK);
  ck_assert(l == 0.0);
  ck_assert_int_eq(ms_ln_response_tail(10, 10.0, 100.0, 5.0, 1.0, &l, NULL),
                   MS_OK);
  ck_assert(l == 0.0);
  ms_failure_model a, b;
  response_model(&a, 10, 10.0, 0.2);
  b = a;
  b.has_service_time_cv = true;
  b.service_time_cv = 1.0;
  double prev = -INFINITY;
  for (double x = 0.0; x < 100.0; x += 0.37) {
    double la, lb, sa, sb;
    ck_assert_int_eq(ms_failure_tail(&a, x, &la, &sa, NULL), MS_OK);
    ck_assert_int_eq(ms_failure_tail(&b, x, &lb, &sb, NULL), MS_OK);
    ck_assert(la == lb && sa == sb);
    ck_assert(la >= prev);
    prev = la;
  }
  ms_failure_model w;
  ms_failure_model_erlang(&w, 10, 10.0, 0.2);
  ck_assert_int_eq(w.timeout_covers, MS_TIMEOUT_COVERS_WAIT);
  ck_assert(!ms_failure_model_same(&w, &a));
  a.timeout_covers = (ms_timeout_covers)7;
  ms_error err;
  ck_assert_int_eq(ms_failure_model_check(&a, &err), MS_EINVAL);
  ck_assert_msg(strstr(err.msg, "timeout_covers") != NULL, "%s", err.msg);
  ms_timeout_covers v;
  ck_assert_int_eq(ms_timeout_covers_from_name("response", &v), MS_OK);
  ck_assert_int_eq(v, MS_TIMEOUT_COVERS_RESPONSE);
  ck_assert_int_eq(ms_timeout_covers_from_name("wait", &v), MS_OK);
  ck_assert_int_eq(v, MS_TIMEOUT_COVERS_WAIT);
  ck_assert_int_eq(ms_timeout_covers_from_name("headers", &v), MS_EINVAL);
}
END_TEST

/* The elasticity bounds with the response (model/landscape.c): wherever
 * they decide the sign of d lambda / dx it is the sign of 1 - E evaluated,
 * over pools, timeouts, retries, tiers, base failures, and loads from
 * 1e-6 to 1 - 1e-14 of c mu; and they decide most points. */
START_TEST(test_bounds_hold) {
  const long cs[] = {1, 3, 10, 100, 5000};
  const double Ts[] = {0.0, 0.01, 0.1, 0.25, 1.0, 10.0};
  const int rs[] = {0, 1, 3, 8};
  long decided = 0, total = 0, decided_wait = 0;
  for (size_t ic = 0; ic < sizeof cs / sizeof *cs; ic++)
    for (size_t it = 0; it < sizeof Ts / sizeof *Ts; it++)
      for (size_t ir = 0; ir < sizeof rs / sizeof *rs; ir++)
        for (int k = 1; k <= 2; k++) {
          ms_service_params s;
          response_model(&s.model, cs[ic], 10.0, Ts[it]);
          s.model.base_failure = k == 2 ? 0.01 : 0.0;
          ms_retry_policy_fixed(&s.policy, rs[ir]);
          s.policy.tiers = k;
          double cmu = 10.0 * (double)cs[ic];
          for (double g = 1.0 - 1e-6; g > 1e-14; g *= 0.7) {
            double x = cmu * (1.0 - g);
            int sign = ms_landscape_sign_bound(&s, x);
            ck_assert_int_ne(sign, -2);
            total++;
            ms_service_params sw = s;
            sw.model.timeout_covers = MS_TIMEOUT_COVERS_WAIT;
            decided_wait += ms_landscape_sign_bound(&sw, x) >= 0;
            if (sign < 0)
              continue;
            decided++;
            ms_point pt;
            ms_point_eval(&s, x, &pt);
            ck_assert_msg(sign == (pt.elast < 1.0),
                          "c %ld T %g r %d k %d x %.17g: bound says %d, E "
                          "%.6g",
                          cs[ic], Ts[it], rs[ir], k, x, sign, pt.elast);
          }
        }
  printf("response bounds: %ld of %ld points decided (the wait's: %ld)\n",
         decided, total, decided_wait);
  ck_assert_int_gt(decided, total / 3);
}
END_TEST

Suite *response_suite(void) {
  Suite *s = suite_create("response");
  TCase *tc = tcase_create("response");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_reference);
  tcase_add_test(tc, test_slope_difference);
  tcase_add_test(tc, test_exact_values);
  tcase_add_test(tc, test_bounds_hold);
  suite_add_tcase(s, tc);
  return s;
}
