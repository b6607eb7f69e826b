/* SPDX-License-Identifier: MIT */
/* Metrics traces for `metastable replay`; see trace.h. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace.h"
#include "units.h"

#define MAX_COLS 64

/* ---- time ------------------------------------------------------------ */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", 2013). */
static long days_from_civil(long y, int m, int d) {
  y -= m <= 2;
  long era = (y >= 0 ? y : y - 399) / 400;
  long yoe = y - era * 400;
  long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int days_in_month(long y, int m) {
  static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : dm[m - 1];
}

/* n decimal digits at *p into *out; advances *p. */
static int digits(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)(*p)[i]))
      return -1;
    v = v * 10 + ((*p)[i] - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

static int parse_rfc3339(const char *s, double *out) {
  int y, mo, d, h, mi, sec;
  const char *p = s;
  if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
      digits(&p, 2, &d))
    return -1;
  if (*p != 'T' && *p != 't' && *p != ' ')
    return -1;
  p++;
  if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
      digits(&p, 2, &sec))
    return -1;
  double frac = 0;
  if (*p == '.') {
    p++;
    double scale = 0.1;
    if (!isdigit((unsigned char)*p))
      return -1;
    while (isdigit((unsigned char)*p)) {
      frac += scale * (*p++ - '0');
      scale *= 0.1;
    }
  }
  long offset = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p++ == '-' ? -1 : 1, oh, om;
    if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 ||
        om > 59)
      return -1;
    offset = sign * (oh * 3600L + om * 60L);
  } else {
    return -1;
  }
  if (*p != '\0')
    return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
      mi > 59 || sec > 60)
    return -1;
  double t = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 +
             mi * 60.0 + sec + frac - (double)offset;
  *out = t;
  return 0;
}

int ms_parse_time(const char *text, double *unix_seconds) {
  if (strlen(text) >= 10 && text[4] == '-')
    return parse_rfc3339(text, unix_seconds);
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v))
    return -1;
  /* only plain decimals: no "nan", "inf" or hexadecimal */
  for (const char *c = text; *c; c++)
    if (!(isdigit((unsigned char)*c) || strchr("+-.eE", *c)))
      return -1;
  *unix_seconds = v;
  return 0;
}

/* ---- CSV ------------------------------------------------------------- */

typedef struct {
  char *text; /* unquoted, NUL-terminated, inside the line buffer */
  int column; /* 1-based character column where the cell starts */
} cell;

