/* SPDX-License-Identifier: MIT */
/*
 * The simulation engines (model/sim.h) against the fixed-point model and
 * against queueing theory.
 *
 * References used here are independent of the engines: the equilibria come
 * from ms_equilibria (the fixed-point solver, itself checked against
 * doc/design.md §2 in check_landscape.c), the M/M/c wait tail and queue length
 * from Erlang C (Kleinrock 1975, eq. 3.40-3.41, via check_erlang.c's verified
 * ms_erlang), counts of a Poisson process from their exact mean and
 * variance, and backoff means from closed forms.
 *
 * DES tolerance.  A DES estimate of a steady-state rate is a time average
 * over a correlated process.  Its standard error is estimated by batch
 * means (A. M. Law, Simulation Modeling and Analysis, 5th ed., 2015,
 * sec. 9.5.3): the measurement span is cut into B = 20 batches of 100 s,
 * far longer than the process's memory (timeout plus backoff plus the
 * retry chain: a few seconds), so batch means are nearly independent, and
 * SE = sd(batch means) / sqrt(B), floored at the Poisson value
 * sqrt(x / span) so that a lucky small spread cannot tighten the test.  An
 * estimate agrees with the model when it lies within 4 SE: under the
 * t-distribution with 19 degrees of freedom a correct model fails that
 * with probability 8e-4.  The seeds are fixed, so the tests are
 * deterministic; the tolerance says what "agrees" means, and the measured
 * deviations are far inside it (see the report printed by
 * test_des_equilibria_three_cases with CK_VERBOSITY=verbose).
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "metastable.h"
#include "sim.h"

/* ---- the service used throughout ------------------------------------- */

/*
 * c = 10 servers, 100 ms mean service (mu = 10/s, capacity 100/s), client
 * timeout 1 s, 3 retries, 1 % base failures: tipping load 93.66/s,
 * recovery load 25/s (= c mu / (r + 1), doc/design.md §1.3).
 */
static ms_service_params service(void) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 10.0, 1.0);
  s.model.base_failure = 0.01;
  ms_retry_policy_fixed(&s.policy, 3);
  return s;
}

static ms_landscape landscape(const ms_service_params *s) {
  ms_landscape ls;
  ms_error err;
  ck_assert_msg(ms_landscape_build(s, &ls, &err) == MS_OK, "%s", err.msg);
  return ls;
}

/* Stable equilibria at lambda: healthy = lowest, collapsed = highest. */
static void equilibria(const ms_service_params *s, double lambda,
                       double *healthy, double *collapsed) {
  ms_landscape ls = landscape(s);
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n;
  ms_error err;
  ck_assert_msg(ms_equilibria(&ls, lambda, eq, &n, &err) == MS_OK, "%s",
                err.msg);
  *healthy = eq[0].effective_load;
  *collapsed = eq[n - 1].effective_load;
}

static ms_sim_config config(double lambda, double duration) {
  ms_service_params s = service();
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = lambda;
  c.scenario.duration = duration;
  return c;
}

static void add_spike(ms_sim_config *c, double load, double start,
                      double hold) {
  ms_trigger *t = &c->scenario.triggers[c->scenario.n_triggers++];
  memset(t, 0, sizeof *t);
  t->kind = MS_TRIGGER_LOAD;
  t->load = load;
  t->start = start;
  t->hold = hold;
}

static void add_stall(ms_sim_config *c, long servers, double start,
                      double hold) {
  ms_trigger *t = &c->scenario.triggers[c->scenario.n_triggers++];
  memset(t, 0, sizeof *t);
  t->kind = MS_TRIGGER_SERVERS;
  t->servers = servers;
  t->start = start;
  t->hold = hold;
}

/* ---- running and collecting ------------------------------------------- */

typedef struct {
  ms_sim_sample *s;
  size_t n, cap;
} series;

static int collect(void *ctx, const ms_sim_sample *s) {
  series *v = ctx;
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 256;
    v->s = realloc(v->s, v->cap * sizeof *v->s);
    ck_assert_ptr_nonnull(v->s);
  }
  v->s[v->n++] = *s;
  return 0;
}

static ms_sim_summary run(ms_sim_engine e, const ms_sim_config *c,
                          series *out) {
  ms_sim_summary sum;
  ms_error err;
  int st = ms_sim_run(e, c, out ? collect : NULL, out, &sum, &err);
  ck_assert_msg(st == MS_OK, "%s: %s", ms_sim_engine_name(e), err.msg);
  return sum;
}

typedef struct {
  double mean, se;
} estimate;

/*
 * Batch-means estimate of a rate field over samples whose window lies in
 * [from, to]; each sample is one batch.  Floor: Poisson SE of the mean.
 */
static estimate batch_estimate(const series *v, double from, double to,
                               double (*field)(const ms_sim_sample *),
                               bool poisson_floor) {
  double sum = 0.0, sum2 = 0.0, span = 0.0;
  int n = 0;
  for (size_t i = 0; i < v->n; i++) {
    const ms_sim_sample *s = &v->s[i];
    if (s->time - s->width < from - 1e-9 || s->time > to + 1e-9)
      continue;
    double x = field(s);
    sum += x;
    sum2 += x * x;
    span += s->width;
    n++;
  }
  ck_assert_int_ge(n, 10);
  double mean = sum / n;
  double var = fmax(0.0, (sum2 - n * mean * mean) / (n - 1));
  double se = sqrt(var / n);
  if (poisson_floor)
    se = fmax(se, sqrt(mean / span));
  return (estimate){mean, se};
}

static double f_attempts(const ms_sim_sample *s) { return s->attempts; }
static double f_offered(const ms_sim_sample *s) { return s->offered; }
static double f_failure(const ms_sim_sample *s) { return s->failure_ratio; }

static void series_free(series *v) {
  free(v->s);
  v->s = NULL;
  v->n = v->cap = 0;
}

/* ================================================================== */
/* Scenarios and backoff                                               */
/* ================================================================== */

START_TEST(test_scenario_offered_load) {
  ms_scenario sc = {.duration = 100, .offered_load = 10, .n_triggers = 1};
  sc.triggers[0] = (ms_trigger){.kind = MS_TRIGGER_LOAD,
                                .start = 5,
                                .rise = 2,
                                .hold = 3,
                                .fall = 4,
                                .load = 20};
  ck_assert_double_eq_tol(ms_scenario_offered_load(&sc, 4), 10, 1e-12);
  ck_assert_double_eq_tol(ms_scenario_offered_load(&sc, 6), 20, 1e-12);
  ck_assert_double_eq_tol(ms_scenario_offered_load(&sc, 8), 30, 1e-12);
  ck_assert_double_eq_tol(ms_scenario_offered_load(&sc, 11), 25, 1e-12);
  ck_assert_double_eq_tol(ms_scenario_offered_load(&sc, 15), 10, 1e-12);
  /* mean over [5, 14]: 10 + 20 (1 + 3 + 2) / 9 */
  ck_assert_double_eq_tol(ms_scenario_mean_offered_load(&sc, 5, 14),
                          10 + 20.0 * 6 / 9, 1e-12);
  ck_assert_double_eq_tol(ms_scenario_trigger_end(&sc), 14, 1e-12);
  /* a drop is a trigger too: the scenario is off its baseline until 50 */
  sc.n_triggers = 2;
  sc.triggers[1] = (ms_trigger){
      .kind = MS_TRIGGER_LOAD, .start = 20, .hold = 30, .load = -5};
  ck_assert_double_eq_tol(ms_scenario_trigger_end(&sc), 20 + 30, 1e-12);
  sc.n_triggers = 1;

  /* a drop below zero stops the traffic: 10 - 2 t, clamped at t = 5 */
  sc.triggers[0] = (ms_trigger){
      .kind = MS_TRIGGER_LOAD, .start = 0, .rise = 10, .load = -20};
  ck_assert_double_eq_tol(ms_scenario_offered_load(&sc, 2), 6, 1e-12);
  ck_assert_double_eq(ms_scenario_offered_load(&sc, 7), 0);
  ck_assert_double_eq_tol(ms_scenario_mean_offered_load(&sc, 0, 10), 2.5,
                          1e-12);
  /* a spike: value at its start, gone at its end */
  sc.triggers[0] =
      (ms_trigger){.kind = MS_TRIGGER_LOAD, .start = 1, .hold = 2, .load = 5};
  ck_assert_double_eq(ms_scenario_offered_load(&sc, 1), 15);
  ck_assert_double_eq(ms_scenario_offered_load(&sc, 3), 10);
  ck_assert_double_eq_tol(ms_scenario_mean_offered_load(&sc, 0, 4), 12.5,
                          1e-12);
}
END_TEST

START_TEST(test_scenario_pool) {
  ms_failure_model m;
  ms_failure_model_erlang(&m, 10, 10.0, 1.0);
  ms_scenario sc = {.duration = 100, .n_triggers = 2};
  sc.triggers[0] = (ms_trigger){
      .kind = MS_TRIGGER_SERVERS, .start = 2, .hold = 3, .servers = 3};
  sc.triggers[1] = (ms_trigger){
      .kind = MS_TRIGGER_SERVERS, .start = 4, .hold = 2, .servers = 0};
  ms_failure_model p;
  const double t[] = {1.9, 2.0, 3.9, 4.0, 5.5, 6.0};
  const long want[] = {10, 3, 3, 0, 0, 10};
  for (int i = 0; i < 6; i++) {
    ms_scenario_pool(&sc, &m, t[i], &p);
    ck_assert_msg(p.servers == want[i], "t=%g: %ld servers, want %ld", t[i],
                  p.servers, want[i]);
  }
  ms_error err;
  ck_assert_int_eq(ms_scenario_check(&sc, &m, &err), MS_OK);
  sc.triggers[1].fall = 1;
  ck_assert_int_eq(ms_scenario_check(&sc, &m, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "trigger 2"));
  sc.triggers[1].fall = 0;
  sc.triggers[1].hold = -1;
  ck_assert_int_eq(ms_scenario_check(&sc, &m, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "hold"));
}
END_TEST

START_TEST(test_backoff_names) {
  for (int k = 0; k < MS_BACKOFF_KINDS; k++) {
    ms_backoff_kind got;
    ck_assert_int_eq(
        ms_backoff_from_name(ms_backoff_name((ms_backoff_kind)k), &got, NULL),
        MS_OK);
    ck_assert_int_eq(got, k);
  }
  ms_backoff_kind got;
  ms_error err;
  ck_assert_int_eq(ms_backoff_from_name("fibonacci", &got, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "full-jitter"));
  ms_backoff b = {MS_BACKOFF_EXPONENTIAL, 1.0, 0.5, 0};
  ck_assert_int_eq(ms_backoff_check(&b, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "cap"));
  b = (ms_backoff){MS_BACKOFF_DECORRELATED, 0.0, 1.0, 0};
  ck_assert_int_eq(ms_backoff_check(&b, &err), MS_EINVAL);
  /* a subnormal base overflowed the recursion's densities: a mean delay of
   * 2e+291 s under a cap of 1 s, or inf (fuzz_model_fast, corpus
   * crash-backoff-decorrelated-subnormal.bin) */
  const double subnormal[] = {1e-308, 2.0099544151507e-310, 5e-324};
  for (int i = 0; i < 3; i++) {
    b = (ms_backoff){MS_BACKOFF_DECORRELATED, subnormal[i], 1.0, 0};
    ck_assert_int_eq(ms_backoff_check(&b, &err), MS_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "at least"));
  }
  /* cap / base past MS_BACKOFF_MAX_DECORRELATED_RATIO: the grid's mean at
   * retry 2 against the exact (base + 3 (2 base)) / 2 = 3.5 base, within
   * 1e-8 of the cap at the ratio, 1700 times too large at 1e10 (the
   * fuzzer's input had 1e100: a mean of 1e83 s under a cap of 1 s) */
  b = (ms_backoff){MS_BACKOFF_DECORRELATED, 1e-5, 1e4, 0};
  ck_assert_int_eq(ms_backoff_check(&b, &err), MS_OK);
  double m2;
  ck_assert_int_eq(ms_backoff_mean_delay(&b, 2, &m2, &err), MS_OK);
  ck_assert_msg(fabs(m2 - 3.5e-5) <= 1e-8 * 1e4, "mean %g", m2);
  b.base = 1e-6;
  ck_assert_int_eq(ms_backoff_check(&b, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "times base"));
  /* the smallest normal base: the recursion scales with base and cap, so
   * its means are DBL_MIN times those of base 1, cap 4 */
  for (int k = 1; k <= 4; k++) {
    ms_backoff tiny = {MS_BACKOFF_DECORRELATED, DBL_MIN, 4 * DBL_MIN, 0};
    ms_backoff unit = {MS_BACKOFF_DECORRELATED, 1.0, 4.0, 0};
    double mt, mu;
    ck_assert_int_eq(ms_backoff_mean_delay(&tiny, k, &mt, &err), MS_OK);
    ck_assert_int_eq(ms_backoff_mean_delay(&unit, k, &mu, &err), MS_OK);
    ck_assert_msg(fabs(mt / DBL_MIN - mu) <= 1e-9 * mu, "k %d: %g vs %g", k,
                  mt / DBL_MIN, mu);
  }
}
END_TEST

START_TEST(test_backoff_means_closed_form) {
  /* v_k = min(1, 0.1 2^(k-1)): 0.1 0.2 0.4 0.8 1 1 */
  const double v[] = {0.1, 0.2, 0.4, 0.8, 1.0, 1.0};
  for (int k = 1; k <= 6; k++) {
    double m;
    ms_backoff b = {MS_BACKOFF_EXPONENTIAL, 0.1, 1.0, 0};
    ck_assert_int_eq(ms_backoff_mean_delay(&b, k, &m, NULL), MS_OK);
    ck_assert_double_eq_tol(m, v[k - 1], 1e-15);
    b.kind = MS_BACKOFF_FULL_JITTER;
    ms_backoff_mean_delay(&b, k, &m, NULL);
    ck_assert_double_eq_tol(m, v[k - 1] / 2, 1e-15);
    b.kind = MS_BACKOFF_EQUAL_JITTER;
    ms_backoff_mean_delay(&b, k, &m, NULL);
    ck_assert_double_eq_tol(m, 0.75 * v[k - 1], 1e-15);
    b.kind = MS_BACKOFF_CONSTANT;
    ms_backoff_mean_delay(&b, k, &m, NULL);
    ck_assert_double_eq(m, 0.1);
  }
}
END_TEST

/* v_k = min(cap, base m^(k-1)) for a multiplier m: exponential, and the
 * tops of full and equal jitter; 0 is the default 2. */
