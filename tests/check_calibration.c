/* SPDX-License-Identifier: MIT */
/*
 * Calibration (doc/design.md §1.8): the estimator against a direct
 * two-pass computation, its standard error against the scatter of many
 * independent traces, the residual against its closed form and its null
 * distribution, and the tracker on synthetic traces drawn from a known
 * M/M/c service (Poisson arrivals, exponential service times, binomial
 * failures at the model's p(x)): what it learns, when it switches, when
 * it says the model does not fit, and what it refuses.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "metastable.h"
#include "service.h"

/* ---- random draws (erand48, as tests/check_sim.c) --------------------- */

static unsigned short seed[3];
static void reseed(unsigned s) {
  seed[0] = 0x330e;
  seed[1] = (unsigned short)s;
  seed[2] = (unsigned short)(s >> 16);
}
static double uniform(void) { return erand48(seed); }
static double exponential(double rate) { return -log1p(-uniform()) / rate; }
/* Poisson(mean) by counting exponential gaps in [0, 1) */
static long poisson(double mean) {
  long n = 0;
  for (double t = exponential(mean); t < 1.0; t += exponential(mean))
    n++;
  return n;
}
static long binomial(long n, double p) {
  long k = 0;
  for (long i = 0; i < n; i++)
    k += uniform() < p;
  return k;
}

/* ---- the estimator ----------------------------------------------------- */

/* The estimator's mean and error against the definition evaluated
 * directly (two passes, long double, explicit fading factors). */
START_TEST(test_estimator_matches_definition) {
  reseed(1);
  enum { N = 200 };
  double x[N], w[N], dt[N];
  const double tc = 50.0;
  ms_estimator e;
  ms_estimator_init(&e, tc);
  for (int i = 0; i < N; i++) {
    x[i] = 0.1 + 0.02 * (uniform() - 0.5);
    w[i] = 1 + 1000 * uniform();
    dt[i] = i == 0 ? 0 : 1 + 9 * uniform();
    ck_assert_int_eq(ms_estimator_add(&e, x[i], w[i], dt[i], NULL), MS_OK);
  }
  long double age = 0, a[N];
  for (int i = N - 1; i >= 0; i--) {
    a[i] = expl(-age / tc);
    age += dt[i];
  }
  long double A = 0, A2 = 0, U = 0, U1 = 0, Q = 0;
  for (int i = 0; i < N; i++) {
    A += a[i];
    A2 += a[i] * a[i];
    U += a[i] * w[i];
    U1 += a[i] * w[i] * x[i];
    Q += a[i] * a[i] * w[i];
  }
  long double m = U1 / U, S = 0;
  for (int i = 0; i < N; i++)
    S += a[i] * w[i] * (x[i] - m) * (x[i] - m);
  long double k = A * A / A2;
  long double se = sqrtl(S / A * k / (k - 1) * Q) / U;
  double mean, err;
  ck_assert(ms_estimator_get(&e, &mean, &err));
  ck_assert_double_eq_tol(mean, (double)m, 1e-14 * (double)m);
  ck_assert_double_eq_tol(err, (double)se, 1e-10 * (double)se);
  ck_assert_double_eq_tol(ms_estimator_effective_samples(&e), (double)k,
                          1e-10 * (double)k);
}
END_TEST

START_TEST(test_estimator_domain) {
  ms_estimator e;
  ms_estimator_init(&e, 10);
  double m = 7, s = 7;
  ck_assert(!ms_estimator_get(&e, &m, &s)); /* empty */
  ms_error err;
  ck_assert_int_eq(ms_estimator_add(&e, NAN, 1, 1, &err), MS_EINVAL);
  ck_assert_int_eq(ms_estimator_add(&e, 1, 0, 1, &err), MS_EINVAL);
  ck_assert_int_eq(ms_estimator_add(&e, 1, 1, -1, &err), MS_EINVAL);
  ck_assert_int_eq(ms_estimator_add(&e, 1, INFINITY, 1, &err), MS_EINVAL);
  ck_assert_uint_eq(e.samples, 0);
  ck_assert_int_eq(ms_estimator_add(&e, 2, 1, 0, NULL), MS_OK);
  ck_assert(!ms_estimator_get(&e, &m, &s)); /* one sample is no error */
  ck_assert_int_eq(ms_estimator_add(&e, 2, 3, 1e9, NULL), MS_OK);
  ck_assert(ms_estimator_get(&e, &m, &s));
  ck_assert_double_eq(m, 2.0);
  ck_assert_double_eq(s, 0.0);
  ck_assert(isfinite(m) && isfinite(s));
}
END_TEST

/* One synthetic interval of tau seconds of an M/M/c service at x attempts
 * per second: completions ~ Poisson(x tau), busy servers = the work they
 * brought (a sum of exponential service times) / tau: the utilisation law
 * holds exactly, with the noise of a real count. */
static void mmc_interval(double x, double mu, double tau, double *busy,
                         double *done) {
  long n = poisson(x * tau);
  double work = 0;
  for (long j = 0; j < n; j++)
    work += exponential(mu);
  *busy = work / tau;
  *done = (double)n / tau;
}

/* The reported standard error is the error: over 400 independent traces
 * of 60 intervals, the estimate falls within 1 and 2 standard errors of
 * the true service time as often as a normal variable does (68 %, 95 %). */
START_TEST(test_estimator_error_covers_truth) {
  reseed(2);
  const double mu = 10.0, tau = 10.0, truth = 1 / mu;
  int within1 = 0, within2 = 0, runs = 400;
  for (int r = 0; r < runs; r++) {
    ms_estimator e;
    ms_estimator_init(&e, 300.0);
    for (int i = 0; i < 60; i++) {
      double x = 5 + 20 * uniform(), busy, done;
      mmc_interval(x, mu, tau, &busy, &done);
      if (busy > 0 && done > 0)
        ms_estimator_add(&e, busy / done, done * tau, tau, NULL);
    }
    double m, se;
    ck_assert(ms_estimator_get(&e, &m, &se));
    ck_assert(se > 0 && se < 0.05 * truth);
    within1 += fabs(m - truth) <= se;
    within2 += fabs(m - truth) <= 2 * se;
  }
  /* binomial noise of 400 runs: sd 2.3 % and 1.1 % */
  ck_assert_msg(within1 >= 0.60 * runs && within1 <= 0.76 * runs,
                "within 1 se: %d of %d", within1, runs);
  ck_assert_msg(within2 >= 0.91 * runs, "within 2 se: %d of %d", within2, runs);
  fprintf(stderr,
          "service time within 1 se in %d, within 2 se in %d of %d traces "
          "of 60 intervals\n",
          within1, within2, runs);
}
END_TEST

