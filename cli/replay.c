/* SPDX-License-Identifier: MIT */
/*
 * metastable replay: a post-mortem.  A metrics trace (service/trace.h) is run
 * row by row through ms_tracker_step, the per-interval step the collectd
 * plugin runs (service/service.h): the same inference of the offered load,
 * the same state machine with its hysteresis, the same notifications.  So
 * the verdicts are the plugin's, interval by interval.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "json.h"
#include "plot.h"
#include "report.h"
#include "source.h"

static const char usage[] =
    "Usage: metastable replay --spec FILE [--service NAME] [MODEL OPTIONS]\n"
    "                         [--format text|csv|json] TRACE.csv\n"
    "       metastable replay --spec FILE [--service NAME] [--format "
    "text|csv|json]\n"
    "                         --prometheus-json INPUT=FILE ...\n"
    "                         [--write-trace OUT.csv]\n"
    "       (either form also takes --plot FILE)\n"
    "\n"
    "Run a metrics trace through the plugin's per-interval logic (inference,\n"
    "state machine, notifications) and write, per row, every value the\n"
    "plugin dispatches, with the notifications as they would have fired.\n"
    "The service file and service are required; model options override the\n"
    "file's values: what if?\n"
    "\n"
    "TRACE.csv ('-' for stdin) has a header row: 'time' (RFC 3339 such as\n"
    "2024-05-01T12:00:00Z, or Unix seconds), then any of arrival_rate,\n"
    "offered_rate, retry_rate, error_rate, pool_size, queue_length and the\n"
    "calibration inputs busy_servers, completion_rate, latency; one row\n"
    "per interval, times increasing (a row's rates cover the time since the\n"
    "row before).  The CSV of 'metastable simulate' is such a trace.  An\n"
    "empty cell is an input without a value that interval: for an input the\n"
    "verdict needs, the row has no verdict (reporting 0, the plugin's\n"
    "heartbeat) unless the service file says missing: zero for that input;\n"
    "one it can go without (a calibration input, a queue_length beside the\n"
    "attempts) costs only itself, and calibration_problem says so.\n"
    "The service's inputs come from the columns named like them; inputs the\n"
    "service file sets to a number keep that number.  Besides the plugin's\n"
    "values, a row says what calibration did (calibrate: in the service\n"
    "file): info, a learned value the model starts to use, and\n"
    "calibration_problem, why an input gave no sample or no value.\n";

static const ms_cli_option options[] = {
    {"--format", "text|csv|json", MS_OPT_FORMAT,
     "csv (default), a JSON array of rows, or text: a table for people "
     "(time, offered load, attempts observed, effective and self-inflicted "
     "load at the model's equilibrium, headroom or the load to shed in a "
     "storm, verdict, state changes marked, notifications under their row)"},
    MS_CLI_TRACE_OPTIONS,
    {"--plot", "FILE", MS_OPT_PLOT,
     "also draw the post-mortem picture into FILE (.svg or .png; gnuplot): "
     "offered load, attempts observed and the model's effective load "
     "against the tipping and recovery loads, storms shaded, notifications "
     "marked"},
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

static void write_csv_row(const ms_trace_row *row, const ms_step *st) {
  char b[32];
  ms_cli_csv_field(stdout, row->time_text);
  printf(",%s,", ms_format_double(b, row->unix_time));
  const ms_inference *inf = &st->inference;
  static const ms_report none; /* no report: reporting 0 alone */
  ms_report_csv(stdout, st->ok ? &st->report : &none);
  if (st->ok && inf->servers > 0)
    printf(",%ld", inf->servers);
  else
    fputs(",", stdout);
  if (st->ok && inf->has_observed_attempts)
    printf(",%s", ms_format_double(b, inf->observed_attempts));
  else
    fputs(",", stdout);
  if (st->ok && inf->has_observed_failure)
    printf(",%s", ms_format_double(b, inf->observed_failure));
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
  fputc(',', stdout);
  ms_cli_csv_field(stdout, st->info);
  fputc(',', stdout);
  if (st->ok)
    ms_cli_csv_field(stdout, inf->calibration_problem);
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
    if (st->info[0] != '\0')
      ms_json_string(j, "info", st->info);
    if (inf->calibration_problem[0] != '\0')
      ms_json_string(j, "calibration_problem", inf->calibration_problem);
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

