/* SPDX-License-Identifier: MIT */
/*
 * Scenario files (service/scenario.h): what a valid file yields, and that
 * every class of mistake is rejected with its line, column and key.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "scenario.h"

START_TEST(test_full_file) {
  /* durations in minutes too: 5m is 300 s, 1m 60 s, 2m 120 s */
  const char *text = "duration: 5m\n"
                     "offered_load: 60/s\n"
                     "sample_interval: 500ms\n"
                     "dt: 50ms\n"
                     "seed: 7\n"
                     "backoff:\n"
                     "  kind: Decorrelated-Jitter\n"
                     "  base: 100ms\n"
                     "  cap: 5s\n"
                     "budget_window: 20s\n"
                     "token_capacity: 50\n"
                     "triggers:\n"
                     "  - kind: stall\n"
                     "    start: 60s\n"
                     "    hold: 3s\n"
                     "    servers: 0\n"
                     "  - kind: spike\n"
                     "    start: 10\n"
                     "    hold: 20s\n"
                     "    load: 60\n"
                     "  - kind: ramp\n"
                     "    start: 100s\n"
                     "    rise: 1m\n"
                     "    fall: 2m\n"
                     "    load: 80/s\n"
                     "  - kind: drop\n"
                     "    start: 250s\n"
                     "    hold: 30s\n"
                     "    load: 50/s\n";
  ms_scenario_file f;
  char err[256];
  ck_assert_msg(ms_scenario_file_parse(text, strlen(text), "t.yaml", &f, err,
                                       sizeof err) == 0,
                "%s", err);
  const ms_scenario *sc = &f.scenario;
  ck_assert_double_eq(sc->duration, 300);
  ck_assert_double_eq(sc->offered_load, 60);
  ck_assert(f.has_sample_interval && f.has_dt && f.has_seed && f.has_backoff);
  ck_assert_double_eq_tol(f.sample_interval, 0.5, 1e-15);
  ck_assert_double_eq_tol(f.dt, 0.05, 1e-15);
  ck_assert_uint_eq(f.seed, 7);
  ck_assert_int_eq(f.backoff.kind, MS_BACKOFF_DECORRELATED);
  ck_assert_double_eq_tol(f.backoff.base, 0.1, 1e-15);
  ck_assert_double_eq(f.backoff.cap, 5);
  ck_assert_double_eq(f.budget_window, 20);
  ck_assert_double_eq(f.token_capacity, 50);
  ck_assert_int_eq(sc->n_triggers, 4);
  ck_assert_int_eq(sc->triggers[0].kind, MS_TRIGGER_SERVERS);
  ck_assert_int_eq(sc->triggers[0].servers, 0);
  ck_assert_double_eq(sc->triggers[0].hold, 3);
  ck_assert_int_eq(sc->triggers[1].kind, MS_TRIGGER_LOAD);
  ck_assert_double_eq(sc->triggers[1].load, 60);
  ck_assert_double_eq(sc->triggers[2].rise, 60);
  ck_assert_double_eq(sc->triggers[2].fall, 120);
  ck_assert_double_eq(sc->triggers[3].load, -50);

  /* applied to a configuration, it runs */
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 10.0, 1.0);
  ms_retry_policy_fixed(&s.policy, 3);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  ms_scenario_file_apply(&f, &c);
  ms_error e;
  ck_assert_msg(ms_sim_config_check(&c, &e) == MS_OK, "%s", e.msg);
  ck_assert_double_eq_tol(c.sample_interval, 0.5, 1e-15);
  ck_assert_uint_eq(c.seed, 7);
  /* the offered load at 120 s: 60 + 80 x 20/60 */
  ck_assert_double_eq_tol(ms_scenario_offered_load(&c.scenario, 120.0),
                          60 + 80.0 / 3, 1e-12);
}
END_TEST

/* A backoff multiplier, read as a number; absent, it is 0 (the default 2). */
START_TEST(test_backoff_multiplier) {
  const char *text = "duration: 1h\n"
                     "offered_load: 60/s\n"
                     "backoff: {kind: equal-jitter, base: 100ms, cap: 2m, "
                     "multiplier: 1.5}\n";
  ms_scenario_file f;
  char err[256];
  ck_assert_msg(ms_scenario_file_parse(text, strlen(text), "t.yaml", &f, err,
                                       sizeof err) == 0,
                "%s", err);
  ck_assert_double_eq(f.scenario.duration, 3600);
  ck_assert_int_eq(f.backoff.kind, MS_BACKOFF_EQUAL_JITTER);
  ck_assert_double_eq(f.backoff.cap, 120);
  ck_assert_double_eq(f.backoff.multiplier, 1.5);
  text = "duration: 10s\noffered_load: 6\n"
         "backoff: {kind: exponential, base: 1s, cap: 8s}\n";
  ck_assert_msg(ms_scenario_file_parse(text, strlen(text), "t.yaml", &f, err,
                                       sizeof err) == 0,
                "%s", err);
  ck_assert_double_eq(f.backoff.multiplier, 0);
  ck_assert_double_eq(ms_backoff_ceiling(&f.backoff, 3), 4.0);
}
END_TEST

