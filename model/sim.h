/* SPDX-License-Identifier: MIT */
/*
 * Simulation: how a service gets to its equilibria, and whether a trigger
 * (a spike, a stall, a ramp) leaves it in a storm once it is gone
 * (doc/design.md §6).  Two engines share one configuration, one scenario
 * and one output (windows judged by ms_analyze, as the plugin judges an
 * interval): the fluid engine (ms_sim_fluid) and the discrete-event engine
 * (ms_sim_des).  One retrying tier only: tiers > 1 are refused (A^k is a
 * steady-state composition with no single queue to simulate).
 *
 * Conventions: base.h, with one exception: the engines allocate their
 * working memory at the start of a run, grow it by doubling (never per
 * event) and free it before they return.
 */
#ifndef METASTABLE_SIM_H
#define METASTABLE_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "landscape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Backoff                                                             */
/* ------------------------------------------------------------------ */

/*
 * How long a client waits, after it learns that attempt k failed
 * (k = 1 .. r), before it sends retry k.  With v_k = min(cap, base m^(k-1)),
 * m the multiplier (2 unless set: 1.5 and 3 are common too):
 *   none           0
 *   constant       base
 *   exponential    v_k                         (capped exponential)
 *   full jitter    uniform on [0, v_k]
 *   equal jitter   v_k / 2 + uniform on [0, v_k / 2]
 *   decorrelated   s_0 = base, s_k = min(cap, uniform on [base, 3 s_(k-1)])
 * Source: Marc Brooker, "Exponential Backoff And Jitter", AWS Architecture
 * Blog, 4 March 2015 (the four jittered and unjittered formulas, with the
 * retry counter starting at 0 for the first retry; m = 2 there); the
 * multiplier is gRPC's backoff_multiplier (gRFC A6, retry policy: the
 * n-th retry's ceiling min(initial_backoff multiplier^(n-1),
 * max_backoff)); Google SRE book ch. 22 ("Addressing Cascading Failures",
 * Retries: always use randomized exponential backoff).
 */
typedef enum {
  MS_BACKOFF_NONE = 0,
  MS_BACKOFF_CONSTANT = 1,
  MS_BACKOFF_EXPONENTIAL = 2,
  MS_BACKOFF_FULL_JITTER = 3,
  MS_BACKOFF_EQUAL_JITTER = 4,
  MS_BACKOFF_DECORRELATED = 5,
} ms_backoff_kind;

#define MS_BACKOFF_KINDS 6

typedef struct {
  ms_backoff_kind kind;
  double base;       /* s, finite, >= 0; >= DBL_MIN (normal)
                        for decorrelated jitter */
  double cap;        /* s, finite, >= base (ignored by none and constant);
                        decorrelated jitter: at most
                        MS_BACKOFF_MAX_DECORRELATED_RATIO base */
  double multiplier; /* m of exponential, full and equal jitter: finite, in
                        [1, MS_BACKOFF_MAX_MULTIPLIER], or 0 for the
                        default 2 (so that initialisers without it keep
                        the doubling); ignored by the other kinds */
} ms_backoff;

/* Largest backoff base or cap accepted, s (one day). */
#define MS_BACKOFF_MAX 86400.0
/* Largest cap / base of decorrelated jitter.  The recursion's grid has
 * 4096 cells between base and cap, each g = (cap / base)^(1/4096) times
 * the last; the midpoint rule's error in the mean grows about k (g - 1)^2
 * / 6 with the retry k (tests/check_sim.c, test_backoff_mean_delays):
 * 1.7e-5 at k = 6 and 1e7, 6.4e-5 at k = 12 and 1e9, where g - 1 is
 * 0.51 %.  (Its densities were once summed from the bottom, whose
 * rounding left mass up to cap: 8e-4 at retry 2 and 8e6.) */
#define MS_BACKOFF_MAX_DECORRELATED_RATIO 1e9
/* Largest backoff multiplier accepted (a wait that grows a thousandfold a
 * retry reaches any cap at the second one). */
