/* SPDX-License-Identifier: MIT */
/*
 * metastable replay: a post-mortem.  A metrics trace (cli/trace.h) is run
 * row by row through ms_tracker_step, the per-interval step the collectd
 * plugin runs (service/service.h): the same inference of the offered load,
 * the same state machine with its hysteresis, the same notifications.  So
 * the verdicts are the plugin's, interval by interval.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "json.h"
#include "report.h"
#include "trace.h"

static const char help[] =
    "Usage: metastable replay --spec FILE [--service NAME] [MODEL OPTIONS]\n"
    "                         [--format csv|json] TRACE.csv\n"
    "       metastable replay --spec FILE [--service NAME] [--format "
    "csv|json]\n"
    "                         --prometheus-json INPUT=FILE ... "
    "[--write-trace OUT.csv]\n"
    "\n"
    "Run a metrics trace through the plugin's per-interval logic (inference,\n"
    "state machine, notifications) and write, per row, every value the\n"
    "plugin dispatches, with the notifications as they would have fired.\n"
    "\n"
    "TRACE.csv ('-' for stdin) has a header row: 'time' (RFC 3339 such as\n"
    "2024-05-01T12:00:00Z, or Unix seconds), then any of arrival_rate,\n"
    "offered_rate, retry_rate, error_rate, pool_size, queue_length; one row\n"
    "per interval, times increasing (a row's rates cover the time since the\n"
    "row before).  An empty cell is an input without a value that\n"
    "interval: the row has no verdict (reporting 0, the plugin's heartbeat)\n"
    "unless the service file says missing: zero for that input.\n"
    "The service's inputs come from the columns named like them; inputs the\n"
    "service file sets to a number keep that number.\n"
    "\n"
    "  --spec FILE, --service NAME  the service file and service (required)\n"
    "  MODEL OPTIONS           override the file's values: what if?\n"
    "  --format csv|json       csv (default) or a JSON array of rows\n"
    "  --prometheus-json INPUT=FILE\n"
    "                          instead of a CSV trace: a Prometheus\n"
    "                          /api/v1/query_range response (one series) for\n"
    "                          INPUT (arrival_rate, ...); repeat per input\n"
    "  --write-trace OUT.csv   also save the trace built from them\n"
    "\n";

enum {
  OPT_FORMAT = MS_OPT_MODEL_END,
  OPT_PROMETHEUS,
  OPT_WRITE_TRACE,
};

static const struct option options[] = {
    MS_CLI_MODEL_LONG_OPTIONS,
    {"format", required_argument, NULL, OPT_FORMAT},
    {"prometheus-json", required_argument, NULL, OPT_PROMETHEUS},
    {"write-trace", required_argument, NULL, OPT_WRITE_TRACE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Check the trace's columns against the service's inputs: a column for
 * every input read from collectd, and a warning for columns that will not
 * be used. */
static int check_columns(const ms_trace *t, const ms_service_spec *spec) {
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const ms_source *src = &spec->inputs[i];
    const char *name = ms_input_name((ms_input_id)i);
    bool reads =
        src->kind == MS_SOURCE_IDENTIFIER || src->kind == MS_SOURCE_GLOB;
    if (reads && t->input_col[i] < 0)
      return ms_cli_fail("%s:1:1: no column '%s': service '%s' reads that "
                         "input (from %s)",
                         t->name, name, spec->name, src->pattern);
    if (!reads && t->input_col[i] >= 0) {
      if (src->kind == MS_SOURCE_NUMBER)
        ms_cli_warn("column '%s' is not used: service '%s' sets %s to %g in "
                    "the service file",
                    name, spec->name, name, src->number);
      else
        ms_cli_warn("column '%s' is not used: it is not an input of "
                    "service '%s'",
                    name, spec->name);
    }
  }
  return 0;
}

static void write_csv_row(const ms_trace_row *row, const ms_step *st) {
  char b[32];
  ms_cli_csv_field(stdout, row->time_text);
  printf(",%s,", ms_cli_fmt_double(b, row->unix_time));
  const ms_inference *inf = &st->inference;
  static const ms_report none; /* no report: reporting 0 alone */
  ms_report_csv(stdout, st->ok ? &st->report : &none);
  if (st->ok && inf->servers > 0)
    printf(",%ld", inf->servers);
  else
    fputs(",", stdout);
  if (st->ok && inf->has_observed_attempts)
    printf(",%s", ms_cli_fmt_double(b, inf->observed_attempts));
  else
    fputs(",", stdout);
  if (st->ok && inf->has_observed_failure)
    printf(",%s", ms_cli_fmt_double(b, inf->observed_failure));
  else
    fputs(",", stdout);
  fputc(',', stdout);
  if (!st->ok)
    ms_cli_csv_field(stdout, st->problem);
  fputc(',', stdout);
  char notes[2 * (sizeof st->notes[0].message + 16)] = "";
  for (int k = 0; k < st->n_notes; k++) {
    size_t n = strlen(notes);
    snprintf(notes + n, sizeof notes - n, "%s%s: %s", k ? " | " : "",
             ms_note_severity_name(st->notes[k].severity),
             st->notes[k].message);
  }
  ms_cli_csv_field(stdout, notes);
  fputc('\n', stdout);
}

