/* SPDX-License-Identifier: MIT */
/*
 * Scenario files (service/scenario.h): YAML read with libyaml's document
 * API, as service files are, so that every message names the line and
 * column.  Strict: an unknown key, a wrong type or unit, or a value out of
 * range rejects the file.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "scenario.h"
#include "service.h"
#include "yamldoc.h"

/* Seeds are whole numbers that a double holds exactly: 0 to 2^53. */
#define MAX_SEED 9007199254740992.0

/* ---- triggers --------------------------------------------------------- */

enum {
  T_KIND,
  T_START,
  T_RISE,
  T_HOLD,
  T_FALL,
  T_LOAD,
  T_SERVERS,
  T_CAPACITY,
  T_COUNT
};
static const char *const trigger_keys[T_COUNT] = {
    "kind", "start", "rise", "hold", "fall", "load", "servers", "capacity"};

/* A trigger being read: its node, its keys as walked, its name. */
typedef struct {
  ms_yaml_loader *ld;
  const yaml_node_t *map;
  const yaml_node_t *val[T_COUNT], *key[T_COUNT];
  const char *what; /* "trigger 2" */
  const char *kind; /* as written */
} trigger_reader;

/* A stall: the pool of servers (erlang) or the capacity for hold. */
static int load_stall(const trigger_reader *r, ms_trigger *t) {
  t->kind = MS_TRIGGER_SERVERS;
  const int no[3] = {T_RISE, T_FALL, T_LOAD};
  for (int i = 0; i < 3; i++)
    if (r->val[no[i]])
      return ms_yaml_fail(r->ld, r->key[no[i]],
                          "%s: a stall takes start, hold and servers (or "
                          "capacity), not %s (key '%s')",
                          r->what, trigger_keys[no[i]], trigger_keys[no[i]]);
  if (r->val[T_HOLD] == NULL)
    return ms_yaml_fail(r->ld, r->map,
                        "%s: a stall needs its length (key 'hold')", r->what);
  if ((r->val[T_SERVERS] == NULL) == (r->val[T_CAPACITY] == NULL))
    return ms_yaml_fail(r->ld, r->map,
                        "%s: a stall needs servers (erlang model) or capacity "
                        "(capacity model), one of them (key 'servers')",
                        r->what);
  if (r->val[T_CAPACITY]) /* the capacity model's own parameter */
    return ms_yaml_get_param(r->ld, r->val[T_CAPACITY], MS_PARAM_CAPACITY,
                             &t->capacity);
  double v;
  if (ms_yaml_get_sim_value(r->ld, r->val[T_SERVERS], "servers", MS_SIM_POOL,
                            &v) != 0)
    return -1;
  t->servers = (long)v;
  return 0;
}

/* A spike, a ramp or a drop: a change of the load. */
static int load_load_change(const trigger_reader *r, bool drop, ms_trigger *t) {
  t->kind = MS_TRIGGER_LOAD;
  const int no[2] = {T_SERVERS, T_CAPACITY};
  for (int i = 0; i < 2; i++)
    if (r->val[no[i]])
      return ms_yaml_fail(r->ld, r->key[no[i]],
                          "%s: a %s changes the load, not the pool (key '%s')",
                          r->what, r->kind, trigger_keys[no[i]]);
  if (r->val[T_LOAD] == NULL)
    return ms_yaml_fail(r->ld, r->map,
                        "%s: a %s needs the load it %s (key 'load')", r->what,
                        r->kind, drop ? "removes" : "adds");
  if (ms_yaml_get_sim_value(r->ld, r->val[T_LOAD], "load", MS_SIM_LOAD_CHANGE,
                            &t->load) != 0)
    return -1;
  if (drop)
    t->load = -t->load;
  if (!(t->rise + t->hold + t->fall > 0))
    return ms_yaml_fail(r->ld, r->map,
                        "%s: a %s of no length does nothing: give hold (or "
                        "rise and fall)",
                        r->what, r->kind);
  return 0;
}

