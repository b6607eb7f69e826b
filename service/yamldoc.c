/* SPDX-License-Identifier: MIT */
/* Reading YAML documents for the service and scenario files. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service.h"
#include "yamldoc.h"

int ms_yaml_fail(ms_yaml_loader *ld, const yaml_node_t *node, const char *fmt,
                 ...) {
  if (ld->failed)
    return -1;
  ld->failed = 1;
  int n = snprintf(ld->err, ld->errlen, "%s:%zu:%zu: ", ld->path,
                   node ? node->start_mark.line + 1 : 1,
                   node ? node->start_mark.column + 1 : 1);
  if (n >= 0 && (size_t)n < ld->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ld->err + n, ld->errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

const char *ms_yaml_scalar(const yaml_node_t *n) {
  return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                     : NULL;
}

const char *ms_yaml_kind(const yaml_node_t *n) {
  switch (n->type) {
  case YAML_SCALAR_NODE:
    return "a scalar";
  case YAML_SEQUENCE_NODE:
    return "a list";
  case YAML_MAPPING_NODE:
    return "a mapping";
  default:
    return "empty";
  }
}

/* "a, b, c" for messages, cut with "..." when buf is too small. */
static const char *key_list(const ms_yaml_keys *t, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < t->n_keys; i++) {
    int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", t->keys[i]);
    if (n < 0 || (size_t)n >= len - used) {
      if (len >= 4)
        strcpy(buf + len - 4, "...");
      break;
    }
    used += (size_t)n;
  }
  return buf;
}

int ms_yaml_walk_mapping(ms_yaml_loader *ld, const yaml_node_t *node,
                         const ms_yaml_keys *t, const yaml_node_t **values,
                         const yaml_node_t **key_nodes) {
  for (size_t i = 0; i < t->n_keys; i++) {
    values[i] = NULL;
    if (key_nodes)
      key_nodes[i] = NULL;
  }
  if (node->type != YAML_MAPPING_NODE)
    return ms_yaml_fail(ld, node, "%s must be a mapping, not %s", t->what,
                        ms_yaml_kind(node));
  for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
       p < node->data.mapping.pairs.top; p++) {
    const yaml_node_t *k = yaml_document_get_node(ld->doc, p->key);
    const char *ks = ms_yaml_scalar(k);
    if (ks == NULL)
      return ms_yaml_fail(ld, k, "a %s in %s must be a name, not %s", t->noun,
                          t->what, ms_yaml_kind(k));
    size_t id = 0;
    while (id < t->n_keys && strcmp(ks, t->keys[id]) != 0)
      id++;
    if (id == t->n_keys) {
      char known[512];
      const char *near = ms_suggest(ks, t->keys, t->n_keys, false);
      if (near != NULL)
        return ms_yaml_fail(ld, k,
                            "unknown %s '%s' in %s: did you mean '%s'? "
                            "(known: %s)",
                            t->noun, ks, t->what, near,
                            key_list(t, known, sizeof known));
      return ms_yaml_fail(ld, k, "unknown %s '%s' in %s (known: %s)", t->noun,
                          ks, t->what, key_list(t, known, sizeof known));
    }
    if (values[id] != NULL)
      return ms_yaml_fail(ld, k, "%s '%s' given twice in %s", t->noun, ks,
                          t->what);
    values[id] = yaml_document_get_node(ld->doc, p->value);
    if (key_nodes)
      key_nodes[id] = k;
  }
  return 0;
}

/* A scalar in quotes, or the kind of another node, for "must be a ...,
 * not ..." messages. */
static const char *shown(const yaml_node_t *v, char *buf, size_t len) {
  const char *s = ms_yaml_scalar(v);
  if (s == NULL)
    return ms_yaml_kind(v);
  snprintf(buf, len, "'%s'", s);
  return buf;
}

int ms_yaml_get_number(ms_yaml_loader *ld, const yaml_node_t *v,
                       const char *key, double *out) {
  const char *s = ms_yaml_scalar(v);
  char buf[320];
  int r = s == NULL ? -1 : ms_parse_number(s, out);
  if (r == MS_NUMBER_TINY)
    return ms_yaml_fail(ld, v, "%s (key '%s')",
                        ms_number_tiny_message(buf, sizeof buf, s), key);
  if (r != 0)
    return ms_yaml_fail(ld, v, "%s must be a number, not %s (key '%s')", key,
                        shown(v, buf, sizeof buf), key);
  return 0;
}

