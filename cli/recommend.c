/* SPDX-License-Identifier: MIT */
/*
 * metastable recommend: the settings under which a service is safe at a
 * peak load, stable at every offered load up to (1 + margin) peak so that
 * any storm ends with its trigger (model/recommend.c; doc/design.md §1.3-1.4).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "json.h"

static const char usage[] =
    "Usage: metastable recommend [MODEL OPTIONS] --load L [--margin M]\n"
    "                            [--max-hazard H] [--hazard-horizon D]\n"
    "                            [--format text|json]\n"
    "\n"
    "The settings under which the service is safe at its peak offered load\n"
    "L: its state is stable at every offered load up to (1 + M) L, so no\n"
    "collapsed equilibrium exists there and a storm ends once its trigger\n"
    "is gone; that is, its recovery load exceeds (1 + M) L.  Each answer\n"
    "changes one setting of the configured service and gives the tipping\n"
    "and recovery loads it yields: the largest safe retry count (0 to 100),\n"
    "the largest safe retry budget, token ratio and named policy knob at\n"
    "the configured retry count, the fewest safe servers (erlang) or the\n"
    "least safe capacity, and where the safe timeouts that reach the\n"
    "longest begin (erlang: the longest timeouts fail least below\n"
    "saturation, so there is no longest safe one; shorter ones may be safe\n"
    "too).  Safe also means a storm hazard at the peak within the horizon\n"
    "of at most H (a prediction of the model, doc/design.md 1.12); each\n"
    "answer shows its hazard.  Then the retries and servers under that\n"
    "target alone: storms would outlast their trigger, but are unlikely\n"
    "to start by themselves at the peak.\n";

static const ms_cli_option options[] = {
    MS_CLI_SHARED(MS_OPT_LOAD),       MS_CLI_SHARED(MS_OPT_MARGIN),
    MS_CLI_SHARED(MS_OPT_MAX_HAZARD), MS_CLI_SHARED(MS_OPT_HAZARD_HORIZON),
    MS_CLI_SHARED(MS_OPT_FORMAT),     MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

/* One row of the answers. */
typedef struct {
  const char *key;   /* JSON key: "max_safe_retries" */
  const char *label; /* text: "retries" */
  bool share;        /* written as a percentage in text */
  const char *unit;  /* text unit after the value, or "" */
  bool has;          /* computed for this service */
  ms_recommend_answer a;
  ms_cli_hazard hz; /* the storm hazard at the peak with the answer */
} row;

/* The answers under the hazard target alone (doc/design.md §1.12): the
 * most retries, the fewest servers whose storm hazard at the peak within
 * the horizon is at most the target. */
typedef struct {
  bool has;         /* erlang: searched */
  bool found;       /* value meets the target */
  bool at_bound;    /* value is the end of the range searched */
  double value;     /* retries or servers */
  ms_cli_hazard hz; /* at the peak, with value */
  double tipping;   /* req/s, of the service with value */
  double recovery;  /* req/s, likewise */
} hazard_row;

/* The service as configured at the peak, and the two answers. */
typedef struct {
  ms_cli_hazard peak; /* as configured */
  hazard_row retries, servers;
  char why[256]; /* not modelled: why (the answers have !has) */
} hazard_answers;

/* x to `digits` significant digits, rounded towards the safe side: down
 * for a largest safe value (up = false), up for a smallest, so that the
 * printed number typed back in is still safe (a fresh-user trial found
 * "at most 3.355 %" unsafe: the answer was 3.35498 %). */
static void fmt_directed(char *buf, size_t len, double x, int digits, bool up) {
  snprintf(buf, len, "%.*g", digits, x);
  double p = strtod(buf, NULL);
  if (!isfinite(x) || x == 0 || p == x || (up ? p > x : p < x))
    return;
  double step = pow(10.0, floor(log10(fabs(p))) - digits + 1);
  snprintf(buf, len, "%.*g", digits, up ? p + step : p - step);
}

static void fmt_value(const row *w, char *buf, size_t len) {
  char num[40];
  bool up = strncmp(w->key, "min_", 4) == 0;
  if (w->share) {
    fmt_directed(num, sizeof num, 100 * w->a.value, 4, up);
    snprintf(buf, len, "%s %%", num);
  } else {
    fmt_directed(num, sizeof num, w->a.value, 6, up);
    snprintf(buf, len, "%s%s%s", num, *w->unit ? " " : "", w->unit);
  }
}

