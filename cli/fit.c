/* SPDX-License-Identifier: MIT */
/*
 * metastable fit: a service's parameters estimated from a trace (the
 * estimation is service/fit.c, described in service/fit.h).  The trace is
 * read as replay reads it (service/trace.h), each row through the plugin's
 * own inference (ms_infer); the result is printed with its 95 %
 * intervals, written as a service file, and drawn.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fit.h"
#include "json.h"
#include "plot.h"
#include "source.h"

static const char usage[] =
    "Usage: metastable fit --spec FILE [--service NAME] [MODEL OPTIONS]\n"
    "                      [--format text|json] [--write-spec OUT.yaml]\n"
    "                      [--plot OUT.svg|png] [--title TEXT] TRACE.csv\n"
    "       metastable fit --spec FILE [--service NAME] ...\n"
    "                      --prometheus-json INPUT=FILE ... "
    "[--write-trace OUT.csv]\n"
    "\n"
    "Estimate a service's parameters from a metrics trace, read as replay\n"
    "reads it (the CSV of 'metastable simulate' is one), each with its 95 %\n"
    "interval, against the service file's:\n"
    "  service_time  (erlang) utilisation law over the whole trace:\n"
    "                busy_servers / completion_rate, weighted by the\n"
    "                completions; else the latency input\n"
    "  base_failure  and timeout (erlang; capacity for the capacity model):\n"
    "                maximum likelihood of the failures (error_rate /\n"
    "                arrival_rate, binomial) given the model's p(x) at the\n"
    "                observed attempt rate: at low load the pooled failure\n"
    "                ratio, near saturation the timeouts\n"
    "  retries       maximum likelihood of the retries, when the offered\n"
    "                load is observed (offered_rate or retry_rate), given\n"
    "                the share of failures the policy retries (r / (r + 1)\n"
    "                in a storm)\n"
    "The 95 % intervals come from the profile likelihood (a fall of 1.92,\n"
    "times the counts' dispersion), the service time's from its standard\n"
    "error.  A value the trace does not bound (no failures near saturation,\n"
    "no storm) is not identified and keeps the file's.  Rows where most\n"
    "attempts fail below saturation (a backlog draining) or most succeed\n"
    "above it (one building), and the row after a mostly failing one, are\n"
    "left out of the failures' likelihood.  Also printed: how far each model\n"
    "is from the observed failures (RMS of the residual z, deviance) and\n"
    "the tipping and recovery loads.\n"
    "The service file and service are required; model options override\n"
    "the file's values (the configured ones the fit is compared with).\n";

enum {
  OPT_WRITE_SPEC = MS_OPT_SHARED_END,
};

static const ms_cli_option options[] = {
    MS_CLI_SHARED(MS_OPT_FORMAT),
    {"--write-spec", "OUT.yaml", OPT_WRITE_SPEC,
     "write the fitted service as a service file (its inputs and settings as "
     "in FILE)"},
    {"--plot", "OUT.svg|png", MS_OPT_PLOT,
     "draw observed, fitted and configured failure ratio against the attempt "
     "rate with gnuplot; the results are then written only when --format is "
     "given"},
    MS_CLI_SHARED(MS_OPT_TITLE),
    MS_CLI_TRACE_OPTIONS,
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

/* ---- values for people --------------------------------------------------- */

typedef enum { UNIT_SECONDS, UNIT_SHARE, UNIT_RATE, UNIT_COUNT } unit;

static const char *fmt_value(char *buf, size_t len, double v, unit u) {
  if (isinf(v))
    snprintf(buf, len, "-");
  else if (u == UNIT_SECONDS && v != 0 && fabs(v) < 1)
    snprintf(buf, len, "%.4g ms", 1e3 * v);
  else if (u == UNIT_SECONDS)
    snprintf(buf, len, "%.4g s", v);
  else if (u == UNIT_SHARE)
    snprintf(buf, len, "%.4g %%", 100 * v);
  else if (u == UNIT_RATE)
    snprintf(buf, len, "%.5g req/s", v);
  else
    snprintf(buf, len, "%.0f", v);
  return buf;
}

