/* SPDX-License-Identifier: MIT */
/* Timing and reporting shared by the benchmark programs (bench_util.h). */
#include "bench_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metastable.h"

const bench_plan bench_plan_full = {
    .run_target = 2e-4, .budget = 0.25, .min_runs = 3, .max_runs = 201};
const bench_plan bench_plan_quick = {
    .run_target = 0.0, .budget = 0.0, .min_runs = 1, .max_runs = 2};

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_median(double *v, int n) {
  ms_sort_doubles(v, (size_t)n);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_stats_of(double *v, int n, long calls_per_run, bench_stats *out) {
  out->median = bench_median(v, n);
  out->min = v[0];
  out->max = v[n - 1];
  out->runs = n;
  out->calls_per_run = calls_per_run;
}

#define MAX_RUNS 1001

void bench_measure(const bench_plan *plan, void (*fn)(void *ctx, long i),
                   void *ctx, bench_stats *out) {
  long next = 0;
  /* calibrate: double K until one run lasts run_target (the first call
   * doubles as a warm-up of caches and branch predictors) */
  long k = 1;
  double t;
  for (;;) {
    double t0 = bench_now();
    for (long i = 0; i < k; i++)
      fn(ctx, next++);
    t = bench_now() - t0;
    if (t >= plan->run_target || k >= (1L << 30))
      break;
    k = t > 0 ? (long)fmax(2.0 * k, k * 1.2 * plan->run_target / t) : 2 * k;
  }
  int runs = plan->min_runs;
  if (t > 0 && plan->budget / t > runs)
    runs = (int)fmin(plan->budget / t, plan->max_runs);
  if (runs > MAX_RUNS)
    runs = MAX_RUNS;
  double samples[MAX_RUNS];
  for (int r = 0; r < runs; r++) {
    double t0 = bench_now();
    for (long i = 0; i < k; i++)
      fn(ctx, next++);
    samples[r] = (bench_now() - t0) / (double)k;
  }
  bench_stats_of(samples, runs, k, out);
}

__attribute__((noinline)) void bench_calls(void (*fn)(void *ctx, long i),
                                           void *ctx, long n) {
  for (long i = 0; i < n; i++)
    fn(ctx, i);
}

const char *bench_fmt_time(double s, char *buf, int len) {
  if (!(s >= 0))
    snprintf(buf, (size_t)len, "-");
  else if (s < 1e-6)
    snprintf(buf, (size_t)len, "%.0f ns", s * 1e9);
  else if (s < 1e-3)
    snprintf(buf, (size_t)len, "%.3g us", s * 1e6);
  else if (s < 1.0)
    snprintf(buf, (size_t)len, "%.3g ms", s * 1e3);
  else
    snprintf(buf, (size_t)len, "%.3g s", s);
  return buf;
}

FILE *bench_csv_open(const char *path, bool append) {
  FILE *f = fopen(path, append ? "a" : "w");
  if (f == NULL)
    return NULL;
  if (!append)
    fprintf(f, "benchmark,servers,rho,services,runs,calls_per_run,min_s,"
               "median_s,max_s,ratio,worst_error,value,note\n");
  return f;
}

void bench_csv_row(FILE *f, const char *benchmark, long servers, double rho,
                   long services, const bench_stats *st, double ratio,
                   double worst_error, const char *note) {
  if (f == NULL)
    return;
  fprintf(f, "%s,", benchmark);
  if (servers > 0)
    fprintf(f, "%ld", servers);
  fputc(',', f);
  if (rho > 0)
    fprintf(f, "%g", rho);
  fputc(',', f);
  if (services > 0)
    fprintf(f, "%ld", services);
  if (st != NULL)
    fprintf(f, ",%d,%ld,%.6e,%.6e,%.6e,", st->runs, st->calls_per_run, st->min,
            st->median, st->max);
  else
    fprintf(f, ",,,,,,");
  if (ratio > 0)
    fprintf(f, "%.4g", ratio);
  fputc(',', f);
  if (worst_error >= 0)
    fprintf(f, "%.3e", worst_error);
  fprintf(f, ",,\"%s\"\n", note ? note : "");
}

void bench_csv_value(FILE *f, const char *benchmark, long services,
                     double value, const char *note) {
  if (f == NULL)
    return;
  fprintf(f, "%s,,,", benchmark);
  if (services > 0)
    fprintf(f, "%ld", services);
  fprintf(f, ",,,,,,,,%.17g,\"%s\"\n", value, note ? note : "");
}

long bench_rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) {
      kib = strtol(line + 6, NULL, 10);
      break;
    }
  fclose(f);
  return kib;
}

void bench_machine(char *model, int len, long *cpus) {
  snprintf(model, (size_t)len, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f != NULL) {
    char line[512];
    while (fgets(line, sizeof line, f))
      if (strncmp(line, "model name", 10) == 0) {
        char *v = strchr(line, ':');
        if (v != NULL) {
          v += 1 + (v[1] == ' ');
          v[strcspn(v, "\n")] = '\0';
          snprintf(model, (size_t)len, "%s", v);
        }
        break;
      }
    fclose(f);
  }
  *cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

void bench_print_header(const char *what, bool quick, const char *cflags) {
  char model[256];
  long cpus;
  bench_machine(model, sizeof model, &cpus);
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  printf("collectd-metastable %s benchmark%s, %s\nmachine: %s, %ld CPUs; "
         "CFLAGS %s\n",
         what, quick ? " (quick smoke run: numbers mean nothing)" : "", date,
         model, cpus, cflags);
}
