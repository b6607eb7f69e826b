/* SPDX-License-Identifier: MIT */
/*
 * bench_model: what the model costs, beside what a careful user would write
 * instead (bench/naive.c), and how accurate both are.
 *
 *   bench/bench_model [--quick] [--csv FILE [--append]] [--data DIR]
 *                     [--naive-max-servers N] [--no-peers | --peers-only]
 *                     [--python CMD] [--octave CMD]
 *                     [--octave-max-servers N] [--peer-points N]
 *
 * The naive analysis is run up to --naive-max-servers (default 10^5: at
 * 10^6 it takes over half a minute per run); its Erlang evaluation at
 * every c.
 *
 * Measures, for c = 10, 10^2, ..., 10^6 servers (mu = 10/s, T = 1 s):
 *  1. one evaluation of ln P(W > T) at rho = 0.5, 0.9, 0.99, the model's
 *     (ms_ln_wait_tail) and the naive O(c) recursion's, with the worst
 *     error of each against the reference files, by decade of c;
 *  2. one full service analysis (erlang model, r = 3): landscape build,
 *     equilibria and state (ms_landscape_build + ms_analyze), beside the
 *     naive dense-grid analysis, with the speed ratio and the difference of
 *     their tipping and recovery loads; and the two parts separately;
 *  3. the per-interval step (ms_tracker_step) when only the offered load
 *     changed since the last interval;
 *  4. the worst allowed configurations, every interval rebuilt;
 *  5. Erlang B and C beside the peers on every point of the three
 *     reference files: worst error and time per call of ms_erlang, of the
 *     naive recursion, of GNU Octave's queueing package (erlangb, erlangc;
 *     bench/peers.m) and of SciPy's two usual forms (bench/peers.py), each
 *     peer in one process of its own over all its points, its values
 *     judged here against the same references.  A peer that is not
 *     installed is skipped with a line saying so.  Octave's recursion is
 *     interpreted, about 0.5 us per server: it runs on at most
 *     --peer-points points per column above 10^4 (default 100), none above
 *     --octave-max-servers (default 10^6).  --peers-only: this section
 *     alone.
 * --quick runs every code path once or twice (the smoke test of make
 * check; the peers on two points per column); its numbers mean nothing.
 * --instructions runs a fixed number of calls of each case for
 * bench/instructions.sh (callgrind), which turns them into instructions per
 * call: a measure that other work on the machine does not disturb.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "metastable.h"
#include "naive.h"
#include "service.h"

#ifndef MS_BENCH_DATA
#define MS_BENCH_DATA "tests/data"
#endif
#ifndef MS_BENCH_SRC
#define MS_BENCH_SRC "."
#endif
#ifndef MS_BENCH_CFLAGS
#define MS_BENCH_CFLAGS "?"
#endif

#define MU 10.0 /* per server: 100 ms mean service time */
#define TIMEOUT 1.0
#define RETRIES 3
#define N_SERVERS 6
static const long servers[N_SERVERS] = {10, 100, 1000, 10000, 100000, 1000000};
#define N_RHO 3
static const double rhos[N_RHO] = {0.5, 0.9, 0.99};

static volatile double sink; /* keeps results alive */

static struct {
  bool quick, instructions;
  const char *csv_path;
  bool append;
  const char *data_dir;
  long naive_max_servers;
  bool peers, peers_only;
  const char *python, *octave;
  long octave_max_servers;
  int peer_points;
  const bench_plan *plan;
  bench_plan naive_plan;
  FILE *csv;
} opt;

static void die(const char *what) {
  fprintf(stderr, "bench_model: %s\n", what);
  exit(2);
}

/* ---- accuracy against the reference files ------------------------------ */

/* The error measure of tests/testutil.c (value_error): relative error of
 * the value where it is a normal double, else relative error of its log;
 * the references in long double, so that their rounding does not count. */
static double value_error(double value, double ln_value, long double ref_ln) {
  if (ref_ln >= logl(DBL_MIN))
    return (double)fabsl((long double)value / expl(ref_ln) - 1.0L);
  return (double)fabsl(((long double)ln_value - ref_ln) / ref_ln);
}

/* Against a printed value ref where it is a normal double (0: none). */
static double row_error(double value, double ln_value, long double ref,
                        long double ref_ln) {
  if (ref >= DBL_MIN)
    return (double)fabsl((long double)value / ref - 1.0L);
  return value_error(value, ln_value, ref_ln);
}

#define N_DECADES 7 /* c <= 10, ..., c <= 10^7 */

typedef struct {
  int rows[N_DECADES];
  double model[N_DECADES]; /* worst error of ln B and ln C */
  double naive[N_DECADES]; /* over the rows where naive B and C are normal */
  int naive_rows[N_DECADES], naive_underflow[N_DECADES];
} accuracy;

static int decade_of(long c) {
  int d = 0;
  for (long p = 10; c > p && d < N_DECADES - 1; p *= 10)
    d++;
  return d;
}

/* One reference point of the three files, the references in long double;
 * b, cc 0 where the file prints no value (the dense grid). */
typedef struct {
  long c;
  double a;
  long double b, cc, ln_b, ln_c;
} ref_point;

static struct {
  ref_point *p;
  size_t n, cap;
} points;

/* One row: the shared fixture's 6 columns, the dense grid's 4 or the wide
 * set's 8 (servers,offered_erlangs,erlang_b,erlang_c,ln_erlang_b,
 * ln_erlang_c,timeout,ln_wait_tail).  Returns false when malformed. */
static bool parse_row(const char *line, int columns, ref_point *r) {
  double t;
  long double lw;
  r->b = r->cc = 0.0L;
  if (columns == 8)
    return sscanf(line, "%ld,%lf,%Lf,%Lf,%Lf,%Lf,%lf,%Lf", &r->c, &r->a, &r->b,
                  &r->cc, &r->ln_b, &r->ln_c, &t, &lw) == 8;
  if (columns == 6)
    return sscanf(line, "%ld,%lf,%Lf,%Lf,%Lf,%Lf", &r->c, &r->a, &r->b, &r->cc,
                  &r->ln_b, &r->ln_c) == 6;
  return columns == 4 &&
         sscanf(line, "%ld,%lf,%Lf,%Lf", &r->c, &r->a, &r->ln_b, &r->ln_c) == 4;
}