static void write_json_row(ms_json *j, const ms_trace_row *row,
                           const ms_step *st) {
  const ms_inference *inf = &st->inference;
  ms_json_begin_object(j, NULL);
  ms_json_string(j, "time", row->time_text);
  ms_json_number(j, "unix_time", row->unix_time);
  ms_json_bool(j, "ok", st->ok);
  if (st->ok) {
    ms_report_json(j, &st->report, true);
    if (inf->servers > 0)
      ms_json_int(j, "servers", inf->servers);
    if (inf->has_observed_attempts)
      ms_json_number(j, "observed_attempts", inf->observed_attempts);
    if (inf->has_observed_failure)
      ms_json_number(j, "observed_failure", inf->observed_failure);
  } else {
    static const ms_report none; /* the plugin's heartbeat, alone */
    ms_report_json(j, &none, true);
    ms_json_string(j, "problem", st->problem);
    const char *bad = ms_input_name(st->bad);
    if (bad)
      ms_json_string(j, "input", bad);
    else
      ms_json_null(j, "input");
  }
  ms_json_begin_array(j, "notifications");
  for (int k = 0; k < st->n_notes; k++) {
    ms_json_begin_object(j, NULL);
    ms_json_string(j, "severity", ms_note_severity_name(st->notes[k].severity));
    ms_json_string(j, "message", st->notes[k].message);
    ms_json_end_object(j);
  }
  ms_json_end_array(j);
  ms_json_end_object(j);
}

/* Read the whole trace and check it first, so that a bad row stops the
 * replay before anything is written.  Returns 0 with the rows in *rows
 * (malloc'd, also on failure: the caller frees them), or MS_EXIT_RUNTIME
 * naming the file, the line and the problem. */
static int read_trace(const ms_service_spec *spec, FILE *f, const char *name,
                      ms_trace_row **rows, size_t *n_rows) {
  ms_trace t;
  char err[600];
  if (ms_trace_open(&t, f, name, err, sizeof err) != 0) {
    ms_trace_close(&t);
    return ms_cli_fail("%s", err);
  }
  int rc = check_columns(&t, spec);
  if (rc) {
    ms_trace_close(&t);
    return rc;
  }
  size_t cap = 0;
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "reading the trace", 0);
  int r;
  for (;;) {
    if (*n_rows == cap) {
      size_t nc = cap ? 2 * cap : 1024;
      ms_trace_row *nr = realloc(*rows, nc * sizeof *nr);
      if (nr == NULL) {
        r = -1;
        snprintf(err, sizeof err, "out of memory after %zu rows", *n_rows);
        break;
      }
      *rows = nr;
      cap = nc;
    }
    r = ms_trace_next(&t, &(*rows)[*n_rows], err, sizeof err);
    if (r != 1)
      break;
    (*n_rows)++;
    ms_cli_progress_update(&prog, *n_rows);
  }
  ms_cli_progress_end(&prog);
  ms_trace_close(&t);
  if (r < 0)
    return ms_cli_fail("%s", err);
  return 0;
}

/* Step the plugin's tracker through the rows and write its verdict on
 * each, as CSV or JSON; on a terminal, a tally of the verdicts and the
 * notifications on stderr.  Returns through ms_cli_finish_output, or
 * MS_EXIT_RUNTIME when the model gives a value that is not a number (the
 * rows written before it are kept, as the plugin would have dispatched
 * them). */