START_TEST(test_backoff_multiplier) {
  /* m = 3, cap 10: 0.1 0.3 0.9 2.7 8.1 10 */
  const double v3[] = {0.1, 0.3, 0.9, 2.7, 8.1, 10.0};
  /* m = 1.5, cap 10: 0.1 0.15 0.225 0.3375 0.50625 0.759375 */
  const double v15[] = {0.1, 0.15, 0.225, 0.3375, 0.50625, 0.759375};
  for (int k = 1; k <= 6; k++) {
    double m;
    ms_backoff b = {MS_BACKOFF_EXPONENTIAL, 0.1, 10.0, 3.0};
    ck_assert_int_eq(ms_backoff_mean_delay(&b, k, &m, NULL), MS_OK);
    ck_assert_double_eq_tol(m, v3[k - 1], 1e-15 * v3[k - 1]);
    ck_assert_double_eq_tol(ms_backoff_ceiling(&b, k), v3[k - 1],
                            1e-15 * v3[k - 1]);
    b.kind = MS_BACKOFF_FULL_JITTER;
    ck_assert_int_eq(ms_backoff_mean_delay(&b, k, &m, NULL), MS_OK);
    ck_assert_double_eq_tol(m, v3[k - 1] / 2, 1e-15 * v3[k - 1]);
    b.kind = MS_BACKOFF_EQUAL_JITTER;
    ck_assert_int_eq(ms_backoff_mean_delay(&b, k, &m, NULL), MS_OK);
    ck_assert_double_eq_tol(m, 0.75 * v3[k - 1], 1e-15 * v3[k - 1]);
    b = (ms_backoff){MS_BACKOFF_EXPONENTIAL, 0.1, 10.0, 1.5};
    ck_assert_int_eq(ms_backoff_mean_delay(&b, k, &m, NULL), MS_OK);
    ck_assert_double_eq_tol(m, v15[k - 1], 1e-15 * v15[k - 1]);
  }
  /* 0 is 2, exactly; 1 is constant; any k, also where m^(k-1) overflows */
  ms_backoff two = {MS_BACKOFF_EXPONENTIAL, 0.1, 1e4, 2.0};
  ms_backoff dflt = {MS_BACKOFF_EXPONENTIAL, 0.1, 1e4, 0};
  for (int k = 1; k <= MS_MAX_RETRIES; k++)
    ck_assert_double_eq(ms_backoff_ceiling(&two, k),
                        ms_backoff_ceiling(&dflt, k));
  ck_assert_double_eq(ms_backoff_ceiling(&dflt, 3), 0.4);
  ms_backoff one = {MS_BACKOFF_EXPONENTIAL, 0.25, 1.0, 1.0};
  ms_backoff big = {MS_BACKOFF_FULL_JITTER, 0.25, 60.0, 1000.0};
  ms_backoff zero = {MS_BACKOFF_EQUAL_JITTER, 0.0, 60.0, 1000.0};
  for (int k = 1; k <= MS_MAX_RETRIES; k *= 3) {
    ck_assert_double_eq(ms_backoff_ceiling(&one, k), 0.25);
    ck_assert_double_eq(ms_backoff_ceiling(&big, k), k == 1 ? 0.25 : 60.0);
    ck_assert_double_eq(ms_backoff_ceiling(&zero, k), 0.0);
  }
  ck_assert_double_eq(ms_backoff_ceiling(&big, MS_MAX_RETRIES), 60.0);
  /* the range: [1, 1000], or 0 */
  ms_error err;
  const double bad[] = {0.5, -2, 1001, NAN, INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ms_backoff b = {MS_BACKOFF_EXPONENTIAL, 0.1, 1.0, bad[i]};
    ck_assert_int_eq(ms_backoff_check(&b, &err), MS_EINVAL);
    ck_assert_msg(strstr(err.msg, "backoff multiplier = ") != NULL &&
                      strstr(err.msg, "is outside [1, 1000]") != NULL,
                  "%s", err.msg);
  }
  ms_backoff b = {MS_BACKOFF_EQUAL_JITTER, 0.1, 1.0, 1.0};
  ck_assert_int_eq(ms_backoff_check(&b, &err), MS_OK);
  /* decorrelated jitter reaches its stationary distribution: the last
   * retry's mean is the 500th's, inside (base, cap) */
  ms_backoff dj = {MS_BACKOFF_DECORRELATED, 0.1, 5.0, 0};
  double m500, mmax;
  ck_assert_int_eq(ms_backoff_mean_delay(&dj, 500, &m500, NULL), MS_OK);
  ck_assert_int_eq(ms_backoff_mean_delay(&dj, MS_MAX_RETRIES, &mmax, NULL),
                   MS_OK);
  ck_assert_double_eq(m500, mmax);
  ck_assert(mmax > 0.1 && mmax < 5.0);
  ck_assert(ms_backoff_multiplies(MS_BACKOFF_FULL_JITTER));
  ck_assert(!ms_backoff_multiplies(MS_BACKOFF_DECORRELATED));
  ck_assert(!ms_backoff_multiplies(MS_BACKOFF_CONSTANT));
}
END_TEST

/* The means of every retry in one pass (ms_backoff_mean_delays): the
 * exact uncapped recursion E[s_k] = (base + 3 E[s_(k-1)]) / 2 while the
 * cap cannot bind (3^k base < cap), to k / 2 times the square of the
 * grid's cell ratio less 1 (the midpoint rule's order, once a retry; the
 * measured error is about a third of it), at cap / base 10^6 and 8 10^6
 * (where the grid's densities, summed from the bottom, had left a residue
 * up to cap: 8e-4 at retry 2), far from settling (a call per retry cost
 * O(r^2) there, and 962 MB for retry 10^4 at 10^7); each mean is
 * ms_backoff_mean_delay's. */
START_TEST(test_backoff_mean_delays) {
  enum { R = 60 };
  static double means[R];
  ms_backoff b = {MS_BACKOFF_DECORRELATED, 1e-3, 8e3, 0};
  for (int pass = 0; pass < 2; pass++) {
    b.cap = pass == 0 ? 8e3 : 1e3;
    ck_assert_int_eq(ms_backoff_mean_delays(&b, R, means, NULL), MS_OK);
    double cell = expm1(log(b.cap / b.base) / 4096);
    double e = 1e-3;
    for (int k = 1; k <= 12; k++) { /* 3^12 = 531441 < 10^6 */
      e = (1e-3 + 3.0 * e) / 2.0;
      double tol = 0.5 * k * cell * cell;
      ck_assert_msg(fabs(means[k - 1] / e - 1) < tol,
                    "cap %g, k=%d: %.9g, exact %.9g, tolerance %.2g", b.cap, k,
                    means[k - 1], e, tol);
    }
  }
  for (int k = 1; k <= R; k += 29) {
    double m;
    ck_assert_int_eq(ms_backoff_mean_delay(&b, k, &m, NULL), MS_OK);
    ck_assert_double_eq(m, means[k - 1]);
  }
  ck_assert(means[R - 1] > 1e-3 && means[R - 1] < 1e3);
  /* the closed-form kinds: each retry's own mean */
  const ms_backoff_kind kinds[] = {
      MS_BACKOFF_NONE, MS_BACKOFF_CONSTANT, MS_BACKOFF_EXPONENTIAL,
      MS_BACKOFF_FULL_JITTER, MS_BACKOFF_EQUAL_JITTER};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    ms_backoff c = {kinds[i], 0.1, 60.0, 0};
    ck_assert_int_eq(ms_backoff_mean_delays(&c, 12, means, NULL), MS_OK);
    for (int k = 1; k <= 12; k++) {
      double m;
      ck_assert_int_eq(ms_backoff_mean_delay(&c, k, &m, NULL), MS_OK);
      ck_assert_double_eq(m, means[k - 1]);
    }
  }
  ms_error err;
  ck_assert_int_eq(ms_backoff_mean_delays(&b, 0, means, &err), MS_EINVAL);
  ck_assert_int_eq(ms_backoff_mean_delays(&b, 1, NULL, &err), MS_EINVAL);
}
END_TEST

START_TEST(test_backoff_decorrelated) {
  /* cap never binds (3^6 < 1000): E[s_k] = (base + 3 E[s_(k-1)]) / 2 */
  ms_backoff b = {MS_BACKOFF_DECORRELATED, 1.0, 1000.0, 0};
  double e = 1.0;
  for (int k = 1; k <= 6; k++) {
    e = (1.0 + 3.0 * e) / 2.0;
    double m;
    ck_assert_int_eq(ms_backoff_mean_delay(&b, k, &m, NULL), MS_OK);
    ck_assert_msg(fabs(m / e - 1) < 1e-5, "k=%d: %.9g, exact %.9g", k, m, e);
  }
  /* cap binds: Monte Carlo of the AWS formula, 10^6 paths */
  b = (ms_backoff){MS_BACKOFF_DECORRELATED, 0.1, 2.0, 0};
  double sum[7] = {0}, sum2[7] = {0};
  unsigned short xs[3] = {7, 11, 13};
  const int N = 1000000;
  for (int i = 0; i < N; i++) {
    double s = 0.1;
    for (int k = 1; k <= 6; k++) {
      s = fmin(2.0, 0.1 + erand48(xs) * (3 * s - 0.1));
      sum[k] += s;
      sum2[k] += s * s;
    }
  }
  for (int k = 1; k <= 6; k++) {
    double mc = sum[k] / N, sd = sqrt(sum2[k] / N - mc * mc);
    double m;
    ms_backoff_mean_delay(&b, k, &m, NULL);
    ck_assert_msg(fabs(m - mc) < 4 * sd / sqrt(N) + 1e-6,
                  "k=%d: grid %.6f, Monte Carlo %.6f +- %.6f", k, m, mc,
                  sd / sqrt(N));
  }
}
END_TEST

/* ================================================================== */
/* Fluid engine                                                        */
/* ================================================================== */

/* doc/design.md §2 through the fluid engine: the iteration settles at the fixed
 * point the exact enclosure certifies. */
START_TEST(test_fluid_capacity_reference) {
  ms_service_params s;
  ms_failure_model_capacity(&s.model, 1.0);
  s.model.base_failure = 0.1;
  ms_retry_policy_fixed(&s.policy, 3);
  const double lambda[] = {0.80, 0.90, 0.95};
  const double want[] = {0.8888, 0.9999, 1.72736};
  const double tol[] = {5e-5, 5e-5, 5e-6};
  for (int i = 0; i < 3; i++) {
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    c.scenario.offered_load = lambda[i];
    c.scenario.duration = 200;
    ms_sim_summary sum = run(MS_ENGINE_FLUID, &c, NULL);
    ck_assert_msg(fabs(sum.final_attempts - want[i]) < tol[i],
                  "lambda %.2f: %.6f, want %.5f", lambda[i], sum.final_attempts,
                  want[i]);
  }
}
END_TEST

/* Cold start in the bistable band: the healthy equilibrium, both variants. */
START_TEST(test_fluid_settles_healthy) {
  ms_service_params s = service();
  double xh, xc;
  equilibria(&s, 60.0, &xh, &xc);
  for (int qm = 0; qm <= 1; qm++) {
    ms_sim_config c = config(60.0, 120.0);
    c.queue_memory = qm;
    ms_sim_summary sum = run(MS_ENGINE_FLUID, &c, NULL);
    ck_assert_msg(fabs(sum.final_attempts / xh - 1) < 1e-9,
                  "queue memory %d: %.10g, healthy equilibrium %.10g", qm,
                  sum.final_attempts, xh);
    ck_assert(sum.settled_healthy);
    ck_assert_int_eq(sum.final_state, MS_STATE_VULNERABLE);
    ck_assert_double_eq(sum.storm_time, 0);
  }
}
END_TEST

/*
 * The queue-memory variant in a steady state is the stationary M/M/c
 * queue: its backlog is Lq = C(c, a) a / (c - a) and its failure ratio
 * p(x), at the equilibrium x (Kleinrock 1975, eq. 3.39-3.41).
 */
START_TEST(test_fluid_queue_memory_stationary) {
  ms_service_params s = service();
  const double lambda[] = {60.0, 85.0};
  for (int i = 0; i < 2; i++) {
    double xh, xc;
    equilibria(&s, lambda[i], &xh, &xc);
    ms_sim_config c = config(lambda[i], 200.0);
    c.queue_memory = true;
    series v = {0};
    run(MS_ENGINE_FLUID, &c, &v);
    const ms_sim_sample *last = &v.s[v.n - 1];
    double a = xh / 10.0;
    ms_erlang_values ev;
    ck_assert_int_eq(ms_erlang(10, a, &ev, NULL), MS_OK);
    double lq = ev.erlang_c * a / (10.0 - a), p;
    ck_assert_int_eq(ms_failure_probability(&s.model, xh, &p, NULL), MS_OK);
    ck_assert_msg(fabs(last->backlog / lq - 1) < 1e-6,
                  "lambda %g: backlog %.9g, Erlang C Lq %.9g", lambda[i],
                  last->backlog, lq);
    ck_assert_msg(fabs(last->failure_ratio / p - 1) < 1e-6,
                  "lambda %g: failure %.9g, p(x) %.9g", lambda[i],
                  last->failure_ratio, p);
    series_free(&v);
  }
}
END_TEST

/*
 * A timeout range, T uniform on [0.1 s, 0.7 s]: in a steady state without
 * retries the fluid engine, with the queue and without, fails with the
 * model's p(x), the tail averaged over the range (ms_failure_probability's
 * adaptive Gauss-Kronrod, loop.c), for the wait and for the response, and
 * with a general service time; the shortest timeout's p is far off.
 */
START_TEST(test_fluid_spread_steady) {
  const double lambda[] = {60.0, 85.0};
  const ms_timeout_covers covers[] = {MS_TIMEOUT_COVERS_WAIT,
                                      MS_TIMEOUT_COVERS_RESPONSE};
  for (int k = 0; k < 4; k++) /* covers, with the queue and without */
    for (int cv = 0; cv < 2; cv++)
      for (int i = 0; i < 2; i++) {
        ms_service_params s;
        ms_failure_model_erlang(&s.model, 10, 10.0, 0.1);
        s.model.timeout_spread = 0.6;
        s.model.timeout_covers = covers[k % 2];
        s.model.has_service_time_cv = cv;
        s.model.service_time_cv = cv ? 2.0 : 1.0;
        ms_retry_policy_fixed(&s.policy, 0);
        ms_sim_config c;
        ms_sim_config_init(&c, &s);
        c.scenario.offered_load = lambda[i];
        c.scenario.duration = 100.0;
        c.queue_memory = k < 2;
        series v = {0};
        run(MS_ENGINE_FLUID, &c, &v);
        double got = v.s[v.n - 1].failure_ratio, p, p_short;
        ms_failure_model shortest = s.model;
        shortest.timeout_spread = 0.0;
        ck_assert_int_eq(ms_failure_probability(&s.model, lambda[i], &p, NULL),
                         MS_OK);
        ck_assert_int_eq(
            ms_failure_probability(&shortest, lambda[i], &p_short, NULL),
            MS_OK);
        if (getenv("CK_VERBOSITY") &&
            !strcmp(getenv("CK_VERBOSITY"), "verbose"))
          printf("spread fluid queue %d covers %d cv %d lambda %g: failure "
                 "%.9g, p(x) %.9g (%+.2e), shortest timeout %.9g\n",
                 k < 2, k % 2, cv, lambda[i], got, p, got / p - 1, p_short);
        ck_assert_msg(fabs(got / p - 1) < 1e-6,
                      "queue %d covers %d cv %d lambda %g: failure %.9g, p(x) "
                      "%.9g",
                      k < 2, k % 2, cv, lambda[i], got, p);
        ck_assert_msg(p_short > 1.5 * p, "lambda %g: p %.9g, shortest %.9g",
                      lambda[i], p, p_short);
        series_free(&v);
      }
}
END_TEST

/* A long trigger latches: the collapsed equilibrium, and it persists. */
/* With a service_time_cv the fluid engines take the model's M/G/c wait
 * tail: a steady state fails with the model's p at its healthy
 * equilibrium, with or without the queue, and the tail is not the M/M/c
 * one. */
START_TEST(test_fluid_general_service) {
  ms_service_params s = service();
  s.model.has_service_time_cv = true;
  s.model.service_time_cv = 2.0;
  double xh, xc, p, p_mmc;
  equilibria(&s, 80.0, &xh, &xc);
  ck_assert_int_eq(ms_failure_probability(&s.model, xh, &p, NULL), MS_OK);
  ms_service_params e = service();
  ck_assert_int_eq(ms_failure_probability(&e.model, xh, &p_mmc, NULL), MS_OK);
  ck_assert(p - 0.01 > 1000 * (p_mmc - 0.01)); /* beyond the base */
  for (int memory = 0; memory < 2; memory++) {
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    c.scenario.offered_load = 80.0;
    c.scenario.duration = 200.0;
    c.queue_memory = memory;
    series v = {0};
    run(MS_ENGINE_FLUID, &c, &v);
    const ms_sim_sample *last = &v.s[v.n - 1];
    ck_assert_msg(fabs(last->failure_ratio / p - 1) < 1e-6,
                  "queue memory %d: failure %.9g, p(x) %.9g", memory,
                  last->failure_ratio, p);
    series_free(&v);
  }
}
END_TEST

START_TEST(test_fluid_settles_collapsed) {
  ms_service_params s = service();
  double xh, xc;
  equilibria(&s, 60.0, &xh, &xc);
  ck_assert_double_eq_tol(xc, 240.0, 1e-9); /* lambda (r + 1) */
  for (int qm = 0; qm <= 1; qm++) {
    ms_sim_config c = config(60.0, 400.0);
    c.queue_memory = qm;
    add_spike(&c, 60.0, 10.0, 20.0);
    ms_sim_summary sum = run(MS_ENGINE_FLUID, &c, NULL);
    /* memoryless: p = 1 exactly beyond c mu; queue memory: p -> 1 as the
     * backlog grows without bound, 1 - p = O(1 / backlog) */
    double tol = qm ? 1e-2 : 1e-12;
    ck_assert_msg(fabs(sum.final_attempts / xc - 1) < tol,
                  "queue memory %d: %.10g, collapsed equilibrium %.10g", qm,
                  sum.final_attempts, xc);
    ck_assert(!sum.recovered);
    ck_assert_int_eq(sum.final_state, MS_STATE_METASTABLE);
    ck_assert(sum.settled_collapsed);
    ck_assert_double_eq_tol(sum.storm_after_trigger, 400.0 - 30.0, 1e-9);
  }
}
END_TEST

START_TEST(test_fluid_overloaded) {
  for (int qm = 0; qm <= 1; qm++) {
    ms_sim_config c = config(110.0, 300.0);
    c.queue_memory = qm;
    ms_sim_summary sum = run(MS_ENGINE_FLUID, &c, NULL);
    ck_assert_msg(fabs(sum.final_attempts / 440.0 - 1) < (qm ? 1e-2 : 1e-12),
                  "%.10g", sum.final_attempts);
    ck_assert_int_eq(sum.final_state, MS_STATE_OVERLOADED);
  }
}
END_TEST

