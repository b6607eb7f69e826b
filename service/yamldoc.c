/* SPDX-License-Identifier: MIT */
/* Reading YAML documents for the service and scenario files. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service.h"
#include "yamldoc.h"

/* "path:line:column: " then fmt into err: the one shape of every message
 * of both loaders (ms_yaml_fail, the prescan's scan_fail). */
static void located(char *err, size_t errlen, const char *path, size_t line,
                    size_t column, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));
/* Words (runs without a blank) longer than this are cut in a message
 * that would not fit: a value or a key of a hostile file ('1000...' of
 * 600 digits, a key of 1,000 letters) ate the reason that followed it. */
enum { LONG_WORD = 64, WORD_HEAD = 40, WORD_TAIL = 8 };

/* s with every word over LONG_WORD bytes cut to its head, "...", and its
 * tail, into out (outlen > 0); UTF-8 sequences are not split. */
static void shorten_words(char *out, size_t outlen, const char *s) {
  size_t o = 0;
  while (*s != '\0' && o + 1 < outlen) {
    size_t w = strcspn(s, " \n");
    if (w > LONG_WORD) {
      size_t head = WORD_HEAD, tail = WORD_TAIL;
      while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80)
        head--;
      while (tail < w && ((unsigned char)s[w - tail] & 0xC0) == 0x80)
        tail++;
      o += (size_t)snprintf(out + o, outlen - o, "%.*s\u2026%.*s", (int)head, s,
                            (int)tail, s + w - tail);
    } else {
      o += (size_t)snprintf(out + o, outlen - o, "%.*s", (int)w, s);
    }
    if (o >= outlen)
      break;
    s += w;
    size_t b = strspn(s, " \n");
    o += (size_t)snprintf(out + o, outlen - o, "%.*s", (int)b, s);
    s += b;
  }
}

static void located(char *err, size_t errlen, const char *path, size_t line,
                    size_t column, const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  int n = snprintf(err, errlen, "%s:%zu:%zu: ", path, line, column);
  if (n >= 0 && (size_t)n < errlen) {
    int m = vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    if (m >= 0 && (size_t)n + (size_t)m >= errlen) {
      /* it did not fit: the whole message, its long words cut */
      char *full = malloc((size_t)m + 1);
      if (full != NULL) {
        vsnprintf(full, (size_t)m + 1, fmt, again);
        shorten_words(err + n, errlen - (size_t)n, full);
        free(full);
      }
    }
  }
  va_end(again);
}

