/* SPDX-License-Identifier: MIT */
/*
 * metastable escapes: the escapes from the retry loop, each evaluated as a
 * modified service (doc/design.md §1.11): bound (a queue limit from the
 * latency objective), budget (a 10 % retry budget), randomize (backoff
 * with jitter), discard (servers drop work whose client has given up,
 * approximated by the queue it leaves), damp (clients halve their retry
 * rate on failure).  For each: tipping and recovery loads, the band, the
 * stall tolerance and what it costs at the normal load.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "json.h"
#include "plot.h"
#include "sim.h"

static const char usage[] =
    "Usage: metastable escapes [MODEL OPTIONS] [--load L]\n"
    "                          [--latency-objective D] [--plot FILE]\n"
    "                          [--format text|json]\n"
    "\n"
    "The escapes from the retry loop, each as a modified service: bound (a\n"
    "queue limit of throughput x latency objective), budget (retries at\n"
    "most 10 % of requests), randomize (backoff with full jitter over the\n"
    "timeout), discard (the server drops work whose client has given up),\n"
    "damp (clients halve their retry rate after each failure).  For each:\n"
    "tipping and recovery loads, band width, stall tolerance, and its cost\n"
    "at the normal load L (default: half the tipping load of the service as\n"
    "given): requests rejected, legitimate retries denied at the base\n"
    "failure rate, latency added.  Needs the erlang model.\n";

/* The retry budget of the budget escape: Beyer et al., Site Reliability
 * Engineering, ch. 21's 10 % per client. */
#define ESCAPE_BUDGET 0.1
/* The damp escape: each retry is sent at this share of the rate of the
 * attempt before it. */
#define ESCAPE_DAMP 0.5