static void load_points(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", opt.data_dir, name);
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "bench_model: cannot open %s (give --data DIR)\n", path);
    exit(2);
  }
  char line[1024];
  int columns = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n')
      continue;
    if (strncmp(line, "servers", 7) == 0) {
      columns = 1;
      for (char *p = line; *p; p++)
        columns += *p == ',';
      continue;
    }
    if (points.n == points.cap) {
      points.cap = points.cap ? 2 * points.cap : 1024;
      points.p = realloc(points.p, points.cap * sizeof *points.p);
      if (points.p == NULL)
        die("out of memory");
    }
    if (!parse_row(line, columns, &points.p[points.n])) {
      fprintf(stderr, "bench_model: %s: malformed row: %s", path, line);
      exit(2);
    }
    points.n++;
  }
  fclose(f);
}

/* The error of one B and C against a point's references (row_error of
 * each, the worse); < 0 when a value is not usable.  A peer that gives its
 * logs (has_log) is judged on them where the reference underflows a
 * double, and they must be finite; one that gives values only must give
 * normal doubles (a subnormal or 0 has lost its digits), and is judged on
 * them.  The caller counts the unusable as underflows. */
static double point_error(const ref_point *r, bool has_log, double b, double c,
                          double ln_b, double ln_c) {
  bool ok = has_log
                ? isfinite(ln_b) && isfinite(ln_c)
                : b >= DBL_MIN && c >= DBL_MIN && isfinite(b) && isfinite(c);
  if (!ok)
    return -1;
  if (!has_log) {
    ln_b = log(b);
    ln_c = log(c);
  }
  return fmax(row_error(b, ln_b, r->b, r->ln_b),
              row_error(c, ln_c, r->cc, r->ln_c));
}

/* The naive recursion's B and C at every point, and the seconds each took
 * (for the table beside the peers). */
static double *naive_b, *naive_c, *naive_time;

static void accuracy_points(accuracy *acc) {
  naive_b = calloc(points.n, sizeof *naive_b);
  naive_c = calloc(points.n, sizeof *naive_c);
  naive_time = calloc(points.n, sizeof *naive_time);
  if (!naive_b || !naive_c || !naive_time)
    die("out of memory");
  for (size_t i = 0; i < points.n; i++) {
    const ref_point *r = &points.p[i];
    int d = decade_of(r->c);
    ms_erlang_values v;
    if (ms_erlang(r->c, r->a, &v, NULL) != MS_OK)
      die("ms_erlang rejected a reference row");
    /* the shared fixture prints its values to 17 digits, its logs to 17
     * too (5e-15 of B at ln B = -40): its values where they are normal */
    double e = point_error(r, true, v.erlang_b, v.erlang_c, v.ln_erlang_b,
                           v.ln_erlang_c);
    acc->rows[d]++;
    acc->model[d] = fmax(acc->model[d], e);
    naive_time[i] = -1;
    if (opt.quick && r->c > 1000)
      continue;
    double t0 = bench_now();
    double nb = naive_erlang_b(r->c, r->a);
    double nc = (double)r->c * nb / ((double)r->c - r->a * (1.0 - nb));
    naive_time[i] = bench_now() - t0;
    naive_b[i] = nb;
    naive_c[i] = nc;
    if (!(nb >= DBL_MIN) || !(nc >= DBL_MIN)) {
      acc->naive_underflow[d]++;
      continue;
    }
    acc->naive_rows[d]++;
    acc->naive[d] = fmax(acc->naive[d], point_error(r, false, nb, nc, 0, 0));
  }
}

/* ---- 1. one evaluation of ln P(W > T) ---------------------------------- */

typedef struct {
  long c;
  double x[16];
} tail_ctx;

static void run_tail(void *p, long i) {
  tail_ctx *t = p;
  double v;
  ms_ln_wait_tail(t->c, MU, t->x[i & 15], TIMEOUT, &v, NULL);
  sink = v;
}

static void run_tail_naive(void *p, long i) {
  tail_ctx *t = p;
  sink = naive_ln_wait_tail(t->c, MU, t->x[i & 15], TIMEOUT);
}

static void bench_wait_tail(const accuracy *acc) {
  char b1[32], b2[32], b3[32], b4[32];
  printf("\n1. One evaluation of ln P(W > T) (mu = %g/s, T = %g s)\n", MU,
         TIMEOUT);
  printf("   accuracy: worst relative error of B and C (of ln B, ln C where "
         "they underflow) over the reference rows with c in (c/10, c]\n\n");
  printf("%9s %5s | %9s %9s %9s | %9s %8s | %5s %9s | %9s %s\n", "c", "rho",
         "min", "median", "max", "naive med", "ratio", "rows", "model err",
         "naive err", "(underflow)");
  for (int i = 0; i < N_SERVERS; i++) {
    long c = servers[i];
    int d = decade_of(c);
    for (int j = 0; j < N_RHO; j++) {
      tail_ctx t = {.c = c};
      double cmu = (double)c * MU;
      for (int k = 0; k < 16; k++)
        t.x[k] = rhos[j] * cmu * (1.0 - 1e-9 * k);
      bench_stats st, nst = {0};
      bench_measure(opt.plan, run_tail, &t, &st);
      bool naive = !opt.quick || c <= 1000;
      if (naive)
        bench_measure(&opt.naive_plan, run_tail_naive, &t, &nst);
      double ratio = naive ? nst.median / st.median : 0;
      char nerr[48] = "";
      if (j == 0 && acc->naive_rows[d] + acc->naive_underflow[d] > 0)
        snprintf(nerr, sizeof nerr, "%9.2e (%d)", acc->naive[d],
                 acc->naive_underflow[d]);
      char ratio_s[16] = "-";
      if (naive)
        snprintf(ratio_s, sizeof ratio_s, "%.3g", ratio);
      if (j == 0)
        printf("%9ld %5.2f | %9s %9s %9s | %9s %8s | %5d %9.2e | %s\n", c,
               rhos[j], bench_fmt_time(st.min, b1, 32),
               bench_fmt_time(st.median, b2, 32),
               bench_fmt_time(st.max, b3, 32),
               naive ? bench_fmt_time(nst.median, b4, 32) : "-", ratio_s,
               acc->rows[d], acc->model[d], nerr);
      else
        printf("%9s %5.2f | %9s %9s %9s | %9s %8s |\n", "", rhos[j],
               bench_fmt_time(st.min, b1, 32),
               bench_fmt_time(st.median, b2, 32),
               bench_fmt_time(st.max, b3, 32),
               naive ? bench_fmt_time(nst.median, b4, 32) : "-", ratio_s);
      bench_csv_row(opt.csv, "wait_tail", c, rhos[j], 0, &st, ratio,
                    j == 0 ? acc->model[d] : -1, "ms_ln_wait_tail");
      if (naive)
        bench_csv_row(opt.csv, "wait_tail_naive", c, rhos[j], 0, &nst, 0,
                      j == 0 && acc->naive_rows[d] ? acc->naive[d] : -1,
                      "O(c) recursion in double");
    }
  }
  printf("%9s %5s | %9s %9s %9s | %9s %8s | %5d %9.2e | ", "> 1e6", "", "", "",
         "", "", "", acc->rows[N_DECADES - 1], acc->model[N_DECADES - 1]);
  if (acc->naive_rows[N_DECADES - 1] + acc->naive_underflow[N_DECADES - 1])
    printf("%9.2e (%d)", acc->naive[N_DECADES - 1],
           acc->naive_underflow[N_DECADES - 1]);
  printf("\n");
  bench_csv_row(opt.csv, "accuracy_above_1e6", 0, 0, 0, NULL, 0,
                acc->model[N_DECADES - 1], "reference rows with c > 1e6");
}

