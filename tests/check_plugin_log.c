/* SPDX-License-Identifier: MIT */
/*
 * The plugin's log of services without usable inputs (plugin/metastable.c
 * through its read callback, against the collectd stand-in of
 * tests/collectd_stub.c): few services are named one line each; many get
 * one summary line that names the services at fault, the first few by
 * name and the rest counted, never one that reports; both rate-limited.
 * And the start: a broken or missing service file fails the configuration
 * callback (collectd then does not start), with the file's position.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
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

int main(void) {
  Suite *s = suite_create("plugin_log");
  TCase *tc = tcase_create("problems");
  tcase_add_test(tc, test_few_named_one_by_one);
  tcase_add_test(tc, test_many_named_in_the_summary);
  tcase_add_test(tc, test_summary_bounded);
  suite_add_tcase(s, tc);
  tc = tcase_create("start");
  tcase_add_test(tc, test_broken_file_fails_configuration);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
