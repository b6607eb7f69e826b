/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: reloading the service file while collectd runs
 * (doc/configuration.md, "Reloading the service file").
 *
 * A thread of the plugin's own (reload_start, from ms_init after the
 * synchronous first load) does the reload's work off collectd's read
 * path.  At the end of each read cycle (reload_kick, once per interval)
 * it compares the service file's stat(2) (device, inode, size, mtime) with
 * the last one seen.  A changed file is read whole and validated as at
 * start-up (ms_service_file_parse_cancel, the loader of
 * ms_service_file_load), cut to the plugin's shard, and its services built
 * (fresh states, the map of the names kept, the inputs); the complete set
 * waits in a pending slot.  The next read cycle swaps it in at its start
 * (reload_swap): a copy of each kept service's state and a pointer swap,
 * a few ms for 50,000 services.  A broken file leaves the services running
 * and costs the read cycle nothing; its located error is logged once per
 * distinct content.  A deleted file gets one WARNING and is loaded again,
 * as a change, when it reappears.  Shutdown (reload_stop) cancels a parse
 * under way at its next check and joins the thread.  Every line goes
 * through ms_log (state.h), under the plugin's bound of 30 lines a minute.
 * Nothing here blocks the read cycle (a FIFO or device is refused unread).
 */
#ifndef MS_PLUGIN_RELOAD_H
#define MS_PLUGIN_RELOAD_H

#include "state.h"

/*
 * reload_start: start the reload thread of st (collectd's
 * plugin_thread_create), after st->file, st->services, st->inputs and
 * st->reload hold the file loaded with the configuration.  0, or -1 (the
 * thread could not be created: nothing to undo).
 */
int reload_start(plugin_state *st);

/*
 * reload_kick: ask the thread for one look at st->path (the end of a read
 * cycle; the caller holds st->lock).  A changed valid file becomes the
 * pending set; while one is pending, the look waits for the next kick.
 * Never blocks on the thread's work: only its mutex, held for a pointer.
 */
void reload_kick(plugin_state *st);

/*
 * reload_swap: at the start of a read cycle (the caller holds st->lock),
 * swap a pending set in: a service whose name was in use keeps its
 * service_state (its tracker through ms_tracker_carry, its rate-limited
 * complaints); a new one starts fresh; a removed one stops reporting.
 * Only the services of the plugin's shard (st->shard_k of st->shard_n,
 * ms_service_file_keep_shard) are taken, as at start-up.  The new inputs
 * take over the COUNTER memory (inputs_take_counters), so a reset is still
 * seen as one; globs are matched again by the next inputs_refresh.  One
 * INFO line says how many services were added, removed and kept, and the
 * time read beside the cycle and swapped in.  The old set goes back to the
 * thread to be freed.  Nothing pending: nothing done.  Allocates nothing.
 */
void reload_swap(plugin_state *st);

/*
 * reload_stop: stop and join the thread (shutdown: state_free, which
 * collectd 5.12 calls when it destroys the read callbacks, before the
 * shutdown callbacks).  A parse under way sees the cancel flag at its next
 * check (each service, and the YAML reader's) and returns; a pending set
 * is freed.  Nothing to do when the thread never started.
 */
void reload_stop(plugin_state *st);

/*
 * reload_settle: wait until the thread has no look asked for, none under
 * way and nothing to free (tests: the look a read cycle asked for is done,
 * its set pending or its error logged).
 */
void reload_settle(plugin_state *st);

/*
 * reload_load_first: the service file at start-up (collectd's
 * configuration), as ms_service_file_load: read whole (at most
 * MS_SERVICE_FILE_MAX_BYTES; a FIFO or a device refused unread) and
 * validated, into *out, which keeps only the services of shard shard_k of
 * shard_n (ms_service_file_keep_shard; shard_n 0: all); on failure -1 with
 * "path:line:column: what" in err and *out empty.  On success *w remembers the
 * file's stat (taken before the read) and the content's hash, so that the
 * reload thread's first look reloads a file changed since and nothing else; the
 * caller puts *w into plugin_state.reload.
 */
int reload_load_first(const char *path, int shard_k, int shard_n,
                      ms_service_file *out, reload_watch *w, char *err,
                      size_t errlen);

/* Fresh states for the services of f: services[i] of f->services[i],
 * each allocated alone (reload_service_init).  NULL when out of memory. */
service_state **reload_states_create(const ms_service_file *f);

/* Free states[0 .. n-1] (NULL ones skipped) and the array. */
void reload_states_free(service_state **states, size_t n);

/* A fresh service_state for spec: a cold tracker (ms_tracker_init), no
 * complaint yet.  The services of ms_init and the new services of a
 * reload start with it. */
void reload_service_init(service_state *ss, const ms_service_spec *spec);

#endif
