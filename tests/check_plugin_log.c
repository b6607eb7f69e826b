/* SPDX-License-Identifier: MIT */
/*
 * The plugin's log of services without usable inputs (plugin/metastable.c
 * through its read callback, against the collectd stand-in of
 * tests/collectd_stub.c): few services are named one line each; many get
 * one summary line that names the services at fault, the first few by
 * name and the rest counted, never one that reports; both rate-limited.
 * And the start: a broken or missing service file fails the configuration
 * callback (collectd then does not start), with the file's position.
 * And flapping inputs, on the stand-in's clock moved one interval per
 * cycle: whatever the inputs do the plugin logs at most 30 lines in a
 * minute of the clock and one NOTICE that counts the rest, and the first
 * lines about a problem still go out.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "collectd.h"
#include "plugin.h"

#include "collectd_stub.h"

void module_register(void);

static char path[] = "/tmp/ms-check-log-XXXXXX";

/* n services ok-<i> and bad-<i>, interleaved in the file so that the first
 * service of the file reports; every input an identifier of its own. */
static void start(size_t n_ok, size_t n_bad) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n");
  for (size_t i = 0; i < n_ok || i < n_bad; i++)
    for (int bad = 0; bad < 2; bad++)
      if (i < (bad ? n_bad : n_ok))
        fprintf(y,
                "  - name: %s-%zu\n    model: capacity\n    capacity: 100\n"
                "    retries: 1\n    inputs:\n"
                "      offered_rate: \"h/statsd/derive-%s%zu\"\n",
                bad ? "bad" : "ok", i, bad ? "bad" : "ok", i);
  fclose(y);
  char name[64];
  for (size_t i = 0; i < n_ok; i++) {
    snprintf(name, sizeof name, "h/statsd/derive-ok%zu", i);
    stub_cache_set(name, 10.0);
  }
  stub_cache_commit();
  module_register();
  ck_assert_msg(stub_call_config(path) == 0 && stub_call_init() == 0, "%s",
                stub_last_warning());
  stub_counters_reset();
}

/* path: a fresh file holding TEXT. */
static void write_file(const char *text) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fputs(text, y);
  fclose(y);
}

static void stop(void) {
  stub_free_read_user_data();
  stub_call_shutdown();
  stub_cache_clear();
  unlink(path);
}

START_TEST(test_few_named_one_by_one) {
  start(3, 4);
  ck_assert_int_eq(stub_call_read(), 0);
  stub_counters c;
  stub_counters_get(&c);
  ck_assert_uint_eq(c.log_warning, 4);
  ck_assert_str_eq(stub_last_warning(),
                   "metastable plugin: service \"bad-3\": input offered_rate: "
                   "'h/statsd/derive-bad3' is not in collectd's cache (not "
                   "dispatched yet, or expired); nothing reported until it is "
                   "usable");
  stop();
}
END_TEST

START_TEST(test_many_named_in_the_summary) {
  start(12, 12);
  ck_assert_int_eq(stub_call_read(), 0);
  stub_counters c;
  stub_counters_get(&c);
  ck_assert_uint_eq(c.log_warning, 1);
  const char *w = stub_last_warning();
  ck_assert_str_eq(w, "metastable plugin: 12 of 24 services have no usable "
                      "inputs and report nothing: \"bad-0\", \"bad-1\", "
                      "\"bad-2\", \"bad-3\", \"bad-4\" and 7 more (\"bad-0\": "
                      "input offered_rate: 'h/statsd/derive-bad0' is not in "
                      "collectd's cache (not dispatched yet, or expired))");
  ck_assert_ptr_null(strstr(w, "ok-"));
  /* rate-limited: the next cycles say nothing */
  ck_assert_int_eq(stub_call_read(), 0);
  stub_counters_get(&c);
  ck_assert_uint_eq(c.log_warning, 1);
  /* back: one line after five good intervals, naming them */
  char name[64];
  for (size_t i = 0; i < 12; i++) {
    snprintf(name, sizeof name, "h/statsd/derive-bad%zu", i);
    stub_cache_set(name, 10.0);
  }
  stub_cache_commit();
  for (int k = 0; k < 5; k++)
    ck_assert_int_eq(stub_call_read(), 0);
  ck_assert_str_eq(stub_last_message(),
                   "metastable plugin: 12 services have usable inputs again: "
                   "\"bad-0\", \"bad-1\", \"bad-2\", \"bad-3\", \"bad-4\" and "
                   "7 more");
  stop();
}
END_TEST