#define MS_BACKOFF_MAX_MULTIPLIER 1000.0
/* The multiplier of a backoff that does not set one. */
#define MS_BACKOFF_DEFAULT_MULTIPLIER 2.0

/* "none", "constant", "exponential", "full-jitter", "equal-jitter",
 * "decorrelated-jitter"; "unknown" otherwise. */
const char *ms_backoff_name(ms_backoff_kind kind);

/* The kind called name (as ms_backoff_name spells it; case-insensitive),
 * MS_OK; MS_EINVAL with a message listing the names otherwise. */
int ms_backoff_from_name(const char *name, ms_backoff_kind *kind,
                         ms_error *err);

/* Whether the kind grows by the multiplier: exponential, full and equal
 * jitter. */
bool ms_backoff_multiplies(ms_backoff_kind kind);

/* Validate a backoff: MS_OK or MS_EINVAL naming the field and its range. */
int ms_backoff_check(const ms_backoff *b, ms_error *err);

/*
 * ms_backoff_ceiling: v_k = min(cap, base m^(k-1)), s, the wait before
 * retry k of exponential backoff and the top of full and equal jitter's
 * ranges (m the multiplier, 2 when it is 0).  b a valid backoff of one of
 * those kinds, k >= 1 (any size: m^(k-1) may overflow, v_k is then the
 * cap; base 0 gives 0).  Finite, in [0, cap].  Source: as above.
 */
double ms_backoff_ceiling(const ms_backoff *b, int k);

/*
 * ms_backoff_mean_delay: the mean wait before retry k, s.
 *   b  a valid backoff;  k  retry number, 1 .. MS_MAX_RETRIES
 *   mean  out: E[delay_k], s, >= 0: v_k for exponential, v_k / 2 for full
 *         jitter, 3 v_k / 4 for equal jitter (v_k = ms_backoff_ceiling,
 *         with the multiplier), base for constant, 0 for none
 * Exact for every kind but decorrelated jitter, whose distribution has no
 * closed form: its recursion is run on 4096 geometrically spaced cells
 * between base and cap plus a point mass at cap (the grid the fluid engine
 * uses); the cells' midpoint rule makes the error second order in the
 * cell ratio (cap/base)^(1/4096): relative error 1.4e-6 at k = 6 and
 * cap/base = 1000 against the exact uncapped recursion
 * E[s_k] = (base + 3 E[s_(k-1)]) / 2, and within Monte Carlo error with a
 * binding cap (tests/check_sim.c).  The recursion stops once stationary
 * (every cell within 2^-53 of the previous retry's), so a k of thousands
 * costs what a few dozen do; where it never settles (cap/base near
 * MS_BACKOFF_MAX_DECORRELATED_RATIO) a retry costs about 0.2 ms, and the
 * memory stays two distributions of the grid.  Errors: MS_EINVAL,
 * MS_ENOMEM.
 */
int ms_backoff_mean_delay(const ms_backoff *b, int k, double *mean,
                          ms_error *err);

/*
 * ms_backoff_mean_delays: the mean waits before retries 1 .. r, s, as
 * ms_backoff_mean_delay gives each, in one pass.
 *   b  a valid backoff;  r  retries, 1 .. MS_MAX_RETRIES
 *   means  out: r entries, means[k - 1] the mean wait before retry k
 * Decorrelated jitter's recursion runs once for all r, keeping two
 * distributions of the grid (O(r) time, about 100 KB), where a call per
 * retry would cost O(r^2).  Errors: MS_EINVAL, MS_ENOMEM.
 */
int ms_backoff_mean_delays(const ms_backoff *b, int r, double *means,
                           ms_error *err);

/* ------------------------------------------------------------------ */
/* Service time distributions (discrete-event engine)                  */
/* ------------------------------------------------------------------ */

