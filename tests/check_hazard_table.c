/* SPDX-License-Identifier: MIT */
/*
 * The table of the time to a storm over the load (model/hazard_table.c,
 * doc/design.md §1.12, "The table"): against direct calls of
 * ms_time_to_storm between the grid points, monotone, never below the
 * recovery load, and its domain.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_suites.h"
#include "metastable.h"
#include "testutil.h"

static ms_service_params service(long c, double service_time, double T, int r,
                                 ms_timeout_covers covers) {
  ms_service_params s = {0};
  ms_failure_model_erlang(&s.model, c, 1.0 / service_time, T);
  s.model.timeout_covers = covers;
  ms_retry_policy_fixed(&s.policy, r);
  return s;
}

static void table_of(const ms_service_params *s, ms_landscape *ls,
                     ms_hazard_table *t) {
  ms_error e = {{0}};
  ck_assert_msg(ms_landscape_build(s, ls, &e) == MS_OK, "%s", e.msg);
  ck_assert_msg(ms_hazard_table_build(t, s, ls->recovery_load, ls->tipping_load,
                                      &e) == MS_OK,
                "%s", e.msg);
  ck_assert(ms_hazard_table_complete(t));
}

/* The largest |ln table - ln direct| over loads between the grid points
 * where the direct time is under 10^12 s (beyond it the hazard within
 * any horizon an operator sets is nil), from the recovery load to the
 * grid's top. */
static double worst_ln_error(const ms_service_params *s,
                             const ms_hazard_table *t) {
  double worst = 0;
  for (int i = 0; i + 1 < MS_HAZARD_TABLE_POINTS; i++) {
    for (int k = 1; k <= 3; k++) {
      double x = t->load[i] + (t->load[i + 1] - t->load[i]) * k / 4.0;
      double direct, table;
      ck_assert_int_eq(ms_time_to_storm(s, x, &direct, NULL), MS_OK);
      ck_assert_int_eq(ms_hazard_table_lookup(t, x, &table, NULL), MS_OK);
      /* above a never point: the upper point's time, a lower bound */
      if (t->ln_time[i] >= log(MS_TIME_TO_STORM_NEVER)) {
        ck_assert(table <= direct);
        continue;
      }
      if (direct < 1e12)
        worst = fmax(worst, fabs(log(table) - log(direct)));
    }
  }
  return worst;
}

/* The interpolation error stated in doc/design.md §1.12, wherever the
 * time is under 10^12 s, on the pools, both timeouts: within a
 * factor 1.42 (|ln| < 0.35).  Under 10 servers the method itself steps
 * (its storm state is a whole number: 1 server, ln time falls by 0.42
 * between 3.96 and 3.97 req/s); 1000 servers, just past the fold, where
 * ln time falls from 12 to 7 within 0.1 % of the load. */
START_TEST(test_against_direct) {
  const struct {
    long c;
    double st, T;
    int r;
  } cases[] = {{1, 0.1, 1, 3},   {2, 0.1, 1, 3},   {10, 0.1, 1, 3},
               {8, 0.1, 0.5, 1}, {100, 0.1, 1, 3}, {1000, 0.1, 1, 3}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    for (int w = 0; w < 2; w++) {
      ms_service_params s =
          service(cases[i].c, cases[i].st, cases[i].T, cases[i].r,
                  w ? MS_TIMEOUT_COVERS_RESPONSE : MS_TIMEOUT_COVERS_WAIT);
      ms_landscape ls;
      ms_hazard_table t;
      table_of(&s, &ls, &t);
      double e = worst_ln_error(&s, &t);
      if (getenv("MS_HAZARD_TABLE_PRINT"))
        printf("pool %ld covers %s: worst |ln| %.4f, fold %.4g s, %lu "
               "calls\n",
               cases[i].c, w ? "response" : "wait", e, t.fold_time, t.calls);
      ck_assert_msg(e < 0.35, "pool %ld covers %d: ln error %g", cases[i].c, w,
                    e);
    }
  }
}
END_TEST

