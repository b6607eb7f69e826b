/* SPDX-License-Identifier: MIT */
/*
 * The write probe (write_probe.h; doc/fleets.md).
 */
#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"
#include "utils_cache.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>

#include "write_probe.h"

#define PLUGIN_NAME "metastable"

/* What the write callback saw, shared with collectd's write threads: the
 * identifier it waits for (set before the callback is registered, read
 * only after) and the last probe that came through. */
static struct {
  pthread_mutex_t lock;
  char host[DATA_MAX_NAME_LEN];
  char type_instance[DATA_MAX_NAME_LEN];
  char id[6 * DATA_MAX_NAME_LEN]; /* its name in collectd's cache */
  uint64_t value;                 /* the last probe's value */
  cdtime_t when;                  /* when it came through */
  bool any;                       /* one has */
  bool registered;                /* the callback is */
} seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* collectd's write threads call this with every value list of the daemon,
 * after its cache update: a look at the plugin name rules out nearly all
 * at once.  Always 0: the plugin writes nothing anywhere. */
static int probe_write(const data_set_t *ds, const value_list_t *vl,
                       user_data_t *ud) {
  (void)ds;
  (void)ud;
  if (vl->plugin[0] != 'm' || strcmp(vl->plugin, PLUGIN_NAME) != 0 ||
      strcmp(vl->plugin_instance, WRITE_PROBE_INSTANCE) != 0 ||
      strcmp(vl->type, WRITE_PROBE_TYPE) != 0 || vl->values_len != 1 ||
      strcmp(vl->host, seen.host) != 0 ||
      strcmp(vl->type_instance, seen.type_instance) != 0)
    return 0;
  cdtime_t now = cdtime();
  pthread_mutex_lock(&seen.lock);
  uint64_t v = (uint64_t)vl->values[0].derive;
  if (!seen.any || v > seen.value) {
    seen.value = v;
    seen.when = now;
    seen.any = true;
  }
  pthread_mutex_unlock(&seen.lock);
  return 0;
}

static void type_instance_of(char *buf, size_t len, int shard_k) {
  if (shard_k > 0)
    snprintf(buf, len, "%d", shard_k);
  else
    buf[0] = '\0';
}

int write_probe_register(write_probe *w, const char *host, int shard_k) {
  memset(w, 0, sizeof *w);
  pthread_mutex_lock(&seen.lock);
  sstrncpy(seen.host, host, sizeof seen.host);
  type_instance_of(seen.type_instance, sizeof seen.type_instance, shard_k);
  snprintf(seen.id, sizeof seen.id, "%s/%s-%s/%s%s%s", host, PLUGIN_NAME,
           WRITE_PROBE_INSTANCE, WRITE_PROBE_TYPE,
           seen.type_instance[0] ? "-" : "", seen.type_instance);
  seen.value = 0;
  seen.when = 0;
  seen.any = false;
  pthread_mutex_unlock(&seen.lock);
  write_probe_unregister(); /* one callback, whatever ran before */
  if (plugin_register_write(PLUGIN_NAME, probe_write, NULL) != 0) {
    w->lost = true;
    return -1;
  }
  seen.registered = w->registered = true;
  return 0;
}

void write_probe_unregister(void) {
  if (seen.registered)
    plugin_unregister_write(PLUGIN_NAME);
  seen.registered = false;
}

void write_probe_count(write_probe *w, uint64_t n) { w->dispatched += n; }

void write_probe_dispatch(write_probe *w, const char *host, int shard_k,
                          cdtime_t cycle_start) {
  if (!w->registered)
    return;
  value_t value;
  value_list_t vl = VALUE_LIST_INIT;
  vl.values = &value;
  vl.values_len = 1;
  /* collectd's cache refuses (and logs) a value no later than the one it
   * holds: each probe a tick later than the last */
  cdtime_t now = cdtime();
  vl.time = now > w->probe_time ? now : w->probe_time + 1;
  sstrncpy(vl.host, host, sizeof vl.host);
  sstrncpy(vl.plugin, PLUGIN_NAME, sizeof vl.plugin);
  sstrncpy(vl.plugin_instance, WRITE_PROBE_INSTANCE, sizeof vl.plugin_instance);
  sstrncpy(vl.type, WRITE_PROBE_TYPE, sizeof vl.type);
  type_instance_of(vl.type_instance, sizeof vl.type_instance, shard_k);
  value.derive = (derive_t)(w->dispatched + 1);
  if (plugin_dispatch_values(&vl) != 0)
    return; /* the last probe stays the one to wait for */
  w->dispatched++;
  w->probe = w->dispatched;
  w->probe_cycle = cycle_start;
  w->probe_time = vl.time;
}

double write_probe_observe(write_probe *w, cdtime_t now, cdtime_t interval) {
  if (!w->registered || w->probe == 0 || interval == 0)
    return NAN;
  pthread_mutex_lock(&seen.lock);
  bool any = seen.any, through = seen.any && seen.value >= w->probe;
  cdtime_t when = seen.when;
  pthread_mutex_unlock(&seen.lock);
  double iv = CDTIME_T_TO_DOUBLE(interval);
  if (through) {
    w->unseen = 0;
    w->lost = false;
    return when > w->probe_cycle
               ? CDTIME_T_TO_DOUBLE(when - w->probe_cycle) / iv
               : 0.0;
  }
  if (w->unseen < UINT_MAX)
    w->unseen++;
  /* never seen by the callback, yet in collectd's cache: a filter chain
   * keeps the values from the plugin's write callback (a write path that
   * has not reached the probe has not cached it either, since the cache
   * update comes first); no word on the write path until that is sure */
  if (!any && !w->lost) {
    value_t *v = NULL;
    size_t n = 0;
    bool cached = uc_get_value_by_name(seen.id, &v, &n) == 0 && n >= 1;
    free(v);
    if (cached) {
      w->lost = w->unseen >= WRITE_PROBE_LOST_AFTER;
      return NAN;
    }
  }
  if (w->lost)
    return NAN;
  /* not through: at least the whole interval, whatever the jitter of the
   * cycles' start */
  double so_far = now > w->probe_cycle
                      ? CDTIME_T_TO_DOUBLE(now - w->probe_cycle) / iv
                      : 0.0;
  return so_far > 1.0 ? so_far : 1.0;
}
