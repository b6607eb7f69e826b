/* SPDX-License-Identifier: MIT */
/*
 * The service file loader (every error class, with file:line:column), the
 * mapping walker both loaders share (service/yamldoc.h), and the
 * per-interval step: input inference, the state machine and its
 * notifications.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_run.h"
#include "service.h"
#include "sim.h"
#include "units.h"
#include "yamldoc.h"

static const char *good_file =
    "services:\n"
    "  - name: pricing-db            # becomes the plugin instance\n"
    "    model: erlang\n"
    "    servers: 30\n"
    "    service_time: 100ms\n"
    "    timeout: 1s\n"
    "    retries: 1\n"
    "    tiers: 2\n"
    "    retry_budget: 0.1\n"
    "    token_ratio: 0.5\n"
    "    base_failure: 0.01\n"
    "    headroom_warning: 0.1\n"
    "    inputs:\n"
    "      arrival_rate: \"db1/statsd/derive-pricing_attempts\"\n"
    "      retry_rate:   \"*/statsd/derive-pricing_retries\"\n"
    "      error_rate:   \"db1/statsd/derive-pricing_errors\"\n"
    "      pool_size:    \"db1/statsd/gauge-pricing_workers\"\n"
    "  - name: cache\n"
    "    model: capacity\n"
    "    capacity: 300/s\n"
    "    retries: 3\n"
    "    inputs:\n"
    "      offered_rate: 120\n";

/* A parse asked to stop: refused with its own message, nothing kept; the
 * same text without the flag loads (the flag, not the text, refused it). */
START_TEST(test_parse_cancelled) {
  ms_service_file f;
  char err[512];
  atomic_bool stop = true;
  ck_assert_int_eq(ms_service_file_parse_cancel(good_file, strlen(good_file),
                                                "x.yaml", &stop, &f, err,
                                                sizeof err),
                   -1);
  ck_assert_str_eq(err, "x.yaml: load cancelled");
  ck_assert_uint_eq(f.n_services, 0);
  atomic_store(&stop, false);
  ck_assert_msg(ms_service_file_parse_cancel(good_file, strlen(good_file),
                                             "x.yaml", &stop, &f, err,
                                             sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(f.n_services, 2);
  ms_service_file_free(&f);
}
END_TEST

START_TEST(test_good_file) {
  ms_service_file f;
  char err[512];
  ck_assert_msg(ms_service_file_parse(good_file, strlen(good_file), "x.yaml",
                                      &f, err, sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(f.n_services, 2);
  const ms_service_spec *s = ms_service_file_find(&f, "pricing-db");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->line, 2);
  ck_assert_int_eq(s->params.model.kind, MS_MODEL_ERLANG);
  ck_assert_int_eq(s->params.model.servers, 30);
  ck_assert_double_eq_tol(s->params.model.service_rate, 10.0, 1e-12);
  ck_assert_double_eq(s->params.model.timeout, 1.0);
  ck_assert_double_eq(s->params.model.base_failure, 0.01);
  ck_assert_int_eq(s->params.policy.retries, 1);
  ck_assert_int_eq(s->params.policy.tiers, 2);
  ck_assert(s->params.policy.has_budget);
  ck_assert_double_eq(s->params.policy.retry_budget, 0.1);
  ck_assert(s->params.policy.has_token);
  ck_assert_double_eq(s->params.policy.token_ratio, 0.5);
  ck_assert(s->has_headroom_warning);
  ck_assert_int_eq(s->inputs[MS_INPUT_ARRIVAL].kind, MS_SOURCE_IDENTIFIER);
  ck_assert_str_eq(s->inputs[MS_INPUT_ARRIVAL].pattern,
                   "db1/statsd/derive-pricing_attempts");
  ck_assert_int_eq(s->inputs[MS_INPUT_ARRIVAL].line, 14);
  ck_assert_int_eq(s->inputs[MS_INPUT_RETRY].kind, MS_SOURCE_GLOB);
  ck_assert_int_eq(s->inputs[MS_INPUT_OFFERED].kind, MS_SOURCE_NONE);
  s = ms_service_file_find(&f, "cache");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->params.model.kind, MS_MODEL_CAPACITY);
  ck_assert_double_eq(s->params.model.capacity, 300.0);
  ck_assert_int_eq(s->inputs[MS_INPUT_OFFERED].kind, MS_SOURCE_NUMBER);
  ck_assert_double_eq(s->inputs[MS_INPUT_OFFERED].number, 120.0);
  ck_assert_ptr_null(ms_service_file_find(&f, "nope"));
  ms_service_file_free(&f);
  ck_assert_uint_eq(f.n_services, 0);
}
END_TEST

/* ---- every error class ------------------------------------------------ */

#define SVC                                                                    \
  "services:\n"                                                                \
  "  - name: a\n"
#define ERL                                                                    \
  "    model: erlang\n"                                                        \
  "    servers: 30\n"                                                          \
  "    service_time: 100ms\n"                                                  \
  "    timeout: 1s\n"                                                          \
  "    retries: 1\n"
#define IN                                                                     \
  "    inputs:\n"                                                              \
  "      offered_rate: h/p/t\n"

static const struct {
  const char *text;
  const char *where; /* "line:column" */
  const char *says;  /* a substring of the message */
} bad_files[] = {
    {"services: [\n", "2:1", "YAML syntax"},
    {"", "1:1", "empty"},
    {"- a\n", "1:1", "mapping with the key 'services'"},
    {"services: []\nextra: 1\n", "2:1", "unknown key 'extra'"},
    {"services: 3\n", "1:11", "must be a list"},
    {"services: []\n", "1:11", "is empty"},
    {"services:\n  - 7\n", "2:5", "must be a mapping"},
    {SVC ERL "    colour: red\n" IN, "8:5", "unknown key 'colour'"},
    {SVC ERL "    retries: 2\n" IN, "8:5", "key 'retries' given twice"},
    {SVC ERL "    colour: red\n" IN, "8:5", "(known: name, model, servers,"},
    {SVC ERL "    timout: 1s\n" IN, "8:5",
     "unknown key 'timout' in a service: did you mean 'timeout'? (known: "
     "name, model, servers,"},
    {SVC ERL "    inputs:\n      ofered_rate: h/p/t\n", "9:7",
     "unknown input 'ofered_rate' in inputs: did you mean 'offered_rate'?"},
    {SVC ERL "    [colour]: red\n" IN, "8:5",
     "a key in a service must be a name"},
    {"services: []\nservices: []\n", "2:1", "key 'services' given twice"},
    {"services:\n  - model: erlang\n", "2:5", "needs a name"},
    {"services:\n  - name: a/b\n", "2:11", "key 'name'"},
    {SVC IN, "2:5", "needs a model"},
    {SVC "    model: mm1\n", "3:12", "neither erlang nor capacity"},
    {SVC ERL "    capacity: 3\n" IN, "8:5", "capacity model only"},
    {SVC "    model: capacity\n    capacity: 3\n    timeout: 1s\n", "5:5",
     "erlang model only"},
    {SVC "    model: erlang\n    servers: 3\n    timeout: 1s\n"
         "    retries: 1\n" IN,
     "2:5", "needs service_time"},
    {SVC "    model: erlang\n    servers: 3\n    service_time: 1s\n"
         "    service_rate: 1\n",
     "6:5", "not both"},
    {SVC "    model: erlang\n    servers: 3\n    service_time: 5 minutes\n",
     "5:19", "unknown time unit"},
    {SVC "    model: erlang\n    servers: 3\n    service_time: -1ms\n", "5:19",
     "not a duration"},
    {SVC "    model: erlang\n    servers: 3\n    service_time: 0\n", "5:19",
     "must be > 0"},
    {SVC "    model: erlang\n    servers: 3\n    service_time: 1ms\n"
         "    retries: 1\n" IN,
     "2:5", "needs a client timeout"},
    {SVC "    model: erlang\n    servers: 0\n", "4:14", "servers = 0"},
    {SVC "    model: erlang\n    servers: 2.5\n", "4:14", "whole number"},
    {SVC "    model: capacity\n    retries: 1\n" IN, "2:5", "needs a capacity"},
    {SVC "    model: capacity\n    capacity: 0\n", "4:15", "must be > 0"},
    {SVC "    model: capacity\n    capacity: lots\n", "4:15", "not a rate"},
    {SVC "    model: capacity\n    capacity: 5\n" IN, "2:5", "needs retries"},
    {SVC ERL "    tiers: 0\n" IN, "8:12", "tiers = 0"},
    {SVC ERL "    retry_budget: 1\n" IN, "8:19", "retry_budget = 1"},
    {SVC ERL "    token_ratio: 0\n" IN, "8:18", "token_ratio = 0"},
    {SVC ERL "    queue_limit: 2.5\n" IN, "8:18", "whole number"},
    {SVC ERL "    retry_rejections: maybe\n" IN, "8:23",
     "retry_rejections is true or false"},
    {SVC ERL "    backoff: {kind: exponential, base: 10ms}\n" IN, "8:14",
     "backoff exponential needs a cap (key 'backoff.cap')"},
    {SVC ERL "    backoff: {kind: linear, base: 10ms}\n" IN, "8:21",
     "(key 'backoff.kind')"},
    {SVC ERL "    backoff: {kind: constant, base: 10ms, cap: 1s}\n" IN, "8:43",
     "backoff constant takes no cap"},
    {SVC ERL "    backoff: {kind: exponential, base: 10ms, cap: 2d}\n" IN,
     "8:51", "(key 'cap')"},
    {SVC ERL "    backoff: {kind: exponential, base: 10ms, cap: 1s, "
             "multiplier: 0.5}\n" IN,
     "8:67", "(key 'multiplier')"},
    {SVC ERL "    backoff: full-jitter\n" IN, "8:14",
     "backoff must be a mapping"},
    {SVC ERL "    backoff: {kind: constant, bsae: 1s}\n" IN, "8:31",
     "did you mean 'base'?"},
    {SVC ERL "    latency_objective: 0\n" IN, "8:24", "latency_objective"},
    {SVC ERL "    latency_objective: 100000s\n" IN, "8:24",
     "above 10000000: give queue_limit"},
    {SVC "    model: capacity\n    capacity: 5\n    queue_limit: 3\n", "5:5",
     "applies to the erlang model only"},
    {SVC ERL "    base_failure: 1.2\n" IN, "8:19", "base_failure = 1.2"},
    {SVC ERL "    base_failure: [1]\n" IN, "8:19", "must be a number"},
    {SVC ERL "    headroom_warning: 2\n" IN, "8:23", "headroom_warning = 2"},
    {SVC ERL "    headroom_warning: 150%\n" IN, "8:23",
     "headroom_warning = 150% is outside (0, 1)"},
    {SVC ERL "    hazard_warning: 1\n" IN, "8:21",
     "hazard_warning = 1 is outside (0, 1)"},
    {SVC ERL "    hazard_horizon: 0\n" IN, "8:21", "hazard_horizon"},
    {SVC ERL "    hazard_horizon: 1e9\n" IN, "8:21", "hazard_horizon"},
    {SVC ERL "    safety_margin: 11\n" IN, "8:20",
     "safety_margin = 11 is outside [0, 10]"},
    {SVC ERL "    safety_margin: -5%\n" IN, "8:20", "safety_margin"},
    {SVC ERL "    headroom_warning: ten%\n" IN, "8:23",
     "headroom_warning must be a number or a percentage, not 'ten%'"},
    {SVC ERL "    tiers: 2%\n" IN, "8:12",
     "'2%' is a percentage, but tiers is a count, not a share (key 'tiers')"},
    {SVC "    model: erlang\n    servers: 10%\n", "4:14",
     "'10%' is a percentage, but servers is a count, not a share"},
    {SVC ERL "    base_failure: 1%%\n" IN, "8:19",
     "base_failure must be a number or a percentage, not '1%%'"},
    {SVC ERL "    base_failure: 100%\n" IN, "8:19",
     "base_failure = 1 is outside [0, 1)"},
    {SVC ERL "    calibration_time: 5min\n" IN, "8:23",
     "unknown time unit 'min'"},
    {SVC ERL, "2:5", "needs inputs"},
    {SVC ERL "    inputs: 5\n", "8:13", "must be a mapping"},
    {SVC ERL "    inputs:\n      response_time: h/p/t\n", "9:7",
     "unknown input 'response_time'"},
    {SVC ERL "    inputs:\n      offered_rate: 5\n      offered_rate: 6\n",
     "10:7", "input 'offered_rate' given twice in inputs"},
    {SVC ERL "    inputs:\n      offered_rate: host/plugin\n", "9:21",
     "not a collectd identifier"},
    {SVC ERL "    inputs:\n      offered_rate: a//b\n", "9:21",
     "not a collectd identifier"},
    {SVC ERL "    inputs:\n      offered_rate: -4\n", "9:21", "must be >= 0"},
    {SVC ERL "    inputs:\n      offered_rate: 5\n      pool_size: 0\n",
     "10:18", "pool_size = 0"},
    {SVC "    model: capacity\n    capacity: 9\n    retries: 1\n    inputs:\n"
         "      offered_rate: 5\n      pool_size: h/p/t\n",
     "6:5", "erlang model only"},
    {SVC ERL "    inputs:\n      arrival_rate: h/p/t\n", "8:5",
     "cannot give the offered load"},
    {SVC "    model: erlang\n    service_time: 1ms\n    timeout: 1\n"
         "    retries: 1\n" IN,
     "2:5", "needs servers, or a pool_size"},
/* an input as a mapping {source, missing} */
#define IN_OFF "    inputs:\n      offered_rate: 5\n"
    {SVC ERL IN_OFF "      retry_rate: {missing: zero}\n", "10:19",
     "input retry_rate needs a source (key 'inputs.retry_rate.source')"},
    {SVC ERL IN_OFF "      retry_rate: {source: h/p/t, missing: maybe}\n",
     "10:44",
     "missing must be skip or zero, not 'maybe' (key "
     "'inputs.retry_rate.missing')"},
    {SVC ERL IN_OFF "      retry_rate: {source: h/p/t, missing: [zero]}\n",
     "10:44", "missing must be skip or zero, not a list"},
    {SVC ERL IN_OFF "      retry_rate: {source: h/p/t, colour: red}\n", "10:35",
     "unknown key 'colour' in input retry_rate (known: source, missing, "
     "scale)"},
    {SVC ERL IN_OFF "      retry_rate: {source: h/p/t, missing: zero, "
                    "missing: skip}\n",
     "10:50", "key 'missing' given twice in input retry_rate"},
    {SVC ERL IN_OFF "      retry_rate: {source: [1]}\n", "10:28",
     "retry_rate must be a number or a collectd identifier"},
    {SVC ERL IN_OFF "      retry_rate: {source: h/p, missing: zero}\n", "10:28",
     "not a collectd identifier"},
    {SVC ERL "    inputs:\n      offered_rate: {source: 5, missing: zero}\n",
     "9:33",
     "input offered_rate is a number: missing applies to a collectd "
     "identifier or glob only (key 'inputs.offered_rate.missing')"},
    {SVC ERL IN_OFF "      pool_size: {source: h/p/t, missing: zero}\n",
     "10:43", "missing: zero does not apply to pool_size"},
#undef IN_OFF
    {SVC ERL IN "  - name: a\n" ERL IN, "10:5", "used twice"},
    {SVC ERL "    clear_after: 0\n" IN, "8:18", "clear_after = 0"},
    {SVC ERL "    tiers: 0x2\n" IN, "8:12", "whole number"},
/* the named policies and the tiers list (doc/configuration.md) */
#define ERL0                                                                   \
  "    model: erlang\n    servers: 30\n    service_time: 100ms\n"              \
  "    timeout: 1s\n"
    {SVC ERL "    grpc_throttling: {max_tokens: 10}\n" IN, "8:22",
     "grpc_throttling needs token_ratio (key 'grpc_throttling.token_ratio')"},
    {SVC ERL "    grpc_throttling: {max_tokens: 0, token_ratio: 0.1}\n" IN,
     "8:35",
     "grpc_throttling.max_tokens = 0 is outside [1, 1000] (key "
     "'grpc_throttling.max_tokens')"},
    {SVC ERL "    envoy_retry_budget: {budget: 0.2}\n" IN, "8:26",
     "unknown key 'budget' in envoy_retry_budget (known: budget_percent, "
     "min_retry_concurrency)"},
    {SVC ERL "    aws_retry_quota: {}\n    grpc_throttling: {max_tokens: 10, "
             "token_ratio: 0.1}\n" IN,
     "8:5", "gives grpc_throttling and aws_retry_quota: give one retry policy"},
    {SVC ERL "    aws_retry_quota: standard\n" IN, "8:22", "must be a mapping"},
    {SVC ERL "    aws_retry_quota: {costs: newest}\n" IN, "8:30",
     "aws_retry_quota.costs must be current or legacy, not 'newest' (key "
     "'costs')"},
    {SVC ERL "    aws_retry_quota: {throttling_share: 2}\n" IN, "8:41",
     "aws_retry_quota.throttling_share = 2 is outside [0, 1]"},
    {SVC ERL "    retry_budget: {percent: 0.2, ttl: 90}\n" IN, "8:39",
     "retry_budget.ttl = 90 is outside [1, 60]"},
    {SVC ERL "    retry_budget: 0.1\n    aws_retry_quota: {}\n" IN, "2:5",
     "aws_retry_quota replaces retry_budget and token_ratio"},
    {SVC ERL "    tiers: 2\n    envoy_retry_budget: {}\n" IN, "2:5",
     "applies to one tier (tiers = 2)"},
    {SVC ERL "    tiers: [{retries: 3}]\n" IN, "7:5",
     "give retries in each tier, not beside them"},
    {SVC ERL0 "    tiers: [{retries: 3}, {timeout: 1s}]\n" IN, "7:27",
     "a tier needs retries (key 'tiers[1].retries')"},
    {SVC ERL0 "    tiers: [{retries: 3}, {retries: 2, timeout: 2s}]\n" IN,
     "7:27", "its timeout 2 s is the model's timeout 1 s"},
    {SVC ERL0 "    tiers: [{retries: 3}, {retries: 2, timeout: 2s..3s}]\n" IN,
     "7:49",
     "a tier's timeout is one value, not a range (key "
     "'tiers[1].timeout')"},
    {SVC ERL0 "    tiers: [{retries: 3}, {retries: 2, timeout: {min: 2s, "
              "max: 3s}}]\n" IN,
     "7:49", "a tier's timeout is one value, not a range"},
    {SVC ERL0 "    tiers: [{retries: 3, timeout: 1.5s}, {retries: 2}]\n"
              "    layering: nested\n" IN,
     "7:13",
     "layering is nested, but this tier's timeout 1.5 s does not cover the "
     "3 attempts x 1 s of the tier below"},
    {SVC ERL "    layering: sideways\n" IN, "8:15",
     "layering must be nested or independent, not 'sideways'"},
#undef ERL0
    {"services: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]"
     "]]]]]]]]]]]]]]]]]]\n",
     "1:42", "nested deeper than 32 levels"},
    {"services: []\n---\nservices: []\n", "2:1", "second YAML document"},
    /* a NUL inside any scalar, at the scalar: a name, a key, a value */
    {"services:\n  - name: \"a\\u0000b\"\n", "2:11",
     "a NUL character (\\0 or \\u0000) in a scalar"},
    {"services:\n  - name: a\n    \"mo\\0del\": erlang\n", "3:5",
     "a NUL character"},
    {SVC ERL "    timeout: \"1s\\x00\"\n" IN, "8:14", "a NUL character"},
    {"services:\n  - name: 'x'\n    model: capacity\n    capacity: "
     "\"\\u00001\"\n",
     "4:15", "a NUL character"},
    /* control bytes the reader refuses: at their line and column */
    {"services:\n  - name: a\x1b]0;x\x07\n", "2:12",
     "control characters are not allowed (byte 0x1b)"},
};

START_TEST(test_bad_file) {
  ms_service_file f;
  char err[512] = "";
  const char *text = bad_files[_i].text;
  int r = ms_service_file_parse(text, strlen(text), "svc.yaml", &f, err,
                                sizeof err);
  ck_assert_msg(r == -1, "case %d accepted:\n%s", _i, text);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "svc.yaml:%s: ", bad_files[_i].where);
  ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0,
                "case %d: '%s' does not start with '%s'", _i, err, prefix);
  ck_assert_msg(strstr(err, bad_files[_i].says) != NULL,
                "case %d: '%s' does not say '%s'", _i, err, bad_files[_i].says);
  ck_assert_uint_eq(f.n_services, 0);
  ck_assert_ptr_null(f.services);
}
END_TEST