int ms_yaml_get_share(ms_yaml_loader *ld, const yaml_node_t *v, const char *key,
                      double *out) {
  const char *s = ms_yaml_scalar(v);
  char buf[320];
  int r = s == NULL ? -1 : ms_parse_share(s, out);
  if (r == MS_NUMBER_TINY)
    return ms_yaml_fail(ld, v, "%s (key '%s')",
                        ms_number_tiny_message(buf, sizeof buf, s), key);
  if (r != 0)
    return ms_yaml_fail(ld, v,
                        "%s must be a number or a percentage, not %s (key "
                        "'%s')",
                        key, shown(v, buf, sizeof buf), key);
  return 0;
}

int ms_yaml_get_unit(ms_yaml_loader *ld, const yaml_node_t *v, const char *key,
                     int duration, double *out) {
  const char *s = ms_yaml_scalar(v);
  char msg[320];
  if (s == NULL)
    return ms_yaml_fail(ld, v, "%s must be a %s, not %s (key '%s')", key,
                        duration ? "duration" : "rate", ms_yaml_kind(v), key);
  int r = duration ? ms_parse_duration(s, out, msg, sizeof msg)
                   : ms_parse_rate(s, out, msg, sizeof msg);
  if (r != 0)
    return ms_yaml_fail(ld, v, "%s (key '%s')", msg, key);
  return 0;
}

int ms_yaml_get_whole(ms_yaml_loader *ld, const yaml_node_t *v, const char *key,
                      double *out) {
  char buf[320];
  int r = ms_parse_whole(ms_yaml_scalar(v), out);
  if (r == MS_NUMBER_TINY)
    return ms_yaml_fail(
        ld, v, "%s (key '%s')",
        ms_number_tiny_message(buf, sizeof buf, ms_yaml_scalar(v)), key);
  if (r != 0)
    return ms_yaml_fail(ld, v, "%s must be a whole number, not %s (key '%s')",
                        key, shown(v, buf, sizeof buf), key);
  return 0;
}

int ms_yaml_get_param(ms_yaml_loader *ld, const yaml_node_t *v, ms_param id,
                      double *out) {
  const ms_param_info *p = ms_param_get(id);
  double x;
  if (p == NULL)
    return ms_yaml_fail(ld, v, "parameter %d is not a parameter", (int)id);
  /* the syntax is ms_parse_param's; the messages the other readers' */
  char why[320], buf[256];
  const char *s = ms_yaml_scalar(v);
  switch (ms_parse_param(id, s, &x, why, sizeof why)) {
  case MS_PARSE_OK:
    break;
  case MS_PARSE_NOT_WHOLE:
    return ms_yaml_fail(ld, v, "%s must be a whole number, not %s (key '%s')",
                        p->key, shown(v, buf, sizeof buf), p->key);
  case MS_PARSE_NOT_NUMBER:
    return ms_yaml_fail(ld, v, "%s must be a %s, not %s (key '%s')", p->key,
                        ms_param_is_share(id) ? "number or a percentage"
                                              : "number",
                        shown(v, buf, sizeof buf), p->key);
  case MS_PARSE_NOT_UNIT:
    if (s == NULL) /* a list or a mapping */
      return ms_yaml_fail(ld, v, "%s must be a %s, not %s (key '%s')", p->key,
                          strcmp(p->unit, "s") == 0 ? "duration" : "rate",
                          ms_yaml_kind(v), p->key);
    return ms_yaml_fail(ld, v, "%s (key '%s')", why, p->key);
  }
  ms_error e;
  if (ms_param_check(id, x, &e) != MS_OK)
    return ms_yaml_fail(ld, v, "%s (key '%s')", e.msg, p->key);
  *out = x;
  return 0;
}

int ms_yaml_check_range(ms_yaml_loader *ld, const yaml_node_t *v,
                        const char *key, double x, double lo, double hi,
                        int bounds) {
  bool lo_open = bounds & MS_BOUND_LO_OPEN, hi_open = bounds & MS_BOUND_HI_OPEN;
  if ((lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi))
    return 0;
  const char *s = ms_yaml_scalar(v);
  /* %.16g: 1000 and 2^53 in full, 0.1 as 0.1 */
  return ms_yaml_fail(ld, v, "%s = %s is outside %c%.16g, %.16g%c (key '%s')",
                      key, s ? s : "?", lo_open ? '(' : '[', lo, hi,
                      hi_open ? ')' : ']', key);
}

