/* SPDX-License-Identifier: MIT */
/*
 * Pacing of new series (doc/fleets.md): how many
 * values that collectd's write path does not know yet the plugin dispatches
 * per read cycle, and which values go every cycle.
 *
 * collectd 5.12's write_prometheus keeps the series of one type in an
 * array, appends a new series and sorts the whole array again
 * (src/write_prometheus.c, metric_family_add_metric: realloc + qsort), so a
 * new series in a family of k costs about k log2 k comparisons, and a start
 * with n services creates n series in each family: n^2 log n in all.  An
 * update of a known series is a bisection.  So the plugin dispatches every
 * value that collectd already holds (a live series) as before, and admits
 * new ones within a budget per cycle: the essential values first (those the
 * paging alerts read), the rest once no essential value waits.  A series is
 * live while its value is younger than collectd's Timeout (global option,
 * default 2) times its interval: the cache forgets it after that, and
 * write_prometheus drops it (its missing callback), so it is new again.
 *
 * Feedback (pacing_observe): at each cycle's start the write probe
 * (write_probe.h) says how long after the last cycle began collectd's
 * write path had written all of that cycle's values.  With "auto" the
 * budget above is scaled so that this stays near PACING_WRITE_TARGET of
 * the interval: the model says what a new series costs relative to
 * another, the write path says what the host really absorbs.  When the
 * write path had not written the last cycle's values by this cycle's
 * start, whatever NewSeriesPerInterval says, the cycle sheds: only the
 * essential values go (and no new other series), so that the write queue
 * drains and the values that page stay fresh.
 *
 * FullEvery N: the essential values go every cycle, the others every N-th
 * cycle of the service (and in any cycle where its state or storm flag
 * changes), with an interval of N cycles, so that collectd keeps them alive
 * in between.
 */
#ifndef MS_PLUGIN_PACING_H
#define MS_PLUGIN_PACING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "outputs.h"

/* NewSeriesPerInterval: "auto" (the default), 0 (no limit) or a count. */
#define PACING_AUTO (-1L)
#define PACING_LIMIT_MAX 100000000L
/* auto: the share of the interval the new series of one cycle may cost
 * write_prometheus, by the model below */
#define PACING_AUTO_SHARE 0.05
/* FullEvery: from 1 (everything every cycle) to this */
#define PACING_FULL_EVERY_MAX 360
/* Feedback (pacing_observe): the share of the interval within which the
 * write path should have written a cycle's values; the most the auto
 * budget grows and shrinks by in one cycle; its range, as multiples of
 * PACING_AUTO_SHARE of the interval; and the share at which a cycle sheds
 * (the write path still on the last cycle's values). */
#define PACING_WRITE_TARGET 0.5
#define PACING_GROW_MAX 1.5
#define PACING_SHRINK_MAX 0.25
#define PACING_BUDGET_MIN_TIMES (1.0 / 64)
#define PACING_BUDGET_MAX_TIMES 20.0
#define PACING_SHED_AT 1.0
/* auto: the fewest new series the feedback's count allows a cycle
 * (pacing_observe) */
#define PACING_COUNT_MIN 16.0

/* What one service remembers: the cycle of each output's last dispatch (0:
 * never) and of its last full set, the outputs its last report had, and
 * its last state and storm flag. */
typedef struct {
  uint32_t sent[MS_OUT_COUNT];
  uint32_t full;
  bool seen;                  /* it has reported */
  uint64_t reported, now;     /* bit o: output o in its last report, this */
  size_t reserved;            /* its essential series not live (count) */
  int last_state, last_storm; /* -1 before the first report */
} pacing_service;