/* A NUL byte in the file itself (not an escape): refused by libyaml's
 * reader, at its line and column. */
START_TEST(test_raw_nul) {
  static const char text[] = "services:\n  - name: a\0b\n";
  ms_service_file f;
  char err[512] = "";
  ck_assert_int_eq(ms_service_file_parse(text, sizeof text - 1, "svc.yaml", &f,
                                         err, sizeof err),
                   -1);
  ck_assert_str_eq(err, "svc.yaml:2:12: YAML syntax: control characters are "
                        "not allowed (byte 0x00)");
}
END_TEST

/* A long value or key keeps the reason in a 512-byte message: the value
 * is quoted short (ms_quoted), and a message that still would not fit has
 * its long words cut.  A new-user trial had "'1000...' is no (key
 * 'capacity')" and "unknown key 'kkk..." with nothing after. */
START_TEST(test_long_scalars_keep_the_reason) {
  const size_t n = 100000;
  char *big = malloc(n + 1);
  ck_assert_ptr_nonnull(big);
  memset(big, '0', n);
  big[0] = '1';
  big[n] = '\0';
  char *key = malloc(1001);
  ck_assert_ptr_nonnull(key);
  memset(key, 'k', 1000);
  key[1000] = '\0';
  const struct {
    const char *model, *before, *middle, *after, *says;
  } cases[] = {
      {"capacity", "    capacity: ", big, "\n", "is not a rate"},
      {"capacity", "    capacity: 100\n    ", key, ": 1\n",
       "in a service (known: name,"},
      {"erlang", "    servers: ", big, "\n", "must be a whole number"},
      {"erlang", "    service_time: 1", key, "s\n", "unknown time unit"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = n + 512;
    char *text = malloc(len);
    ck_assert_ptr_nonnull(text);
    snprintf(text, len,
             "services:\n  - name: a\n    model: %s\n%s%s%s"
             "    retries: 1\n    inputs:\n      offered_rate: 5\n",
             cases[i].model, cases[i].before, cases[i].middle, cases[i].after);
    ms_service_file f;
    char err[512] = "";
    ck_assert_int_eq(ms_service_file_parse(text, strlen(text), "t.yaml", &f,
                                           err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, cases[i].says) != NULL, "case %zu: %s", i, err);
    free(text);
  }
  free(key);
  free(big);
  /* ms_quoted: whole up to 64 bytes; cut past it, never inside a UTF-8
   * sequence ("a" then 2-byte letters: byte 40 is inside one) */
  char q[MS_QUOTED_SIZE], t[256] = "a";
  ck_assert_str_eq(ms_quoted(q, sizeof q, "5ms"), "'5ms'");
  for (int k = 0; k < 60; k++)
    strcat(t, "\xc3\xa9");
  ms_quoted(q, sizeof q, t);
  ck_assert_msg(strstr(q, "(121 bytes)") != NULL, "%s", q);
  const char *cut = strstr(q, "\xe2\x80\xa6"); /* the ellipsis */
  ck_assert_ptr_nonnull(cut);
  ck_assert_uint_eq((size_t)(cut - q - 1) % 2, 1); /* "a" + whole letters */
}
END_TEST

/* queue_limit, retry_rejections and latency_objective (doc/design.md
 * §1.9): K as given, or round(c mu L); rejections retried by default. */
START_TEST(test_queue_limit_keys) {
  const struct {
    const char *lines;
    bool has;
    long k;
    bool final;
  } cases[] = {
      {"", false, 0, false},
      {"    queue_limit: 300\n", true, 300, false},
      {"    queue_limit: 0\n    retry_rejections: false\n", true, 0, true},
      {"    queue_limit: 7\n    retry_rejections: true\n", true, 7, false},
      /* 30 servers at 100 ms: 300/s, and 1.5 s of it is 450 */
      {"    latency_objective: 1500ms\n", true, 450, false},
      {"    latency_objective: 1ms\n    queue_limit: 2\n", true, 2, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512], err[512];
    snprintf(text, sizeof text, SVC ERL "%s" IN, cases[i].lines);
    ms_service_file f;
    ck_assert_msg(ms_service_file_parse(text, strlen(text), "q.yaml", &f, err,
                                        sizeof err) == 0,
                  "%s", err);
    const ms_failure_model *m = &f.services[0].params.model;
    ck_assert_int_eq(m->has_queue_limit, cases[i].has);
    ck_assert_int_eq(m->queue_limit, cases[i].k);
    ck_assert_int_eq(m->rejections_final, cases[i].final);
    ms_service_file_free(&f);
  }
}
END_TEST

/* backoff: the clients' wait before a retry, read as a scenario's
 * (model/sim.h ms_backoff); absent, has_backoff is false. */
START_TEST(test_backoff_key) {
  const struct {
    const char *lines;
    bool has;
    ms_backoff b;
  } cases[] = {
      {"", false, {MS_BACKOFF_NONE, 0, 0, 0}},
      {"    backoff: {kind: none}\n", true, {MS_BACKOFF_NONE, 0, 0, 0}},
      {"    backoff: {kind: constant, base: 250ms}\n",
       true,
       {MS_BACKOFF_CONSTANT, 0.25, 0, 0}},
      {"    backoff:\n      kind: exponential\n      base: 10ms\n"
       "      cap: 50ms\n      multiplier: 2\n",
       true,
       {MS_BACKOFF_EXPONENTIAL, 0.01, 0.05, 2}},
      {"    backoff: {kind: Full-Jitter, base: 0.1, cap: 20s}\n",
       true,
       {MS_BACKOFF_FULL_JITTER, 0.1, 20, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512], err[512];
    snprintf(text, sizeof text, SVC ERL "%s" IN, cases[i].lines);
    ms_service_file f;
    ck_assert_msg(ms_service_file_parse(text, strlen(text), "b.yaml", &f, err,
                                        sizeof err) == 0,
                  "%s", err);
    const ms_service_spec *sp = &f.services[0];
    ck_assert_int_eq(sp->has_backoff, cases[i].has);
    if (cases[i].has) {
      ck_assert_int_eq(sp->backoff.kind, cases[i].b.kind);
      ck_assert_double_eq(sp->backoff.base, cases[i].b.base);
      ck_assert_double_eq(sp->backoff.cap, cases[i].b.cap);
      ck_assert_double_eq(sp->backoff.multiplier, cases[i].b.multiplier);
    }
    ms_service_file_free(&f);
  }
}
END_TEST

/* A value out of range is reported at its node with the model's own
 * message (ms_param_check) and the key. */
START_TEST(test_range_from_model) {
  const struct {
    const char *line; /* the service's last line, line 8 */
    int column;       /* of the value */
    ms_param id;
    double value;
  } cases[] = {
      {"    tiers: 0\n", 12, MS_PARAM_TIERS, 0},
      {"    tiers: 11\n", 12, MS_PARAM_TIERS, 11},
      {"    retries: 10001\n", 14, MS_PARAM_RETRIES, 10001},
      {"    base_failure: 1\n", 19, MS_PARAM_BASE_FAILURE, 1},
      {"    retry_budget: 1.5\n", 19, MS_PARAM_RETRY_BUDGET, 1.5},
      {"    token_ratio: 0\n", 18, MS_PARAM_TOKEN_RATIO, 0},
      {"    queue_limit: 10000001\n", 18, MS_PARAM_QUEUE_LIMIT, 10000001},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512], err[512], want[512];
    /* retries given twice would be a different error: drop ERL's */
    snprintf(text, sizeof text,
             "services:\n  - name: a\n    model: erlang\n    servers: 3\n"
             "    service_time: 1s\n    timeout: 1s\n%s%s" IN,
             strstr(cases[i].line, "retries") ? "    tiers: 1\n"
                                              : "    retries: 1\n",
             cases[i].line);
    ms_error e;
    ck_assert_int_eq(ms_param_check(cases[i].id, cases[i].value, &e),
                     MS_EINVAL);
    snprintf(want, sizeof want, "svc.yaml:8:%d: %s (key '%s')", cases[i].column,
             e.msg, ms_param_get(cases[i].id)->key);
    ms_service_file f;
    ck_assert_int_eq(ms_service_file_parse(text, strlen(text), "svc.yaml", &f,
                                           err, sizeof err),
                     -1);
    ck_assert_str_eq(err, want);
  }
  /* the erlang and capacity parameters, at their own lines */
  const struct {
    const char *text, *want;
  } whole[] = {
      {SVC "    model: erlang\n    servers: 1e20\n",
       "svc.yaml:4:14: servers = 1e+20 is outside [1, 10000000] (key "
       "'servers')"},
      {SVC "    model: erlang\n    servers: 3\n    service_time: 1e305\n",
       "svc.yaml:5:19: service_time = 1e+305 s must be > 0, at least 1e-290 "
       "and at most 1e+300 (key 'service_time')"},
      {SVC "    model: erlang\n    servers: 3\n    service_rate: 0/s\n",
       "svc.yaml:5:19: service_rate = 0/s must be > 0, at least 1e-300 and "
       "at most 1e+290 "
       "(key 'service_rate')"},
      {SVC "    model: erlang\n    servers: 3\n    service_rate: 5\n"
           "    timeout: 1e301\n",
       "svc.yaml:6:14: timeout = 1e+301 s must be >= 0 and at most 1e+300 "
       "(key 'timeout')"},
      {SVC "    model: capacity\n    capacity: 2e300\n",
       "svc.yaml:4:15: capacity = 2e+300 req/s must be > 0 and at most "
       "1e+300 (key 'capacity')"},
      /* a constant pool is a servers count */
      {SVC ERL "    inputs:\n      offered_rate: 5\n      pool_size: 2.5\n",
       "svc.yaml:10:18: pool_size = 2.5: servers = 2.5 is not a whole number "
       "(key 'inputs.pool_size')"},
      /* the service layer's own settings, by their named limits */
      {SVC ERL "    clear_after: 1001\n" IN,
       "svc.yaml:8:18: clear_after = 1001 is outside [1, 1000] (key "
       "'clear_after')"},
      {SVC ERL "    headroom_warning: 0\n" IN,
       "svc.yaml:8:23: headroom_warning = 0 is outside (0, 1) (key "
       "'headroom_warning')"},
  };
  for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
    char err[512];
    ms_service_file f;
    ck_assert_int_eq(ms_service_file_parse(whole[i].text, strlen(whole[i].text),
                                           "svc.yaml", &f, err, sizeof err),
                     -1);
    ck_assert_str_eq(err, whole[i].want);
  }
}
END_TEST

