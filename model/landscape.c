/* SPDX-License-Identifier: MIT */
/*
 * The bifurcation diagram lambda(x) = x / A(p(x)) of one service, its
 * equilibria at a given offered load, and the state of the service
 * (doc/design.md §1.3-1.5).
 *
 * Everything that does not depend on the offered load (the extrema of
 * lambda(x): tipping and recovery points) is computed once by
 * ms_landscape_build; ms_equilibria then only solves lambda(x) = lambda in
 * the monotone pieces whose range contains lambda, so a root can neither be
 * missed nor counted twice, and the count changes exactly at the extrema.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Grid: log-spaced distances to saturation plus a coarse uniform part. */
#define GRID_LOG 96
#define GRID_LIN 16
#define GRID_MAX (2 * GRID_LOG + GRID_LIN + 8)

/* Decimal orders of magnitude covered by the log-spaced part. */
#define ERLANG_GAP_DECADES 15.0  /* c mu - x from c mu down to 1e-15 c mu */
#define CAPACITY_LO_DECADES 12.0 /* x - C from 1e-12 C ... */
#define CAPACITY_HI_DECADES 15.0 /* ... up to 1e15 C */

/* Fill grid with increasing x > 0 that resolve lambda(x); returns count.
 * The log-spaced distances are powers of one ratio, formed by repeated
 * multiplication (relative error below 1e-13: the grid need not be exact,
 * only fine); the two parts are generated in increasing order and merged. */
static int build_grid(const ms_failure_model *m, double *grid) {
  int n = 0;
  double xcap = ms_saturation_load(m);
  if (m->kind == MS_MODEL_ERLANG) {
    /* x = xcap j / GRID_LIN (j = 1 .. GRID_LIN - 1) merged with
     * x = xcap (1 - 10^(-15 i / (GRID_LOG - 1))), i = 1 .. GRID_LOG - 1,
     * both increasing; then xcap itself */
    const double ratio = pow(10.0, -ERLANG_GAP_DECADES / (GRID_LOG - 1));
    int j = 1, i = 1;
    double lin = xcap / GRID_LIN, gap = ratio, lg = xcap * (1.0 - gap);
    while (j < GRID_LIN || i < GRID_LOG) {
      double next;
      if (i >= GRID_LOG || (j < GRID_LIN && lin <= lg)) {
        next = lin;
        if (++j < GRID_LIN)
          lin = xcap * j / GRID_LIN;
      } else {
        next = lg;
        if (++i < GRID_LOG) {
          gap *= ratio;
          lg = xcap * (1.0 - gap);
        }
      }
      if (n == 0 || next > grid[n - 1])
        grid[n++] = next;
    }
    if (xcap > grid[n - 1])
      grid[n++] = xcap;
    /* a queue limit gives the queue a steady state beyond c mu, where
     * blocking takes the excess load: that part as the capacity model's */
    if (!m->has_queue_limit)
      return n;
  } else {
    /* below C, lambda(x) = x / A(base) rises: one point suffices */
    grid[n++] = 0.5 * xcap;
    grid[n++] = xcap;
  }
  {
    const double ratio =
        pow(10.0, (CAPACITY_LO_DECADES + CAPACITY_HI_DECADES) / (GRID_LOG - 1));
    double over = pow(10.0, -CAPACITY_LO_DECADES);
    for (int i = 0; i < GRID_LOG; i++, over *= ratio) {
      double x = xcap * (1.0 + over);
      if (x > grid[n - 1])
        grid[n++] = x;
    }
  }
  return n;
}

/* Whether the policy of s has a cap that can take over from its fixed
 * retry count at a corner of A(p): a retry budget or token bucket on the
 * fixed count, the AWS quota, Finagle's budget by its share alone; on
 * independent tiers with one retry count (the same corner at every
 * tier).  gRPC's throttling (a smooth share) and the load-dependent
 * budgets (Finagle's min_per_second, Envoy's) have none here. */
static bool has_cap_corner(const ms_retry_policy *pol) {
  if (pol->nested != 0 || pol->has_tier_retries || pol->retries < 1)
    return false;
  switch (pol->kind) {
  case MS_POLICY_COUNT:
    return pol->has_budget || pol->has_token;
  case MS_POLICY_AWS:
    return true;
  case MS_POLICY_FINAGLE:
    return pol->finagle_min_per_second == 0.0;
  default:
    return false;
  }
}

/* Whether the cap binds at effective load x: the policy's amplification
 * is below that of the bare fixed count (bare) there. */
static bool cap_binds(const ms_service_params *s, const ms_service_params *bare,
                      double x) {
  ms_point a, b;
  ms_point_eval(s, x, &a);
  ms_point_eval(bare, x, &b);
  return a.ln_amp < b.ln_amp;
}

