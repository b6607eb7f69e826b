/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the command-line tool's pure helpers (cli/): number output,
 * CSV fields, the JSON writer (read back with Jansson), RFC 3339 times
 * (against glibc's timegm), the trace reader, option checks, the Prometheus
 * merge and the gnuplot script.
 */
#define _GNU_SOURCE
#include <check.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "common.h"
#include "json.h"
#include "layout.h"
#include "plot.h"
#include "sanitize.h"
#include "trace.h"

/* Run fn(f) with f writing to memory; returns the text (malloc'd). */
static char *capture(void (*fn)(FILE *, const void *), const void *arg) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  fn(f, arg);
  fclose(f);
  return buf;
}

/* ---- numbers and CSV -------------------------------------------------- */

START_TEST(test_fmt_double) {
  char b[32];
  ck_assert_str_eq(ms_format_double(b, 0.1), "0.1");
  ck_assert_str_eq(ms_format_double(b, 0.95), "0.95");
  ck_assert_str_eq(ms_format_double(b, 1.0 / 3), "0.3333333333333333");
  ck_assert_str_eq(ms_format_double(b, 200), "200");
  ck_assert_str_eq(ms_format_double(b, -0.0), "-0");
  ck_assert_str_eq(ms_format_double(b, 1e300), "1e+300");
  ck_assert_str_eq(ms_format_double(b, 4.9406564584124654e-324),
                   "4.94065645841247e-324");
  ck_assert_str_eq(ms_format_double(b, NAN), "nan");
  ck_assert_str_eq(ms_format_double(b, -INFINITY), "-inf");
  /* every double reads back exactly, in at most 17 digits */
  srand(12345);
  for (int i = 0; i < 200000; i++) {
    unsigned long long bits = 0;
    for (int k = 0; k < 4; k++)
      bits = bits << 16 ^ (unsigned long long)(rand() & 0xffff);
    double x;
    memcpy(&x, &bits, sizeof x);
    if (!isfinite(x))
      continue;
    ms_format_double(b, x);
    ck_assert_msg(strtod(b, NULL) == x, "%s", b);
    ck_assert(strlen(b) <= 24);
  }
}
END_TEST

/* The definition ms_format_double keeps, as it was written before it
 * was made faster (issue 38): the first of %.15g, %.16g, %.17g that
 * strtod reads back as x. */
static const char *format_reference(char buf[32], double x) {
  if (isnan(x))
    return strcpy(buf, "nan");
  if (isinf(x))
    return strcpy(buf, x > 0 ? "inf" : "-inf");
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, 32, "%.*g", prec, x);
    if (prec == 17 || strtod(buf, NULL) == x)
      break;
  }
  return buf;
}

/* x, -x and their neighbours formatted as the reference does; returns
 * the number of doubles compared. */
static long same_as_reference(double x) {
  double v[6] = {x, nextafter(x, INFINITY), nextafter(x, -INFINITY)};
  for (int k = 0; k < 3; k++)
    v[3 + k] = -v[k];
  for (int k = 0; k < 6; k++) {
    char got[32], want[32];
    ms_format_double(got, v[k]);
    format_reference(want, v[k]);
    ck_assert_msg(strcmp(got, want) == 0, "%a: %s, reference %s", v[k], got,
                  want);
  }
  return 6;
}

/* 64 random bits (rand() gives at least 15 per call). */
static unsigned long long random_bits(void) {
  unsigned long long bits = 0;
  for (int k = 0; k < 5; k++)
    bits = bits << 15 ^ (unsigned long long)(rand() & 0x7fff);
  return bits;
}

/* ms_format_double writes byte for byte what the three printf calls of
 * its definition write: over random bit patterns, whole numbers, decimals
 * (0.1 k, random 15- and 16-digit ones), powers of 2 and 10, subnormals,
 * the extremes, and exact ties of the 15th and 16th digit (k + 0.5 for k
 * of 15 and 16 digits, which printf breaks to even), each with its two
 * neighbours and negated. */
