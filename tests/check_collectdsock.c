/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the unixsock client's pure parts (cli/collectdsock.c):
 * the protocol's lines as collectd-unixsock(5) shows them, the Levenshtein
 * distance against textbook values and against its recursive definition,
 * the part-wise distance of identifiers and globs, and the ranking of
 * did-you-mean suggestions.  The conversation with a server is tested in
 * tests/cli/test_collectd.py (a stand-in) and tests/integration/
 * test_collectd_check.py (collectd itself).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "collectdsock.h"

START_TEST(test_status) {
  long n;
  const char *msg;
  ck_assert_int_eq(ms_collectd_parse_status("69 Values found", &n, &msg), 0);
  ck_assert_int_eq(n, 69);
  ck_assert_str_eq(msg, "Values found");
  ck_assert_int_eq(ms_collectd_parse_status("-1 No such value.", &n, &msg), 0);
  ck_assert_int_eq(n, -1);
  ck_assert_str_eq(msg, "No such value.");
  ck_assert_int_eq(ms_collectd_parse_status("0", &n, &msg), 0);
  ck_assert_int_eq(n, 0);
  ck_assert_str_eq(msg, "");
  const char *bad[] = {"", "Values found", "3x found", "- 1 x", "-", " 3 x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_msg(ms_collectd_parse_status(bad[i], &n, &msg) == -1, "'%s'",
                  bad[i]);
}
END_TEST

