/* SPDX-License-Identifier: MIT */
/*
 * The plugin's input plumbing (plugin/inputs.c) against the collectd
 * stand-in (tests/collectd_stub.c): the typed result and the message of
 * every kind of cache read, COUNTER resets, a service's identifier and glob
 * inputs (partial sums, a bad match, no match), and globs matched again
 * when collectd's identifier list changes.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "collectd_stub.h"
#include "inputs.h"
#include "service.h"

static void setup(void) { stub_cache_clear(); }
static void teardown(void) { stub_cache_clear(); }

/* A service file of one erlang service with the given inputs lines. */
static void load(ms_service_file *f, const char *inputs) {
  char text[1024], err[512];
  snprintf(text, sizeof text,
           "services:\n"
           "  - name: svc\n    model: erlang\n    servers: 100\n"
           "    service_time: 100ms\n    timeout: 1s\n    retries: 2\n"
           "    inputs:\n%s",
           inputs);
  int status = ms_service_file_parse(text, strlen(text), "test.yaml", f, err,
                                     sizeof err);
  ck_assert_msg(status == 0, "%s", err);
}

START_TEST(test_read_one) {
  inputs_t *in = inputs_create(NULL, 0);
  ck_assert_ptr_nonnull(in);
  char why[300];
  double v = -1;
  ck_assert_int_eq(inputs_read_one(in, "h/p/gauge-x", &v, why, sizeof why),
                   INPUT_ABSENT);
  ck_assert_str_eq(why, "'h/p/gauge-x' is not in collectd's cache (not "
                        "dispatched yet, or expired)");
  ck_assert(v == -1);

  stub_cache_set("h/p/gauge-x", 2.5);
  stub_cache_set("h/p/derive-first", NAN);
  stub_cache_set("h/p/gauge-inf", INFINITY);
  stub_cache_set("h/statsd/latency-t-average", NAN);
  stub_cache_set_sources("h/p/load", 1.0, 3);
  stub_cache_commit();
  ck_assert_int_eq(inputs_read_one(in, "h/p/gauge-x", &v, why, sizeof why),
                   INPUT_OK);
  ck_assert(v == 2.5);
  v = -1;
  ck_assert_int_eq(inputs_read_one(in, "h/p/derive-first", &v, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/p/derive-first' has no rate yet: its first sample "
                        "(collectd needs two for a rate)");
  /* a gauge is NaN when it has nothing to say (a statsd timer without
   * samples): no counter to wait for */
  ck_assert_int_eq(
      inputs_read_one(in, "h/statsd/latency-t-average", &v, why, sizeof why),
      INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/statsd/latency-t-average' is NaN: a gauge "
                        "without a value this interval (a statsd timer or a "
                        "tail average without samples)");
  ck_assert_int_eq(inputs_read_one(in, "h/p/gauge-inf", &v, why, sizeof why),
                   INPUT_BAD);
  ck_assert_str_eq(why, "'h/p/gauge-inf' is infinite");
  ck_assert_int_eq(inputs_read_one(in, "h/p/load", &v, why, sizeof why),
                   INPUT_BAD);
  ck_assert_str_eq(why, "'h/p/load' has 3 data sources; name a type with one");
  ck_assert(v == -1);
  inputs_destroy(in);
}
END_TEST

/* Each message names its cause (collectd 5.12's cache: a rate is NaN at
 * a DERIVE's or COUNTER's first sample, and for any value outside its
 * type's range in types.db, uc_check_range): a NaN gauge is NaN; a gauge
 * outside its range says so with the value; a DERIVE is at its first
 * sample until it had a rate, and went backwards after; a COUNTER that
 * had a rate is outside its range.  The NaN path alone reads the raw
 * value: a read with a rate costs one look-up, as before. */
START_TEST(test_no_rate_causes) {
  inputs_t *in = inputs_create(NULL, 0);
  char why[400];
  double v;
  stub_cache_set_gauge("h/p/gauge-nan", NAN, NAN);
  stub_cache_set_gauge("h/cpu/percent-busy", NAN, 250.0);
  stub_cache_set("h/p/derive-req", NAN);
  stub_cache_set_counter("h/p/counter-req", NAN, 7);
  stub_cache_commit();
  ck_assert_int_eq(inputs_read_one(in, "h/p/gauge-nan", &v, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/p/gauge-nan' is NaN: a gauge without a value "
                        "this interval (a statsd timer or a tail average "
                        "without samples)");
  ck_assert_int_eq(
      inputs_read_one(in, "h/cpu/percent-busy", &v, why, sizeof why),
      INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/cpu/percent-busy' = 250 is outside [0, 100.1], "
                        "the range of its type 'percent' in types.db: "
                        "collectd gives no value for it");
  /* first samples: never read with a rate */
  ck_assert_int_eq(inputs_read_one(in, "h/p/derive-req", &v, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/p/derive-req' has no rate yet: its first sample "
                        "(collectd needs two for a rate)");
  ck_assert_int_eq(inputs_read_one(in, "h/p/counter-req", &v, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/p/counter-req' has no rate yet: its first sample "
                        "(collectd needs two for a rate)");
  /* a rate, then none: the DERIVE went backwards */
  stub_cache_set("h/p/derive-req", 4.0);
  stub_cache_set_counter("h/p/counter-req", 4.0, 11);
  ck_assert_int_eq(inputs_read_one(in, "h/p/derive-req", &v, why, sizeof why),
                   INPUT_OK);
  ck_assert_int_eq(inputs_read_one(in, "h/p/counter-req", &v, why, sizeof why),
                   INPUT_OK);
  stub_cache_set("h/p/derive-req", NAN);
  stub_cache_set_counter("h/p/counter-req", NAN, 12);
  ck_assert_int_eq(inputs_read_one(in, "h/p/derive-req", &v, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/p/derive-req' went backwards (a DERIVE that "
                        "decreased, as at a restart of what counts it; its "
                        "type 'derive' allows no rate below 0): no rate this "
                        "interval");
  ck_assert_int_eq(inputs_read_one(in, "h/p/counter-req", &v, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/p/counter-req' has no rate this interval: its "
                        "rate is outside [0, U], the range of its type "
                        "'counter' in types.db");
  /* the memory goes over to the inputs of a reloaded file */
  inputs_t *next = inputs_create(NULL, 0);
  inputs_take_counters(next, in);
  ck_assert_int_eq(inputs_read_one(next, "h/p/derive-req", &v, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_msg(strstr(why, "went backwards") != NULL, "%s", why);
  /* a read with a rate: one look-up */
  stub_cache_set("h/p/derive-req", 5.0);
  stub_counters c;
  stub_counters_reset();
  ck_assert_int_eq(inputs_read_one(next, "h/p/derive-req", &v, why, sizeof why),
                   INPUT_OK);
  stub_counters_get(&c);
  ck_assert_uint_eq(c.lookups, 1);
  inputs_destroy(next);
  inputs_destroy(in);
}
END_TEST

START_TEST(test_counter_reset) {
  inputs_t *in = inputs_create(NULL, 0);
  char why[300];
  double v;
  const char *c = "h/p/counter-requests", *g = "h/p/gauge-size";
  stub_cache_set_counter(c, 5.0, 100);
  stub_cache_set(g, 5.0);
  stub_cache_commit();
  ck_assert_int_eq(inputs_read_one(in, c, &v, why, sizeof why), INPUT_OK);
  ck_assert_int_eq(inputs_read_one(in, g, &v, why, sizeof why), INPUT_OK);
  stub_cache_set_counter(c, 5.0, 150);
  ck_assert_int_eq(inputs_read_one(in, c, &v, why, sizeof why), INPUT_OK);
  ck_assert(v == 5.0);
  /* went down: collectd reads a wrap-around */
  stub_cache_set_counter(c, 1.8e19, 10);
  stub_cache_set(g, 1.0); /* a gauge may go down */
  ck_assert_int_eq(inputs_read_one(in, c, &v, why, sizeof why), INPUT_NO_RATE);
  ck_assert_str_eq(why, "'h/p/counter-requests' went down (a COUNTER reset, "
                        "read as a wrap-around by collectd): no rate this "
                        "interval");
  ck_assert_int_eq(inputs_read_one(in, g, &v, why, sizeof why), INPUT_OK);
  ck_assert(v == 1.0);
  /* the next cycle before the next sample: the cache still holds the
   * wrap-around (a bare machine's test_plugin.py paged a storm on it) */
  ck_assert_int_eq(inputs_read_one(in, c, &v, why, sizeof why), INPUT_NO_RATE);
  ck_assert_ptr_nonnull(strstr(why, "went down"));
  /* a new sample with the same raw value has its own rate, 0 */
  stub_cache_set_counter(c, 0.0, 10);
  ck_assert_int_eq(inputs_read_one(in, c, &v, why, sizeof why), INPUT_OK);
  ck_assert(v == 0.0);
  stub_cache_set_counter(c, 1.0, 20);
  ck_assert_int_eq(inputs_read_one(in, c, &v, why, sizeof why), INPUT_OK);
  ck_assert(v == 1.0);
  inputs_destroy(in);
}
END_TEST

/* Many counters: each keeps its own last value through the table's
 * growth. */
START_TEST(test_counter_memory_grows) {
  enum { N = 3000 };
  inputs_t *in = inputs_create(NULL, 0);
  char name[64], why[300];
  double v;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) {
      snprintf(name, sizeof name, "h%d/p/counter-c", i);
      /* 1000, then 600 (a reset for every one), then 700 */
      stub_cache_set_counter(name, 1.0, round == 0 ? 1000 : 500 + 100 * round);
    }
    stub_cache_commit();
    input_result want = round == 1 ? INPUT_NO_RATE : INPUT_OK;
    for (int i = 0; i < N; i++) {
      snprintf(name, sizeof name, "h%d/p/counter-c", i);
      ck_assert_int_eq(inputs_read_one(in, name, &v, why, sizeof why), want);
    }
  }
  inputs_destroy(in);
}
END_TEST

START_TEST(test_service_identifiers) {
  ms_service_file f;
  load(&f, "      offered_rate: \"h/statsd/derive-req\"\n"
           "      arrival_rate: \"h/statsd/derive-att\"\n"
           "      retry_rate: 3\n");
  inputs_t *in = inputs_create(f.services, f.n_services);
  ms_inputs values;
  inputs_glob_sum glob[MS_INPUT_COUNT];
  char why[512];
  stub_cache_set("h/statsd/derive-req", 10.0);
  stub_cache_commit();
  inputs_refresh(in); /* no globs: nothing to do */
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_ABSENT);
  ck_assert_str_eq(why, "input arrival_rate: 'h/statsd/derive-att' is not in "
                        "collectd's cache (not dispatched yet, or expired)");
  stub_cache_set("h/statsd/derive-att", 12.0);
  stub_cache_commit();
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert(values.has[MS_INPUT_OFFERED] && values.has[MS_INPUT_ARRIVAL]);
  ck_assert(values.value[MS_INPUT_OFFERED] == 10.0);
  ck_assert(values.value[MS_INPUT_ARRIVAL] == 12.0);
  /* a number is the service layer's */
  ck_assert(!values.has[MS_INPUT_RETRY] && !values.has[MS_INPUT_ERROR] &&
            !values.has[MS_INPUT_POOL]);
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    ck_assert_uint_eq(glob[i].matched, 0);
  stub_cache_set("h/statsd/derive-att", INFINITY);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_BAD);
  ck_assert_str_eq(why, "input arrival_rate: 'h/statsd/derive-att' is "
                        "infinite");
  inputs_destroy(in);
  ms_service_file_free(&f);
}
END_TEST

/* `missing: zero`: an input absent from the cache (an identifier not
 * there, a glob without a match) does not fail the service and is left to
 * the service layer (has[] false, counted as 0 there); one there without a
 * rate still fails it. */
START_TEST(test_missing_zero) {
  ms_service_file f;
  load(&f, "      offered_rate: \"h/statsd/derive-req\"\n"
           "      retry_rate: {source: \"h/statsd/derive-retries\", "
           "missing: zero}\n"
           "      error_rate: {source: \"*/statsd/derive-errors\", "
           "missing: zero}\n");
  inputs_t *in = inputs_create(f.services, f.n_services);
  ms_inputs values;
  inputs_glob_sum glob[MS_INPUT_COUNT];
  char why[512];
  stub_cache_set("h/statsd/derive-req", 10.0);
  stub_cache_commit();
  inputs_refresh(in);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert(values.has[MS_INPUT_OFFERED]);
  ck_assert(!values.has[MS_INPUT_RETRY] && !values.has[MS_INPUT_ERROR]);
  ck_assert_uint_eq(glob[MS_INPUT_ERROR].matched, 0);
  /* the first event: the counter is there without a rate */
  stub_cache_set("h/statsd/derive-retries", NAN);
  stub_cache_commit();
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_str_eq(why, "input retry_rate: 'h/statsd/derive-retries' has no "
                        "rate yet: its first sample (collectd needs two for a "
                        "rate)");
  stub_cache_set("h/statsd/derive-retries", 2.5);
  stub_cache_set("web1/statsd/derive-errors", 1.5);
  stub_cache_commit();
  inputs_refresh(in);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert(values.has[MS_INPUT_RETRY] && values.has[MS_INPUT_ERROR]);
  ck_assert(values.value[MS_INPUT_RETRY] == 2.5);
  ck_assert(values.value[MS_INPUT_ERROR] == 1.5);
  /* without it (the default), absence fails the service as before */
  stub_cache_remove("h/statsd/derive-req");
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_ABSENT);
  inputs_destroy(in);
  ms_service_file_free(&f);
}
END_TEST

/* Inputs the verdict can go without (ms_input_role_of): a calibration
 * input, queue_length beside the attempts, retry_rate beside offered_rate
 * and arrival_rate.  Without a value they do not fail the service: left as
 * a trace's cell would hold them (absent: has[] false; NaN), the first
 * one's reason in why, an unused one not named.  A needed input still
 * fails it. */
START_TEST(test_left_out) {
  ms_service_file f;
  load(&f, "      offered_rate: \"h/statsd/derive-req\"\n"
           "      arrival_rate: \"h/statsd/derive-att\"\n"
           "      retry_rate: \"h/statsd/derive-retries\"\n"
           "      queue_length: \"h/p/gauge-queue\"\n"
           "      latency: \"h/statsd/latency-t-average\"\n"
           "      busy_servers: \"*/p/gauge-busy\"\n");
  const ms_service_spec *sp = &f.services[0];
  ck_assert_int_eq(ms_input_role_of(sp, MS_INPUT_RETRY), MS_INPUT_UNUSED);
  ck_assert_int_eq(ms_input_role_of(sp, MS_INPUT_QUEUE), MS_INPUT_EXTRA);
  inputs_t *in = inputs_create(f.services, f.n_services);
  ms_inputs values;
  inputs_glob_sum glob[MS_INPUT_COUNT];
  char why[512];
  stub_cache_set("h/statsd/derive-req", 10.0);
  stub_cache_set("h/statsd/derive-att", 12.0);
  stub_cache_set("h/statsd/derive-retries", 2.0);
  stub_cache_set("h/p/gauge-queue", 3.0);
  stub_cache_set("h/statsd/latency-t-average", 0.05);
  stub_cache_set("web1/p/gauge-busy", 4.0);
  stub_cache_commit();
  inputs_refresh(in);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert_str_eq(why, "");
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    ck_assert(values.has[i] == (sp->inputs[i].kind != MS_SOURCE_NONE));
  /* the storm: nothing succeeds, the timer has no sample */
  stub_cache_set("h/statsd/latency-t-average", NAN);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert_str_eq(why, "input latency: 'h/statsd/latency-t-average' is NaN: "
                        "a gauge without a value this interval (a statsd "
                        "timer or a tail average without samples)");
  ck_assert(values.has[MS_INPUT_LATENCY] &&
            isnan(values.value[MS_INPUT_LATENCY]));
  ck_assert(values.value[MS_INPUT_OFFERED] == 10.0 &&
            values.value[MS_INPUT_ARRIVAL] == 12.0);
  /* the first left out is named: the queue gone, the glob without a
   * match, the unused retries gone (not named) */
  stub_cache_remove("h/p/gauge-queue");
  stub_cache_remove("web1/p/gauge-busy");
  stub_cache_remove("h/statsd/derive-retries");
  inputs_refresh(in);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert_str_eq(why, "input queue_length: 'h/p/gauge-queue' is not in "
                        "collectd's cache (not dispatched yet, or expired)");
  ck_assert(!values.has[MS_INPUT_QUEUE] && !values.has[MS_INPUT_BUSY] &&
            !values.has[MS_INPUT_RETRY]);
  ck_assert(values.has[MS_INPUT_LATENCY]);
  /* what the service layer makes of it: a verdict, the same reason */
  ms_step st;
  ms_tracker tr;
  ms_tracker_init(&tr);
  values.interval = 1;
  ms_tracker_step(&tr, sp, &values, &st);
  ck_assert_msg(st.ok, "%s", st.problem);
  ck_assert_str_eq(st.inference.calibration_problem,
                   "input queue_length has no value this interval");
  ck_assert(!st.report.analysis.has_drain_time);
  /* a needed input still fails the service, whatever else is missing */
  stub_cache_set("h/statsd/derive-att", NAN);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_NO_RATE);
  /* it had a rate: a DERIVE without one went backwards (types.db's 0) */
  ck_assert_str_eq(why, "input arrival_rate: 'h/statsd/derive-att' went "
                        "backwards (a DERIVE that decreased, as at a restart "
                        "of what counts it; its type 'derive' allows no rate "
                        "below 0): no rate this interval");
  inputs_destroy(in);
  ms_service_file_free(&f);
}
END_TEST

#define GLOB "web*/statsd/derive-att"

/* One service: offered rate 1 (a number), attempts a glob, and an error
 * rate identifier when with_errors. */
static inputs_t *glob_service(ms_service_file *f, bool with_errors) {
  load(f, with_errors ? "      offered_rate: 1\n"
                        "      arrival_rate: \"" GLOB "\"\n"
                        "      error_rate: \"h/statsd/derive-err\"\n"
                      : "      offered_rate: 1\n"
                        "      arrival_rate: \"" GLOB "\"\n");
  inputs_t *in = inputs_create(f->services, f->n_services);
  ck_assert_ptr_nonnull(in);
  return in;
}

START_TEST(test_glob_partial_sum) {
  ms_service_file f;
  inputs_t *in = glob_service(&f, false);
  stub_cache_set("web1/statsd/derive-att", 2.0);
  stub_cache_set("web2/statsd/derive-att", NAN); /* first sample */
  stub_cache_set("web3/statsd/derive-att", 4.0);
  stub_cache_set("db1/statsd/derive-att", 100.0); /* no match */
  stub_cache_commit();
  inputs_refresh(in);
  stub_cache_remove("web3/statsd/derive-att"); /* expired since */
  ms_inputs values;
  inputs_glob_sum glob[MS_INPUT_COUNT];
  char why[512];
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert(values.has[MS_INPUT_ARRIVAL]);
  ck_assert(values.value[MS_INPUT_ARRIVAL] == 2.0);
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].matched, 3);
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].summed, 1);
  ck_assert_str_eq(glob[MS_INPUT_ARRIVAL].skipped,
                   "'web2/statsd/derive-att' has no rate yet: its first "
                   "sample (collectd needs two for a rate)");
  /* all have a rate again */
  stub_cache_set("web2/statsd/derive-att", 3.0);
  stub_cache_set("web3/statsd/derive-att", 4.0);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert(values.value[MS_INPUT_ARRIVAL] == 9.0);
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].summed, 3);
  ck_assert_str_eq(glob[MS_INPUT_ARRIVAL].skipped, "");
  inputs_destroy(in);
  ms_service_file_free(&f);
}
END_TEST

