/*
 * collectd-metastable: the collectd read plugin.
 *
 * Glue only (DESIGN 3): read each service's inputs from collectd's value
 * cache, run the shared per-interval step (service/tracker.c), dispatch the
 * values of DESIGN 1.5 as <host>/metastable-<service>/<type>, and send a
 * notification when a storm starts, ends, or the tipping headroom falls
 * below its warning level.
 *
 *   <Plugin metastable>
 *     ServiceFile "/etc/collectd/metastable.yaml"
 *     Host "aggregator"          # optional: host of the dispatched values
 *   </Plugin>
 *
 * Nothing here may crash, block or flood the daemon: a service whose inputs
 * are missing reports nothing that interval and logs one rate-limited
 * warning (c_complain); the read callback always returns 0 so the daemon
 * never suspends it.
 */
#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"
#include "utils_cache.h"
#include "utils_complain.h"

#include <fnmatch.h>
#include <math.h>
#include <pthread.h>

#include "service.h"

#define PLUGIN_NAME "metastable"

/* One glob input: the identifiers it matched at the last refresh. */
typedef struct {
  char **names;
  size_t n;
} glob_matches;

typedef struct {
  const ms_service_spec *spec;
  ms_tracker tracker;
  c_complain_t complaint;
  glob_matches globs[MS_INPUT_COUNT];
} service_state;

typedef struct {
  pthread_mutex_t lock;
  char *path;
  char *host; /* NULL: collectd's Hostname */
  ms_service_file file;
  service_state *services;
  size_t n_services;
  bool has_globs;
  uint64_t names_hash; /* of collectd's identifier list at the last refresh */
  bool globs_valid;
} plugin_state;

/* Configuration is read before init; init loads the file. */
static char *conf_service_file;
static char *conf_host;

static int ms_config(oconfig_item_t *ci) {
  for (int i = 0; i < ci->children_num; i++) {
    oconfig_item_t *child = ci->children + i;
    if (strcasecmp("ServiceFile", child->key) == 0) {
      if (cf_util_get_string(child, &conf_service_file) != 0)
        return -1;
    } else if (strcasecmp("Host", child->key) == 0) {
      if (cf_util_get_string(child, &conf_host) != 0)
        return -1;
    } else {
      WARNING(PLUGIN_NAME " plugin: unknown option \"%s\" ignored "
                          "(known: ServiceFile, Host)",
              child->key);
    }
  }
  return 0;
}

static void free_globs(service_state *s) {
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    for (size_t j = 0; j < s->globs[i].n; j++)
      sfree(s->globs[i].names[j]);
    sfree(s->globs[i].names);
    s->globs[i].n = 0;
  }
}

static void state_free(void *p) {
  plugin_state *st = p;
  if (st == NULL)
    return;
  for (size_t i = 0; i < st->n_services; i++)
    free_globs(&st->services[i]);
  sfree(st->services);
  ms_service_file_free(&st->file);
  sfree(st->path);
  sfree(st->host);
  pthread_mutex_destroy(&st->lock);
  sfree(st);
}

/* FNV-1a over the identifier list: tells when globs must be matched again
 * (hosts and metrics come and go; matching every glob against every
 * identifier each interval would cost services x identifiers). */
static uint64_t hash_names(char **names, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) {
    for (const char *c = names[i]; *c; c++)
      h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
  }
  return h ^ n;
}

static void refresh_globs(plugin_state *st) {
  char **names = NULL;
  cdtime_t *times = NULL;
  size_t n = 0;
  if (uc_get_names(&names, &times, &n) != 0) {
    st->globs_valid = false;
    return;
  }
  uint64_t h = hash_names(names, n);
  if (!st->globs_valid || h != st->names_hash) {
    for (size_t s = 0; s < st->n_services; s++) {
      service_state *ss = &st->services[s];
      free_globs(ss);
      for (int i = 0; i < MS_INPUT_COUNT; i++) {
        const ms_source *src = &ss->spec->inputs[i];
        if (src->kind != MS_SOURCE_GLOB)
          continue;
        size_t cnt = 0;
        for (size_t j = 0; j < n; j++)
          cnt += fnmatch(src->pattern, names[j], FNM_PATHNAME) == 0;
        if (cnt == 0)
          continue;
        ss->globs[i].names = calloc(cnt, sizeof(char *));
        if (ss->globs[i].names == NULL)
          continue;
        for (size_t j = 0; j < n; j++)
          if (fnmatch(src->pattern, names[j], FNM_PATHNAME) == 0) {
            char *copy = strdup(names[j]);
            if (copy != NULL)
              ss->globs[i].names[ss->globs[i].n++] = copy;
          }
      }
    }
    st->names_hash = h;
    st->globs_valid = true;
  }
  for (size_t j = 0; j < n; j++)
    sfree(names[j]);
  sfree(names);
  sfree(times);
}

