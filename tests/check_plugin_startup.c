/* SPDX-License-Identifier: MIT */
/*
 * The plugin's error paths (plugin/metastable.c: module_register,
 * ms_config, ms_init, ms_read, ms_shutdown) against a collectd stand-in
 * whose calls fail as collectd 5.12's do (tests/collectd_stub.c,
 * stub_fail_call):
 *
 *  - a failed read registration: 5.12 frees the user data itself
 *    (src/daemon/plugin.c, plugin_register_complex_read: free_userdata on
 *    every failure), so ms_init must not free it again: freed exactly once;
 *  - a failed init, config or shutdown registration; a failed strdup in
 *    cf_util_get_string (ServiceFile, Host); a Host refused; a relative
 *    ServiceFile whose full path cannot be allocated;
 *  - every allocation of ms_config and ms_init failing in turn (the
 *    program links its allocations through the wrappers below): each
 *    failure refused with an error, nothing registered, nothing leaked
 *    (LeakSanitizer, in the sanitizer run of CONTRIBUTING.md);
 *  - the read callback with each cache read, dispatch and notification
 *    failing, and with every allocation of a read failing in turn: it
 *    returns 0 (collectd would suspend it otherwise), and the next read
 *    dispatches what a read of an untouched plugin dispatches.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectd.h"

#include "plugin.h"

#include "check_run.h"
#include "collectd_stub.h"

void module_register(void);

/* ---- allocations that fail on demand ----------------------------------
 *
 * This program is linked with -Wl,--wrap for malloc, calloc, realloc,
 * strdup and free (tests/Makefile.inc): every allocation of the plugin,
 * the service and model libraries and the stand-in comes here, and fails
 * when stub_fail_now("memory") says so.  free counts the frees of the
 * pointer `watched`. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
void __wrap_free(void *p);

static void *watched;
static size_t watched_frees;

void *__wrap_malloc(size_t n) {
  return stub_fail_now("memory") ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
  return stub_fail_now("memory") ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
  return stub_fail_now("memory") ? NULL : __real_realloc(p, n);
}
char *__wrap_strdup(const char *s) {
  return stub_fail_now("memory") ? NULL : __real_strdup(s);
}
void __wrap_free(void *p) {
  if (p != NULL && p == watched)
    watched_frees++;
  __real_free(p);
}

/* ---- a service file and its inputs ------------------------------------ */

static char path[] = "/tmp/ms-check-startup-XXXXXX";

/* Two services: one of a fixed input, one of a glob and a COUNTER input,
 * so that a read asks every cache call the plugin makes. */
static const char file_text[] =
    "services:\n"
    "  - name: a\n    model: capacity\n    capacity: 100\n"
    "    retries: 1\n    inputs:\n      offered_rate: \"h/statsd/derive-a\"\n"
    "  - name: b\n    model: capacity\n    capacity: 100\n"
    "    retries: 1\n    inputs:\n"
    "      offered_rate: \"h/statsd/derive-b*\"\n"
    "      retry_rate: \"h/p/counter-done\"\n";

