/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: the plugin's inputs from collectd's value cache
 * (inputs.h): cache reads, glob matching, COUNTER resets.
 */
#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"
#include "utils_cache.h"

#include <fnmatch.h>
#include <math.h>

#include "inputs.h"

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
  glob_matches globs[MS_INPUT_COUNT];
} service_inputs;

/* The last raw value of each COUNTER identifier read: collectd turns a
 * COUNTER that went down into a wrap-around rate (2^32 or 2^64 too much),
 * which would page a storm; a decrease is taken as a reset instead.  And,
 * for every identifier read, whether it ever had a rate: a value without
 * one is then not at its first sample (no_rate_why). */
typedef struct {
  char *name;     /* NULL: empty slot */
  int is_counter; /* -1 not known yet, 0 no, 1 yes */
  uint64_t last;  /* raw counter at the last read */
  bool has_last;
  bool had_rate; /* read with a rate at least once */
  /* the cache still holds the sample that went down: the same raw value
   * and the same wrap-around rate until the next sample comes */
  bool in_reset;
  double reset_rate;
} counter_slot;

/* Open addressing, linear probing, at most half full. */
typedef struct {
  counter_slot *slot;
  size_t cap, used;
} counter_memory;

struct inputs_s {
  service_inputs *services;
  size_t n_services;
  bool has_globs;
  uint64_t names_hash; /* of collectd's identifier list at the last refresh */
  bool globs_valid;
  counter_memory counters;
};

/* ---- hashing ------------------------------------------------------------ */

/* Of the identifier list: tells when globs must be matched again (hosts
 * and metrics come and go; matching every glob against every identifier
 * each interval would cost services x identifiers). */
static uint64_t hash_names(char **names, size_t n) {
  uint64_t h = MS_FNV1A64_OFFSET;
  for (size_t i = 0; i < n; i++) {
    h = ms_fnv1a64_update(h, names[i], strlen(names[i]));
    /* a byte no name holds: "ab","c" != "a","bc" */
    h = ms_fnv1a64_update(h, "\xff", 1);
  }
  return h ^ n;
}

/* ---- globs -------------------------------------------------------------- */

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

static void free_globs(service_inputs *s) {
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    for (size_t j = 0; j < s->globs[i].n; j++)
      sfree(s->globs[i].names[j]);
    sfree(s->globs[i].names);
    s->globs[i].n = 0;
  }
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
        ms_fnv1a64(names[i] + start[component], len[component]) & ix->mask;
    ix->next[i] = ix->head[b];
    ix->head[b] = i + 1;
  }
  return 0;
}

/* Match one glob input against the names: through the index of its anchor
 * component when there is one, else against every name.  False when out
 * of memory (the matches then short: the caller matches again next read,
 * else the glob would miss names until the cache's names change). */
static bool match_glob(glob_matches *g, const char *pattern, char **names,
                       size_t n, const name_index *ix, size_t *scratch) {
  size_t cnt = 0;
  if (ix != NULL) {
    size_t b = ms_fnv1a64(pattern + g->anchor_start, g->anchor_len) & ix->mask;
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
    return true;
  g->names = calloc(cnt, sizeof(char *));
  if (g->names == NULL)
    return false;
  for (size_t k = 0; k < cnt; k++) {
    char *copy = strdup(names[scratch[k]]);
    if (copy != NULL)
      g->names[g->n++] = copy;
  }
  return g->n == cnt;
}

/* Match every glob input against the names; false when out of memory. */
static bool match_all(inputs_t *in, char **names, size_t n) {
  name_index ix[3];
  bool have_ix[3] = {false, false, false};
  size_t *scratch = calloc(n ? n : 1, sizeof *scratch);
  bool ok = scratch != NULL;
  for (size_t s = 0; s < in->n_services && scratch != NULL; s++) {
    service_inputs *si = &in->services[s];
    free_globs(si);
    for (int i = 0; i < MS_INPUT_COUNT; i++) {
      const ms_source *src = &si->spec->inputs[i];
      glob_matches *g = &si->globs[i];
      if (src->kind != MS_SOURCE_GLOB)
        continue;
      int c = g->anchor;
      if (c >= 0 && !have_ix[c])
        have_ix[c] = name_index_build(&ix[c], c, names, n) == 0;
      ok &= match_glob(g, src->pattern, names, n,
                       c >= 0 && have_ix[c] ? &ix[c] : NULL, scratch);
    }
  }
  for (int c = 0; c < 3; c++)
    if (have_ix[c])
      name_index_free(&ix[c]);
  sfree(scratch);
  return ok;
}

/*
 * Matching each glob against each name would cost globs x identifiers:
 * most of a second for 1,000 globs and 30,000 identifiers.  Instead the
 * names are indexed by each component some glob must equal (glob_anchor),
 * and a glob is matched only against the names that share it.
 */
void inputs_refresh(inputs_t *in) {
  if (!in->has_globs)
    return;
  char **names = NULL;
  cdtime_t *times = NULL;
  size_t n = 0;
  if (uc_get_names(&names, &times, &n) != 0) {
    in->globs_valid = false;
    return;
  }
  uint64_t h = hash_names(names, n);
  if (!in->globs_valid || h != in->names_hash) {
    in->globs_valid = match_all(in, names, n);
    if (in->globs_valid)
      in->names_hash = h;
  }
  for (size_t j = 0; j < n; j++)
    sfree(names[j]);
  sfree(names);
  sfree(times);
}

/* ---- COUNTER resets ----------------------------------------------------- */

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
        const char *old = m->slot[i].name;
        size_t j = ms_fnv1a64(old, strlen(old)) & (cap - 1);
        while (slot[j].name != NULL)
          j = (j + 1) & (cap - 1);
        slot[j] = m->slot[i];
      }
    sfree(m->slot);
    m->slot = slot;
    m->cap = cap;
  }
  size_t j = ms_fnv1a64(name, strlen(name)) & (m->cap - 1);
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

