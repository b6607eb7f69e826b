/* SPDX-License-Identifier: MIT */
/*
 * Exact (GMP) evaluation of the capacity model's retry map, bisection
 * enclosures of its fixed points, and the exact iteration of doc/design.md
 * §1.6.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exact.h"
#include "internal.h"

void ms_exact_capacity_init(ms_exact_capacity *e) {
  mpq_inits(e->offered_load, e->capacity, e->base_failure, e->retry_budget,
            e->token_ratio, NULL);
  e->retries = 0;
  e->tiers = 1;
  e->has_budget = 0;
  e->has_token = 0;
}

void ms_exact_capacity_clear(ms_exact_capacity *e) {
  mpq_clears(e->offered_load, e->capacity, e->base_failure, e->retry_budget,
             e->token_ratio, NULL);
}

int ms_exact_check(const ms_exact_capacity *e, ms_error *err) {
  if (mpq_sgn(e->offered_load) < 0)
    return ms_fail(err, MS_EINVAL, "offered load must be >= 0");
  if (mpq_sgn(e->capacity) <= 0)
    return ms_fail(err, MS_EINVAL, "capacity must be > 0");
  if (mpq_sgn(e->base_failure) < 0 || mpq_cmp_ui(e->base_failure, 1, 1) >= 0)
    return ms_fail(err, MS_EINVAL, "base failure must be in [0, 1)");
  if (e->retries < 0 || e->retries > MS_EXACT_MAX_RETRIES)
    return ms_fail(err, MS_EINVAL,
                   "retries = %d is outside [0, %d] (exact arithmetic)",
                   e->retries, MS_EXACT_MAX_RETRIES);
  if (e->tiers < 1 || e->tiers > MS_MAX_TIERS)
    return ms_fail(err, MS_EINVAL, "tiers = %d is outside [1, %d]", e->tiers,
                   MS_MAX_TIERS);
  if (e->has_budget &&
      (mpq_sgn(e->retry_budget) < 0 || mpq_cmp_ui(e->retry_budget, 1, 1) >= 0))
    return ms_fail(err, MS_EINVAL, "retry budget must be in [0, 1)");
  if (e->has_token &&
      (mpq_sgn(e->token_ratio) <= 0 || mpq_cmp_ui(e->token_ratio, 1, 1) > 0))
    return ms_fail(err, MS_EINVAL, "token ratio must be in (0, 1]");
  return MS_OK;
}

int ms_exact_capacity_set(ms_exact_capacity *e, const ms_service_params *s,
                          double lambda, ms_error *err) {
  int st = ms_service_params_check(s, err);
  if (st != MS_OK)
    return st;
  if (s->model.kind != MS_MODEL_CAPACITY)
    return ms_fail(err, MS_EINVAL, "exact arithmetic needs the capacity model");
  if (s->policy.kind != MS_POLICY_COUNT || s->policy.nested != 0 ||
      s->policy.has_tier_retries)
    return ms_fail(err, MS_EINVAL,
                   "exact arithmetic covers a fixed retry count (with a "
                   "budget or a token bucket) in independent tiers");
  if (!isfinite(lambda) || lambda < 0.0)
    return ms_fail(err, MS_EINVAL, "offered load %g/s must be finite and >= 0",
                   lambda);
  mpq_set_d(e->offered_load, lambda);
  mpq_set_d(e->capacity, s->model.capacity);
  mpq_set_d(e->base_failure, s->model.base_failure);
  e->retries = s->policy.retries;
  e->tiers = s->policy.tiers;
  e->has_budget = s->policy.has_budget;
  mpq_set_d(e->retry_budget,
            s->policy.has_budget ? s->policy.retry_budget : 0.0);
  e->has_token = s->policy.has_token;
  mpq_set_d(e->token_ratio, s->policy.has_token ? s->policy.token_ratio : 1.0);
  return MS_OK;
}

int ms_exact_parse(mpq_t out, const char *text, ms_error *err) {
  const char *s = text;
  if (s == NULL || *s == '\0')
    return ms_fail(err, MS_EINVAL, "empty number");
  if (strchr(s, '/') != NULL) {
    /* p/q: GMP's own parser, then reject 0 denominators and junk */
    for (const char *t = s; *t; t++)
      if (!(isdigit((unsigned char)*t) || *t == '/' || *t == '-' || *t == '+'))
        return ms_fail(err, MS_EINVAL, "'%s' is not a fraction p/q", text);
    if (mpq_set_str(out, *s == '+' ? s + 1 : s, 10) != 0 ||
        mpz_sgn(mpq_denref(out)) == 0)
      return ms_fail(err, MS_EINVAL, "'%s' is not a fraction p/q", text);
    mpq_canonicalize(out);
    return MS_OK;
  }
  int neg = 0;
  if (*s == '+' || *s == '-')
    neg = *s++ == '-';
  mpz_t num, den;
  mpz_inits(num, den, NULL);
  mpz_set_ui(den, 1);
  int digits = 0;
  for (; isdigit((unsigned char)*s); s++, digits++) {
    mpz_mul_ui(num, num, 10);
    mpz_add_ui(num, num, (unsigned long)(*s - '0'));
  }
  if (*s == '.') {
    for (s++; isdigit((unsigned char)*s); s++, digits++) {
      mpz_mul_ui(num, num, 10);
      mpz_add_ui(num, num, (unsigned long)(*s - '0'));
      mpz_mul_ui(den, den, 10);
    }
  }
  long ex = 0;
  int ok = digits > 0;
  if (ok && (*s == 'e' || *s == 'E')) {
    char *end;
    ex = strtol(s + 1, &end, 10);
    ok = end != s + 1 && labs(ex) <= 100000;
    s = end;
  }
  ok = ok && *s == '\0';
  if (ok) {
    mpz_t p;
    mpz_init(p);
    mpz_ui_pow_ui(p, 10, (unsigned long)labs(ex));
    if (ex > 0)
      mpz_mul(num, num, p);
    else
      mpz_mul(den, den, p);
    mpz_clear(p);
    if (neg)
      mpz_neg(num, num);
    mpq_set_num(out, num);
    mpq_set_den(out, den);
    mpq_canonicalize(out);
  }
  mpz_clears(num, den, NULL);
  if (!ok)
    return ms_fail(err, MS_EINVAL, "'%s' is not a decimal number", text);
  return MS_OK;
}