/* The spike hold that latches, by bisection; both sides with margin. */
static double latch_threshold(ms_sim_engine e, ms_sim_config *c) {
  double tau;
  ms_error err;
  int st = ms_sim_latch_threshold(e, c, 0, 0.0, 30.0, 1e-3, &tau, &err);
  ck_assert_msg(st == MS_OK, "%s", err.msg);
  return tau;
}

static bool latched(ms_sim_engine e, ms_sim_config c, double hold) {
  c.scenario.triggers[0].hold = hold;
  return !run(e, &c, NULL).recovered;
}

START_TEST(test_fluid_latch_threshold) {
  double tau[2];
  for (int qm = 0; qm <= 1; qm++) {
    ms_sim_config c = config(60.0, 200.0);
    c.queue_memory = qm;
    add_spike(&c, 60.0, 10.0, 1.0);
    tau[qm] = latch_threshold(MS_ENGINE_FLUID, &c);
    ck_assert_msg(!latched(MS_ENGINE_FLUID, c, 0.8 * tau[qm]),
                  "qm %d: 0.8 x %.4g s latched", qm, tau[qm]);
    ck_assert_msg(!latched(MS_ENGINE_FLUID, c, 0.5 * tau[qm]),
                  "qm %d: 0.5 x %.4g s latched", qm, tau[qm]);
    ck_assert_msg(latched(MS_ENGINE_FLUID, c, 1.25 * tau[qm]),
                  "qm %d: 1.25 x %.4g s recovered", qm, tau[qm]);
    ck_assert_msg(latched(MS_ENGINE_FLUID, c, 2.0 * tau[qm]),
                  "qm %d: 2 x %.4g s recovered", qm, tau[qm]);
  }
  /* Without a queue, any bin over capacity fails every attempt and the
   * synchronized retries come back together: the memoryless engine latches
   * on a far shorter spike than a queue that absorbs it. */
  ck_assert_msg(tau[0] < 0.5 * tau[1], "memoryless %.4g s, queue %.4g s",
                tau[0], tau[1]);
}
END_TEST

static const ms_backoff policies[MS_BACKOFF_KINDS] = {
    {MS_BACKOFF_NONE, 0, 0, 0},
    {MS_BACKOFF_CONSTANT, 0.5, 0, 0},
    {MS_BACKOFF_EXPONENTIAL, 0.2, 4.0, 0},
    {MS_BACKOFF_FULL_JITTER, 0.2, 4.0, 0},
    {MS_BACKOFF_EQUAL_JITTER, 0.2, 4.0, 0},
    {MS_BACKOFF_DECORRELATED, 0.2, 4.0, 0},
};

/*
 * Seed 002: backoff moves no equilibrium, only the path.  For every policy
 * and both variants: a cold start settles at the healthy equilibrium and a
 * long trigger at the collapsed one, as without backoff; the time to
 * settle after the trigger grows with the policy's delays.
 */
START_TEST(test_fluid_backoff_moves_no_equilibrium) {
  ms_service_params s = service();
  double xh, xc;
  equilibria(&s, 60.0, &xh, &xc);
  for (int qm = 0; qm <= 1; qm++) {
    double settle[MS_BACKOFF_KINDS];
    for (int k = 0; k < MS_BACKOFF_KINDS; k++) {
      ms_sim_config c = config(60.0, 300.0);
      c.queue_memory = qm;
      c.backoff = policies[k];
      c.settle_tolerance = 0.01;
      ms_sim_summary h = run(MS_ENGINE_FLUID, &c, NULL);
      ck_assert_msg(fabs(h.final_attempts / xh - 1) < 1e-9,
                    "%s qm %d healthy: %.10g vs %.10g",
                    ms_backoff_name(policies[k].kind), qm, h.final_attempts,
                    xh);
      add_spike(&c, 60.0, 10.0, 20.0);
      ms_sim_summary col = run(MS_ENGINE_FLUID, &c, NULL);
      ck_assert_msg(fabs(col.final_attempts / xc - 1) < (qm ? 1e-2 : 1e-12),
                    "%s qm %d collapsed: %.10g vs %.10g",
                    ms_backoff_name(policies[k].kind), qm, col.final_attempts,
                    xc);
      ck_assert(col.settled_collapsed);
      settle[k] = col.settled_at - col.trigger_end;
    }
    for (int k = 1; k < MS_BACKOFF_KINDS; k++)
      ck_assert_msg(settle[k] > settle[0],
                    "qm %d: %s settles in %.2f s, no backoff in %.2f s", qm,
                    ms_backoff_name(policies[k].kind), settle[k], settle[0]);
  }
}
END_TEST

/* Counts over samples [i, j). */
static double window_count(const series *v, size_t i, size_t j,
                           double (*field)(const ms_sim_sample *)) {
  double n = 0.0;
  for (size_t k = i; k < j && k < v->n; k++)
    n += field(&v->s[k]) * v->s[k].width;
  return n;
}

static double f_retries(const ms_sim_sample *s) { return s->retries; }

/*
 * A storm (offered load over the tipping load for 60 s) under a retry
 * budget of b = 10 % over W = 10 s windows, and under a token bucket
 * (ratio 0.1, 100 tokens).
 *
 * Budget.  A retry is admitted at s only while R(s - W, s] <= b/(1-b)
 * F(s - W, s] (retries and first attempts sent in the window).  Chaining
 * admissions backwards in disjoint windows of length W bounds the retries
 * of any interval (t - L, t] by b/(1-b) F(t - L - W, t]: the allowance of
 * first attempts up to one window before the interval may still be spent
 * in it, as when a storm starts after a quiet spell (a burst: 1-s
 * amplification 1.6 at the onset here).  The test checks that bound for
 * every window of L = W and L = 60 s, that the cap binds (the storm's
 * amplification over its 60 s is within W/60 of 1/(1-b)), and that the
 * same storm without a budget reaches almost r + 1.
 *
 * Bucket.  Token conservation: over every prefix of the run, retries <=
 * initial tokens + ratio x successes; in the storm nothing succeeds, so
 * after the first 100 tokens no retry goes out.
 */
static void check_caps(ms_sim_engine e) {
  const double b = 0.1, ratio = b / (1.0 - b), cap = 1.0 / (1.0 - b);
  ms_sim_config c = config(60.0, 150.0);
  add_spike(&c, 60.0, 20.0, 60.0);
  c.backoff = (ms_backoff){MS_BACKOFF_FULL_JITTER, 0.1, 1.0, 0};
  series v = {0};
  run(e, &c, &v);
  double bare = window_count(&v, 20, 80, f_attempts) /
                window_count(&v, 20, 80, f_offered);
  ck_assert_msg(bare > 3.0, "no budget: amplification %.3f", bare);
  series_free(&v);

  c.service.policy.has_budget = true;
  c.service.policy.retry_budget = b;
  run(e, &c, &v);
  const size_t W = 10, lens[2] = {10, 60};
  double worst10 = 0.0;
  for (int li = 0; li < 2; li++) {
    size_t L = lens[li];
    for (size_t t = L; t <= v.n; t++) {
      double r = window_count(&v, t - L, t, f_retries);
      double f_back =
          window_count(&v, t >= L + W ? t - L - W : 0, t, f_offered);
      ck_assert_msg(r <= ratio * f_back * (1 + 1e-12) + 1e-9,
                    "%s budget, window (%zu, %zu]: %.4f retries, allowance "
                    "%.4f",
                    ms_sim_engine_name(e), t - L, t, r, ratio * f_back);
      if (L == 10)
        worst10 =
            fmax(worst10, 1.0 + r / window_count(&v, t - L, t, f_offered));
    }
  }
  double storm = window_count(&v, 20, 80, f_attempts) /
                 window_count(&v, 20, 80, f_offered);
  ck_assert_msg(storm <= cap * (1 + 10.0 / 60.0) && storm >= 0.98 * cap,
                "%s budget: storm amplification %.4f, cap %.4f",
                ms_sim_engine_name(e), storm, cap);
  if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
    printf("%s budget: storm amplification %.4f (60 s), worst 10-s window "
           "%.4f, cap %.4f; no budget %.3f\n",
           ms_sim_engine_name(e), storm, worst10, cap, bare);
  bool in_storm = false;
  for (size_t i = 0; i < v.n; i++)
    in_storm |= v.s[i].storm;
  ck_assert(in_storm);
  series_free(&v);

  c.service.policy.has_budget = false;
  c.service.policy.has_token = true;
  c.service.policy.token_ratio = 0.1;
  c.token_capacity = 100.0;
  run(e, &c, &v);
  double retries = 0.0, good = 0.0, max_window_retries = 0.0;
  for (size_t i = 0; i < v.n; i++) {
    retries += v.s[i].retries * v.s[i].width;
    good += v.s[i].goodput * v.s[i].width;
    ck_assert_msg(retries <= 100.0 + 0.1 * good + 1e-6,
                  "%s token bucket at t=%g: %.3f retries, %.3f successes",
                  ms_sim_engine_name(e), v.s[i].time, retries, good);
    if (v.s[i].time > 30.0 && v.s[i].time <= 80.0)
      max_window_retries = fmax(max_window_retries, v.s[i].retries);
  }
  ck_assert_msg(max_window_retries < 1.0, "%s: %.3f retries/s in the storm",
                ms_sim_engine_name(e), max_window_retries);
  series_free(&v);
}

START_TEST(test_fluid_caps) { check_caps(MS_ENGINE_FLUID); }
END_TEST

/* Everything a request can end as: success, or given up. */
START_TEST(test_fluid_conservation) {
  for (int qm = 0; qm <= 1; qm++) {
    ms_sim_config c = config(60.0, 200.0);
    c.queue_memory = qm;
    c.backoff = (ms_backoff){MS_BACKOFF_DECORRELATED, 0.2, 4.0, 0};
    add_spike(&c, 10.0, 10.0, 20.0);
    add_spike(&c, -60.0, 100.0, 100.0); /* drain: nothing in flight at end */
    ms_sim_summary sum = run(MS_ENGINE_FLUID, &c, NULL);
    ck_assert_msg(fabs(sum.requests - sum.successes - sum.given_up) <
                      1e-9 * sum.requests,
                  "requests %.9g, successes %.9g, given up %.9g", sum.requests,
                  sum.successes, sum.given_up);
    ck_assert_double_eq_tol(sum.attempts, sum.requests + sum.retries,
                            1e-9 * sum.attempts);
  }
}
END_TEST

/* A 3-second database stall (pool of 0) and a 1-second one. */
START_TEST(test_stall) {
  for (int e = 0; e < 2; e++) {
    ms_sim_engine eng = e ? MS_ENGINE_DES : MS_ENGINE_FLUID;
    ms_sim_config c = config(60.0, 200.0);
    c.queue_memory = true;
    add_stall(&c, 0, 10.0, 3.0);
    series v = {0};
    ms_sim_summary sum = run(eng, &c, &v);
    const ms_sim_sample *during = &v.s[11]; /* [11, 12) */
    ck_assert_int_eq(during->servers, 0);
    ck_assert_int_eq(during->state, MS_STATE_OVERLOADED);
    ck_assert_double_eq(during->goodput, 0.0);
    ck_assert_msg(!sum.recovered, "%s: a 3 s stall did not latch",
                  ms_sim_engine_name(eng));
    series_free(&v);
    c.scenario.triggers[0].hold = 1.0;
    sum = run(eng, &c, NULL);
    ck_assert_msg(sum.recovered, "%s: a 1 s stall latched",
                  ms_sim_engine_name(eng));
  }
  /* without a queue, 1 s of failing everything is enough */
  ms_sim_config c = config(60.0, 200.0);
  add_stall(&c, 0, 10.0, 1.0);
  ck_assert(!run(MS_ENGINE_FLUID, &c, NULL).recovered);
}
END_TEST

/*
 * A stall behind a timeout range, 400 ms to 900 ms (10 servers, 100 ms,
 * 3 retries, offered load half-way into the bistable band): whether a
 * full stall of `hold` s latches, by a tolerance probe (ms_tolerance_probe:
 * the fluid engine), and the probe's scenario run by the DES at seeds 1
 * to 5, each judged as the probe judges (the last window in storm).
 */
static void spread_stall(double hold, bool *fluid, bool des[5]) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 10.0, 0.4);
  s.model.timeout_spread = 0.5;
  ms_retry_policy_fixed(&s.policy, 3);
  ms_landscape ls = landscape(&s);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load =
      ls.recovery_load + 0.5 * (ls.tipping_load - ls.recovery_load);
  ms_tolerance_query q = {.kind = MS_TRIGGER_SERVERS};
  ms_error err;
  ck_assert_msg(ms_tolerance_probe(&c, &q, hold, fluid, &c.scenario, &err) ==
                    MS_OK,
                "%s", err.msg);
  c.queue_memory = true;
  for (int k = 0; k < 5; k++) {
    c.seed = (uint64_t)k + 1;
    des[k] = ms_state_storm(run(MS_ENGINE_DES, &c, NULL).final_state) != 0;
  }
}

/*
 * The fluid engine with the range storms and recovers as the DES does:
 * a 0.7 s stall is survived by the DES at every seed of 1..5 (`metastable
 * tolerance --engine des`: their boundaries 0.79 s to 1.09 s; 21 seeds:
 * median 0.91 s) and by the fluid engine (0.88 s), and a 1.3 s stall
 * latches both.  Taking only the shortest timeout the fluid engine
 * latched from 0.56 s.
 */
START_TEST(test_stall_spread_against_des) {
  const double holds[] = {0.7, 1.3};
  for (int h = 0; h < 2; h++) {
    bool want = h == 1, fluid, des[5];
    spread_stall(holds[h], &fluid, des);
    ck_assert_msg(fluid == want, "fluid: a %g s stall %s", holds[h],
                  want ? "recovered" : "latched");
    for (int k = 0; k < 5; k++)
      ck_assert_msg(des[k] == want, "DES seed %d: a %g s stall %s", k + 1,
                    holds[h], want ? "recovered" : "latched");
  }
}
END_TEST

/* ================================================================== */
/* Discrete-event engine                                               */
/* ================================================================== */

/*
 * Without retries the DES is a plain M/M/c queue: its timeout ratio is the
 * wait tail P(W > T) = C(c, a) exp(-(c mu - x) T) and its mean queue length
 * Lq = C(c, a) a / (c - a).  c = 4, mu = 10, T = 0.1, x = 30: P = 0.187.
 */
START_TEST(test_des_is_mmc) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 4, 10.0, 0.1);
  ms_retry_policy_fixed(&s.policy, 0);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = 30.0;
  c.scenario.duration = 2100.0;
  c.sample_interval = 100.0;
  c.seed = 42;
  series v = {0};
  run(MS_ENGINE_DES, &c, &v);
  double ln_tail;
  ck_assert_int_eq(ms_ln_wait_tail(4, 10.0, 30.0, 0.1, &ln_tail, NULL), MS_OK);
  estimate p = batch_estimate(&v, 100.0, 2100.0, f_failure, false);
  ck_assert_msg(fabs(p.mean - exp(ln_tail)) < 4 * p.se,
                "timeout ratio %.5f +- %.5f, P(W > T) %.5f", p.mean, p.se,
                exp(ln_tail));
  series_free(&v);
  /* the queue length, sampled every second */
  c.sample_interval = 1.0;
  run(MS_ENGINE_DES, &c, &v);
  ms_erlang_values ev;
  ms_erlang(4, 3.0, &ev, NULL);
  double lq = ev.erlang_c * 3.0 / (4.0 - 3.0);
  double sum = 0, sum2 = 0;
  int n = 0;
  /* batches of 100 one-second samples */
  for (size_t i = 100; i + 100 <= v.n; i += 100) {
    double m = 0;
    for (size_t j = i; j < i + 100; j++)
      m += v.s[j].backlog / 100;
    sum += m;
    sum2 += m * m;
    n++;
  }
  double mean = sum / n, se = sqrt((sum2 / n - mean * mean) / (n - 1));
  ck_assert_msg(fabs(mean - lq) < 4 * se, "queue %.4f +- %.4f, Lq %.4f", mean,
                se, lq);
  series_free(&v);
}
END_TEST

/*
 * With the timeout on the response and no retries, the DES's failure
 * ratio is P(W + S > T) of M/M/c (ms_ln_response_tail, Kleinrock 1975
 * sec. 3.4): an attempt in service whose sent + T passes before its
 * completion fails then, and its server serves on.  c = 10, mu = 10,
 * T = 0.2 (2 service times) at 30 %, 70 % and 90 % of c mu, and c = 4,
 * T = 0.3; the wait tail alone is off by more than 4 standard errors at
 * each (the test tells the two apart).
 */
