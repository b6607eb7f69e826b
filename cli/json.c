/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer; see json.h. */
#include <math.h>

#include "common.h"
#include "json.h"

void ms_json_init(ms_json *j, FILE *f, int pretty_depth) {
  j->f = f;
  j->depth = 0;
  j->pretty_depth = pretty_depth;
  for (int i = 0; i < MS_JSON_MAX_DEPTH; i++)
    j->has_items[i] = false;
}

void ms_json_write_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    switch (*c) {
    case '"':
      fputs("\\\"", f);
      break;
    case '\\':
      fputs("\\\\", f);
      break;
    case '\n':
      fputs("\\n", f);
      break;
    case '\r':
      fputs("\\r", f);
      break;
    case '\t':
      fputs("\\t", f);
      break;
    case '\b':
      fputs("\\b", f);
      break;
    case '\f':
      fputs("\\f", f);
      break;
    default:
      if (*c < 0x20)
        fprintf(f, "\\u%04x", *c);
      else
        fputc(*c, f);
    }
  }
  fputc('"', f);
}

static void newline(ms_json *j, int depth) {
  fputc('\n', j->f);
  for (int i = 0; i < depth; i++)
    fputs("  ", j->f);
}

/* Separator, layout and key before a value at the current depth. */
static void before_value(ms_json *j, const char *key) {
  if (j->depth > 0) {
    if (j->has_items[j->depth])
      fputc(',', j->f);
    if (j->depth <= j->pretty_depth)
      newline(j, j->depth);
    else if (j->has_items[j->depth])
      fputc(' ', j->f);
    j->has_items[j->depth] = true;
  }
  if (key) {
    ms_json_write_string(j->f, key);
    fputs(": ", j->f);
  }
}

static void begin(ms_json *j, const char *key, char open) {
  before_value(j, key);
  fputc(open, j->f);
  if (j->depth + 1 < MS_JSON_MAX_DEPTH)
    j->depth++;
  j->has_items[j->depth] = false;
}

static void end(ms_json *j, char close) {
  bool had = j->has_items[j->depth];
  j->depth--;
  if (had && j->depth + 1 <= j->pretty_depth)
    newline(j, j->depth);
  fputc(close, j->f);
}

void ms_json_begin_object(ms_json *j, const char *key) { begin(j, key, '{'); }
void ms_json_end_object(ms_json *j) { end(j, '}'); }
void ms_json_begin_array(ms_json *j, const char *key) { begin(j, key, '['); }
void ms_json_end_array(ms_json *j) { end(j, ']'); }

void ms_json_number(ms_json *j, const char *key, double x) {
  before_value(j, key);
  if (!isfinite(x)) {
    fputs("null", j->f);
    return;
  }
  char buf[32];
  fputs(ms_format_double(buf, x), j->f);
}

void ms_json_int(ms_json *j, const char *key, long long x) {
  before_value(j, key);
  fprintf(j->f, "%lld", x);
}

void ms_json_bool(ms_json *j, const char *key, bool x) {
  before_value(j, key);
  fputs(x ? "true" : "false", j->f);
}

void ms_json_string(ms_json *j, const char *key, const char *s) {
  before_value(j, key);
  ms_json_write_string(j->f, s);
}

void ms_json_null(ms_json *j, const char *key) {
  before_value(j, key);
  fputs("null", j->f);
}

void ms_json_finish(ms_json *j) { fputc('\n', j->f); }
