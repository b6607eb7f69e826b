/* Helpers shared by the model's translation units; not installed. */
#ifndef METASTABLE_MODEL_INTERNAL_H
#define METASTABLE_MODEL_INTERNAL_H

#include "metastable.h"

/* Write a formatted message into err (if not NULL) and return status. */
int ms_fail(ms_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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

/* A_tier(p) and d A_tier/dp for a valid policy, p in [0, 1]. */
void ms_tier_amplification(const ms_retry_policy *pol, double p, double *A,
                           double *dA);

/* x_cap: C for the capacity model, c mu for the erlang model. */
double ms_saturation_load(const ms_failure_model *m);

/* The sign of d lambda/dx at x >= 0 as ms_landscape_build's elasticity
 * bounds decide it without evaluating Erlang B: 1 rising, 0 falling, -1
 * undecided (always -1 for the capacity model).  For tests. */
int ms_landscape_sign_bound(const ms_service_params *s, double x);

#endif