START_TEST(test_des_response_tail) {
  static const struct {
    long c;
    double T, rho;
  } rows[] = {{10, 0.2, 0.3}, {10, 0.2, 0.7}, {10, 0.2, 0.9}, {4, 0.3, 0.8}};
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    ms_service_params s;
    ms_failure_model_erlang(&s.model, rows[k].c, 10.0, rows[k].T);
    s.model.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
    ms_retry_policy_fixed(&s.policy, 0);
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    double x = rows[k].rho * 10.0 * (double)rows[k].c;
    c.scenario.offered_load = x;
    c.scenario.duration = 4100.0;
    c.sample_interval = 100.0;
    c.seed = 7;
    series v = {0};
    run(MS_ENGINE_DES, &c, &v);
    estimate p = batch_estimate(&v, 100.0, 4100.0, f_failure, false);
    double ln_r, ln_w;
    ck_assert_int_eq(
        ms_ln_response_tail(rows[k].c, 10.0, x, rows[k].T, 1.0, &ln_r, NULL),
        MS_OK);
    ck_assert_int_eq(
        ms_ln_wait_tail(rows[k].c, 10.0, x, rows[k].T, &ln_w, NULL), MS_OK);
    if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
      printf("DES response c %ld T %g rho %g: %.5f +- %.5f, P(W + S > T) "
             "%.5f, P(W > T) %.5f\n",
             rows[k].c, rows[k].T, rows[k].rho, p.mean, p.se, exp(ln_r),
             exp(ln_w));
    ck_assert_msg(fabs(p.mean - exp(ln_r)) < 4 * p.se + 1e-4,
                  "c %ld T %g rho %g: failure ratio %.5f +- %.5f, P(W + S > "
                  "T) %.5f",
                  rows[k].c, rows[k].T, rows[k].rho, p.mean, p.se, exp(ln_r));
    ck_assert(fabs(p.mean - exp(ln_w)) > 4 * p.se);
    series_free(&v);
  }
}
END_TEST

/* The timeout on the response with a spread (each attempt's timeout
 * uniform on [T, T + w], drawn when it is sent): the DES's failure ratio
 * without retries against the average of P(W + S > T) over the spread,
 * by Simpson's rule over ms_ln_response_tail (tests/check_response.c
 * holds it to mpmath); the model's averaged p agrees with that average,
 * and the tail at the mid timeout is more than 4 standard errors off. */
START_TEST(test_des_response_spread) {
  const long servers = 10;
  const double mu = 10.0, T = 0.1, w = 0.3, x = 70.0;
  ms_service_params s;
  ms_failure_model_erlang(&s.model, servers, mu, T);
  s.model.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
  s.model.timeout_spread = w;
  ms_retry_policy_fixed(&s.policy, 0);
  double avg = 0.0, ln_r;
  const int n = 300; /* even */
  for (int i = 0; i <= n; i++) {
    double t = T + w * i / n;
    ck_assert_int_eq(ms_ln_response_tail(servers, mu, x, t, 1.0, &ln_r, NULL),
                     MS_OK);
    avg += (i == 0 || i == n ? 1.0 : i % 2 ? 4.0 : 2.0) * exp(ln_r);
  }
  avg /= 3.0 * n;
  double p_model, ln_mid;
  ck_assert_int_eq(ms_failure_probability(&s.model, x, &p_model, NULL), MS_OK);
  ck_assert_msg(fabs(p_model - avg) < 1e-8 * avg, "model %.10f, average %.10f",
                p_model, avg);
  ck_assert_int_eq(
      ms_ln_response_tail(servers, mu, x, T + 0.5 * w, 1.0, &ln_mid, NULL),
      MS_OK);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = x;
  c.scenario.duration = 4100.0;
  c.sample_interval = 100.0;
  c.seed = 13;
  series v = {0};
  run(MS_ENGINE_DES, &c, &v);
  estimate p = batch_estimate(&v, 100.0, 4100.0, f_failure, false);
  if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
    printf("DES response spread: %.5f +- %.5f, average %.5f, at the mid "
           "timeout %.5f\n",
           p.mean, p.se, avg, exp(ln_mid));
  ck_assert_msg(fabs(p.mean - avg) < 4 * p.se + 1e-4,
                "failure ratio %.5f +- %.5f, average tail %.5f", p.mean, p.se,
                avg);
  ck_assert(fabs(p.mean - exp(ln_mid)) > 4 * p.se);
  series_free(&v);
}
END_TEST

/* ---- general service times (doc/design.md §1.1 and §6) ---------------- */

/* The DES's service time distributions have the mean and the second moment
 * they claim: an M/G/1 queue's mean queue length is exactly
 * Lq = rho^2 (1 + cv^2) / (2 (1 - rho)) (Pollaczek-Khinchine), which a
 * wrong cv would move (cv 2: 1.25 against 0.5 for exponential service).
 * The queue is counted with the abandoned attempts, which are served
 * anyway: the timeout does not change it. */
START_TEST(test_des_service_moments) {
  static const struct {
    ms_service_dist dist;
    double cv;
  } cases[] = {{MS_SERVICE_DETERMINISTIC, 0.0},   {MS_SERVICE_LOGNORMAL, 0.5},
               {MS_SERVICE_EXPONENTIAL, 1.0},     {MS_SERVICE_GAMMA, 0.5},
               {MS_SERVICE_GAMMA, 2.0},           {MS_SERVICE_LOGNORMAL, 2.0},
               {MS_SERVICE_HYPEREXPONENTIAL, 2.0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    ms_service_params s;
    ms_failure_model_erlang(&s.model, 1, 10.0, 0.5);
    s.model.has_service_time_cv = true;
    s.model.service_time_cv = cases[k].cv;
    ms_retry_policy_fixed(&s.policy, 0);
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    c.service_dist = cases[k].dist;
    c.scenario.offered_load = 5.0;
    c.scenario.duration = 4100.0;
    c.seed = 7;
    series v = {0};
    run(MS_ENGINE_DES, &c, &v);
    double rho = 0.5, cv = cases[k].cv;
    double lq = rho * rho * (1 + cv * cv) / (2 * (1 - rho));
    double sum = 0, sum2 = 0, lat = 0, done = 0;
    int n = 0;
    /* batches of 200 one-second samples after 100 s */
    for (size_t i = 100; i + 200 <= v.n; i += 200) {
      double m = 0;
      for (size_t j = i; j < i + 200; j++) {
        m += v.s[j].backlog / 200;
        lat += v.s[j].completion_rate * v.s[j].width *
               (v.s[j].has_latency ? v.s[j].latency : 0.0);
        done += v.s[j].completion_rate * v.s[j].width;
      }
      sum += m;
      sum2 += m * m;
      n++;
    }
    double mean = sum / n, se = sqrt((sum2 / n - mean * mean) / (n - 1));
    ck_assert_msg(fabs(mean - lq) < 4 * se,
                  "%s cv %g: queue %.4f +- %.4f, Lq %.4f",
                  ms_service_dist_name(cases[k].dist), cv, mean, se, lq);
    /* the mean service time, over about 20,000 completions */
    ck_assert_msg(fabs(lat / done - 0.1) < 0.1 * (cv + 0.1) * 0.03,
                  "%s cv %g: mean service time %.5f s",
                  ms_service_dist_name(cases[k].dist), cv, lat / done);
    series_free(&v);
  }
}
END_TEST

/*
 * Rows of doc/design.md §1.1's accuracy table at reduced size (c = 10,
 * T = 2 service times, 4,000 s instead of 20,000): the DES's share of
 * attempts that wait longer than T, without retries, against the model's
 * M/G/c approximation, within the error the table documents for the row
 * rounded up to 5 % (rel: |DES - model| <= rel x model; the table's
 * model/DES of 0.98, 1.02, 1.17, 1.15 and 1.13) plus four batch-means
 * standard errors.  Each row would
 * fail if the cv were ignored, by the model or by the DES: the M/M/c tail
 * lies outside the same band.
 */
START_TEST(test_des_general_service_tail) {
  static const struct {
    ms_service_dist dist;
    double cv, rho, rel;
  } rows[] = {
      {MS_SERVICE_DETERMINISTIC, 0.0, 0.95, 0.05},
      {MS_SERVICE_LOGNORMAL, 0.5, 0.9, 0.05},
      {MS_SERVICE_LOGNORMAL, 2.0, 0.9, 0.20},
      {MS_SERVICE_HYPEREXPONENTIAL, 2.0, 0.9, 0.15},
      {MS_SERVICE_HYPEREXPONENTIAL, 4.0, 0.95, 0.15},
  };
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    ms_service_params s;
    ms_failure_model_erlang(&s.model, 10, 10.0, 0.2);
    s.model.has_service_time_cv = true;
    s.model.service_time_cv = rows[k].cv;
    ms_retry_policy_fixed(&s.policy, 0);
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    c.service_dist = rows[k].dist;
    double x = rows[k].rho * 100.0;
    c.scenario.offered_load = x;
    c.scenario.duration = 4100.0;
    c.sample_interval = 100.0;
    c.seed = 11;
    series v = {0};
    run(MS_ENGINE_DES, &c, &v);
    estimate p = batch_estimate(&v, 100.0, 4100.0, f_failure, false);
    double q, q_mmc, ln_mmc;
    ck_assert_int_eq(ms_failure_probability(&s.model, x, &q, NULL), MS_OK);
    ck_assert_int_eq(ms_ln_wait_tail(10, 10.0, x, 0.2, &ln_mmc, NULL), MS_OK);
    q_mmc = exp(ln_mmc);
    if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
      printf("M/G/c %-16s cv %g rho %g: DES %.5f +- %.5f, model %.5f, "
             "M/M/c %.5f\n",
             ms_service_dist_name(rows[k].dist), rows[k].cv, rows[k].rho,
             p.mean, p.se, q, q_mmc);
    ck_assert_msg(fabs(p.mean - q) <= rows[k].rel * q + 4 * p.se,
                  "%s cv %g rho %g: P(W > T) %.5f +- %.5f, model %.5f",
                  ms_service_dist_name(rows[k].dist), rows[k].cv, rows[k].rho,
                  p.mean, p.se, q);
    ck_assert_msg(fabs(p.mean - q_mmc) > rows[k].rel * q_mmc + 4 * p.se,
                  "%s cv %g: the M/M/c tail %.5f is as close",
                  ms_service_dist_name(rows[k].dist), rows[k].cv, q_mmc);
    series_free(&v);
  }
  /* a distribution that cannot have the model's cv is refused */
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 10.0, 0.2);
  ms_retry_policy_fixed(&s.policy, 0);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = 10.0;
  c.service_dist = MS_SERVICE_DETERMINISTIC;
  ms_error err;
  ck_assert_int_eq(ms_sim_des(&c, NULL, NULL, NULL, &err), MS_EINVAL);
  ck_assert_msg(strstr(err.msg, "deterministic service times have cv 0"), "%s",
                err.msg);
  ms_service_dist d;
  ck_assert_int_eq(ms_service_dist_from_name("LogNormal", &d, NULL), MS_OK);
  ck_assert_int_eq(d, MS_SERVICE_LOGNORMAL);
  ck_assert_int_eq(ms_service_dist_from_name("pareto", &d, NULL), MS_EINVAL);
}
END_TEST

/* A spread timeout (doc/design.md §1.1): each attempt of the DES draws
 * its patience from [T, T + w]; its share of attempts that time out is
 * the model's average over T (within 5 % and four standard errors), and
 * not the tail at the mean timeout, which a convex tail puts lower.  With
 * and without a queue limit. */
START_TEST(test_des_spread_timeout) {
  static const struct {
    long K; /* -1: none */
    double rho;
  } rows[] = {{-1, 0.9}, {20, 0.95}};
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    ms_service_params s;
    ms_failure_model_erlang(&s.model, 10, 10.0, 0.1);
    s.model.timeout_spread = 0.6;
    s.model.has_queue_limit = rows[k].K >= 0;
    s.model.queue_limit = rows[k].K >= 0 ? rows[k].K : 0;
    ms_retry_policy_fixed(&s.policy, 0);
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    double x = rows[k].rho * 100.0;
    c.scenario.offered_load = x;
    c.scenario.duration = 4100.0;
    c.sample_interval = 100.0;
    c.seed = 11;
    series v = {0};
    run(MS_ENGINE_DES, &c, &v);
    estimate p = batch_estimate(&v, 100.0, 4100.0, f_failure, false);
    ms_failure_model mean = s.model;
    mean.timeout = 0.4;
    mean.timeout_spread = 0.0;
    double q, q_mean;
    ck_assert_int_eq(ms_failure_probability(&s.model, x, &q, NULL), MS_OK);
    ck_assert_int_eq(ms_failure_probability(&mean, x, &q_mean, NULL), MS_OK);
    if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
      printf("spread timeout K %ld rho %g: DES %.5f +- %.5f, model %.5f, "
             "at the mean timeout %.5f\n",
             rows[k].K, rows[k].rho, p.mean, p.se, q, q_mean);
    ck_assert_msg(fabs(p.mean - q) <= 0.05 * q + 4 * p.se,
                  "K %ld: failures %.5f +- %.5f, model %.5f", rows[k].K, p.mean,
                  p.se, q);
    ck_assert_msg(fabs(p.mean - q_mean) > 0.05 * q_mean + 4 * p.se,
                  "K %ld: the mean timeout's %.5f is as close", rows[k].K,
                  q_mean);
    series_free(&v);
  }
}
END_TEST

/* One DES steady state against the model: attempts and failure ratio. */
static void des_case(const char *name, ms_sim_config *c, double from,
                     double x_model, double p_model) {
  series v = {0};
  run(MS_ENGINE_DES, c, &v);
  double to = c->scenario.duration;
  estimate x = batch_estimate(&v, from, to, f_attempts, true);
  estimate p = batch_estimate(&v, from, to, f_failure, false);
  estimate l = batch_estimate(&v, from, to, f_offered, true);
  double dev = x.mean / x_model - 1;
  if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
    printf("DES %-22s lambda %.3f+-%.3f  x %.3f+-%.3f model %.3f (%+.3f %%, "
           "%.1f SE)  p %.5f+-%.5f model %.5f\n",
           name, l.mean, l.se, x.mean, x.se, x_model, 100 * dev,
           (x.mean - x_model) / x.se, p.mean, p.se, p_model);
  ck_assert_msg(fabs(x.mean - x_model) < 4 * x.se,
                "%s: attempts %.4f +- %.4f, model %.4f", name, x.mean, x.se,
                x_model);
  ck_assert_msg(fabs(p.mean - p_model) <= 4 * p.se,
                "%s: failure ratio %.5f +- %.5f, model %.5f", name, p.mean,
                p.se, p_model);
  series_free(&v);
}

START_TEST(test_des_equilibria_three_cases) {
  ms_service_params s = service();
  double xh, xc, p;
  /* light: below the recovery load, one equilibrium */
  ms_sim_config c = config(20.0, 2100.0);
  c.sample_interval = 100.0;
  equilibria(&s, 20.0, &xh, &xc);
  ms_failure_probability(&s.model, xh, &p, NULL);
  des_case("light (20/s)", &c, 100.0, xh, p);
  /* vulnerable band, cold start: healthy */
  c = config(60.0, 2100.0);
  c.sample_interval = 100.0;
  equilibria(&s, 60.0, &xh, &xc);
  ms_failure_probability(&s.model, xh, &p, NULL);
  des_case("band (60/s) healthy", &c, 100.0, xh, p);
  /* vulnerable band after a 20 s spike: collapsed, p = 1 */
  add_spike(&c, 60.0, 10.0, 20.0);
  c.scenario.duration = 2200.0;
  des_case("band (60/s) collapsed", &c, 200.0, xc, 1.0);
  /* overloaded: above the tipping load */
  c = config(110.0, 2100.0);
  c.sample_interval = 100.0;
  equilibria(&s, 110.0, &xh, &xc);
  des_case("overloaded (110/s)", &c, 100.0, xc, 1.0);
}
END_TEST

/* A queue limit (M/M/c/K, doc/design.md §1.9): the DES rejects what
 * finds every waiting place taken; its attempts and failure ratio stay at
 * the model's equilibrium within the batches' standard error, below and
 * above c mu, with rejections retried and final; the fluid engine, which
 * has no queue limit, refuses it. */
START_TEST(test_des_queue_limit) {
  const struct {
    double lambda;
    bool final;
  } cases[] = {{25.0, false}, {25.0, true}, {60.0, false}, {60.0, true}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ms_service_params s;
    ms_failure_model_erlang(&s.model, 4, 10.0, 0.1);
    s.model.has_queue_limit = true;
    s.model.queue_limit = 3;
    s.model.rejections_final = cases[i].final;
    ms_retry_policy_fixed(&s.policy, 2);
    ms_landscape ls;
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n;
    ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
    ck_assert_int_eq(ms_equilibria(&ls, cases[i].lambda, eq, &n, NULL), MS_OK);
    ck_assert_int_eq(n, 1);
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    c.scenario.offered_load = cases[i].lambda;
    c.scenario.duration = 2100.0;
    c.sample_interval = 100.0;
    c.seed = 7 + i;
    /* a retry sent at once after a rejection finds the same full queue:
     * the model's independent failures (PASTA) need retries that come
     * later than the queue's memory (a few service times), so full
     * jitter over up to 1 s */
    c.backoff =
        (ms_backoff){.kind = MS_BACKOFF_FULL_JITTER, .base = 1.0, .cap = 1.0};
    char name[64];
    snprintf(name, sizeof name, "K = 3 at %g/s, rejections %s", cases[i].lambda,
             cases[i].final ? "final" : "retried");
    des_case(name, &c, 100.0, eq[0].effective_load, eq[0].failure_probability);
    ms_sim_summary sum;
    ms_error err;
    ck_assert_int_eq(ms_sim_fluid(&c, NULL, NULL, &sum, &err), MS_EINVAL);
  }
}
END_TEST

