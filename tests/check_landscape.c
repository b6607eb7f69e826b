/* SPDX-License-Identifier: MIT */
/*
 * Equilibria, tipping and recovery loads, and states, checked against the
 * reference numbers of doc/design.md §2 and against a brute-force scan of
 * lambda(x) = x / A(p(x)) that uses nothing but its values.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_suites.h"
#include "exact.h"
#include "internal.h"
#include "metastable.h"
#include "testutil.h"

/* ---- the reference numbers (doc/design.md §2) ----------------------- */

static ms_service_params capacity_service(double C, double base, int r) {
  ms_service_params s;
  ms_failure_model_capacity(&s.model, C);
  s.model.base_failure = base;
  ms_retry_policy_fixed(&s.policy, r);
  return s;
}

static ms_analysis analyze(const ms_service_params *s, double lambda) {
  ms_landscape ls;
  ms_error err;
  ck_assert_msg(ms_landscape_build(s, &ls, &err) == MS_OK, "%s", err.msg);
  ms_observation o = {.offered_load = lambda};
  ms_analysis r;
  ck_assert_msg(ms_analyze(&ls, &o, &r, &err) == MS_OK, "%s", err.msg);
  ck_assert_msg(ms_analysis_certify(&ls, &r, &err) == MS_OK, "%s", err.msg);
  return r;
}

START_TEST(test_seed_fixed_points) {
  ms_service_params s = capacity_service(1.0, 0.1, 3);
  /* lambda = 0.80 -> 0.8888, 0.90 -> 0.9999, 0.95 -> 1.72736 at 47.9 % */
  ms_analysis r = analyze(&s, 0.80);
  ck_assert_double_eq_tol(r.effective_load, 0.8888, 5e-5);
  ck_assert_int_eq(r.state, MS_STATE_STABLE);
  r = analyze(&s, 0.90);
  ck_assert_double_eq_tol(r.effective_load, 0.9999, 5e-5);
  r = analyze(&s, 0.95);
  ck_assert_double_eq_tol(r.effective_load, 1.72736, 5e-6);
  ck_assert_double_eq_tol(r.failure_probability, 0.479, 5e-4);
  ck_assert_int_eq(r.equilibria, 1);
  ck_assert_int_eq(r.state, MS_STATE_OVERLOADED);
  ck_assert_int_eq(r.storm, 1);
  ck_assert(r.certified);
  ck_assert_double_eq_tol(r.self_inflicted_load, 1.72736 - 0.95, 5e-6);
}
END_TEST

START_TEST(test_seed_retry_sweep) {
  /* lambda = 0.95, r = 0, 1, 2, 3 -> 0.95, 1.168, 1.439, 1.727 */
  const double want[] = {0.95, 1.168, 1.439, 1.727};
  for (int r = 0; r <= 3; r++) {
    ms_service_params s = capacity_service(1.0, 0.1, r);
    ms_analysis rep = analyze(&s, 0.95);
    ck_assert_msg(fabs(rep.effective_load - want[r]) < 5e-4,
                  "r=%d: %.6f, want %.3f", r, rep.effective_load, want[r]);
  }
}
END_TEST

START_TEST(test_seed_engagement) {
  /* base = 0.05, r = 2: the loop engages above 1/1.0525 = 0.95012 */
  ms_service_params s = capacity_service(1.0, 0.05, 2);
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ck_assert(!ls.has_fold);
  ck_assert_double_eq_tol(ls.tipping_load, 1 / 1.0525, 1e-15);
  ck_assert_double_eq_tol(ls.tipping_load, 0.95012, 5e-6);
  ck_assert_double_eq(ls.recovery_load, ls.tipping_load);
  ck_assert_int_eq(analyze(&s, 0.9501).state, MS_STATE_STABLE);
  ck_assert_int_eq(analyze(&s, 0.9502).state, MS_STATE_OVERLOADED);
}
END_TEST

/* ---- brute force ------------------------------------------------------ */

typedef struct {
  const char *name;
  ms_service_params s;
} service_case;

static service_case erlang_case(const char *name, long c, double mu, double T,
                                int r, double base) {
  service_case k = {.name = name};
  ms_failure_model_erlang(&k.s.model, c, mu, T);
  k.s.model.base_failure = base;
  ms_retry_policy_fixed(&k.s.policy, r);
  return k;
}

static service_case capacity_case(const char *name, double C, double base,
                                  int r) {
  service_case k = {.name = name};
  k.s = capacity_service(C, base, r);
  return k;
}

#define N_CASES 47
static service_case cases[N_CASES];

/* Found by a fresh user: a small budget or token cap folds just below the
 * corner where it takes over, between two points of the grid (50 servers:
 * 245.26 to 246.45 req/s; the landscape said no fold).  Four cases from
 * cases[i]; returns the next index. */
static int add_cap_corner_cases(int i) {
  const double caps[] = {0.01, 0.02};
  const long servers[] = {50, 200};
  const double timeouts[] = {2.0, 0.05};
  const int retries[] = {3, 5};
  for (int j = 0; j < 2; j++)
    for (int token = 0; token < 2; token++) {
      cases[i] =
          erlang_case(token ? "erlang small token cap" : "erlang small budget",
                      servers[j], 5, timeouts[j], retries[j], 0);
      cases[i].s.policy.has_token = token;
      cases[i].s.policy.token_ratio = token ? caps[j] : 0;
      cases[i].s.policy.has_budget = !token;
      cases[i++].s.policy.retry_budget = token ? 0 : caps[j];
    }
  return i;
}

/* The same corner where a named policy's cap takes over from the fixed
 * count: the AWS quota with a refund too small to pay for the retries at
 * moderate failure (the recommend example's answer, 0.012, and a
 * smaller one), Finagle's share alone, and gRPC's throttling with a
 * small token ratio. */
static int add_named_corner_cases(int i) {
  const double refunds[] = {0.012, 0.003};
  const long servers[] = {50, 200};
  const double timeouts[] = {2.0, 0.05};
  const int retries[] = {3, 5};
  for (int j = 0; j < 2; j++) {
    cases[i] = erlang_case("erlang AWS small refund", servers[j], 5,
                           timeouts[j], retries[j], 0);
    ms_policy_defaults(&cases[i].s.policy, MS_POLICY_AWS);
    cases[i].s.policy.kind = MS_POLICY_AWS;
    cases[i++].s.policy.aws_refund = refunds[j];
    cases[i] = erlang_case("erlang Finagle small share", servers[j], 5,
                           timeouts[j], retries[j], 0);
    ms_policy_defaults(&cases[i].s.policy, MS_POLICY_FINAGLE);
    cases[i].s.policy.kind = MS_POLICY_FINAGLE;
    cases[i].s.policy.finagle_min_per_second = 0;
    cases[i++].s.policy.finagle_percent = 0.01 * (j + 1);
    cases[i] = erlang_case("erlang gRPC small ratio", servers[j], 5,
                           timeouts[j], retries[j], 0);
    cases[i].s.policy.kind = MS_POLICY_GRPC;
    cases[i].s.policy.grpc_max_tokens = j ? 1000 : 10;
    cases[i++].s.policy.grpc_token_ratio = 0.05;
  }
  return i;
}

