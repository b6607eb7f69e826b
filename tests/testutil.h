/* SPDX-License-Identifier: MIT */
/* Helpers for the Check suites. */
#ifndef MS_TESTUTIL_H
#define MS_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One row of an Erlang reference file, the references in long double (their
 * rounding to a double would be an error of up to 5.7e-14 in B at
 * ln B = -705). */
typedef struct {
  long servers;
  double offered;
  long double ln_b, ln_c; /* natural logs, always present */
  long double b, c;       /* values, NAN when the file has none */
  int line;
} erlang_row;

/*
 * Read an Erlang reference CSV (the shared fixture's columns, or the dense
 * grid's servers,offered_erlangs,ln_erlang_b,ln_erlang_c) from
 * MS_TEST_DATA/name.  Returns the number of rows (> 0), *rows malloc'd;
 * fails the running test when the file is missing or malformed.
 */
size_t read_erlang_csv(const char *name, erlang_row **rows);

/* MS_TEST_DATA/name opened for reading, its path written to path (len
 * bytes); a check failure when it cannot be opened. */
FILE *test_data_open(const char *name, char *path, size_t len);

/* The rows of MS_TEST_DATA/name, each parsed by parse(line, row) into a
 * row of row_size bytes (lineno: the line's number, for the row to keep), into
 * a malloc'd array at *rows (the caller frees it); comment lines ('#'), empty
 * lines and the header (a line starting with header) skipped.  A check failure
 * names the file and line of a row parse refuses, and a file without rows.
 * Returns the number of rows. */
size_t test_data_rows(const char *name, const char *header, size_t row_size,
                      bool (*parse)(const char *line, int lineno, void *row),
                      void **rows);

/*
 * Error of a computed ln v against a reference ln v, as doc/design.md §5
 * define it: where v is a normal double (ln v >= ln DBL_MIN), the relative
 * error of v itself, |exp(d) - 1| with d the difference of the logs; where v
 * underflows, the relative error of ln v.
 */
double ln_value_error(double computed_ln, double ref_ln);

/* One row of tests/data/erlang_wide.csv (tools/gen_erlang_wide.py), the
 * references in long double so that their rounding (below 1e-19 relative)
 * does not hide an error of a few ulps. */
typedef struct {
  long servers;
  double offered, timeout;         /* exact doubles */
  long double ln_b, ln_c, ln_wait; /* ln B, ln C, ln P(W > T) at mu = 1 */
  int line;
} erlang_wide_row;

/* Read MS_TEST_DATA/name as erlang_wide_row; as read_erlang_csv. */
size_t read_erlang_wide_csv(const char *name, erlang_wide_row **rows);

/*
 * The error measure of doc/design.md §5 for a computed value and its log
 * against a reference log: where the reference value is a normal double,
 * the relative error of the value itself, |value / e^ref_ln - 1|; where it
 * underflows, the relative error of the log.
 */
double value_error(double value, double ln_value, long double ref_ln);

/* Error of a computed log of a probability against a reference log:
 * |ln - ref| / max(1, |ref|), the relative error of the probability where
 * |ln| <= 1, of its log beyond (doc/design.md §5). */
double log_error(double computed_ln, long double ref_ln);

#endif
