/* SPDX-License-Identifier: MIT */
/* A command's trace source (source.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "source.h"

/* "arrival_rate, offered_rate, ..., latency": the inputs' names. */
static const char *input_names(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < MS_INPUT_COUNT && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                             ms_input_name((ms_input_id)i));
  return buf;
}

int ms_trace_source_prometheus(ms_trace_source *s, const char *arg) {
  const char *eq = strchr(arg, '=');
  int id = -1;
  for (int i = 0; eq && i < MS_INPUT_COUNT; i++) {
    const char *n = ms_input_name((ms_input_id)i);
    if (strlen(n) == (size_t)(eq - arg) &&
        strncmp(n, arg, (size_t)(eq - arg)) == 0)
      id = i;
  }
  char names[256];
  if (id < 0 || eq[1] == '\0')
    return ms_cli_usage("--prometheus-json: '%s' must be INPUT=FILE "
                        "with INPUT one of %s",
                        arg, input_names(names, sizeof names));
  if (s->prom[id])
    return ms_cli_usage("--prometheus-json: %s given twice",
                        ms_input_name((ms_input_id)id));
  s->prom[id] = eq + 1;
  s->any_prom = true;
  return 0;
}

int ms_trace_source_option(ms_trace_source *s, int id, const char *arg) {
  switch (id) {
  case MS_OPT_TRACE_PROMETHEUS:
    return ms_trace_source_prometheus(s, arg);
  case MS_OPT_TRACE_WRITE:
    s->write_trace = arg;
    return 0;
  default:
    return -1;
  }
}

int ms_trace_source_args(ms_trace_source *s, const char *spec_path, int argc,
                         char **argv, int first) {
  if (first < argc)
    s->path = argv[first++];
  if (first < argc)
    return ms_cli_usage("unexpected argument '%s' (one trace at a time)",
                        argv[first]);
  if (spec_path == NULL)
    return ms_cli_usage("give the service file with --spec FILE (and "
                        "--service NAME when it has several)");
  return ms_trace_source_check(s);
}

int ms_trace_source_check(const ms_trace_source *s) {
  if (s->path && s->any_prom)
    return ms_cli_usage("give a trace file or --prometheus-json, not both");
  if (!s->path && !s->any_prom)
    return ms_cli_usage("give the trace: TRACE.csv (or '-' for stdin), or "
                        "--prometheus-json INPUT=FILE");
  if (s->write_trace && !s->any_prom)
    return ms_cli_usage("--write-trace saves the trace built from "
                        "--prometheus-json: give those too");
  return 0;
}

/* Check the trace's columns against the service's inputs: a column for
 * every input read from collectd, and a warning for columns that will not
 * be used. */
static int check_columns(const ms_trace *t, const ms_service_spec *spec,
                         bool prom) {
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const ms_source *src = &spec->inputs[i];
    const char *name = ms_input_name((ms_input_id)i);
    bool reads = ms_input_observed(spec, (ms_input_id)i);
    if (reads && t->input_col[i] < 0 && prom)
      return ms_cli_fail("no --prometheus-json %s=FILE: service '%s' reads "
                         "that input (from %s)",
                         name, spec->name, src->pattern);
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

/* The rows after the header, into *out; with keep false only counted
 * (out->n) and checked, out->rows left NULL. */
static int read_rows(ms_trace *t, ms_trace_rows *out, bool keep, char *err,
                     size_t len) {
  size_t cap = 0;
  ms_trace_row scratch;
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "reading the trace", 0);
  int r;
  for (;;) {
    if (out->n == MS_TRACE_MAX_ROWS) {
      ms_trace_row extra;
      r = ms_trace_next(t, &extra, err, len);
      if (r == 1) {
        snprintf(err, len,
                 "%s:%d:1: more than %d rows, the limit: cut the trace to the "
                 "time range of interest, or resample it to a longer interval",
                 t->name, t->line, MS_TRACE_MAX_ROWS);
        r = -1;
      }
      break;
    }
    if (!keep) {
      r = ms_trace_next(t, &scratch, err, len);
      if (r != 1)
        break;
      out->n++;
      ms_cli_progress_update(&prog, out->n);
      continue;
    }
    if (out->n == cap) {
      size_t nc = cap ? 2 * cap : 1024;
      if (nc > MS_TRACE_MAX_ROWS)
        nc = MS_TRACE_MAX_ROWS;
      ms_trace_row *nr = realloc(out->rows, nc * sizeof *nr);
      if (nr == NULL) {
        r = -1;
        snprintf(err, len, "out of memory after %zu rows", out->n);
        break;
      }
      out->rows = nr;
      cap = nc;
    }
    r = ms_trace_next(t, &out->rows[out->n], err, len);
    if (r != 1)
      break;
    out->n++;
    ms_cli_progress_update(&prog, out->n);
  }
  ms_cli_progress_end(&prog);
  return r;
}

