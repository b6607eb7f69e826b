/* SPDX-License-Identifier: MIT */
/*
 * Capacity planning (model/recommend.c) against a brute-force scan: a service
 * is safe at peak L with margin m when, at every offered load of a fine
 * grid up to (1 + m) L and at (1 + m) L itself, ms_equilibria finds one
 * equilibrium and it is below saturation (the healthy one; no collapsed
 * equilibrium exists).  Each answer of the planner must be safe by that
 * scan, and the next step (one more retry, a budget 1e-6 larger, one
 * server fewer) must not be.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "../model/metastable.h"
#include "check_suites.h"

/* The scan: safe when every load of the grid has one healthy equilibrium. */
static bool scan_safe(const ms_service_params *s, double peak, double margin) {
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(s, &ls, NULL), MS_OK);
  double top = (1 + margin) * peak;
  const int n = 4000;
  for (int i = 1; i <= n; i++) {
    double lambda = top * i / n;
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int k;
    ck_assert_int_eq(ms_equilibria(&ls, lambda, eq, &k, NULL), MS_OK);
    if (k != 1 || !(eq[0].effective_load < ls.saturation_load))
      return false;
  }
  return true;
}

static bool plan_safe(const ms_service_params *s, double peak, double m) {
  bool safe;
  ck_assert_int_eq(ms_recommend_safe(s, peak, m, &safe, NULL, NULL), MS_OK);
  return safe;
}

static ms_service_params example(void) {
  /* the issue's example: 50 servers x 200 ms, 2 s timeout, 3 retries */
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 50, 5.0, 2.0);
  ms_retry_policy_fixed(&s.policy, 3);
  return s;
}

/* safe is recovery_load > (1 + m) L, in every kind of landscape */
START_TEST(test_safe_is_the_scan) {
  ms_service_params cases[8];
  int n = 0;
  cases[n++] = example(); /* a band */
  cases[n] = example();   /* no band: no retries */
  cases[n++].policy.retries = 0;
  ms_failure_model_capacity(&cases[n].model, 100); /* capacity, no band */
  cases[n].model.base_failure = 0.05;
  ms_retry_policy_fixed(&cases[n++].policy, 2);
  ms_failure_model_capacity(&cases[n].model, 100); /* capacity, 2 tiers */
  ms_retry_policy_fixed(&cases[n].policy, 3);
  cases[n++].policy.tiers = 2;
  cases[n] = example(); /* a budget */
  cases[n].policy.has_budget = true;
  cases[n++].policy.retry_budget = 0.1;
  cases[n] = example(); /* load-dependent: Finagle, Envoy */
  ms_policy_defaults(&cases[n++].policy, MS_POLICY_FINAGLE);
  cases[n] = example();
  ms_policy_defaults(&cases[n++].policy, MS_POLICY_ENVOY);
  for (int i = 0; i < n; i++) {
    ms_landscape ls;
    ck_assert_int_eq(ms_landscape_build(&cases[i], &ls, NULL), MS_OK);
    /* peaks around the recovery load, and below and above it */
    for (double f = 0.5; f <= 1.5; f += 0.05) {
      double peak = f * ls.recovery_load / 1.2;
      ck_assert_msg(plan_safe(&cases[i], peak, 0.2) ==
                        scan_safe(&cases[i], peak, 0.2),
                    "case %d, peak %g", i, peak);
    }
  }
}
END_TEST

