/* SPDX-License-Identifier: MIT */
/* Helpers for the Check suites. */
#ifndef MS_TESTUTIL_H
#define MS_TESTUTIL_H

#include <stddef.h>

/* One row of an Erlang reference file. */
typedef struct {
  long servers;
  double offered;
  double ln_b, ln_c; /* natural logs, always present */
  double b, c;       /* values, NAN when the file has none */
  int line;
} erlang_row;

/*
 * Read an Erlang reference CSV (the shared fixture's columns, or the dense
 * grid's servers,offered_erlangs,ln_erlang_b,ln_erlang_c) from
 * MS_TEST_DATA/name.  Returns the number of rows (> 0), *rows malloc'd;
 * fails the running test when the file is missing or malformed.
 */
size_t read_erlang_csv(const char *name, erlang_row **rows);

/*
 * Error of a computed ln v against a reference ln v, as doc/design.md §5
 * define it: where v is a normal double (ln v >= ln DBL_MIN), the relative
 * error of v itself, |exp(d) - 1| with d the difference of the logs; where v
 * underflows, the relative error of ln v.
 */
double ln_value_error(double computed_ln, double ref_ln);

#endif
