/* SPDX-License-Identifier: MIT */
/*
 * The pacing on the write path's feedback (plugin/write_probe.c,
 * plugin/pacing.c: pacing_observe) and the CPU budget against a busy
 * write path, with the collectd stand-in of tests/collectd_stub.c holding
 * the dispatched value lists in a queue (stub_write_hold).
 *
 * The reference is this file's model of collectd 5.12's write path,
 * written from collectd's source, not from the plugin: one write thread
 * takes the queued value lists in order (src/daemon/plugin.c); a value
 * list of a series the cache holds costs `update` seconds; one of a series
 * it does not hold creates it, which write_prometheus does by appending it
 * to its type's sorted array and sorting again (src/write_prometheus.c,
 * metric_family_add_metric), `factor` times the plugin's own model of
 * that cost, unit (k + 1) log2(k + 2) for a type of k series (factor 1:
 * the model is right; 20: the host gives the write thread a twentieth of
 * what the model expects).  The cache forgets a series whose last value
 * was written Timeout (2) times its interval ago or more
 * (src/daemon/utils_cache.c, uc_check_timeout), checked at each
 * interval's end; write_prometheus drops it then, and its next value
 * creates it again.  The plugin's cost unit is set by hand, so every count
 * follows from the model, not from this machine's speed.
 *
 * Asserted: with the default pacing a fleet warms up in fewer intervals
 * than the model's budget alone takes, and no series it has written ever
 * expires; on a write path forty times slower than modelled, nothing
 * expires either, and the queue drains; where the write path cannot take
 * every value of a warm fleet, the cycles shed: the essential values
 * stay fresh (none expires once written), the queue stays bounded, and a
 * warning says so; where each new series costs more than the model says,
 * and the other values start types the model prices at next to nothing,
 * the count of new series keeps the write path within the interval: no
 * shed, no expiry; one stall sheds one cycle and expires nothing; and
 * NewSeriesPerInterval 0 on the slow write path
 * expires series by the hundred, so the scenario is one that breaks a
 * plugin without the feedback.
 *
 * MS_TRACE_WRITE_PATH=1 prints one line per interval: the series written,
 * the queue, the write thread's busy time, the pacing's budget and the
 * write path's report; and at each test's end what expired.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "collectd.h"
#include "plugin.h"

#include "collectd_stub.h"
#include "state.h"

void module_register(void);

#define N_SERVICES 400
#define TIMEOUT 2 /* collectd's default Timeout (the stand-in gives none) */
#define T0 1800000000.0
#define INTERVAL 10.0
#define UNIT 2e-6 /* s per comparison of the plugin's cost model */
#define MAX_SERIES 16384
#define MAX_TYPES 64

static bool essential(const char *type) { return stub_essential_type(type); }

/* One series of the model's cache. */
typedef struct {
  char id[5 * DATA_MAX_NAME_LEN + 8];
  int type;        /* index into types */
  double last;     /* when its last value was written, s */
  double interval; /* the interval its last value carried, s */
  bool alive, essential, ever;
} series;

/* The model of the write path and the cache. */
typedef struct {
  double update, factor; /* costs, above */
  double create;         /* a new series' cost beyond the model's, s */
  double wt;             /* the write thread is busy until then */
  double horizon;        /* it works until then this interval */
  series s[MAX_SERIES];
  size_t n;
  char types[MAX_TYPES][DATA_MAX_NAME_LEN];
  size_t live[MAX_TYPES], n_types;
  /* counts */
  size_t written, expired, expired_essential, recreated;
  size_t alive;       /* series in the cache at the last interval's end */
  size_t most_queued; /* values queued at an interval's end, at most */
} write_model;

static write_model wm;

static int type_index(const char *type) {
  for (size_t i = 0; i < wm.n_types; i++)
    if (strcmp(wm.types[i], type) == 0)
      return (int)i;
  ck_assert_uint_lt(wm.n_types, MAX_TYPES);
  snprintf(wm.types[wm.n_types], sizeof wm.types[0], "%s", type);
  return (int)wm.n_types++;
}

/* The series of an identifier, found through an open-addressing table of
 * FNV-1a hashes (HASH_SIZE slots, each 1 + an index of wm.s; 0: empty). */
#define HASH_SIZE (4 * MAX_SERIES)
static size_t slots[HASH_SIZE];

