/* SPDX-License-Identifier: MIT */
/*
 * A command's trace (replay and fit read it the same way): a CSV file or
 * Prometheus responses, named on the command line, checked whole against
 * the service before anything is done; then kept (fit), or for replay
 * read a second time row by row when it is a regular file
 * (ms_trace_stream).  The readers themselves are in service/trace.h.
 */
#ifndef METASTABLE_CLI_SOURCE_H
#define METASTABLE_CLI_SOURCE_H

#include <stdbool.h>

#include "trace.h"

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

/* The ids of a trace source's options (MS_CLI_TRACE_OPTIONS, common.h),
 * after the command's own, whose ids stay below MS_OPT_TRACE_PROMETHEUS. */
enum {
  MS_OPT_TRACE_PROMETHEUS = 0x1000, /* --prometheus-json INPUT=FILE */
  MS_OPT_TRACE_WRITE,               /* --write-trace OUT.csv */
};

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

/*
 * A trace handed out row by row, for a command that looks at each row
 * once (replay).  A CSV trace in a regular file (also as stdin) is read
 * twice: first every row is checked and counted, as ms_trace_load does,
 * so that a bad row still stops the command before anything is written;
 * then the rows are read again one at a time, and memory does not grow
 * with the trace.  A pipe and Prometheus responses are read whole
 * (ms_trace_load).
 */
typedef struct {
  ms_trace_rows whole;   /* the rows, when read whole */
  bool streaming;        /* read a second time, row by row */
  FILE *f;               /* the file read a second time */
  bool own_f;            /* f was opened here (not stdin) */
  ms_trace t;            /* its reader */
  size_t n;              /* the rows, counted by the first reading */
  size_t i;              /* the rows handed out */
  ms_trace_row first[2]; /* the first two rows: the first row's interval is
                            the time to the second (ms_trace_inputs) */
  double prev_time;      /* the time of the row handed out last */
  char first_time[64];   /* the first row's time as written, or "" */
} ms_trace_stream;

/*
 * ms_trace_stream_open: open the trace of s for service spec, as
 * ms_trace_load (the same checks, messages and warnings); then
 * st->n is the number of rows, st->whole.name the trace in messages.
 * Release st with ms_trace_stream_close, also on failure.
 * Returns 0, or MS_EXIT_RUNTIME with the message printed.
 */
int ms_trace_stream_open(const ms_trace_source *s, const ms_service_spec *spec,
                         ms_trace_stream *st);

/*
 * ms_trace_stream_next: the next row and its inputs (ms_trace_inputs).
 * Returns 1, 0 after the last row, or -1 with the message printed (the
 * file changed between its two readings, or cannot be read again).
 */
int ms_trace_stream_next(ms_trace_stream *st, ms_trace_row *row, ms_inputs *in);

void ms_trace_stream_close(ms_trace_stream *st);

#endif
