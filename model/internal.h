/* SPDX-License-Identifier: MIT */
/* Helpers shared by the model's translation units; not installed. */
#ifndef METASTABLE_MODEL_INTERNAL_H
#define METASTABLE_MODEL_INTERNAL_H

#include "metastable.h"

/* Write a formatted message into err (if not NULL) and return status. */
int ms_fail(ms_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The rows of MS_PARAMS (params.c). */
extern const ms_param_info ms_param_table[MS_PARAM_COUNT];

/* The accept test of ms_param_check for a valid id, inline for the model's
 * own checks on the per-interval path: the same table decides.  Every
 * bound is finite, so NaN and the infinities fail a comparison; a whole
 * parameter's value is in range, so the cast is exact. */
static inline bool ms_param_ok(ms_param id, double v) {
  const ms_param_info *p = &ms_param_table[id];
  if (!((p->bounds & MS_BOUND_LO_OPEN) ? v > p->lo : v >= p->lo) ||
      !((p->bounds & MS_BOUND_HI_OPEN) ? v < p->hi : v <= p->hi))
    return false;
  return !p->whole || v == (double)(long long)v;
}

/* ms_param_check without the call when the value is accepted. */
#define MS_PARAM_CHECK(id, v, err)                                             \
  (ms_param_ok((id), (v)) ? MS_OK : ms_param_check((id), (v), (err)))

/* The storm flag, recovering, shed_load and drain_time of an analysis
 * whose state and equilibria ms_analyze has set (model/verdict.c,
 * doc/design.md §1.7). */
void ms_verdict(const ms_landscape *ls, const ms_observation *o,
                ms_analysis *r);
/* Which side of the recovery and tipping loads the offered load is on,
 * with hysteresis: MS_STATE_STABLE, MS_STATE_VULNERABLE (the band, either
 * basin) or MS_STATE_OVERLOADED (model/verdict.c, doc/design.md §1.4). */
ms_state ms_load_side(const ms_landscape *ls, const ms_observation *o);
/* The load, req/s, the model is read at on that side: lambda clamped to
 * the side's boundaries. */
double ms_side_load(const ms_landscape *ls, ms_state side, double lambda);
/* Which basin of the band the service is in, from the observations, else
 * the previous state (model/verdict.c, doc/design.md §1.4).  eq, n: the
 * equilibria at lambda_m, the load the model is read at. */
bool ms_collapsed_basin(const ms_landscape *ls, const ms_equilibrium *eq, int n,
                        const ms_observation *o, double lambda_m);

/* Erlang B and the terms needed by derivatives, for 0 < a < c.  The logs
 * are double-doubles: ln_b + ln_b_lo is ln B to about 1e-16 absolute while
 * B is a normal double (doc/design.md §5), ln_b alone the nearest double. */
typedef struct {
  double ln_b;    /* ln B(c, a) */
  double ln_b_lo; /* the rest of ln B, |ln_b_lo| <= ulp(ln_b) / 2 */
  double b;       /* B(c, a), may underflow to 0 */
  double ln_c;    /* ln C(c, a) */
  double ln_c_lo; /* the rest of ln C */
} ms_erlang_terms;

/* No argument checks: c in [1, MS_MAX_SERVERS], 0 < a < c. */
void ms_erlang_terms_unchecked(long c, double a, ms_erlang_terms *t);

/* The service time fitted to its mean 1/mu and coefficient of variation
 * cv, for the response's tail (doc/design.md §1.1): a shift D, s, plus n
 * exponential phases (0 to 2) of weights w[] (summing to 1) and rates
 * r[], /s.  cv = 1: one phase of rate mu; 0 < cv < 1: D = (1 - cv) / mu
 * plus one phase of mean cv / mu; cv = 0 (or a phase rate beyond a
 * double): the constant D = 1/mu, n = 0; cv > 1: the two-phase
 * hyperexponential of balanced means (W. Whitt, Oper. Res. 30(1), 1982).
 * kappa = 2 / (1 + cv^2) scales the M/M/c wait's rate c mu - x (the
 * Allen-Cunneen approximation: A. O. Allen, Probability, Statistics and
 * Queueing Theory, 2nd ed., 1990, sec. 6.4).  mu > 0 finite, cv in [0,
 * MS_MAX_SERVICE_TIME_CV]; no checks, no errors.  Used by the model's
 * response tail (ms_response_terms_unchecked) and the fluid engine's
 * (model/sim_fluid.c), so that both fit the same service (model/erlang.c). */
typedef struct {
  double D;          /* shift, s */
  int n;             /* phases, 0 .. 2 */
  double w[2], r[2]; /* phase weights and rates, /s; unused ones 0 */
  double kappa;      /* the wait's rate factor, 1 at cv = 1 */
} ms_service_fit;

void ms_service_fit_of(double mu, double cv, ms_service_fit *f);

/* ln P(W + S > T) and x d/dx of it (ms_ln_response_tail), given a = x / mu
 * and gamma = c mu - x > 0 formed by the caller without cancellation; no
 * argument checks (model/erlang.c). */
void ms_response_terms_unchecked(long c, double mu, double x, double a,
                                 double gamma, double T, double cv,
                                 double *ln_q, double *xdlnq);

/* ln pmf(n; y) of a Poisson variable of mean y > 0, n >= 0 (Loader's
 * saddle-point form; model/erlang.c). */
double ms_ln_poisson_pmf(long n, double y);

/* The Poisson cdf F(n; y) = P(N <= n) = Q(n + 1, y), N of mean y > 0 finite,
 * n >= 0: *ln_cdf = ln F and *ln_ratio = ln(F / pmf(n; y)) >= 0, both with
 * their digits in either tail (model/erlang.c). */
void ms_poisson_cdf(long n, double y, double *ln_cdf, double *ln_ratio);

/* The Kronrod 15-point rule on [-1, 1] and its embedded 7-point Gauss
 * rule (QUADPACK's QK15; Piessens et al., QUADPACK, Springer 1983): the
 * nodes (the odd ones are Gauss's, the last 0), the Kronrod weights, and
 * the Gauss weights of nodes 1, 3, 5 and 7.  Defined in model/loop.c;
 * the timeout spread's averages (loop.c, retrial.c) use them. */
extern const double ms_qk15_x[8], ms_qk15_wk[8], ms_qk15_wg[4];

/* The M/M/c/K queue at arrival rate x (model/mmck.c, doc/design.md §1.9). */
typedef struct {
  double ln_block; /* ln P_{c+K}, the blocking probability */
  double ln_admit; /* ln(1 - P_{c+K}) */
  double ln_wait;  /* ln P(W > T | admitted); -DBL_MAX for K = 0 */
  long wait_terms; /* terms summed for the wait tail (0: closed form) */
} ms_mmck_terms;

/* No argument checks: c in [1, MS_MAX_SERVERS], K in [0,
 * MS_MAX_QUEUE_LIMIT], mu > 0, x / mu >= MS_MMCK_MIN_TRAFFIC, T >= 0 with
 * c mu T <= MS_MAX_TIMEOUT_COMPLETIONS, all finite. */
void ms_mmck_terms_unchecked(long c, long K, double mu, double x, double T,
                             ms_mmck_terms *t);
/* The same with ln_wait = ln P(W + S > T | admitted), the response's tail
 * (timeout_covers response); wait_terms counts the terms summed. */
void ms_mmck_response_terms_unchecked(long c, long K, double mu, double x,
                                      double T, ms_mmck_terms *t);

/* The failure probability of one attempt and its slope, and the part of it
 * that is retried (doc/design.md §1.1, §1.9): p_retry = p and xdp_retry =
 * xdp unless the model's rejections are final, then p_retry = p - P_block
 * (a rejection ends the request). */
typedef struct {
  double p, xdp;             /* p(x) and x p'(x) */
  double p_retry, xdp_retry; /* the retried failures and x d/dx of them */
  double q, q_retry;         /* 1 - p and 1 - p_retry, each formed without
                                subtracting from 1 (their digits kept where
                                p is near 1: a loss system far beyond
                                saturation) */
} ms_failure_eval;

/* Evaluate the failure model at x >= 0 (no checks: a valid model). */
void ms_failure_eval_at(const ms_failure_model *m, double x,
                        ms_failure_eval *f);

/* The retry feedback loop evaluated at one effective load x (no checks). */
typedef struct {
  double p;      /* failure probability p(x) */
  double ln_amp; /* ln A_total(p(x)) */
  double lambda; /* lambda(x) = x / A_total(p(x)) */
  double elast;  /* E(x) = x p'(x) d ln A_total / dp: lambda increases at x
                    iff E < 1, since d ln lambda / d ln x = 1 - E */
} ms_point;

/* Evaluate the loop at x >= 0 for valid parameters. */
void ms_point_eval(const ms_service_params *s, double x, ms_point *pt);

/* A_tier(p) and d A_tier/dp of one tier of r retries under a valid
 * policy that does not depend on the load, p in [0, 1], q = 1 - p as the
 * caller knows it best (the AWS quota's refunds count successes, q, whose
 * digits 1 - p loses near p = 1); timeout_share: the share of failures
 * that are timeouts, [0, 1] (the AWS quota's cost; its change with p is
 * left out of dA). */
void ms_tier_amplification(const ms_retry_policy *pol, int r, double p,
                           double q, double timeout_share, double *A,
                           double *dA);

/* E[min(R, T)], s: the time an attempt holds its client's slot at effective
 * load x >= 0 in a valid erlang model (loop.c). */
double ms_hold_time(const ms_failure_model *m, double x);

/* bd0(x, M) = x ln(x/M) + M - x >= 0 for x, M > 0, without cancellation
 * near x = M: the deviance term of C. Loader, "Fast and accurate
 * computation of binomial probabilities" (2000); model/erlang.c. */
double ms_bd0(double x, double M);

/* The sign of d lambda/dx at x >= 0 as ms_landscape_build's elasticity
 * bounds decide it without evaluating Erlang B: 1 rising, 0 falling, -1
 * undecided (always -1 for the capacity model).  For tests. */
int ms_landscape_sign_bound(const ms_service_params *s, double x);

#endif