/* Scratch numbers for one evaluation of the map. */
typedef struct {
  mpq_t p, A, cap, t;
} scratch;

static void scratch_init(scratch *w) {
  mpq_inits(w->p, w->A, w->cap, w->t, NULL);
}
static void scratch_clear(scratch *w) {
  mpq_clears(w->p, w->A, w->cap, w->t, NULL);
}

static void map_with(const ms_exact_capacity *e, scratch *w, mpq_t out,
                     const mpq_t L) {
  /* p(L) = base below C, else 1 - (1 - base) C / L */
  if (mpq_cmp(L, e->capacity) <= 0) {
    mpq_set(w->p, e->base_failure);
  } else {
    mpq_set_ui(w->t, 1, 1);
    mpq_sub(w->t, w->t, e->base_failure);
    mpq_mul(w->t, w->t, e->capacity);
    mpq_div(w->t, w->t, L);
    mpq_set_ui(w->p, 1, 1);
    mpq_sub(w->p, w->p, w->t);
  }
  /* A = 1 + p (1 + p (...)) in integers, p = a / b in lowest terms:
   * N <- a N + b D, D <- b D, so A = N / b^r.  That is in lowest terms
   * already (N = a^r mod b, and gcd(a, b) = 1; 0 is 0/1), so no step
   * pays for the gcd that mpq arithmetic takes on every operation: with
   * fractions of hundreds of thousands of digits that made the bracket's
   * probes 13 times slower. */
  mpz_ptr num = mpq_numref(w->A), den = mpq_denref(w->A);
  mpz_set_ui(num, 1);
  mpz_set_ui(den, 1);
  for (int i = 0; i < e->retries; i++) {
    mpz_mul(mpq_numref(w->t), den, mpq_denref(w->p));
    mpz_mul(num, num, mpq_numref(w->p));
    mpz_add(num, num, mpq_numref(w->t));
    mpz_swap(den, mpq_numref(w->t));
  }
  if (e->has_budget) { /* 1 / (1 - b) */
    mpq_set_ui(w->cap, 1, 1);
    mpq_sub(w->cap, w->cap, e->retry_budget);
    mpq_inv(w->cap, w->cap);
    if (mpq_cmp(w->cap, w->A) < 0)
      mpq_set(w->A, w->cap);
  }
  if (e->has_token) { /* 1 / (1 - t (1 - p)) */
    mpq_set_ui(w->t, 1, 1);
    mpq_sub(w->t, w->t, w->p);
    mpq_mul(w->t, w->t, e->token_ratio);
    mpq_set_ui(w->cap, 1, 1);
    mpq_sub(w->cap, w->cap, w->t);
    if (mpq_sgn(w->cap) > 0) {
      mpq_inv(w->cap, w->cap);
      if (mpq_cmp(w->cap, w->A) < 0)
        mpq_set(w->A, w->cap);
    }
  }
  /* A^tiers: the powers of a fraction in lowest terms are too */
  mpz_pow_ui(mpq_numref(w->A), mpq_numref(w->A), (unsigned long)e->tiers);
  mpz_pow_ui(mpq_denref(w->A), mpq_denref(w->A), (unsigned long)e->tiers);
  mpq_mul(out, e->offered_load, w->A);
}

