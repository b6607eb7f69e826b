/* SPDX-License-Identifier: MIT */
/*
 * The reload of a changed service file (plugin/reload.c through the
 * plugin's read callback, against the collectd stand-in of
 * tests/collectd_stub.c; and ms_tracker_carry of service/tracker.c on its
 * own): a valid change is applied (a new service reports, a removed one
 * stops), a broken one is refused with its located error logged once per
 * content while the old services go on, a service kept across a reload
 * keeps its tracker (a storm announced is not announced again), a deleted
 * file is warned about once and loaded again when it is back, an
 * unchanged file (even touched) is not reloaded, and with Shard "K/N" only
 * the shard's services are analysed (their inputs alone read), before and
 * after a reload.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"

#include "check_run.h"
#include "collectd_stub.h"
#include "reload.h"
#include "service.h"
#include "yamldoc.h"

void module_register(void);

static char path[] = "/tmp/ms-check-reload-XXXXXX";

/* The services seen in the last read cycle: their `reporting` and `storm`
 * values (NAN: not dispatched). */
#define MAX_SEEN 8
static struct {
  char name[64];
  double reporting, storm;
} seen[MAX_SEEN];
static size_t n_seen;

/* The shard's heartbeat of the last cycle (plugin instance "shard", types
 * shard_*): its type instance, shard_services and shard_count (-1: not
 * dispatched). */
static char beat_shard[64];
static double beat_services, beat_count;

static void on_value(const value_list_t *vl) {
  /* the write probe: no service's value (write_probe.h) */
  if (strcmp(vl->type, "values_dispatched") == 0) {
    ck_assert_str_eq(vl->plugin_instance, "write");
    return;
  }
  if (strncmp(vl->type, "shard_", 6) == 0) {
    ck_assert_str_eq(vl->plugin_instance, "shard");
    sstrncpy(beat_shard, vl->type_instance, sizeof beat_shard);
    if (strcmp(vl->type, "shard_services") == 0)
      beat_services = vl->values[0].gauge;
    else if (strcmp(vl->type, "shard_count") == 0)
      beat_count = vl->values[0].gauge;
    return;
  }
  size_t i;
  for (i = 0; i < n_seen; i++)
    if (strcmp(seen[i].name, vl->plugin_instance) == 0)
      break;
  if (i == n_seen) {
    ck_assert_uint_lt(n_seen, MAX_SEEN);
    sstrncpy(seen[i].name, vl->plugin_instance, sizeof seen[i].name);
    seen[i].reporting = seen[i].storm = NAN;
    n_seen++;
  }
  if (strcmp(vl->type, "reporting") == 0)
    seen[i].reporting = vl->values[0].gauge;
  else if (strcmp(vl->type, "storm") == 0)
    seen[i].storm = vl->values[0].gauge;
}

/* One read cycle, and the reload thread's look that it asked for at its
 * end (reload_settle): a broken file is logged by then, a valid one waits
 * to be swapped in by the next cycle. */
static void read_settled(void) {
  n_seen = 0;
  beat_shard[0] = '\0';
  beat_services = beat_count = -1;
  ck_assert_int_eq(stub_call_read(), 0);
  reload_settle(stub_read_user_data());
}

/* One read cycle (read_settled) with the counters reset before it. */
static void cycle(stub_counters *c) {
  stub_counters_reset();
  read_settled();
  stub_counters_get(c);
}

/* Two read cycles, counted together: the first sees a change, the second
 * swaps the new set in; the values seen are the second's. */
static void cycles2(stub_counters *c) {
  stub_counters_reset();
  read_settled();
  read_settled();
  stub_counters_get(c);
}

/* The `reporting` value of service name in the last cycle; -1: none. */
static double reporting(const char *name) {
  for (size_t i = 0; i < n_seen; i++)
    if (strcmp(seen[i].name, name) == 0)
      return seen[i].reporting;
  return -1;
}

static double storm(const char *name) {
  for (size_t i = 0; i < n_seen; i++)
    if (strcmp(seen[i].name, name) == 0)
      return seen[i].storm;
  return -1;
}

/* Write text as the service file: to a new file renamed over it, as an
 * editor or a configuration manager does (a new inode). */