START_TEST(test_the_issue_example) {
  ms_service_params s = example();
  ms_recommend_answer a;
  /* retries: 0 is safe (recovery c mu = 250 > 240), 1 is not (125) */
  ck_assert_int_eq(ms_recommend_max_retries(&s, 200, 0.2, &a, NULL), MS_OK);
  ck_assert(a.safe);
  ck_assert_double_eq(a.value, 0);
  ck_assert_double_eq(a.recovery_load, 250);
  ms_service_params t = s;
  t.policy.retries = 0;
  ck_assert(scan_safe(&t, 200, 0.2));
  for (int r = 1; r <= 10; r++) {
    t.policy.retries = r;
    ck_assert(!scan_safe(&t, 200, 0.2));
  }
  /* the budget: below about 3.4 %; the answer safe, 1e-6 more not */
  ck_assert_int_eq(
      ms_recommend_knob(&s, MS_PARAM_RETRY_BUDGET, false, 200, 0.2, &a, NULL),
      MS_OK);
  ck_assert(a.safe && a.value > 0.033 && a.value < 0.035);
  t = s;
  t.policy.has_budget = true;
  t.policy.retry_budget = a.value;
  ck_assert(scan_safe(&t, 200, 0.2));
  t.policy.retry_budget = a.value + 1e-6;
  ck_assert(!scan_safe(&t, 200, 0.2));
  /* servers: c mu / 4 > 240 needs c > 192 (doc/design.md §1.3) */
  ck_assert_int_eq(ms_recommend_min_servers(&s, 200, 0.2, &a, NULL), MS_OK);
  ck_assert(a.safe);
  ck_assert_double_eq(a.value, 193);
  ck_assert_double_eq_tol(a.recovery_load, 193 * 5.0 / 4, 1e-9);
  t = s;
  t.model.servers = 193;
  ck_assert(scan_safe(&t, 200, 0.2));
  t.model.servers = 192;
  ck_assert(!scan_safe(&t, 200, 0.2));
  /* the timeout: a fixed count's recovery load c mu / (r + 1) does not
   * depend on it, so no timeout is safe */
  ck_assert_int_eq(
      ms_recommend_knob(&s, MS_PARAM_TIMEOUT, true, 200, 0.2, &a, NULL), MS_OK);
  ck_assert(!a.safe);
  ck_assert_double_eq_tol(a.recovery_load, 62.5, 1e-12);
}
END_TEST

/* Every retry count is scanned: the answer is the largest safe one of a
 * direct scan, and past it none is safe (monotone for these services). */
START_TEST(test_retries_scan) {
  ms_service_params s = example();
  s.policy.has_token = true;
  s.policy.token_ratio = 0.02;
  for (double peak = 150; peak <= 210; peak += 5) {
    ms_recommend_answer a;
    ck_assert_int_eq(ms_recommend_max_retries(&s, peak, 0.2, &a, NULL), MS_OK);
    int best = -1;
    bool after_unsafe = false;
    for (int r = 0; r <= 12; r++) {
      ms_service_params t = s;
      t.policy.retries = r;
      bool safe = scan_safe(&t, peak, 0.2);
      if (safe) {
        ck_assert_msg(!after_unsafe, "not monotone at peak %g", peak);
        best = r;
      } else {
        after_unsafe = true;
      }
    }
    if (best < 0) {
      ck_assert(!a.safe);
    } else if (best < 12) {
      ck_assert(a.safe);
      ck_assert_double_eq(a.value, best);
    }
  }
}
END_TEST

/* With a budget the recovery load depends on the timeout, and not
 * monotonically: at 0 s the band is gone (recovery 242.5 req/s, safe), at
 * 1 s it is 239.2 (not safe), at 10 s 242.2 (safe).  The answer is where
 * the safe stretch of the longest timeouts begins: every longer timeout
 * of the scan is safe, a slightly shorter one is not. */
START_TEST(test_timeout_direction) {
  ms_service_params s = example();
  s.policy.has_budget = true;
  s.policy.retry_budget = 0.03;
  ms_recommend_answer a;
  ck_assert_int_eq(
      ms_recommend_knob(&s, MS_PARAM_TIMEOUT, true, 200, 0.2, &a, NULL), MS_OK);
  ck_assert(a.safe && a.value > 1 && a.value < 10);
  for (double T = a.value * 1.001; T < 1e4; T *= 1.5) {
    ms_service_params t = s;
    t.model.timeout = T;
    ck_assert_msg(scan_safe(&t, 200, 0.2), "not safe at T = %g", T);
  }
  ms_service_params t = s;
  t.model.timeout = a.value;
  ck_assert(scan_safe(&t, 200, 0.2));
  t.model.timeout = a.value * (1 - 1e-6);
  ck_assert(!scan_safe(&t, 200, 0.2));
  /* not monotone: 1 s unsafe, 0 s safe */
  t.model.timeout = 1;
  ck_assert(!scan_safe(&t, 200, 0.2));
  t.model.timeout = 0;
  ck_assert(scan_safe(&t, 200, 0.2));
}
END_TEST