/* The same queue with the timeout on the response (W + S > T, doc/design.md
 * §1.9, ms_mmck_ln_response_tail): the DES's attempts and failure ratio at
 * the model's equilibrium, one cheap case below c mu (T = 2 service
 * times, so that the service's own tail matters) and one above. */
START_TEST(test_des_queue_limit_response) {
  const double lambdas[] = {25.0, 60.0};
  for (size_t i = 0; i < 2; i++) {
    ms_service_params s;
    ms_failure_model_erlang(&s.model, 4, 10.0, 0.2);
    s.model.has_queue_limit = true;
    s.model.queue_limit = 3;
    s.model.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
    ms_retry_policy_fixed(&s.policy, 2);
    ms_landscape ls;
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n;
    ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
    ck_assert_int_eq(ms_equilibria(&ls, lambdas[i], eq, &n, NULL), MS_OK);
    ck_assert_int_eq(n, 1);
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    c.scenario.offered_load = lambdas[i];
    c.scenario.duration = 2100.0;
    c.sample_interval = 100.0;
    c.seed = 31 + i;
    c.backoff =
        (ms_backoff){.kind = MS_BACKOFF_FULL_JITTER, .base = 1.0, .cap = 1.0};
    char name[64];
    snprintf(name, sizeof name, "K = 3, response timed, at %g/s", lambdas[i]);
    des_case(name, &c, 100.0, eq[0].effective_load, eq[0].failure_probability);
  }
}
END_TEST

/*
 * Retries that follow a rejection within milliseconds are not independent
 * of it (doc/design.md §1.9): the grpc-js case, 10 servers x 200 ms, 20
 * waiting places, a 500 ms timeout, 4 retries after 10, 20, 40 and 50 ms,
 * at 60 req/s.  The model says 3.157 attempts per request; the DES needs
 * about 15 % fewer, as an independent event simulation written in Python
 * for this case does (6 seeds of 3000 s: 2.681 +- 0.013).  This is the
 * error `metastable check` warns of and retried_rejection_share measures.
 */
START_TEST(test_des_fast_retried_rejections) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 5.0, 0.5);
  s.model.has_queue_limit = true;
  s.model.queue_limit = 20;
  ms_retry_policy_fixed(&s.policy, 4);
  ms_landscape ls;
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ck_assert_int_eq(ms_equilibria(&ls, 60.0, eq, &n, NULL), MS_OK);
  ck_assert_int_eq(n, 1);
  double a_model = eq[0].amplification;
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = 60.0;
  c.scenario.duration = 1050.0;
  c.sample_interval = 50.0;
  c.seed = 3;
  c.backoff = (ms_backoff){.kind = MS_BACKOFF_EXPONENTIAL,
                           .base = 0.01,
                           .cap = 0.05,
                           .multiplier = 2.0};
  series v = {0};
  run(MS_ENGINE_DES, &c, &v);
  estimate x = batch_estimate(&v, 50.0, 1050.0, f_attempts, true);
  estimate l = batch_estimate(&v, 50.0, 1050.0, f_offered, true);
  series_free(&v);
  double a_des = x.mean / l.mean;
  if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
    printf("fast retried rejections at 60/s: attempts per request DES %.4f, "
           "model %.4f (%+.1f %%)\n",
           a_des, a_model, 100 * (a_model / a_des - 1));
  ck_assert_msg(fabs(a_des / 2.681 - 1) < 0.03, "DES %.4f, reference 2.681",
                a_des);
  ck_assert_msg(a_model > 1.1 * a_des, "model %.4f, DES %.4f", a_model, a_des);
}
END_TEST

/*
 * The retrial queue (model/retrial.c, doc/design.md §1.9) on the same
 * grpc-js case: within 5 % of the DES's attempts per request, plus twice
 * the run's standard error (batch means over 50 s windows), at 45, 55
 * and 65 req/s (the worst gaps of the table in §1.9 are -3 % and +4.4 %).
 * Without retries the chain is the M/M/c/K queue: its full share is the
 * closed form's blocking (Gross and Harris, ms_mmck_ln_block); far above
 * capacity every attempt fails, 1 + 4 attempts per request.
 */
START_TEST(test_retrial_queue_against_des) {
  ms_backoff b = {.kind = MS_BACKOFF_EXPONENTIAL,
                  .base = 0.01,
                  .cap = 0.05,
                  .multiplier = 2.0};
  ms_retrial_result r;
  ms_error e;
  for (double x = 20.0; x <= 80.0; x += 15.0) {
    double lb;
    ck_assert_int_eq(ms_retrial_attempts(10, 5.0, 20, 0.5, 0.0,
                                         MS_TIMEOUT_COVERS_WAIT, 0, &b, x, &r,
                                         &e),
                     MS_OK);
    ck_assert_int_eq(ms_mmck_ln_block(10, 20, x / 5.0, &lb, NULL), MS_OK);
    ck_assert_msg(fabs(r.p_full / exp(lb) - 1) < 1e-9 && r.attempts == 1.0,
                  "%g/s: chain %.12g, M/M/c/K %.12g", x, r.p_full, exp(lb));
  }
  /* far above capacity every attempt is rejected: 1 + 4 attempts */
  ck_assert_int_eq(ms_retrial_attempts(10, 5.0, 20, 0.5, 0.0,
                                       MS_TIMEOUT_COVERS_WAIT, 4, &b, 1e5, &r,
                                       &e),
                   MS_OK);
  ck_assert_msg(fabs(r.attempts - 5.0) < 0.01, "1e5/s: %.6f", r.attempts);
  ms_backoff none = {.kind = MS_BACKOFF_NONE};
  ck_assert_int_eq(ms_retrial_attempts(10, 5.0, 20, 0.5, 0.0,
                                       MS_TIMEOUT_COVERS_WAIT, 4, &none, 50.0,
                                       &r, &e),
                   MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "needs a backoff"));
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 5.0, 0.5);
  s.model.has_queue_limit = true;
  s.model.queue_limit = 20;
  ms_retry_policy_fixed(&s.policy, 4);
  /* the timeout on the wait at 45, 55, 65 req/s; on the response (the
   * default, gRPC's deadline) at 55 */
  const double loads[] = {45.0, 55.0, 65.0, 55.0};
  for (int i = 0; i < 4; i++) {
    ms_timeout_covers cov =
        i < 3 ? MS_TIMEOUT_COVERS_WAIT : MS_TIMEOUT_COVERS_RESPONSE;
    s.model.timeout_covers = cov;
    ck_assert_int_eq(ms_retrial_attempts(10, 5.0, 20, 0.5, 0.0, cov, 4, &b,
                                         loads[i], &r, &e),
                     MS_OK);
    ms_sim_config c;
    ms_sim_config_init(&c, &s);
    c.scenario.offered_load = loads[i];
    c.scenario.duration = 1550.0;
    c.sample_interval = 50.0;
    c.seed = 5;
    c.backoff = b;
    series v = {0};
    run(MS_ENGINE_DES, &c, &v);
    double sum = 0.0, sum2 = 0.0, att = 0.0, off = 0.0;
    int n = 0;
    for (size_t k = 0; k < v.n; k++) {
      if (v.s[k].time <= 50.0)
        continue;
      double q = v.s[k].attempts / v.s[k].offered;
      sum += q;
      sum2 += q * q;
      att += v.s[k].attempts;
      off += v.s[k].offered;
      n++;
    }
    series_free(&v);
    double a_des = att / off;
    double se = sqrt(fmax(0.0, sum2 / n - (sum / n) * (sum / n)) / (n - 1));
    if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
      printf("retrial queue at %g/s (%s): attempts per request DES %.4f +- "
             "%.4f, chain %.4f (%+.1f %%), %ld levels, %d steps\n",
             loads[i], ms_timeout_covers_name(cov), a_des, se, r.attempts,
             100 * (r.attempts / a_des - 1), r.levels, r.iterations);
    ck_assert_msg(fabs(r.attempts / a_des - 1) < 0.05 + 2 * se / a_des,
                  "%g/s: chain %.4f, DES %.4f +- %.4f", loads[i], r.attempts,
                  a_des, se);
  }
}
END_TEST

/*
 * The retrial queue's loads (ms_retrial_loads, doc/design.md §1.9) on the
 * node lab's service: 8 servers x 100 ms, 64 places, the response timed
 * out uniformly between 499 and 998 ms (undici's tick), 2 retries after
 * 10 and 20 ms.  At the tipping load the queue is rarely full, so the
 * retries after rejections do not matter there: the chain's tipping load
 * is the M/M/c/K landscape's, computed another way (the closed-form
 * failure averaged over the spread by model/loop.c's own quadrature), to
 * the bisection's width and 0.1 %.  With the shortest timeout alone the
 * same holds at a tipping load 5 % lower: the spread is averaged, not
 * its end taken (with a 5 s backoff within 1 %).  The recovery load lies
 * above the landscape's: a retry 10 ms after a rejection finds the same
 * full queue, and burns its retries without adding work (the lab
 * measured 52 to 64 req/s where the landscape says 43.4; the chain says
 * 50.7).  A slow backoff (constant 5 s) brings it back within 10 % of
 * the landscape's.
 */
START_TEST(test_retrial_loads) {
  ms_backoff fast = {.kind = MS_BACKOFF_EXPONENTIAL,
                     .base = 0.01,
                     .cap = 30.0,
                     .multiplier = 2.0};
  ms_backoff slow = {.kind = MS_BACKOFF_CONSTANT, .base = 5.0};
  const double spreads[] = {0.499, 0.0};
  for (int i = 0; i < 2; i++) {
    ms_service_params s;
    ms_failure_model_erlang(&s.model, 8, 10.0, 0.499);
    s.model.timeout_spread = spreads[i];
    s.model.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
    s.model.has_queue_limit = true;
    s.model.queue_limit = 64;
    ms_retry_policy_fixed(&s.policy, 2);
    ms_landscape ls;
    ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
    double tips[2], recs[2];
    const ms_backoff *backoffs[2] = {&fast, &slow};
    for (int k = 0; k < 2; k++) {
      ms_error e;
      ck_assert_msg(ms_retrial_loads(8, 10.0, 64, 0.499, spreads[i],
                                     MS_TIMEOUT_COVERS_RESPONSE, 2, backoffs[k],
                                     &tips[k], &recs[k], &e) == MS_OK,
                    "%s", e.msg);
    }
    double tip = tips[0], rec = recs[0], tip_slow = tips[1], rec_slow = recs[1];
    if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
      printf("retrial loads, spread %g s: tipping %.4f (landscape %.4f), "
             "recovery %.4f, with a 5 s backoff %.4f (landscape %.4f)\n",
             spreads[i], tip, ls.tipping_load, rec, rec_slow, ls.recovery_load);
    ck_assert_msg(fabs(tip / ls.tipping_load - 1) < 1e-3 + MS_RETRIAL_LOAD_REL,
                  "spread %g: chain %.6g, landscape %.6g", spreads[i], tip,
                  ls.tipping_load);
    /* the orbit of a 5 s backoff holds the retries of the rare
     * rejections apart from the Poisson stream: 0.2 % lower */
    ck_assert_msg(fabs(tip_slow / ls.tipping_load - 1) < 0.01,
                  "spread %g, slow backoff: chain %.6g, landscape %.6g",
                  spreads[i], tip_slow, ls.tipping_load);
    ck_assert_msg(rec > 1.1 * ls.recovery_load && rec < tip,
                  "spread %g: recovery %.6g, landscape %.6g, tipping %.6g",
                  spreads[i], rec, ls.recovery_load, tip);
    ck_assert_msg(rec_slow < rec && rec_slow < 1.1 * ls.recovery_load,
                  "spread %g: 5 s backoff %.6g, 10 ms %.6g, landscape %.6g",
                  spreads[i], rec_slow, rec, ls.recovery_load);
  }
  /* a long queue, rarely full at the tipping load: its full share
   * underflows the levels' normalisation, and the chain goes on without
   * its orbit (a new-user trial found 8.38 req/s here, the loads below
   * the underflow all read healthy) */
  {
    ms_service_params s;
    ms_failure_model_erlang(&s.model, 1, 10.0, 0.5);
    s.model.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
    s.model.has_queue_limit = true;
    s.model.queue_limit = 4000;
    ms_retry_policy_fixed(&s.policy, 2);
    ms_landscape ls;
    ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
    ms_backoff b = {.kind = MS_BACKOFF_EXPONENTIAL,
                    .base = 0.01,
                    .cap = 1.0,
                    .multiplier = 2.0};
    double tip, rec;
    ms_error e;
    ck_assert_msg(ms_retrial_loads(1, 10.0, 4000, 0.5, 0.0,
                                   MS_TIMEOUT_COVERS_RESPONSE, 2, &b, &tip,
                                   &rec, &e) == MS_OK,
                  "%s", e.msg);
    ck_assert_msg(fabs(tip / ls.tipping_load - 1) < 1e-3 + MS_RETRIAL_LOAD_REL,
                  "K = 4000: chain %.6g, landscape %.6g", tip, ls.tipping_load);
  }
  /* without retries no storm; a spread needs a finite timeout */
  double tip, rec;
  ms_error e;
  ck_assert_int_eq(ms_retrial_loads(8, 10.0, 64, 0.499, 0.499,
                                    MS_TIMEOUT_COVERS_RESPONSE, 0, &fast, &tip,
                                    &rec, &e),
                   MS_EINVAL);
  ck_assert_int_eq(ms_retrial_loads(8, 10.0, 64, INFINITY, 0.5,
                                    MS_TIMEOUT_COVERS_RESPONSE, 2, &fast, &tip,
                                    &rec, &e),
                   MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "spread"));
}
END_TEST

/*
 * The DES threshold of a +60/s spike over 60/s, by bisection with common
 * random numbers (seed 1); then 10 other seeds on each side with margin:
 * half the threshold recovers and twice it latches in at least 9 of 10.
 * The engines' thresholds order as their queues do: memoryless (no queue,
 * every bin over capacity fails outright) < queue-memory fluid < DES (a
 * spike past capacity, where the DES's queue grows by chance as much as
 * by its drift: doc/simulation.md), and the queue-memory fluid is within
 * a factor 2.5 of the DES.
 */
START_TEST(test_des_latch_threshold) {
  ms_sim_config c = config(60.0, 200.0);
  add_spike(&c, 60.0, 10.0, 1.0);
  double tau = latch_threshold(MS_ENGINE_DES, &c);
  int recovered = 0, latch = 0;
  for (uint64_t seed = 2; seed <= 11; seed++) {
    c.seed = seed;
    recovered += !latched(MS_ENGINE_DES, c, 0.5 * tau);
    latch += latched(MS_ENGINE_DES, c, 2.0 * tau);
  }
  ck_assert_msg(recovered >= 9, "tau %.3f s: half recovered %d of 10", tau,
                recovered);
  ck_assert_msg(latch >= 9, "tau %.3f s: twice latched %d of 10", tau, latch);
  c.seed = 1;
  c.queue_memory = true;
  double tau_q = latch_threshold(MS_ENGINE_FLUID, &c);
  c.queue_memory = false;
  double tau_m = latch_threshold(MS_ENGINE_FLUID, &c);
  if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
    printf("latch threshold of a +60/s spike over 60/s: memoryless fluid "
           "%.3f s, queue-memory fluid %.3f s, DES %.3f s\n",
           tau_m, tau_q, tau);
  ck_assert_msg(tau_m < tau_q && tau_q < tau && tau < 2.5 * tau_q,
                "memoryless %.3f s, queue-memory fluid %.3f s, DES %.3f s",
                tau_m, tau_q, tau);
  /* the values doc/simulation.md quotes (the fluid engine is deterministic
   * arithmetic; the DES depends on the platform's libm only through its
   * random variates, so it gets a range).  The memoryless engine's spikes
   * from 0.13 s on leave a synchronised retry wave behind that fails 42 %
   * of the attempts for good (9 req/s given up): its failed attempts are
   * beyond the split's, its retries within them, and the verdict weighs
   * both (doc/design.md §1.4), so it is a storm that outlives the spike.
   * Until the verdict weighed the failures too (2026-12) it read
   * vulnerable and the threshold was 0.183 s. */
  ck_assert_msg(fabs(tau_m - 0.133) < 0.005 && fabs(tau_q - 4.147) < 0.01 &&
                    tau > 6.0 && tau < 8.0,
                "memoryless %.4f s, queue-memory fluid %.4f s, DES %.4f s",
                tau_m, tau_q, tau);
}
END_TEST

