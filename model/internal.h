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

/* The offsets in ms_report of the outputs of kind MS_OUTPUT_NUMBER (the
 * computed doubles, which ms_analyze checks are finite), and their count
 * (outputs.c). */
/* The storm flag, recovering, shed_load, drain_time and reporting of a
 * report whose state and equilibria ms_analyze has set (model/verdict.c,
 * doc/design.md §1.7). */
void ms_verdict(const ms_landscape *ls, const ms_observation *o, ms_report *r);
/* Which basin of the band the service is in, from the observations, else
 * the previous state (model/verdict.c, doc/design.md §1.4).  eq, n: the
 * equilibria at o->offered_load. */
bool ms_collapsed_basin(const ms_landscape *ls, const ms_equilibrium *eq, int n,
                        const ms_observation *o);

extern const size_t ms_number_output_offsets[];
extern const int ms_number_outputs;

/* Erlang B and the terms needed by derivatives, for 0 < a < c. */
typedef struct {
  double ln_b; /* ln B(c, a) */
  double b;    /* B(c, a), may underflow to 0 */
  double ln_c; /* ln C(c, a) */
} ms_erlang_terms;

/* No argument checks: c in [1, MS_MAX_SERVERS], 0 < a < c. */
void ms_erlang_terms_unchecked(long c, double a, ms_erlang_terms *t);

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
 * policy that does not depend on the load, p in [0, 1]; timeout_share: the
 * share of failures that are timeouts, [0, 1] (the AWS quota's cost; its
 * change with p is left out of dA). */
void ms_tier_amplification(const ms_retry_policy *pol, int r, double p,
                           double timeout_share, double *A, double *dA);

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
