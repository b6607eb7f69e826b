/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: reloading the service file while collectd runs
 * (plugin/reload.h; doc/configuration.md, "Reloading the service file").
 * Glue only (doc/design.md §3): the tracker's part of a reload is
 * ms_tracker_carry (service/tracker.c).
 */
#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "reload.h"
#include "yamldoc.h" /* ms_yaml_read_file */

#define PLUGIN_NAME "metastable"

void reload_service_init(service_state *ss, const ms_service_spec *spec) {
  memset(ss, 0, sizeof *ss);
  ss->spec = spec;
  pacing_service_init(&ss->pacing);
  ms_tracker_init(&ss->tracker);
  /* stall_tolerance's searches wait for the end of the read cycle
   * (run_searches in metastable.c) */
  ss->tracker.tolerance_defer = true;
  /* and so do the points of its time-to-storm table */
  ss->tracker.hazard_defer = true;
  /* and the landscapes of safe_retries' first bisection (run_safe_builds) */
  ss->tracker.safe_defer = true;
  ss->complaint = (log_backoff){0};
  ss->partial = (log_backoff){0};
  ss->calibration = (log_backoff){0};
}

service_state **reload_states_create(const ms_service_file *f) {
  size_t n = f->n_services;
  service_state **states = calloc(n ? n : 1, sizeof *states);
  if (states == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    states[i] = malloc(sizeof *states[i]);
    if (states[i] == NULL) {
      reload_states_free(states, i);
      return NULL;
    }
    reload_service_init(states[i], &f->services[i]);
  }
  return states;
}

void reload_states_free(service_state **states, size_t n) {
  if (states == NULL)
    return;
  for (size_t i = 0; i < n; i++)
    free(states[i]);
  free(states);
}

static void remember_stat(reload_watch *w, const struct stat *sb) {
  w->dev = sb->st_dev;
  w->ino = sb->st_ino;
  w->size = sb->st_size;
  w->mtime = sb->st_mtim;
}

static bool same_stat(const reload_watch *w, const struct stat *sb) {
  return w->dev == sb->st_dev && w->ino == sb->st_ino &&
         w->size == sb->st_size && w->mtime.tv_sec == sb->st_mtim.tv_sec &&
         w->mtime.tv_nsec == sb->st_mtim.tv_nsec;
}

/* The file's contents (*buf, *len, malloc'd) and their hash; on a read
 * error, -1 with the error in err and the hash of the error's text. */
static int read_contents(const char *path, char **buf, size_t *len,
                         uint64_t *hash, char *err, size_t errlen) {
  if (ms_yaml_read_file(path, MS_SERVICE_FILE_MAX_BYTES, buf, len, err,
                        errlen) != 0) {
    *hash = ms_fnv1a64(err, strlen(err)) ^ 1; /* never a content's by chance */
    return -1;
  }
  /* a content's fingerprint, to know a content already refused (or in
   * use) without keeping it */
  *hash = ms_fnv1a64(*buf, *len);
  return 0;
}

/* An error about a new content of the file: logged once per content
 * (reload thread). */
static void refuse(plugin_state *st, uint64_t hash, const char *err) {
  reload_watch *w = &st->reload;
  if (w->has_rejected && w->rejected == hash)
    return;
  w->has_rejected = true;
  w->rejected = hash;
  ms_log_outcome(st, LOG_ERR,
                 PLUGIN_NAME
                 " plugin: %s; the service file is not reloaded: the %zu "
                 "services in use keep running until it is fixed",
                 err, st->n_services);
}

/* A new file's services, built by the reload thread; swapped in by the
 * read cycle (reload_swap).  Swapped out, the same holds the old set until
 * the thread frees it. */
struct reload_set {
  ms_service_file file;
  service_state **services; /* fresh states; a kept one is moved in at the
                               swap (NULL until then) */
  size_t *from;             /* from[i]: the running service of services[i]'s
                               name, or NOT_KEPT */
  size_t kept;
  inputs_t *inputs;
  uint64_t hash;
  size_t outside_shard;
  cdtime_t built; /* the thread's time: read, check, build */
};