/* The trace in f, called name in messages: the header checked against
 * the service, then every row, so that a bad row stops the command
 * before anything is written; the rows kept in out, or with keep false
 * only counted. */
static int load_stream(FILE *f, const char *name, const ms_service_spec *spec,
                       bool prom, bool keep, ms_trace_rows *out) {
  snprintf(out->name, sizeof out->name, "%s", name);
  ms_trace t;
  char err[600];
  if (ms_trace_open(&t, f, out->name, err, sizeof err) != 0) {
    ms_trace_close(&t);
    return ms_cli_fail("%s", err);
  }
  int rc = check_columns(&t, spec, prom);
  if (rc == 0 && read_rows(&t, out, keep, err, sizeof err) < 0)
    rc = ms_cli_fail("%s", err);
  ms_trace_close(&t);
  return rc;
}

/* The trace built in memory from the Prometheus responses (saved with
 * --write-trace), then read as a CSV trace would be. */
static int load_prometheus(const ms_trace_source *s,
                           const ms_service_spec *spec, ms_trace_rows *out) {
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  char err[600];
  if (mem == NULL)
    return ms_cli_fail("out of memory");
  int pr = ms_trace_from_prometheus(s->prom, mem, err, sizeof err);
  fclose(mem);
  if (pr != 0) {
    free(buf);
    return ms_cli_fail("%s", err);
  }
  if (s->write_trace) {
    FILE *w = fopen(s->write_trace, "w");
    if (w == NULL || fwrite(buf, 1, len, w) != len || fclose(w) != 0) {
      int e = errno;
      free(buf);
      return ms_cli_fail("%s: cannot write: %s", s->write_trace, strerror(e));
    }
  }
  FILE *in = fmemopen(buf, len ? len : 1, "r");
  if (in == NULL) {
    free(buf);
    return ms_cli_fail("out of memory");
  }
  int r =
      load_stream(in, s->write_trace ? s->write_trace : "(Prometheus trace)",
                  spec, true, true, out);
  fclose(in);
  free(buf);
  return r;
}

/* Open the CSV trace of s (a file, or stdin for "-"), refusing a regular
 * file above MS_TRACE_MAX_BYTES before reading it.  Returns 0 with *in
 * and *name set, or MS_EXIT_RUNTIME with the message printed. */
static int open_csv(const ms_trace_source *s, FILE **in, const char **name) {
  bool is_stdin = strcmp(s->path, "-") == 0;
  *name = is_stdin ? "(stdin)" : s->path;
  *in = is_stdin ? stdin : fopen(s->path, "r");
  if (*in == NULL)
    return ms_cli_fail("%s: cannot open: %s", s->path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(*in), &sb) == 0 && S_ISREG(sb.st_mode) &&
      sb.st_size > MS_TRACE_MAX_BYTES) {
    if (!is_stdin)
      fclose(*in);
    *in = NULL;
    char mib[32];
    return ms_cli_fail("%s: %s MiB, more than the limit of %d MiB for a "
                       "trace: cut it to the time range of interest (e.g. "
                       "with awk on its time column), or resample it",
                       *name,
                       ms_format_against(mib, (double)sb.st_size / 1048576.0,
                                         (double)(MS_TRACE_MAX_BYTES >> 20)),
                       MS_TRACE_MAX_BYTES >> 20);
  }
  return 0;
}

int ms_trace_load(const ms_trace_source *s, const ms_service_spec *spec,
                  ms_trace_rows *out) {
  memset(out, 0, sizeof *out);
  if (s->any_prom)
    return load_prometheus(s, spec, out);
  FILE *in;
  const char *name;
  int r = open_csv(s, &in, &name);
  if (r != 0)
    return r;
  r = load_stream(in, name, spec, false, true, out);
  if (in != stdin)
    fclose(in);
  return r;
}

