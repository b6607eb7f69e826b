/* SPDX-License-Identifier: MIT */
/*
 * The service file: YAML read with libyaml's document API, so every node
 * keeps its line and column for messages.  Validation is strict: an unknown
 * key, a wrong type, a missing field or an impossible value rejects the whole
 * file, with "file:line:column: what (key 'k')".
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "service.h"
#include "yamldoc.h"

static const char *const input_names[MS_INPUT_COUNT] = {
    "arrival_rate", "offered_rate",    "retry_rate",
    "error_rate",   "pool_size",       "queue_length",
    "busy_servers", "completion_rate", "latency"};

const char *ms_input_name(ms_input_id id) {
  return (unsigned)id < MS_INPUT_COUNT ? input_names[id] : NULL;
}

/* ---- the loader ------------------------------------------------------ */

/* Keys of a service, with what they hold. */
enum {
  K_NAME,
  K_MODEL,
  K_SERVERS,
  K_SERVICE_TIME,
  K_SERVICE_RATE,
  K_TIMEOUT,
  K_TIMEOUT_GRANULARITY,
  K_TIMEOUT_COVERS,
  K_SERVICE_TIME_CV,
  K_CAPACITY,
  K_RETRIES,
  K_TIERS,
  K_RETRY_BUDGET,
  K_TOKEN_RATIO,
  K_GRPC_THROTTLING,
  K_ENVOY_RETRY_BUDGET,
  K_AWS_RETRY_QUOTA,
  K_LAYERING,
  K_QUEUE_LIMIT,
  K_LATENCY_OBJECTIVE,
  K_RETRY_REJECTIONS,
  K_BACKOFF,
  K_BASE_FAILURE,
  K_HEADROOM_WARNING,
  K_SAFETY_MARGIN,
  K_HAZARD_HORIZON,
  K_HAZARD_WARNING,
  K_CLEAR_AFTER,
  K_CALIBRATE,
  K_CALIBRATION_TIME,
  K_CALIBRATION_THRESHOLD,
  K_CALIBRATION_INTERVALS,
  K_MISFIT_THRESHOLD,
  K_MISFIT_INTERVALS,
  K_INPUTS,
  K_COUNT
};
static const char *const key_names[] = {"name",
                                        "model",
                                        "servers",
                                        "service_time",
                                        "service_rate",
                                        "timeout",
                                        "timeout_granularity",
                                        "timeout_covers",
                                        "service_time_cv",
                                        "capacity",
                                        "retries",
                                        "tiers",
                                        "retry_budget",
                                        "token_ratio",
                                        "grpc_throttling",
                                        "envoy_retry_budget",
                                        "aws_retry_quota",
                                        "layering",
                                        "queue_limit",
                                        "latency_objective",
                                        "retry_rejections",
                                        "backoff",
                                        "base_failure",
                                        "headroom_warning",
                                        "safety_margin",
                                        "hazard_horizon",
                                        "hazard_warning",
                                        "clear_after",
                                        "calibrate",
                                        "calibration_time",
                                        "calibration_threshold",
                                        "calibration_intervals",
                                        "misfit_threshold",
                                        "misfit_intervals",
                                        "inputs"};
_Static_assert(sizeof key_names / sizeof *key_names == K_COUNT,
               "one name per key");
static const ms_yaml_keys service_table = {"a service", "key", key_names,
                                           K_COUNT};

static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 63)
    return 0;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.' || *s == '-'))
      return 0;
  return 1;
}

/* An input: a number (a rate also as "5/s"), or a collectd identifier
 * host/plugin/type (glob characters * ? [ make it a glob summed over every
 * match). */
static int get_source(ms_yaml_loader *ld, const yaml_node_t *v, ms_input_id id,
                      ms_source *out) {
  const char *key = input_names[id];
  const char *s = ms_yaml_scalar(v);
  if (s == NULL || *s == '\0')
    return ms_yaml_fail(ld, v,
                        "%s must be a number or a collectd identifier "
                        "host/plugin[-instance]/type[-instance] (or a mapping "
                        "with source and missing), not %s (key 'inputs.%s')",
                        key, s ? "an empty string" : ms_yaml_kind(v), key);
  out->line = (int)v->start_mark.line + 1;
  out->column = (int)v->start_mark.column + 1;
  double x;
  char why[200];
  /* a rate may be written per second ("5/s"), a latency as a duration
   * ("50ms"); pool, queue and busy servers are counts */
  bool count =
      id == MS_INPUT_POOL || id == MS_INPUT_QUEUE || id == MS_INPUT_BUSY;
  bool duration = id == MS_INPUT_LATENCY;
  char tiny[320];
  int r = ms_parse_number(s, &x);
  if (r == MS_NUMBER_TINY)
    return ms_yaml_fail(ld, v, "%s (key 'inputs.%s')",
                        ms_number_tiny_message(tiny, sizeof tiny, s), key);
  if (r == 0 || (duration && ms_parse_duration(s, &x, why, sizeof why) == 0) ||
      (!count && !duration && ms_parse_rate(s, &x, why, sizeof why) == 0)) {
    if (x < 0)
      return ms_yaml_fail(ld, v, "%s = %s must be >= 0 (key 'inputs.%s')", key,
                          s, key);
    ms_error e; /* a constant pool is a servers count */
    if (id == MS_INPUT_POOL && ms_param_check(MS_PARAM_SERVERS, x, &e) != MS_OK)
      return ms_yaml_fail(ld, v, "pool_size = %s: %s (key 'inputs.pool_size')",
                          s, e.msg);
    out->kind = MS_SOURCE_NUMBER;
    out->number = x;
    return 0;
  }
  int slashes = 0, glob = 0;
  for (const char *p = s; *p; p++) {
    slashes += *p == '/';
    glob |= *p == '*' || *p == '?' || *p == '[';
    if (isspace((unsigned char)*p) || *p == '"')
      return ms_yaml_fail(ld, v,
                          "identifier '%s' contains a blank or quote (key "
                          "'inputs.%s')",
                          s, key);
  }
  const char *first = strchr(s, '/'), *last = strrchr(s, '/');
  if (slashes != 2 || first == s || last == first + 1 || last[1] == '\0')
    return ms_yaml_fail(
        ld, v,
        "'%s' is not a collectd identifier "
        "host/plugin[-instance]/type[-instance] (key 'inputs.%s')",
        s, key);
  if (strlen(s) > 255)
    return ms_yaml_fail(ld, v,
                        "identifier is longer than 255 characters (key "
                        "'inputs.%s')",
                        key);
  out->kind = glob ? MS_SOURCE_GLOB : MS_SOURCE_IDENTIFIER;
  out->pattern = strdup(s);
  return out->pattern ? 0 : ms_yaml_fail(ld, v, "out of memory");
}

static const ms_yaml_keys input_table = {"inputs", "input", input_names,
                                         MS_INPUT_COUNT};

/* The keys of an input written as a mapping. */
enum { IK_SOURCE, IK_MISSING, IK_SCALE, IK_COUNT };
static const char *const input_keys[] = {"source", "missing", "scale"};
_Static_assert(sizeof input_keys / sizeof *input_keys == IK_COUNT,
               "one name per key");