static void make_cases(void) {
  int i = 0;
  cases[i++] = erlang_case("erlang c=30 r=1", 30, 10, 1, 1, 0);
  cases[i++] = erlang_case("erlang c=30 r=3", 30, 10, 1, 3, 0);
  cases[i++] = erlang_case("erlang c=1 T=0.01", 1, 10, 0.01, 3, 0);
  cases[i++] = erlang_case("erlang c=1000 base", 1000, 2, 0.5, 2, 0.01);
  cases[i++] = erlang_case("erlang c=1e5", 100000, 100, 0.1, 3, 0);
  cases[i++] = erlang_case("erlang c=1e6", 1000000, 10, 1, 3, 0);
  cases[i] = erlang_case("erlang tiers=4", 30, 10, 1, 3, 0);
  cases[i++].s.policy.tiers = 4;
  cases[i] = erlang_case("erlang tiers=4 budget", 30, 10, 1, 3, 0);
  cases[i].s.policy.tiers = 4;
  cases[i].s.policy.has_budget = true;
  cases[i++].s.policy.retry_budget = 0.1;
  cases[i] = erlang_case("erlang token", 30, 10, 1, 3, 0);
  cases[i].s.policy.has_token = true;
  cases[i++].s.policy.token_ratio = 0.1;
  cases[i] = erlang_case("erlang token 0.9", 30, 10, 1, 3, 0);
  cases[i].s.policy.has_token = true;
  cases[i++].s.policy.token_ratio = 0.9;
  cases[i++] = erlang_case("erlang long timeout", 50, 1, 20, 5, 0.05);
  cases[i++] = erlang_case("erlang T=0", 10, 5, 0, 2, 0);
  cases[i++] = erlang_case("erlang r=0", 30, 10, 1, 0, 0);
  cases[i++] = capacity_case("capacity seed", 1, 0.1, 3);
  cases[i] = capacity_case("capacity tiers=3", 100, 0, 3);
  cases[i++].s.policy.tiers = 3;
  cases[i] = capacity_case("capacity budget", 1, 0.05, 2);
  cases[i].s.policy.has_budget = true;
  cases[i++].s.policy.retry_budget = 0.2;
  cases[i] = capacity_case("capacity token", 1, 0.1, 3);
  cases[i].s.policy.has_token = true;
  cases[i++].s.policy.token_ratio = 0.5;
  cases[i] = capacity_case("capacity tiers=2 budget", 10, 0.01, 4);
  cases[i].s.policy.tiers = 2;
  cases[i].s.policy.has_budget = true;
  cases[i++].s.policy.retry_budget = 0.5;
  /* found by a reviewer: the last piece's bracket must use the largest
   * amplification, not A(1) (a token bucket makes A(1) = 1) */
  cases[i] = capacity_case("capacity token tiers=2", 100, 0, 1);
  cases[i].s.policy.tiers = 2;
  cases[i].s.policy.has_token = true;
  cases[i++].s.policy.token_ratio = 1.0;
  cases[i] = erlang_case("erlang token tiers=3", 30, 10, 1, 2, 0);
  cases[i].s.policy.tiers = 3;
  cases[i].s.policy.has_token = true;
  cases[i++].s.policy.token_ratio = 0.5;
  /* base 0: lambda = C/(1 - p^4) is flat to second order above C, and
   * rounding must not invent a fold there */
  cases[i++] = capacity_case("capacity base 0", 1, 0, 3);
  /* the named policies, per-tier retries and nested tiers (issue 14) */
  cases[i] = erlang_case("erlang grpc 10:0.1", 30, 10, 1, 4, 0);
  ms_policy_defaults(&cases[i].s.policy, MS_POLICY_GRPC);
  cases[i].s.policy.grpc_max_tokens = 10;
  cases[i++].s.policy.grpc_token_ratio = 0.1;
  cases[i] = erlang_case("erlang grpc 1000:0.5", 30, 10, 1, 3, 0.01);
  ms_policy_defaults(&cases[i].s.policy, MS_POLICY_GRPC);
  cases[i].s.policy.grpc_max_tokens = 1000;
  cases[i++].s.policy.grpc_token_ratio = 0.5;
  cases[i] = erlang_case("erlang envoy default", 30, 10, 1, 3, 0);
  ms_policy_defaults(&cases[i++].s.policy, MS_POLICY_ENVOY);
  cases[i] = erlang_case("erlang envoy 10% min 0", 50, 5, 2, 3, 0.01);
  ms_policy_defaults(&cases[i].s.policy, MS_POLICY_ENVOY);
  cases[i].s.policy.envoy_budget = 0.1;
  cases[i++].s.policy.envoy_min_concurrency = 0;
  cases[i] = erlang_case("erlang envoy min 40", 50, 5, 2, 3, 0);
  ms_policy_defaults(&cases[i].s.policy, MS_POLICY_ENVOY);
  cases[i].s.policy.envoy_budget = 0.05;
  cases[i++].s.policy.envoy_min_concurrency = 40;
  cases[i] = erlang_case("erlang finagle default", 30, 10, 1, 3, 0);
  ms_policy_defaults(&cases[i++].s.policy, MS_POLICY_FINAGLE);
  cases[i] = erlang_case("erlang finagle 50% min 0", 30, 10, 1, 3, 0);
  ms_policy_defaults(&cases[i].s.policy, MS_POLICY_FINAGLE);
  cases[i].s.policy.finagle_percent = 0.5;
  cases[i++].s.policy.finagle_min_per_second = 0;
  cases[i] = erlang_case("erlang aws default", 30, 10, 1, 2, 0.01);
  ms_policy_defaults(&cases[i++].s.policy, MS_POLICY_AWS);
  cases[i] = erlang_case("erlang nested 3 tiers", 30, 10, 0.5, 2, 0);
  cases[i].s.policy.tiers = 3;
  cases[i++].s.policy.nested = 6u;
  cases[i] = erlang_case("erlang tiers 1,3,2 half nested", 30, 10, 0.5, 1, 0);
  cases[i].s.policy.tiers = 3;
  cases[i].s.policy.has_tier_retries = true;
  cases[i].s.policy.tier_retries[1] = 3;
  cases[i].s.policy.tier_retries[2] = 2;
  cases[i++].s.policy.nested = 2u;
  cases[i] = capacity_case("capacity aws", 100, 0.01, 2);
  ms_policy_defaults(&cases[i++].s.policy, MS_POLICY_AWS);
  cases[i] = capacity_case("capacity finagle", 100, 0.01, 3);
  ms_policy_defaults(&cases[i++].s.policy, MS_POLICY_FINAGLE);
  cases[i] = capacity_case("capacity grpc", 100, 0.02, 4);
  ms_policy_defaults(&cases[i].s.policy, MS_POLICY_GRPC);
  cases[i].s.policy.grpc_max_tokens = 100;
  cases[i++].s.policy.grpc_token_ratio = 0.2;
  cases[i] = capacity_case("capacity nested 4x3", 1, 0.1, 3);
  cases[i].s.policy.tiers = 4;
  cases[i++].s.policy.nested = 14u;
  /* found by a reviewer: past 64 retries (the closed form of the count)
   * gRPC's throttle makes p f round to 0, and p^(n-1) must not be NaN */
  cases[i] = capacity_case("capacity grpc r=100", 100, 0, 100);
  ms_policy_defaults(&cases[i].s.policy, MS_POLICY_GRPC);
  cases[i].s.policy.grpc_max_tokens = 1000;
  cases[i++].s.policy.grpc_token_ratio = 1;
  cases[i] = erlang_case("erlang grpc r=65", 7, 1, 3, 65, 0);
  ms_policy_defaults(&cases[i].s.policy, MS_POLICY_GRPC);
  cases[i].s.policy.grpc_max_tokens = 10;
  cases[i++].s.policy.grpc_token_ratio = 1e-10;
  i = add_cap_corner_cases(i);
  i = add_named_corner_cases(i);
  ck_assert_int_eq(i, N_CASES);
}

#define BRUTE_N 120000

/* lambda(x) on a dense grid that reaches far into the wait-tail
 * transition; x ascending. */
static int brute_grid(const ms_service_params *s, double *x, double *lam) {
  int n = 0;
  if (s->model.kind == MS_MODEL_ERLANG) {
    double cap = s->model.servers * s->model.service_rate;
    for (int i = 1; i < BRUTE_N / 2; i++)
      x[n++] = cap * i / (BRUTE_N / 2);
    for (int i = 0; i < BRUTE_N / 2; i++)
      x[n++] = cap * (1 - pow(10.0, -16.0 * (i + 1) / (BRUTE_N / 2)));
    x[n++] = cap;
    for (int i = 1; i < 50; i++)
      x[n++] = cap * (1 + 0.1 * i);
  } else {
    double C = s->model.capacity;
    for (int i = 0; i < BRUTE_N; i++)
      x[n++] = C * pow(10.0, -2.0 + 12.0 * i / (BRUTE_N - 1));
    x[n++] = C;
  }
  ms_sort_doubles(x, (size_t)n);
  for (int i = 0; i < n; i++)
    ck_assert_int_eq(ms_offered_load_at(s, x[i], &lam[i], NULL), MS_OK);
  return n;
}

