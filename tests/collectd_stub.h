/* SPDX-License-Identifier: MIT */
/*
 * A test fixture: a stand-in for the parts of collectd 5.12's daemon that
 * the metastable plugin calls, so that the plugin's tests
 * (tests/check_plugin_globs, tests/check_plugin_inputs,
 * tests/check_plugin_log) and
 * bench/bench_plugin run plugin/metastable.c and plugin/inputs.c
 * themselves, the very code the daemon runs, without a daemon.  Declared by
 * collectd's own headers; defined in collectd_stub.c:
 *
 *   value cache   uc_get_rate_by_name, uc_get_value_by_name, uc_get_names:
 *                 a table sorted by name, searched by bisection under a
 *                 mutex, results malloc'd per call (the daemon: an AVL tree
 *                 under a mutex, same copies); plugin_get_ds: every type
 *                 has one GAUGE data source but "counter" (one COUNTER)
 *                 and "derive" (one DERIVE), with types.db's ranges
 *                 (COUNTER and DERIVE 0 to U, "percent" 0 to 100.1);
 *   dispatch      plugin_dispatch_values clones the value list under a
 *                 mutex, as the daemon's write queue does, and writes it at
 *                 once: the write callback registered
 *                 (plugin_register_write) is called with it, then the clone
 *                 freed (the daemon's write threads take it from the queue
 *                 concurrently and do the cache update and the write
 *                 plugins: not the plugin's cost); or it queues while the
 *                 test holds the write path (stub_write_hold);
 *                 plugin_dispatch_notification counts (the daemon calls the
 *                 notification plugins, none by default);
 *   registration  plugin_register_*: remembers the callbacks;
 *   threads       plugin_thread_create: pthread_create;
 *   logging       plugin_log formats the message and counts it by level
 *                 (the plugin's back-off is its own: plugin/state.h);
 *   utilities     cdtime (the real clock, or the test's: stub_clock_set),
 *                 the plugin's read-thread CPU clock (stub_cpu_share),
 *                 sstrncpy, sstrerror, cf_util_get_string, cf_util_get_cdtime,
 *                 plugin_get_interval (10 s, collectd's default Interval,
 *                 then the read callback's), global_option_get (BaseDir
 *                 only), hostname_g.
 *
 * Failures: stub_fail_call makes any of these calls fail as collectd
 * 5.12's fails it (return code, outputs untouched, the user data of a
 * failed read registration freed), so the tests reach the plugin's error
 * paths.  Without it, a second read callback is refused (EINVAL, its user
 * data freed) as the daemon refuses a duplicate name.
 *
 * This header is the tests' and the benchmark's side of the stand-in:
 * filling the cache, calling the registered callbacks, reading the
 * counters.
 */
#ifndef MS_TESTS_COLLECTD_STUB_H
#define MS_TESTS_COLLECTD_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The cache: set (add or update) one identifier's rate; remove one. */
void stub_cache_set(const char *name, double rate);
/* Set one identifier with n_sources data sources, each at rate (a type
 * with several is not an input the plugin takes). */
void stub_cache_set_sources(const char *name, double rate, size_t n_sources);
/* Set a COUNTER (its type should be "counter"): the rate collectd computed
 * and the raw counter (uc_get_value_by_name). */
void stub_cache_set_counter(const char *name, double rate, uint64_t raw);
/* Set a GAUGE whose raw value (uc_get_value_by_name) differs from its
 * rate: collectd's rate is NaN for a value outside its type's range. */
void stub_cache_set_gauge(const char *name, double rate, double raw);
void stub_cache_remove(const char *name);
/* Sort the cache after a batch of additions (updates keep it sorted). */
void stub_cache_commit(void);
size_t stub_cache_size(void);
void stub_cache_clear(void);

/* The callbacks module_register() and init registered. */
int stub_call_config(const char *service_file);
/* The same with more options of <Plugin metastable>: pairs of key and
 * value, NULL-terminated; a value that reads whole as a number is a
 * number, else a string (at most 15 options). */
int stub_call_config_options(const char *service_file,
                             const char *const *options);
/* The same from the lines of a <Plugin metastable> block as they would be
 * written in collectd.conf ("ServiceFile \"/x.yaml\"", "Interval 1.5m"),
 * NULL-terminated (at most 16), each read as collectd 5.12's scanner reads
 * it: "1.5m" is the number 1.5 and the string "m", an unquoted "20%" the
 * number 20 (the '%' is dropped), "5m" and "500ms" strings. */