/* The named knobs: each answer safe by the scan, a little more not. */
START_TEST(test_named_knobs) {
  static const ms_param ids[] = {MS_PARAM_TOKEN_RATIO,
                                 MS_PARAM_GRPC_TOKEN_RATIO, MS_PARAM_AWS_REFUND,
                                 MS_PARAM_ENVOY_BUDGET};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    ms_service_params s = example();
    ms_recommend_answer a;
    ck_assert_int_eq(ms_recommend_knob(&s, ids[i], false, 200, 0.2, &a, NULL),
                     MS_OK);
    ck_assert_msg(a.safe && !a.at_bound, "knob %zu", i);
    /* the same service the planner varied, by its own setting */
    ms_service_params t = s;
    switch (ids[i]) {
    case MS_PARAM_TOKEN_RATIO:
      t.policy.has_token = true;
      t.policy.token_ratio = a.value;
      break;
    case MS_PARAM_GRPC_TOKEN_RATIO:
      t.policy.kind = MS_POLICY_GRPC;
      t.policy.grpc_max_tokens = 10;
      t.policy.grpc_token_ratio = a.value;
      break;
    case MS_PARAM_AWS_REFUND:
      ms_policy_defaults(&t.policy, MS_POLICY_AWS);
      t.policy.kind = MS_POLICY_AWS;
      t.policy.aws_refund = a.value;
      break;
    default:
      ms_policy_defaults(&t.policy, MS_POLICY_ENVOY);
      t.policy.kind = MS_POLICY_ENVOY;
      t.policy.envoy_budget = a.value;
      break;
    }
    ck_assert_int_eq(ms_service_params_check(&t, NULL), MS_OK);
    ck_assert_msg(scan_safe(&t, 200, 0.2), "knob %zu", i);
    double *v = ms_policy_field(&t.policy, ids[i]);
    if (v == NULL)
      v = &t.policy.token_ratio;
    *v = a.value * (1 + 1e-5);
    ck_assert_msg(!scan_safe(&t, 200, 0.2), "knob %zu", i);
  }
}
END_TEST

/* ms_recommend_apply gives the service each answer describes: its
 * landscape has the answer's loads, and it differs from s in the one
 * setting. */
START_TEST(test_apply) {
  static const ms_param ids[] = {
      MS_PARAM_RETRIES,      MS_PARAM_SERVERS,          MS_PARAM_TIMEOUT,
      MS_PARAM_RETRY_BUDGET, MS_PARAM_GRPC_TOKEN_RATIO, MS_PARAM_AWS_REFUND};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    ms_service_params s = example(), t;
    ms_recommend_answer a;
    int st = ids[i] == MS_PARAM_RETRIES
                 ? ms_recommend_max_retries(&s, 200, 0.2, &a, NULL)
             : ids[i] == MS_PARAM_SERVERS
                 ? ms_recommend_min_servers(&s, 200, 0.2, &a, NULL)
                 : ms_recommend_knob(&s, ids[i], ids[i] == MS_PARAM_TIMEOUT,
                                     200, 0.2, &a, NULL);
    ck_assert_int_eq(st, MS_OK);
    ck_assert_int_eq(ms_recommend_apply(&s, ids[i], a.value, &t, NULL), MS_OK);
    ms_landscape ls;
    ck_assert_int_eq(ms_landscape_build(&t, &ls, NULL), MS_OK);
    ck_assert_msg(ls.tipping_load == a.tipping_load &&
                      ls.recovery_load == a.recovery_load,
                  "knob %zu: %.17g %.17g against %.17g %.17g", i,
                  ls.tipping_load, ls.recovery_load, a.tipping_load,
                  a.recovery_load);
  }
  ms_service_params s = example(), t = s;
  ms_error err;
  ck_assert_int_eq(ms_recommend_apply(&s, MS_PARAM_CAPACITY, 1, &t, &err),
                   MS_EINVAL);
  ck_assert_int_eq(ms_recommend_apply(&s, MS_PARAM_SERVERS, 0, &t, &err),
                   MS_EINVAL);
}
END_TEST

Suite *recommend_suite(void) {
  Suite *s = suite_create("recommend");
  TCase *tc = tcase_create("safe settings");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_safe_is_the_scan);
  tcase_add_test(tc, test_the_issue_example);
  tcase_add_test(tc, test_retries_scan);
  tcase_add_test(tc, test_timeout_direction);
  tcase_add_test(tc, test_named_knobs);
  tcase_add_test(tc, test_apply);
  suite_add_tcase(s, tc);
  return s;
}