/*
 * The distribution of one service time in the discrete-event engine, with
 * mean 1/mu and coefficient of variation cv (the model's service_time_cv,
 * 1 when absent):
 *   exponential       rate mu; cv must be 1 (M/M/c, the default)
 *   deterministic     1/mu exactly; cv must be 0 (M/D/c)
 *   lognormal         exp(m + s Z), Z standard normal, s^2 = ln(1 + cv^2),
 *                     m = -ln mu - s^2/2; cv > 0
 *   hyperexponential  H2 with balanced means: rate 2 p mu with probability
 *                     p, else rate 2 (1 - p) mu, p = (1 + sqrt((cv^2 - 1) /
 *                     (cv^2 + 1))) / 2; cv >= 1 (W. Whitt, "Approximating
 *                     a point process by a renewal process", Oper. Res.
 *                     30(1), 1982: the balanced-means H2 fit of two
 *                     moments)
 *   gamma             shape k = 1/cv^2, scale cv^2/mu (Erlang-k for whole
 *                     k); cv > 0; Marsaglia and Tsang's method (ACM TOMS
 *                     26(3), 2000)
 * Normal variates by Marsaglia's polar method (Marsaglia and Bray, SIAM
 * Review 6(3), 1964).
 */
typedef enum {
  MS_SERVICE_EXPONENTIAL = 0,
  MS_SERVICE_DETERMINISTIC = 1,
  MS_SERVICE_LOGNORMAL = 2,
  MS_SERVICE_HYPEREXPONENTIAL = 3,
  MS_SERVICE_GAMMA = 4,
} ms_service_dist;

#define MS_SERVICE_DISTS 5

/* "exponential", "deterministic", "lognormal", "hyperexponential",
 * "gamma"; "unknown" otherwise. */
const char *ms_service_dist_name(ms_service_dist d);

/* The distribution called name (as ms_service_dist_name spells it;
 * case-insensitive), MS_OK; MS_EINVAL with a message listing the names
 * otherwise. */
int ms_service_dist_from_name(const char *name, ms_service_dist *d,
                              ms_error *err);

/*
 * ms_service_dist_check: whether distribution d can have coefficient of
 * variation cv (above: exponential 1, deterministic 0, lognormal and gamma
 * > 0, hyperexponential >= 1).  cv finite, >= 0.  MS_OK or MS_EINVAL naming
 * both and what the distribution needs.
 */
int ms_service_dist_check(ms_service_dist d, double cv, ms_error *err);

/* ------------------------------------------------------------------ */
/* Scenarios                                                           */
/* ------------------------------------------------------------------ */

/*
 * A trigger changes the offered load or the pool for a while:
 *   MS_TRIGGER_LOAD     adds `load` req/s (negative: a drop) to the
 *                       baseline, ramping linearly from 0 over `rise` s
 *                       starting at `start`, holding for `hold` s, and
 *                       ramping back to 0 over `fall` s.  A spike has
 *                       rise = fall = 0; a ramp up then down (the
 *                       descending-load test, doc/design.md §6) has both > 0.
 *   MS_TRIGGER_SERVERS  the pool has `servers` servers (erlang model,
 *                       0 allowed: a full stall, as in a 3-second database
 *                       stall) or `capacity` req/s (capacity model) during
 *                       [start, start + hold); rise and fall must be 0.
 * The offered load is never below 0 (a drop larger than the baseline stops
 * the traffic).  When SERVERS triggers overlap, the one listed last wins.
 */
typedef enum {
  MS_TRIGGER_LOAD = 0,
  MS_TRIGGER_SERVERS = 1,
} ms_trigger_kind;

typedef struct {
  ms_trigger_kind kind;
  double start;    /* s, finite, >= 0 */
  double rise;     /* s, finite, >= 0 */
  double hold;     /* s, finite, >= 0 */
  double fall;     /* s, finite, >= 0 */
  double load;     /* LOAD: req/s at full effect, finite, may be negative */
  long servers;    /* SERVERS, erlang model: 0 .. MS_MAX_SERVERS */
  double capacity; /* SERVERS, capacity model: req/s, finite, > 0 */
} ms_trigger;

#define MS_SIM_MAX_TRIGGERS 16

typedef struct {
  double duration;     /* s simulated, finite, > 0, <= MS_SIM_MAX_DURATION */
  double offered_load; /* baseline lambda, req/s, finite, >= 0 */
  int n_triggers;      /* 0 .. MS_SIM_MAX_TRIGGERS */
  ms_trigger triggers[MS_SIM_MAX_TRIGGERS];
} ms_scenario;

