/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: the plugin's inputs, read from collectd's value cache.
 *
 * What plugin/metastable.c needs to turn a service's input sources
 * (service/service.h: identifiers and globs) into this interval's values:
 *
 *   cache reads   the rate (DERIVE, COUNTER) or value (GAUGE) of one
 *                 identifier, with a typed result and a message;
 *   globs         the identifiers each glob input matches, matched again
 *                 only when collectd's identifier list changed, through an
 *                 index of the identifiers by component;
 *   resets        the last raw value of each COUNTER read, so that a
 *                 COUNTER that went down is a reset (no rate this interval)
 *                 and not the 2^32 or 2^64 wrap-around rate collectd makes
 *                 of it.
 *
 * Nothing here logs, dispatches or locks: the caller logs (rate-limited),
 * and holds its lock around every call on one inputs_t.  Uses collectd's
 * uc_get_names, uc_get_rate_by_name, uc_get_value_by_name and plugin_get_ds.
 */
#ifndef MS_PLUGIN_INPUTS_H
#define MS_PLUGIN_INPUTS_H

#include <stddef.h>

#include "service.h"

/* What reading an identifier, or one input of a service, gave. */
typedef enum {
  INPUT_OK = 0,  /* a finite rate or value */
  INPUT_ABSENT,  /* not in collectd's cache (not dispatched yet, or expired);
                    a glob: no identifier matches */
  INPUT_NO_RATE, /* in the cache without a rate this interval: a first
                    sample, a COUNTER reset, a DERIVE gone backwards, a
                    GAUGE that is NaN (a statsd timer without samples),
                    or a value outside its type's range in types.db;
                    the message names which */
  INPUT_BAD,     /* unusable: several data sources, or infinite */
} input_result;

/* The inputs of a set of services; opaque. */
typedef struct inputs_s inputs_t;

/*
 * inputs_create: the inputs of services[0 .. n-1], which must outlive the
 * result (they are not copied).  No glob is matched yet: call
 * inputs_refresh before the first read.  NULL when out of memory.
 */
inputs_t *inputs_create(const ms_service_spec *services, size_t n);
void inputs_destroy(inputs_t *in);

/*
 * inputs_take_counters: hand the COUNTER memory (the last raw value of
 * every identifier read, by name) of from over to to, and to's to from,
 * so that inputs rebuilt for a new set of services (a reloaded service
 * file) still see a reset of a COUNTER they read before.  Identifiers no
 * longer read stay remembered (one slot each) until to is destroyed.
 */
void inputs_take_counters(inputs_t *to, inputs_t *from);

/*
 * inputs_refresh: match the glob inputs again if collectd's identifier list
 * changed since the last refresh (or the last refresh failed); nothing to
 * do when no service has a glob input.  A failed refresh (out of memory)
 * leaves some globs with fewer matches until the next one succeeds.
 */
void inputs_refresh(inputs_t *in);

/*
 * inputs_read_one: the rate (DERIVE, COUNTER) or value (GAUGE) of the
 * identifier name ("host/plugin[-instance]/type[-instance]") in *value:
 * INPUT_OK, or another result with why filled in ("'name' is not in
 * collectd's cache ...") and *value untouched.  A COUNTER's raw value is
 * remembered on every INPUT_OK read, and one lower than the last is
 * INPUT_NO_RATE.
 */
input_result inputs_read_one(inputs_t *in, const char *name, double *value,
                             char *why, size_t len);

/* How one glob input was summed. */
typedef struct {
  size_t matched;    /* identifiers it matched at the last refresh; 0 when
                        the input is not a glob or gave no value */
  size_t summed;     /* of those, the ones with a rate this interval */
  char skipped[300]; /* why the first match left out was ("" if none) */
} inputs_glob_sum;

/*
 * inputs_read_service: this interval's values of the identifier and glob
 * inputs of services[service] in *values (inputs given as numbers are left
 * to the service layer: has[] false).  A glob input is the sum of its
 * matches that have a rate; a match absent from the cache or without a
 * rate is left out (glob[i] says how many were summed), a bad one spoils
 * the input.  An input with `missing: zero` that is INPUT_ABSENT (not in
 * the cache; a glob without a match, or whose matches all expired) is left
 * with has[] false and does not fail the service: the service layer counts
 * it as 0.  An input the verdict can go without (ms_input_role_of: not
 * MS_INPUT_NEEDED) that has no value does not fail the service either: it
 * is left as a trace's cell would hold it, has[] false when absent, a NaN
 * otherwise, for the service layer to leave out.  Returns INPUT_OK with why
 * "" or the first such input's reason ("input latency: ..."; not for an
 * unused input), or the result of the first needed input without a value,
 * with why saying which input and what ("input arrival_rate: ..."); for a
 * glob none of whose matches has a rate, the result of the first match
 * left out.  glob[i] is filled in for every glob input that gave a value,
 * even when a later input fails.
 */
input_result inputs_read_service(inputs_t *in, size_t service,
                                 ms_inputs *values,
                                 inputs_glob_sum glob[MS_INPUT_COUNT],
                                 char *why, size_t len);

#endif
