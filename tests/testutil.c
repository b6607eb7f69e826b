/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

FILE *test_data_open(const char *name, char *path, size_t len) {
  snprintf(path, len, "%s/%s", MS_TEST_DATA, name);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  return f;
}

size_t read_erlang_csv(const char *name, erlang_row **rows) {
  char path[1024];
  FILE *f = test_data_open(name, path, sizeof path);
  char line[1024];
  size_t n = 0, cap = 256;
  erlang_row *r = malloc(cap * sizeof *r);
  int lineno = 0, columns = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n')
      continue;
    if (strncmp(line, "servers", 7) == 0) {
      columns = 1;
      for (char *p = line; *p; p++)
        columns += *p == ',';
      continue;
    }
    if (n == cap)
      r = realloc(r, (cap *= 2) * sizeof *r);
    erlang_row *x = &r[n];
    x->line = lineno;
    int got;
    if (columns == 6) {
      got = sscanf(line, "%ld,%lf,%Lf,%Lf,%Lf,%Lf", &x->servers, &x->offered,
                   &x->b, &x->c, &x->ln_b, &x->ln_c);
      ck_assert_msg(got == 6, "%s:%d: malformed row", path, lineno);
    } else {
      got = sscanf(line, "%ld,%lf,%Lf,%Lf", &x->servers, &x->offered, &x->ln_b,
                   &x->ln_c);
      ck_assert_msg(got == 4, "%s:%d: malformed row", path, lineno);
      x->b = x->c = NAN;
    }
    n++;
  }
  fclose(f);
  ck_assert_msg(n > 0, "%s: no rows", path);
  *rows = r;
  return n;
}

size_t test_data_rows(const char *name, const char *header, size_t row_size,
                      bool (*parse)(const char *line, int lineno, void *row),
                      void **rows) {
  char path[1024];
  FILE *f = test_data_open(name, path, sizeof path);
  char line[1024];
  size_t n = 0, cap = 512;
  char *r = malloc(cap * row_size);
  ck_assert_ptr_nonnull(r);
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n' ||
        strncmp(line, header, strlen(header)) == 0)
      continue;
    if (n == cap) {
      r = realloc(r, (cap *= 2) * row_size);
      ck_assert_ptr_nonnull(r);
    }
    ck_assert_msg(parse(line, lineno, r + n * row_size), "%s:%d: malformed row",
                  path, lineno);
    n++;
  }
  fclose(f);
  ck_assert_msg(n > 0, "%s: no rows", path);
  *rows = r;
  return n;
}

double ln_value_error(double computed_ln, double ref_ln) {
  if (ref_ln >= log(DBL_MIN))
    return fabs(expm1(computed_ln - ref_ln));
  return fabs(computed_ln - ref_ln) / fabs(ref_ln);
}

size_t read_erlang_wide_csv(const char *name, erlang_wide_row **rows) {
  char path[1024];
  FILE *f = test_data_open(name, path, sizeof path);
  char line[1024];
  size_t n = 0, cap = 1024;
  erlang_wide_row *r = malloc(cap * sizeof *r);
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n' || strncmp(line, "servers", 7) == 0)
      continue;
    if (n == cap)
      r = realloc(r, (cap *= 2) * sizeof *r);
    erlang_wide_row *x = &r[n];
    x->line = lineno;
    /* servers,offered,erlang_b,erlang_c,ln_b,ln_c,timeout,ln_wait_tail */
    char *p = line, *end;
    x->servers = strtol(p, &end, 10);
    int ok = end != p && *end == ',';
    long double v[6];
    for (int k = 0; k < 7 && ok; k++) {
      p = end + 1;
      if (k == 0) /* the exact doubles, read as such */
        x->offered = strtod(p, &end);
      else if (k == 5)
        x->timeout = strtod(p, &end);
      else
        v[k - 1] = strtold(p, &end);
      ok = end != p && (*end == ',' || (k == 6 && (*end == '\n' || !*end)));
    }
    ck_assert_msg(ok, "%s:%d: malformed row", path, lineno);
    x->ln_b = v[2];
    x->ln_c = v[3];
    x->ln_wait = v[5];
    n++;
  }
  fclose(f);
  ck_assert_msg(n > 0, "%s: no rows", path);
  *rows = r;
  return n;
}

double value_error(double value, double ln_value, long double ref_ln) {
  if (ref_ln >= logl(DBL_MIN))
    return (double)fabsl((long double)value / expl(ref_ln) - 1.0L);
  return (double)fabsl(((long double)ln_value - ref_ln) / ref_ln);
}

double log_error(double computed_ln, long double ref_ln) {
  return (double)(fabsl((long double)computed_ln - ref_ln) /
                  fmaxl(1.0L, fabsl(ref_ln)));
}