/* Longest run accepted, s (one week). */
#define MS_SIM_MAX_DURATION 604800.0
/* Largest offered load a scenario may ask for, req/s. */
#define MS_SIM_MAX_RATE 1e12
/* Largest token bucket, tokens (ms_sim_config.token_capacity). */
#define MS_SIM_MAX_TOKENS 1e15

/*
 * The kinds of single values in a scenario, a backoff and a simulation
 * configuration, each with its range.  ms_scenario_check, ms_backoff_check
 * and ms_sim_config_check decide every such value through
 * ms_sim_value_check (what they add are the relations: a cap of at least
 * the base, a dt that divides the sample interval, servers or capacity as
 * the model needs), so that a file loader can report the same verdict at
 * the value it read.
 */
typedef enum {
  MS_SIM_SPAN,        /* a length of the run (duration, sample interval,
                         budget window): s, (0, MS_SIM_MAX_DURATION] */
  MS_SIM_TIME,        /* a trigger's start, rise, hold or fall:
                         s, [0, MS_SIM_MAX_DURATION] */
  MS_SIM_DELAY,       /* a backoff base or cap: s, [0, MS_BACKOFF_MAX] */
  MS_SIM_LOAD,        /* an offered load: req/s, [0, MS_SIM_MAX_RATE] */
  MS_SIM_LOAD_CHANGE, /* a trigger's load: req/s,
                         [-MS_SIM_MAX_RATE, MS_SIM_MAX_RATE] */
  MS_SIM_POOL,        /* a stalled pool's servers: whole, [0, MS_MAX_SERVERS] */
  MS_SIM_TOKENS,      /* a token bucket: tokens, [1, MS_SIM_MAX_TOKENS] */
  MS_SIM_MULTIPLIER,  /* a backoff multiplier: [1, MS_BACKOFF_MAX_MULTIPLIER] */
  MS_SIM_VALUE_KINDS
} ms_sim_value;

/*
 * ms_sim_value_check: whether v is an accepted value of its kind.
 *   kind  an ms_sim_value
 *   name  the value in the message: "hold", "scenario duration"
 *   v     in the kind's unit (above)
 * MS_OK, or MS_EINVAL with "name = v unit is outside range":
 * "hold = -1 s is outside [0, 604800]", "servers = 2.5 is not a whole
 * number"; MS_EINVAL for a kind that is not one.
 */
int ms_sim_value_check(ms_sim_value kind, const char *name, double v,
                       ms_error *err);

/*
 * ms_scenario_check: validate a scenario against a failure model (a
 * SERVERS trigger must give servers for the erlang model and capacity for
 * the capacity model).  MS_OK or MS_EINVAL naming the trigger and field.
 */
int ms_scenario_check(const ms_scenario *sc, const ms_failure_model *m,
                      ms_error *err);

/*
 * ms_scenario_offered_load: lambda(t), req/s, >= 0, for a valid scenario
 * at time t (s, any finite value).  No checks.
 */
double ms_scenario_offered_load(const ms_scenario *sc, double t);

/*
 * ms_scenario_mean_offered_load: the mean of lambda over [t0, t1], req/s,
 * exact (lambda is piecewise linear), for a valid scenario and t0 < t1;
 * lambda(t0) when t0 == t1.  Times are taken within +-1e300 s (beyond,
 * lambda is the base load), so the result is finite for any t0, t1,
 * infinite or NaN included.  No other checks.
 */
double ms_scenario_mean_offered_load(const ms_scenario *sc, double t0,
                                     double t1);

/*
 * ms_scenario_pool: the failure model in force at time t: *out = *base
 * with servers (erlang) or capacity (capacity model) replaced by the last
 * SERVERS trigger active at t.  A valid scenario; no checks.
 */
void ms_scenario_pool(const ms_scenario *sc, const ms_failure_model *base,
                      double t, ms_failure_model *out);

/* The time the last trigger ends (start + rise + hold + fall), s, whatever
 * its kind (spike, ramp, drop or pool change: until then the scenario is
 * not back at its baseline); 0 when there is none. */
