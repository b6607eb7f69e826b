/* SPDX-License-Identifier: MIT */
/*
 * The pacing of new series and FullEvery (plugin/pacing.c, against the
 * collectd stand-in of tests/collectd_stub.c).
 *
 * The reference is a model of what collectd does with the values, written
 * from collectd 5.12's documented behaviour, not from the plugin: its cache
 * keeps a value list's identifier while the value is younger than Timeout
 * (2) times the interval the value list carries, and forgets it after that
 * (write_prometheus drops the series with it); a value whose identifier
 * the cache does not hold creates a series.  Asserted against it:
 * creations per cycle never above NewSeriesPerInterval; the essential
 * values (doc/fleets.md's list, written out below) created before
 * any other; every value every cycle once warm, with nothing created
 * again; the auto default creates a small fleet in its first cycle;
 * FullEvery N sends the other values in one cycle of every N with an
 * interval of N cycles, so the cache never forgets them; a service whose
 * series expired is paced again when it comes back; bad values of both
 * options fail the configuration with a message that says what is wanted.
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
#include "pacing.h"

void module_register(void);

#define N_SERVICES 60
#define TIMEOUT 2 /* collectd's default Timeout (the stand-in gives none) */
#define T0 TIME_T_TO_CDTIME_T_STATIC(1800000000)
#define INTERVAL TIME_T_TO_CDTIME_T_STATIC(10)
#define MAX_SERIES 4096

static bool essential(const char *type) { return stub_essential_type(type); }

/* The model of collectd's cache: identifier, time and interval. */
typedef struct {
  char id[4 * DATA_MAX_NAME_LEN + 8];
  cdtime_t time, interval;
  bool essential;
} series;
static series cache[MAX_SERIES];
static size_t n_cache;
/* this cycle */
static cdtime_t now;
static size_t created, created_other, created_essential, dispatched;
static size_t dispatched_other;
static cdtime_t other_interval; /* interval of the non-essential values */

static bool alive(const series *s) {
  return now - s->time <= TIMEOUT * s->interval;
}

static void on_value(const value_list_t *vl) {
  /* the write probe: no service's value, never paced (write_probe.h) */
  if (strcmp(vl->type, "values_dispatched") == 0)
    return;
  char id[4 * DATA_MAX_NAME_LEN + 8];
  snprintf(id, sizeof id, "%s/%s-%s/%s", vl->host, vl->plugin,
           vl->plugin_instance, vl->type);
  dispatched++;
  bool ess = essential(vl->type);
  if (!ess) {
    dispatched_other++;
    other_interval = vl->interval;
  }
  for (size_t i = 0; i < n_cache; i++)
    if (strcmp(cache[i].id, id) == 0) {
      if (!alive(&cache[i])) { /* forgotten, then created again */
        created++;
        ess ? created_essential++ : created_other++;
      }
      cache[i].time = vl->time;
      cache[i].interval = vl->interval ? vl->interval : INTERVAL;
      return;
    }
  ck_assert_uint_lt(n_cache, MAX_SERIES);
  series *s = &cache[n_cache++];
  snprintf(s->id, sizeof s->id, "%s", id);
  s->time = vl->time;
  s->interval = vl->interval ? vl->interval : INTERVAL;
  s->essential = ess;
  created++;
  ess ? created_essential++ : created_other++;
}

/* The essential series the cache holds alive, and all it holds alive. */
static size_t alive_count(bool only_essential) {
  size_t n = 0;
  for (size_t i = 0; i < n_cache; i++)
    n += alive(&cache[i]) && (!only_essential || cache[i].essential);
  return n;
}

static char path[] = "/tmp/ms-check-pacing-XXXXXX";

/* N_SERVICES capacity services; s0's offered rate is an input of the
 * cache ("h/statsd/gauge-s0"), the others' are numbers of the file. */
static int start(const char *const *options) {
  strcpy(path, "/tmp/ms-check-pacing-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n");
  for (int i = 0; i < N_SERVICES; i++) {
    fprintf(y,
            "  - name: s%d\n    model: capacity\n    capacity: 100\n"
            "    retries: 2\n    base_failure: 0.01\n    inputs:\n",
            i);
    if (i == 0)
      fprintf(y, "      offered_rate: \"h/statsd/gauge-s0\"\n");
    else
      fprintf(y, "      offered_rate: %d\n", 20 + i);
  }
  fclose(y);
  stub_cache_clear();
  stub_cache_set("h/statsd/gauge-s0", 30);
  stub_cache_commit();
  module_register();
  stub_clock_set(T0);
  n_cache = 0;
  int rc = stub_call_config_options(path, options);
  if (rc == 0)
    ck_assert_msg(stub_call_init() == 0, "%s", stub_last_warning());
  stub_on_value = on_value;
  return rc;
}

static void stop(void) {
  stub_on_value = NULL;
  stub_free_read_user_data();
  stub_call_shutdown();
  stub_clock_set(0);
  stub_cache_clear();
  unlink(path);
}