int ms_yaml_fail(ms_yaml_loader *ld, const yaml_node_t *node, const char *fmt,
                 ...) {
  if (ld->failed)
    return -1;
  ld->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  located(ld->err, ld->errlen, ld->path, node ? node->start_mark.line + 1 : 1,
          node ? node->start_mark.column + 1 : 1, fmt, ap);
  va_end(ap);
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
  return ms_quoted(buf, len, s);
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

/* Events between two looks at the cancel flag: a few microseconds. */
#define CANCEL_EVERY 4096

/* An anchor (&name) seen by the prescan, with the nodes it stands for. */
typedef struct {
  char *name;
  size_t nodes;
} anchor_cost;

/* A list or mapping the prescan is inside. */
typedef struct {
  size_t start; /* nodes counted before it */
  char *anchor; /* its anchor, or NULL */
  bool map;     /* a mapping: its children alternate key, value */
  size_t children;
} open_node;

typedef struct {
  const char *name;
  const ms_yaml_limits *lim;
  char *err;
  size_t errlen;
  anchor_cost *anchors;
  size_t n_anchors, defined;
  open_node open[MAX_NESTING + 1];
  int depth;
  size_t nodes;      /* counted so far, aliases expanded */
  int items_depth;   /* depth of the items' list while inside it, else 0 */
  bool items_key;    /* the last key of the root mapping is lim->items_key */
  size_t items;      /* items of the list so far */
  bool in_item;      /* inside an item */
  size_t item_start; /* nodes counted before the current item */
  yaml_mark_t item_mark;
} prescan_state;

static int scan_fail(prescan_state *st, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int scan_fail(prescan_state *st, yaml_mark_t mark, const char *fmt,
                     ...) {
  va_list ap;
  va_start(ap, fmt);
  located(st->err, st->errlen, st->name, mark.line + 1, mark.column + 1, fmt,
          ap);
  va_end(ap);
  return -1;
}

/* The nodes an alias repeats: those of the last anchor of that name (1
 * when there is none: the loader then reports the undefined alias). */
static size_t alias_nodes(const prescan_state *st, const char *name) {
  for (size_t i = st->n_anchors; i-- > 0;)
    if (strcmp(st->anchors[i].name, name) == 0)
      return st->anchors[i].nodes;
  return 1;
}

/* Record a complete anchor (takes name); -1 when out of memory. */
static int add_anchor(prescan_state *st, char *name, size_t nodes) {
  anchor_cost *a =
      realloc(st->anchors, (st->n_anchors + 1) * sizeof *st->anchors);
  if (a == NULL) {
    free(name);
    return -1;
  }
  st->anchors = a;
  a[st->n_anchors++] = (anchor_cost){name, nodes};
  return 0;
}

/* A scalar, an alias, or the start of a list or a mapping. */
static int scan_node(prescan_state *st, const yaml_event_t *ev) {
  const ms_yaml_limits *lim = st->lim;
  yaml_mark_t mark = ev->start_mark;
  const char *anchor = NULL;
  size_t cost = 1;
  switch (ev->type) {
  case YAML_SCALAR_EVENT:
    anchor = (const char *)ev->data.scalar.anchor;
    break;
  case YAML_SEQUENCE_START_EVENT:
    anchor = (const char *)ev->data.sequence_start.anchor;
    break;
  case YAML_MAPPING_START_EVENT:
    anchor = (const char *)ev->data.mapping_start.anchor;
    break;
  default: { /* an alias */
    const char *to = (const char *)ev->data.alias.anchor;
    for (int i = 0; i < st->depth; i++)
      if (st->open[i].anchor && strcmp(st->open[i].anchor, to) == 0)
        return scan_fail(st, mark,
                         "the alias *%s is inside the node it names: "
                         "a node cannot hold itself",
                         to);
    cost = alias_nodes(st, to);
  }
  }
  open_node *parent = st->depth > 0 ? &st->open[st->depth - 1] : NULL;
  bool root_key = st->depth == 1 && parent->map && parent->children % 2 == 0;
  bool root_value = st->depth == 1 && parent->map && parent->children % 2 == 1;
  if (root_key)
    st->items_key =
        lim->items_key && ev->type == YAML_SCALAR_EVENT &&
        strcmp((const char *)ev->data.scalar.value, lim->items_key) == 0;
  if (parent)
    parent->children++;
  bool item = st->items_depth > 0 && st->depth == st->items_depth;
  if (item) {
    if (lim->max_items && ++st->items > lim->max_items)
      return scan_fail(st, mark,
                       "more than %zu %ss: the limit of a file is %zu",
                       lim->max_items, lim->item, lim->max_items);
    if (lim->no_alias_items && ev->type == YAML_ALIAS_EVENT)
      return scan_fail(st, mark,
                       "a %s cannot be an alias (*%s): write each %s out, "
                       "with its own name",
                       lim->item, (const char *)ev->data.alias.anchor,
                       lim->item);
    st->in_item = true;
    st->item_start = st->nodes;
    st->item_mark = mark;
  }
  if (anchor && lim->max_anchors && ++st->defined > lim->max_anchors)
    return scan_fail(st, mark,
                     "more than %zu anchors (&name): the limit of a "
                     "file is %zu",
                     lim->max_anchors, lim->max_anchors);
  st->nodes = cost > SIZE_MAX - st->nodes ? SIZE_MAX : st->nodes + cost;
  if (lim->max_nodes && st->nodes > lim->max_nodes)
    return scan_fail(st, mark,
                     "more than %zu YAML nodes (an alias counts as the "
                     "nodes it repeats): the limit of a file is %zu",
                     lim->max_nodes, lim->max_nodes);
  if (st->in_item && lim->max_item_nodes &&
      st->nodes - st->item_start > lim->max_item_nodes)
    return scan_fail(st, st->item_mark,
                     "this %s has more than %zu YAML nodes (an alias counts "
                     "as the nodes it repeats): the limit of a %s is %zu",
                     lim->item, lim->max_item_nodes, lim->item,
                     lim->max_item_nodes);
  if (ev->type == YAML_SEQUENCE_START_EVENT ||
      ev->type == YAML_MAPPING_START_EVENT) {
    if (st->depth >= MAX_NESTING)
      return scan_fail(st, mark,
                       "nested deeper than %d levels; the file needs four",
                       MAX_NESTING);
    char *copy = NULL;
    if (anchor && (copy = strdup(anchor)) == NULL)
      return scan_fail(st, mark, "out of memory");
    st->open[st->depth++] =
        (open_node){.start = st->nodes - 1,
                    .anchor = copy,
                    .map = ev->type == YAML_MAPPING_START_EVENT};
    if (ev->type == YAML_SEQUENCE_START_EVENT && root_value && st->items_key)
      st->items_depth = st->depth;
    return 0;
  }
  if (item)
    st->in_item = false;
  if (anchor) {
    char *copy = strdup(anchor);
    if (copy == NULL || add_anchor(st, copy, 1) != 0)
      return scan_fail(st, mark, "out of memory");
  }
  return 0;
}

/* The end of a list or a mapping. */
static int scan_end(prescan_state *st, const yaml_event_t *ev) {
  if (st->depth == 0) /* libyaml does not send it; be safe */
    return 0;
  open_node *o = &st->open[--st->depth];
  if (o->anchor != NULL) {
    char *name = o->anchor;
    o->anchor = NULL;
    if (add_anchor(st, name, st->nodes - o->start) != 0)
      return scan_fail(st, ev->start_mark, "out of memory");
  }
  if (st->items_depth > 0 && st->depth < st->items_depth)
    st->items_depth = 0;
  else if (st->depth == st->items_depth)
    st->in_item = false;
  return 0;
}

/* A first pass over libyaml's events, before any document is built: stops
 * at a second document, at nesting deeper than MAX_NESTING, at a NUL
 * inside a scalar (the one place that refuses it, for every key and value
 * of both loaders), and at a limit of lim passed, each time at the event
 * that passed it.  Syntax errors are left to the loader, which reports
 * them the same way. */
static int prescan(const char *text, size_t len, const char *name,
                   const atomic_bool *cancel, const ms_yaml_limits *lim,
                   char *errbuf, size_t errlen) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    snprintf(errbuf, errlen, "%s: cannot initialise the YAML parser", name);
    return -1;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  prescan_state st = {
      .name = name, .lim = lim, .err = errbuf, .errlen = errlen};
  int documents = 0, r = 0;
  for (size_t events = 1; r == 0; events++) {
    if (events % CANCEL_EVERY == 0 && cancel != NULL && atomic_load(cancel)) {
      snprintf(errbuf, errlen, "%s: load cancelled", name);
      r = -1;
      break;
    }
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev))
      break;
    switch (ev.type) {
    case YAML_DOCUMENT_START_EVENT:
      if (++documents > 1)
        r = scan_fail(&st, ev.start_mark,
                      "a second YAML document starts here; the file holds "
                      "one");
      break;
    case YAML_SCALAR_EVENT:
      /* "a\u0000b": libyaml keeps the length, a C string stops at the NUL */
      if (memchr(ev.data.scalar.value, '\0', ev.data.scalar.length)) {
        r = scan_fail(&st, ev.start_mark,
                      "a NUL character (\\0 or \\u0000) in a scalar: no "
                      "name or value of the file holds one");
        break;
      }
      r = scan_node(&st, &ev);
      break;
    case YAML_ALIAS_EVENT:
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
      r = scan_node(&st, &ev);
      break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
      r = scan_end(&st, &ev);
      break;
    default:
      break;
    }
    bool end = ev.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&ev);
    if (end)
      break;
  }
  for (int i = 0; i < st.depth; i++)
    free(st.open[i].anchor);
  for (size_t i = 0; i < st.n_anchors; i++)
    free(st.anchors[i].name);
  free(st.anchors);
  yaml_parser_delete(&parser);
  return r;
}

