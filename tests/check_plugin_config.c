/* SPDX-License-Identifier: MIT */
/*
 * The <Plugin metastable> block (plugin/metastable.c's configuration
 * callback, against the collectd stand-in of tests/collectd_stub.c, which
 * reads each line as collectd 5.12's scanner does):
 *
 *  - an unknown option fails the configuration (collectd then does not
 *    start), naming the nearest known option; option names are compared
 *    without case, as collectd does;
 *  - a block without ServiceFile fails it too;
 *  - Interval takes the service file's durations (10, 10s, 500ms, 5m,
 *    and 1.5m, which collectd's scanner splits in two) from 0.1 s to a
 *    day, CycleBudget its shares (0.2, "20%") from 0.01 to 1, through the
 *    parsers of service/units.c; each at its edges, with the exact
 *    messages;
 *  - a duration of the service file written without a unit that looks
 *    like milliseconds is logged once, at load (the rule itself is held
 *    at its edges by tests/check_service.c).
 *
 * tests/integration/test_config.py feeds some of the same lines to a real
 * collectd, which is what holds the stand-in's scanner to collectd's.
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

static char path[] = "/tmp/ms-check-config-XXXXXX";
static char file_line[128]; /* ServiceFile "path" */

static void setup(void) {
  strcpy(path, "/tmp/ms-check-config-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n  - name: a\n    model: capacity\n    capacity: "
             "100\n    retries: 1\n    inputs:\n      offered_rate: 10\n");
  fclose(y);
  snprintf(file_line, sizeof file_line, "ServiceFile \"%s\"", path);
}

static void teardown(void) { unlink(path); }

/* Configure with the service file and one more line (NULL: none); returns
 * the callback's status, with the plugin shut down again when it failed
 * (what collectd does: it exits). */
static int configure(const char *line) {
  const char *lines[] = {file_line, line, NULL};
  module_register();
  stub_counters_reset();
  int rc = stub_call_config_lines(lines);
  if (rc != 0)
    stub_call_shutdown();
  return rc;
}

/* The line is refused, with exactly this message. */
static void refused(const char *line, const char *want) {
  ck_assert_msg(configure(line) != 0, "%s accepted", line);
  ck_assert_str_eq(stub_last_warning(), want);
}

/* The line is accepted, and the read callback registered every `interval`
 * seconds (without Interval: the plugin's interval in collectd, the
 * stand-in's 10 s). */
static void accepted(const char *line, double interval) {
  ck_assert_msg(configure(line) == 0, "%s: %s", line, stub_last_warning());
  ck_assert_msg(stub_call_init() == 0, "%s", stub_last_warning());
  ck_assert_uint_eq(stub_read_interval(), DOUBLE_TO_CDTIME_T(interval));
  stub_free_read_user_data();
  stub_call_shutdown();
}

#define KNOWN                                                                  \
  "(known: ServiceFile, Host, Interval, Values, CycleBudget, Shard, "          \
  "NewSeriesPerInterval, FullEvery)"

START_TEST(test_unknown_option_refused) {
  /* the typo of the issue: without ServiceFile, nothing is refused first */
  const char *typo[] = {"ServicFile \"/etc/collectd/metastable.yaml\"", NULL};
  module_register();
  ck_assert_int_ne(stub_call_config_lines(typo), 0);
  ck_assert_str_eq(stub_last_warning(),
                   "metastable plugin: <Plugin metastable> unknown option "
                   "\"ServicFile\": did you mean \"ServiceFile\"? " KNOWN
                   "; collectd does not start until it is fixed");
  stub_call_shutdown();
  refused("Intervall 10", "metastable plugin: <Plugin metastable> unknown "
                          "option \"Intervall\": did you mean \"Interval\"? "
                          "" KNOWN "; collectd does not start until it is "
                          "fixed");
  refused("cyclebuget 0.2", "metastable plugin: <Plugin metastable> unknown "
                            "option \"cyclebuget\": did you mean "
                            "\"CycleBudget\"? " KNOWN "; collectd does not "
                            "start until it is fixed");
  refused("Colour \"red\"", "metastable plugin: <Plugin metastable> unknown "
                            "option \"Colour\" " KNOWN "; collectd does not "
                            "start until it is fixed");
  /* collectd compares option names without case */
  accepted("interval 2", 2);
  accepted("CYCLEBUDGET 0.5", 10);
  stub_counters c;
  stub_counters_get(&c);
  ck_assert_uint_eq(c.log_warning + c.log_error, 0);
}
END_TEST