/* One line of the parameter table. */
static void text_param(const char *name, const ms_fit_param *p, unit u,
                       const char *from) {
  char v[32], lo[32], hi[32], cf[32], ci[80];
  fmt_value(cf, sizeof cf, p->configured, u);
  if (!p->fitted) {
    printf("%-14s %-12s %-30s %-12s not fitted: %s\n", name, "-", "-", cf,
           p->why);
    return;
  }
  snprintf(ci, sizeof ci, "[%s, %s%s", fmt_value(lo, sizeof lo, p->lo, u),
           fmt_value(hi, sizeof hi, p->hi, u), isinf(p->hi) ? ")" : "]");
  fmt_value(v, sizeof v, p->value, u);
  if (p->identified)
    printf("%-14s %-12s %-30s %-12s %s\n", name, v, ci, cf, from);
  else
    printf("%-14s %-12s %-30s %-12s not identified by this trace (%s): %s\n",
           name, v, ci, cf, isinf(p->hi) ? "no upper bound" : "no lower bound",
           p->note[0] ? p->note : "the configured value is kept");
}

static void write_text(const ms_cli_model *m, const char *trace,
                       const ms_fit_result *r) {
  char d[256], from[256];
  bool erlang = r->configured.model.kind == MS_MODEL_ERLANG;
  printf(
      "service        %s%s%s\n", m->name[0] ? m->name : "",
      m->name[0] ? ": " : "",
      ms_cli_describe(&r->configured, r->servers > 0 || !erlang, d, sizeof d));
  printf("trace          %s: %zu rows, %zu used (%zu at low load, %zu in a "
         "storm); left out: %zu draining a backlog, %zu just after, %zu "
         "filling one; %zu without a verdict\n\n",
         trace, r->rows, r->used, r->low_load, r->storm, r->draining,
         r->recovering, r->filling, r->no_verdict);
  printf("%-14s %-12s %-30s %-12s %s\n", "parameter", "fitted", "95 % interval",
         "configured", "from");
  snprintf(from, sizeof from, "%s, %.0f intervals", r->service_time.why,
           r->service_time.samples);
  text_param("service_time", &r->service_time, UNIT_SECONDS, from);
  snprintf(from, sizeof from,
           "%s, %.0f intervals, %.0f attempts, dispersion %.3g",
           r->base_failure.why, r->base_failure.samples, r->base_failure.events,
           r->base_failure.dispersion);
  text_param("base_failure", &r->base_failure, UNIT_SHARE, from);
  snprintf(from, sizeof from,
           "likelihood of the failures over %zu intervals, dispersion %.3g",
           r->used, r->shape.dispersion);
  text_param(erlang ? "timeout" : "capacity", &r->shape,
             erlang ? UNIT_SECONDS : UNIT_RATE, from);
  if (r->amplification)
    snprintf(from, sizeof from,
             "likelihood of the retries, r from 0 to %d, dispersion %.3g",
             r->max_retries, r->retries.dispersion);
  else
    snprintf(from, sizeof from,
             "the trace has no offered load apart from the attempts "
             "(offered_rate or retry_rate)");
  text_param("retries", &r->retries, UNIT_COUNT, from);
  printf("\nresidual       RMS z %.3g configured, %.3g fitted; deviance %.6g "
         "configured, %.6g fitted (over the %zu used intervals out of "
         "storm)\n",
         r->rms_before, r->rms_after, r->deviance_before, r->deviance_after,
         r->used - r->storm);
  printf("tipping load   %.6g req/s fitted, %.6g req/s configured\n",
         r->ls_fitted.tipping_load, r->ls_configured.tipping_load);
  printf("recovery load  %.6g req/s fitted, %.6g req/s configured\n",
         r->ls_fitted.recovery_load, r->ls_configured.recovery_load);
}

static void json_param(ms_json *j, const char *key, const ms_fit_param *p) {
  ms_json_begin_object(j, key);
  ms_json_bool(j, "fitted", p->fitted);
  ms_json_bool(j, "identified", p->identified);
  if (p->fitted) {
    ms_json_number(j, "value", p->value);
    ms_json_number(j, "low", p->lo);
    if (isinf(p->hi))
      ms_json_null(j, "high");
    else
      ms_json_number(j, "high", p->hi);
  }
  if (p->se > 0)
    ms_json_number(j, "standard_error", p->se);
  if (p->dispersion > 0)
    ms_json_number(j, "dispersion", p->dispersion);
  ms_json_number(j, "configured", p->configured);
  ms_json_string(j, "method", p->why);
  if (p->note[0])
    ms_json_string(j, "note", p->note);
  ms_json_end_object(j);
}

