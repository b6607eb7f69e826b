/* SPDX-License-Identifier: MIT */
/*
 * Landscape and state: the bifurcation diagram of a service (its
 * equilibria, tipping and recovery loads), its state at an offered load,
 * and the verdict from what is observed (doc/design.md §1.3-§1.5, §1.7).
 * Conventions: base.h.
 */
#ifndef METASTABLE_LANDSCAPE_H
#define METASTABLE_LANDSCAPE_H

#include "loop.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_MAX_EXTREMA 8
#define MS_MAX_EQUILIBRIA (MS_MAX_EXTREMA + 1)

/*
 * The bifurcation diagram of one service: lambda(x) cut into monotone
 * pieces.  It depends only on the service's parameters, never on the
 * offered load, so it is built once and reused until a parameter changes.
 */
typedef struct {
  ms_service_params params;
  double saturation_load;         /* x_cap: C or c mu, attempts/s */
  bool has_fold;                  /* lambda(x) has an interior local maximum */
  double tipping_load;            /* lambda_tip, req/s (doc/design.md §1.3) */
  double recovery_load;           /* lambda_rec, req/s, <= tipping_load */
  double tipping_effective_load;  /* x at the tipping point, attempts/s */
  double recovery_effective_load; /* x at the recovery point, attempts/s */
  double healthy_ceiling;         /* the most failing the healthy branch
                                     gives: p at the tipping point, the base
                                     failure without a fold (§1.7) */
  /* Breakpoints x_0 = 0 < x_1 < ... < x_n, the local extrema of lambda(x),
   * and lambda at each; lambda(x) is monotone between consecutive
   * breakpoints and increasing beyond x_n (to infinity). */
  int n_breaks;
  double break_x[MS_MAX_EXTREMA + 1];
  double break_lambda[MS_MAX_EXTREMA + 1];
} ms_landscape;

/*
 * ms_landscape_build: the bifurcation diagram of service s.
 *   s    valid service parameters
 *   out  the landscape; tipping_load and recovery_load always set (without
 *        a fold both are lambda(x_cap), doc/design.md §1.3)
 * Method: the sign of d lambda / dx in closed form on a grid that resolves
 * the wait tail near saturation, each sign change bracketed to full
 * precision by the ITP method (I. F. D. Oliveira and R. H. C. Takahashi,
 * ACM TOMS 47(1), 2020), kinks included.  Accuracy: the loads within
 * 4e-15 relative of 50-digit references (tests/check_landscape.c; measured
 * figures in doc/design.md §5).
 * Errors: MS_EINVAL for invalid parameters; MS_ELIMIT for more than
 * MS_MAX_EXTREMA extrema (never seen); MS_ENOCONV when lambda(x) does not
 * rise at the grid's ends (parameters at the far limits of their ranges).
 */
int ms_landscape_build(const ms_service_params *s, ms_landscape *out,
                       ms_error *err);

typedef struct {
  double effective_load;      /* x, attempts/s */
  double failure_probability; /* p(x) */
  double amplification;       /* A_total(p(x)) = x / lambda */
  bool stable;                /* lambda(x) increasing at x */
} ms_equilibrium;

/*
 * ms_equilibria: every equilibrium x = lambda A(p(x)) at offered load
 * lambda, in ascending order of x.
 *   ls      a landscape from ms_landscape_build
 *   lambda  offered load, req/s, finite, >= 0
 *   eq      out: array of MS_MAX_EQUILIBRIA entries
 *   n       out: how many, >= 1; it changes exactly where lambda crosses a
 *           breakpoint's value; a tangency is reported once, as unstable
 * Method: safeguarded Newton in each monotone piece, to a few ulps.
 * Errors: MS_EINVAL, MS_ENOCONV.
 */
int ms_equilibria(const ms_landscape *ls, double lambda, ms_equilibrium *eq,
                  int *n, ms_error *err);

typedef enum {
  MS_STATE_STABLE = 0,     /* lambda < lambda_rec */
  MS_STATE_VULNERABLE = 1, /* bistable band, healthy basin */
  MS_STATE_METASTABLE = 2, /* bistable band, collapsed basin: storm */
  MS_STATE_OVERLOADED = 3, /* lambda > lambda_tip: storm */
} ms_state;

/* "stable", "vulnerable", "metastable", "overloaded"; "unknown" otherwise. */
const char *ms_state_name(ms_state s);
/* 1 for metastable and overloaded, else 0. */
int ms_state_storm(ms_state s);

/* What is known about a service this interval, besides its parameters. */
typedef struct {
  double offered_load;        /* lambda, req/s, finite, >= 0 (required) */
  bool has_observed_attempts; /* x_obs known */
  double observed_attempts;   /* attempts/s reaching the dependency */
  bool has_observed_failure;  /* p_obs known */
  double observed_failure;    /* failed attempts / attempts, [0, 1] */
  bool has_previous;          /* a state from the previous interval */
  ms_state previous;          /* that state: its side of the recovery and
                                 tipping loads holds while the offered load
                                 is within the noise of the boundary */
  bool previous_storm;        /* that interval's storm flag (has_previous);
                                 with observations, an overloaded previous
                                 interval is the collapsed basin only if
                                 this is set */
  double interval;            /* s the observed rates were measured over,
                                 finite, >= 0; 0: unknown, taken as 1 s */
  bool has_queue_length;      /* the backlog is known */
  double queue_length;        /* requests waiting for a server, >= 0 */
} ms_observation;