/* The verdict of a row in words: the state, and the storm flag
 * ("overloaded STORM", "stable STORM (recovering)"). */
static void verdict_text(const ms_step *st, char *buf, size_t len) {
  const ms_report *r = &st->report;
  snprintf(buf, len, "%s%s", ms_state_name(r->analysis.state),
           !r->analysis.storm       ? ""
           : r->analysis.recovering ? " STORM (recovering)"
                                    : " STORM");
}

/* One row of the text table (the demo's, scripts/demo.sh): time as
 * written, offered load (req/s), effective and self-inflicted load
 * (attempts/s), the tipping headroom in per cent or, in a storm, the load
 * to shed (req/s), the verdict, and "<- state change" when the verdict
 * differs from the row before's; a line for the model's tipping and
 * recovery loads when they change (first row, calibration, pool size);
 * the notifications under the row they fired on. */
static void write_text_row(const ms_trace_row *row, const ms_step *st,
                           char *last_verdict, size_t vlen, double *last_tip,
                           double *last_rec) {
  const ms_report *r = &st->report;
  if (!st->ok) {
    printf("%-24s (no verdict: %s)\n", row->time_text, st->problem);
  } else {
    if (r->analysis.tipping_load != *last_tip ||
        r->analysis.recovery_load != *last_rec) {
      printf("%-24s model: tipping load %.1f req/s, recovery load %.1f "
             "req/s\n",
             "", r->analysis.tipping_load, r->analysis.recovery_load);
      *last_tip = r->analysis.tipping_load;
      *last_rec = r->analysis.recovery_load;
    }
    char room[32], verdict[64], seen[32];
    if (r->analysis.has_observed_effective_load)
      snprintf(seen, sizeof seen, "%.1f", r->analysis.observed_effective_load);
    else
      snprintf(seen, sizeof seen, "-");
    if (r->analysis.storm)
      snprintf(room, sizeof room, "shed %.0f", r->analysis.shed_load);
    else
      snprintf(room, sizeof room, "%.1f%%", 100 * r->analysis.tipping_headroom);
    verdict_text(st, verdict, sizeof verdict);
    bool changed = strcmp(verdict, last_verdict) != 0;
    printf("%-24s %9.1f %10s %10.1f %9.1f %10s  %s%s\n", row->time_text,
           r->analysis.offered_load, seen, r->analysis.effective_load,
           r->analysis.self_inflicted_load, room, verdict,
           changed ? "  <- state change" : "");
    snprintf(last_verdict, vlen, "%s", verdict);
  }
  for (int k = 0; k < st->n_notes; k++)
    printf("%-24s >>> %s: %s\n", "",
           ms_note_severity_name(st->notes[k].severity), st->notes[k].message);
}

/* What replay tells on a terminal when it is done: the verdicts, the
 * notifications, and what calibration did (the learned values taken into
 * use, at most one line each; the rows with an input left out or no
 * calibration sample, counted, with the first). */
typedef struct {
  size_t rows, no_verdict, notes[5];
  size_t calibration_problems;
  int first_problem_line;
  char first_problem[256]; /* as ms_inference.calibration_problem */
  int n_info;
  int info_line[3];
  char info[3][256];
} replay_tally;

static void tally_step(replay_tally *t, const ms_trace_row *row,
                       const ms_step *st) {
  t->rows++;
  t->no_verdict += !st->ok;
  for (int k = 0; k < st->n_notes; k++)
    t->notes[st->notes[k].severity]++;
  const char *why = st->inference.calibration_problem;
  if (st->ok && why[0] != '\0' && t->calibration_problems++ == 0) {
    t->first_problem_line = row->line;
    snprintf(t->first_problem, sizeof t->first_problem, "%s", why);
  }
  if (st->info[0] != '\0' && t->n_info < 3) {
    t->info_line[t->n_info] = row->line;
    snprintf(t->info[t->n_info++], sizeof t->info[0], "%s", st->info);
  }
}