static void write_json(const ms_cli_model *m, const char *trace,
                       const ms_fit_result *r) {
  ms_json j;
  ms_json_init(&j, stdout, 2);
  ms_json_begin_object(&j, NULL);
  if (m->name[0])
    ms_json_string(&j, "service", m->name);
  ms_json_string(&j, "trace", trace);
  ms_json_int(&j, "rows", (long long)r->rows);
  ms_json_int(&j, "used", (long long)r->used);
  ms_json_int(&j, "low_load", (long long)r->low_load);
  ms_json_int(&j, "storm", (long long)r->storm);
  ms_json_int(&j, "draining", (long long)r->draining);
  ms_json_int(&j, "recovering", (long long)r->recovering);
  ms_json_int(&j, "filling", (long long)r->filling);
  ms_json_int(&j, "without_verdict", (long long)r->no_verdict);
  ms_json_bool(&j, "amplification", r->amplification);
  ms_json_int(&j, "max_retries", r->max_retries);
  ms_json_begin_object(&j, "parameters");
  bool erlang = r->configured.model.kind == MS_MODEL_ERLANG;
  json_param(&j, "service_time", &r->service_time);
  json_param(&j, "base_failure", &r->base_failure);
  json_param(&j, erlang ? "timeout" : "capacity", &r->shape);
  json_param(&j, "retries", &r->retries);
  ms_json_end_object(&j);
  ms_json_begin_object(&j, "residual");
  ms_json_number(&j, "rms_configured", r->rms_before);
  ms_json_number(&j, "rms_fitted", r->rms_after);
  ms_json_number(&j, "deviance_configured", r->deviance_before);
  ms_json_number(&j, "deviance_fitted", r->deviance_after);
  ms_json_end_object(&j);
  ms_json_begin_object(&j, "tipping_load");
  ms_json_number(&j, "fitted", r->ls_fitted.tipping_load);
  ms_json_number(&j, "configured", r->ls_configured.tipping_load);
  ms_json_end_object(&j);
  ms_json_begin_object(&j, "recovery_load");
  ms_json_number(&j, "fitted", r->ls_fitted.recovery_load);
  ms_json_number(&j, "configured", r->ls_configured.recovery_load);
  ms_json_end_object(&j);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

/* ---- the plot -------------------------------------------------------------
 */

#define CURVE_POINTS 400

/* The arrays of the plot: observed (used and left out) and the two
 * models' p(x). */
typedef struct {
  double *ux, *uy, *lx, *ly, *cx, *fit, *conf;
  size_t nu, nl;
} plot_data;

static void plot_data_free(plot_data *d) {
  free(d->ux);
  free(d->uy);
  free(d->lx);
  free(d->ly);
  free(d->cx);
  free(d->fit);
  free(d->conf);
}

/* p(x) of the service p at x, with the landscapes' pool. */
static double model_p(const ms_service_params *p, long servers, double x) {
  ms_failure_model m = p->model;
  if (m.kind == MS_MODEL_ERLANG && servers > 0)
    m.servers = servers;
  double v;
  return ms_failure_probability(&m, x, &v, NULL) == MS_OK ? v : NAN;
}

static int plot_fill(plot_data *d, const ms_fit_obs *o, size_t n,
                     const ms_fit_result *r, double xmax) {
  size_t k = n ? n : 1;
  d->ux = malloc(k * sizeof(double));
  d->uy = malloc(k * sizeof(double));
  d->lx = malloc(k * sizeof(double));
  d->ly = malloc(k * sizeof(double));
  d->cx = malloc(CURVE_POINTS * sizeof(double));
  d->fit = malloc(CURVE_POINTS * sizeof(double));
  d->conf = malloc(CURVE_POINTS * sizeof(double));
  if (!d->ux || !d->uy || !d->lx || !d->ly || !d->cx || !d->fit || !d->conf)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (o[i].role == MS_FIT_USED) {
      d->ux[d->nu] = o[i].x;
      d->uy[d->nu++] = o[i].q;
    } else if (o[i].role != MS_FIT_NONE) {
      d->lx[d->nl] = o[i].x;
      d->ly[d->nl++] = o[i].q;
    }
  }
  for (size_t i = 0; i < CURVE_POINTS; i++) {
    d->cx[i] = xmax * (double)i / (CURVE_POINTS - 1);
    d->fit[i] = model_p(&r->fitted, r->servers, d->cx[i]);
    d->conf[i] = model_p(&r->configured, r->servers, d->cx[i]);
  }
  return 0;
}

/* The saturation load c mu (or C) of service p with the landscapes' pool. */
static double sat_load(const ms_fit_result *r, const ms_service_params *p) {
  return p == &r->fitted ? r->ls_fitted.saturation_load
                         : r->ls_configured.saturation_load;
}

/* The fitted parameters in a few words ("service time 101 ms, timeout
 * 24.8 ms, base failure 0.39 %, 1 retry"; without the names when
 * !names), for the plot's subtitle. */