START_TEST(test_glob_without_value) {
  ms_service_file f;
  inputs_t *in = glob_service(&f, false);
  ms_inputs values;
  inputs_glob_sum glob[MS_INPUT_COUNT];
  char why[512];
  inputs_refresh(in);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_ABSENT);
  ck_assert_str_eq(why, "input arrival_rate: no identifier matches '" GLOB "'");
  /* none has a rate */
  stub_cache_set("web1/statsd/derive-att", NAN);
  stub_cache_set("web2/statsd/derive-att", NAN);
  stub_cache_commit();
  inputs_refresh(in);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_NO_RATE);
  ck_assert_str_eq(why, "input arrival_rate (glob '" GLOB "'): none of its 2 "
                        "matches has a rate this interval, e.g. "
                        "'web1/statsd/derive-att' has no rate yet: its first "
                        "sample (collectd needs two for a rate)");
  ck_assert(!values.has[MS_INPUT_ARRIVAL]);
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].matched, 0);
  /* a bad match spoils the sum */
  stub_cache_set("web1/statsd/derive-att", 1.0);
  stub_cache_set_sources("web2/statsd/derive-att", 1.0, 2);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_BAD);
  ck_assert_str_eq(why, "input arrival_rate (glob '" GLOB "', 2 matches): "
                        "'web2/statsd/derive-att' has 2 data sources; name a "
                        "type with one");
  inputs_destroy(in);
  ms_service_file_free(&f);
}
END_TEST

