/* SPDX-License-Identifier: MIT */
/*
 * The write probe (doc/fleets.md, "Pacing on the write path's feedback"):
 * how long collectd's write path takes to write what one read cycle
 * dispatched.
 *
 * collectd 5.12 queues every dispatched value list and its write threads
 * take them in order (src/daemon/plugin.c: plugin_write_enqueue,
 * plugin_write_thread); each one updates the cache and calls every write
 * callback with it.  After its services, every cycle dispatches one more
 * value, the probe: <host>/metastable-write/values_dispatched (type
 * instance K with Shard "K/N"), a DERIVE, the values the plugin has
 * dispatched since it started, itself included.  The plugin's own write
 * callback (registered by write_probe_register) notes the time the probe
 * comes through.  At the next cycle's start, write_probe_observe says how
 * long after the last cycle began the write path had written all of that
 * cycle's values: what pacing_observe (pacing.h) paces new series on.
 *
 * Glue only (doc/design.md §3); collectd's headers come first.
 */
#ifndef MS_PLUGIN_WRITE_PROBE_H
#define MS_PLUGIN_WRITE_PROBE_H

#include <stdbool.h>
#include <stdint.h>

/* The probe's plugin instance and type (conf/types.db).  A service's
 * outputs are other types, so a service called "write" is not taken for
 * it. */
#define WRITE_PROBE_INSTANCE "write"
#define WRITE_PROBE_TYPE "values_dispatched"
/* Cycles in a row with a probe dispatched, none ever seen by the write
 * callback, after which a probe in collectd's cache makes the probe lost
 * (write_probe_observe). */
#define WRITE_PROBE_LOST_AFTER 2

/* The read cycle's side, under the plugin's lock. */
typedef struct {
  uint64_t dispatched;  /* values dispatched since the start (counted by
                           write_probe_count), the probes included */
  uint64_t probe;       /* the last probe's value; 0: none yet */
  cdtime_t probe_cycle; /* the start of the cycle it closed */
  cdtime_t probe_time;  /* its time (each probe's later than the last) */
  unsigned unseen;      /* cycles in a row with the probe not yet seen */
  bool registered;      /* the write callback is registered */
  bool lost;            /* never seen: pacing goes without feedback */
} write_probe;

/* Sets *w up and registers the write callback (plugin_register_write,
 * name "metastable") for the probe of host (collectd's Hostname or the
 * plugin's Host) and shard_k (0: no Shard).  Returns 0, or -1 when
 * collectd refused the callback: w->lost is then set, and the pacing goes
 * without feedback. */
int write_probe_register(write_probe *w, const char *host, int shard_k);

/* Unregisters the write callback when registered (shutdown). */
void write_probe_unregister(void);

/* Counts n values the plugin dispatched (plugin_dispatch_values returned
 * 0). */
void write_probe_count(write_probe *w, uint64_t n);

/* Dispatches the probe at the end of the cycle that began at cycle_start,
 * for host and shard_k as registered. */
void write_probe_dispatch(write_probe *w, const char *host, int shard_k,
                          cdtime_t cycle_start);

/* At the start of a cycle (now), of the last one: the time from its start
 * until the write path had written its probe, and with it every value the
 * cycle dispatched before it, as a share of interval (>= 0); when the probe
 * has not come through yet, the time so far, and at least 1 (the cycles'
 * jitter aside, a whole interval has passed); NAN when there is nothing
 * to say: no probe dispatched yet; or no probe ever seen by the callback
 * while collectd's cache holds one (a filter chain that sends values to
 * named write plugins only), which after WRITE_PROBE_LOST_AFTER cycles
 * makes the probe lost (w->lost; found again when the callback sees
 * one).  A write path that never reaches the probe, or a filter chain
 * that drops it before the cache, reads as a write path that is
 * behind. */
double write_probe_observe(write_probe *w, cdtime_t now, cdtime_t interval);

#endif