static void put(const char *text) {
  char tmp[sizeof path + 8];
  memcpy(tmp, path, sizeof path - 1);
  memcpy(tmp + sizeof path - 1, ".new", 5);
  FILE *f = fopen(tmp, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(rename(tmp, path), 0);
}

/* A service with capacity 100 req/s and one retry, fed from
 * h/statsd/derive-<name>. */
#define SERVICE(name)                                                          \
  "  - name: " name "\n    model: capacity\n    capacity: 100\n"               \
  "    retries: 1\n    inputs:\n"                                              \
  "      offered_rate: \"h/statsd/derive-" name "\"\n"

static const char file_ab[] = "services:\n" SERVICE("a") SERVICE("b");
static const char file_ac[] = "services:\n" SERVICE("a") SERVICE("c");
/* line 5: capacity -5 */
static const char broken1[] =
    "services:\n  - name: a\n    model: capacity\n    retries: 1\n"
    "    capacity: -5\n";
/* line 3: an unknown model */
static const char broken2[] = "services:\n  - name: a\n    model: magic\n";

static void start_quiet(const char *text, double rate_a) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  put(text);
  stub_cache_set("h/statsd/derive-a", rate_a);
  stub_cache_set("h/statsd/derive-a2", rate_a);
  stub_cache_set("h/statsd/derive-b", 20.0);
  stub_cache_set("h/statsd/derive-c", 30.0);
  stub_cache_commit();
  stub_on_value = on_value;
  module_register();
  ck_assert_msg(stub_call_config(path) == 0 && stub_call_init() == 0, "%s",
                stub_last_warning());
}

/* Configured with text, and one read cycle run. */
static void start(const char *text, double rate_a) {
  start_quiet(text, rate_a);
  stub_counters c;
  cycle(&c);
  ck_assert_uint_eq(c.log_error + c.log_warning, 0);
  ck_assert_ptr_null(strstr(stub_last_message(), "reloaded"));
}

static void stop(void) {
  stub_free_read_user_data();
  stub_call_shutdown();
  stub_cache_clear();
  stub_on_value = NULL;
  unlink(path);
}

static void assert_reloaded(const char *counts) {
  char want[256];
  int n =
      snprintf(want, sizeof want,
               "metastable plugin: service file %s reloaded: %s", path, counts);
  ck_assert_int_lt(n, (int)sizeof want);
  ck_assert_msg(strncmp(stub_last_message(), want, strlen(want)) == 0,
                "%s\nwant %s", stub_last_message(), want);
}

START_TEST(test_valid_change_applied) {
  start(file_ab, 10.0);
  stub_counters c;
  ck_assert_double_eq(beat_services, -1); /* no Shard: no heartbeat */
  ck_assert_double_eq(beat_count, -1);
  ck_assert_double_eq(reporting("a"), 1);
  ck_assert_double_eq(reporting("b"), 1);
  ck_assert_double_eq(reporting("c"), -1);
  put(file_ac);
  cycle(&c); /* seen at its end, built by the reload thread: not yet in */
  ck_assert_uint_eq(c.log_info + c.log_error + c.log_warning, 0);
  ck_assert_double_eq(reporting("b"), 1);
  ck_assert_double_eq(reporting("c"), -1);
  cycle(&c); /* swapped in at the start of the next */
  assert_reloaded("2 services (1 added, 1 removed, 1 kept with their state)");
  ck_assert_uint_eq(c.log_info, 1);
  ck_assert_uint_eq(c.log_error + c.log_warning, 0);
  ck_assert_double_eq(reporting("a"), 1);
  ck_assert_double_eq(reporting("b"), -1); /* removed: stops */
  ck_assert_double_eq(reporting("c"), 1);  /* added: reports at once */
  ck_assert_uint_eq(n_seen, 2);
  cycle(&c); /* and no reload again */
  ck_assert_uint_eq(c.log_info, 0);
  ck_assert_double_eq(reporting("c"), 1);
  stop();
}
END_TEST

START_TEST(test_broken_change_refused) {
  start(file_ab, 10.0);
  stub_counters c;
  put(broken1);
  cycle(&c);
  ck_assert_uint_eq(c.log_error, 1);
  char want[256];
  int n = snprintf(want, sizeof want,
                   "metastable plugin: %s:5:15: '-5' is negative", path);
  ck_assert_int_lt(n, (int)sizeof want);
  ck_assert_msg(strncmp(stub_last_warning(), want, strlen(want)) == 0, "%s",
                stub_last_warning());
  ck_assert_ptr_nonnull(strstr(stub_last_warning(),
                               "the service file is not reloaded: the 2 "
                               "services in use keep running"));
  ck_assert_double_eq(reporting("a"), 1); /* the old services go on */
  ck_assert_double_eq(reporting("b"), 1);
  cycle(&c); /* not again */
  ck_assert_uint_eq(c.log_error, 0);
  ck_assert_double_eq(reporting("b"), 1);
  put(broken1); /* the same content in a new file: not again */
  cycle(&c);
  ck_assert_uint_eq(c.log_error, 0);
  put(broken2); /* another broken content: said */
  cycle(&c);
  ck_assert_uint_eq(c.log_error, 1);
  n = snprintf(want, sizeof want, "metastable plugin: %s:3:12: ", path);
  ck_assert_int_lt(n, (int)sizeof want);
  ck_assert_msg(strncmp(stub_last_warning(), want, strlen(want)) == 0, "%s",
                stub_last_warning());
  ck_assert_double_eq(reporting("a"), 1);
  ck_assert_double_eq(reporting("b"), 1);
  put(file_ab); /* put back as it was: nothing to reload */
  cycle(&c);
  ck_assert_uint_eq(c.log_error + c.log_info, 0);
  put(broken2); /* broken again after a good one: said again */
  cycle(&c);
  ck_assert_uint_eq(c.log_error, 1);
  put(file_ac); /* fixed: loaded */
  cycles2(&c);
  ck_assert_uint_eq(c.log_error, 0);
  assert_reloaded("2 services (1 added, 1 removed, 1 kept with their state)");
  ck_assert_double_eq(reporting("c"), 1);
  stop();
}
END_TEST