/* Long names: as many as fit before the reason, the rest counted. */
START_TEST(test_summary_bounded) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n");
  for (int i = 0; i < 8; i++)
    fprintf(y,
            "  - name: %c%062d\n    model: capacity\n    capacity: 100\n"
            "    retries: 1\n    inputs:\n      offered_rate: h/p/t%d\n",
            'a' + i, i, i);
  fclose(y);
  module_register();
  ck_assert(stub_call_config(path) == 0 && stub_call_init() == 0);
  stub_counters_reset();
  ck_assert_int_eq(stub_call_read(), 0);
  const char *w = stub_last_warning();
  ck_assert_msg(strstr(w, "\" and 5 more (\"a0000") != NULL, "%s", w);
  ck_assert_msg(strstr(w, "is not in collectd's cache") != NULL, "%s", w);
  stop();
}
END_TEST

START_TEST(test_broken_file_fails_configuration) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n  - name: x\n    model: erlang\n"
             "    servers: many\n");
  fclose(y);
  module_register();
  ck_assert_int_ne(stub_call_config(path), 0);
  char want[256];
  snprintf(want, sizeof want,
           "metastable plugin: %s:4:14: servers must be a whole number", path);
  ck_assert_msg(strncmp(stub_last_warning(), want, strlen(want)) == 0, "%s",
                stub_last_warning());
  ck_assert_ptr_nonnull(strstr(stub_last_warning(), "collectd does not start"));
  ck_assert_int_ne(stub_call_init(), 0); /* had collectd gone on */
  stub_call_shutdown();
  unlink(path);
  /* a relative path is taken from BaseDir, where init used to open it */
  ck_assert_int_ne(stub_call_config("no-such-file.yaml"), 0);
  static const char where[] =
      "metastable plugin: /var/lib/collectd/no-such-file.yaml: ";
  ck_assert_msg(strncmp(stub_last_warning(), where, strlen(where)) == 0, "%s",
                stub_last_warning());
  stub_call_shutdown();
}
END_TEST

/* ---- control bytes ---------------------------------------------------- */

/* Every line logged, and whether one held a control byte (C0 or DEL). */
static size_t lines_logged, lines_raw;
static char last_line[1024];

static void on_any_log(int level, const char *msg) {
  (void)level;
  lines_logged++;
  for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
    if (*c < 0x20 || *c == 0x7f) {
      lines_raw++;
      break;
    }
  snprintf(last_line, sizeof last_line, "%s", msg);
}

/* An identifier with an OSC sequence (ESC ] 0; ... BEL, which retitles a
 * terminal) and a key with one: the plugin's lines show them escaped as
 * the command shows them (\x1b, \x07), in a read cycle's complaint and in
 * the refusal of a file at start. */
START_TEST(test_control_bytes_escaped) {
  write_file("services:\n  - name: osc\n    model: capacity\n"
             "    capacity: 100\n    retries: 1\n    inputs:\n"
             "      offered_rate: \"h/statsd/derive-x\\e]0;owned\\a\"\n");
  lines_logged = lines_raw = 0;
  stub_on_log = on_any_log;
  module_register();
  ck_assert_int_eq(stub_call_config(path), 0);
  ck_assert_int_eq(stub_call_init(), 0);
  ck_assert_int_eq(stub_call_read(), 0);
  ck_assert_str_eq(stub_last_warning(),
                   "metastable plugin: service \"osc\": input offered_rate: "
                   "'h/statsd/derive-x\\x1b]0;owned\\x07' is not in "
                   "collectd's cache (not dispatched yet, or expired); "
                   "nothing reported until it is usable");
  stub_free_read_user_data();
  stub_call_shutdown();
  /* a key with ESC, refused at start: the ERROR line is escaped too */
  FILE *y = fopen(path, "w");
  fprintf(y, "services:\n  - name: osc\n    \"model\\e[2J\": capacity\n");
  fclose(y);
  module_register();
  ck_assert_int_ne(stub_call_config(path), 0);
  ck_assert_ptr_nonnull(strstr(stub_last_warning(), "'model\\x1b[2J'"));
  stub_call_shutdown();
  stub_on_log = NULL;
  unlink(path);
  ck_assert_uint_gt(lines_logged, 2);
  ck_assert_uint_eq(lines_raw, 0);
}
END_TEST

