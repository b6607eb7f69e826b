/*
 * collectd-metastable: the collectd read plugin.
 *
 * Glue only (doc/design.md §3): read each service's inputs from collectd's
 * value cache, run the shared per-interval step (service/tracker.c), dispatch
 * the values of doc/design.md §1.5 as <host>/metastable-<service>/<type>, and
 * send a notification when a storm starts, ends, or the tipping headroom falls
 * below its warning level.
 *
 *   <Plugin metastable>
 *     ServiceFile "/etc/collectd/metastable.yaml"
 *     Host "aggregator"     # optional: host of the dispatched values
 *     Interval 10           # optional: seconds between cycles (default:
 *                           # collectd's Interval)
 *     Values "state" "storm" "tipping_headroom"   # optional: dispatch only
 *                           # these (default: all of conf/types.db)
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

/* One glob input: the identifiers it matched at the last refresh, and the
 * component of its pattern that a match must equal (see glob_anchor). */
typedef struct {
  char **names;
  size_t n;
  int anchor; /* 0 host, 1 plugin, 2 type; -1: none */
  size_t anchor_start, anchor_len;
} glob_matches;

typedef struct {
  const ms_service_spec *spec;
  ms_tracker tracker;
  c_complain_t complaint;
  c_complain_t partial; /* a glob summed without some of its matches */
  bool in_trouble;      /* complained about, not yet declared usable */
  bool just_back;       /* declared usable again this cycle */
  unsigned ok_streak;   /* usable intervals in a row while in trouble */
  glob_matches globs[MS_INPUT_COUNT];
} service_state;

/* A service is declared usable again (and its complaint's back-off reset)
 * only after this many good intervals in a row, so inputs that flap between
 * missing and present do not defeat the log's rate limit. */
#define USABLE_AFTER 5

/* The last raw value of each COUNTER identifier read: collectd turns a
 * COUNTER that went down into a wrap-around rate (2^32 or 2^64 too much),
 * which would page a storm; a decrease is taken as a reset instead. */
typedef struct {
  char *name;     /* NULL: empty slot */
  int is_counter; /* -1 not known yet, 0 no, 1 yes */
  uint64_t last;  /* raw counter at the last read */
  bool has_last;
} counter_slot;

typedef struct {
  counter_slot *slot;
  size_t cap, used;
} counter_memory;

/* At most this many services are named one by one in the log per cycle;
 * beyond that one summary line (itself rate-limited) says how many, so a
 * fleet-wide outage of an input does not flood the log. */
#define MAX_NAMED_PER_CYCLE 5

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
  bool wanted[MS_OUT_COUNT]; /* outputs to dispatch */
  cdtime_t interval;         /* between read cycles */
  unsigned long cycles;      /* read cycles run */
  c_complain_t slow_cycle;   /* a cycle took more than half the interval */
  c_complain_t many_bad;     /* many services without usable inputs */
  counter_memory counters;   /* raw COUNTER values, for resets */
} plugin_state;

/* Configuration is read before init; init loads the file. */
static char *conf_service_file;
static char *conf_host;
static cdtime_t conf_interval;
static bool conf_values_given;
static bool conf_wanted[MS_OUT_COUNT];