/* A hazard for the table: "0 %", "28 %", "-" when not modelled. */
static const char *hazard_cell(char *buf, size_t len, const ms_cli_hazard *h) {
  if (!h->ok)
    snprintf(buf, len, "-");
  else if (h->hazard > 0.999 && h->hazard < 1)
    snprintf(buf, len, "> 99.9 %%");
  else
    snprintf(buf, len, "%.3g %%", 100 * h->hazard);
  return buf;
}

static void write_hazard_row(const char *label, const char *dir,
                             const hazard_row *h) {
  char v[48], c[32];
  if (!h->has)
    return;
  if (h->found)
    snprintf(v, sizeof v, "%s %.0f%s", dir, h->value,
             h->at_bound ? " (bound)" : "");
  else
    snprintf(v, sizeof v, "none");
  printf("  %-22s %-28s %14.6g %14.6g %14s\n", label, v, h->tipping,
         h->recovery, h->found ? hazard_cell(c, sizeof c, &h->hz) : "-");
}

static void write_hazard_text(const ms_cli_shared *a, const hazard_answers *h) {
  char mx[96];
  ms_cli_hazard_phrase(mx, sizeof mx, a->max_hazard, a->hazard_horizon);
  printf("\nUnder the hazard target alone, at most %s at the peak: a storm "
         "would outlast its trigger, but is unlikely to start by itself\n",
         mx);
  if (!h->retries.has && !h->servers.has) {
    printf("  not modelled: %s\n", h->why);
    return;
  }
  printf("  %-22s %-28s %14s %14s %14s\n", "setting", "answer", "tipping load",
         "recovery load", "hazard");
  write_hazard_row("retries (hazard)", "at most", &h->retries);
  write_hazard_row("servers (hazard)", "at least", &h->servers);
}

static void write_text(const ms_cli_model *m, const ms_cli_shared *a, bool safe,
                       const ms_landscape *ls, const row *rows, int n,
                       const hazard_answers *h) {
  printf("service        %s\n", m->label);
  printf("peak load      %.6g req/s, margin %.4g %%: safe means stable up to "
         "%.6g req/s\n",
         a->load, 100 * a->margin, (1 + a->margin) * a->load);
  printf("as configured  %s: tipping load %.6g req/s, recovery load %.6g "
         "req/s\n",
         safe ? "safe" : "not safe", ls->tipping_load, ls->recovery_load);
  char t[64], hz[96], mx[96];
  ms_cli_hazard_phrase(mx, sizeof mx, a->max_hazard, a->hazard_horizon);
  if (!h->peak.ok)
    printf("storm hazard   not modelled: %s\n", h->why);
  else if (h->peak.never)
    printf("storm hazard   none at the peak (a prediction): no storm starts "
           "by itself; target %s\n",
           mx);
  else
    printf(
        "storm hazard   at the peak a storm %s, %s (a "
        "prediction; target %s)\n",
        ms_cli_every(t, sizeof t, h->peak.seconds),
        ms_cli_hazard_phrase(hz, sizeof hz, h->peak.hazard, a->hazard_horizon),
        mx);
  printf("\n  %-22s %-28s %14s %14s %14s\n", "setting", "answer",
         "tipping load", "recovery load", "hazard");
  for (int i = 0; i < n; i++) {
    const row *w = &rows[i];
    if (!w->has)
      continue;
    char v[48], ans[80];
    fmt_value(w, v, sizeof v);
    if (!w->a.safe)
      snprintf(ans, sizeof ans, "none (even %s is not)", v);
    else
      /* the direction from the key: a max_ answer is the largest safe
       * value, a min_ answer the smallest */
      snprintf(ans, sizeof ans, "%s %s%s",
               strncmp(w->key, "max_", 4) == 0 ? "at most" : "at least", v,
               w->a.at_bound ? " (bound)" : "");
    char c[32];
    printf("  %-22s %-28s %14.6g %14.6g %14s\n", w->label, ans,
           w->a.tipping_load, w->a.recovery_load,
           hazard_cell(c, sizeof c, &w->hz));
  }
  write_hazard_text(a, h);
}