/* A name in Values that is none of the plugin's types names the nearest. */
START_TEST(test_values_suggest) {
  refused("Values \"state\" \"strom\"",
          "metastable plugin: Values: argument 2 (strom) is not one of the "
          "plugin's types (see its types.db); did you mean \"storm\"?");
  refused("Values \"colour\"", "metastable plugin: Values: argument 1 "
                               "(colour) is not one of the plugin's types "
                               "(see its types.db)");
  refused("Values 3", "metastable plugin: Values: argument 1 (not a string) "
                      "is not one of the plugin's types (see its types.db)");
  accepted("Values \"state\" \"storm\"", 10);
}
END_TEST

/* NewSeriesPerInterval and FullEvery take a whole number bare or in
 * quotes, as collectd's own options do, and a refusal says what it got. */
START_TEST(test_pacing_options_say_what_they_got) {
  accepted("NewSeriesPerInterval \"500\"", 10);
  accepted("NewSeriesPerInterval auto", 10);
  accepted("FullEvery \"6\"", 10);
  accepted("FullEvery 360", 10);
#define NEW_SERIES                                                             \
  "metastable plugin: <Plugin metastable> NewSeriesPerInterval: takes "        \
  "\"auto\" (the default: as many as collectd's write path takes, on its "     \
  "feedback), 0 (no limit) or a whole number of new series per interval up "   \
  "to 100000000, not "
  refused("NewSeriesPerInterval fast", NEW_SERIES "\"fast\"");
  refused("NewSeriesPerInterval -5", NEW_SERIES "-5");
  refused("NewSeriesPerInterval 1.5", NEW_SERIES "1.5");
  refused("NewSeriesPerInterval 100000001", NEW_SERIES "100000001");
  refused("NewSeriesPerInterval \" 5\"", NEW_SERIES "\" 5\"");
  refused("NewSeriesPerInterval \"5 series\"", NEW_SERIES "\"5 series\"");
  refused("NewSeriesPerInterval true", NEW_SERIES "a boolean");
#define FULL_EVERY                                                             \
  "metastable plugin: <Plugin metastable> FullEvery: takes a whole number "    \
  "of intervals from 1 (every value every interval, the default) to 360: "     \
  "the essential values go every interval, the others every N-th; not "
  refused("FullEvery 361", FULL_EVERY "361");
  refused("FullEvery 0", FULL_EVERY "0");
  refused("FullEvery \"six\"", FULL_EVERY "\"six\"");
}
END_TEST

START_TEST(test_service_file_required) {
  const char *lines[] = {"Interval 5", NULL};
  module_register();
  ck_assert_int_ne(stub_call_config_lines(lines), 0);
  ck_assert_str_eq(stub_last_warning(),
                   "metastable plugin: <Plugin metastable> has no "
                   "ServiceFile: add ServiceFile "
                   "\"/etc/collectd/metastable.yaml\" (the path of your "
                   "service file); collectd does not start without it");
  stub_call_shutdown();
}
END_TEST