/* a at 500 req/s, five times its capacity: a storm, announced once.  Kept
 * across a reload it is not announced again; the same service under a new
 * name (a fresh tracker) is. */
START_TEST(test_kept_service_keeps_its_state) {
  start(file_ab, 500.0);
  stub_counters c;
  ck_assert_double_eq(storm("a"), 1);
  ck_assert_double_eq(storm("b"), 0);
  cycle(&c);
  ck_assert_uint_eq(c.notifications_failure, 0); /* announced in start() */
  put(file_ac);
  cycles2(&c);
  assert_reloaded("2 services (1 added, 1 removed, 1 kept with their state)");
  ck_assert_double_eq(storm("a"), 1);
  ck_assert_double_eq(storm("c"), 0);
  ck_assert_uint_eq(c.notifications_failure, 0); /* not paged again */
  put("services:\n" SERVICE("a2") SERVICE("c"));
  cycles2(&c);
  assert_reloaded("2 services (1 added, 1 removed, 1 kept with their state)");
  ck_assert_double_eq(storm("a2"), 1);
  ck_assert_uint_eq(c.notifications_failure, 1); /* a new tracker pages */
  /* a kept service whose inputs are missing keeps its complaint's
   * back-off: logged once, not again after a reload */
  stub_cache_remove("h/statsd/derive-c");
  cycle(&c);
  ck_assert_uint_eq(c.log_warning, 1);
  put("services:\n" SERVICE("c") SERVICE("a2"));
  cycles2(&c);
  ck_assert_uint_eq(c.log_warning, 0);
  assert_reloaded("2 services (0 added, 0 removed, 2 kept with their state)");
  stop();
}
END_TEST

START_TEST(test_deleted_file_warned_once) {
  start(file_ab, 10.0);
  stub_counters c;
  ck_assert_int_eq(unlink(path), 0);
  cycle(&c);
  ck_assert_uint_eq(c.log_warning, 1);
  char want[256];
  int n = snprintf(want, sizeof want,
                   "metastable plugin: service file %s was deleted (", path);
  ck_assert_int_lt(n, (int)sizeof want);
  ck_assert_msg(strncmp(stub_last_warning(), want, strlen(want)) == 0, "%s",
                stub_last_warning());
  ck_assert_double_eq(reporting("a"), 1);
  ck_assert_double_eq(reporting("b"), 1);
  cycle(&c);
  ck_assert_uint_eq(c.log_warning, 0);
  ck_assert_double_eq(reporting("b"), 1);
  put(file_ab); /* back, even as it was: loaded as a change */
  cycles2(&c);
  assert_reloaded("2 services (0 added, 0 removed, 2 kept with their state)");
  ck_assert_int_eq(unlink(path), 0);
  cycle(&c);
  ck_assert_uint_eq(c.log_warning, 1); /* gone again: said again */
  put(file_ac);
  cycles2(&c);
  assert_reloaded("2 services (1 added, 1 removed, 1 kept with their state)");
  ck_assert_double_eq(reporting("c"), 1);
  ck_assert_double_eq(reporting("b"), -1);
  stop();
}
END_TEST

/* A file changed after the configuration loaded it and before the first
 * read cycle: that cycle loads it. */
START_TEST(test_changed_before_first_cycle) {
  start_quiet(file_ab, 10.0);
  put(file_ac);
  stub_counters c;
  cycles2(&c);
  ck_assert_uint_eq(c.log_info, 2); /* the reload; the first cycle's time */
  ck_assert_double_eq(reporting("c"), 1);
  ck_assert_double_eq(reporting("b"), -1);
  stop();
}
END_TEST

/* A directory where the file was: not read (nothing blocks), refused
 * once, and the file loaded when it is back. */