/*
 * What the model says of one service at one interval: ms_analyze's result.
 * The service layer's report (service/outputs.h) carries it with what is
 * learned across intervals.  Every double is finite.
 */
typedef struct {
  double offered_load;        /* req/s, as observed */
  double model_load;          /* req/s the model is read at: the offered
                                 load, or the boundary of the state it is
                                 within the noise of while the state holds
                                 (doc/design.md §1.4); the values below
                                 through utilization, the equilibria, the
                                 shed load and the drain time are at it */
  double effective_load;      /* attempts/s, equilibrium of current basin */
  double self_inflicted_load; /* effective - model load, attempts/s */
  double amplification;       /* effective / model load (A(p) at 0) */
  double failure_probability; /* p at that equilibrium */
  double utilization;         /* effective / saturation_load */
  double tipping_load;        /* req/s */
  double recovery_load;       /* req/s */
  double tipping_distance;    /* tipping - offered, req/s */
  double tipping_headroom;    /* (tipping - offered) / tipping */
  int equilibria;             /* number of equilibria at the model load */
  ms_state state;
  int storm;                        /* 0 or 1 (doc/design.md §1.7) */
  bool has_observed_effective_load; /* the observation was given */
  double observed_effective_load;   /* attempts/s, as observed */
  bool has_observed_failure_ratio;  /* the observation was given */
  double observed_failure_ratio;    /* failed / attempts, as observed */
  double shed_load;                 /* req/s to shed in a storm, else 0 */
  int recovering;                   /* 0 or 1: storm in state 0 or 1 */
  bool has_drain_time;              /* queue given and it drains */
  double drain_time;                /* s to serve the queue at lambda */
  bool collapsed_basin;             /* the operating point is the high branch */
  bool certified; /* capacity model: effective_load is the midpoint
                     of an exact enclosure (ms_analysis_certify,
                     exact.h; never by ms_analyze) */
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
} ms_analysis;

/*
 * ms_analyze: the state and every value of one service at one interval.
 *   ls   the service's landscape
 *   obs  offered load and what was observed.  The offered load crosses
 *        the recovery and the tipping load only beyond the noise of
 *        counting it over the interval (ms_beyond_noise); within it the
 *        previous state's side holds and the model is read at the
 *        boundary (model_load).  The basin is decided by the observed
 *        attempt rate, else the observed failure ratio, against the
 *        unstable middle equilibrium, with the same hysteresis; else by
 *        the previous state; a cold start is healthy (doc/design.md §1.4)
 *   out  the analysis; storm, recovering and shed_load from the
 *        observations and the previous storm flag when observed, from the
 *        state alone otherwise (doc/design.md §1.7)
 * Allocates nothing, bounded cost (at most one ms_equilibria): the
 * per-interval path.  The capacity
 * model's double root: a few ulps where it is well conditioned, 3e-14
 * relative just past the tipping load (measured against the certified
 * root, doc/design.md §1.6; ms_analysis_certify, exact.h).
 * Errors: MS_EINVAL (also for a load whose values overflow a double),
 * MS_ENOCONV.
 */
int ms_analyze(const ms_landscape *ls, const ms_observation *obs,
               ms_analysis *out, ms_error *err);

/* The z of the noise bound that decides whether an observed rate exceeds
 * the model's healthy level (doc/design.md §1.7). */
#define MS_EVIDENCE_Z 3.0

/*
 * ms_beyond_noise: whether a rate observed over tau seconds exceeds a
 * reference rate by more than the Poisson noise of counting it:
 * obs > ref + z sqrt(ref / tau) + z^2 / tau, z = MS_EVIDENCE_Z.
 *   obs, ref  rates, 1/s, finite, >= 0 (a negative obs is not beyond)
 *   tau       s; <= 0 or NaN: no time, no evidence (false)
 * Never overflows.  Source: the normal bound on a Poisson count, the z^2
 * term as in Wilson's score interval (E. B. Wilson, JASA 22, 1927).
 */
bool ms_beyond_noise(double obs, double ref, double tau);

/*
 * ms_timeout_horizon: x_cap T = c mu T requests, the backlog the pool
 * serves within one timeout: an attempt that joins a longer one times out
 * (doc/design.md §1.7).  +infinity for the capacity model.  m: valid.
 */
double ms_timeout_horizon(const ms_failure_model *m);

/*
 * ms_drain_time: seconds until a backlog of `queue` requests is served at
 * offered load lambda (fluid; doc/design.md §1.7).  Beyond the timeout
 * horizon H = x_cap T every attempt fails (A(1) attempts per request),
 * within it only the base failure does:
 *   t = (queue - H)^+ / (x_cap - lambda A(1))
 *       + min(queue, H) / (x_cap - lambda A(base))
 *   s       valid service parameters
 *   lambda  req/s, finite, >= 0
 *   queue   requests, finite, >= 0
 *   t       out: s, >= 0; +infinity when the backlog does not drain (a
 *           denominator of a phase the backlog is in within 8 ulps of
 *           x_cap counts as 0: the recovery load x_cap / A(1) itself)
 * Errors: MS_EINVAL for invalid parameters or arguments.
 */
int ms_drain_time(const ms_service_params *s, double lambda, double queue,
                  double *t, ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