/* ---- the residual ------------------------------------------------------ */

/* Against the definition in long double, without log1p. */
static double residual_reference(double q, double p, double n) {
  long double n1 = (long double)n + 1;
  long double qq = ((long double)q * n + 0.5L) / n1;
  long double pp = ((long double)p * n + 0.5L) / n1;
  long double d = qq * logl(qq / pp) + (1 - qq) * logl((1 - qq) / (1 - pp));
  long double r = sqrtl(fmaxl(2 * n1 * d, 0));
  return (double)(qq < pp ? -r : r);
}

START_TEST(test_residual_closed_form) {
  ck_assert_double_eq(ms_failure_residual(0.3, 0.3, 1000), 0.0);
  ck_assert_double_eq(ms_failure_residual(0, 0, 1e6), 0.0);
  static const double q[] = {0, 0.001, 0.01, 0.12, 0.5, 0.97, 1};
  static const double p[] = {0, 1e-9, 0.003, 0.12, 0.6, 1};
  static const double n[] = {1, 10, 2400, 1e7};
  for (size_t i = 0; i < sizeof q / sizeof *q; i++)
    for (size_t j = 0; j < sizeof p / sizeof *p; j++)
      for (size_t k = 0; k < sizeof n / sizeof *n; k++) {
        double r = ms_failure_residual(q[i], p[j], n[k]);
        double want = residual_reference(q[i], p[j], n[k]);
        ck_assert_msg(isfinite(r), "q %g p %g n %g", q[i], p[j], n[k]);
        /* the direct form cancels near q = p, even in long double: there
         * compare an absolute 1e-6 */
        ck_assert_msg(
            fabs(r - want) <= (fabs(want) > 1e-3 ? 1e-9 * fabs(want) : 1e-6),
            "q %g p %g n %g: %.12g, want %.12g", q[i], p[j], n[k], r, want);
        ck_assert((r > 0) == (q[i] * n[k] + 0.5 > p[j] * n[k] + 0.5) || r == 0);
      }
  /* near q = p, against the second-order form (q~ - p~) sqrt((n + 1) /
   * (p~ (1 - p~))), which has no cancellation */
  for (int e = 4; e <= 12; e++) {
    double nn = 1e6, pe = 0.1, qe = pe + pow(10, -e);
    double n1 = nn + 1, qq = (qe * nn + 0.5) / n1, pp = (pe * nn + 0.5) / n1;
    double want = (qq - pp) * sqrt(n1 / (pp * (1 - pp)));
    double r = ms_failure_residual(qe, pe, nn);
    ck_assert_msg(fabs(r - want) <= 1e-3 * fabs(want) + 1e-12,
                  "q - p = 1e-%d: %.10g, want %.10g", e, r, want);
  }
  /* the header's example: ten failures in a thousand where none is
   * predicted; one is noise */
  ck_assert_double_eq_tol(ms_failure_residual(0.01, 0, 1000), 6.63, 0.01);
  ck_assert(ms_failure_residual(0.001, 0, 1000) < 1.5);
  /* outside the domain: no evidence */
  ck_assert_double_eq(ms_failure_residual(NAN, 0.1, 10), 0.0);
  ck_assert_double_eq(ms_failure_residual(0.1, 0.1, 0), 0.0);
  ck_assert_double_eq(ms_failure_residual(1.5, 0.1, 10), 0.0);
}
END_TEST

/* Where the model is right, binomial counts give residuals of mean about
 * 0 and standard deviation about 1, and |r| > 4 almost never. */
START_TEST(test_residual_null_distribution) {
  reseed(3);
  double sum = 0, sum2 = 0;
  int beyond = 0, runs = 4000;
  for (int i = 0; i < runs; i++) {
    double p = i % 2 ? 0.02 : 0.3;
    long n = 500 + (long)(1000 * uniform());
    long k = binomial(n, p);
    double r = ms_failure_residual((double)k / (double)n, p, (double)n);
    sum += r;
    sum2 += r * r;
    beyond += fabs(r) > 4;
  }
  double mean = sum / runs, sd = sqrt(sum2 / runs - mean * mean);
  ck_assert_msg(fabs(mean) < 0.08, "mean %g", mean);
  ck_assert_msg(fabs(sd - 1) < 0.06, "sd %g", sd);
  ck_assert_int_le(beyond, 2);
}
END_TEST

/* ---- the tracker on synthetic traces ----------------------------------- */

/* A service file with one service; the caller frees it. */
static ms_service_file load(const char *text) {
  ms_service_file f;
  char err[512];
  ck_assert_msg(ms_service_file_parse(text, strlen(text), "t.yaml", &f, err,
                                      sizeof err) == 0,
                "%s", err);
  return f;
}

#define SERVICE(service_time, extra)                                           \
  "services:\n"                                                                \
  "  - name: pricing-db\n"                                                     \
  "    model: erlang\n"                                                        \
  "    servers: 30\n"                                                          \
  "    service_time: " service_time "\n"                                       \
  "    timeout: 200ms\n"                                                       \
  "    timeout_covers: wait\n"                                                 \
  "    retries: 1\n" extra "    inputs:\n"                                     \
  "      offered_rate: h/p/offered\n"                                          \
  "      arrival_rate: h/p/attempts\n"                                         \
  "      error_rate: h/p/errors\n"                                             \
  "      busy_servers: h/p/busy\n"                                             \
  "      completion_rate: h/p/done\n"

/* The truth of the synthetic service: 30 servers at 100 ms (the file may
 * say otherwise), timeout 200 ms, base failure `base`. */
typedef struct {
  ms_failure_model model;
  double tau;
} truth;

