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
    "too).\n";

static const ms_cli_option options[] = {
    MS_CLI_SHARED(MS_OPT_LOAD),
    MS_CLI_SHARED(MS_OPT_MARGIN),
    MS_CLI_SHARED(MS_OPT_FORMAT),
    MS_CLI_END,
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
} row;

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

static void write_text(const ms_cli_model *m, const ms_cli_shared *a, bool safe,
                       const ms_landscape *ls, const row *rows, int n) {
  printf("service        %s\n", m->label);
  printf("peak load      %.6g req/s, margin %.4g %%: safe means stable up to "
         "%.6g req/s\n",
         a->load, 100 * a->margin, (1 + a->margin) * a->load);
  printf("as configured  %s: tipping load %.6g req/s, recovery load %.6g "
         "req/s\n\n",
         safe ? "safe" : "not safe", ls->tipping_load, ls->recovery_load);
  printf("  %-22s %-28s %14s %14s\n", "setting", "answer", "tipping load",
         "recovery load");
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
    printf("  %-22s %-28s %14.6g %14.6g\n", w->label, ans, w->a.tipping_load,
           w->a.recovery_load);
  }
}

static void write_json(const ms_cli_model *m, const ms_cli_shared *a, bool safe,
                       const ms_landscape *ls, const row *rows, int n) {
  ms_json j;
  ms_cli_json_begin(&j, 2, m);
  ms_json_number(&j, "peak_load", a->load);
  ms_json_number(&j, "margin", a->margin);
  ms_json_number(&j, "safe_load", (1 + a->margin) * a->load);
  ms_json_bool(&j, "safe", safe);
  ms_json_number(&j, "tipping_load", ls->tipping_load);
  ms_json_number(&j, "recovery_load", ls->recovery_load);
  for (int i = 0; i < n; i++) {
    if (!rows[i].has)
      continue;
    if (rows[i].a.safe)
      ms_json_number(&j, rows[i].key, rows[i].a.value);
    else
      ms_json_null(&j, rows[i].key);
  }
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
    ms_json_end_object(&j);
  }
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
  if (a.format == MS_FORMAT_JSON)
    write_json(m, &a, safe, &ls, rows, n);
  else
    write_text(m, &a, safe, &ls, rows, n);
  return ms_cli_finish_output(MS_EXIT_OK);
}

int ms_cmd_recommend(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
