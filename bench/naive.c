/* SPDX-License-Identifier: MIT */
/* The naive baseline of the benchmarks (naive.h). */
#include "naive.h"

#include <math.h>
#include <stdlib.h>

#define GRID_PER_CAPACITY 1000 /* points per c mu */
#define GRID_POINTS 1250       /* up to 1.25 c mu */
#define REL_TOL 1e-12

double naive_erlang_b(long c, double a) {
  double b = 1.0;
  for (long k = 1; k <= c; k++)
    b = a * b / ((double)k + a * b);
  return b;
}

double naive_ln_wait_tail(long c, double mu, double x, double T) {
  double cmu = (double)c * mu;
  if (x >= cmu)
    return 0.0;
  double a = x / mu, b = naive_erlang_b(c, a);
  double erlang_c = (double)c * b / ((double)c - a * (1.0 - b));
  return log(erlang_c) - (cmu - x) * T;
}

double naive_offered_load_at(const naive_service *s, double x) {
  double cmu = (double)s->servers * s->mu;
  double q = 1.0;
  if (x <= 0.0)
    q = 0.0;
  else if (x < cmu) {
    double a = x / s->mu, b = naive_erlang_b(s->servers, a);
    double c = (double)s->servers;
    double erlang_c = c * b / (c - a * (1.0 - b));
    q = erlang_c * exp(-(cmu - x) * s->timeout);
  }
  double p = 1.0 - (1.0 - s->base) * (1.0 - q);
  double A = 1.0, pk = 1.0;
  for (int i = 0; i < s->retries; i++) {
    pk *= p;
    A += pk;
  }
  return x / A;
}

/* Golden-section search for the maximum (sign +1) or minimum (-1) of
 * lambda on [lo, hi]; returns its x, *lam the value there. */
static double golden(const naive_service *s, double lo, double hi, int sign,
                     double *lam, long *evals) {
  const double g = 0.5 * (sqrt(5.0) - 1.0);
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = sign * naive_offered_load_at(s, x1);
  double f2 = sign * naive_offered_load_at(s, x2);
  *evals += 2;
  while (hi - lo > REL_TOL * hi) {
    if (f1 >= f2) {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - g * (hi - lo);
      f1 = sign * naive_offered_load_at(s, x1);
    } else {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + g * (hi - lo);
      f2 = sign * naive_offered_load_at(s, x2);
    }
    ++*evals;
  }
  double x = f1 >= f2 ? x1 : x2;
  *lam = sign * fmax(f1, f2);
  return x;
}

/* Bisection of lambda(x) = target on [lo, hi], a sign change. */
static double bisect(const naive_service *s, double lo, double flo, double hi,
                     double target, long *evals) {
  while (hi - lo > REL_TOL * hi) {
    double mid = 0.5 * (lo + hi);
    double f = naive_offered_load_at(s, mid) - target;
    ++*evals;
    if ((f < 0) == (flo < 0)) {
      lo = mid;
      flo = f;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

int naive_analyze(const naive_service *s, double lambda, naive_result *out) {
  double cmu = (double)s->servers * s->mu;
  /* grid plus room for the refined extrema */
  double x[GRID_POINTS + 1 + 16], lam[GRID_POINTS + 1 + 16];
  long evals = 0;
  int n = 0;
  x[n] = 0.0;
  lam[n++] = 0.0;
  for (int i = 1; i <= GRID_POINTS; i++) {
    x[n] = cmu * i / GRID_PER_CAPACITY;
    lam[n] = naive_offered_load_at(s, x[n]);
    n++;
  }
  evals += GRID_POINTS;
  /* sampled extrema, refined */
  double ex[16], el[16];
  int ne = 0;
  for (int i = 1; i + 1 < n; i++) {
    int is_max = lam[i] > lam[i - 1] && lam[i] >= lam[i + 1];
    int is_min = lam[i] < lam[i - 1] && lam[i] <= lam[i + 1];
    if (!is_max && !is_min)
      continue;
    if (ne == 16)
      return -1;
    ex[ne] = golden(s, x[i - 1], x[i + 1], is_max ? 1 : -1, &el[ne], &evals);
    ne++;
  }
  out->evaluations = 0;
  if (ne >= 2) {
    out->tipping_load = el[0];
    out->recovery_load = el[1];
  } else {
    out->tipping_load = out->recovery_load = naive_offered_load_at(s, cmu);
    evals++;
  }
  /* merge the refined extrema into the grid, then bisect sign changes */
  for (int j = 0; j < ne; j++) {
    int i = n;
    while (i > 0 && x[i - 1] > ex[j]) {
      x[i] = x[i - 1];
      lam[i] = lam[i - 1];
      i--;
    }
    x[i] = ex[j];
    lam[i] = el[j];
    n++;
  }
  int nr = 0;
  for (int i = 1; i < n; i++) {
    double f0 = lam[i - 1] - lambda, f1 = lam[i] - lambda;
    if ((f0 < 0 && f1 >= 0) || (f0 > 0 && f1 <= 0)) {
      if (nr == 8)
        return -1;
      out->x[nr++] =
          f1 == 0.0 ? x[i] : bisect(s, x[i - 1], f0, x[i], lambda, &evals);
    }
  }
  if (lam[n - 1] < lambda) {
    double hi = 2.0 * (s->retries + 1) * lambda;
    if (nr == 8)
      return -1;
    out->x[nr++] = bisect(s, x[n - 1], lam[n - 1] - lambda, hi, lambda, &evals);
  }
  out->equilibria = nr;
  out->state = lambda > out->tipping_load    ? 3
               : lambda < out->recovery_load ? 0
                                             : 1;
  out->evaluations = evals;
  return 0;
}
