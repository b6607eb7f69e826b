/* SPDX-License-Identifier: MIT */
/*
 * Pacing of new series and FullEvery (pacing.h; doc/fleets.md).
 */
#include "pacing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The values the paging alerts read (conf/metastable-alerts.yml, severity
 * page), and those the fleet table of the console page and the dashboard
 * shows first: one list, so that tests/cli/test_docs.py can hold it to the
 * rules.  A table by output, read for every value of every cycle. */
static const bool ESSENTIAL[MS_OUT_COUNT] = {
    [MS_OUT_STORM] = true,
    [MS_OUT_STATE] = true,
    [MS_OUT_REPORTING] = true,
    [MS_OUT_OBSERVED_FAILURE_RATIO] = true,
    [MS_OUT_TIPPING_HEADROOM] = true,
    [MS_OUT_OFFERED_LOAD] = true,
    [MS_OUT_SHED_LOAD] = true,
    [MS_OUT_RECOVERING] = true,
};

bool pacing_essential(ms_output o) {
  return (int)o >= 0 && o < MS_OUT_COUNT && ESSENTIAL[o];
}

unsigned pacing_cycles_of(const pacing *p, ms_output o) {
  return pacing_essential(o) ? 1 : p->full_every;
}

/* The shape of write_prometheus's series as its comparison sees them: a
 * label count, then label values compared in order (metric_cmp). */
typedef struct {
  size_t n_label;
  const char *value[2];
} fake_metric;