/* The local extrema of the sampled values lam[0 .. n-1], at most 64, in
 * ext (values) and ext_i (indices); returns how many.  A reversal counts
 * only when the values move away from the running extreme by more than
 * 1e-9 of it, so rounding noise on flat stretches is not taken for a
 * fold. */
static int sampled_extrema(const double *lam, int n, double *ext, int *ext_i) {
  int ne = 0, dir = 0, run = 0;
  for (int i = 1; i < n && ne < 64; i++) {
    if (dir >= 0 && lam[i] >= lam[run]) {
      run = i;
      if (dir == 0 && lam[i] > lam[0] * (1 + 1e-9))
        dir = 1;
    } else if (dir <= 0 && lam[i] <= lam[run]) {
      run = i;
    } else if (fabs(lam[i] - lam[run]) > 1e-9 * fabs(lam[run])) {
      if (dir != 0) {
        ext_i[ne] = run;
        ext[ne++] = lam[run];
      }
      dir = lam[i] > lam[run] ? 1 : -1;
      run = i;
    }
  }
  return ne;
}

/* Extremum j of the grid (a maximum for even j), at grid index at with
 * value sampled, sharpened by rescanning its neighbourhood 4 times, is the
 * landscape's breakpoint j + 1 to 1e-10; and a maximum is never below a
 * sampled value, a minimum never above. */
static void check_extremum(const service_case *k, const ms_landscape *ls,
                           const double *x, int n, int j, int at,
                           double sampled) {
  int is_max = j % 2 == 0;
  double lo = x[at > 0 ? at - 1 : 0];
  double hi = x[at + 1 < n ? at + 1 : n - 1];
  double best = sampled;
  for (int level = 0; level < 4; level++) {
    double bx = lo, step = (hi - lo) / 2000;
    for (int q = 0; q <= 2000; q++) {
      double xq = lo + step * q, lq;
      ms_offered_load_at(&k->s, xq, &lq, NULL);
      if (is_max ? lq > best : lq < best) {
        best = lq;
        bx = xq;
      }
    }
    lo = fmax(bx - step, lo);
    hi = fmin(bx + step, hi);
  }
  double got = ls->break_lambda[j + 1];
  ck_assert_msg(fabs(got - best) <= 1e-10 * got,
                "%s: extremum %d at lambda %.15g, brute force %.15g", k->name,
                j, got, best);
  if (is_max)
    ck_assert_msg(got >= best * (1 - 1e-13), "%s: max too low", k->name);
  else
    ck_assert_msg(got <= best * (1 + 1e-13), "%s: min too high", k->name);
}

/* Equilibrium q of those at offered load L (eq ascending): it solves the
 * equation, or lambda(x) - L changes sign within 4 ulps of it (a steep
 * branch near saturation); its stability is the sign of the slope; it is
 * never below L. */
static void check_root(const service_case *k, const ms_equilibrium *eq, int q,
                       double L) {
  double xe = eq[q].effective_load, le, lm, lp;
  ck_assert(q == 0 || xe > eq[q - 1].effective_load);
  ms_offered_load_at(&k->s, xe, &le, NULL);
  double la, lb2;
  ms_offered_load_at(&k->s, xe * (1 - 4 * DBL_EPSILON), &la, NULL);
  ms_offered_load_at(&k->s, xe * (1 + 4 * DBL_EPSILON), &lb2, NULL);
  ck_assert_msg(fabs(le - L) <= 1e-12 * L || (la - L) * (lb2 - L) <= 0,
                "%s: lambda(x)=%.17g != %.17g", k->name, le, L);
  ms_offered_load_at(&k->s, xe * (1 - 1e-7), &lm, NULL);
  ms_offered_load_at(&k->s, xe * (1 + 1e-7), &lp, NULL);
  ck_assert_msg(eq[q].stable == (lp > lm),
                "%s: stability of x=%.17g is %d, slope says %d", k->name, xe,
                eq[q].stable, lp > lm);
  ck_assert(eq[q].effective_load >= L * (1 - 1e-14));
}

/* The equilibria at 60 offered loads up to 1.6 times the fold: as many
 * as the sign changes of lambda(x) - L on the dense grid, each checked by
 * check_root.  Loads at the tipping or recovery load are skipped: a
 * double root there is one crossing or two by rounding. */
static void check_equilibria(const service_case *k, const ms_landscape *ls,
                             const double *lam, int n) {
  double hi = fmax(ls->tipping_load, ls->recovery_load) * 1.6;
  for (int t = 1; t <= 60; t++) {
    double L = hi * t / 60.0;
    if (fabs(L - ls->tipping_load) < 1e-6 * L ||
        fabs(L - ls->recovery_load) < 1e-6 * L)
      continue;
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int neq;
    ms_error err;
    ck_assert_msg(ms_equilibria(ls, L, eq, &neq, &err) == MS_OK, "%s: %s",
                  k->name, err.msg);
    int crossings = 0;
    for (int i = 1; i < n; i++)
      if ((lam[i - 1] < L) != (lam[i] < L))
        crossings++;
    if (lam[n - 1] < L)
      crossings++; /* the root beyond the grid on the rising tail */
    ck_assert_msg(neq == crossings,
                  "%s lambda=%.12g: %d equilibria, %d "
                  "crossings",
                  k->name, L, neq, crossings);
    for (int q = 0; q < neq; q++)
      check_root(k, eq, q, L);
  }
}

START_TEST(test_brute_force_extrema) {
  make_cases();
  const service_case *k = &cases[_i];
  static double x[BRUTE_N + 100], lam[BRUTE_N + 100];
  int n = brute_grid(&k->s, x, lam);
  ms_landscape ls;
  ms_error err;
  ck_assert_msg(ms_landscape_build(&k->s, &ls, &err) == MS_OK, "%s: %s",
                k->name, err.msg);
  double ext[64];
  int ext_i[64];
  int ne = sampled_extrema(lam, n, ext, ext_i);
  ck_assert_msg(ne == ls.n_breaks - 1,
                "%s: brute force finds %d extrema, landscape %d", k->name, ne,
                ls.n_breaks - 1);
  for (int j = 0; j < ne; j++)
    check_extremum(k, &ls, x, n, j, ext_i[j], ext[j]);
  printf("%-24s tipping %.12g recovery %.12g (%d extrema)\n", k->name,
         ls.tipping_load, ls.recovery_load, ne);
  check_equilibria(k, &ls, lam, n);
}
END_TEST

/* The count changes exactly at the tipping and recovery loads. */
START_TEST(test_count_changes_at_fold) {
  make_cases();
  const service_case *k = &cases[_i];
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&k->s, &ls, NULL), MS_OK);
  if (!ls.has_fold || ls.tipping_load <= ls.recovery_load)
    return;
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int below, at, above;
  double tip = ls.tipping_load, rec = ls.recovery_load;
  ck_assert_int_eq(ms_equilibria(&ls, nextafter(tip, 0), eq, &below, NULL),
                   MS_OK);
  ck_assert_int_eq(ms_equilibria(&ls, tip, eq, &at, NULL), MS_OK);
  ck_assert_int_eq(
      ms_equilibria(&ls, nextafter(tip, INFINITY), eq, &above, NULL), MS_OK);
  ck_assert_msg(below == above + 2 && at == above + 1,
                "%s at tipping: %d / %d / %d", k->name, below, at, above);
  ck_assert_int_eq(ms_equilibria(&ls, nextafter(rec, 0), eq, &below, NULL),
                   MS_OK);
  ck_assert_int_eq(ms_equilibria(&ls, rec, eq, &at, NULL), MS_OK);
  ck_assert_int_eq(
      ms_equilibria(&ls, nextafter(rec, INFINITY), eq, &above, NULL), MS_OK);
  ck_assert_msg(above == below + 2 && at == below + 1,
                "%s at recovery: %d / %d / %d", k->name, below, at, above);
}
END_TEST

