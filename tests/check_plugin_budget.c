/* SPDX-License-Identifier: MIT */
/*
 * The read cycle's time budget (plugin/metastable.c, CycleBudget, against
 * the collectd stand-in of tests/collectd_stub.c): a cycle stops analysing
 * services once CycleBudget of the interval, at most 1 s, is spent; the
 * services left out dispatch nothing and come first in the next cycle, so
 * every service is analysed within ceil(n / k) cycles; one rate-limited
 * warning says so; a bad CycleBudget fails the configuration with a
 * located error.
 *
 * The cost of a service is made independent of the machine: the stand-in's
 * clock stands still but for a fixed step per dispatched value
 * (stub_clock_per_value), so a service costs exactly its values times the
 * step, and what is asserted follows from that and from the order in which
 * services dispatch, not from how fast this machine is.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "collectd.h"
#include "plugin.h"

#include "collectd_stub.h"

void module_register(void);

#define N_SERVICES 12
#define MAX_CYCLES 64
/* an aligned minute, far from 0 (0 is the stand-in's real clock) */
#define T0 TIME_T_TO_CDTIME_T_STATIC(1800000000)

static char path[] = "/tmp/ms-check-budget-XXXXXX";

/* The services that dispatched in one cycle, in the order they did. */
static int order[N_SERVICES];
static size_t n_order;
static size_t deferral_warnings; /* "services deferred" lines */
static char deferral_text[1024];

static void on_value(const value_list_t *vl) {
  if (strcmp(vl->type, "reporting") != 0)
    return;
  ck_assert_int_eq(strncmp(vl->plugin_instance, "s", 1), 0);
  ck_assert_uint_lt(n_order, N_SERVICES);
  order[n_order++] = atoi(vl->plugin_instance + 1);
}

static void on_log(int level, const char *msg) {
  if (strstr(msg, "services deferred to the next read cycle") == NULL)
    return;
  ck_assert_int_eq(level, LOG_WARNING);
  deferral_warnings++;
  snprintf(deferral_text, sizeof deferral_text, "%s", msg);
}

/* N_SERVICES capacity services s0 ... s11 whose inputs are numbers of the
 * file (so every one reports every cycle), configured with options. */
static int start(const char *const *options) {
  strcpy(path, "/tmp/ms-check-budget-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n");
  for (int i = 0; i < N_SERVICES; i++)
    fprintf(y,
            "  - name: s%d\n    model: capacity\n    capacity: 100\n"
            "    retries: 3\n    inputs:\n      offered_rate: %d\n",
            i, 10 + i);
  fclose(y);
  module_register();
  stub_clock_set(T0);
  stub_counters_reset();
  int rc = stub_call_config_options(path, options);
  if (rc == 0) {
    ck_assert_msg(stub_call_init() == 0, "%s", stub_last_warning());
    stub_counters_reset();
  }
  stub_on_value = on_value;
  stub_on_log = on_log;
  deferral_warnings = 0;
  return rc;
}

static void stop(void) {
  stub_on_value = NULL;
  stub_on_log = NULL;
  stub_free_read_user_data();
  stub_call_shutdown();
  stub_clock_set(0);
  unlink(path);
}

/* Cycle k of the test: the clock at T0 + k intervals, then the read. */
static size_t cycle(int k, double interval_s) {
  stub_clock_set(T0 + DOUBLE_TO_CDTIME_T(k * interval_s));
  n_order = 0;
  ck_assert_int_eq(stub_call_read(), 0);
  return n_order;
}

/* Make one service cost `seconds` of the stand-in's clock: the values one
 * service dispatches per cycle (all alike here, counted once with the
 * clock still) times the step per value. */
static void service_costs(double seconds) {
  static size_t per_service;
  if (per_service == 0) {
    ck_assert_int_eq(start(NULL), 0);
    stub_counters c;
    ck_assert_uint_eq(cycle(0, 10), N_SERVICES);
    stub_counters_get(&c);
    /* the services' values and the cycle's write probe (write_probe.h) */
    ck_assert_uint_eq((c.values - 1) % N_SERVICES, 0);
    per_service = (c.values - 1) / N_SERVICES;
    ck_assert_uint_gt(per_service, 1);
    stop();
  }
  stub_clock_per_value(DOUBLE_TO_CDTIME_T(seconds) / per_service);
}