__attribute__((format(printf, 6, 7))) static int fail(char *err, size_t len,
                                                      const char *name,
                                                      int line, int column,
                                                      const char *fmt, ...) {
  int n = snprintf(err, len, "%s:%d:%d: ", name, line, column);
  if (n >= 0 && (size_t)n < len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, len - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* Split the line in place into cells (RFC 4180 quoting within a line).
 * Returns the number of cells, or -1 with err. */
static int split(ms_trace *t, cell *cells, char *err, size_t len) {
  char *s = t->buf, *w = t->buf;
  int n = 0;
  size_t i = 0;
  for (;;) {
    if (n == MAX_COLS)
      return fail(err, len, t->name, t->line, (int)i + 1, "more than %d cells",
                  MAX_COLS);
    cells[n].column = (int)i + 1;
    cells[n].text = w;
    if (s[i] == '"') {
      i++;
      for (;;) {
        if (s[i] == '\0')
          return fail(err, len, t->name, t->line, cells[n].column,
                      "a quoted cell is not closed on its line");
        if (s[i] == '"') {
          if (s[i + 1] == '"') {
            *w++ = '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        *w++ = s[i++];
      }
      if (s[i] != ',' && s[i] != '\0')
        return fail(err, len, t->name, t->line, (int)i + 1,
                    "text after a quoted cell");
    } else {
      while (s[i] != ',' && s[i] != '\0')
        *w++ = s[i++];
    }
    char end = s[i];
    *w++ = '\0';
    n++;
    if (end == '\0')
      break;
    i++; /* the comma */
  }
  return n;
}

/* Trim blanks around a cell in place. */
static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
  return s;
}

/* One line into t->buf (allocated on first use, MS_TRACE_MAX_LINE + 1
 * bytes), its ending dropped.  Returns its length, -1 at the end of the
 * file, -2 with err for a read error, a line too long, a NUL byte or a
 * file past MS_TRACE_MAX_BYTES. */
static long read_line(ms_trace *t, char *err, size_t len) {
  if (t->buf == NULL) {
    t->cap = MS_TRACE_MAX_LINE + 1;
    t->buf = malloc(t->cap);
    if (t->buf == NULL)
      return fail(err, len, t->name, t->line + 1, 1, "out of memory") - 1;
  }
  size_t n = 0;
  int ch;
  errno = 0;
  while ((ch = getc_unlocked(t->f)) != EOF && ch != '\n') {
    if (++t->bytes > MS_TRACE_MAX_BYTES)
      return fail(err, len, t->name, t->line + 1, (int)n + 1,
                  "the trace is longer than %d MiB, the limit: cut it to "
                  "the time range of interest (e.g. with awk on its time "
                  "column), or keep fewer columns",
                  MS_TRACE_MAX_BYTES >> 20) -
             1;
    if (ch == '\0')
      return fail(err, len, t->name, t->line + 1, (int)n + 1,
                  "a NUL byte: the file is not a text (CSV) trace") -
             1;
    if (n == MS_TRACE_MAX_LINE)
      return fail(err, len, t->name, t->line + 1, (int)n + 1,
                  "the line is longer than %d bytes, the limit: a trace "
                  "has one row of at most %d cells a line",
                  MS_TRACE_MAX_LINE, MAX_COLS) -
             1;
    t->buf[n++] = (char)ch;
  }
  if (ch == '\n')
    t->bytes++;
  if (ferror(t->f))
    return fail(err, len, t->name, t->line + 1, 1, "cannot read: %s",
                strerror(errno ? errno : EIO)) -
           1;
  if (ch == EOF && n == 0)
    return -1;
  t->buf[n] = '\0';
  return (long)n;
}

/* Read the next line that is not blank or a comment into t->buf, without
 * its line ending.  1, 0 at the end, -1 on a read error or a limit. */
static int next_line(ms_trace *t, char *err, size_t len) {
  for (;;) {
    long n = read_line(t, err, len);
    if (n == -1)
      return 0;
    if (n < 0)
      return -1;
    t->line++;
    while (n > 0 && (t->buf[n - 1] == '\n' || t->buf[n - 1] == '\r'))
      t->buf[--n] = '\0';
    if (t->line == 1 && strncmp(t->buf, "\xef\xbb\xbf", 3) == 0)
      memmove(t->buf, t->buf + 3, (size_t)n - 2); /* a UTF-8 BOM */
    const char *p = t->buf;
    while (isspace((unsigned char)*p))
      p++;
    if (*p == '\0' || *p == '#')
      continue;
    return 1;
  }
}

bool ms_trace_simulate_column(const char *name) {
  size_t n = strlen(name);
  for (const char *p = MS_TRACE_SIMULATE_COLUMNS; n > 0 && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0)
      return true;
    p += len + (e != NULL);
  }
  return false;
}

/* "time, arrival_rate, ..., latency": the columns a trace may have. */
static const char *known_columns(char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "time");
  for (int i = 0; i < MS_INPUT_COUNT && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, ", %s",
                             ms_input_name((ms_input_id)i));
  return buf;
}

int ms_trace_open(ms_trace *t, FILE *f, const char *name, char *err,
                  size_t errlen) {
  memset(t, 0, sizeof *t);
  t->f = f;
  t->name = name;
  t->time_col = -1;
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    t->input_col[i] = -1;
  int r = next_line(t, err, errlen);
  if (r < 0)
    return -1;
  if (r == 0)
    return fail(err, errlen, name, 1, 1,
                "the trace is empty: expected a header such as "
                "time,arrival_rate,error_rate");
  cell cells[MAX_COLS];
  int n = split(t, cells, err, errlen);
  if (n < 0)
    return -1;
  for (int k = 0; k < n; k++) {
    const char *h = trim(cells[k].text);
    int *slot = NULL;
    if (strcmp(h, "time") == 0)
      slot = &t->time_col;
    for (int i = 0; i < MS_INPUT_COUNT && !slot; i++)
      if (strcmp(h, ms_input_name((ms_input_id)i)) == 0)
        slot = &t->input_col[i];
    if (slot == NULL && ms_trace_simulate_column(h))
      continue; /* metastable simulate's own: read past */
    char known[256];
    if (slot == NULL)
      return fail(err, errlen, name, t->line, cells[k].column,
                  "unknown column '%s' (known: %s, and the other columns "
                  "of metastable simulate)",
                  h, known_columns(known, sizeof known));
    if (*slot >= 0)
      return fail(err, errlen, name, t->line, cells[k].column,
                  "column '%s' given twice", h);
    *slot = k;
  }
  if (t->time_col < 0)
    return fail(err, errlen, name, t->line, 1,
                "the header has no 'time' column");
  t->n_cols = n;
  return 0;
}

int ms_trace_next(ms_trace *t, ms_trace_row *row, char *err, size_t errlen) {
  int r = next_line(t, err, errlen);
  if (r <= 0)
    return r;
  int line_len = (int)strlen(t->buf);
  cell cells[MAX_COLS];
  int n = split(t, cells, err, errlen);
  if (n < 0)
    return -1;
  if (n != t->n_cols)
    return fail(err, errlen, t->name, t->line,
                n > t->n_cols ? cells[t->n_cols].column : line_len + 1,
                "%d cell%s, but the header has %d", n, n == 1 ? "" : "s",
                t->n_cols);
  memset(row, 0, sizeof *row);
  row->line = t->line;
  const cell *tc = &cells[t->time_col];
  const char *ts = trim(tc->text);
  if (*ts == '\0')
    return fail(err, errlen, t->name, t->line, tc->column,
                "time: the cell is empty");
  if (ms_parse_time(ts, &row->unix_time) != 0)
    return fail(err, errlen, t->name, t->line, tc->column,
                "time: '%s' is not a time (RFC 3339 such as "
                "2024-05-01T12:00:00Z, or Unix seconds)",
                ts);
  /* Unix seconds are any number to strtod: keep to times a metrics
   * system can have recorded (a -1 or 1e300 is a mistake, not a time) */
  if (!(row->unix_time >= 0 && row->unix_time < MS_TRACE_TIME_END))
    return fail(err, errlen, t->name, t->line, tc->column,
                "time: '%s' is outside 1970-01-01T00:00:00Z to "
                "9999-12-31T23:59:59Z (Unix seconds 0 to 253402300799)",
                ts);
  if (t->has_last && !(row->unix_time > t->last_time))
    return fail(err, errlen, t->name, t->line, tc->column,
                "time: '%s' is not after the previous row's", ts);
  t->last_time = row->unix_time;
  t->has_last = true;
  snprintf(row->time_text, sizeof row->time_text, "%s", ts);
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    if (t->input_col[i] < 0)
      continue;
    const cell *c = &cells[t->input_col[i]];
    const char *v = trim(c->text);
    if (*v == '\0')
      continue; /* no value this interval */
    char *end;
    double x = strtod(v, &end);
    bool hex = strchr(v, 'x') || strchr(v, 'X');
    if (end == v || *end != '\0' || hex)
      return fail(err, errlen, t->name, t->line, c->column,
                  "%s: '%s' is not a number", ms_input_name((ms_input_id)i), v);
    row->in.has[i] = true;
    row->in.value[i] = x;
  }
  return 1;
}