/* ---- 2. one full service analysis -------------------------------------- */

static ms_service_params erlang_service(long c) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, c, MU, TIMEOUT);
  ms_retry_policy_fixed(&s.policy, RETRIES);
  return s;
}

typedef struct {
  ms_service_params s;
  ms_landscape ls;
  double lambda;
  naive_service ns;
} analysis_ctx;

static double jitter(long i) { return 1.0 + 1e-7 * (double)(i & 7); }

static void run_analysis(void *p, long i) {
  analysis_ctx *a = p;
  ms_landscape ls;
  ms_analysis r;
  ms_observation o = {.offered_load = a->lambda * jitter(i)};
  if (ms_landscape_build(&a->s, &ls, NULL) != MS_OK ||
      ms_analyze(&ls, &o, &r, NULL) != MS_OK)
    die("analysis failed");
  sink = r.effective_load;
}

static void run_build(void *p, long i) {
  analysis_ctx *a = p;
  ms_landscape ls;
  (void)i;
  if (ms_landscape_build(&a->s, &ls, NULL) != MS_OK)
    die("landscape failed");
  sink = ls.tipping_load;
}

static void run_analyze_only(void *p, long i) {
  analysis_ctx *a = p;
  ms_analysis r;
  ms_observation o = {.offered_load = a->lambda * jitter(i)};
  if (ms_analyze(&a->ls, &o, &r, NULL) != MS_OK)
    die("analysis failed");
  sink = r.effective_load;
}

static void run_naive(void *p, long i) {
  analysis_ctx *a = p;
  naive_result r;
  if (naive_analyze(&a->ns, a->lambda * jitter(i), &r) != 0)
    die("naive analysis failed");
  sink = r.tipping_load;
}

/* The offered load of the analysis: the middle of the bistable band, where
 * there are three equilibria to find (the most work). */
static double band_middle(const ms_landscape *ls) {
  return ls->has_fold ? 0.5 * (ls->tipping_load + ls->recovery_load)
                      : 0.5 * ls->tipping_load;
}

static void analysis_setup(analysis_ctx *a, long c) {
  memset(a, 0, sizeof *a);
  a->s = erlang_service(c);
  if (ms_landscape_build(&a->s, &a->ls, NULL) != MS_OK)
    die("landscape failed");
  a->lambda = band_middle(&a->ls);
  a->ns = (naive_service){
      .servers = c, .mu = MU, .timeout = TIMEOUT, .retries = RETRIES};
}

static double medians_analysis[N_SERVERS];