/* `missing: skip | zero` of an identifier or glob input. */
static int get_missing(ms_yaml_loader *ld, const yaml_node_t *key,
                       const yaml_node_t *v, ms_input_id id, ms_source *out) {
  const char *name = input_names[id];
  if (out->kind == MS_SOURCE_NUMBER)
    return ms_yaml_fail(ld, key,
                        "input %s is a number: missing applies to a collectd "
                        "identifier or glob only (key 'inputs.%s.missing')",
                        name, name);
  const char *s = ms_yaml_scalar(v);
  if (s != NULL && strcmp(s, "skip") == 0)
    out->missing = MS_MISSING_SKIP;
  else if (s != NULL && strcmp(s, "zero") == 0)
    out->missing = MS_MISSING_ZERO;
  else if (s != NULL)
    return ms_yaml_fail(ld, v,
                        "missing must be skip or zero, not '%s' (key "
                        "'inputs.%s.missing')",
                        s, name);
  else
    return ms_yaml_fail(ld, v,
                        "missing must be skip or zero, not %s (key "
                        "'inputs.%s.missing')",
                        ms_yaml_kind(v), name);
  /* 0 live servers is no pool to analyse: an error, never a default */
  if (id == MS_INPUT_POOL && out->missing == MS_MISSING_ZERO)
    return ms_yaml_fail(ld, v,
                        "missing: zero does not apply to pool_size (0 live "
                        "servers cannot be analysed) (key "
                        "'inputs.pool_size.missing')");
  return 0;
}

/* `scale: k` of an identifier or glob input: a finite number > 0. */
static int get_scale(ms_yaml_loader *ld, const yaml_node_t *key,
                     const yaml_node_t *v, ms_input_id id, ms_source *out) {
  const char *name = input_names[id];
  char what[48];
  snprintf(what, sizeof what, "inputs.%s.scale", name);
  if (out->kind == MS_SOURCE_NUMBER)
    return ms_yaml_fail(ld, key,
                        "input %s is a number: scale applies to a collectd "
                        "identifier or glob only (key '%s')",
                        name, what);
  if (ms_yaml_get_number(ld, v, what, &out->scale) != 0 ||
      ms_yaml_check_range(ld, v, what, out->scale, 0.0, MS_MAX_RATE,
                          MS_BOUND_LO_OPEN) != 0)
    return -1;
  return 0;
}

/* An input: a source as get_source reads it, or a mapping
 * {source: <that>, missing: skip | zero, scale: k}. */
static int get_input(ms_yaml_loader *ld, const yaml_node_t *v, ms_input_id id,
                     ms_source *out) {
  if (v->type != YAML_MAPPING_NODE)
    return get_source(ld, v, id, out);
  char what[64];
  snprintf(what, sizeof what, "input %s", input_names[id]);
  const ms_yaml_keys table = {what, "key", input_keys, IK_COUNT};
  const yaml_node_t *val[IK_COUNT], *key[IK_COUNT];
  if (ms_yaml_walk_mapping(ld, v, &table, val, key) != 0)
    return -1;
  if (val[IK_SOURCE] == NULL)
    return ms_yaml_fail(ld, v,
                        "input %s needs a source (key 'inputs.%s.source')",
                        input_names[id], input_names[id]);
  if (get_source(ld, val[IK_SOURCE], id, out) != 0)
    return -1;
  if (val[IK_MISSING] != NULL &&
      get_missing(ld, key[IK_MISSING], val[IK_MISSING], id, out) != 0)
    return -1;
  return val[IK_SCALE] == NULL
             ? 0
             : get_scale(ld, key[IK_SCALE], val[IK_SCALE], id, out);
}

static int load_inputs(ms_yaml_loader *ld, const yaml_node_t *map,
                       ms_service_spec *sp) {
  const yaml_node_t *val[MS_INPUT_COUNT];
  if (ms_yaml_walk_mapping(ld, map, &input_table, val, NULL) != 0)
    return -1;
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    if (val[i] && get_input(ld, val[i], (ms_input_id)i, &sp->inputs[i]) != 0)
      return -1;
  return 0;
}

/* ---- one service ----------------------------------------------------- */

/* A service being read: its node, its keys as walked, where it goes. */
typedef struct {
  ms_yaml_loader *ld;
  const yaml_node_t *map;
  const yaml_node_t *val[K_COUNT], *key[K_COUNT];
  const char *name; /* once read */
  bool erlang;      /* once the model is known */
  ms_service_spec *sp;
} service_reader;

/* Parameter id under key k, when the key is there; *given then set. */
static int read_optional(service_reader *r, int k, ms_param id, double *out,
                         bool *given) {
  if (r->val[k] == NULL)
    return 0;
  if (ms_yaml_get_param(r->ld, r->val[k], id, out) != 0)
    return -1;
  if (given != NULL)
    *given = true;
  return 0;
}

static int read_name(service_reader *r) {
  if (r->val[K_NAME] == NULL)
    return ms_yaml_fail(r->ld, r->map, "a service needs a name (key 'name')");
  const char *name = ms_yaml_scalar(r->val[K_NAME]);
  if (name == NULL || !valid_name(name))
    return ms_yaml_fail(
        r->ld, r->val[K_NAME],
        "name '%s' must be 1 to 63 letters, digits, '_', '.' or "
        "'-' (key 'name')",
        name ? name : "?");
  r->sp->name = strdup(name);
  if (r->sp->name == NULL)
    return ms_yaml_fail(r->ld, r->map, "out of memory");
  r->name = r->sp->name;
  return 0;
}

/* The model's kind, and no key of the other model. */
static int read_model_kind(service_reader *r) {
  if (r->val[K_MODEL] == NULL)
    return ms_yaml_fail(r->ld, r->map,
                        "service '%s' needs a model: erlang or capacity "
                        "(key 'model')",
                        r->name);
  const char *model = ms_yaml_scalar(r->val[K_MODEL]);
  if (model && strcmp(model, "erlang") == 0)
    r->erlang = true;
  else if (model && strcmp(model, "capacity") == 0)
    r->erlang = false;
  else
    return ms_yaml_fail(
        r->ld, r->val[K_MODEL],
        "model '%s' is neither erlang nor capacity (key 'model')",
        model ? model : ms_yaml_kind(r->val[K_MODEL]));
  static const int erlang_only[] = {
      K_SERVERS,       K_SERVICE_TIME,        K_SERVICE_RATE,
      K_TIMEOUT,       K_TIMEOUT_GRANULARITY, K_SERVICE_TIME_CV,
      K_QUEUE_LIMIT,   K_LATENCY_OBJECTIVE,   K_RETRY_REJECTIONS,
      K_TIMEOUT_COVERS};
  for (size_t i = 0; i < sizeof erlang_only / sizeof *erlang_only; i++)
    if (!r->erlang && r->val[erlang_only[i]])
      return ms_yaml_fail(r->ld, r->key[erlang_only[i]],
                          "key '%s' applies to the erlang model only (service "
                          "'%s' uses model capacity)",
                          key_names[erlang_only[i]], r->name);
  if (r->erlang && r->val[K_CAPACITY])
    return ms_yaml_fail(r->ld, r->key[K_CAPACITY],
                        "key 'capacity' applies to the capacity model only "
                        "(service '%s' uses model erlang)",
                        r->name);
  return 0;
}