static int write_verdicts(const ms_service_spec *spec, const char *name,
                          ms_format format, const ms_trace_row *rows,
                          size_t n_rows) {
  ms_tracker tracker;
  ms_tracker_init(&tracker);
  ms_json j;
  if (format == MS_FORMAT_JSON) {
    ms_json_init(&j, stdout, 1);
    ms_json_begin_array(&j, NULL);
  } else {
    fputs("time,unix_time,", stdout);
    ms_report_csv_header(stdout);
    puts(",servers,observed_attempts,observed_failure,problem,notifications");
  }
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "replay", n_rows);
  size_t no_verdict = 0, notes[5] = {0};
  ms_step st;
  for (size_t i = 0; i < n_rows; i++) {
    /* the rates of a row cover the time since the row before (the first
     * row: the time to the next one), as the plugin's cover its interval */
    ms_inputs in = rows[i].in;
    if (i > 0)
      in.interval = rows[i].unix_time - rows[i - 1].unix_time;
    else if (n_rows > 1)
      in.interval = rows[1].unix_time - rows[0].unix_time;
    ms_tracker_step(&tracker, spec, &in, &st);
    char msg[256];
    if (st.ok && ms_report_finite(&st.report, msg, sizeof msg) != 0) {
      ms_cli_progress_end(&prog);
      if (format == MS_FORMAT_JSON)
        fputc('\n', stdout);
      fflush(stdout);
      return ms_cli_fail("%s:%d: model: %s", name, rows[i].line, msg);
    }
    if (format == MS_FORMAT_JSON)
      write_json_row(&j, &rows[i], &st);
    else
      write_csv_row(&rows[i], &st);
    no_verdict += !st.ok;
    for (int k = 0; k < st.n_notes; k++)
      notes[st.notes[k].severity]++;
    ms_cli_progress_update(&prog, i);
  }
  ms_cli_progress_end(&prog);
  if (format == MS_FORMAT_JSON) {
    ms_json_end_array(&j);
    ms_json_finish(&j);
  }
  if (n_rows == 0)
    ms_cli_warn("%s has a header but no rows", name);
  if (isatty(STDERR_FILENO))
    fprintf(stderr,
            "replay: %zu rows (%zu without a verdict); notifications: %zu "
            "FAILURE, %zu OKAY, %zu WARNING; landscape built %lu time%s\n",
            n_rows, no_verdict, notes[MS_NOTE_FAILURE], notes[MS_NOTE_OKAY],
            notes[MS_NOTE_WARNING], tracker.landscape_builds,
            tracker.landscape_builds == 1 ? "" : "s");
  return ms_cli_finish_output(MS_EXIT_OK);
}

/* The trace in f, called name in messages, through the service. */
static int replay(const ms_service_spec *spec, FILE *f, const char *name,
                  ms_format format) {
  ms_trace_row *rows = NULL;
  size_t n_rows = 0;
  int rc = read_trace(spec, f, name, &rows, &n_rows);
  if (rc == 0)
    rc = write_verdicts(spec, name, format, rows, n_rows);
  free(rows);
  return rc;
}

/* ---- the command ----------------------------------------------------- */

/* What the command line asks for. */
typedef struct {
  ms_format format;
  const char *prom[MS_INPUT_COUNT]; /* --prometheus-json files, by input */
  bool any_prom;
  const char *write_trace; /* --write-trace OUT.csv, or NULL */
  const char *trace;       /* TRACE.csv, "-" for stdin, or NULL */
  bool help;               /* --help: print it and do nothing else */
} replay_args;

/* --prometheus-json INPUT=FILE: the file that holds one input's series,
 * each input at most once.  Returns 0 or MS_EXIT_USAGE. */
static int take_prometheus(replay_args *a, const char *arg) {
  const char *eq = strchr(arg, '=');
  int id = -1;
  for (int i = 0; eq && i < MS_INPUT_COUNT; i++) {
    const char *n = ms_input_name((ms_input_id)i);
    if (strlen(n) == (size_t)(eq - arg) &&
        strncmp(n, arg, (size_t)(eq - arg)) == 0)
      id = i;
  }
  if (id < 0 || eq[1] == '\0')
    return ms_cli_usage("--prometheus-json: '%s' must be INPUT=FILE "
                        "with INPUT one of arrival_rate, offered_rate, "
                        "retry_rate, error_rate, pool_size, queue_length",
                        arg);
  if (a->prom[id])
    return ms_cli_usage("--prometheus-json: %s given twice",
                        ms_input_name((ms_input_id)id));
  a->prom[id] = eq + 1;
  a->any_prom = true;
  return 0;
}

/* One option of the command (ms_cli_take). */
static int take_option(void *args, int c, const char *arg) {
  static const ms_format formats[] = {MS_FORMAT_CSV, MS_FORMAT_JSON};
  replay_args *a = args;
  int r = 0;
  switch (c) {
  case OPT_FORMAT:
    r = ms_cli_format(arg, formats, sizeof formats / sizeof formats[0],
                      &a->format);
    break;
  case OPT_PROMETHEUS:
    r = take_prometheus(a, arg);
    break;
  case OPT_WRITE_TRACE:
    a->write_trace = arg;
    break;
  default:
    return -1;
  }
  return r;
}