/* The named policies and a tiers list as users write them. */
START_TEST(test_policies_and_tiers) {
  const char *text =
      "services:\n"
      "  - {name: g, model: erlang, servers: 5, service_time: 10ms, "
      "timeout: 50ms, retries: 4,\n"
      "     grpc_throttling: {max_tokens: 10, token_ratio: 0.1}, "
      "inputs: {offered_rate: 1}}\n"
      "  - {name: e, model: erlang, servers: 5, service_time: 10ms, "
      "timeout: 50ms, retries: 2,\n"
      "     envoy_retry_budget: {min_retry_concurrency: 7}, "
      "inputs: {offered_rate: 1}}\n"
      "  - {name: f, model: capacity, capacity: 9, retries: 3,\n"
      "     retry_budget: {percent: 50%}, inputs: {offered_rate: 1}}\n"
      "  - {name: a, model: capacity, capacity: 9, retries: 2,\n"
      "     aws_retry_quota: {refund: 2}, inputs: {offered_rate: 1}}\n"
      "  - {name: t, model: erlang, servers: 5, service_time: 10ms, "
      "timeout: 50ms,\n"
      "     tiers: [{retries: 1, timeout: 2s}, {retries: 2, timeout: 0.1s},"
      " {retries: 3}],\n"
      "     inputs: {offered_rate: 1}}\n"
      "  - {name: u, model: capacity, capacity: 9, retries: 3, tiers: 3,"
      " layering: nested,\n"
      "     inputs: {offered_rate: 1}}\n"
      "  - {name: l, model: capacity, capacity: 9, retries: 3,\n"
      "     aws_retry_quota: {timeout_cost: 12, costs: legacy,\n"
      "                       throttling_share: 30%},\n"
      "     inputs: {offered_rate: 1}}\n";
  ms_service_file f;
  char err[512] = "";
  ck_assert_msg(ms_service_file_parse(text, strlen(text), "p.yaml", &f, err,
                                      sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(f.n_services, 7);
  const ms_retry_policy *g = &f.services[0].params.policy;
  ck_assert(g->kind == MS_POLICY_GRPC && g->grpc_max_tokens == 10 &&
            g->grpc_token_ratio == 0.1 && g->retries == 4);
  const ms_retry_policy *e = &f.services[1].params.policy;
  ck_assert(e->kind == MS_POLICY_ENVOY && e->envoy_budget == 0.2 &&
            e->envoy_min_concurrency == 7);
  const ms_retry_policy *fi = &f.services[2].params.policy;
  ck_assert(fi->kind == MS_POLICY_FINAGLE && fi->finagle_percent == 0.5 &&
            fi->finagle_min_per_second == 10 && fi->finagle_ttl == 10 &&
            !fi->has_budget);
  const ms_retry_policy *a = &f.services[3].params.policy;
  /* the SDK's current costs (14, 14, 5); the older ones under
   * `costs: legacy` (5, 10, 5), a cost given wherever it stands in the map
   * over its set's */
  ck_assert(a->kind == MS_POLICY_AWS && a->aws_capacity == 500 &&
            a->aws_retry_cost == 14 && a->aws_timeout_cost == 14 &&
            a->aws_throttling_cost == 5 && a->aws_throttling_share == 0 &&
            a->aws_refund == 2);
  const ms_retry_policy *l = &f.services[6].params.policy;
  ck_assert(l->kind == MS_POLICY_AWS && l->aws_capacity == 500 &&
            l->aws_retry_cost == 5 && l->aws_timeout_cost == 12 &&
            l->aws_throttling_cost == 5 && l->aws_throttling_share == 0.3 &&
            l->aws_refund == 1);
  /* edge first: 1 retry (2 s) over 2 retries (0.1 s) over 3 retries at the
   * dependency (the model's 50 ms): 0.1 s < 4 x 50 ms, independent; 2 s >=
   * 3 x 0.1 s, nested */
  const ms_retry_policy *t = &f.services[4].params.policy;
  ck_assert_int_eq(t->tiers, 3);
  ck_assert_int_eq(t->retries, 3);
  ck_assert(t->has_tier_retries && t->tier_retries[1] == 2 &&
            t->tier_retries[2] == 1);
  ck_assert_uint_eq(t->nested, 4u);
  const ms_retry_policy *u = &f.services[5].params.policy;
  ck_assert(u->tiers == 3 && u->nested == 6u && !u->has_tier_retries);
  ms_service_file_free(&f);
}
END_TEST

START_TEST(test_missing_file) {
  ms_service_file f;
  char err[512];
  ck_assert_int_eq(
      ms_service_file_load("/nonexistent/x.yaml", &f, err, sizeof err), -1);
  ck_assert_str_eq(err, "/nonexistent/x.yaml: cannot open: No such file or "
                        "directory");
  /* a directory, a device and a FIFO are refused at once (a FIFO must not
   * hang collectd's start) */
  ck_assert_int_eq(ms_service_file_load("/tmp", &f, err, sizeof err), -1);
  ck_assert_str_eq(err, "/tmp: not a regular file");
  ck_assert_int_eq(ms_service_file_load("/dev/zero", &f, err, sizeof err), -1);
  char fifo[] = "/tmp/ms-check-fifo-XXXXXX";
  int fd = mkstemp(fifo);
  ck_assert_int_ge(fd, 0);
  close(fd);
  unlink(fifo);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  ck_assert_int_eq(ms_service_file_load(fifo, &f, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
  unlink(fifo);
}
END_TEST

START_TEST(test_units) {
  double v;
  char e[128];
  ck_assert_int_eq(ms_parse_duration("100ms", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 0.1);
  ck_assert_int_eq(ms_parse_duration("250us", &v, e, sizeof e), 0);
  ck_assert_double_eq_tol(v, 250e-6, 1e-20);
  /* exactly the double of the decimal, whatever the unit: a division by
   * 1e3 or 1e6 is correctly rounded (100000 x 1e-6 is not 0.1) */
  static const struct {
    const char *text;
    double want;
  } exact[] = {{"100000us", 0.1}, {"250us", 250e-6}, {"1ms", 0.001},
               {"300ms", 0.3},    {"700us", 700e-6}, {"1e-3ms", 1e-6}};
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
    ck_assert_int_eq(ms_parse_duration(exact[i].text, &v, e, sizeof e), 0);
    ck_assert_msg(v == exact[i].want, "%s: %.17g", exact[i].text, v);
  }
  ck_assert_int_eq(ms_parse_duration("1.5", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 1.5);
  ck_assert_int_eq(ms_parse_duration("2 s", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 2.0);
  /* minutes and hours; "m" is minutes, "ms" milliseconds, "min" unknown */
  ck_assert_int_eq(ms_parse_duration("2m", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 120.0);
  ck_assert_int_eq(ms_parse_duration("1.5h", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 5400.0);
  ck_assert_int_eq(ms_parse_duration("8 h", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 28800.0);
  ck_assert_int_eq(ms_parse_duration("0.5m", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 30.0);
  ck_assert_int_eq(ms_parse_duration("2ms", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 0.002);
  ck_assert_int_eq(ms_parse_duration("2min", &v, e, sizeof e), -1);
  ck_assert_msg(strstr(e, "(use us, ms, s, m or h)") != NULL, "%s", e);
  ck_assert_int_eq(ms_parse_duration("2hr", &v, e, sizeof e), -1);
  ck_assert_int_eq(ms_parse_duration("2d", &v, e, sizeof e), -1);
  ck_assert_int_eq(ms_parse_duration("1e306h", &v, e, sizeof e), -1);
  ck_assert_msg(strstr(e, "too long") != NULL, "%s", e);
  /* shares: a number, or a percentage of one */
  ck_assert_int_eq(ms_parse_share("10%", &v), 0);
  ck_assert_double_eq(v, 0.1);
  ck_assert_int_eq(ms_parse_share("0.5 %", &v), 0);
  ck_assert_double_eq(v, 0.005);
  ck_assert_int_eq(ms_parse_share("0.25", &v), 0);
  ck_assert_double_eq(v, 0.25);
  ck_assert_int_eq(ms_parse_share("10%%", &v), -1);
  ck_assert_int_eq(ms_parse_share("%", &v), -1);
  ck_assert_int_eq(ms_parse_share("10 percent", &v), -1);
  ck_assert_int_eq(ms_parse_duration("nan", &v, e, sizeof e), -1);
  ck_assert_int_eq(ms_parse_duration("", &v, e, sizeof e), -1);
  ck_assert_int_eq(ms_parse_rate("10/s", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 10.0);
  ck_assert_int_eq(ms_parse_rate("1e3", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 1000.0);
  ck_assert_int_eq(ms_parse_rate("10/min", &v, e, sizeof e), -1);
  ck_assert_int_eq(ms_parse_rate("-1", &v, e, sizeof e), -1);
  ck_assert_int_eq(ms_parse_rate("inf", &v, e, sizeof e), -1);
  /* a parameter's syntax by its row, one for files and the command line */
  ck_assert_int_eq(ms_parse_param(MS_PARAM_SERVERS, "1e3", &v, e, sizeof e),
                   MS_PARSE_OK);
  ck_assert_double_eq(v, 1000.0);
  ck_assert_int_eq(ms_parse_param(MS_PARAM_SERVERS, "10.0", &v, e, sizeof e),
                   MS_PARSE_OK);
  ck_assert_int_eq(ms_parse_param(MS_PARAM_SERVERS, "2.5", &v, e, sizeof e),
                   MS_PARSE_NOT_WHOLE);
  ck_assert_int_eq(ms_parse_param(MS_PARAM_TIERS, "0x2", &v, e, sizeof e),
                   MS_PARSE_NOT_WHOLE);
  ck_assert_int_eq(ms_parse_param(MS_PARAM_TIMEOUT, "250ms", &v, e, sizeof e),
                   MS_PARSE_OK);
  ck_assert_double_eq(v, 0.25);
  ck_assert_int_eq(ms_parse_param(MS_PARAM_TIMEOUT, "5min", &v, e, sizeof e),
                   MS_PARSE_NOT_UNIT);
  ck_assert_msg(strstr(e, "unknown time unit 'min'") != NULL, "%s", e);
  ck_assert_int_eq(ms_parse_param(MS_PARAM_CAPACITY, "7/s", &v, e, sizeof e),
                   MS_PARSE_OK);
  ck_assert_double_eq(v, 7.0);
  ck_assert_int_eq(
      ms_parse_param(MS_PARAM_BASE_FAILURE, "lots", &v, e, sizeof e),
      MS_PARSE_NOT_NUMBER);
  ck_assert_int_eq(ms_parse_param(MS_PARAM_TIMEOUT, "2m", &v, e, sizeof e),
                   MS_PARSE_OK);
  ck_assert_double_eq(v, 120.0);
  /* the shares take a percentage, and only they */
  ck_assert_int_eq(ms_parse_param(MS_PARAM_BASE_FAILURE, "1%", &v, e, sizeof e),
                   MS_PARSE_OK);
  ck_assert_double_eq(v, 0.01);
  ck_assert_int_eq(
      ms_parse_param(MS_PARAM_RETRY_BUDGET, "10%", &v, e, sizeof e),
      MS_PARSE_OK);
  ck_assert_double_eq(v, 0.1);
  ck_assert_int_eq(
      ms_parse_param(MS_PARAM_TOKEN_RATIO, "100 %", &v, e, sizeof e),
      MS_PARSE_OK);
  ck_assert_double_eq(v, 1.0);
  ck_assert_int_eq(
      ms_parse_param(MS_PARAM_OBSERVED_FAILURE, "2.5%", &v, e, sizeof e),
      MS_PARSE_OK);
  ck_assert_double_eq(v, 0.025);
  ck_assert(ms_param_is_share(MS_PARAM_BASE_FAILURE));
  ck_assert(!ms_param_is_share(MS_PARAM_RETRIES));
  ck_assert(!ms_param_is_share(MS_PARAM_QUEUE_LENGTH));
  ck_assert(!ms_param_is_share(MS_PARAM_CAPACITY));
  static const ms_param counts[] = {MS_PARAM_SERVERS, MS_PARAM_RETRIES,
                                    MS_PARAM_TIERS, MS_PARAM_QUEUE_LENGTH};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    ck_assert_int_eq(ms_parse_param(counts[i], "10%", &v, e, sizeof e),
                     MS_PARSE_NOT_UNIT);
    ck_assert_msg(strstr(e, "'10%' is a percentage, but ") != NULL, "%s", e);
  }
  ck_assert_int_eq(ms_parse_param(MS_PARAM_RETRIES, "3%", &v, e, sizeof e),
                   MS_PARSE_NOT_UNIT);
  ck_assert_str_eq(e, "'3%' is a percentage, but retries is a count, not a "
                      "share");
  ck_assert_int_eq(ms_parse_param(MS_PARAM_CAPACITY, "10%", &v, e, sizeof e),
                   MS_PARSE_NOT_UNIT);
}
END_TEST

/* The one rule for numbers near 0 (service/units.h): every number that
 * is not 0 but below DBL_MIN in magnitude is refused, whatever its
 * spelling, by every reader.  The reference is <float.h>'s DBL_MIN and the
 * exact value of each spelling (C's hexadecimal literals); 0 and DBL_MIN
 * itself pass. */
START_TEST(test_tiny_numbers_parsers) {
  static const struct {
    const char *text;
    double value; /* what the text means exactly, or rounds to */
  } tiny[] = {
      {"4.9e-324", 0x1p-1074},
      {"0x1p-1074", 0x1p-1074},
      {"0X1P-1074", 0x1p-1074},
      {"-4.9e-324", -0x1p-1074},
      {"1e-310", 1e-310},
      {"2.2250738585072009e-308", 0x0.fffffffffffffp-1022},
      {"0x1.ffffffffffffep-1023", 0x1.ffffffffffffep-1023},
      {"1e-400", 0.0}, /* not 0, rounds to 0 */
      {"0x1p-1100", 0.0},
  };
  char e[320], ref[320];
  double v;
  for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
    const char *t = tiny[i].text;
    ck_assert_msg(tiny[i].value == 0.0 || fabs(tiny[i].value) < DBL_MIN, "%s",
                  t);
    ck_assert_int_eq(ms_parse_number(t, &v), MS_NUMBER_TINY);
    ck_assert_int_eq(ms_parse_share(t, &v), MS_NUMBER_TINY);
    ms_number_tiny_message(ref, sizeof ref, t);
    ck_assert_int_eq(ms_parse_rate(t, &v, e, sizeof e), -1);
    ck_assert_str_eq(e, ref);
    ck_assert_int_eq(ms_parse_duration(t, &v, e, sizeof e), -1);
    ck_assert_str_eq(e, ref);
    ck_assert_int_eq(ms_parse_param(MS_PARAM_SERVICE_RATE, t, &v, e, sizeof e),
                     MS_PARSE_NOT_UNIT);
    ck_assert_str_eq(e, ref);
    ck_assert_int_eq(ms_parse_param(MS_PARAM_BASE_FAILURE, t, &v, e, sizeof e),
                     MS_PARSE_NOT_UNIT);
    ck_assert_str_eq(e, ref);
    if (strpbrk(t, "xX") == NULL) { /* whole numbers are decimal only */
      ck_assert_int_eq(ms_parse_whole(t, &v), MS_NUMBER_TINY);
      ck_assert_int_eq(ms_parse_param(MS_PARAM_SERVERS, t, &v, e, sizeof e),
                       MS_PARSE_NOT_UNIT);
      ck_assert_str_eq(e, ref);
    }
  }
  ck_assert_str_eq(ref, "'0x1p-1100' is too close to 0: below "
                        "2.2250738585072014e-308, the smallest double with "
                        "full precision; write 0 or a larger number");
  /* with a unit: the literal or the value in seconds, or the share */
  ck_assert_int_eq(ms_parse_duration("4.9e-324ms", &v, e, sizeof e), -1);
  ck_assert_msg(strstr(e, "too close to 0") != NULL, "%s", e);
  ck_assert_int_eq(ms_parse_duration("0x1p-1074s", &v, e, sizeof e), -1);
  ck_assert_msg(strstr(e, "too close to 0") != NULL, "%s", e);
  ck_assert_int_eq(ms_parse_rate("0x1p-1074/s", &v, e, sizeof e), -1);
  ck_assert_msg(strstr(e, "too close to 0") != NULL, "%s", e);
  /* 1e-306 us is 1e-312 s: normal as written, subnormal in seconds */
  ck_assert(1e-306 / 1e6 < DBL_MIN);
  ck_assert_int_eq(ms_parse_duration("1e-306us", &v, e, sizeof e), -1);
  ck_assert_str_eq(e, "'1e-306us' is 1e-312 s, too close to 0: below "
                      "2.2250738585072014e-308, the smallest double with "
                      "full precision; write 0 or a larger number");
  ck_assert_int_eq(ms_parse_duration("1e-300us", &v, e, sizeof e), 0);
  ck_assert_double_eq(v, 1e-300 / 1e6);
  ck_assert_int_eq(ms_parse_share("1e-307%", &v), MS_NUMBER_TINY);
  ck_assert_int_eq(ms_parse_share("1e-305%", &v), 0);
  ck_assert_double_eq(v, 1e-305 / 100.0);
  /* the edges: 0 in any spelling, and DBL_MIN itself */
  static const char *const zero[] = {"0", "-0", "0x0p0", "0e-999", "0.0"};
  for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
    ck_assert_int_eq(ms_parse_number(zero[i], &v), 0);
    ck_assert(v == 0.0);
    ck_assert_int_eq(ms_parse_duration(zero[i], &v, e, sizeof e), 0);
    ck_assert(v == 0.0);
  }
  ck_assert_int_eq(ms_parse_number("2.2250738585072014e-308", &v), 0);
  ck_assert(v == DBL_MIN);
  ck_assert_int_eq(ms_parse_number("0x1p-1022", &v), 0);
  ck_assert(v == DBL_MIN);
  ck_assert_int_eq(ms_parse_rate("0x1p-1022/s", &v, e, sizeof e), 0);
  ck_assert(v == DBL_MIN);
  ck_assert_int_eq(ms_parse_number("-0x1p-1022", &v), 0);
  ck_assert(v == -DBL_MIN);
}
END_TEST

/* The same rule in the files, at each key of each reader (a parameter
 * read as a rate, a duration, a count or a share; a setting of the
 * service layer; an input's constant and scale; the backoff), in every
 * spelling, with the value's line and column. */
START_TEST(test_tiny_numbers_in_files) {
  static const struct {
    const char *key, *after; /* "    key: " value after "\n", at line 8 */
    int column;              /* of the value */
  } keys[] = {
      {"    service_rate: ", "", 19},
      {"    timeout_granularity: ", "", 26},
      {"    base_failure: ", "", 19},
      {"    token_ratio: ", "", 18},
      {"    retry_budget: ", "", 19},
      {"    headroom_warning: ", "", 23},
      {"    safety_margin: ", "", 20},
      {"    latency_objective: ", "", 24},
      {"    calibration_time: ", "", 23},
      {"    calibration_threshold: ", "", 28},
      {"    service_time_cv: ", "", 22},
      {"    backoff: {kind: constant, base: ", "}", 37},
      {"    backoff: {kind: exponential, base: 1s, cap: 2s, multiplier: ", "}",
       65},
  };
  static const char *const spellings[] = {"4.9e-324", "0x1p-1074", "1e-400",
                                          "-4.9e-324", "2.2e-308"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
      char line[160], text[1024], err[512], where[64];
      snprintf(line, sizeof line, "%s%s%s\n", keys[k].key, spellings[i],
               keys[k].after);
      snprintf(text, sizeof text,
               "services:\n"
               "  - name: a\n"
               "    model: erlang\n"
               "    servers: 30\n"
               "    timeout: 1s\n"
               "    retries: 1\n"
               "%s"
               "%s"
               "    inputs:\n"
               "      offered_rate: 100\n",
               strncmp(line, "    service_rate", 16) == 0
                   ? ""
                   : "    service_time: 100ms\n",
               line);
      ms_service_file f;
      int r = ms_service_file_parse(text, strlen(text), "x.yaml", &f, err,
                                    sizeof err);
      int row = strncmp(line, "    service_rate", 16) == 0 ? 7 : 8;
      snprintf(where, sizeof where, "x.yaml:%d:%d: '%s' is too close to 0", row,
               keys[k].column, spellings[i]);
      ck_assert_msg(r == -1 && strncmp(err, where, strlen(where)) == 0,
                    "%s: %s", line, err);
    }
  /* a constant input, and an input's scale; 0x1p-1022 is kept */
  static const char *const inputs[][2] = {
      {"      offered_rate: ", ""},
      {"      offered_rate: {source: h/p/t, scale: ", "}"}};
  static const int columns[] = {21, 44};
  for (size_t k = 0; k < 2; k++)
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
      char line[160], text[512], err[512], where[64];
      snprintf(line, sizeof line, "%s%s%s\n", inputs[k][0], spellings[i],
               inputs[k][1]);
      snprintf(text, sizeof text,
               "services:\n"
               "  - name: a\n"
               "    model: capacity\n"
               "    capacity: 100\n"
               "    retries: 0\n"
               "    inputs:\n"
               "%s",
               line);
      ms_service_file f;
      int r = ms_service_file_parse(text, strlen(text), "x.yaml", &f, err,
                                    sizeof err);
      snprintf(where, sizeof where, "x.yaml:7:%d: '%s' is too close to 0",
               columns[k], spellings[i]);
      ck_assert_msg(r == -1 && strncmp(err, where, strlen(where)) == 0,
                    "%s: %s", line, err);
    }
  static const char edge[] = "services:\n"
                             "  - name: a\n"
                             "    model: capacity\n"
                             "    capacity: 100\n"
                             "    retries: 0\n"
                             "    inputs:\n"
                             "      offered_rate: 0x1p-1022\n";
  ms_service_file f;
  char err[512];
  ck_assert_msg(ms_service_file_parse(edge, strlen(edge), "x.yaml", &f, err,
                                      sizeof err) == 0,
                "%s", err);
  ck_assert(f.services[0].inputs[MS_INPUT_OFFERED].number == DBL_MIN);
  ms_service_file_free(&f);
}
END_TEST

/* Shares as percentages and durations in minutes or hours, in a file:
 * the same values as written in plain numbers and seconds. */
START_TEST(test_percent_and_minutes) {
  static const char text[] = "services:\n"
                             "  - name: a\n"
                             "    model: erlang\n"
                             "    servers: 30\n"
                             "    service_time: 100ms\n"
                             "    timeout: 2m\n"
                             "    retries: 10000\n"
                             "    base_failure: 1%\n"
                             "    retry_budget: 10 %\n"
                             "    token_ratio: 50%\n"
                             "    headroom_warning: 10%\n"
                             "    calibrate: base_failure\n"
                             "    calibration_time: 0.5h\n"
                             "    calibration_threshold: 2%\n"
                             "    inputs:\n"
                             "      arrival_rate: h/p/arrivals\n"
                             "      error_rate: h/p/errors\n";
  ms_service_file f;
  char err[512];
  ck_assert_msg(ms_service_file_parse(text, strlen(text), "x.yaml", &f, err,
                                      sizeof err) == 0,
                "%s", err);
  const ms_service_spec *s = ms_service_file_find(&f, "a");
  ck_assert_double_eq(s->params.model.timeout, 120.0);
  ck_assert_int_eq(s->params.policy.retries, MS_MAX_RETRIES);
  ck_assert_double_eq(s->params.model.base_failure, 0.01);
  ck_assert_double_eq(s->params.policy.retry_budget, 0.1);
  ck_assert_double_eq(s->params.policy.token_ratio, 0.5);
  ck_assert_double_eq(s->headroom_warning, 0.1);
  ck_assert_double_eq(s->calibration_time, 1800.0);
  ck_assert_double_eq(s->calibration_threshold, 0.02);
  ms_service_file_free(&f);
}
END_TEST

/* Constant rate inputs may be written per second, like every rate. */
START_TEST(test_constant_rate_inputs) {
  static const char text[] = SVC ERL "    inputs:\n      offered_rate: 5/s\n"
                                     "      retry_rate: 0.5\n";
  ms_service_file f;
  char err[512] = "";
  ck_assert_msg(ms_service_file_parse(text, strlen(text), "svc.yaml", &f, err,
                                      sizeof err) == 0,
                "%s", err);
  const ms_source *in = f.services[0].inputs;
  ck_assert_int_eq(in[MS_INPUT_OFFERED].kind, MS_SOURCE_NUMBER);
  ck_assert_double_eq(in[MS_INPUT_OFFERED].number, 5.0);
  ck_assert_double_eq(in[MS_INPUT_RETRY].number, 0.5);
  ms_service_file_free(&f);
  /* a pool size is a count, not a rate */
  static const char pool[] = SVC ERL "    inputs:\n      offered_rate: 5\n"
                                     "      pool_size: 3/s\n";
  ck_assert_int_eq(ms_service_file_parse(pool, strlen(pool), "svc.yaml", &f,
                                         err, sizeof err),
                   -1);
  ck_assert_msg(strstr(err, "svc.yaml:10:18: ") == err, "%s", err);
}
END_TEST

/* An input written as a mapping {source, missing}: the source read as
 * when written alone, missing skip (the default) or zero. */
START_TEST(test_missing_inputs) {
  static const char text[] =
      SVC ERL "    inputs:\n"
              "      arrival_rate: \"h/statsd/derive-att\"\n"
              "      retry_rate: {source: \"h/statsd/derive-retries\", "
              "missing: zero}\n"
              "      error_rate:\n"
              "        source: \"*/statsd/derive-errors\"\n"
              "        missing: zero\n"
              "      offered_rate: {source: 5/s}\n"
              "      pool_size:\n"
              "        missing: skip\n"
              "        source: h/statsd/gauge-workers\n";
  ms_service_file f;
  char err[512] = "";
  ck_assert_msg(ms_service_file_parse(text, strlen(text), "svc.yaml", &f, err,
                                      sizeof err) == 0,
                "%s", err);
  const ms_source *in = f.services[0].inputs;
  ck_assert_int_eq(in[MS_INPUT_ARRIVAL].kind, MS_SOURCE_IDENTIFIER);
  ck_assert_int_eq(in[MS_INPUT_ARRIVAL].missing, MS_MISSING_SKIP);
  ck_assert_int_eq(in[MS_INPUT_RETRY].kind, MS_SOURCE_IDENTIFIER);
  ck_assert_str_eq(in[MS_INPUT_RETRY].pattern, "h/statsd/derive-retries");
  ck_assert_int_eq(in[MS_INPUT_RETRY].missing, MS_MISSING_ZERO);
  /* where the source was written, for messages about it */
  ck_assert_int_eq(in[MS_INPUT_RETRY].line, 10);
  ck_assert_int_eq(in[MS_INPUT_RETRY].column, 28);
  ck_assert_int_eq(in[MS_INPUT_ERROR].kind, MS_SOURCE_GLOB);
  ck_assert_str_eq(in[MS_INPUT_ERROR].pattern, "*/statsd/derive-errors");
  ck_assert_int_eq(in[MS_INPUT_ERROR].missing, MS_MISSING_ZERO);
  ck_assert_int_eq(in[MS_INPUT_ERROR].line, 12);
  ck_assert_int_eq(in[MS_INPUT_OFFERED].kind, MS_SOURCE_NUMBER);
  ck_assert_double_eq(in[MS_INPUT_OFFERED].number, 5.0);
  ck_assert_int_eq(in[MS_INPUT_OFFERED].missing, MS_MISSING_SKIP);
  ck_assert_int_eq(in[MS_INPUT_POOL].kind, MS_SOURCE_IDENTIFIER);
  ck_assert_int_eq(in[MS_INPUT_POOL].missing, MS_MISSING_SKIP);
  ms_service_file_free(&f);
}
END_TEST

/* ---- the mapping walker (service/yamldoc.h) ---------------------------- */

static const char *const walk_keys[] = {"alpha", "beta", "gamma"};
static const ms_yaml_keys walk_table = {"a thing", "key", walk_keys, 3};

/* Walk the root of text against t; val_line[i] and key_line[i] get the
 * line of the value and key of t->keys[i] (0: absent), *err the message.
 * key_line may be NULL.  Returns the walker's 0 or -1. */
static int walk(const char *text, const ms_yaml_keys *t, int *val_line,
                int *key_line, char *err, size_t errlen) {
  yaml_document_t doc;
  err[0] = '\0';
  ck_assert_int_eq(
      ms_yaml_load(text, strlen(text), "w.yaml", NULL, &doc, err, errlen), 0);
  ms_yaml_loader ld = {
      .path = "w.yaml", .doc = &doc, .err = err, .errlen = errlen};
  const yaml_node_t *val[128], *key[128];
  ck_assert_uint_le(t->n_keys, 128);
  for (size_t i = 0; i < t->n_keys; i++) /* the walker must clear them */
    val[i] = key[i] = (const yaml_node_t *)&doc;
  int r = ms_yaml_walk_mapping(&ld, yaml_document_get_root_node(&doc), t, val,
                               key_line ? key : NULL);
  for (size_t i = 0; i < t->n_keys; i++) {
    val_line[i] = val[i] ? (int)val[i]->start_mark.line + 1 : 0;
    if (key_line)
      key_line[i] = key[i] ? (int)key[i]->start_mark.line + 1 : 0;
  }
  yaml_document_delete(&doc);
  return r;
}

START_TEST(test_walk_every_key) {
  int val[3], key[3];
  char err[256];
  /* every key of the table, in another order, with any kind of value */
  ck_assert_msg(walk("gamma: [1, 2]\nalpha: 1\nbeta:\n  x: y\n", &walk_table,
                     val, key, err, sizeof err) == 0,
                "%s", err);
  ck_assert_int_eq(val[0], 2); /* alpha's value, on line 2 */
  ck_assert_int_eq(val[1], 4); /* beta's, a mapping starting on line 4 */
  ck_assert_int_eq(val[2], 1);
  ck_assert_int_eq(key[0], 2);
  ck_assert_int_eq(key[1], 3);
  ck_assert_int_eq(key[2], 1);
  /* absent keys are NULL; key_nodes is optional */
  ck_assert_int_eq(walk("beta: 2\n", &walk_table, val, NULL, err, sizeof err),
                   0);
  ck_assert(val[0] == 0 && val[1] == 1 && val[2] == 0);
  ck_assert_int_eq(walk("{}\n", &walk_table, val, key, err, sizeof err), 0);
  ck_assert(val[0] == 0 && val[1] == 0 && val[2] == 0);
  ck_assert(key[0] == 0 && key[1] == 0 && key[2] == 0);
}
END_TEST

START_TEST(test_walk_errors) {
  int val[3], key[3];
  char err[256];
  const struct {
    const char *text, *says;
  } cases[] = {
      {"alpha: 1\ndelta: 2\n",
       "w.yaml:2:1: unknown key 'delta' in a thing (known: alpha, beta, "
       "gamma)"},
      {"alpha: 1\nbeta: 2\nalpha: 3\n",
       "w.yaml:3:1: key 'alpha' given twice in a thing"},
      {"- alpha\n", "w.yaml:1:1: a thing must be a mapping, not a list"},
      {"alpha\n", "w.yaml:1:1: a thing must be a mapping, not a scalar"},
      {"alpha: 1\n? [beta]\n: 2\n",
       "w.yaml:2:3: a key in a thing must be a name, not a list"},
      {"\"\": 1\n", "w.yaml:1:1: unknown key '' in a thing"},
      {"alpha: 1\ngamam: 2\n",
       "w.yaml:2:1: unknown key 'gamam' in a thing: did you mean 'gamma'? "
       "(known: alpha, beta, gamma)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ck_assert_int_eq(
        walk(cases[i].text, &walk_table, val, key, err, sizeof err), -1);
    ck_assert_msg(strncmp(err, cases[i].says, strlen(cases[i].says)) == 0,
                  "case %zu: '%s', want '%s'", i, err, cases[i].says);
  }
  /* the noun names the entries: inputs are "input"s */
  const ms_yaml_keys inputs = {"inputs", "input", walk_keys, 3};
  ck_assert_int_eq(
      walk("beta: 1\nbeta: 2\n", &inputs, val, NULL, err, sizeof err), -1);
  ck_assert_str_eq(err, "w.yaml:2:1: input 'beta' given twice in inputs");
  /* a key table too long for the message is cut, not overrun */
  static char names[100][40]; /* room for any int after the prefix */
  const char *many[100];
  for (int i = 0; i < 100; i++) {
    snprintf(names[i], sizeof names[i], "a_rather_long_key_name_%d", i);
    many[i] = names[i];
  }
  const ms_yaml_keys big = {"a big thing", "key", many, 100};
  int bv[100];
  char long_err[1024];
  ck_assert_int_eq(walk("zzz: 1\n", &big, bv, NULL, long_err, sizeof long_err),
                   -1);
  ck_assert_ptr_nonnull(strstr(long_err, "(known: a_rather_long_key_name_0, "));
  ck_assert_ptr_nonnull(strstr(long_err, "...)"));
}
END_TEST

/* The optimal string alignment distance by its recursive definition
 * (Damerau 1964, Levenshtein 1966): the reference ms_edit_distance's
 * dynamic programme is held to, on short names only. */
static size_t osa_ref(const char *a, size_t n, const char *b, size_t m) {
  if (n == 0)
    return m;
  if (m == 0)
    return n;
  size_t best = osa_ref(a, n - 1, b, m) + 1;
  size_t d = osa_ref(a, n, b, m - 1) + 1;
  best = d < best ? d : best;
  d = osa_ref(a, n - 1, b, m - 1) + (a[n - 1] != b[m - 1]);
  best = d < best ? d : best;
  if (n > 1 && m > 1 && a[n - 1] == b[m - 2] && a[n - 2] == b[m - 1]) {
    d = osa_ref(a, n - 2, b, m - 2) + 1;
    best = d < best ? d : best;
  }
  return best;
}

START_TEST(test_edit_distance) {
  /* textbook values: kitten/sitting (Levenshtein), a swap is one edit,
   * and "ca"/"abc" is 3 for this distance (2 for the unrestricted
   * Damerau distance: no substring is edited twice here) */
  ck_assert_uint_eq(ms_edit_distance("kitten", "sitting", false), 3);
  ck_assert_uint_eq(ms_edit_distance("ServiceFile", "ServicFile", false), 1);
  ck_assert_uint_eq(ms_edit_distance("timeout", "tiemout", false), 1);
  ck_assert_uint_eq(ms_edit_distance("ca", "abc", false), 3);
  ck_assert_uint_eq(ms_edit_distance("", "abc", false), 3);
  ck_assert_uint_eq(ms_edit_distance(NULL, "", false), 0);
  ck_assert_uint_eq(ms_edit_distance("Interval", "interval", false), 1);
  ck_assert_uint_eq(ms_edit_distance("Interval", "iNTERVAL", true), 0);
  /* no case folding beyond ASCII letters */
  ck_assert_uint_eq(ms_edit_distance("a_1", "A_1", true), 0);
  ck_assert_uint_eq(ms_edit_distance("\xc3\xa9", "\xc3\x89", true), 1);
  /* the longest names compare; longer ones are far from everything */
  static char big[MS_EDIT_MAX_LEN + 2], big2[MS_EDIT_MAX_LEN + 2];
  memset(big, 'x', MS_EDIT_MAX_LEN);
  memset(big2, 'x', MS_EDIT_MAX_LEN);
  big2[0] = 'y';
  ck_assert_uint_eq(ms_edit_distance(big, big2, false), 1);
  ck_assert_uint_eq(ms_edit_distance(big, "", false), MS_EDIT_MAX_LEN);
  big[MS_EDIT_MAX_LEN] = 'x';
  ck_assert_uint_eq(ms_edit_distance(big, "x", false), MS_EDIT_FAR);
  /* against the recursive definition: every pair of names of up to 5
   * letters over {a, b, c} drawn by a fixed generator */
  unsigned seed = 12345;
  for (int k = 0; k < 3000; k++) {
    char a[6], b[6];
    size_t n, m;
    seed = seed * 1103515245u + 12345u;
    n = (seed >> 16) % 6;
    for (size_t i = 0; i < n; i++) {
      seed = seed * 1103515245u + 12345u;
      a[i] = (char)('a' + (seed >> 16) % 3);
    }
    seed = seed * 1103515245u + 12345u;
    m = (seed >> 16) % 6;
    for (size_t i = 0; i < m; i++) {
      seed = seed * 1103515245u + 12345u;
      b[i] = (char)('a' + (seed >> 16) % 3);
    }
    a[n] = b[m] = '\0';
    ck_assert_msg(ms_edit_distance(a, b, false) == osa_ref(a, n, b, m),
                  "'%s' '%s'", a, b);
  }
}
END_TEST

START_TEST(test_suggest) {
  static const char *const opts[] = {"ServiceFile", "Host", "Interval",
                                     "Values", "CycleBudget"};
  const size_t n = sizeof opts / sizeof opts[0];
  ck_assert_str_eq(ms_suggest("ServicFile", opts, n, true), "ServiceFile");
  ck_assert_str_eq(ms_suggest("servicefiel", opts, n, true), "ServiceFile");
  ck_assert_str_eq(ms_suggest("Hots", opts, n, true), "Host");
  ck_assert_str_eq(ms_suggest("Intreval", opts, n, true), "Interval");
  /* the limit: max(1, len / 3) edits */
  ck_assert_str_eq(ms_suggest("Hxst", opts, n, true), "Host"); /* 1 of 4 */
  ck_assert_ptr_null(ms_suggest("Hxxt", opts, n, true));       /* 2 of 4 */
  ck_assert_str_eq(ms_suggest("CyxleBxxget", opts, n, true),
                   "CycleBudget");                              /* 3 of 11 */
  ck_assert_ptr_null(ms_suggest("CyxleBxxgex", opts, n, true)); /* 4 */
  ck_assert_ptr_null(ms_suggest("Colour", opts, n, true));
  ck_assert_ptr_null(ms_suggest("", opts, n, true));
  ck_assert_ptr_null(ms_suggest(NULL, opts, n, true));
  ck_assert_ptr_null(ms_suggest("Host", NULL, 0, true));
  /* case: YAML keys are compared with it, collectd's options without */
  static const char *const keys[] = {"timeout", "tiers"};
  ck_assert_str_eq(ms_suggest("Timeout", keys, 2, false), "timeout");
  ck_assert_ptr_null(ms_suggest("timeout", keys, 2, false)); /* found */
  /* ties go to the first candidate; a nearer later one wins */
  static const char *const ab[] = {"abcd", "abce", "abcf"};
  ck_assert_str_eq(ms_suggest("abcx", ab, 3, false), "abcd");
  ck_assert_str_eq(ms_suggest("abcf", ab, 2, false), "abcd");
  ck_assert_ptr_null(ms_suggest("abcf", ab + 2, 1, false));
  static const char *const with_null[] = {NULL, "Host"};
  ck_assert_str_eq(ms_suggest("host", with_null, 2, true), "Host");
}
END_TEST

/* ---- bare durations (service/units.h, doc/configuration.md) ------------ */

/* The warning for id given these durations, "" for none. */
static const char *bare(ms_param id, double service_time, double timeout) {
  static char buf[320];
  bool warned = ms_bare_duration_warning(id, "timeout", ": ", service_time,
                                         timeout, buf, sizeof buf);
  if (id == MS_PARAM_SERVICE_TIME && warned) {
    /* the same rule under the other key: only the name differs */
    char other[320];
    ck_assert(ms_bare_duration_warning(id, "service_time", ": ", service_time,
                                       timeout, other, sizeof other));
    ck_assert_str_eq(other + strlen("service_time"), buf + strlen("timeout"));
  }
  ck_assert_int_eq(warned, buf[0] != '\0');
  return buf;
}

START_TEST(test_bare_duration_rule) {
  /* the issue's case: timeout 500 beside a 100 ms service time */
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 0.1, 500),
                   "timeout: 500 was read as 500 s, 5,000 times the service "
                   "time; write 500ms if you meant milliseconds");
  /* the edge: more than 1000 service times (powers of two: exact) */
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 0.5, 500), "");
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 0.5, 500.5),
                   "timeout: 500.5 was read as 500.5 s, 1,001 times the "
                   "service time; write 500.5ms if you meant milliseconds");
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 0.001, 1), ""); /* 1,000: fine */
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 1e-6, 30),
                   "timeout: 30 was read as 30 s, 30,000,000 times the "
                   "service time; write 30ms if you meant milliseconds");
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 1e-12, 30),
                   "timeout: 30 was read as 30 s, 3e+13 times the service "
                   "time; write 30ms if you meant milliseconds");
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 0.1, 0), "");
  /* a bare service time longer than the timeout */
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, 2, 0.5),
                   "timeout: 2 was read as 2 s, 4 times the timeout; write "
                   "2ms if you meant milliseconds");
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, 0.75, 0.5),
                   "timeout: 0.75 was read as 0.75 s, 1.5 times the timeout; "
                   "write 0.75ms if you meant milliseconds");
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, 0.5, 0.5), "");
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, 100, 0.5),
                   "timeout: 100 was read as 100 s, 200 times the timeout; "
                   "write 100ms if you meant milliseconds");
  /* ... or of 10 s or more, whatever the timeout */
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, 10, 500),
                   "timeout: 10 was read as 10 s, 10 s or more per request; "
                   "write 10ms if you meant milliseconds");
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, 9.99, 500), "");
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, 2, 0), ""); /* no timeout */
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, 20, 0),
                   "timeout: 20 was read as 20 s, 10 s or more per request; "
                   "write 20ms if you meant milliseconds");
  /* nothing for other parameters, or outside the domain */
  ck_assert_str_eq(bare(MS_PARAM_CAPACITY, 0.1, 500), "");
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 0, 500), "");
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, NAN, 500), "");
  ck_assert_str_eq(bare(MS_PARAM_TIMEOUT, 0.1, INFINITY), "");
  ck_assert_str_eq(bare(MS_PARAM_SERVICE_TIME, INFINITY, 1), "");
  /* the command line's way of writing it */
  char buf[320];
  ck_assert(ms_bare_duration_warning(MS_PARAM_TIMEOUT, "--timeout", " ", 0.1,
                                     500, buf, sizeof buf));
  ck_assert_str_eq(buf, "--timeout 500 was read as 500 s, 5,000 times the "
                        "service time; write 500ms if you meant "
                        "milliseconds");
}
END_TEST