static int ms_config(oconfig_item_t *ci) {
  for (int i = 0; i < ci->children_num; i++) {
    oconfig_item_t *child = ci->children + i;
    if (strcasecmp("ServiceFile", child->key) == 0) {
      if (cf_util_get_string(child, &conf_service_file) != 0)
        return -1;
    } else if (strcasecmp("Host", child->key) == 0) {
      if (cf_util_get_string(child, &conf_host) != 0)
        return -1;
      if (conf_host[0] == '\0' || strchr(conf_host, '/') != NULL ||
          strlen(conf_host) >= DATA_MAX_NAME_LEN) {
        ERROR(PLUGIN_NAME " plugin: Host \"%s\" cannot be the host of a "
                          "collectd identifier (empty, a '/', or too long)",
              conf_host);
        sfree(conf_host);
        return -1;
      }
    } else if (strcasecmp("Interval", child->key) == 0) {
      /* at least 0.1 s: a tighter loop would only spin a read thread and
       * flood the write queue; at most a day */
      double seconds =
          child->values_num == 1 && child->values[0].type == OCONFIG_TYPE_NUMBER
              ? child->values[0].value.number
              : NAN;
      if (!(seconds >= 0.1 && seconds <= 86400.0) ||
          cf_util_get_cdtime(child, &conf_interval) != 0) {
        ERROR(PLUGIN_NAME " plugin: Interval must be a number of seconds "
                          "from 0.1 to 86400");
        return -1;
      }
    } else if (strcasecmp("Values", child->key) == 0) {
      conf_values_given = true;
      for (int j = 0; j < child->values_num; j++) {
        int k = child->values[j].type == OCONFIG_TYPE_STRING
                    ? ms_output_find(child->values[j].value.string)
                    : -1;
        if (k < 0) {
          ERROR(PLUGIN_NAME " plugin: Values: argument %d (%s) is not one of "
                            "the plugin's types (see its types.db)",
                j + 1,
                child->values[j].type == OCONFIG_TYPE_STRING
                    ? child->values[j].value.string
                    : "not a string");
          return -1;
        }
        conf_wanted[k] = true;
      }
    } else {
      WARNING(PLUGIN_NAME " plugin: unknown option \"%s\" ignored "
                          "(known: ServiceFile, Host, Interval, Values)",
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
  for (size_t i = 0; i < st->counters.cap; i++)
    sfree(st->counters.slot[i].name);
  sfree(st->counters.slot);
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

/* The three components host, plugin[-instance], type[-instance] of an
 * identifier: start and length of each; false when it has not exactly two
 * slashes. */
static bool split_identifier(const char *name, size_t start[3], size_t len[3]) {
  int c = 0;
  start[0] = 0;
  size_t i = 0;
  for (; name[i] != '\0'; i++)
    if (name[i] == '/') {
      if (c == 2)
        return false;
      len[c] = i - start[c];
      start[++c] = i + 1;
    }
  if (c != 2)
    return false;
  len[2] = i - start[2];
  return true;
}

/*
 * The component of a glob pattern that every match must equal: with
 * FNM_PATHNAME no wildcard matches a slash, so a name matches only
 * component by component, and a component of the pattern without * ? [ or
 * \ matches only itself.  The longest such component is the most
 * selective.  Patterns with brackets or escapes get none (a bracket
 * expression may hold a slash): they are matched against every name.
 */
static void glob_anchor(glob_matches *g, const char *pattern) {
  size_t start[3], len[3];
  g->anchor = -1;
  if (strpbrk(pattern, "[\\") != NULL || !split_identifier(pattern, start, len))
    return;
  for (int c = 0; c < 3; c++) {
    const char *p = pattern + start[c];
    bool literal = true;
    for (size_t i = 0; i < len[c] && literal; i++)
      literal = p[i] != '*' && p[i] != '?';
    if (literal && (g->anchor < 0 || len[c] > g->anchor_len)) {
      g->anchor = c;
      g->anchor_start = start[c];
      g->anchor_len = len[c];
    }
  }
}

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}

/*
 * collectd's identifiers indexed by one component: chains of name indexes
 * (ascending) per hash bucket of the component's text.  Names that do not
 * split into three components are kept apart and offered to every lookup.
 */
typedef struct {
  size_t mask;
  size_t *head; /* bucket -> 1 + first name index, 0 when empty */
  size_t *next; /* name index -> 1 + next name index in its bucket */
  size_t *odd;  /* names without three components */
  size_t n_odd;
} name_index;

static void name_index_free(name_index *ix) {
  sfree(ix->head);
  sfree(ix->next);
  sfree(ix->odd);
}

static int name_index_build(name_index *ix, int component, char **names,
                            size_t n) {
  memset(ix, 0, sizeof *ix);
  size_t buckets = 64;
  while (buckets < 2 * n)
    buckets *= 2;
  ix->mask = buckets - 1;
  ix->head = calloc(buckets, sizeof *ix->head);
  ix->next = calloc(n ? n : 1, sizeof *ix->next);
  ix->odd = calloc(n ? n : 1, sizeof *ix->odd);
  if (ix->head == NULL || ix->next == NULL || ix->odd == NULL) {
    name_index_free(ix);
    return -1;
  }
  /* insert from the last name down, so every chain ascends */
  for (size_t i = n; i-- > 0;) {
    size_t start[3], len[3];
    if (!split_identifier(names[i], start, len)) {
      ix->odd[ix->n_odd++] = i;
      continue;
    }
    size_t b =
        hash_bytes(names[i] + start[component], len[component]) & ix->mask;
    ix->next[i] = ix->head[b];
    ix->head[b] = i + 1;
  }
  return 0;
}

/* Match one glob input against the names: through the index of its anchor
 * component when there is one, else against every name. */
static void match_glob(glob_matches *g, const char *pattern, char **names,
                       size_t n, const name_index *ix, size_t *scratch) {
  size_t cnt = 0;
  if (ix != NULL) {
    size_t b = hash_bytes(pattern + g->anchor_start, g->anchor_len) & ix->mask;
    for (size_t i = ix->head[b]; i != 0; i = ix->next[i - 1])
      if (fnmatch(pattern, names[i - 1], FNM_PATHNAME) == 0)
        scratch[cnt++] = i - 1;
    for (size_t k = ix->n_odd; k-- > 0;)
      if (fnmatch(pattern, names[ix->odd[k]], FNM_PATHNAME) == 0)
        scratch[cnt++] = ix->odd[k];
  } else {
    for (size_t j = 0; j < n; j++)
      if (fnmatch(pattern, names[j], FNM_PATHNAME) == 0)
        scratch[cnt++] = j;
  }
  if (cnt == 0)
    return;
  g->names = calloc(cnt, sizeof(char *));
  if (g->names == NULL)
    return;
  for (size_t k = 0; k < cnt; k++) {
    char *copy = strdup(names[scratch[k]]);
    if (copy != NULL)
      g->names[g->n++] = copy;
  }
}

/*
 * Match every glob input against collectd's identifier list again, when
 * that list changed since the last read (hosts and metrics come and go).
 * Matching each glob against each name would cost globs x identifiers:
 * most of a second for 1,000 globs and 30,000 identifiers.  Instead
 * the names are indexed by each component some glob must equal
 * (glob_anchor), and a glob is matched only against the names that share
 * it.
 */
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
    name_index ix[3];
    bool have_ix[3] = {false, false, false};
    size_t *scratch = calloc(n ? n : 1, sizeof *scratch);
    for (size_t s = 0; s < st->n_services && scratch != NULL; s++) {
      service_state *ss = &st->services[s];
      free_globs(ss);
      for (int i = 0; i < MS_INPUT_COUNT; i++) {
        const ms_source *src = &ss->spec->inputs[i];
        glob_matches *g = &ss->globs[i];
        if (src->kind != MS_SOURCE_GLOB)
          continue;
        int c = g->anchor;
        if (c >= 0 && !have_ix[c])
          have_ix[c] = name_index_build(&ix[c], c, names, n) == 0;
        match_glob(g, src->pattern, names, n,
                   c >= 0 && have_ix[c] ? &ix[c] : NULL, scratch);
      }
    }
    for (int c = 0; c < 3; c++)
      if (have_ix[c])
        name_index_free(&ix[c]);
    st->globs_valid = scratch != NULL;
    if (st->globs_valid)
      st->names_hash = h;
    sfree(scratch);
  }
  for (size_t j = 0; j < n; j++)
    sfree(names[j]);
  sfree(names);
  sfree(times);
}

/* The rate (DERIVE, COUNTER) or value (GAUGE) of one identifier: 0, or -1
 * with why filled in. */
static uint64_t fnv1a(const char *c) {
  uint64_t h = 1469598103934665603ULL;
  for (; *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211ULL;
  return h;
}

/* The slot of name in the counter memory, created if need be; NULL when
 * out of memory (resets then go undetected, nothing worse). */
static counter_slot *counter_lookup(counter_memory *m, const char *name) {
  if (m->used * 2 >= m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 64;
    counter_slot *slot = calloc(cap, sizeof *slot);
    if (slot == NULL)
      return NULL;
    for (size_t i = 0; i < m->cap; i++)
      if (m->slot[i].name != NULL) {
        size_t j = fnv1a(m->slot[i].name) & (cap - 1);
        while (slot[j].name != NULL)
          j = (j + 1) & (cap - 1);
        slot[j] = m->slot[i];
      }
    sfree(m->slot);
    m->slot = slot;
    m->cap = cap;
  }
  size_t j = fnv1a(name) & (m->cap - 1);
  while (m->slot[j].name != NULL && strcmp(m->slot[j].name, name) != 0)
    j = (j + 1) & (m->cap - 1);
  if (m->slot[j].name == NULL) {
    m->slot[j].name = strdup(name);
    if (m->slot[j].name == NULL)
      return NULL;
    m->slot[j].is_counter = -1;
    m->used++;
  }
  return &m->slot[j];
}

/* Whether the type of identifier host/plugin[-i]/type[-i] is a COUNTER. */
static int is_counter_type(const char *name) {
  const char *t = strrchr(name, '/');
  if (t == NULL)
    return 0;
  char type[DATA_MAX_NAME_LEN];
  sstrncpy(type, t + 1, sizeof type);
  char *dash = strchr(type, '-');
  if (dash != NULL)
    *dash = '\0';
  const data_set_t *ds = plugin_get_ds(type);
  return ds != NULL && ds->ds_num == 1 && ds->ds[0].type == DS_TYPE_COUNTER;
}

/* The rate (DERIVE, COUNTER) or value (GAUGE) of one identifier: 0, or -1
 * with why filled in (1 when the value exists but has no rate this
 * interval: a first sample, a reset). */
static int read_one(counter_memory *mem, const char *name, double *out,
                    char *why, size_t len) {
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
             "'%s' has no rate this interval (first sample, or a "
             "counter reset)",
             name);
    r = 1;
  } else if (isinf(rates[0])) {
    snprintf(why, len, "'%s' is infinite", name);
    r = -1;
  } else {
    *out = rates[0];
  }
  sfree(rates);
  counter_slot *c = r == 0 ? counter_lookup(mem, name) : NULL;
  if (c != NULL && c->is_counter < 0)
    c->is_counter = is_counter_type(name);
  if (c != NULL && c->is_counter == 1) {
    value_t *raw = NULL;
    size_t m = 0;
    if (uc_get_value_by_name(name, &raw, &m) == 0 && m == 1) {
      uint64_t now = raw[0].counter;
      if (c->has_last && now < c->last) {
        snprintf(why, len,
                 "'%s' went down (a COUNTER reset, read as a "
                 "wrap-around by collectd): no rate this interval",
                 name);
        r = 1;
      }
      c->last = now;
      c->has_last = true;
    }
    sfree(raw);
  }
  return r;
}

