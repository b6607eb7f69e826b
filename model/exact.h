/* SPDX-License-Identifier: MIT */
/*
 * Exact rational arithmetic for the capacity model (doc/design.md §1.6), with
 * GMP.
 *
 * With a capacity C every quantity of the loop is rational: p(L) =
 * base + (1 - base)(L - C)/L above C, A(p) a polynomial, the budget and
 * token caps rational functions.  So the fixed point x = lambda A(p(x)) can
 * be bracketed by exact fractions, and the map iterated without rounding
 * (doc/design.md §1.6, the lab).
 *
 * Unlike the rest of the model these functions allocate (GMP numbers).  A
 * function that returns an error leaves its mpq_t outputs unspecified but
 * initialised.
 */
#ifndef METASTABLE_EXACT_H
#define METASTABLE_EXACT_H

#include <gmp.h>

#include "metastable.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Most retries of the exact arithmetic.  A(p) = 1 + p + ... + p^r of a
 * rational p = n/d has a denominator of r times d's digits (to the power
 * of the tiers), so the cost of one evaluation of the map grows with r and
 * the tiers: the slowest exact run of the tests, `metastable lab` at 100
 * retries x 10 tiers and a load of 1e290, takes 1.5 s (doc/design.md
 * §1.6).  Beyond the limit ms_analysis_certify leaves the double root
 * uncertified and ms_exact_check refuses the service.
 */
#define MS_EXACT_MAX_RETRIES 100

/* The capacity model and an offered load, as exact rationals. */
typedef struct {
  mpq_t offered_load; /* lambda, req/s, >= 0 */
  mpq_t capacity;     /* C, req/s, > 0 */
  mpq_t base_failure; /* [0, 1) */
  int retries;        /* r, 0..MS_EXACT_MAX_RETRIES */
  int tiers;          /* k, 1..MS_MAX_TIERS */
  int has_budget;
  mpq_t retry_budget; /* b, [0, 1) */
  int has_token;
  mpq_t token_ratio; /* t, (0, 1] */
} ms_exact_capacity;

/* Initialise (all zero, one tier) / release the numbers of *e. */
void ms_exact_capacity_init(ms_exact_capacity *e);
void ms_exact_capacity_clear(ms_exact_capacity *e);

/*
 * ms_exact_capacity_set: take a capacity-model service and an offered load
 * given as doubles; every double is an exact binary fraction, so nothing is
 * rounded.  Errors: MS_EINVAL when s is not a valid capacity-model service or
 * lambda is not finite and >= 0.
 */
int ms_exact_capacity_set(ms_exact_capacity *e, const ms_service_params *s,
                          double lambda, ms_error *err);

/*
 * ms_exact_check: validate *e (ranges as in ms_exact_capacity).
 * Errors: MS_EINVAL naming the field.
 */
int ms_exact_check(const ms_exact_capacity *e, ms_error *err);

/*
 * ms_exact_parse: read a decimal ("0.95", "-1.5e-3", "12") or a fraction
 * ("19/20") into an exact rational: "0.95" is 19/20, not the nearest double.
 * Errors: MS_EINVAL for anything else, with the text in the message.
 */
int ms_exact_parse(mpq_t out, const char *text, ms_error *err);

/* ms_exact_map: out = lambda A(p(L)), the retry map of doc/design.md §1.3, for
 * L >= 0 exact.  out may alias L.  No errors for a valid *e. */
void ms_exact_map(const ms_exact_capacity *e, mpq_t out, const mpq_t L);

/* Sign of F(L) - L (+1 below a stable root, -1 above it, 0 at one). */
int ms_exact_sign(const ms_exact_capacity *e, const mpq_t L);

/*
 * ms_exact_enclose: shrink a bracket [lo, hi] (0 < lo <= hi, F - L of
 * opposite signs or zero at the ends) by bisection with exact midpoints
 * until hi - lo <= 2^-rel_bits lo.  Each probe evaluates the map afresh, so
 * denominators stay small.  Errors: MS_EINVAL when [lo, hi] is not a
 * bracket.
 */
int ms_exact_enclose(const ms_exact_capacity *e, mpq_t lo, mpq_t hi,
                     unsigned rel_bits, ms_error *err);

/*
 * ms_exact_fixed_point: the enclosure of doc/design.md §1.6: bracket [lambda,
 * lambda A(1)] (F is increasing and bounded by lambda A(1), so F - L >= 0 at
 * lambda and <= 0 at lambda A(1)), then ms_exact_enclose.  With one
 * equilibrium (every fixed-count single-tier policy) this is it; with
 * several it is one of them.  lambda must be > 0.
 * Errors: MS_EINVAL.
 */
int ms_exact_fixed_point(const ms_exact_capacity *e, mpq_t lo, mpq_t hi,
                         unsigned rel_bits, ms_error *err);

/*
 * ms_exact_certify: certify a double approximation x of an equilibrium of a
 * capacity-model service at offered load lambda: an exact enclosure
 * [lo, hi] of a root of F(L) = L near x, of relative width <= 2^-60, is
 * found by widening a bracket around x until F - L changes sign, then
 * bisecting; *lo and *hi are its ends rounded outward to doubles.
 * Errors: MS_EINVAL for invalid input, MS_ENOCONV when no sign change is
 * found within a factor 2 of x (x is a tangency, not a crossing).
 */
int ms_exact_certify(const ms_service_params *s, double lambda, double x,
                     double *lo, double *hi, ms_error *err);

/*
 * ms_analysis_certify: certify the operating point of a capacity-model report:
 * r->effective_load (the double root of ms_analyze, within 3e-14 relative
 * of the exact one) becomes the midpoint of its exact enclosure
 * (ms_exact_certify, relative width <= 2^-60), the self-inflicted load,
 * amplification and utilization follow it, and r->certified becomes true.
 *   ls  the landscape r was analysed with;  r  a report of ms_analyze
 * Allocates GMP numbers and its cost grows with the retries and tiers:
 * for the command line and the tests, never the per-interval path, which
 * reports the double root.
 * The root is the one at r->model_load, the load the model was read at.
 * Returns MS_OK, leaving a report of the erlang model, of model load 0 or
 * of more than MS_EXACT_MAX_RETRIES retries as it was (not certified);
 * MS_EINVAL for a NULL argument; MS_ENOCONV when no enclosure is found near the
 * root (a tangency), r unchanged.
 */
int ms_analysis_certify(const ms_landscape *ls, ms_analysis *r, ms_error *err);

/* Decimal digits of |z| (1 for 0), exactly. */
size_t ms_exact_digits(const mpz_t z);

/*
 * ms_exact_iterate: iterate L_0 = lambda, L_{n+1} = F(L_n) exactly.
 * For n = 0, 1, ... calls fn(user, n, L_n, num_digits, den_digits); stops
 * after max_steps steps, when fn returns non-zero, or when an iterate's
 * numerator or denominator has more than digit_limit digits: that iterate
 * is reported with value NULL (its digits only) and *limit_reached set.
 * *steps is the number of iterates reported.  Errors: MS_EINVAL.
 */
typedef int (*ms_exact_iter_fn)(void *user, int step, const mpq_t value,
                                size_t num_digits, size_t den_digits);
int ms_exact_iterate(const ms_exact_capacity *e, int max_steps,
                     size_t digit_limit, ms_exact_iter_fn fn, void *user,
                     int *steps, int *limit_reached, ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