/* The warnings of a one-service file: how many, the first's position and
 * text in *first. */
static int unit_warnings(const char *text, ms_spec_warning *first) {
  ms_service_file f;
  char err[512];
  ck_assert_msg(ms_service_file_parse(text, strlen(text), "u.yaml", &f, err,
                                      sizeof err) == 0,
                "%s", err);
  ms_spec_warning w[2];
  int n = ms_service_unit_warnings(&f.services[0], w);
  if (n > 0)
    *first = w[0];
  ms_service_file_free(&f);
  return n;
}

START_TEST(test_bare_durations_in_file) {
#define U_HEAD "services:\n  - name: u\n    model: erlang\n    servers: 4\n"
#define U_TAIL "    retries: 1\n    inputs:\n      offered_rate: 1\n"
  ms_spec_warning w;
  ck_assert_int_eq(
      unit_warnings(U_HEAD "    service_time: 100ms\n    timeout: 500\n" U_TAIL,
                    &w),
      1);
  ck_assert_int_eq(w.line, 6);
  ck_assert_int_eq(w.column, 14);
  ck_assert_str_eq(w.text, "timeout: 500 was read as 500 s, 5,000 times the "
                           "service time; write 500ms if you meant "
                           "milliseconds");
  /* a unit says what was meant: no warning */
  ck_assert_int_eq(
      unit_warnings(
          U_HEAD "    service_time: 100ms\n    timeout: 500s\n" U_TAIL, &w),
      0);
  ck_assert_int_eq(
      unit_warnings(U_HEAD "    service_time: 100ms\n    timeout: 1\n" U_TAIL,
                    &w),
      0);
  /* the service time from service_rate: 10/s is 100 ms */
  ck_assert_int_eq(
      unit_warnings(U_HEAD "    service_rate: 10\n    timeout: 500\n" U_TAIL,
                    &w),
      1);
  ck_assert_str_eq(w.text, "timeout: 500 was read as 500 s, 5,000 times the "
                           "service time; write 500ms if you meant "
                           "milliseconds");
  /* both bare, both meant in ms: the service time is the one that shows */
  ck_assert_int_eq(
      unit_warnings(U_HEAD "    service_time: 100\n    timeout: 500\n" U_TAIL,
                    &w),
      1);
  ck_assert_int_eq(w.line, 5);
  ck_assert_str_eq(w.text, "service_time: 100 was read as 100 s, 10 s or "
                           "more per request; write 100ms if you meant "
                           "milliseconds");
  /* a bare service time meant in ms beside a timeout with its unit */
  ck_assert_int_eq(
      unit_warnings(U_HEAD "    service_time: 2\n    timeout: 500ms\n" U_TAIL,
                    &w),
      1);
  ck_assert_str_eq(w.text, "service_time: 2 was read as 2 s, 4 times the "
                           "timeout; write 2ms if you meant milliseconds");
  /* a bare service time that is plausible in seconds (50 ms) beside a
   * bare timeout 20,000 times it: only the timeout is warned about */
  ms_service_file f;
  char err[256];
  const char *both =
      U_HEAD "    service_time: 0.05\n    timeout: 1000\n" U_TAIL;
  ck_assert_int_eq(
      ms_service_file_parse(both, strlen(both), "u.yaml", &f, err, sizeof err),
      0);
  ms_spec_warning two[2];
  ck_assert_int_eq(ms_service_unit_warnings(&f.services[0], two), 1);
  ck_assert_str_eq(two[0].text, "timeout: 1000 was read as 1000 s, 20,000 "
                                "times the service time; write 1000ms if you "
                                "meant milliseconds");
  ms_service_file_free(&f);
  /* the capacity model has no durations to hold against each other */
  ck_assert_int_eq(unit_warnings("services:\n  - name: c\n    model: "
                                 "capacity\n    capacity: 100\n" U_TAIL,
                                 &w),
                   0);
#undef U_HEAD
#undef U_TAIL
}
END_TEST