static int load_trigger(ms_yaml_loader *ld, const yaml_node_t *map, int index,
                        ms_trigger *t) {
  char what[32];
  snprintf(what, sizeof what, "trigger %d", index);
  const ms_yaml_keys table = {what, "key", trigger_keys, T_COUNT};
  trigger_reader r = {.ld = ld, .map = map, .what = what};
  if (ms_yaml_walk_mapping(ld, map, &table, r.val, r.key) != 0)
    return -1;
  memset(t, 0, sizeof *t);
  const yaml_node_t *k = r.val[T_KIND];
  r.kind = k ? ms_yaml_scalar(k) : NULL;
  if (r.kind == NULL)
    return ms_yaml_fail(
        ld, k ? k : map,
        "%s needs a kind: spike, ramp, drop or stall (key 'kind')", what);
  bool stall = strcmp(r.kind, "stall") == 0;
  bool drop = strcmp(r.kind, "drop") == 0;
  if (!stall && !drop && strcmp(r.kind, "spike") != 0 &&
      strcmp(r.kind, "ramp") != 0)
    return ms_yaml_fail(ld, k,
                        "%s: kind '%s' is not spike, ramp, drop or stall (key "
                        "'kind')",
                        what, r.kind);
  static const int timing[4] = {T_START, T_RISE, T_HOLD, T_FALL};
  double *slot[4] = {&t->start, &t->rise, &t->hold, &t->fall};
  for (int i = 0; i < 4; i++)
    if (r.val[timing[i]] &&
        ms_yaml_get_sim_value(ld, r.val[timing[i]], trigger_keys[timing[i]],
                              MS_SIM_TIME, slot[i]) != 0)
      return -1;
  if (r.val[T_START] == NULL)
    return ms_yaml_fail(ld, map, "%s needs a start time (key 'start')", what);
  return stall ? load_stall(&r, t) : load_load_change(&r, drop, t);
}

/* ---- the file --------------------------------------------------------- */

enum {
  S_DURATION,
  S_OFFERED,
  S_SAMPLE,
  S_DT,
  S_SEED,
  S_BACKOFF,
  S_BUDGET_WINDOW,
  S_TOKEN_CAPACITY,
  S_TRIGGERS,
  S_COUNT
};
static const char *const top_keys[S_COUNT] = {
    "duration", "offered_load",  "sample_interval", "dt",      "seed",
    "backoff",  "budget_window", "token_capacity",  "triggers"};
static const ms_yaml_keys top_table = {"a scenario file", "key", top_keys,
                                       S_COUNT};

/* The optional settings of the simulation. */
static int load_settings(ms_yaml_loader *ld, const yaml_node_t *const *val,
                         ms_scenario_file *out) {
  const struct {
    int key;
    ms_sim_value kind;
    double *value;
    bool *given;
  } settings[] = {
      {S_SAMPLE, MS_SIM_SPAN, &out->sample_interval, &out->has_sample_interval},
      {S_DT, MS_SIM_SPAN, &out->dt, &out->has_dt},
      {S_BUDGET_WINDOW, MS_SIM_SPAN, &out->budget_window,
       &out->has_budget_window},
      {S_TOKEN_CAPACITY, MS_SIM_TOKENS, &out->token_capacity,
       &out->has_token_capacity},
  };
  for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
    const yaml_node_t *v = val[settings[i].key];
    if (v == NULL)
      continue;
    if (ms_yaml_get_sim_value(ld, v, top_keys[settings[i].key],
                              settings[i].kind, settings[i].value) != 0)
      return -1;
    *settings[i].given = true;
  }
  if (val[S_SEED]) {
    double v;
    if (ms_yaml_get_whole(ld, val[S_SEED], "seed", &v) != 0 ||
        ms_yaml_check_range(ld, val[S_SEED], "seed", v, 0.0, MAX_SEED,
                            MS_BOUND_CLOSED) != 0)
      return -1;
    out->seed = (uint64_t)v;
    out->has_seed = true;
  }
  if (val[S_BACKOFF]) {
    if (ms_yaml_get_backoff(ld, val[S_BACKOFF], &out->backoff) != 0)
      return -1;
    out->has_backoff = true;
  }
  return 0;
}

