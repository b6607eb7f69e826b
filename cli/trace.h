/* SPDX-License-Identifier: MIT */
/*
 * Metrics traces for `metastable replay`.
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
#ifndef METASTABLE_CLI_TRACE_H
#define METASTABLE_CLI_TRACE_H

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

/* ------------------------------------------------------------------ */
/* A command's trace: replay and fit read it the same way               */
/* ------------------------------------------------------------------ */

/* Where the trace comes from: a CSV file, or Prometheus responses. */
typedef struct {
  const char *path;                 /* TRACE.csv, "-" for stdin, or NULL */
  const char *prom[MS_INPUT_COUNT]; /* --prometheus-json files, by input */
  bool any_prom;                    /* some prom[] given */
  const char *write_trace;          /* --write-trace OUT.csv, or NULL */
} ms_trace_source;

/* The rows of a whole trace, read and checked before anything is done
 * with them. */
typedef struct {
  ms_trace_row *rows; /* malloc'd */
  size_t n;
  char name[256]; /* the trace in messages: its path, "(stdin)", or the
                     --write-trace file or "(Prometheus trace)" */
} ms_trace_rows;

/* The options of a trace source, for a command's option table (after its
 * own, whose ids stay below MS_OPT_TRACE_PROMETHEUS). */
enum {
  MS_OPT_TRACE_PROMETHEUS = 0x1000, /* --prometheus-json INPUT=FILE */
  MS_OPT_TRACE_WRITE,               /* --write-trace OUT.csv */
};
#define MS_TRACE_SOURCE_LONG_OPTIONS                                           \
  {"prometheus-json", required_argument, NULL, MS_OPT_TRACE_PROMETHEUS}, {     \
    "write-trace", required_argument, NULL, MS_OPT_TRACE_WRITE                 \
  }

/*
 * ms_trace_source_option: take a trace source option (an MS_OPT_TRACE_*
 * id) with its argument, for a command's take callback (ms_cli_parse).
 * Returns 0, MS_EXIT_USAGE with the message printed, or -1 when id is
 * not a trace source option.
 */
int ms_trace_source_option(ms_trace_source *s, int id, const char *arg);

/*
 * ms_trace_source_args: what follows the options of a command that reads
 * one trace: argv[first], when there, is TRACE.csv; nothing may follow
 * it; the service file must be given (spec_path); then
 * ms_trace_source_check.  Returns 0, or MS_EXIT_USAGE with the message
 * printed.
 */
int ms_trace_source_args(ms_trace_source *s, const char *spec_path, int argc,
                         char **argv, int first);

/*
 * ms_trace_source_prometheus: take `--prometheus-json INPUT=FILE` (arg is
 * INPUT=FILE, INPUT an input's name, each input at most once).  Returns 0,
 * or MS_EXIT_USAGE with the message printed (ms_cli_usage).
 */
int ms_trace_source_prometheus(ms_trace_source *s, const char *arg);

/*
 * ms_trace_source_check: one source of the trace: a file or Prometheus
 * responses, not both, and --write-trace only with the responses.
 * Returns 0, or MS_EXIT_USAGE with the message printed.
 */
int ms_trace_source_check(const ms_trace_source *s);

/*
 * ms_trace_load: read the whole trace for service spec: the columns are
 * checked against the service's inputs (a column for every input read
 * from collectd: else "name:1:1: no column 'x'"; a warning on stderr for
 * each column the service does not use), then every row (ms_trace_next).
 * From Prometheus responses the merged trace is built in memory (and
 * saved to write_trace when given).  Progress on stderr when it is a
 * terminal.
 *   out  the rows (release with ms_trace_rows_free, also on failure)
 * Returns 0, or MS_EXIT_RUNTIME with the message printed (ms_cli_fail):
 * a file that cannot be read, a bad header or row as name:line:column,
 * out of memory.  A trace with a header and no rows is not an error here.
 */
int ms_trace_load(const ms_trace_source *s, const ms_service_spec *spec,
                  ms_trace_rows *out);

void ms_trace_rows_free(ms_trace_rows *r);

/*
 * ms_trace_inputs: the inputs of row i as the plugin would see them: the
 * row's values, and the interval its rates cover, the time since the row
 * before (the first row: the time to the next one; 0, unknown, for a
 * trace of one row), as the plugin's cover its interval.
 */
void ms_trace_inputs(const ms_trace_rows *r, size_t i, ms_inputs *in);

#endif