static void bench_analysis(void) {
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
  printf("\n2. One full service analysis: landscape (tipping, recovery) + "
         "equilibria + state\n   (erlang, mu = %g/s, T = %g s, r = %d, "
         "offered load in the middle of the bistable band)\n\n",
         MU, TIMEOUT, RETRIES);
  printf("%9s %3s | %9s %9s %9s | %9s %9s | %9s %9s | %9s %9s\n", "c", "eq",
         "min", "median", "max", "build med", "eq+state", "naive med", "ratio",
         "d tip", "d rec");
  for (int i = 0; i < N_SERVERS; i++) {
    long c = servers[i];
    analysis_ctx a;
    analysis_setup(&a, c);
    ms_analysis r;
    ms_observation o = {.offered_load = a.lambda};
    if (ms_analyze(&a.ls, &o, &r, NULL) != MS_OK)
      die("analysis failed");
    bench_stats st, sb, sa, nst = {0};
    bench_measure(opt.plan, run_analysis, &a, &st);
    bench_measure(opt.plan, run_build, &a, &sb);
    bench_measure(opt.plan, run_analyze_only, &a, &sa);
    medians_analysis[i] = st.median;
    bool naive = c <= opt.naive_max_servers;
    double ratio = 0, dtip = -1, drec = -1;
    char note[160];
    snprintf(note, sizeof note, "tipping %.10g recovery %.10g equilibria %d",
             a.ls.tipping_load, a.ls.recovery_load, r.equilibria);
    if (naive) {
      naive_result nr;
      if (naive_analyze(&a.ns, a.lambda, &nr) != 0)
        die("naive analysis failed");
      bench_measure(&opt.naive_plan, run_naive, &a, &nst);
      ratio = nst.median / st.median;
      dtip = fabs(nr.tipping_load - a.ls.tipping_load) / a.ls.tipping_load;
      drec = fabs(nr.recovery_load - a.ls.recovery_load) / a.ls.recovery_load;
      if (nr.equilibria != r.equilibria)
        printf("   note: naive finds %d equilibria, the model %d\n",
               nr.equilibria, r.equilibria);
      char nnote[160];
      snprintf(nnote, sizeof nnote,
               "naive: tipping %.10g recovery %.10g equilibria %d, %ld "
               "O(c) evaluations",
               nr.tipping_load, nr.recovery_load, nr.equilibria,
               nr.evaluations);
      bench_csv_row(opt.csv, "analysis_naive", c, 0, 0, &nst, 0, -1, nnote);
    }
    char ratio_s[16] = "-", dtip_s[16] = "-", drec_s[16] = "-";
    if (naive) {
      snprintf(ratio_s, sizeof ratio_s, "%.3g", ratio);
      snprintf(dtip_s, sizeof dtip_s, "%.1e", dtip);
      snprintf(drec_s, sizeof drec_s, "%.1e", drec);
    }
    printf("%9ld %3d | %9s %9s %9s | %9s %9s | %9s %9s | %9s %9s\n", c,
           r.equilibria, bench_fmt_time(st.min, b1, 32),
           bench_fmt_time(st.median, b2, 32), bench_fmt_time(st.max, b3, 32),
           bench_fmt_time(sb.median, b4, 32), bench_fmt_time(sa.median, b5, 32),
           naive ? bench_fmt_time(nst.median, b6, 32) : "-", ratio_s, dtip_s,
           drec_s);
    bench_csv_row(opt.csv, "analysis", c, 0, 0, &st, ratio,
                  naive ? fmax(dtip, drec) : -1, note);
    bench_csv_row(opt.csv, "landscape_build", c, 0, 0, &sb, 0, -1, "");
    bench_csv_row(opt.csv, "equilibria_and_state", c, 0, 0, &sa, 0, -1, "");
  }
  printf("   ratio = naive median / model median; d tip, d rec = relative "
         "difference of the naive tipping and recovery loads from the "
         "model's\n");
  printf("   median at c = 1e6 / median at c = 10: %.2f\n",
         medians_analysis[N_SERVERS - 1] / medians_analysis[0]);
  bench_csv_row(opt.csv, "analysis_scaling_1e6_over_10", 0, 0, 0, NULL,
                medians_analysis[N_SERVERS - 1] / medians_analysis[0], -1,
                "median at c = 1e6 / median at c = 10");
}

/* ---- 3. the per-interval step, only the offered load changed ----------- */

typedef struct {
  ms_service_spec spec;
  ms_tracker tracker;
  ms_inputs in;
  double lambda, x_healthy;
  int not_ok;
} step_ctx;

static void run_step(void *p, long i) {
  step_ctx *k = p;
  if (k->spec.calibrate) {
    /* calibration inputs as a service gives them (doc/design.md §1.8):
     * busy servers by the utilisation law, with +-5 % of noise, and 1 %
     * of attempts failing */
    double f = 1.0 + 0.01 * sin(0.7 * (double)i);
    double x = k->x_healthy * f;
    double noise = 1.0 + 0.05 * sin(2.3 * (double)i);
    k->in.value[MS_INPUT_COMPLETION] = x;
    k->in.value[MS_INPUT_BUSY] = x / k->spec.params.model.service_rate * noise;
    k->in.value[MS_INPUT_ERROR] = 0.01 * x;
  }
  /* the offered load moves by up to +-1 % from one interval to the next,
   * the observed attempt rate with it; nothing else changes */
  double f = 1.0 + 0.01 * sin(0.7 * (double)i);
  k->in.value[MS_INPUT_OFFERED] = k->lambda * f;
  k->in.value[MS_INPUT_ARRIVAL] = k->x_healthy * f;
  ms_step st;
  ms_tracker_step(&k->tracker, &k->spec, &k->in, &st);
  k->not_ok += !st.ok;
  sink = st.report.analysis.effective_load;
}

static void step_setup(step_ctx *k, long c) {
  static char name[] = "bench"; /* spec.name is writable */
  memset(k, 0, sizeof *k);
  k->spec.name = name;
  k->spec.params = erlang_service(c);
  k->spec.has_servers = true;
  k->spec.inputs[MS_INPUT_OFFERED].kind = MS_SOURCE_IDENTIFIER;
  k->spec.inputs[MS_INPUT_ARRIVAL].kind = MS_SOURCE_IDENTIFIER;
  k->in.has[MS_INPUT_OFFERED] = k->in.has[MS_INPUT_ARRIVAL] = true;
  ms_landscape ls;
  if (ms_landscape_build(&k->spec.params, &ls, NULL) != MS_OK)
    die("landscape failed");
  k->lambda = band_middle(&ls);
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n;
  if (ms_equilibria(&ls, k->lambda, eq, &n, NULL) != MS_OK)
    die("equilibria failed");
  k->x_healthy = eq[0].effective_load;
  ms_tracker_init(&k->tracker);
}

/* The same service, learning its service time and base failure from
 * busy_servers, completion_rate and error_rate (doc/design.md §1.8). */
static void step_setup_calibrating(step_ctx *k, long c) {
  step_setup(k, c);
  k->spec.calibrate = MS_CALIBRATE_SERVICE_TIME | MS_CALIBRATE_BASE_FAILURE;
  k->spec.inputs[MS_INPUT_BUSY].kind = MS_SOURCE_IDENTIFIER;
  k->spec.inputs[MS_INPUT_COMPLETION].kind = MS_SOURCE_IDENTIFIER;
  k->spec.inputs[MS_INPUT_ERROR].kind = MS_SOURCE_IDENTIFIER;
  k->in.has[MS_INPUT_BUSY] = k->in.has[MS_INPUT_COMPLETION] = true;
  k->in.has[MS_INPUT_ERROR] = true;
  k->in.interval = 10;
}