START_TEST(test_unreadable_refused_once) {
  start(file_ab, 10.0);
  stub_counters c;
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  cycle(&c);
  ck_assert_uint_eq(c.log_error, 1);
  char want[256];
  int n = snprintf(want, sizeof want, "metastable plugin: %s: ", path);
  ck_assert_int_lt(n, (int)sizeof want);
  ck_assert_msg(strncmp(stub_last_warning(), want, strlen(want)) == 0, "%s",
                stub_last_warning());
  ck_assert_ptr_nonnull(strstr(stub_last_warning(), "not reloaded"));
  ck_assert_double_eq(reporting("b"), 1);
  struct timespec t[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
  ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0); /* a new mtime */
  cycle(&c);
  ck_assert_uint_eq(c.log_error, 0); /* the same error: not again */
  ck_assert_int_eq(rmdir(path), 0);
  put(file_ac);
  cycles2(&c);
  assert_reloaded("2 services (1 added, 1 removed, 1 kept with their state)");
  ck_assert_double_eq(reporting("c"), 1);
  stop();
}
END_TEST

START_TEST(test_unchanged_not_reloaded) {
  start(file_ab, 10.0);
  stub_counters c;
  for (int i = 0; i < 3; i++) {
    cycle(&c);
    ck_assert_uint_eq(c.log_info + c.log_warning + c.log_error, 0);
  }
  /* touched: a new mtime, the same content */
  struct timespec t[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
  ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
  cycle(&c);
  ck_assert_uint_eq(c.log_info + c.log_warning + c.log_error, 0);
  /* rewritten in place, same size, one byte changed: reloaded */
  FILE *f = fopen(path, "r+");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, (long)strlen("services:\n  - name: "), SEEK_SET),
                   0);
  fputc('d', f); /* a -> d */
  ck_assert_int_eq(fclose(f), 0);
  cycles2(&c);
  assert_reloaded("2 services (1 added, 1 removed, 1 kept with their state)");
  stop();
}
END_TEST

/* A COUNTER that goes down in the very cycle of a reload is still a
 * reset (no rate), not collectd's wrap-around rate of about 1.8e19/s. */
START_TEST(test_counter_reset_across_reload) {
  static const char with_k[] = "services:\n" SERVICE(
      "a") "  - name: k\n    model: capacity\n"
           "    capacity: 100\n    retries: 1\n    inputs:\n"
           "      offered_rate: \"h/p/counter-k\"\n";
  stub_cache_set_counter("h/p/counter-k", 10.0, 1000);
  start(with_k, 10.0);
  stub_counters c;
  ck_assert_double_eq(reporting("k"), 1);
  FILE *f = fopen(path, "a"); /* a new content, the same services */
  ck_assert_ptr_nonnull(f);
  fputs("# changed\n", f);
  ck_assert_int_eq(fclose(f), 0);
  cycle(&c); /* seen; swapped in by the next */
  ck_assert_uint_eq(c.log_info, 0);
  stub_cache_set_counter("h/p/counter-k", 18446744073709551000.0, 5);
  cycle(&c);
  ck_assert_uint_eq(c.log_info, 1); /* reloaded (the INFO line) */
  ck_assert_uint_eq(c.log_warning, 1);
  ck_assert_ptr_nonnull(strstr(stub_last_warning(), "went down"));
  ck_assert_double_eq(reporting("k"), 0); /* a reset: no rate */
  ck_assert_double_eq(reporting("a"), 1);
  stub_cache_set_counter("h/p/counter-k", 10.0, 105);
  cycle(&c);
  ck_assert_double_eq(reporting("k"), 1);
  stop();
}
END_TEST

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A file of a and b (SERVICE) and n more services s<i>, then tail. */
static char *heavy_file(int n, const char *tail) {
  size_t len = 200 * (size_t)n + 1024, at;
  char *text = malloc(len);
  ck_assert_ptr_nonnull(text);
  at = (size_t)snprintf(text, len, "%s", file_ab);
  for (int i = 0; i < n; i++)
    at += (size_t)snprintf(text + at, len - at,
                           "  - name: s%d\n    model: capacity\n    "
                           "capacity: 100\n    retries: 1\n    inputs:\n"
                           "      offered_rate: \"h/statsd/derive-s%d\"\n",
                           i, i);
  at += (size_t)snprintf(text + at, len - at, "%s", tail);
  ck_assert_uint_lt(at, len);
  return text;
}

/* The time ms_service_file_parse takes on text: the reference for what
 * the read cycle no longer pays. */
static double parse_time(const char *text) {
  ms_service_file f;
  char err[512];
  double t0 = now_s();
  int r = ms_service_file_parse(text, strlen(text), "t", &f, err, sizeof err);
  double t = now_s() - t0;
  if (r == 0)
    ms_service_file_free(&f);
  return t;
}

/* The time libyaml takes to compose text's document (ms_yaml_load): the
 * part of a parse that stops only at its end. */