/* ---- inputs the verdict can go without -------------------------------- */

/* What the plugin dispatched for "learned" (0) and "plain" (1) in the last
 * cycle: reporting, storm, state; -1 when not dispatched. */
static double got[2][3];
static char notice[1024];
static size_t warnings_about_learned;

static void on_value(const value_list_t *vl) {
  static const char *const types[] = {"reporting", "storm", "state"};
  int svc = strcmp(vl->plugin_instance, "learned") == 0 ? 0
            : strcmp(vl->plugin_instance, "plain") == 0 ? 1
                                                        : -1;
  for (int k = 0; k < 3 && svc >= 0; k++)
    if (strcmp(vl->type, types[k]) == 0)
      got[svc][k] = vl->values[0].gauge;
}

static void on_log(int level, const char *msg) {
  if (level == LOG_NOTICE && strstr(msg, "calibration:") != NULL)
    snprintf(notice, sizeof notice, "%s", msg);
  if (level <= LOG_WARNING && strstr(msg, "\"learned\"") != NULL)
    warnings_about_learned++;
}

/* One cycle with these inputs (NAN: a NaN gauge). */
static void cycle_with(double offered, double attempts, double errors,
                       double latency) {
  stub_cache_set("h/p/gauge-offered", offered);
  stub_cache_set("h/p/gauge-attempts", attempts);
  stub_cache_set("h/p/gauge-errors", errors);
  stub_cache_set("h/p/gauge-latency", latency);
  stub_cache_commit();
  for (int k = 0; k < 6; k++)
    got[k / 3][k % 3] = -1;
  ck_assert_int_eq(stub_call_read(), 0);
}

/* The storm on the stand-in: "learned" reads a latency gauge that
 * is NaN when nothing succeeds, and learns its service time from it;
 * "plain" is the same service without it, the reference.  Through the
 * storm learned reports what plain reports, pages once as plain does, and
 * logs the latency as a calibration NOTICE, not as a service that reports
 * nothing.  A NaN input the verdict needs still silences both. */
START_TEST(test_calibration_input_nan) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  static const char model[] =
      "    model: erlang\n    servers: 10\n    service_time: 100ms\n"
      "    timeout: 1s\n    retries: 2\n";
  static const char inputs[] = "      offered_rate: h/p/gauge-offered\n"
                               "      arrival_rate: h/p/gauge-attempts\n"
                               "      error_rate: h/p/gauge-errors\n";
  fprintf(y,
          "services:\n  - name: learned\n%s    calibrate: [service_time]\n"
          "    inputs:\n%s      latency: h/p/gauge-latency\n"
          "  - name: plain\n%s    inputs:\n%s",
          model, inputs, model, inputs);
  fclose(y);
  module_register();
  static const char *const opts[] = {"Interval", "1", "NewSeriesPerInterval",
                                     "0", NULL};
  ck_assert_msg(stub_call_config_options(path, opts) == 0 &&
                    stub_call_init() == 0,
                "%s", stub_last_warning());
  stub_on_value = on_value;
  stub_on_log = on_log;
  notice[0] = '\0';
  warnings_about_learned = 0;
  stub_counters_reset();
  /* healthy at 50 req/s, the handler's 100 ms measured */
  for (int i = 0; i < 3; i++) {
    cycle_with(50, 50, 0, 0.1);
    ck_assert(got[0][0] == 1 && got[1][0] == 1);
    ck_assert(got[0][1] == 0 && got[1][1] == 0);
  }
  /* the storm: 60 req/s, every attempt of three failing, no latency */
  for (int i = 0; i < 4; i++) {
    cycle_with(60, 180, 180, NAN);
    ck_assert_msg(got[0][0] == 1, "cycle %d: learned reports nothing", i);
    ck_assert(got[1][0] == 1 && got[1][1] == 1);
    ck_assert_double_eq(got[0][1], got[1][1]);
    ck_assert_double_eq(got[0][2], got[1][2]);
  }
  stub_counters c;
  stub_counters_get(&c);
  ck_assert_uint_eq(c.notifications_failure, 2);
  ck_assert_str_eq(notice, "metastable plugin: service \"learned\": "
                           "calibration: input latency: 'h/p/gauge-latency' "
                           "is NaN: a gauge without a value this interval (a "
                           "statsd timer or a tail average without samples)");
  ck_assert_uint_eq(warnings_about_learned, 0);
  /* gone from collectd: the same */
  stub_cache_remove("h/p/gauge-latency");
  ck_assert_int_eq(stub_call_read(), 0);
  ck_assert(got[0][0] == 1 && got[0][1] == 1);
  ck_assert_uint_eq(warnings_about_learned, 0);
  /* a needed input NaN: no verdict for either */
  cycle_with(NAN, 180, 180, NAN);
  ck_assert(got[0][0] == 0 && got[1][0] == 0);
  ck_assert(got[0][1] == -1 && got[1][1] == -1);
  ck_assert_uint_eq(warnings_about_learned, 1);
  ck_assert_msg(strstr(stub_last_warning(),
                       "input offered_rate: 'h/p/gauge-offered' is NaN") !=
                    NULL,
                "%s", stub_last_warning());
  stub_on_value = NULL;
  stub_on_log = NULL;
  stop();
}
END_TEST

