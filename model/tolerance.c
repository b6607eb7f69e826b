/* SPDX-License-Identifier: MIT */
/*
 * Trigger tolerance: the longest stall or spike a service survives at its
 * offered load, by bisection on the trigger's length, each probe one run
 * of the fluid engine with queue memory (model/sim.h, doc/design.md §6).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sim.h"
#include "sim_internal.h"

const char *ms_tolerance_kind_name(ms_tolerance_kind k) {
  switch (k) {
  case MS_TOLERANCE_BOUNDED:
    return "bounded";
  case MS_TOLERANCE_UNBOUNDED:
    return "unbounded";
  case MS_TOLERANCE_BEYOND:
    return "beyond";
  case MS_TOLERANCE_OVERLOADED:
    return "overloaded";
  }
  return "unknown";
}

#define DEFAULT_REL_TOL 0.01
#define DEFAULT_MAX_HOLD 3600.0
#define MAX_HOLD_LIMIT 86400.0
/* The seeds of a DES search that gives none (ms_tolerance_query.seeds). */
#define DES_DEFAULT_SEEDS 5

/* What every probe of one search shares. */
typedef struct {
  ms_sim_config cfg; /* queue memory on, no trigger yet */
  ms_tolerance_query q;
  double tau;          /* s, one turn of the loop */
  double tipping_load; /* req/s, of the landscape */
  double lead_in;      /* s before the trigger */
  double horizon;      /* s after it */
  bool *stopped;       /* set when q.stop ends a probe, or NULL */
  ms_sim_runner des;   /* the discrete-event engine, or NULL */
} setup;

static int query_check(const ms_sim_config *c, const ms_tolerance_query *q,
                       ms_error *err) {
  char v[32]; /* a value in a range message */
  if (c->service.model.kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "trigger tolerance needs the erlang model (the fluid "
                   "engine's queue memory)");
  if (q->kind == MS_TRIGGER_SERVERS) {
    if (q->servers < 0 || q->servers >= c->service.model.servers)
      return ms_fail(err, MS_EINVAL,
                     "stalled pool = %ld servers is outside [0, %ld]",
                     q->servers, c->service.model.servers - 1);
  } else if (q->kind == MS_TRIGGER_LOAD) {
    if (!(q->spike_load > 0.0 && q->spike_load <= MS_SIM_MAX_RATE))
      return ms_fail(
          err, MS_EINVAL, "spike size = %s req/s is outside (0, %g]",
          ms_format_against(v, q->spike_load,
                            q->spike_load <= 0.0 ? 0.0 : MS_SIM_MAX_RATE),
          MS_SIM_MAX_RATE);
  } else {
    return ms_fail(err, MS_EINVAL,
                   "trigger kind %d is neither a stall nor a "
                   "spike",
                   (int)q->kind);
  }
  if (q->engine != MS_ENGINE_FLUID && q->engine != MS_ENGINE_DES)
    return ms_fail(err, MS_EINVAL, "engine %d is neither fluid nor des",
                   (int)q->engine);
  int st;
  if (q->engine == MS_ENGINE_FLUID &&
      (st = ms_sim_fluid_supports(&c->service.model, err)) != MS_OK)
    return st;
  if (q->engine == MS_ENGINE_DES &&
      !(q->seeds >= 0 && q->seeds <= MS_TOLERANCE_MAX_SEEDS))
    return ms_fail(err, MS_EINVAL, "seeds = %d is outside [1, %d]", q->seeds,
                   MS_TOLERANCE_MAX_SEEDS);
  if (q->engine == MS_ENGINE_DES && q->resume)
    return ms_fail(err, MS_EINVAL,
                   "a search with the discrete-event engine cannot resume");
  if (!(q->rel_tol == 0.0 || (q->rel_tol > 0.0 && q->rel_tol <= 0.5)))
    return ms_fail(
        err, MS_EINVAL, "relative tolerance = %s is outside (0, 0.5]",
        ms_format_against(v, q->rel_tol, q->rel_tol <= 0.0 ? 0.0 : 0.5));
  if (!(q->max_hold == 0.0 ||
        (q->max_hold > 0.0 && q->max_hold <= MAX_HOLD_LIMIT)))
    return ms_fail(err, MS_EINVAL, "longest trigger = %s s is outside (0, %g]",
                   ms_format_against(v, q->max_hold,
                                     q->max_hold <= 0.0 ? 0.0 : MAX_HOLD_LIMIT),
                   MAX_HOLD_LIMIT);
  double longest = q->max_hold == 0.0 ? DEFAULT_MAX_HOLD : q->max_hold;
  if (q->resume && !(q->resume_lo >= 0.0 && q->resume_lo < longest &&
                     (q->resume_hi == 0.0 || (q->resume_hi > q->resume_lo &&
                                              q->resume_hi <= longest))))
    return ms_fail(err, MS_EINVAL,
                   "resumed bracket [%g, %g] s is not 0 <= recovered < "
                   "latched (or 0) <= %g",
                   q->resume_lo, q->resume_hi, longest);
  return ms_sim_config_check(c, err);
}