/* Erlang with a fixed count: recovery at x = c mu, lambda = c mu/(r+1). */
START_TEST(test_erlang_recovery_load) {
  const long cs[] = {1, 3, 30, 1000, 100000, 1000000};
  for (int i = 0; i < 6; i++)
    for (int r = 1; r <= 5; r += 2) {
      ms_service_params s;
      double mu = 10.0, T = 1.0;
      ms_failure_model_erlang(&s.model, cs[i], mu, T);
      ms_retry_policy_fixed(&s.policy, r);
      ms_landscape ls;
      ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
      if (!ls.has_fold)
        continue;
      double want = cs[i] * mu / (r + 1);
      ck_assert_msg(fabs(ls.recovery_load - want) <= 1e-14 * want,
                    "c=%ld r=%d: recovery %.17g, want %.17g", cs[i], r,
                    ls.recovery_load, want);
      ck_assert_double_eq(ls.recovery_effective_load, cs[i] * mu);
    }
}
END_TEST

/* Budgets and token buckets never exceed their caps, at any equilibrium. */
START_TEST(test_caps_hold) {
  const double budgets[] = {0.0, 0.05, 0.1, 0.5};
  for (int b = 0; b < 4; b++)
    for (int tiers = 1; tiers <= 3; tiers++)
      for (int model = 0; model < 2; model++) {
        ms_service_params s;
        if (model)
          ms_failure_model_erlang(&s.model, 30, 10, 1);
        else
          ms_failure_model_capacity(&s.model, 300);
        ms_retry_policy_fixed(&s.policy, 3);
        s.policy.tiers = tiers;
        s.policy.has_budget = true;
        s.policy.retry_budget = budgets[b];
        ms_landscape ls;
        ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
        double cap = pow(1.0 / (1.0 - budgets[b]), tiers);
        for (double L = 10; L < 600; L += 7) {
          ms_equilibrium eq[MS_MAX_EQUILIBRIA];
          int n;
          ck_assert_int_eq(ms_equilibria(&ls, L, eq, &n, NULL), MS_OK);
          for (int q = 0; q < n; q++) {
            ck_assert(eq[q].amplification <= cap * (1 + 1e-15));
            ck_assert(eq[q].effective_load <= L * cap * (1 + 1e-14));
          }
        }
      }
  /* the SRE 10 % budget: never above 1.11 */
  double A;
  ms_retry_policy p;
  ms_retry_policy_fixed(&p, 3);
  p.has_budget = true;
  p.retry_budget = 0.1;
  for (double q = 0; q <= 1.0; q += 0.01) {
    ck_assert_int_eq(ms_amplification(&p, q, &A, NULL), MS_OK);
    ck_assert(A <= 1.0 / 0.9 + 1e-15 && A < 1.112);
  }
  /* token bucket: A <= 1/(1 - t(1 - p)) */
  ms_retry_policy_fixed(&p, 5);
  p.has_token = true;
  p.token_ratio = 0.1;
  for (double q = 0; q <= 1.0; q += 0.01) {
    ck_assert_int_eq(ms_amplification(&p, q, &A, NULL), MS_OK);
    ck_assert(A <= 1.0 / (1.0 - 0.1 * (1.0 - q)) * (1 + 1e-15));
  }
  /* layered worst case: 4 tiers x 3 retries = 256 */
  ms_retry_policy_fixed(&p, 3);
  p.tiers = 4;
  ck_assert_int_eq(ms_amplification(&p, 1.0, &A, NULL), MS_OK);
  ck_assert_double_eq(A, 256.0);
}
END_TEST

/* The elasticity bounds that let the landscape skip evaluating Erlang B at
 * most grid points never contradict the full evaluation: wherever they
 * decide, lambda(x) rises (E < 1) or falls (E >= 1) as evaluated, over
 * pools from 1 to 10^7 servers, timeouts, bases, tiers, budgets and token
 * buckets, at distances to saturation from c mu down to 1e-16 c mu. */
START_TEST(test_sign_bounds_agree) {
  const long cs[] = {1, 2, 7, 40, 41, 300, 5000, 100000, 1000000, 10000000};
  const double mus[] = {0.01, 10, 1e5}, Ts[] = {0, 1e-3, 0.3, 1, 30};
  const double bases[] = {0, 0.05, 0.5};
  long decided = 0, points = 0, decided_one = 0, points_one = 0;
  for (int ic = 0; ic < 10; ic++)
    for (int im = 0; im < 3; im++)
      for (int iT = 0; iT < 5; iT++)
        for (int ib = 0; ib < 3; ib++)
          for (int pol = 0; pol < 6; pol++) {
            ms_service_params s;
            ms_failure_model_erlang(&s.model, cs[ic], mus[im], Ts[iT]);
            s.model.base_failure = bases[ib];
            ms_retry_policy_fixed(&s.policy, pol == 5 ? 0 : 1 + pol % 3 * 2);
            s.policy.tiers = pol == 1 ? 4 : 1;
            s.policy.has_budget = pol == 3;
            s.policy.retry_budget = 0.2;
            s.policy.has_token = pol == 4;
            s.policy.token_ratio = 0.5;
            double cmu = cs[ic] * mus[im];
            for (int k = 0; k <= 160; k++) {
              double x = k < 32 ? cmu * (k + 0.5) / 32
                                : cmu * (1 - pow(10.0, -(k - 32) / 8.0));
              int sign = ms_landscape_sign_bound(&s, x);
              ck_assert_msg(sign != -2, "bound order matters at x = %.17g", x);
              points++;
              points_one += cs[ic] == 1;
              if (sign < 0)
                continue;
              decided++;
              decided_one += cs[ic] == 1;
              ms_point pt;
              ms_point_eval(&s, x, &pt);
              ck_assert_msg(sign == (pt.elast < 1.0),
                            "c=%ld mu=%g T=%g base=%g policy %d x=%.17g: "
                            "bound says %s, E = %.17g",
                            cs[ic], mus[im], Ts[iT], bases[ib], pol, x,
                            sign ? "rising" : "falling", pt.elast);
            }
          }
  printf("elasticity bounds decided %ld of %ld points, %ld of %ld with one "
         "server\n",
         decided, points, decided_one, points_one);
  /* the bounds do their job: they decide a good share of the points, also
   * for one server (Erlang C in closed form) */
  ck_assert_int_gt(decided, points * 2 / 5);
  ck_assert_int_gt(decided_one, points_one * 2 / 5);
}
END_TEST

/* ---- general service times (doc/design.md §1.1) -------------------- */

/* The M/G/c tail is the M/M/c one with the effective timeout 2T/(1 + cv^2)
 * in place of T, in p, in x p'(x) and in the sign bounds; cv = 1 is the
 * M/M/c model bit for bit, and a larger cv tips earlier. */
