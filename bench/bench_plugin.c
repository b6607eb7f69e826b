/* SPDX-License-Identifier: MIT */
/*
 * bench_plugin: the cost of the collectd plugin's read cycle at fleet scale.
 *
 *   bench/bench_plugin [--quick] [--csv FILE [--append]]
 *                      [--memory-services N] [--memory-cycles N] [--services N]
 *
 * plugin/metastable.c and plugin/inputs.c are compiled into this program
 * unchanged and driven through the callbacks they register, against a
 * stand-in of collectd's value cache and dispatch (tests/collectd_stub.h):
 * so what is timed is the read callback the daemon runs: cache reads
 * (identifiers and globs), the per-interval step of every service, 13-15
 * dispatched values per service, notifications, rate-limited warnings.
 *
 * The fleet (services 1, 100, 1,000, 10,000): erlang services of 8 to
 * 10,000 servers, timeouts 0.5-2 s, 1-3 retries; every service reads its
 * offered rate and attempt rate (one in ten sums the attempts of four hosts
 * with a glob), half an error rate and calibrate their service time and
 * base failure from busy servers and completions (doc/design.md §1.8),
 * one in five its pool size; the offered
 * loads move by up to 2 % per interval (so only the offered load changes
 * and the landscapes stay cached), a few services sit past their tipping
 * point or in a storm, one in 200 misses an input and is only logged.
 *
 * Reported per fleet size: the first cycle (every landscape built), the
 * steady cycle (min / median / max), the cycle after collectd's identifier
 * list changed (globs matched again); the cycle that swaps in a rewritten
 * service file the reload thread built (plugin/reload.c); then the resident
 * memory (VmRSS) and the heap in use after 100 and after 10,000 cycles.
 */
#include "collectd.h" /* first: plugin/reload.h wants collectd's types */

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "collectd_stub.h"
#include "reload.h"  /* reload_settle */
#include "service.h" /* ms_service_file_load */

#ifndef MS_BENCH_CFLAGS
#define MS_BENCH_CFLAGS "?"
#endif

void module_register(void); /* plugin/metastable.c */

static struct {
  bool quick;
  const char *csv_path;
  bool append;
  long memory_services, memory_cycles;
  long only_services; /* --services N: only this fleet size */
  FILE *csv;
} opt;

static void die(const char *what) {
  fprintf(stderr, "bench_plugin: %s\n", what);
  exit(2);
}

/* ---- the fleet ----------------------------------------------------------- */

#define HOSTS 4 /* hosts summed by a glob input */

typedef struct {
  long servers;
  double mu;
  double frac;   /* offered load / capacity */
  bool glob;     /* attempts summed over HOSTS hosts */
  bool errors;   /* reads an error rate */
  bool pool;     /* reads its pool size */
  bool storm;    /* observed attempts three times the offered load */
  bool missing;  /* its error rate never reaches the cache */
  long pool_now; /* the pool size in the cache */
} fleet_service;

typedef struct {
  size_t n;
  fleet_service *s;
  char path[64];
} fleet;

static const long pools[5] = {8, 30, 100, 1000, 10000};
static const char *const timeouts[3] = {"1s", "500ms", "2s"};