int ms_yaml_read_file(const char *path, size_t max_bytes, char **buf_out,
                      size_t *len_out, char *errbuf, size_t errlen) {
  /* O_NONBLOCK: a FIFO must not hang collectd's start; only regular files
   * of a sane size are read. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    snprintf(errbuf, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
      (size_t)sb.st_size > max_bytes) {
    if (S_ISREG(sb.st_mode))
      snprintf(errbuf, errlen, "%s: larger than %zu bytes: not a %s", path,
               max_bytes, "file of this kind");
    else
      snprintf(errbuf, errlen, "%s: not a regular file", path);
    close(fd);
    return -1;
  }
  size_t len = (size_t)sb.st_size;
  char *buf = malloc(len + 1);
  size_t got = 0;
  while (buf != NULL && got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  int saved = errno;
  close(fd);
  if (buf == NULL || got != len) {
    snprintf(errbuf, errlen, "%s: cannot read: %s", path,
             buf == NULL ? "out of memory"
                         : (saved ? strerror(saved)
                                  : "the file changed while it was read"));
    free(buf);
    return -1;
  }
  *buf_out = buf;
  *len_out = len;
  return 0;
}

/* Our files nest four levels deep. */
#define MAX_NESTING 32

/* A first pass over libyaml's events, before any document is built: stops
 * at nesting deeper than MAX_NESTING, at a second document and at a NUL
 * inside a scalar (the one place that refuses it, for every key and
 * value of both loaders).  Syntax
 * errors are left to the loader, which reports them the same way. */
static int prescan(const char *text, size_t len, const char *name, char *errbuf,
                   size_t errlen) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    snprintf(errbuf, errlen, "%s: cannot initialise the YAML parser", name);
    return -1;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int depth = 0, documents = 0, r = 0;
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev))
      break;
    yaml_event_type_t type = ev.type;
    yaml_mark_t mark = ev.start_mark;
    /* "a\u0000b": libyaml keeps the length, a C string stops at the NUL */
    bool nul = type == YAML_SCALAR_EVENT &&
               memchr(ev.data.scalar.value, '\0', ev.data.scalar.length);
    yaml_event_delete(&ev);
    if (nul) {
      snprintf(errbuf, errlen,
               "%s:%zu:%zu: a NUL character (\\0 or \\u0000) in a scalar: "
               "no name or value of the file holds one",
               name, mark.line + 1, mark.column + 1);
      r = -1;
      break;
    }
    if (type == YAML_STREAM_END_EVENT)
      break;
    if (type == YAML_DOCUMENT_START_EVENT && ++documents > 1) {
      snprintf(errbuf, errlen,
               "%s:%zu:%zu: a second YAML document starts here; the file "
               "holds one",
               name, mark.line + 1, mark.column + 1);
      r = -1;
      break;
    }
    if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
      if (++depth > MAX_NESTING) {
        snprintf(errbuf, errlen,
                 "%s:%zu:%zu: nested deeper than %d levels; the file needs "
                 "four",
                 name, mark.line + 1, mark.column + 1, MAX_NESTING);
        r = -1;
        break;
      }
    } else if (type == YAML_SEQUENCE_END_EVENT ||
               type == YAML_MAPPING_END_EVENT) {
      depth--;
    }
  }
  yaml_parser_delete(&parser);
  return r;
}

bool ms_yaml_cancelled(ms_yaml_loader *ld) {
  if (ld->cancel == NULL || !atomic_load(ld->cancel))
    return false;
  if (!ld->failed)
    snprintf(ld->err, ld->errlen, "%s: load cancelled", ld->path);
  ld->failed = 1;
  return true;
}

int ms_yaml_load(const char *text, size_t len, const char *name,
                 const atomic_bool *cancel, yaml_document_t *doc, char *errbuf,
                 size_t errlen) {
  if (cancel != NULL && atomic_load(cancel)) {
    snprintf(errbuf, errlen, "%s: load cancelled", name);
    return -1;
  }
  if (prescan(text, len, name, errbuf, errlen) != 0)
    return -1;
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    snprintf(errbuf, errlen, "%s: cannot initialise the YAML parser", name);
    return -1;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int r = 0;
  if (!yaml_parser_load(&parser, doc)) {
    yaml_mark_t at = parser.problem_mark;
    char byte[48] = "";
    if (parser.error == YAML_READER_ERROR) {
      /* a reader error (a NUL or another control byte, bad UTF-8) has an
       * offset, not a mark: its line and column, in bytes */
      at = (yaml_mark_t){0};
      for (size_t i = 0; i < parser.problem_offset && i < len; i++)
        if (text[i] == '\n')
          at.line++, at.column = 0;
        else
          at.column++;
      if (parser.problem_value >= 0)
        snprintf(byte, sizeof byte, " (byte 0x%02x)", parser.problem_value);
    }
    snprintf(errbuf, errlen, "%s:%zu:%zu: YAML syntax: %s%s%s%s", name,
             at.line + 1, at.column + 1,
             parser.problem ? parser.problem : "error", byte,
             parser.context ? " " : "", parser.context ? parser.context : "");
    r = -1;
  }
  yaml_parser_delete(&parser);
  return r;
}