START_TEST(test_service_time_cv) {
  const double cvs[] = {0, 0.5, 1, 2, 4, 10};
  double last_tip = HUGE_VAL;
  for (int i = 0; i < 6; i++) {
    ms_service_params g, e;
    ms_failure_model_erlang(&g.model, 10, 10, 0.3);
    g.model.base_failure = 0.01;
    g.model.has_service_time_cv = true;
    g.model.service_time_cv = cvs[i];
    ms_retry_policy_fixed(&g.policy, 3);
    e = g;
    e.model.has_service_time_cv = false;
    double Te = 0.3 * 2.0 / (1.0 + cvs[i] * cvs[i]);
    ck_assert(ms_effective_timeout(&g.model) == Te);
    if (cvs[i] != 1.0)
      e.model.timeout = Te;
    ck_assert_int_eq(ms_service_params_check(&g, NULL), MS_OK);
    for (int k = 1; k < 200; k++) {
      double x = 100.0 * k / 200.0;
      ms_point pg, pe;
      ms_point_eval(&g, x, &pg);
      ms_point_eval(&e, x, &pe);
      ck_assert(pg.p == pe.p && pg.elast == pe.elast && pg.lambda == pe.lambda);
      int sign = ms_landscape_sign_bound(&g, x);
      ck_assert(sign == -1 || sign == (pg.elast < 1.0));
      /* x p'(x) against a central difference of p */
      double h = 1e-6 * x, pp, pm;
      ck_assert_int_eq(ms_failure_probability(&g.model, x + h, &pp, NULL),
                       MS_OK);
      ck_assert_int_eq(ms_failure_probability(&g.model, x - h, &pm, NULL),
                       MS_OK);
      double A, dA;
      ms_tier_amplification(&g.policy, g.policy.retries, pg.p, 1.0 - pg.p, 0.0,
                            &A, &dA);
      double xdp = pg.elast * A / dA, fd = x * (pp - pm) / (2 * h);
      ck_assert_msg(fabs(xdp - fd) <= 1e-5 * fabs(fd) + 1e-8,
                    "cv %g x %g: x p' = %.10g, difference %.10g", cvs[i], x,
                    xdp, fd);
    }
    ms_landscape ls;
    ck_assert_int_eq(ms_landscape_build(&g, &ls, NULL), MS_OK);
    ck_assert_msg(ls.tipping_load < last_tip, "cv %g: tipping %.10g", cvs[i],
                  ls.tipping_load);
    last_tip = ls.tipping_load;
  }
  /* cv = 1 given is the model without it, landscape and all */
  ms_service_params a, b;
  ms_failure_model_erlang(&a.model, 30, 10, 1);
  ms_retry_policy_fixed(&a.policy, 1);
  b = a;
  b.model.has_service_time_cv = true;
  b.model.service_time_cv = 1.0;
  ms_landscape la, lb;
  ck_assert_int_eq(ms_landscape_build(&a, &la, NULL), MS_OK);
  ck_assert_int_eq(ms_landscape_build(&b, &lb, NULL), MS_OK);
  ck_assert(la.tipping_load == lb.tipping_load &&
            la.recovery_load == lb.recovery_load &&
            la.tipping_effective_load == lb.tipping_effective_load);
  /* the range, and the capacity model has no service time */
  ms_error err;
  b.model.service_time_cv = 10.5;
  ck_assert_int_eq(ms_service_params_check(&b, &err), MS_EINVAL);
  ck_assert_str_eq(err.msg, "service_time_cv = 10.5 is outside [0, 10]");
  b.model.service_time_cv = -0.1;
  ck_assert_int_eq(ms_service_params_check(&b, NULL), MS_EINVAL);
  ms_failure_model_capacity(&b.model, 100);
  b.model.has_service_time_cv = true;
  b.model.service_time_cv = 1;
  ck_assert_int_eq(ms_service_params_check(&b, &err), MS_EINVAL);
  ck_assert(strstr(err.msg, "erlang model") != NULL);
}
END_TEST

/* ---- states (doc/design.md §1.4) ---------------------------------- */

START_TEST(test_states) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 30, 10, 1);
  ms_retry_policy_fixed(&s.policy, 1);
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ck_assert(ls.has_fold);
  ck_assert_double_eq_tol(ls.recovery_load, 150.0, 1e-12);
  double band = 0.5 * (ls.recovery_load + ls.tipping_load);
  ms_analysis r;
  ms_observation o = {.offered_load = band};
  /* cold start in the band: healthy basin */
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_VULNERABLE);
  ck_assert_int_eq(r.storm, 0);
  ck_assert_int_eq(r.equilibria, 3);
  ck_assert_double_eq(r.effective_load, r.eq[0].effective_load);
  /* hysteresis: after a storm, the band stays collapsed */
  o.has_previous = true;
  o.previous = MS_STATE_OVERLOADED;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_METASTABLE);
  ck_assert_int_eq(r.storm, 1);
  ck_assert_double_eq(r.effective_load, r.eq[2].effective_load);
  o.previous = MS_STATE_VULNERABLE;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_VULNERABLE);
  /* an observation beyond the noise of a minute's counts beats the
   * previous state; within it, the previous basin holds */
  double split = r.eq[1].effective_load;
  o.interval = 60.0;
  o.has_observed_attempts = true;
  o.observed_attempts = split * 1.05;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_METASTABLE);
  o.observed_attempts = split * 1.001;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_VULNERABLE);
  o.previous = MS_STATE_METASTABLE;
  o.observed_attempts = split * 0.999;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_METASTABLE);
  o.observed_attempts = split * 0.95;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_VULNERABLE);
  o.previous = MS_STATE_VULNERABLE;
  /* failure ratio when attempts are not observed */
  o.has_observed_attempts = false;
  o.has_observed_failure = true;
  o.observed_failure = fmin(1.0, r.eq[1].failure_probability * 1.1 + 0.01);
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_METASTABLE);
  o.observed_failure = 0.0;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_VULNERABLE);
  /* below recovery: stable whatever was observed; above tipping:
   * overloaded */
  o.offered_load = 0.9 * ls.recovery_load;
  o.observed_failure = 1.0;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_STABLE);
  ck_assert_int_eq(r.equilibria, 1);
  o.offered_load = 1.01 * ls.tipping_load;
  o.observed_failure = 0.0;
  o.has_previous = false; /* a cold start: no side of the tipping load holds
                             within the noise (doc/design.md §1.4) */
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_OVERLOADED);
  ck_assert_int_eq(r.equilibria, 1);
  /* the reported values hang together (doc/design.md §1.5) */
  ck_assert_double_eq_tol(r.effective_load, 2 * o.offered_load,
                          1e-12 * r.effective_load);
  ck_assert_double_eq_tol(r.self_inflicted_load,
                          r.effective_load - o.offered_load, 1e-9);
  ck_assert_double_eq_tol(r.amplification, 2.0, 1e-12);
  ck_assert_double_eq_tol(r.utilization, r.effective_load / 300.0, 1e-15);
  ck_assert_double_eq_tol(r.tipping_distance, ls.tipping_load - o.offered_load,
                          1e-12);
  ck_assert_double_eq_tol(r.tipping_headroom, -0.01 / 1.0, 1e-12);
  ck_assert_double_eq(r.failure_probability, 1.0);
  /* no traffic */
  o = (ms_observation){.offered_load = 0.0};
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, NULL), MS_OK);
  ck_assert_int_eq(r.state, MS_STATE_STABLE);
  ck_assert_double_eq(r.effective_load, 0.0);
  ck_assert_double_eq(r.amplification, 1.0);
}
END_TEST

/* Offered loads at the edges of a double: a clear error rather than an
 * infinite effective load, and tiny loads solved, not "no convergence". */
START_TEST(test_extreme_loads) {
  ms_service_params s = capacity_service(1e300, 0.5, 100);
  s.policy.tiers = 10;
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ms_observation o = {.offered_load = 1e300};
  ms_analysis r;
  ms_error err = {{0}};
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "too large"));
  s = capacity_service(1.0, 0.0, 3);
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  for (double lam = 1e-300; lam < 1.0; lam *= 1e20) {
    o.offered_load = lam;
    ck_assert_int_eq(ms_analyze(&ls, &o, &r, &err), MS_OK);
    ck_assert_double_eq_tol(r.effective_load, lam, 1e-15 * lam);
  }
  /* at the capacity itself: one equilibrium, stable */
  o.offered_load = 1.0;
  ck_assert_int_eq(ms_analyze(&ls, &o, &r, &err), MS_OK);
  ck_assert_int_eq(r.equilibria, 1);
  ck_assert(r.eq[0].stable);
}
END_TEST