static int fake_cmp(const void *a, const void *b) {
  const fake_metric *x = *(const fake_metric *const *)a;
  const fake_metric *y = *(const fake_metric *const *)b;
  if (x->n_label != y->n_label)
    return x->n_label < y->n_label ? -1 : 1;
  for (size_t i = 0; i < x->n_label; i++) {
    int c = strcmp(x->value[i], y->value[i]);
    if (c != 0)
      return c;
  }
  return 0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define UNIT_FAMILY 4096
double pacing_measure_unit(void) {
  enum { K = UNIT_FAMILY };
  fake_metric *m = calloc(K + 1, sizeof *m);
  fake_metric **arr = calloc(K + 1, sizeof *arr);
  char(*names)[16] = calloc(K + 1, sizeof *names);
  double best = INFINITY;
  if (m == NULL || arr == NULL || names == NULL)
    goto done;
  for (size_t i = 0; i <= K; i++) {
    /* services named alike, as fleets are: a shared prefix */
    snprintf(names[i], sizeof names[i], "svc%05zu", (i * 7919) % (K + 1));
    m[i] = (fake_metric){2, {names[i], "aggregator"}};
  }
  for (int rep = 0; rep < 3; rep++) {
    for (size_t i = 0; i < K; i++)
      arr[i] = &m[i];
    qsort(arr, K, sizeof *arr, fake_cmp); /* a sorted family */
    arr[K] = &m[K];                       /* one new series appended */
    double t0 = now_seconds();
    qsort(arr, K + 1, sizeof *arr, fake_cmp);
    double t = now_seconds() - t0;
    if (t < best)
      best = t;
  }
done:
  free(m);
  free(arr);
  free(names);
  if (!(best > 0 && isfinite(best)))
    best = 1e-6; /* a clock without resolution: 1 us per insertion */
  return best / ((K + 1) * log2(K + 1.0));
}

double pacing_cost(const pacing *p, size_t k) {
  return p->unit * ((double)k + 1.0) * log2((double)k + 2.0);
}

void pacing_init(pacing *p, long limit, unsigned full_every, unsigned timeout,
                 double interval, const bool *wanted) {
  memset(p, 0, sizeof *p);
  p->limit = limit;
  p->full_every = full_every >= 1 ? full_every : 1;
  p->timeout = timeout >= 1 ? timeout : 1;
  p->budget = PACING_AUTO_SHARE * interval;
  p->budget_min = PACING_BUDGET_MIN_TIMES * p->budget;
  p->budget_max = PACING_BUDGET_MAX_TIMES * p->budget;
  p->write_done = NAN;
  p->count_cap = INFINITY;
  p->unit = limit == PACING_AUTO ? pacing_measure_unit() : 0;
  memcpy(p->wanted, wanted, sizeof p->wanted);
}

void pacing_service_init(pacing_service *ps) {
  memset(ps, 0, sizeof *ps);
  ps->last_state = ps->last_storm = -1;
}

/* Whether a series last dispatched in cycle sent, at an interval of every
 * cycles, is still in collectd's cache this cycle: younger than Timeout
 * intervals (one less, since the cache's clock is not the read cycle's).
 * After a cycle that shed, one more: collectd checks its timeouts on its
 * own clock (uc_check_timeout, once an interval), and a value written
 * late in its interval, as a shed one's predecessor was, is still there
 * when this cycle's value is written, unless that one is written later
 * still in its interval. */
static bool live(const pacing *p, uint32_t sent, unsigned every) {
  if (sent == 0)
    return false;
  uint32_t age = p->cycle - sent;
  return age < (uint32_t)every * p->timeout + (p->shed_last ? 1u : 0u);
}

void pacing_cycle_start(pacing *p) {
  p->cycle++;
  if (p->cycle == 0) /* wrapped after 2^32 cycles: all new again */
    p->cycle = 1;
  p->held_last = p->held;
  p->shed_last = p->shed;
  if (!p->shed) {
    p->admitted_last = p->admitted;
    p->spent_last = p->spent;
  }
  p->spent = 0;
  p->admitted = p->held = p->held_essential = p->shed_values = 0;
  p->shed = false;
  p->reserved = 0;
  memset(p->live, 0, sizeof p->live);
  p->total = 0;
}

void pacing_observe(pacing *p, double done) {
  p->write_done = done;
  p->shed = false;
  if (isnan(done))
    return;
  p->shed = done >= PACING_SHED_AT;
  if (p->limit != PACING_AUTO)
    return;
  double factor = PACING_WRITE_TARGET / fmax(done, 1e-6);
  if (factor >= 1) {
    if (p->held_last == 0)
      return; /* nothing waited: no sign of how much more would go */
    factor = fmin(factor, PACING_GROW_MAX);
  } else {
    factor = fmax(factor, PACING_SHRINK_MAX);
  }
  /* from what the last cycle used, not from its limits: a limit that did
   * not bind says nothing of what the write path takes, and grown on such
   * cycles it would let one cycle admit many times the last (RFC 7661
   * keeps TCP's window the same way); after a cycle that shed, from the
   * limits, so that cycles that shed in a row shrink them in turn */
  double budget = p->shed_last ? p->budget : p->spent_last;
  double count = p->shed_last && isfinite(p->count_cap)
                     ? p->count_cap
                     : (double)p->admitted_last;
  p->budget = fmin(fmax(budget * factor, p->budget_min), p->budget_max);
  p->count_cap = fmax(count * factor, PACING_COUNT_MIN);
}

void pacing_count(pacing *p, pacing_service *ps) {
  ps->reserved = 0;
  for (int o = 0; o < MS_OUT_COUNT; o++) {
    if (!p->wanted[o])
      continue;
    bool is_live = live(p, ps->sent[o], pacing_cycles_of(p, (ms_output)o));
    p->live[o] += is_live;
    p->total += is_live;
    /* an essential series it will ask for: one it reported last time, or
     * any before its first report */
    if (!is_live && pacing_essential((ms_output)o) &&
        (!ps->seen || (ps->reported >> o & 1)))
      ps->reserved++;
  }
  p->reserved += ps->reserved;
}

bool pacing_service_begin(pacing *p, pacing_service *ps, size_t s, int state,
                          int storm) {
  p->reserved -= ps->reserved < p->reserved ? ps->reserved : p->reserved;
  ps->reserved = 0;
  ps->now = 0;
  bool changed = state != ps->last_state || storm != ps->last_storm;
  ps->last_state = state;
  ps->last_storm = storm;
  unsigned n = p->full_every;
  bool due = n == 1 || changed || (p->cycle + s) % n == 0 || ps->full == 0 ||
             p->cycle - ps->full >= n;
  /* a cycle that sheds sends no full set (pacing_admit holds the others
   * back): it goes in the next that can */
  if (due && !p->shed)
    ps->full = p->cycle;
  return due;
}

void pacing_service_end(pacing_service *ps) {
  ps->reported = ps->now;
  ps->seen = true;
}

/* The largest family of an essential output: what a reserved series costs
 * at most. */
static size_t largest_essential(const pacing *p) {
  size_t k = 0;
  for (int o = 0; o < MS_OUT_COUNT; o++)
    if (pacing_essential((ms_output)o) && p->live[o] > k)
      k = p->live[o];
  return k;
}

bool pacing_admit(pacing *p, pacing_service *ps, ms_output o) {
  bool essential = pacing_essential(o);
  ps->now |= (uint64_t)1 << o;
  if (p->shed && !essential) {
    p->shed_values++;
    return false;
  }
  if (live(p, ps->sent[o], pacing_cycles_of(p, o)) || p->limit == 0)
    goto admit;
  /* the others leave room for the essential series still to come */
  size_t room = essential ? 0 : p->reserved;
  if (p->limit > 0) {
    if (p->admitted + room >= (size_t)p->limit)
      goto hold;
  } else {
    double cost = pacing_cost(p, p->live[o]);
    double keep = (double)room * pacing_cost(p, largest_essential(p) + room);
    /* at least one a cycle, so that a fleet always warms up */
    if ((p->admitted > 0 || room > 0) &&
        (p->spent + cost + keep > p->budget ||
         (double)(p->admitted + room) >= p->count_cap))
      goto hold;
    p->spent += cost;
  }
  p->admitted++;
  p->live[o]++;
  p->total++;
admit:
  ps->sent[o] = p->cycle;
  return true;
hold:
  p->held++;
  if (essential)
    p->held_essential++;
  return false;
}