/* Take the options in the order given, stopping at the first bad one (or
 * at --help), so that the message names the option the user got wrong
 * first; then the one trace.  Returns 0 or the exit code of the message
 * printed. */
static int parse_options(replay_args *a, ms_cli_model *m, int argc,
                         char **argv) {
  int first;
  int r =
      ms_cli_parse(argc, argv, options, m, take_option, a, &a->help, &first);
  if (r != 0 || a->help)
    return r;
  if (first < argc)
    a->trace = argv[first++];
  if (first < argc)
    return ms_cli_usage("unexpected argument '%s' (one trace at a time)",
                        argv[first]);
  return 0;
}

/* The service file, and one source of the trace: a file or Prometheus
 * responses.  Returns 0 or MS_EXIT_USAGE. */
static int check_args(const replay_args *a, const ms_cli_model *m) {
  if (m->spec_path == NULL)
    return ms_cli_usage("give the service file with --spec FILE (and "
                        "--service NAME when it has several)");
  if (a->trace && a->any_prom)
    return ms_cli_usage("give a trace file or --prometheus-json, not both");
  if (!a->trace && !a->any_prom)
    return ms_cli_usage("give the trace: TRACE.csv (or '-' for stdin), or "
                        "--prometheus-json INPUT=FILE");
  if (a->write_trace && !a->any_prom)
    return ms_cli_usage("--write-trace saves the trace built from "
                        "--prometheus-json: give those too");
  return 0;
}

/* The service as the plugin would run it, with the command line's
 * overrides: --servers wins over a pool size read from collectd. */
static void plugin_service(const ms_cli_model *m, ms_service_spec *spec) {
  *spec = *m->spec;
  spec->params = m->params;
  if (m->given[MS_OPT_SERVERS - MS_OPT_MODEL] &&
      spec->inputs[MS_INPUT_POOL].kind != MS_SOURCE_NONE) {
    spec->inputs[MS_INPUT_POOL].kind = MS_SOURCE_NONE;
    spec->has_servers = true;
  }
}

/* The trace built in memory from the Prometheus responses (saved with
 * --write-trace), then replayed as a CSV trace would be. */
static int replay_prometheus(const replay_args *a,
                             const ms_service_spec *spec) {
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  char err[600];
  if (mem == NULL)
    return ms_cli_fail("out of memory");
  int pr = ms_trace_from_prometheus(a->prom, mem, err, sizeof err);
  fclose(mem);
  if (pr != 0) {
    free(buf);
    return ms_cli_fail("%s", err);
  }
  if (a->write_trace) {
    FILE *w = fopen(a->write_trace, "w");
    if (w == NULL || fwrite(buf, 1, len, w) != len || fclose(w) != 0) {
      int e = errno;
      free(buf);
      return ms_cli_fail("%s: cannot write: %s", a->write_trace, strerror(e));
    }
  }
  FILE *in = fmemopen(buf, len ? len : 1, "r");
  if (in == NULL) {
    free(buf);
    return ms_cli_fail("out of memory");
  }
  int r =
      replay(spec, in, a->write_trace ? a->write_trace : "(Prometheus trace)",
             a->format);
  fclose(in);
  free(buf);
  return r;
}

/* The trace file, or stdin for "-". */
static int replay_file(const replay_args *a, const ms_service_spec *spec) {
  bool is_stdin = strcmp(a->trace, "-") == 0;
  FILE *in = is_stdin ? stdin : fopen(a->trace, "r");
  if (in == NULL)
    return ms_cli_fail("%s: cannot open: %s", a->trace, strerror(errno));
  int r = replay(spec, in, is_stdin ? "(stdin)" : a->trace, a->format);
  if (in != stdin)
    fclose(in);
  return r;
}

static int run(ms_cli_model *m, int argc, char **argv) {
  replay_args a = {.format = MS_FORMAT_CSV};
  int r = parse_options(&a, m, argc, argv);
  if (r != 0)
    return r;
  if (a.help)
    return ms_cli_help_model(help);
  if ((r = check_args(&a, m)) != 0)
    return r;
  if ((r = ms_cli_model_resolve(m, false)) != 0)
    return r;
  ms_service_spec spec;
  plugin_service(m, &spec);
  if (a.any_prom)
    return replay_prometheus(&a, &spec);
  return replay_file(&a, &spec);
}

int ms_cmd_replay(int argc, char **argv) {
  ms_cli_model m;
  ms_cli_model_init(&m);
  int rc = run(&m, argc, argv);
  ms_cli_model_free(&m);
  return rc;
}