START_TEST(test_fmt_double_reference) {
  long n = 0;
  srand(3838);
  for (int i = 0; i < 60000; i++) {
    unsigned long long bits = random_bits();
    double x;
    memcpy(&x, &bits, sizeof x);
    if (isfinite(x))
      n += same_as_reference(x);
  }
  for (int i = 0; i < 20000; i++) { /* magnitudes where people's numbers
                                       are: 1e-9 .. 1e9 */
    double x = ldexp((double)(random_bits() >> 11), -53) *
               pow(10.0, (double)(rand() % 19 - 9));
    n += same_as_reference(x);
  }
  for (int k = 0; k <= 5000; k++) {
    n += same_as_reference(k);
    n += same_as_reference(0.1 * k);
    n += same_as_reference(k / 10.0);
    n += same_as_reference(k / 1000.0);
    n += same_as_reference(1.0 / (k + 1));
  }
  for (int i = 0; i < 20000; i++) { /* random 15- and 16-digit decimals */
    char text[64];
    unsigned long long m = random_bits() % 10000000000000000ULL;
    snprintf(text, sizeof text, "%llue%d", m, rand() % 640 - 330);
    n += same_as_reference(strtod(text, NULL));
    snprintf(text, sizeof text, "%llue%d", m / 10, rand() % 640 - 330);
    n += same_as_reference(strtod(text, NULL));
  }
  for (int i = 0; i < 20000; i++) { /* exact ties of digit 15 and 16 */
    double k16 = 1e15 + (double)(random_bits() % 3503599627370496ULL);
    double k15 = 1e14 + (double)(random_bits() % 900000000000000ULL);
    n += same_as_reference(k16 + 0.5);
    n += same_as_reference(k15 + 0.5);
    n += same_as_reference(k15 + 0.25);
    n += same_as_reference(k15 + 0.75);
  }
  for (int e = -1074; e <= 1023; e++)
    n += same_as_reference(ldexp(1.0, e));
  for (int e = -323; e <= 308; e++) {
    char text[16];
    snprintf(text, sizeof text, "1e%d", e);
    n += same_as_reference(strtod(text, NULL));
    snprintf(text, sizeof text, "9.5e%d", e);
    n += same_as_reference(strtod(text, NULL));
  }
  for (unsigned long long m = 1; m < 5000; m++) { /* subnormals */
    double x;
    memcpy(&x, &m, sizeof x);
    n += same_as_reference(x);
    n += same_as_reference(x * 1e3);
  }
  static const double extremes[] = {
      0.0, DBL_MIN, DBL_MAX, DBL_TRUE_MIN, DBL_EPSILON, 1.0, 9007199254740992.0,
      0.1, 1e23};
  for (size_t i = 0; i < sizeof extremes / sizeof extremes[0]; i++)
    n += same_as_reference(extremes[i]);
  ck_assert_int_gt(n, 1000000);
}
END_TEST

static void csv_cases(FILE *f, const void *arg) {
  (void)arg;
  const char *cases[] = {"plain", "a,b", "say \"hi\"", "two\nlines", ""};
  for (size_t i = 0; i < 5; i++) {
    ms_cli_csv_field(f, cases[i]);
    fputc('|', f);
  }
}

/* ms_sanitize: C0, DEL, C1 and malformed UTF-8 escaped as \xNN,
 * well-formed UTF-8 kept (RFC 3629), cut at a whole escape. */
START_TEST(test_sanitize) {
  char out[64];
  static const struct {
    const char *in, *want;
  } cases[] = {
      {"plain, text\\", "plain, text\\"},
      {"\x1b[31mred\x07", "\\x1b[31mred\\x07"},
      {"tab\there\nnl\x7f", "tab\\x09here\\x0anl\\x7f"},
      {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
       "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
      {"\xc2\x9b"
       "1m",
       "\\xc2\\x9b1m"},                             /* C1 CSI */
      {"\xc0\xaf", "\\xc0\\xaf"},                   /* overlong '/' */
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},          /* a surrogate */
      {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"}, /* > U+10FFFF */
      {"\xe2\x82", "\\xe2\\x82"},                   /* cut short */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = ms_sanitize(out, sizeof out, cases[i].in);
    ck_assert_str_eq(out, cases[i].want);
    ck_assert_uint_eq(n, strlen(cases[i].want));
  }
  /* room for "ab" and not for a whole escape after it */
  ck_assert_uint_eq(ms_sanitize(out, 6,
                                "ab\x01"
                                "cd"),
                    2);
  ck_assert_str_eq(out, "ab");
}
END_TEST

START_TEST(test_csv_field) {
  char *s = capture(csv_cases, NULL);
  ck_assert_str_eq(s, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"||");
  free(s);
}
END_TEST

/* ---- JSON ------------------------------------------------------------- */

static void json_doc(FILE *f, const void *arg) {
  int pretty = *(const int *)arg;
  ms_json j;
  ms_json_init(&j, f, pretty);
  ms_json_begin_object(&j, NULL);
  ms_json_string(&j, "text",
                 "quote \" backslash \\ tab \t nl \n bell \a "
                 "λ");
  ms_json_number(&j, "third", 1.0 / 3);
  ms_json_number(&j, "nan", NAN);
  ms_json_number(&j, "tiny", 5e-324);
  ms_json_int(&j, "int", -42);
  ms_json_bool(&j, "yes", true);
  ms_json_null(&j, "nothing");
  ms_json_begin_array(&j, "rows");
  for (int i = 0; i < 2; i++) {
    ms_json_begin_object(&j, NULL);
    ms_json_int(&j, "i", i);
    ms_json_begin_array(&j, "empty");
    ms_json_end_array(&j);
    ms_json_end_object(&j);
  }
  ms_json_end_array(&j);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

START_TEST(test_json_roundtrip) {
  for (int pretty = 0; pretty < 4; pretty++) {
    char *s = capture(json_doc, &pretty);
    json_error_t err;
    json_t *root = json_loads(s, 0, &err);
    ck_assert_msg(root != NULL, "%s: %s", err.text, s);
    ck_assert_str_eq(json_string_value(json_object_get(root, "text")),
                     "quote \" backslash \\ tab \t nl \n bell \a λ");
    ck_assert(json_real_value(json_object_get(root, "third")) == 1.0 / 3);
    ck_assert(json_is_null(json_object_get(root, "nan")));
    ck_assert(json_real_value(json_object_get(root, "tiny")) == 5e-324);
    ck_assert_int_eq(json_integer_value(json_object_get(root, "int")), -42);
    ck_assert(json_is_true(json_object_get(root, "yes")));
    ck_assert(json_is_null(json_object_get(root, "nothing")));
    json_t *rows = json_object_get(root, "rows");
    ck_assert_int_eq(json_array_size(rows), 2);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_array_get(rows, 1), "i")), 1);
    json_decref(root);
    free(s);
  }
}
END_TEST

