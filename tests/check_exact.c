/* SPDX-License-Identifier: MIT */
/*
 * The exact (GMP) side of the capacity model against the exact iteration and
 * fixed points of doc/design.md §1.6 and §2: the iteration 0.95 -> 1.05545
 * -> 1.11356... with its digit counts, and the bisection enclosure of the fixed
 * point 1.72736.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "check_suites.h"
#include "exact.h"

static void seed_lab(ms_exact_capacity *e) {
  ms_exact_capacity_init(e);
  ck_assert_int_eq(ms_exact_parse(e->offered_load, "0.95", NULL), MS_OK);
  ck_assert_int_eq(ms_exact_parse(e->capacity, "1", NULL), MS_OK);
  ck_assert_int_eq(ms_exact_parse(e->base_failure, "0.1", NULL), MS_OK);
  e->retries = 3;
}

typedef struct {
  int n;
  double value[16];
  size_t num[16], den[16];
  int saw_null;
} iter_log;

static int record(void *user, int step, const mpq_t v, size_t nd, size_t dd) {
  iter_log *l = user;
  ck_assert_int_eq(step, l->n);
  l->value[l->n] = v ? mpq_get_d(v) : NAN;
  l->saw_null |= v == NULL;
  l->num[l->n] = nd;
  l->den[l->n] = dd;
  l->n++;
  return 0;
}

START_TEST(test_seed_iteration) {
  ms_exact_capacity e;
  seed_lab(&e);
  iter_log l = {0};
  int steps, limit;
  ck_assert_int_eq(
      ms_exact_iterate(&e, 12, 3000, record, &l, &steps, &limit, NULL), MS_OK);
  /* 0.95 -> 1.05545 -> 1.11356... -> 1.17384... -> 1.23538... */
  const double want[] = {0.95, 1.05545, 1.11356, 1.17384, 1.23538};
  const double tol[] = {0, 0, 5e-6, 5e-6, 5e-6};
  for (int i = 0; i < 5; i++)
    ck_assert_msg(fabs(l.value[i] - want[i]) <= tol[i] + 1e-15,
                  "iterate %d: %.10f", i, l.value[i]);
  ck_assert_double_eq(l.value[1], 1.05545); /* 21109/20000 exactly */
  /* "five digits, then thirteen, thirty-nine, a hundred and nineteen,
   * three hundred and fifty-eight" */
  const size_t digits[] = {5, 13, 39, 119, 358};
  for (int i = 0; i < 5; i++)
    ck_assert_uint_eq(l.den[i + 1], digits[i]);
  /* "by the seventh iterate ... over three thousand digits": the table
   * stops there with a marker instead of rounding */
  ck_assert(limit);
  ck_assert(l.saw_null);
  ck_assert_int_eq(steps, 8);
  ck_assert(l.den[7] > 3000);
  ck_assert(isnan(l.value[7]));
  ms_exact_capacity_clear(&e);
}
END_TEST

START_TEST(test_seed_enclosure) {
  ms_exact_capacity e;
  seed_lab(&e);
  mpq_t lo, hi, w;
  mpq_inits(lo, hi, w, NULL);
  ck_assert_int_eq(ms_exact_fixed_point(&e, lo, hi, 60, NULL), MS_OK);
  /* both ends exact, F - L >= 0 at lo and <= 0 at hi */
  ck_assert_int_ge(ms_exact_sign(&e, lo), 0);
  ck_assert_int_le(ms_exact_sign(&e, hi), 0);
  /* relative width <= 2^-60 */
  mpq_sub(w, hi, lo);
  mpq_mul_2exp(w, w, 60);
  ck_assert(mpq_cmp(w, lo) <= 0);
  ck_assert(mpq_cmp(lo, hi) <= 0);
  /* 1.72736 */
  ck_assert_double_eq_tol(mpq_get_d(lo), 1.72736, 5e-6);
  /* the double solver and the exact enclosure agree */
  ms_service_params s;
  ms_failure_model_capacity(&s.model, 1.0);
  s.model.base_failure = 0.1;
  ms_retry_policy_fixed(&s.policy, 3);
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n;
  ck_assert_int_eq(ms_equilibria(&ls, 0.95, eq, &n, NULL), MS_OK);
  ck_assert_int_eq(n, 1);
  /* 0.95 as a double differs from 19/20 by 2^-54 or so: the fixed points
   * differ by about as much */
  ck_assert_double_eq_tol(eq[0].effective_load, mpq_get_d(lo), 1e-14);
  double clo, chi;
  ck_assert_int_eq(
      ms_exact_certify(&s, 0.95, eq[0].effective_load, &clo, &chi, NULL),
      MS_OK);
  ck_assert(clo <= eq[0].effective_load * (1 + 1e-15) &&
            chi >= eq[0].effective_load * (1 - 1e-15));
  /* 2^-60 is below a double's resolution: the outward-rounded ends are
   * at most 2 ulps apart */
  ck_assert(chi - clo <= 4 * DBL_EPSILON * clo);
  mpq_clears(lo, hi, w, NULL);
  ms_exact_capacity_clear(&e);
}
END_TEST