/* The lead-in, the horizon and the loop time of doc comment of
 * ms_trigger_tolerance (model/tolerance.h). */
static int setup_init(const ms_sim_config *c, const ms_tolerance_query *q,
                      setup *s, ms_error *err) {
  int st = query_check(c, q, err);
  if (st != MS_OK)
    return st;
  s->cfg = *c;
  s->stopped = NULL;
  s->des = NULL;
  s->cfg.queue_memory = true;
  s->cfg.scenario.n_triggers = 0;
  s->q = *q;
  if (s->q.rel_tol == 0.0)
    s->q.rel_tol = DEFAULT_REL_TOL;
  if (s->q.max_hold == 0.0)
    s->q.max_hold = DEFAULT_MAX_HOLD;
  const ms_failure_model *m = &c->service.model;
  double wait = 0.0;
  int r = c->service.policy.retries;
  if (r >= 1 &&
      (st = ms_backoff_mean_delay(&c->backoff, r, &wait, err)) != MS_OK)
    return st;
  s->tau = m->timeout + 1.0 / m->service_rate + wait;
  double drain;
  double lambda = c->scenario.offered_load;
  st = ms_drain_time(&c->service, lambda, ms_timeout_horizon(m), &drain, err);
  if (st != MS_OK)
    return st;
  /* above the tipping load the healthy drain may not exist; the search
   * does not probe there */
  if (!isfinite(drain))
    drain = 0.0;
  s->lead_in = 5.0 * s->tau;
  s->horizon = 20.0 * s->tau + 3.0 * drain;
  return MS_OK;
}

/* The engine's sink while a caller's stop hook is set: asks it at every
 * sample window. */
static int stop_sink(void *ctx, const ms_sim_sample *sample) {
  (void)sample;
  const ms_tolerance_query *q = ctx;
  return q->stop(q->stop_ctx) != 0;
}

/* One probe with a given horizon after the trigger. */
static int run_probe(const setup *s, double hold, double horizon, bool *latched,
                     ms_scenario *scenario, int *probes, ms_error *err) {
  ms_sim_config cfg = s->cfg;
  ms_scenario *sc = &cfg.scenario;
  sc->duration = s->lead_in + hold + horizon;
  if (!(sc->duration <= MS_SIM_MAX_DURATION))
    return ms_fail(err, MS_ELIMIT,
                   "a probe of a %g s trigger would run %g s, more than %g s",
                   hold, sc->duration, MS_SIM_MAX_DURATION);
  double dt;
  long spb;
  int st = ms_sim_fluid_dt(&cfg, &dt, &spb, err);
  if (st != MS_OK)
    return st;
  if (!(sc->duration / dt <= MS_TOLERANCE_MAX_BINS))
    return ms_fail(err, MS_ELIMIT,
                   "a probe of a %g s trigger would take %.3g fluid bins of "
                   "%g s (at most %.0f): the timeout is too short against "
                   "the run's %g s",
                   hold, sc->duration / dt, dt, MS_TOLERANCE_MAX_BINS,
                   sc->duration);
  sc->n_triggers = 1;
  ms_trigger *t = &sc->triggers[0];
  memset(t, 0, sizeof *t);
  t->kind = s->q.kind;
  t->start = s->lead_in;
  t->hold = hold;
  if (s->q.kind == MS_TRIGGER_SERVERS)
    t->servers = s->q.servers;
  else
    t->load = s->q.spike_load;
  ms_sim_summary sum;
  bool hook = s->q.stop != NULL;
  if (hook && s->q.stop(s->q.stop_ctx)) {
    if (s->stopped != NULL)
      *s->stopped = true;
    return ms_fail(err, MS_ELIMIT, "stopped by the caller before a probe");
  }
  ms_sim_runner eng = s->q.engine == MS_ENGINE_DES ? s->des : ms_sim_fluid;
  st = eng(&cfg, hook ? stop_sink : NULL, (void *)&s->q, &sum, err);
  if (st != MS_OK)
    return st;
  if (sum.stopped && s->stopped != NULL)
    *s->stopped = true;
  if (sum.stopped)
    return ms_fail(err, MS_ELIMIT,
                   "stopped by the caller %g s into a probe of a %g s "
                   "trigger",
                   sum.duration, hold);
  if (probes != NULL)
    (*probes)++;
  /* Latched: the model's collapsed basin at the run's end (the last
   * window's state is metastable or overloaded), not the verdict's storm
   * flag (ms_sim_summary.final_storm).  The flag also stays up through a
   * recovery tail, a backlog still draining back in the healthy basin
   * (ms_analysis.recovering), which is a trigger survived, only slowly; and
   * the question is whether the trigger moved the loop into the other
   * basin, which the state answers. */
  *latched = ms_state_storm(sum.final_state) != 0;
  if (scenario != NULL)
    *scenario = *sc;
  return MS_OK;
}