static void bench_step(void) {
  char b1[32], b2[32], b3[32];
  printf("\n3. Per-interval step (ms_tracker_step) when only the offered load "
         "changed (+-1 %%)\n   (same services; the landscape is cached: "
         "tipping and recovery loads depend only on the parameters);\n   "
         "calibrating: the same, learning service time and base failure "
         "(doc/design.md §1.8)\n\n");
  printf("%-12s %9s | %9s %9s %9s | %s\n", "", "c", "min", "median", "max",
         "landscape builds");
  for (int cal = 0; cal < 2; cal++)
    for (int i = 0; i < N_SERVERS; i++) {
      long c = servers[i];
      step_ctx k;
      if (cal)
        step_setup_calibrating(&k, c);
      else
        step_setup(&k, c);
      bench_stats st;
      bench_measure(opt.plan, run_step, &k, &st);
      if (k.not_ok)
        die("a step failed");
      printf("%-12s %9ld | %9s %9s %9s | %lu\n", cal ? "calibrating" : "", c,
             bench_fmt_time(st.min, b1, 32), bench_fmt_time(st.median, b2, 32),
             bench_fmt_time(st.max, b3, 32), k.tracker.landscape_builds);
      char note[64];
      snprintf(note, sizeof note, "landscape builds %lu",
               k.tracker.landscape_builds);
      bench_csv_row(opt.csv,
                    cal ? "step_calibrating" : "step_offered_load_changed", c,
                    0, 0, &st, 0, -1, note);
    }
}

/* ---- 4. the worst allowed configurations, every interval rebuilt ------- */

/* The costliest services the parameter rules (MS_PARAMS) allow: the most
 * retries and tiers, with and without a budget and a token bucket, the
 * largest pool.  Each call is one interval whose pool size changed (so the
 * landscape is rebuilt, as a pool_size input forces) and then analysed at
 * one of 100 offered loads from 2 % to 200 % of the tipping load: the max
 * over the runs is the per-interval bound that doc/performance.md states. */
typedef struct {
  const char *name;
  ms_service_params s;
  double tipping;
} worst_ctx;

static void run_worst(void *p, long i) {
  worst_ctx *w = p;
  ms_landscape ls;
  ms_analysis r;
  ms_observation o = {.offered_load =
                          w->tipping * 0.02 * (double)(1 + (i % 100))};
  if (ms_landscape_build(&w->s, &ls, NULL) != MS_OK ||
      ms_analyze(&ls, &o, &r, NULL) != MS_OK)
    die("worst-case interval failed");
  sink = r.effective_load;
}

static int worst_setup(worst_ctx *w, int n) {
  static const struct {
    const char *name;
    bool erlang, budget, token;
  } cfg[] = {
      {"capacity", false, false, false},
      {"capacity_budget_token", false, true, true},
      {"erlang_1e7", true, false, false},
      {"erlang_1e7_budget_token", true, true, true},
  };
  if (n >= (int)(sizeof cfg / sizeof cfg[0]))
    return 0;
  memset(w, 0, sizeof *w);
  w->name = cfg[n].name;
  if (cfg[n].erlang)
    ms_failure_model_erlang(&w->s.model, MS_MAX_SERVERS, MU, TIMEOUT);
  else
    ms_failure_model_capacity(&w->s.model, 1000.0);
  w->s.model.base_failure = 0.01;
  ms_retry_policy_fixed(&w->s.policy, MS_MAX_RETRIES);
  w->s.policy.tiers = MS_MAX_TIERS;
  w->s.policy.has_budget = cfg[n].budget;
  w->s.policy.retry_budget = 0.2;
  w->s.policy.has_token = cfg[n].token;
  w->s.policy.token_ratio = 0.1;
  ms_landscape ls;
  if (ms_landscape_build(&w->s, &ls, NULL) != MS_OK)
    die("landscape failed");
  w->tipping = ls.tipping_load;
  return 1;
}

/* The slowest of the 100 offered loads: the median of several timed calls
 * at each, the largest of those medians. */
static double slowest_load(worst_ctx *w, int reps) {
  double worst = 0;
  for (long i = 0; i < 100; i++) {
    double t[9];
    for (int k = 0; k < reps; k++) {
      double t0 = bench_now();
      run_worst(w, i);
      t[k] = bench_now() - t0;
    }
    double m = bench_median(t, reps);
    if (m > worst)
      worst = m;
  }
  return worst;
}

static void bench_worst(void) {
  char b1[32], b2[32], b3[32], b4[32];
  printf("\n4. Worst allowed configurations (%d retries x %d tiers, "
         "base failure 1 %%;\n   erlang c = %ld): one interval = landscape "
         "rebuilt + analysis at 2-200 %% of the tipping load\n\n",
         MS_MAX_RETRIES, MS_MAX_TIERS, MS_MAX_SERVERS);
  printf("%-26s | %9s %9s %9s | %s\n", "service", "min", "median", "max",
         "slowest load (median)");
  worst_ctx w;
  for (int n = 0; worst_setup(&w, n); n++) {
    bench_stats st;
    bench_measure(opt.plan, run_worst, &w, &st);
    double slow = slowest_load(&w, opt.quick ? 1 : 9);
    printf("%-26s | %9s %9s %9s | %9s\n", w.name,
           bench_fmt_time(st.min, b1, 32), bench_fmt_time(st.median, b2, 32),
           bench_fmt_time(st.max, b3, 32), bench_fmt_time(slow, b4, 32));
    char name[64], note[64];
    snprintf(name, sizeof name, "worst_interval_%s", w.name);
    snprintf(note, sizeof note, "slowest offered load: %.3g s", slow);
    bench_csv_row(opt.csv, name, 0, 0, 0, &st, 0, -1, note);
  }
}

/* ---- 5. beside the peers ----------------------------------------------- */

/* The columns of issue 18's table: c up to 10, 10^3, 10^4, 10^6, 10^7. */
#define N_COLS 5
static const long col_top[N_COLS] = {10, 1000, 10000, 1000000, 10000000};
static const char *const col_name[N_COLS] = {"10", "10^3", "10^4", "10^6",
                                             "10^7"};

static int col_of(long c) {
  int k = 0;
  while (k < N_COLS - 1 && c > col_top[k])
    k++;
  return k;
}

