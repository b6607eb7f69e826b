/* SPDX-License-Identifier: MIT */
/*
 * The two tables: MS_OUTPUTS (service/outputs.h) against conf/types.db
 * (the types collectd is told about must be exactly the outputs, in
 * order, with the same ranges), and MS_PARAMS (model/loop.h), whose
 * ranges every front end reports.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_suites.h"
#include "metastable.h"
#include "outputs.h"

/* ---- outputs ----------------------------------------------------------- */

START_TEST(test_types_db_is_the_table) {
  FILE *f = fopen(MS_TOP_SRCDIR "/conf/types.db", "r");
  ck_assert_msg(f != NULL, "cannot open conf/types.db");
  char line[256];
  int row = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "# Not per service", 17) == 0)
      break; /* the shards' heartbeat, doc/outputs.md */
    if (line[0] == '#' || line[0] == '\n')
      continue;
    char name[64], ds[128];
    ck_assert_int_eq(sscanf(line, "%63s %127s", name, ds), 2);
    ck_assert_msg(row < MS_OUT_COUNT,
                  "types.db has more types than outputs: "
                  "%s",
                  name);
    const ms_output_info *o = ms_output_get((ms_output)row);
    ck_assert_str_eq(name, o->name);
    char want[128];
    snprintf(want, sizeof want, "value:GAUGE:%s:%s", o->ds_min, o->ds_max);
    ck_assert_str_eq(ds, want);
    row++;
  }
  fclose(f);
  ck_assert_int_eq(row, MS_OUT_COUNT);
}
END_TEST

START_TEST(test_output_lookup) {
  for (int i = 0; i < MS_OUT_COUNT; i++) {
    const ms_output_info *o = ms_output_get((ms_output)i);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(ms_output_find(o->name), i);
    ck_assert(strlen(o->name) < 64 && o->unit[0] && o->meaning[0]);
  }
  ck_assert_ptr_null(ms_output_get(MS_OUT_COUNT));
  ck_assert_ptr_null(ms_output_get((ms_output)-1));
  ck_assert_int_eq(ms_output_find("tipping"), -1);
  ck_assert_int_eq(ms_output_find(NULL), -1);
}
END_TEST

/* Every output of a real report is its member, converted exactly; the
 * observations are there only when observed. */
START_TEST(test_report_output) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 30, 10.0, 1.0);
  ms_retry_policy_fixed(&s.policy, 1);
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ms_observation obs = {.offered_load = 200.0,
                        .has_observed_attempts = true,
                        .observed_attempts = 399.5};
  ms_analysis an;
  ck_assert_int_eq(ms_analyze(&ls, &obs, &an, NULL), MS_OK);
  ms_report r;
  ms_report_of(&r, &an);
  double v;
  ck_assert(ms_report_output(&r, MS_OUT_TIPPING_LOAD, &v));
  ck_assert(v == an.tipping_load);
  ck_assert(ms_report_output(&r, MS_OUT_STATE, &v));
  ck_assert(v == (double)MS_STATE_METASTABLE);
  ck_assert(ms_report_output(&r, MS_OUT_STORM, &v) && v == 1.0);
  ck_assert(ms_report_output(&r, MS_OUT_EQUILIBRIA, &v) && v == 3.0);
  ck_assert(ms_report_output(&r, MS_OUT_OBSERVED_EFFECTIVE_LOAD, &v));
  ck_assert(v == 399.5);
  v = -7.0;
  ck_assert(!ms_report_output(&r, MS_OUT_OBSERVED_FAILURE_RATIO, &v));
  ck_assert(v == -7.0);
  ck_assert(!ms_report_output(&r, MS_OUT_COUNT, &v));
}
END_TEST

/* ---- parameters -------------------------------------------------------- */