/* ---- flapping inputs ------------------------------------------------- */

#define FLAP_SERVICES 12
#define FLAP_MINUTES 10
/* an aligned minute of cdtime, far from 0 (0: the real clock) */
#define FLAP_T0 ((uint64_t)1800000000 << 30)

static size_t lines_in_minute[FLAP_MINUTES + 1];
static size_t notices, cycle_now;
static char first_line[1024]; /* the first warning */
static size_t left_out_total;

static void count_line(int level, const char *msg) {
  size_t minute = cycle_now / 60;
  ck_assert_uint_le(minute, FLAP_MINUTES);
  lines_in_minute[minute]++;
  if (first_line[0] == '\0' && level <= LOG_WARNING)
    snprintf(first_line, sizeof first_line, "%s", msg);
  if (strstr(msg, "left out in the last minute") != NULL) {
    ck_assert_int_eq(level, LOG_NOTICE);
    notices++;
    left_out_total += strtoul(msg + strlen("metastable plugin: "), NULL, 10);
  }
}

/* Whether service i's input is in the cache at cycle k. */
typedef bool (*flap_pattern)(int i, size_t k);

/* FLAP_SERVICES services flap-<i>, every input its own identifier, an
 * interval of 1 s; FLAP_MINUTES minutes of cycles, one a second on the
 * stand-in's clock, the inputs as the pattern says.  Counts the lines of
 * each minute (lines_in_minute). */
static void run_flapping(flap_pattern present) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n");
  for (int i = 0; i < FLAP_SERVICES; i++)
    fprintf(y,
            "  - name: flap-%d\n    model: capacity\n    capacity: 100\n"
            "    retries: 1\n    inputs:\n"
            "      offered_rate: \"h/statsd/derive-flap%d\"\n",
            i, i);
  fclose(y);
  char name[64];
  for (int i = 0; i < FLAP_SERVICES; i++) {
    snprintf(name, sizeof name, "h/statsd/derive-flap%d", i);
    stub_cache_set(name, 10.0);
  }
  stub_cache_commit();
  module_register();
  static const char *const opts[] = {"Interval", "1", NULL};
  stub_clock_set(FLAP_T0);
  ck_assert(stub_call_config_options(path, opts) == 0 && stub_call_init() == 0);
  memset(lines_in_minute, 0, sizeof lines_in_minute);
  notices = left_out_total = 0;
  first_line[0] = '\0';
  stub_on_log = count_line;
  for (cycle_now = 0; cycle_now < 60 * FLAP_MINUTES; cycle_now++) {
    for (int i = 0; i < FLAP_SERVICES; i++) {
      snprintf(name, sizeof name, "h/statsd/derive-flap%d", i);
      if (present(i, cycle_now))
        stub_cache_set(name, 10.0 + (double)i);
      else
        stub_cache_remove(name);
    }
    stub_cache_commit();
    stub_clock_set(FLAP_T0 + ((uint64_t)cycle_now << 30));
    ck_assert_int_eq(stub_call_read(), 0);
  }
  stub_on_log = NULL;
  size_t total = 0;
  printf("lines per minute:");
  for (int m = 0; m < FLAP_MINUTES; m++) {
    printf(" %zu", lines_in_minute[m]);
    total += lines_in_minute[m];
  }
  printf(" (total %zu, %zu left out)\n", total, left_out_total);
  fflush(stdout);
  /* the bound: 30 lines, and the NOTICE about the minute before */
  for (int m = 0; m < FLAP_MINUTES; m++)
    ck_assert_uint_le(lines_in_minute[m], 31);
  stop();
  stub_clock_set(0);
}

