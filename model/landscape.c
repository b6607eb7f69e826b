/*
 * The bifurcation diagram lambda(x) = x / A(p(x)) of one service, its
 * equilibria at a given offered load, and the state of the service
 * (DESIGN 1.3-1.5).
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

#include "exact.h"
#include "internal.h"

/* Grid: log-spaced distances to saturation plus a coarse uniform part. */
#define GRID_LOG 96
#define GRID_LIN 16
#define GRID_MAX (GRID_LOG + GRID_LIN + 4)

/* Decimal orders of magnitude covered by the log-spaced part. */
#define ERLANG_GAP_DECADES 15.0  /* c mu - x from c mu down to 1e-15 c mu */
#define CAPACITY_LO_DECADES 12.0 /* x - C from 1e-12 C ... */
#define CAPACITY_HI_DECADES 15.0 /* ... up to 1e15 C */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Fill grid with increasing x > 0 that resolve lambda(x); returns count. */
static int build_grid(const ms_failure_model *m, double *grid) {
  int n = 0;
  double xcap = ms_saturation_load(m);
  if (m->kind == MS_MODEL_ERLANG) {
    for (int i = 1; i < GRID_LOG; i++) {
      double gap = pow(10.0, -ERLANG_GAP_DECADES * i / (GRID_LOG - 1));
      grid[n++] = xcap * (1.0 - gap);
    }
    for (int j = 1; j < GRID_LIN; j++)
      grid[n++] = xcap * j / GRID_LIN;
    grid[n++] = xcap;
  } else {
    /* below C, lambda(x) = x / A(base) rises: one point suffices */
    grid[n++] = 0.5 * xcap;
    grid[n++] = xcap;
    for (int i = 0; i < GRID_LOG; i++) {
      double u =
          -CAPACITY_LO_DECADES +
          (CAPACITY_LO_DECADES + CAPACITY_HI_DECADES) * i / (GRID_LOG - 1);
      grid[n++] = xcap * (1.0 + pow(10.0, u));
    }
  }
  qsort(grid, (size_t)n, sizeof *grid, cmp_double);
  /* drop duplicates produced by rounding */
  int k = 0;
  for (int i = 0; i < n; i++)
    if (k == 0 || grid[i] > grid[k - 1])
      grid[k++] = grid[i];
  return k;
}

static int rising(const ms_point *pt) { return pt->elast < 1.0; }

/*
 * Locate the point in (lo, hi) where lambda(x) switches from rising to
 * falling or back, by bisection on the sign of d lambda/dx.  The sign is
 * evaluated in closed form, so kinks (x = C, x = c mu, a budget or token cap
 * taking over) are found as surely as smooth extrema.  Returns the x of the
 * extremum and lambda there: for a maximum the larger, for a minimum the
 * smaller of lambda at the final bracket's ends.
 */