/* The ranges as the documentation and the front ends state them. */
static const struct {
  ms_param id;
  const char *range;
} ranges[] = {
    {MS_PARAM_CAPACITY, "> 0 and at most 1e+300"},
    {MS_PARAM_SERVERS, "in [1, 10000000]"},
    {MS_PARAM_SERVICE_RATE, "> 0, at least 1e-300 and at most 1e+290"},
    {MS_PARAM_SERVICE_TIME, "> 0, at least 1e-290 and at most 1e+300"},
    {MS_PARAM_TIMEOUT, ">= 0 and at most 1e+300"},
    {MS_PARAM_BASE_FAILURE, "in [0, 1)"},
    {MS_PARAM_SERVICE_TIME_CV, "in [0, 10]"},
    {MS_PARAM_TIMEOUT_GRANULARITY, ">= 0 and at most 1e+300"},
    {MS_PARAM_RETRIES, "in [0, 10000]"},
    {MS_PARAM_TIERS, "in [1, 10]"},
    {MS_PARAM_RETRY_BUDGET, "in [0, 1)"},
    {MS_PARAM_TOKEN_RATIO, "in (0, 1]"},
    {MS_PARAM_GRPC_MAX_TOKENS, "in [1, 1000]"},
    {MS_PARAM_GRPC_TOKEN_RATIO, "in (0, 1]"},
    {MS_PARAM_ENVOY_BUDGET, "in [0, 1]"},
    {MS_PARAM_ENVOY_MIN_CONCURRENCY, "in [0, 1000000000]"},
    {MS_PARAM_FINAGLE_PERCENT, "in [0, 10]"},
    {MS_PARAM_FINAGLE_MIN_PER_SECOND, ">= 0 and at most 1e+300"},
    {MS_PARAM_FINAGLE_TTL, "in [1, 60]"},
    {MS_PARAM_AWS_CAPACITY, "in (0, 1e+12]"},
    {MS_PARAM_AWS_RETRY_COST, "in (0, 1e+12]"},
    {MS_PARAM_AWS_TIMEOUT_COST, "in (0, 1e+12]"},
    {MS_PARAM_AWS_REFUND, "in [0, 1e+12]"},
    {MS_PARAM_AWS_THROTTLING_COST, "in (0, 1e+12]"},
    {MS_PARAM_AWS_THROTTLING_SHARE, "in [0, 1]"},
    {MS_PARAM_QUEUE_LIMIT, "in [0, 10000000]"},
    {MS_PARAM_OFFERED_LOAD, ">= 0 and at most 1e+300"},
    {MS_PARAM_OBSERVED_ATTEMPTS, ">= 0 and at most 1e+300"},
    {MS_PARAM_OBSERVED_FAILURE, "in [0, 1]"},
    {MS_PARAM_INTERVAL, ">= 0 and at most 1e+300"},
    {MS_PARAM_QUEUE_LENGTH, ">= 0 and at most 1e+300"},
};

START_TEST(test_param_range_text) {
  ck_assert_int_eq(sizeof ranges / sizeof ranges[0], MS_PARAM_COUNT);
  char buf[96];
  ck_assert_str_eq(ms_param_range(ranges[_i].id, buf, sizeof buf),
                   ranges[_i].range);
  const ms_param_info *p = ms_param_get(ranges[_i].id);
  ck_assert_int_eq(ms_param_find(p->key), (int)ranges[_i].id);
}
END_TEST

/* Each end of each range is accepted or refused as its bound says, the
 * nearest doubles beyond it are refused, and nothing non-finite passes. */