/* Monotone in the load, never below the recovery load, the top's value
 * past the grid, and the grid points themselves exact. */
START_TEST(test_shape) {
  ms_service_params s = service(10, 0.1, 1, 3, MS_TIMEOUT_COVERS_WAIT);
  ms_landscape ls;
  ms_hazard_table t;
  table_of(&s, &ls, &t);
  double prev = INFINITY, v;
  for (double x = 0; x < 1.3 * ls.tipping_load; x += 0.05) {
    ck_assert_int_eq(ms_hazard_table_lookup(&t, x, &v, NULL), MS_OK);
    ck_assert(v > 0 && v <= MS_TIME_TO_STORM_NEVER);
    ck_assert_msg(v <= prev, "not monotone at %g: %g > %g", x, v, prev);
    if (x < ls.recovery_load)
      ck_assert(v == MS_TIME_TO_STORM_NEVER);
    prev = v;
  }
  for (int i = 0; i < MS_HAZARD_TABLE_POINTS; i++) {
    double direct;
    ck_assert_int_eq(ms_time_to_storm(&s, t.load[i], &direct, NULL), MS_OK);
    ck_assert_int_eq(ms_hazard_table_lookup(&t, t.load[i], &v, NULL), MS_OK);
    ck_assert_double_eq_tol(log(v), log(direct), 1e-9);
  }
  ck_assert_double_eq(t.load[0], ls.recovery_load);
  ck_assert_double_eq(t.load[MS_HAZARD_TABLE_BELOW - 1], ls.tipping_load);
  double fold;
  ck_assert_int_eq(ms_time_to_storm(&s, ls.tipping_load, &fold, NULL), MS_OK);
  ck_assert_double_eq_tol(t.fold_time / fold, 1.0, 1e-9);
  double top;
  ck_assert_int_eq(ms_hazard_table_lookup(&t, 1.2 * ls.tipping_load, &v, NULL),
                   MS_OK);
  ck_assert_int_eq(
      ms_time_to_storm(&s, MS_HAZARD_TABLE_TOP * ls.tipping_load, &top, NULL),
      MS_OK);
  ck_assert_double_eq_tol(v / top, 1.0, 1e-9);
}
END_TEST

/* A large pool: never, or as good as never, 1 % below the fold (the
 * direct call says never), and the chain is not walked under the first
 * never (10^4 servers: fewer calls than points). */
START_TEST(test_large_pool) {
  ms_service_params s = service(10000, 0.1, 1, 3, MS_TIMEOUT_COVERS_WAIT);
  ms_landscape ls;
  ms_hazard_table t;
  table_of(&s, &ls, &t);
  double v;
  ck_assert_int_eq(ms_hazard_table_lookup(&t, 0.99 * ls.tipping_load, &v, NULL),
                   MS_OK);
  ck_assert_msg(v > 1e280, "%g at %g", v, 0.99 * ls.tipping_load);
  ck_assert(t.calls < MS_HAZARD_TABLE_POINTS);
  ck_assert(t.fold_time > 1e7);
}
END_TEST

/* Step by step: incomplete until the last point, then as built whole. */
START_TEST(test_steps) {
  ms_service_params s = service(8, 0.1, 0.5, 1, MS_TIMEOUT_COVERS_RESPONSE);
  ms_landscape ls;
  ms_hazard_table whole, t;
  table_of(&s, &ls, &whole);
  ck_assert_int_eq(
      ms_hazard_table_init(&t, &s, ls.recovery_load, ls.tipping_load, NULL),
      MS_OK);
  double v;
  int steps = 0;
  while (!ms_hazard_table_complete(&t)) {
    ck_assert_int_eq(ms_hazard_table_lookup(&t, 60, &v, NULL), MS_EINVAL);
    ck_assert_int_eq(ms_hazard_table_step(&t, &s, NULL, NULL, NULL), MS_OK);
    steps++;
  }
  ck_assert_int_le(steps, MS_HAZARD_TABLE_POINTS);
  for (int i = 0; i < MS_HAZARD_TABLE_POINTS; i++)
    ck_assert(t.ln_time[i] == whole.ln_time[i]);
}
END_TEST