static double compose_time(const char *text) {
  yaml_document_t doc;
  char err[512];
  double t0 = now_s();
  int r = ms_yaml_load(text, strlen(text), "t", NULL, &doc, err, sizeof err);
  double t = now_s() - t0;
  ck_assert_msg(r == 0, "%s", err);
  yaml_document_delete(&doc);
  return t;
}

#define HEAVY 10000

/* A broken file of 10,002 services (the error in the last line): the read
 * call that sees it returns before the thread has read it, and costs a
 * small part of the parse; the error is logged once, by the thread; the
 * services in use go on. */
START_TEST(test_refused_costs_the_read_nothing) {
  start(file_ab, 10.0);
  char *text = heavy_file(HEAVY, "  - name: z\n    model: magic\n");
  double parse = parse_time(text);
  put(text);
  free(text);
  stub_counters c;
  stub_counters_reset();
  double t0 = now_s();
  ck_assert_int_eq(stub_call_read(), 0);
  double read = now_s() - t0;
  reload_settle(stub_read_user_data());
  stub_counters_get(&c);
  printf("refused file of %d services: parse %.1f ms, read call %.2f ms\n",
         HEAVY + 2, 1e3 * parse, 1e3 * read);
  fflush(stdout);
  ck_assert_msg(read < parse / 10, "read %.4f s, parse %.4f s", read, parse);
  ck_assert_uint_eq(c.log_error, 1);
  ck_assert_ptr_nonnull(strstr(stub_last_warning(), "not reloaded"));
  cycle(&c);
  ck_assert_uint_eq(c.log_error + c.log_info, 0);
  ck_assert_double_eq(reporting("a"), 1);
  ck_assert_double_eq(reporting("b"), 1);
  ck_assert_uint_eq(n_seen, 2);
  stop();
}
END_TEST

/* An 8 MiB node bomb (`services: [a, a, ...]`): the thread refuses it
 * (the YAML reader counts its events and stops at a limit), the read
 * call that sees it takes less than a steady one and the refusal
 * together (it only asks the thread to look: here 5 ms against 20 ms), and
 * the services in use go on. */
START_TEST(test_bomb_refused_off_the_read) {
  start(file_ab, 10.0);
  size_t n = 8u << 20, at = 0;
  char *text = malloc(n + 64);
  ck_assert_ptr_nonnull(text);
  at += (size_t)sprintf(text, "services: [");
  while (at + 3 < n)
    at += (size_t)sprintf(text + at, "a, ");
  sprintf(text + at, "a]\n");
  double parse = parse_time(text);
  stub_counters c;
  double t0 = now_s();
  cycle(&c); /* a steady read: the reference */
  double steady = now_s() - t0;
  put(text);
  free(text);
  stub_counters_reset();
  t0 = now_s();
  ck_assert_int_eq(stub_call_read(), 0);
  double read = now_s() - t0;
  reload_settle(stub_read_user_data());
  stub_counters_get(&c);
  printf("8 MiB bomb: refused in %.1f ms, read call %.2f ms (steady %.2f "
         "ms)\n",
         1e3 * parse, 1e3 * read, 1e3 * steady);
  fflush(stdout);
  ck_assert_msg(read < steady + parse,
                "read %.4f s, steady %.4f s, parse "
                "%.4f s",
                read, steady, parse);
  ck_assert_uint_eq(c.log_error, 1);
  ck_assert_ptr_nonnull(strstr(stub_last_warning(), "not reloaded"));
  cycle(&c);
  ck_assert_double_eq(reporting("a"), 1);
  ck_assert_double_eq(reporting("b"), 1);
  stop();
}
END_TEST

/* Shutdown while the thread checks the services of a file of 1,002, 1,000
 * of them heavy to check (erlang, 10^7 servers, 10,000 retries: solved
 * once each, about a millisecond), the YAML itself quick to compose: the
 * parse is cancelled at the next service, and freeing the read callback's
 * data (what collectd 5.12 does before the shutdown callbacks) returns in
 * a tenth of the parse's time. */