static void json_hazard_row(ms_json *j, const char *key, const hazard_row *h) {
  if (!h->has)
    return;
  ms_json_begin_object(j, key);
  ms_json_number(j, "value", h->value);
  ms_json_bool(j, "found", h->found);
  ms_json_bool(j, "at_bound", h->at_bound);
  ms_json_number(j, "storm_hazard", h->hz.hazard);
  ms_json_number(j, "time_to_storm", h->hz.seconds);
  ms_json_number(j, "tipping_load", h->tipping);
  ms_json_number(j, "recovery_load", h->recovery);
  ms_json_end_object(j);
}

static void write_json(const ms_cli_model *m, const ms_cli_shared *a, bool safe,
                       const ms_landscape *ls, const row *rows, int n,
                       const hazard_answers *h) {
  ms_json j;
  ms_cli_json_begin(&j, 2, m);
  ms_json_number(&j, "peak_load", a->load);
  ms_json_number(&j, "margin", a->margin);
  ms_json_number(&j, "safe_load", (1 + a->margin) * a->load);
  ms_json_bool(&j, "safe", safe);
  ms_json_number(&j, "tipping_load", ls->tipping_load);
  ms_json_number(&j, "recovery_load", ls->recovery_load);
  ms_json_number(&j, "max_hazard", a->max_hazard);
  ms_json_number(&j, "hazard_horizon", a->hazard_horizon);
  ms_json_number(&j, "time_to_storm", h->peak.seconds);
  ms_json_number(&j, "storm_hazard", h->peak.hazard);
  if (h->peak.ok)
    ms_json_null(&j, "hazard_note");
  else
    ms_json_string(&j, "hazard_note", h->why);
  for (int i = 0; i < n; i++) {
    if (!rows[i].has)
      continue;
    if (rows[i].a.safe)
      ms_json_number(&j, rows[i].key, rows[i].a.value);
    else
      ms_json_null(&j, rows[i].key);
  }
  if (h->retries.has && h->retries.found)
    ms_json_number(&j, "max_retries_under_hazard", h->retries.value);
  else if (h->retries.has)
    ms_json_null(&j, "max_retries_under_hazard");
  if (h->servers.has && h->servers.found)
    ms_json_number(&j, "min_servers_under_hazard", h->servers.value);
  else if (h->servers.has)
    ms_json_null(&j, "min_servers_under_hazard");
  ms_json_begin_object(&j, "details");
  for (int i = 0; i < n; i++) {
    const row *w = &rows[i];
    if (!w->has)
      continue;
    ms_json_begin_object(&j, w->key);
    ms_json_number(&j, "value", w->a.value);
    ms_json_bool(&j, "safe", w->a.safe);
    ms_json_bool(&j, "at_bound", w->a.at_bound);
    ms_json_number(&j, "tipping_load", w->a.tipping_load);
    ms_json_number(&j, "recovery_load", w->a.recovery_load);
    ms_json_number(&j, "storm_hazard", w->hz.hazard);
    ms_json_number(&j, "time_to_storm", w->hz.seconds);
    ms_json_end_object(&j);
  }
  json_hazard_row(&j, "max_retries_under_hazard", &h->retries);
  json_hazard_row(&j, "min_servers_under_hazard", &h->servers);
  ms_json_end_object(&j);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

/* Each setting's answer into rows[i].a, searched with the others as
 * configured (model/recommend.c).  Returns 0, or an exit code with the message
 * printed (a model error, Ctrl-C). */
static int search(const ms_service_params *s, const ms_cli_shared *a, row *rows,
                  const ms_param *knobs, int n) {
  ms_error err;
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "recommend", (size_t)n);
  ms_cli_interrupt_catch();
  for (int i = 0; i < n; i++) {
    ms_cli_progress_update(&prog, (size_t)i);
    if (ms_cli_interrupted()) {
      ms_cli_progress_end(&prog);
      return ms_cli_interrupt_exit("%d of %d settings searched; nothing "
                                   "written",
                                   i, n);
    }
    if (!rows[i].has)
      continue;
    int st;
    if (knobs[i] == MS_PARAM_RETRIES)
      st = ms_recommend_max_retries(s, a->load, a->margin, &rows[i].a, &err);
    else if (knobs[i] == MS_PARAM_SERVERS)
      st = ms_recommend_min_servers(s, a->load, a->margin, &rows[i].a, &err);
    else
      st = ms_recommend_knob(s, knobs[i],
                             knobs[i] == MS_PARAM_CAPACITY ||
                                 knobs[i] == MS_PARAM_TIMEOUT,
                             a->load, a->margin, &rows[i].a, &err);
    if (st != MS_OK) {
      ms_cli_progress_end(&prog);
      return ms_cli_fail("model: %s: %s", rows[i].label, err.msg);
    }
  }
  ms_cli_progress_end(&prog);
  return 0;
}