/* The text, fed to libyaml's composer through a read handler that looks
 * at the cancel flag each time the parser asks for more input (16 KiB at
 * a time: a few milliseconds of composing at most).  yaml_parser_load
 * builds the whole document in one call; without this a parse under way
 * (4,000,000 nodes: about 2 s here, 6 s on a loaded host) held the
 * reload thread's shutdown until it ended. */
typedef struct {
  const unsigned char *text;
  size_t len, at;
  const atomic_bool *cancel;
} cancellable_input;

static int read_cancellable(void *data, unsigned char *buffer, size_t size,
                            size_t *size_read) {
  cancellable_input *in = data;
  *size_read = 0;
  if (in->cancel != NULL && atomic_load(in->cancel))
    return 0; /* a reader error; the caller says "cancelled" */
  size_t n = in->len - in->at < size ? in->len - in->at : size;
  memcpy(buffer, in->text + in->at, n);
  in->at += n;
  *size_read = n;
  return 1;
}

bool ms_yaml_cancelled(ms_yaml_loader *ld) {
  if (ld->cancel == NULL || !atomic_load(ld->cancel))
    return false;
  if (!ld->failed)
    snprintf(ld->err, ld->errlen, "%s: load cancelled", ld->path);
  ld->failed = 1;
  return true;
}