START_TEST(test_interval_units) {
  accepted(NULL, 10);
  accepted("Interval 10", 10);
  accepted("Interval 2.5", 2.5);
  accepted("Interval 10s", 10);
  accepted("Interval 500ms", 0.5);
  accepted("Interval 5m", 300);
  accepted("Interval 1.5m", 90); /* the number 1.5 and the string "m" */
  accepted("Interval 1.5 m", 90);
  accepted("Interval \"1.5m\"", 90);
  accepted("Interval \"250000us\"", 0.25);
  accepted("Interval 1h", 3600);
  /* the edges: 0.1 s and a day, whatever the unit */
  accepted("Interval 0.1", 0.1);
  accepted("Interval 100ms", 0.1);
  accepted("Interval 100000us", 0.1);
  accepted("Interval 86400", 86400);
  accepted("Interval 1440m", 86400);
  accepted("Interval 24h", 86400);
  refused("Interval 99ms", "metastable plugin: <Plugin metastable> Interval "
                           "99ms is 0.099 s: it must be from 0.1 s to 86400 "
                           "s");
  refused("Interval 0.09", "metastable plugin: <Plugin metastable> Interval "
                           "0.09 is 0.09 s: it must be from 0.1 s to 86400 "
                           "s");
  refused("Interval 0", "metastable plugin: <Plugin metastable> Interval 0 "
                        "is 0 s: it must be from 0.1 s to 86400 s");
  refused("Interval 86401", "metastable plugin: <Plugin metastable> Interval "
                            "86401 is 86401 s: it must be from 0.1 s to "
                            "86400 s");
  /* the seconds with the digits that keep them apart from the bound */
  refused("Interval 86400.00001", "metastable plugin: <Plugin metastable> "
                                  "Interval 86400.00001 is 86400.00001 s: it "
                                  "must be from 0.1 s to 86400 s");
  refused("Interval 99.9999999ms", "metastable plugin: <Plugin metastable> "
                                   "Interval 99.9999999ms is 0.0999999999 s: "
                                   "it must be from 0.1 s to 86400 s");
  /* a duration too close to 0 in seconds: the rule of service/units.h */
  refused("Interval \"1e-306us\"",
          "metastable plugin: <Plugin metastable> Interval: '1e-306us' is "
          "1e-312 s, too close to 0: below 2.2250738585072014e-308, the "
          "smallest double with full precision; write 0 or a larger number; "
          "it takes a duration from 0.1 s to 86400 s (10, 10s, 500ms, 5m)");
  refused("Interval 1441m", "metastable plugin: <Plugin metastable> Interval "
                            "1441m is 86460 s: it must be from 0.1 s to "
                            "86400 s");
  refused("Interval 25h", "metastable plugin: <Plugin metastable> Interval "
                          "25h is 90000 s: it must be from 0.1 s to 86400 s");
  refused("Interval 5min", "metastable plugin: <Plugin metastable> Interval: "
                           "'5min': unknown time unit 'min' (use us, ms, s, m "
                           "or h); it takes a duration from 0.1 s to 86400 s "
                           "(10, 10s, 500ms, 5m)");
  refused("Interval -1", "metastable plugin: <Plugin metastable> Interval: "
                         "'-1' is not a duration (seconds, or a number with "
                         "us, ms, s, m or h); it takes a duration from 0.1 s "
                         "to 86400 s (10, 10s, 500ms, 5m)");
  refused("Interval true", "metastable plugin: <Plugin metastable> Interval: "
                           "takes one duration from 0.1 s to 86400 s (10, "
                           "10s, 500ms, 5m), not a boolean");
  refused("Interval 10 20", "metastable plugin: <Plugin metastable> "
                            "Interval: takes one duration from 0.1 s to "
                            "86400 s (10, 10s, 500ms, 5m), not several "
                            "values or none");
  refused("Interval", "metastable plugin: <Plugin metastable> Interval: takes "
                      "one duration from 0.1 s to 86400 s (10, 10s, 500ms, "
                      "5m), not several values or none");
}
END_TEST