/* Steps halted within their points (every MS_HAZARD_WALK_STRIDE states,
 * 1000 servers: about 11,000 states a point) build the same table, point
 * for point, as whole steps, and begin each point once. */
static int halt_always(void *ctx) {
  (*(long *)ctx)++;
  return 1;
}

START_TEST(test_halted_steps) {
  ms_service_params s = service(1000, 0.1, 1, 3, MS_TIMEOUT_COVERS_RESPONSE);
  ms_landscape ls;
  ms_hazard_table whole, t;
  table_of(&s, &ls, &whole);
  ck_assert_int_eq(
      ms_hazard_table_init(&t, &s, ls.recovery_load, ls.tipping_load, NULL),
      MS_OK);
  long halts = 0, steps = 0;
  while (!ms_hazard_table_complete(&t) && steps < 100000) {
    ck_assert_int_eq(ms_hazard_table_step(&t, &s, halt_always, &halts, NULL),
                     MS_OK);
    steps++;
  }
  ck_assert(ms_hazard_table_complete(&t));
  ck_assert_int_gt(halts, 5 * (long)(whole.calls - 1));
  ck_assert_uint_eq(t.calls, whole.calls);
  for (int i = 0; i < MS_HAZARD_TABLE_POINTS; i++)
    ck_assert_msg(t.ln_time[i] == whole.ln_time[i], "point %d: %.17g, %.17g", i,
                  t.ln_time[i], whole.ln_time[i]);
}
END_TEST

START_TEST(test_domain) {
  ms_hazard_table t;
  ms_error e = {{0}};
  /* a pool past MS_HAZARD_TABLE_MAX_STATES: 10^5 servers, 1.1e6 states */
  ms_service_params big = service(100000, 0.1, 1, 3, MS_TIMEOUT_COVERS_WAIT);
  ck_assert_int_eq(ms_hazard_table_init(&t, &big, 1e5, 1e6, &e), MS_ELIMIT);
  ck_assert(!t.valid && strstr(e.msg, "states") != NULL);
  ms_service_params s = service(10, 0.1, 1, 3, MS_TIMEOUT_COVERS_WAIT);
  s.model.has_queue_limit = true;
  s.model.queue_limit = 20;
  ck_assert_int_eq(ms_hazard_table_init(&t, &s, 50, 90, &e), MS_EINVAL);
  ck_assert(!t.valid);
  ck_assert(e.msg[0] != '\0');
  s = service(10, 0.1, 1, 3, MS_TIMEOUT_COVERS_WAIT);
  ck_assert_int_eq(ms_hazard_table_init(&t, &s, 90, 50, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_hazard_table_init(&t, &s, NAN, 50, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_hazard_table_init(&t, &s, 50, 90, NULL), MS_OK);
  double v;
  ck_assert_int_eq(ms_hazard_table_lookup(&t, 60, &v, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_hazard_table_build(&t, &s, 50, 90, NULL), MS_OK);
  ck_assert_int_eq(ms_hazard_table_lookup(&t, -1, &v, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_hazard_table_lookup(&t, NAN, &v, NULL), MS_EINVAL);
}
END_TEST

Suite *hazard_table_suite(void) {
  Suite *s = suite_create("hazard_table");
  TCase *tc = tcase_create("hazard_table");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_against_direct);
  tcase_add_test(tc, test_shape);
  tcase_add_test(tc, test_large_pool);
  tcase_add_test(tc, test_steps);
  tcase_add_test(tc, test_halted_steps);
  tcase_add_test(tc, test_domain);
  suite_add_tcase(s, tc);
  return s;
}