static truth true_service(double base) {
  truth t;
  ms_failure_model_erlang(&t.model, 30, 10.0, 0.2);
  t.model.base_failure = base;
  t.tau = 10.0;
  return t;
}

/* One interval at x attempts/s (x < c mu: every attempt is served) into
 * in: offered = attempts - failures (one retry of each failure), failures
 * binomial at the true p of the attempts counted. */
static void synthetic_inputs(const truth *t, double x, ms_inputs *in) {
  memset(in, 0, sizeof *in);
  double p, busy, done;
  mmc_interval(x, t->model.service_rate, t->tau, &busy, &done);
  double attempts = done; /* every attempt is served */
  /* failures at the load that came: the interval's own count */
  ck_assert_int_eq(ms_failure_probability(&t->model, attempts, &p, NULL),
                   MS_OK);
  double failed = (double)binomial((long)(attempts * t->tau + 0.5), p) / t->tau;
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    in->has[i] = true;
  in->value[MS_INPUT_ARRIVAL] = attempts;
  in->value[MS_INPUT_ERROR] = failed;
  in->value[MS_INPUT_OFFERED] = attempts - failed;
  in->value[MS_INPUT_BUSY] = busy;
  in->value[MS_INPUT_COMPLETION] = done;
  in->has[MS_INPUT_RETRY] = in->has[MS_INPUT_POOL] = false;
  in->has[MS_INPUT_QUEUE] = in->has[MS_INPUT_LATENCY] = false;
  in->interval = t->tau;
}

/* The landscape of the true service with the file's policy. */
static ms_landscape true_landscape(const truth *t) {
  ms_service_params s = {.model = t->model};
  ms_retry_policy_fixed(&s.policy, 1);
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  return ls;
}

/* Nothing but the model's timeouts fails: each base-failure sample is the
 * observed ratio with the model's part taken out, (0 - q) / (1 - q), a
 * little under 0, and so is their mean.  The value in use is clamped to
 * [0, MS_BASE_FAILURE_MAX], and the log line says that value: "0%", not
 * the -0.000373 % the integration test's learner logged. */
START_TEST(test_learned_base_failure_logged_in_range) {
  reseed(5);
  ms_service_file f = load(SERVICE("100ms", "    calibrate: [base_failure]\n"));
  const ms_service_spec *sp = &f.services[0];
  truth t = true_service(0);
  ms_tracker tr;
  ms_tracker_init(&tr);
  int infos = 0;
  double q_sum = 0;
  for (int i = 0; i < 300; i++) {
    ms_inputs in;
    synthetic_inputs(&t, 200 + 40 * uniform(), &in);
    double q;
    ck_assert_int_eq(
        ms_failure_probability(&t.model, in.value[MS_INPUT_ARRIVAL], &q, NULL),
        MS_OK);
    q_sum += q;
    in.value[MS_INPUT_ERROR] = 0;
    in.value[MS_INPUT_OFFERED] = in.value[MS_INPUT_ARRIVAL];
    ms_step st;
    ms_tracker_step(&tr, sp, &in, &st);
    ck_assert_msg(st.ok, "%s", st.problem);
    if (strstr(st.info, "learned base failure") != NULL) {
      infos++;
      ck_assert_msg(strstr(st.info, "learned base failure 0% ") != NULL, "%s",
                    st.info);
    }
  }
  ck_assert_int_eq(infos, 1);
  ck_assert(q_sum > 0); /* the model's part was there to take out */
  double m;
  ck_assert(ms_estimator_get(&tr.calibration.base_failure, &m, NULL));
  ck_assert_msg(m < 0, "the raw mean %g", m);
  ms_service_file_free(&f);
}
END_TEST

/* Configured at 80 ms, the service runs at 100 ms: the tracker learns it
 * within its standard error, says so once in the log, takes it into use
 * after calibration_intervals samples, and then reports the true
 * service's tipping load; the landscape is rebuilt a handful of times,
 * not every interval. */
START_TEST(test_learns_service_time) {
  reseed(4);
  ms_service_file f = load(SERVICE("80ms", "    calibrate: [service_time]\n"));
  const ms_service_spec *sp = &f.services[0];
  truth t = true_service(0);
  ms_landscape want = true_landscape(&t);
  ms_tracker tr;
  ms_tracker_init(&tr);
  int infos = 0, switched_at = -1, n = 300;
  ms_step st;
  for (int i = 0; i < n; i++) {
    ms_inputs in;
    synthetic_inputs(&t, 150 + 60 * uniform(), &in);
    ms_tracker_step(&tr, sp, &in, &st);
    ck_assert_msg(st.ok, "%s", st.problem);
    if (st.info[0]) {
      infos++;
      switched_at = i;
      ck_assert_msg(strstr(st.info, "learned service time") != NULL &&
                        strstr(st.info, "configured 80 ms") != NULL &&
                        strstr(st.info, "tipping load") != NULL,
                    "%s", st.info);
    }
    for (int k = 0; k < st.n_notes; k++)
      ck_assert_msg(strstr(st.notes[k].message, "does not fit") == NULL,
                    "interval %d: %s", i, st.notes[k].message);
    ck_assert(st.report.has_calibrated);
    ck_assert_double_eq(st.report.calibrated, switched_at >= 0 ? 1 : 0);
  }
  ck_assert_int_eq(infos, 1);
  ck_assert_int_eq(switched_at, MS_DEFAULT_CALIBRATION_INTERVALS - 1);
  const ms_report *r = &st.report;
  ck_assert(r->has_service_time_estimate && r->has_service_time_error);
  ck_assert_msg(
      fabs(r->service_time_estimate - 0.1) <= 3 * r->service_time_error,
      "learned %g ± %g", r->service_time_estimate, r->service_time_error);
  ck_assert(r->service_time_error < 0.002);
  ck_assert_double_eq_tol(r->service_time_ratio,
                          r->service_time_estimate / 0.08, 1e-12);
  /* the model uses the learned value: within the 1 % threshold of truth */
  ck_assert_double_eq_tol(r->analysis.tipping_load, want.tipping_load,
                          0.02 * want.tipping_load);
  ck_assert_double_eq_tol(r->analysis.recovery_load, want.recovery_load,
                          0.02 * want.recovery_load);
  ck_assert_msg(tr.landscape_builds <= 6, "%lu builds", tr.landscape_builds);
  fprintf(stderr,
          "learned service time %.5g ± %.2g s (truth 0.1, file 0.08), in use "
          "from interval %d of %d; %lu landscape builds; tipping load %.5g "
          "(truth %.5g), recovery %.5g (truth %.5g)\n",
          r->service_time_estimate, r->service_time_error, switched_at + 1, n,
          tr.landscape_builds, r->analysis.tipping_load, want.tipping_load,
          r->analysis.recovery_load, want.recovery_load);
  ms_service_file_free(&f);
}
END_TEST