#define HEAVY_ERLANG 1000
START_TEST(test_shutdown_during_parse) {
  start(file_ab, 10.0);
  size_t len = 300 * HEAVY_ERLANG + 1024, at;
  char *text = malloc(len);
  ck_assert_ptr_nonnull(text);
  at = (size_t)snprintf(text, len, "%s", file_ab);
  for (int i = 0; i < HEAVY_ERLANG; i++)
    at += (size_t)snprintf(
        text + at, len - at,
        "  - name: heavy%d\n    model: erlang\n    servers: 10000000\n"
        "    service_time: 100ms\n    timeout: 1s\n    base_failure: 0.01\n"
        "    retries: 10000\n    inputs:\n      offered_rate: 20000\n",
        i);
  ck_assert_uint_lt(at, len);
  double parse = parse_time(text), compose = compose_time(text);
  put(text);
  free(text);
  ck_assert_int_eq(stub_call_read(), 0); /* the thread looks now */
  usleep((useconds_t)(1e6 * (2 * compose + 0.1 * parse)));
  double t0 = now_s();
  stub_free_read_user_data();
  double took = now_s() - t0;
  printf("shutdown during the parse of %d services: %.1f ms (parse %.1f "
         "ms, of which composing %.1f ms)\n",
         HEAVY_ERLANG + 2, 1e3 * took, 1e3 * parse, 1e3 * compose);
  fflush(stdout);
  ck_assert_msg(took < parse / 10, "stop %.4f s, parse %.4f s", took, parse);
  ck_assert_ptr_null(strstr(stub_last_message(), "reloaded"));
  stub_call_shutdown();
  stub_cache_clear();
  stub_on_value = NULL;
  unlink(path);
}
END_TEST

/* The log's bound under churn: the file rewritten every second for three
 * minutes of the stand-in's clock, a valid and a broken content in turn,
 * each new (a comment counts): each rewrite would say one line (reloaded,
 * or not reloaded).  Counted by minute of the clock, as the plugin
 * counts: at most 30 lines, and the NOTICE about the minute before. */
#define CHURN_MINUTES 3
#define CHURN_T0 ((uint64_t)1800000000 << 30) /* a minute's start */
static size_t churn_lines[CHURN_MINUTES + 1];
static size_t churn_reloads, churn_notices;

/* A plugin on file_ab at Interval 1, the clock at CHURN_T0. */
static void churn_start(void) {
  static const char *const opts[] = {"Interval", "1", NULL};
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  put(file_ab);
  stub_cache_set("h/statsd/derive-a", 10.0);
  stub_cache_set("h/statsd/derive-b", 20.0);
  stub_cache_commit();
  module_register();
  stub_clock_set(CHURN_T0);
  ck_assert(stub_call_config_options(path, opts) == 0 && stub_call_init() == 0);
}

/* n rewrites, one a second from CHURN_T0: a valid and a broken content in
 * turn, each new, each followed by a settled read. */
static void churn(int n) {
  for (int k = 0; k < n; k++) {
    char text[1024];
    snprintf(text, sizeof text, "%s# rewrite %d\n",
             k % 2 == 0 ? file_ac : broken2, k);
    stub_clock_set(CHURN_T0 + ((uint64_t)k << 30));
    put(text);
    read_settled();
  }
}

static void count_churn(int level, const char *msg) {
  (void)level;
  uint64_t m = (cdtime() - CHURN_T0) / ((uint64_t)60 << 30);
  churn_lines[m < CHURN_MINUTES ? m : CHURN_MINUTES]++;
  churn_reloads += strstr(msg, "reloaded") != NULL;
  churn_notices += strstr(msg, "left out in the last minute") != NULL;
}

START_TEST(test_log_cap_under_churn) {
  churn_start();
  memset(churn_lines, 0, sizeof churn_lines);
  churn_reloads = churn_notices = 0;
  stub_on_log = count_churn;
  churn(60 * CHURN_MINUTES);
  stub_on_log = NULL;
  printf("log lines per minute under churn:");
  for (int m = 0; m < CHURN_MINUTES; m++)
    printf(" %zu", churn_lines[m]);
  printf(" (%zu said reloaded)\n", churn_reloads);
  fflush(stdout);
  for (int m = 0; m < CHURN_MINUTES; m++)
    ck_assert_uint_le(churn_lines[m], 31);
  ck_assert_uint_ge(churn_lines[1], 30); /* the churn did fill the bound */
  ck_assert_uint_eq(churn_notices, CHURN_MINUTES - 1); /* minutes 2, 3 */
  stop();
  stub_clock_set(0);
}
END_TEST

/* The last outcome of a churn, left out by the bound, is said when the
 * next minute starts: 40 rewrites in one minute, the last one broken
 * (refused once per content, so that it would never be said again). */
static size_t late_refusals, late_reloads;
static void count_late(int level, const char *msg) {
  (void)level;
  if (strstr(msg, "said late") == NULL)
    return;
  bool refused = strstr(msg, "is not reloaded") != NULL;
  late_refusals += refused;
  late_reloads += !refused && strstr(msg, " reloaded:") != NULL;
}