static void fleet_make(fleet *f, size_t n) {
  f->n = n;
  f->s = calloc(n, sizeof *f->s);
  if (f->s == NULL)
    die("out of memory");
  snprintf(f->path, sizeof f->path, "/tmp/ms-bench-fleet-XXXXXX");
  int fd = mkstemp(f->path);
  if (fd < 0)
    die("cannot create the service file");
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n");
  for (size_t i = 0; i < n; i++) {
    fleet_service *s = &f->s[i];
    s->servers = pools[i % 5];
    s->mu = 10.0;
    s->frac = 0.1 + 0.6 * fmod(0.6180339887 * (double)i, 1.0);
    if (i % 100 == 3)
      s->frac = 1.2; /* past the tipping point: overloaded */
    s->glob = i % 10 == 1;
    s->errors = i % 2 == 0;
    s->pool = i % 5 == 0;
    s->storm = i % 50 == 7;
    if (s->storm)
      s->frac = 0.6; /* in or past the bistable band, collapsed basin */
    s->missing = i % 200 == 12;
    s->pool_now = s->servers;
    fprintf(y,
            "  - name: svc%05zu\n    model: erlang\n    servers: %ld\n"
            "    service_time: 100ms\n    timeout: %s\n    retries: %d\n",
            i, s->servers, timeouts[i % 3], 1 + (int)(i % 3));
    if (i % 2 == 0)
      fprintf(y, "    headroom_warning: 0.2\n"
                 "    calibrate: [service_time, base_failure]\n");
    fprintf(y, "    inputs:\n");
    fprintf(y, "      offered_rate: \"benchhost/statsd/derive-svc%05zu_req\"\n",
            i);
    if (s->glob)
      fprintf(y,
              "      arrival_rate: \"web*/statsd/derive-svc%05zu_attempts\"\n",
              i);
    else
      fprintf(y,
              "      arrival_rate: "
              "\"benchhost/statsd/derive-svc%05zu_attempts\"\n",
              i);
    if (s->errors)
      fprintf(y, "      error_rate: \"benchhost/statsd/derive-svc%05zu_%s\"\n",
              i, s->missing ? "errs" : "errors");
    if (s->pool)
      fprintf(y, "      pool_size: \"benchhost/pool-svc%05zu/gauge-size\"\n",
              i);
    if (i % 2 == 0)
      fprintf(y,
              "      busy_servers: \"benchhost/pool-svc%05zu/gauge-busy\"\n"
              "      completion_rate: "
              "\"benchhost/pool-svc%05zu/derive-done\"\n",
              i, i);
  }
  fclose(y);
}

/* Put this interval's values in the cache (the daemon's other plugins do
 * this between read cycles; not timed). */
static void fleet_feed(const fleet *f, long cycle) {
  char name[128];
  for (size_t i = 0; i < f->n; i++) {
    const fleet_service *s = &f->s[i];
    double cap = (double)s->pool_now * s->mu;
    double lambda =
        s->frac * cap * (1.0 + 0.02 * sin(0.3 * (double)cycle + (double)i));
    double attempts = (s->storm ? 3.0 : 1.02) * lambda;
    snprintf(name, sizeof name, "benchhost/statsd/derive-svc%05zu_req", i);
    stub_cache_set(name, lambda);
    if (s->glob) {
      for (int h = 1; h <= HOSTS; h++) {
        snprintf(name, sizeof name, "web%d/statsd/derive-svc%05zu_attempts", h,
                 i);
        stub_cache_set(name, attempts / HOSTS);
      }
    } else {
      snprintf(name, sizeof name, "benchhost/statsd/derive-svc%05zu_attempts",
               i);
      stub_cache_set(name, attempts);
    }
    if (s->errors && !s->missing) {
      snprintf(name, sizeof name, "benchhost/statsd/derive-svc%05zu_errors", i);
      stub_cache_set(name, 0.01 * attempts);
    }
    if (s->pool) {
      snprintf(name, sizeof name, "benchhost/pool-svc%05zu/gauge-size", i);
      stub_cache_set(name, (double)s->pool_now);
    }
    if (i % 2 == 0) {
      /* the utilisation law with 5 % of noise (doc/design.md §1.8) */
      double done = fmin(attempts, cap);
      snprintf(name, sizeof name, "benchhost/pool-svc%05zu/gauge-busy", i);
      stub_cache_set(name, done / s->mu * (1 + 0.05 * sin(2.3 * cycle + i)));
      snprintf(name, sizeof name, "benchhost/pool-svc%05zu/derive-done", i);
      stub_cache_set(name, done);
    }
  }
  stub_cache_commit();
}