/* every service, every other cycle */
static bool all_each_cycle(int i, size_t k) {
  (void)i;
  return k % 2 == 0;
}
/* three of twelve, every other cycle */
static bool few_each_cycle(int i, size_t k) { return i >= 3 || k % 2 == 0; }
/* all, with periods 1, 2 and 3 cycles */
static bool periods_1_2_3(int i, size_t k) {
  size_t period = 1 + (size_t)i % 3;
  return (k / period) % 2 == 0;
}
/* each gone one cycle in seven, staggered: never more than two at once,
 * so each is named one by one, and each is back (5 good intervals) before
 * it goes again: without the plugin-wide bound about 200 lines a minute */
static bool one_in_seven(int i, size_t k) { return (k + (size_t)i) % 7 != 0; }

START_TEST(test_flapping_all) {
  run_flapping(all_each_cycle);
  /* the summary and its release no longer alternate: the summary alone,
   * backing off (1, 2, 4 ... s) */
  ck_assert_str_eq(first_line,
                   "metastable plugin: 12 of 12 services have no usable "
                   "inputs and report nothing: \"flap-0\", \"flap-1\", "
                   "\"flap-2\", \"flap-3\", \"flap-4\" and 7 more (\"flap-0\": "
                   "input offered_rate: 'h/statsd/derive-flap0' is not in "
                   "collectd's cache (not dispatched yet, or expired))");
  ck_assert_uint_le(lines_in_minute[0], 8);
  for (int m = 1; m < FLAP_MINUTES; m++)
    ck_assert_uint_le(lines_in_minute[m], 1);
  ck_assert_uint_eq(notices, 0);
}
END_TEST

START_TEST(test_flapping_few) {
  run_flapping(few_each_cycle);
  ck_assert_str_eq(first_line,
                   "metastable plugin: service \"flap-0\": input "
                   "offered_rate: 'h/statsd/derive-flap0' is not in "
                   "collectd's cache (not dispatched yet, or expired); "
                   "nothing reported until it is usable");
  ck_assert_uint_ge(lines_in_minute[0], 3); /* each of the three named */
  ck_assert_uint_le(lines_in_minute[0], 3 * 8);
  for (int m = 1; m < FLAP_MINUTES; m++)
    ck_assert_uint_le(lines_in_minute[m], 3);
}
END_TEST

START_TEST(test_flapping_periods) {
  run_flapping(periods_1_2_3);
  ck_assert_str_eq(first_line,
                   "metastable plugin: service \"flap-0\": input "
                   "offered_rate: 'h/statsd/derive-flap0' is not in "
                   "collectd's cache (not dispatched yet, or expired); "
                   "nothing reported until it is usable");
  ck_assert_uint_le(lines_in_minute[0], 20);
  for (int m = 1; m < FLAP_MINUTES; m++)
    ck_assert_uint_le(lines_in_minute[m], 2);
}
END_TEST

START_TEST(test_flapping_bounded) {
  run_flapping(one_in_seven);
  ck_assert_str_eq(first_line,
                   "metastable plugin: service \"flap-0\": input "
                   "offered_rate: 'h/statsd/derive-flap0' is not in "
                   "collectd's cache (not dispatched yet, or expired); "
                   "nothing reported until it is usable");
  /* the bound is what holds it: 30 lines in the first minute, then 30
   * and the NOTICE that counts the minute before */
  ck_assert_uint_eq(lines_in_minute[0], 30);
  for (int m = 1; m < FLAP_MINUTES; m++)
    ck_assert_uint_eq(lines_in_minute[m], 31);
  ck_assert_uint_eq(notices, FLAP_MINUTES - 1);
  ck_assert_uint_gt(left_out_total, 100 * (FLAP_MINUTES - 1));
}
END_TEST