/* A queue-limited pool far beyond saturation, where 1 - p is 250/x: an
 * AWS quota whose refund (1e12 tokens a success) keeps it full until x
 * passes 10^13 must give the landscape of the same pool without the
 * quota, whose fold (none, the loop reaching capacity at 247.7 req/s)
 * lies where the quota cannot bind.  Before 1 - p and ln(1 - P_block)
 * kept their digits there, rounding in them made a "tipping load" of
 * 1.8e16 req/s.  And p itself keeps its digits where it is tiny: at a
 * wait tail of ~1e-43 it is that tail, not 1 - (1 - tail) = 0. */
START_TEST(test_far_beyond_saturation) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 50, 5.0, 2.0);
  s.model.has_queue_limit = true;
  s.model.queue_limit = 100;
  ms_retry_policy_fixed(&s.policy, 3);
  ms_landscape bare, quota;
  ck_assert_int_eq(ms_landscape_build(&s, &bare, NULL), MS_OK);
  ms_policy_defaults(&s.policy, MS_POLICY_AWS);
  s.policy.kind = MS_POLICY_AWS;
  s.policy.aws_refund = 1e12;
  ck_assert_int_eq(ms_landscape_build(&s, &quota, NULL), MS_OK);
  ck_assert(!bare.has_fold && !quota.has_fold);
  ck_assert_double_eq_tol(quota.tipping_load, bare.tipping_load,
                          1e-12 * bare.tipping_load);
  ck_assert_double_eq_tol(quota.recovery_load, bare.recovery_load,
                          1e-12 * bare.recovery_load);
  ck_assert(bare.tipping_load < 250.0);

  ms_failure_model m;
  ms_failure_model_erlang(&m, 10, 10.0, 1.0);
  double x = 1.0, ln_c, p;
  ck_assert_int_eq(ms_erlang_ln_c(10, x / 10.0, &ln_c, NULL), MS_OK);
  double tail = exp(ln_c - (100.0 - x) * 1.0);
  ck_assert(tail > 0.0 && tail < 1e-40);
  ck_assert_int_eq(ms_failure_probability(&m, x, &p, NULL), MS_OK);
  ck_assert_msg(fabs(p - tail) <= 1e-12 * tail, "p %g, tail %g", p, tail);
}
END_TEST

/* ---- the 50-digit landscapes (tools/gen_landscape.py) ----------------- */

/* One row of tests/data/landscape.csv: a quantity of service `service` (its
 * parameters on every row), at offered_load (0: of the landscape), the
 * index-th equilibrium; the reference in long double; condition
 * 1/|1 - E(x)| at an equilibrium. */
typedef struct {
  int service, line;
  ms_service_params s;
  char quantity[32];
  double offered;
  int index;
  long double value;
  double condition;
} landscape_row;

static bool parse_landscape_row(const char *line, landscape_row *x) {
  char model[16];
  long c;
  double mu, T, C, base, cond;
  int r, k, final, used = 0;
  long K;
  if (sscanf(line,
             "%d,%15[^,],%ld,%lf,%lf,%lf,%lf,%d,%d,%ld,%d,%31[^,],%lf,%d,%n",
             &x->service, model, &c, &mu, &T, &C, &base, &r, &k, &K, &final,
             x->quantity, &x->offered, &x->index, &used) != 14 ||
      used == 0)
    return false;
  char *end;
  x->value = strtold(line + used, &end);
  if (end == line + used || *end != ',' || sscanf(end + 1, "%lf", &cond) != 1)
    return false;
  x->condition = cond;
  if (strcmp(model, "erlang") == 0)
    ms_failure_model_erlang(&x->s.model, c, mu, T);
  else
    ms_failure_model_capacity(&x->s.model, C);
  x->s.model.base_failure = base;
  x->s.model.has_queue_limit = K >= 0;
  x->s.model.queue_limit = K >= 0 ? K : 0;
  x->s.model.rejections_final = final != 0;
  ms_retry_policy_fixed(&x->s.policy, r);
  x->s.policy.tiers = k;
  return true;
}

static bool landscape_row_of(const char *line, int lineno, void *row) {
  landscape_row *x = row;
  x->line = lineno;
  return parse_landscape_row(line, x);
}

static size_t read_landscape_csv(landscape_row **rows) {
  return test_data_rows("landscape.csv", "service,", sizeof **rows,
                        landscape_row_of, (void **)rows);
}

/* The quantities of the file and what the test allows of each (doc/design.md
 * §5, "What the landscape inherits"): relative errors, an equilibrium's
 * divided by its condition number (at least 1).  Measured worst over the
 * 36 services of the unbounded queue and the capacity model: 3.6e-16,
 * 2.2e-16, 1.25e-15, 1.6e-16, 1.5e-15, 1.1e-15; over the 6 queue-limited
 * ones 1.4e-16, 1.9e-11, 1.6e-16, 6.1e-11 (the effective loads of the
 * extrema: the central-difference slope of §1.9 moves the sign change of
 * 1 - E), 1.2e-15, 1.5e-15.  The bounds about three times that. */
enum { Q_TIP, Q_TIP_X, Q_REC, Q_REC_X, Q_X, Q_P, N_Q };
static const char *const q_names[N_Q] = {
    "tipping_load",   "tipping_effective_load",
    "recovery_load",  "recovery_effective_load",
    "effective_load", "failure_probability"};
/* [0]: the unbounded queue and the capacity model; [1]: the queue-limited
 * model (doc/design.md §1.9). */
static const double q_allowed[2][N_Q] = {
    {1e-15, 1e-15, 4e-15, 5e-16, 4e-15, 4e-15},
    {5e-16, 1e-10, 5e-16, 2e-10, 4e-15, 4e-15}};

static double landscape_value(const ms_landscape *ls, int q) {
  return q == Q_TIP     ? ls->tipping_load
         : q == Q_TIP_X ? ls->tipping_effective_load
         : q == Q_REC   ? ls->recovery_load
                        : ls->recovery_effective_load;
}

START_TEST(test_landscape_reference) {
  landscape_row *rows;
  size_t n = read_landscape_csv(&rows);
  double worst[2][N_Q] = {{0}}, raw[2][N_Q] = {{0}}, cond[2][N_Q] = {{0}};
  int worst_line[2][N_Q] = {{0}}, services = 0;
  ms_landscape ls;
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n_eq = 0;
  double eq_load = -1;
  for (size_t i = 0; i < n; i++) {
    landscape_row *w = &rows[i];
    ms_error err;
    if (i == 0 || w->service != rows[i - 1].service) {
      ck_assert_msg(ms_landscape_build(&w->s, &ls, &err) == MS_OK,
                    "line %d: %s", w->line, err.msg);
      services++;
      eq_load = -1;
    }
    if (w->offered > 0 && w->offered != eq_load) {
      ck_assert_msg(ms_equilibria(&ls, w->offered, eq, &n_eq, &err) == MS_OK,
                    "line %d: %s", w->line, err.msg);
      eq_load = w->offered;
    }
    int q = -1;
    for (int k = 0; k < N_Q; k++)
      if (strcmp(w->quantity, q_names[k]) == 0)
        q = k;
    double got;
    if (strcmp(w->quantity, "equilibria") == 0) {
      ck_assert_msg(n_eq == (int)w->value, "line %d: %d equilibria, want %d",
                    w->line, n_eq, (int)w->value);
      continue;
    }
    ck_assert_msg(q >= 0, "line %d: unknown quantity %s", w->line, w->quantity);
    if (q >= Q_X) {
      ck_assert_msg(w->index < n_eq, "line %d: no equilibrium %d", w->line,
                    w->index);
      got = q == Q_X ? eq[w->index].effective_load
                     : eq[w->index].failure_probability;
    } else
      got = landscape_value(&ls, q);
    /* a reference below the normal doubles (a failure probability of
     * 1e-22502, or 0 below capacity) wants a value below them too */
    double e = w->value < DBL_MIN
                   ? (got < DBL_MIN ? 0.0 : INFINITY)
                   : (double)fabsl((long double)got / w->value - 1.0L);
    int m = w->s.model.has_queue_limit;
    raw[m][q] = fmax(raw[m][q], e);
    cond[m][q] = fmax(cond[m][q], w->condition);
    if (q >= Q_X)
      e /= fmax(1.0, w->condition);
    if (e > worst[m][q]) {
      worst[m][q] = e;
      worst_line[m][q] = w->line;
    }
    ck_assert_msg(e <= q_allowed[m][q],
                  "line %d: %s %.17g, want %.20Lg: error %.3g (condition "
                  "%.3g), allowed %.3g",
                  w->line, w->quantity, got, w->value, e, w->condition,
                  q_allowed[m][q]);
  }
  ck_assert_int_ge(services, 30);
  for (int m = 0; m < 2; m++)
    for (int k = 0; k < N_Q; k++)
      printf("landscape.csv%s: %s worst error %.2e over condition (line "
             "%d), %.2e relative, largest condition %.3g\n",
             m ? ", queue limit" : "", q_names[k], worst[m][k],
             worst_line[m][k], raw[m][k], cond[m][k]);
  free(rows);
}
END_TEST