static const char *brief(const ms_service_params *p, bool names, char *buf,
                         size_t len) {
  char a[32], b[32];
  const ms_failure_model *m = &p->model;
  if (m->kind == MS_MODEL_ERLANG)
    snprintf(buf, len, "%s%s, %s%s, %s%.3g %%, %d retr%s",
             names ? "service time " : "",
             fmt_value(a, sizeof a, 1 / m->service_rate, UNIT_SECONDS),
             names ? "timeout " : "",
             fmt_value(b, sizeof b, m->timeout, UNIT_SECONDS),
             names ? "base failure " : "", 100 * m->base_failure,
             p->policy.retries, p->policy.retries == 1 ? "y" : "ies");
  else
    snprintf(buf, len, "%s%s, %s%.3g %%, %d retr%s", names ? "capacity " : "",
             fmt_value(a, sizeof a, m->capacity, UNIT_RATE),
             names ? "base failure " : "", 100 * m->base_failure,
             p->policy.retries, p->policy.retries == 1 ? "y" : "ies");
  return buf;
}

/* Observed, fitted and configured failure ratio against the attempt rate,
 * with the two saturation loads marked.  Returns 0 or MS_EXIT_RUNTIME. */
static int write_plot(const char *path, const char *title,
                      const ms_cli_model *m, const ms_fit_obs *o, size_t n,
                      const ms_fit_result *r) {
  double xmax = fmax(sat_load(r, &r->fitted), sat_load(r, &r->configured));
  for (size_t i = 0; i < n; i++)
    if (o[i].role != MS_FIT_NONE)
      xmax = fmax(xmax, o[i].x);
  xmax *= 1.08;
  plot_data d = {0};
  if (plot_fill(&d, o, n, r, xmax) != 0) {
    plot_data_free(&d);
    return ms_cli_fail("out of memory drawing %zu intervals", n);
  }
  ms_plot_series s[4];
  size_t ns = 0;
  s[ns++] = (ms_plot_series){"observed", MS_PLOT_POINTS, MS_PLOT_BLUE, 0.6,
                             d.nu,       d.ux,           d.uy};
  if (d.nl > 0)
    s[ns++] = (ms_plot_series){"left out: a backlog draining or filling",
                               MS_PLOT_OPEN_POINTS,
                               MS_PLOT_GREY,
                               0.6,
                               d.nl,
                               d.lx,
                               d.ly};
  s[ns++] = (ms_plot_series){"fitted model p(x)",
                             MS_PLOT_SOLID,
                             MS_PLOT_VERMILION,
                             2,
                             CURVE_POINTS,
                             d.cx,
                             d.fit};
  s[ns++] = (ms_plot_series){"configured model p(x)",
                             MS_PLOT_DASHED,
                             MS_PLOT_GREY,
                             1.5,
                             CURVE_POINTS,
                             d.cx,
                             d.conf};
  char fit_cap[80], conf_cap[80], sub[512], ttl[160], a[200], b[200];
  snprintf(fit_cap, sizeof fit_cap, "fitted capacity %.4g/s",
           sat_load(r, &r->fitted));
  snprintf(conf_cap, sizeof conf_cap, "configured %.4g/s",
           sat_load(r, &r->configured));
  ms_plot_marker mk[2] = {{.vertical = true,
                           .at = sat_load(r, &r->fitted),
                           .text = fit_cap,
                           .color = MS_PLOT_VERMILION,
                           .on_axis = true},
                          {.vertical = true,
                           .at = sat_load(r, &r->configured),
                           .text = conf_cap,
                           .color = MS_PLOT_GREY,
                           .on_axis = true}};
  snprintf(sub, sizeof sub, "fitted: %s; configured: %s",
           brief(&r->fitted, true, a, sizeof a),
           brief(&r->configured, false, b, sizeof b));
  snprintf(ttl, sizeof ttl, "%s%sfailure ratio against attempt rate",
           m->name[0] ? m->name : "", m->name[0] ? ": " : "");
  ms_plot p;
  ms_plot_init(&p);
  p.title = title ? title : ttl;
  p.subtitle = sub;
  p.xlabel = "attempts per second reaching the service";
  p.ylabel = "failed attempts / attempts";
  p.xmin = 0;
  p.xmax = xmax;
  p.ymin = 0;
  p.ymax = 1.05;
  p.series = s;
  p.n_series = ns;
  p.markers = mk;
  p.n_markers = fabs(mk[0].at - mk[1].at) > 1e-9 * mk[0].at ? 2 : 1;
  p.legend = "bottom right";
  char err[512];
  int rc = ms_plot_write(&p, path, err, sizeof err);
  plot_data_free(&d);
  return rc == 0 ? MS_EXIT_OK : ms_cli_fail("%s", err);
}