/* Fill in this interval's inputs; -1 with why on the first problem. */
static int read_inputs(plugin_state *st, service_state *ss, ms_inputs *in,
                       char *why, size_t len) {
  memset(in, 0, sizeof *in);
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const ms_source *src = &ss->spec->inputs[i];
    char sub[300];
    if (src->kind == MS_SOURCE_IDENTIFIER) {
      if (read_one(&st->counters, src->pattern, &in->value[i], sub,
                   sizeof sub) != 0) {
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
      /* Sum the matches that have a rate; one host's first sample or
       * counter reset must not blind a fleet-wide service.  A match with a
       * bad value (several data sources, infinite) spoils the sum. */
      double sum = 0;
      size_t usable = 0;
      char skipped[300] = "";
      for (size_t j = 0; j < g->n; j++) {
        double v;
        int r = read_one(&st->counters, g->names[j], &v, sub, sizeof sub);
        if (r < 0 && strstr(sub, "not in collectd's cache") == NULL) {
          snprintf(why, len, "input %s (glob '%s', %zu matches): %s",
                   ms_input_name(i), src->pattern, g->n, sub);
          return -1;
        }
        if (r != 0) {
          if (skipped[0] == '\0')
            sstrncpy(skipped, sub, sizeof skipped);
          continue;
        }
        sum += v;
        usable++;
      }
      if (usable == 0) {
        snprintf(why, len,
                 "input %s (glob '%s'): none of its %zu matches has "
                 "a rate this interval, e.g. %s",
                 ms_input_name(i), src->pattern, g->n, skipped);
        return -1;
      }
      if (usable < g->n)
        c_complain(LOG_INFO, &ss->partial,
                   PLUGIN_NAME " plugin: service \"%s\": input %s sums %zu "
                               "of the %zu identifiers matching '%s' (the "
                               "others have no rate yet, e.g. %s)",
                   ss->spec->name, ms_input_name(i), usable, g->n, src->pattern,
                   skipped);
      else
        c_release(LOG_INFO, &ss->partial,
                  PLUGIN_NAME " plugin: service \"%s\": input %s sums all "
                              "%zu identifiers matching '%s' again",
                  ss->spec->name, ms_input_name(i), g->n, src->pattern);
      in->value[i] = sum;
      in->has[i] = true;
    }
  }
  return 0;
}