static void tally_print(const replay_tally *t, const char *name,
                        const ms_tracker *tracker) {
  fprintf(stderr,
          "replay: %zu rows (%zu without a verdict); notifications: %zu "
          "FAILURE, %zu OKAY, %zu WARNING; landscape built %lu time%s\n",
          t->rows, t->no_verdict, t->notes[MS_NOTE_FAILURE],
          t->notes[MS_NOTE_OKAY], t->notes[MS_NOTE_WARNING],
          tracker->landscape_builds, tracker->landscape_builds == 1 ? "" : "s");
  for (int k = 0; k < t->n_info; k++)
    fprintf(stderr, "replay: %s:%d: %s\n", name, t->info_line[k], t->info[k]);
  if (t->calibration_problems > 0)
    fprintf(
        stderr,
        "replay: %zu row%s with an input left out or no calibration sample, "
        "the first at %s:%d: %s\n",
        t->calibration_problems, t->calibration_problems == 1 ? "" : "s", name,
        t->first_problem_line, t->first_problem);
}

/* ---- the picture ------------------------------------------------------ */

/* What the picture needs of each row, kept while the rows are written
 * (--plot): the row's time and verdict, and its notifications. */
typedef struct {
  size_t n;
  double *t;         /* Unix seconds */
  double *off, *eff; /* offered load (req/s), effective load at the
                        model's equilibrium (attempts/s); NaN in a row
                        without a verdict */
  double *obs;       /* observed attempts (attempts/s), NaN where the row
                        has no verdict or did not observe them */
  double *tip, *rec; /* tipping and recovery loads (req/s), or NaN */
  unsigned char *ok, *storm, *recovering;
  unsigned char *notes; /* bit per severity (1 << ms_note_severity) */
} replay_chart;

static void replay_chart_free(replay_chart *c) {
  free(c->t), free(c->off), free(c->eff), free(c->obs), free(c->tip);
  free(c->rec);
  free(c->ok), free(c->storm), free(c->recovering), free(c->notes);
}

/* Room for n rows: 0, or -1 when memory ran out. */
static int replay_chart_alloc(replay_chart *c, size_t n) {
  memset(c, 0, sizeof *c);
  size_t m = n ? n : 1;
  c->t = malloc(m * sizeof *c->t);
  c->off = malloc(m * sizeof *c->off);
  c->eff = malloc(m * sizeof *c->eff);
  c->obs = malloc(m * sizeof *c->obs);
  c->tip = malloc(m * sizeof *c->tip);
  c->rec = malloc(m * sizeof *c->rec);
  c->ok = calloc(m, 1);
  c->storm = calloc(m, 1);
  c->recovering = calloc(m, 1);
  c->notes = calloc(m, 1);
  return c->t && c->off && c->eff && c->obs && c->tip && c->rec && c->ok &&
                 c->storm && c->recovering && c->notes
             ? 0
             : -1;
}

static void replay_chart_row(replay_chart *c, const ms_trace_row *row,
                             const ms_step *st) {
  size_t i = c->n++;
  const ms_report *r = &st->report;
  c->t[i] = row->unix_time;
  c->ok[i] = st->ok;
  c->off[i] = st->ok ? r->analysis.offered_load : NAN;
  c->eff[i] = st->ok ? r->analysis.effective_load : NAN;
  c->obs[i] = st->ok && r->analysis.has_observed_effective_load
                  ? r->analysis.observed_effective_load
                  : NAN;
  c->tip[i] = st->ok ? r->analysis.tipping_load : NAN;
  c->rec[i] = st->ok ? r->analysis.recovery_load : NAN;
  c->storm[i] = st->ok && r->analysis.storm;
  c->recovering[i] = st->ok && r->analysis.storm && r->analysis.recovering;
  for (int k = 0; k < st->n_notes; k++)
    c->notes[i] |= (unsigned char)(1u << st->notes[k].severity);
}