/* Cycle k: the clock at T0 + k intervals (still while the plugin reads),
 * then the read. */
static void cycle(int k) {
  now = T0 + (cdtime_t)k * INTERVAL;
  stub_clock_set(now);
  created = created_other = created_essential = 0;
  dispatched = dispatched_other = 0;
  ck_assert_int_eq(stub_call_read(), 0);
}

/* The values of a warm fleet per cycle: everything at once, no limit.
 * safe_retries comes from the second cycle on (its builds wait for the
 * end of the first: run_safe_builds), one series a service. */
static size_t warm_values(size_t *essential_values) {
  static const char *const none[] = {"NewSeriesPerInterval", "0", NULL};
  ck_assert_int_eq(start(none), 0);
  cycle(0);
  size_t first = dispatched;
  ck_assert_uint_eq(created, first);
  cycle(1);
  size_t all = dispatched;
  *essential_values = dispatched - dispatched_other;
  ck_assert_uint_eq(created, N_SERVICES);
  ck_assert_uint_eq(all, first + N_SERVICES);
  cycle(2);
  ck_assert_uint_eq(created, 0);
  ck_assert_uint_eq(dispatched, all);
  stop();
  return all;
}

START_TEST(test_limit) {
  size_t ess, all = warm_values(&ess);
  ck_assert_uint_eq(ess % N_SERVICES, 0);
  ck_assert_uint_gt(all - ess, ess / 2); /* there are others to wait */
  static const char *const opts[] = {"NewSeriesPerInterval", "50", NULL};
  ck_assert_int_eq(start(opts), 0);
  size_t total = 0;
  int k = 0;
  for (; total < all; k++) {
    ck_assert_int_lt(k, 100);
    cycle(k);
    size_t before = total;
    total += created;
    /* exactly the limit while series wait, the rest in the last cycle */
    ck_assert_uint_eq(created, all - before < 50 ? all - before : 50);
    /* essential first: no other value while an essential one waits */
    if (created_other > 0)
      ck_assert_uint_eq(alive_count(true), ess);
    if (before + 50 <= ess)
      ck_assert_uint_eq(created_other, 0);
    /* the live series go every cycle meanwhile */
    ck_assert_uint_eq(alive_count(false), total);
  }
  ck_assert_int_eq(k, (int)((all + 49) / 50));
  for (int j = 0; j < 5; j++, k++) { /* warm: all, nothing created */
    cycle(k);
    ck_assert_uint_eq(dispatched, all);
    ck_assert_uint_eq(created, 0);
  }
  char want[128];
  snprintf(want, sizeof want,
           "metastable plugin: every series is in collectd's write path: %zu "
           "series",
           all);
  ck_assert_str_eq(stub_last_message(), want);
  stop();
}
END_TEST

START_TEST(test_auto_small_fleet_at_once) {
  size_t ess, all = warm_values(&ess);
  ck_assert_int_eq(start(NULL), 0); /* NewSeriesPerInterval auto */
  cycle(0);
  ck_assert_uint_eq(created, all - N_SERVICES);
  cycle(1); /* safe_retries */
  ck_assert_uint_eq(created, N_SERVICES);
  cycle(2);
  ck_assert_uint_eq(created, 0);
  ck_assert_uint_eq(dispatched, all);
  stop();
}
END_TEST

START_TEST(test_full_every) {
  size_t ess, all = warm_values(&ess);
  static const char *const opts[] = {"FullEvery", "3", NULL};
  ck_assert_int_eq(start(opts), 0);
  size_t other = 0;
  for (int k = 0; k < 30; k++) {
    cycle(k);
    ck_assert_uint_eq(dispatched - dispatched_other, ess);
    if (k >= 3) {
      /* each service's other values in one cycle of three: a third of
       * them every cycle, spread over the services; cycle 3 still
       * creates the safe_retries of those whose other values went in
       * cycle 0, before its builds (run_safe_builds) */
      ck_assert_uint_eq(created, k == 3 ? N_SERVICES / 3 : 0);
      ck_assert_uint_eq(other_interval, 3 * INTERVAL);
      ck_assert_uint_le(dispatched_other, (all - ess) / 3 + (all - ess) / 20);
      ck_assert_uint_ge(dispatched_other, (all - ess) / 3 - (all - ess) / 20);
      other += dispatched_other;
      /* the cache forgets nothing */
      ck_assert_uint_eq(alive_count(false), all);
    }
  }
  ck_assert_uint_eq(other, 9 * (all - ess)); /* 27 cycles: nine full sets */
  stop();
}
END_TEST