START_TEST(test_last_outcome_said_late) {
  churn_start();
  late_refusals = late_reloads = 0;
  stub_on_log = count_late;
  churn(40); /* 40 outcomes: the bound is 30 */
  ck_assert_uint_eq(late_refusals, 0);
  stub_clock_set(CHURN_T0 + ((uint64_t)61 << 30)); /* the next minute */
  read_settled();
  stub_on_log = NULL;
  ck_assert_uint_eq(late_refusals, 1); /* rewrite 39's, said once */
  ck_assert_uint_eq(late_reloads, 0);  /* replaced by the later refusal */
  stub_clock_set(CHURN_T0 + ((uint64_t)62 << 30));
  stub_on_log = count_late;
  read_settled();
  stub_on_log = NULL;
  ck_assert_uint_eq(late_refusals, 1); /* not again */
  stop();
  stub_clock_set(0);
}
END_TEST

/* ms_tracker_carry on its own, by field. */
static void spec_of(const char *text, ms_service_file *f) {
  char err[512];
  ck_assert_msg(
      ms_service_file_parse(text, strlen(text), "t", f, err, sizeof err) == 0,
      "%s", err);
}

START_TEST(test_tracker_carry) {
  ms_service_file same, faster, moved;
  spec_of(file_ab, &same);
  spec_of("services:\n  - name: a\n    model: capacity\n    capacity: 200\n"
          "    retries: 1\n    inputs:\n"
          "      offered_rate: \"h/statsd/derive-a\"\n",
          &faster);
  spec_of("services:\n  - name: a\n    model: capacity\n    capacity: 100\n"
          "    retries: 1\n    inputs:\n"
          "      offered_rate: \"h/statsd/derive-other\"\n",
          &moved);
  const ms_service_spec *a = &same.services[0];
  ms_tracker t;
  ms_tracker_init(&t);
  ms_inputs in = {.interval = 10};
  in.has[MS_INPUT_OFFERED] = true;
  in.value[MS_INPUT_OFFERED] = 500;
  ms_step step;
  ms_tracker_step(&t, a, &in, &step);
  ck_assert(step.ok && step.report.analysis.storm);
  ck_assert(t.has_landscape && t.storm && t.storm_announced);
  ck_assert_uint_eq(t.calibration.intervals, 0); /* nothing to learn */
  t.calibration.intervals = 7;                   /* stands for learning */
  ms_tracker keep = t;
  ms_tracker_carry(&t, a, &same.services[0]);
  ck_assert_mem_eq(&t, &keep, sizeof t); /* the same spec: all of it */
  ms_tracker_carry(&t, a, &faster.services[0]);
  ck_assert(!t.has_landscape); /* a new model: rebuilt */
  ck_assert(t.storm && t.storm_announced && t.state == keep.state);
  ck_assert_uint_eq(t.calibration.intervals, 7);
  ms_tracker_step(&t, &faster.services[0], &in, &step);
  ck_assert(t.has_landscape);
  ck_assert_uint_eq(t.landscape_builds, 2);
  ck_assert_double_eq(t.landscape.params.model.capacity, 200);
  ck_assert_int_eq(step.n_notes, 0); /* the storm goes on, unannounced */
  t = keep;
  ms_tracker_carry(&t, a, &moved.services[0]);
  ck_assert(t.has_landscape);                    /* the same model */
  ck_assert_uint_eq(t.calibration.intervals, 0); /* another input: anew */
  ck_assert(t.storm && t.storm_announced);
  ms_service_file_free(&same);
  ms_service_file_free(&faster);
  ms_service_file_free(&moved);
}
END_TEST

/* A file of n services s0 ... s<n-1> (SERVICE), each fed from
 * h/statsd/derive-s<i> at 10 req/s. */
static void shard_file(char *buf, size_t len, int n) {
  size_t at = (size_t)snprintf(buf, len, "services:\n");
  for (int i = 0; i < n; i++) {
    char name[16], rate[64];
    snprintf(name, sizeof name, "s%d", i);
    at += (size_t)snprintf(buf + at, len - at,
                           "  - name: %s\n    model: capacity\n    capacity: "
                           "100\n    retries: 1\n    inputs:\n      "
                           "offered_rate: \"h/statsd/derive-%s\"\n",
                           name, name);
    ck_assert_uint_lt(at, len);
    snprintf(rate, sizeof rate, "h/statsd/derive-%s", name);
    stub_cache_set(rate, 10.0);
  }
  stub_cache_commit();
}

/* The services of shard k of n among s0 ... s<total-1> report, the others
 * dispatch nothing, and only the shard's inputs are read (one identifier
 * each); returns how many are in the shard. */