void ms_trace_close(ms_trace *t) {
  free(t->buf);
  t->buf = NULL;
  t->cap = 0;
}

/* ---- Prometheus ------------------------------------------------------ */

typedef struct {
  double t;
  int input;
  const char *value; /* owned by the JSON documents */
} sample;

static int by_time(const void *a, const void *b) {
  const sample *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->input - y->input;
}

/* The samples of one response, appended to *s. */
/* Whether a sample's value, a number to strtod, is also one to the CSV
 * reader, which gets it verbatim: no hexadecimal, no leading space (strtod
 * skips a newline there, which would end the CSV row). */
/* The longest sample value taken, bytes: a double needs at most 24, and
 * ten of them must fit a line of the merged trace (MS_TRACE_MAX_LINE). */
#define MAX_PROM_VALUE 64

static bool prom_number(const char *val) {
  return !isspace((unsigned char)val[0]) && strpbrk(val, "xX") == NULL;
}

static int load_series(const char *path, int input, json_t *root, sample **s,
                       size_t *n, size_t *cap, char *err, size_t len) {
  const char *status = json_string_value(json_object_get(root, "status"));
  if (status == NULL || strcmp(status, "success") != 0) {
    const char *e = json_string_value(json_object_get(root, "error"));
    snprintf(err, len,
             "%s: status: not a successful Prometheus response (status "
             "%s%s%s)",
             path, status ? status : "missing", e ? ": " : "", e ? e : "");
    return -1;
  }
  json_t *data = json_object_get(root, "data");
  const char *type = json_string_value(json_object_get(data, "resultType"));
  if (type == NULL || strcmp(type, "matrix") != 0) {
    snprintf(err, len,
             "%s: data.resultType is %s, not matrix: use the query_range API "
             "(/api/v1/query_range)",
             path, type ? type : "missing");
    return -1;
  }
  json_t *result = json_object_get(data, "result");
  if (!json_is_array(result) || json_array_size(result) != 1) {
    size_t k = json_is_array(result) ? json_array_size(result) : 0;
    snprintf(err, len,
             "%s: data.result: the query returned %zu series; it must return "
             "one (wrap "
             "it in sum(...) to add the series up)",
             path, k);
    return -1;
  }
  json_t *values = json_object_get(json_array_get(result, 0), "values");
  if (!json_is_array(values)) {
    snprintf(err, len,
             "%s: data.result[0].values: the series has no "
             "\"values\" array",
             path);
    return -1;
  }
  size_t i;
  json_t *v;
  double prev = -INFINITY;
  json_array_foreach(values, i, v) {
    json_t *jt = json_array_get(v, 0), *jv = json_array_get(v, 1);
    const char *val = json_string_value(jv);
    char *end;
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_number(jt) ||
        val == NULL || (strtod(val, &end), end == val || *end != '\0') ||
        !prom_number(val) || strlen(val) > MAX_PROM_VALUE) {
      snprintf(err, len,
               "%s: data.result[0].values[%zu] (sample %zu): not [unix_time, "
               "\"number\"] as query_range returns it",
               path, i, i + 1);
      return -1;
    }
    double t = json_number_value(jt);
    if (!(t > prev)) {
      snprintf(err, len,
               "%s: data.result[0].values[%zu] (sample %zu): the timestamp is "
               "not after the previous sample's",
               path, i, i + 1);
      return -1;
    }
    prev = t;
    /* the range of a trace's times (ms_trace_next): milliseconds, or a
     * time the CSV reader would reject, are caught here, naming the file */
    if (!(t >= 0 && t < MS_TRACE_TIME_END)) {
      snprintf(err, len,
               "%s: data.result[0].values[%zu] (sample %zu): time %.17g is "
               "outside 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z (Unix "
               "seconds 0 to 253402300799)",
               path, i, i + 1, t);
      return -1;
    }
    if (*n == *cap) {
      size_t nc = *cap ? 2 * *cap : 1024;
      sample *ns = realloc(*s, nc * sizeof *ns);
      if (ns == NULL) {
        snprintf(err, len, "out of memory");
        return -1;
      }
      *s = ns;
      *cap = nc;
    }
    (*s)[(*n)++] = (sample){t, input, val};
  }
  return 0;
}