int stub_call_config_lines(const char *const *lines);
int stub_call_init(void);
int stub_call_read(void);
int stub_call_shutdown(void);
/* The interval the read callback was registered with (0: none given). */
uint64_t stub_read_interval(void);
/* The read callback's user data (NULL: none registered). */
void *stub_read_user_data(void);
/* Free the read callback's user data, as the daemon does at shutdown. */
void stub_free_read_user_data(void);

/* Counters since the last reset. */
typedef struct {
  size_t values, notifications, notifications_failure, notifications_okay,
      notifications_warning, log_error, log_warning, log_info;
  double value_sum; /* of every dispatched gauge, to check they are finite */
  size_t non_finite;
  size_t lookups; /* uc_get_rate_by_name and uc_get_value_by_name calls */
} stub_counters;
void stub_counters_get(stub_counters *out);
void stub_counters_reset(void);
/* Called with every dispatched value list when set (tests). */
struct value_list_s;
extern void (*stub_on_value)(const struct value_list_s *vl);

/* The write path.  By default every dispatched value list is written at
 * once: the write callback registered (plugin_register_write: the
 * plugin's write probe) is called with it at the clock's time, as a daemon
 * whose write threads keep up.  stub_write_hold(true): value lists queue
 * instead, in dispatch order, until stub_write_drain writes them while
 * take(vl, ctx) says yes (the test's model of a write path, which may move
 * the clock: the callback sees the clock's time when each is written);
 * it returns how many it wrote.  stub_write_queued: how many wait;
 * stub_write_clear drops them and ends the hold. */
void stub_write_hold(bool hold);
size_t stub_write_drain(bool (*take)(const struct value_list_s *vl, void *ctx),
                        void *ctx);
size_t stub_write_queued(void);
void stub_write_clear(void);

/* Called with every logged line when set (tests). */
extern void (*stub_on_log)(int level, const char *msg);

/* The test's clock: cdtime() returns now (cdtime_t units, 2^-30 s) until
 * set again, 0 for the real clock; per_value: how far every dispatched
 * value moves it (the cost of a service, made independent of the machine). */
void stub_clock_set(uint64_t now);
void stub_clock_per_value(uint64_t step);
/* Under the test's clock, the read thread's CPU time (ms_read_thread_cpu,
 * which CycleBudget counts) moves by the step per value, and the clock by
 * the step over share: the share of a core a busy host gives the thread
 * (1 until the real clock is set again).  With the real clock it is the
 * thread's real CPU time. */
void stub_cpu_share(double share);

/* The last message logged at LOG_WARNING or worse ("" if none). */
const char *stub_last_warning(void);
/* The last message logged at any level ("" if none). */
const char *stub_last_message(void);

/* Failure injection.  The nth call (1: the next one) of the named function
 * of the stand-in, counted from this call, fails as collectd 5.12's fails
 * it; nth 0: every call, until stub_fail_clear.  The names:
 * plugin_register_complex_config (-1), plugin_register_init and
 * plugin_register_shutdown (ENOMEM), plugin_register_complex_read (ENOMEM,
 * the user data freed with its free_func, as 5.12 does),
 * plugin_dispatch_values (ENOMEM, nothing queued),
 * plugin_dispatch_notification (-1, as with no notification plugin),
 * uc_get_rate_by_name and uc_get_value_by_name (-1), uc_get_names
 * (ENOMEM), plugin_get_ds (NULL), cf_util_get_string (-1, the string
 * unchanged); and "memory" for a test that links allocation wrappers
 * which ask stub_fail_now("memory") (tests/check_plugin_startup.c).  At
 * most 16 names at once; setting a name again restarts its count. */
void stub_fail_call(const char *name, unsigned nth);
void stub_fail_clear(void);
/* Counts one call of name; true when it is to fail. */
bool stub_fail_now(const char *name);
/* How many calls of name failed since it was set. */
size_t stub_fail_count(const char *name);
/* Whether a value of this type is one of the essential values of
 * doc/fleets.md (those the paging alerts read): the tests' own list,
 * written from the document, not from plugin/pacing.c. */
bool stub_essential_type(const char *type);

/* Set *where to the user data's data of every read registration, failed
 * or not, until called with NULL (a test then counts its frees). */
void stub_watch_read_data(void **where);

#endif