/* Backoff moves no equilibrium in the DES either. */
START_TEST(test_des_backoff_moves_no_equilibrium) {
  ms_service_params s = service();
  double xh, xc, p;
  equilibria(&s, 60.0, &xh, &xc);
  ms_failure_probability(&s.model, xh, &p, NULL);
  for (int k = 0; k < MS_BACKOFF_KINDS; k++) {
    char name[64];
    ms_sim_config c = config(60.0, 1100.0);
    c.sample_interval = 50.0;
    c.backoff = policies[k];
    c.seed = 100 + (uint64_t)k;
    snprintf(name, sizeof name, "%s healthy",
             ms_backoff_name(policies[k].kind));
    des_case(name, &c, 100.0, xh, p);
    add_spike(&c, 60.0, 10.0, 30.0);
    c.scenario.duration = 1200.0;
    snprintf(name, sizeof name, "%s collapsed",
             ms_backoff_name(policies[k].kind));
    des_case(name, &c, 200.0, xc, 1.0);
  }
}
END_TEST

START_TEST(test_des_caps) { check_caps(MS_ENGINE_DES); }
END_TEST

static bool same_samples(const series *a, const series *b) {
  if (a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++) {
    const ms_sim_sample *x = &a->s[i], *y = &b->s[i];
    if (x->offered != y->offered || x->attempts != y->attempts ||
        x->failures != y->failures || x->goodput != y->goodput ||
        x->backlog != y->backlog || x->state != y->state)
      return false;
  }
  return true;
}

/*
 * Same seed, same output; other seeds differ but agree statistically: the
 * request count is Poisson (mean and variance lambda D), and every seed's
 * mean attempt rate lies within 4 of its batch SE of the pooled mean, and
 * the outcome of a clear-cut trigger is the same for every seed.
 */
START_TEST(test_des_seeds) {
  ms_sim_config c = config(60.0, 1100.0);
  c.sample_interval = 50.0;
  add_spike(&c, 60.0, 10.0, 1.0);
  series a = {0}, b = {0};
  run(MS_ENGINE_DES, &c, &a);
  run(MS_ENGINE_DES, &c, &b);
  ck_assert(same_samples(&a, &b));
  series_free(&b);
  c.seed = 2;
  run(MS_ENGINE_DES, &c, &b);
  ck_assert(!same_samples(&a, &b));
  series_free(&a);
  series_free(&b);

  double mean[8], se[8], pooled = 0;
  double lambda_d = 0;
  for (int i = 0; i < 8; i++) {
    c.seed = 1000 + (uint64_t)i;
    series v = {0};
    ms_sim_summary sum = run(MS_ENGINE_DES, &c, &v);
    lambda_d = ms_scenario_mean_offered_load(&c.scenario, 0, 1100) * 1100;
    ck_assert_msg(fabs(sum.requests - lambda_d) < 4.5 * sqrt(lambda_d),
                  "seed %d: %.0f requests, Poisson mean %.1f", i, sum.requests,
                  lambda_d);
    ck_assert(sum.recovered);
    estimate x = batch_estimate(&v, 100, 1100, f_attempts, true);
    mean[i] = x.mean;
    se[i] = x.se;
    pooled += x.mean / 8;
    series_free(&v);
  }
  for (int i = 0; i < 8; i++)
    ck_assert_msg(fabs(mean[i] - pooled) < 4 * se[i] * sqrt(1 + 1.0 / 8),
                  "seed %d: %.3f +- %.3f, pooled %.3f", i, mean[i], se[i],
                  pooled);
  /* a clear-cut latch: the same outcome for every seed */
  c.scenario.triggers[0].hold = 20.0;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    c.seed = seed;
    ck_assert(!run(MS_ENGINE_DES, &c, NULL).recovered);
  }
}
END_TEST

/* A sink that stops at the first window where most attempts fail. */
static int stop_at_collapse(void *ctx, const ms_sim_sample *s) {
  if (s->failure_ratio > 0.5) {
    *(double *)ctx = s->time;
    return 1;
  }
  return 0;
}

/*
 * The fixed point calls a healthy equilibrium in the bistable band stable
 * for ever; a finite queue's noise can still carry it over the unstable
 * one.  A small pool (c = 4, mu = 10/s, T = 0.3 s, c mu T = 12, tipping
 * load 30.1/s): at 18/s (60 % of the tipping load) most runs collapse
 * within 20,000 s; at 12/s none does.  With c mu T = 100 (the service
 * above) the healthy branch holds for 20,000 s up to 85/s (91 %).
 */
/*
 * Many retries: a request's count of retries runs past 255 (the DES's
 * counter was a byte) and both engines give up after the last one.  A
 * full stall of 400 s, 1 request/s, timeout 1 s, no backoff, r = 300: a
 * request that arrives at t0 times out every second and gives up at about
 * t0 + 301 s, after 301 attempts; the abandoned attempts left in the queue
 * (hundreds per second of stall) keep every wait past the timeout to the
 * end of the run at 420 s, so the ~120 requests that arrive in its first
 * 119 s give up; none would without the cap.  Then a healthy run at r =
 * MS_MAX_RETRIES: the fluid engine's amplification is the model's, 1 / (1 - p)
 * for p = 0.1 and r that large.
 */
START_TEST(test_many_retries) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 4, 10.0, 1.0);
  ms_retry_policy_fixed(&s.policy, 300);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = 1.0;
  c.scenario.duration = 420.0;
  c.scenario.n_triggers = 1;
  c.scenario.triggers[0] = (ms_trigger){
      .kind = MS_TRIGGER_SERVERS, .start = 0.0, .hold = 400.0, .servers = 0};
  c.sample_interval = 10.0;
  c.seed = 14;
  ms_sim_summary sum;
  ms_error err;
  ck_assert_msg(ms_sim_des(&c, NULL, NULL, &sum, &err) == MS_OK, "%s", err.msg);
  /* Poisson(119) arrivals in [0, 119): within 5 standard deviations */
  ck_assert_msg(sum.given_up >= 119 - 55 && sum.given_up <= 119 + 55, "%g",
                sum.given_up);
  ck_assert_msg(sum.retries >= 300 * (sum.given_up - 1), "%g retries",
                sum.retries);
  ck_assert_int_eq(ms_sim_fluid(&c, NULL, NULL, &sum, &err), MS_OK);
  ck_assert_msg(fabs(sum.given_up - 119.5) <= 1.0, "fluid %g", sum.given_up);

  ms_failure_model_capacity(&s.model, 100.0);
  s.model.base_failure = 0.1;
  ms_retry_policy_fixed(&s.policy, MS_MAX_RETRIES);
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = 50.0;
  c.scenario.duration = 100.0;
  c.backoff = (ms_backoff){MS_BACKOFF_EXPONENTIAL, 0.1, 2.0, 0};
  ck_assert_msg(ms_sim_fluid(&c, NULL, NULL, &sum, &err) == MS_OK, "%s",
                err.msg);
  /* after the first few seconds' retries have arrived */
  ck_assert_double_eq_tol(sum.attempts / sum.requests, 1.0 / 0.9, 0.01);
}
END_TEST

START_TEST(test_des_noise_escapes_healthy_basin) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 4, 10.0, 0.3);
  s.model.base_failure = 0.01;
  ms_retry_policy_fixed(&s.policy, 3);
  const double lambda[2] = {18.0, 12.0};
  int collapsed[2] = {0, 0};
  for (int i = 0; i < 2; i++)
    for (uint64_t seed = 1; seed <= 10; seed++) {
      ms_sim_config c;
      ms_sim_config_init(&c, &s);
      c.scenario.offered_load = lambda[i];
      c.scenario.duration = 20000.0;
      c.sample_interval = 10.0;
      c.seed = 5000 + seed;
      double at = -1;
      ms_sim_summary sum;
      ck_assert_int_eq(ms_sim_des(&c, stop_at_collapse, &at, &sum, NULL),
                       MS_OK);
      collapsed[i] += at >= 0;
    }
  ck_assert_msg(collapsed[0] >= 7, "18/s: %d of 10 collapsed", collapsed[0]);
  ck_assert_msg(collapsed[1] == 0, "12/s: %d of 10 collapsed", collapsed[1]);
  ms_sim_config c = config(85.0, 20000.0);
  c.sample_interval = 10.0;
  for (uint64_t seed = 1; seed <= 5; seed++) {
    c.seed = 5000 + seed;
    double at = -1;
    ms_sim_summary sum;
    ck_assert_int_eq(ms_sim_des(&c, stop_at_collapse, &at, &sum, NULL), MS_OK);
    ck_assert_msg(at < 0, "85/s, seed %d: collapsed at %g s", (int)seed, at);
  }
}
END_TEST

START_TEST(test_des_conservation) {
  ms_sim_config c = config(60.0, 200.0);
  c.backoff = (ms_backoff){MS_BACKOFF_DECORRELATED, 0.2, 4.0, 0};
  add_spike(&c, 10.0, 10.0, 20.0);
  add_spike(&c, -60.0, 100.0, 100.0);
  ms_sim_summary sum = run(MS_ENGINE_DES, &c, NULL);
  ck_assert_double_eq(sum.requests, sum.successes + sum.given_up);
  ck_assert_double_eq(sum.attempts, sum.requests + sum.retries);
  ck_assert_double_eq(sum.attempts, sum.successes + sum.failures);
}
END_TEST

/* ================================================================== */
/* Named retry policies                                                */
/* ================================================================== */

/*
 * Each named policy of model/metastable.h runs as its stack's algorithm in
 * the DES (and as a fluid of it in the fluid engine); its closed form in
 * model/loop.c is checked against both at loads that put p in each regime
 * of the policy: its cap not binding, binding, and for gRPC's throttle
 * below, near and above its switch at p = t/(1 + t).
 *
 * DES: 20 batches of 500 s after a warm-up of 500 s (which holds a
 * +60/s spike from 10 s for 30 s when the case starts from the collapsed
 * equilibrium), at a constant offered load; attempts per request and the
 * failure ratio by batch means.  The closed form is taken at the model's
 * stable equilibrium for that load (ms_equilibria), and, for the policies
 * whose amplification depends on p alone, also at the DES's own failure
 * ratio (A(p_measured)), which isolates the policy's formula from the
 * queueing model.  Agreement: within 3 SE plus the case's documented
 * tolerance `tol` (a share of A): 0 where the closed form is exact in the
 * limit, the measured gap with a margin where it is an approximation
 * (doc/simulation.md, "Named retry policies", has the numbers).  Where
 * the policy binds, the unlimited retry count at the measured p must miss
 * the DES by more than twice that allowance: the test fails if the engine
 * ignored the policy.
 */
typedef struct {
  const char *name;
  ms_service_params s;
  double lambda;    /* offered load, req/s */
  bool collapsed;   /* start from the collapsed equilibrium (a spike) */
  double tol;       /* DES: allowed gap beyond 3 SE, share of A */
  bool binding;     /* the policy changes A clearly */
  double fluid_tol; /* fluid: allowed gap, share of A; < 0: not checked */
} policy_case;

/* 10 servers of 100 ms, timeout 1 s, 3 retries, base failure `base`: at
 * low load the failures are the base ones and p is close to base. */
static ms_service_params policy_service(double base) {
  ms_service_params s = service();
  s.model.base_failure = base;
  return s;
}

/* 100 servers of 1 s, timeout 2 s, 3 retries: an attempt holds its slot
 * about 1 s, so Envoy's budget counts tens of attempts in flight. */
static ms_service_params long_service(double base) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 100, 1.0, 2.0);
  s.model.base_failure = base;
  ms_retry_policy_fixed(&s.policy, 3);
  return s;
}

static ms_service_params with_policy(ms_service_params s, ms_policy_kind k) {
  ms_policy_defaults(&s.policy, k);
  return s;
}

static ms_service_params with_grpc(ms_service_params s, double max_tokens) {
  s.policy.kind = MS_POLICY_GRPC;
  s.policy.grpc_max_tokens = max_tokens;
  s.policy.grpc_token_ratio = 0.1; /* switch at p = 1/11 = 0.0909 */
  return s;
}

static double f_amplification(const ms_sim_sample *s) {
  return s->amplification;
}

static ms_sim_config policy_config(const policy_case *pc, double window) {
  ms_sim_config c;
  ms_sim_config_init(&c, &pc->s);
  c.scenario.offered_load = pc->lambda;
  c.scenario.duration = 21 * window;
  c.sample_interval = window;
  if (pc->collapsed)
    add_spike(&c, 60.0, 10.0, 30.0);
  return c;
}

/* The closed form at the model's stable equilibrium: A and p there. */
static void policy_model(const policy_case *pc, double *A, double *p) {
  double xh, xc;
  equilibria(&pc->s, pc->lambda, &xh, &xc);
  double x = pc->collapsed ? xc : xh;
  *A = x / pc->lambda;
  ck_assert_int_eq(ms_failure_probability(&pc->s.model, x, p, NULL), MS_OK);
}

static bool verbose(void) {
  return getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose");
}

static void des_policy_case(const policy_case *pc) {
  ms_sim_config c = policy_config(pc, 500.0);
  series v = {0};
  ms_sim_summary sum = run(MS_ENGINE_DES, &c, &v);
  double to = c.scenario.duration;
  estimate a = batch_estimate(&v, 500.0, to, f_amplification, false);
  estimate p = batch_estimate(&v, 500.0, to, f_failure, false);
  series_free(&v);
  double A_cf, p_cf;
  policy_model(pc, &A_cf, &p_cf);
  const ms_retry_policy *pol = &pc->s.policy;
  ms_retry_policy fixed = *pol;
  fixed.kind = MS_POLICY_COUNT;
  double A_fixed, A_p = NAN;
  ck_assert_int_eq(ms_amplification(&fixed, p.mean, &A_fixed, NULL), MS_OK);
  bool by_p = !ms_policy_load_dependent(pol);
  if (by_p)
    ck_assert_int_eq(ms_amplification(pol, p.mean, &A_p, NULL), MS_OK);
  double allow = 3.0 * a.se + pc->tol * A_cf + 1e-6; /* solver */
  if (verbose())
    printf("DES %-30s A %.5f+-%.5f closed form %.5f (%+.3f %%, %.1f SE) "
           "A(p_des) %.5f  unlimited %.4f  p %.5f+-%.5f model %.5f  "
           "refused %.3f/s\n",
           pc->name, a.mean, a.se, A_cf, 100 * (a.mean / A_cf - 1),
           a.se > 0 ? (a.mean - A_cf) / a.se : 0.0, A_p, A_fixed, p.mean, p.se,
           p_cf, sum.refused / sum.duration);
  ck_assert_msg(fabs(a.mean - A_cf) <= allow,
                "%s: attempts/request %.5f +- %.5f, closed form %.5f (allowed "
                "%.5f)",
                pc->name, a.mean, a.se, A_cf, allow);
  if (by_p)
    ck_assert_msg(fabs(a.mean - A_p) <= 3.0 * a.se + pc->tol * A_p + 1e-6,
                  "%s: attempts/request %.5f +- %.5f, A(p = %.5f) %.5f",
                  pc->name, a.mean, a.se, p.mean, A_p);
  ck_assert_msg(fabs(p.mean - p_cf) <= 4.0 * p.se + 1e-9,
                "%s: failure ratio %.5f +- %.5f, model %.5f", pc->name, p.mean,
                p.se, p_cf);
  if (pc->binding)
    ck_assert_msg(fabs(A_fixed - a.mean) > 2.0 * allow,
                  "%s: the unlimited count's %.5f is too close to %.5f",
                  pc->name, A_fixed, a.mean);
  /* every request ends once: retries refused are requests given up */
  ck_assert(sum.refused <= sum.given_up);
  ck_assert_double_eq(sum.attempts, sum.requests + sum.retries);
}

/* The fluid engine, both variants, settles at the closed form. */
static void fluid_policy_case(const policy_case *pc) {
  if (pc->fluid_tol < 0.0)
    return;
  double A_cf, p_cf;
  policy_model(pc, &A_cf, &p_cf);
  for (int qm = 0; qm <= 1; qm++) {
    ms_sim_config c = policy_config(pc, 100.0);
    c.queue_memory = qm;
    ms_sim_summary sum = run(MS_ENGINE_FLUID, &c, NULL);
    double A = sum.final_attempts / sum.final_offered;
    if (verbose())
      printf("fluid (queue memory %d) %-30s A %.7f closed form %.7f "
             "(%+.5f %%)\n",
             qm, pc->name, A, A_cf, 100 * (A / A_cf - 1));
    ck_assert_msg(fabs(A - A_cf) <= pc->fluid_tol * A_cf + 1e-9,
                  "fluid (queue memory %d) %s: attempts/request %.7f, closed "
                  "form %.7f",
                  qm, pc->name, A, A_cf);
  }
}

