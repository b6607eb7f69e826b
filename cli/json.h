/* SPDX-License-Identifier: MIT */
/*
 * A small streaming JSON writer for the command-line tool's results
 * (RFC 8259).  Values are written as they come, so a sweep of a million rows
 * never sits in memory.
 *
 *  - numbers: the shortest decimal that reads back as exactly the same
 *    double (at most 17 significant digits, ms_format_double); NaN and the
 *    infinities, which JSON cannot hold, are written as null;
 *  - strings: UTF-8 passed through, '"' and '\' escaped, control characters
 *    as \n, \t, ... or \u00XX;
 *  - layout: containers nested less than `pretty_depth` deep put each item on
 *    its own indented line, deeper ones are written on one line, so a table
 *    comes out one row per line.
 *
 * Usage: ms_json_begin_object(j, NULL) at the top or inside an array,
 * ms_json_begin_object(j, "key") inside an object; likewise for the values.
 */
#ifndef METASTABLE_CLI_JSON_H
#define METASTABLE_CLI_JSON_H

#include <stdbool.h>
#include <stdio.h>

#define MS_JSON_MAX_DEPTH 16

typedef struct {
  FILE *f;
  int depth;
  int pretty_depth;
  bool has_items[MS_JSON_MAX_DEPTH]; /* a container already has an item */
} ms_json;

/* Start writing to f; pretty_depth as above (0: everything on one line). */
void ms_json_init(ms_json *j, FILE *f, int pretty_depth);

void ms_json_begin_object(ms_json *j, const char *key);
void ms_json_end_object(ms_json *j);
void ms_json_begin_array(ms_json *j, const char *key);
void ms_json_end_array(ms_json *j);

void ms_json_number(ms_json *j, const char *key, double x);
void ms_json_int(ms_json *j, const char *key, long long x);
void ms_json_bool(ms_json *j, const char *key, bool x);
void ms_json_string(ms_json *j, const char *key, const char *s);
void ms_json_null(ms_json *j, const char *key);

/* End the document with a newline. */
void ms_json_finish(ms_json *j);

/* Write s as a JSON string literal, quotes included. */
void ms_json_write_string(FILE *f, const char *s);

#endif