void ms_exact_map(const ms_exact_capacity *e, mpq_t out, const mpq_t L) {
  scratch w;
  scratch_init(&w);
  mpq_t r;
  mpq_init(r);
  map_with(e, &w, r, L);
  mpq_set(out, r);
  mpq_clear(r);
  scratch_clear(&w);
}

static int sign_with(const ms_exact_capacity *e, scratch *w, mpq_t tmp,
                     const mpq_t L) {
  map_with(e, w, tmp, L);
  return mpq_cmp(tmp, L) > 0 ? 1 : mpq_cmp(tmp, L) < 0 ? -1 : 0;
}

int ms_exact_sign(const ms_exact_capacity *e, const mpq_t L) {
  scratch w;
  scratch_init(&w);
  mpq_t tmp;
  mpq_init(tmp);
  int s = sign_with(e, &w, tmp, L);
  mpq_clear(tmp);
  scratch_clear(&w);
  return s;
}

/* hi - lo <= 2^-bits lo */
static int narrow_enough(mpq_t tmp, const mpq_t lo, const mpq_t hi,
                         unsigned bits) {
  mpq_sub(tmp, hi, lo);
  mpq_mul_2exp(tmp, tmp, bits);
  return mpq_cmp(tmp, lo) <= 0;
}

static int enclose_with(const ms_exact_capacity *e, scratch *w, mpq_t lo,
                        mpq_t hi, unsigned bits, ms_error *err) {
  mpq_t mid, tmp;
  mpq_inits(mid, tmp, NULL);
  int slo = sign_with(e, w, tmp, lo), shi = sign_with(e, w, tmp, hi);
  int st = MS_OK;
  if (mpq_sgn(lo) <= 0 || mpq_cmp(lo, hi) > 0 || slo * shi > 0) {
    st = ms_fail(err, MS_EINVAL,
                 "[lo, hi] is not a bracket of a fixed point (signs %d, %d)",
                 slo, shi);
  } else if (slo == 0) {
    mpq_set(hi, lo);
  } else if (shi == 0) {
    mpq_set(lo, hi);
  } else {
    while (!narrow_enough(tmp, lo, hi, bits)) {
      mpq_add(mid, lo, hi);
      mpq_div_2exp(mid, mid, 1);
      int sm = sign_with(e, w, tmp, mid);
      if (sm == 0) {
        mpq_set(lo, mid);
        mpq_set(hi, mid);
        break;
      }
      if (sm == slo)
        mpq_set(lo, mid);
      else
        mpq_set(hi, mid);
    }
  }
  mpq_clears(mid, tmp, NULL);
  return st;
}

int ms_exact_enclose(const ms_exact_capacity *e, mpq_t lo, mpq_t hi,
                     unsigned rel_bits, ms_error *err) {
  int st = ms_exact_check(e, err);
  if (st != MS_OK)
    return st;
  scratch w;
  scratch_init(&w);
  st = enclose_with(e, &w, lo, hi, rel_bits, err);
  scratch_clear(&w);
  return st;
}

int ms_exact_fixed_point(const ms_exact_capacity *e, mpq_t lo, mpq_t hi,
                         unsigned rel_bits, ms_error *err) {
  int st = ms_exact_check(e, err);
  if (st != MS_OK)
    return st;
  if (mpq_sgn(e->offered_load) <= 0)
    return ms_fail(err, MS_EINVAL, "offered load must be > 0");
  /* F(L) >= lambda since A >= 1, and F(L) <= lambda Amax^k with Amax =
   * min(r + 1, 1/(1 - b)) since the token cap only lowers A: so F - L is
   * >= 0 at lambda and <= 0 at lambda Amax^k. */
  mpq_t amax, cap;
  mpq_inits(amax, cap, NULL);
  mpq_set_ui(amax, (unsigned long)e->retries + 1, 1);
  if (e->has_budget) {
    mpq_set_ui(cap, 1, 1);
    mpq_sub(cap, cap, e->retry_budget);
    mpq_inv(cap, cap);
    if (mpq_cmp(cap, amax) < 0)
      mpq_set(amax, cap);
  }
  mpq_set(hi, e->offered_load);
  for (int i = 0; i < e->tiers; i++)
    mpq_mul(hi, hi, amax);
  mpq_set(lo, e->offered_load);
  mpq_clears(amax, cap, NULL);
  return ms_exact_enclose(e, lo, hi, rel_bits, err);
}