/*
 * Where a cap takes over from the fixed retry count (a retry budget, a
 * token bucket, the AWS quota, Finagle's share: doc/design.md §1.2),
 * lambda(x) has a corner: a minimum, with the maximum of a small fold just
 * below it.  Both can fall between two points of the grid (a 1 % budget on
 * 50 servers x 200 ms folds between 245.26 and 246.45 req/s, inside one
 * grid step), and a fold with no sign change at the grid's points is
 * missed.  So the grid gets two points around the corner, x* (1 -+ 1e-9),
 * x* found by bisection on x in [grid start, c mu]: the erlang model's
 * p_retry rises with x, the bare amplification with p, and each cap is
 * constant or falls with p (the AWS quota's refunds come from successes),
 * so the cap binds from x* on.  Writes 0 or 2 points to xk.
 */
static int cap_corner(const ms_service_params *s, double x_lo, double *xk) {
  if (s->model.kind != MS_MODEL_ERLANG || !has_cap_corner(&s->policy))
    return 0;
  ms_service_params bare = *s;
  bare.policy.kind = MS_POLICY_COUNT;
  bare.policy.has_budget = bare.policy.has_token = false;
  double x_hi = ms_saturation_load(&s->model);
  if (!(x_hi > x_lo) || !cap_binds(s, &bare, x_hi) || cap_binds(s, &bare, x_lo))
    return 0;
  double a = x_lo, b = x_hi;
  for (int i = 0; i < 200; i++) {
    double mid = a + 0.5 * (b - a);
    if (!(mid > a && mid < b))
      break;
    if (cap_binds(s, &bare, mid))
      b = mid;
    else
      a = mid;
  }
  xk[0] = b * (1.0 - 1e-9);
  xk[1] = b * (1.0 + 1e-9);
  return xk[0] > x_lo && xk[1] < x_hi ? 2 : 0;
}

/* Insert the points of xk into the increasing grid of n points (room for
 * them: GRID_MAX), keeping it strictly increasing; returns the new n. */
static int grid_insert(double *grid, int n, const double *xk, int k) {
  for (int j = 0; j < k; j++) {
    int i = 0;
    while (i < n && grid[i] < xk[j])
      i++;
    if (i < n && grid[i] == xk[j])
      continue;
    memmove(&grid[i + 1], &grid[i], (size_t)(n - i) * sizeof *grid);
    grid[i] = xk[j];
    n++;
  }
  return n;
}

static int rising(const ms_point *pt) { return pt->elast < 1.0; }

/*
 * Bounds on the elasticity E(x) of the erlang model that decide the sign of
 * d lambda/dx at most grid points without evaluating Erlang B.  With
 * a = x/mu < c, u = c mu - x, q = P(W > T) = C(c, a) e^(-u T) and
 * E = (1 - base) q (a dlnC/da + x T) k A'(p)/A(p)   (loop.c), T the
 * effective timeout (ms_effective_timeout: the same E for any T >= 0):
 *
 *   upper: C <= 1;  a dlnC/da = (c - a) + a (1 - B)/(c - a + a B)
 *          <= (c - a) + a/(c - a);  A'/A <= r (A' = sum i p^(i-1)
 *          <= r A), and a budget or token cap only lowers dA/dp; so
 *          E <= e^(-u T) ((c - a) + a/(c - a) + x T) k r.
 *   lower (fixed retry count r >= 1, no budget, no token bucket):
 *          C >= B >= Poisson pmf(c; a) = e^(-bd0(c, a) - stirlerr(c))
 *          / sqrt(2 pi c) with bd0(c, a) <= (c - a)^2 / a (ln(1+y) <= y)
 *          and stirlerr(c) <= 1/(12 c);  a dlnC/da >= c - a;
 *          A'/A >= 1/(r + 1) (A' >= 1, A <= r + 1); so
 *          E >= (1 - base) e^(-(c-a)^2/a - u T - 1/(12 c)) / sqrt(2 pi c)
 *               (x T + c - a) k / (r + 1).
 *
 * With a spread timeout (T uniform on [T_lo, T_hi]) E is the average of
 * the fixed-T terms q_T (a dlnC/da + x T) over T, so the upper bound takes
 * e^(-u T_lo) and x T_hi, the lower one e^(-u T_hi) and x T_lo; without a
 * spread both are T, the bounds above.
 *
 * An upper bound <= 1/2 proves lambda rising (E < 1), a lower bound >= 2
 * proves it falling.  The factor-of-two margins dwarf the rounding of both
 * the bounds and the evaluated E (relative error ~1e-13), so a grid point
 * decided by a bound has the sign its full evaluation would give: the scan
 * finds exactly the sign changes it would find evaluating every point.
 *
 * With the timeout on the response (exponential service), q = e^(-mu T) +
 * R, R = C mu g, g = integral_0^T e^(-u s) e^(-mu (T - s)) ds, and
 * x q' = R (a dlnC/da + x T h), h in (0, 1) the mean of s / T under g's
 * integrand, h >= 1/2 where u <= mu (ms_response_terms_unchecked).  The
 * integrand lies between e^(-max(u, mu) T) and e^(-min(u, mu) T), and
 * g <= e^(-min T) / |mu - u| too; so
 *   upper: E <= mu min(T, 1/|mu - u|) e^(-min(u, mu) T)
 *               ((c - a) + a/(c - a) + x T) k r,
 *   lower: E >= (1 - base) pmf(c; a) bound e^(-max(u, mu) T) mu T
 *               ((c - a) + [u <= mu] x T / 2) k / (r + 1),
 * the same tests with min(u, mu) T or max(u, mu) T for u T.  With a
 * spread, as for the wait: the upper bound takes T_hi in min(T, 1/|mu -
 * u|) and x T and T_lo in the exponential, the lower one T_lo in mu T and
 * x T and T_hi in the exponential.  With service_time_cv the response's fitted
 * phases have no bounds here: every point is evaluated.
 *
 * One server (c = 1) has Erlang C in closed form, C(1, a) = a and a
 * dlnC/da = 1 exactly (B(1, a) = a / (1 + a) in the formula above), where
 * C <= 1, (c - a) + a/(c - a) and the Poisson pmf are loose by 1/a, 1/(1 -
 * a) and e^((1 - a)^2 / a): they decided none of the 115 grid points of a
 * one-server pool (issue 38).  So for c = 1 the bounds take C = a and a
 * dlnC/da = 1: the wait's upper bound a e^(-u T) (1 + x T) k r, its lower
 * one (1 - base) a e^(-u T) (1 + x T) k / (r + 1); the response's with a
 * mu g for R the same way (1 + x T for the upper factor, 1 + [u <= mu] x T
 * / 2 for the lower one, and no pmf in the exponent).
 */