/* The data source type (DS_TYPE_GAUGE, ...) of identifier
 * host/plugin[-i]/type[-i] when its type has one data source; -1 when
 * not known. */
static int ds_type_of(const char *name) {
  const char *t = strrchr(name, '/');
  if (t == NULL)
    return -1;
  char type[DATA_MAX_NAME_LEN];
  sstrncpy(type, t + 1, sizeof type);
  char *dash = strchr(type, '-');
  if (dash != NULL)
    *dash = '\0';
  const data_set_t *ds = plugin_get_ds(type);
  return ds != NULL && ds->ds_num == 1 ? ds->ds[0].type : -1;
}

/* Whether the type of identifier host/plugin[-i]/type[-i] is a COUNTER. */
static int is_counter_type(const char *name) {
  return ds_type_of(name) == DS_TYPE_COUNTER;
}

/* A COUNTER that went down since the last read: a reset; or whose cache
 * still holds that sample (the same raw value read with the same rate: a
 * read cycle can come before the next sample, and the wrap-around rate
 * would page a storm).  Remembers its raw value either way. */
static bool counter_went_down(counter_memory *mem, const char *name,
                              double rate) {
  counter_slot *c = counter_lookup(mem, name);
  if (c == NULL)
    return false;
  c->had_rate = true; /* called on reads with a rate only */
  if (c->is_counter < 0)
    c->is_counter = is_counter_type(name);
  if (c->is_counter != 1)
    return false;
  bool down = false;
  value_t *raw = NULL;
  size_t m = 0;
  if (uc_get_value_by_name(name, &raw, &m) == 0 && m == 1) {
    uint64_t now = raw[0].counter;
    down = c->has_last && now < c->last;
    if (down) {
      c->in_reset = true;
      c->reset_rate = rate;
    } else if (c->in_reset && now == c->last && rate == c->reset_rate)
      down = true;
    else
      c->in_reset = false;
    c->last = now;
    c->has_last = true;
  }
  sfree(raw);
  return down;
}

/* ---- reads -------------------------------------------------------------- */

/*
 * Why name, in collectd's cache, has no rate (collectd's rate is NaN):
 *   a GAUGE whose value is NaN (a statsd timer without samples);
 *   a GAUGE outside its type's range in types.db (collectd keeps the
 *   value but gives no rate: uc_check_range);
 *   a DERIVE or COUNTER never read with a rate: its first sample
 *   (collectd needs two for a rate);
 *   a DERIVE read with a rate before: it went backwards, a rate below
 *   its type's minimum (0 in types.db), or above its maximum;
 *   a COUNTER read with a rate before: outside its type's range.
 * "First" is as far as this plugin has read it (across reloads).
 */
/* A bound of types.db as it is written there: "U" for none. */
static const char *bound_text(char buf[32], double b) {
  if (isnan(b))
    return strcpy(buf, "U");
  snprintf(buf, 32, "%g", b);
  return buf;
}