/* The model's residual (the misfit window's z, doc/design.md §1.8) is
 * about 0 where the model is right, and the misfit WARNING never goes
 * out; with the service time 30 % off (70 ms for 100) the observed
 * failures are far above the model's and the WARNING goes out once,
 * after misfit_intervals, naming the service, both failure ratios and
 * the learned service time. */
START_TEST(test_residual_and_misfit) {
  reseed(5);
  truth t = true_service(0);
  t.tau = 60; /* a minute's counts: 16,000 attempts */
  for (int wrong = 0; wrong < 2; wrong++) {
    ms_service_file f =
        load(wrong ? SERVICE("70ms", "") : SERVICE("100ms", ""));
    const ms_service_spec *sp = &f.services[0];
    ms_tracker tr;
    ms_tracker_init(&tr);
    int warnings = 0, first = -1, n = 500;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n; i++) {
      ms_inputs in;
      /* near saturation (26 of 30 servers busy), where the wait tail
       * shows, under the tipping point (x 281): the true p(x) is
       * 0.05-0.4 %, the wrong model's 0 */
      synthetic_inputs(&t, 264 + 8 * uniform(), &in);
      ms_step st;
      ms_tracker_step(&tr, sp, &in, &st);
      ck_assert_msg(st.ok, "%s", st.problem);
      /* the window's residual from its second batch (a minute each) */
      ck_assert(st.report.has_model_failure_ratio);
      ck_assert(st.report.has_model_residual == (i >= 1));
      ck_assert_int_eq(st.report.analysis.storm, 0);
      if (i == 0)
        continue;
      sum += st.report.model_residual;
      sum2 += st.report.model_residual * st.report.model_residual;
      for (int k = 0; k < st.n_notes; k++)
        if (st.notes[k].severity == MS_NOTE_WARNING &&
            strstr(st.notes[k].message, "does not fit") != NULL) {
          warnings++;
          if (first < 0)
            first = i;
          ck_assert_msg(strstr(st.notes[k].message, "pricing-db") &&
                            strstr(st.notes[k].message, "service time seems "
                                                        "to be") &&
                            strstr(st.notes[k].message, "not 70 ms"),
                        "%s", st.notes[k].message);
          ck_assert_int_lt(strlen(st.notes[k].message), 256);
        }
    }
    double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    fprintf(stderr,
            "service time %s: residual mean %.3g sd %.3g over %d intervals; "
            "%d misfit warning(s), first at interval %d\n",
            wrong ? "70 ms for 100" : "right", mean, sd, n, warnings,
            first + 1);
    if (!wrong) {
      ck_assert_msg(fabs(mean) < 0.3 && sd < 1.5, "right: mean %g sd %g", mean,
                    sd);
      ck_assert_int_eq(warnings, 0);
    } else {
      ck_assert_msg(mean > MS_DEFAULT_MISFIT_THRESHOLD, "wrong: mean %g", mean);
      ck_assert_int_eq(warnings, 1);
      /* the residual starts at the second interval (its window's second
       * batch), the service time's estimate likewise */
      ck_assert_int_eq(first, MS_DEFAULT_MISFIT_INTERVALS);
    }
    ms_service_file_free(&f);
  }
}
END_TEST

/* A deploy: the service time moves from 100 ms to 130 ms and stays.  The
 * change watch (doc/design.md §1.8, "Changes") finds it within a few
 * intervals, says so, and learns again from the samples since; the
 * learned value and its error bar cover the truth at every interval,
 * the lag before the change is confirmed included. */
START_TEST(test_service_time_change) {
  reseed(11);
  ms_service_file f = load(SERVICE("80ms", "    calibrate: [service_time]\n"));
  const ms_service_spec *sp = &f.services[0];
  truth t = true_service(0);
  ms_tracker tr;
  ms_tracker_init(&tr);
  ms_step st;
  int changed_at = -1, n = 300, deploy = 120, uncovered = 0;
  double worst = 0;
  for (int i = 0; i < n; i++) {
    if (i == deploy)
      t.model.service_rate = 1 / 0.13;
    ms_inputs in;
    synthetic_inputs(&t, 120 + 40 * uniform(), &in);
    ms_tracker_step(&tr, sp, &in, &st);
    ck_assert_msg(st.ok, "%s", st.problem);
    if (strstr(st.info, "the service time changed") != NULL) {
      ck_assert_msg(changed_at < 0, "a second change at %d: %s", i, st.info);
      changed_at = i;
    }
    const ms_report *r = &st.report;
    if (i >= MS_DEFAULT_CALIBRATION_INTERVALS) {
      double truth_s = 1 / t.model.service_rate;
      double d =
          fabs(r->service_time_estimate - truth_s) / r->service_time_error;
      worst = fmax(worst, d);
      uncovered += d > 3;
      /* the lag before the change is confirmed: always covered */
      if (i >= deploy && changed_at < 0)
        ck_assert_msg(d <= 3,
                      "interval %d, before the change was found: %g "
                      "errors",
                      i + 1, d);
      if (d > 3)
        fprintf(stderr, "  interval %d: %.4g ms ± %.2g, truth %.4g\n", i + 1,
                1e3 * r->service_time_estimate, 1e3 * r->service_time_error,
                1e3 * truth_s);
    }
  }
  fprintf(stderr,
          "deploy 100 -> 130 ms at interval %d: change found at %d; learned "
          "%.4g ms ± %.2g at the end; worst distance %.2f errors, %d "
          "intervals beyond 3\n",
          deploy + 1, changed_at + 1, 1e3 * st.report.service_time_estimate,
          1e3 * st.report.service_time_error, worst, uncovered);
  ck_assert_msg(changed_at >= deploy && changed_at <= deploy + 8, "found at %d",
                changed_at);
  /* the estimate's own noise, and the few samples just after the restart:
   * 3 errors or more in at most 5 % of the intervals, 4 never */
  ck_assert_msg(worst < 4 &&
                    uncovered <= (n - MS_DEFAULT_CALIBRATION_INTERVALS) / 20,
                "worst %g, %d beyond 3", worst, uncovered);
  ck_assert_double_eq_tol(st.report.service_time_estimate, 0.13, 0.003);
  ck_assert_uint_eq(tr.calibration.watch.changes, 1);
  ms_service_file_free(&f);
}
END_TEST