/* A service whose input goes from one problem to another: the new reason
 * is said in the cycle it appears, not after the old reason's back-off
 * (which had grown to 8 s).  Before, a pool of 0 followed by a negative
 * rate waited that long, and a busy integration run saw no line about the
 * negative rate in 20 s. */
static size_t warnings;
static char last_warning[1024];
static void keep_warning(int level, const char *msg) {
  if (level != LOG_WARNING)
    return;
  warnings++;
  snprintf(last_warning, sizeof last_warning, "%s", msg);
}

START_TEST(test_new_reason_said_at_once) {
  write_file("services:\n  - name: moody\n    model: capacity\n"
             "    capacity: 100\n    retries: 1\n    inputs:\n"
             "      offered_rate: \"h/statsd/derive-moody\"\n");
  module_register();
  static const char *const opts[] = {"Interval", "1", NULL};
  stub_clock_set(FLAP_T0);
  ck_assert(stub_call_config_options(path, opts) == 0 && stub_call_init() == 0);
  warnings = 0;
  stub_on_log = keep_warning;
  /* 10 cycles, one a second, the input never there: said at 0, 1, 3, 7 */
  for (uint64_t k = 0; k < 10; k++) {
    stub_clock_set(FLAP_T0 + (k << 30));
    ck_assert_int_eq(stub_call_read(), 0);
  }
  ck_assert_uint_eq(warnings, 4);
  ck_assert_ptr_nonnull(strstr(last_warning, "is not in collectd's cache"));
  /* cycle 10: there, and negative; the next line of the old reason was
   * due at 15 */
  stub_cache_set("h/statsd/derive-moody", -5.0);
  stub_cache_commit();
  stub_clock_set(FLAP_T0 + ((uint64_t)10 << 30));
  ck_assert_int_eq(stub_call_read(), 0);
  ck_assert_uint_eq(warnings, 5);
  ck_assert_str_eq(last_warning,
                   "metastable plugin: service \"moody\": input "
                   "offered_rate is negative; nothing reported until it "
                   "is usable");
  /* the new reason backs off as the old one did: said at 10, 11, 13 */
  for (uint64_t k = 11; k < 14; k++) {
    stub_clock_set(FLAP_T0 + (k << 30));
    ck_assert_int_eq(stub_call_read(), 0);
    ck_assert_uint_eq(warnings, k < 13 ? 6 : 7);
  }
  /* flapping between the two problems, each cycle: one problem's
   * back-off, not a line a cycle (said at 14, then 16+ s apart) */
  for (uint64_t k = 14; k < 46; k++) {
    if (k % 2)
      stub_cache_set("h/statsd/derive-moody", -5.0 - (double)k);
    else
      stub_cache_remove("h/statsd/derive-moody");
    stub_cache_commit();
    stub_clock_set(FLAP_T0 + (k << 30));
    ck_assert_int_eq(stub_call_read(), 0);
  }
  ck_assert_uint_le(warnings, 7 + 3);
  stub_on_log = NULL;
  stop();
  stub_clock_set(0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("plugin_log");
  TCase *tc = tcase_create("problems");
  tcase_add_test(tc, test_few_named_one_by_one);
  tcase_add_test(tc, test_many_named_in_the_summary);
  tcase_add_test(tc, test_summary_bounded);
  suite_add_tcase(s, tc);
  tc = tcase_create("left out");
  tcase_add_test(tc, test_calibration_input_nan);
  suite_add_tcase(s, tc);
  tc = tcase_create("start");
  tcase_add_test(tc, test_broken_file_fails_configuration);
  tcase_add_test(tc, test_control_bytes_escaped);
  suite_add_tcase(s, tc);
  tc = tcase_create("flapping");
  tcase_add_test(tc, test_new_reason_said_at_once);
  tcase_add_test(tc, test_flapping_all);
  tcase_add_test(tc, test_flapping_few);
  tcase_add_test(tc, test_flapping_periods);
  tcase_add_test(tc, test_flapping_bounded);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
