/* SPDX-License-Identifier: MIT */
/*
 * The storm hazard of a finite pool: the mean time until a storm starts
 * by itself at a constant offered load below the tipping load
 * (doc/design.md §1.12).  Conventions: base.h.
 */
#ifndef METASTABLE_HAZARD_H
#define METASTABLE_HAZARD_H

#include "loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest time to a storm reported, s: "never" (below the recovery
 * load the pool has no storm to fall into; far below the tipping load the
 * time passes any horizon).  Finite, as base.h wants every result. */
#define MS_TIME_TO_STORM_NEVER 1e300

/* The most states of the chain one call walks (about c + 2 c mu T). */
#define MS_HAZARD_MAX_STATES 10000000L

/*
 * ms_time_to_storm: the mean first-passage time, s, from an empty pool to
 * the collapsed basin at a constant Poisson offered load of
 * offered_load req/s (doc/design.md §1.12).
 *
 * The method: a birth-death chain over n, the attempts in the M/M/c
 * system (waiting, served, and abandoned ones still waiting, which the
 * servers serve anyway).  Deaths at min(n, c) mu.  Births at
 * lambda A(p_n): p_n = 1 - (1 - base)(1 - q_n) is the failure
 * probability of an attempt that arrives to find n in the system,
 * q_n = P(Erlang(n - c + 1, c mu) > T) = P(Poisson(c mu T) <= n - c) for
 * n >= c and 0 below when the timeout covers the wait; with the timeout
 * on the response the service's exponential tail convolved with that wait
 * (e^(-mu T) below c).  The retries a failure calls for come T later:
 * the birth at n takes q at n - v T, where the most likely path, moving
 * at v states/s, was T earlier: below the barrier the time reverse of the
 * relaxation, v = d_n - b_n; past it the relaxation under the delayed
 * births, v = b(n - v T) - d_n (the small-delay expansion of Guillouzic,
 * L'Heureux and Longtin, Phys. Rev. E 59(4), 1999, taken on that path).
 * A storm
 * has started when the chain first reaches the state N at which half the
 * arrivals time out (q_N >= 1/2, n - c about c mu T): past the chain's
 * unstable point, which lies where lambda A(p_n) = c mu.  The mean
 * first-passage time 0 -> N is the standard birth-death sum
 *   sum_{k<N} (sum_{j<=k} pi_j) / (b_k pi_k),
 *   pi_0 = 1, pi_{k+1} = pi_k b_k / d_{k+1}
 * (Karlin and Taylor, A First Course in Stochastic Processes, 2nd ed.,
 * 1975, ch. 4 sec. 7; Gardiner, Handbook of Stochastic Methods, 1985,
 * sec. 7.4, the discrete analogue of the first-passage integral), summed
 * in logarithms.  The chain over the queue and retry orbit follows
 * metafor (mpi-sws-rse), which keeps the orbit as a second dimension;
 * here the orbit is folded into the birth rate.
 *
 *   s             an erlang service, exponential service (no
 *                 service_time_cv other than 1), no timeout spread, no
 *                 queue limit, the timeout on the wait or the response,
 *                 one tier or more of a policy that depends on p alone
 *   offered_load  lambda, req/s, finite, >= 0
 *   seconds       out: in (0, MS_TIME_TO_STORM_NEVER]; NEVER when the
 *                 pool has no collapsed equilibrium at this load
 *                 (lambda A(1) <= c mu: below the recovery load) or the
 *                 time passes it
 * The storm hazard within a horizon H is 1 - exp(-H / seconds).
 * Cost: O(N), N about c + c mu T + 1 states, a few Poisson cdfs each
 * and a root past the barrier (0.12-0.18 ms at 10 servers, 14-89
 * ms at 10^4: doc/design.md §1.12); no allocation.
 * Errors: MS_EINVAL for an invalid service or load, or a service outside
 * the domain above; MS_ELIMIT when N passes MS_HAZARD_MAX_STATES.
 */
int ms_time_to_storm(const ms_service_params *s, double offered_load,
                     double *seconds, ms_error *err);

/* A walk of the chain that can stop and go on (ms_time_to_storm_walk):
 * zero it to begin. */
typedef struct {
  long n;                   /* the state to go on from; 0: from the start */
  double ln_pi, ln_s, ln_t; /* the sums so far (doc/design.md §1.12) */
  bool done;                /* the last call gave the time */
} ms_storm_walk;

/* How often, in states, a walk asks whether to stop. */
#define MS_HAZARD_WALK_STRIDE 1024

/*
 * ms_time_to_storm_walk: ms_time_to_storm that can stop part way and go
 * on later, for a caller that must hold a deadline (the plugin's read
 * cycle).  Every MS_HAZARD_WALK_STRIDE states it calls stop(ctx) when
 * stop is not NULL; non-zero stops the walk with w->done false, *seconds
 * untouched, and the state kept in *w.  Called again with the same s,
 * offered_load and *w it goes on, and gives the same bits as one call of
 * ms_time_to_storm (tests/check_hazard.c).
 *   w        in/out: zeroed to begin; w->done true once *seconds is set
 *   others   as ms_time_to_storm
 * Errors: as ms_time_to_storm.
 */
int ms_time_to_storm_walk(const ms_service_params *s, double offered_load,
                          ms_storm_walk *w, int (*stop)(void *ctx), void *ctx,
                          double *seconds, ms_error *err);

/*
 * ms_storm_hazard: the probability of a storm within horizon seconds when
 * storms start as a Poisson process of mean interval time_to_storm (the
 * first passage of a rare escape is close to exponential: Gardiner 1985,
 * sec. 9.2): 1 - exp(-horizon / time_to_storm), as -expm1.
 *   time_to_storm  s, from ms_time_to_storm, > 0, <= MS_TIME_TO_STORM_NEVER
 *   horizon        s, finite, >= 0
 *   hazard         out: in [0, 1]
 * Errors: MS_EINVAL outside the domain.
 */
int ms_storm_hazard(double time_to_storm, double horizon, double *hazard,
                    ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