static void fleet_start(fleet *f) {
  module_register();
  fleet_feed(f, 0);
  if (stub_call_config(f->path) != 0 || stub_call_init() != 0)
    die(stub_last_warning()[0] ? stub_last_warning()
                               : "the plugin did not initialise");
}

static void fleet_stop(fleet *f) {
  stub_free_read_user_data();
  stub_call_shutdown();
  stub_cache_clear();
  unlink(f->path);
  free(f->s);
  f->s = NULL;
}

/* The clock at the last value dispatched, and the services' part of the
 * last cycle: from its start to its last value (what comes after,
 * safe_retries' builds, the stall-tolerance searches and the time-to-storm
 * tables' points, dispatches nothing).  A clock read a value costs about
 * 20 ns, under 1 % of a steady service's cost. */
static double dispatch_last, services_part;

static void on_value(const struct value_list_s *vl) {
  (void)vl;
  dispatch_last = bench_now();
}

/* One read cycle, timed; the next values fed after. */
static double cycle(fleet *f, long k) {
  stub_on_value = on_value;
  double t0 = bench_now();
  dispatch_last = t0;
  if (stub_call_read() != 0)
    die("the read callback returned non-zero");
  double t = bench_now() - t0;
  services_part = dispatch_last - t0;
  stub_on_value = NULL;
  fleet_feed(f, k + 1);
  return t;
}

/* Whether the last read cycle was cut by CycleBudget: it deferred
 * services to the next cycle (their landscapes not built yet in a first
 * cycle), which holds the plugin's complaint about it open until a cycle
 * analyses every service again (plugin/metastable.c, log_deferred). */
static bool cycle_cut(void) {
  const plugin_state *st = stub_read_user_data();
  return st != NULL && st->deferred.interval != 0;
}

/* The first analysis of every service: the first cycle and, when the
 * budget cut it, the cycles after it until one analyses every service
 * (at most 1,000).  Returns their time in all; *cycles how many, *k the
 * next cycle's number, *services their services' parts (services_part). */
static double first_analysis(fleet *f, long *k, int *cycles, double *services) {
  double t = 0.0;
  *cycles = 0;
  *services = 0.0;
  do {
    t += cycle(f, (*k)++);
    *services += services_part;
    ++*cycles;
  } while (cycle_cut() && *cycles < 1000);
  return t;
}

/* The identifier list changes: a fifth host starts reporting for svc00001's
 * glob (or stops again), so every glob is matched again. */
static void names_change(long k) {
  const char *name = "web5/statsd/derive-svc00001_attempts";
  if (k % 2 == 0)
    stub_cache_set(name, 1.0);
  else
    stub_cache_remove(name);
  stub_cache_commit();
}

/* ---- read cycles --------------------------------------------------------- */