/* The rate (DERIVE, COUNTER) or value (GAUGE) of one identifier: 0, or -1
 * with why filled in. */
static int read_one(const char *name, double *out, char *why, size_t len) {
  gauge_t *rates = NULL;
  size_t n = 0;
  if (uc_get_rate_by_name(name, &rates, &n) != 0) {
    snprintf(why, len,
             "'%s' is not in collectd's cache (not dispatched yet, "
             "or expired)",
             name);
    return -1;
  }
  int r = 0;
  if (n != 1) {
    snprintf(why, len, "'%s' has %zu data sources; name a type with one", name,
             n);
    r = -1;
  } else if (isnan(rates[0])) {
    snprintf(why, len,
             "'%s' has no rate yet (first sample or counter "
             "reset)",
             name);
    r = -1;
  } else {
    *out = rates[0];
  }
  sfree(rates);
  return r;
}

/* Fill in this interval's inputs; -1 with why on the first problem. */
static int read_inputs(service_state *ss, ms_inputs *in, char *why,
                       size_t len) {
  memset(in, 0, sizeof *in);
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const ms_source *src = &ss->spec->inputs[i];
    char sub[300];
    if (src->kind == MS_SOURCE_IDENTIFIER) {
      if (read_one(src->pattern, &in->value[i], sub, sizeof sub) != 0) {
        snprintf(why, len, "input %s: %s", ms_input_name(i), sub);
        return -1;
      }
      in->has[i] = true;
    } else if (src->kind == MS_SOURCE_GLOB) {
      const glob_matches *g = &ss->globs[i];
      if (g->n == 0) {
        snprintf(why, len, "input %s: no identifier matches '%s'",
                 ms_input_name(i), src->pattern);
        return -1;
      }
      double sum = 0;
      for (size_t j = 0; j < g->n; j++) {
        double v;
        if (read_one(g->names[j], &v, sub, sizeof sub) != 0) {
          snprintf(why, len, "input %s (glob '%s', %zu matches): %s",
                   ms_input_name(i), src->pattern, g->n, sub);
          return -1;
        }
        sum += v;
      }
      in->value[i] = sum;
      in->has[i] = true;
    }
  }
  return 0;
}

static void dispatch_value(const char *host, const char *service,
                           const char *type, double v) {
  value_list_t vl = VALUE_LIST_INIT;
  value_t value = {.gauge = v};
  vl.values = &value;
  vl.values_len = 1;
  sstrncpy(vl.host, host, sizeof vl.host);
  sstrncpy(vl.plugin, PLUGIN_NAME, sizeof vl.plugin);
  sstrncpy(vl.plugin_instance, service, sizeof vl.plugin_instance);
  sstrncpy(vl.type, type, sizeof vl.type);
  plugin_dispatch_values(&vl);
}

static void dispatch_report(const char *host, const char *service,
                            const ms_step *st) {
  const ms_report *r = &st->report;
  const struct {
    const char *type;
    double v;
  } out[] = {
      {"offered_load", r->offered_load},
      {"effective_load", r->effective_load},
      {"self_inflicted_load", r->self_inflicted_load},
      {"amplification", r->amplification},
      {"failure_probability", r->failure_probability},
      {"utilization", r->utilization},
      {"tipping_load", r->tipping_load},
      {"recovery_load", r->recovery_load},
      {"tipping_distance", r->tipping_distance},
      {"tipping_headroom", r->tipping_headroom},
      {"equilibria", (double)r->equilibria},
      {"state", (double)r->state},
      {"storm", (double)r->storm},
  };
  for (size_t i = 0; i < STATIC_ARRAY_SIZE(out); i++)
    dispatch_value(host, service, out[i].type, out[i].v);
  if (st->inference.has_observed_attempts)
    dispatch_value(host, service, "observed_effective_load",
                   st->inference.observed_attempts);
  if (st->inference.has_observed_failure)
    dispatch_value(host, service, "observed_failure_ratio",
                   st->inference.observed_failure);
}