double ms_scenario_trigger_end(const ms_scenario *sc);

/* ------------------------------------------------------------------ */
/* Configuration, samples, summary                                     */
/* ------------------------------------------------------------------ */

typedef struct {
  ms_service_params service; /* model and retry policy (tiers == 1) */
  ms_backoff backoff;
  /* Retry budget, when service.policy.has_budget: a client sends a retry
   * only while the retries it sent in the last budget_window seconds stay
   * at most a share b of everything it sent (retries <= b/(1-b) first
   * attempts), as Finagle's RetryBudget does over its TTL window.  Over
   * any interval the retries are then at most b/(1-b) times the first
   * attempts of the interval and of one window before it: a storm that
   * follows a quiet spell spends the saved allowance at once (a burst), and
   * the cap holds over windows, not per second.  s, finite, > 0; default
   * 10 (Finagle's default TTL). */
  double budget_window;
  /* Token bucket, when service.policy.has_token: the bucket holds at most
   * token_capacity tokens and starts full; a retry takes one token and is
   * refused when less than one is left; each successful attempt adds
   * token_ratio tokens, so retries <= capacity + ratio x successes over any
   * interval (the AWS SDKs' retry quota; not gRFC A6's throttling).  Tokens,
   * finite, >= 1; default 100 (the AWS SDK quota of 500 at 5 per retry). */
  double token_capacity;
  ms_scenario scenario;
  double sample_interval; /* output window, s, finite, > 0 */
  /* Fluid: bin width, s, finite, > 0, <= sample_interval, with at most
   * MS_SIM_MAX_BINS bins in the run; 0 picks the default: T/20 (erlang,
   * T > 0), else a twentieth of the service time, else sample_interval/10
   * (capacity model), shrunk to divide sample_interval. */
  double dt;
  bool queue_memory; /* fluid: carry the queue between bins */
  uint64_t seed;     /* DES: random seed; equal seeds give equal runs */
  /* DES: the service time distribution (default exponential), with the
   * mean 1/mu and the cv of service.model (service_time_cv, 1 when absent);
   * ms_sim_des refuses a distribution that cannot have that cv
   * (ms_service_dist_check).  The fluid engine has no service times: it
   * takes the model's wait tail, the M/G/c approximation for a cv. */
  ms_service_dist service_dist;
  /* Relative band around an equilibrium inside which the run counts as
   * settled there (summary), finite, in (0, 1); default 0.02. */
  double settle_tolerance;
} ms_sim_config;

/* The most bins of a fluid run, and the most sample windows of any run
 * (ms_sim_config_check: MS_ELIMIT). */
#define MS_SIM_MAX_BINS 100000000L

/* Failure ratio of a window at or below which goodput has returned: most
 * attempts succeed (ms_sim_summary.storm_ended_at). */
#define MS_SIM_GOODPUT_SHARE 0.5

/*
 * ms_sim_config_init: defaults around a service: no backoff, budget window
 * 10 s, 100 tokens, empty scenario of 60 s at offered load 0, samples of
 * 1 s, default dt, memoryless fluid, seed 1, settle tolerance 0.02.
 */
void ms_sim_config_init(ms_sim_config *c, const ms_service_params *service);

/*
 * ms_sim_config_check: validate everything the engines need (service,
 * tiers == 1, backoff, scenario, windows).  MS_OK or MS_EINVAL naming the
 * field; MS_ELIMIT for more than MS_SIM_MAX_BINS sample windows.  Both
 * engines call it first.
 */
int ms_sim_config_check(const ms_sim_config *c, ms_error *err);

/*
 * One output window [time - width, time).  Rates are per second averaged
 * over the window.  Each attempt is counted when it is sent; its outcome
 * when it is known (fluid: in the attempt's own bin; DES: when the client
 * times out, or when service completes).
 */
