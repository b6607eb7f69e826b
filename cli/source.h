/* SPDX-License-Identifier: MIT */
/*
 * A command's trace (replay and fit read it the same way): a CSV file or
 * Prometheus responses, named on the command line, read whole and checked
 * against the service before anything is done.  The readers themselves
 * are in service/trace.h.
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

#endif