static int load_triggers(ms_yaml_loader *ld, const yaml_node_t *list,
                         ms_scenario *sc) {
  if (list->type != YAML_SEQUENCE_NODE)
    return ms_yaml_fail(ld, list, "'triggers' must be a list, not %s",
                        ms_yaml_kind(list));
  long n = list->data.sequence.items.top - list->data.sequence.items.start;
  if (n > MS_SIM_MAX_TRIGGERS)
    return ms_yaml_fail(ld, list, "%ld triggers: at most %d (key 'triggers')",
                        n, MS_SIM_MAX_TRIGGERS);
  for (long i = 0; i < n; i++) {
    yaml_node_t *item =
        yaml_document_get_node(ld->doc, list->data.sequence.items.start[i]);
    if (load_trigger(ld, item, (int)i + 1, &sc->triggers[i]) != 0)
      return -1;
  }
  sc->n_triggers = (int)n;
  return 0;
}

static int load_root(ms_yaml_loader *ld, const yaml_node_t *root,
                     ms_scenario_file *out) {
  const yaml_node_t *val[S_COUNT];
  if (ms_yaml_walk_mapping(ld, root, &top_table, val, NULL) != 0)
    return -1;
  if (val[S_DURATION] == NULL)
    return ms_yaml_fail(ld, root,
                        "the scenario needs its length (key 'duration')");
  if (val[S_OFFERED] == NULL)
    return ms_yaml_fail(ld, root,
                        "the scenario needs its baseline load (key "
                        "'offered_load')");
  ms_scenario *sc = &out->scenario;
  if (ms_yaml_get_sim_value(ld, val[S_DURATION], "duration", MS_SIM_SPAN,
                            &sc->duration) != 0 ||
      ms_yaml_get_sim_value(ld, val[S_OFFERED], "offered_load", MS_SIM_LOAD,
                            &sc->offered_load) != 0 ||
      load_settings(ld, val, out) != 0)
    return -1;
  return val[S_TRIGGERS] ? load_triggers(ld, val[S_TRIGGERS], sc) : 0;
}

int ms_scenario_file_parse(const char *text, size_t len, const char *name,
                           ms_scenario_file *out, char *errbuf, size_t errlen) {
  memset(out, 0, sizeof *out);
  ms_yaml_loader ld = {.path = name, .err = errbuf, .errlen = errlen};
  yaml_document_t doc;
  if (ms_yaml_load(text, len, name, NULL, &doc, errbuf, errlen) != 0)
    return -1;
  ld.doc = &doc;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (root == NULL)
    ms_yaml_fail(&ld, NULL,
                 "the file is empty: expected duration, offered_load "
                 "and triggers");
  else
    load_root(&ld, root, out);
  yaml_document_delete(&doc);
  if (ld.failed) {
    memset(out, 0, sizeof *out);
    return -1;
  }
  return 0;
}

int ms_scenario_file_load(const char *path, ms_scenario_file *out, char *errbuf,
                          size_t errlen) {
  memset(out, 0, sizeof *out);
  /* a scenario is small: 1 MiB is far beyond 16 triggers */
  char *buf;
  size_t len;
  if (ms_yaml_read_file(path, (size_t)1 << 20, &buf, &len, errbuf, errlen) != 0)
    return -1;
  int r = ms_scenario_file_parse(buf, len, path, out, errbuf, errlen);
  free(buf);
  return r;
}

void ms_scenario_file_apply(const ms_scenario_file *f, ms_sim_config *c) {
  c->scenario = f->scenario;
  if (f->has_sample_interval)
    c->sample_interval = f->sample_interval;
  if (f->has_dt)
    c->dt = f->dt;
  if (f->has_seed)
    c->seed = f->seed;
  if (f->has_backoff)
    c->backoff = f->backoff;
  if (f->has_budget_window)
    c->budget_window = f->budget_window;
  if (f->has_token_capacity)
    c->token_capacity = f->token_capacity;
}