/* Count the samples of a query_range response in text without parsing
 * it: the arrays opened inside two others (data.result[k].values[j]),
 * strings skipped.  *total (over the files so far) past
 * MS_PROM_MAX_SAMPLES is an error at that sample's line and column. */
static int prom_count(const char *path, const char *text, size_t len,
                      long *total, char *err, size_t errlen) {
  int arrays = 0, line = 1, col = 0;
  long here = 0;
  char stack[64]; /* '[' or '{' of the enclosing levels, the first 64 */
  int depth = 0;
  bool in_string = false;
  for (size_t k = 0; k < len; k++) {
    char ch = text[k];
    col++;
    if (ch == '\n') {
      line++;
      col = 0;
    }
    if (in_string) {
      if (ch == '\\')
        k++, col++;
      else if (ch == '"')
        in_string = false;
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (ch == '[' && arrays == 2 && ++*total > MS_PROM_MAX_SAMPLES) {
        snprintf(err, errlen,
                 "%s:%d:%d: data.result[0].values[%ld] (sample %ld of the "
                 "responses): more than %d samples in all, the limit: "
                 "shorten the query's range or raise its step",
                 path, line, col, here, *total, MS_PROM_MAX_SAMPLES);
        return -1;
      }
      if (ch == '[' && arrays == 2)
        here++;
      if (depth < (int)sizeof stack)
        stack[depth] = ch;
      depth++;
      arrays += ch == '[';
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      depth--;
      if (depth < (int)sizeof stack && stack[depth] == '[')
        arrays--;
    }
  }
  return 0;
}