int ms_exact_certify(const ms_service_params *s, double lambda, double x,
                     double *lo_out, double *hi_out, ms_error *err) {
  if (!isfinite(x) || !(x > 0.0))
    return ms_fail(err, MS_EINVAL, "approximation x = %g must be > 0", x);
  ms_exact_capacity e;
  ms_exact_capacity_init(&e);
  int st = ms_exact_capacity_set(&e, s, lambda, err);
  if (st == MS_OK && !(lambda > 0.0))
    st = ms_fail(err, MS_EINVAL, "offered load must be > 0");
  if (st != MS_OK) {
    ms_exact_capacity_clear(&e);
    return st;
  }
  scratch w;
  scratch_init(&w);
  mpq_t xq, d, lo, hi, tmp;
  mpq_inits(xq, d, lo, hi, tmp, NULL);
  mpq_set_d(xq, x);
  st = MS_ENOCONV;
  /* half-widths 2^-50 x, 2^-42 x, ... up to x/2 */
  for (unsigned k = 50; k >= 2; k = k > 10 ? k - 8 : k - 1) {
    mpq_div_2exp(d, xq, k);
    mpq_sub(lo, xq, d);
    mpq_add(hi, xq, d);
    int slo = sign_with(&e, &w, tmp, lo), shi = sign_with(&e, &w, tmp, hi);
    if (slo * shi <= 0) {
      st = enclose_with(&e, &w, lo, hi, 60, err);
      break;
    }
  }
  if (st == MS_OK) {
    /* round outward: the doubles enclose the exact ends */
    double dl = mpq_get_d(lo), dh = mpq_get_d(hi);
    mpq_set_d(tmp, dl);
    if (mpq_cmp(tmp, lo) > 0)
      dl = nextafter(dl, 0.0);
    mpq_set_d(tmp, dh);
    if (mpq_cmp(tmp, hi) < 0)
      dh = nextafter(dh, INFINITY);
    *lo_out = dl;
    *hi_out = dh;
  } else if (st == MS_ENOCONV) {
    ms_fail(err, MS_ENOCONV,
            "no sign change of F(L) - L within a factor 2 of x = %.17g", x);
  }
  mpq_clears(xq, d, lo, hi, tmp, NULL);
  scratch_clear(&w);
  ms_exact_capacity_clear(&e);
  return st;
}

int ms_analysis_certify(const ms_landscape *ls, ms_analysis *r, ms_error *err) {
  if (ls == NULL || r == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_analysis_certify");
  /* the root is the model's, at the load it is read at (ms_analyze) */
  double lambda = r->model_load;
  if (ls->params.model.kind != MS_MODEL_CAPACITY || !(lambda > 0.0) ||
      ls->params.policy.retries > MS_EXACT_MAX_RETRIES)
    return MS_OK;
  double lo, hi;
  int st =
      ms_exact_certify(&ls->params, lambda, r->effective_load, &lo, &hi, err);
  if (st != MS_OK)
    return st;
  double x = lo + 0.5 * (hi - lo);
  r->effective_load = x;
  r->self_inflicted_load = x - lambda;
  r->amplification = x / lambda;
  r->utilization = x / ls->saturation_load;
  r->certified = true;
  return MS_OK;
}

size_t ms_exact_digits(const mpz_t z) {
  size_t d = mpz_sizeinbase(z, 10);
  if (d > 1) {
    mpz_t p;
    mpz_init(p);
    mpz_ui_pow_ui(p, 10, d - 1);
    if (mpz_cmpabs(z, p) < 0)
      d--;
    mpz_clear(p);
  }
  return d;
}

int ms_exact_iterate(const ms_exact_capacity *e, int max_steps,
                     size_t digit_limit, ms_exact_iter_fn fn, void *user,
                     int *steps, int *limit_reached, ms_error *err) {
  int st = ms_exact_check(e, err);
  if (st != MS_OK)
    return st;
  if (max_steps < 1 || fn == NULL)
    return ms_fail(err, MS_EINVAL, "need max_steps >= 1 and a callback");
  scratch w;
  scratch_init(&w);
  mpq_t L, next;
  mpq_inits(L, next, NULL);
  mpq_set(L, e->offered_load);
  *steps = 0;
  *limit_reached = 0;
  for (int n = 0; n < max_steps; n++) {
    size_t nd = ms_exact_digits(mpq_numref(L));
    size_t dd = ms_exact_digits(mpq_denref(L));
    (*steps)++;
    if (nd > digit_limit || dd > digit_limit) {
      *limit_reached = 1;
      fn(user, n, NULL, nd, dd);
      break;
    }
    if (fn(user, n, L, nd, dd) != 0)
      break;
    if (n + 1 < max_steps) {
      map_with(e, &w, next, L);
      mpq_swap(L, next);
    }
  }
  mpq_clears(L, next, NULL);
  scratch_clear(&w);
  return MS_OK;
}