typedef struct {
  double time;            /* end of the window, s */
  double width;           /* s */
  double nominal_offered; /* mean lambda(t) of the scenario, req/s */
  double offered;         /* first attempts sent, req/s */
  double attempts;        /* first attempts + retries sent, attempts/s */
  double retries;         /* retries sent, /s */
  double failures;        /* failed attempts, /s */
  double goodput;         /* successful attempts, /s */
  double given_up;        /* requests that failed for good, /s (last retry
                             failed, or a retry was refused) */
  double refused;         /* retries refused by budget, bucket or policy, /s */
  double backlog;         /* attempts waiting for a server at the end of the
                             window, abandoned ones included: DES the
                             count, queue-memory fluid the mean, memoryless
                             fluid 0 (it has no queue) */
  long servers;           /* pool at the end of the window (erlang), else 0 */
  double capacity;        /* saturation load then: c mu or C, /s */
  /* What the servers did, as collectd would read it from the service
   * (the calibration inputs busy_servers, completion_rate and latency of
   * service.h), measured by the DES only: has_service is false for the
   * fluid engine, whose busy servers and completions would be the
   * model's own c mu rho and so say nothing the parameters do not. */
  bool has_service;
  double busy_servers;    /* time-average of the busy servers over the
                             window, servers, >= 0 */
  double completion_rate; /* attempts whose service completed, /s
                             (abandoned and failed ones included) */
  bool has_latency;       /* some service completed in the window */
  double latency;         /* mean service time of those attempts, s */
  double failure_ratio;   /* failures / (failures + goodput), 0 if none */
  double amplification;   /* attempts / offered, 1 if no offered load */
  /* The plugin's verdict on this window (ms_analyze with the window's
   * offered load, its attempt rate, failure ratio and, where the engine
   * has a queue, backlog as observations, and the previous window's state
   * and storm flag for hysteresis), against the pool at the window's end.
   * storm is the verdict's flag (ms_analysis.storm, doc/design.md §1.7): up
   * while the attempts fail beyond the healthy level, also in a stable
   * state when the previous window was a storm.  A pool of 0 servers is
   * overloaded and in storm, with tipping and recovery load 0. */
  ms_state state;
  int storm;
  double tipping_load;  /* req/s */
  double recovery_load; /* req/s */
  /* The stable equilibria at nominal_offered: healthy (lowest) when
   * nominal_offered <= tipping_load, collapsed (highest) when
   * nominal_offered >= recovery_load; attempts/s. */
  bool has_healthy, has_collapsed;
  double healthy_load, collapsed_load;
} ms_sim_sample;

/*
 * A sink receives every window in time order.  Returning non-zero stops the
 * run: the engine returns MS_OK with summary.stopped set.
 */
typedef int (*ms_sim_sink)(void *ctx, const ms_sim_sample *sample);

typedef struct {
  double duration; /* s simulated */
  long samples;    /* windows produced */
  bool stopped;    /* the sink stopped the run */
  double requests; /* first attempts sent */
  double attempts; /* all attempts sent */
  double retries, failures, successes, given_up, refused; /* counts */
  double peak_attempts; /* highest window attempt rate, /s */
  /* Attempts per request over the run, attempts / requests (1 without
   * requests): each request sends at most r + 1 attempts, so this is at
   * most r + 1 (the policy's maximum, one tier).  A window's own
   * attempts / offered (ms_sim_sample.amplification) is no such bound:
   * after the load falls, the retries of earlier requests are divided by
   * the fewer first attempts of the window. */
  double amplification;
  double peak_backlog;        /* largest backlog at a window's end */
  double storm_time;          /* s of windows in storm by the verdict */
  double first_storm_at;      /* end of the first storm window, s; -1 none */
  double trigger_end;         /* ms_scenario_trigger_end */
  double storm_after_trigger; /* s in storm at or after trigger_end */
  /* A storm, for the summary, is a run of windows from one the plugin
   * judges in storm until goodput returns: it goes on through the windows
   * that follow while most attempts fail (failure ratio above
   * MS_SIM_GOODPUT_SHARE: a queue left behind still draining, the plugin's
   * verdict already out of storm).  recovered: the last window is out of
   * such a storm; storm_ended_at: the end of its last window, s, where
   * goodput returned (-1 if there was no storm or the run ended in one);
   * verdict_ended_at: the end of the last window the plugin judged in
   * storm, when the verdict left it (-1 likewise); draining_time: s of
   * windows in the storm after the verdict had left it. */
  bool recovered;
  double storm_ended_at;
  double verdict_ended_at;
  double draining_time;
  /* Where the run settled: the last window's attempt rate is within
   * settle_tolerance of the healthy (or collapsed) equilibrium (healthy:
   * and out of storm, goodput back), and since
   * when (end of the last window outside that band, s; 0 if always in;
   * -1 if the last window is near neither). */
  bool settled_healthy, settled_collapsed;
  double settled_at;
  ms_state final_state;
  bool final_storm; /* the plugin's storm flag on the last window (not the
                       summary's storm, which lasts until goodput returns) */
  double final_offered, final_attempts, final_failure_ratio; /* last window */
  double events; /* DES: events processed; fluid: bins */
} ms_sim_summary;