static void bench_cycles(size_t n, int runs) {
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
  fleet f;
  fleet_make(&f, n);
  fleet_start(&f);
  stub_counters_reset();
  long k = 0;
  int first_cycles;
  double first_services;
  double first = first_analysis(&f, &k, &first_cycles, &first_services);
  stub_counters c0;
  stub_counters_get(&c0);
  stub_counters_reset();
  /* steady cycles: a cycle the budget cut (a busy machine) is counted
   * apart, not as a steady one */
  double *t = malloc((size_t)runs * sizeof *t);
  double *ts = malloc((size_t)runs * sizeof *ts);
  int steady = 0, cut = 0;
  stub_counters c = {0};
  for (int r = 0; r < runs; r++) {
    stub_counters_reset();
    double tr = cycle(&f, k++);
    if (cycle_cut()) {
      cut++;
      continue;
    }
    stub_counters cr;
    stub_counters_get(&cr);
    c.values += cr.values;
    c.notifications += cr.notifications;
    c.non_finite += cr.non_finite;
    ts[steady] = services_part;
    t[steady++] = tr;
  }
  if (steady == 0)
    die("every steady cycle was cut by the budget");
  bench_stats st, ss;
  bench_stats_of(t, steady, 1, &st);
  bench_stats_of(ts, steady, 1, &ss);
  /* the identifier list changed: globs matched again */
  int nruns = runs < 5 ? runs : 5;
  double *tn = malloc((size_t)nruns * sizeof *tn);
  for (int r = 0; r < nruns; r++) {
    names_change(r);
    tn[r] = cycle(&f, k++);
  }
  bench_stats sn;
  bench_stats_of(tn, nruns, 1, &sn);
  printf("%9zu | %9s %2d | %9s %9s %9s | %9s | %9s | %7.1f %6.2f %5zu\n", n,
         bench_fmt_time(first, b1, 32), first_cycles,
         bench_fmt_time(st.min, b2, 32), bench_fmt_time(st.median, b3, 32),
         bench_fmt_time(st.max, b4, 32),
         bench_fmt_time(st.median / (double)n, b5, 32),
         bench_fmt_time(sn.median, b6, 32), (double)c.values / steady,
         (double)c.notifications / steady, c0.notifications);
  printf("%9s   services' part: first %s, steady median %s (%.1f times)\n", "",
         bench_fmt_time(first_services, b1, 32),
         bench_fmt_time(ss.median, b2, 32), first_services / ss.median);
  if (cut)
    printf("   note: %d of %d steady cycles were cut by the budget: left "
           "out\n",
           cut, runs);
  if (c.non_finite)
    printf("   note: %zu dispatched values were not finite\n", c.non_finite);
  char note[240];
  snprintf(note, sizeof note,
           "values per cycle %.1f, notifications per cycle %.2f, first "
           "analysis %.6e s in %d cycles, %d steady cycles cut by the "
           "budget left out",
           (double)c.values / steady, (double)c.notifications / steady, first,
           first_cycles, cut);
  bench_csv_row(opt.csv, "plugin_read_cycle", 0, 0, (long)n, &st, 0, -1, note);
  bench_csv_row(opt.csv, "plugin_read_cycle_names_changed", 0, 0, (long)n, &sn,
                0, -1, "collectd's identifier list changed: globs rematched");
  snprintf(note, sizeof note,
           "from a cycle's start to its last value dispatched; first "
           "analysis %.6e s",
           first_services);
  bench_csv_row(opt.csv, "plugin_services_part", 0, 0, (long)n, &ss, 0, -1,
                note);
  free(ts);
  free(t);
  free(tn);
  fleet_stop(&f);
}

/* ---- reload -------------------------------------------------------------- */

/* The service file changed without changing a service (a comment
 * appended): the cycle after it asks the reload thread to look, the thread
 * reads it whole and builds the services and their inputs, and the next
 * cycle swaps them in, every service kept with its state
 * (plugin/reload.c), every glob matched again. */
static void fleet_rewrite(const fleet *f, long k) {
  FILE *y = fopen(f->path, "a");
  if (y == NULL || fprintf(y, "# rewritten %ld\n", k) < 0 || fclose(y) != 0)
    die("cannot rewrite the service file");
}

/* Loading the file alone (read and validate): the reload's share that
 * grows with the file. */
static double load_time(const fleet *f) {
  ms_service_file file;
  char err[512];
  double t0 = bench_now();
  if (ms_service_file_load(f->path, &file, err, sizeof err) != 0)
    die(err);
  double t = bench_now() - t0;
  ms_service_file_free(&file);
  return t;
}

