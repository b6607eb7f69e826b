/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: reloading the service file while collectd runs
 * (doc/configuration.md, "Reloading the service file").
 *
 * At the start of each read cycle (once per interval) the plugin compares
 * the service file's stat(2) (device, inode, size, mtime) with the last one
 * seen.  A changed file is read whole and validated as at start-up
 * (ms_service_file_parse, the loader of ms_service_file_load); only a valid
 * file replaces the services in use.  A broken file leaves them running and
 * its located error is logged once per distinct content; a deleted file
 * gets one WARNING and is loaded again, as a change, when it reappears.
 * Glue only: nothing here blocks (a FIFO or device is refused unread) or
 * floods the log.
 */
#ifndef MS_PLUGIN_RELOAD_H
#define MS_PLUGIN_RELOAD_H

#include "state.h"

/*
 * reload_service_file: look at st->path and, if it changed since the last
 * look, reload it into st: a service of the new file whose name was in use
 * keeps its service_state (its tracker through ms_tracker_carry, its
 * rate-limited complaints); a new one starts fresh; a removed one stops
 * reporting.  Only the services of the plugin's shard (st->shard_k of
 * st->shard_n, ms_service_file_keep_shard) are taken, as at start-up; the
 * others are not analysed and their inputs not read.  st->inputs is rebuilt for
 * the new set (globs are matched again by the next inputs_refresh) and takes
 * over the COUNTER memory (inputs_take_counters), so a reset is still seen as
 * one.  One INFO line says how many services were added, removed and kept.  The
 * caller holds st->lock.  Errors (a broken file, a read error, out of memory)
 * keep the services in use and are logged: an ERROR once per distinct content
 * of the file, a WARNING once while the file is missing.  The first call only
 * records the file loaded with the configuration.
 */
void reload_service_file(plugin_state *st);

/*
 * reload_load_first: the service file at start-up (collectd's
 * configuration), as ms_service_file_load: read whole (at most
 * MS_SERVICE_FILE_MAX_BYTES; a FIFO or a device refused unread) and
 * validated, into *out, which keeps only the services of shard shard_k of
 * shard_n (ms_service_file_keep_shard; shard_n 0: all); on failure -1 with
 * "path:line:column: what" in err and *out empty.  On success *w remembers the
 * file's stat (taken before the read) and the content's hash, so that the first
 * read cycle reloads a file changed since and nothing else; the caller puts *w
 * into plugin_state.reload.
 */
int reload_load_first(const char *path, int shard_k, int shard_n,
                      ms_service_file *out, reload_watch *w, char *err,
                      size_t errlen);

/* A fresh service_state for spec: a cold tracker (ms_tracker_init), no
 * complaint yet.  The services of ms_init and the new services of a
 * reload start with it. */
void reload_service_init(service_state *ss, const ms_service_spec *spec);

#endif
