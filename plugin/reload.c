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
  ss->complaint = (log_backoff){0};
  ss->partial = (log_backoff){0};
  ss->calibration = (log_backoff){0};
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

/* An error about a new content of the file: logged once per content. */
static void refuse(plugin_state *st, uint64_t hash, const char *err) {
  reload_watch *w = &st->reload;
  if (w->has_rejected && w->rejected == hash)
    return;
  w->has_rejected = true;
  w->rejected = hash;
  ERROR(PLUGIN_NAME " plugin: %s; the service file is not reloaded: the %zu "
                    "services in use keep running until it is fixed",
        err, st->n_services);
}

static int by_name(const void *a, const void *b) {
  const service_state *const *x = a, *const *y = b;
  return strcmp((*x)->spec->name, (*y)->spec->name);
}

/* The new services' states: those of the same name carried, the others
 * fresh; counts of kept services in *kept.  NULL when out of memory. */
static service_state *carry_states(plugin_state *st,
                                   const ms_service_file *file, size_t *kept) {
  service_state *next =
      calloc(file->n_services ? file->n_services : 1, sizeof *next);
  const service_state **old =
      calloc(st->n_services ? st->n_services : 1, sizeof *old);
  if (next == NULL || old == NULL) {
    free(next);
    free(old);
    return NULL;
  }
  for (size_t i = 0; i < st->n_services; i++)
    old[i] = &st->services[i];
  /* names are unique within a file: sorted, one bisection per service */
  qsort(old, st->n_services, sizeof *old, by_name);
  *kept = 0;
  for (size_t i = 0; i < file->n_services; i++) {
    const ms_service_spec *spec = &file->services[i];
    service_state key = {.spec = spec};
    const service_state *kp = &key;
    const service_state **hit =
        bsearch(&kp, old, st->n_services, sizeof *old, by_name);
    if (hit == NULL) {
      reload_service_init(&next[i], spec);
      continue;
    }
    next[i] = **hit; /* complaints, trouble streaks, tracker */
    next[i].spec = spec;
    ms_tracker_carry(&next[i].tracker, (*hit)->spec, spec);
    (*kept)++;
  }
  free(old);
  return next;
}

/* Swap in a valid new file; 0, or -1 (out of memory: nothing changed). */
static int apply(plugin_state *st, ms_service_file *file, cdtime_t started) {
  size_t kept = 0;
  service_state *next = carry_states(st, file, &kept);
  inputs_t *inputs =
      next != NULL ? inputs_create(file->services, file->n_services) : NULL;
  if (inputs == NULL) {
    free(next);
    return -1;
  }
  size_t before = st->n_services;
  inputs_take_counters(inputs, st->inputs);
  inputs_destroy(st->inputs);
  sfree(st->services);
  ms_service_file_free(&st->file);
  st->file = *file;
  memset(file, 0, sizeof *file);
  st->services = next;
  st->n_services = st->file.n_services;
  st->inputs = inputs;
  char shard[96] = "";
  if (st->shard_n > 0)
    snprintf(shard, sizeof shard, " of shard %d/%d (%zu in other shards)",
             st->shard_k, st->shard_n, st->reload.outside_shard);
  INFO(PLUGIN_NAME " plugin: service file %s reloaded: %zu service%s%s (%zu "
                   "added, %zu removed, %zu kept with their state) in %.1f ms",
       st->path, st->n_services, st->n_services == 1 ? "" : "s", shard,
       st->n_services - kept, before - kept, kept,
       1e3 * CDTIME_T_TO_DOUBLE(cdtime() - started));
  return 0;
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

/* The file is gone, or cannot be looked at: one WARNING until it is back. */
static void file_missing(plugin_state *st, int err) {
  reload_watch *w = &st->reload;
  if (w->missing)
    return;
  w->missing = true;
  char buf[256];
  WARNING(PLUGIN_NAME " plugin: service file %s %s (%s); the %zu services "
                      "in use keep running, and the file is loaded again "
                      "when it is back",
          st->path, err == ENOENT ? "was deleted" : "cannot be looked at",
          sstrerror(err, buf, sizeof buf), st->n_services);
}

void reload_service_file(plugin_state *st) {
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
  r = ms_service_file_parse(buf, len, st->path, &file, err, sizeof err);
  free(buf);
  if (r != 0) {
    refuse(st, hash, err);
    return;
  }
  size_t outside = w->outside_shard;
  w->outside_shard =
      ms_service_file_keep_shard(&file, st->shard_k, st->shard_n);
  if (apply(st, &file, started) != 0) {
    w->outside_shard = outside;
    ms_service_file_free(&file);
    memset(&w->mtime, 0, sizeof w->mtime); /* try again next cycle */
    ERROR(PLUGIN_NAME " plugin: out of memory reloading %s; the %zu "
                      "services in use keep running",
          st->path, st->n_services);
    return;
  }
  w->running = hash;
  w->has_rejected = false;
}
