/* SPDX-License-Identifier: MIT */
/*
 * Reading YAML documents for the service and scenario files (internal to
 * service/): libyaml's document API, so that every node keeps its line and
 * column, with the checks both loaders need against hostile files.
 */
#ifndef METASTABLE_YAMLDOC_H
#define METASTABLE_YAMLDOC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "metastable.h"

/* The state of one load: where messages go, and whether one was written. */
typedef struct {
  const char *path; /* file name used in messages */
  yaml_document_t *doc;
  char *err;
  size_t errlen;
  int failed;                /* the first message is kept */
  const atomic_bool *cancel; /* NULL, or set by another thread to stop the
                                load (ms_yaml_cancelled) */
} ms_yaml_loader;

/* Whether the load was asked to stop (ld->cancel set); then also fails it
 * with "path: load cancelled".  Cheap: an atomic load. */
bool ms_yaml_cancelled(ms_yaml_loader *ld);

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
 *   "unknown key 'bsae' in backoff: did you mean 'base'? (known: kind,
 *   base, cap)" (at the key, when ms_suggest finds a key near enough)
 *   "key 'base' given twice in backoff"                  (at the second)
 * Checks nothing about the values.
 */
int ms_yaml_walk_mapping(ms_yaml_loader *ld, const yaml_node_t *node,
                         const ms_yaml_keys *t, const yaml_node_t **values,
                         const yaml_node_t **key_nodes);

/*
 * Readers of one scalar value.  They decide syntax only (a number, a whole
 * number, a duration, a rate) and report it at the value node as
 * "key must be a whole number, not '2.5' (key 'key')"; ranges are decided
 * by the model (ms_yaml_get_param) or by a named limit of the caller
 * (ms_yaml_check_range).  Each returns 0, or -1 after ms_yaml_fail.
 */

/* ms_yaml_get_number: a finite number ("0.25", "1e-3"). */
int ms_yaml_get_number(ms_yaml_loader *ld, const yaml_node_t *v,
                       const char *key, double *out);

/* ms_yaml_get_share: a share of 1 as a number or a percentage ("0.1",
 * "10%"; ms_parse_share). */
int ms_yaml_get_share(ms_yaml_loader *ld, const yaml_node_t *v, const char *key,
                      double *out);

/*
 * ms_yaml_get_unit: a duration (seconds, or with s, ms, us) or a rate (per
 * second, optionally "/s") from a scalar node, through ms_parse_duration or
 * ms_parse_rate; key names the field in messages.
 */
int ms_yaml_get_unit(ms_yaml_loader *ld, const yaml_node_t *v, const char *key,
                     int duration, double *out);

/*
 * ms_yaml_get_whole: a whole number written in decimal ("12", "1e3"; not
 * "2.5", not hexadecimal), of any size a double holds.
 */
int ms_yaml_get_whole(ms_yaml_loader *ld, const yaml_node_t *v, const char *key,
                      double *out);

/*
 * ms_yaml_get_param: parameter id of the model (MS_PARAMS) from its node:
 * read as its row says (whole numbers for whole parameters, durations for
 * unit "s", rates for the other units, plain numbers without a unit), then
 * ms_param_check; a value out of range is reported at v with the model's
 * message and the parameter's key: "servers = 0 is outside [1, 10000000]
 * (key 'servers')".
 */
int ms_yaml_get_param(ms_yaml_loader *ld, const yaml_node_t *v, ms_param id,
                      double *out);

/*
 * ms_yaml_get_sim_value: a value of the simulation (ms_sim_value) from v,
 * read as its kind is written: a duration, a rate, a whole number for
 * servers and tokens, a plain number for a backoff multiplier; its range
 * is the model's (ms_sim_value_check), reported at v with key.  0 or -1.
 */
int ms_yaml_get_sim_value(ms_yaml_loader *ld, const yaml_node_t *v,
                          const char *key, ms_sim_value kind, double *out);