/* Each bad file, and the position and words its message must carry. */
static const struct {
  const char *text, *where, *words;
} bad[] = {
    {"duration: 5min\noffered_load: 60/s\n",
     ":1:11:", "unknown time unit 'min' (use us, ms, s, m or h)"},
    {"duration: 200h\noffered_load: 60/s\n",
     ":1:11:", "duration = 720000 s is outside"},
    {"offered_load: 60/s\n", ":1:1:", "'duration'"},
    {"duration: 10s\noffered_load: 60/s\nspeed: 3\n",
     ":3:1:", "unknown key 'speed'"},
    {"duration: 10s\noffered_load: -3\n",
     ":2:15:", "'-3' is negative: a rate is >= 0 per second"},
    {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: spike\n"
     "    start: 1s\n    load: 5\n",
     ":4:5:", "no length"},
    {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: meteor\n"
     "    start: 1s\n",
     ":4:11:", "kind 'meteor'"},
    {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: stall\n"
     "    start: 1s\n    hold: 2s\n    servers: 2\n    rise: 1s\n",
     ":8:5:", "not rise"},
    {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: stall\n"
     "    start: 1s\n    hold: 2s\n    servers: 1.5\n",
     ":7:14:", "whole number"},
    {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: stall\n"
     "    start: 1s\n    hold: 2s\n",
     ":4:5:", "servers"},
    {"duration: 10s\noffered_load: 6\nbackoff:\n  kind: exponential\n"
     "  base: 1s\n",
     ":4:3:", "needs a cap"},
    {"duration: 10s\noffered_load: 6\nbackoff:\n  kind: exponential\n"
     "  base: 2s\n  cap: 1s\n",
     ":4:3:", "cap = 1 s is outside"},
    {"duration: 10s\noffered_load: 6\nbackoff:\n  kind: none\n  kind: none\n",
     ":5:3:", "key 'kind' given twice in backoff"},
    {"duration: 10s\noffered_load: 6\ntriggers:\n  - 5\n",
     ":4:5:", "trigger 1 must be a mapping, not a scalar"},
    {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: spike\n"
     "    size: 5\n",
     ":5:5:", "unknown key 'size' in trigger 1 (known: kind, start,"},
    {"duration: 10s\noffered_load: 6\nbackoff:\n  kind: exponential\n"
     "  base: 1s\n  cap: 8s\n  multiplier: 0.5\n",
     ":7:15:", "multiplier = 0.5 is outside [1, 1000] (key 'multiplier')"},
    {"duration: 10s\noffered_load: 6\nbackoff:\n  kind: constant\n"
     "  base: 1s\n  multiplier: 3\n",
     ":6:3:", "backoff constant takes no multiplier"},
    {"duration: 10s\noffered_load: 6\nbackoff:\n  kind: full-jitter\n"
     "  base: 1s\n  cap: 8s\n  multiplier: 3x\n",
     ":7:15:", "multiplier must be a number, not '3x'"},
    {"duration: 10s\noffered_load: 6\nbackoff:\n  kind: bounce\n",
     ":4:9:", "full-jitter"},
    {"duration: 10s\noffered_load: 6\ntriggers: 3\n",
     ":3:11:", "must be a list"},
    {"duration: [1, 2]\noffered_load: 6\n", ":1:11:", "not a list"},
    {"duration: 10s\n  offered_load: 6\n", ":2:", "YAML syntax"},
    {"", ":1:1:", "empty"},
};