/* How a glob was summed is told even when a later input fails. */
START_TEST(test_glob_sum_before_failure) {
  ms_service_file f;
  inputs_t *in = glob_service(&f, true);
  stub_cache_set("web1/statsd/derive-att", 2.0);
  stub_cache_set("web2/statsd/derive-att", NAN);
  stub_cache_commit();
  inputs_refresh(in);
  ms_inputs values;
  inputs_glob_sum glob[MS_INPUT_COUNT];
  char why[512];
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_ABSENT);
  ck_assert_str_eq(why, "input error_rate: 'h/statsd/derive-err' is not in "
                        "collectd's cache (not dispatched yet, or expired)");
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].matched, 2);
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].summed, 1);
  inputs_destroy(in);
  ms_service_file_free(&f);
}
END_TEST

/* Globs follow collectd's identifier list, at each refresh. */
START_TEST(test_glob_refresh) {
  ms_service_file f;
  inputs_t *in = glob_service(&f, false);
  ms_inputs values;
  inputs_glob_sum glob[MS_INPUT_COUNT];
  char why[512];
  stub_cache_set("web1/statsd/derive-att", 1.0);
  stub_cache_set("web2/statsd/derive-att", 2.0);
  stub_cache_commit();
  /* not matched before the first refresh */
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_ABSENT);
  inputs_refresh(in);
  inputs_refresh(in); /* unchanged list */
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert(values.value[MS_INPUT_ARRIVAL] == 3.0);
  /* a host appears: summed from the next refresh on */
  stub_cache_set("web3/statsd/derive-att", 4.0);
  stub_cache_commit();
  inputs_read_service(in, 0, &values, glob, why, sizeof why);
  ck_assert(values.value[MS_INPUT_ARRIVAL] == 3.0);
  inputs_refresh(in);
  inputs_read_service(in, 0, &values, glob, why, sizeof why);
  ck_assert(values.value[MS_INPUT_ARRIVAL] == 7.0);
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].matched, 3);
  /* a host goes away */
  stub_cache_remove("web1/statsd/derive-att");
  inputs_refresh(in);
  ck_assert_int_eq(inputs_read_service(in, 0, &values, glob, why, sizeof why),
                   INPUT_OK);
  ck_assert(values.value[MS_INPUT_ARRIVAL] == 6.0);
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].matched, 2);
  ck_assert_uint_eq(glob[MS_INPUT_ARRIVAL].summed, 2);
  inputs_destroy(in);
  ms_service_file_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("plugin_inputs");
  TCase *tc = tcase_create("reads");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_read_one);
  tcase_add_test(tc, test_no_rate_causes);
  tcase_add_test(tc, test_counter_reset);
  tcase_add_test(tc, test_counter_memory_grows);
  tcase_add_test(tc, test_service_identifiers);
  tcase_add_test(tc, test_missing_zero);
  tcase_add_test(tc, test_left_out);
  suite_add_tcase(s, tc);
  tc = tcase_create("globs");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_glob_partial_sum);
  tcase_add_test(tc, test_glob_without_value);
  tcase_add_test(tc, test_glob_sum_before_failure);
  tcase_add_test(tc, test_glob_refresh);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