/* The text of a response, at most MS_PROM_MAX_BYTES, its samples counted
 * into *total (prom_count).  Returns 0, or -1 with err. */
static int prom_read(const char *path, char **text, size_t *len, long *total,
                     char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  int rc = buf ? 0 : -1;
  if (buf == NULL)
    snprintf(err, errlen, "%s: out of memory", path);
  while (rc == 0) {
    if (n == cap && n >= MS_PROM_MAX_BYTES && getc(f) == EOF)
      break; /* exactly the limit */
    if (n == cap) {
      char *nb = n >= MS_PROM_MAX_BYTES ? NULL : realloc(buf, 2 * cap);
      if (nb == NULL) {
        snprintf(err, errlen,
                 n >= MS_PROM_MAX_BYTES
                     ? "%s: more than %d MiB, the limit for a Prometheus "
                       "response: shorten the query's range or raise its step"
                     : "%s: out of memory",
                 path, MS_PROM_MAX_BYTES >> 20);
        rc = -1;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  if (rc == 0 && ferror(f)) {
    snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    rc = -1;
  }
  fclose(f);
  *text = buf;
  *len = n;
  if (rc == 0)
    rc = prom_count(path, buf, n, total, err, errlen);
  return rc;
}

int ms_trace_from_prometheus(const char *const files[MS_INPUT_COUNT], FILE *out,
                             char *err, size_t errlen) {
  json_t *docs[MS_INPUT_COUNT] = {0};
  sample *s = NULL;
  size_t n = 0, cap = 0;
  long total = 0;
  int rc = -1, any = 0;
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    if (files[i] == NULL)
      continue;
    any = 1;
    json_error_t je;
    char *text = NULL;
    size_t len = 0;
    if (prom_read(files[i], &text, &len, &total, err, errlen) != 0) {
      free(text);
      goto out;
    }
    docs[i] = json_loadb(text, len, 0, &je);
    free(text);
    if (docs[i] == NULL) {
      snprintf(err, errlen, "%s:%d:%d: not JSON: %s", files[i], je.line,
               je.column, je.text);
      goto out;
    }
    if (load_series(files[i], i, docs[i], &s, &n, &cap, err, errlen) != 0)
      goto out;
  }
  if (!any) {
    snprintf(err, errlen, "no Prometheus responses given");
    goto out;
  }
  if (n > 1) /* no samples: s is NULL, which qsort may not take */
    qsort(s, n, sizeof *s, by_time);
  fputs("time", out);
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    if (files[i])
      fprintf(out, ",%s", ms_input_name((ms_input_id)i));
  fputc('\n', out);
  char tb[32];
  for (size_t k = 0; k < n;) {
    double t = s[k].t;
    const char *val[MS_INPUT_COUNT] = {0};
    for (; k < n && s[k].t == t; k++)
      val[s[k].input] = s[k].value;
    fputs(ms_format_double(tb, t), out);
    for (int i = 0; i < MS_INPUT_COUNT; i++)
      if (files[i])
        fprintf(out, ",%s", val[i] ? val[i] : "");
    fputc('\n', out);
  }
  rc = 0;
out:
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    json_decref(docs[i]);
  free(s);
  return rc;
}
