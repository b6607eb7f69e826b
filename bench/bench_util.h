/* SPDX-License-Identifier: MIT */
/*
 * Timing and reporting shared by the benchmark programs.
 *
 * A measurement is R runs; a run calls the code under test K times in a row
 * and is timed with CLOCK_MONOTONIC, so one sample is (run time) / K.  K is
 * chosen so that a run lasts about run_target seconds (timer resolution and
 * the cost of reading the clock vanish), R so that all runs fit in a time
 * budget, within [min_runs, max_runs].  Reported: min, median and max of
 * the R samples.  The minimum is the best estimate of the cost on an idle
 * machine; the median is what the targets are stated in; the maximum shows
 * the interference of whatever else runs on the machine.
 *
 * Benchmarks report; nothing here fails because a machine is slow.
 */
#ifndef MS_BENCH_UTIL_H
#define MS_BENCH_UTIL_H

#include <stdbool.h>
#include <stdio.h>

/* Seconds from an arbitrary origin, monotonic. */
double bench_now(void);

typedef struct {
  double min, median, max; /* seconds per call */
  int runs;                /* R */
  long calls_per_run;      /* K */
} bench_stats;

typedef struct {
  double run_target; /* seconds per run, e.g. 2e-3 */
  double budget;     /* seconds for all runs of one measurement */
  int min_runs, max_runs;
} bench_plan;

/* The plan of the full benchmark, and the quick smoke-test plan (one or two
 * runs of one call: the code runs, the numbers mean little). */
extern const bench_plan bench_plan_full;
extern const bench_plan bench_plan_quick;

/* Call fn(ctx, i) for i = 0, 1, ... as the plan says and fill *out. */
void bench_measure(const bench_plan *plan, void (*fn)(void *ctx, long i),
                   void *ctx, bench_stats *out);

/* Call fn(ctx, i) for i = 0 .. n-1 and nothing else: the function that
 * `valgrind --tool=callgrind --toggle-collect=bench_calls` counts
 * (bench/instructions.sh). */
void bench_calls(void (*fn)(void *ctx, long i), void *ctx, long n);

/* Median of n samples (sorts them in place). */
double bench_median(double *v, int n);

/* Stats of n samples of seconds (sorts them in place). */
void bench_stats_of(double *v, int n, long calls_per_run, bench_stats *out);

/* A time for the human table: "812 ns", "23.4 us", "1.25 ms", "3.10 s". */
const char *bench_fmt_time(double seconds, char *buf, int len);

/*
 * The machine-readable results: one CSV file, one row per measurement,
 * written by every benchmark program of a `make bench` run.
 * Columns: benchmark,servers,rho,services,runs,calls_per_run,
 *          min_s,median_s,max_s,ratio,worst_error,value,note
 * (empty where not applicable; times in seconds per call; value: a
 * measured quantity that is not a time, its unit in the benchmark's name).
 */
FILE *bench_csv_open(const char *path, bool append);
void bench_csv_row(FILE *f, const char *benchmark, long servers, double rho,
                   long services, const bench_stats *st, double ratio,
                   double worst_error, const char *note);
void bench_csv_value(FILE *f, const char *benchmark, long services,
                     double value, const char *note);

/* Resident set size of this process in KiB (VmRSS of /proc/self/status),
 * or -1 when unknown. */
long bench_rss_kib(void);

/* The CPU model name (lscpu's "Model name", from /proc/cpuinfo) and the
 * number of online CPUs, for the header of the table. */
void bench_machine(char *model, int len, long *cpus);

/* Print a benchmark's header: "collectd-metastable <what> benchmark", the
 * date, the machine and the compiler flags; a quick run says its numbers
 * mean nothing. */
void bench_print_header(const char *what, bool quick, const char *cflags);

#endif