typedef struct {
  bool upper, lower, response, one_server;
  double c, mu, T, T_hi, cmu, ok, kr, k_over_r1, pmf_scale;
} elasticity_bounds;

static void elasticity_bounds_init(const ms_service_params *s,
                                   elasticity_bounds *b) {
  const ms_failure_model *m = &s->model;
  const ms_retry_policy *pol = &s->policy;
  memset(b, 0, sizeof *b);
  /* the bounds are proven for the unbounded queue only */
  if (m->kind != MS_MODEL_ERLANG || m->has_queue_limit)
    return;
  /* the bounds below are proved for one retry count r at k independent
   * tiers with the share budget or the token bucket */
  if (pol->kind != MS_POLICY_COUNT || pol->nested != 0 || pol->has_tier_retries)
    return;
  b->response = m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE;
  if (b->response && m->has_service_time_cv && m->service_time_cv != 1.0)
    return;
  b->upper = true;
  b->lower = pol->retries >= 1 && !pol->has_budget && !pol->has_token;
  b->c = (double)m->servers;
  b->one_server = m->servers == 1;
  b->mu = m->service_rate;
  /* the T of failure_and_slope; with a spread, the shortest and the
   * longest (E averages over T between them) */
  b->T = ms_effective_timeout(m);
  ms_failure_model longest = *m;
  longest.timeout = ms_timeout_longest(m);
  longest.timeout_spread = 0.0;
  b->T_hi = ms_effective_timeout(&longest);
  b->cmu = b->c * b->mu; /* as failure_and_slope computes it */
  b->ok = 1.0 - m->base_failure;
  b->kr = (double)pol->tiers * pol->retries;
  b->k_over_r1 = (double)pol->tiers / (pol->retries + 1.0);
  b->pmf_scale = exp(-1.0 / (12.0 * b->c)) / sqrt(2.0 * M_PI * b->c);
}

/* (1 + y/64)^64 <= e^y for y >= 0, and (1 - z/64)^64 <= e^-z for
 * 0 <= z <= 64: six squarings instead of an exponential. */
static double pow64(double v) {
  for (int i = 0; i < 6; i++)
    v *= v;
  return v;
}

/* Whether lower e^(-z) >= 2 follows from (1 - z/64)^64 <= e^(-z). */
static bool falls_by_polynomial(double lower, double z) {
  return z <= 64.0 && lower * pow64(1.0 - z / 64.0) >= 2.0;
}

/* 1: lambda surely rises at x; 0: surely falls; -1: evaluate.  Each bound
 * is tried with a polynomial bound on its exponential first (cheap, and it
 * decides nearly every grid point), the one that decided the previous grid
 * point (hint) first; the exponentials only when both polynomials fail. */