/*
 * queue_limit: K waiting places (M/M/c/K, doc/design.md §1.9); without it,
 * latency_objective: S sets K = round(servers x service rate x S), the
 * queue the pool empties within the objective (Little's law, L = throughput
 * x latency, at the pool's throughput c mu); retry_rejections: true (the
 * default) or false, whether a rejected attempt is retried.
 */
static int read_queue_limit(service_reader *r) {
  ms_failure_model *m = &r->sp->params.model;
  double k;
  if (r->val[K_QUEUE_LIMIT]) {
    if (read_optional(r, K_QUEUE_LIMIT, MS_PARAM_QUEUE_LIMIT, &k, NULL) != 0)
      return -1;
    m->has_queue_limit = true;
    m->queue_limit = (long)k;
  } else if (r->val[K_LATENCY_OBJECTIVE]) {
    double s;
    const yaml_node_t *v = r->val[K_LATENCY_OBJECTIVE];
    if (ms_yaml_get_unit(r->ld, v, "latency_objective", 1, &s) != 0 ||
        ms_yaml_check_range(r->ld, v, "latency_objective", s, 0.0,
                            MS_MAX_DURATION, MS_BOUND_LO_OPEN) != 0)
      return -1;
    if (!r->sp->has_servers)
      return ms_yaml_fail(r->ld, v,
                          "latency_objective needs servers in the file, or "
                          "give queue_limit (service '%s')",
                          r->name);
    k = round((double)m->servers * m->service_rate * s);
    if (!(k <= (double)MS_MAX_QUEUE_LIMIT))
      return ms_yaml_fail(r->ld, v,
                          "latency_objective %g s gives a queue limit of "
                          "%.4g, above %ld: give queue_limit (service '%s')",
                          s, k, MS_MAX_QUEUE_LIMIT, r->name);
    m->has_queue_limit = true;
    m->queue_limit = (long)k;
  }
  const yaml_node_t *rr = r->val[K_RETRY_REJECTIONS];
  if (rr) {
    const char *t = ms_yaml_scalar(rr);
    if (t == NULL || (strcmp(t, "true") != 0 && strcmp(t, "false") != 0))
      return ms_yaml_fail(r->ld, rr,
                          "retry_rejections is true or false, not %s (service "
                          "'%s')",
                          t ? t : ms_yaml_kind(rr), r->name);
    m->rejections_final = strcmp(t, "false") == 0;
  }
  return 0;
}

/* Remember a duration read from v when it was written as a bare number
 * (seconds), for ms_service_unit_warnings. */
static void note_bare(const yaml_node_t *v, double seconds,
                      ms_bare_duration *out) {
  double x;
  const char *text = ms_yaml_scalar(v);
  if (text == NULL || ms_parse_number(text, &x) != 0)
    return;
  *out = (ms_bare_duration){.seconds = seconds,
                            .line = (int)v->start_mark.line + 1,
                            .column = (int)v->start_mark.column + 1};
}

/* timeout: T, a range {min: 500ms, max: 1.1s} (or "500ms..1.1s"), and
 * timeout_granularity: G, a timer that fires at its first tick after T
 * (uniform on [T, T + G]; doc/configuration.md, "How clients time out"). */
static int read_timeout(service_reader *r) {
  ms_failure_model *m = &r->sp->params.model;
  const yaml_node_t *v = r->val[K_TIMEOUT];
  char why[256];
  if (v->type == YAML_MAPPING_NODE) {
    static const char *const names[] = {"min", "max"};
    const ms_yaml_keys table = {"timeout", "key", names, 2};
    const yaml_node_t *val[2], *keys[2];
    double lo, hi;
    if (ms_yaml_walk_mapping(r->ld, v, &table, val, keys) != 0)
      return -1;
    for (int i = 0; i < 2; i++)
      if (val[i] == NULL)
        return ms_yaml_fail(r->ld, v,
                            "a timeout range needs min and max (timeout: "
                            "{min: 500ms, max: 1.1s}; service '%s')",
                            r->name);
    if (ms_yaml_get_param(r->ld, val[0], MS_PARAM_TIMEOUT, &lo) != 0 ||
        ms_yaml_get_param(r->ld, val[1], MS_PARAM_TIMEOUT, &hi) != 0)
      return -1;
    if (ms_timeout_from_range(lo, hi, &m->timeout, &m->timeout_spread, why,
                              sizeof why) != 0)
      return ms_yaml_fail(r->ld, val[1], "%s (key 'timeout')", why);
  } else if (ms_yaml_scalar(v) != NULL && strstr(ms_yaml_scalar(v), "..")) {
    if (ms_parse_timeout_range(ms_yaml_scalar(v), &m->timeout,
                               &m->timeout_spread, why, sizeof why) != 0)
      return ms_yaml_fail(r->ld, v, "%s (key 'timeout')", why);
  } else {
    if (read_optional(r, K_TIMEOUT, MS_PARAM_TIMEOUT, &m->timeout, NULL) != 0)
      return -1;
    note_bare(v, m->timeout, &r->sp->bare_timeout);
  }
  if (r->val[K_TIMEOUT_GRANULARITY] == NULL)
    return 0;
  if (m->timeout_spread > 0.0)
    return ms_yaml_fail(r->ld, r->key[K_TIMEOUT_GRANULARITY],
                        "service '%s' gives a timeout range and "
                        "timeout_granularity: give one",
                        r->name);
  return read_optional(r, K_TIMEOUT_GRANULARITY, MS_PARAM_TIMEOUT_GRANULARITY,
                       &m->timeout_spread, NULL);
}

static int read_erlang(service_reader *r) {
  ms_failure_model *m = &r->sp->params.model;
  m->kind = MS_MODEL_ERLANG;
  double servers = 1; /* until a pool_size input says otherwise */
  if (read_optional(r, K_SERVERS, MS_PARAM_SERVERS, &servers,
                    &r->sp->has_servers) != 0)
    return -1;
  m->servers = (long)servers;
  if (r->val[K_SERVICE_TIME] && r->val[K_SERVICE_RATE])
    return ms_yaml_fail(
        r->ld, r->key[K_SERVICE_RATE],
        "give service_time or service_rate, not both (service '%s')", r->name);
  if (r->val[K_SERVICE_TIME]) {
    double t;
    if (read_optional(r, K_SERVICE_TIME, MS_PARAM_SERVICE_TIME, &t, NULL) != 0)
      return -1;
    m->service_rate = 1.0 / t;
    note_bare(r->val[K_SERVICE_TIME], t, &r->sp->bare_service_time);
  } else if (r->val[K_SERVICE_RATE]) {
    if (read_optional(r, K_SERVICE_RATE, MS_PARAM_SERVICE_RATE,
                      &m->service_rate, NULL) != 0)
      return -1;
  } else {
    return ms_yaml_fail(r->ld, r->map,
                        "service '%s' needs service_time (or service_rate) "
                        "for the erlang model",
                        r->name);
  }
  if (r->val[K_TIMEOUT] == NULL)
    return ms_yaml_fail(r->ld, r->map,
                        "service '%s' needs a client timeout (key 'timeout')",
                        r->name);
  if (read_timeout(r) != 0)
    return -1;
  if (read_optional(r, K_SERVICE_TIME_CV, MS_PARAM_SERVICE_TIME_CV,
                    &m->service_time_cv, &m->has_service_time_cv) != 0)
    return -1;
  /* what the timeout times: the whole response unless told (most clients
   * and proxies; doc/configuration.md) */
  m->timeout_covers = MS_TIMEOUT_COVERS_DEFAULT;
  const yaml_node_t *tc = r->val[K_TIMEOUT_COVERS];
  if (tc) {
    const char *t = ms_yaml_scalar(tc);
    if (ms_timeout_covers_from_name(t, &m->timeout_covers) != MS_OK)
      return ms_yaml_fail(r->ld, tc,
                          "timeout_covers is response (the wait and the "
                          "service) or wait (the wait for a server only), "
                          "not %s%s%s (service '%s')",
                          t ? "'" : "", t ? t : ms_yaml_kind(tc), t ? "'" : "",
                          r->name);
  }
  return read_queue_limit(r);
}