static const ms_cli_option options[] = {
    MS_CLI_SHARED(MS_OPT_LOAD),
    MS_CLI_SHARED(MS_OPT_OBJECTIVE),
    {"--plot", "FILE", MS_OPT_PLOT,
     "draw each escape's band, recovery to tipping load, into FILE (.svg or "
     ".png; gnuplot)"},
    MS_CLI_SHARED(MS_OPT_FORMAT),
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

typedef enum {
  ESC_NONE,
  ESC_BOUND,
  ESC_BUDGET,
  ESC_RANDOMIZE,
  ESC_DISCARD,
  ESC_DAMP,
  ESC_COUNT
} escape_kind;

static const char *const escape_names[ESC_COUNT] = {
    "none", "bound", "budget", "randomize", "discard", "damp"};

static const char *const escape_what[ESC_COUNT] = {
    "the service as given",
    "queue limit K = throughput x latency objective",
    "retries at most 10 % of requests",
    "backoff with full jitter over the timeout",
    "drop work whose client gave up (K = c mu T)",
    "each retry at half the rate of the attempt before",
};

typedef struct {
  escape_kind kind;
  ms_service_params params; /* the modified service (damp: the baseline) */
  long queue_limit;         /* bound, discard: K; else -1 */
  double tipping, recovery, band;
  double stall; /* s; +inf: no stall latches; NaN: not known (stall_note) */
  ms_tolerance_kind stall_kind; /* when stall is a number */
  char stall_note[64];          /* why the stall tolerance is not known */
  double rejected, denied, added_latency; /* costs; NaN: not known */
  char note[224]; /* why the model cannot evaluate this escape, or "" */
} escape;

/*
 * escape_stall_tolerance: the longest full stall (all servers gone, the
 * clients still sending and retrying) the modified service survives at
 * the normal load `load` (req/s), by ms_trigger_tolerance (the fluid
 * engine with queue memory, bisection on the stall; model/sim.h).
 * Randomize is the escape whose only effect is here: its clients wait a
 * full-jitter backoff, uniform on [0, T], before each retry, so a stall's
 * retries spread out instead of arriving together (the equilibria do not
 * move).  Returns the tolerance in s, +inf when no stall latches (below
 * the recovery load), and NaN with *kind untouched when the fluid engine
 * cannot run this service (damp, which it does not model; a queue limit or
 * a policy it refuses), *why saying so.
 */
static double escape_stall_tolerance(const escape *e, double load,
                                     ms_tolerance_kind *kind,
                                     const char **why) {
  *why = NULL;
  if (e->kind == ESC_DAMP) {
    *why = "the fluid engine does not damp clients";
    return NAN;
  }
  /* a queue limit (bound, discard), which the fluid engine does not
   * model: the landscape's answer where it needs no search */
  if (e->params.model.has_queue_limit) {
    if (load < e->recovery) {
      *kind = MS_TOLERANCE_UNBOUNDED;
      return INFINITY;
    }
    if (load > e->tipping) {
      *kind = MS_TOLERANCE_OVERLOADED;
      return 0.0;
    }
    *why = "the fluid engine has no queue limit";
    return NAN;
  }
  ms_sim_config cfg;
  ms_sim_config_init(&cfg, &e->params);
  cfg.scenario.offered_load = load;
  if (e->kind == ESC_RANDOMIZE) {
    cfg.backoff.kind = MS_BACKOFF_FULL_JITTER;
    cfg.backoff.base = e->params.model.timeout;
    cfg.backoff.cap = e->params.model.timeout;
    cfg.backoff.multiplier = 1.0;
  }
  ms_tolerance_query q = {.kind = MS_TRIGGER_SERVERS, .servers = 0};
  ms_tolerance t;
  ms_error err;
  if (ms_trigger_tolerance(&cfg, &q, &t, &err) != MS_OK) {
    *why = "the fluid engine cannot run it";
    return NAN;
  }
  *kind = t.kind;
  return t.kind == MS_TOLERANCE_UNBOUNDED ? INFINITY : t.tolerance;
}

/* lambda(x) of the damped service: the offered load whose requests send x
 * attempts/s when each retry goes out at ESCAPE_DAMP of the rate of the
 * attempt before it, i.e. when the chain continues with probability
 * ESCAPE_DAMP p instead of p: A(ESCAPE_DAMP p(x)) (doc/design.md §1.11). */
static int damp_lambda(const ms_service_params *s, double x, double *lambda,
                       ms_error *err) {
  double p;
  int rc = ms_failure_probability(&s->model, x, &p, err);
  if (rc != MS_OK)
    return rc;
  return ms_offered_load_given(s, x, ESCAPE_DAMP * p, lambda, err);
}

/* The extremum of the damped lambda(x) in [lo, hi] (a maximum when sign is
 * 1, a minimum when -1) by golden-section search: lambda is unimodal in a
 * bracket of three grid points around a local extremum. */
static int golden(const ms_service_params *s, double lo, double hi, int sign,
                  double *best, ms_error *err) {
  const double g = 0.5 * (sqrt(5.0) - 1.0);
  double a = lo, b = hi, c = b - g * (b - a), d = a + g * (b - a), fc, fd;
  int rc;
  if ((rc = damp_lambda(s, c, &fc, err)) != MS_OK ||
      (rc = damp_lambda(s, d, &fd, err)) != MS_OK)
    return rc;
  for (int i = 0; i < 200 && b - a > 1e-15 * b; i++) {
    if (sign * fc > sign * fd) {
      b = d, d = c, fd = fc, c = b - g * (b - a);
      rc = damp_lambda(s, c, &fc, err);
    } else {
      a = c, c = d, fc = fd, d = a + g * (b - a);
      rc = damp_lambda(s, d, &fd, err);
    }
    if (rc != MS_OK)
      return rc;
  }
  *best = sign * fc > sign * fd ? fc : fd;
  return MS_OK;
}

#define DAMP_GRID 1400

/* The tipping and recovery loads of the damped service: the first local
 * maximum of its lambda(x) and the minimum after it, found on a grid like
 * the landscape's (uniform below c mu, then geometrically closer to c mu,
 * then beyond it for a bounded queue) and refined by golden section.
 * Without a fold, both are lambda(c mu). */
static int damp_fold(const ms_service_params *s, double *tip, double *rec,
                     ms_error *err) {
  static double x[DAMP_GRID], f[DAMP_GRID];
  double cmu = ms_saturation_load(&s->model);
  int n = 0;
  for (int i = 1; i <= 600; i++)
    x[n++] = cmu * i / 601.0;
  for (int i = 0; i < 400; i++)
    x[n++] = cmu * (1.0 - pow(10.0, -3.0 - 12.0 * i / 399.0));
  x[n++] = cmu;
  for (int i = 0; i < 390; i++)
    x[n++] = cmu * (1.0 + pow(10.0, -12.0 + 18.0 * i / 389.0));
  for (int i = 0; i < n; i++) {
    int rc = damp_lambda(s, x[i], &f[i], err);
    if (rc != MS_OK)
      return rc;
  }
  int imax = -1, imin = -1;
  for (int i = 1; i + 1 < n && imax < 0; i++)
    if (f[i] >= f[i - 1] && f[i] > f[i + 1])
      imax = i;
  for (int i = imax + 1; imax >= 0 && i + 1 < n && imin < 0; i++)
    if (f[i] <= f[i - 1] && f[i] < f[i + 1])
      imin = i;
  if (imax < 0 || imin < 0) {
    int rc = damp_lambda(s, cmu, tip, err);
    *rec = *tip;
    return rc;
  }
  int rc = golden(s, x[imax - 1], x[imax + 1], 1, tip, err);
  if (rc == MS_OK)
    rc = golden(s, x[imin - 1], x[imin + 1], -1, rec, err);
  return rc;
}

/* The share of attempts the queue limit rejects at the healthy
 * equilibrium of the normal load: P_block of M/M/c/K (doc/design.md §1.9);
 * NaN when that load is above the escape's tipping load (no healthy
 * equilibrium). */
static int rejected_share(const escape *e, const ms_landscape *ls, double load,
                          double *share, ms_error *err) {
  *share = NAN;
  if (load > ls->tipping_load)
    return MS_OK;
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n, rc = ms_equilibria(ls, load, eq, &n, err);
  if (rc != MS_OK)
    return rc;
  const ms_failure_model *m = &e->params.model;
  double a = eq[0].effective_load / m->service_rate, lnb;
  if (a < MS_MMCK_MIN_TRAFFIC) {
    *share = 0.0;
    return MS_OK;
  }
  rc = ms_mmck_ln_block(m->servers, m->queue_limit, a, &lnb, err);
  if (rc == MS_OK)
    *share = exp(lnb);
  return rc;
}

/* The modified service of escape k. */
static void escape_params(escape *e, const ms_service_params *base,
                          double latency_objective) {
  e->params = *base;
  e->queue_limit = -1;
  ms_failure_model *m = &e->params.model;
  double cmu = ms_saturation_load(m);
  switch (e->kind) {
  case ESC_BOUND:
  case ESC_DISCARD: {
    double d = e->kind == ESC_BOUND ? latency_objective : m->timeout;
    double k = round(cmu * d);
    e->queue_limit = (long)fmin(k, (double)MS_MAX_QUEUE_LIMIT);
    m->has_queue_limit = true;
    m->queue_limit = e->queue_limit;
    break;
  }
  case ESC_BUDGET: {
    ms_retry_policy *p = &e->params.policy;
    p->kind = MS_POLICY_COUNT;
    p->has_budget = true;
    p->retry_budget = ESCAPE_BUDGET;
    break;
  }
  default:
    break;
  }
}

/* The legitimate retries denied at the base failure rate: the share of
 * the retries the service as given sends, A(p) - 1, that the escape does
 * not, at p = base (or, at base 0, in the limit p -> 0, taken at 1e-9). */
static int denied_share(const escape *e, const ms_service_params *base,
                        double load, double *denied, ms_error *err) {
  double p = fmax(base->model.base_failure, 1e-9), a0, a1;
  int rc = ms_amplification_at(base, p, load, &a0, err);
  if (rc != MS_OK)
    return rc;
  if (e->kind == ESC_DAMP)
    rc = ms_amplification_at(base, ESCAPE_DAMP * p, load, &a1, err);
  else
    rc = ms_amplification_at(&e->params, p, load, &a1, err);
  if (rc != MS_OK)
    return rc;
  *denied = a0 > 1.0 ? fmax(0.0, 1.0 - (a1 - 1.0) / (a0 - 1.0)) : 0.0;
  return MS_OK;
}

static int escape_eval(escape *e, const ms_service_params *base,
                       const ms_landscape *base_ls, double load,
                       double latency_objective, ms_error *err) {
  escape_params(e, base, latency_objective);
  ms_landscape ls;
  int rc = ms_landscape_build(&e->params, &ls, err);
  if (rc != MS_OK)
    return rc;
  if (e->kind == ESC_DAMP) {
    if ((rc = damp_fold(base, &e->tipping, &e->recovery, err)) != MS_OK)
      return rc;
  } else {
    e->tipping = ls.tipping_load;
    e->recovery = ls.recovery_load;
  }
  e->band = e->tipping - e->recovery;
  const char *why;
  e->stall_kind = MS_TOLERANCE_BOUNDED;
  e->stall = escape_stall_tolerance(e, load, &e->stall_kind, &why);
  if (why != NULL)
    snprintf(e->stall_note, sizeof e->stall_note, "stall: %s", why);
  e->rejected = 0.0;
  e->added_latency = 0.0;
  if (e->queue_limit >= 0 &&
      (rc = rejected_share(e, &ls, load, &e->rejected, err)) != MS_OK)
    return rc;
  if (e->kind == ESC_RANDOMIZE) {
    /* full jitter over [0, T]: T/2 of mean delay per retry, A - 1 retries
     * per request at the normal load's healthy equilibrium */
    e->added_latency = NAN;
    if (load <= base_ls->tipping_load) {
      ms_equilibrium eq[MS_MAX_EQUILIBRIA];
      int n;
      if ((rc = ms_equilibria(base_ls, load, eq, &n, err)) != MS_OK)
        return rc;
      e->added_latency =
          (eq[0].amplification - 1.0) * 0.5 * base->model.timeout;
    }
  }
  return denied_share(e, base, load, &e->denied, err);
}

/* A row the model cannot evaluate: every number n/a, and why. */
static void escape_unmodelled(escape *e, const char *why) {
  e->tipping = e->recovery = e->band = e->stall = NAN;
  e->rejected = e->denied = e->added_latency = NAN;
  snprintf(e->note, sizeof e->note, "not modelled: %s", why);
}

/* "12.3 %", or "n/a" */
static const char *pct(char buf[32], double v) {
  if (isnan(v))
    return "n/a";
  if (v > 0 && v < 1e-5)
    return "<0.001 %";
  snprintf(buf, 32, "%.3g %%", 100 * v);
  return buf;
}

static const char *num(char buf[32], double v, const char *unit) {
  if (isnan(v))
    return "n/a";
  snprintf(buf, 32, "%.5g%s", v, unit);
  return buf;
}

/* The stall tolerance: "any" when no stall latches, ">= X" when none up to
 * the search's longest did. */
static const char *stall_text(char buf[32], const escape *e) {
  if (isinf(e->stall))
    return "any";
  if (!isnan(e->stall) && e->stall_kind == MS_TOLERANCE_BEYOND) {
    snprintf(buf, 32, ">=%.3g", e->stall);
    return buf;
  }
  return num(buf, e->stall, "");
}

/* milliseconds: "<0.001" rather than 1e-8 */
static const char *ms_text(char buf[32], double v) {
  if (isnan(v))
    return "n/a";
  if (v > 0 && v < 1e-3)
    return "<0.001";
  snprintf(buf, 32, "%.3g", v);
  return buf;
}

static void write_text(const ms_cli_model *m, const escape *e, double load,
                       double latency_objective) {
  printf("service      %s\n", m->label);
  printf("normal load  %.6g req/s; latency objective %.4g s\n\n", load,
         latency_objective);
  printf("%-10s %10s %10s %10s %8s %9s %9s %9s\n", "escape", "tipping",
         "recovery", "band", "stall", "rejected", "denied", "latency");
  printf("%-10s %10s %10s %10s %8s %9s %9s %9s\n", "", "req/s", "req/s",
         "req/s", "s", "", "retries", "added ms");
  for (int i = 0; i < ESC_COUNT; i++) {
    char b[7][32];
    printf("%-10s %10s %10s %10s %8s %9s %9s %9s\n", escape_names[i],
           num(b[0], e[i].tipping, ""), num(b[1], e[i].recovery, ""),
           num(b[2], e[i].band, ""), stall_text(b[3], &e[i]),
           pct(b[4], e[i].rejected), pct(b[5], e[i].denied),
           ms_text(b[6], 1e3 * e[i].added_latency));
  }
  printf("\n");
  for (int i = 1; i < ESC_COUNT; i++) {
    printf("%-10s %s", escape_names[i], escape_what[i]);
    if (e[i].queue_limit >= 0)
      printf(": K = %ld", e[i].queue_limit);
    if (e[i].note[0])
      printf(" (%s)", e[i].note);
    else if (e[i].stall_note[0])
      printf(" (%s)", e[i].stall_note);
    printf("\n");
  }
}

static void write_json(const ms_cli_model *m, const escape *e, double load,
                       double latency_objective) {
  ms_json j;
  ms_cli_json_begin(&j, 3, m);
  ms_json_number(&j, "normal_load", load);
  ms_json_number(&j, "latency_objective", latency_objective);
  ms_json_begin_array(&j, "escapes");
  for (int i = 0; i < ESC_COUNT; i++) {
    ms_json_begin_object(&j, NULL);
    ms_json_string(&j, "escape", escape_names[i]);
    ms_json_number(&j, "tipping_load", e[i].tipping);
    ms_json_number(&j, "recovery_load", e[i].recovery);
    ms_json_number(&j, "band_width", e[i].band);
    if (isinf(e[i].stall))
      ms_json_null(&j, "stall_tolerance");
    else
      ms_json_number(&j, "stall_tolerance", e[i].stall);
    if (isnan(e[i].stall))
      ms_json_null(&j, "stall_tolerance_kind");
    else
      ms_json_string(&j, "stall_tolerance_kind",
                     ms_tolerance_kind_name(e[i].stall_kind));
    if (e[i].queue_limit >= 0)
      ms_json_int(&j, "queue_limit", e[i].queue_limit);
    else
      ms_json_null(&j, "queue_limit");
    ms_json_number(&j, "rejected_share", e[i].rejected);
    ms_json_number(&j, "denied_retry_share", e[i].denied);
    ms_json_number(&j, "added_latency", e[i].added_latency);
    if (e[i].note[0])
      ms_json_string(&j, "note", e[i].note);
    else
      ms_json_null(&j, "note");
    ms_json_end_object(&j);
  }
  ms_json_end_array(&j);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

/* Each escape's band as a thick vertical bar from its recovery to its
 * tipping load, at x = 1 ... 6, the normal load a dashed line across. */
static int draw(const ms_cli_model *m, const escape *e, double load,
                const char *path) {
  static const char *const colors[ESC_COUNT] = {MS_PLOT_GREY,   MS_PLOT_BLUE,
                                                MS_PLOT_GREEN,  MS_PLOT_SKY,
                                                MS_PLOT_ORANGE, MS_PLOT_PURPLE};
  double bx[ESC_COUNT][2], by[ESC_COUNT][2];
  char titles[ESC_COUNT][96];
  ms_plot_series s[ESC_COUNT + 2];
  double tx[ESC_COUNT], ty[ESC_COUNT], ry[ESC_COUNT];
  double top = 0;
  for (int i = 0; i < ESC_COUNT; i++) {
    bx[i][0] = bx[i][1] = i + 1;
    by[i][0] = e[i].recovery;
    by[i][1] = e[i].tipping;
    top = fmax(top, e[i].tipping);
    tx[i] = i + 1;
    ty[i] = e[i].tipping;
    ry[i] = e[i].recovery;
    char stall[32];
    if (isnan(e[i].tipping)) {
      snprintf(titles[i], sizeof titles[i], "%s: not modelled",
               escape_names[i]);
    } else {
      snprintf(titles[i], sizeof titles[i],
               "%s: %.4g to %.4g req/s, stall %s%s", escape_names[i],
               e[i].recovery, e[i].tipping, stall_text(stall, &e[i]),
               isnan(e[i].stall) || isinf(e[i].stall) ? "" : " s");
    }
    s[i] = (ms_plot_series){.title = titles[i],
                            .style = MS_PLOT_SOLID,
                            .color = colors[i],
                            .width = 7,
                            .n = 2,
                            .x = bx[i],
                            .y = by[i]};
  }
  /* the ends as points too, so that a band of zero width shows */
  s[ESC_COUNT] = (ms_plot_series){.title = "tipping load",
                                  .style = MS_PLOT_POINTS,
                                  .color = "#000000",
                                  .n = ESC_COUNT,
                                  .x = tx,
                                  .y = ty};
  s[ESC_COUNT + 1] = (ms_plot_series){.title = "recovery load",
                                      .style = MS_PLOT_OPEN_POINTS,
                                      .color = "#000000",
                                      .n = ESC_COUNT,
                                      .x = tx,
                                      .y = ry};
  ms_plot_marker mk = {.at = load,
                       .text = "normal load",
                       .color = MS_PLOT_VERMILION,
                       .on_axis = true};
  char sub[160];
  snprintf(sub, sizeof sub,
           "bar: the bistable band, from the recovery load up to the tipping "
           "load (%s)",
           m->name[0] ? m->name : "service");
  ms_plot p;
  ms_plot_init(&p);
  p.title = "Escapes from the retry loop";
  p.subtitle = sub;
  p.xlabel = "escape";
  p.xtic_names = escape_names;
  p.n_xtic_names = ESC_COUNT;
  p.ylabel = "offered load (req/s)";
  p.xmin = 0.5;
  p.xmax = ESC_COUNT + 0.5;
  p.ymin = 0;
  p.ymax = 1.1 * top;
  p.legend = "below";
  p.legend_columns = 2;
  p.series = s;
  p.n_series = ESC_COUNT + 2;
  p.markers = &mk;
  p.n_markers = 1;
  char err[600];
  if (ms_plot_write(&p, path, err, sizeof err) != 0)
    return ms_cli_fail("%s", err);
  return MS_EXIT_OK;
}

static int run(ms_cli_model *m, int argc, char **argv) {
  ms_cli_shared a;
  bool help = false;
  ms_cli_shared_init(&a, MS_FORMAT_TEXT, MS_FORMATS_TEXT_JSON);
  int r = ms_cli_parse(argc, argv, &syntax, m, ms_cli_shared_option, &a, &help,
                       NULL);
  if (r != 0 || help)
    return r;
  if ((r = ms_cli_model_resolve(m, true)) != 0)
    return r;
  const ms_service_params *base = &m->params;
  if (base->model.kind != MS_MODEL_ERLANG)
    return ms_cli_usage("escapes needs the erlang model (--servers, "
                        "--service-time, --timeout): the bound and discard "
                        "escapes are queues");
  ms_landscape ls;
  ms_error err;
  if (ms_landscape_build(base, &ls, &err) != MS_OK)
    return ms_cli_fail("model: %s", err.msg);
  double load = isnan(a.load) ? 0.5 * ls.tipping_load : a.load;
  double lo =
      isnan(a.latency_objective) ? base->model.timeout : a.latency_objective;
  if (round(ms_saturation_load(&base->model) * lo) > MS_MAX_QUEUE_LIMIT)
    return ms_cli_usage("--latency-objective: %g s gives a queue of more "
                        "than %ld places",
                        lo, MS_MAX_QUEUE_LIMIT);
  escape e[ESC_COUNT];
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "escapes", ESC_COUNT);
  for (int i = 0; i < ESC_COUNT; i++) {
    e[i].kind = (escape_kind)i;
    e[i].note[0] = '\0';
    e[i].stall_note[0] = '\0';
    if (escape_eval(&e[i], base, &ls, load, lo, &err) != MS_OK) {
      if (i == ESC_NONE) {
        ms_cli_progress_end(&prog);
        return ms_cli_fail("model: %s", err.msg);
      }
      /* a modification the model refuses for this service (a queue limit
       * under Envoy's budget): a row of n/a that says why */
      escape_unmodelled(&e[i], err.msg);
    }
    ms_cli_progress_update(&prog, (size_t)i + 1);
  }
  ms_cli_progress_end(&prog);
  if (a.format == MS_FORMAT_JSON)
    write_json(m, e, load, lo);
  else
    write_text(m, e, load, lo);
  if (a.plot != NULL && (r = draw(m, e, load, a.plot)) != 0)
    return r;
  return ms_cli_finish_output(MS_EXIT_OK);
}

int ms_cmd_escapes(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