START_TEST(test_bad_files) {
  ms_scenario_file f;
  char err[300];
  const char *t = bad[_i].text;
  ck_assert_int_eq(
      ms_scenario_file_parse(t, strlen(t), "bad.yaml", &f, err, sizeof err),
      -1);
  if (getenv("CK_VERBOSITY") && !strcmp(getenv("CK_VERBOSITY"), "verbose"))
    printf("%s\n", err);
  ck_assert_msg(strncmp(err, "bad.yaml", 8) == 0 &&
                    strstr(err, bad[_i].where) != NULL &&
                    strstr(err, bad[_i].words) != NULL,
                "case %d: '%s' lacks '%s' or '%s'", _i, err, bad[_i].where,
                bad[_i].words);
  ck_assert_int_eq(f.scenario.n_triggers, 0);
}
END_TEST

/* The ranges are the model's: ms_sim_value_check decides, and the loader
 * reports its message at the value with the key. */
START_TEST(test_range_from_model) {
  const struct {
    const char *text, *where;
    ms_sim_value kind;
    const char *key;
    double value;
  } cases[] = {
      {"duration: 0\noffered_load: 6\n", "1:11", MS_SIM_SPAN, "duration", 0},
      {"duration: 700000\noffered_load: 6\n", "1:11", MS_SIM_SPAN, "duration",
       700000},
      {"duration: 10s\noffered_load: 2e12\n", "2:15", MS_SIM_LOAD,
       "offered_load", 2e12},
      {"duration: 10s\noffered_load: 6\ndt: 0\n", "3:5", MS_SIM_SPAN, "dt", 0},
      {"duration: 10s\noffered_load: 6\nsample_interval: 1e6\n", "3:18",
       MS_SIM_SPAN, "sample_interval", 1e6},
      {"duration: 10s\noffered_load: 6\nbudget_window: 0\n", "3:16",
       MS_SIM_SPAN, "budget_window", 0},
      {"duration: 10s\noffered_load: 6\ntoken_capacity: 0\n", "3:17",
       MS_SIM_TOKENS, "token_capacity", 0},
      {"duration: 10s\noffered_load: 6\nbackoff:\n  kind: constant\n"
       "  base: 100000\n",
       "5:9", MS_SIM_DELAY, "base", 1e5},
      {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: spike\n"
       "    start: 1e6\n",
       "5:12", MS_SIM_TIME, "start", 1e6},
      {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: drop\n"
       "    start: 1\n    hold: 1\n    load: 3e12\n",
       "7:11", MS_SIM_LOAD_CHANGE, "load", 3e12},
      {"duration: 10s\noffered_load: 6\ntriggers:\n  - kind: stall\n"
       "    start: 1\n    hold: 1\n    servers: 2e7\n",
       "7:14", MS_SIM_POOL, "servers", 2e7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ms_error e;
    ck_assert_int_eq(
        ms_sim_value_check(cases[i].kind, cases[i].key, cases[i].value, &e),
        MS_EINVAL);
    char want[300], err[300];
    snprintf(want, sizeof want, "bad.yaml:%s: %s (key '%s')", cases[i].where,
             e.msg, cases[i].key);
    ms_scenario_file f;
    const char *t = cases[i].text;
    ck_assert_int_eq(
        ms_scenario_file_parse(t, strlen(t), "bad.yaml", &f, err, sizeof err),
        -1);
    ck_assert_str_eq(err, want);
  }
  /* a stall's capacity is a capacity of the model (ms_param_check) */
  const char *t = "duration: 10s\noffered_load: 6\ntriggers:\n"
                  "  - kind: stall\n    start: 1\n    hold: 1\n"
                  "    capacity: 0\n";
  ms_scenario_file f;
  char err[300];
  ck_assert_int_eq(
      ms_scenario_file_parse(t, strlen(t), "bad.yaml", &f, err, sizeof err),
      -1);
  ck_assert_str_eq(err, "bad.yaml:7:15: capacity = 0 req/s must be > 0 and at "
                        "most 1e+300 (key 'capacity')");
  /* the seed's limit is the file's: whole numbers a double holds */
  t = "duration: 10s\noffered_load: 6\nseed: 1e16\n";
  ck_assert_int_eq(
      ms_scenario_file_parse(t, strlen(t), "bad.yaml", &f, err, sizeof err),
      -1);
  ck_assert_str_eq(err, "bad.yaml:3:7: seed = 1e16 is outside [0, "
                        "9007199254740992] (key 'seed')");
}
END_TEST

/* ms_sim_value_check (model/sim.h): each kind's ends, its words, and the
 * same verdicts in the checks of whole scenarios and configurations. */
START_TEST(test_sim_value_check) {
  const struct {
    ms_sim_value kind;
    double ok_lo, ok_hi, bad_lo, bad_hi;
    const char *says; /* for bad_hi, named "x" */
  } cases[] = {
      {MS_SIM_SPAN, 1e-9, MS_SIM_MAX_DURATION, 0, 604801,
       "x = 604801 s is outside (0, 604800]"},
      {MS_SIM_TIME, 0, MS_SIM_MAX_DURATION, -1e-9, 604801,
       "x = 604801 s is outside [0, 604800]"},
      {MS_SIM_DELAY, 0, MS_BACKOFF_MAX, -1, 86401,
       "x = 86401 s is outside [0, 86400]"},
      {MS_SIM_LOAD, 0, MS_SIM_MAX_RATE, -1, 2e12,
       "x = 2e+12/s is outside [0, 1e+12]"},
      {MS_SIM_LOAD_CHANGE, -MS_SIM_MAX_RATE, MS_SIM_MAX_RATE, -2e12, 2e12,
       "x = 2e+12/s is outside [-1e+12, 1e+12]"},
      {MS_SIM_POOL, 0, (double)MS_MAX_SERVERS, -1, 2e7,
       "x = 20000000 is outside [0, 10000000]"},
      {MS_SIM_TOKENS, 1, MS_SIM_MAX_TOKENS, 0.5, 2e15,
       "x = 2e+15 is outside [1, 1e+15]"},
  };
  ms_error e;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ck_assert_int_eq(ms_sim_value_check(cases[i].kind, "x", cases[i].ok_lo, &e),
                     MS_OK);
    ck_assert_int_eq(ms_sim_value_check(cases[i].kind, "x", cases[i].ok_hi, &e),
                     MS_OK);
    ck_assert_int_eq(
        ms_sim_value_check(cases[i].kind, "x", cases[i].bad_lo, &e), MS_EINVAL);
    ck_assert_int_eq(ms_sim_value_check(cases[i].kind, "x", NAN, &e),
                     MS_EINVAL);
    ck_assert_int_eq(ms_sim_value_check(cases[i].kind, "x", INFINITY, &e),
                     MS_EINVAL);
    ck_assert_int_eq(
        ms_sim_value_check(cases[i].kind, "x", cases[i].bad_hi, &e), MS_EINVAL);
    ck_assert_str_eq(e.msg, cases[i].says);
  }
  ck_assert_int_eq(ms_sim_value_check(MS_SIM_POOL, "servers", 2.5, &e),
                   MS_EINVAL);
  ck_assert_str_eq(e.msg, "servers = 2.5 is not a whole number");
  ck_assert_int_eq(ms_sim_value_check(MS_SIM_VALUE_KINDS, "x", 1, &e),
                   MS_EINVAL);
  ck_assert_int_eq(ms_sim_value_check((ms_sim_value)-1, "x", 1, &e), MS_EINVAL);
  /* the whole-scenario checks say the same */
  ms_failure_model m;
  ms_failure_model_erlang(&m, 10, 10.0, 1.0);
  ms_scenario sc = {.duration = 0, .offered_load = 5};
  ck_assert_int_eq(ms_scenario_check(&sc, &m, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "scenario duration = 0 s is outside (0, 604800]");
  sc.duration = 10;
  sc.n_triggers = 1;
  sc.triggers[0] = (ms_trigger){
      .kind = MS_TRIGGER_SERVERS, .start = 1, .hold = 1, .servers = 20000000};
  ck_assert_int_eq(ms_scenario_check(&sc, &m, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg,
                   "trigger 1: servers = 20000000 is outside [0, 10000000]");
  ms_backoff b = {MS_BACKOFF_CONSTANT, 1e5, 0, 0};
  ck_assert_int_eq(ms_backoff_check(&b, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "backoff base = 100000 s is outside [0, 86400]");
  ms_service_params s;
  s.model = m;
  ms_retry_policy_fixed(&s.policy, 3);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);
  c.token_capacity = 0.5;
  ck_assert_int_eq(ms_sim_config_check(&c, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "token capacity = 0.5 is outside [1, 1e+15]");
}
END_TEST

START_TEST(test_missing_file) {
  ms_scenario_file f;
  char err[300];
  ck_assert_int_eq(
      ms_scenario_file_load("/nonexistent/s.yaml", &f, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/s.yaml: cannot open"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("scenario files");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, test_full_file);
  tcase_add_test(tc, test_backoff_multiplier);
  tcase_add_loop_test(tc, test_bad_files, 0, (int)(sizeof bad / sizeof *bad));
  tcase_add_test(tc, test_range_from_model);
  tcase_add_test(tc, test_sim_value_check);
  tcase_add_test(tc, test_missing_file);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