static int read_capacity(service_reader *r) {
  ms_failure_model *m = &r->sp->params.model;
  m->kind = MS_MODEL_CAPACITY;
  if (r->val[K_CAPACITY] == NULL)
    return ms_yaml_fail(r->ld, r->map,
                        "service '%s' needs a capacity in requests/s (key "
                        "'capacity')",
                        r->name);
  return read_optional(r, K_CAPACITY, MS_PARAM_CAPACITY, &m->capacity, NULL);
}

/* ---- the retry policy ------------------------------------------------ */

/* The part of a policy field's key after the map's name. */
static const char *field_name(ms_param id) {
  const char *key = ms_param_get(id)->key;
  const char *dot = strchr(key, '.');
  return dot ? dot + 1 : key;
}

/* The AWS quota's `costs: current | legacy`, at node v: the set's costs
 * into pol. */
static int read_aws_costs(service_reader *r, const yaml_node_t *v,
                          ms_retry_policy *pol) {
  const char *s = ms_yaml_scalar(v);
  int costs = ms_aws_costs_find(s);
  if (costs < 0)
    return ms_yaml_fail(r->ld, v,
                        "aws_retry_quota.costs must be %s or %s, not "
                        "%s%s%s (key 'costs')",
                        ms_aws_costs_name(MS_AWS_COSTS_CURRENT),
                        ms_aws_costs_name(MS_AWS_COSTS_LEGACY), s ? "'" : "",
                        s ? s : ms_yaml_kind(v), s ? "'" : "");
  ms_aws_costs_defaults(pol, (ms_aws_costs)costs);
  return 0;
}

/* A named policy's map under key k: its kind's defaults, then the fields
 * given; every field is needed when `all` (gRPC has no defaults).  The
 * AWS quota's map takes `costs` too, the set the costs not given come
 * from. */
static int read_named_policy(service_reader *r, int k, ms_policy_kind kind,
                             bool all) {
  ms_retry_policy *pol = &r->sp->params.policy;
  int n;
  const ms_param *f = ms_policy_params(kind, &n);
  enum { MAX_FIELDS = 8 };
  const char *names[MAX_FIELDS];
  const yaml_node_t *val[MAX_FIELDS], *keys[MAX_FIELDS];
  for (int i = 0; i < n; i++)
    names[i] = field_name(f[i]);
  int n_keys = n;
  if (kind == MS_POLICY_AWS)
    names[n_keys++] = "costs";
  const ms_yaml_keys table = {key_names[k], "key", names, (size_t)n_keys};
  if (pol->kind != MS_POLICY_COUNT)
    return ms_yaml_fail(r->ld, r->key[k],
                        "service '%s' gives %s and %s: give one retry policy",
                        r->name, ms_policy_name(pol->kind), key_names[k]);
  if (ms_yaml_walk_mapping(r->ld, r->val[k], &table, val, keys) != 0)
    return -1;
  ms_policy_defaults(pol, kind);
  if (n_keys > n && val[n] != NULL && read_aws_costs(r, val[n], pol) != 0)
    return -1;
  for (int i = 0; i < n; i++) {
    if (val[i] == NULL && all)
      return ms_yaml_fail(r->ld, r->val[k], "%s needs %s (key '%s')",
                          key_names[k], names[i], ms_param_get(f[i])->key);
    if (val[i] != NULL &&
        ms_yaml_get_param(r->ld, val[i], f[i], ms_policy_field(pol, f[i])) != 0)
      return -1;
  }
  return 0;
}

/* One entry of a tiers list: {retries: R, timeout: T}. */
enum { TK_RETRIES, TK_TIMEOUT, TK_COUNT };
static const char *const tier_keys[] = {"retries", "timeout"};
static const ms_yaml_keys tier_table = {"a tier", "key", tier_keys, TK_COUNT};

/* A tier's timeout is one value: a range (a..b, or {min, max}) is refused
 * with its own message, not as a number it is not.  Returns 0 or -1. */
static int tier_timeout_range(service_reader *r, const yaml_node_t *v,
                              size_t j) {
  const char *t = ms_yaml_scalar(v);
  if ((t != NULL && strstr(t, "..") != NULL) || v->type == YAML_MAPPING_NODE)
    return ms_yaml_fail(r->ld, v,
                        "a tier's timeout is one value, not a range (key "
                        "'tiers[%zu].timeout'); a range is the service's own "
                        "timeout, the last tier's",
                        j);
  return 0;
}

/* `tiers:` as a count, or as a list of {retries, timeout} from the edge
 * down to the tier next to the dependency.  Each boundary is nested when
 * the upper tier's timeout covers the whole chain below it ((r + 1)
 * attempts of the lower tier's timeout), independent when it does not;
 * `layering` decides where a timeout is missing, and must agree with the
 * timeouts where they are given (doc/design.md §1.2). */