/* The storm hazard at the peak of each answer's service. */
static void rows_hazard(const ms_service_params *s, const ms_cli_shared *a,
                        row *rows, const ms_param *knobs, int n) {
  for (int i = 0; i < n; i++) {
    ms_service_params t;
    rows[i].hz = (ms_cli_hazard){.seconds = NAN, .hazard = NAN};
    if (!rows[i].has || ms_cli_interrupted())
      continue;
    if (ms_recommend_apply(s, knobs[i], rows[i].a.value, &t, NULL) == MS_OK)
      ms_cli_hazard_at(&t, a->load, a->hazard_horizon, &rows[i].hz);
  }
}

/* The hazard row of service t (the answer value): its hazard and loads. */
static void hazard_row_of(const ms_service_params *t, double value,
                          const ms_cli_shared *a, hazard_row *h) {
  ms_landscape ls;
  h->value = value;
  ms_cli_hazard_at(t, a->load, a->hazard_horizon, &h->hz);
  h->tipping = h->recovery = NAN;
  if (ms_landscape_build(t, &ls, NULL) == MS_OK) {
    h->tipping = ls.tipping_load;
    h->recovery = ls.recovery_load;
  }
  h->found = h->hz.ok && h->hz.hazard <= a->max_hazard && a->load < h->tipping;
}

/* Whether the peak is below service t's tipping load: past it the fluid
 * model storms at once whatever the chain's time (a pool barely past its
 * fold reads "once every 31 weeks": trial of issue 36), so no hazard
 * answer may stand there. */
static bool below_fold(const ms_service_params *t, const ms_cli_shared *a) {
  ms_landscape ls;
  return ms_landscape_build(t, &ls, NULL) == MS_OK && a->load < ls.tipping_load;
}

/* Whether service t meets the hazard target at the peak, below its fold. */
static bool under_target(const ms_service_params *t, const ms_cli_shared *a) {
  if (!below_fold(t, a)) /* the landscape first: no walk past the fold */
    return false;
  ms_cli_hazard h;
  ms_cli_hazard_at(t, a->load, a->hazard_horizon, &h);
  return h.ok && h.hazard <= a->max_hazard;
}

/* The retries and servers under the hazard target alone: every retry
 * count examined, as ms_recommend_max_retries does; the servers by
 * bisection up to the fewest stable ones (whose hazard is 0), assuming
 * more servers never raise the hazard. */
static void hazard_search(const ms_service_params *s, const ms_cli_shared *a,
                          const row *servers, hazard_answers *h) {
  memset(h, 0, sizeof *h);
  ms_cli_hazard_at(s, a->load, a->hazard_horizon, &h->peak);
  if (!h->peak.ok) {
    snprintf(h->why, sizeof h->why, "%s", h->peak.why);
    return;
  }
  ms_service_params t = *s;
  int best = -1, n = ms_recommend_retry_counts(s);
  for (int r = 0; r < n && !ms_cli_interrupted(); r++) {
    t.policy.retries = r;
    if (under_target(&t, a))
      best = r;
  }
  h->retries.has = true;
  t.policy.retries = best < 0 ? 0 : best;
  hazard_row_of(&t, t.policy.retries, a, &h->retries);
  h->retries.at_bound = best == n - 1 && n > 1;
  if (!servers->has)
    return;
  h->servers.has = true;
  t = *s;
  long hi = (long)servers->a.value, lo = 0; /* lo: not under, hi: under */
  t.model.servers = hi;
  if (!under_target(&t, a)) {
    hazard_row_of(&t, (double)hi, a, &h->servers);
    h->servers.found = false;
    return;
  }
  while (hi - lo > 1 && !ms_cli_interrupted()) {
    long mid = lo + (hi - lo) / 2;
    t.model.servers = mid;
    if (under_target(&t, a))
      hi = mid;
    else
      lo = mid;
  }
  t.model.servers = hi;
  hazard_row_of(&t, (double)hi, a, &h->servers);
}