/* Whether f can be read a second time from its start: a regular file
 * at its start. */
static bool rereadable(FILE *f) {
  struct stat sb;
  return fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && ftell(f) == 0;
}

/* The message for a trace that changed between its two readings. */
static int changed(ms_trace_stream *st, const char *why) {
  ms_cli_fail("%s:%d: %s since it was checked: the rows written so far "
              "are of the trace as it was",
              st->whole.name, st->t.line, why);
  return -1;
}

int ms_trace_stream_open(const ms_trace_source *s, const ms_service_spec *spec,
                         ms_trace_stream *st) {
  memset(st, 0, sizeof *st);
  if (s->any_prom) {
    int r = ms_trace_load(s, spec, &st->whole);
    st->n = st->whole.n;
    if (r == 0 && st->n > 0)
      snprintf(st->first_time, sizeof st->first_time, "%s",
               st->whole.rows[0].time_text);
    return r;
  }
  const char *name;
  int r = open_csv(s, &st->f, &name);
  if (r != 0)
    return r;
  st->own_f = st->f != stdin;
  if (!rereadable(st->f)) { /* a pipe: whole */
    r = load_stream(st->f, name, spec, false, true, &st->whole);
    st->n = st->whole.n;
    if (r == 0 && st->n > 0)
      snprintf(st->first_time, sizeof st->first_time, "%s",
               st->whole.rows[0].time_text);
    return r;
  }
  /* the first reading: every row checked and counted */
  r = load_stream(st->f, name, spec, false, false, &st->whole);
  st->n = st->whole.n;
  if (r != 0)
    return r;
  /* the second, row by row; its first two rows read ahead */
  char err[600];
  errno = 0;
  if (fseek(st->f, 0, SEEK_SET) != 0)
    return ms_cli_fail("%s: cannot read it again: %s", name, strerror(errno));
  st->streaming = true;
  if (ms_trace_open(&st->t, st->f, st->whole.name, err, sizeof err) != 0)
    return ms_cli_fail("%s", err);
  for (size_t k = 0; k < 2 && k < st->n; k++) {
    int got = ms_trace_next(&st->t, &st->first[k], err, sizeof err);
    if (got < 0)
      return ms_cli_fail("%s", err);
    if (got == 0)
      return changed(st, "the trace is shorter");
  }
  if (st->n > 0)
    snprintf(st->first_time, sizeof st->first_time, "%s",
             st->first[0].time_text);
  return 0;
}

int ms_trace_stream_next(ms_trace_stream *st, ms_trace_row *row,
                         ms_inputs *in) {
  if (st->i == st->n)
    return 0;
  if (!st->streaming) {
    *row = st->whole.rows[st->i];
    ms_trace_inputs(&st->whole, st->i++, in);
    return 1;
  }
  if (st->i < 2) {
    *row = st->first[st->i];
  } else {
    char err[600];
    int got = ms_trace_next(&st->t, row, err, sizeof err);
    if (got < 0) {
      ms_cli_fail("%s", err);
      return -1;
    }
    if (got == 0)
      return changed(st, "the trace is shorter");
  }
  /* as ms_trace_inputs */
  *in = row->in;
  if (st->i > 0)
    in->interval = row->unix_time - st->prev_time;
  else if (st->n > 1)
    in->interval = st->first[1].unix_time - st->first[0].unix_time;
  st->prev_time = row->unix_time;
  st->i++;
  return 1;
}

void ms_trace_stream_close(ms_trace_stream *st) {
  if (st->streaming)
    ms_trace_close(&st->t);
  if (st->own_f && st->f)
    fclose(st->f);
  st->f = NULL;
  ms_trace_rows_free(&st->whole);
}

void ms_trace_rows_free(ms_trace_rows *r) {
  free(r->rows);
  r->rows = NULL;
  r->n = 0;
}

void ms_trace_inputs(const ms_trace_rows *r, size_t i, ms_inputs *in) {
  *in = r->rows[i].in;
  if (i > 0)
    in->interval = r->rows[i].unix_time - r->rows[i - 1].unix_time;
  else if (r->n > 1)
    in->interval = r->rows[1].unix_time - r->rows[0].unix_time;
}