const ms_yaml_limits ms_yaml_file_limits = {
    .max_nodes = MS_SERVICE_FILE_MAX_NODES,
    .max_anchors = MS_SERVICE_FILE_MAX_ANCHORS,
};

int ms_yaml_load(const char *text, size_t len, const char *name,
                 const atomic_bool *cancel, yaml_document_t *doc, char *errbuf,
                 size_t errlen) {
  return ms_yaml_load_limited(text, len, name, cancel, &ms_yaml_file_limits,
                              doc, errbuf, errlen);
}

int ms_yaml_load_limited(const char *text, size_t len, const char *name,
                         const atomic_bool *cancel, const ms_yaml_limits *lim,
                         yaml_document_t *doc, char *errbuf, size_t errlen) {
  if (cancel != NULL && atomic_load(cancel)) {
    snprintf(errbuf, errlen, "%s: load cancelled", name);
    return -1;
  }
  if (prescan(text, len, name, cancel, lim, errbuf, errlen) != 0)
    return -1;
  if (cancel != NULL && atomic_load(cancel)) {
    snprintf(errbuf, errlen, "%s: load cancelled", name);
    return -1;
  }
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    snprintf(errbuf, errlen, "%s: cannot initialise the YAML parser", name);
    return -1;
  }
  cancellable_input in = {(const unsigned char *)text, len, 0, cancel};
  yaml_parser_set_input(&parser, read_cancellable, &in);
  int r = 0;
  if (!yaml_parser_load(&parser, doc) && cancel != NULL &&
      atomic_load(cancel)) {
    snprintf(errbuf, errlen, "%s: load cancelled", name);
    r = -1;
  } else if (parser.error != YAML_NO_ERROR) {
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