/* ------------------------------------------------------------------ */
/* The engines                                                         */
/* ------------------------------------------------------------------ */

typedef enum {
  MS_ENGINE_FLUID = 0,
  MS_ENGINE_DES = 1,
} ms_sim_engine;

/* "fluid", "des"; "unknown" otherwise. */
const char *ms_sim_engine_name(ms_sim_engine e);

/*
 * ms_sim_fluid: the fluid simulation of one scenario (doc/design.md §6).
 * Time runs in bins of width c->dt; a bin's attempts are its first
 * attempts (lambda at the bin's middle, times dt) and the retries the
 * schedule holds for it, less what the budget, bucket or named policy
 * refuses.  They fail with p(x) of the pool in force (memoryless), or,
 * with queue_memory, from a queue carried between bins (erlang model
 * only): its mean number in system drains by the pointwise stationary
 * fluid flow approximation; of it, the stationary M/M/c queue at the
 * bin's attempt rate is the random part an attempt meets, and the rest a
 * FIFO backlog it waits out through the pools of the bins to come (an
 * attempt sent during a stall waits for the servers to come back), so it
 * fails when that wait plus the random part passes T (doc/design.md §6);
 * with timeout_covers response, when that wait plus the random part plus
 * a service time passes T: the service fitted to its mean and
 * service_time_cv as a shift and up to two exponential phases, the
 * random part's rate scaled by 2 / (1 + cv^2) (ms_service_fit_of, as
 * ms_ln_response_tail), so a steady state gives the model's p(x).  A
 * timeout range (timeout_spread w > 0) is averaged over T uniform on
 * [T, T + w], in p and in when a timeout's retry leaves.
 * Failures come back as retries after the time to notice them plus the
 * backoff, spread exactly over the bins the delay reaches, never earlier
 * than the next bin.  Memoryless, a pool of 0 fails every attempt.
 * Deterministic.
 *   c        a configuration (ms_sim_config_check)
 *   sink     called once per window, or NULL; ctx is passed to it
 *   summary  out, or NULL
 * Cost: O(bins x r x the delay kernels' support).
 * Errors: MS_EINVAL (configuration; queue memory with the capacity model;
 * a queue_limit), MS_ELIMIT (more than
 * MS_SIM_MAX_BINS bins, or a retry landing more than
 * 2^22 bins after its attempt: raise dt), MS_ENOMEM, MS_ENOCONV.
 * Source: D. Tipper and M. K. Sundareshan, IEEE JSAC 8(9), 1990; W.-P.
 * Wang, D. Tipper and S. Banerjee, IEEE INFOCOM 1996.
 */
int ms_sim_fluid(const ms_sim_config *c, ms_sim_sink sink, void *ctx,
                 ms_sim_summary *summary, ms_error *err);

/*
 * ms_sim_fluid_supports: whether the fluid engine models m: every valid
 * model without a queue limit (it has no finite queue).  The one gate
 * that ms_sim_fluid, tolerance (model/tolerance.c, whose auto engine then
 * takes the DES) and the plugin's stall_tolerance (service/tracker.c) ask
 * before running the engine.
 *   m    a valid model
 * Errors: MS_EINVAL, with the reason, for a queue limit.
 */