/*
 * The outputs of one service (MS_OUTPUTS, doc/design.md §1.5) that the
 * configuration wants; observations only when observed.  One value list serves
 * them all (plugin_dispatch_values copies it): host, plugin and instance
 * are written once, then only the type and the value change; every value
 * of a read cycle carries the cycle's time.
 */
static void dispatch_report(const char *host, const char *service,
                            const ms_report *r, const bool *wanted,
                            cdtime_t now) {
  value_list_t vl = VALUE_LIST_INIT;
  value_t value;
  vl.values = &value;
  vl.values_len = 1;
  vl.time = now;
  sstrncpy(vl.host, host, sizeof vl.host);
  sstrncpy(vl.plugin, PLUGIN_NAME, sizeof vl.plugin);
  sstrncpy(vl.plugin_instance, service, sizeof vl.plugin_instance);
  for (int i = 0; i < MS_OUT_COUNT; i++) {
    if (!wanted[i] || !ms_report_output(r, (ms_output)i, &value.gauge))
      continue;
    sstrncpy(vl.type, ms_output_get((ms_output)i)->name, sizeof vl.type);
    plugin_dispatch_values(&vl);
  }
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

/* A service that reported nothing this cycle, and why. */
typedef struct {
  service_state *ss;
  char why[512];
} problem;

/*
 * Tell the operator which services report nothing, without flooding: when
 * few services have problems each is named through its own rate-limited
 * complaint (c_complain); when many do, one summary line, rate-limited too.
 * Recoveries likewise: one line per service when few, else one line.
 */
static void log_problems(plugin_state *st, const problem *named, size_t n_bad,
                         size_t n_back, const char *first_back) {
  if (n_bad <= MAX_NAMED_PER_CYCLE) {
    for (size_t i = 0; i < n_bad; i++)
      c_complain(LOG_WARNING, &named[i].ss->complaint,
                 PLUGIN_NAME " plugin: service \"%s\": %s; nothing reported "
                             "until it is usable",
                 named[i].ss->spec->name, named[i].why);
    if (n_bad == 0)
      c_release(LOG_INFO, &st->many_bad,
                PLUGIN_NAME " plugin: every service has usable inputs again");
    else
      c_release(LOG_INFO, &st->many_bad,
                PLUGIN_NAME " plugin: only %zu service%s without usable "
                            "inputs now, named one by one",
                n_bad, n_bad == 1 ? "" : "s");
  } else {
    c_complain(LOG_WARNING, &st->many_bad,
               PLUGIN_NAME " plugin: %zu of %zu services have no usable "
                           "inputs and report nothing, e.g. \"%s\": %s",
               n_bad, st->n_services, named[0].ss->spec->name, named[0].why);
  }
  if (n_back == 0)
    return;
  if (n_back > MAX_NAMED_PER_CYCLE)
    INFO(PLUGIN_NAME " plugin: %zu services have usable inputs again (e.g. "
                     "\"%s\")",
         n_back, first_back);
  for (size_t s = 0; s < st->n_services; s++) {
    service_state *ss = &st->services[s];
    if (!ss->just_back)
      continue;
    ss->just_back = false;
    if (n_back > MAX_NAMED_PER_CYCLE)
      C_COMPLAIN_INIT(&ss->complaint); /* released silently */
    else
      c_release(LOG_INFO, &ss->complaint,
                PLUGIN_NAME " plugin: service \"%s\": inputs usable again "
                            "(%d intervals in a row)",
                ss->spec->name, USABLE_AFTER);
  }
}

static int ms_read(user_data_t *ud) {
  plugin_state *st = ud->data;
  pthread_mutex_lock(&st->lock);
  cdtime_t started = cdtime();
  if (st->has_globs)
    refresh_globs(st);
  const char *host = st->host != NULL ? st->host : hostname_g;
  /* Count the services without usable inputs, keeping the first few
   * reasons, so the log names them one by one only when they are few. */
  problem named[MAX_NAMED_PER_CYCLE];
  size_t n_bad = 0, n_back = 0;
  const char *first_back = NULL;
  for (size_t s = 0; s < st->n_services; s++) {
    service_state *ss = &st->services[s];
    ms_inputs in;
    ms_step step;
    char why[512];
    bool ok = read_inputs(st, ss, &in, why, sizeof why) == 0;
    if (ok) {
      ms_tracker_step(&ss->tracker, ss->spec, &in, &step);
      ok = step.ok;
      if (!ok)
        sstrncpy(why, step.problem, sizeof why);
    }
    if (!ok) {
      if (n_bad < MAX_NAMED_PER_CYCLE) {
        named[n_bad].ss = ss;
        sstrncpy(named[n_bad].why, why, sizeof named[n_bad].why);
      }
      n_bad++;
      ss->in_trouble = true;
      ss->ok_streak = 0;
      continue;
    }
    if (ss->in_trouble && ++ss->ok_streak >= USABLE_AFTER) {
      ss->in_trouble = false;
      ss->ok_streak = 0;
      ss->just_back = true;
      if (n_back++ == 0)
        first_back = ss->spec->name;
    }
    dispatch_report(host, ss->spec->name, &step.report, st->wanted, started);
    dispatch_notes(host, ss->spec->name, &step);
  }
  log_problems(st, named, n_bad, n_back, first_back);
  /* The cost of a cycle, so an operator can see what the plugin takes from
   * the daemon: once at start, and whenever it exceeds half the interval. */
  cdtime_t took = cdtime() - started;
  cdtime_t interval = st->interval;
  if (st->cycles++ == 0)
    INFO(PLUGIN_NAME " plugin: first read cycle of %zu service%s took %.3f "
                     "ms",
         st->n_services, st->n_services == 1 ? "" : "s",
         1e3 * CDTIME_T_TO_DOUBLE(took));
  if (took > interval / 2)
    c_complain(LOG_WARNING, &st->slow_cycle,
               PLUGIN_NAME " plugin: a read cycle of %zu services took %.1f "
                           "ms, more than half the %.1f s interval",
               st->n_services, 1e3 * CDTIME_T_TO_DOUBLE(took),
               CDTIME_T_TO_DOUBLE(interval));
  else
    c_release(LOG_INFO, &st->slow_cycle,
              PLUGIN_NAME " plugin: read cycles are back under half the "
                          "interval");
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
  C_COMPLAIN_INIT(&st->slow_cycle);
  C_COMPLAIN_INIT(&st->many_bad);
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
    C_COMPLAIN_INIT(&ss->partial);
    for (int j = 0; j < MS_INPUT_COUNT; j++)
      if (ss->spec->inputs[j].kind == MS_SOURCE_GLOB) {
        st->has_globs = true;
        glob_anchor(&ss->globs[j], ss->spec->inputs[j].pattern);
      }
  }
  size_t per_service = 0;
  for (int i = 0; i < MS_OUT_COUNT; i++) {
    st->wanted[i] = !conf_values_given || conf_wanted[i];
    per_service += st->wanted[i];
  }
  st->interval = conf_interval ? conf_interval : cf_get_default_interval();
  /* collectd's write threads take some thousands of values per second:
   * say what this configuration asks of them. */
  INFO(PLUGIN_NAME " plugin: watching %zu service%s from %s; up to %zu "
                   "values per service every %.3g s (%.0f values/s)",
       st->n_services, st->n_services == 1 ? "" : "s", st->path, per_service,
       CDTIME_T_TO_DOUBLE(st->interval),
       (double)(st->n_services * per_service) /
           CDTIME_T_TO_DOUBLE(st->interval));
  user_data_t ud = {.data = st, .free_func = state_free};
  if (plugin_register_complex_read(NULL, PLUGIN_NAME, ms_read, st->interval,
                                   &ud) != 0) {
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