/* Every certified report lies inside its enclosure; several settings. */
START_TEST(test_certify_many) {
  for (int r = 0; r <= 4; r++)
    for (double base = 0.0; base < 0.3; base += 0.1)
      for (double lam = 0.1; lam < 2.0; lam += 0.137) {
        ms_service_params s;
        ms_failure_model_capacity(&s.model, 1.0);
        s.model.base_failure = base;
        ms_retry_policy_fixed(&s.policy, r);
        ms_landscape ls;
        ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
        ms_observation o = {.offered_load = lam};
        ms_analysis rep;
        ck_assert_int_eq(ms_analyze(&ls, &o, &rep, NULL), MS_OK);
        /* the per-interval path reports the double root, uncertified */
        ck_assert(!rep.certified);
        double root = rep.effective_load;
        ck_assert_int_eq(ms_analysis_certify(&ls, &rep, NULL), MS_OK);
        ck_assert_msg(rep.certified, "r=%d base=%g lambda=%g", r, base, lam);
        ms_exact_capacity e;
        ms_exact_capacity_init(&e);
        ck_assert_int_eq(ms_exact_capacity_set(&e, &s, lam, NULL), MS_OK);
        mpq_t lo, hi;
        mpq_inits(lo, hi, NULL);
        ck_assert_int_eq(ms_exact_fixed_point(&e, lo, hi, 70, NULL), MS_OK);
        ck_assert_double_eq_tol(rep.effective_load, mpq_get_d(lo),
                                1e-15 * mpq_get_d(lo));
        /* and the double root is as close as its few ulps promise */
        ck_assert_double_eq_tol(root, mpq_get_d(lo), 4e-15 * mpq_get_d(lo));
        mpq_clears(lo, hi, NULL);
        ms_exact_capacity_clear(&e);
      }
}
END_TEST

START_TEST(test_parse) {
  mpq_t q, want;
  mpq_inits(q, want, NULL);
  const struct {
    const char *text;
    long num;
    unsigned long den;
  } ok[] = {{"0.95", 19, 20},    {"1e-3", 1, 1000}, {"19/20", 19, 20},
            {"-1.5e2", -150, 1}, {"12", 12, 1},     {".5", 1, 2},
            {"2.", 2, 1},        {"+0.25", 1, 4},   {"38/40", 19, 20}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    ck_assert_msg(ms_exact_parse(q, ok[i].text, NULL) == MS_OK, "%s",
                  ok[i].text);
    mpq_set_si(want, ok[i].num, ok[i].den);
    mpq_canonicalize(want);
    ck_assert_msg(mpq_equal(q, want), "%s", ok[i].text);
  }
  const char *bad[] = {"",     "abc", "1.2.3", "1/0",   "e5", "1e",
                       "0x10", "1 ",  "--1",   "1/2/3", "."};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ms_error err = {{0}};
    ck_assert_msg(ms_exact_parse(q, bad[i], &err) == MS_EINVAL, "'%s'", bad[i]);
    ck_assert(err.msg[0] != '\0');
  }
  mpq_clears(q, want, NULL);
}
END_TEST

Suite *exact_suite(void) {
  Suite *s = suite_create("exact");
  TCase *tc = tcase_create("seed lab");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_seed_iteration);
  tcase_add_test(tc, test_seed_enclosure);
  tcase_add_test(tc, test_certify_many);
  tcase_add_test(tc, test_parse);
  suite_add_tcase(s, tc);
  return s;
}