static void no_rate_why(inputs_t *in, const char *name, char *why, size_t len) {
  const data_set_t *ds = NULL;
  const char *t = strrchr(name, '/');
  if (t != NULL) {
    char type[DATA_MAX_NAME_LEN];
    sstrncpy(type, t + 1, sizeof type);
    char *dash = strchr(type, '-');
    if (dash != NULL)
      *dash = '\0';
    ds = plugin_get_ds(type);
  }
  if (ds == NULL || ds->ds_num != 1) {
    snprintf(why, len, "'%s' has no rate this interval", name);
    return;
  }
  const data_source_t *src = &ds->ds[0];
  char lo[32], hi[32];
  bound_text(lo, src->min);
  bound_text(hi, src->max);
  if (src->type == DS_TYPE_GAUGE) {
    value_t *raw = NULL;
    size_t m = 0;
    double v = NAN;
    if (uc_get_value_by_name(name, &raw, &m) == 0 && m == 1)
      v = raw[0].gauge;
    sfree(raw);
    if (isnan(v))
      /* collectd's statsd timers and tail averages are NaN in an interval
       * without a sample: nothing to wait for, unlike a counter */
      snprintf(why, len,
               "'%s' is NaN: a gauge without a value this interval (a "
               "statsd timer or a tail average without samples)",
               name);
    else
      snprintf(why, len,
               "'%s' = %g is outside [%s, %s], the range of its type '%s' "
               "in types.db: collectd gives no value for it",
               name, v, lo, hi, ds->type);
    return;
  }
  counter_slot *c = counter_lookup(&in->counters, name);
  if (c == NULL || !c->had_rate)
    snprintf(why, len,
             "'%s' has no rate yet: its first sample (collectd needs two "
             "for a rate)",
             name);
  else if (src->type == DS_TYPE_DERIVE && src->min == 0)
    snprintf(why, len,
             "'%s' went backwards (a DERIVE that decreased, as at a restart "
             "of what counts it; its type '%s' allows no rate below 0): no "
             "rate this interval",
             name, ds->type);
  else
    snprintf(why, len,
             "'%s' has no rate this interval: its rate is outside [%s, %s], "
             "the range of its type '%s' in types.db",
             name, lo, hi, ds->type);
}

input_result inputs_read_one(inputs_t *in, const char *name, double *value,
                             char *why, size_t len) {
  gauge_t *rates = NULL;
  size_t n = 0;
  if (uc_get_rate_by_name(name, &rates, &n) != 0) {
    snprintf(why, len,
             "'%s' is not in collectd's cache (not dispatched yet, "
             "or expired)",
             name);
    return INPUT_ABSENT;
  }
  input_result r = INPUT_OK;
  double v = 0;
  if (n != 1) {
    snprintf(why, len, "'%s' has %zu data sources; name a type with one", name,
             n);
    r = INPUT_BAD;
  } else if (isnan(rates[0])) {
    no_rate_why(in, name, why, len);
    r = INPUT_NO_RATE;
  } else if (isinf(rates[0])) {
    snprintf(why, len, "'%s' is infinite", name);
    r = INPUT_BAD;
  } else {
    v = rates[0];
  }
  sfree(rates);
  if (r == INPUT_OK && counter_went_down(&in->counters, name, v)) {
    snprintf(why, len,
             "'%s' went down (a COUNTER reset, read as a "
             "wrap-around by collectd): no rate this interval",
             name);
    r = INPUT_NO_RATE;
  }
  if (r == INPUT_OK)
    *value = v;
  return r;
}