/* ---- inference -------------------------------------------------------- */

static ms_service_spec erlang_spec(void) {
  static char name[] = "svc"; /* spec.name is writable */
  ms_service_spec s;
  memset(&s, 0, sizeof s);
  s.name = name;
  ms_failure_model_erlang(&s.params.model, 30, 10.0, 1.0);
  ms_retry_policy_fixed(&s.params.policy, 1);
  s.has_servers = true;
  return s;
}

static void use(ms_service_spec *s, ms_input_id id) {
  s->inputs[id].kind = MS_SOURCE_IDENTIFIER;
}

static ms_inputs values(double arrival, double offered, double retry,
                        double error, double pool) {
  ms_inputs in;
  memset(&in, 0, sizeof in);
  double v[MS_INPUT_COUNT] = {arrival, offered, retry, error, pool, NAN};
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    in.has[i] = !isnan(v[i]);
    in.value[i] = v[i];
  }
  return in;
}

START_TEST(test_infer) {
  ms_service_spec s = erlang_spec();
  ms_inference r;
  ms_input_id bad;
  char why[256];
  /* arrival - retries */
  use(&s, MS_INPUT_ARRIVAL);
  use(&s, MS_INPUT_RETRY);
  ms_inputs in = values(250, NAN, 50, NAN, NAN);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), 0);
  ck_assert_double_eq(r.offered_load, 200);
  ck_assert(r.has_observed_attempts);
  ck_assert_double_eq(r.observed_attempts, 250);
  ck_assert(!r.has_observed_failure);
  ck_assert_int_eq(r.servers, 30);
  /* arrival / A(p_obs), p_obs = errors / arrivals */
  s = erlang_spec();
  use(&s, MS_INPUT_ARRIVAL);
  use(&s, MS_INPUT_ERROR);
  in = values(300, NAN, NAN, 100, NAN);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), 0);
  ck_assert_double_eq_tol(r.observed_failure, 1.0 / 3, 1e-15);
  ck_assert_double_eq_tol(r.offered_load, 300 / (1 + 1.0 / 3), 1e-12);
  /* offered wins; observed attempts = offered + retries */
  s = erlang_spec();
  use(&s, MS_INPUT_OFFERED);
  use(&s, MS_INPUT_RETRY);
  use(&s, MS_INPUT_POOL);
  in = values(NAN, 180, 20, NAN, 24.6);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), 0);
  ck_assert_double_eq(r.offered_load, 180);
  ck_assert_double_eq(r.observed_attempts, 200);
  ck_assert_int_eq(r.servers, 25);
  /* a constant from the file */
  s.inputs[MS_INPUT_POOL].kind = MS_SOURCE_NUMBER;
  s.inputs[MS_INPUT_POOL].number = 12;
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), 0);
  ck_assert_int_eq(r.servers, 12);
  /* the problems, each naming the input */
  s = erlang_spec();
  use(&s, MS_INPUT_ARRIVAL);
  use(&s, MS_INPUT_RETRY);
  use(&s, MS_INPUT_POOL);
  const struct {
    ms_inputs in;
    ms_input_id bad;
    const char *says;
  } cases[] = {
      {values(NAN, NAN, 5, NAN, 3), MS_INPUT_ARRIVAL, "has no value"},
      {values(10, NAN, 5, NAN, NAN), MS_INPUT_POOL, "has no value"},
      {values(10, NAN, -5, NAN, 3), MS_INPUT_RETRY, "negative"},
      {values(10, NAN, 5, NAN, 0.2), MS_INPUT_POOL, "no live servers"},
      {values(10, NAN, 15, NAN, 3), MS_INPUT_RETRY, "exceeds arrival_rate"},
      {values(INFINITY, NAN, 5, NAN, 3), MS_INPUT_ARRIVAL, "not a number"},
      {values(10, NAN, 5, NAN, 2e7), MS_INPUT_POOL,
       "too large to analyse: servers = 20000000 is outside [1, 10000000]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ms_inputs ci = cases[i].in;
    if (i == 5) {
      ci.has[MS_INPUT_ARRIVAL] = true;
      ci.value[MS_INPUT_ARRIVAL] = NAN;
    }
    ck_assert_int_eq(ms_infer(&s, &ci, &r, &bad, why, sizeof why), -1);
    ck_assert_int_eq(bad, cases[i].bad);
    ck_assert_msg(strstr(why, cases[i].says) != NULL, "%zu: %s", i, why);
    ck_assert_msg(strstr(why, ms_input_name(cases[i].bad)) != NULL, "%s", why);
  }
}
END_TEST

/* `missing: zero`: an absent input (has[] false: not in collectd's cache,
 * an empty cell of a trace) counts as 0; a value present without a rate
 * (NaN) is still no value; `missing: skip` keeps the absent input an
 * error. */
START_TEST(test_infer_missing_zero) {
  ms_service_spec s = erlang_spec();
  ms_inference r;
  ms_input_id bad;
  char why[256];
  use(&s, MS_INPUT_OFFERED);
  use(&s, MS_INPUT_RETRY);
  s.inputs[MS_INPUT_RETRY].missing = MS_MISSING_ZERO;
  ms_inputs in = values(NAN, 100, NAN, NAN, NAN);
  ck_assert_msg(ms_infer(&s, &in, &r, &bad, why, sizeof why) == 0, "%s", why);
  ck_assert_double_eq(r.offered_load, 100);
  ck_assert(r.has_observed_attempts);
  ck_assert_double_eq(r.observed_attempts, 100); /* 100 + 0 retries */
  /* once the counter exists, its rate is used */
  in = values(NAN, 100, 7, NAN, NAN);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), 0);
  ck_assert_double_eq(r.observed_attempts, 107);
  /* present without a rate: not 0 */
  in = values(NAN, 100, NAN, NAN, NAN);
  in.has[MS_INPUT_RETRY] = true;
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), -1);
  ck_assert_int_eq(bad, MS_INPUT_RETRY);
  ck_assert_msg(strstr(why, "not a number") != NULL, "%s", why);
  /* skip, the default: absent is no value */
  s.inputs[MS_INPUT_RETRY].missing = MS_MISSING_SKIP;
  in = values(NAN, 100, NAN, NAN, NAN);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), -1);
  ck_assert_int_eq(bad, MS_INPUT_RETRY);
  ck_assert_msg(strstr(why, "retry_rate has no value") != NULL, "%s", why);
  /* attempts with errors that do not exist yet: no failures, the offered
   * load is the attempt rate (A(0) = 1) */
  s = erlang_spec();
  use(&s, MS_INPUT_ARRIVAL);
  use(&s, MS_INPUT_ERROR);
  s.inputs[MS_INPUT_ERROR].missing = MS_MISSING_ZERO;
  in = values(120, NAN, NAN, NAN, NAN);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), 0);
  ck_assert(r.has_observed_failure);
  ck_assert_double_eq(r.observed_failure, 0);
  ck_assert_double_eq(r.offered_load, 120);
  /* every input absent: the feed is gone, which is no evidence of health
   * (a storm would otherwise be called over on a dead feed) */
  s.inputs[MS_INPUT_ARRIVAL].missing = MS_MISSING_ZERO;
  in = values(NAN, NAN, NAN, NAN, NAN);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), -1);
  ck_assert_int_eq(bad, MS_INPUT_COUNT);
  ck_assert_msg(strstr(why, "no input has a value") != NULL, "%s", why);
  ms_tracker t;
  ms_step st;
  ms_tracker_init(&t);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(!st.ok);
  /* one of them counted: the other absent one is 0 */
  in = values(0, NAN, NAN, NAN, NAN);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_msg(st.ok, "%s", st.problem);
  ck_assert_int_eq(st.report.analysis.state, MS_STATE_STABLE);
  ck_assert_double_eq(st.inference.offered_load, 0);
}
END_TEST

/* The role of each input (ms_input_role_of) against what ms_infer does
 * with it, over every set of load inputs a service file may have (offered
 * rate, or arrival rate with retry or error rate), both models, with and
 * without queue_length and pool_size, every calibration input read: each
 * configured input in turn NaN, the others usable.  A needed input stops
 * the step and is named; any other leaves a verdict; an extra or
 * calibration input is named in calibration_problem; an unused one
 * changes nothing at all, and a needed one, moved, moves the inference. */
static bool same_verdict_inputs(const ms_inference *a, const ms_inference *b) {
  return a->offered_load == b->offered_load && a->servers == b->servers &&
         a->has_observed_attempts == b->has_observed_attempts &&
         a->observed_attempts == b->observed_attempts &&
         a->has_observed_failure == b->has_observed_failure &&
         a->observed_failure == b->observed_failure;
}

START_TEST(test_input_roles) {
  /* fine values: 300 attempts/s = 200 requests + 100 retries, 100 of them
   * failing; a pool of 30, 5 waiting, 10 busy, 250 completions/s of 40 ms */
  const double fine[MS_INPUT_COUNT] = {300, 200, 100, 100, 30,
                                       5,   10,  250, 0.04};
  int seen[4] = {0};
  for (int set = 1; set < 16; set++)
    for (int erlang = 0; erlang < 2; erlang++)
      for (int extra = 0; extra < 4; extra++) {
        bool arr = set & 1, off = set & 2, ret = set & 4, err = set & 8;
        if (!off && !(arr && (ret || err)))
          continue; /* no offered load: the loader refuses it */
        ms_service_spec s = erlang_spec();
        if (!erlang) {
          ms_failure_model_capacity(&s.params.model, 250);
          s.has_servers = false;
        }
        if (arr)
          use(&s, MS_INPUT_ARRIVAL);
        if (off)
          use(&s, MS_INPUT_OFFERED);
        if (ret)
          use(&s, MS_INPUT_RETRY);
        if (err)
          use(&s, MS_INPUT_ERROR);
        if (extra & 1)
          use(&s, MS_INPUT_QUEUE);
        if ((extra & 2) && erlang)
          use(&s, MS_INPUT_POOL);
        if (erlang) {
          use(&s, MS_INPUT_BUSY);
          use(&s, MS_INPUT_COMPLETION);
          use(&s, MS_INPUT_LATENCY);
        }
        ms_inputs in = {.interval = 10};
        for (int i = 0; i < MS_INPUT_COUNT; i++) {
          in.has[i] = true;
          in.value[i] = fine[i];
        }
        ms_inference base, r;
        ms_input_id bad;
        char why[256];
        ck_assert_msg(ms_infer(&s, &in, &base, &bad, why, sizeof why) == 0,
                      "set %d: %s", set, why);
        ck_assert_str_eq(base.calibration_problem, "");
        for (int i = 0; i < MS_INPUT_COUNT; i++) {
          ms_input_role role = ms_input_role_of(&s, (ms_input_id)i);
          const char *name = ms_input_name((ms_input_id)i);
          if (s.inputs[i].kind == MS_SOURCE_NONE) {
            ck_assert_int_eq(role, MS_INPUT_UNUSED);
            continue;
          }
          seen[role]++;
          ms_inputs nan_in = in;
          nan_in.value[i] = NAN;
          int st = ms_infer(&s, &nan_in, &r, &bad, why, sizeof why);
          if (role == MS_INPUT_NEEDED) {
            ck_assert_msg(st == -1 && bad == (ms_input_id)i,
                          "set %d erlang %d extra %d: %s NaN gave a verdict",
                          set, erlang, extra, name);
            /* and it is used: moved, it moves the inference */
            ms_inputs moved = in;
            moved.value[i] *= 1.5;
            ck_assert_int_eq(ms_infer(&s, &moved, &r, &bad, why, sizeof why),
                             0);
            ck_assert_msg(!same_verdict_inputs(&r, &base) ||
                              r.queue_length != base.queue_length,
                          "set %d: needed %s moves nothing", set, name);
            continue;
          }
          ck_assert_msg(st == 0, "set %d erlang %d extra %d: %s NaN: %s", set,
                        erlang, extra, name, why);
          ck_assert_msg(same_verdict_inputs(&r, &base), "set %d: %s", set,
                        name);
          if (role == MS_INPUT_UNUSED) {
            ck_assert_str_eq(r.calibration_problem, "");
            ck_assert(r.has_queue_length == base.has_queue_length);
            continue;
          }
          ck_assert_msg(strstr(r.calibration_problem, name) != NULL &&
                            strstr(r.calibration_problem, "not a number"),
                        "%s: '%s'", name, r.calibration_problem);
          if (role == MS_INPUT_EXTRA)
            ck_assert(!r.has_queue_length && base.has_queue_length);
        }
        /* the decision, input by input (doc/configuration.md) */
        ck_assert_int_eq(ms_input_role_of(&s, MS_INPUT_RETRY),
                         !ret         ? MS_INPUT_UNUSED
                         : off && arr ? MS_INPUT_UNUSED
                                      : MS_INPUT_NEEDED);
        ck_assert_int_eq(ms_input_role_of(&s, MS_INPUT_ERROR),
                         err && arr ? MS_INPUT_NEEDED : MS_INPUT_UNUSED);
        bool observed = arr || (off && ret);
        ck_assert_int_eq(ms_input_role_of(&s, MS_INPUT_QUEUE),
                         !(extra & 1)          ? MS_INPUT_UNUSED
                         : erlang && !observed ? MS_INPUT_NEEDED
                                               : MS_INPUT_EXTRA);
      }
  /* every role came up */
  for (int k = 0; k < 4; k++)
    ck_assert_int_gt(seen[k], 0);
  ms_service_spec s = erlang_spec();
  ck_assert_int_eq(ms_input_role_of(&s, MS_INPUT_COUNT), MS_INPUT_UNUSED);
}
END_TEST

/* A constant observes nothing: retry_rate 0 written in the file beside a
 * collected offered_rate gives no observed attempts (the storm flag is the
 * model's, as `metastable check` says), a collected one does. */
START_TEST(test_constants_observe_nothing) {
  ms_service_spec s = erlang_spec();
  ms_inference r;
  ms_input_id bad;
  char why[256];
  use(&s, MS_INPUT_OFFERED);
  s.inputs[MS_INPUT_RETRY].kind = MS_SOURCE_NUMBER;
  s.inputs[MS_INPUT_RETRY].number = 0;
  ms_inputs in = values(NAN, 100, NAN, NAN, NAN);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), 0);
  ck_assert(!r.has_observed_attempts);
  ck_assert_double_eq(r.offered_load, 100);
  use(&s, MS_INPUT_RETRY);
  in = values(NAN, 100, 0, NAN, NAN);
  ck_assert_int_eq(ms_infer(&s, &in, &r, &bad, why, sizeof why), 0);
  ck_assert(r.has_observed_attempts);
  ck_assert_double_eq(r.observed_attempts, 100);
}
END_TEST

/* The three moments of doc/design.md §1.7 through the tracker, with their
 * notifications: above the tipping load with nothing failing (a WARNING
 * once, no FAILURE), a storm that goes on below the recovery load while
 * attempts fail (no OKAY), and the OKAY once they are healthy for
 * clear_after intervals. */
typedef struct {
  double offered, attempts, errors; /* per second */
  int storm, recovering;
  const char *note; /* severity of the one notification, or NULL */
} moment;

START_TEST(test_verdict_moments) {
  ms_service_spec s = erlang_spec(); /* tipping 293.44, recovery 150 */
  use(&s, MS_INPUT_OFFERED);
  use(&s, MS_INPUT_ARRIVAL);
  use(&s, MS_INPUT_ERROR);
  const moment script[] = {
      {200, 200, 0, 0, 0, NULL},
      {320, 320, 0, 0, 0, "WARNING"}, /* past tipping, nothing fails */
      {320, 320, 0, 0, 0, NULL},      /* once */
      {320, 321, 1, 0, 0, NULL}, /* 1 failure/s: under the tipping point's */
      {320, 640, 320, 1, 0, "FAILURE"}, /* the loop engages */
      {200, 400, 200, 1, 0, NULL},      /* metastable */
      {120, 240, 120, 1, 1, NULL},      /* stable, half the attempts fail */
      {120, 240, 120, 1, 1, NULL},
      {120, 120, 0, 0, 0, NULL},   /* healthy: 1 */
      {120, 120, 0, 0, 0, NULL},   /* 2 */
      {120, 120, 0, 0, 0, "OKAY"}, /* 3 = clear_after */
      {120, 120, 0, 0, 0, NULL},
  };
  ms_tracker t;
  ms_tracker_init(&t);
  for (size_t i = 0; i < sizeof script / sizeof *script; i++) {
    const moment *m = &script[i];
    ms_inputs in = values(m->attempts, m->offered, NAN, m->errors, NAN);
    in.interval = 10;
    ms_step st;
    ms_tracker_step(&t, &s, &in, &st);
    ck_assert_msg(st.ok, "interval %zu: %s", i, st.problem);
    ck_assert_msg(st.report.analysis.storm == m->storm &&
                      st.report.analysis.recovering == m->recovering,
                  "interval %zu: storm %d recovering %d (state %s)", i,
                  st.report.analysis.storm, st.report.analysis.recovering,
                  ms_state_name(st.report.analysis.state));
    ck_assert_msg(st.n_notes == (m->note != NULL), "interval %zu: %d notes", i,
                  st.n_notes);
    if (m->note) {
      ck_assert_str_eq(ms_note_severity_name(st.notes[0].severity), m->note);
      ck_assert_uint_lt(strlen(st.notes[0].message), 256);
    }
    if (i == 1)
      ck_assert_msg(strstr(st.notes[0].message, "the next trigger latches"),
                    "%s", st.notes[0].message);
    if (i == 4)
      ck_assert_msg(strstr(st.notes[0].message, "50% of attempts failing") &&
                        strstr(st.notes[0].message, "shed 170 req/s"),
                    "%s", st.notes[0].message);
  }
}
END_TEST

/* ---- the state machine over a scripted incident ---------------------- */

typedef struct {
  double offered, attempts; /* attempts NAN: not observed */
  ms_state state;
  int failure, okay;
} interval;