static int run(ms_cli_model *m, int argc, char **argv) {
  ms_cli_shared a;
  bool help = false;
  ms_cli_shared_init(&a, MS_FORMAT_TEXT, MS_FORMATS_TEXT_JSON);
  int r = ms_cli_parse(argc, argv, &syntax, m, ms_cli_shared_option, &a, &help,
                       NULL);
  if (r != 0 || help)
    return r;
  if (isnan(a.load))
    return ms_cli_usage("give the peak offered load with --load L "
                        "(requests/s)");
  if ((r = ms_cli_model_resolve(m, true)) != 0)
    return r;
  /* the margin: --margin, else the --spec service's safety_margin (the
   * plugin's safe_retries uses it), else the default */
  if (isnan(a.margin))
    a.margin = m->spec != NULL ? ms_service_settings_of(m->spec).safety_margin
                               : MS_RECOMMEND_DEFAULT_MARGIN;
  const ms_service_params *s = &m->params;
  bool erlang = s->model.kind == MS_MODEL_ERLANG;
  bool one_tier = s->policy.tiers == 1;
  /* Envoy's budget counts attempts holding a slot: the erlang model's
   * wait, without a queue limit (ms_retry_policy_check) */
  bool envoy = one_tier && erlang && !s->model.has_queue_limit;
  row rows[] = {
      {.key = "max_safe_retries",
       .label = "retries",
       .share = false,
       .unit = "",
       .has = true},
      {.key = "max_safe_retry_budget",
       .label = "retry budget",
       .share = true,
       .unit = "",
       .has = true},
      {.key = "max_safe_token_ratio",
       .label = "token ratio",
       .share = false,
       .unit = "",
       .has = true},
      {.key = "max_safe_grpc_token_ratio",
       .label = "gRPC token_ratio",
       .share = false,
       .unit = "",
       .has = true},
      {.key = "max_safe_aws_refund",
       .label = "AWS quota refund",
       .share = false,
       .unit = "",
       .has = true},
      {.key = "max_safe_finagle_percent",
       .label = "Finagle percent",
       .share = true,
       .unit = "",
       .has = one_tier},
      {.key = "max_safe_envoy_budget",
       .label = "Envoy budget_percent",
       .share = true,
       .unit = "",
       .has = envoy},
      {.key = "min_safe_servers",
       .label = "servers",
       .share = false,
       .unit = "",
       .has = erlang},
      {.key = "min_safe_capacity",
       .label = "capacity",
       .share = false,
       .unit = "req/s",
       .has = !erlang},
      {.key = "min_safe_timeout",
       .label = "timeout",
       .share = false,
       .unit = "s",
       .has = erlang},
  };
  static const ms_param knobs[] = {
      MS_PARAM_RETRIES,      MS_PARAM_RETRY_BUDGET,
      MS_PARAM_TOKEN_RATIO,  MS_PARAM_GRPC_TOKEN_RATIO,
      MS_PARAM_AWS_REFUND,   MS_PARAM_FINAGLE_PERCENT,
      MS_PARAM_ENVOY_BUDGET, MS_PARAM_SERVERS,
      MS_PARAM_CAPACITY,     MS_PARAM_TIMEOUT,
  };
  int n = (int)(sizeof rows / sizeof rows[0]);
  ms_error err;
  ms_landscape ls;
  bool safe;
  if (ms_recommend_safe(s, a.load, a.margin, &safe, &ls, &err) != MS_OK)
    return ms_cli_fail("model: %s", err.msg);
  if ((r = search(s, &a, rows, knobs, n)) != 0)
    return r;
  rows_hazard(s, &a, rows, knobs, n);
  hazard_answers h;
  const row *servers = NULL;
  for (int i = 0; i < n; i++)
    if (strcmp(rows[i].key, "min_safe_servers") == 0)
      servers = &rows[i];
  hazard_search(s, &a, servers, &h);
  if (ms_cli_interrupted())
    return ms_cli_interrupt_exit("the stable answers searched, the answers "
                                 "under the hazard target not; nothing "
                                 "written");
  /* safe also means a storm hazard at the peak within the target; a
   * stable service has none (no collapsed equilibrium at the peak) */
  safe = safe && (!h.peak.ok || h.peak.hazard <= a.max_hazard);
  if (a.format == MS_FORMAT_JSON)
    write_json(m, &a, safe, &ls, rows, n, &h);
  else
    write_text(m, &a, safe, &ls, rows, n, &h);
  return ms_cli_finish_output(MS_EXIT_OK);
}

int ms_cmd_recommend(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