/* The start of row i's interval: its rates cover the time since the row
 * before (the first row: its own time). */
static double row_start(const replay_chart *c, size_t i) {
  return i > 0 ? c->t[i - 1] : c->t[0];
}

/* The spans of rows in storm (recovering or not, by `recovering`), one
 * band per run of such rows, from the start of the first row's interval
 * to the last row's time, the label on the first only.  Returns the
 * number written. */
static size_t storm_bands(const replay_chart *c, bool recovering, double t0,
                          double scale, ms_plot_band *b) {
  size_t nb = 0;
  for (size_t i = 0; i < c->n;) {
    bool in = c->storm[i] && c->recovering[i] == recovering;
    if (!in) {
      i++;
      continue;
    }
    size_t k = i;
    while (k < c->n && c->storm[k] && c->recovering[k] == recovering)
      k++;
    b[nb] = (ms_plot_band){
        .from = (row_start(c, i) - t0) / scale,
        .to = (c->t[k - 1] - t0) / scale,
        .label = nb           ? NULL
                 : recovering ? "storm, recovering"
                              : "retry storm (the plugin's verdict)",
        .color = recovering ? MS_PLOT_GREEN : MS_PLOT_PURPLE};
    nb++;
    i = k;
  }
  return nb;
}

/* The spans of rows without a verdict (an input without a value), grey,
 * as storm_bands.  Returns the number written. */
static size_t gap_bands(const replay_chart *c, double t0, double scale,
                        ms_plot_band *b) {
  size_t nb = 0;
  for (size_t i = 0; i < c->n;) {
    if (c->ok[i]) {
      i++;
      continue;
    }
    size_t k = i;
    while (k < c->n && !c->ok[k])
      k++;
    if (!(c->t[k - 1] > row_start(c, i))) { /* the first row alone */
      i = k;
      continue;
    }
    b[nb] = (ms_plot_band){.from = (row_start(c, i) - t0) / scale,
                           .to = (c->t[k - 1] - t0) / scale,
                           .label = nb ? NULL : "no verdict (an input missing)",
                           .color = MS_PLOT_GREY};
    nb++;
    i = k;
  }
  return nb;
}

/* A load (offered, effective, tipping or recovery) as a step line: each row's
 * value across its interval, a break at rows without a verdict.  x and y have
 * room for 3 n points; returns the number written. */
static size_t step_line(const replay_chart *c, const double *v, double t0,
                        double scale, double *x, double *y) {
  size_t m = 0;
  for (size_t i = 0; i < c->n; i++) {
    if (!c->ok[i] || !isfinite(v[i])) {
      x[m] = NAN, y[m++] = NAN;
      continue;
    }
    x[m] = (row_start(c, i) - t0) / scale, y[m++] = v[i];
    x[m] = (c->t[i] - t0) / scale, y[m++] = v[i];
  }
  return m;
}

/* A vertical marker per row with notifications, named by their
 * severities ("FAILURE+OKAY"), in the colour of the gravest; x[i] the
 * row's time on the axis, texts the markers' texts (n + 1 of them).
 * Returns the number of markers. */
static size_t note_markers(const replay_chart *c, const double *x,
                           ms_plot_marker *marks, char (*texts)[40]) {
  size_t n = c->n;
  size_t nm = 0;
  for (size_t i = 0; i < n; i++) {
    if (!c->notes[i])
      continue;
    static const char *const colour[] = {
        [MS_NOTE_FAILURE] = MS_PLOT_VERMILION,
        [MS_NOTE_WARNING] = MS_PLOT_ORANGE,
        [MS_NOTE_OKAY] = MS_PLOT_GREEN,
    };
    const char *col = NULL;
    texts[nm][0] = '\0';
    static const ms_note_severity order[] = {MS_NOTE_FAILURE, MS_NOTE_WARNING,
                                             MS_NOTE_OKAY};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
      if (!(c->notes[i] & (1u << order[k])))
        continue;
      size_t l = strlen(texts[nm]);
      snprintf(texts[nm] + l, sizeof texts[nm] - l, "%s%s", l ? "+" : "",
               ms_note_severity_name(order[k]));
      if (!col)
        col = colour[order[k]];
    }
    marks[nm] = (ms_plot_marker){.vertical = true,
                                 .at = x[i],
                                 .text = texts[nm],
                                 .color = col,
                                 .on_axis = true};
    nm++;
  }
  return nm;
}