START_TEST(test_incident) {
  ms_service_spec s = erlang_spec(); /* tipping 293.44, recovery 150 */
  use(&s, MS_INPUT_OFFERED);
  use(&s, MS_INPUT_ARRIVAL);
  const interval script[] = {
      {200, 200, MS_STATE_VULNERABLE, 0, 0}, /* healthy, in the band */
      {200, NAN, MS_STATE_VULNERABLE, 0, 0},
      {320, 640, MS_STATE_OVERLOADED, 1, 0}, /* the trigger */
      {320, 640, MS_STATE_OVERLOADED, 0, 0},
      {200, 400, MS_STATE_METASTABLE, 0, 0}, /* trigger gone, storm stays */
      {200, 400, MS_STATE_METASTABLE, 0, 0},
      {170, 340, MS_STATE_METASTABLE, 0, 0},
      /* below recovery beyond the noise of a 10 s count (130 + 3 sqrt(13)
       * + 0.9 < 150), still twice the attempts: the storm goes on while
       * the observations fail (doc/design.md §1.4, §1.7) */
      {130, 260, MS_STATE_STABLE, 0, 0},
      {130, 130, MS_STATE_STABLE, 0, 0}, /* healthy again */
      /* back to the original load: the third interval without a storm
       * (clear_after, default 3) sends the OKAY */
      {200, 200, MS_STATE_VULNERABLE, 0, 0},
      {200, 200, MS_STATE_VULNERABLE, 0, 1},
      {200, 200, MS_STATE_VULNERABLE, 0, 0},
  };
  ms_tracker t;
  ms_tracker_init(&t);
  for (size_t i = 0; i < sizeof script / sizeof *script; i++) {
    ms_inputs in = values(script[i].attempts, script[i].offered, NAN, NAN, NAN);
    in.interval = 10.0;            /* collectd's default */
    if (isnan(script[i].attempts)) /* no observation: hysteresis decides */
      s.inputs[MS_INPUT_ARRIVAL].kind = MS_SOURCE_NONE;
    else
      use(&s, MS_INPUT_ARRIVAL);
    ms_step st;
    ms_tracker_step(&t, &s, &in, &st);
    ck_assert_msg(st.ok, "interval %zu: %s", i, st.problem);
    ck_assert_msg(st.report.analysis.state == script[i].state,
                  "interval %zu: state %s, want %s", i,
                  ms_state_name(st.report.analysis.state),
                  ms_state_name(script[i].state));
    int f = 0, o = 0;
    for (int n = 0; n < st.n_notes; n++) {
      f += st.notes[n].severity == MS_NOTE_FAILURE;
      o += st.notes[n].severity == MS_NOTE_OKAY;
    }
    ck_assert_msg(f == script[i].failure && o == script[i].okay,
                  "interval %zu: %d FAILURE, %d OKAY", i, f, o);
    if (f) {
      ck_assert_msg(strstr(st.notes[0].message, "recovery load 150") != NULL,
                    "%s", st.notes[0].message);
      ck_assert_uint_lt(strlen(st.notes[0].message), 256);
    }
  }
  ck_assert_uint_eq(t.landscape_builds, 1);
}
END_TEST

START_TEST(test_headroom_warning_and_recovery) {
  ms_service_spec s = erlang_spec();
  use(&s, MS_INPUT_OFFERED);
  use(&s, MS_INPUT_POOL);
  s.has_headroom_warning = true;
  s.headroom_warning = 0.2; /* tipping 293.44: warn above 234.75 */
  /* warned once; armed again only after clear_after (3) intervals above */
  const double load[] = {200, 250, 260, 200, 250, 200, 200, 200, 250};
  const int warn[] = {0, 1, 0, 0, 0, 0, 0, 0, 1};
  ms_tracker t;
  ms_tracker_init(&t);
  for (int i = 0; i < 9; i++) {
    ms_inputs in = values(NAN, load[i], NAN, NAN, 30);
    ms_step st;
    ms_tracker_step(&t, &s, &in, &st);
    ck_assert(st.ok);
    int w = st.n_notes == 1 && st.notes[0].severity == MS_NOTE_WARNING;
    ck_assert_msg(w == warn[i] && st.n_notes == warn[i], "interval %d", i);
  }
  /* a missing input: nothing reported, state kept, then recovery */
  ms_inputs in = values(NAN, 200, NAN, NAN, NAN);
  ms_step st;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(!st.ok);
  ck_assert_int_eq(st.bad, MS_INPUT_POOL);
  ck_assert(t.has_state && t.state == MS_STATE_VULNERABLE);
  /* the pool shrinks: the landscape is rebuilt, once */
  unsigned long builds = t.landscape_builds;
  /* tipping 144.18: 200 req/s is overloaded beyond the noise of a 1 s
   * count (144.18 + 3 sqrt(144.18) + 9 = 189.2) */
  in = values(NAN, 200, NAN, NAN, 15);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok);
  ck_assert_int_eq(st.report.analysis.state, MS_STATE_OVERLOADED);
  ck_assert_int_eq(st.n_notes, 1); /* FAILURE; headroom was already low */
  ck_assert_int_eq(st.notes[0].severity, MS_NOTE_FAILURE);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.landscape_builds, builds + 1);
}
END_TEST

/* The storm hazard through the tracker (doc/outputs.md, "Storm hazard"):
 * time_to_storm against a direct ms_time_to_storm call (within the
 * table's interpolation error, a factor 1.42: tests/check_hazard_table.c),
 * storm_hazard as 1 - exp(-H / time), never below the recovery load, the
 * WARNING once per crossing, the horizon and threshold of the file. */
/* 10 servers x 100 ms, T = 1 s on the wait, 3 retries (tipping 94.61),
 * its offered rate as its input: the pool of doc/design.md §1.12. */
static ms_service_spec hazard_spec(void) {
  ms_service_spec s = erlang_spec();
  ms_failure_model_erlang(&s.params.model, 10, 10.0, 1.0);
  s.params.model.timeout_covers = MS_TIMEOUT_COVERS_WAIT;
  ms_retry_policy_fixed(&s.params.policy, 3);
  use(&s, MS_INPUT_OFFERED);
  return s;
}

START_TEST(test_storm_hazard) {
  ms_service_spec s = hazard_spec();
  s.hazard_horizon = 1800;
  s.hazard_warning = 0.4;
  const double load[] = {20, 60, 92, 93, 94, 80, 80, 80, 94};
  const int warn[] = {0, 0, 0, 1, 0, 0, 0, 0, 1};
  ms_tracker t;
  ms_tracker_init(&t);
  for (int i = 0; i < 9; i++) {
    ms_inputs in = values(NAN, load[i], NAN, NAN, NAN);
    in.interval = 10;
    ms_step st;
    ms_tracker_step(&t, &s, &in, &st);
    ck_assert(st.ok);
    ck_assert(st.report.has_time_to_storm && st.report.has_storm_hazard);
    double direct;
    ck_assert_int_eq(
        ms_time_to_storm(&t.landscape.params, load[i], &direct, NULL), MS_OK);
    double got = st.report.time_to_storm;
    if (load[i] < t.landscape.recovery_load)
      ck_assert(got == MS_TIME_TO_STORM_NEVER);
    else
      ck_assert_msg(fabs(log(got / direct)) < 0.35, "%g: %g, direct %g",
                    load[i], got, direct);
    ck_assert_double_eq_tol(st.report.storm_hazard, -expm1(-1800 / got), 1e-12);
    int w = 0;
    for (int n = 0; n < st.n_notes; n++)
      if (st.notes[n].severity == MS_NOTE_WARNING &&
          strstr(st.notes[n].message, "at this load a storm is expected "
                                      "within") == st.notes[n].message) {
        w++;
        ck_assert_uint_lt(strlen(st.notes[n].message), 256);
        ck_assert_msg(strstr(st.notes[n].message, "within 30 min") != NULL,
                      "%s", st.notes[n].message);
      }
    ck_assert_msg(w == warn[i], "interval %d: %d hazard warnings", i, w);
    /* the hazard passes 0.4 within 30 min from 93 req/s on */
    ck_assert_msg((st.report.storm_hazard > 0.4) == (load[i] >= 93),
                  "%g: hazard %g", load[i], st.report.storm_hazard);
  }
  ck_assert_uint_eq(t.landscape_builds, 1);
  ck_assert(t.hazard.calls <= MS_HAZARD_TABLE_POINTS + 1);
}
END_TEST

/* The WARNING's time for people: a mean of over 100 days reads "150
 * days", not "1.5e+02 days" (a new-user trial of issue 36).  A load
 * whose time is between 100 days and 1000 years, found with direct
 * calls; a horizon of a year and a warning at 1 %. */
START_TEST(test_storm_hazard_days) {
  ms_service_spec s = hazard_spec();
  s.hazard_horizon = 31536000;
  s.hazard_warning = 0.01;
  double load = 88, direct = 0;
  for (; load > 30; load -= 0.25) {
    ck_assert_int_eq(ms_time_to_storm(&s.params, load, &direct, NULL), MS_OK);
    if (direct > 2e7)
      break;
  }
  ck_assert_msg(direct > 2e7 && direct < 3e10, "%g s at %g", direct, load);
  ms_tracker t;
  ms_tracker_init(&t);
  ms_inputs in = values(NAN, load, NAN, NAN, NAN);
  in.interval = 10;
  ms_step st;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok && st.report.has_time_to_storm);
  char want[64];
  snprintf(want, sizeof want, "expected within %.0f days (",
           st.report.time_to_storm / 86400);
  int w = 0;
  for (int n = 0; n < st.n_notes; n++)
    if (st.notes[n].severity == MS_NOTE_WARNING) {
      w++;
      ck_assert_msg(strstr(st.notes[n].message, want) != NULL &&
                        strstr(st.notes[n].message, "e+") == NULL,
                    "%s (want '%s')", st.notes[n].message, want);
    }
  ck_assert_int_eq(w, 1);
}
END_TEST

/* Deferred: no hazard until ms_tracker_hazard_build has built the table;
 * a stop after each point spreads it over calls; a new pool size builds
 * a new table.  Outside the domain (a queue limit): no hazard, nothing
 * pending. */
static int stop_always(void *ctx) {
  (void)ctx;
  return 1;
}

START_TEST(test_storm_hazard_deferred) {
  ms_service_spec s = erlang_spec();
  use(&s, MS_INPUT_OFFERED);
  use(&s, MS_INPUT_POOL);
  ms_tracker t;
  ms_tracker_init(&t);
  t.hazard_defer = true;
  ms_inputs in = values(NAN, 250, NAN, NAN, 30);
  ms_step st;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok && !st.report.has_time_to_storm && t.hazard_pending);
  ck_assert_int_eq(ms_tracker_hazard_build(&t, stop_always, NULL), 1);
  ck_assert(t.hazard_pending);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(!st.report.has_time_to_storm && t.hazard_pending);
  ck_assert_int_gt(ms_tracker_hazard_build(&t, NULL, NULL), 1);
  ck_assert(!t.hazard_pending);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.report.has_time_to_storm && !t.hazard_pending);
  ck_assert_int_eq(ms_tracker_hazard_build(&t, NULL, NULL), 0);
  /* the pool shrinks: a new landscape, a new table, none until built */
  in = values(NAN, 250, NAN, NAN, 29);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(!st.report.has_time_to_storm && t.hazard_pending);
  /* a queue limit: outside the domain, no hazard and nothing pending */
  s.params.model.has_queue_limit = true;
  s.params.model.queue_limit = 50;
  ms_tracker_init(&t);
  t.hazard_defer = true;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok && !st.report.has_time_to_storm && !t.hazard_pending);
}
END_TEST

/* A large pool: a storm at the tipping load itself only after more than
 * 1000 horizons (1000 servers: 2.6e6 s; a horizon of 10 min), so the
 * hazard is negligible up to the fold: never below it (the fold is the
 * answer), a finite time past it. */
START_TEST(test_storm_hazard_large_pool) {
  ms_service_spec s = erlang_spec();
  ms_failure_model_erlang(&s.params.model, 1000, 10.0, 1.0);
  s.params.model.timeout_covers = MS_TIMEOUT_COVERS_WAIT;
  ms_retry_policy_fixed(&s.params.policy, 3);
  s.hazard_horizon = 600;
  use(&s, MS_INPUT_OFFERED);
  ms_tracker t;
  ms_tracker_init(&t);
  ms_inputs in = values(NAN, 9980, NAN, NAN, NAN);
  in.interval = 10;
  ms_step st;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok && st.report.has_time_to_storm);
  double direct;
  ck_assert_int_eq(ms_time_to_storm(&t.landscape.params,
                                    t.landscape.tipping_load, &direct, NULL),
                   MS_OK);
  ck_assert(direct > MS_HAZARD_NEGLIGIBLE_HORIZONS * 600);
  ck_assert(9980 < t.landscape.tipping_load);
  ck_assert(st.report.time_to_storm == MS_TIME_TO_STORM_NEVER);
  ck_assert(st.report.storm_hazard == 0);
  in = values(NAN, 1.05 * t.landscape.tipping_load, NAN, NAN, NAN);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.report.time_to_storm < 600 && st.report.storm_hazard > 0.5);
}
END_TEST

/* The reference for safe_retries: the largest r in [0, top] for
 * which a scan of ms_equilibria over a grid of loads up to (1 + m)
 * lambda finds one equilibrium below saturation at each (stable: no
 * collapsed equilibrium), every r scanned; -1 when none is. */
static int scan_safe_retries(const ms_service_params *p, double lambda,
                             double m, int top) {
  int best = -1;
  for (int r = 0; r <= top; r++) {
    ms_service_params q = *p;
    q.policy.retries = r;
    ms_landscape ls;
    ck_assert_int_eq(ms_landscape_build(&q, &ls, NULL), MS_OK);
    bool safe = true;
    const int n = 600;
    for (int i = 1; i <= n && safe; i++) {
      ms_equilibrium eq[MS_MAX_EQUILIBRIA];
      int k;
      ck_assert_int_eq(
          ms_equilibria(&ls, (1 + m) * lambda * i / n, eq, &k, NULL), MS_OK);
      safe = k == 1 && eq[0].effective_load < ls.saturation_load;
    }
    if (safe)
      best = r;
  }
  return best;
}

/*
 * safe_retries: the largest retry count safe at this interval's offered
 * load with the file's safety_margin (default 0.2), against the scan above
 * over every count to MS_RECOMMEND_MAX_RETRIES; absent when none is safe; the
 * margin moves it; the recovery loads are computed once per landscape.
 * Service of recommend's example: 50 servers x 200 ms, 2 s timeout, 3
 * retries (recovery loads about 250, 125, 83 req/s for 0, 1, 2 retries).
 */
START_TEST(test_safe_retries_output) {
  ms_service_spec s = erlang_spec();
  ms_failure_model_erlang(&s.params.model, 50, 5.0, 2.0);
  ms_retry_policy_fixed(&s.params.policy, 3);
  use(&s, MS_INPUT_OFFERED);
  ms_tracker t;
  ms_tracker_init(&t);
  const double loads[] = {200, 100, 20, 1};
  const int want[] = {0, 1, -2, -2}; /* -2: from the scan only */
  for (int i = 0; i < 4; i++) {
    ms_inputs in = values(NAN, loads[i], NAN, NAN, NAN);
    ms_step st;
    ms_tracker_step(&t, &s, &in, &st);
    ck_assert(st.ok);
    int ref =
        scan_safe_retries(&s.params, loads[i], 0.2, MS_RECOMMEND_MAX_RETRIES);
    ck_assert(ref >= 0);
    if (want[i] != -2)
      ck_assert_int_eq(ref, want[i]);
    ck_assert_msg(st.report.has_safe_retries, "load %g", loads[i]);
    ck_assert_msg(st.report.safe_retries == ref, "load %g: %g, scan %d",
                  loads[i], st.report.safe_retries, ref);
  }
  ck_assert_uint_eq(t.landscape_builds, 1); /* one cache of recovery loads */
  ck_assert_uint_eq(t.safe_builds, 1);
  ck_assert_uint_le(t.safe_computed, 4 * 8); /* bisections, not 4 x 101 */
  /* 20 req/s: several counts, but not every one */
  ms_inputs in = values(NAN, 20, NAN, NAN, NAN);
  ms_step st;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.report.safe_retries >= 2 &&
            st.report.safe_retries < MS_RECOMMEND_MAX_RETRIES);
  /* past the recovery load of no retries (250 / 1.2): none is safe */
  in = values(NAN, 220, NAN, NAN, NAN);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok && !st.report.has_safe_retries);
  ck_assert_int_eq(scan_safe_retries(&s.params, 220, 0.2, 3), -1);
  /* a margin of 0.5 at 100 req/s: 1 retry (125) no longer covers 150 */
  s.has_safety_margin = true;
  s.safety_margin = 0.5;
  in = values(NAN, 100, NAN, NAN, NAN);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.report.has_safe_retries);
  ck_assert_double_eq(st.report.safe_retries,
                      scan_safe_retries(&s.params, 100, 0.5, 3));
  ck_assert_double_eq(st.report.safe_retries, 0);
}
END_TEST

/* A stop that lets n builds through, then stops every one after. */
static int let_through(void *ctx) {
  int *n = ctx;
  return (*n)-- <= 0;
}

/*
 * safe_retries deferred (safe_defer, as the plugin sets it): the first
 * step of a landscape builds none of the bisection's landscapes and
 * reports none; ms_tracker_safe_build, stopped after two builds, keeps
 * them and goes on at the next call; the step after the last build
 * reports what an undeferred tracker does at every load of
 * test_safe_retries_output, and builds at most what a moved load needs.
 * The count of the file (3) is the landscape's own recovery load: never
 * built.  Service of test_safe_retries_output.
 */
START_TEST(test_safe_retries_deferred) {
  ms_service_spec s = erlang_spec();
  ms_failure_model_erlang(&s.params.model, 50, 5.0, 2.0);
  ms_retry_policy_fixed(&s.params.policy, 3);
  use(&s, MS_INPUT_OFFERED);
  ms_tracker d, now;
  ms_tracker_init(&d);
  ms_tracker_init(&now);
  d.safe_defer = true;
  ms_inputs in = values(NAN, 100, NAN, NAN, NAN);
  ms_step st, ref;
  ms_tracker_step(&d, &s, &in, &st);
  ck_assert(st.ok && !st.report.has_safe_retries && d.safe_pending);
  ck_assert_uint_eq(d.safe_computed, 0);
  int left = 2;
  ck_assert_int_eq(ms_tracker_safe_build(&d, let_through, &left), 2);
  ck_assert(d.safe_pending);
  ms_tracker_step(&d, &s, &in, &st); /* still pending: nothing built */
  ck_assert(!st.report.has_safe_retries && d.safe_pending);
  ck_assert_uint_eq(d.safe_computed, 2);
  int more = ms_tracker_safe_build(&d, NULL, NULL);
  ck_assert(more > 0 && !d.safe_pending);
  ck_assert_int_eq(ms_tracker_safe_build(&d, NULL, NULL), 0);
  const double loads[] = {100, 200, 20, 1, 220};
  for (int i = 0; i < 5; i++) {
    in = values(NAN, loads[i], NAN, NAN, NAN);
    ms_tracker_step(&d, &s, &in, &st);
    ms_tracker_step(&now, &s, &in, &ref);
    ck_assert(!d.safe_pending);
    ck_assert_int_eq(st.report.has_safe_retries, ref.report.has_safe_retries);
    ck_assert_msg(st.report.safe_retries == ref.report.safe_retries,
                  "load %g: deferred %g, at once %g", loads[i],
                  st.report.safe_retries, ref.report.safe_retries);
  }
  ck_assert(d.safe_recovery[3] == d.landscape.recovery_load);
  ck_assert_uint_le(d.safe_computed, now.safe_computed);
}
END_TEST

/*
 * The bisection of safe_retries assumes the recovery load does not grow
 * with the retry count: checked over every count for each kind of policy,
 * and the tracker's answer equals the full scan of every count by
 * ms_recommend_max_retries (itself held to a scan of the loads in
 * tests/check_recommend.c) at loads across the range.
 */