static int sign_from_bounds(const elasticity_bounds *b, double x, int hint) {
  if (!b->upper || !(x < b->cmu))
    return -1;
  double a = x / b->mu;
  if (!(a >= DBL_MIN) || !(a < b->c))
    return -1;
  double ca = b->c - a, u = b->cmu - x, uT = u * b->T;
  /* E <= upper e^(-u T), and E >= lower e^(-z) when b->lower; an
   * overflowing factor makes its bound say nothing */
  /* C times the bounds of a dlnC/da, and the pmf's exponent: C <= 1
   * and e^(-(c - a)^2 / a) pmf_scale <= C, or for one server C = a */
  double c_up = 1.0, dlnc_up = ca + a / ca, dlnc_lo = ca;
  double c_lo = b->pmf_scale, pmf_z = ca * ca / a;
  if (b->one_server)
    c_up = c_lo = a, dlnc_up = dlnc_lo = 1.0, pmf_z = 0.0;
  double upper = c_up * (dlnc_up + x * b->T_hi) * b->kr;
  double z = pmf_z + u * b->T_hi;
  double lower = b->ok * c_lo * (x * b->T + dlnc_lo) * b->k_over_r1;
  if (b->response) {
    double d = fabs(b->mu - u);
    double span = d * b->T_hi > 1.0 ? 1.0 / d : b->T_hi;
    upper = b->mu * span * c_up * (dlnc_up + x * b->T_hi) * b->kr;
    z = pmf_z + fmax(u, b->mu) * b->T_hi;
    lower = b->ok * c_lo * b->mu * b->T *
            (dlnc_lo + (u <= b->mu ? 0.5 * x * b->T : 0.0)) * b->k_over_r1;
    uT = fmin(u, b->mu) * b->T;
  }
  bool use_upper = upper < INFINITY;
  bool use_lower = b->lower && lower < INFINITY;
  if (use_lower && hint == 0 && falls_by_polynomial(lower, z))
    return 0;
  if (use_upper && upper <= 0.5 * pow64(1.0 + uT / 64.0))
    return 1;
  if (use_lower && hint != 0 && falls_by_polynomial(lower, z))
    return 0;
  if (use_upper && upper * exp(-uT) <= 0.5)
    return 1;
  if (use_lower && lower * exp(-z) >= 2.0)
    return 0;
  return -1;
}

int ms_landscape_sign_bound(const ms_service_params *s, double x) {
  elasticity_bounds b;
  elasticity_bounds_init(s, &b);
  int hint_rising = sign_from_bounds(&b, x, 1),
      hint_falling = sign_from_bounds(&b, x, 0);
  /* the hint only orders the tests: both orders must agree */
  return hint_rising == hint_falling ? hint_rising : -2;
}

/* A point of the scan: where, which way lambda goes, and the loop there
 * when it was evaluated (not when a bound decided the sign). */
typedef struct {
  double x;
  int rising;
  bool evaluated;
  ms_point pt;
} probe;

static void probe_eval(const ms_service_params *s, double x, probe *p) {
  p->x = x;
  ms_point_eval(s, x, &p->pt);
  p->rising = rising(&p->pt);
  p->evaluated = true;
}

/* The sign of d lambda/dx at x: from the bounds when they decide it, else
 * by evaluating the loop. */
static void probe_scan(const ms_service_params *s, const elasticity_bounds *b,
                       double x, int hint, probe *p) {
  int sign = sign_from_bounds(b, x, hint);
  if (sign < 0) {
    probe_eval(s, x, p);
  } else {
    p->x = x;
    p->rising = sign;
    p->evaluated = false;
  }
}

/* The function whose sign change marks an extremum: ln E(x), negative
 * where lambda rises.  E <= 0 (a token bucket lowering A as p grows) is
 * mapped below ln of the smallest double, keeping the sign. */
static double log_elasticity(const ms_point *pt) {
  return pt->elast > 1e-300 ? log(pt->elast) : -700.0;
}

/*
 * Locate the point in (lo, hi) where lambda(x) switches from rising to
 * falling or back.  The bracket always keeps one end on each side of the
 * switch, judged by the sign of d lambda/dx in closed form, so kinks
 * (x = C, x = c mu, a budget or token cap taking over) are found as surely
 * as smooth extrema; it ends when no double lies strictly inside.  The
 * probes follow the ITP method (I. F. D. Oliveira and R. H. C. Takahashi,
 * "An enhancement of the bisection method average performance preserving
 * minmax optimality", ACM TOMS 47(1), 2020) on ln E: regula falsi,
 * truncated and projected so that it never needs more than one probe more
 * than bisection, and converges superlinearly at a smooth extremum, where
 * ln E crosses 0 with a nonzero slope.  Returns the x of the extremum and
 * lambda there: for a maximum the larger, for a minimum the smaller of
 * lambda at the final bracket's ends.
 */