/* A trigger: three intervals whose requests take ten times as long (a
 * stalled dependency), with no storm.  Their samples are outliers, kept
 * out of the estimate, and too few to be a change: the learned value
 * stays within its error bar of the truth, and nothing is re-learned. */
START_TEST(test_trigger_kept_out) {
  reseed(12);
  ms_service_file f = load(SERVICE("80ms", "    calibrate: [service_time]\n"));
  const ms_service_spec *sp = &f.services[0];
  truth t = true_service(0);
  ms_tracker tr;
  ms_tracker_init(&tr);
  ms_step st;
  int n = 120, trigger = 60;
  double before = 0;
  for (int i = 0; i < n; i++) {
    ms_inputs in;
    synthetic_inputs(&t, 120 + 40 * uniform(), &in);
    if (i >= trigger && i < trigger + 3) {
      /* every worker busy, a tenth of the completions: 1 s each */
      in.value[MS_INPUT_BUSY] = 30;
      in.value[MS_INPUT_COMPLETION] = 30;
    }
    ms_tracker_step(&tr, sp, &in, &st);
    ck_assert_msg(st.ok, "%s", st.problem);
    ck_assert_int_eq(st.report.analysis.storm, 0);
    ck_assert_msg(strstr(st.info, "changed") == NULL, "%d: %s", i, st.info);
    if (i == trigger - 1)
      before = st.report.service_time_estimate;
    if (i >= MS_DEFAULT_CALIBRATION_INTERVALS)
      ck_assert_msg(fabs(st.report.service_time_estimate - 0.1) <=
                        3 * st.report.service_time_error,
                    "%d: %g ± %g", i, st.report.service_time_estimate,
                    st.report.service_time_error);
    if (i == trigger + 2) /* nothing of the trigger learned */
      ck_assert_double_eq(st.report.service_time_estimate, before);
  }
  ck_assert_uint_eq(tr.calibration.watch.held_out, 3);
  ck_assert_uint_eq(tr.calibration.watch.changes, 0);
  ms_service_file_free(&f);
}
END_TEST

/* Nothing is learned in a storm, nor in its recovery tail (at least 30 s
 * and 3 intervals after the flag drops): a storm's samples are the
 * trigger's and the backlog's. */
START_TEST(test_no_learning_in_storms) {
  reseed(13);
  ms_service_file f = load(SERVICE("100ms", "    calibrate: [service_time]\n"));
  const ms_service_spec *sp = &f.services[0];
  truth t = true_service(0);
  ms_tracker tr;
  ms_tracker_init(&tr);
  ms_step st;
  unsigned long samples_at_storm = 0;
  int first_storm = -1, last_storm = -1;
  for (int i = 0; i < 40; i++) {
    ms_inputs in;
    synthetic_inputs(&t, 150, &in);
    if (i >= 20 && i < 25) { /* every attempt fails, retried: a storm */
      in.value[MS_INPUT_ARRIVAL] = 2 * 290.0;
      in.value[MS_INPUT_ERROR] = 2 * 290.0;
      in.value[MS_INPUT_OFFERED] = 290.0;
    }
    unsigned long had = tr.calibration.service_time.samples;
    ms_tracker_step(&tr, sp, &in, &st);
    ck_assert_msg(st.ok, "%s", st.problem);
    if (st.report.analysis.storm) {
      if (first_storm < 0) {
        first_storm = i;
        samples_at_storm = tr.calibration.service_time.samples;
      }
      last_storm = i;
    }
    /* the interval after a storm interval, and the tail: no sample */
    if (first_storm >= 0 && i > first_storm && i <= last_storm + 3)
      ck_assert_msg(tr.calibration.service_time.samples == had,
                    "interval %d learned (storm %d..%d)", i, first_storm,
                    last_storm);
  }
  ck_assert_int_ge(first_storm, 20);
  ck_assert_int_ge(last_storm, 24);
  ck_assert_uint_gt(tr.calibration.service_time.samples, samples_at_storm);
  ms_service_file_free(&f);
}
END_TEST

/* The mean and variance of z ~ N(mu, 1) clamped to [-c, c], from the
 * normal distribution's moments. */
static void clamped_moments(double mu, double c, double *mean, double *var) {
  double a = -c - mu, b = c - mu;
  double Pa = 0.5 * erfc(-a / M_SQRT2), Pb = 0.5 * erfc(-b / M_SQRT2);
  double pa = exp(-a * a / 2) / sqrt(2 * M_PI);
  double pb = exp(-b * b / 2) / sqrt(2 * M_PI);
  double mid = mu * (Pb - Pa) + (pa - pb);
  double mid2 = (mu * mu + 1) * (Pb - Pa) + (mu + a) * pa - (mu + b) * pb;
  double m1 = -c * Pa + c * (1 - Pb) + mid;
  double m2 = c * c * (Pa + 1 - Pb) + mid2;
  *mean = m1;
  *var = m2 - m1 * m1;
}

/* Siegmund's approximation of a CUSUM's average run length for
 * increments of this drift and variance and threshold h (D. Siegmund,
 * Sequential Analysis, 1985, ch. X; the 1.166 overshoot correction). */
static double siegmund_arl(double drift, double var, double h) {
  double s = sqrt(var), b = h / s + 1.166, d = drift / s;
  return (exp(-2 * d * b) + 2 * d * b - 1) / (2 * d * d);
}

/* The change watch's CUSUM against Siegmund's approximation of its run
 * lengths, for its clamped increments: the samples between false alarms
 * under no change (two sides), and those until a shift of 2 standard
 * deviations is found. */