START_TEST(test_safe_retries_every_policy) {
  ms_service_params c[7];
  int n = 0;
  ms_failure_model_erlang(&c[n].model, 50, 5.0, 2.0);
  ms_retry_policy_fixed(&c[n++].policy, 3);
  c[n] = c[0];
  c[n].policy.has_budget = true;
  c[n++].policy.retry_budget = 0.1;
  c[n] = c[0];
  ms_policy_defaults(&c[n++].policy, MS_POLICY_FINAGLE);
  c[n] = c[0];
  ms_policy_defaults(&c[n++].policy, MS_POLICY_ENVOY);
  c[n] = c[0];
  ms_policy_defaults(&c[n++].policy, MS_POLICY_AWS);
  ms_failure_model_capacity(&c[n].model, 100);
  c[n].model.base_failure = 0.05;
  ms_retry_policy_fixed(&c[n].policy, 2);
  c[n++].policy.tiers = 2;
  ms_failure_model_erlang(&c[n].model, 1000, 20.0, 0.2);
  ms_retry_policy_fixed(&c[n++].policy, 10);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(ms_service_params_check(&c[i], NULL), MS_OK);
    int counts = ms_recommend_retry_counts(&c[i]);
    double prev = INFINITY;
    for (int r = 0; r < counts; r++) {
      double rec;
      ck_assert_int_eq(ms_recommend_retry_recovery(&c[i], r, &rec, NULL),
                       MS_OK);
      ck_assert_msg(rec <= prev * (1 + 1e-12), "case %d: r %d: %g > %g", i, r,
                    rec, prev);
      prev = rec;
    }
    ms_service_spec s = erlang_spec();
    s.params = c[i];
    s.has_servers = true;
    use(&s, MS_INPUT_OFFERED);
    ms_tracker t;
    ms_tracker_init(&t);
    double r0;
    ck_assert_int_eq(ms_recommend_retry_recovery(&c[i], 0, &r0, NULL), MS_OK);
    for (double f = 0.01; f < 1.0; f *= 1.7) {
      double lambda = f * r0;
      ms_inputs in = values(NAN, lambda, NAN, NAN, NAN);
      ms_step st;
      ms_tracker_step(&t, &s, &in, &st);
      ck_assert(st.ok);
      ms_recommend_answer a;
      ck_assert_int_eq(ms_recommend_max_retries(&c[i], lambda,
                                                MS_RECOMMEND_DEFAULT_MARGIN, &a,
                                                NULL),
                       MS_OK);
      ck_assert_int_eq(st.report.has_safe_retries, a.safe);
      if (a.safe)
        ck_assert_msg(st.report.safe_retries == a.value,
                      "case %d at %g: %g, recommend %g", i, lambda,
                      st.report.safe_retries, a.value);
    }
  }
}
END_TEST

/* A fluid run of the tracker's service built here: a full stall of `hold`
 * s from 10 s at lambda, 300 s after it; whether it ends in a storm. */
static bool stall_run_latches(long servers, double lambda, double hold) {
  ms_service_params p;
  ms_failure_model_erlang(&p.model, servers, 10.0, 1.0);
  p.model.base_failure = 0.01;
  ms_retry_policy_fixed(&p.policy, 3);
  ms_sim_config c;
  ms_sim_config_init(&c, &p);
  c.queue_memory = true;
  c.scenario.offered_load = lambda;
  c.scenario.duration = 10 + hold + 300;
  c.scenario.n_triggers = 1;
  memset(&c.scenario.triggers[0], 0, sizeof c.scenario.triggers[0]);
  c.scenario.triggers[0].kind = MS_TRIGGER_SERVERS;
  c.scenario.triggers[0].start = 10;
  c.scenario.triggers[0].hold = hold;
  ms_sim_summary sum;
  ms_error err;
  ck_assert_msg(ms_sim_fluid(&c, NULL, NULL, &sum, &err) == MS_OK, "%s",
                err.msg);
  return sum.final_storm;
}

/* The service of the stall_tolerance tests: 10 servers x 100 ms, 1 s
 * timeout, 3 retries, 1 % base failure, offered rate and pool as inputs. */
static ms_service_spec stall_spec(void) {
  ms_service_spec s = erlang_spec();
  ms_failure_model_erlang(&s.params.model, 10, 10.0, 1.0);
  s.params.model.base_failure = 0.01;
  ms_retry_policy_fixed(&s.params.policy, 3);
  use(&s, MS_INPUT_OFFERED);
  use(&s, MS_INPUT_POOL);
  return s;
}

/*
 * stall_tolerance: 10 servers x 100 ms, 1 s timeout, 3 retries, 1 % base
 * failure (tipping 93.66/s, recovery 25/s).  The value is the search's at
 * the upper end of the load's 1 % bucket, 1.01^(b + 1) with b = floor(ln
 * lambda / ln 1.01), and fluid runs built here confirm it: a stall that
 * long recovers, one 0.1 s (two bins) longer latches.  It is searched once
 * per bucket (the cache), at most once per MS_TOLERANCE_SEARCH_GAP
 * intervals and, when the caller defers it, by the caller's
 * ms_tracker_tolerance_search (the nearest bucket above answering
 * meanwhile, or nothing), again after the landscape is rebuilt
 * (the pool changed); absent below the recovery load and for the capacity
 * model, 0 above the tipping load with no search.
 */
START_TEST(test_stall_tolerance_output) {
  ms_service_spec s = stall_spec();
  ms_tracker t;
  ms_tracker_init(&t);
  ms_inputs in = values(NAN, 60, NAN, NAN, 10);
  ms_step st;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok && st.report.has_stall_tolerance);
  double v = st.report.stall_tolerance;
  double edge = pow(1.01, floor(log(60.0) / log(1.01)) + 1);
  ck_assert(edge > 60 && edge < 60.6);
  ck_assert(!stall_run_latches(10, edge, v));
  ck_assert(stall_run_latches(10, edge, v + 0.1));
  ck_assert(!stall_run_latches(10, 60, v)); /* the edge errs short */
  ck_assert(v > 1.25 && v < 1.55);          /* 1.41 s at 60/s itself; the DES
                                              median 1.38-1.41 s (doc/simulation.md) */
  ck_assert_uint_eq(t.tolerance_searches, 1);
  /* the same bucket: no search, the same value */
  in = values(NAN, 60.2, NAN, NAN, 10);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.tolerance_searches, 1);
  ck_assert_double_eq(st.report.stall_tolerance, v);
  /* a new bucket within MS_TOLERANCE_SEARCH_GAP intervals of the last
   * search: not searched; nothing remembered above 63, so no value */
  in = values(NAN, 63, NAN, NAN, 10);
  for (int i = 0; i < MS_TOLERANCE_SEARCH_GAP - 2; i++) {
    ms_tracker_step(&t, &s, &in, &st);
    ck_assert(st.ok && !st.report.has_stall_tolerance);
  }
  ck_assert_uint_eq(t.tolerance_searches, 1);
  /* the gap over: searched, shorter than 60's */
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.tolerance_searches, 2);
  ck_assert(st.report.has_stall_tolerance);
  double v63 = st.report.stall_tolerance;
  ck_assert(v63 < v);
  double edge63 = pow(1.01, floor(log(63.0) / log(1.01)) + 1);
  ck_assert(!stall_run_latches(10, edge63, v63));
  ck_assert(stall_run_latches(10, edge63, v63 + 0.1));
  /* a falling load inside the gap: the nearest remembered bucket above
   * answers (60's for 57 and 55: shorter than their own), no search */
  for (int i = 0; i < MS_TOLERANCE_SEARCH_GAP - 1; i++) {
    in = values(NAN, i % 2 ? 55 : 57, NAN, NAN, 10);
    ms_tracker_step(&t, &s, &in, &st);
    ck_assert(st.report.has_stall_tolerance);
    ck_assert_double_eq(st.report.stall_tolerance, v);
  }
  ck_assert_uint_eq(t.tolerance_searches, 2);
  /* deferred by the caller (the plugin): no search in the step, the
   * nearest bucket above answering, the search left pending */
  t.tolerance_defer = true;
  in = values(NAN, 55, NAN, NAN, 10);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.tolerance_searches, 2);
  ck_assert_double_eq(st.report.stall_tolerance, v);
  ck_assert(t.tolerance_pending);
  /* then 55 is searched, by the caller's call, and the next step reports
   * it, longer than 60's */
  ck_assert(ms_tracker_tolerance_search(&t));
  ck_assert(!ms_tracker_tolerance_search(&t)); /* nothing pending now */
  t.tolerance_defer = false;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.tolerance_searches, 3);
  ck_assert(st.report.stall_tolerance > v);
  double edge55 = pow(1.01, floor(log(55.0) / log(1.01)) + 1);
  ck_assert(!stall_run_latches(10, edge55, st.report.stall_tolerance));
  ck_assert(stall_run_latches(10, edge55, st.report.stall_tolerance + 0.1));
  /* back to 63: remembered */
  in = values(NAN, 63, NAN, NAN, 10);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.tolerance_searches, 3);
  ck_assert_double_eq(st.report.stall_tolerance, v63);
  /* a higher load survives less */
  ck_assert(st.report.stall_tolerance < v);
  /* below the recovery load: none; above the tipping load: 0, no search */
  in = values(NAN, 20, NAN, NAN, 10);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok && !st.report.has_stall_tolerance);
  in = values(NAN, 95, NAN, NAN, 10);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.report.has_stall_tolerance);
  ck_assert_double_eq(st.report.stall_tolerance, 0);
  ck_assert_uint_eq(t.tolerance_searches, 3);
  /* 12 servers: rebuilt, searched again at once (the rebuild clears the
   * cache and the gap), and longer */
  in = values(NAN, 60, NAN, NAN, 12);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.tolerance_searches, 4);
  ck_assert(st.report.stall_tolerance > v);
  ck_assert(!stall_run_latches(12, edge, st.report.stall_tolerance));
  ck_assert(stall_run_latches(12, edge, st.report.stall_tolerance + 0.1));
  /* the capacity model has no queue to simulate */
  ms_service_spec cap = erlang_spec();
  ms_failure_model_capacity(&cap.params.model, 100);
  cap.has_servers = false;
  use(&cap, MS_INPUT_OFFERED);
  ms_tracker_init(&t);
  in = values(NAN, 60, NAN, NAN, NAN);
  ms_tracker_step(&t, &cap, &in, &st);
  ck_assert(st.ok && !st.report.has_stall_tolerance);
}
END_TEST

/* A stop hook that lets `left` polls go on, then says stop. */
typedef struct {
  long left, go;
} stop_after;

static int stop_after_polls(void *ctx) {
  stop_after *sa = ctx;
  if (sa->left <= 0)
    return 1;
  sa->left--;
  sa->go++;
  return 0;
}

/*
 * stall_tolerance with the caller's stop hook (the plugin's cycle
 * deadline): a search stopped part-way reports no value (nothing above to
 * answer) and keeps the bracket it reached; the next step resumes it
 * (no MS_TOLERANCE_SEARCH_GAP wait) and ends with the value of a tracker
 * that was never stopped, also when every attempt is stopped after a few
 * windows (the search progresses across steps).  A stopped search with a
 * bucket above remembered answers with it.  The service of
 * test_stall_tolerance_output.
 */
START_TEST(test_stall_tolerance_stopped) {
  ms_service_spec s = stall_spec();
  ms_tracker ref, t;
  ms_tracker_init(&ref);
  ms_tracker_init(&t);
  ms_inputs in = values(NAN, 63, NAN, NAN, 10);
  ms_step st;
  ms_tracker_step(&ref, &s, &in, &st);
  ck_assert(st.report.has_stall_tolerance);
  double v63 = st.report.stall_tolerance;
  /* stopped after 50 polls (a few probes' windows) */
  stop_after sa = {.left = 50};
  t.tolerance_stop = stop_after_polls;
  t.tolerance_stop_ctx = &sa;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert(st.ok && !st.report.has_stall_tolerance);
  ck_assert_uint_eq(t.tolerance_searches, 1);
  ck_assert_uint_eq(t.tolerance_stopped, 1);
  ck_assert_int_eq(t.tolerance_n, 0);
  ck_assert_int_eq(sa.go, 50);
  ck_assert_uint_ne(t.tolerance_resume_builds, 0);
  /* the next step resumes it, unstopped: the never-stopped value */
  t.tolerance_stop = NULL;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.tolerance_searches, 2);
  ck_assert(st.report.has_stall_tolerance);
  ck_assert_double_eq(st.report.stall_tolerance, v63);
  /* 12 servers (a rebuild): every attempt stopped after 40 polls, the
   * search still ends, in a few steps, at the never-stopped value */
  ms_tracker ref12;
  ms_tracker_init(&ref12);
  stop_after count = {.left = 1L << 40};
  ref12.tolerance_stop = stop_after_polls;
  ref12.tolerance_stop_ctx = &count;
  in = values(NAN, 63, NAN, NAN, 12);
  ms_tracker_step(&ref12, &s, &in, &st);
  double v12 = st.report.stall_tolerance;
  /* each attempt gets a sixth of the polls of the whole search (which
   * takes 10 to 20 probes of similar length): room for a probe or two */
  long room = count.go / 6;
  t.tolerance_stop = stop_after_polls;
  int steps = 0;
  double last = 0;
  do {
    sa = (stop_after){.left = room};
    ms_tracker_step(&t, &s, &in, &st);
    steps++;
    /* meanwhile, the longest stall seen survived: a lower bound that
     * grows */
    if (st.report.has_stall_tolerance) {
      ck_assert_double_le(st.report.stall_tolerance, v12);
      ck_assert_double_ge(st.report.stall_tolerance, last);
      last = st.report.stall_tolerance;
    }
  } while (t.tolerance_stopped > 0 && st.report.stall_tolerance != v12 &&
           steps < 100);
  ck_assert_int_gt(steps, 2);
  ck_assert_int_lt(steps, 100);
  ck_assert(st.report.has_stall_tolerance);
  ck_assert_double_eq(st.report.stall_tolerance, v12);
  /* 60/s after the gap, stopped at once: 63's bucket (above) answers */
  t.tolerance_stop = NULL;
  for (int i = 0; i < MS_TOLERANCE_SEARCH_GAP; i++)
    ms_tracker_step(&t, &s, &in, &st);
  unsigned long stopped = t.tolerance_stopped;
  sa = (stop_after){.left = 0};
  t.tolerance_stop = stop_after_polls;
  in = values(NAN, 60, NAN, NAN, 12);
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_uint_eq(t.tolerance_stopped, stopped + 1);
  ck_assert(st.report.has_stall_tolerance);
  ck_assert_double_eq(st.report.stall_tolerance, v12);
}
END_TEST

/* Load that flaps across the tipping load: one FAILURE, and one OKAY only
 * once the storm has stayed away for clear_after intervals. */
START_TEST(test_flapping_storm_pages_once) {
  /* capacity 100, 2 retries, 1 % base failure: tipping 100/1.0101 = 99.0
   * and no hysteresis band; loads that cross it beyond the noise of a 10 s
   * count (99 + 3 sqrt(9.9) + 0.9 = 109.3 above it, 89.3 below) flip the
   * state and the storm flag */
  static char name[] = "flappy";
  ms_service_spec s;
  memset(&s, 0, sizeof s);
  s.name = name;
  ms_failure_model_capacity(&s.params.model, 100.0);
  s.params.model.base_failure = 0.01;
  ms_retry_policy_fixed(&s.params.policy, 2);
  use(&s, MS_INPUT_OFFERED);
  s.clear_after = 2;
  ms_tracker t;
  ms_tracker_init(&t);
  const double load[] = {85, 115, 85, 115, 85, 115, 80, 80, 80};
  const int failure[] = {0, 1, 0, 0, 0, 0, 0, 0, 0};
  const int okay[] = {0, 0, 0, 0, 0, 0, 0, 1, 0};
  for (int i = 0; i < 9; i++) {
    ms_inputs in = values(NAN, load[i], NAN, NAN, NAN);
    in.interval = 10.0;
    ms_step st;
    ms_tracker_step(&t, &s, &in, &st);
    ck_assert(st.ok);
    ck_assert_int_eq(st.report.analysis.storm, load[i] > 99.0);
    int f = 0, o = 0;
    for (int n = 0; n < st.n_notes; n++) {
      f += st.notes[n].severity == MS_NOTE_FAILURE;
      o += st.notes[n].severity == MS_NOTE_OKAY;
    }
    ck_assert_msg(f == failure[i] && o == okay[i], "interval %d: %d/%d", i, f,
                  o);
  }
}
END_TEST

/* A cold start inside a storm is a change too: FAILURE once. */
START_TEST(test_cold_start_in_storm) {
  ms_service_spec s = erlang_spec();
  use(&s, MS_INPUT_OFFERED);
  use(&s, MS_INPUT_ARRIVAL);
  ms_tracker t;
  ms_tracker_init(&t);
  ms_inputs in = values(400, 200, NAN, NAN, NAN);
  ms_step st;
  ms_tracker_step(&t, &s, &in, &st);
  ck_assert_int_eq(st.report.analysis.state, MS_STATE_METASTABLE);
  ck_assert_int_eq(st.n_notes, 1);
  ck_assert_int_eq(st.notes[0].severity, MS_NOTE_FAILURE);
}
END_TEST

/* The shards' hash on the published vectors: FNV-1a 64 from the FNV
 * reference suite (draft-eastlake-fnv), jump hashing's known answers as
 * the paper's implementations give them. */