#define NOT_KEPT SIZE_MAX

static void set_free(struct reload_set *set) {
  if (set == NULL)
    return;
  inputs_destroy(set->inputs);
  reload_states_free(set->services, set->file.n_services);
  free(set->from);
  ms_service_file_free(&set->file);
  free(set);
}

/* Names of services[idx[..]], for sorting an index. */
static const ms_service_spec *sort_specs;
static int by_name(const void *a, const void *b) {
  const size_t *x = a, *y = b;
  return strcmp(sort_specs[*x].name, sort_specs[*y].name);
}

/* The new set of file (taken over): fresh states, the map of the names
 * kept from the running services (read on the reload thread: they change
 * only when a set this thread built is swapped in, and none is pending),
 * the inputs.  NULL when out of memory (file left to the caller). */
static struct reload_set *set_build(const plugin_state *st,
                                    ms_service_file *file) {
  struct reload_set *set = calloc(1, sizeof *set);
  size_t n = file->n_services, n_old = st->n_services;
  size_t *old = calloc(n_old ? n_old : 1, sizeof *old);
  if (set == NULL || old == NULL)
    goto fail;
  set->services = calloc(n ? n : 1, sizeof *set->services);
  set->from = calloc(n ? n : 1, sizeof *set->from);
  if (set->services == NULL || set->from == NULL)
    goto fail;
  for (size_t i = 0; i < n_old; i++)
    old[i] = i;
  /* names are unique within a file: sorted, one bisection per service
   * (sort_specs is this thread's alone: one plugin instance) */
  sort_specs = st->file.services;
  qsort(old, n_old, sizeof *old, by_name);
  for (size_t i = 0; i < n; i++) {
    const ms_service_spec *spec = &file->services[i];
    size_t lo = 0, hi = n_old;
    set->from[i] = NOT_KEPT;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      int c = strcmp(spec->name, st->file.services[old[mid]].name);
      if (c == 0) {
        set->from[i] = old[mid];
        set->kept++;
        break;
      }
      if (c < 0)
        hi = mid;
      else
        lo = mid + 1;
    }
    if (set->from[i] == NOT_KEPT) {
      set->services[i] = malloc(sizeof *set->services[i]);
      if (set->services[i] == NULL)
        goto fail;
      reload_service_init(set->services[i], spec);
    }
  }
  set->inputs = inputs_create(file->services, n);
  if (set->inputs == NULL)
    goto fail;
  set->file = *file;
  memset(file, 0, sizeof *file);
  free(old);
  return set;
fail:
  if (set != NULL) {
    reload_states_free(set->services, n);
    free(set->from);
  }
  free(set);
  free(old);
  return NULL;
}

void reload_swap(plugin_state *st) {
  reload_thread *rt = &st->reloader;
  if (!rt->running)
    return;
  pthread_mutex_lock(&rt->mu);
  struct reload_set *set = rt->pending;
  rt->pending = NULL;
  pthread_mutex_unlock(&rt->mu);
  if (set == NULL)
    return;
  cdtime_t started = cdtime();
  for (size_t i = 0; i < set->file.n_services; i++) {
    if (set->from[i] == NOT_KEPT)
      continue;
    /* moved, not copied: complaints, trouble streaks, tracker */
    service_state *ss = st->services[set->from[i]];
    st->services[set->from[i]] = NULL; /* the old set frees the others */
    const ms_service_spec *was = ss->spec;
    ss->spec = &set->file.services[i];
    ms_tracker_carry(&ss->tracker, was, ss->spec);
    set->services[i] = ss;
  }
  inputs_take_counters(set->inputs, st->inputs);
  size_t before = st->n_services, kept = set->kept;
  size_t outside = set->outside_shard;
  cdtime_t built = set->built;
  /* the set takes the old services, for the thread to free */
  ms_service_file file = st->file;
  service_state **services = st->services;
  inputs_t *inputs = st->inputs;
  st->file = set->file;
  st->services = set->services;
  st->n_services = st->file.n_services;
  st->inputs = set->inputs;
  set->file = file;
  set->services = services;
  set->inputs = inputs;
  pthread_mutex_lock(&rt->mu);
  struct reload_set *stale = rt->retired; /* not freed yet: rare */
  rt->retired = set;
  pthread_cond_broadcast(&rt->cv);
  pthread_mutex_unlock(&rt->mu);
  set_free(stale);
  char shard[96] = "";
  if (st->shard_n > 0)
    snprintf(shard, sizeof shard, " of shard %d/%d (%zu in other shards)",
             st->shard_k, st->shard_n, outside);
  ms_log_outcome(st, LOG_INFO,
                 PLUGIN_NAME
                 " plugin: service file %s reloaded: %zu service%s%s (%zu "
                 "added, %zu removed, %zu kept with their state); read "
                 "in %.1f ms beside the read cycle, swapped in %.1f ms",
                 st->path, st->n_services, st->n_services == 1 ? "" : "s",
                 shard, st->n_services - kept, before - kept, kept,
                 1e3 * CDTIME_T_TO_DOUBLE(built),
                 1e3 * CDTIME_T_TO_DOUBLE(cdtime() - started));
}