START_TEST(test_deferral_is_fair) {
  /* a cycle may take 0.1 x 10 s = 1 s; a service costs 0.25 s */
  static const char *const opts[] = {"CycleBudget", "0.1", NULL};
  service_costs(0.25);
  ck_assert_int_eq(start(opts), 0);
  /* the clock is read between services: 1 s is spent after the fourth
   * when a service costs exactly 0.25 s, so each cycle analyses at most
   * five, at least one */
  int last_seen[N_SERVICES];
  for (int i = 0; i < N_SERVICES; i++)
    last_seen[i] = -1;
  int expect_first = 0;
  size_t k_min = N_SERVICES, cycles = 24;
  for (int k = 0; k < (int)cycles; k++) {
    size_t done = cycle(k, 10);
    ck_assert_uint_ge(done, 1);
    ck_assert_uint_lt(done, N_SERVICES); /* deferral happens */
    /* round robin: the cycle starts with the first service the last one
     * left out, and goes on in the file's order */
    for (size_t j = 0; j < done; j++) {
      ck_assert_int_eq(order[j], (expect_first + (int)j) % N_SERVICES);
      last_seen[order[j]] = k;
    }
    expect_first = (expect_first + (int)done) % N_SERVICES;
    if (done < k_min)
      k_min = done;
    if (k == 0) { /* one warning, with the counts this cycle shows */
      ck_assert_uint_eq(deferral_warnings, 1);
      char want[64];
      snprintf(want, sizeof want, ": %zu of %d services deferred",
               N_SERVICES - done, N_SERVICES);
      ck_assert_msg(strstr(deferral_text, want) != NULL, "%s", deferral_text);
      ck_assert_ptr_nonnull(strstr(deferral_text, "raise CycleBudget"));
      ck_assert_ptr_nonnull(strstr(deferral_text, "split the service file"));
    }
    /* fairness: every service analysed in the last ceil(n / k_min) cycles */
    int window = (int)((N_SERVICES + k_min - 1) / k_min);
    if (k + 1 >= window)
      for (int i = 0; i < N_SERVICES; i++)
        ck_assert_msg(last_seen[i] > k - window,
                      "s%d not analysed in the "
                      "%d cycles up to %d",
                      i, window, k);
  }
  /* rate-limited: collectd's back-off (10 s, then doubling) over 240 s */
  ck_assert_uint_ge(deferral_warnings, 2);
  ck_assert_uint_le(deferral_warnings, 5);
  /* services cheap again: every one in one cycle, and the warning released */
  stub_clock_per_value(0);
  stub_counters_reset();
  ck_assert_uint_eq(cycle((int)cycles, 10), N_SERVICES);
  ck_assert_str_eq(stub_last_message(),
                   "metastable plugin: every service is analysed in every "
                   "read cycle again");
  stop();
}
END_TEST

/* How many services one cycle analyses with these options, a service
 * costing `cost` seconds of the read thread's CPU time, which a host that
 * gives the thread cpu_share of a core stretches to cost / cpu_share of
 * wall time. */
static size_t analysed_with(const char *const *opts, double cost,
                            double interval, double cpu_share) {
  service_costs(cost);
  ck_assert_int_eq(start(opts), 0);
  stub_cpu_share(cpu_share);
  size_t done = cycle(0, interval);
  stop();
  return done;
}

/* CycleBudget counts the read thread's CPU time, at most 1 s; the wall
 * time is capped at 5 s or half the interval.  Services of 0.1 s of CPU
 * each, 12 of them: 1.2 s. */
START_TEST(test_cpu_budget_and_wall_cap) {
  static const char *const b01[] = {"CycleBudget", "0.1", NULL};
  static const char *const b005[] = {"CycleBudget", "0.05", NULL};
  static const char *const b1[] = {"CycleBudget", "1", NULL};
  static const char *const b05_long[] = {"CycleBudget", "0.5", "Interval",
                                         "100", NULL};
  static const char *const b1_short[] = {"CycleBudget", "1", "Interval", "1",
                                         NULL};
  static const char *const p5[] = {"CycleBudget", "5%", NULL};
  static const char *const p50_long[] = {"CycleBudget", "50%", "Interval",
                                         "100s", NULL};
  static const char *const b1_short_ms[] = {"CycleBudget", "100%", "Interval",
                                            "1000ms", NULL};
  /* a quiet host: the CPU time is the wall time */
  size_t one_second = analysed_with(b01, 0.1, 10, 1);
  size_t half_second = analysed_with(b005, 0.1, 10, 1);
  ck_assert_uint_gt(half_second, 1);
  ck_assert_uint_lt(half_second, one_second);
  ck_assert_uint_lt(one_second, N_SERVICES);
  /* 10 s and 50 s of budget are cut to 1 s of CPU */
  ck_assert_uint_eq(analysed_with(b1, 0.1, 10, 1), one_second);
  ck_assert_uint_eq(analysed_with(b05_long, 0.1, 100, 1), one_second);
  /* a 1 s interval caps the wall time at 0.5 s: its 1 s of budget gets
   * 0.5 s */
  ck_assert_uint_eq(analysed_with(b1_short, 0.1, 1, 1), half_second);
  /* the same budgets in the service file's units (service/units.c) */
  ck_assert_uint_eq(analysed_with(p50_long, 0.1, 100, 1), one_second);
  ck_assert_uint_eq(analysed_with(p5, 0.1, 10, 1), half_second);
  ck_assert_uint_eq(analysed_with(b1_short_ms, 0.1, 1, 1), half_second);
  /* a busy host gives the read thread a quarter of a core: 1 s of CPU
   * takes 4 s of wall time, and the cycle analyses what a quiet one does
   * (with a wall-time budget it was a quarter) */
  ck_assert_uint_eq(analysed_with(b01, 0.1, 10, 0.25), one_second);
  /* a tenth: 1 s of CPU would take 10 s; the cap stops it at 5 s, with
   * 0.5 s of CPU */
  ck_assert_uint_eq(analysed_with(b01, 0.1, 10, 0.1), half_second);
}
END_TEST