static series *lookup(const value_list_t *vl) {
  char id[sizeof wm.s[0].id];
  snprintf(id, sizeof id, "%s/%s-%s/%s-%s", vl->host, vl->plugin,
           vl->plugin_instance, vl->type, vl->type_instance);
  uint64_t h = 1469598103934665603ULL;
  for (const char *c = id; *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211ULL;
  size_t at = (size_t)(h % HASH_SIZE);
  for (; slots[at] != 0; at = (at + 1) % HASH_SIZE)
    if (strcmp(wm.s[slots[at] - 1].id, id) == 0)
      return &wm.s[slots[at] - 1];
  ck_assert_uint_lt(wm.n, MAX_SERIES);
  slots[at] = wm.n + 1;
  series *s = &wm.s[wm.n++];
  memset(s, 0, sizeof *s);
  snprintf(s->id, sizeof s->id, "%s", id);
  s->type = type_index(vl->type);
  s->essential = essential(vl->type);
  return s;
}

/* The write thread takes the next value list if it can write it before
 * the interval ends; the stand-in then calls the plugin's write callback,
 * at the time the model says it is written. */
static bool take(const value_list_t *vl, void *ctx) {
  (void)ctx;
  series *s = lookup(vl);
  double cost = wm.update;
  if (!s->alive) {
    double k = (double)wm.live[s->type];
    cost += wm.create + wm.factor * UNIT * (k + 1) * log2(k + 2);
  }
  double start = fmax(wm.wt, CDTIME_T_TO_DOUBLE(vl->time));
  double end = start + cost;
  if (end > wm.horizon)
    return false;
  wm.wt = end;
  stub_clock_set(DOUBLE_TO_CDTIME_T(end));
  if (!s->alive) {
    wm.live[s->type]++;
    wm.recreated += s->ever;
  }
  s->alive = s->ever = true;
  s->last = end;
  s->interval = vl->interval ? CDTIME_T_TO_DOUBLE(vl->interval) : INTERVAL;
  wm.written++;
  return true;
}

/* The cache's timeout at the end of an interval. */
static void expire(double now) {
  for (size_t i = 0; i < wm.n; i++) {
    series *s = &wm.s[i];
    if (s->alive && now - s->last >= TIMEOUT * s->interval) {
      s->alive = false;
      wm.live[s->type]--;
      wm.expired++;
      wm.expired_essential += s->essential;
    }
  }
}

static char path[] = "/tmp/ms-check-write-XXXXXX";
static size_t shed_warnings;

static size_t lost_notices, keeps_up;

static void on_log(int level, const char *msg) {
  if (strstr(msg, "the write probe (values_dispatched) is in collectd's "
                  "cache but has not reached the plugin's write callback in "
                  "2 read cycles") != NULL) {
    ck_assert_int_eq(level, LOG_NOTICE);
    lost_notices++;
  }
  if (strstr(msg, "collectd's write path keeps up again") != NULL)
    keeps_up++;
  if (strstr(msg, "collectd's write path had not written the values of the "
                  "last read cycle") != NULL) {
    ck_assert_int_eq(level, LOG_WARNING);
    shed_warnings++;
  }
}

/* N_SERVICES capacity services of constant inputs (numbers in the file),
 * the write path held; the plugin's cost unit set to UNIT. */
static void start(const char *const *options, double update, double factor) {
  strcpy(path, "/tmp/ms-check-write-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n");
  for (int i = 0; i < N_SERVICES; i++)
    fprintf(y,
            "  - name: s%03d\n    model: capacity\n    capacity: 100\n"
            "    retries: 2\n    base_failure: 0.01\n    inputs:\n"
            "      offered_rate: %d\n",
            i, 20 + i % 50);
  fclose(y);
  memset(&wm, 0, sizeof wm);
  memset(slots, 0, sizeof slots);
  wm.update = update;
  wm.factor = factor;
  wm.wt = T0;
  shed_warnings = lost_notices = keeps_up = 0;
  module_register();
  stub_clock_set(DOUBLE_TO_CDTIME_T(T0));
  ck_assert_int_eq(stub_call_config_options(path, options), 0);
  ck_assert_msg(stub_call_init() == 0, "%s", stub_last_warning());
  plugin_state *st = stub_read_user_data();
  ck_assert_ptr_nonnull(st);
  st->pacing.unit = UNIT;
  stub_write_hold(true);
  stub_on_log = on_log;
}

static void stop(void) {
  if (getenv("MS_TRACE_WRITE_PATH") != NULL) {
    fprintf(stderr,
            "end: %zu series alive, %zu expired (%zu essential), %zu "
            "created again, %zu shed warnings, %zu queued\n",
            wm.alive, wm.expired, wm.expired_essential, wm.recreated,
            shed_warnings, stub_write_queued());
  }
  stub_on_log = NULL;
  stub_write_clear();
  stub_free_read_user_data();
  stub_call_shutdown();
  stub_clock_set(0);
  unlink(path);
}

/* The series of a warm fleet: every value of every service (the
 * capacity services' 17: every output but drain_time, servers_estimate and
 * stall_tolerance, which these inputs do not give, and the time-to-storm
 * pair, which their pools' tables give; counted in a run with nothing
 * held back), and the write probe. */
static size_t fleet_series;

/* Interval k: the read at its start, the write thread through it, the
 * cache's timeout at its end.  Returns whether every series of the warm
 * fleet is in the cache with a value written in this interval. */
static bool interval(int k) {
  double t = T0 + k * INTERVAL;
  stub_clock_set(DOUBLE_TO_CDTIME_T(t));
  ck_assert_int_eq(stub_call_read(), 0);
  wm.horizon = t + INTERVAL;
  size_t wrote = stub_write_drain(take, NULL);
  stub_clock_set(DOUBLE_TO_CDTIME_T(wm.horizon));
  expire(wm.horizon);
  size_t alive = 0, fresh = 0;
  for (size_t i = 0; i < wm.n; i++) {
    alive += wm.s[i].alive;
    fresh += wm.s[i].alive && wm.s[i].last >= t;
  }
  wm.alive = alive;
  if (stub_write_queued() > wm.most_queued)
    wm.most_queued = stub_write_queued();
  if (getenv("MS_TRACE_WRITE_PATH") != NULL) {
    plugin_state *st = stub_read_user_data();
    fprintf(stderr,
            "k=%d n=%zu alive=%zu fresh=%zu wrote=%zu queued=%zu wt=%.2f "
            "budget=%.3g done=%.3g shed=%d held=%zu\n",
            k, wm.n, alive, fresh, wrote, stub_write_queued(), wm.wt - t,
            st->pacing.budget, st->pacing.write_done, st->pacing.shed,
            st->pacing.held);
  }
  return fresh == wm.n && wm.n == fleet_series;
}

/* Intervals from *k on, at most n of them, until every series of the
 * warm fleet is fresh: the interval it was (-1: never); *k is the next. */
static int warm_up(int *k, int n) {
  for (int end = *k + n; *k < end;)
    if (interval((*k)++))
      return *k - 1;
  return -1;
}

/* fleet_series, counted: nothing held back, a write path that costs
 * nothing, until two intervals in a row add no series. */
static void count_fleet(void) {
  static const char *const none[] = {"NewSeriesPerInterval", "0", NULL};
  start(none, 0, 0);
  size_t last = 0;
  int same = 0;
  for (int k = 0; k < 20 && same < 2; k++) {
    interval(k);
    same = wm.n == last ? same + 1 : 0;
    last = wm.n;
  }
  ck_assert_int_eq(same, 2);
  ck_assert_uint_eq(wm.expired, 0);
  fleet_series = wm.n;
  stop();
  /* a service's values, and the probe */
  ck_assert_uint_eq((fleet_series - 1) % N_SERVICES, 0);
  ck_assert_uint_ge((fleet_series - 1) / N_SERVICES, 16);
}

/* The intervals the model's budget alone (5 % of the interval of modelled
 * cost, PACING_AUTO_SHARE) takes to create `per` series of each of `types`
 * types, the essential ones first: a lower bound, as it leaves out that
 * an interval's last series may not fit. */
static int model_alone(size_t per, size_t types) {
  double all = 0;
  for (size_t k = 0; k < per; k++)
    all += UNIT * ((double)k + 1) * log2((double)k + 2);
  return (int)floor(all * (double)types / (PACING_AUTO_SHARE * INTERVAL));
}

/* The write path as the model expects it: the feedback lets the budget
 * grow to what it takes, so the fleet warms up sooner than on the model's
 * budget alone, and nothing written expires. */
START_TEST(test_warms_up_sooner_nothing_expires) {
  count_fleet();
  start(NULL, 2e-5, 1);
  int k = 0, warm = warm_up(&k, 60);
  ck_assert_int_ge(warm, 0);
  size_t types = wm.n_types - 1; /* the probe's is no service's */
  int alone = model_alone(N_SERVICES, types);
  ck_assert_int_gt(alone, 20);
  ck_assert_int_lt(warm, alone / 2);
  ck_assert_uint_eq(wm.expired, 0);
  ck_assert_uint_eq(wm.recreated, 0);
  ck_assert_uint_eq(stub_write_queued(), 0);
  ck_assert_uint_eq(shed_warnings, 0);
  stop();
}
END_TEST

/* A write path forty times slower than modelled: the first interval's
 * admissions take it two intervals; the feedback sheds and shrinks, the
 * queue drains, nothing written expires, and the fleet warms up (the
 * model's budget alone would keep it two intervals behind, and series
 * would expire). */
START_TEST(test_slow_write_path_nothing_expires) {
  count_fleet();
  start(NULL, 2e-5, 40);
  int k = 0, warm = warm_up(&k, 400);
  ck_assert_msg(warm >= 0, "not warm in 400 intervals: %zu series alive", wm.n);
  ck_assert_uint_eq(wm.expired, 0);
  ck_assert_uint_eq(wm.recreated, 0);
  ck_assert_uint_eq(stub_write_queued(), 0);
  /* never more waiting at an interval's end than one fleet's values */
  ck_assert_uint_le(wm.most_queued, 17 * N_SERVICES);
  stop();
}
END_TEST

/* Without pacing (NewSeriesPerInterval 0) the same write path is flooded
 * at the start: series written early wait behind the backlog for their
 * next value, and expire. */
START_TEST(test_no_pacing_floods_the_slow_write_path) {
  static const char *const none[] = {"NewSeriesPerInterval", "0", NULL};
  start(none, 2e-5, 40);
  for (int k = 0; k < 60; k++)
    interval(k);
  ck_assert_uint_gt(wm.expired, 100);
  ck_assert_uint_gt(wm.recreated, 100);
  stop();
}
END_TEST

/* What the model leaves out: every new series costs collectd 8 ms more
 * than the sort the model counts (its cache, allocations, a second write
 * plugin).  The feedback finds the cost of the essential series (types of
 * up to 400, 7 ms each by the model, 15 ms on this write path).  Then the
 * other values start types of their own, which the model prices at next
 * to nothing: paced on the model's cost alone, one cycle admitted 1,100
 * of them, more than the interval could write; one cycle shed and 240
 * series expired.  The count of new series follows the feedback too, so
 * the write path is never an interval behind: no cycle sheds, nothing
 * expires, and the fleet warms up. */
START_TEST(test_new_types_cost_more_than_modelled) {
  count_fleet();
  start(NULL, 2e-5, 1);
  wm.create = 8e-3;
  int k = 0, warm = warm_up(&k, 200);
  ck_assert_msg(warm >= 0, "not warm in 200 intervals: %zu series", wm.n);
  ck_assert_uint_eq(shed_warnings, 0);
  ck_assert_uint_eq(wm.expired, 0);
  ck_assert_uint_eq(wm.recreated, 0);
  ck_assert_uint_eq(wm.most_queued, 0);
  stop();
}
END_TEST

/* A warm fleet and one stall: for one interval the write path takes
 * 2.2 ms a value, 15 s for the fleet's values, so it is still on them when
 * the next cycle begins, which sheds.  The other values skipped by that
 * one cycle are still in collectd's cache: the cycle after sends them
 * again as known series, and none expires (counted as new, most would
 * wait behind the budget and expire). */
START_TEST(test_one_stall_sheds_nothing_expires) {
  count_fleet();
  start(NULL, 2e-5, 1);
  int k = 0;
  ck_assert_int_ge(warm_up(&k, 30), 0);
  wm.update = 2.2e-3;
  interval(k++);
  ck_assert_uint_gt(stub_write_queued(), 0);
  wm.update = 2e-5;
  int quiet = k, back = warm_up(&k, 10);
  ck_assert_uint_eq(shed_warnings, 1);
  ck_assert_uint_eq(wm.expired, 0);
  ck_assert_int_ge(back, 0);
  ck_assert_int_le(back - quiet, 2);
  stop();
}
END_TEST

/* A warm fleet whose host turns busy: the write path now takes 2.5 ms a
 * value, 17 s for the fleet's 17 x 400 in a 10 s interval, 8 s at most
 * for the essential ones (7 or 8 a service).  The cycles shed: the
 * essential values, once written, never expire, the queue stays bounded,
 * and a warning says so; the other values go when they fit.  When the host
 * is quiet again, the whole fleet is back within a few intervals. */
START_TEST(test_busy_host_sheds_essential_stay_fresh) {
  count_fleet();
  start(NULL, 2e-5, 1);
  int k = 0;
  ck_assert_int_ge(warm_up(&k, 30), 0);
  wm.update = 2.5e-3;
  wm.most_queued = 0;
  size_t fewest_alive = fleet_series;
  for (int busy = 0; busy < 40; busy++) {
    interval(k++);
    if (wm.alive < fewest_alive)
      fewest_alive = wm.alive;
  }
  ck_assert_uint_gt(shed_warnings, 0);
  ck_assert_uint_eq(wm.expired_essential, 0);
  ck_assert_uint_gt(wm.expired, 0);                /* fewer values... */
  ck_assert_uint_gt(fewest_alive, 7 * N_SERVICES); /* ...never none */
  ck_assert_uint_le(wm.most_queued, 17 * N_SERVICES);
  wm.update = 2e-5;
  ck_assert_int_ge(warm_up(&k, 60), 0);
  ck_assert_uint_eq(wm.expired_essential, 0);
  stop();
}
END_TEST

/* A filter chain that sends values to named write plugins only: collectd
 * caches the probe, but never calls the plugin's write callback with it.
 * The probe in the cache, never seen: no word on the write path (nothing
 * sheds, the budget stays the model's), and after 2 cycles the probe
 * counts as lost: one notice, and the pacing goes on the model alone. */
static void cache_the_probe(const value_list_t *vl) {
  if (strcmp(vl->type, "values_dispatched") != 0)
    return;
  char id[5 * DATA_MAX_NAME_LEN + 8];
  snprintf(id, sizeof id, "%s/%s-%s/%s", vl->host, vl->plugin,
           vl->plugin_instance, vl->type);
  stub_cache_set_counter(id, 0, (uint64_t)vl->values[0].derive);
  stub_cache_commit();
}

START_TEST(test_probe_lost_to_a_filter_chain) {
  start(NULL, 0, 0);
  stub_write_clear(); /* written at once: the chain's daemon keeps up */
  ck_assert_int_eq(plugin_unregister_write("metastable"), 0);
  stub_on_value = cache_the_probe;
  plugin_state *st = stub_read_user_data();
  double budget = st->pacing.budget;
  for (int k = 0; k < 12; k++) {
    stub_clock_set(DOUBLE_TO_CDTIME_T(T0 + k * INTERVAL));
    ck_assert_int_eq(stub_call_read(), 0);
    ck_assert(isnan(st->pacing.write_done));
    ck_assert(!st->pacing.shed);
    ck_assert_double_eq(st->pacing.budget, budget);
    ck_assert(st->probe.lost == (k >= 2));
  }
  ck_assert_uint_eq(lost_notices, 1);
  ck_assert_uint_eq(shed_warnings, 0);
  stub_on_value = NULL;
  stub_cache_clear();
  stop();
}
END_TEST

/* The same without the cache: a write path that never reaches the probe
 * is behind, not lost: every cycle sheds, also when the cycles start a
 * little early (collectd's read threads have jitter), and the log never
 * says that the write path keeps up. */
START_TEST(test_probe_never_written_is_behind) {
  start(NULL, 0, 0);
  stub_write_clear();
  ck_assert_int_eq(plugin_unregister_write("metastable"), 0);
  plugin_state *st = stub_read_user_data();
  for (int k = 0; k < 12; k++) {
    double jitter = k % 2 ? -0.003 : 0.002;
    stub_clock_set(DOUBLE_TO_CDTIME_T(T0 + k * INTERVAL + jitter));
    ck_assert_int_eq(stub_call_read(), 0);
    if (k >= 1) {
      ck_assert(st->pacing.shed);
      ck_assert_double_ge(st->pacing.write_done, 1);
    }
  }
  ck_assert_uint_eq(lost_notices, 0);
  ck_assert_uint_gt(shed_warnings, 0);
  ck_assert_uint_eq(keeps_up, 0);
  stop();
}
END_TEST

int main(void) {
  Suite *s = suite_create("plugin_write_path");
  TCase *tc = tcase_create("write_path");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_warms_up_sooner_nothing_expires);
  tcase_add_test(tc, test_slow_write_path_nothing_expires);
  tcase_add_test(tc, test_no_pacing_floods_the_slow_write_path);
  tcase_add_test(tc, test_new_types_cost_more_than_modelled);
  tcase_add_test(tc, test_one_stall_sheds_nothing_expires);
  tcase_add_test(tc, test_busy_host_sheds_essential_stay_fresh);
  tcase_add_test(tc, test_probe_lost_to_a_filter_chain);
  tcase_add_test(tc, test_probe_never_written_is_behind);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