START_TEST(test_cusum_run_lengths) {
  reseed(14);
  long alarms = 0, n = 4000000;
  ms_cusum c = {0};
  for (long i = 0; i < n; i++) {
    /* a standard normal by Box-Muller */
    double u = uniform(), v = uniform();
    double z = sqrt(-2 * log1p(-u)) * cos(2 * M_PI * v);
    alarms += ms_cusum_add(&c, z, NULL) != 0;
  }
  double arl0 = (double)n / (double)alarms;
  double delay = 0;
  int runs = 4000;
  for (int r = 0; r < runs; r++) {
    ms_cusum d = {0};
    int k = 0;
    for (;;) {
      double u = uniform(), v = uniform();
      double z = 2 + sqrt(-2 * log1p(-u)) * cos(2 * M_PI * v);
      k++;
      if (ms_cusum_add(&d, z, NULL) > 0)
        break;
    }
    delay += k;
  }
  delay /= runs;
  double m, v;
  clamped_moments(0, MS_CUSUM_CAP, &m, &v);
  double want0 = siegmund_arl(m - MS_CUSUM_K, v, MS_CUSUM_H) / 2;
  clamped_moments(2, MS_CUSUM_CAP, &m, &v);
  double want2 = siegmund_arl(m - MS_CUSUM_K, v, MS_CUSUM_H);
  fprintf(stderr,
          "CUSUM: %ld false alarms in %ld samples (one in %.0f; Siegmund "
          "%.0f); a 2-sd shift found after %.2f samples (Siegmund %.2f)\n",
          alarms, n, arl0, want0, delay, want2);
  /* about 220 alarms: Poisson noise 7 %; the approximation a few % */
  ck_assert_msg(arl0 > 0.75 * want0 && arl0 < 1.33 * want0, "ARL0 %g", arl0);
  ck_assert_msg(delay > 0.85 * want2 && delay < 1.15 * want2, "delay %g",
                delay);
}
END_TEST

/* base_failure learned from the failure ratio at low utilisation: 2 %
 * where the file says 0; the samples near saturation (where the wait
 * tail adds failures) are left out. */
START_TEST(test_learns_base_failure) {
  reseed(6);
  ms_service_file f = load(SERVICE("100ms", "    calibrate: base_failure\n"));
  truth t = true_service(0.02);
  ms_tracker tr;
  ms_tracker_init(&tr);
  ms_step st;
  for (int i = 0; i < 200; i++) {
    ms_inputs in;
    /* half the intervals at 50-200 attempts/s, half near saturation */
    double x = i % 2 ? 50 + 150 * uniform() : 280 + 5 * uniform();
    synthetic_inputs(&t, x, &in);
    ms_tracker_step(&tr, &f.services[0], &in, &st);
    ck_assert(st.ok);
  }
  ck_assert(st.report.has_base_failure_estimate);
  ms_estimator *e = &tr.calibration.base_failure;
  double m, se;
  ck_assert(ms_estimator_get(e, &m, &se));
  ck_assert_msg(fabs(m - 0.02) <= 3 * se && se < 0.002, "%g ± %g", m, se);
  fprintf(stderr,
          "learned base failure %.4g ± %.2g (truth 0.02, file 0) from %lu of "
          "200 intervals\n",
          m, se, e->samples);
  ck_assert_uint_le(e->samples, 110); /* the saturated half is left out */
  ck_assert_double_eq_tol(tr.landscape.params.model.base_failure, m,
                          0.01 * m + 1e-12);
  ms_service_file_free(&f);
}
END_TEST

/* servers learned where there is no pool_size input and busy_servers
 * saturates (a backlog is queued): 12 where the file says 8. */
START_TEST(test_learns_servers) {
  const char *text = "services:\n"
                     "  - name: s\n"
                     "    model: erlang\n"
                     "    servers: 8\n"
                     "    service_time: 100ms\n"
                     "    timeout: 1s\n"
                     "    timeout_covers: wait\n"
                     "    retries: 1\n"
                     "    calibrate: [servers]\n"
                     "    inputs:\n"
                     "      offered_rate: h/p/offered\n"
                     "      busy_servers: h/p/busy\n"
                     "      queue_length: h/p/queue\n";
  ms_service_file f = load(text);
  ms_tracker tr;
  ms_tracker_init(&tr);
  ms_step st;
  for (int i = 0; i < 30; i++) {
    ms_inputs in = {.interval = 10};
    in.has[MS_INPUT_OFFERED] = in.has[MS_INPUT_BUSY] = true;
    in.has[MS_INPUT_QUEUE] = true;
    in.value[MS_INPUT_OFFERED] = 50;
    /* saturated every other interval (busy 12, a queue), idle-ish else */
    in.value[MS_INPUT_BUSY] = i % 2 ? 12 : 5;
    in.value[MS_INPUT_QUEUE] = i % 2 ? 40 : 0;
    ms_tracker_step(&tr, &f.services[0], &in, &st);
    ck_assert_msg(st.ok, "%s", st.problem);
  }
  ck_assert(st.report.has_servers_estimate);
  ck_assert_double_eq(st.report.servers_estimate, 12);
  ck_assert_int_eq(tr.landscape.params.model.servers, 12);
  ms_service_file_free(&f);
}
END_TEST

/* Contradictory, missing or zero calibration inputs: a clear problem and
 * no sample, and the verdict goes on. */