int ms_tolerance_probe(const ms_sim_config *c, const ms_tolerance_query *q,
                       double hold, bool *latched, ms_scenario *scenario,
                       ms_error *err) {
  if (c == NULL || q == NULL || latched == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_tolerance_probe");
  if (!(hold >= 0.0 && hold <= MS_SIM_MAX_DURATION)) {
    char v[32];
    return ms_fail(
        err, MS_EINVAL, "hold = %s s is outside [0, %g]",
        ms_format_against(v, hold, hold < 0.0 ? 0.0 : MS_SIM_MAX_DURATION),
        MS_SIM_MAX_DURATION);
  }
  setup s;
  int st = setup_init(c, q, &s, err);
  if (st != MS_OK)
    return st;
  return run_probe(&s, hold, s.horizon, latched, scenario, NULL, err);
}

/*
 * The unbounded case, checked: one trigger of max_hold, at most 100 tau
 * (past the tipping load the backlog grows with the trigger's length, and
 * so does the drain after it; under it the run has long settled), with a
 * horizon long enough to drain the largest backlog it can leave, (lambda +
 * spike) A(1) hold, at this load.  Runs longer than a day are not made; the
 * result is then not verified.
 */
static int verify_unbounded(const setup *s, ms_tolerance *out, ms_error *err) {
  double hold = fmin(s->q.max_hold, 100.0 * s->tau);
  double lambda = s->cfg.scenario.offered_load;
  double peak = lambda + (s->q.kind == MS_TRIGGER_LOAD ? s->q.spike_load : 0);
  double a1;
  int st = ms_amplification(&s->cfg.service.policy, 1.0, &a1, err);
  if (st != MS_OK)
    return st;
  /* a spike under the tipping load keeps the run on the healthy branch:
   * the backlog is the healthy queue's, drained within the usual horizon;
   * a stall or a larger spike piles up attempts that must drain */
  double horizon = s->horizon;
  if (s->q.kind == MS_TRIGGER_SERVERS || peak > s->tipping_load) {
    double drain;
    st = ms_drain_time(&s->cfg.service, lambda, peak * a1 * hold, &drain, err);
    if (st != MS_OK)
      return st;
    horizon += 3.0 * drain;
  }
  out->tolerance = s->q.max_hold;
  if (!(s->lead_in + hold + horizon <= MAX_HOLD_LIMIT))
    return MS_OK;
  bool latched;
  st = run_probe(s, hold, horizon, &latched, NULL, &out->probes, err);
  if (st != MS_OK)
    return st;
  if (latched)
    return ms_fail(err, MS_ENOCONV,
                   "a %g s trigger latched at %g req/s, where the landscape "
                   "has no collapsed equilibrium",
                   hold, lambda);
  out->verified = true;
  out->checked = hold;
  return MS_OK;
}

/* Bracket and bisect: lo recovers, hi latches (from a resumed bracket
 * when q gives one).  out->tolerance and out->latch follow the bracket, so
 * that a search q.stop ends leaves the bracket reached (latch 0: none
 * latched yet) for a resumed one. */
static int search(const setup *s, ms_tolerance *out, ms_error *err) {
  bool latched;
  int st;
  double lo = s->q.resume ? s->q.resume_lo : 0.0;
  double known = s->q.resume ? s->q.resume_hi : 0.0;
  out->tolerance = lo;
  out->latch = known;
  if (!s->q.resume) {
    if ((st = run_probe(s, 0.0, s->horizon, &latched, NULL, &out->probes,
                        err)) != MS_OK)
      return st;
    if (latched && s->q.engine == MS_ENGINE_DES) {
      /* the queue's noise tipped it: this seed survives nothing */
      out->kind = MS_TOLERANCE_BOUNDED;
      out->latched_untriggered = 1;
      return MS_OK;
    }
    if (latched)
      return ms_fail(err, MS_ENOCONV,
                     "the run latches with no trigger at %g req/s: it does "
                     "not settle at the healthy equilibrium",
                     s->cfg.scenario.offered_load);
  }
  double hi = known > 0 ? known : fmin(fmax(s->tau, 2.0 * lo), s->q.max_hold);
  while (known == 0.0) {
    if ((st = run_probe(s, hi, s->horizon, &latched, NULL, &out->probes,
                        err)) != MS_OK)
      return st;
    if (latched) {
      known = out->latch = hi;
      break;
    }
    lo = out->tolerance = hi;
    if (hi >= s->q.max_hold) {
      out->kind = MS_TOLERANCE_BEYOND;
      out->tolerance = s->q.max_hold;
      out->latch = 0.0;
      return MS_OK;
    }
    hi = fmin(2.0 * hi, s->q.max_hold);
  }
  double res = fmax(s->q.rel_tol * hi, out->dt);
  while (hi - lo > res) {
    double mid = lo + 0.5 * (hi - lo);
    if ((st = run_probe(s, mid, s->horizon, &latched, NULL, &out->probes,
                        err)) != MS_OK)
      return st;
    if (latched)
      hi = out->latch = mid;
    else
      lo = out->tolerance = mid;
    res = fmax(s->q.rel_tol * hi, out->dt);
  }
  out->kind = MS_TOLERANCE_BOUNDED;
  out->tolerance = lo;
  out->latch = hi;
  out->resolution = res;
  if (s->q.check_monotone) {
    bool a, b;
    if ((st = run_probe(s, 0.5 * lo, s->horizon, &a, NULL, &out->probes,
                        err)) != MS_OK ||
        (st = run_probe(s, fmin(2.0 * hi, MS_SIM_MAX_DURATION / 4), s->horizon,
                        &b, NULL, &out->probes, err)) != MS_OK)
      return st;
    out->monotone = !a && b;
  }
  return MS_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0 .. n - 1], n >= 1, sorting v. */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The DES search: one per seed, the medians of their brackets. */
static int search_des(setup *s, ms_tolerance *out, ms_error *err) {
  int n = s->q.seeds > 0 ? s->q.seeds : DES_DEFAULT_SEEDS;
  double *lo = malloc(3 * (size_t)n * sizeof *lo);
  if (lo == NULL)
    return ms_fail(err, MS_ENOMEM, "no memory for %d seeds", n);
  double *hi = lo + n, *mid = hi + n;
  uint64_t seed0 = s->cfg.seed;
  int beyond = 0, st = MS_OK;
  for (int k = 0; k < n && st == MS_OK; k++) {
    ms_tolerance one = *out;
    one.probes = 0;
    one.latched_untriggered = 0;
    s->cfg.seed = seed0 + (uint64_t)k;
    st = search(s, &one, err);
    out->probes += one.probes;
    if (st != MS_OK)
      break;
    out->latched_untriggered += one.latched_untriggered;
    if (one.kind == MS_TOLERANCE_BEYOND) {
      beyond++;
      one.latch = one.tolerance;
    }
    lo[k] = one.tolerance;
    hi[k] = one.latch;
    mid[k] = 0.5 * (one.tolerance + one.latch);
    out->resolution = fmax(out->resolution, one.resolution);
  }
  s->cfg.seed = seed0;
  if (st == MS_OK) {
    out->seeds = n;
    out->kind = 2 * beyond > n ? MS_TOLERANCE_BEYOND : MS_TOLERANCE_BOUNDED;
    out->tolerance = median(lo, n);
    out->latch = median(hi, n);
    qsort(mid, (size_t)n, sizeof *mid, cmp_double);
    out->lowest = mid[0];
    out->highest = mid[n - 1];
  }
  free(lo);
  return st;
}

int ms_trigger_tolerance(const ms_sim_config *c, const ms_tolerance_query *q,
                         ms_tolerance *out, ms_error *err) {
  return ms_tolerance_with(c, q, NULL, out, err);
}

int ms_tolerance_with(const ms_sim_config *c, const ms_tolerance_query *q,
                      ms_sim_runner des, ms_tolerance *out, ms_error *err) {
  if (c == NULL || q == NULL || out == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_trigger_tolerance");
  memset(out, 0, sizeof *out);
  if (q->engine == MS_ENGINE_DES && des == NULL)
    return ms_fail(err, MS_EINVAL,
                   "ms_trigger_tolerance runs the fluid engine only: "
                   "ms_tolerance_run runs the discrete-event one");
  setup s;
  int st = setup_init(c, q, &s, err);
  if (st != MS_OK)
    return st;
  s.des = des;
  ms_landscape ls;
  if ((st = ms_landscape_build(&c->service, &ls, err)) != MS_OK)
    return st;
  s.stopped = &out->stopped;
  s.tipping_load = ls.tipping_load;
  out->tipping_load = ls.tipping_load;
  out->recovery_load = ls.recovery_load;
  out->lead_in = s.lead_in;
  out->horizon = s.horizon;
  out->monotone = true;
  long spb;
  if ((st = ms_sim_fluid_dt(&s.cfg, &out->dt, &spb, err)) != MS_OK)
    return st;
  double lambda = c->scenario.offered_load;
  double peak = lambda + (q->kind == MS_TRIGGER_LOAD ? q->spike_load : 0.0);
  out->engine = q->engine;
  if (lambda > ls.tipping_load) {
    out->kind = MS_TOLERANCE_OVERLOADED;
    return MS_OK;
  }
  if (lambda < ls.recovery_load ||
      (q->kind == MS_TRIGGER_LOAD && peak <= ls.tipping_load)) {
    out->kind = MS_TOLERANCE_UNBOUNDED;
    if (q->engine == MS_ENGINE_DES) {
      out->tolerance = s.q.max_hold;
      return MS_OK;
    }
    return verify_unbounded(&s, out, err);
  }
  if (q->engine == MS_ENGINE_DES)
    return search_des(&s, out, err);
  return search(&s, out, err);
}

/* ---- --engine auto -------------------------------------------------- */

int ms_tolerance_des_cost(const ms_sim_config *c, const ms_tolerance_query *q,
                          ms_tolerance_cost *out, ms_error *err) {
  if (c == NULL || q == NULL || out == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_tolerance_des_cost");
  ms_tolerance_query d = *q;
  d.engine = MS_ENGINE_DES;
  d.resume = false;
  setup s;
  int st = setup_init(c, &d, &s, err);
  if (st != MS_OK)
    return st;
  double lambda = c->scenario.offered_load;
  double spike = d.kind == MS_TRIGGER_LOAD ? d.spike_load : 0.0;
  out->per_probe = lambda * (s.lead_in + s.tau + s.horizon) + spike * s.tau;
  out->probes = 2 + (int)ceil(log2(0.5 / s.q.rel_tol));
  out->seeds = d.seeds > 0 ? d.seeds : DES_DEFAULT_SEEDS;
  out->requests = (double)out->seeds * out->probes * out->per_probe;
  return MS_OK;
}

int ms_tolerance_pick(const ms_sim_config *c, const ms_tolerance_query *q,
                      ms_tolerance_pick_result *out, ms_error *err) {
  if (c == NULL || q == NULL || out == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_tolerance_pick");
  memset(out, 0, sizeof *out);
  out->budget = MS_TOLERANCE_AUTO_BUDGET;
  int st = ms_tolerance_des_cost(c, q, &out->cost, err);
  if (st != MS_OK)
    return st;
  if (ms_sim_fluid_supports(&c->service.model, NULL) != MS_OK) {
    out->engine = MS_ENGINE_DES;
    out->reason = MS_TOLERANCE_PICK_FLUID_REFUSES;
    return MS_OK;
  }
  ms_landscape ls;
  if ((st = ms_landscape_build(&c->service, &ls, err)) != MS_OK)
    return st;
  double lambda = c->scenario.offered_load;
  double peak = lambda + (q->kind == MS_TRIGGER_LOAD ? q->spike_load : 0.0);
  if (lambda > ls.tipping_load || lambda < ls.recovery_load ||
      (q->kind == MS_TRIGGER_LOAD && peak <= ls.tipping_load)) {
    out->engine = MS_ENGINE_FLUID;
    out->reason = MS_TOLERANCE_PICK_NO_SEARCH;
  } else if (out->cost.requests <= out->budget) {
    out->engine = MS_ENGINE_DES;
    out->reason = MS_TOLERANCE_PICK_BUDGET;
  } else {
    out->engine = MS_ENGINE_FLUID;
    out->reason = MS_TOLERANCE_PICK_OVER_BUDGET;
  }
  return MS_OK;
}