static void bisect_extremum(const ms_service_params *s, double lo, double hi,
                            int lo_rising, double *x_out, double *lambda_out) {
  ms_point plo, phi, pm;
  ms_point_eval(s, lo, &plo);
  ms_point_eval(s, hi, &phi);
  for (int it = 0; it < 200; it++) {
    double mid = lo + 0.5 * (hi - lo);
    if (!(mid > lo && mid < hi))
      break;
    ms_point_eval(s, mid, &pm);
    if (rising(&pm) == lo_rising) {
      lo = mid;
      plo = pm;
    } else {
      hi = mid;
      phi = pm;
    }
  }
  int is_max = lo_rising;
  if (is_max ? plo.lambda >= phi.lambda : plo.lambda <= phi.lambda) {
    *x_out = lo;
    *lambda_out = plo.lambda;
  } else {
    *x_out = hi;
    *lambda_out = phi.lambda;
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
  ms_point prev, cur;
  ms_point_eval(s, grid[0], &prev);
  int prev_rising = rising(&prev);
  if (!prev_rising)
    return ms_fail(err, MS_ENOCONV,
                   "offered load falls at the smallest effective load "
                   "%g/s: model outside the analysed shape",
                   grid[0]);
  for (int i = 1; i < n; i++) {
    ms_point_eval(s, grid[i], &cur);
    int cur_rising = rising(&cur);
    if (cur_rising != prev_rising) {
      if (ls.n_breaks > MS_MAX_EXTREMA)
        return ms_fail(err, MS_ELIMIT, "lambda(x) has more than %d extrema",
                       MS_MAX_EXTREMA);
      double xe, le;
      bisect_extremum(s, grid[i - 1], grid[i], prev_rising, &xe, &le);
      ls.break_x[ls.n_breaks] = xe;
      ls.break_lambda[ls.n_breaks] = le;
      ls.n_breaks++;
    }
    prev_rising = cur_rising;
  }
  if (!prev_rising)
    return ms_fail(err, MS_ENOCONV,
                   "offered load still falls at the largest effective load "
                   "%g/s: model outside the analysed shape",
                   grid[n - 1]);

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
  *out = ls;
  return MS_OK;
}

/*
 * Solve lambda(x) = target for x in (lo, hi), where lambda is monotone and
 * target lies strictly between lambda(lo) and lambda(hi).  Safeguarded
 * Newton on f(x) = ln lambda(x) - ln target, f'(x) = (1 - E(x)) / x, falling
 * back to bisection when a step leaves the bracket or shrinks it too little.
 */
static int solve_piece(const ms_service_params *s, double lo, double hi,
                       int increasing, double target, double *x_out) {
  double ln_t = log(target);
  ms_point pt;
  /* sign convention: g(x) = +f for an increasing piece, -f for decreasing,
   * so g(lo) < 0 < g(hi) */
  double sgn = increasing ? 1.0 : -1.0;
  double x = lo + 0.5 * (hi - lo);
  double width = hi - lo;
  for (int it = 0; it < 300; it++) {
    ms_point_eval(s, x, &pt);
    double f = log(pt.lambda) - ln_t;
    double g = sgn * f;
    if (g == 0.0) {
      *x_out = x;
      return MS_OK;
    }
    if (g < 0.0)
      lo = x;
    else
      hi = x;
    if (!(hi - lo > 4.0 * DBL_EPSILON * hi)) {
      *x_out = lo + 0.5 * (hi - lo);
      return MS_OK;
    }
    double fp = (1.0 - pt.elast) / x;
    double nx = fp != 0.0 ? x - f / fp : NAN;
    double new_width = hi - lo;
    if (!(nx > lo && nx < hi) || new_width > 0.5 * width) {
      nx = lo + 0.5 * (hi - lo);
    } else if (fabs(nx - x) <= 2.0 * DBL_EPSILON * x) {
      /* converged: one more check of the neighbour decides */
      *x_out = nx;
      return MS_OK;
    }
    width = new_width;
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
       * lambda(x) >= x / A(1): the root lies below lambda A(1) */
      double A1;
      ms_amplification(&s->policy, 1.0, &A1, NULL);
      xb = fmax(lambda * A1, xa) * (1.0 + 8.0 * DBL_EPSILON) + DBL_MIN;
      ms_point_eval(s, xb, &pt);
      lb = pt.lambda;
      if (!(lb > lambda)) {
        xb = xb * 2.0 + 1.0;
        ms_point_eval(s, xb, &pt);
        lb = pt.lambda;
      }
    }
    int increasing = lb > la;
    double lo_l = increasing ? la : lb, hi_l = increasing ? lb : la;
    if (!(lambda > lo_l && lambda < hi_l))
      continue;
    double x;
    if (solve_piece(s, xa, xb, increasing, lambda, &x) != MS_OK)
      return ms_fail(err, MS_ENOCONV,
                     "no convergence solving lambda(x) = %g on [%g, %g]",
                     lambda, xa, xb);
    /* every root has x >= lambda (A >= 1): keep one found an ulp low from
     * reading as negative self-inflicted load */
    if (x < lambda)
      x = lambda;
    ms_point_eval(s, x, &pt);
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
  if (!isfinite(o->offered_load) || o->offered_load < 0.0)
    return ms_fail(err, MS_EINVAL, "offered load %g/s must be finite and >= 0",
                   o->offered_load);
  if (o->has_observed_attempts &&
      (!isfinite(o->observed_attempts) || o->observed_attempts < 0.0))
    return ms_fail(err, MS_EINVAL,
                   "observed attempt rate %g/s must be finite and >= 0",
                   o->observed_attempts);
  if (o->has_observed_failure &&
      !(o->observed_failure >= 0.0 && o->observed_failure <= 1.0))
    return ms_fail(err, MS_EINVAL,
                   "observed failure ratio %g is outside [0, 1]",
                   o->observed_failure);
  if (o->has_previous &&
      (o->previous < MS_STATE_STABLE || o->previous > MS_STATE_OVERLOADED))
    return ms_fail(err, MS_EINVAL, "previous state %d is not a state",
                   (int)o->previous);
  return MS_OK;
}

/*
 * Which basin of a bistable band the service sits in (DESIGN 1.4): the
 * unstable middle equilibrium separates them; the observed attempt rate,
 * else the observed failure ratio, says on which side the service is; else
 * the previous state holds (hysteresis); a cold start is healthy.
 */
static bool in_collapsed_basin(const ms_equilibrium *eq, int n,
                               const ms_observation *o) {
  const ms_equilibrium *split = NULL;
  for (int i = 0; i < n && split == NULL; i++)
    if (!eq[i].stable)
      split = &eq[i];
  if (split != NULL && o->has_observed_attempts)
    return o->observed_attempts > split->effective_load;
  if (split != NULL && o->has_observed_failure)
    return o->observed_failure > split->failure_probability;
  if (o->has_previous)
    return ms_state_storm(o->previous) != 0;
  return false;
}

int ms_analyze(const ms_landscape *ls, const ms_observation *obs,
               ms_report *out, ms_error *err) {
  if (ls == NULL || obs == NULL || out == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_analyze");
  int st = check_observation(obs, err);
  if (st != MS_OK)
    return st;
  ms_report r;
  memset(&r, 0, sizeof r);
  double lambda = obs->offered_load;
  st = ms_equilibria(ls, lambda, r.eq, &r.equilibria, err);
  if (st != MS_OK)
    return st;
  if (lambda > ls->tipping_load) {
    r.state = MS_STATE_OVERLOADED;
    r.collapsed_basin = true;
  } else if (lambda < ls->recovery_load) {
    r.state = MS_STATE_STABLE;
    r.collapsed_basin = false;
  } else {
    r.collapsed_basin = in_collapsed_basin(r.eq, r.equilibria, obs);
    r.state = r.collapsed_basin ? MS_STATE_METASTABLE : MS_STATE_VULNERABLE;
  }
  const ms_equilibrium *op =
      r.collapsed_basin ? &r.eq[r.equilibria - 1] : &r.eq[0];
  double x = op->effective_load;
  if (ls->params.model.kind == MS_MODEL_CAPACITY && lambda > 0.0) {
    double lo, hi;
    if (ms_exact_certify(&ls->params, lambda, x, &lo, &hi, NULL) == MS_OK) {
      x = lo + 0.5 * (hi - lo);
      r.certified = true;
    }
  }
  r.offered_load = lambda;
  r.effective_load = x;
  r.self_inflicted_load = x - lambda;
  r.amplification = lambda > 0.0 ? x / lambda : op->amplification;
  r.failure_probability = op->failure_probability;
  r.utilization = x / ls->saturation_load;
  r.tipping_load = ls->tipping_load;
  r.recovery_load = ls->recovery_load;
  r.tipping_distance = ls->tipping_load - lambda;
  r.tipping_headroom = (ls->tipping_load - lambda) / ls->tipping_load;
  r.storm = ms_state_storm(r.state);
  *out = r;
  return MS_OK;
}