/*
 * ms_yaml_get_backoff: the clients' backoff from a mapping {kind, base,
 * cap, multiplier} (model/sim.h ms_backoff; kind as ms_backoff_from_name
 * spells it, base and cap durations, multiplier a number), the one reader
 * of service files' and scenario files' `backoff`.  Errors name the key
 * ("backoff exponential needs a cap (key 'backoff.cap')").  0 or -1.
 */
int ms_yaml_get_backoff(ms_yaml_loader *ld, const yaml_node_t *map,
                        ms_backoff *b);

/*
 * ms_yaml_check_range: x, read from v, against a range that is the
 * loader's own (a setting of the service layer, a limit of the file
 * format): lo and hi with MS_BOUND_LO_OPEN / MS_BOUND_HI_OPEN flags, as
 * "clear_after = 0 is outside [1, 1000] (key 'clear_after')".
 */
int ms_yaml_check_range(ms_yaml_loader *ld, const yaml_node_t *v,
                        const char *key, double x, double lo, double hi,
                        int bounds);

/*
 * ms_yaml_read_file: the contents of a regular file of at most max_bytes,
 * in a malloc'd buffer (*buf, *len).  A FIFO, a device or a directory is
 * refused without blocking.  Returns 0, or -1 with "path: why" in err.
 */
int ms_yaml_read_file(const char *path, size_t max_bytes, char **buf,
                      size_t *len, char *err, size_t errlen);

/*
 * What one load may hold (ms_yaml_load_limited), checked over libyaml's
 * events before the document is built.  0 (or NULL): no limit.  A node is
 * a scalar, a list or a mapping; an alias counts as the nodes it repeats.
 * The items are those of the list under items_key in the root mapping
 * (the services of a service file).
 */
typedef struct {
  size_t max_nodes;      /* nodes of the document */
  size_t max_anchors;    /* anchors (&name) defined */
  const char *items_key; /* "services", or NULL: no items */
  const char *item;      /* an item in messages: "service" */
  size_t max_items;      /* items in the list */
  size_t max_item_nodes; /* nodes of one item */
  bool no_alias_items;   /* an item written as an alias (- *web) refused */
} ms_yaml_limits;

/* The limits of ms_yaml_load: MS_SERVICE_FILE_MAX_NODES and
 * MS_SERVICE_FILE_MAX_ANCHORS (service/service.h), no items. */
extern const ms_yaml_limits ms_yaml_file_limits;

/*
 * ms_yaml_load: parse text into *doc (initialised on success; the caller
 * deletes it with yaml_document_delete).  Refuses, with path:line:column, a
 * syntax error, a second document, nesting deeper than 32 levels
 * (libyaml slows down superlinearly with nesting: 32,000 '[' take
 * seconds), an alias inside the node it names, and the limits of
 * ms_yaml_file_limits, all but the syntax before any node is built.
 * cancel: NULL, or a flag another thread may set to stop the parse
 * (then -1 with "name: load cancelled"; looked at every 4096 events).
 * Returns 0 or -1.
 */
int ms_yaml_load(const char *text, size_t len, const char *name,
                 const atomic_bool *cancel, yaml_document_t *doc, char *err,
                 size_t errlen);

/*
 * ms_yaml_load_limited: as ms_yaml_load, with the limits lim (not NULL).
 * Messages name the limit and its value, at the event that passed it (an
 * item's limit at the item's start):
 *   "more than 100000 services: the limit of a file is 100000"
 *   "this service has more than 400 YAML nodes (an alias counts as the
 *    nodes it repeats): the limit of a service is 400"
 *   "a service cannot be an alias (*web): write each service out, with
 *    its own name"
 */
int ms_yaml_load_limited(const char *text, size_t len, const char *name,
                         const atomic_bool *cancel, const ms_yaml_limits *lim,
                         yaml_document_t *doc, char *err, size_t errlen);

#endif