START_TEST(test_json_layout) {
  int pretty = 1;
  char *s = capture(json_doc, &pretty);
  ck_assert_str_eq(
      s, "{\n"
         "  \"text\": \"quote \\\" backslash \\\\ tab \\t nl \\n bell "
         "\\u0007 λ\",\n"
         "  \"third\": 0.3333333333333333,\n"
         "  \"nan\": null,\n"
         "  \"tiny\": 4.94065645841247e-324,\n"
         "  \"int\": -42,\n"
         "  \"yes\": true,\n"
         "  \"nothing\": null,\n"
         "  \"rows\": [{\"i\": 0, \"empty\": []}, {\"i\": 1, \"empty\": []}]\n"
         "}\n");
  free(s);
}
END_TEST

/* ---- time ------------------------------------------------------------- */

START_TEST(test_parse_time) {
  double t;
  ck_assert_int_eq(ms_parse_time("1970-01-01T00:00:00Z", &t), 0);
  ck_assert(t == 0);
  ck_assert_int_eq(ms_parse_time("2024-05-01T12:00:00Z", &t), 0);
  ck_assert(t == 1714564800);
  ck_assert_int_eq(ms_parse_time("2024-05-01 14:00:00.25+02:00", &t), 0);
  ck_assert(t == 1714564800.25);
  ck_assert_int_eq(ms_parse_time("2024-05-01t06:30:00-05:30", &t), 0);
  ck_assert(t == 1714564800);
  ck_assert_int_eq(ms_parse_time("1969-12-31T23:59:59z", &t), 0);
  ck_assert(t == -1);
  ck_assert_int_eq(ms_parse_time("2024-02-29T00:00:00Z", &t), 0);
  ck_assert_int_eq(ms_parse_time("1714564800.5", &t), 0);
  ck_assert(t == 1714564800.5);
  ck_assert_int_eq(ms_parse_time("12", &t), 0);
  ck_assert(t == 12);
  const char *bad[] = {"2023-02-29T00:00:00Z",
                       "2024-05-01T12:00:00",
                       "2024-05-01T24:00:00Z",
                       "2024-13-01T00:00:00Z",
                       "2024-05-01T12:00Z",
                       "2024-05-01T12:00:00.Z",
                       "2024-05-01T12:00:00Zx",
                       "2024-05-01",
                       "nan",
                       "inf",
                       "0x10",
                       "",
                       "12 o'clock",
                       "1e999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(ms_parse_time(bad[i], &t) == -1, "%s", bad[i]);
  /* against glibc's timegm on dates from 1901 to 2099 */
  srand(7);
  for (int i = 0; i < 20000; i++) {
    struct tm tm = {.tm_year = 1 + rand() % 199,
                    .tm_mon = rand() % 12,
                    .tm_mday = 1 + rand() % 28,
                    .tm_hour = rand() % 24,
                    .tm_min = rand() % 60,
                    .tm_sec = rand() % 60};
    char text[64];
    strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    ck_assert_int_eq(ms_parse_time(text, &t), 0);
    ck_assert_msg(t == (double)timegm(&tm), "%s", text);
  }
}
END_TEST

/* ---- the trace reader ------------------------------------------------- */

static FILE *text_file(const char *text) {
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  ck_assert_ptr_nonnull(f);
  return f;
}

START_TEST(test_trace_rows) {
  const char *text = "\xef\xbb\xbf# comment\n"
                     "time, error_rate ,arrival_rate\r\n"
                     "\n"
                     "2024-05-01T12:00:00Z,1.5,100\r\n"
                     "1714564810,,\"200\"\n"
                     "1714564820,NaN,3e2\n";
  FILE *f = text_file(text);
  ms_trace t;
  char err[400];
  ck_assert_int_eq(ms_trace_open(&t, f, "x.csv", err, sizeof err), 0);
  ck_assert_int_eq(t.time_col, 0);
  ck_assert_int_eq(t.input_col[MS_INPUT_ERROR], 1);
  ck_assert_int_eq(t.input_col[MS_INPUT_ARRIVAL], 2);
  ck_assert_int_eq(t.input_col[MS_INPUT_OFFERED], -1);
  ms_trace_row r;
  ck_assert_int_eq(ms_trace_next(&t, &r, err, sizeof err), 1);
  ck_assert_int_eq(r.line, 4);
  ck_assert(r.unix_time == 1714564800);
  ck_assert(r.in.has[MS_INPUT_ERROR] && r.in.value[MS_INPUT_ERROR] == 1.5);
  ck_assert(r.in.has[MS_INPUT_ARRIVAL] && r.in.value[MS_INPUT_ARRIVAL] == 100);
  ck_assert(!r.in.has[MS_INPUT_OFFERED]);
  ck_assert_int_eq(ms_trace_next(&t, &r, err, sizeof err), 1);
  ck_assert(!r.in.has[MS_INPUT_ERROR]);
  ck_assert(r.in.value[MS_INPUT_ARRIVAL] == 200);
  ck_assert_str_eq(r.time_text, "1714564810");
  ck_assert_int_eq(ms_trace_next(&t, &r, err, sizeof err), 1);
  ck_assert(r.in.has[MS_INPUT_ERROR] && isnan(r.in.value[MS_INPUT_ERROR]));
  ck_assert_int_eq(ms_trace_next(&t, &r, err, sizeof err), 0);
  ms_trace_close(&t);
  fclose(f);
}
END_TEST

START_TEST(test_trace_errors) {
  const struct {
    const char *text, *msg;
  } cases[] = {
      {"time,retry_rate\n1,0x10\n",
       "t.csv:2:3: retry_rate: '0x10' is not a number"},
      {"time,retry_rate\n1,1\n1,2\n",
       "t.csv:3:1: time: '1' is not after the previous row's"},
      {"time,pool_size,retry_rate\n1,\"3\"x,1\n",
       "t.csv:2:6: text after a quoted cell"},
      {"time,pool_size\n\n1\n", "t.csv:3:2: 1 cell, but the header has 2"},
      {"time,size\n", "t.csv:1:6: unknown column 'size'"},
      {"# only a comment\n", "t.csv:1:1: the trace is empty"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    FILE *f = text_file(cases[i].text);
    ms_trace t;
    char err[400] = "";
    int r = ms_trace_open(&t, f, "t.csv", err, sizeof err);
    ms_trace_row row;
    while (r == 0 && (r = ms_trace_next(&t, &row, err, sizeof err)) == 1)
      r = 0;
    ck_assert_int_eq(r, -1);
    ck_assert_msg(strncmp(err, cases[i].msg, strlen(cases[i].msg)) == 0,
                  "got '%s', want '%s'", err, cases[i].msg);
    ms_trace_close(&t);
    fclose(f);
  }
}
END_TEST

/* Model parameters on the command line: parsed by their unit, ranged by the
 * model's table (MS_PARAMS), and reported with the option's name. */
START_TEST(test_param_options) {
  char msg[400];
  double x;
  ck_assert_int_eq(ms_cli_check_param("--servers", "30", MS_PARAM_SERVERS, &x,
                                      msg, sizeof msg),
                   0);
  ck_assert(x == 30);
  ck_assert_int_eq(ms_cli_check_param("--servers", "2.5", MS_PARAM_SERVERS, &x,
                                      msg, sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--servers: '2.5' is not a whole number");
  ck_assert_int_eq(ms_cli_check_param("--servers", "0", MS_PARAM_SERVERS, &x,
                                      msg, sizeof msg),
                   -1);
  ck_assert_str_eq(
      msg, "--servers: '0' is out of range: it must be in [1, 10000000]");
  ck_assert_int_eq(ms_cli_check_param("--timeout", "250ms", MS_PARAM_TIMEOUT,
                                      &x, msg, sizeof msg),
                   0);
  ck_assert(x == 0.25);
  ck_assert_int_eq(ms_cli_check_param("--timeout", "5min", MS_PARAM_TIMEOUT, &x,
                                      msg, sizeof msg),
                   -1);
  ck_assert_msg(strstr(msg, "--timeout: '5min': unknown time unit") == msg,
                "%s", msg);
  ck_assert_int_eq(ms_cli_check_param("--capacity", "10/s", MS_PARAM_CAPACITY,
                                      &x, msg, sizeof msg),
                   0);
  ck_assert(x == 10);
  ck_assert_int_eq(ms_cli_check_param("--capacity", "0", MS_PARAM_CAPACITY, &x,
                                      msg, sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--capacity: '0' is out of range: it must be > 0 and "
                        "at most 1e+300");
  ck_assert_int_eq(ms_cli_check_param("--service-time", "1e-300",
                                      MS_PARAM_SERVICE_TIME, &x, msg,
                                      sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--service-time: '1e-300' is out of range: it must be "
                        "> 0, at least 1e-290 and at most 1e+300");
  ck_assert_int_eq(ms_cli_check_param("--token-ratio", "1",
                                      MS_PARAM_TOKEN_RATIO, &x, msg,
                                      sizeof msg),
                   0);
  ck_assert_int_eq(ms_cli_check_param("--token-ratio", "x",
                                      MS_PARAM_TOKEN_RATIO, &x, msg,
                                      sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--token-ratio: 'x' is not a number or a percentage");
  ck_assert_int_eq(ms_cli_check_param("--token-ratio", "50%",
                                      MS_PARAM_TOKEN_RATIO, &x, msg,
                                      sizeof msg),
                   0);
  ck_assert_double_eq(x, 0.5);
  ck_assert_int_eq(ms_cli_check_param("--base-failure", "100%",
                                      MS_PARAM_BASE_FAILURE, &x, msg,
                                      sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--base-failure: '100%' is out of range: it must be "
                        "in [0, 1)");
  ck_assert_int_eq(ms_cli_check_param("--servers", "10%", MS_PARAM_SERVERS, &x,
                                      msg, sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--servers: '10%' is a percentage, but servers is a "
                        "count, not a share");
  ck_assert_int_eq(ms_cli_check_param("--timeout", "1.5h", MS_PARAM_TIMEOUT, &x,
                                      msg, sizeof msg),
                   0);
  ck_assert_double_eq(x, 5400.0);
  ck_assert_int_eq(ms_cli_check_share("--settle-tolerance", "2%", 0, 1,
                                      MS_RANGE_LO_OPEN | MS_RANGE_HI_OPEN, &x,
                                      msg, sizeof msg),
                   0);
  ck_assert_double_eq(x, 0.02);
  ck_assert_int_eq(ms_cli_check_share("--settle-tolerance", "200%", 0, 1,
                                      MS_RANGE_LO_OPEN | MS_RANGE_HI_OPEN, &x,
                                      msg, sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--settle-tolerance: '200%' is out of range: it must "
                        "be in (0, 1)");
  /* a value that fails leaves *out as it was */
  x = -1;
  ck_assert_int_eq(ms_cli_check_param("--base-failure", "1",
                                      MS_PARAM_BASE_FAILURE, &x, msg,
                                      sizeof msg),
                   -1);
  ck_assert(x == -1);
}
END_TEST

/* ---- option checks ---------------------------------------------------- */

START_TEST(test_option_checks) {
  char msg[400];
  double x;
  long n;
  ck_assert_int_eq(ms_cli_check_real("--p", "0.5", 0, 1, MS_RANGE_HI_OPEN, &x,
                                     msg, sizeof msg),
                   0);
  ck_assert(x == 0.5);
  ck_assert_int_eq(ms_cli_check_real("--p", "1", 0, 1, MS_RANGE_HI_OPEN, &x,
                                     msg, sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--p: '1' is out of range: it must be in [0, 1)");
  ck_assert_int_eq(ms_cli_check_real("--p", "0", 0, INFINITY, MS_RANGE_LO_OPEN,
                                     &x, msg, sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--p: '0' is out of range: it must be > 0");
  ck_assert_int_eq(
      ms_cli_check_real("--p", "1e999", 0, 1, 0, &x, msg, sizeof msg), -1);
  ck_assert_str_eq(msg, "--p: '1e999' is not a number");
  /* the one rule for numbers near 0 (service/units.h), as in the files:
   * a subnormal is refused in decimal and in hexadecimal (where strtod
   * says nothing), and so is a number that rounds to 0 */
  static const char *const tiny[] = {"1e-310", "0x1p-1074", "1e-400"};
  for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
    char ref[320], want[360];
    ck_assert_int_eq(
        ms_cli_check_real("--p", tiny[i], 0, 1, 0, &x, msg, sizeof msg), -1);
    snprintf(want, sizeof want, "--p: %s",
             ms_number_tiny_message(ref, sizeof ref, tiny[i]));
    ck_assert_str_eq(msg, want);
    ck_assert_int_eq(
        ms_cli_check_share("--p", tiny[i], 0, 1, 0, &x, msg, sizeof msg), -1);
    ck_assert_str_eq(msg, want);
  }
  ck_assert_int_eq(
      ms_cli_check_real("--p", "0x1p-1022", 0, 1, 0, &x, msg, sizeof msg), 0);
  ck_assert(x == 0x1p-1022);
  ck_assert_int_eq(ms_cli_check_long("--n", "12x", 1, 10, &n, msg, sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--n: '12x' is not a whole number");
  ck_assert_int_eq(ms_cli_check_long("--n", "11", 1, 10, &n, msg, sizeof msg),
                   -1);
  ck_assert_str_eq(msg, "--n: '11' is out of range: it must be in [1, 10]");
  ck_assert_int_eq(ms_cli_check_duration("--t", "250us", 0, INFINITY, 0, &x,
                                         msg, sizeof msg),
                   0);
  ck_assert(x == 250e-6);
  ck_assert_int_eq(ms_cli_check_duration("--t", "100ms", 0, INFINITY, 0, &x,
                                         msg, sizeof msg),
                   0);
  ck_assert(x == 0.1);
  ck_assert_int_eq(
      ms_cli_check_rate("--r", "10/s", 0, INFINITY, 0, &x, msg, sizeof msg), 0);
  ck_assert(x == 10);
  ck_assert_int_eq(
      ms_cli_check_rate("--r", "10/min", 0, INFINITY, 0, &x, msg, sizeof msg),
      -1);
  ck_assert_msg(strstr(msg, "--r: '10/min' is not a rate") == msg, "%s", msg);
}
END_TEST

START_TEST(test_describe) {
  ms_service_params p;
  ms_failure_model_erlang(&p.model, 30, 10, 1);
  ms_retry_policy_fixed(&p.policy, 3);
  p.policy.tiers = 2;
  p.policy.has_budget = true;
  p.policy.retry_budget = 0.1;
  char buf[256];
  ck_assert_str_eq(ms_cli_describe(&p, true, buf, sizeof buf),
                   "erlang model: 30 servers, service time 100 ms, timeout "
                   "1 s on the wait, 3 retries x 2 tiers, retry budget 10 %");
  /* the default, response, goes unsaid */
  p.model.timeout_covers = MS_TIMEOUT_COVERS_RESPONSE;
  ck_assert_str_eq(ms_cli_describe(&p, true, buf, sizeof buf),
                   "erlang model: 30 servers, service time 100 ms, timeout "
                   "1 s, 3 retries x 2 tiers, retry budget 10 %");
  ms_failure_model_capacity(&p.model, 1);
  p.model.base_failure = 0.1;
  ms_retry_policy_fixed(&p.policy, 1);
  ck_assert_str_eq(ms_cli_describe(&p, true, buf, sizeof buf),
                   "capacity model: capacity 1 req/s, base failure 10 %, 1 "
                   "retry");
}
END_TEST

/* ---- Prometheus ------------------------------------------------------- */

static char *temp_file(const char *text) {
  char *path = strdup("/tmp/check_cli_XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  return path;
}

static void prom(FILE *f, const void *arg) {
  const char *const *files = arg;
  char err[400];
  int r = ms_trace_from_prometheus(files, f, err, sizeof err);
  if (r != 0)
    fprintf(f, "ERROR %s", err);
}

START_TEST(test_prometheus) {
  char *a = temp_file(
      "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":"
      "[{\"metric\":{},\"values\":[[100,\"1.5\"],[110.5,\"NaN\"],[120,\"3\"]"
      "]}]}}");
  char *b = temp_file(
      "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":"
      "[{\"metric\":{},\"values\":[[110.5,\"7\"],[130,\"+Inf\"]]}]}}");
  char *c = temp_file("{\"status\":\"error\",\"error\":\"bad query\"}");
  char *d =
      temp_file("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                "\"result\":[]}}");
  const char *files[MS_INPUT_COUNT] = {0};
  files[MS_INPUT_ERROR] = a;
  files[MS_INPUT_ARRIVAL] = b;
  char *s = capture(prom, files);
  ck_assert_str_eq(s, "time,arrival_rate,error_rate\n"
                      "100,,1.5\n"
                      "110.5,7,NaN\n"
                      "120,,3\n"
                      "130,+Inf,\n");
  free(s);
  files[MS_INPUT_ARRIVAL] = c;
  s = capture(prom, files);
  ck_assert_msg(strstr(s, "not a successful Prometheus response (status "
                          "error: bad query)") != NULL,
                "%s", s);
  free(s);
  files[MS_INPUT_ARRIVAL] = d;
  s = capture(prom, files);
  ck_assert_msg(strstr(s, "resultType is vector, not matrix") != NULL, "%s", s);
  free(s);
  unlink(a), unlink(b), unlink(c), unlink(d);
  free(a), free(b), free(c), free(d);
}
END_TEST

/* ---- the gnuplot script ----------------------------------------------- */

static void script(FILE *f, const void *arg) {
  ms_plot_script(arg, "|touch pwned; `touch pwned` ~/it's.svg", f);
}

START_TEST(test_plot_script) {
  ms_plot_format fmt;
  ck_assert_int_eq(ms_plot_format_of("a.SVG", &fmt), 0);
  ck_assert_int_eq(fmt, MS_PLOT_SVG);
  ck_assert_int_eq(ms_plot_format_of("dir.png/x.png", &fmt), 0);
  ck_assert_int_eq(fmt, MS_PLOT_PNG);
  ck_assert_int_eq(ms_plot_format_of("a.pdf", &fmt), -1);
  ck_assert_int_eq(ms_plot_format_of("png", &fmt), -1);
  ck_assert_int_eq(ms_plot_format_of("a.png/b", &fmt), -1);

  double x[] = {0, 1, 2, 3}, y[] = {0, 1, NAN, 3};
  ms_plot_series s = {.title = "my \"series\" `id`",
                      .style = MS_PLOT_DASHED,
                      .color = MS_PLOT_BLUE,
                      .n = 4,
                      .x = x,
                      .y = y};
  ms_plot_band b = {
      .from = 1, .to = 2, .label = "it's a band", .color = "#123456"};
  ms_plot_marker m = {.vertical = false, .at = 5, .text = "cap\\acity"};
  ms_plot p;
  ms_plot_init(&p);
  p.title = "svc_name\nsystem('touch pwned')\r@x\x7f";
  p.series = &s;
  p.n_series = 1;
  p.bands = &b;
  p.n_bands = 1;
  p.markers = &m;
  p.n_markers = 1;
  p.xmin = 0;
  p.xmax = 3;
  char *out = capture(script, &p);
  /* every text single-quoted (gnuplot substitutes `...` inside double
   * quotes), quotes doubled, control characters blanked: one line each */
  const char *want[] = {
      "set terminal svg size 1100,720 dynamic noenhanced",
      "set label 2 'svc_name system(''touch pwned'') @x ' at screen 0.5",
      "set xrange [0:3]\n",
      "set yrange [*:*]\n",
      "set object 1 rect from first 1, graph 0 to first 2, graph 1 behind "
      "fc rgb '#123456'",
      "set arrow 1 from graph 0, first 5 to graph 1, first 5 nohead",
      "set label 10 'cap\\acity' at graph 0.980, first 5 right",
      "$d0 << EOD\n0 0\n1 1\n\n3 3\nEOD\n",
      "plot keyentry with boxes fc rgb '#123456' fs transparent solid 0.3 "
      "noborder title 'it''s a band', \\\n     $d0 using 1:2 with lines lw "
      "2.50 dt (10,6) lc rgb '#0072B2' title 'my \"series\" `id`'\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    ck_assert_msg(strstr(out, want[i]) != NULL, "missing: %s\nin:\n%s", want[i],
                  out);
  /* the file name is not in the script: gnuplot draws to its stdout */
  ck_assert_msg(strstr(out, "set output") == NULL, "%s", out);
  ck_assert_msg(strstr(out, "pwned;") == NULL, "%s", out);
  /* no double-quoted string anywhere: every '"' is inside a '...' */
  bool in_single = false;
  for (const char *c = out; *c; c++) {
    if (*c == '\'')
      in_single = !in_single;
    else if (*c == '"' || *c == '`')
      ck_assert_msg(in_single, "%c outside a single-quoted string at: %.40s",
                    *c, c);
    else if (*c == '\n')
      ck_assert_msg(!in_single, "a string spans lines at: %.40s", c);
  }
  free(out);
}
END_TEST

/* ---- laying texts out ------------------------------------------------ */

START_TEST(test_plot_spread) {
  double left[4];
  /* apart already: each stays centred on its wish */
  double c1[] = {0.2, 0.5}, w1[] = {0.1, 0.2};
  ms_plot_spread(2, c1, w1, 0.01, 0, 1, left);
  ck_assert_double_eq_tol(left[0], 0.15, 1e-12);
  ck_assert_double_eq_tol(left[1], 0.40, 1e-12);
  /* two that collide move apart by the same amount, the gap between */
  double c2[] = {0.50, 0.52}, w2[] = {0.2, 0.2};
  ms_plot_spread(2, c2, w2, 0.02, 0, 1, left);
  ck_assert_double_eq_tol(left[0], 0.30, 1e-12);
  ck_assert_double_eq_tol(left[1], 0.52, 1e-12);
  /* the same place wished by three: a row centred on it, order kept */
  double c3[] = {0.5, 0.5, 0.5}, w3[] = {0.1, 0.1, 0.1};
  ms_plot_spread(3, c3, w3, 0, 0, 1, left);
  ck_assert_double_eq_tol(left[0], 0.35, 1e-12);
  ck_assert_double_eq_tol(left[1], 0.45, 1e-12);
  ck_assert_double_eq_tol(left[2], 0.55, 1e-12);
  /* against the right end: pushed back inside, the first one stays */
  double c4[] = {0.1, 0.95, 0.97}, w4[] = {0.1, 0.1, 0.1};
  ms_plot_spread(3, c4, w4, 0, 0, 1, left);
  ck_assert_double_eq_tol(left[0], 0.05, 1e-12);
  ck_assert_double_eq_tol(left[1], 0.80, 1e-12);
  ck_assert_double_eq_tol(left[2], 0.90, 1e-12);
  /* wider than the line: starts at lo */
  double c5[] = {0.5, 0.5}, w5[] = {0.8, 0.8};
  ms_plot_spread(2, c5, w5, 0, 0, 1, left);
  ck_assert_double_eq_tol(left[0], 0, 1e-12);
  ck_assert_double_eq_tol(left[1], 0.8, 1e-12);
  ms_plot_spread(0, NULL, NULL, 0, 0, 1, NULL);
}
END_TEST

START_TEST(test_layout) {
  ms_plot p;
  ms_plot_init(&p);
  p.xmin = 0, p.xmax = 100, p.ymin = 0, p.ymax = 100;
  ck_assert_double_eq_tol(ms_plot_graph_x(&p, 25), 0.25, 1e-15);
  p.ylog = true, p.ymin = 1, p.ymax = 100;
  ck_assert_double_eq_tol(ms_plot_graph_y(&p, 10), 0.5, 1e-15);
  ck_assert(isinf(ms_plot_graph_y(&p, 0)));
  p.ylog = false, p.ymin = 0;
  ms_plot q;
  ms_plot_init(&q);
  ck_assert(isnan(ms_plot_graph_x(&q, 1)));

  /* a line across the plot at y = 50 and a diagonal: a horizontal
   * marker's text at y = 50 goes where neither runs */
  double x[] = {0, 100}, y[] = {0, 100};
  ms_plot_series s = {.style = MS_PLOT_SOLID, .n = 2, .x = x, .y = y};
  ms_layout l;
  ms_layout_init(&l, &p);
  ms_layout_series(&l, &s);
  ms_layout_horizontal(&l, 50);
  ms_plot_marker m = {.at = 50, .text = "a marker's text"};
  ck_assert_double_eq(ms_layout_horizontal_text(&l, &m), 0);
  /* the first choice, right end above the line, is clear of the diagonal
   * (it is below it there) */
  ck_assert_double_eq(m.text_pos, 0.98);
  ck_assert(!m.text_before);
  /* a second text at the same place may not overlap the first */
  ms_plot_marker m2 = {.at = 50, .text = "a marker's text"};
  ck_assert_double_eq(ms_layout_horizontal_text(&l, &m2), 0);
  ck_assert(!(m2.text_pos == 0.98 && !m2.text_before));
  /* a vertical arrow on the diagonal: its text on the side asked for is
   * hidden by nothing at the middle */
  ms_plot_arrow a = {.x1 = 30, .y1 = 30, .x2 = 30, .y2 = 90, .text = "up"};
  ck_assert_double_eq(ms_layout_arrow_text(&l, &a, 0.5), 0);
  ck_assert_double_eq(a.text_at, 0.5);
  ck_assert(!a.text_before);
  /* a text that cannot avoid a line: refused when over `accept` */
  ms_layout_rect all = {0, 0, 1, 1};
  ck_assert_double_ge(ms_layout_badness(&l, all), 2);
  ms_layout_rect out = {0.9, 0.9, 1.1, 0.95};
  ck_assert_double_ge(ms_layout_badness(&l, out), 1000);
  ms_layout_free(&l);
}
END_TEST

/* ---- the storm hazard ------------------------------------------------- */

/* ms_cli_hazard_at is ms_time_to_storm and 1 - exp(-H / t), called here
 * directly; the domain's refusal is a reason, not an error. */
START_TEST(test_hazard_at) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 10.0, 1.0);
  s.model.timeout_covers = MS_TIMEOUT_COVERS_WAIT;
  ms_retry_policy_fixed(&s.policy, 3);
  static const double loads[] = {20, 88, 92, 94, 97};
  for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
    double t;
    ck_assert_int_eq(ms_time_to_storm(&s, loads[i], &t, NULL), MS_OK);
    ms_cli_hazard h;
    ms_cli_hazard_at(&s, loads[i], 3600, &h);
    ck_assert(h.ok);
    ck_assert(h.seconds == t);
    ck_assert(h.never == (t >= MS_TIME_TO_STORM_NEVER));
    if (h.never)
      ck_assert(h.hazard == 0);
    else
      ck_assert_double_eq_tol(h.hazard, 1 - exp(-3600 / t), 1e-15);
  }
  /* below the recovery load c mu / A(1) = 25 req/s: never */
  ms_cli_hazard h;
  ms_cli_hazard_at(&s, 20, 3600, &h);
  ck_assert(h.never && h.hazard == 0);
  /* the capacity model: no answer, and why, without the prefix */
  ms_service_params c;
  ms_failure_model_capacity(&c.model, 1);
  ms_retry_policy_fixed(&c.policy, 3);
  ms_cli_hazard_at(&c, 0.5, 3600, &h);
  ck_assert(!h.ok && isnan(h.seconds) && isnan(h.hazard));
  ck_assert_str_eq(h.why,
                   "the erlang model only (a pool of servers, not a capacity)");
  /* the load under a target: at it, the hazard is at most the target;
   * a little above, over it */
  ms_cli_fold f;
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ms_cli_hazard_fold(&s, ls.recovery_load, ls.tipping_load, 3600, 0.01, &f);
  ck_assert(f.tip.ok && !f.fold_answer && f.tip.hazard > 0.01);
  double lam = f.hazard_load;
  ck_assert(lam > ls.recovery_load && lam < ls.tipping_load);
  ms_cli_hazard_at(&s, lam, 3600, &h);
  ck_assert(h.hazard <= 0.01 && h.hazard > 0.0099);
  ms_cli_hazard_at(&s, lam * (1 + 1e-5), 3600, &h);
  ck_assert(h.hazard > 0.01);
  ms_cli_hazard_fold(&c, 0.5, 0.9, 3600, 0.01, &f);
  ck_assert(!f.tip.ok && !f.fold_answer && isnan(f.hazard_load));
}
END_TEST

/* Durations for people: two digits in the largest unit filled. */
START_TEST(test_human_time) {
  static const struct {
    double s;
    const char *want;
  } cases[] = {
      {0.25, "0.25 s"},
      {45, "45 s"},
      {89.4, "89 s"},
      {90, "1.5 min"},
      {3599, "60 min"},
      {3600, "1 hour"},
      {10965.95, "3 hours"},
      {36 * 3600, "1.5 days"},
      {86400 * 13.9, "14 days"},
      {86400 * 14, "2 weeks"},
      {2.6e6, "4.3 weeks"},
      {365.25 * 86400, "1 year"},
      {1e9, "32 years"},
      {3.15e11, "10000 years"},
      {3.5e13, "over 10000 years"},
      {MS_TIME_TO_STORM_NEVER, "never"},
  };
  char buf[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    ck_assert_str_eq(ms_cli_human_time(buf, sizeof buf, cases[i].s),
                     cases[i].want);
  ck_assert_str_eq(ms_cli_every(buf, sizeof buf, 10965.95),
                   "about once every 3 hours");
  ck_assert_str_eq(ms_cli_every(buf, sizeof buf, 3.5e13),
                   "less than once in 10000 years");
  ck_assert_str_eq(ms_cli_every(buf, sizeof buf, MS_TIME_TO_STORM_NEVER),
                   "never");
  ck_assert_str_eq(ms_cli_hazard_phrase(buf, sizeof buf, 0.2798, 3600),
                   "28 % within 1 hour");
  /* near 1: six digits, so that a target of 0.99995 reads "under 99.995
   * %", not "under over 99.9 %"; "over 99.9999 %" only where six digits
   * would round to 100 */
  ck_assert_str_eq(ms_cli_hazard_phrase(buf, sizeof buf, 0.99995, 86400),
                   "99.995 % within 24 hours");
  ck_assert_str_eq(ms_cli_hazard_phrase(buf, sizeof buf, 1 - 1e-9, 86400),
                   "over 99.9999 % within 24 hours");
}
END_TEST

static Suite *cli_suite(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("helpers");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_fmt_double);
  tcase_add_test(tc, test_fmt_double_reference);
  tcase_add_test(tc, test_csv_field);
  tcase_add_test(tc, test_sanitize);
  tcase_add_test(tc, test_json_roundtrip);
  tcase_add_test(tc, test_json_layout);
  tcase_add_test(tc, test_parse_time);
  tcase_add_test(tc, test_trace_rows);
  tcase_add_test(tc, test_trace_errors);
  tcase_add_test(tc, test_option_checks);
  tcase_add_test(tc, test_param_options);
  tcase_add_test(tc, test_describe);
  tcase_add_test(tc, test_prometheus);
  tcase_add_test(tc, test_plot_script);
  tcase_add_test(tc, test_plot_spread);
  tcase_add_test(tc, test_layout);
  tcase_add_test(tc, test_hazard_at);
  tcase_add_test(tc, test_human_time);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(cli_suite());
  return ms_check_run(sr);
}