static void locate_extremum(const ms_service_params *s,
                            const elasticity_bounds *bounds, probe lo, probe hi,
                            double *x_out, double *lambda_out) {
  int lo_rising = lo.rising;
  double w0 = hi.x - lo.x;
  /* ITP needs the function at both ends; a bracket of a few ulps (the kink
   * at c mu) is bisected without them */
  double eps = fmax(DBL_EPSILON * fmax(fabs(lo.x), fabs(hi.x)), DBL_TRUE_MIN);
  bool itp = w0 > 64.0 * eps;
  if (itp && !lo.evaluated)
    probe_eval(s, lo.x, &lo);
  if (itp && !hi.evaluated)
    probe_eval(s, hi.x, &hi);
  double glo = itp ? log_elasticity(&lo.pt) : 0.0;
  double ghi = itp ? log_elasticity(&hi.pt) : 0.0;
  /* ITP parameters: kappa1 = 0.2 / w0, kappa2 = 2, n0 = 1; it stops when
   * the bracket is within 2 eps, bisection takes it to adjacent doubles */
  double kappa1 = 0.2 / w0;
  /* at most 2^2100 ulps (DBL_MAX over DBL_TRUE_MIN): the int holds it, for
   * subnormal brackets too (a saturation load of 1e-310) */
  int n_max = itp ? (int)fmin(ceil(log2(w0 / (2.0 * eps))), 2100.0) + 1 : 0;
  for (int j = 0; j < 400; j++) {
    double w = hi.x - lo.x;
    double mid = lo.x + 0.5 * w;
    if (!(mid > lo.x && mid < hi.x))
      break;
    double x = mid;
    if (itp && w > 2.0 * eps && glo != ghi) {
      /* interpolate (regula falsi), truncate toward the middle, project
       * onto the ball around it that keeps the minmax guarantee */
      double xf = (hi.x * glo - lo.x * ghi) / (glo - ghi);
      double sigma = mid >= xf ? 1.0 : -1.0;
      double delta = kappa1 * w * w;
      double xt = delta <= fabs(mid - xf) ? xf + sigma * delta : mid;
      double r = fmax(eps * ldexp(1.0, n_max - j) - 0.5 * w, 0.0);
      x = fabs(xt - mid) <= r ? xt : mid - sigma * r;
      if (!(x > lo.x && x < hi.x))
        x = mid;
    }
    probe pm;
    if (itp)
      probe_eval(s, x, &pm);
    else
      probe_scan(s, bounds, x, !lo_rising, &pm);
    if (pm.rising == lo_rising) {
      lo = pm;
      glo = itp ? log_elasticity(&pm.pt) : 0.0;
    } else {
      hi = pm;
      ghi = itp ? log_elasticity(&pm.pt) : 0.0;
    }
  }
  if (!lo.evaluated)
    probe_eval(s, lo.x, &lo);
  if (!hi.evaluated)
    probe_eval(s, hi.x, &hi);
  int is_max = lo_rising;
  if (is_max ? lo.pt.lambda >= hi.pt.lambda : lo.pt.lambda <= hi.pt.lambda) {
    *x_out = lo.x;
    *lambda_out = lo.pt.lambda;
  } else {
    *x_out = hi.x;
    *lambda_out = hi.pt.lambda;
  }
}