typedef struct {
  const char *name, *form; /* the table's row; the peer script's form */
  double err[N_COLS];      /* worst error over the usable points, or -1 */
  int run[N_COLS], unusable[N_COLS];
  double time[N_COLS];   /* seconds per call (one B and one C), or -1 */
  double vector[N_COLS]; /* per point of one call on arrays, or -1 */
  const char *skipped;   /* why the row was not run, or NULL */
  bool has_log;          /* gives ln B and ln C of its own (point_error) */
} peer_row;

enum { ROW_MODEL, ROW_NAIVE, ROW_OCTAVE, ROW_SCIPY_PMF, ROW_SCIPY_LOG, N_ROWS };

static peer_row rows[N_ROWS] = {
    {.name = "this project (ms_erlang)", .has_log = true},
    {.name = "the O(c) recursion (bench/naive.c)"},
    {.name = "GNU Octave queueing `erlangb`/`erlangc`",
     .form = "octave_queueing"},
    {.name = "SciPy pmf/cdf", .form = "scipy_pmf_cdf"},
    {.name = "SciPy logpmf - log gammaincc",
     .form = "scipy_logpmf_gammaincc",
     .has_log = true},
};

static int col_points[N_COLS];

static void row_add(peer_row *r, size_t i, double b, double c, double ln_b,
                    double ln_c) {
  int k = col_of(points.p[i].c);
  double e = point_error(&points.p[i], r->has_log, b, c, ln_b, ln_c);
  r->run[k]++;
  if (e < 0)
    r->unusable[k]++;
  else
    r->err[k] = fmax(r->err[k], e);
}

typedef struct {
  size_t *idx;
  size_t n;
} col_ctx;

static void run_col(void *p, long i) {
  col_ctx *t = p;
  ms_erlang_values v;
  (void)i;
  for (size_t j = 0; j < t->n; j++) {
    ms_erlang(points.p[t->idx[j]].c, points.p[t->idx[j]].a, &v, NULL);
    sink = v.erlang_c;
  }
}

/* The project's and the naive recursion's rows (the naive values and times
 * from accuracy_points). */
static void own_rows(void) {
  size_t *idx = malloc(points.n * sizeof *idx);
  if (idx == NULL)
    die("out of memory");
  double naive_sum[N_COLS] = {0};
  for (int k = 0; k < N_COLS; k++) {
    col_ctx t = {.idx = idx, .n = 0};
    for (size_t i = 0; i < points.n; i++)
      if (col_of(points.p[i].c) == k)
        idx[t.n++] = i;
    col_points[k] = (int)t.n;
    for (size_t j = 0; j < t.n; j++) {
      ms_erlang_values v;
      ms_erlang(points.p[idx[j]].c, points.p[idx[j]].a, &v, NULL);
      row_add(&rows[ROW_MODEL], idx[j], v.erlang_b, v.erlang_c, v.ln_erlang_b,
              v.ln_erlang_c);
      size_t i = idx[j];
      if (naive_time[i] < 0)
        continue;
      row_add(&rows[ROW_NAIVE], i, naive_b[i], naive_c[i], log(naive_b[i]),
              log(naive_c[i]));
      naive_sum[k] += naive_time[i];
    }
    bench_stats st;
    bench_measure(opt.plan, run_col, &t, &st);
    rows[ROW_MODEL].time[k] = t.n ? st.median / (double)t.n : -1;
    rows[ROW_NAIVE].time[k] =
        rows[ROW_NAIVE].run[k] ? naive_sum[k] / rows[ROW_NAIVE].run[k] : -1;
  }
  free(idx);
}

/* Write the points a peer evaluates, "column,servers,offered" per line, to
 * path: in each column beyond c = first_capped at most max_points of them,
 * spread evenly over the column's points, and none with c > max_servers. sel[j]
 * is the point of line j.  Returns the number of lines. */
static size_t write_peer_points(const char *path, long max_servers,
                                long first_capped, int max_points,
                                size_t *sel) {
  FILE *f = fopen(path, "w");
  if (f == NULL)
    die("cannot write the peers' points");
  size_t n = 0;
  int seen[N_COLS] = {0}, taken[N_COLS] = {0};
  for (size_t i = 0; i < points.n; i++) {
    int k = col_of(points.p[i].c);
    if (points.p[i].c > max_servers)
      continue;
    /* point number seen[k] of the column is taken when it is the first at
     * or past taken[k] / max_points of the way through */
    long want = (long)taken[k] * col_points[k] / max_points;
    if (col_top[k] > first_capped &&
        (seen[k]++ < want || taken[k] >= max_points))
      continue;
    taken[k]++;
    fprintf(f, "%d,%ld,%.17g\n", k, points.p[i].c, points.p[i].a);
    sel[n++] = i;
  }
  fclose(f);
  return n;
}

/* Read a peer's OUT file (bench/peers.py's docstring): its values into
 * their rows, its times; the version line into note. */
static void read_peer(const char *path, const size_t *sel, size_t n_sel,
                      char *note, size_t note_len) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    die("a peer wrote no output");
  char line[512], form[64];
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') {
      line[strcspn(line, "\n")] = 0;
      snprintf(note, note_len, "%.150s", line + 2);
      continue;
    }
    int k, n;
    double t, a, v[4];
    size_t j;
    peer_row *r = NULL;
    bool timing = strncmp(line, "time,", 5) == 0,
         vector = strncmp(line, "vector,", 7) == 0;
    if (timing || vector) {
      if (sscanf(strchr(line, ',') + 1, "%63[^,],%d,%d,%lf", form, &k, &n,
                 &t) != 4 ||
          k < 0 || k >= N_COLS || n <= 0)
        die("a peer's time line is malformed");
    } else if (sscanf(line, "%63[^,],%zu,%lf,%lf,%lf,%lf,%lf", form, &j, &a,
                      &v[0], &v[1], &v[2], &v[3]) != 7 ||
               j >= n_sel || a != points.p[sel[j]].a)
      die("a peer's value line is malformed or at another point");
    for (int i = 0; i < N_ROWS; i++)
      if (rows[i].form && strcmp(rows[i].form, form) == 0)
        r = &rows[i];
    if (r == NULL)
      die("a peer's form is unknown");
    if (timing)
      r->time[k] = t / n;
    else if (vector)
      r->vector[k] = t / n;
    else
      row_add(r, sel[j], v[0], v[1], v[2], v[3]);
  }
  fclose(f);
}

