/* SPDX-License-Identifier: MIT */
/*
 * The time to a storm of one service over the offered load, as a table
 * built once per landscape and read in O(log n) per interval
 * (doc/design.md §1.12, "The table").  Conventions: base.h.
 */
#ifndef METASTABLE_HAZARD_TABLE_H
#define METASTABLE_HAZARD_TABLE_H

#include <stdbool.h>

#include "hazard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Points of the grid: MS_HAZARD_TABLE_BELOW from the recovery load up to
 * the tipping load (both included), the rest above it. */
#define MS_HAZARD_TABLE_POINTS 64
#define MS_HAZARD_TABLE_BELOW 44
/* The grid's top, as a multiple of the tipping load. */
#define MS_HAZARD_TABLE_TOP 1.1
/* The most states, c + c mu T, of a pool that gets a table: 64 walks of
 * about that many states each (10^4 servers of 100 ms behind 1 s, 1.1e5
 * states, take 1-6 s to build; doc/design.md §1.12).  Past it the build
 * would hold a core for minutes and every rebuild would pay it again. */
#define MS_HAZARD_TABLE_MAX_STATES 200000.0

/*
 * The table: ln time_to_storm at a grid of offered loads, dense toward the
 * tipping load (quadratic in the distance to it below, cubic above).
 * Built from the top down, one point at a time, so that a caller can
 * spread the build over its cycles; once a point is "never" every point
 * under it is too, and is not computed.
 */
typedef struct {
  bool valid;           /* the service is in ms_time_to_storm's domain */
  int built;            /* points computed, from the top down */
  double recovery_load; /* req/s: below it, never */
  double tipping_load;  /* req/s */
  double fold_time;     /* s, at the tipping load; once built */
  unsigned long calls;  /* points begun (and the domain's check), for tests */
  ms_storm_walk walk;   /* the point under way, when a step stopped */
  double load[MS_HAZARD_TABLE_POINTS];    /* req/s, ascending */
  double ln_time[MS_HAZARD_TABLE_POINTS]; /* ln s, <= ln NEVER */
} ms_hazard_table;

/*
 * ms_hazard_states: the states c + c mu T of an erlang service's chain
 * (doc/design.md §1.12), what MS_HAZARD_TABLE_MAX_STATES bounds; 0 for
 * the capacity model (no chain).  s: valid service parameters.
 */
double ms_hazard_states(const ms_service_params *s);

/*
 * ms_hazard_table_init: an empty table of service s, whose landscape has
 * recovery_load <= tipping_load (req/s, finite, > 0).  One call of
 * ms_time_to_storm at load 0 checks the domain (no chain is walked).
 *   t    out: valid when the service is in the domain, built 0
 * Errors: MS_EINVAL when s is outside ms_time_to_storm's domain or the
 * loads are not as above; MS_ELIMIT when c + c mu T passes
 * MS_HAZARD_TABLE_MAX_STATES (t->valid false: the service has no hazard).
 */
int ms_hazard_table_init(ms_hazard_table *t, const ms_service_params *s,
                         double recovery_load, double tipping_load,
                         ms_error *err);

/* Whether every point of t is built. */
bool ms_hazard_table_complete(const ms_hazard_table *t);

/*
 * ms_hazard_table_step: compute the next point of t (the highest not yet
 * built): one ms_time_to_storm walk (0.12-0.18 ms at 10 servers x 100 ms,
 * T = 1 s, to 14-89 ms at 10^4: doc/design.md §1.12), none once a point
 * below is known to be never.  s must be the service of
 * ms_hazard_table_init.  With stop not NULL the walk asks stop(ctx) every
 * MS_HAZARD_WALK_STRIDE states (ms_time_to_storm_walk); non-zero leaves
 * the point part way, kept in t, and the next step goes on with it (the
 * same bits as a step that never stopped).  Once the last point is in,
 * the table is made monotone (each ln time at most the one below it) and
 * fold_time set.
 * Errors: what ms_time_to_storm returns (MS_ELIMIT for a pool too large);
 * t->valid is then false.
 */
int ms_hazard_table_step(ms_hazard_table *t, const ms_service_params *s,
                         int (*stop)(void *ctx), void *ctx, ms_error *err);

/* ms_hazard_table_init, then every step: the whole build. */
int ms_hazard_table_build(ms_hazard_table *t, const ms_service_params *s,
                          double recovery_load, double tipping_load,
                          ms_error *err);

/*
 * ms_hazard_table_lookup: time_to_storm at offered_load, s, read from a
 * complete table: MS_TIME_TO_STORM_NEVER below the recovery load (never
 * interpolated there), linear in ln time between grid points, and the
 * top point's value past the grid's top (an upper bound: the time falls
 * with the load).  Interpolation error against direct calls:
 * doc/design.md §1.12, "The table".  O(log n), no allocation.
 *   offered_load  req/s, finite, >= 0
 *   seconds       out: in (0, MS_TIME_TO_STORM_NEVER]
 * Errors: MS_EINVAL for a table not valid or not complete, or a load
 * outside the domain.
 */
int ms_hazard_table_lookup(const ms_hazard_table *t, double offered_load,
                           double *seconds, ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