/* The warning of a cycle the wall cap stopped says so, with the share of a
 * core the read thread got, and what to do. */
START_TEST(test_starved_cycle_says_why) {
  static const char *const opts[] = {"CycleBudget", "0.1", NULL};
  service_costs(0.1); /* 1 s of wall time each */
  ck_assert_int_eq(start(opts), 0);
  stub_cpu_share(0.1);
  size_t done = cycle(0, 10);
  ck_assert_uint_lt(done, N_SERVICES);
  ck_assert_uint_eq(deferral_warnings, 1);
  char want[256];
  snprintf(want, sizeof want,
           ": %zu of %d services deferred to the next read cycle: the cycle "
           "reached its wall-time cap of 5 s (5 s or 0.5 of the interval) on "
           "%zu, with ",
           N_SERVICES - done, N_SERVICES, done);
  ck_assert_msg(strstr(deferral_text, want) != NULL, "%s", deferral_text);
  ck_assert_msg(strstr(deferral_text, "gave the read thread 10% of a core") !=
                    NULL,
                "%s", deferral_text);
  ck_assert_ptr_nonnull(
      strstr(deferral_text, "give collectd more of the host"));
  stop();
}
END_TEST

/* One service that alone costs more than the budget is analysed anyway:
 * one per cycle, in turn. */
START_TEST(test_slow_service_analysed_anyway) {
  static const char *const opts[] = {"CycleBudget", "0.01", NULL};
  service_costs(5.0); /* the budget: 0.1 s */
  ck_assert_int_eq(start(opts), 0);
  for (int k = 0; k < 2 * N_SERVICES; k++) {
    ck_assert_uint_eq(cycle(k, 10), 1);
    ck_assert_int_eq(order[0], k % N_SERVICES);
  }
  stop();
}
END_TEST

/* Without deferral nothing changes: every service every cycle, no
 * warning (the default 0.2 of 10 s, services free). */
START_TEST(test_default_defers_nothing) {
  ck_assert_int_eq(start(NULL), 0);
  for (int k = 0; k < 3; k++) {
    ck_assert_uint_eq(cycle(k, 10), N_SERVICES);
    for (int i = 0; i < N_SERVICES; i++)
      ck_assert_int_eq(order[i], i);
  }
  ck_assert_uint_eq(deferral_warnings, 0);
  stop();
}
END_TEST

static void config_fails(const char *value, const char *want) {
  const char *const opts[] = {"CycleBudget", value, NULL};
  ck_assert_int_ne(start(opts), 0);
  ck_assert_str_eq(stub_last_warning(), want);
  stop();
}

START_TEST(test_config_errors) {
  config_fails(
      "0",
      "metastable plugin: <Plugin metastable> CycleBudget 0: "
      "must be a share of the interval from 0.01 to 1 (1% to "
      "100%; default 0.2; in the read thread's CPU time, at most 1 s; a cycle "
      "never takes more than 5 s or 0.5 of the interval whatever it is)");
  config_fails(
      "1.5",
      "metastable plugin: <Plugin metastable> CycleBudget "
      "1.5: must be a share of the interval from 0.01 to 1 "
      "(1% to 100%; default 0.2; in the read thread's CPU time, at most 1 s; a "
      "cycle never takes more than 5 s or 0.5 of the interval whatever it is)");
  config_fails("150%", "metastable plugin: <Plugin metastable> CycleBudget "
                       "150%: must be a share of the interval from 0.01 to "
                       "1 (1% to 100%; default 0.2; in the read thread's CPU "
                       "time, at most 1 s; a cycle never takes more than 5 s "
                       "or 0.5 of the interval whatever it is)");
  config_fails("fast", "metastable plugin: <Plugin metastable> CycleBudget: "
                       "takes one share of the interval from 0.01 to 1, as "
                       "a number or a percentage in quotes (CycleBudget "
                       "0.2, CycleBudget \"20%\"), not \"fast\"");
  /* the edges are allowed */
  static const char *const lo[] = {"CycleBudget", "0.01", NULL};
  static const char *const hi[] = {"CycleBudget", "1", NULL};
  ck_assert_int_eq(start(lo), 0);
  stop();
  ck_assert_int_eq(start(hi), 0);
  stop();
}
END_TEST

int main(void) {
  Suite *s = suite_create("plugin_budget");
  TCase *tc = tcase_create("budget");
  tcase_add_test(tc, test_deferral_is_fair);
  tcase_add_test(tc, test_cpu_budget_and_wall_cap);
  tcase_add_test(tc, test_starved_cycle_says_why);
  tcase_add_test(tc, test_slow_service_analysed_anyway);
  tcase_add_test(tc, test_default_defers_nothing);
  tcase_add_test(tc, test_config_errors);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
