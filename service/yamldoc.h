/*
 * Reading YAML documents for the service and scenario files (internal to
 * service/): libyaml's document API, so that every node keeps its line and
 * column, with the checks both loaders need against hostile files.
 */
#ifndef METASTABLE_YAMLDOC_H
#define METASTABLE_YAMLDOC_H

#include <stddef.h>
#include <yaml.h>

/* The state of one load: where messages go, and whether one was written. */
typedef struct {
  const char *path; /* file name used in messages */
  yaml_document_t *doc;
  char *err;
  size_t errlen;
  int failed; /* the first message is kept */
} ms_yaml_loader;

/* Write "path:line:column: message" for node (1:1 without one) unless a
 * message is already there; returns -1. */
int ms_yaml_fail(ms_yaml_loader *ld, const yaml_node_t *node, const char *fmt,
                 ...) __attribute__((format(printf, 3, 4)));

/* The text of a scalar node, or NULL for a list or a mapping. */
const char *ms_yaml_scalar(const yaml_node_t *n);

/* "a scalar", "a list", "a mapping" or "empty", for messages. */
const char *ms_yaml_kind(const yaml_node_t *n);

/*
 * A key table: the keys one kind of mapping may hold, for
 * ms_yaml_walk_mapping.  Usually static; the caller's enum indexes keys.
 */
typedef struct {
  const char *what;        /* the mapping in messages: "a service", "backoff" */
  const char *noun;        /* one of its keys in messages: "key", "input" */
  const char *const *keys; /* n_keys names */
  size_t n_keys;
} ms_yaml_keys;

/*
 * ms_yaml_walk_mapping: walk a mapping against a key table.
 *   node       the node that must be a mapping
 *   t          its key table
 *   values     out, t->n_keys entries: values[i] is the value node of
 *              t->keys[i], NULL when the key is absent
 *   key_nodes  out, t->n_keys entries (or NULL): the key nodes, for
 *              messages about a key rather than its value
 * Returns 0, or -1 with the message at the node at fault:
 *   "backoff must be a mapping, not a list"              (at node)
 *   "a key in backoff must be a name, not a list"        (at the key)
 *   "unknown key 'x' in backoff (known: kind, base, cap)" (at the key)
 *   "key 'base' given twice in backoff"                  (at the second)
 * Checks nothing about the values.
 */
int ms_yaml_walk_mapping(ms_yaml_loader *ld, const yaml_node_t *node,
                         const ms_yaml_keys *t, const yaml_node_t **values,
                         const yaml_node_t **key_nodes);

/*
 * ms_yaml_get_unit: a duration (seconds, or with s, ms, us) or a rate (per
 * second, optionally "/s") from a scalar node, through ms_parse_duration or
 * ms_parse_rate; key names the field in messages.  Returns 0 or -1.
 */
int ms_yaml_get_unit(ms_yaml_loader *ld, const yaml_node_t *v, const char *key,
                     int duration, double *out);

/*
 * ms_yaml_get_whole: a whole number in [lo, hi] from a scalar node, written
 * in decimal ("12", "1e3"; not "2.5", not hexadecimal).  Returns 0 or -1.
 */
int ms_yaml_get_whole(ms_yaml_loader *ld, const yaml_node_t *v, const char *key,
                      double lo, double hi, double *out);

/*
 * ms_yaml_read_file: the contents of a regular file of at most max_bytes,
 * in a malloc'd buffer (*buf, *len).  A FIFO, a device or a directory is
 * refused without blocking.  Returns 0, or -1 with "path: why" in err.
 */
int ms_yaml_read_file(const char *path, size_t max_bytes, char **buf,
                      size_t *len, char *err, size_t errlen);

/*
 * ms_yaml_load: parse text into *doc (initialised on success; the caller
 * deletes it with yaml_document_delete).  Refuses, with path:line:column, a
 * syntax error, a second document, and nesting deeper than 32 levels
 * (libyaml slows down superlinearly with nesting: 32,000 '[' take seconds).
 * Returns 0 or -1.
 */
int ms_yaml_load(const char *text, size_t len, const char *name,
                 yaml_document_t *doc, char *err, size_t errlen);

#endif