static void setup(void) {
  strcpy(path, "/tmp/ms-check-startup-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *y = fdopen(fd, "w");
  ck_assert_ptr_nonnull(y);
  fputs(file_text, y);
  ck_assert_int_eq(fclose(y), 0);
  stub_cache_set("h/statsd/derive-a", 150.0); /* over capacity: a note */
  stub_cache_set("h/statsd/derive-b1", 10.0);
  stub_cache_set("h/statsd/derive-b2", 15.0);
  stub_cache_set_counter("h/p/counter-done", 24.0, 1000);
  stub_cache_commit();
  stub_fail_clear();
  stub_counters_reset();
}

static void teardown(void) {
  stub_fail_clear();
  stub_free_read_user_data();
  stub_call_shutdown();
  stub_cache_clear();
  unlink(path);
}

/* No read callback registered: the stand-in has none to call. */
static bool read_registered(void) { return stub_read_interval() != 0; }

/* ---- registration ----------------------------------------------------- */

/* The use-after-free of issue 37: collectd 5.12 frees the user data when
 * it cannot register the read callback; ms_init freed it again. */
START_TEST(test_read_registration_fails) {
  module_register();
  ck_assert_int_eq(stub_call_config(path), 0);
  stub_fail_call("plugin_register_complex_read", 1);
  watched = NULL;
  watched_frees = 0;
  stub_watch_read_data(&watched);
  ck_assert_int_ne(stub_call_init(), 0);
  stub_watch_read_data(NULL);
  ck_assert_uint_eq(stub_fail_count("plugin_register_complex_read"), 1);
  ck_assert_ptr_nonnull(watched);
  ck_assert_uint_eq(watched_frees, 1); /* by the stand-in, as 5.12 does */
  ck_assert_str_eq(stub_last_warning(),
                   "metastable plugin: cannot register the read callback");
  ck_assert(!read_registered());
  watched = NULL;
}
END_TEST

/* The reload thread cannot start (collectd 5.12's plugin_thread_create
 * fails with ENOMEM or pthread_create's error): init fails with one
 * ERROR, no read callback is registered, and the state is freed once by
 * the plugin itself (ASan says so if twice). */
START_TEST(test_reload_thread_fails) {
  module_register();
  ck_assert_int_eq(stub_call_config(path), 0);
  stub_fail_call("plugin_thread_create", 1);
  ck_assert_int_ne(stub_call_init(), 0);
  ck_assert_uint_eq(stub_fail_count("plugin_thread_create"), 1);
  ck_assert_str_eq(stub_last_warning(),
                   "metastable plugin: cannot start the reload thread");
  ck_assert(!read_registered());
}
END_TEST

/* A registration of module_register that fails: collectd logs it (5.12:
 * "create_register_callback: calloc failed"); the plugin goes on without
 * that callback and leaks nothing. */
START_TEST(test_module_registration_fails) {
  static const char *const names[] = {"plugin_register_complex_config",
                                      "plugin_register_init",
                                      "plugin_register_shutdown"};
  int i = _i;
  stub_fail_call(names[i], 1);
  module_register();
  ck_assert_uint_eq(stub_fail_count(names[i]), 1);
  stub_fail_clear();
  int config = stub_call_config(path);
  int init = stub_call_init();
  ck_assert_int_eq(config, i == 0 ? -1 : 0); /* -1: no callback */
  ck_assert_int_eq(init, i == 0 ? -1 /* no file */ : i == 1 ? -1 : 0);
  ck_assert(read_registered() == (i == 2));
  /* without the shutdown callback, collectd would exit with the state
   * allocated: the read callback's user data is freed by collectd, the
   * configuration's strings by nobody (teardown frees them through the
   * shutdown callback of another module_register) */
  if (i == 2) {
    stub_free_read_user_data();
    module_register();
  }
}
END_TEST

/* cf_util_get_string failing (5.12: strdup failed, -1) for ServiceFile and
 * for Host: the configuration fails. */
START_TEST(test_config_string_fails) {
  module_register();
  static const char *const host[] = {"Host", "agg", NULL};
  stub_fail_call("cf_util_get_string", 1);
  ck_assert_int_ne(stub_call_config_options(path, host), 0);
  ck_assert_uint_eq(stub_fail_count("cf_util_get_string"), 1);
  ck_assert_int_ne(stub_call_init(), 0);
  stub_call_shutdown();
  stub_fail_call("cf_util_get_string", 2);
  ck_assert_int_ne(stub_call_config_options(path, host), 0);
  ck_assert_uint_eq(stub_fail_count("cf_util_get_string"), 1);
  stub_call_shutdown();
  stub_fail_clear();
  ck_assert_msg(stub_call_config_options(path, host) == 0, "%s",
                stub_last_warning());
  ck_assert_int_eq(stub_call_init(), 0);
}
END_TEST

/* A Host that cannot be the host of an identifier; a relative ServiceFile
 * whose path (from BaseDir) cannot be allocated. */
START_TEST(test_config_refused) {
  module_register();
  static const char *const slash[] = {"Host", "a/b", NULL};
  ck_assert_int_ne(stub_call_config_options(path, slash), 0);
  ck_assert_str_eq(stub_last_warning(),
                   "metastable plugin: Host \"a/b\" cannot be the host of "
                   "a collectd identifier (empty, a '/', or too long)");
  stub_call_shutdown();
  stub_fail_call("memory", 2); /* 1: cf_util_get_string's strdup */
  int rc = stub_call_config("ms-startup.yaml");
  size_t failed = stub_fail_count("memory");
  stub_fail_clear();
  ck_assert_int_ne(rc, 0);
  ck_assert_uint_eq(failed, 1);
  ck_assert_str_eq(stub_last_warning(), "metastable plugin: out of memory");
  ck_assert_int_ne(stub_call_init(), 0);
}
END_TEST

/* init without a configuration, and after a refused one. */
START_TEST(test_init_without_file) {
  module_register();
  ck_assert_int_ne(stub_call_init(), 0);
  ck_assert_ptr_nonnull(strstr(stub_last_warning(), "no ServiceFile"));
  ck_assert_int_ne(stub_call_config("/nonexistent/ms-startup.yaml"), 0);
  ck_assert_int_ne(stub_call_init(), 0);
  ck_assert(!read_registered());
  ck_assert_int_eq(stub_call_shutdown(), 0);
  ck_assert_int_eq(stub_call_shutdown(), 0); /* twice: nothing left */
}
END_TEST

/* ---- every allocation failing in turn --------------------------------- */

/* Fail the k-th allocation (from 1) of configuration then init; returns
 * whether the k-th was reached.  A failure must fail the call that met it
 * with an error logged and nothing registered; a success must register the
 * read callback.  The state is torn down either way. */
static bool sweep_step(unsigned k, bool in_init) {
  module_register();
  stub_counters_reset();
  if (!in_init)
    stub_fail_call("memory", k);
  int config = stub_call_config(path);
  if (in_init) {
    ck_assert_int_eq(config, 0);
    stub_fail_call("memory", k);
  }
  int init = config == 0 ? stub_call_init() : -1;
  bool reached = stub_fail_count("memory") > 0;
  stub_fail_clear();
  stub_counters c;
  stub_counters_get(&c);
  if (!reached) {
    ck_assert_int_eq(init, 0);
  } else if (config != 0 || init != 0) {
    ck_assert_msg(c.log_error > 0, "allocation %u: no error logged (%s)", k,
                  in_init ? "init" : "config");
    ck_assert_msg(!read_registered(), "allocation %u: registered", k);
  } else {
    ck_assert(read_registered());
  }
  if (read_registered()) {
    /* what it registered works */
    ck_assert_int_eq(stub_call_read(), 0);
    stub_free_read_user_data();
  }
  stub_call_shutdown();
  return reached;
}

START_TEST(test_config_allocations_fail) {
  unsigned k = 1;
  while (sweep_step(k, false))
    k++;
  ck_assert_uint_gt(k, 10); /* the file's load: 17 (libyaml's not counted) */
}
END_TEST

START_TEST(test_init_allocations_fail) {
  unsigned k = 1;
  while (sweep_step(k, true))
    k++;
  ck_assert_uint_gt(k, 5); /* 7: state, services, inputs and theirs */
}
END_TEST

/* ---- the read callback ------------------------------------------------ */

static void start(void) {
  module_register();
  ck_assert_msg(stub_call_config(path) == 0, "%s", stub_last_warning());
  ck_assert_int_eq(stub_call_init(), 0);
}

/* One read: its status and counters. */
static int read_once(stub_counters *c) {
  stub_counters_reset();
  int rc = stub_call_read();
  stub_counters_get(c);
  return rc;
}

/* What a read dispatches when nothing fails: the reference the reads after
 * a failure are held to. */
static size_t clean_values(void) {
  start();
  stub_counters c;
  ck_assert_int_eq(read_once(&c), 0);
  ck_assert_int_eq(read_once(&c), 0);
  stub_free_read_user_data();
  stub_call_shutdown();
  return c.values;
}

/* Each collectd call of a read failing every time: the read returns 0,
 * logs no more than its cap, and by the second read after it (nothing
 * failing) the plugin dispatches what an untouched plugin's second read
 * does. */
START_TEST(test_read_calls_fail) {
  static const char *const names[] = {
      "uc_get_rate_by_name",    "uc_get_value_by_name",
      "uc_get_names",           "plugin_get_ds",
      "plugin_dispatch_values", "plugin_dispatch_notification"};
  size_t want = clean_values();
  ck_assert_uint_gt(want, 0);
  start();
  stub_fail_call(names[_i], 0);
  stub_counters c;
  ck_assert_int_eq(read_once(&c), 0);
  ck_assert_msg(stub_fail_count(names[_i]) > 0, "%s not called", names[_i]);
  ck_assert_uint_eq(c.non_finite, 0);
  if (strcmp(names[_i], "plugin_dispatch_values") == 0)
    ck_assert_uint_eq(c.values, 0);
  stub_fail_clear();
  /* a service whose first step failed has its first step now: its
   * safe_retries comes from the read after (run_safe_builds) */
  ck_assert_int_eq(read_once(&c), 0);
  ck_assert_int_eq(read_once(&c), 0);
  ck_assert_uint_eq(c.values, want);
  ck_assert_uint_eq(c.non_finite, 0);
}
END_TEST

/* Every allocation of a read failing in turn (the first read, which
 * builds the glob matches and the counter memory). */
START_TEST(test_read_allocations_fail) {
  size_t want = clean_values();
  unsigned k = 1;
  for (;; k++) {
    start();
    stub_fail_call("memory", k);
    stub_counters c;
    int rc = read_once(&c);
    bool reached = stub_fail_count("memory") > 0;
    stub_fail_clear(); /* before any check: Check allocates */
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(c.non_finite, 0);
    ck_assert_int_eq(read_once(&c), 0); /* safe_retries: as above */
    ck_assert_int_eq(read_once(&c), 0);
    ck_assert_msg(c.values == want, "allocation %u: %zu values, not %zu", k,
                  c.values, want);
    stub_free_read_user_data();
    stub_call_shutdown();
    if (!reached)
      break;
  }
  ck_assert_uint_gt(k, 50); /* 91 in the first read */
}
END_TEST

static Suite *startup_suite(void) {
  Suite *s = suite_create("plugin_startup");
  TCase *tc = tcase_create("errors");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_read_registration_fails);
  tcase_add_test(tc, test_reload_thread_fails);
  tcase_add_loop_test(tc, test_module_registration_fails, 0, 3);
  tcase_add_test(tc, test_config_string_fails);
  tcase_add_test(tc, test_config_refused);
  tcase_add_test(tc, test_init_without_file);
  tcase_add_test(tc, test_config_allocations_fail);
  tcase_add_test(tc, test_init_allocations_fail);
  tcase_add_loop_test(tc, test_read_calls_fail, 0, 6);
  tcase_add_test(tc, test_read_allocations_fail);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ms_check_run(srunner_create(startup_suite())); }