/* The sum of a glob input's matches that have a rate. */
static input_result read_glob(inputs_t *in, const ms_source *src,
                              const glob_matches *g, ms_input_id i,
                              double *value, inputs_glob_sum *sum, char *why,
                              size_t len) {
  if (g->n == 0) {
    snprintf(why, len, "input %s: no identifier matches '%s'", ms_input_name(i),
             src->pattern);
    return INPUT_ABSENT;
  }
  /* One host's first sample or counter reset must not blind a fleet-wide
   * service; a match with a bad value (several data sources, infinite)
   * spoils the sum. */
  double total = 0;
  size_t usable = 0;
  input_result first_skipped = INPUT_OK;
  char sub[300];
  sum->skipped[0] = '\0';
  for (size_t j = 0; j < g->n; j++) {
    double v;
    input_result r = inputs_read_one(in, g->names[j], &v, sub, sizeof sub);
    if (r == INPUT_BAD) {
      snprintf(why, len, "input %s (glob '%s', %zu matches): %s",
               ms_input_name(i), src->pattern, g->n, sub);
      return r;
    }
    if (r != INPUT_OK) {
      if (first_skipped == INPUT_OK) {
        first_skipped = r;
        sstrncpy(sum->skipped, sub, sizeof sum->skipped);
      }
      continue;
    }
    total += v;
    usable++;
  }
  if (usable == 0) {
    snprintf(why, len,
             "input %s (glob '%s'): none of its %zu matches has "
             "a rate this interval, e.g. %s",
             ms_input_name(i), src->pattern, g->n, sum->skipped);
    return first_skipped;
  }
  sum->matched = g->n;
  sum->summed = usable;
  *value = total;
  return INPUT_OK;
}

input_result inputs_read_service(inputs_t *in, size_t service,
                                 ms_inputs *values,
                                 inputs_glob_sum glob[MS_INPUT_COUNT],
                                 char *why, size_t len) {
  const service_inputs *si = &in->services[service];
  memset(values, 0, sizeof *values);
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    glob[i].matched = glob[i].summed = 0;
  char first[512] = ""; /* the first input left out, and why */
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const ms_source *src = &si->spec->inputs[i];
    input_result r = INPUT_OK;
    char msg[512];
    if (src->kind == MS_SOURCE_IDENTIFIER) {
      char sub[300];
      r = inputs_read_one(in, src->pattern, &values->value[i], sub, sizeof sub);
      if (r != INPUT_OK)
        snprintf(msg, sizeof msg, "input %s: %s", ms_input_name(i), sub);
    } else if (src->kind == MS_SOURCE_GLOB) {
      r = read_glob(in, src, &si->globs[i], (ms_input_id)i, &values->value[i],
                    &glob[i], msg, sizeof msg);
    } else {
      continue;
    }
    /* `missing: zero`: absent is has[] false, which the service layer
     * takes as 0; a value without a rate still fails the service */
    if (r == INPUT_ABSENT && src->missing == MS_MISSING_ZERO)
      continue;
    if (r == INPUT_OK) {
      values->has[i] = true;
      continue;
    }
    ms_input_role role = ms_input_role_of(si->spec, (ms_input_id)i);
    if (role == MS_INPUT_NEEDED) {
      sstrncpy(why, msg, len);
      return r;
    }
    /* An input the verdict can go without costs only itself: the service
     * layer gets what a trace's empty cell (absent) or NaN cell holds, and
     * decides as it does for a replay; the reason is this one, which names
     * the identifier. */
    if (r != INPUT_ABSENT) {
      values->has[i] = true;
      values->value[i] = NAN;
    }
    if (first[0] == '\0' && role != MS_INPUT_UNUSED)
      sstrncpy(first, msg, sizeof first);
  }
  sstrncpy(why, first, len);
  return INPUT_OK;
}

/* ---- life --------------------------------------------------------------- */

inputs_t *inputs_create(const ms_service_spec *services, size_t n) {
  inputs_t *in = calloc(1, sizeof *in);
  if (in == NULL)
    return NULL;
  in->services = calloc(n ? n : 1, sizeof *in->services);
  if (in->services == NULL) {
    sfree(in);
    return NULL;
  }
  in->n_services = n;
  for (size_t s = 0; s < n; s++) {
    service_inputs *si = &in->services[s];
    si->spec = &services[s];
    for (int i = 0; i < MS_INPUT_COUNT; i++)
      if (si->spec->inputs[i].kind == MS_SOURCE_GLOB) {
        in->has_globs = true;
        glob_anchor(&si->globs[i], si->spec->inputs[i].pattern);
      }
  }
  return in;
}

void inputs_take_counters(inputs_t *to, inputs_t *from) {
  counter_memory m = to->counters;
  to->counters = from->counters;
  from->counters = m;
}

void inputs_destroy(inputs_t *in) {
  if (in == NULL)
    return;
  for (size_t s = 0; s < in->n_services; s++)
    free_globs(&in->services[s]);
  sfree(in->services);
  for (size_t i = 0; i < in->counters.cap; i++)
    sfree(in->counters.slot[i].name);
  sfree(in->counters.slot);
  sfree(in);
}