START_TEST(test_cycle_budget_units) {
  /* the edges: 0.01 and 1, as numbers or percentages in quotes */
  static const char *const good[] = {
      "CycleBudget 0.01",     "CycleBudget \"1%\"",   "CycleBudget 1",
      "CycleBudget \"100%\"", "CycleBudget \"20 %\"", "CycleBudget 0.2",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    accepted(good[i], 10);
  refused("CycleBudget 0.0099",
          "metastable plugin: <Plugin metastable> CycleBudget 0.0099: must "
          "be a share of the interval from 0.01 to 1 (1% to 100%; default 0.2; "
          "in the read thread's CPU time, at most 1 s; a cycle never takes "
          "more than 5 s or 0.5 of the interval whatever it is)");
  refused("CycleBudget \"0.99%\"",
          "metastable plugin: <Plugin metastable> CycleBudget 0.99%: must "
          "be a share of the interval from 0.01 to 1 (1% to 100%; default 0.2; "
          "in the read thread's CPU time, at most 1 s; a cycle never takes "
          "more than 5 s or 0.5 of the interval whatever it is)");
  refused("CycleBudget \"101%\"",
          "metastable plugin: <Plugin metastable> CycleBudget 101%: must "
          "be a share of the interval from 0.01 to 1 (1% to 100%; default 0.2; "
          "in the read thread's CPU time, at most 1 s; a cycle never takes "
          "more than 5 s or 0.5 of the interval whatever it is)");
  refused("CycleBudget 1.01",
          "metastable plugin: <Plugin metastable> CycleBudget 1.01: must "
          "be a share of the interval from 0.01 to 1 (1% to 100%; default 0.2; "
          "in the read thread's CPU time, at most 1 s; a cycle never takes "
          "more than 5 s or 0.5 of the interval whatever it is)");
  refused("CycleBudget 2",
          "metastable plugin: <Plugin metastable> CycleBudget 2: must be a "
          "share of the interval from 0.01 to 1 (1% to 100%; default 0.2; in "
          "the read thread's CPU time, at most 1 s; a cycle never takes more "
          "than 5 s or 0.5 of the interval whatever it is); for a percentage "
          "write \"2%\" in quotes: collectd drops an unquoted %");
  /* collectd reads an unquoted 20% as the number 20: the hint says why */
  refused("CycleBudget 20%",
          "metastable plugin: <Plugin metastable> CycleBudget 20: must be a "
          "share of the interval from 0.01 to 1 (1% to 100%; default 0.2; in "
          "the read thread's CPU time, at most 1 s; a cycle never takes more "
          "than 5 s or 0.5 of the interval whatever it is); for a percentage "
          "write \"20%\" in quotes: collectd drops an unquoted %");
  refused("CycleBudget 101",
          "metastable plugin: <Plugin metastable> CycleBudget 101: must be a "
          "share of the interval from 0.01 to 1 (1% to 100%; default 0.2; in "
          "the read thread's CPU time, at most 1 s; a cycle never takes more "
          "than 5 s or 0.5 of the interval whatever it is)");
  refused("CycleBudget \"fast\"",
          "metastable plugin: <Plugin metastable> CycleBudget: takes one "
          "share of the interval from 0.01 to 1, as a number or a percentage "
          "in quotes (CycleBudget 0.2, CycleBudget \"20%\"), not \"fast\"");
  refused("CycleBudget 0.2s",
          "metastable plugin: <Plugin metastable> CycleBudget: takes one "
          "share of the interval from 0.01 to 1, as a number or a percentage "
          "in quotes (CycleBudget 0.2, CycleBudget \"20%\"), not "
          "\"0.2s\"");
  refused("CycleBudget off",
          "metastable plugin: <Plugin metastable> CycleBudget: takes one "
          "share of the interval from 0.01 to 1, as a number or a percentage "
          "in quotes (CycleBudget 0.2, CycleBudget \"20%\"), not a boolean");
}
END_TEST

/* The warnings logged, in order. */
static char logged[16][512];
static size_t n_logged;

static void on_log(int level, const char *msg) {
  if (level == LOG_WARNING && n_logged < 16)
    snprintf(logged[n_logged++], sizeof logged[0], "%s", msg);
}

/* A file of n erlang services, each with a bare timeout of 500 beside a
 * 100 ms service time (doc/configuration.md, "Units and bare numbers"),
 * configured, initialised and read twice: returns the warnings logged. */
static size_t bare_timeouts(size_t n) {
  FILE *y = fopen(path, "w");
  ck_assert_ptr_nonnull(y);
  fprintf(y, "services:\n");
  for (size_t i = 0; i < n; i++)
    fprintf(y,
            "  - name: s%zu\n    model: erlang\n    servers: 4\n"
            "    service_time: 100ms\n    timeout: 500\n    retries: 1\n"
            "    inputs:\n      offered_rate: 10\n",
            i);
  fclose(y);
  n_logged = 0;
  stub_on_log = on_log;
  ck_assert_int_eq(configure(NULL), 0);
  ck_assert_msg(stub_call_init() == 0, "%s", stub_last_warning());
  ck_assert_int_eq(stub_call_read(), 0);
  ck_assert_int_eq(stub_call_read(), 0);
  stub_on_log = NULL;
  stub_free_read_user_data();
  stub_call_shutdown();
  return n_logged;
}

/* A bare duration that looks like milliseconds is warned about once, at
 * load, with the file's position; the values are used as read.  Many go
 * five by name and one line for the rest. */
START_TEST(test_bare_duration_logged_once) {
  ck_assert_uint_eq(bare_timeouts(1), 1);
  char want[512];
  snprintf(want, sizeof want,
           "metastable plugin: service \"s0\": timeout: 500 was read as 500 "
           "s, 5,000 times the service time; write 500ms if you meant "
           "milliseconds (%s:6:14); the plugin uses the value as read, in "
           "seconds",
           path);
  ck_assert_str_eq(logged[0], want);
  ck_assert_uint_eq(bare_timeouts(8), 6);
  snprintf(want, sizeof want,
           "metastable plugin: service \"s4\": timeout: 500 was read as 500 "
           "s, 5,000 times the service time; write 500ms if you meant "
           "milliseconds (%s:38:14); the plugin uses the value as read, in "
           "seconds",
           path);
  ck_assert_str_eq(logged[4], want);
  snprintf(want, sizeof want,
           "metastable plugin: 3 more durations without a unit look like "
           "milliseconds; `metastable check %s` lists them all",
           path);
  ck_assert_str_eq(logged[5], want);
}
END_TEST

int main(void) {
  Suite *s = suite_create("plugin_config");
  TCase *tc = tcase_create("config");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_unknown_option_refused);
  tcase_add_test(tc, test_service_file_required);
  tcase_add_test(tc, test_pacing_options_say_what_they_got);
  tcase_add_test(tc, test_values_suggest);
  tcase_add_test(tc, test_interval_units);
  tcase_add_test(tc, test_cycle_budget_units);
  tcase_add_test(tc, test_bare_duration_logged_once);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