int ms_sim_fluid_supports(const ms_failure_model *m, ms_error *err);

/*
 * ms_sim_des: the discrete-event simulation of one scenario (doc/design.md
 * §6).  Poisson first attempts of rate lambda(t); one FIFO queue in front
 * of c servers, exponential service of rate mu or c->service_dist (M/G/c);
 * a client abandons an attempt whose service has not started T s after it
 * was sent (with timeout_covers response: whose service has not ended),
 * and the server still serves it; a served attempt fails with
 * the base failure.  A failed request is retried after its backoff, at
 * most r times, subject to the budget, the bucket or the named policy run
 * as its stack runs it (doc/design.md §6).  When a SERVERS trigger shrinks
 * the pool, servers finish their attempt and take no new one.  Equal
 * seeds and configurations give equal runs on every IEEE platform.
 * Nothing is allocated per event.
 * Arguments, output and errors as ms_sim_fluid (erlang model only;
 * MS_EINVAL also for a service_dist that cannot have the model's cv;
 * MS_ELIMIT beyond 2^31 requests in flight at once).
 * Source: P. A. W. Lewis and G. S. Shedler, Naval Res. Logist. Q. 26, 1979
 * (thinning); D. Blackman and S. Vigna, ACM TOMS 47(4), 2021
 * (xoshiro256**).
 */
int ms_sim_des(const ms_sim_config *c, ms_sim_sink sink, void *ctx,
               ms_sim_summary *summary, ms_error *err);

/* Largest peak memory of one run, by ms_sim_memory_estimate, that
 * `metastable` starts: 1 GiB (the one home of this limit; the man page's
 * LIMITS section quotes it). */
#define MS_SIM_MAX_MEMORY 1073741824.0

/*
 * ms_sim_memory_estimate: the peak memory of one run of engine with c,
 * bytes, from the configuration alone, so that a run that cannot fit is
 * refused before it allocates.  MS_SIM_MEMORY_BASE plus the engine's
 * arrays by Little's law (the formula: doc/design.md §6, "Memory").  For
 * the DES it bounds a storm, where every attempt times out: a measured
 * peak lies within [1/4, 1] of it (tests/check_sim.c).
 *   c      must pass ms_sim_config_check
 *   bytes  out: finite (DBL_MAX where the count overflows)
 * Errors: MS_EINVAL (another engine, a dt that does not divide the
 * windows).
 */
int ms_sim_memory_estimate(ms_sim_engine engine, const ms_sim_config *c,
                           double *bytes, ms_error *err);

/* The fixed part of ms_sim_memory_estimate, bytes (16 MiB). */
#define MS_SIM_MEMORY_BASE 16777216.0

/* ms_sim_run: ms_sim_fluid or ms_sim_des; MS_EINVAL for another engine. */
int ms_sim_run(ms_sim_engine engine, const ms_sim_config *c, ms_sim_sink sink,
               void *ctx, ms_sim_summary *summary, ms_error *err);

/*
 * ms_sim_latch_threshold: the shortest hold of trigger number `trigger`
 * that leaves the run in a storm at its end, by bisection on the hold.
 *   engine, c   as ms_sim_run (the DES with c->seed: common random
 *               numbers for every probe)
 *   trigger     index into c->scenario.triggers
 *   lo, hi      s, 0 <= lo < hi: a hold of lo must end out of storm and
 *               one of hi in a storm (both are run to check)
 *   rel_tol     stop when hi - lo <= rel_tol x hi, in (0, 1)
 *   threshold   out: the midpoint of the final bracket, s
 * The outcome is assumed monotone in the hold (it is for the fluid engine
 * in the cases of tests/check_sim.c; a DES outcome is a random variable).
 * The run length stays c->scenario.duration: leave time after hi to
 * settle.  Errors: MS_EINVAL (arguments; lo latches or hi recovers), and
 * those of the engine.
 */
int ms_sim_latch_threshold(ms_sim_engine engine, const ms_sim_config *c,
                           int trigger, double lo, double hi, double rel_tol,
                           double *threshold, ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