int reload_load_first(const char *path, int shard_k, int shard_n,
                      ms_service_file *out, reload_watch *w, char *err,
                      size_t errlen) {
  memset(w, 0, sizeof *w);
  memset(out, 0, sizeof *out);
  struct stat sb;
  bool looked = stat(path, &sb) == 0; /* before the read: a later change
                                         is seen by the first cycle */
  char *buf;
  size_t len;
  uint64_t hash;
  if (read_contents(path, &buf, &len, &hash, err, errlen) != 0)
    return -1;
  int r = ms_service_file_parse(buf, len, path, out, err, errlen);
  free(buf);
  if (r != 0)
    return -1;
  w->outside_shard = ms_service_file_keep_shard(out, shard_k, shard_n);
  if (looked) {
    w->started = true;
    remember_stat(w, &sb);
    w->running = hash;
  }
  return 0;
}

/* The file is gone, or cannot be looked at: one WARNING until it is back
 * (reload thread). */
static void file_missing(plugin_state *st, int err) {
  reload_watch *w = &st->reload;
  if (w->missing)
    return;
  w->missing = true;
  char buf[256];
  ms_log_outcome(
      st, LOG_WARNING,
      PLUGIN_NAME " plugin: service file %s %s (%s); the %zu services "
                  "in use keep running, and the file is loaded again "
                  "when it is back",
      st->path, err == ENOENT ? "was deleted" : "cannot be looked at",
      sstrerror(err, buf, sizeof buf), st->n_services);
}

/* One look at the file (reload thread, no pending set): a changed,
 * valid file becomes the pending set. */
static void look(plugin_state *st) {
  reload_thread *rt = &st->reloader;
  reload_watch *w = &st->reload;
  cdtime_t started = cdtime();
  struct stat sb;
  if (stat(st->path, &sb) != 0) {
    w->started = true; /* what comes back is loaded as a change */
    file_missing(st, errno);
    return;
  }
  bool back = w->missing;
  if (w->started && !back && same_stat(w, &sb))
    return;
  char err[1024], *buf = NULL;
  size_t len = 0;
  uint64_t hash;
  int r = read_contents(st->path, &buf, &len, &hash, err, sizeof err);
  bool first = !w->started; /* the file the configuration loaded */
  w->started = true;
  w->missing = false;
  remember_stat(w, &sb);
  if (first && r == 0) {
    w->running = hash;
    free(buf);
    return;
  }
  if (r != 0) {
    refuse(st, hash, err);
    return;
  }
  if (hash == w->running && !back) { /* touched, or put back as it was */
    w->has_rejected = false;         /* a broken content again is said again */
    free(buf);
    return;
  }
  if (w->has_rejected && hash == w->rejected) {
    free(buf);
    return;
  }
  ms_service_file file;
  r = ms_service_file_parse_cancel(buf, len, st->path, &rt->stop, &file, err,
                                   sizeof err);
  free(buf);
  if (atomic_load(&rt->stop)) { /* shutdown: nothing more to say */
    if (r == 0)
      ms_service_file_free(&file);
    return;
  }
  if (r != 0) {
    refuse(st, hash, err);
    return;
  }
  size_t outside = ms_service_file_keep_shard(&file, st->shard_k, st->shard_n);
  struct reload_set *set = set_build(st, &file);
  if (set == NULL) {
    ms_service_file_free(&file);
    memset(&w->mtime, 0, sizeof w->mtime); /* try again next look */
    ms_log_outcome(st, LOG_ERR,
                   PLUGIN_NAME " plugin: out of memory reloading %s; the %zu "
                               "services in use keep running",
                   st->path, st->n_services);
    return;
  }
  set->hash = hash;
  set->outside_shard = outside;
  set->built = cdtime() - started;
  w->outside_shard = outside;
  w->running = hash;
  w->has_rejected = false;
  pthread_mutex_lock(&rt->mu);
  rt->pending = set;
  pthread_mutex_unlock(&rt->mu);
}