START_TEST(test_expired_series_paced_again) {
  size_t ess, all = warm_values(&ess);
  size_t per = all / N_SERVICES;
  static const char *const opts[] = {"NewSeriesPerInterval", "4", NULL};
  ck_assert_int_eq(start(opts), 0);
  int k = 0;
  for (; alive_count(false) < all; k++)
    cycle(k);
  /* s0's input goes: only its reporting heartbeat, for 4 cycles; its
   * other series expire */
  stub_cache_remove("h/statsd/gauge-s0");
  stub_cache_commit();
  for (int j = 0; j < 4; j++, k++)
    cycle(k);
  ck_assert_uint_eq(alive_count(false), all - (per - 1));
  stub_cache_set("h/statsd/gauge-s0", 30);
  stub_cache_commit();
  /* back: its series created again, 4 a cycle, essential first */
  size_t again = 0;
  for (int j = 0; j < 10 && again < per - 1; j++, k++) {
    cycle(k);
    ck_assert_uint_le(created, 4);
    again += created;
    if (created_other > 0)
      ck_assert_uint_eq(alive_count(true), ess);
  }
  ck_assert_uint_eq(again, per - 1);
  ck_assert_uint_eq(alive_count(false), all);
  stop();
}
END_TEST

/* The auto budget's arithmetic, against the documented cost written out
 * here: a new series of a type that has k costs unit (k + 1) log2(k + 2),
 * and a cycle admits new series while their sum stays within 5 % of the
 * interval.  The unit is set by hand (not timed), so the counts follow
 * from the formula alone. */
static size_t expected_admitted(size_t k0, double unit, double budget,
                                long double *spent) {
  size_t m = 0;
  *spent = 0;
  for (size_t k = k0;; k++, m++) {
    long double cost = (long double)unit * (k + 1) * log2l((long double)k + 2);
    if (m > 0 && *spent + cost > budget)
      return m;
    *spent += cost;
  }
}

START_TEST(test_auto_budget_arithmetic) {
  enum { N = 3000 };
  static pacing_service ps[N];
  bool wanted[MS_OUT_COUNT];
  for (int o = 0; o < MS_OUT_COUNT; o++)
    wanted[o] = true;
  pacing p;
  pacing_init(&p, 0, 1, TIMEOUT, 10.0, wanted); /* 0: nothing timed */
  p.limit = PACING_AUTO;
  p.unit = 2e-7; /* s per comparison */
  ck_assert_double_eq_tol(p.budget, 0.5, 1e-12);
  for (size_t s = 0; s < N; s++)
    pacing_service_init(&ps[s]);
  size_t live = 0;
  for (int cycle = 0; cycle < 3; cycle++) {
    pacing_cycle_start(&p);
    for (size_t s = 0; s < N; s++)
      pacing_count(&p, &ps[s]);
    ck_assert_uint_eq(p.live[MS_OUT_STATE], live);
    size_t admitted = 0, first_held = N;
    for (size_t s = 0; s < N; s++) {
      pacing_service_begin(&p, &ps[s], s, 0, 0);
      if (pacing_admit(&p, &ps[s], MS_OUT_STATE)) {
        admitted++;
        /* the live ones, then new ones in the file's order */
        ck_assert_uint_lt(s, first_held == N ? N : first_held);
      } else if (first_held == N) {
        first_held = s;
      }
      pacing_service_end(&ps[s]);
    }
    size_t fresh = admitted - live;
    long double spent;
    ck_assert_uint_eq(fresh, expected_admitted(live, p.unit, p.budget, &spent));
    /* the cost charged is the formula's, to rounding */
    ck_assert_double_eq_tol(p.spent, (double)spent, 1e-12 * (double)spent);
    live = admitted;
  }
  ck_assert_uint_lt(live, N); /* the budget did hold some back */
}
END_TEST

START_TEST(test_bad_options) {
  static const char *const bad[][3] = {
      {"NewSeriesPerInterval", "-1", NULL},
      {"NewSeriesPerInterval", "1.5", NULL},
      {"NewSeriesPerInterval", "fast", NULL},
      {"FullEvery", "0", NULL},
      {"FullEvery", "361", NULL},
      {"FullEvery", "2.5", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_ne(start(bad[i]), 0);
    const char *msg = stub_last_message();
    ck_assert_msg(strstr(msg, bad[i][0]) != NULL, "%s", msg);
    ck_assert_msg(strstr(msg, i < 3 ? "\"auto\"" : "from 1") != NULL, "%s",
                  msg);
    stop();
  }
  static const char *const good[][3] = {
      {"NewSeriesPerInterval", "auto", NULL},
      {"NewSeriesPerInterval", "0", NULL},
      {"FullEvery", "360", NULL},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    ck_assert_int_eq(start(good[i]), 0);
    stop();
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("plugin_pacing");
  TCase *tc = tcase_create("pacing");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_limit);
  tcase_add_test(tc, test_auto_small_fleet_at_once);
  tcase_add_test(tc, test_full_every);
  tcase_add_test(tc, test_expired_series_paced_again);
  tcase_add_test(tc, test_auto_budget_arithmetic);
  tcase_add_test(tc, test_bad_options);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