/*
 * A value of the simulation from v: read as its kind is written (a
 * duration, a rate, a whole number for servers and tokens, a plain number
 * for a backoff multiplier), its range
 * decided by the model (ms_sim_value_check), whose message is reported at
 * v with the key.
 */
int ms_yaml_get_sim_value(ms_yaml_loader *ld, const yaml_node_t *v,
                          const char *key, ms_sim_value kind, double *out) {
  int r;
  switch (kind) {
  case MS_SIM_LOAD:
  case MS_SIM_LOAD_CHANGE:
    r = ms_yaml_get_unit(ld, v, key, 0, out);
    break;
  case MS_SIM_POOL:
  case MS_SIM_TOKENS:
    r = ms_yaml_get_whole(ld, v, key, out);
    break;
  case MS_SIM_MULTIPLIER:
    r = ms_yaml_get_number(ld, v, key, out);
    break;
  default:
    r = ms_yaml_get_unit(ld, v, key, 1, out);
  }
  ms_error e;
  if (r == 0 && ms_sim_value_check(kind, key, *out, &e) != MS_OK)
    return ms_yaml_fail(ld, v, "%s (key '%s')", e.msg, key);
  return r;
}

/* ---- backoff ---------------------------------------------------------- */

enum { B_KIND, B_BASE, B_CAP, B_MULTIPLIER, B_COUNT };
static const char *const backoff_keys[B_COUNT] = {"kind", "base", "cap",
                                                  "multiplier"};
static const ms_yaml_keys backoff_table = {"backoff", "key", backoff_keys,
                                           B_COUNT};

int ms_yaml_get_backoff(ms_yaml_loader *ld, const yaml_node_t *map,
                        ms_backoff *b) {
  const yaml_node_t *val[B_COUNT], *key[B_COUNT];
  if (ms_yaml_walk_mapping(ld, map, &backoff_table, val, key) != 0)
    return -1;
  if (val[B_KIND] == NULL)
    return ms_yaml_fail(ld, map,
                        "backoff needs a kind: none, constant, exponential, "
                        "full-jitter, equal-jitter or decorrelated-jitter (key "
                        "'backoff.kind')");
  const char *kind = ms_yaml_scalar(val[B_KIND]);
  ms_error err;
  if (kind == NULL || ms_backoff_from_name(kind, &b->kind, &err) != MS_OK)
    return ms_yaml_fail(ld, val[B_KIND], "%s (key 'backoff.kind')",
                        kind ? err.msg : "backoff kind must be a name");
  b->base = b->cap = b->multiplier = 0.0;
  if (val[B_BASE] && ms_yaml_get_sim_value(ld, val[B_BASE], "base",
                                           MS_SIM_DELAY, &b->base) != 0)
    return -1;
  if (val[B_CAP] &&
      ms_yaml_get_sim_value(ld, val[B_CAP], "cap", MS_SIM_DELAY, &b->cap) != 0)
    return -1;
  bool capped = b->kind != MS_BACKOFF_NONE && b->kind != MS_BACKOFF_CONSTANT;
  if (b->kind != MS_BACKOFF_NONE && val[B_BASE] == NULL)
    return ms_yaml_fail(
        ld, map, "backoff %s needs a base delay (key 'backoff.base')", kind);
  if (capped && val[B_CAP] == NULL)
    return ms_yaml_fail(ld, map, "backoff %s needs a cap (key 'backoff.cap')",
                        kind);
  if (!capped && val[B_CAP] != NULL)
    return ms_yaml_fail(ld, key[B_CAP],
                        "backoff %s takes no cap (key "
                        "'backoff.cap')",
                        kind);
  if (val[B_MULTIPLIER] != NULL && !ms_backoff_multiplies(b->kind))
    return ms_yaml_fail(ld, key[B_MULTIPLIER],
                        "backoff %s takes no multiplier (exponential, "
                        "full-jitter and equal-jitter do) (key "
                        "'backoff.multiplier')",
                        kind);
  if (val[B_MULTIPLIER] &&
      ms_yaml_get_sim_value(ld, val[B_MULTIPLIER], "multiplier",
                            MS_SIM_MULTIPLIER, &b->multiplier) != 0)
    return -1;
  if (ms_backoff_check(b, &err) != MS_OK)
    return ms_yaml_fail(ld, map, "%s (key 'backoff')", err.msg);
  return 0;
}