/* The cases of each policy, appended at pc[n]; the new count
 * (tolerances: doc/simulation.md).  gRPC: max_tokens 10 and 100,
 * token_ratio 0.1. */
static int grpc_cases(policy_case *pc, int n) {
  pc[n++] = (policy_case){"grpc below switch (p 0.03)",
                          with_grpc(policy_service(0.03), 10),
                          20,
                          false,
                          0,
                          false,
                          1e-6};
  pc[n++] = (policy_case){"grpc near switch (p 0.09)",
                          with_grpc(policy_service(0.09), 10),
                          20,
                          false,
                          0.003,
                          true,
                          -1};
  pc[n++] = (policy_case){"grpc above switch (p 0.2)",
                          with_grpc(policy_service(0.20), 10),
                          20,
                          false,
                          1e-3,
                          true,
                          1e-3};
  pc[n++] = (policy_case){"grpc overloaded (110/s)",
                          with_grpc(policy_service(0.01), 10),
                          110,
                          false,
                          0,
                          true,
                          1e-9};
  pc[n++] = (policy_case){"grpc M=100 below switch (p 0.08)",
                          with_grpc(policy_service(0.08), 100),
                          20,
                          false,
                          0,
                          false,
                          1e-6};
  return n;
}

/* The AWS quota with throttling errors, share th of the failures, or with
 * the older costs (5 a retry, 10 after a timeout). */
static ms_service_params with_aws(ms_service_params s, double th, bool legacy) {
  ms_policy_defaults(&s.policy, MS_POLICY_AWS);
  if (legacy)
    ms_aws_costs_defaults(&s.policy, MS_AWS_COSTS_LEGACY);
  s.policy.aws_throttling_share = th;
  return s;
}

/* AWS standard retry quota, the SDK's defaults; with throttling errors
 * (their retries cost 5, the others 14: the bucket near empty lets the
 * cheap ones through more often, doc/design.md §1.2); the older costs. */
static int aws_cases(policy_case *pc, int n) {
  pc[n++] = (policy_case){"aws throttling 50 % (p 0.4)",
                          with_aws(policy_service(0.4), 0.5, false),
                          20,
                          false,
                          0.03,
                          true,
                          -1.0};
  pc[n++] = (policy_case){"aws throttling only (p 0.4)",
                          with_aws(policy_service(0.4), 1.0, false),
                          20,
                          false,
                          0,
                          true,
                          1e-6};
  pc[n++] = (policy_case){"aws legacy overloaded (110/s)",
                          with_aws(policy_service(0.01), 0.0, true),
                          110,
                          false,
                          0,
                          true,
                          1e-3};
  pc[n++] = (policy_case){"aws not binding (p 0.1)",
                          with_policy(policy_service(0.1), MS_POLICY_AWS),
                          20,
                          false,
                          0,
                          false,
                          1e-6};
  pc[n++] = (policy_case){"aws binding (p 0.4)",
                          with_policy(policy_service(0.4), MS_POLICY_AWS),
                          20,
                          false,
                          0,
                          true,
                          1e-6};
  pc[n++] = (policy_case){"aws overloaded (110/s)",
                          with_policy(policy_service(0.01), MS_POLICY_AWS),
                          110,
                          false,
                          0,
                          true,
                          1e-3};
  return n;
}

/* Finagle RetryBudget(), its defaults; and without its reserve. */
static int finagle_cases(policy_case *pc, int n) {
  pc[n++] = (policy_case){"finagle not binding (60/s)",
                          with_policy(policy_service(0.01), MS_POLICY_FINAGLE),
                          60,
                          false,
                          0,
                          false,
                          1e-6};
  pc[n++] = (policy_case){"finagle binding (p 0.7)",
                          with_policy(policy_service(0.7), MS_POLICY_FINAGLE),
                          20,
                          false,
                          0.01,
                          true,
                          1e-6};
  pc[n++] = (policy_case){"finagle knee (p 0.5)",
                          with_policy(policy_service(0.5), MS_POLICY_FINAGLE),
                          20,
                          false,
                          0.03,
                          true,
                          1e-6};
  pc[n++] = (policy_case){"finagle overloaded (110/s)",
                          with_policy(policy_service(0.01), MS_POLICY_FINAGLE),
                          110,
                          false,
                          0.001,
                          true,
                          1e-6};
  policy_case share = {"finagle share only (p 0.5)",
                       with_policy(policy_service(0.5), MS_POLICY_FINAGLE),
                       20,
                       false,
                       0.005,
                       true,
                       1e-6};
  share.s.policy.finagle_min_per_second = 0.0;
  pc[n++] = share;
  return n;
}

/* Envoy retry_budget, its defaults. */
static int envoy_cases(policy_case *pc, int n) {
  pc[n++] = (policy_case){"envoy not binding (60/s)",
                          with_policy(policy_service(0.01), MS_POLICY_ENVOY),
                          60,
                          false,
                          0,
                          false,
                          1e-6};
  pc[n++] = (policy_case){"envoy overloaded (110/s)",
                          with_policy(policy_service(0.01), MS_POLICY_ENVOY),
                          110,
                          false,
                          0.005,
                          true,
                          1e-6};
  pc[n++] = (policy_case){"envoy collapsed (90/s)",
                          with_policy(policy_service(0.01), MS_POLICY_ENVOY),
                          90,
                          true,
                          0.005,
                          true,
                          1e-6};
  pc[n++] = (policy_case){"envoy 1-s service binding (p 0.5)",
                          with_policy(long_service(0.5), MS_POLICY_ENVOY),
                          50,
                          false,
                          0.003,
                          true,
                          1e-6};
  pc[n++] = (policy_case){"envoy 1-s service knee (p 0.3)",
                          with_policy(long_service(0.3), MS_POLICY_ENVOY),
                          50,
                          false,
                          0.03,
                          true,
                          1e-6};
  pc[n++] = (policy_case){"envoy few in flight (p 0.5)",
                          with_policy(policy_service(0.5), MS_POLICY_ENVOY),
                          20,
                          false,
                          0.1,
                          false,
                          1e-6};
  return n;
}

static int policy_cases(policy_case *pc) {
  return envoy_cases(pc, finagle_cases(pc, aws_cases(pc, grpc_cases(pc, 0))));
}

#define MAX_POLICY_CASES 32

START_TEST(test_des_named_policies) {
  policy_case pc[MAX_POLICY_CASES];
  int n = policy_cases(pc);
  for (int i = 0; i < n; i++)
    des_policy_case(&pc[i]);
}
END_TEST

START_TEST(test_fluid_named_policies) {
  policy_case pc[MAX_POLICY_CASES];
  int n = policy_cases(pc);
  for (int i = 0; i < n; i++)
    fluid_policy_case(&pc[i]);
}
END_TEST

/* The fluid engine with the timeout on the response: with queue memory
 * and memoryless, without retries, its steady failure ratio is P(W + S >
 * T) (ms_ln_response_tail with the same cv, held to mpmath by
 * tests/check_response.c) for exponential service (no cv key), constant
 * (cv 0), cv 0.5 and cv 2, 10 x 100 ms, T 200 ms.  The loads put the
 * wait's rate g = kappa (c mu - x) well apart from every service phase's
 * rate (x 70/s) and on one of them, where a phase's two terms cancel: x
 * 90/s at cv 1 (g = mu), 87.5/s at cv 0.5 (g = 2 mu), 100 - 25 (1 +- s)
 * at cv 2 (g = the hyperexponential's rates 2 w_i mu, w_i = (1 +- s) / 2,
 * s = sqrt(3/5)).  Constant service: its shift as a shorter timeout, also
 * down to T - D = 0 (T = 100 ms: P = C, those that wait at all fail) and
 * below (T = 50 ms: every attempt fails). */
START_TEST(test_fluid_response) {
  const double s = sqrt(0.6);
  const struct {
    double cv, T, x;
  } cs[] = {
      {1.0, 0.2, 70.0},
      {1.0, 0.2, 90.0},
      {0.0, 0.2, 70.0},
      {0.0, 0.2, 90.0},
      {0.0, 0.1, 70.0},
      {0.0, 0.05, 70.0},
      {0.5, 0.2, 70.0},
      {0.5, 0.2, 87.5},
      {2.0, 0.2, 70.0},
      {2.0, 0.2, 100.0 - 25.0 * (1.0 + s)},
      {2.0, 0.2, 100.0 - 25.0 * (1.0 - s)},
  };
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++)
    for (int mem = 0; mem < 2; mem++) {
      ms_service_params sp;
      ms_failure_model_erlang(&sp.model, 10, 10.0, cs[k].T);
      sp.model.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
      if (cs[k].cv != 1.0) {
        sp.model.has_service_time_cv = true;
        sp.model.service_time_cv = cs[k].cv;
      }
      ms_retry_policy_fixed(&sp.policy, 0);
      ck_assert_int_eq(ms_sim_fluid_supports(&sp.model, NULL), MS_OK);
      ms_sim_config c;
      ms_sim_config_init(&c, &sp);
      c.scenario.offered_load = cs[k].x;
      c.scenario.duration = 300.0;
      c.queue_memory = mem;
      ms_sim_summary sum = run(MS_ENGINE_FLUID, &c, NULL);
      double ln_r;
      ck_assert_int_eq(ms_ln_response_tail(10, 10.0, cs[k].x, cs[k].T, cs[k].cv,
                                           &ln_r, NULL),
                       MS_OK);
      double r = exp(ln_r), got = sum.final_failure_ratio;
      ck_assert_msg(fabs(got - r) < 1e-4 * r,
                    "cv %g T %g x %.6f memory %d: %.10f, P(W + S > T) "
                    "%.10f, relative %.2e",
                    cs[k].cv, cs[k].T, cs[k].x, mem, got, r, (got - r) / r);
    }
}
END_TEST

START_TEST(test_errors) {
  ms_sim_config c = config(60.0, 100.0);
  ms_error err;
  ms_sim_summary sum;
  c.service.policy.tiers = 2;
  ck_assert_int_eq(ms_sim_fluid(&c, NULL, NULL, &sum, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "tiers"));
  c = config(60.0, 100.0);
  c.dt = 0.3;
  ck_assert_int_eq(ms_sim_config_check(&c, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "divide"));
  ck_assert_int_eq(ms_sim_fluid(&c, NULL, NULL, &sum, &err), MS_EINVAL);
  c = config(60.0, 100.0);
  c.backoff = (ms_backoff){MS_BACKOFF_FULL_JITTER, 2.0, 1.0, 0};
  ck_assert_int_eq(ms_sim_des(&c, NULL, NULL, &sum, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "cap"));
  c = config(60.0, 0.0);
  ck_assert_int_eq(ms_sim_des(&c, NULL, NULL, &sum, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "duration"));
  ms_service_params s;
  ms_failure_model_capacity(&s.model, 1.0);
  ms_retry_policy_fixed(&s.policy, 3);
  ms_sim_config_init(&c, &s);
  ck_assert_int_eq(ms_sim_des(&c, NULL, NULL, &sum, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "erlang"));
  c.queue_memory = true;
  ck_assert_int_eq(ms_sim_fluid(&c, NULL, NULL, &sum, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "queue memory"));
  /* every named policy runs on one tier; on more, the check says why */
  const ms_policy_kind kinds[] = {MS_POLICY_GRPC, MS_POLICY_ENVOY,
                                  MS_POLICY_FINAGLE, MS_POLICY_AWS};
  for (int k = 0; k < 4; k++) {
    c = config(60.0, 100.0);
    c.service = with_grpc(c.service, 10); /* gRPC's fields, no default */
    ms_policy_defaults(&c.service.policy, kinds[k]);
    ck_assert_msg(ms_sim_config_check(&c, &err) == MS_OK, "%s: %s",
                  ms_policy_name(kinds[k]), err.msg);
    c.service.policy.tiers = 2;
    ck_assert_int_eq(ms_sim_config_check(&c, &err), MS_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "tier"));
  }
  c = config(60.0, 100.0);
  double tau;
  ck_assert_int_eq(
      ms_sim_latch_threshold(MS_ENGINE_FLUID, &c, 0, 0, 1, 0.01, &tau, &err),
      MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "trigger index"));
}
END_TEST

/* Whether a fluid run of the service at lambda with a full stall (or a
 * spike of `spike` req/s) of `hold` s from `start`, run to `duration`,
 * ends in a storm: built here, not by the code under test. */
static bool stall_latches(double lambda, double spike, double start,
                          double hold, double duration) {
  ms_sim_config c = config(lambda, duration);
  c.queue_memory = true;
  if (spike > 0)
    add_spike(&c, spike, start, hold);
  else
    add_stall(&c, 0, start, hold);
  /* latched as ms_tolerance_probe decides it: the model's collapsed basin
   * at the end, not the storm flag, which stays up through a drain */
  return ms_state_storm(run(MS_ENGINE_FLUID, &c, NULL).final_state) != 0;
}

static ms_tolerance tolerance_of(double lambda, double spike) {
  ms_sim_config c = config(lambda, 60.0);
  ms_tolerance_query q = {.kind =
                              spike > 0 ? MS_TRIGGER_LOAD : MS_TRIGGER_SERVERS,
                          .spike_load = spike,
                          .check_monotone = true};
  ms_tolerance t;
  ms_error err;
  ck_assert_msg(ms_trigger_tolerance(&c, &q, &t, &err) == MS_OK, "%s", err.msg);
  return t;
}

/*
 * The fluid engine's stall tolerance against the DES latch boundary (the
 * median over seeds of each seed's bisection, ms_tolerance_run), at two
 * cheap points of tools/tolerance_grid.py's grid: doc/simulation.md's
 * service (10 servers, 100 ms, T = 1 s, 3 retries, 1 % base failure) at
 * 60/s, and 100 servers behind a timeout of 5 service times with 2 retries
 * half-way into its band.  Each boundary is its bracket's midpoint; the
 * bound is the grid's worst error, 8 % (doc/simulation.md, "How far the
 * fluid tolerance is from the DES").  Before the FIFO backlog the fluid
 * engine was 15 % and 27 % short here.
 */
static double boundary_of(const ms_sim_config *c, ms_sim_engine e, int seeds) {
  ms_tolerance_query q = {
      .kind = MS_TRIGGER_SERVERS, .engine = e, .seeds = seeds};
  ms_tolerance t;
  ms_error err;
  ck_assert_msg(ms_tolerance_run(c, &q, &t, &err) == MS_OK, "%s", err.msg);
  ck_assert_int_eq(t.kind, MS_TOLERANCE_BOUNDED);
  ck_assert(e == MS_ENGINE_FLUID || t.seeds == seeds);
  return 0.5 * (t.tolerance + t.latch);
}

START_TEST(test_tolerance_fluid_against_des) {
  ms_sim_config a = config(60.0, 60.0);
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 100, 10.0, 0.5);
  ms_retry_policy_fixed(&s.policy, 2);
  ms_sim_config b;
  ms_sim_config_init(&b, &s);
  ms_landscape ls = landscape(&s);
  b.scenario.offered_load =
      ls.recovery_load + 0.5 * (ls.tipping_load - ls.recovery_load);
  const ms_sim_config *cs[2] = {&a, &b};
  const int seeds[2] = {21, 5};
  for (int i = 0; i < 2; i++) {
    double f = boundary_of(cs[i], MS_ENGINE_FLUID, 0);
    double d = boundary_of(cs[i], MS_ENGINE_DES, seeds[i]);
    if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
      printf("stall tolerance, case %d: fluid %.4f s, DES median %.4f s\n", i,
             f, d);
    ck_assert_msg(fabs(f / d - 1.0) <= 0.08,
                  "case %d: fluid %.4f s, DES %.4f s", i, f, d);
  }
  /* the fluid-only entry refuses the DES */
  ms_tolerance_query q = {.kind = MS_TRIGGER_SERVERS, .engine = MS_ENGINE_DES};
  ms_tolerance t;
  ms_error err;
  ck_assert_int_eq(ms_trigger_tolerance(&a, &q, &t, &err), MS_EINVAL);
  ck_assert_msg(strstr(err.msg, "ms_tolerance_run") != NULL, "%s", err.msg);
}
END_TEST

/*
 * A search too long in fluid bins is refused, not run (found by fuzz_model:
 * 16 servers at about 1 s behind a 7 us timeout, bins of T/20 = 0.35 us,
 * about 6e7 bins a probe and 22 s a search).  The bound is what one probe
 * of the run would need: duration / dt against MS_TOLERANCE_MAX_BINS.
 */