int ms_landscape_build(const ms_service_params *s, ms_landscape *out,
                       ms_error *err) {
  int st = ms_service_params_check(s, err);
  if (st != MS_OK)
    return st;
  ms_landscape ls;
  memset(&ls, 0, sizeof ls);
  ls.params = *s;
  ls.saturation_load = ms_saturation_load(&s->model);
  ls.n_breaks = 1;
  ls.break_x[0] = 0.0;
  ls.break_lambda[0] = 0.0;

  double grid[GRID_MAX];
  int n = build_grid(&s->model, grid);
  double corner[2];
  n = grid_insert(grid, n, corner, cap_corner(s, grid[0], corner));
  elasticity_bounds bounds;
  elasticity_bounds_init(s, &bounds);
  probe prev, cur;
  probe_scan(s, &bounds, grid[0], 1, &prev);
  if (!prev.rising)
    return ms_fail(err, MS_ENOCONV,
                   "parameters beyond what the analysis covers: the "
                   "offered load falls at the smallest effective load %g/s",
                   grid[0]);
  for (int i = 1; i < n; i++) {
    probe_scan(s, &bounds, grid[i], prev.rising, &cur);
    if (cur.rising != prev.rising) {
      if (ls.n_breaks > MS_MAX_EXTREMA)
        return ms_fail(err, MS_ELIMIT, "lambda(x) has more than %d extrema",
                       MS_MAX_EXTREMA);
      double xe, le;
      locate_extremum(s, &bounds, prev, cur, &xe, &le);
      ls.break_x[ls.n_breaks] = xe;
      ls.break_lambda[ls.n_breaks] = le;
      ls.n_breaks++;
      /* a flat pair (below) is dropped as soon as it is found, so that
       * rounding on a long flat stretch cannot exhaust MS_MAX_EXTREMA */
      int j = ls.n_breaks - 2;
      if (j >= 1 && fabs(ls.break_lambda[j] - le) <=
                        1e-12 * fmax(fabs(ls.break_lambda[j]), fabs(le)))
        ls.n_breaks -= 2;
    }
    prev = cur;
  }
  if (!prev.rising)
    return ms_fail(err, MS_ENOCONV,
                   "parameters beyond what the analysis covers: the "
                   "offered load still falls at the largest effective load "
                   "%g/s",
                   grid[n - 1]);

  /* A maximum and the minimum next to it at the same lambda, to 1e-12, are
   * rounding on a stretch where lambda(x) is flat to second order (the
   * capacity model just above C with base 0: lambda = C / (1 - p^(r+1))):
   * a fold no load could ever resolve.  Drop such pairs. */
  for (int i = 1; i + 1 < ls.n_breaks;) {
    double a = ls.break_lambda[i], b = ls.break_lambda[i + 1];
    if (fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b))) {
      memmove(&ls.break_x[i], &ls.break_x[i + 2],
              (size_t)(ls.n_breaks - i - 2) * sizeof ls.break_x[0]);
      memmove(&ls.break_lambda[i], &ls.break_lambda[i + 2],
              (size_t)(ls.n_breaks - i - 2) * sizeof ls.break_lambda[0]);
      ls.n_breaks -= 2;
    } else {
      i++;
    }
  }

  /* The first maximum is the tipping point, the next minimum recovery. */
  if (ls.n_breaks >= 3) {
    ls.has_fold = true;
    ls.tipping_effective_load = ls.break_x[1];
    ls.tipping_load = ls.break_lambda[1];
    ls.recovery_effective_load = ls.break_x[2];
    ls.recovery_load = ls.break_lambda[2];
  } else {
    ms_point pc;
    ms_point_eval(s, ls.saturation_load, &pc);
    ls.has_fold = false;
    ls.tipping_effective_load = ls.recovery_effective_load = ls.saturation_load;
    ls.tipping_load = ls.recovery_load = pc.lambda;
  }
  /* the top of the healthy branch (doc/design.md §1.7): p at the tipping
   * point, or the base failure without a fold */
  ls.healthy_ceiling = s->model.base_failure;
  if (ls.has_fold &&
      ms_failure_probability(&s->model, ls.tipping_effective_load,
                             &ls.healthy_ceiling, err) != MS_OK)
    return MS_ENOCONV;
  *out = ls;
  return MS_OK;
}

/*
 * Solve lambda(x) = target for x in (lo, hi), where lambda is monotone and
 * target lies strictly between lambda(lo) and lambda(hi).  Newton on
 * f(x) = ln lambda(x) - ln target, f'(x) = (1 - E(x)) / x, from x0 when it
 * lies inside the bracket, safeguarded as rtsafe (Press et al., Numerical
 * Recipes, 3rd ed., sec. 9.4): a step that leaves the bracket, or is not
 * at most half the step before last, is replaced by bisection.  On success
 * the root and the loop evaluated there.
 */
static int solve_piece(const ms_service_params *s, double lo, double hi,
                       int increasing, double target, double x0, double *x_out,
                       ms_point *pt_out) {
  double ln_t = log(target);
  ms_point pt;
  /* sign convention: g(x) = +f for an increasing piece, -f for decreasing,
   * so g(lo) < 0 < g(hi) */
  double sgn = increasing ? 1.0 : -1.0;
  double x = x0 > lo && x0 < hi ? x0 : lo + 0.5 * (hi - lo);
  double dx_old = hi - lo, dx = dx_old;
  for (int it = 0; it < 300; it++) {
    ms_point_eval(s, x, &pt);
    double f = log(pt.lambda) - ln_t;
    double g = sgn * f;
    if (g == 0.0) {
      *x_out = x;
      *pt_out = pt;
      return MS_OK;
    }
    if (g < 0.0)
      lo = x;
    else
      hi = x;
    if (!(hi - lo > 4.0 * DBL_EPSILON * hi)) {
      *x_out = lo + 0.5 * (hi - lo);
      ms_point_eval(s, *x_out, pt_out);
      return MS_OK;
    }
    double fp = (1.0 - pt.elast) / x;
    double step = f / fp;
    if (fabs(step) <= 2.0 * DBL_EPSILON * x) {
      /* converged: the root is x - step to within an ulp or two */
      double nx = x - step;
      *x_out = nx;
      if (nx == x)
        *pt_out = pt;
      else
        ms_point_eval(s, nx, pt_out);
      return MS_OK;
    }
    double nx = x - step;
    if (!(nx > lo && nx < hi) || !(fabs(2.0 * f) <= fabs(dx_old * fp))) {
      nx = lo + 0.5 * (hi - lo);
    }
    dx_old = dx;
    dx = nx - x;
    x = nx;
  }
  return MS_ENOCONV;
}