static int read_tiers(service_reader *r, double *retries) {
  ms_retry_policy *pol = &r->sp->params.policy;
  const yaml_node_t *v = r->val[K_TIERS];
  int layering = -1;
  if (r->val[K_LAYERING]) {
    const char *s = ms_yaml_scalar(r->val[K_LAYERING]);
    if (s && strcmp(s, "nested") == 0)
      layering = MS_LAYERING_NESTED;
    else if (s && strcmp(s, "independent") == 0)
      layering = MS_LAYERING_INDEPENDENT;
    else
      return ms_yaml_fail(
          r->ld, r->val[K_LAYERING],
          "layering must be nested or independent, not "
          "%s%s%s (key 'layering')",
          s ? "'" : "", s ? s : ms_yaml_kind(r->val[K_LAYERING]), s ? "'" : "");
  }
  if (v == NULL || v->type != YAML_SEQUENCE_NODE) {
    double tiers = 1;
    if (read_optional(r, K_TIERS, MS_PARAM_TIERS, &tiers, NULL) != 0)
      return -1;
    if (r->val[K_RETRIES] == NULL)
      return ms_yaml_fail(r->ld, r->map,
                          "service '%s' needs retries, the retries per "
                          "request (0 for none) (key 'retries')",
                          r->name);
    if (read_optional(r, K_RETRIES, MS_PARAM_RETRIES, retries, NULL) != 0)
      return -1;
    pol->tiers = (int)tiers;
    if (layering == MS_LAYERING_NESTED)
      pol->nested = ((1u << pol->tiers) - 1u) & ~1u;
    return 0;
  }
  size_t n =
      (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
  if (n < 1 || n > MS_MAX_TIERS)
    return ms_yaml_fail(r->ld, v,
                        "tiers lists 1 to %d tiers, not %zu (key 'tiers')",
                        MS_MAX_TIERS, n);
  if (r->val[K_RETRIES] != NULL)
    return ms_yaml_fail(r->ld, r->key[K_RETRIES],
                        "service '%s' lists its tiers: give retries in each "
                        "tier, not beside them",
                        r->name);
  /* tier i counts from the dependency up: the list's last entry is 0 */
  double timeouts[MS_MAX_TIERS];
  bool has_timeout[MS_MAX_TIERS];
  const yaml_node_t *nodes[MS_MAX_TIERS];
  for (size_t j = 0; j < n; j++) {
    int i = (int)(n - 1 - j);
    const yaml_node_t *item =
        yaml_document_get_node(r->ld->doc, v->data.sequence.items.start[j]);
    const yaml_node_t *val[TK_COUNT];
    if (ms_yaml_walk_mapping(r->ld, item, &tier_table, val, NULL) != 0)
      return -1;
    if (val[TK_RETRIES] == NULL)
      return ms_yaml_fail(r->ld, item,
                          "a tier needs retries (key 'tiers[%zu].retries')", j);
    double rr;
    if (ms_yaml_get_param(r->ld, val[TK_RETRIES], MS_PARAM_RETRIES, &rr) != 0)
      return -1;
    pol->tier_retries[i] = (int)rr;
    has_timeout[i] = val[TK_TIMEOUT] != NULL;
    if (has_timeout[i] && tier_timeout_range(r, val[TK_TIMEOUT], j) != 0)
      return -1;
    if (has_timeout[i] &&
        ms_yaml_get_param(r->ld, val[TK_TIMEOUT], MS_PARAM_TIMEOUT,
                          &timeouts[i]) != 0)
      return -1;
    nodes[i] = item;
  }
  const ms_failure_model *m = &r->sp->params.model;
  if (m->kind == MS_MODEL_ERLANG) {
    if (has_timeout[0] && timeouts[0] != m->timeout)
      return ms_yaml_fail(r->ld, nodes[0],
                          "the last tier is the client of the dependency: its "
                          "timeout %g s is the model's timeout %g s (key "
                          "'timeout'); give it once",
                          timeouts[0], m->timeout);
    has_timeout[0] = true;
    timeouts[0] = m->timeout;
  }
  *retries = pol->tier_retries[0];
  pol->tiers = (int)n;
  pol->has_tier_retries = n > 1;
  for (int i = 1; i < (int)n; i++) {
    int by_timeout = -1;
    if (has_timeout[i] && has_timeout[i - 1])
      by_timeout =
          timeouts[i] >= (pol->tier_retries[i - 1] + 1.0) * timeouts[i - 1]
              ? MS_LAYERING_NESTED
              : MS_LAYERING_INDEPENDENT;
    if (by_timeout >= 0 && layering >= 0 && by_timeout != layering)
      return ms_yaml_fail(
          r->ld, nodes[i],
          "layering is %s, but this tier's timeout %g s %s the %d attempts "
          "x %g s of the tier below (key 'layering')",
          layering == MS_LAYERING_NESTED ? "nested" : "independent",
          timeouts[i],
          by_timeout == MS_LAYERING_NESTED ? "covers" : "does not cover",
          pol->tier_retries[i - 1] + 1, timeouts[i - 1]);
    int l = by_timeout >= 0 ? by_timeout : layering;
    if (l == MS_LAYERING_NESTED)
      pol->nested |= 1u << i;
  }
  return 0;
}

static int read_policy(service_reader *r) {
  ms_retry_policy *pol = &r->sp->params.policy;
  double retries = 0;
  if (read_tiers(r, &retries) != 0)
    return -1;
  pol->retries = (int)retries;
  /* the clients' wait before a retry, the keys of a scenario's backoff
   * (model/sim.h ms_backoff): solve's retrial queue, simulate's default */
  if (r->val[K_BACKOFF]) {
    if (ms_yaml_get_backoff(r->ld, r->val[K_BACKOFF], &r->sp->backoff) != 0)
      return -1;
    r->sp->has_backoff = true;
  }
  const yaml_node_t *budget = r->val[K_RETRY_BUDGET];
  if (budget != NULL && budget->type == YAML_MAPPING_NODE) {
    if (read_named_policy(r, K_RETRY_BUDGET, MS_POLICY_FINAGLE, false) != 0)
      return -1;
  } else if (read_optional(r, K_RETRY_BUDGET, MS_PARAM_RETRY_BUDGET,
                           &pol->retry_budget, &pol->has_budget) != 0) {
    return -1;
  }
  if (read_optional(r, K_TOKEN_RATIO, MS_PARAM_TOKEN_RATIO, &pol->token_ratio,
                    &pol->has_token) != 0)
    return -1;
  if ((r->val[K_GRPC_THROTTLING] &&
       read_named_policy(r, K_GRPC_THROTTLING, MS_POLICY_GRPC, true) != 0) ||
      (r->val[K_ENVOY_RETRY_BUDGET] &&
       read_named_policy(r, K_ENVOY_RETRY_BUDGET, MS_POLICY_ENVOY, false) !=
           0) ||
      (r->val[K_AWS_RETRY_QUOTA] &&
       read_named_policy(r, K_AWS_RETRY_QUOTA, MS_POLICY_AWS, false) != 0))
    return -1;
  return 0; /* the policy as a whole: check_service */
}

/* A number setting of the service layer: a duration (unit 1), a share
 * (unit 2: a number or a percentage), a whole number (whole 1) or a plain
 * number, in (lo, hi] (or [lo, hi] for whole numbers); 0 untouched when
 * the key is absent. */
static int read_setting(service_reader *r, int k, int unit, int whole,
                        double lo, double hi, double *out) {
  const yaml_node_t *v = r->val[k];
  if (v == NULL)
    return 0;
  const char *key = key_names[k];
  int rc = unit == 2 ? ms_yaml_get_share(r->ld, v, key, out)
           : unit    ? ms_yaml_get_unit(r->ld, v, key, 1, out)
           : whole   ? ms_yaml_get_whole(r->ld, v, key, out)
                     : ms_yaml_get_number(r->ld, v, key, out);
  if (rc != 0)
    return -1;
  return ms_yaml_check_range(r->ld, v, key, *out, lo, hi,
                             whole ? MS_BOUND_CLOSED : MS_BOUND_LO_OPEN);
}

const char *ms_calibrate_name(int i) {
  static const char *const names[] = {"service_time", "base_failure",
                                      "servers"};
  return i >= 0 && i < 3 ? names[i] : NULL;
}

/* `calibrate: [service_time, base_failure, servers]`: a list, or one name. */
static int read_calibrate(service_reader *r) {
  const yaml_node_t *v = r->val[K_CALIBRATE];
  if (v == NULL)
    return 0;
  const yaml_node_t *one[1] = {v};
  const yaml_node_t *const *items = one;
  size_t n = 1;
  const yaml_node_t *list[3];
  if (v->type == YAML_SEQUENCE_NODE) {
    size_t count =
        (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (count == 0 || count > 3)
      return ms_yaml_fail(r->ld, v,
                          "calibrate lists 1 to 3 of service_time, "
                          "base_failure, servers, not %zu items (key "
                          "'calibrate')",
                          count);
    for (size_t i = 0; i < count; i++)
      list[i] =
          yaml_document_get_node(r->ld->doc, v->data.sequence.items.start[i]);
    items = list;
    n = count;
  }
  for (size_t i = 0; i < n; i++) {
    const char *s = ms_yaml_scalar(items[i]);
    int f = 0;
    for (int j = 0; s != NULL && j < 3; j++)
      if (strcmp(s, ms_calibrate_name(j)) == 0)
        f = 1 << j;
    if (f == 0)
      return ms_yaml_fail(r->ld, items[i],
                          "calibrate takes service_time, base_failure or "
                          "servers, not %s%s%s (key 'calibrate')",
                          s ? "'" : "", s ? s : ms_yaml_kind(items[i]),
                          s ? "'" : "");
    if (r->sp->calibrate & f)
      return ms_yaml_fail(r->ld, items[i],
                          "calibrate lists %s twice (key 'calibrate')", s);
    r->sp->calibrate |= f;
  }
  return 0;
}

static int read_calibration_settings(service_reader *r) {
  ms_service_spec *sp = r->sp;
  double n = 0;
  if (read_calibrate(r) != 0 ||
      read_setting(r, K_CALIBRATION_TIME, 1, 0, 0.0, MS_MAX_CALIBRATION_TIME,
                   &sp->calibration_time) != 0 ||
      read_setting(r, K_CALIBRATION_THRESHOLD, 2, 0, 0.0,
                   MS_MAX_CALIBRATION_THRESHOLD,
                   &sp->calibration_threshold) != 0 ||
      read_setting(r, K_MISFIT_THRESHOLD, 0, 0, 0.0, MS_MAX_MISFIT_THRESHOLD,
                   &sp->misfit_threshold) != 0)
    return -1;
  if (read_setting(r, K_CALIBRATION_INTERVALS, 0, 1, 2.0,
                   MS_MAX_CALIBRATION_INTERVALS, &n) != 0)
    return -1;
  sp->calibration_intervals = (int)n;
  n = 0;
  if (read_setting(r, K_MISFIT_INTERVALS, 0, 1, 1.0, MS_MAX_MISFIT_INTERVALS,
                   &n) != 0)
    return -1;
  sp->misfit_intervals = (int)n;
  return 0;
}

/* The service layer's own settings (service.h's limits). */
static int read_settings(service_reader *r) {
  ms_service_spec *sp = r->sp;
  const yaml_node_t *hw = r->val[K_HEADROOM_WARNING];
  if (hw) {
    if (ms_yaml_get_share(r->ld, hw, "headroom_warning",
                          &sp->headroom_warning) != 0 ||
        ms_yaml_check_range(r->ld, hw, "headroom_warning", sp->headroom_warning,
                            0.0, MS_MAX_HEADROOM_WARNING,
                            MS_BOUND_LO_OPEN | MS_BOUND_HI_OPEN) != 0)
      return -1;
    sp->has_headroom_warning = true;
  }
  const yaml_node_t *sm = r->val[K_SAFETY_MARGIN];
  if (sm) {
    if (ms_yaml_get_share(r->ld, sm, "safety_margin", &sp->safety_margin) !=
            0 ||
        ms_yaml_check_range(r->ld, sm, "safety_margin", sp->safety_margin, 0.0,
                            MS_RECOMMEND_MAX_MARGIN, MS_BOUND_CLOSED) != 0)
      return -1;
    sp->has_safety_margin = true;
  }
  if (read_setting(r, K_HAZARD_HORIZON, 1, 0, 0.0, MS_MAX_HAZARD_HORIZON,
                   &sp->hazard_horizon) != 0)
    return -1;
  const yaml_node_t *hz = r->val[K_HAZARD_WARNING];
  if (hz && (ms_yaml_get_share(r->ld, hz, "hazard_warning",
                               &sp->hazard_warning) != 0 ||
             ms_yaml_check_range(r->ld, hz, "hazard_warning",
                                 sp->hazard_warning, 0.0, MS_MAX_HAZARD_WARNING,
                                 MS_BOUND_LO_OPEN | MS_BOUND_HI_OPEN) != 0))
    return -1;
  const yaml_node_t *ca = r->val[K_CLEAR_AFTER];
  if (ca) {
    double n;
    if (ms_yaml_get_whole(r->ld, ca, "clear_after", &n) != 0 ||
        ms_yaml_check_range(r->ld, ca, "clear_after", n, 1.0,
                            MS_MAX_CLEAR_AFTER, MS_BOUND_CLOSED) != 0)
      return -1;
    sp->clear_after = (int)n;
  }
  return read_calibration_settings(r);
}

/* Whether what `calibrate:` learns can be learned from the inputs. */
static int check_calibrate(service_reader *r) {
  const ms_source *in = r->sp->inputs;
  int c = r->sp->calibrate;
  const yaml_node_t *at = r->key[K_CALIBRATE];
  /* only inputs read from collectd observe anything: a constant latency
   * or error rate would never teach calibration a thing */
#define HAS(id) ms_input_observed(r->sp, id)
  if ((c & (MS_CALIBRATE_SERVICE_TIME | MS_CALIBRATE_SERVERS)) && !r->erlang)
    return ms_yaml_fail(r->ld, at,
                        "calibrate: service_time and servers apply to the "
                        "erlang model only (service '%s' uses model "
                        "capacity)",
                        r->name);
  if ((c & MS_CALIBRATE_SERVICE_TIME) &&
      !(HAS(MS_INPUT_BUSY) && HAS(MS_INPUT_COMPLETION)) &&
      !HAS(MS_INPUT_LATENCY))
    return ms_yaml_fail(r->ld, at,
                        "calibrate: service_time needs the inputs "
                        "busy_servers and completion_rate, or latency, "
                        "read from collectd (service '%s')",
                        r->name);
  if ((c & MS_CALIBRATE_BASE_FAILURE) &&
      !(HAS(MS_INPUT_ERROR) && HAS(MS_INPUT_ARRIVAL)))
    return ms_yaml_fail(r->ld, at,
                        "calibrate: base_failure needs the inputs "
                        "arrival_rate and error_rate read from collectd "
                        "(service '%s')",
                        r->name);
  if ((c & MS_CALIBRATE_SERVERS) && in[MS_INPUT_POOL].kind != MS_SOURCE_NONE)
    return ms_yaml_fail(r->ld, at,
                        "calibrate: servers is for a service without a "
                        "pool_size input; service '%s' reads its pool size",
                        r->name);
  if ((c & MS_CALIBRATE_SERVERS) && !HAS(MS_INPUT_BUSY))
    return ms_yaml_fail(r->ld, at,
                        "calibrate: servers needs the input busy_servers "
                        "read from collectd (service '%s')",
                        r->name);
  if ((in[MS_INPUT_BUSY].kind != MS_SOURCE_NONE ||
       in[MS_INPUT_COMPLETION].kind != MS_SOURCE_NONE ||
       in[MS_INPUT_LATENCY].kind != MS_SOURCE_NONE) &&
      !r->erlang)
    return ms_yaml_fail(r->ld, r->key[K_INPUTS],
                        "inputs busy_servers, completion_rate and latency "
                        "apply to the erlang model only (service '%s')",
                        r->name);
#undef HAS
  return 0;
}

/* The inputs, and whether they fit the model and give an offered load. */
static int read_inputs(service_reader *r) {
  if (r->val[K_INPUTS] == NULL)
    return ms_yaml_fail(r->ld, r->map,
                        "service '%s' needs inputs (key 'inputs')", r->name);
  if (load_inputs(r->ld, r->val[K_INPUTS], r->sp) != 0)
    return -1;
  const ms_source *in = r->sp->inputs;
  bool pool = in[MS_INPUT_POOL].kind != MS_SOURCE_NONE;
  if (!r->erlang && pool)
    return ms_yaml_fail(r->ld, r->key[K_INPUTS],
                        "input pool_size applies to the erlang model only "
                        "(service '%s')",
                        r->name);
  if (r->erlang && !r->sp->has_servers && !pool)
    return ms_yaml_fail(r->ld, r->map,
                        "service '%s' needs servers, or a pool_size input (key "
                        "'servers')",
                        r->name);
  if (in[MS_INPUT_OFFERED].kind == MS_SOURCE_NONE &&
      !(in[MS_INPUT_ARRIVAL].kind != MS_SOURCE_NONE &&
        (in[MS_INPUT_RETRY].kind != MS_SOURCE_NONE ||
         in[MS_INPUT_ERROR].kind != MS_SOURCE_NONE)))
    return ms_yaml_fail(
        r->ld, r->key[K_INPUTS],
        "service '%s': the inputs cannot give the offered load: "
        "give offered_rate, or arrival_rate with retry_rate or "
        "error_rate",
        r->name);
  return check_calibrate(r);
}

/* The parameters together, and the model solved once now, so that a
 * service it cannot analyse is an error at load time, not a warning every
 * interval. */
static int check_service(service_reader *r) {
  ms_error merr;
  if (ms_service_params_check(&r->sp->params, &merr) != MS_OK)
    return ms_yaml_fail(r->ld, r->map, "service '%s': %s", r->name, merr.msg);
  ms_landscape probe;
  if (ms_landscape_build(&r->sp->params, &probe, &merr) != MS_OK)
    return ms_yaml_fail(r->ld, r->map,
                        "service '%s': the model cannot be analysed: %s",
                        r->name, merr.msg);
  return 0;
}

/* One service, its parts read in a fixed order: the first error wins. */
static int load_service(ms_yaml_loader *ld, const yaml_node_t *map,
                        ms_service_spec *sp) {
  service_reader r = {.ld = ld, .map = map, .sp = sp};
  sp->line = (int)map->start_mark.line + 1;
  sp->column = (int)map->start_mark.column + 1;
  if (ms_yaml_walk_mapping(ld, map, &service_table, r.val, r.key) != 0 ||
      read_name(&r) != 0 || read_model_kind(&r) != 0 ||
      (r.erlang ? read_erlang(&r) : read_capacity(&r)) != 0 ||
      read_optional(&r, K_BASE_FAILURE, MS_PARAM_BASE_FAILURE,
                    &sp->params.model.base_failure, NULL) != 0 ||
      read_policy(&r) != 0 || read_settings(&r) != 0 || read_inputs(&r) != 0)
    return -1;
  return check_service(&r);
}

static const char *const top_keys[] = {"services"};
static const ms_yaml_keys top_table = {"a service file", "key", top_keys, 1};

static void free_services(ms_service_spec *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(s[i].name);
    for (int j = 0; j < MS_INPUT_COUNT; j++)
      free(s[i].inputs[j].pattern);
  }
  free(s);
}

/* The list under the key 'services' at the root, or NULL after a message. */
static const yaml_node_t *services_list(ms_yaml_loader *ld,
                                        const yaml_node_t *root) {
  const yaml_node_t *list = NULL;
  if (root == NULL)
    ms_yaml_fail(ld, NULL,
                 "the file is empty: expected 'services:' and a list");
  else if (root->type != YAML_MAPPING_NODE)
    ms_yaml_fail(ld, root, "expected a mapping with the key 'services', not %s",
                 ms_yaml_kind(root));
  else if (ms_yaml_walk_mapping(ld, root, &top_table, &list, NULL) != 0)
    return NULL;
  else if (list == NULL)
    ms_yaml_fail(ld, root, "missing key 'services'");
  else if (list->type != YAML_SEQUENCE_NODE)
    ms_yaml_fail(ld, list, "'services' must be a list of services, not %s",
                 ms_yaml_kind(list));
  else if (list->data.sequence.items.top == list->data.sequence.items.start)
    ms_yaml_fail(ld, list, "'services' is empty");
  return ld->failed ? NULL : list;
}

/* Every service of the list into *svc (calloc'd); *n says how many were
 * started, the failed one included, for free_services. */
static int load_services(ms_yaml_loader *ld, const yaml_node_t *list,
                         ms_service_spec **svc, size_t *n) {
  size_t count =
      (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
  *svc = calloc(count, sizeof **svc);
  if (*svc == NULL)
    return ms_yaml_fail(ld, list, "out of memory");
  for (size_t i = 0; i < count; i++) {
    if (ms_yaml_cancelled(ld))
      return -1;
    yaml_node_t *item =
        yaml_document_get_node(ld->doc, list->data.sequence.items.start[i]);
    *n = i + 1;
    if (load_service(ld, item, &(*svc)[i]) != 0)
      return -1;
  }
  return 0;
}

/* The scalar under the key 'name' of a service's mapping, or NULL (then
 * load_service says what is wrong). */
static const yaml_node_t *name_node(ms_yaml_loader *ld,
                                    const yaml_node_t *item) {
  if (item == NULL || item->type != YAML_MAPPING_NODE)
    return NULL;
  for (yaml_node_pair_t *p = item->data.mapping.pairs.start;
       p < item->data.mapping.pairs.top; p++) {
    const char *k = ms_yaml_scalar(yaml_document_get_node(ld->doc, p->key));
    if (k != NULL && strcmp(k, "name") == 0) {
      const yaml_node_t *v = yaml_document_get_node(ld->doc, p->value);
      return v != NULL && v->type == YAML_SCALAR_NODE ? v : NULL;
    }
  }
  return NULL;
}

/* Unique names, from the name scalars before any service is loaded or
 * solved: a file that repeats one service many times costs one pass.  A
 * hash set of the item indices, linear in the services. */
static int check_unique_names(ms_yaml_loader *ld, const yaml_node_t *list) {
  size_t n =
      (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
  size_t cap = 1;
  while (cap < 2 * n)
    cap <<= 1;
  const yaml_node_t **names = calloc(n, sizeof *names);
  size_t *slot = calloc(cap, sizeof *slot); /* index + 1, 0 = empty */
  if (names == NULL || slot == NULL) {
    free(names);
    free(slot);
    return ms_yaml_fail(ld, list, "out of memory");
  }
  for (size_t i = 0; i < n && !ld->failed; i++) {
    const yaml_node_t *item =
        yaml_document_get_node(ld->doc, list->data.sequence.items.start[i]);
    names[i] = name_node(ld, item);
    if (names[i] == NULL)
      continue;
    const char *name = ms_yaml_scalar(names[i]);
    size_t h = 5381;
    for (const char *c = name; *c; c++)
      h = h * 33 + (unsigned char)*c;
    for (size_t j = h & (cap - 1);; j = (j + 1) & (cap - 1)) {
      if (slot[j] == 0) {
        slot[j] = i + 1;
        break;
      }
      const yaml_node_t *first = names[slot[j] - 1];
      if (strcmp(ms_yaml_scalar(first), name) == 0) {
        const yaml_node_t *first_item = yaml_document_get_node(
            ld->doc, list->data.sequence.items.start[slot[j] - 1]);
        ms_yaml_fail(ld, item,
                     "service name '%s' is used twice (first at line %zu)",
                     name, first_item->start_mark.line + 1);
        break;
      }
    }
  }
  free(names);
  free(slot);
  return ld->failed ? -1 : 0;
}

/* The limits of a service file (service/service.h). */
static const ms_yaml_limits service_file_limits = {
    .max_nodes = MS_SERVICE_FILE_MAX_NODES,
    .max_anchors = MS_SERVICE_FILE_MAX_ANCHORS,
    .items_key = "services",
    .item = "service",
    .max_items = MS_SERVICE_FILE_MAX_SERVICES,
    .max_item_nodes = MS_SERVICE_MAX_NODES,
    .no_alias_items = true,
};

int ms_service_file_parse(const char *text, size_t len, const char *name,
                          ms_service_file *out, char *errbuf, size_t errlen) {
  return ms_service_file_parse_cancel(text, len, name, NULL, out, errbuf,
                                      errlen);
}

int ms_service_file_parse_cancel(const char *text, size_t len, const char *name,
                                 const atomic_bool *cancel,
                                 ms_service_file *out, char *errbuf,
                                 size_t errlen) {
  memset(out, 0, sizeof *out);
  ms_yaml_loader ld = {
      .path = name, .err = errbuf, .errlen = errlen, .cancel = cancel};
  yaml_document_t doc;
  if (ms_yaml_load_limited(text, len, name, cancel, &service_file_limits, &doc,
                           errbuf, errlen) != 0)
    return -1;
  ld.doc = &doc;
  ms_service_spec *svc = NULL;
  size_t n = 0;
  const yaml_node_t *list =
      services_list(&ld, yaml_document_get_root_node(&doc));
  if (list != NULL && check_unique_names(&ld, list) == 0)
    load_services(&ld, list, &svc, &n);
  yaml_document_delete(&doc);
  if (ld.failed) {
    free_services(svc, n);
    return -1;
  }
  out->path = strdup(name);
  out->services = svc;
  out->n_services = n;
  return 0;
}

/* Larger than any service file: 10,000 services take about 2 MB. */

int ms_service_file_load(const char *path, ms_service_file *out, char *errbuf,
                         size_t errlen) {
  memset(out, 0, sizeof *out);
  char *buf;
  size_t len;
  if (ms_yaml_read_file(path, MS_SERVICE_FILE_MAX_BYTES, &buf, &len, errbuf,
                        errlen) != 0)
    return -1;
  int r = ms_service_file_parse(buf, len, path, out, errbuf, errlen);
  free(buf);
  return r;
}

void ms_service_file_free(ms_service_file *f) {
  if (f == NULL)
    return;
  free_services(f->services, f->n_services);
  free(f->path);
  memset(f, 0, sizeof *f);
}

size_t ms_service_file_keep_shard(ms_service_file *f, int k, int n) {
  if (n == 0)
    return 0;
  size_t kept = 0;
  for (size_t i = 0; i < f->n_services; i++) {
    ms_service_spec *sp = &f->services[i];
    if (ms_shard_of(sp->name, n) != k) {
      free(sp->name);
      for (int j = 0; j < MS_INPUT_COUNT; j++)
        free(sp->inputs[j].pattern);
      continue;
    }
    f->services[kept++] = *sp;
  }
  size_t out = f->n_services - kept;
  f->n_services = kept;
  return out;
}

bool ms_input_observed(const ms_service_spec *sp, ms_input_id id) {
  ms_source_kind k = sp->inputs[id].kind;
  return k == MS_SOURCE_IDENTIFIER || k == MS_SOURCE_GLOB;
}

ms_service_settings ms_service_settings_of(const ms_service_spec *sp) {
#define OR_DEFAULT(v, d) ((v) > 0 ? (v) : (d))
  ms_service_settings s = {
      .clear_after = OR_DEFAULT(sp->clear_after, MS_DEFAULT_CLEAR_AFTER),
      .calibration_time =
          OR_DEFAULT(sp->calibration_time, MS_DEFAULT_CALIBRATION_TIME),
      .calibration_threshold = OR_DEFAULT(sp->calibration_threshold,
                                          MS_DEFAULT_CALIBRATION_THRESHOLD),
      .calibration_intervals = OR_DEFAULT(sp->calibration_intervals,
                                          MS_DEFAULT_CALIBRATION_INTERVALS),
      .misfit_threshold =
          OR_DEFAULT(sp->misfit_threshold, MS_DEFAULT_MISFIT_THRESHOLD),
      .misfit_intervals =
          OR_DEFAULT(sp->misfit_intervals, MS_DEFAULT_MISFIT_INTERVALS),
      .safety_margin = sp->has_safety_margin ? sp->safety_margin
                                             : MS_RECOMMEND_DEFAULT_MARGIN,
      .hazard_horizon =
          OR_DEFAULT(sp->hazard_horizon, MS_DEFAULT_HAZARD_HORIZON),
      .hazard_warning =
          OR_DEFAULT(sp->hazard_warning, MS_DEFAULT_HAZARD_WARNING),
  };
#undef OR_DEFAULT
  return s;
}

const ms_service_spec *ms_service_file_find(const ms_service_file *f,
                                            const char *name) {
  for (size_t i = 0; i < f->n_services; i++)
    if (strcmp(f->services[i].name, name) == 0)
      return &f->services[i];
  return NULL;
}

int ms_service_unit_warnings(const ms_service_spec *sp,
                             ms_spec_warning out[2]) {
  const ms_failure_model *m = &sp->params.model;
  if (m->kind != MS_MODEL_ERLANG || !(m->service_rate > 0))
    return 0;
  double service_time = sp->bare_service_time.seconds > 0
                            ? sp->bare_service_time.seconds
                            : 1.0 / m->service_rate;
  int n = 0;
  const struct {
    ms_param id;
    const char *key;
    const ms_bare_duration *bare;
  } keys[] = {{MS_PARAM_TIMEOUT, "timeout", &sp->bare_timeout},
              {MS_PARAM_SERVICE_TIME, "service_time", &sp->bare_service_time}};
  for (size_t i = 0; i < 2; i++) {
    const ms_bare_duration *b = keys[i].bare;
    if (b->seconds > 0 &&
        ms_bare_duration_warning(keys[i].id, keys[i].key, ": ", service_time,
                                 m->timeout, out[n].text, sizeof out[n].text)) {
      out[n].line = b->line;
      out[n].column = b->column;
      n++;
    }
  }
  return n;
}