/* One row of tests/data/spread.csv (tools/gen_spread.py): a quantity of
 * an M/M/c service whose timeout is uniform on [timeout, timeout +
 * spread], from the closed form of the averaged wait tail. */
typedef struct {
  int service, line;
  ms_service_params s;
  char quantity[32];
  double x;
  long double value;
} spread_row;

static bool spread_row_of(const char *line, int lineno, void *row) {
  spread_row *x = row;
  long c;
  double mu, T, w, base;
  int r, used = 0;
  x->line = lineno;
  if (sscanf(line, "%d,%ld,%lf,%lf,%lf,%lf,%d,%31[^,],%lf,%n", &x->service, &c,
             &mu, &T, &w, &base, &r, x->quantity, &x->x, &used) != 9 ||
      used == 0)
    return false;
  char *end;
  x->value = strtold(line + used, &end);
  if (end == line + used)
    return false;
  ms_failure_model_erlang(&x->s.model, c, mu, T);
  x->s.model.timeout_spread = w;
  x->s.model.base_failure = base;
  ms_retry_policy_fixed(&x->s.policy, r);
  return true;
}

/* The spread layer (loop.c, spread_eval) integrates the fixed-T tail
 * numerically; the reference is the closed form of its average.  p and
 * x p' at 0.3 to 0.999 of c mu within 1e-11 (measured worst 9.9e-14 and
 * 1e-13), the tipping load and its effective load within 1e-9 (measured
 * 1.3e-16 and 1.4e-16). */
static size_t read_spread_csv(spread_row **rows) {
  return test_data_rows("spread.csv", "service,", sizeof **rows, spread_row_of,
                        (void **)rows);
}

/* An idle pool's response tail with a general service, averaged over a
 * wide spread: P(S > T) of the service fit integrates in closed form,
 * (1/w) [(D - T0) + sum_i w_i (1 - e^(-r_i (T0 + w - D))) / r_i] for a
 * shift D inside the range.  The quadrature missed it by 5e-6 (the kink
 * at D; a fuzz_model_fast finding of issue 37), and p(0) stood above
 * p(0.01): held to 1e-11 and to the load just above. */
START_TEST(test_spread_kink_at_shift) {
  ms_failure_model m;
  ms_failure_model_erlang(&m, 10, 0.98428344842611892, 1e-7);
  m.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
  m.has_service_time_cv = true;
  m.service_time_cv = 0.99687147140430088;
  m.timeout_spread = 35.625004753383109;
  ms_service_fit fit;
  ms_service_fit_of(m.service_rate, m.service_time_cv, &fit);
  double T0 = m.timeout, w = (T0 + m.timeout_spread) - T0;
  ck_assert(fit.D > T0 && fit.D < T0 + w && fit.n > 0);
  double q = fit.D - T0;
  for (int i = 0; i < fit.n; i++)
    q += fit.w[i] * -expm1(-fit.r[i] * (T0 + w - fit.D)) / fit.r[i];
  q /= w;
  double p0, p1;
  ms_error err;
  ck_assert_int_eq(ms_failure_probability(&m, 0.0, &p0, &err), MS_OK);
  ck_assert_int_eq(ms_failure_probability(&m, 0.0092, &p1, &err), MS_OK);
  ck_assert_msg(fabs(p0 / q - 1) < 1e-11, "p(0) %.17g, closed form %.17g", p0,
                q);
  ck_assert_msg(p0 <= p1, "p(0) %.17g above p(0.0092) %.17g", p0, p1);
}
END_TEST

START_TEST(test_spread_reference) {
  spread_row *rows;
  size_t n = read_spread_csv(&rows);
  ck_assert_int_gt((long)n, 150);
  double worst[4] = {0};
  static const char *const names[4] = {
      "failure_probability", "slope", "tipping_load", "tipping_effective_load"};
  static const double allowed[4] = {1e-11, 1e-11, 1e-9, 1e-9};
  int last_service = -1;
  ms_landscape ls = {0};
  for (size_t i = 0; i < n; i++) {
    spread_row *row = &rows[i];
    ck_assert_int_eq(ms_service_params_check(&row->s, NULL), MS_OK);
    int q = 0;
    while (q < 4 && strcmp(row->quantity, names[q]) != 0)
      q++;
    ck_assert_msg(q < 4, "line %d: quantity %s", row->line, row->quantity);
    double got;
    if (q < 2) {
      ms_failure_eval f;
      ms_failure_eval_at(&row->s.model, row->x, &f);
      got = q == 0 ? f.p : f.xdp;
    } else {
      if (row->service != last_service)
        ck_assert_int_eq(ms_landscape_build(&row->s, &ls, NULL), MS_OK);
      last_service = row->service;
      got = q == 2 ? ls.tipping_load : ls.tipping_effective_load;
    }
    if (fabsl(row->value) < DBL_MIN) { /* below the doubles: 0 or so */
      ck_assert_msg(fabs(got) < DBL_MIN, "line %d: %s = %g", row->line,
                    names[q], got);
      continue;
    }
    double err = (double)fabsl((got - row->value) / row->value);
    ck_assert_msg(err <= allowed[q], "line %d: %s = %.17g, reference %.17Lg",
                  row->line, names[q], got, row->value);
    if (err > worst[q])
      worst[q] = err;
  }
  printf("spread timeout against its closed form: p %.2g, x p' %.2g, "
         "tipping load %.2g, its effective load %.2g\n",
         worst[0], worst[1], worst[2], worst[3]);
  free(rows);
}
END_TEST

/* The sign bounds with the timeout on the response and a spread never
 * contradict the evaluated elasticity, over pools of 1 to 1000 servers,
 * spreads of 0.5 to 30 timeouts and 1 or 3 retries (4119 of 22848 points
 * decided). */
START_TEST(test_response_spread_bounds) {
  const long cs[] = {1, 10, 100, 1000};
  const double mus[] = {1, 10}, Ts[] = {0.05, 0.3, 1, 3}, ws[] = {0.5, 3, 30};
  long decided = 0;
  for (int ic = 0; ic < 4; ic++)
    for (int im = 0; im < 2; im++)
      for (int iT = 0; iT < 4; iT++)
        for (int iw = 0; iw < 3; iw++)
          for (int r = 1; r <= 3; r += 2) {
            ms_service_params s;
            ms_failure_model_erlang(&s.model, cs[ic], mus[im], Ts[iT]);
            s.model.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
            s.model.timeout_spread = ws[iw] * Ts[iT];
            ms_retry_policy_fixed(&s.policy, r);
            double cmu = cs[ic] * mus[im];
            for (int k = 1; k < 120; k++) {
              double x = k < 60 ? cmu * k / 60.0
                                : cmu * (1 - pow(10.0, -(k - 60) / 10.0));
              int sign = ms_landscape_sign_bound(&s, x);
              ck_assert(sign != -2);
              if (sign < 0)
                continue;
              decided++;
              ms_point pt;
              ms_point_eval(&s, x, &pt);
              ck_assert_msg(sign == (pt.elast < 1.0),
                            "c %ld mu %g T %g w %g r %d x %.17g: E %.17g",
                            cs[ic], mus[im], Ts[iT], s.model.timeout_spread, r,
                            x, pt.elast);
            }
          }
  ck_assert_int_gt(decided, 1000);
}
END_TEST