/* The time the axis counts from, for its label: the first row's time as
 * written, or in UTC when written as Unix seconds; "the first row" when
 * there are no rows. */
static void time_origin(const char *first_time, const replay_chart *c,
                        char *start, size_t size) {
  snprintf(start, size, "the first row");
  size_t n = c->n;
  if (n) {
    const char *tt = first_time;
    char *end;
    strtod(tt, &end);
    time_t secs = (time_t)floor(c->t[0]);
    struct tm tm;
    if (end != tt && *end == '\0' && gmtime_r(&secs, &tm))
      strftime(start, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
    else
      snprintf(start, size, "%s", tt);
  }
}

/* Draw the replay into path: the offered and effective loads and the
 * tipping and recovery loads as steps (each row's value across the
 * interval its rates cover), the storms shaded
 * (recovering in another shade), each row with notifications a vertical
 * line named by their severities above the plot.  The time axis is in
 * seconds since the first row (minutes past two hours, hours past two
 * days).  Returns 0, or MS_EXIT_RUNTIME with the reason. */
static int replay_plot(const char *path, const ms_cli_model *m,
                       const char *trace_name, const char *first_time,
                       const replay_chart *c) {
  size_t n = c->n;
  double t0 = n ? c->t[0] : 0, span = n ? c->t[n - 1] - t0 : 0;
  double scale = span > 2 * 86400 ? 3600 : span > 7200 ? 60 : 1;
  const char *unit = scale == 3600 ? "h" : scale == 60 ? "min" : "s";
  size_t m3 = 3 * (n ? n : 1);
  /* the observed attempts first, the model's over them, the offered load
   * over both: where they are one line (no retries), that line is the
   * offered load */
  const double *vals[5] = {c->obs, c->eff, c->off, c->tip, c->rec};
  ms_plot_series s[5] = {
      {.title = "attempts observed (attempts/s)",
       .style = MS_PLOT_SOLID,
       .color = MS_PLOT_VERMILION,
       .width = 2.5},
      {.title = "effective load at the model's equilibrium",
       .style = MS_PLOT_DASHED,
       .color = MS_PLOT_BLACK,
       .width = 1.5},
      {.title = "offered load (req/s)",
       .style = MS_PLOT_SOLID,
       .color = MS_PLOT_BLUE,
       .width = 2},
      {.title = "tipping load (the model)",
       .style = MS_PLOT_DASHED,
       .color = MS_PLOT_GREY,
       .width = 2},
      {.title = "recovery load (the model)",
       .style = MS_PLOT_DOTTED,
       .color = MS_PLOT_GREY,
       .width = 2.5},
  };
  double *xy[10] = {0};
  double *x = malloc(n ? n * sizeof *x : sizeof *x);
  ms_plot_band *bands = calloc(2 * n + 1, sizeof *bands);
  ms_plot_marker *marks = calloc(n + 1, sizeof *marks);
  char(*texts)[40] = calloc(n + 1, sizeof *texts);
  bool ok = x && bands && marks && texts;
  for (int k = 0; k < 10; k++)
    ok = (xy[k] = malloc(m3 * sizeof *xy[k])) != NULL && ok;
  int rc = MS_EXIT_OK;
  if (!ok) {
    rc = ms_cli_fail("--plot: out of memory drawing %zu rows", n);
    goto done;
  }
  double ymax = 0;
  for (size_t i = 0; i < n; i++) {
    x[i] = (c->t[i] - t0) / scale;
    for (int k = 0; k < 5 && c->ok[i]; k++)
      if (isfinite(vals[k][i]))
        ymax = fmax(ymax, vals[k][i]);
  }
  size_t ns = 0;
  for (int k = 0; k < 5; k++) {
    size_t np = step_line(c, vals[k], t0, scale, xy[2 * k], xy[2 * k + 1]);
    bool any = false;
    for (size_t i = 0; i < np && !any; i++)
      any = isfinite(xy[2 * k + 1][i]);
    if (!any) /* no row observed the attempts: no legend entry for them */
      continue;
    s[ns] = s[k];
    s[ns].n = np, s[ns].x = xy[2 * k], s[ns].y = xy[2 * k + 1];
    ns++;
  }
  size_t nb = storm_bands(c, false, t0, scale, bands);
  nb += storm_bands(c, true, t0, scale, bands + nb);
  nb += gap_bands(c, t0, scale, bands + nb);
  size_t nm = note_markers(c, x, marks, texts);
  char ttl[400], sub[400], xl[200];
  const char *base = strrchr(trace_name, '/');
  snprintf(ttl, sizeof ttl, "%s%sreplay of %s", m->name[0] ? m->name : "",
           m->name[0] ? ": " : "", base ? base + 1 : trace_name);
  snprintf(sub, sizeof sub, "%s; %zu rows%s", m->summary, n,
           nm ? ", notifications marked above" : "");
  char start[64];
  time_origin(first_time, c, start, sizeof start);
  snprintf(xl, sizeof xl, "time (%s) since %s", unit, start);
  ms_plot p;
  ms_plot_init(&p);
  p.title = ttl;
  p.subtitle = sub;
  p.xlabel = xl;
  p.ylabel = "requests or attempts per second";
  p.xmin = 0;
  p.xmax = n && x[n - 1] > 0 ? x[n - 1] : 1;
  p.ymin = 0;
  p.ymax = ymax > 0 ? 1.08 * ymax : 1;
  p.series = s;
  p.n_series = ns;
  p.bands = bands;
  p.n_bands = nb;
  p.markers = marks;
  p.n_markers = nm;
  p.legend = "below";
  p.legend_columns = 2;
  char err[512];
  if (ms_plot_write(&p, path, err, sizeof err) != 0)
    rc = ms_cli_fail("--plot: %s", err);
done:
  for (int k = 0; k < 10; k++)
    free(xy[k]);
  free(x), free(bands), free(marks), free(texts);
  return rc;
}

/* Step the plugin's tracker through the rows and write its verdict on
 * each, as CSV or JSON; on a terminal, a tally of the verdicts, the
 * notifications and the calibration on stderr.  Returns through
 * ms_cli_finish_output, or MS_EXIT_RUNTIME when the model gives a value
 * that is not a number (the rows written before it are kept, as the
 * plugin would have dispatched them). */
static int write_verdicts(const ms_service_spec *spec, ms_format format,
                          ms_trace_stream *tr, replay_chart *chart) {
  ms_tracker tracker;
  ms_tracker_init(&tracker);
  ms_json j;
  if (format == MS_FORMAT_JSON) {
    ms_json_init(&j, stdout, 1);
    ms_json_begin_array(&j, NULL);
  } else if (format == MS_FORMAT_TEXT) {
    printf("%-24s %9s %10s %10s %9s %10s  %s\n", "time", "offered", "observed",
           "model", "self-inf", "headroom", "verdict");
    printf("%-24s %9s %10s %10s %9s %10s\n", "", "req/s", "attempts/s",
           "attempts/s", "att./s", "or shed");
  } else {
    fputs("time,unix_time,", stdout);
    ms_report_csv_header(stdout);
    puts(",servers,observed_attempts,observed_failure,problem,notifications,"
         "info,calibration_problem");
  }
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "replay", tr->n);
  replay_tally tally = {0};
  ms_step st;
  char last_verdict[64] = "";
  double last_tip = NAN, last_rec = NAN;
  const char *name = tr->whole.name;
  ms_trace_row row;
  ms_inputs in;
  int got;
  for (size_t i = 0; (got = ms_trace_stream_next(tr, &row, &in)) == 1; i++) {
    ms_tracker_step(&tracker, spec, &in, &st);
    char msg[256];
    if (st.ok && ms_report_finite(&st.report, msg, sizeof msg) != 0) {
      ms_cli_progress_end(&prog);
      if (format == MS_FORMAT_JSON)
        fputc('\n', stdout);
      fflush(stdout);
      return ms_cli_fail("%s:%d: model: %s", name, row.line, msg);
    }
    if (format == MS_FORMAT_JSON)
      write_json_row(&j, &row, &st);
    else if (format == MS_FORMAT_TEXT)
      write_text_row(&row, &st, last_verdict, sizeof last_verdict, &last_tip,
                     &last_rec);
    else
      write_csv_row(&row, &st);
    tally_step(&tally, &row, &st);
    if (chart)
      replay_chart_row(chart, &row, &st);
    ms_cli_progress_update(&prog, i);
  }
  ms_cli_progress_end(&prog);
  if (got < 0) { /* the message is printed; the rows so far are out */
    if (format == MS_FORMAT_JSON)
      fputc('\n', stdout);
    fflush(stdout);
    return MS_EXIT_RUNTIME;
  }
  if (format == MS_FORMAT_JSON) {
    ms_json_end_array(&j);
    ms_json_finish(&j);
  }
  if (tr->n == 0)
    ms_cli_warn("%s has a header but no rows", name);
  if (isatty(STDERR_FILENO))
    tally_print(&tally, name, &tracker);
  return ms_cli_finish_output(MS_EXIT_OK);
}