typedef struct {
  long limit;          /* PACING_AUTO, 0 (no limit) or new series a cycle */
  unsigned full_every; /* FullEvery, >= 1 */
  unsigned timeout;    /* collectd's Timeout: intervals a value lives */
  double unit;         /* s per comparison of write_prometheus's sort */
  double budget;       /* auto: s of modelled cost per cycle */
  double budget_min, budget_max; /* auto: what feedback keeps it within */
  double write_done; /* the write path's last report (pacing_observe);
                        NAN: none */
  bool shed;         /* this cycle: the essential values only */
  bool shed_last;    /* the last cycle did */
  size_t held_last;  /* new series the last cycle held back */
  /* auto: new series the last cycle that did not shed admitted, and the
   * most a cycle may admit by the feedback (INFINITY: no report yet) */
  size_t admitted_last;
  double spent_last; /* auto: the modelled cost of those, s */
  double count_cap;
  bool wanted[MS_OUT_COUNT];
  size_t live[MS_OUT_COUNT]; /* live series per output (a family) */
  size_t total;              /* live series of all outputs */
  /* this cycle */
  uint32_t cycle; /* from 1 */
  double spent;   /* modelled cost of the series admitted, s */
  size_t admitted, held, held_essential;
  size_t shed_values; /* values shed (pacing_observe) */
  /* essential series not live of the services still to come this cycle:
   * kept free of the budget while other values wait */
  size_t reserved;
} pacing;

/* Whether output o is essential: one of the values the paging alert rules
 * read (conf/metastable-alerts.yml; tests/cli/test_docs.py holds the two
 * to each other), dispatched every cycle and admitted first. */
bool pacing_essential(ms_output o);

/* Sets *p up: limit PACING_AUTO, 0 or 1..PACING_LIMIT_MAX; full_every
 * 1..PACING_FULL_EVERY_MAX; timeout (collectd's Timeout) >= 1; interval
 * in seconds > 0; wanted: the outputs configured (Values).  With
 * PACING_AUTO it times write_prometheus's insertion (pacing_measure_unit).
 */
void pacing_init(pacing *p, long limit, unsigned full_every, unsigned timeout,
                 double interval, const bool *wanted);

/* A fresh service's memory. */
void pacing_service_init(pacing_service *ps);

/* Starts a cycle; then pacing_observe, and pacing_count once for every
 * service. */
void pacing_cycle_start(pacing *p);

/* The write path's report on the last cycle (write_probe_observe): the
 * time from its start until every value it dispatched was written, as a
 * share of the interval (NAN: nothing known; nothing changes).  At
 * PACING_SHED_AT or more this cycle sheds (the essential values only).
 * With "auto", factor = PACING_WRITE_TARGET / done, at most
 * PACING_GROW_MAX (and nothing changes when it is 1 or more and the last
 * cycle held no new series back) and at least PACING_SHRINK_MAX: the
 * budget becomes factor times the modelled cost of the last cycle's new
 * series, within [budget_min, budget_max]; and the count of new series a
 * cycle, factor times their count (at least PACING_COUNT_MIN); after a
 * cycle that shed, factor times the budget and the count.  The count
 * bounds what the model's relative costs
 * get wrong: a type with no series yet costs it next to nothing, yet
 * every new series costs collectd's cache and every later cycle an update
 * (doc/fleets.md). */
void pacing_observe(pacing *p, double done);

/* Counts the live series of one service into p->live (at the start of a
 * cycle, before any pacing_admit). */
void pacing_count(pacing *p, pacing_service *ps);

/* Starts the dispatch of one service, index s in the file, whose report
 * has state and storm: returns whether this cycle dispatches its full set
 * (FullEvery; the full sets spread over the cycles by s).  Then
 * pacing_admit for its essential outputs first, the others after, then
 * pacing_service_end. */
bool pacing_service_begin(pacing *p, pacing_service *ps, size_t s, int state,
                          int storm);

/* Whether to dispatch output o of a service this cycle, o being in its
 * report: true for a live series (and its dispatch noted), true for a new
 * one the budget admits, false for one held back to a later cycle, and
 * false for any other value in a cycle that sheds.  A new other value is
 * admitted only when the budget left keeps room for the essential series
 * of the services still to come. */
bool pacing_admit(pacing *p, pacing_service *ps, ms_output o);

/* Ends the dispatch of a service (remembers which outputs it reported). */
void pacing_service_end(pacing_service *ps);

/* The interval, in cycles, output o is dispatched with: 1 for essential
 * values, full_every for the others. */
unsigned pacing_cycles_of(const pacing *p, ms_output o);

/* Seconds per comparison of an insertion like write_prometheus's: the
 * time of appending one series to a family of 4096 and sorting it with
 * qsort(3) (the best of 3), over 4097 log2 4097.  Takes a few ms. */
double pacing_measure_unit(void);

/* The modelled cost, in seconds, of a new series in a family of k live
 * series: unit (k + 1) log2(k + 2). */
double pacing_cost(const pacing *p, size_t k);

#endif