START_TEST(test_tolerance_bin_bound) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 16, 0.988, 7.03e-6);
  ms_retry_policy_fixed(&s.policy, 0);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = 1e-12;
  ms_tolerance_query q = {
      .kind = MS_TRIGGER_SERVERS, .rel_tol = 0.1, .max_hold = 1};
  ms_tolerance t;
  ms_error err;
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_ELIMIT);
  ck_assert_msg(strstr(err.msg, "fluid bins") != NULL, "%s", err.msg);
  /* the same service behind a 10 ms timeout: bins of 0.5 ms, searched */
  ms_failure_model_erlang(&c.service.model, 16, 0.988, 0.01);
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_OK);
  ck_assert_double_eq_tol(t.dt, 0.01 / 20, 1e-12);
  ck_assert_double_le((t.lead_in + t.horizon) / t.dt, MS_TOLERANCE_MAX_BINS);
}
END_TEST

/* A stop hook: counts its polls, says stop from poll `at` on (0: never);
 * go counts the polls that let the search go on. */
typedef struct {
  long polls, at, go;
} stop_count;

static int stop_at(void *ctx) {
  stop_count *sc = ctx;
  sc->polls++;
  if (sc->at > 0 && sc->polls >= sc->at)
    return 1;
  sc->go++;
  return 0;
}

/*
 * ms_tolerance_query.stop: a hook that never says stop changes nothing
 * (the same bracket, the same probes) and is polled before each probe and
 * at each window; one that says stop ends the search with MS_ELIMIT at
 * that poll, before a probe (poll 1) or inside one (a later poll).
 */
START_TEST(test_tolerance_stop) {
  ms_sim_config c = config(60.0, 60.0);
  ms_tolerance_query q = {.kind = MS_TRIGGER_SERVERS};
  ms_tolerance ref, t;
  ms_error err;
  ck_assert_msg(ms_trigger_tolerance(&c, &q, &ref, &err) == MS_OK, "%s",
                err.msg);
  ck_assert_int_eq(ref.kind, MS_TOLERANCE_BOUNDED);
  stop_count sc = {0};
  q.stop = stop_at;
  q.stop_ctx = &sc;
  ck_assert_msg(ms_trigger_tolerance(&c, &q, &t, &err) == MS_OK, "%s", err.msg);
  ck_assert_double_eq(t.tolerance, ref.tolerance);
  ck_assert_double_eq(t.latch, ref.latch);
  ck_assert_int_eq(t.probes, ref.probes);
  /* one poll before each probe, one per window of it: windows of the
   * sample interval over lead-in + hold + horizon */
  ck_assert_int_gt(sc.polls,
                   ref.probes * (long)(t.horizon / c.sample_interval));
  long all = sc.polls;
  sc = (stop_count){.at = 1};
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_ELIMIT);
  ck_assert_msg(strstr(err.msg, "before a probe") != NULL, "%s", err.msg);
  ck_assert_int_eq(sc.go, 0);
  ck_assert(t.stopped && t.tolerance == 0 && t.latch == 0);
  sc = (stop_count){.at = all / 2};
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_ELIMIT);
  ck_assert_msg(strstr(err.msg, "stopped by the caller") != NULL, "%s",
                err.msg);
  ck_assert_int_eq(sc.go, all / 2 - 1);
  ck_assert(t.stopped);
  /* the bracket reached holds the answer, and resumed from it the search
   * ends where the unstopped one did, with fewer probes */
  ck_assert_double_le(t.tolerance, ref.tolerance);
  ck_assert(t.latch == 0 || t.latch >= ref.latch);
  int before = t.probes;
  q.resume = true;
  q.resume_lo = t.tolerance;
  q.resume_hi = t.latch;
  q.stop = NULL;
  ck_assert_msg(ms_trigger_tolerance(&c, &q, &t, &err) == MS_OK, "%s", err.msg);
  ck_assert_double_eq(t.tolerance, ref.tolerance);
  ck_assert_double_eq(t.latch, ref.latch);
  ck_assert_int_le(t.probes + before, ref.probes + 1);
  /* a bracket that is not one is refused */
  q.resume_lo = 2;
  q.resume_hi = 1;
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_EINVAL);
  q.resume_lo = -1;
  q.resume_hi = 0;
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_EINVAL);
}
END_TEST

/*
 * The stall tolerance against a brute-force scan: 120 stalls evenly spaced
 * over [0, 2 latch], each a fluid run built here.  The outcome must be a
 * step (no recovery after a shorter stall latched) whose step lies in
 * (tolerance, latch]; the same holds with a horizon 300 s longer (the
 * verdict does not depend on where the run stops); and the bisection of
 * ms_sim_latch_threshold, a separate search, lands in the same bracket.
 */
START_TEST(test_stall_tolerance_scan) {
  const double loads[] = {30.0, 60.0, 90.0};
  double prev = INFINITY;
  for (int i = 0; i < 3; i++) {
    ms_tolerance t = tolerance_of(loads[i], 0);
    ck_assert_int_eq(t.kind, MS_TOLERANCE_BOUNDED);
    ck_assert(t.monotone);
    ck_assert(t.tolerance < t.latch);
    ck_assert(t.latch - t.tolerance <= fmax(0.01 * t.latch, t.dt) + 1e-12);
    double step = -1;
    bool seen = false;
    for (int k = 0; k <= 120; k++) {
      double hold = 2.0 * t.latch * k / 120.0;
      bool l = stall_latches(loads[i], 0, t.lead_in, hold,
                             t.lead_in + hold + t.horizon);
      ck_assert_msg(!(seen && !l),
                    "load %g: %g s recovered after a shorter "
                    "stall latched",
                    loads[i], hold);
      if (l && !seen)
        step = hold;
      seen = seen || l;
      if (k % 10 == 0)
        ck_assert_int_eq(stall_latches(loads[i], 0, t.lead_in, hold,
                                       t.lead_in + hold + t.horizon + 300.0),
                         l);
    }
    ck_assert_msg(step > t.tolerance - 2.0 * t.latch / 120 &&
                      step <= t.latch + 2.0 * t.latch / 120,
                  "load %g: scan steps at %g s, search says (%g, %g]", loads[i],
                  step, t.tolerance, t.latch);
    /* ms_sim_latch_threshold judges a run by the summary's storm, which
     * lasts until goodput returns: 300 s more let a slow drain near the
     * unstable equilibrium finish, as the scan's longer runs above do */
    ms_sim_config c =
        config(loads[i], t.lead_in + 2 * t.latch + t.horizon + 300.0);
    c.queue_memory = true;
    add_stall(&c, 0, t.lead_in, 0);
    double tau;
    ms_error err;
    ck_assert_msg(ms_sim_latch_threshold(MS_ENGINE_FLUID, &c, 0, 0.0,
                                         2 * t.latch, 1e-3, &tau,
                                         &err) == MS_OK,
                  "%s", err.msg);
    ck_assert_msg(tau > t.tolerance - t.dt && tau < t.latch + t.dt,
                  "load %g: threshold %g s, search (%g, %g]", loads[i], tau,
                  t.tolerance, t.latch);
    /* a higher load survives a shorter stall */
    ck_assert(t.tolerance < prev);
    prev = t.tolerance;
  }
}
END_TEST

/* Below the recovery load (25/s) every stall and spike is survived, and
 * the engine agrees (a 110 s stall, 20 loop turns past its end, and a run
 * built here of a 300 s stall given 3000 s to drain); above the tipping
 * load (93.66/s) the tolerance is 0 and a run with no trigger ends in a
 * storm; a spike that stays under the tipping load is survived at any
 * length. */
START_TEST(test_tolerance_limits) {
  ms_tolerance t = tolerance_of(20.0, 0);
  ck_assert_int_eq(t.kind, MS_TOLERANCE_UNBOUNDED);
  ck_assert(t.verified);
  ck_assert_double_eq_tol(t.checked, 100 * (1.0 + 0.1), 1e-9);
  ck_assert(!stall_latches(20.0, 0, 10, 300, 3310));
  t = tolerance_of(20.0, 500);
  ck_assert_int_eq(t.kind, MS_TOLERANCE_UNBOUNDED);
  t = tolerance_of(60.0, 30); /* 90/s at the peak, under 93.66/s */
  ck_assert_int_eq(t.kind, MS_TOLERANCE_UNBOUNDED);
  ck_assert(t.verified);
  t = tolerance_of(95.0, 0);
  ck_assert_int_eq(t.kind, MS_TOLERANCE_OVERLOADED);
  ck_assert_double_eq(t.tolerance, 0);
  ck_assert_int_eq(t.probes, 0);
  ck_assert(stall_latches(95.0, 0, 10, 0, 200));
  /* a spike: bounded, and the runs on either side agree */
  t = tolerance_of(60.0, 60);
  ck_assert_int_eq(t.kind, MS_TOLERANCE_BOUNDED);
  ck_assert(!stall_latches(60, 60, t.lead_in, t.tolerance,
                           t.lead_in + t.tolerance + t.horizon + 300));
  ck_assert(stall_latches(60, 60, t.lead_in, t.latch,
                          t.lead_in + t.latch + t.horizon + 300));
}
END_TEST

START_TEST(test_tolerance_errors) {
  ms_sim_config c = config(60.0, 60.0);
  ms_tolerance_query q = {.kind = MS_TRIGGER_SERVERS, .servers = 10};
  ms_tolerance t;
  ms_error err;
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "stalled pool"));
  q = (ms_tolerance_query){.kind = MS_TRIGGER_LOAD, .spike_load = 0};
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "spike size"));
  q = (ms_tolerance_query){.kind = MS_TRIGGER_SERVERS, .rel_tol = 0.6};
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "relative tolerance"));
  q = (ms_tolerance_query){.kind = MS_TRIGGER_SERVERS, .max_hold = 1e6};
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "longest trigger"));
  q = (ms_tolerance_query){.kind = MS_TRIGGER_SERVERS};
  ms_failure_model_capacity(&c.service.model, 100.0);
  ck_assert_int_eq(ms_trigger_tolerance(&c, &q, &t, &err), MS_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "erlang"));
  bool l;
  ck_assert_int_eq(ms_tolerance_probe(&c, &q, -1, &l, NULL, &err), MS_EINVAL);
  ck_assert_str_eq(ms_tolerance_kind_name(MS_TOLERANCE_BEYOND), "beyond");
}
END_TEST

/* A sink that stops the run after three windows. */
static int stop_after_three(void *ctx, const ms_sim_sample *s) {
  (void)s;
  return ++*(int *)ctx >= 3;
}

START_TEST(test_sink_stops) {
  for (int e = 0; e < 2; e++) {
    ms_sim_config c = config(60.0, 100.0);
    int calls = 0;
    ms_sim_summary sum;
    ck_assert_int_eq(
        ms_sim_run((ms_sim_engine)e, &c, stop_after_three, &calls, &sum, NULL),
        MS_OK);
    ck_assert_int_eq(calls, 3);
    ck_assert(sum.stopped);
    ck_assert_int_eq(sum.samples, 3);
  }
}
END_TEST

/* ms_sim_memory_estimate against the peak RSS of a DES storm measured in
 * a child process (wait4's ru_maxrss, KiB): 10 servers of 10/s, timeout
 * 1 s, 3 retries, 200,000 req/s for 10 s, every attempt timing out, so
 * that the queue of live attempts holds about 800,000 entries.  The
 * estimate is a bound (sim.h): measured <= estimate <= 4 measured. */
START_TEST(test_memory_estimate_des) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 10.0, 1.0);
  ms_retry_policy_fixed(&s.policy, 3);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = 200000.0;
  c.scenario.duration = 10.0;
  double est;
  ms_error err;
  ck_assert_int_eq(ms_sim_memory_estimate(MS_ENGINE_DES, &c, &est, &err),
                   MS_OK);
  /* the formula by hand: N_r = 10 + 2e5 x 4, N_e = 10, N_q = 8e5 */
  double want = MS_SIM_MEMORY_BASE + 2.0 * (22.0 * 800010.0 + 24.0 * 10.0) +
                48.0 * 800000.0;
  ck_assert_double_eq_tol(est, want, 1e-6 * want);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    ms_sim_summary sum;
    _exit(ms_sim_des(&c, NULL, NULL, &sum, NULL) == MS_OK ? 0 : 1);
  }
  int status;
  struct rusage ru;
  ck_assert_int_eq(wait4(pid, &status, 0, &ru), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  double rss = 1024.0 * (double)ru.ru_maxrss;
  ck_assert_msg(rss <= est && est <= 4.0 * rss,
                "peak RSS %.0f bytes, estimate %.0f", rss, est);
  /* the fluid engine's schedule: r J doubles, J = (T + B) / dt + 2 */
  ck_assert_int_eq(ms_sim_memory_estimate(MS_ENGINE_FLUID, &c, &est, &err),
                   MS_OK);
  ck_assert(est > MS_SIM_MEMORY_BASE && est < MS_SIM_MEMORY_BASE + 1e5);
  /* a timeout range of 1 s to 2 s: retries land up to 2 s, J grows by
   * 1 s / dt = 20 bins (dt = T/20), 8 r + 16 k bytes each, 1 <= k <= r */
  double est_w;
  c.service.model.timeout_spread = 1.0;
  ck_assert_int_eq(ms_sim_memory_estimate(MS_ENGINE_FLUID, &c, &est_w, &err),
                   MS_OK);
  ck_assert_msg(est_w - est >= 20.0 * (8.0 * 3 + 16.0) &&
                    est_w - est <= 20.0 * (8.0 * 3 + 16.0 * 3),
                "estimate %.0f with the range, %.0f without", est_w, est);
  ck_assert_int_eq(ms_sim_memory_estimate((ms_sim_engine)7, &c, &est, &err),
                   MS_EINVAL);
}
END_TEST

static Suite *sim_suite(void) {
  Suite *s = suite_create("sim");
  TCase *parts = tcase_create("scenarios and backoff");
  tcase_add_test(parts, test_scenario_offered_load);
  tcase_add_test(parts, test_scenario_pool);
  tcase_add_test(parts, test_backoff_names);
  tcase_add_test(parts, test_backoff_means_closed_form);
  tcase_add_test(parts, test_backoff_multiplier);
  tcase_add_test(parts, test_many_retries);
  tcase_add_test(parts, test_backoff_mean_delays);
  tcase_add_test(parts, test_backoff_decorrelated);
  tcase_add_test(parts, test_errors);
  tcase_add_test(parts, test_sink_stops);
  suite_add_tcase(s, parts);

  TCase *fluid = tcase_create("fluid");
  tcase_set_timeout(fluid, 300);
  tcase_add_test(fluid, test_fluid_capacity_reference);
  tcase_add_test(fluid, test_fluid_settles_healthy);
  tcase_add_test(fluid, test_fluid_queue_memory_stationary);
  tcase_add_test(fluid, test_fluid_general_service);
  tcase_add_test(fluid, test_fluid_spread_steady);
  tcase_add_test(fluid, test_fluid_settles_collapsed);
  tcase_add_test(fluid, test_fluid_overloaded);
  tcase_add_test(fluid, test_fluid_latch_threshold);
  tcase_add_test(fluid, test_fluid_backoff_moves_no_equilibrium);
  tcase_add_test(fluid, test_fluid_caps);
  tcase_add_test(fluid, test_fluid_response);
  tcase_add_test(fluid, test_fluid_conservation);
  tcase_add_test(fluid, test_stall);
  tcase_add_test(fluid, test_stall_spread_against_des);
  tcase_add_test(fluid, test_fluid_named_policies);
  tcase_add_test(fluid, test_stall_tolerance_scan);
  tcase_add_test(fluid, test_tolerance_bin_bound);
  tcase_add_test(fluid, test_tolerance_fluid_against_des);
  tcase_add_test(fluid, test_tolerance_stop);
  tcase_add_test(fluid, test_tolerance_limits);
  tcase_add_test(fluid, test_tolerance_errors);
  suite_add_tcase(s, fluid);

  TCase *des = tcase_create("des");
  tcase_set_timeout(des, 600);
  tcase_add_test(des, test_des_is_mmc);
  tcase_add_test(des, test_des_response_tail);
  tcase_add_test(des, test_des_response_spread);
  tcase_add_test(des, test_des_service_moments);
  tcase_add_test(des, test_des_general_service_tail);
  tcase_add_test(des, test_des_spread_timeout);
  tcase_add_test(des, test_des_equilibria_three_cases);
  tcase_add_test(des, test_des_latch_threshold);
  tcase_add_test(des, test_des_backoff_moves_no_equilibrium);
  tcase_add_test(des, test_des_caps);
  tcase_add_test(des, test_des_queue_limit);
  tcase_add_test(des, test_des_queue_limit_response);
  tcase_add_test(des, test_des_fast_retried_rejections);
  tcase_add_test(des, test_retrial_queue_against_des);
  tcase_add_test(des, test_retrial_loads);
  tcase_add_test(des, test_des_seeds);
  tcase_add_test(des, test_des_conservation);
  tcase_add_test(des, test_memory_estimate_des);
  tcase_add_test(des, test_des_noise_escapes_healthy_basin);
  tcase_add_test(des, test_des_named_policies);
  suite_add_tcase(s, des);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(sim_suite());
  return ms_check_run(sr);
}