/* A spread timeout's p(x) is the mean of p over the timeouts, each at
 * least the base failure: so is the mean, also where the quadrature's sum
 * rounds an ulp below it (fuzz_model_fast, corpus
 * crash-failure-spread-below-base.bin: p was base less 2 ulps). */
/* A spread narrower than the quadrature can halve (6e-323 s from T = 0):
 * the segments' weights summed to 5/6, p fell from 1 to 0.83 at one load
 * (fuzz_model_fast, corpus crash-spread-subnormal-width.bin).  p is that
 * of the fixed timeout, the same model without the spread. */
START_TEST(test_spread_subnormal_width) {
  ms_failure_model m, fixed;
  ms_failure_model_erlang(&m, 655897, 4.776763917127802e-14, 0.0);
  m.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
  m.has_queue_limit = true;
  m.queue_limit = 12;
  m.rejections_final = true;
  fixed = m;
  const double ws[] = {6e-323, 1e-310, 1e-300};
  const double xs[] = {1e-10, 9.99e-8, 1e-7, 1e-6};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      m.timeout_spread = ws[i];
      double p, pf;
      ck_assert_int_eq(ms_failure_probability(&m, xs[j], &p, NULL), MS_OK);
      ck_assert_int_eq(ms_failure_probability(&fixed, xs[j], &pf, NULL), MS_OK);
      ck_assert_msg(p == pf, "w %g x %g: p %.17g, fixed %.17g", ws[i], xs[j], p,
                    pf);
    }
}
END_TEST

START_TEST(test_spread_base_floor) {
  ms_failure_model m;
  ms_failure_model_erlang(&m, 10, 9999.998800922185, 9.007812503028617);
  m.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
  m.has_service_time_cv = true;
  m.service_time_cv = 0.5000000001164153;
  m.timeout_spread = 0.2;
  m.base_failure = 0.009999999988358469;
  const double xs[] = {1.1999999990686773e-08, 5.000000001164153,
                       9.499999999417923, 1e3, 9e4};
  for (int i = 0; i < 5; i++) {
    double p;
    ck_assert_int_eq(ms_failure_probability(&m, xs[i], &p, NULL), MS_OK);
    ck_assert_msg(p >= m.base_failure && p <= 1.0, "x %g: p %.17g", xs[i], p);
  }
}
END_TEST

/* A spread of 0 is the fixed timeout bit for bit; the sign bounds hold
 * with a spread; the checks refuse a spread where it means nothing. */
START_TEST(test_spread_edges) {
  ms_service_params a, b;
  ms_failure_model_erlang(&a.model, 10, 5, 0.4);
  ms_retry_policy_fixed(&a.policy, 3);
  b = a;
  b.model.timeout_spread = 0.0;
  ms_landscape la, lb;
  ck_assert_int_eq(ms_landscape_build(&a, &la, NULL), MS_OK);
  ck_assert_int_eq(ms_landscape_build(&b, &lb, NULL), MS_OK);
  ck_assert(la.tipping_load == lb.tipping_load);
  /* the bounds of the scan against the evaluated elasticity, the timeout
   * on the wait and on the response (whose bounds take T_hi too) */
  const double spreads[] = {1e-6, 0.1, 0.5, 5.0, 100.0};
  long decided[2] = {0, 0};
  for (int i = 0; i < 10; i++) {
    b.model.timeout_spread = spreads[i % 5];
    b.model.base_failure = i % 5 == 2 ? 0.05 : 0.0;
    b.model.timeout_covers =
        i < 5 ? MS_TIMEOUT_COVERS_WAIT : MS_TIMEOUT_COVERS_RESPONSE;
    for (int k = 1; k < 400; k++) {
      double x =
          k < 200 ? 50.0 * k / 200.0 : 50.0 * (1 - pow(10, -(k - 200) / 25.0));
      int sign = ms_landscape_sign_bound(&b, x);
      ck_assert(sign != -2);
      if (sign < 0)
        continue;
      decided[i / 5]++;
      ms_point pt;
      ms_point_eval(&b, x, &pt);
      ck_assert_msg(sign == (pt.elast < 1.0),
                    "spread %g covers %d x %.17g: E %.17g", spreads[i % 5],
                    (int)b.model.timeout_covers, x, pt.elast);
    }
  }
  /* the bounds decide points on both (else they go untested here): 741
   * and 20 of 1995 each (the response's bounds are looser) */
  ck_assert_msg(decided[0] > 100 && decided[1] >= 10, "decided %ld, %ld",
                decided[0], decided[1]);
  b.model.timeout_covers = MS_TIMEOUT_COVERS_WAIT;
  /* longer timeouts tip later: the spread lies between its ends */
  b.model.base_failure = 0.0;
  b.model.timeout_spread = 0.5;
  ms_landscape lo, hi, mid;
  ms_service_params e = a;
  e.model.timeout = 0.9;
  ck_assert_int_eq(ms_landscape_build(&b, &mid, NULL), MS_OK);
  ck_assert_int_eq(ms_landscape_build(&a, &lo, NULL), MS_OK);
  ck_assert_int_eq(ms_landscape_build(&e, &hi, NULL), MS_OK);
  ck_assert(lo.tipping_load < mid.tipping_load &&
            mid.tipping_load < hi.tipping_load);
  ms_error err;
  b.model.timeout_spread = -0.1;
  ck_assert_int_eq(ms_service_params_check(&b, &err), MS_EINVAL);
  ck_assert(strstr(err.msg, "timeout spread") != NULL);
  b.model.timeout_spread = NAN;
  ck_assert_int_eq(ms_service_params_check(&b, NULL), MS_EINVAL);
  b.model.timeout_spread = 1e15;
  ck_assert_int_eq(ms_service_params_check(&b, &err), MS_EINVAL);
  ck_assert(strstr(err.msg, "longest timeout") != NULL);
  ms_failure_model_capacity(&b.model, 100);
  b.model.timeout_spread = 0.5;
  ck_assert_int_eq(ms_service_params_check(&b, &err), MS_EINVAL);
  ck_assert(strstr(err.msg, "erlang model") != NULL);
}
END_TEST

Suite *landscape_suite(void) {
  Suite *s = suite_create("landscape");
  TCase *tc = tcase_create("seed");
  tcase_add_test(tc, test_seed_fixed_points);
  tcase_add_test(tc, test_seed_retry_sweep);
  tcase_add_test(tc, test_seed_engagement);
  suite_add_tcase(s, tc);
  tc = tcase_create("properties");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_brute_force_extrema, 0, N_CASES);
  tcase_add_loop_test(tc, test_count_changes_at_fold, 0, N_CASES);
  tcase_add_test(tc, test_erlang_recovery_load);
  tcase_add_test(tc, test_landscape_reference);
  tcase_add_test(tc, test_caps_hold);
  tcase_add_test(tc, test_sign_bounds_agree);
  tcase_add_test(tc, test_service_time_cv);
  tcase_add_test(tc, test_spread_reference);
  tcase_add_test(tc, test_spread_kink_at_shift);
  tcase_add_test(tc, test_spread_edges);
  tcase_add_test(tc, test_spread_base_floor);
  tcase_add_test(tc, test_spread_subnormal_width);
  tcase_add_test(tc, test_response_spread_bounds);
  tcase_add_test(tc, test_states);
  tcase_add_test(tc, test_extreme_loads);
  tcase_add_test(tc, test_far_beyond_saturation);
  suite_add_tcase(s, tc);
  return s;
}