int ms_equilibria(const ms_landscape *ls, double lambda, ms_equilibrium *eq,
                  int *n, ms_error *err) {
  if (ls == NULL || eq == NULL || n == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_equilibria");
  if (!isfinite(lambda) || lambda < 0.0)
    return ms_fail(err, MS_EINVAL, "offered load %g/s must be finite and >= 0",
                   lambda);
  const ms_service_params *s = &ls->params;
  /* Every root lies in [lambda, lambda Amax] with Amax the largest
   * amplification the policy allows, (min(r + 1, 1/(1 - b)))^k (a token
   * bucket only lowers it).  Beyond a double's range nothing can be
   * reported. */
  double amax = 1.0;
  for (int i = 0; i < s->policy.tiers; i++) {
    double a = ms_policy_tier_retries(&s->policy, i) + 1.0;
    if (s->policy.has_budget)
      a = fmin(a, 1.0 / (1.0 - s->policy.retry_budget));
    amax *= a;
  }
  if (!(lambda * amax <= 0x1p1000))
    return ms_fail(err, MS_EINVAL,
                   "offered load %g/s is too large for this service: the "
                   "effective load could reach %g x that, beyond a double",
                   lambda, amax);
  int count = 0;
  ms_point pt;
  if (lambda == 0.0) {
    ms_point_eval(s, 0.0, &pt);
    eq[0] = (ms_equilibrium){0.0, pt.p, exp(pt.ln_amp), true};
    *n = 1;
    return MS_OK;
  }
  for (int i = 0; i < ls->n_breaks; i++) {
    double xa = ls->break_x[i], la = ls->break_lambda[i];
    if (i > 0 && lambda == la) {
      /* a tangency: the double root sits on the extremum itself */
      ms_point_eval(s, xa, &pt);
      eq[count++] = (ms_equilibrium){xa, pt.p, exp(pt.ln_amp), false};
      continue;
    }
    double xb, lb;
    int last = i + 1 == ls->n_breaks;
    if (!last) {
      xb = ls->break_x[i + 1];
      lb = ls->break_lambda[i + 1];
    } else {
      /* beyond the last extremum lambda(x) rises without bound and
       * lambda(x) >= x / Amax: the root lies below lambda Amax */
      xb = fmax(lambda * amax, xa) * (1.0 + 8.0 * DBL_EPSILON) + DBL_MIN;
      ms_point_eval(s, xb, &pt);
      lb = pt.lambda;
      for (int k = 0; k < 64 && !(lb > lambda); k++) {
        xb *= 2.0; /* rounding at the bound itself: widen */
        ms_point_eval(s, xb, &pt);
        lb = pt.lambda;
      }
    }
    int increasing = lb > la;
    double lo_l = increasing ? la : lb, hi_l = increasing ? lb : la;
    if (!(lambda > lo_l && lambda < hi_l))
      continue;
    /* Start where the amplification at the piece's lower end puts the
     * root: x = lambda A(p(xa)), with A(p(xa)) = xa / lambda(xa) (at x = 0,
     * A(base)).  When A grows with x along a rising piece this lies in
     * [xa, root]; it is the root itself where p is constant (below the
     * capacity C, or beyond c mu where every attempt fails).  Else the
     * solver starts in the middle. */
    double x0 = NAN;
    if (increasing) {
      if (i == 0) {
        double A0;
        if (ms_amplification(&s->policy, s->model.base_failure, &A0, NULL) ==
            MS_OK)
          x0 = lambda * A0; /* else load-dependent: from the middle */
      } else {
        x0 = xa * (lambda / la);
      }
    }
    double x;
    if (solve_piece(s, xa, xb, increasing, lambda, x0, &x, &pt) != MS_OK)
      return ms_fail(err, MS_ENOCONV,
                     "no convergence solving lambda(x) = %g on [%g, %g]",
                     lambda, xa, xb);
    /* every root has x >= lambda (A >= 1): keep one found an ulp low from
     * reading as negative self-inflicted load */
    if (x < lambda) {
      x = lambda;
      ms_point_eval(s, x, &pt);
    }
    eq[count++] = (ms_equilibrium){x, pt.p, exp(pt.ln_amp), increasing};
  }
  if (count == 0)
    return ms_fail(err, MS_ENOCONV, "no equilibrium found at offered load %g",
                   lambda);
  *n = count;
  return MS_OK;
}

const char *ms_state_name(ms_state s) {
  switch (s) {
  case MS_STATE_STABLE:
    return "stable";
  case MS_STATE_VULNERABLE:
    return "vulnerable";
  case MS_STATE_METASTABLE:
    return "metastable";
  case MS_STATE_OVERLOADED:
    return "overloaded";
  }
  return "unknown";
}

int ms_state_storm(ms_state s) {
  return s == MS_STATE_METASTABLE || s == MS_STATE_OVERLOADED;
}

static int check_observation(const ms_observation *o, ms_error *err) {
  int st = MS_PARAM_CHECK(MS_PARAM_OFFERED_LOAD, o->offered_load, err);
  if (st == MS_OK && o->has_observed_attempts)
    st = MS_PARAM_CHECK(MS_PARAM_OBSERVED_ATTEMPTS, o->observed_attempts, err);
  if (st == MS_OK && o->has_observed_failure)
    st = MS_PARAM_CHECK(MS_PARAM_OBSERVED_FAILURE, o->observed_failure, err);
  if (st == MS_OK)
    st = MS_PARAM_CHECK(MS_PARAM_INTERVAL, o->interval, err);
  if (st == MS_OK && o->has_queue_length)
    st = MS_PARAM_CHECK(MS_PARAM_QUEUE_LENGTH, o->queue_length, err);
  if (st != MS_OK)
    return st;
  if (o->has_previous &&
      (o->previous < MS_STATE_STABLE || o->previous > MS_STATE_OVERLOADED))
    return ms_fail(err, MS_EINVAL, "previous state %d is not a state",
                   (int)o->previous);
  return MS_OK;
}

int ms_analyze(const ms_landscape *ls, const ms_observation *obs,
               ms_analysis *out, ms_error *err) {
  if (ls == NULL || obs == NULL || out == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_analyze");
  int st = check_observation(obs, err);
  if (st != MS_OK)
    return st;
  ms_analysis r;
  memset(&r, 0, sizeof r);
  double lambda = obs->offered_load;
  /* the side of the boundaries, with hysteresis: within the noise of a
   * boundary the model is read at it (doc/design.md §1.4) */
  ms_state side = ms_load_side(ls, obs);
  double lm = ms_side_load(ls, side, lambda);
  st = ms_equilibria(ls, lm, r.eq, &r.equilibria, err);
  if (st != MS_OK)
    return st;
  if (side == MS_STATE_OVERLOADED) {
    r.state = MS_STATE_OVERLOADED;
    r.collapsed_basin = true;
  } else if (side == MS_STATE_STABLE) {
    r.state = MS_STATE_STABLE;
    r.collapsed_basin = false;
  } else {
    r.collapsed_basin = ms_collapsed_basin(ls, r.eq, r.equilibria, obs, lm);
    r.state = r.collapsed_basin ? MS_STATE_METASTABLE : MS_STATE_VULNERABLE;
  }
  const ms_equilibrium *op =
      r.collapsed_basin ? &r.eq[r.equilibria - 1] : &r.eq[0];
  double x = op->effective_load;
  r.offered_load = lambda;
  r.model_load = lm;
  r.effective_load = x;
  r.self_inflicted_load = x - lm;
  r.amplification = lm > 0.0 ? x / lm : op->amplification;
  r.failure_probability = op->failure_probability;
  r.utilization = x / ls->saturation_load;
  r.tipping_load = ls->tipping_load;
  r.recovery_load = ls->recovery_load;
  r.tipping_distance = ls->tipping_load - lambda;
  r.tipping_headroom = (ls->tipping_load - lambda) / ls->tipping_load;
  r.has_observed_effective_load = obs->has_observed_attempts;
  r.observed_effective_load = obs->observed_attempts;
  r.has_observed_failure_ratio = obs->has_observed_failure;
  r.observed_failure_ratio = obs->observed_failure;
  ms_verdict(ls, obs, &r);
  /* the computed values; the others are counts, codes and the checked
   * observations */
  const double computed[] = {
      r.offered_load,        r.model_load,       r.effective_load,
      r.self_inflicted_load, r.amplification,    r.failure_probability,
      r.utilization,         r.tipping_load,     r.recovery_load,
      r.tipping_distance,    r.tipping_headroom, r.shed_load};
  for (size_t i = 0; i < sizeof computed / sizeof computed[0]; i++)
    if (!isfinite(computed[i]))
      return ms_fail(err, MS_EINVAL,
                     "offered load %g/s gives values beyond a double's range "
                     "for this service",
                     lambda);
  *out = r;
  return MS_OK;
}