START_TEST(test_bad_calibration_inputs) {
  ms_service_file f = load(SERVICE("100ms", "    calibrate: [service_time]\n"));
  const ms_service_spec *sp = &f.services[0];
  struct {
    double busy, done;
    bool has_busy;
    const char *problem; /* NULL: no problem, and no sample either */
  } cases[] = {
      {31, 200, true, "exceeds the pool of 30 servers"},
      {10, 400, true, "exceeds the 200 attempts/s observed"},
      {NAN, 200, true, "busy_servers is not a number"},
      {10, 200, false, "busy_servers has no value"},
      {-1, 200, true, "busy_servers is negative"},
      {0, 0, true, NULL},
      {INFINITY, 200, true, "busy_servers is infinite"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    ms_tracker tr;
    ms_tracker_init(&tr);
    for (int i = 0; i < 20; i++) {
      ms_inputs in = {.interval = 10};
      in.has[MS_INPUT_OFFERED] = in.has[MS_INPUT_ARRIVAL] = true;
      in.has[MS_INPUT_ERROR] = in.has[MS_INPUT_COMPLETION] = true;
      in.has[MS_INPUT_BUSY] = cases[c].has_busy;
      in.value[MS_INPUT_OFFERED] = 200;
      in.value[MS_INPUT_ARRIVAL] = 200;
      in.value[MS_INPUT_BUSY] = cases[c].busy;
      in.value[MS_INPUT_COMPLETION] = cases[c].done;
      ms_step st;
      ms_tracker_step(&tr, sp, &in, &st);
      ck_assert_msg(st.ok, "case %zu: %s", c, st.problem);
      const char *why = st.inference.calibration_problem;
      if (cases[c].problem)
        ck_assert_msg(strstr(why, cases[c].problem) != NULL, "case %zu: '%s'",
                      c, why);
      else
        ck_assert_str_eq(why, "");
      ck_assert(!st.report.has_service_time_estimate);
      ck_assert(isfinite(st.report.analysis.tipping_load));
      ck_assert_double_eq(st.report.calibrated, 0);
    }
    ck_assert_uint_eq(tr.calibration.service_time.samples, 0);
  }
  ms_service_file_free(&f);
}
END_TEST

/* A latency read in ms without scale: (100 for 0.1 s) keeps 20,000
 * servers busy at 200/s, in a pool of 30: refused by Little's law; and a
 * value that calibrate: asks for but never learns (a pool never
 * saturated) silences the misfit WARNING only for calibration_intervals
 * intervals. */
START_TEST(test_implausible_and_never_learned) {
  const char *text = "services:\n"
                     "  - name: s\n"
                     "    model: erlang\n"
                     "    servers: 30\n"
                     "    service_time: 80ms\n"
                     "    timeout: 1s\n"
                     "    timeout_covers: wait\n"
                     "    retries: 1\n"
                     "    base_failure: 0.001\n"
                     "    calibrate: [service_time, servers]\n"
                     "    inputs:\n"
                     "      offered_rate: h/p/offered\n"
                     "      arrival_rate: h/p/attempts\n"
                     "      error_rate: h/p/errors\n"
                     "      latency: h/p/latency\n"
                     "      busy_servers: h/p/busy\n";
  ms_service_file f = load(text);
  ms_tracker tr;
  ms_tracker_init(&tr);
  int warnings = 0, first = -1;
  for (int i = 0; i < 40; i++) {
    ms_inputs in = {.interval = 10};
    for (int k = 0; k < MS_INPUT_COUNT; k++)
      in.has[k] = true;
    in.has[MS_INPUT_COMPLETION] = in.has[MS_INPUT_POOL] = false;
    in.has[MS_INPUT_RETRY] = in.has[MS_INPUT_QUEUE] = false;
    in.value[MS_INPUT_OFFERED] = in.value[MS_INPUT_ARRIVAL] = 200;
    in.value[MS_INPUT_ERROR] = 4;     /* 2 %: twenty times the file's base */
    in.value[MS_INPUT_LATENCY] = 100; /* ms, read as s */
    in.value[MS_INPUT_BUSY] = 35;     /* above the file's 30, no backlog */
    ms_step st;
    ms_tracker_step(&tr, &f.services[0], &in, &st);
    ck_assert(st.ok);
    ck_assert_msg(strstr(st.inference.calibration_problem,
                         "more than the pool of 35: is it in seconds") != NULL,
                  "%s", st.inference.calibration_problem);
    for (int k = 0; k < st.n_notes; k++)
      if (strstr(st.notes[k].message, "does not fit") != NULL) {
        warnings++;
        first = first < 0 ? i : first;
      }
  }
  ck_assert_uint_eq(tr.calibration.service_time.samples, 0);
  ck_assert_uint_eq(tr.calibration.servers.samples, 0);
  ck_assert_int_eq(tr.landscape.params.model.servers, 30);
  ck_assert_int_eq(warnings, 1);
  /* counted from the first interval after the learning window */
  ck_assert_int_eq(first, MS_DEFAULT_CALIBRATION_INTERVALS +
                              MS_DEFAULT_MISFIT_INTERVALS - 1);
  ms_service_file_free(&f);
}
END_TEST

/* A backlog drained: more completions than attempts is a good sample
 * while a queue is served (queue_length >= 1), a contradiction without. */
START_TEST(test_drain_is_a_sample) {
  const char *text = "services:\n"
                     "  - name: s\n"
                     "    model: erlang\n"
                     "    servers: 10\n"
                     "    service_time: 80ms\n"
                     "    timeout: 1s\n"
                     "    timeout_covers: wait\n"
                     "    retries: 2\n"
                     "    calibrate: [service_time]\n"
                     "    inputs:\n"
                     "      offered_rate: h/p/offered\n"
                     "      arrival_rate: h/p/attempts\n"
                     "      busy_servers: h/p/busy\n"
                     "      completion_rate: h/p/done\n"
                     "      queue_length: h/p/queue\n";
  ms_service_file f = load(text);
  for (int queued = 0; queued < 2; queued++) {
    ms_tracker tr;
    ms_tracker_init(&tr);
    ms_step st;
    ms_inputs in = {.interval = 1};
    for (int i = 0; i < MS_INPUT_COUNT; i++)
      in.has[i] = true;
    in.value[MS_INPUT_OFFERED] = in.value[MS_INPUT_ARRIVAL] = 60;
    in.value[MS_INPUT_BUSY] = 10;        /* every worker busy */
    in.value[MS_INPUT_COMPLETION] = 200; /* serving the backlog */
    in.value[MS_INPUT_QUEUE] = queued ? 300 : 0;
    ms_tracker_step(&tr, &f.services[0], &in, &st);
    ck_assert(st.ok);
    if (queued) {
      ck_assert_str_eq(st.inference.calibration_problem, "");
      ck_assert_uint_eq(tr.calibration.service_time.samples, 1);
      ck_assert_double_eq(tr.calibration.service_time.mean, 0.05);
    } else {
      ck_assert(strstr(st.inference.calibration_problem, "exceeds") != NULL);
      ck_assert_uint_eq(tr.calibration.service_time.samples, 0);
    }
  }
  ms_service_file_free(&f);
}
END_TEST

/* A latency input in milliseconds with scale 0.001, without completions:
 * one sample per interval. */
START_TEST(test_latency_input_scaled) {
  const char *text = "services:\n"
                     "  - name: s\n"
                     "    model: erlang\n"
                     "    servers: 4\n"
                     "    service_time: 100ms\n"
                     "    timeout: 1s\n"
                     "    timeout_covers: wait\n"
                     "    retries: 1\n"
                     "    calibrate: [service_time]\n"
                     "    inputs:\n"
                     "      offered_rate: h/p/offered\n"
                     "      latency: {source: h/statsd/latency-mean, scale: "
                     "0.001}\n";
  ms_service_file f = load(text);
  ms_tracker tr;
  ms_tracker_init(&tr);
  ms_step st;
  /* the estimate: the fading mean of equal weights, a_i = e^(-10 i/300) */
  double num = 0, den = 0;
  for (int i = 0; i < 12; i++) {
    double a = exp(-10.0 * (11 - i) / MS_DEFAULT_CALIBRATION_TIME);
    num += a * (i % 2 ? 0.240 : 0.260);
    den += a;
  }
  for (int i = 0; i < 12; i++) {
    ms_inputs in = {.interval = 10};
    in.has[MS_INPUT_OFFERED] = in.has[MS_INPUT_LATENCY] = true;
    in.value[MS_INPUT_OFFERED] = 10;
    in.value[MS_INPUT_LATENCY] = i % 2 ? 240 : 260; /* ms */
    ms_tracker_step(&tr, &f.services[0], &in, &st);
    ck_assert(st.ok);
  }
  ck_assert_double_eq_tol(st.report.service_time_estimate, num / den, 1e-14);
  ck_assert_double_eq_tol(tr.landscape.params.model.service_rate, den / num,
                          1e-12);
  ms_service_file_free(&f);
}
END_TEST

/* The loader: where calibrate and the new keys go wrong. */
START_TEST(test_loader_errors) {
  struct {
    const char *extra, *inputs, *where, *what;
  } cases[] = {
      {"    calibrate: [service_time, colour]\n", "", "8:31",
       "calibrate takes service_time, base_failure or servers, not 'colour'"},
      {"    calibrate: [servers, servers]\n", "", "8:26",
       "calibrate lists servers twice"},
      {"    calibrate: []\n", "", "8:16", "calibrate lists 1 to 3"},
      {"    calibrate: {a: 1}\n", "", "8:16", "not a mapping"},
      {"    calibrate: [service_time]\n", "", "8:5",
       "calibrate: service_time needs the inputs busy_servers and "
       "completion_rate, or latency"},
      {"    calibrate: [base_failure]\n", "", "8:5",
       "calibrate: base_failure needs the inputs arrival_rate and error_rate"},
      {"    calibrate: [servers]\n", "      pool_size: h/p/pool\n", "8:5",
       "calibrate: servers is for a service without a pool_size input"},
      {"    calibration_time: 0s\n", "", "8:23",
       "calibration_time = 0s is outside (0, 604800]"},
      {"    calibration_intervals: 1\n", "", "8:28",
       "calibration_intervals = 1 is outside [2, 100000]"},
      {"    misfit_threshold: -1\n", "", "8:23", "misfit_threshold = -1"},
      {"", "      busy_servers: {source: h/p/b, scale: 0}\n", "10:44",
       "inputs.busy_servers.scale = 0"},
      {"", "      latency: {source: 5, scale: 2}\n", "10:28",
       "input latency is a number: scale applies"},
      {"    calibrate: [service_time]\n", "      latency: 50ms\n", "8:5",
       "latency, read from collectd"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char text[1024];
    snprintf(text, sizeof text,
             "services:\n"
             "  - name: s\n"
             "    model: erlang\n"
             "    servers: 4\n"
             "    service_time: 100ms\n"
             "    timeout: 1s\n"
             "    retries: 1\n"
             "%s"
             "    inputs:\n"
             "      offered_rate: h/p/offered\n"
             "%s",
             cases[c].extra, cases[c].inputs);
    ms_service_file f;
    char err[512];
    ck_assert_msg(ms_service_file_parse(text, strlen(text), "t.yaml", &f, err,
                                        sizeof err) != 0,
                  "case %zu loaded", c);
    char where[32];
    snprintf(where, sizeof where, "t.yaml:%s: ", cases[c].where);
    ck_assert_msg(strncmp(err, where, strlen(where)) == 0 &&
                      strstr(err, cases[c].what) != NULL,
                  "case %zu: '%s' (want %s%s)", c, err, where, cases[c].what);
  }
}
END_TEST

static Suite *calibration_suite(void) {
  Suite *s = suite_create("calibration");
  TCase *t = tcase_create("estimator");
  tcase_add_test(t, test_estimator_matches_definition);
  tcase_add_test(t, test_estimator_domain);
  tcase_add_test(t, test_estimator_error_covers_truth);
  tcase_add_test(t, test_residual_closed_form);
  tcase_add_test(t, test_residual_null_distribution);
  suite_add_tcase(s, t);
  t = tcase_create("tracker");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, test_learns_service_time);
  tcase_add_test(t, test_learned_base_failure_logged_in_range);
  tcase_add_test(t, test_residual_and_misfit);
  tcase_add_test(t, test_service_time_change);
  tcase_add_test(t, test_trigger_kept_out);
  tcase_add_test(t, test_no_learning_in_storms);
  tcase_add_test(t, test_cusum_run_lengths);
  tcase_add_test(t, test_learns_base_failure);
  tcase_add_test(t, test_learns_servers);
  tcase_add_test(t, test_bad_calibration_inputs);
  tcase_add_test(t, test_latency_input_scaled);
  tcase_add_test(t, test_drain_is_a_sample);
  tcase_add_test(t, test_implausible_and_never_learned);
  tcase_add_test(t, test_loader_errors);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return ms_check_run(srunner_create(calibration_suite())); }