START_TEST(test_param_bounds) {
  ms_param id = (ms_param)_i;
  const ms_param_info *p = ms_param_get(id);
  ms_error e;
  bool lo_open = p->bounds & MS_BOUND_LO_OPEN;
  bool hi_open = p->bounds & MS_BOUND_HI_OPEN;
  ck_assert_int_eq(ms_param_check(id, p->lo, NULL),
                   lo_open ? MS_EINVAL : MS_OK);
  ck_assert_int_eq(ms_param_check(id, p->hi, NULL),
                   hi_open ? MS_EINVAL : MS_OK);
  double below = p->whole ? p->lo - 1 : nextafter(p->lo, -INFINITY);
  double above = p->whole ? p->hi + 1 : nextafter(p->hi, INFINITY);
  ck_assert_int_eq(ms_param_check(id, below, &e), MS_EINVAL);
  ck_assert_msg(strstr(e.msg, p->key) == e.msg, "%s", e.msg);
  ck_assert_int_eq(ms_param_check(id, above, &e), MS_EINVAL);
  ck_assert_int_eq(ms_param_check(id, NAN, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_param_check(id, INFINITY, NULL), MS_EINVAL);
  ck_assert_int_eq(ms_param_check(id, -INFINITY, NULL), MS_EINVAL);
  double mid = p->whole ? floor(0.5 * (p->lo + p->hi))
                        : (p->hi > 1e200 ? 1.0 : 0.5 * (p->lo + p->hi));
  ck_assert_int_eq(ms_param_check(id, mid, NULL), MS_OK);
  if (p->whole)
    ck_assert_int_eq(ms_param_check(id, mid + 0.5, NULL), MS_EINVAL);
}
END_TEST

START_TEST(test_param_messages) {
  ms_error e;
  ck_assert_int_eq(ms_param_check(MS_PARAM_SERVERS, 0, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "servers = 0 is outside [1, 10000000]");
  ck_assert_int_eq(ms_param_check(MS_PARAM_SERVERS, 2.5, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "servers = 2.5 is not a whole number");
  ck_assert_int_eq(ms_param_check(MS_PARAM_CAPACITY, 0, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "capacity = 0 req/s must be > 0 and at most 1e+300");
  ck_assert_int_eq(ms_param_check(MS_PARAM_TOKEN_RATIO, 0, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "token_ratio = 0 is outside (0, 1]");
  /* the model's own checks say the same */
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 0, 10.0, 1.0);
  ms_retry_policy_fixed(&s.policy, 1);
  ck_assert_int_eq(ms_service_params_check(&s, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "servers = 0 is outside [1, 10000000]");
  ck_assert_int_eq(ms_param_check(MS_PARAM_COUNT, 1, &e), MS_EINVAL);
  ck_assert_ptr_null(ms_param_get(MS_PARAM_COUNT));
  ck_assert_int_eq(ms_param_find("colour"), -1);
}
END_TEST

/* -1, 0 or 1 as a is below, at or above b. */
static int side_of(double a, double b) { return (a > b) - (a < b); }

/* ms_format_against: the text reads back on the side of the bound the
 * value is on, with the fewest digits from 6 that do (checked against
 * snprintf and strtod directly); every parameter's bounds and their
 * neighbours one ulp out, and the messages of the issue. */
START_TEST(test_format_against) {
  double cases[64][2];
  size_t n = 0;
  static const double bounds[] = {0.0,   1.0,      10.0, 0.5,  1e-290,
                                  1e300, 604800.0, 0.1,  256.0};
  for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
    double b = bounds[i];
    cases[n][0] = nextafter(b, INFINITY), cases[n++][1] = b;
    cases[n][0] = nextafter(b, -INFINITY), cases[n++][1] = b;
    cases[n][0] = b, cases[n++][1] = b;
    cases[n][0] = 2 * b + 1, cases[n++][1] = b;
  }
  cases[n][0] = ((256 << 20) + 1) / 1048576.0, cases[n++][1] = 256.0;
  for (size_t i = 0; i < n; i++) {
    double x = cases[i][0], b = cases[i][1];
    char buf[32], ref[32];
    ms_format_against(buf, x, b);
    ck_assert_msg(side_of(strtod(buf, NULL), b) == side_of(x, b),
                  "%.17g against %.17g: %s", x, b, buf);
    int digits = 6;
    while (snprintf(ref, sizeof ref, "%.*g", digits, x),
           strcmp(ref, buf) != 0 && digits < 17)
      digits++;
    ck_assert_str_eq(ref, buf);
    if (digits > 6) { /* one digit fewer would not do */
      snprintf(ref, sizeof ref, "%.*g", digits - 1, x);
      ck_assert_int_ne(side_of(strtod(ref, NULL), b), side_of(x, b));
    }
  }
  char buf[32];
  ck_assert_str_eq(ms_format_against(buf, nextafter(10.0, 11.0), 10.0),
                   "10.000000000000002");
  ck_assert_str_eq(ms_format_against(buf, 2e12, 1e12), "2e+12");
  ck_assert_str_eq(ms_format_against(buf, NAN, 1.0), "nan");
  ck_assert_str_eq(ms_format_against(buf, -INFINITY, 1.0), "-inf");
  /* the messages that rounded the value into the bound */
  ms_error e;
  ck_assert_int_eq(
      ms_param_check(MS_PARAM_SERVICE_TIME_CV, nextafter(10.0, 11.0), &e),
      MS_EINVAL);
  ck_assert_str_eq(e.msg,
                   "service_time_cv = 10.000000000000002 is outside [0, 10]");
  ck_assert_int_eq(
      ms_param_check(MS_PARAM_TOKEN_RATIO, nextafter(1.0, 2.0), &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "token_ratio = 1.0000000000000002 is outside (0, 1]");
  ck_assert_int_eq(ms_param_check(MS_PARAM_SERVERS, nextafter(30.0, 31.0), &e),
                   MS_EINVAL);
  ck_assert_str_eq(e.msg, "servers = 30.000000000000004 is not a whole number");
  ck_assert_int_eq(
      ms_param_check(MS_PARAM_CAPACITY, 1.0000000000000002e300, &e), MS_EINVAL);
  ck_assert_str_eq(e.msg, "capacity = 1.0000000000000002e+300 req/s must be "
                          "> 0 and at most 1e+300");
}
END_TEST

Suite *tables_suite(void) {
  Suite *s = suite_create("tables");
  TCase *tc = tcase_create("outputs");
  tcase_add_test(tc, test_types_db_is_the_table);
  tcase_add_test(tc, test_output_lookup);
  tcase_add_test(tc, test_report_output);
  suite_add_tcase(s, tc);
  tc = tcase_create("parameters");
  tcase_add_loop_test(tc, test_param_range_text, 0, MS_PARAM_COUNT);
  tcase_add_loop_test(tc, test_param_bounds, 0, MS_PARAM_COUNT);
  tcase_add_test(tc, test_param_messages);
  tcase_add_test(tc, test_format_against);
  suite_add_tcase(s, tc);
  return s;
}