START_TEST(test_shard_hash_vectors) {
  ck_assert_uint_eq(ms_fnv1a64("", 0), 0xcbf29ce484222325ULL);
  ck_assert_uint_eq(ms_fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
  ck_assert_uint_eq(ms_fnv1a64("foobar", 6), 0x85944171f73967e8ULL);
  static const struct {
    uint64_t key;
    int32_t buckets, bucket;
  } jump[] = {
      {1, 1, 0},        {42, 57, 43},           {0xDEAD10CC, 1, 0},
      {256, 1024, 520}, {0xDEAD10CC, 666, 361}, {1, 128, 55},
      {129, 128, 120},  {UINT64_MAX, 128, 92},  {128, 100000000, 38172097},
  };
  for (size_t i = 0; i < sizeof jump / sizeof jump[0]; i++)
    ck_assert_int_eq(ms_jump_hash(jump[i].key, jump[i].buckets),
                     jump[i].bucket);
  ck_assert_int_eq(ms_jump_hash(1, 0), -1);
  ck_assert_int_eq(ms_shard_of("a", 666),
                   ms_jump_hash(0xaf63dc4c8601ec8cULL, 666) + 1);
  ck_assert_int_eq(ms_shard_of("a", 0), 0);
  ck_assert_int_eq(ms_shard_of("a", MS_SHARD_MAX + 1), 0);
}
END_TEST

/* From N to N + 1 shards a service stays or moves to the new shard, and
 * about 1/(N + 1) of them move; services spread evenly. */
START_TEST(test_shard_moves_and_balance) {
  enum { SERVICES = 4000 };
  static int shard[SERVICES];
  size_t counts[8];
  for (int n = 1; n < 8; n++) {
    size_t moved = 0;
    for (int i = 0; i < SERVICES; i++) {
      char name[32];
      snprintf(name, sizeof name, "svc-%d", i);
      int a = ms_shard_of(name, n), b = ms_shard_of(name, n + 1);
      ck_assert_int_ge(a, 1);
      ck_assert_int_le(a, n);
      ck_assert(b == a || b == n + 1);
      moved += b != a;
      shard[i] = b;
    }
    /* binomial(4000, 1/(n+1)): 5 standard deviations */
    double p = 1.0 / (n + 1), mean = SERVICES * p;
    double sd = sqrt(SERVICES * p * (1 - p));
    ck_assert_double_le(fabs((double)moved - mean), 5 * sd);
    ms_shard_stats st;
    ck_assert_int_eq(ms_shard_balance(shard, SERVICES, n + 1, counts, &st), 0);
    size_t sum = 0;
    for (int k = 0; k <= n; k++)
      sum += counts[k];
    ck_assert_uint_eq(sum, SERVICES);
    ck_assert_double_eq(st.mean, (double)SERVICES / (n + 1));
    ck_assert_double_le((double)st.max - st.mean, 5 * sd);
    ck_assert_double_le(st.mean - (double)st.min, 5 * sd);
  }
  shard[0] = 9;
  ck_assert_int_eq(ms_shard_balance(shard, 1, 8, counts, &(ms_shard_stats){0}),
                   -1);
}
END_TEST

/* "K/N" parsed, and refused with what is wrong. */
START_TEST(test_shard_parse) {
  int k = 0, n = 0;
  char err[256];
  ck_assert_int_eq(ms_shard_parse("3/4", &k, &n, err, sizeof err), 0);
  ck_assert_int_eq(k, 3);
  ck_assert_int_eq(n, 4);
  ck_assert_int_eq(ms_shard_parse("1024/1024", &k, &n, err, sizeof err), 0);
  static const char *const bad[] = {"",     "1",    "/2",  "1/",
                                    "0/1",  "2/1",  "1/0", "1/1025",
                                    "+1/2", "1/2 ", "x/2", "1/9999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    k = n = -7;
    ck_assert_int_eq(ms_shard_parse(bad[i], &k, &n, err, sizeof err), -1);
    ck_assert_int_eq(k, -7);
    ck_assert_ptr_nonnull(strstr(err, bad[i]));
  }
}
END_TEST

/* ms_service_file_keep_shard keeps the shard's services in order. */
START_TEST(test_keep_shard) {
  const char text[] =
      "services:\n"
      "  - {name: a, model: capacity, capacity: 10, retries: 1,\n"
      "     inputs: {offered_rate: 5}}\n"
      "  - {name: b, model: capacity, capacity: 10, retries: 1,\n"
      "     inputs: {offered_rate: 5}}\n"
      "  - {name: c, model: capacity, capacity: 10, retries: 1,\n"
      "     inputs: {offered_rate: 5}}\n"
      "  - {name: d, model: capacity, capacity: 10, retries: 1,\n"
      "     inputs: {offered_rate: 5}}\n"
      "  - {name: e, model: capacity, capacity: 10, retries: 1,\n"
      "     inputs: {offered_rate: 5}}\n";
  const char *names[] = {"a", "b", "c", "d", "e"};
  for (int k = 1; k <= 3; k++) {
    ms_service_file f;
    char err[256];
    ck_assert_int_eq(
        ms_service_file_parse(text, sizeof text - 1, "t", &f, err, sizeof err),
        0);
    size_t want = 0;
    for (int i = 0; i < 5; i++)
      want += ms_shard_of(names[i], 3) == k;
    ck_assert_uint_eq(ms_service_file_keep_shard(&f, k, 3), 5 - want);
    ck_assert_uint_eq(f.n_services, want);
    size_t j = 0;
    for (int i = 0; i < 5; i++)
      if (ms_shard_of(names[i], 3) == k)
        ck_assert_str_eq(f.services[j++].name, names[i]);
    ms_service_file_free(&f);
  }
}
END_TEST

/* ---- limits of a file (service/service.h) ----------------------------- */

/* A growing text for the files of the limits below. */
typedef struct {
  char *s;
  size_t len, cap;
} text_buf;

static void put(text_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(text_buf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    ck_assert_int_ge(n, 0);
    if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    b->cap = 2 * b->cap + (size_t)n + 64;
    b->s = realloc(b->s, b->cap);
    ck_assert_ptr_nonnull(b->s);
  }
}

/* Parse b's text: -1 expected, err filled; returns err. */
static const char *refused(const text_buf *b, char *err, size_t errlen) {
  ms_service_file f;
  int r = ms_service_file_parse(b->s, b->len, "big.yaml", &f, err, errlen);
  ck_assert_msg(r == -1, "accepted");
  ck_assert_uint_eq(f.n_services, 0);
  return err;
}

/* The largest legal service: every key that goes with the others, ten
 * tiers, a timeout range, every input as a mapping.  MS_SERVICE_MAX_NODES
 * is about twice its nodes, counted here by libyaml's own document (no
 * aliases: every node is built). */
static const char *largest_service =
    "services:\n"
    "  - name: the-largest-legal-service\n"
    "    model: erlang\n"
    "    servers: 30\n"
    "    service_time: 100ms\n"
    "    timeout: {min: 100ms, max: 200ms}\n"
    "    timeout_covers: response\n"
    "    service_time_cv: 1\n"
    "    tiers:\n"
    "      - {retries: 1, timeout: 6561s}\n"
    "      - {retries: 1, timeout: 2187s}\n"
    "      - {retries: 1, timeout: 729s}\n"
    "      - {retries: 1, timeout: 243s}\n"
    "      - {retries: 1, timeout: 81s}\n"
    "      - {retries: 1, timeout: 27s}\n"
    "      - {retries: 1, timeout: 9s}\n"
    "      - {retries: 1, timeout: 3s}\n"
    "      - {retries: 1, timeout: 1s}\n"
    "      - {retries: 1}\n"
    "    aws_retry_quota: {capacity: 500, retry_cost: 5, timeout_cost: 10,\n"
    "      refund: 1, throttling_cost: 5, throttling_share: 0.1,\n"
    "      costs: legacy}\n"
    "    layering: nested\n"
    "    queue_limit: 300\n"
    "    retry_rejections: true\n"
    "    backoff: {kind: exponential, base: 10ms, cap: 50ms, multiplier: 2}\n"
    "    base_failure: 0.001\n"
    "    headroom_warning: 0.1\n"
    "    safety_margin: 0.2\n"
    "    clear_after: 3\n"
    "    calibrate: [service_time, base_failure]\n"
    "    calibration_time: 300\n"
    "    calibration_threshold: 0.01\n"
    "    calibration_intervals: 10\n"
    "    misfit_threshold: 4\n"
    "    misfit_intervals: 5\n"
    "    inputs:\n"
    "      arrival_rate: {source: h/p/derive-a, missing: zero, scale: 1}\n"
    "      retry_rate: {source: h/p/derive-r, missing: zero, scale: 1}\n"
    "      error_rate: {source: h/p/derive-e, missing: zero, scale: 1}\n"
    "      queue_length: {source: h/p/gauge-q, missing: zero, scale: 1}\n"
    "      busy_servers: {source: h/p/gauge-b, missing: zero, scale: 1}\n"
    "      completion_rate: {source: h/p/derive-c, missing: zero, scale: 1}\n"
    "      latency: {source: h/p/gauge-l, missing: zero, scale: 0.001}\n"
    "      pool_size: {source: h/p/gauge-p, missing: skip, scale: 1}\n"
    "      offered_rate: {source: h/p/derive-o, missing: zero, scale: 1}\n";

START_TEST(test_largest_service) {
  yaml_parser_t parser;
  yaml_document_t doc;
  ck_assert(yaml_parser_initialize(&parser));
  yaml_parser_set_input_string(&parser, (const unsigned char *)largest_service,
                               strlen(largest_service));
  ck_assert(yaml_parser_load(&parser, &doc));
  /* the root mapping, the key 'services' and the list are not the
   * service's */
  size_t nodes = (size_t)(doc.nodes.top - doc.nodes.start) - 3;
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  ck_assert_uint_eq(nodes, 197);
  ck_assert_uint_ge(MS_SERVICE_MAX_NODES, 2 * nodes);
  ms_service_file f;
  char err[512];
  ck_assert_msg(ms_service_file_parse(largest_service, strlen(largest_service),
                                      "big.yaml", &f, err, sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(f.n_services, 1);
  ck_assert_int_eq(f.services[0].params.policy.tiers, 10);
  ms_service_file_free(&f);
}
END_TEST

/* A service of exactly `nodes` nodes: {name, x: [a, ...]} is 5 + the
 * scalars of x.  At the limit the node count passes and the loader
 * refuses the unknown key x; one past, the count refuses it first. */
START_TEST(test_service_nodes_edge) {
  char err[512];
  for (size_t nodes = MS_SERVICE_MAX_NODES; nodes <= MS_SERVICE_MAX_NODES + 1;
       nodes++) {
    text_buf b = {0};
    put(&b, "services:\n  - name: web\n    x: [a");
    for (size_t i = 1; i < nodes - 5; i++)
      put(&b, ", a");
    put(&b, "]\n");
    refused(&b, err, sizeof err);
    if (nodes == MS_SERVICE_MAX_NODES)
      ck_assert_msg(strstr(err, "big.yaml:3:5: unknown key 'x' in a service") ==
                        err,
                    "%s", err);
    else
      ck_assert_str_eq(err, "big.yaml:2:5: this service has more than 400 "
                            "YAML nodes (an alias counts as the nodes it "
                            "repeats): the limit of a service is 400");
    free(b.s);
  }
  /* an alias counts as what it repeats: 5 + 9 * 50 nodes of mappings in
   * one service, each alias one event */
  text_buf b = {0};
  put(&b, "services:\n  - name: a\n    model: capacity\n    capacity: 9\n"
          "    retries: 1\n    backoff: &b {kind: exponential, base: 10ms, "
          "cap: 50ms, multiplier: 2}\n    inputs: {offered_rate: 1}\n"
          "  - name: b\n    x: [");
  for (int i = 0; i < 50; i++)
    put(&b, "%s*b", i ? ", " : "");
  put(&b, "]\n");
  ck_assert_str_eq(refused(&b, err, sizeof err),
                   "big.yaml:8:5: this service has more than 400 YAML nodes "
                   "(an alias counts as the nodes it repeats): the limit of "
                   "a service is 400");
  free(b.s);
}
END_TEST

/* MS_SERVICE_FILE_MAX_SERVICES items pass the count (then the first is
 * not a mapping); one more is refused at its own column. */
START_TEST(test_services_edge) {
  char err[512];
  for (size_t n = MS_SERVICE_FILE_MAX_SERVICES;
       n <= MS_SERVICE_FILE_MAX_SERVICES + 1; n++) {
    text_buf b = {0};
    put(&b, "services: [a");
    for (size_t i = 1; i < n; i++)
      put(&b, ", a");
    put(&b, "]\n");
    refused(&b, err, sizeof err);
    if (n == MS_SERVICE_FILE_MAX_SERVICES)
      ck_assert_str_eq(err, "big.yaml:1:12: a service must be a mapping, not a "
                            "scalar");
    else {
      char want[256];
      /* "services: [" is 11 bytes, each earlier item 3 ("a, ") */
      snprintf(want, sizeof want,
               "big.yaml:1:%zu: more than 100000 services: the limit of a "
               "file is 100000",
               11 + 3 * (size_t)MS_SERVICE_FILE_MAX_SERVICES + 1);
      ck_assert_str_eq(err, want);
    }
    free(b.s);
  }
}
END_TEST

/* The nodes of a file, aliases expanded: {services: [], pad: [&a [999 a],
 * k aliases of it, p scalars]} has 5 + 1000 (k + 1) + p nodes.  At
 * MS_SERVICE_FILE_MAX_NODES the loader refuses the key pad; one more node
 * is refused by the count, at the scalar that passed it. */
START_TEST(test_file_nodes_edge) {
  char err[512];
  size_t limit = MS_SERVICE_FILE_MAX_NODES;
  size_t k = (limit - 5) / 1000 - 1, p = limit - 5 - 1000 * (k + 1);
  for (size_t extra = 0; extra <= 1; extra++) {
    text_buf b = {0};
    put(&b, "{services: [], pad: [&a [a");
    for (int i = 1; i < 999; i++)
      put(&b, ",a");
    put(&b, "]");
    for (size_t i = 0; i < k; i++)
      put(&b, ",*a");
    for (size_t i = 0; i < p + extra; i++)
      put(&b, ",b");
    put(&b, "]}\n");
    refused(&b, err, sizeof err);
    if (extra == 0)
      ck_assert_msg(strstr(err, "unknown key 'pad' in a service file") != NULL,
                    "%s", err);
    else {
      char want[256];
      snprintf(want, sizeof want,
               "big.yaml:1:%zu: more than 4000000 YAML nodes (an alias "
               "counts as the nodes it repeats): the limit of a file is "
               "4000000",
               b.len - 3);
      ck_assert_str_eq(err, want);
    }
    free(b.s);
  }
}
END_TEST

/* Anchors: MS_SERVICE_FILE_MAX_ANCHORS pass, one more is refused. */
START_TEST(test_anchors_edge) {
  char err[512];
  for (int n = MS_SERVICE_FILE_MAX_ANCHORS;
       n <= MS_SERVICE_FILE_MAX_ANCHORS + 1; n++) {
    text_buf b = {0};
    put(&b, "services: []\npad:\n");
    for (int i = 0; i < n; i++)
      put(&b, "  - &a%d x\n", i);
    refused(&b, err, sizeof err);
    if (n == MS_SERVICE_FILE_MAX_ANCHORS)
      ck_assert_msg(strstr(err, "unknown key 'pad'") != NULL, "%s", err);
    else
      ck_assert_str_eq(err, "big.yaml:103:5: more than 100 anchors (&name): "
                            "the limit of a file is 100");
    free(b.s);
  }
}
END_TEST

/* Repetition refused before any service is loaded or solved. */
START_TEST(test_aliases_and_names) {
  char err[512];
  struct {
    const char *text, *says;
  } cases[] = {
      /* a service repeated by an alias */
      {"services:\n  - &web {name: web, model: capacity, capacity: 9,\n"
       "      retries: 1, inputs: {offered_rate: 1}}\n  - *web\n",
       "big.yaml:4:5: a service cannot be an alias (*web): write each service "
       "out, with its own name"},
      /* a node that holds itself */
      {"services: &s [*s]\n",
       "big.yaml:1:15: the alias *s is inside the node it names: a node "
       "cannot hold itself"},
      {"services:\n  - name: a\n    inputs: &i {x: *i}\n",
       "big.yaml:3:20: the alias *i is inside the node it names: a node "
       "cannot hold itself"},
      /* a duplicate name wins over an error of the second service: the
       * names are compared before any service is read */
      {"services:\n  - {name: a, model: capacity, capacity: 9, retries: 1,\n"
       "     inputs: {offered_rate: 1}}\n  - {name: a, bogus: 1}\n",
       "big.yaml:4:5: service name 'a' is used twice (first at line 2)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    text_buf b = {0};
    put(&b, "%s", cases[i].text);
    ck_assert_str_eq(refused(&b, err, sizeof err), cases[i].says);
    free(b.s);
  }
}
END_TEST

/* The big files of issue 37, built in memory: refused, whatever the time
 * (speed is bench/'s to measure). */
START_TEST(test_big_files_refused) {
  char err[512];
  /* 8 MiB of services: [a, a, ...] */
  text_buf b = {0};
  put(&b, "services: [a");
  while (b.len < ((size_t)8 << 20))
    put(&b, ", a");
  put(&b, "]\n");
  ck_assert_str_eq(refused(&b, err, sizeof err),
                   "big.yaml:1:300012: more than 100000 services: the limit "
                   "of a file is 100000");
  /* billion laughs: nine levels of ten aliases each, 10^9 nodes in 200
   * bytes */
  b.len = 0;
  put(&b, "services: []\nl0: &l0 [a, a, a, a, a, a, a, a, a, a]\n");
  for (int i = 1; i <= 9; i++) {
    put(&b, "l%d: &l%d [", i, i);
    for (int j = 0; j < 10; j++)
      put(&b, "%s*l%d", j ? ", " : "", i - 1);
    put(&b, "]\n");
  }
  ck_assert_msg(strstr(refused(&b, err, sizeof err),
                       "more than 4000000 YAML nodes") != NULL,
                "%s", err);
  /* 10^6 services, each one line */
  b.len = 0;
  put(&b, "services:\n");
  for (int i = 0; i < 1000000; i++)
    put(&b,
        "- {name: s%d, model: capacity, capacity: 9, retries: 1, "
        "inputs: {offered_rate: 1}}\n",
        i);
  ck_assert_str_eq(refused(&b, err, sizeof err),
                   "big.yaml:100002:3: more than 100000 services: the limit "
                   "of a file is 100000");
  free(b.s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("service");
  TCase *tc = tcase_create("file");
  tcase_add_test(tc, test_good_file);
  tcase_add_test(tc, test_parse_cancelled);
  tcase_add_test(tc, test_queue_limit_keys);
  tcase_add_test(tc, test_backoff_key);
  tcase_add_loop_test(tc, test_bad_file, 0,
                      (int)(sizeof bad_files / sizeof *bad_files));
  tcase_add_test(tc, test_range_from_model);
  tcase_add_test(tc, test_missing_file);
  tcase_add_test(tc, test_units);
  tcase_add_test(tc, test_raw_nul);
  tcase_add_test(tc, test_long_scalars_keep_the_reason);
  tcase_add_test(tc, test_tiny_numbers_parsers);
  tcase_add_test(tc, test_tiny_numbers_in_files);
  tcase_add_test(tc, test_policies_and_tiers);
  tcase_add_test(tc, test_percent_and_minutes);
  tcase_add_test(tc, test_constant_rate_inputs);
  tcase_add_test(tc, test_shard_hash_vectors);
  tcase_add_test(tc, test_shard_moves_and_balance);
  tcase_add_test(tc, test_shard_parse);
  tcase_add_test(tc, test_keep_shard);
  tcase_add_test(tc, test_missing_inputs);
  tcase_add_test(tc, test_walk_every_key);
  tcase_add_test(tc, test_walk_errors);
  tcase_add_test(tc, test_edit_distance);
  tcase_add_test(tc, test_suggest);
  tcase_add_test(tc, test_bare_duration_rule);
  tcase_add_test(tc, test_bare_durations_in_file);
  suite_add_tcase(s, tc);
  tc = tcase_create("limits");
  /* files of up to 85 MB built in memory: a generous bound */
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_largest_service);
  tcase_add_test(tc, test_service_nodes_edge);
  tcase_add_test(tc, test_services_edge);
  tcase_add_test(tc, test_file_nodes_edge);
  tcase_add_test(tc, test_anchors_edge);
  tcase_add_test(tc, test_aliases_and_names);
  tcase_add_test(tc, test_big_files_refused);
  suite_add_tcase(s, tc);
  tc = tcase_create("step");
  /* test_safe_retries_every_policy scans every retry count of seven
   * services: about 1 s alone, past Check's default 4 s on a loaded
   * machine.  A generous bound; speed is bench/'s to measure. */
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_infer);
  tcase_add_test(tc, test_infer_missing_zero);
  tcase_add_test(tc, test_input_roles);
  tcase_add_test(tc, test_incident);
  tcase_add_test(tc, test_verdict_moments);
  tcase_add_test(tc, test_constants_observe_nothing);
  tcase_add_test(tc, test_headroom_warning_and_recovery);
  tcase_add_test(tc, test_storm_hazard);
  tcase_add_test(tc, test_storm_hazard_days);
  tcase_add_test(tc, test_storm_hazard_deferred);
  tcase_add_test(tc, test_storm_hazard_large_pool);
  tcase_add_test(tc, test_cold_start_in_storm);
  tcase_add_test(tc, test_flapping_storm_pages_once);
  tcase_add_test(tc, test_stall_tolerance_output);
  tcase_add_test(tc, test_stall_tolerance_stopped);
  tcase_add_test(tc, test_safe_retries_output);
  tcase_add_test(tc, test_safe_retries_deferred);
  tcase_add_test(tc, test_safe_retries_every_policy);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  return ms_check_run(sr);
}