START_TEST(test_listval) {
  double t;
  const char *name;
  /* collectd-unixsock(5)'s example, and 5.12's milliseconds */
  ck_assert_int_eq(
      ms_collectd_parse_listval("1182204284 myhost/cpu-0/cpu-idle", &t, &name),
      0);
  ck_assert_double_eq(t, 1182204284.0);
  ck_assert_str_eq(name, "myhost/cpu-0/cpu-idle");
  ck_assert_int_eq(ms_collectd_parse_listval(
                       "1796570491.057 h/statsd/derive-a b", &t, &name),
                   0);
  ck_assert_double_eq_tol(t, 1796570491.057, 1e-6);
  ck_assert_str_eq(name, "h/statsd/derive-a b"); /* the rest of the line */
  const char *bad[] = {"", "123", "123 ", "x h/p/t", "-5 h/p/t", "12,5 h/p/t"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_msg(ms_collectd_parse_listval(bad[i], &t, &name) == -1, "'%s'",
                  bad[i]);
}
END_TEST

START_TEST(test_getval) {
  char ds[64];
  double v;
  ck_assert_int_eq(
      ms_collectd_parse_getval("value=1.260000e+00", ds, sizeof ds, &v), 0);
  ck_assert_str_eq(ds, "value");
  ck_assert_double_eq(v, 1.26);
  ck_assert_int_eq(ms_collectd_parse_getval("rx=NaN", ds, sizeof ds, &v), 0);
  ck_assert_str_eq(ds, "rx");
  ck_assert(isnan(v));
  ck_assert_int_eq(
      ms_collectd_parse_getval("value= 1.200000e+01", ds, sizeof ds, &v), 0);
  ck_assert_double_eq(v, 12.0);
  ck_assert_int_eq(ms_collectd_parse_getval("value=inf", ds, sizeof ds, &v), 0);
  ck_assert(isinf(v));
  const char *bad[] = {"=1",        "value=", "value=abc",
                       "value=1 2", "value",  "value=1e"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_msg(ms_collectd_parse_getval(bad[i], ds, sizeof ds, &v) == -1,
                  "'%s'", bad[i]);
}
END_TEST

/* The Levenshtein distance by its recursive definition (Levenshtein
 * 1966), memoised: an independent reference for short strings. */
static size_t memo[8][8];
static size_t lev_ref(const char *a, size_t i, const char *b, size_t j) {
  if (i == 0)
    return j;
  if (j == 0)
    return i;
  if (memo[i][j] != SIZE_MAX)
    return memo[i][j];
  size_t del = lev_ref(a, i - 1, b, j) + 1;
  size_t ins = lev_ref(a, i, b, j - 1) + 1;
  size_t sub = lev_ref(a, i - 1, b, j - 1) + (a[i - 1] != b[j - 1]);
  size_t m = del < ins ? del : ins;
  memo[i][j] = m < sub ? m : sub;
  return memo[i][j];
}

START_TEST(test_levenshtein) {
  /* textbook values */
  ck_assert_uint_eq(ms_collectd_levenshtein("kitten", "sitting"), 3);
  ck_assert_uint_eq(ms_collectd_levenshtein("saturday", "sunday"), 3);
  ck_assert_uint_eq(ms_collectd_levenshtein("flaw", "lawn"), 2);
  ck_assert_uint_eq(ms_collectd_levenshtein("", "abc"), 3);
  ck_assert_uint_eq(ms_collectd_levenshtein("abc", ""), 3);
  ck_assert_uint_eq(ms_collectd_levenshtein("same", "same"), 0);
  /* every pair of strings of up to 5 letters of {a, b, c} from a fixed
   * generator, against the recursive definition */
  unsigned seed = 12345;
  for (int k = 0; k < 3000; k++) {
    char a[8], b[8];
    size_t la = (seed = seed * 1103515245u + 12345u) >> 16 & 7;
    size_t lb = (seed = seed * 1103515245u + 12345u) >> 16 & 7;
    la = la > 5 ? 5 : la;
    lb = lb > 5 ? 5 : lb;
    for (size_t i = 0; i < la; i++)
      a[i] = (char)('a' + ((seed = seed * 1103515245u + 12345u) >> 16) % 3);
    for (size_t i = 0; i < lb; i++)
      b[i] = (char)('a' + ((seed = seed * 1103515245u + 12345u) >> 16) % 3);
    a[la] = b[lb] = '\0';
    memset(memo, 0xff, sizeof memo);
    ck_assert_msg(ms_collectd_levenshtein(a, b) == lev_ref(a, la, b, lb),
                  "'%s' '%s'", a, b);
  }
}
END_TEST

START_TEST(test_matches) {
  ck_assert(ms_collectd_matches("h/p/t", "h/p/t"));
  ck_assert(!ms_collectd_matches("h/p/t", "h/p/tt"));
  ck_assert(ms_collectd_matches("*/statsd/derive-x", "web1/statsd/derive-x"));
  /* a * stays within one part, as the plugin's FNM_PATHNAME */
  ck_assert(!ms_collectd_matches("*/derive-x", "web1/statsd/derive-x"));
  ck_assert(ms_collectd_matches("h/p/derive-[ab]", "h/p/derive-a"));
}
END_TEST

START_TEST(test_distance) {
  int parts;
  const char *id = "web1/statsd/derive-checkout_requests";
  ck_assert_uint_eq(ms_collectd_distance(id, id, &parts), 0);
  ck_assert_int_eq(parts, 0);
  /* one letter missing in the type instance */
  ck_assert_uint_eq(
      ms_collectd_distance("web1/statsd/derive-checkout_requets", id, &parts),
      1);
  ck_assert_int_eq(parts, 1);
  /* another host: lev(web2, web1) + nothing else */
  ck_assert_uint_eq(
      ms_collectd_distance("web2/statsd/derive-checkout_requests", id, &parts),
      1);
  /* the parts add up: host and type differ */
  ck_assert_uint_eq(
      ms_collectd_distance("web2/statsd/gauge-checkout_requests", id, &parts),
      1 + ms_collectd_levenshtein("gauge-checkout_requests",
                                  "derive-checkout_requests"));
  ck_assert_int_eq(parts, 2);
  /* a glob part that matches costs nothing; one that does not, its
   * distance as text */
  ck_assert_uint_eq(
      ms_collectd_distance("*/statsd/derive-checkout_requets", id, &parts), 1);
  ck_assert_int_eq(parts, 1);
  ck_assert_uint_eq(
      ms_collectd_distance("*/statsd/derive-checkout_*", id, &parts), 0);
  ck_assert_uint_eq(ms_collectd_distance("h/p/[ab]", "h/p/[ab]", &parts), 1);
  ck_assert_uint_eq(ms_collectd_distance("h/p", id, NULL), SIZE_MAX);
  ck_assert_uint_eq(ms_collectd_distance(id, "a/b/c/d", NULL), SIZE_MAX);
  /* the limit: a fifth of the letters, at least 2 */
  ck_assert_uint_eq(ms_collectd_suggest_limit(id), 34 / 5);
  ck_assert_uint_eq(ms_collectd_suggest_limit("h/p/t"), 2);
}
END_TEST

START_TEST(test_suggest) {
  char *names[] = {
      (char[]){"mshost/statsd/derive-checkout_attempts"},
      (char[]){"mshost/statsd/derive-checkout_errors"},
      (char[]){"mshost/statsd/derive-checkout_requests"},
      (char[]){"mshost/statsd/derive-checkout_retries"},
      (char[]){"web1/statsd/derive-checkout_requests"},
      (char[]){"mshost/cpu-0/cpu-idle"},
  };
  size_t n = sizeof names / sizeof *names, best[3];
  /* one letter off: the one name, not its siblings */
  ck_assert_uint_eq(ms_collectd_suggest("mshost/statsd/derive-checkout_atempts",
                                        names, n, best, 3),
                    1);
  ck_assert_uint_eq(best[0], 0);
  /* another host: both hosts' requests, the nearer host first (lev(web2,
   * web1) = 1 against lev(web2, mshost) = 6; 6 > 1 + 1 leaves it out) */
  ck_assert_uint_eq(ms_collectd_suggest("web2/statsd/derive-checkout_requests",
                                        names, n, best, 3),
                    1);
  ck_assert_uint_eq(best[0], 4);
  /* two at the same distance: by name */
  char *twins[] = {(char[]){"h/p/derive-bb"}, (char[]){"h/p/derive-ab"},
                   (char[]){"h/p/derive-zzz"}};
  ck_assert_uint_eq(ms_collectd_suggest("h/p/derive-b", twins, 3, best, 3), 2);
  ck_assert_uint_eq(best[0], 1);
  ck_assert_uint_eq(best[1], 0);
  ck_assert_uint_eq(ms_collectd_suggest("h/p/derive-b", twins, 3, best, 1), 1);
  ck_assert_uint_eq(best[0], 1);
  /* nothing near, and a pattern that matches: none */
  ck_assert_uint_eq(
      ms_collectd_suggest("db9/postgresql/pg_xact", names, n, best, 3), 0);
  ck_assert_uint_eq(
      ms_collectd_suggest("*/statsd/derive-checkout_errors", names, n, best, 3),
      0);
  /* a glob keeps its wildcard where it matched */
  ck_assert_uint_eq(
      ms_collectd_suggest("*/statsd/derive-checkout_retrys", names, n, best, 3),
      1);
  char out[256];
  ck_assert_str_eq(ms_collectd_suggestion("*/statsd/derive-checkout_retrys",
                                          names[best[0]], out, sizeof out),
                   "*/statsd/derive-checkout_retries");
  ck_assert_str_eq(
      ms_collectd_suggestion("web2/statsd/derive-x", names[4], out, sizeof out),
      names[4]);
}
END_TEST

START_TEST(test_open_errors) {
  ms_collectd c;
  char err[1024];
  ck_assert_int_eq(
      ms_collectd_open(&c, "/nonexistent/collectd.sock", 1, err, sizeof err),
      -1);
  ck_assert_ptr_nonnull(strstr(err, "no such file"));
  ck_assert_int_eq(ms_collectd_open(&c, "/", 1, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "/: not a socket"));
  char longpath[200];
  memset(longpath, 'x', sizeof longpath - 1);
  longpath[sizeof longpath - 1] = '\0';
  ck_assert_int_eq(ms_collectd_open(&c, longpath, 1, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "too long for a socket"));
  ms_collectd_close(&c);
}
END_TEST

int main(void) {
  Suite *s = suite_create("collectdsock");
  TCase *tc = tcase_create("client");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_status);
  tcase_add_test(tc, test_listval);
  tcase_add_test(tc, test_getval);
  tcase_add_test(tc, test_levenshtein);
  tcase_add_test(tc, test_matches);
  tcase_add_test(tc, test_distance);
  tcase_add_test(tc, test_suggest);
  tcase_add_test(tc, test_open_errors);
  suite_add_tcase(s, tc);
  return ms_check_run(srunner_create(s));
}