/* Run one peer script on the points (write_peer_points' selection): the command
 * is cmd, the points' and the output's paths, then tail.  A peer that is not
 * installed says so in one line and is skipped. */
static void run_peer(const char *what, const char *cmd_head,
                     const char *cmd_tail, long max_servers, long first_capped,
                     int max_points, int first, int last) {
  char pts[] = "/tmp/bench_model_points.XXXXXX";
  char out[] = "/tmp/bench_model_peer.XXXXXX";
  int fd1 = mkstemp(pts), fd2 = mkstemp(out);
  if (fd1 < 0 || fd2 < 0)
    die("cannot create temporary files");
  close(fd1);
  close(fd2);
  size_t *sel = malloc(points.n * sizeof *sel);
  if (sel == NULL)
    die("out of memory");
  size_t n = write_peer_points(pts, max_servers, first_capped, max_points, sel);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s %s%s", cmd_head, pts, out, cmd_tail);
  fflush(stdout);
  int rc = system(cmd);
  rc = rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  char note[160] = "";
  if (rc == 0)
    read_peer(out, sel, n, note, sizeof note);
  else if (rc != 3) /* 3: the script said what it lacks */
    printf("   %s: not run (%s exited %d%s): its row is skipped\n", what,
           cmd_head, rc, rc == 127 ? ", not installed" : "");
  for (int i = first; i <= last; i++)
    rows[i].skipped = rc == 0 ? NULL : "not installed";
  if (rc == 0)
    printf("   %s: %s, %zu points\n", what, note, n);
  unlink(pts);
  unlink(out);
  free(sel);
}

static void cell_error(const peer_row *r, int k, char *buf, size_t len) {
  if (r->skipped || r->run[k] == 0) {
    snprintf(buf, len, "—");
    return;
  }
  int m = r->err[k] < 0 ? snprintf(buf, len, "underflow")
                        : snprintf(buf, len, "%.1e", r->err[k]);
  if (r->unusable[k] && r->err[k] >= 0)
    m += snprintf(buf + m, len - (size_t)m, " (%d)", r->unusable[k]);
  if (r->run[k] < col_points[k])
    snprintf(buf + m, len - (size_t)m, " [%d]", r->run[k]);
}

static void print_peer_tables(void) {
  char cell[64];
  printf("\n| c up to |");
  for (int k = 0; k < N_COLS; k++)
    printf(" %s |", col_name[k]);
  printf("\n|---|---|---|---|---|---|\n| points |");
  for (int k = 0; k < N_COLS; k++)
    printf(" %d |", col_points[k]);
  printf("\n");
  for (int i = 0; i < N_ROWS; i++) {
    printf("| %s |", rows[i].name);
    for (int k = 0; k < N_COLS; k++) {
      cell_error(&rows[i], k, cell, sizeof cell);
      printf(" %s |", cell);
    }
    printf("\n");
  }
  printf("\n| time per call (B and C) |");
  for (int k = 0; k < N_COLS; k++)
    printf(" %s |", col_name[k]);
  printf("\n|---|---|---|---|---|---|\n");
  for (int i = 0; i < N_ROWS; i++) {
    printf("| %s |", rows[i].name);
    for (int k = 0; k < N_COLS; k++)
      printf(" %s |", rows[i].skipped || rows[i].time[k] < 0
                          ? "—"
                          : bench_fmt_time(rows[i].time[k], cell, 32));
    printf("\n");
  }
  for (int i = ROW_SCIPY_PMF; i <= ROW_SCIPY_LOG && !rows[i].skipped; i++) {
    printf("| %s, one call on a column's arrays, per point |", rows[i].name);
    for (int k = 0; k < N_COLS; k++)
      printf(" %s |", rows[i].vector[k] < 0
                          ? "—"
                          : bench_fmt_time(rows[i].vector[k], cell, 32));
    printf("\n");
  }
}

static void peer_csv(void) {
  for (int i = 0; i < N_ROWS; i++)
    for (int k = 0; k < N_COLS && !rows[i].skipped; k++) {
      if (rows[i].run[k] == 0)
        continue;
      char name[64], note[160];
      bench_stats st = {.min = rows[i].time[k],
                        .median = rows[i].time[k],
                        .max = rows[i].time[k],
                        .runs = 1,
                        .calls_per_run = rows[i].run[k]};
      snprintf(name, sizeof name, "peers_%s",
               i == ROW_MODEL   ? "ms_erlang"
               : i == ROW_NAIVE ? "naive_recursion"
                                : rows[i].form);
      snprintf(note, sizeof note,
               "c in (%ld, %ld]: %d of %d points, %d underflowed",
               k ? col_top[k - 1] : 0, col_top[k], rows[i].run[k],
               col_points[k], rows[i].unusable[k]);
      bench_csv_row(opt.csv, name, col_top[k], 0, 0, &st, 0, rows[i].err[k],
                    note);
    }
}

