/* SPDX-License-Identifier: MIT */
/*
 * Metrics traces: the offline twin of the plugin's inputs (plugin/
 * inputs.c), read by `metastable replay` and `metastable fit`.
 *
 * A trace is CSV (RFC 4180; blank lines and lines starting with '#' are
 * skipped) with a header naming its columns:
 *
 *   time           RFC 3339 ("2024-05-01T12:00:00Z", fractions and
 *                  offsets allowed) or Unix seconds ("1714564800.5")
 *   arrival_rate   attempts/s reaching the service, retries included
 *   offered_rate   first attempts/s
 *   retry_rate     retries/s
 *   error_rate     failed attempts/s
 *   pool_size      live servers
 *   queue_length   requests waiting for a server
 *   busy_servers   servers busy, on average over the interval
 *   completion_rate  attempts/s whose service completed
 *   latency        mean service time of a completed attempt, s
 *
 * (the inputs of service.h, by ms_input_name).  The other columns that
 * `metastable simulate --format csv` writes (MS_TRACE_SIMULATE_COLUMNS)
 * are read past, so that a simulated run replays as it is written; any
 * other column is an error, to catch a misspelt input.
 *
 * `time` is required, the rest are optional and in any order; one row per
 * interval, times strictly increasing.  An empty cell means the input had
 * no value that interval; "NaN" is read as a value that is not a number
 * (what collectd reports after a counter reset).  Anything else that is not
 * a number is an error naming file:line:column.
 *
 * A Prometheus query_range response (JSON, one series) per input can be
 * turned into such a trace: ms_trace_from_prometheus.
 */
#ifndef METASTABLE_SERVICE_TRACE_H
#define METASTABLE_SERVICE_TRACE_H

#include <stdbool.h>
#include <stdio.h>

#include "service.h"

typedef struct {
  FILE *f;
  const char *name;              /* the file name used in messages */
  int line;                      /* the line last read (1-based) */
  int time_col;                  /* column of `time` (0-based) */
  int input_col[MS_INPUT_COUNT]; /* column of each input, or -1 */
  int n_cols;
  char *buf; /* the current line */
  size_t cap;
  long long bytes; /* read so far */
  double last_time;
  bool has_last;
} ms_trace;

/* One row. */
typedef struct {
  int line;           /* where it is in the file */
  char time_text[64]; /* as written (cut at 63 bytes) */
  double unix_time;   /* seconds since 1970-01-01T00:00:00Z */
  ms_inputs in;       /* has[i] false for an empty cell or absent column */
} ms_trace_row;

/* The columns of `metastable simulate --format csv` that are not inputs,
 * in the order it writes them (cli/simulate.c writes its header from
 * this, then the inputs' columns): a trace holds them without error, and
 * they are not used. */
#define MS_TRACE_SIMULATE_COLUMNS                                              \
  "offered,attempts,retries,failures,goodput,given_up,refused,backlog,"        \
  "servers,failure_ratio,amplification,state,storm,tipping_load,"              \
  "recovery_load,healthy_load,collapsed_load"

/* The limits of a trace (doc/metastable.1, LIMITS), each refused with a
 * located error that says how to shrink the input, before the memory it
 * would take is allocated: a line (a row) of at most MS_TRACE_MAX_LINE
 * bytes, its ending not counted; at most MS_TRACE_MAX_ROWS rows; at most
 * MS_TRACE_MAX_BYTES bytes in all (a regular file bigger than that is
 * refused before it is read, a stream such as stdin when it gets there).
 * A NUL byte is refused where it is, so /dev/zero stops at its first
 * byte.  Prometheus responses: at most MS_PROM_MAX_BYTES bytes a file and
 * MS_PROM_MAX_SAMPLES samples over all the files. */
#define MS_TRACE_MAX_LINE 4096
#define MS_TRACE_MAX_ROWS 1000000
#define MS_TRACE_MAX_BYTES (256 << 20)
#define MS_PROM_MAX_BYTES (64 << 20)
#define MS_PROM_MAX_SAMPLES 1000000

/* Whether name is one of MS_TRACE_SIMULATE_COLUMNS. */
bool ms_trace_simulate_column(const char *name);

/* Times of a trace lie in [0, MS_TRACE_TIME_END): from 1970-01-01T00:00:00Z
 * to the end of 9999-12-31 (Unix seconds of 10000-01-01T00:00:00Z). */
#define MS_TRACE_TIME_END 253402300800.0

/*
 * ms_parse_time: RFC 3339 date-time ("2024-05-01T12:00:00Z",
 * "2024-05-01 12:00:00.250+02:00"; 'T' or a blank between date and time;
 * "Z" or an offset required) or Unix seconds (a plain decimal number) into
 * Unix seconds.  Returns 0, or -1 when text is neither.
 */
int ms_parse_time(const char *text, double *unix_seconds);

/*
 * ms_trace_open: start reading a trace from f (name for messages) and read
 * its header.  Returns 0, or -1 with err "name:line:column: what".
 */
int ms_trace_open(ms_trace *t, FILE *f, const char *name, char *err,
                  size_t errlen);

/* ms_trace_next: the next row.  Returns 1 with *row filled, 0 at the end,
 * -1 with err "name:line:column: what" for a bad row (a cell that is not a
 * number, a bad time or one outside [1970, 9999], time not increasing,
 * wrong number of cells) or a read
 * error. */
int ms_trace_next(ms_trace *t, ms_trace_row *row, char *err, size_t errlen);

/* Release what ms_trace_open allocated (not the FILE). */
void ms_trace_close(ms_trace *t);

/*
 * ms_trace_from_prometheus: merge Prometheus query_range responses, one
 * per input, into a CSV trace written to out.
 *   files[i]  path of the JSON response for input i, or NULL
 * Each response must be {"status": "success", "data": {"resultType":
 * "matrix", "result": [one series]}}; wrap a query that returns several
 * series in sum(...).  Rows are the union of the timestamps, in order; an
 * input without a sample at a timestamp gets an empty cell.
 * Returns 0, or -1 with err naming the file and what is wrong.
 */
int ms_trace_from_prometheus(const char *const files[MS_INPUT_COUNT], FILE *out,
                             char *err, size_t errlen);

#endif