static void *reload_main(void *arg) {
  plugin_state *st = arg;
  reload_thread *rt = &st->reloader;
  pthread_mutex_lock(&rt->mu);
  for (;;) {
    while (!rt->kicked && rt->retired == NULL && !atomic_load(&rt->stop))
      pthread_cond_wait(&rt->cv, &rt->mu);
    if (atomic_load(&rt->stop))
      break;
    struct reload_set *retired = rt->retired;
    bool kicked = rt->kicked && rt->pending == NULL;
    rt->retired = NULL;
    rt->kicked = false;
    rt->busy = true;
    pthread_mutex_unlock(&rt->mu);
    set_free(retired);
    if (kicked)
      look(st);
    pthread_mutex_lock(&rt->mu);
    rt->busy = false;
    pthread_cond_broadcast(&rt->cv);
  }
  pthread_mutex_unlock(&rt->mu);
  return NULL;
}

int reload_start(plugin_state *st) {
  reload_thread *rt = &st->reloader;
  memset(rt, 0, sizeof *rt);
  atomic_init(&rt->stop, false);
  if (pthread_mutex_init(&rt->mu, NULL) != 0)
    return -1;
  if (pthread_cond_init(&rt->cv, NULL) != 0) {
    pthread_mutex_destroy(&rt->mu);
    return -1;
  }
  if (plugin_thread_create(&rt->thread, reload_main, st, "metastable rld") !=
      0) {
    pthread_cond_destroy(&rt->cv);
    pthread_mutex_destroy(&rt->mu);
    return -1;
  }
  rt->running = true;
  return 0;
}

void reload_kick(plugin_state *st) {
  reload_thread *rt = &st->reloader;
  if (!rt->running)
    return;
  pthread_mutex_lock(&rt->mu);
  rt->kicked = true;
  pthread_mutex_unlock(&rt->mu);
  pthread_cond_broadcast(&rt->cv); /* the thread does not wait for mu */
}

void reload_settle(plugin_state *st) {
  reload_thread *rt = &st->reloader;
  if (!rt->running)
    return;
  pthread_mutex_lock(&rt->mu);
  while (rt->kicked || rt->busy || rt->retired != NULL)
    pthread_cond_wait(&rt->cv, &rt->mu);
  pthread_mutex_unlock(&rt->mu);
}

void reload_stop(plugin_state *st) {
  reload_thread *rt = &st->reloader;
  if (!rt->running)
    return;
  atomic_store(&rt->stop, true); /* a parse under way stops at its next check */
  pthread_mutex_lock(&rt->mu);
  pthread_cond_broadcast(&rt->cv);
  pthread_mutex_unlock(&rt->mu);
  pthread_join(rt->thread, NULL);
  rt->running = false;
  set_free(rt->pending);
  set_free(rt->retired);
  rt->pending = rt->retired = NULL;
  pthread_cond_destroy(&rt->cv);
  pthread_mutex_destroy(&rt->mu);
}