/* ---- the command ----------------------------------------------------------
 */

typedef struct {
  ms_cli_shared sh; /* --format (without it, --plot draws only), --plot,
                       --title */
  ms_trace_source source;
  const char *write_spec;
  bool help;
} fit_args;

static int take_option(void *args, int c, const char *arg) {
  fit_args *a = args;
  if (c == OPT_WRITE_SPEC) {
    a->write_spec = arg;
    return 0;
  }
  int r = ms_cli_shared_option(&a->sh, c, arg);
  return r >= 0 ? r : ms_trace_source_option(&a->source, c, arg);
}

static int parse_options(fit_args *a, ms_cli_model *m, int argc, char **argv) {
  int first;
  int r =
      ms_cli_parse(argc, argv, &syntax, m, take_option, a, &a->help, &first);
  if (r != 0 || a->help)
    return r;
  return ms_trace_source_args(&a->source, m->spec_path, argc, argv, first);
}

/* The rows as the fit sees them.  Returns 0 or MS_EXIT_RUNTIME. */
static int observe(const ms_service_spec *spec, const ms_trace_rows *tr,
                   ms_fit_obs **obs) {
  if (tr->n == 0)
    return ms_cli_fail("%s: the trace has a header but no rows: nothing to "
                       "fit",
                       tr->name);
  *obs = calloc(tr->n, sizeof **obs);
  if (*obs == NULL)
    return ms_cli_fail("out of memory for %zu rows", tr->n);
  for (size_t i = 0; i < tr->n; i++) {
    ms_inputs in;
    char problem[256];
    ms_trace_inputs(tr, i, &in);
    ms_fit_observe(spec, &in, tr->rows[i].line, &(*obs)[i], problem,
                   sizeof problem);
  }
  return 0;
}

static int write_spec_file(const char *path, const ms_service_spec *spec,
                           const ms_fit_result *r) {
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return ms_cli_fail("%s: cannot write: %s", path, strerror(errno));
  fprintf(f, "# The service %s as metastable fit estimated it.\n", spec->name);
  int bad = ms_fit_write_spec(f, spec, r);
  if (fclose(f) != 0 || bad)
    return ms_cli_fail("%s: cannot write: %s", path, strerror(errno));
  return 0;
}

/* Fit, then write what was asked for. */
static int fit(const fit_args *a, const ms_cli_model *m,
               const ms_service_spec *spec, const ms_trace_rows *tr) {
  ms_fit_obs *obs = NULL;
  int rc = observe(spec, tr, &obs);
  ms_fit_result r;
  char err[512];
  if (rc == 0 && ms_fit_run(spec, obs, tr->n, &r, err, sizeof err) != 0)
    rc = ms_cli_fail("%s: %s", tr->name, err);
  bool results = a->sh.has_format || !a->sh.plot;
  if (rc == 0 && results && a->sh.format == MS_FORMAT_JSON)
    write_json(m, tr->name, &r);
  else if (rc == 0 && results)
    write_text(m, tr->name, &r);
  if (rc == 0 && a->write_spec)
    rc = write_spec_file(a->write_spec, spec, &r);
  if (rc == 0 && a->sh.plot)
    rc = write_plot(a->sh.plot, a->sh.title, m, obs, tr->n, &r);
  free(obs);
  return ms_cli_finish_output(rc);
}

static int run(ms_cli_model *m, int argc, char **argv) {
  fit_args a = {0};
  ms_cli_shared_init(&a.sh, MS_FORMAT_TEXT, MS_FORMATS_TEXT_JSON);
  int r = parse_options(&a, m, argc, argv);
  if (r != 0 || a.help)
    return r;
  if ((r = ms_cli_model_resolve(m, false)) != 0)
    return r;
  const ms_retry_policy *pol = &m->params.policy;
  if (pol->kind != MS_POLICY_COUNT || pol->nested != 0 || pol->has_tier_retries)
    return ms_cli_usage("fit estimates a retry count in independent tiers; "
                        "it does not fit %s (give the service with "
                        "--retries R instead)",
                        pol->kind != MS_POLICY_COUNT
                            ? ms_policy_name(pol->kind)
                            : "nested or per-tier retries");
  ms_service_spec spec;
  ms_cli_model_service(m, &spec);
  ms_trace_rows rows;
  r = ms_trace_load(&a.source, &spec, &rows);
  if (r == 0)
    r = fit(&a, m, &spec, &rows);
  ms_trace_rows_free(&rows);
  return r;
}

int ms_cmd_fit(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