static void dispatch_notes(const char *host, const char *service,
                           const ms_step *st) {
  for (int i = 0; i < st->n_notes; i++) {
    notification_t n = {0};
    n.severity = st->notes[i].severity == MS_NOTE_FAILURE   ? NOTIF_FAILURE
                 : st->notes[i].severity == MS_NOTE_WARNING ? NOTIF_WARNING
                                                            : NOTIF_OKAY;
    n.time = cdtime();
    sstrncpy(n.message, st->notes[i].message, sizeof n.message);
    sstrncpy(n.host, host, sizeof n.host);
    sstrncpy(n.plugin, PLUGIN_NAME, sizeof n.plugin);
    sstrncpy(n.plugin_instance, service, sizeof n.plugin_instance);
    sstrncpy(n.type, "state", sizeof n.type);
    plugin_dispatch_notification(&n);
  }
}

static int ms_read(user_data_t *ud) {
  plugin_state *st = ud->data;
  pthread_mutex_lock(&st->lock);
  if (st->has_globs)
    refresh_globs(st);
  const char *host = st->host != NULL ? st->host : hostname_g;
  for (size_t s = 0; s < st->n_services; s++) {
    service_state *ss = &st->services[s];
    ms_inputs in;
    ms_step step;
    char why[512];
    if (read_inputs(ss, &in, why, sizeof why) != 0) {
      c_complain(LOG_WARNING, &ss->complaint,
                 PLUGIN_NAME " plugin: service \"%s\": %s; nothing reported "
                             "until it is back",
                 ss->spec->name, why);
      continue;
    }
    ms_tracker_step(&ss->tracker, ss->spec, &in, &step);
    if (!step.ok) {
      c_complain(LOG_WARNING, &ss->complaint,
                 PLUGIN_NAME " plugin: service \"%s\": %s; nothing reported "
                             "until it is usable",
                 ss->spec->name, step.problem);
      continue;
    }
    c_release(LOG_INFO, &ss->complaint,
              PLUGIN_NAME " plugin: service \"%s\": inputs usable again",
              ss->spec->name);
    dispatch_report(host, ss->spec->name, &step);
    dispatch_notes(host, ss->spec->name, &step);
  }
  pthread_mutex_unlock(&st->lock);
  return 0; /* a non-zero return would make collectd suspend the plugin */
}

static int ms_init(void) {
  if (conf_service_file == NULL) {
    ERROR(PLUGIN_NAME " plugin: no ServiceFile configured: add ServiceFile "
                      "\"/etc/collectd/metastable.yaml\" to <Plugin "
                      "metastable>");
    return -1;
  }
  plugin_state *st = calloc(1, sizeof *st);
  if (st == NULL) {
    ERROR(PLUGIN_NAME " plugin: out of memory");
    return -1;
  }
  pthread_mutex_init(&st->lock, NULL);
  st->path = conf_service_file;
  st->host = conf_host;
  conf_service_file = conf_host = NULL;
  char err[1024];
  if (ms_service_file_load(st->path, &st->file, err, sizeof err) != 0) {
    ERROR(PLUGIN_NAME " plugin: %s; the service file is rejected whole", err);
    state_free(st);
    return -1;
  }
  st->n_services = st->file.n_services;
  st->services = calloc(st->n_services, sizeof *st->services);
  if (st->services == NULL) {
    ERROR(PLUGIN_NAME " plugin: out of memory for %zu services",
          st->n_services);
    state_free(st);
    return -1;
  }
  for (size_t i = 0; i < st->n_services; i++) {
    service_state *ss = &st->services[i];
    ss->spec = &st->file.services[i];
    ms_tracker_init(&ss->tracker);
    C_COMPLAIN_INIT(&ss->complaint);
    for (int j = 0; j < MS_INPUT_COUNT; j++)
      st->has_globs |= ss->spec->inputs[j].kind == MS_SOURCE_GLOB;
  }
  INFO(PLUGIN_NAME " plugin: watching %zu service%s from %s", st->n_services,
       st->n_services == 1 ? "" : "s", st->path);
  user_data_t ud = {.data = st, .free_func = state_free};
  if (plugin_register_complex_read(NULL, PLUGIN_NAME, ms_read, 0, &ud) != 0) {
    ERROR(PLUGIN_NAME " plugin: cannot register the read callback");
    state_free(st);
    return -1;
  }
  return 0;
}

static int ms_shutdown(void) {
  sfree(conf_service_file);
  sfree(conf_host);
  return 0;
}

void module_register(void) {
  plugin_register_complex_config(PLUGIN_NAME, ms_config);
  plugin_register_init(PLUGIN_NAME, ms_init);
  plugin_register_shutdown(PLUGIN_NAME, ms_shutdown);
}
