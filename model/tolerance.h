/* SPDX-License-Identifier: MIT */
/*
 * Trigger tolerance: the longest stall or spike a service survives at its
 * offered load, by probes of the fluid engine with queue memory (sim.h,
 * doc/design.md §6).  Conventions: base.h.
 */
#ifndef METASTABLE_TOLERANCE_H
#define METASTABLE_TOLERANCE_H

#include "sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The longest trigger a service survives at its offered load: the stall
 * tolerance ("at this load the service survives a 2.3 s stall of its
 * dependency") and the spike tolerance.  A trigger is one of
 *   MS_TRIGGER_SERVERS  the pool has `servers` servers (0: a full stall,
 *                       all servers gone while the clients go on sending
 *                       and retrying) for `hold` seconds;
 *   MS_TRIGGER_LOAD     `spike_load` req/s more for `hold` seconds.
 *
 * Each probe is one run of the fluid engine with queue memory
 * (ms_sim_fluid, doc/design.md §6), the erlang model only.  The run
 * starts empty at the offered load lambda, settles for a lead-in of
 * 5 tau, applies the trigger for `hold` seconds, and goes on for a horizon
 * of
 *   20 tau + 3 c mu T / (c mu - lambda A(base))
 * after it, where tau = T + 1/mu + the mean backoff before the last
 * retry (one turn of the loop: a timeout, a service, a wait) and the second
 * term is three times the time to drain a backlog of one timeout horizon
 * c mu T at the healthy amplification (ms_drain_time).  The probe
 * *latches* when the plugin's state on the run's last window is a storm
 * state (ms_sim_summary.final_state metastable or overloaded): the
 * window's attempt rate lies beyond the unstable equilibrium, in the collapsed
 * basin (doc/design.md §1.4), after the backlog the trigger left has had three
 * drain times to go.  Not the storm flag (final_storm), which also stays
 * up in the healthy basin while a backlog still drains (recovering). Inside the
 * band a backlog past c mu T makes every attempt time out, so the attempts
 * settle at the collapsed equilibrium and never come back: a trajectory that
 * has not recovered by the end of the horizon has latched.
 *
 * Sources: the trigger map (trigger size x duration -> recovers or
 * latches) of L. Huang, M. Magnusson, A. B. Muralikrishna, S. Estyak,
 * R. Isaacs, A. Aghayev, T. Zhu, A. Charapko, "Metastable Failures in the
 * Wild", OSDI 2022, sec. 5; the fluid engine of doc/design.md §6.
 */
typedef struct {
  ms_trigger_kind kind; /* SERVERS: a stall; LOAD: a spike */
  long servers;         /* SERVERS: the pool during the stall, 0 .. servers - 1
                           of the model (0: a full stall) */
  double spike_load;    /* LOAD: req/s added, finite, > 0 */
  double rel_tol;       /* bisection: stop when latch - tolerance <=
                           max(rel_tol latch, dt), in (0, 0.5]; 0: 0.01 */
  double max_hold;      /* longest trigger searched, s, (0, 86400]; 0: 3600 */
  bool check_monotone;  /* run two more probes: half the tolerance must
                           recover and twice the latch hold must latch */
  /* stop, or NULL: polled with stop_ctx before each probe and at each of
   * its sample windows; non-zero ends the search with MS_ELIMIT ("stopped
   * by the caller"), so a caller bounds a search by a deadline or Ctrl-C
   * (a window is milliseconds at most: bench/bench_sim) */
  int (*stop)(void *stop_ctx);
  void *stop_ctx;
  /* resume: go on from the bracket a search of the same service, load and
   * query returned when stopped (its tolerance and latch: resume_lo s
   * recovered, resume_hi s latched, 0: none latched yet), probing neither
   * again, nor the hold of 0 */
  bool resume;
  double resume_lo, resume_hi;
  /* engine: MS_ENGINE_FLUID (0, the default) or MS_ENGINE_DES, the
   * discrete-event engine, searched once per seed c->seed, c->seed + 1, ...
   * (common random numbers within a seed's search) and reported as the
   * median over the seeds with their spread; no resume */
  ms_sim_engine engine;
  int seeds; /* DES: 1 .. MS_TOLERANCE_MAX_SEEDS; 0: 5 */
} ms_tolerance_query;

/* The most seeds of one DES search (ms_tolerance_query.seeds). */
#define MS_TOLERANCE_MAX_SEEDS 1000

typedef enum {
  MS_TOLERANCE_BOUNDED = 0,   /* a trigger of tolerance s is survived, one of
                                 latch s latches */
  MS_TOLERANCE_UNBOUNDED = 1, /* no trigger of this kind latches: below the
                                 recovery load (no collapsed equilibrium),
                                 or a spike that stays at or under the
                                 tipping load */
  MS_TOLERANCE_BEYOND = 2,    /* inside the band, but no trigger up to
                                 max_hold latched: tolerance = max_hold */
  MS_TOLERANCE_OVERLOADED = 3 /* above the tipping load: the service latches
                                 with no trigger at all; tolerance 0 */
} ms_tolerance_kind;

/* "bounded", "unbounded", "beyond", "overloaded"; "unknown" otherwise. */
const char *ms_tolerance_kind_name(ms_tolerance_kind k);

typedef struct {
  ms_tolerance_kind kind;
  double tolerance;  /* s: the longest hold a probe recovered from (the
                        lower end of the final bracket); 0 when
                        overloaded, max_hold when unbounded or beyond */
  double latch;      /* s: the shortest hold a probe latched at (the upper
                        end); 0 when none latched */
  double resolution; /* s: the bisection's stopping width, max(rel_tol
                        latch, dt) */
  double lead_in;    /* s of the run before the trigger starts */
  double horizon;    /* s of the run after the trigger ends */
  double dt;         /* s, the fluid bin width used */
  int probes;        /* fluid runs made */
  bool verified;     /* unbounded: a probe of max_hold, at most 100 tau,
                        with a horizon that drains the largest backlog it
                        can leave, recovered, as the landscape says it
                        must (false when that run would exceed a day) */
  double checked;    /* s: the hold of that probe; 0 when not run */
  bool monotone;     /* check_monotone: both extra probes agreed; true
                        when not asked */
  double tipping_load, recovery_load; /* req/s, of the landscape */
  bool stopped; /* q->stop ended the search (MS_ELIMIT): tolerance and
                   latch are the bracket reached, for q->resume_lo/hi;
                   every field is 0 on an error before the first probe */
  /* DES (q->engine): tolerance and latch are the medians over the seeds
   * of each seed's bracket ends; kind BOUNDED unless most seeds were
   * BEYOND (then BEYOND).  A seed whose run latches with no trigger (the
   * noise of a queue near its tipping point) counts as 0 and 0. */
  ms_sim_engine engine;
  int seeds;               /* seeds searched */
  double lowest, highest;  /* s: the smallest and the largest boundary of
                              a seed (the midpoint of its bracket) */
  int latched_untriggered; /* seeds that latched with no trigger */
} ms_tolerance;

/* The most fluid bins one probe of ms_trigger_tolerance may take (2^20):
 * the bins are T/20 wide, so a timeout short against the service time
 * makes the run long in bins (16 servers at 1 s behind a 7 us timeout:
 * 6e7 bins a probe, 22 s a search, found by fuzz_model); such a search is
 * refused rather than run, in the plugin's read cycle above all. */
#define MS_TOLERANCE_MAX_BINS 1048576.0

/*
 * ms_trigger_tolerance: the longest trigger of query q that the service of
 * c survives at the offered load c->scenario.offered_load.
 *   c    a configuration for ms_sim_fluid: its service (erlang model, one
 *        tier), backoff, budget window, token capacity, sample interval
 *        and dt are used; its scenario's triggers and duration and its
 *        queue_memory are replaced (queue memory on)
 *   q    the trigger (above)
 *   out  the result
 * Method: the landscape first (ms_landscape_build): above the tipping
 * load OVERLOADED without a probe; below the recovery load (and for a
 * spike whose peak lambda + spike_load stays at or below the tipping
 * load) UNBOUNDED, checked by one long probe (verified; a probe that
 * latches there is the error MS_ENOCONV: the engine and the landscape
 * disagree).  Otherwise a hold of 0 must recover (MS_ENOCONV if not: the
 * run does not settle healthy), then the hold doubles from tau until a
 * probe latches (BEYOND past max_hold), then bisection on the hold
 * keeps one recovering and one latching end until the bracket is within
 * the resolution.  The outcome is assumed monotone in the hold (a longer
 * trigger leaves a larger backlog); check_monotone tests it at two more
 * holds.  Cost: about log2(max_hold / tau) + log2(1 / rel_tol) fluid runs
 * of lead-in + hold + horizon each (bench/bench_sim measures one).
 * With q->engine MS_ENGINE_DES each seed is searched alike with the
 * discrete-event engine (the landscape's verdicts OVERLOADED and UNBOUNDED
 * stand without a probe, verified false) and the result is the median
 * over the seeds: the DES latch boundary, for the fluid engine's to be
 * checked against (tools/tolerance_grid.py) and for services where the
 * fluid engine errs (doc/simulation.md); it costs seeds x probes runs of
 * the DES, seconds to minutes.
 * ms_trigger_tolerance itself runs the fluid engine only (a DES query is
 * MS_EINVAL): ms_tolerance_run, below, runs both.
 * Errors: MS_EINVAL (configuration, query, capacity model, tiers > 1,
 * an engine that is neither, resume with the DES, a model the fluid
 * engine refuses with the fluid engine: ms_sim_fluid_supports),
 * MS_ENOCONV (above), MS_ELIMIT (a probe longer than MS_SIM_MAX_DURATION
 * or of more than MS_TOLERANCE_MAX_BINS fluid bins, or q->stop said stop),
 * and those of the engine.
 */
int ms_trigger_tolerance(const ms_sim_config *c, const ms_tolerance_query *q,
                         ms_tolerance *out, ms_error *err);

/*
 * ms_tolerance_run: ms_trigger_tolerance with either engine of
 * q->engine (the discrete-event one lives in the offline library, which
 * the plugin does not link).  Arguments, result and errors as
 * ms_trigger_tolerance.
 */
int ms_tolerance_run(const ms_sim_config *c, const ms_tolerance_query *q,
                     ms_tolerance *out, ms_error *err);

/* --engine auto of `metastable tolerance` (ms_tolerance_pick): the seeds of
 * its DES search when the caller gives none, and the budget of that
 * search's estimated cost (ms_tolerance_des_cost), in requests simulated
 * over all its seeds and probes: 2e7 is a few seconds of CPU (about 4e6
 * requests a second on the machine of doc/simulation.md, "Which engine
 * --engine auto picks").  Every pool of 10 servers of the tolerance grid
 * (tools/tolerance_grid.py) fits, and 100 servers up to a timeout of 20
 * service times; 10^4 servers at 100 service times is 2,000 times over. */
#define MS_TOLERANCE_AUTO_SEEDS 21
#define MS_TOLERANCE_AUTO_BUDGET 2e7

/* The estimated cost of a DES search (ms_tolerance_des_cost). */
typedef struct {
  double per_probe; /* requests (first attempts) one probe simulates */
  int probes;       /* probes of one seed's search */
  int seeds;        /* seeds searched */
  double requests;  /* the whole search: seeds x probes x per_probe */
} ms_tolerance_cost;

/*
 * ms_tolerance_des_cost: what the search of query q with the
 * discrete-event engine (q->engine is taken as MS_ENGINE_DES) would
 * simulate, estimated from the quantities that search uses (the doc
 * comment of ms_trigger_tolerance): a probe runs lead-in + hold + horizon
 * seconds, and its requests are
 *   per_probe = lambda (lead_in + tau + horizon) [+ spike_load tau]
 * with the hold taken as one turn of the loop tau (the first hold the
 * search tries; the tolerances of the grid lie within one turn); a seed's
 * search makes
 *   probes = 2 + ceil(log2(0.5 / rel_tol))
 * (the hold of 0, one doubling, the bisection from half the bracket to
 * rel_tol: 8 at the default 0.01; 7 or 8 measured on the grid); seeds is
 * q->seeds (0: 5).  Requests, not attempts: a latched probe's storm sends
 * up to r + 1 attempts a request, so the CPU time of a request varies
 * with the retries and the share of probes that latch (2.6e6 to 4e6
 * requests a second measured, 1 and 4 retries).  The landscape's verdicts
 * that need no search (above the tipping load, below the recovery load)
 * are not looked at: the estimate is that of a search.
 *   c, q  as ms_trigger_tolerance
 *   out   the estimate
 * Errors: those of ms_trigger_tolerance's checks (MS_EINVAL), and
 * MS_EINVAL for NULL arguments.
 */
int ms_tolerance_des_cost(const ms_sim_config *c, const ms_tolerance_query *q,
                          ms_tolerance_cost *out, ms_error *err);

/* Why ms_tolerance_pick chose its engine. */
typedef enum {
  MS_TOLERANCE_PICK_BUDGET = 0,       /* des: the estimate fits the budget */
  MS_TOLERANCE_PICK_OVER_BUDGET = 1,  /* fluid: the estimate does not */
  MS_TOLERANCE_PICK_NO_SEARCH = 2,    /* fluid: the landscape answers without
                                         a search (above the tipping load,
                                         below the recovery load, a spike
                                         whose peak stays under the tipping
                                         load); the fluid engine checks the
                                         unbounded case with one probe */
  MS_TOLERANCE_PICK_FLUID_REFUSES = 3 /* des: the fluid engine does not
                                         model the service
                                         (ms_sim_fluid_supports), whatever
                                         the estimate */
} ms_tolerance_pick_reason;

typedef struct {
  ms_sim_engine engine;
  ms_tolerance_pick_reason reason;
  ms_tolerance_cost cost; /* the DES search's estimate */
  double budget;          /* requests, MS_TOLERANCE_AUTO_BUDGET */
} ms_tolerance_pick_result;

/*
 * ms_tolerance_pick: the engine --engine auto runs for query q: the DES
 * (q->seeds seeds, 0: 5; the command passes MS_TOLERANCE_AUTO_SEEDS) when
 * its search's estimate (ms_tolerance_des_cost) is at most
 * MS_TOLERANCE_AUTO_BUDGET requests, else the fluid engine, which is
 * deterministic and takes milliseconds; the reasons above override the
 * budget.  The fluid engine errs by more than 5 % of the DES median on
 * small pools only (doc/simulation.md, "How far the fluid tolerance is
 * from the DES"), and there the DES is cheap.  q->engine is ignored; the
 * caller sets it to out->engine and runs ms_tolerance_run.  Cost: one
 * landscape (ms_landscape_build), no simulation.
 * Errors: those of ms_tolerance_des_cost and ms_landscape_build.
 */
int ms_tolerance_pick(const ms_sim_config *c, const ms_tolerance_query *q,
                      ms_tolerance_pick_result *out, ms_error *err);

/*
 * ms_tolerance_probe: one probe of ms_trigger_tolerance: whether the
 * trigger of q held for `hold` s (finite, >= 0) latches at the offered load
 * c->scenario.offered_load, by the run described above.
 *   latched   out: the run's last window is in storm
 *   scenario  out, or NULL: the scenario that was run (lead-in, trigger,
 *             horizon), for a caller that runs it again or shows it
 * Errors: as ms_trigger_tolerance, MS_ENOCONV excepted.
 */
int ms_tolerance_probe(const ms_sim_config *c, const ms_tolerance_query *q,
                       double hold, bool *latched, ms_scenario *scenario,
                       ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