/* ---- the command ----------------------------------------------------- */

/* What the command line asks for. */
typedef struct {
  ms_cli_shared sh;       /* --format, --plot */
  ms_trace_source source; /* TRACE.csv or --prometheus-json */
  bool help;              /* --help: print it and do nothing else */
} replay_args;

/* One option of the command (ms_cli_take). */
static int take_option(void *args, int c, const char *arg) {
  replay_args *a = args;
  int r = ms_cli_shared_option(&a->sh, c, arg);
  return r >= 0 ? r : ms_trace_source_option(&a->source, c, arg);
}

/* Take the options in the order given, stopping at the first bad one (or
 * at --help), so that the message names the option the user got wrong
 * first; then the one trace.  Returns 0 or the exit code of the message
 * printed. */
static int parse_options(replay_args *a, ms_cli_model *m, int argc,
                         char **argv) {
  int first;
  int r =
      ms_cli_parse(argc, argv, &syntax, m, take_option, a, &a->help, &first);
  if (r != 0 || a->help)
    return r;
  return ms_trace_source_args(&a->source, m->spec_path, argc, argv, first);
}

static int run(ms_cli_model *m, int argc, char **argv) {
  replay_args a = {0};
  ms_cli_shared_init(&a.sh, MS_FORMAT_CSV, MS_FORMATS_ALL);
  int r = parse_options(&a, m, argc, argv);
  if (r != 0 || a.help)
    return r;
  if ((r = ms_cli_model_resolve(m, false)) != 0)
    return r;
  ms_service_spec spec;
  ms_cli_model_service(m, &spec);
  /* row by row when the trace can be read twice (ms_trace_stream) */
  ms_trace_stream rows;
  r = ms_trace_stream_open(&a.source, &spec, &rows);
  replay_chart chart;
  bool drawing = r == 0 && a.sh.plot != NULL;
  if (drawing && replay_chart_alloc(&chart, rows.n) != 0) {
    replay_chart_free(&chart);
    ms_trace_stream_close(&rows);
    return ms_cli_fail("--plot: out of memory for %zu rows", rows.n);
  }
  if (r == 0)
    r = write_verdicts(&spec, a.sh.format, &rows, drawing ? &chart : NULL);
  /* the rows are out (and flushed) before the picture is drawn: a picture
   * that cannot be drawn loses none of them */
  if (r == 0 && drawing)
    r = replay_plot(a.sh.plot, m, rows.whole.name, rows.first_time, &chart);
  if (drawing)
    replay_chart_free(&chart);
  ms_trace_stream_close(&rows);
  return r;
}

int ms_cmd_replay(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