static size_t assert_shard_only(int k, int n, int total) {
  stub_counters c;
  cycle(&c);
  size_t in = 0;
  for (int i = 0; i < total; i++) {
    char name[16];
    snprintf(name, sizeof name, "s%d", i);
    bool mine = ms_shard_of(name, n) == k;
    ck_assert_msg(reporting(name) == (mine ? 1 : -1), "%s: %g (shard %d/%d)",
                  name, reporting(name), ms_shard_of(name, n), n);
    in += mine;
  }
  ck_assert_uint_eq(n_seen, in);
  ck_assert_uint_eq(c.lookups, in);
  /* the heartbeat: <host>/metastable-shard/shard_services-K, shard_count-K */
  char want[16];
  snprintf(want, sizeof want, "%d", k);
  ck_assert_str_eq(beat_shard, want);
  ck_assert_double_eq(beat_services, (double)in);
  ck_assert_double_eq(beat_count, n);
  return in;
}

/* Shard "K/N": two aggregators share one file, each service in exactly one
 * of them; a reload keeps the shard. */
START_TEST(test_shard_kept_across_reload) {
  static char text[8192];
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  shard_file(text, sizeof text, 6);
  put(text);
  stub_on_value = on_value;
  size_t per_shard[2];
  for (int k = 1; k <= 2; k++) {
    const char *opts[] = {"Shard", k == 1 ? "1/2" : "2/2", NULL};
    module_register();
    ck_assert_msg(stub_call_config_options(path, opts) == 0 &&
                      stub_call_init() == 0,
                  "%s", stub_last_warning());
    ck_assert_msg(strstr(stub_last_message(),
                         k == 1 ? "of shard 1/2" : "of shard 2/2") != NULL,
                  "%s", stub_last_message());
    per_shard[k - 1] = assert_shard_only(k, 2, 6);
    shard_file(text, sizeof text, 8); /* two more services */
    put(text);
    stub_counters c;
    cycle(&c); /* seen; swapped in by the next */
    assert_shard_only(k, 2, 8);
    ck_assert_ptr_nonnull(strstr(stub_last_message(), " of shard "));
    stub_free_read_user_data();
    stub_call_shutdown();
    shard_file(text, sizeof text, 6);
    put(text);
  }
  ck_assert_uint_eq(per_shard[0] + per_shard[1], 6);
  ck_assert_uint_gt(per_shard[0], 0);
  ck_assert_uint_gt(per_shard[1], 0);
  stop();
}
END_TEST

/* A Shard that is not "K/N" with 1 <= K <= N <= MS_SHARD_MAX fails the
 * configuration with a line that says so. */
START_TEST(test_shard_refused) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  put(file_ab);
  static const char *const bad[][2] = {
      {"0/2", "1 <= K <= N <= 1024"}, {"3/2", "1 <= K <= N <= 1024"},
      {"1/0", "1 <= K <= N <= 1024"}, {"1/1025", "1 <= K <= N <= 1024"},
      {"a/b", "is not K/N"},          {"1/2/3", "is not K/N"},
      {"-1/2", "is not K/N"},         {"1 / 2", "is not K/N"},
      {"2", "not a number"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *opts[] = {"Shard", bad[i][0], NULL};
    module_register();
    ck_assert_int_ne(stub_call_config_options(path, opts), 0);
    const char *want = strcmp(bad[i][1], "not a number") == 0
                           ? "Shard: takes one string \"K/N\""
                           : bad[i][1];
    ck_assert_msg(strstr(stub_last_warning(), "<Plugin metastable> Shard") !=
                          NULL &&
                      strstr(stub_last_warning(), want) != NULL,
                  "%s: %s", bad[i][0], stub_last_warning());
    stub_call_shutdown();
  }
  const char *opts[] = {"Shard", "1024/1024", NULL};
  module_register();
  ck_assert_int_eq(stub_call_config_options(path, opts), 0);
  stub_call_shutdown();
  unlink(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("plugin_reload");
  TCase *tc = tcase_create("reload");
  tcase_add_test(tc, test_valid_change_applied);
  tcase_add_test(tc, test_broken_change_refused);
  tcase_add_test(tc, test_kept_service_keeps_its_state);
  tcase_add_test(tc, test_deleted_file_warned_once);
  tcase_add_test(tc, test_unchanged_not_reloaded);
  tcase_add_test(tc, test_unreadable_refused_once);
  tcase_add_test(tc, test_changed_before_first_cycle);
  tcase_add_test(tc, test_counter_reset_across_reload);
  tcase_add_test(tc, test_shard_kept_across_reload);
  tcase_add_test(tc, test_shard_refused);
  tcase_add_test(tc, test_refused_costs_the_read_nothing);
  tcase_add_test(tc, test_bomb_refused_off_the_read);
  tcase_add_test(tc, test_shutdown_during_parse);
  tcase_add_test(tc, test_log_cap_under_churn);
  tcase_add_test(tc, test_last_outcome_said_late);
  tcase_set_timeout(tc, 120);
  suite_add_tcase(s, tc);
  tc = tcase_create("tracker");
  tcase_add_test(tc, test_tracker_carry);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