static void bench_reload(size_t n, int runs) {
  char b1[32], b2[32], b3[32], b4[32];
  fleet f;
  fleet_make(&f, n);
  fleet_start(&f);
  long k = 0;
  int first_cycles;
  double first_services;
  first_analysis(&f, &k, &first_cycles,
                 &first_services); /* every landscape built; the
                                            file's stat recorded */
  double *steady = malloc((size_t)runs * sizeof *steady);
  double *reload = malloc((size_t)runs * sizeof *reload);
  double *load = malloc((size_t)runs * sizeof *load);
  if (steady == NULL || reload == NULL || load == NULL)
    die("out of memory");
  for (int r = 0; r < runs; r++) {
    steady[r] = cycle(&f, k + 3 * r);
    fleet_rewrite(&f, r);
    cycle(&f, k + 1 + 3 * r);             /* the thread looks after it */
    reload_settle(stub_read_user_data()); /* the new set pending */
    reload[r] = cycle(&f, k + 2 + 3 * r); /* swapped in */
    load[r] = load_time(&f);
  }
  bench_stats ss, sr, sl;
  bench_stats_of(steady, runs, 1, &ss);
  bench_stats_of(reload, runs, 1, &sr);
  bench_stats_of(load, runs, 1, &sl);
  printf("%9zu | %9s | %9s | %9s | %9s\n", n, bench_fmt_time(ss.median, b1, 32),
         bench_fmt_time(sr.median, b2, 32),
         bench_fmt_time(sr.median - ss.median, b3, 32),
         bench_fmt_time(sl.median, b4, 32));
  bench_csv_row(opt.csv, "plugin_reload_cycle", 0, 0, (long)n, &sr, 0, -1,
                "a read cycle that swaps in the reloaded service file, every "
                "service kept");
  bench_csv_row(opt.csv, "plugin_reload_load", 0, 0, (long)n, &sl, 0, -1,
                "ms_service_file_load of the file alone");
  free(steady);
  free(reload);
  free(load);
  fleet_stop(&f);
}

static void bench_reloads(void) {
  printf("\n5. Service file reload (plugin/reload.c): a rewritten file, "
         "every service kept\n\n");
  printf("%9s | %9s | %9s | %9s | %9s\n", "services", "steady", "reload",
         "cost", "load");
  size_t sizes[] = {100, 1000, 10000};
  int n_sizes = opt.quick ? 1 : 3;
  if (opt.only_services > 0) {
    sizes[0] = (size_t)opt.only_services;
    n_sizes = 1;
  }
  for (int i = 0; i < n_sizes; i++)
    bench_reload(sizes[i], opt.quick ? 2 : 11);
  printf("   steady, reload = median cycle without and with the swap of "
         "the new set; cost = their\n   difference (carry the states, "
         "match the globs again); load = ms_service_file_load\n   of the "
         "same file alone (read and validate), done by the reload thread "
         "beside the cycles\n");
}

/* ---- memory -------------------------------------------------------------- */

static size_t heap_in_use(void) { return mallinfo2().uordblks; }

static void bench_memory(void) {
  fleet f;
  fleet_make(&f, (size_t)opt.memory_services);
  fleet_start(&f);
  long rss100 = -1;
  size_t heap100 = 0;
  double t0 = bench_now();
  for (long k = 0; k < opt.memory_cycles; k++) {
    /* every 500 cycles the identifier list changes; every 1,000 one pool in
     * ten is resized (landscapes rebuilt), and resized back after 500 */
    if (k % 500 == 250)
      names_change(k / 500);
    if (k % 1000 == 100 || k % 1000 == 600)
      for (size_t i = 0; i < f.n; i += 10)
        if (f.s[i].pool)
          f.s[i].pool_now =
              k % 1000 == 100 ? f.s[i].servers + 1 : f.s[i].servers;
    cycle(&f, k);
    if (k + 1 == 100) {
      malloc_trim(0);
      rss100 = bench_rss_kib();
      heap100 = heap_in_use();
    }
  }
  double elapsed = bench_now() - t0;
  malloc_trim(0);
  long rss = bench_rss_kib();
  size_t heap = heap_in_use();
  printf("\n6. Memory: %ld services, %ld read cycles (%.1f s), identifier "
         "list changed every 500 cycles, pools resized\n",
         opt.memory_services, opt.memory_cycles, elapsed);
  printf("   VmRSS after 100 cycles %ld KiB, after %ld cycles %ld KiB "
         "(growth %+ld KiB)\n",
         rss100, opt.memory_cycles, rss, rss - rss100);
  printf("   heap in use (mallinfo2) after 100 cycles %zu bytes, after %ld "
         "cycles %zu bytes (growth %+ld bytes)\n",
         heap100, opt.memory_cycles, heap, (long)heap - (long)heap100);
  char note[64];
  snprintf(note, sizeof note, "after 100 cycles");
  bench_csv_value(opt.csv, "plugin_vmrss_kib", opt.memory_services,
                  (double)rss100, note);
  bench_csv_value(opt.csv, "plugin_heap_bytes", opt.memory_services,
                  (double)heap100, note);
  snprintf(note, sizeof note, "after %ld cycles", opt.memory_cycles);
  bench_csv_value(opt.csv, "plugin_vmrss_kib", opt.memory_services, (double)rss,
                  note);
  bench_csv_value(opt.csv, "plugin_heap_bytes", opt.memory_services,
                  (double)heap, note);
  fleet_stop(&f);
}