static void bench_peers(void) {
  printf("\n5. Erlang B and C beside the peers, on the %zu reference points "
         "of tests/data\n   (erlang_reference.csv, erlang_dense.csv, "
         "erlang_wide.csv; 50- and 60-digit values)\n\n",
         points.n);
  for (int i = 0; i < N_ROWS; i++)
    for (int k = 0; k < N_COLS; k++)
      rows[i].err[k] = rows[i].time[k] = rows[i].vector[k] = -1;
  own_rows();
  char cmd[1024];
  int quick = opt.quick ? 2 : INT_MAX;
  if (!opt.peers)
    rows[ROW_OCTAVE].skipped = rows[ROW_SCIPY_PMF].skipped =
        rows[ROW_SCIPY_LOG].skipped = "not asked";
  else {
    snprintf(cmd, sizeof cmd,
             "%s --no-gui --no-window-system --quiet --norc "
             "%s/bench/peers.m",
             opt.octave, MS_BENCH_SRC);
    run_peer("GNU Octave queueing", cmd, " 2>/dev/null",
             opt.quick ? 10000 : opt.octave_max_servers, opt.quick ? 0 : 10000,
             opt.quick ? 2 : opt.peer_points, ROW_OCTAVE, ROW_OCTAVE);
    snprintf(cmd, sizeof cmd, "%s %s/bench/peers.py", opt.python, MS_BENCH_SRC);
    run_peer("SciPy", cmd, "", MS_MAX_SERVERS, opt.quick ? 0 : MS_MAX_SERVERS,
             quick, ROW_SCIPY_PMF, ROW_SCIPY_LOG);
  }
  print_peer_tables();
  printf("\n   worst relative error of B and C (of ln B, ln C where the "
         "reference underflows a double);\n   (k): points where the peer's "
         "B or C is not a normal double (its log not finite, for those that "
         "give logs), left out of its worst error;\n   [n]: the peer was run "
         "on n of the column's points, "
         "spread evenly; —: not run\n");
  if (opt.peers && !opt.quick)
    printf("   Octave: at most %d points per column above 10^4, none with "
           "c > %ld "
           "(--peer-points, --octave-max-servers)\n",
           opt.peer_points, opt.octave_max_servers);
  peer_csv();
}

/* ---- instruction counts (bench/instructions.sh) ------------------------ */

/* One case for callgrind: a warm-up call (lazy binding, first-call paths),
 * then n calls inside bench_calls, the only function counted. */
static void count_case(const char *name, long c, void (*fn)(void *, long),
                       void *ctx, long n) {
  fn(ctx, 0);
  bench_calls(fn, ctx, n);
  printf("%s,%ld,%ld\n", name, c, n);
  fflush(stdout);
}

static void instructions(void) {
  for (int i = 0; i < N_SERVERS; i++) {
    long c = servers[i];
    tail_ctx t = {.c = c};
    for (int k = 0; k < 16; k++)
      t.x[k] = 0.9 * (double)c * MU * (1.0 - 1e-9 * k);
    count_case("wait_tail_rho_0.9", c, run_tail, &t, 100);
    analysis_ctx a;
    analysis_setup(&a, c);
    count_case("analysis", c, run_analysis, &a, 100);
    count_case("landscape_build", c, run_build, &a, 100);
    count_case("equilibria_and_state", c, run_analyze_only, &a, 100);
    if (c <= 1000)
      count_case("analysis_naive", c, run_naive, &a, 1);
    step_ctx k;
    step_setup(&k, c);
    count_case("step_offered_load_changed", c, run_step, &k, 100);
    step_setup_calibrating(&k, c);
    count_case("step_calibrating", c, run_step, &k, 100);
  }
  worst_ctx w;
  for (int n = 0; worst_setup(&w, n); n++) {
    char name[64];
    snprintf(name, sizeof name, "worst_interval_%s", w.name);
    count_case(name, w.s.model.kind == MS_MODEL_ERLANG ? MS_MAX_SERVERS : 0,
               run_worst, &w, 100);
  }
}

int main(int argc, char **argv) {
  opt.data_dir = MS_BENCH_DATA;
  opt.naive_max_servers = 100000;
  opt.peers = true;
  opt.python = "python3";
  opt.octave = "octave";
  opt.octave_max_servers = 1000000;
  opt.peer_points = 100;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0)
      opt.quick = true;
    else if (strcmp(argv[i], "--instructions") == 0)
      opt.instructions = true;
    else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
      opt.csv_path = argv[++i];
    else if (strcmp(argv[i], "--append") == 0)
      opt.append = true;
    else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
      opt.data_dir = argv[++i];
    else if (strcmp(argv[i], "--naive-max-servers") == 0 && i + 1 < argc)
      opt.naive_max_servers = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--no-peers") == 0)
      opt.peers = false;
    else if (strcmp(argv[i], "--peers-only") == 0)
      opt.peers_only = true;
    else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc)
      opt.python = argv[++i];
    else if (strcmp(argv[i], "--octave") == 0 && i + 1 < argc)
      opt.octave = argv[++i];
    else if (strcmp(argv[i], "--octave-max-servers") == 0 && i + 1 < argc)
      opt.octave_max_servers = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--peer-points") == 0 && i + 1 < argc)
      opt.peer_points = (int)strtol(argv[++i], NULL, 10);
    else {
      fprintf(stderr,
              "usage: %s [--quick] [--csv FILE [--append]] [--data DIR] "
              "[--naive-max-servers N] [--instructions]\n"
              "       [--no-peers | --peers-only] [--python CMD] "
              "[--octave CMD] [--octave-max-servers N] [--peer-points N]\n",
              argv[0]);
      return 2;
    }
  }
  if (opt.instructions) {
    instructions();
    return 0;
  }
  opt.plan = opt.quick ? &bench_plan_quick : &bench_plan_full;
  /* the naive baseline takes seconds at 10^6 servers: three runs */
  opt.naive_plan = opt.quick ? bench_plan_quick
                             : (bench_plan){.run_target = 2e-4,
                                            .budget = 1.0,
                                            .min_runs = 3,
                                            .max_runs = 201};
  if (opt.quick && opt.naive_max_servers > 1000)
    opt.naive_max_servers = 1000;
  if (opt.csv_path != NULL) {
    opt.csv = bench_csv_open(opt.csv_path, opt.append);
    if (opt.csv == NULL)
      die("cannot write the CSV file");
  }
  bench_print_header("model", opt.quick, MS_BENCH_CFLAGS);
  printf(
      "each cell: min / median / max over repeated runs of one call "
      "(a run repeats the call for ~0.2 ms, so few runs meet a preemption)\n");

  accuracy acc;
  memset(&acc, 0, sizeof acc);
  load_points("erlang_reference.csv");
  load_points("erlang_dense.csv");
  load_points("erlang_wide.csv");
  accuracy_points(&acc);
  if (!opt.peers_only) {
    bench_wait_tail(&acc);
    bench_analysis();
    bench_step();
    bench_worst();
  }
  bench_peers();
  if (opt.csv)
    fclose(opt.csv);
  return 0;
}