int main(int argc, char **argv) {
  opt.memory_services = 1000;
  opt.memory_cycles = 10000;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0)
      opt.quick = true;
    else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
      opt.csv_path = argv[++i];
    else if (strcmp(argv[i], "--append") == 0)
      opt.append = true;
    else if (strcmp(argv[i], "--memory-services") == 0 && i + 1 < argc)
      opt.memory_services = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--memory-cycles") == 0 && i + 1 < argc)
      opt.memory_cycles = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--services") == 0 && i + 1 < argc)
      opt.only_services = strtol(argv[++i], NULL, 10);
    else {
      fprintf(stderr,
              "usage: %s [--quick] [--csv FILE [--append]] "
              "[--memory-services N] [--memory-cycles N] [--services N]\n",
              argv[0]);
      return 2;
    }
  }
  if (opt.quick) {
    opt.memory_services = 20;
    opt.memory_cycles = 120;
  }
  if (opt.memory_cycles < 100)
    opt.memory_cycles = 100;
  if (opt.csv_path != NULL) {
    opt.csv = bench_csv_open(opt.csv_path, opt.append);
    if (opt.csv == NULL)
      die("cannot write the CSV file");
  }
  putchar('\n');
  bench_print_header("plugin", opt.quick, MS_BENCH_CFLAGS);
  printf("\n4. Plugin read cycle (plugin/metastable.c against a stand-in of "
         "collectd's cache and dispatch)\n\n");
  printf("%9s | %9s %2s | %9s %9s %9s | %9s | %9s | %7s %6s %5s\n", "services",
         "first", "n", "min", "median", "max", "/service", "names chg",
         "values", "notes", "first");
  size_t sizes[] = {1, 100, 1000, 10000};
  int n_sizes = opt.quick ? 2 : 4;
  if (opt.only_services > 0) {
    sizes[0] = (size_t)opt.only_services;
    n_sizes = 1;
  }
  for (int i = 0; i < n_sizes; i++) {
    int runs = opt.quick ? 2 : sizes[i] >= 10000 ? 21 : 51;
    bench_cycles(sizes[i], runs);
  }
  printf("   first = the first analysis of every service, every landscape "
         "built, in n cycles\n   (more than one when CycleBudget cut the "
         "first); min/median/max = steady cycles,\n   only offered loads "
         "changed, cycles cut by the budget left out;\n   names chg = median "
         "cycle after collectd's identifier list changed (every glob matched "
         "again);\n   values, notes = dispatched per steady cycle; first = "
         "notifications in the first analysis;\n   services' part = from a "
         "cycle's start to its last value dispatched (what\n   follows, "
         "safe_retries' builds, the searches and the tables, dispatches "
         "nothing)\n");
  bench_reloads();
  bench_memory();
  if (opt.csv)
    fclose(opt.csv);
  return 0;
}
