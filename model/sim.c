/* SPDX-License-Identifier: MIT */
/*
 * What the two simulation engines share: backoff policies and their delay
 * distributions, scenarios, the configuration, and the recorder that turns
 * windows of counts into samples with the plugin's verdict and a summary.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim_internal.h"

/* ------------------------------------------------------------------ */
/* Single values                                                       */
/* ------------------------------------------------------------------ */

static const struct {
  double lo, hi;
  bool lo_open; /* > lo rather than >= lo */
  bool whole;
  const char *unit; /* written after the value */
} sim_values[MS_SIM_VALUE_KINDS] = {
    [MS_SIM_SPAN] = {0.0, MS_SIM_MAX_DURATION, true, false, " s"},
    [MS_SIM_TIME] = {0.0, MS_SIM_MAX_DURATION, false, false, " s"},
    [MS_SIM_DELAY] = {0.0, MS_BACKOFF_MAX, false, false, " s"},
    [MS_SIM_LOAD] = {0.0, MS_SIM_MAX_RATE, false, false, "/s"},
    [MS_SIM_LOAD_CHANGE] = {-MS_SIM_MAX_RATE, MS_SIM_MAX_RATE, false, false,
                            "/s"},
    [MS_SIM_POOL] = {0.0, (double)MS_MAX_SERVERS, false, true, ""},
    [MS_SIM_TOKENS] = {1.0, MS_SIM_MAX_TOKENS, false, false, ""},
    [MS_SIM_MULTIPLIER] = {1.0, MS_BACKOFF_MAX_MULTIPLIER, false, false, ""},
};

int ms_sim_value_check(ms_sim_value kind, const char *name, double v,
                       ms_error *err) {
  if ((int)kind < 0 || (int)kind >= MS_SIM_VALUE_KINDS || name == NULL)
    return ms_fail(err, MS_EINVAL, "value kind %d is not a simulation value",
                   (int)kind);
  const double lo = sim_values[kind].lo, hi = sim_values[kind].hi;
  const bool lo_open = sim_values[kind].lo_open;
  const bool whole = sim_values[kind].whole;
  char value[32];
  if (isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi) {
    if (whole && v != floor(v))
      return ms_fail(err, MS_EINVAL, "%s = %s is not a whole number", name,
                     ms_format_against(value, v, floor(v)));
    return MS_OK;
  }
  /* whole numbers in full: servers = 20000000, not 2e+07 */
  if (whole && fabs(v) < 1e15 && v == floor(v))
    return ms_fail(err, MS_EINVAL, "%s = %.0f%s is outside %c%.0f, %.0f]", name,
                   v, sim_values[kind].unit, lo_open ? '(' : '[', lo, hi);
  ms_format_against(value, v, v <= lo ? lo : hi);
  if (whole && fabs(v) < 1e15)
    return ms_fail(err, MS_EINVAL, "%s = %s%s is outside %c%.0f, %.0f]", name,
                   value, sim_values[kind].unit, lo_open ? '(' : '[', lo, hi);
  return ms_fail(err, MS_EINVAL, "%s = %s%s is outside %c%g, %g]", name, value,
                 sim_values[kind].unit, lo_open ? '(' : '[', lo, hi);
}

/* ------------------------------------------------------------------ */
/* Backoff                                                             */
/* ------------------------------------------------------------------ */

static const char *const backoff_names[MS_BACKOFF_KINDS] = {
    "none",        "constant",     "exponential",
    "full-jitter", "equal-jitter", "decorrelated-jitter"};

const char *ms_backoff_name(ms_backoff_kind kind) {
  if ((int)kind < 0 || (int)kind >= MS_BACKOFF_KINDS)
    return "unknown";
  return backoff_names[kind];
}

int ms_backoff_from_name(const char *name, ms_backoff_kind *kind,
                         ms_error *err) {
  if (name == NULL || kind == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_backoff_from_name");
  for (int i = 0; i < MS_BACKOFF_KINDS; i++)
    if (strcasecmp(name, backoff_names[i]) == 0) {
      *kind = (ms_backoff_kind)i;
      return MS_OK;
    }
  return ms_fail(err, MS_EINVAL,
                 "backoff '%s' is not one of none, constant, exponential, "
                 "full-jitter, equal-jitter, decorrelated-jitter",
                 name);
}

static bool backoff_uses_cap(ms_backoff_kind k) {
  return k != MS_BACKOFF_NONE && k != MS_BACKOFF_CONSTANT;
}

bool ms_backoff_multiplies(ms_backoff_kind kind) {
  return kind == MS_BACKOFF_EXPONENTIAL || kind == MS_BACKOFF_FULL_JITTER ||
         kind == MS_BACKOFF_EQUAL_JITTER;
}

int ms_backoff_check(const ms_backoff *b, ms_error *err) {
  if (b == NULL)
    return ms_fail(err, MS_EINVAL, "backoff is NULL");
  if ((int)b->kind < 0 || (int)b->kind >= MS_BACKOFF_KINDS)
    return ms_fail(err, MS_EINVAL, "backoff kind %d is not a backoff",
                   (int)b->kind);
  if (b->kind == MS_BACKOFF_NONE)
    return MS_OK;
  int st = ms_sim_value_check(MS_SIM_DELAY, "backoff base", b->base, err);
  if (st != MS_OK)
    return st;
  /* the recursion's densities are 1 / (3 s - base), at most 1 / (2 base):
   * a subnormal base overflows them (a mean delay of 1e+291 s, or inf) */
  if (b->kind == MS_BACKOFF_DECORRELATED && !(b->base >= DBL_MIN))
    return ms_fail(err, MS_EINVAL,
                   "backoff base = %g s: decorrelated jitter needs base > 0 "
                   "(at least %g s)",
                   b->base, DBL_MIN);
  if (b->kind == MS_BACKOFF_DECORRELATED &&
      !(b->cap <= MS_BACKOFF_MAX_DECORRELATED_RATIO * b->base))
    return ms_fail(err, MS_EINVAL,
                   "backoff cap = %g s is more than %g times base = %g s: "
                   "decorrelated jitter's grid is accurate up to that ratio",
                   b->cap, MS_BACKOFF_MAX_DECORRELATED_RATIO, b->base);
  if (backoff_uses_cap(b->kind) &&
      (ms_sim_value_check(MS_SIM_DELAY, "backoff cap", b->cap, NULL) != MS_OK ||
       b->cap < b->base)) {
    char cap[32];
    return ms_fail(
        err, MS_EINVAL, "backoff cap = %s s is outside [base = %g, %g]",
        ms_format_against(cap, b->cap,
                          b->cap < b->base ? b->base : MS_BACKOFF_MAX),
        b->base, MS_BACKOFF_MAX);
  }
  if (b->multiplier != 0.0)
    return ms_sim_value_check(MS_SIM_MULTIPLIER, "backoff multiplier",
                              b->multiplier, err);
  return MS_OK;
}

double ms_backoff_ceiling(const ms_backoff *b, int k) {
  double m =
      b->multiplier == 0.0 ? MS_BACKOFF_DEFAULT_MULTIPLIER : b->multiplier;
  if (!(b->base > 0.0))
    return 0.0;
  /* doubling exactly, as before multipliers; pow overflows to inf, which
   * the cap takes */
  double grown = m == 2.0 ? ldexp(b->base, k - 1) : b->base * pow(m, k - 1);
  return fmin(b->cap, grown);
}

static int dist_alloc(ms_delay_dist *d, int n) {
  d->n = 0;
  d->lo = malloc((size_t)n * sizeof *d->lo);
  d->hi = malloc((size_t)n * sizeof *d->hi);
  d->w = malloc((size_t)n * sizeof *d->w);
  if (d->lo == NULL || d->hi == NULL || d->w == NULL) {
    free(d->lo);
    free(d->hi);
    free(d->w);
    d->lo = d->hi = d->w = NULL;
    return MS_ENOMEM;
  }
  return MS_OK;
}

static void dist_add(ms_delay_dist *d, double lo, double hi, double w) {
  if (!(w > 0.0))
    return;
  d->lo[d->n] = lo;
  d->hi[d->n] = hi;
  d->w[d->n] = w;
  d->n++;
}

/*
 * Decorrelated jitter, s_k = min(cap, uniform on [base, 3 s_(k-1)]), has no
 * closed-form distribution; its recursion is run on a grid of cells
 * e_0 = base < e_1 < ... < e_M = cap, spaced geometrically (every cell is
 * the same small fraction wider than base's scale, so short and long sleeps
 * are resolved alike), plus a point mass at cap.  Within a cell the mass is
 * taken as uniform, and a cell passes it on from its midpoint.
 */
typedef struct {
  double base, cap, ln_g; /* e_i = base g^i */
  double *edge;           /* M + 1 edges */
  double *dens;           /* dens[f]: the density of the spreads that cover
                             cells 0 .. f - 1 whole, M + 1 */
  double *part;           /* mass of partially covered cells, M */
  double atom;            /* mass sent to cap */
} decorr_grid;

/* Spread a sleep s of weight om: uniform on [base, 3 s], cut at cap. */
static void decorr_spread(decorr_grid *g, double s, double om) {
  double top = 3.0 * s;
  double u = fmin(top, g->cap);
  double d = om / (top - g->base);
  long full = (long)floor(log(u / g->base) / g->ln_g);
  if (full > MS_DECORR_CELLS)
    full = MS_DECORR_CELLS;
  if (full < 0)
    full = 0;
  /* rounding of the log may leave u just inside the previous cell */
  while (full > 0 && g->edge[full] > u)
    full--;
  while (full < MS_DECORR_CELLS && g->edge[full + 1] <= u)
    full++;
  g->dens[full] += d;
  if (full < MS_DECORR_CELLS)
    g->part[full] += d * (u - g->edge[full]);
  g->atom += om * (top - u) / (top - g->base);
}

/* Whether two distributions of decorrelated jitter's grid are the same to
 * within 2^-53 in every weight (weights sum to 1): the recursion has
 * reached its stationary distribution, as far as a double sees. */
static bool dist_converged(const ms_delay_dist *a, const ms_delay_dist *b) {
  if (a->n != b->n)
    return false;
  for (int i = 0; i < a->n; i++)
    if (a->lo[i] != b->lo[i] || !(fabs(a->w[i] - b->w[i]) <= 0x1p-53))
      return false;
  return true;
}

static double dist_mean(const ms_delay_dist *d) {
  double m = 0.0;
  for (int i = 0; i < d->n; i++)
    m += d->w[i] * 0.5 * (d->lo[i] + d->hi[i]);
  return m;
}

/* Copy a distribution into a fresh one of its own size. */
static int dist_copy(ms_delay_dist *to, const ms_delay_dist *from) {
  if (dist_alloc(to, from->n > 0 ? from->n : 1) != MS_OK)
    return MS_ENOMEM;
  for (int i = 0; i < from->n; i++)
    dist_add(to, from->lo[i], from->hi[i], from->w[i]);
  return MS_OK;
}

/*
 * Decorrelated jitter's recursion for retries 1 .. r, stopped once
 * stationary.  Keeps each retry's distribution in keep[k] when keep is
 * not NULL (room for r), and its mean in means[k] when means is not NULL
 * (r entries, every one filled: the retries past the stationary point
 * repeat its mean).  Two scratch distributions roll along, so the means
 * alone cost O(r) time and O(cells) memory whatever r.
 */
static int decorrelated_run(const ms_backoff *b, int r, ms_delay_dist *keep,
                            double *means, int *n_built, ms_error *err) {
  int M = MS_DECORR_CELLS;
  *n_built = 0;
  if (!(b->cap > b->base)) {
    if (keep != NULL) {
      if (dist_alloc(&keep[0], 1) != MS_OK)
        return ms_fail(err, MS_ENOMEM, "no memory for backoff delays");
      dist_add(&keep[0], b->base, b->base, 1.0);
    }
    for (int k = 0; means != NULL && k < r; k++)
      means[k] = b->base;
    *n_built = 1;
    return MS_OK;
  }
  decorr_grid g = {
      .base = b->base, .cap = b->cap, .ln_g = log(b->cap / b->base) / M};
  g.edge = malloc(((size_t)M + 1) * sizeof *g.edge);
  g.dens = calloc((size_t)M + 1, sizeof *g.dens);
  g.part = calloc((size_t)M, sizeof *g.part);
  double *w = malloc((size_t)M * sizeof *w);
  ms_delay_dist cur = {0}, prev = {0};
  int st = MS_OK;
  if (g.edge == NULL || g.dens == NULL || g.part == NULL || w == NULL ||
      dist_alloc(&cur, M + 1) != MS_OK || dist_alloc(&prev, M + 1) != MS_OK)
    st = ms_fail(err, MS_ENOMEM, "no memory for backoff delays");
  if (st == MS_OK) {
    for (int i = 0; i <= M; i++)
      g.edge[i] = b->base * exp(g.ln_g * i);
    g.edge[M] = b->cap;
    /* s_0 = base */
    decorr_spread(&g, b->base, 1.0);
  }
  for (int k = 0; st == MS_OK && k < r; k++) {
    /* collect the distribution of s_(k+1) */
    /* cell i's density is the sum of dens[f] over f > i: summed from the
     * top, every term positive.  A difference array summed from the
     * bottom left a residue of the rounding (about 1e-16 of 1 / (2 base))
     * on every cell up to cap, where cells are wide: at cap / base 8e6
     * 7e-10 of the mass far out moved the mean of retry 2 by 8e-4 */
    double run = 0.0;
    for (int i = M - 1; i >= 0; i--) {
      run += g.dens[i + 1];
      w[i] = run * (g.edge[i + 1] - g.edge[i]) + g.part[i];
    }
    double atom = g.atom;
    cur.n = 0;
    for (int i = 0; i < M; i++)
      dist_add(&cur, g.edge[i], g.edge[i + 1], w[i]);
    dist_add(&cur, b->cap, b->cap, atom);
    /* stationary: every later retry has the previous distribution */
    if (k > 0 && dist_converged(&cur, &prev))
      break;
    if (keep != NULL && dist_copy(&keep[k], &cur) != MS_OK) {
      st = ms_fail(err, MS_ENOMEM, "no memory for backoff delays");
      break;
    }
    if (means != NULL)
      means[k] = dist_mean(&cur);
    *n_built = k + 1;
    ms_delay_dist t = prev;
    prev = cur;
    cur = t;
    /* and spread it once more */
    memset(g.dens, 0, ((size_t)M + 1) * sizeof *g.dens);
    memset(g.part, 0, (size_t)M * sizeof *g.part);
    g.atom = 0.0;
    for (int i = 0; i < M; i++)
      if (w[i] > 0.0)
        decorr_spread(&g, 0.5 * (g.edge[i] + g.edge[i + 1]), w[i]);
    if (atom > 0.0)
      decorr_spread(&g, b->cap, atom);
  }
  for (int k = *n_built; st == MS_OK && means != NULL && k < r; k++)
    means[k] = means[*n_built - 1];
  ms_delay_dists_free(&cur, 1);
  ms_delay_dists_free(&prev, 1);
  free(g.edge);
  free(g.dens);
  free(g.part);
  free(w);
  return st;
}

void ms_delay_dists_free(ms_delay_dist *dist, int r) {
  for (int k = 0; k < r; k++) {
    free(dist[k].lo);
    free(dist[k].hi);
    free(dist[k].w);
    dist[k].lo = dist[k].hi = dist[k].w = NULL;
    dist[k].n = 0;
  }
}

int ms_delay_dists_build(const ms_backoff *b, int r, ms_delay_dist *dist,
                         int *n_built, ms_error *err) {
  for (int k = 0; k < r; k++)
    dist[k] = (ms_delay_dist){0};
  *n_built = 0;
  if (r < 1)
    return MS_OK;
  if (b->kind == MS_BACKOFF_DECORRELATED) {
    int st = decorrelated_run(b, r, dist, NULL, n_built, err);
    if (st != MS_OK) {
      ms_delay_dists_free(dist, r);
      *n_built = 0;
    }
    return st;
  }
  for (int k = 1; k <= r; k++) {
    /* none and constant wait alike before every retry, the others once
     * their ceiling v_k has reached the cap (or stopped growing) */
    double v = backoff_uses_cap(b->kind) ? ms_backoff_ceiling(b, k) : 0.0;
    if (k > 1 &&
        (!backoff_uses_cap(b->kind) || v == ms_backoff_ceiling(b, k - 1)))
      break;
    ms_delay_dist *d = &dist[k - 1];
    if (dist_alloc(d, 1) != MS_OK) {
      ms_delay_dists_free(dist, r);
      *n_built = 0;
      return ms_fail(err, MS_ENOMEM, "no memory for backoff delays");
    }
    *n_built = k;
    switch (b->kind) {
    case MS_BACKOFF_NONE:
      dist_add(d, 0.0, 0.0, 1.0);
      break;
    case MS_BACKOFF_CONSTANT:
      dist_add(d, b->base, b->base, 1.0);
      break;
    case MS_BACKOFF_EXPONENTIAL:
      dist_add(d, v, v, 1.0);
      break;
    case MS_BACKOFF_FULL_JITTER:
      dist_add(d, 0.0, v, 1.0);
      break;
    case MS_BACKOFF_EQUAL_JITTER:
      dist_add(d, 0.5 * v, v, 1.0);
      break;
    case MS_BACKOFF_DECORRELATED:
      break; /* handled above */
    }
    if (d->n == 0) /* v == 0 with weight 1 is still added; defensive */
      dist_add(d, 0.0, 0.0, 1.0);
  }
  return MS_OK;
}

int ms_backoff_mean_delay(const ms_backoff *b, int k, double *mean,
                          ms_error *err) {
  int st = ms_backoff_check(b, err);
  if (st != MS_OK)
    return st;
  if (k < 1 || k > MS_MAX_RETRIES)
    return ms_fail(err, MS_EINVAL, "retry number k = %d is outside [1, %d]", k,
                   MS_MAX_RETRIES);
  if (mean == NULL)
    return ms_fail(err, MS_EINVAL, "NULL result for ms_backoff_mean_delay");
  double v = backoff_uses_cap(b->kind) ? ms_backoff_ceiling(b, k) : 0.0;
  switch (b->kind) {
  case MS_BACKOFF_NONE:
    *mean = 0.0;
    return MS_OK;
  case MS_BACKOFF_CONSTANT:
    *mean = b->base;
    return MS_OK;
  case MS_BACKOFF_EXPONENTIAL:
    *mean = v;
    return MS_OK;
  case MS_BACKOFF_FULL_JITTER:
    *mean = 0.5 * v;
    return MS_OK;
  case MS_BACKOFF_EQUAL_JITTER:
    *mean = 0.75 * v;
    return MS_OK;
  case MS_BACKOFF_DECORRELATED:
    break;
  }
  /* the means alone: O(k) time, O(cells) memory */
  double *means = malloc((size_t)k * sizeof *means);
  if (means == NULL)
    return ms_fail(err, MS_ENOMEM, "no memory for backoff delays");
  int n = 0;
  st = decorrelated_run(b, k, NULL, means, &n, err);
  if (st == MS_OK)
    *mean = means[k - 1];
  free(means);
  return st;
}

int ms_backoff_mean_delays(const ms_backoff *b, int r, double *means,
                           ms_error *err) {
  int st = ms_backoff_check(b, err);
  if (st != MS_OK)
    return st;
  if (r < 1 || r > MS_MAX_RETRIES)
    return ms_fail(err, MS_EINVAL, "retries r = %d is outside [1, %d]", r,
                   MS_MAX_RETRIES);
  if (means == NULL)
    return ms_fail(err, MS_EINVAL, "NULL result for ms_backoff_mean_delays");
  if (b->kind == MS_BACKOFF_DECORRELATED) {
    int n = 0;
    return decorrelated_run(b, r, NULL, means, &n, err);
  }
  for (int k = 1; st == MS_OK && k <= r; k++)
    st = ms_backoff_mean_delay(b, k, &means[k - 1], err);
  return st;
}

/* ------------------------------------------------------------------ */
/* Scenarios                                                           */
/* ------------------------------------------------------------------ */

static double trigger_end(const ms_trigger *tr) {
  return tr->start + tr->rise + tr->hold + tr->fall;
}

int ms_scenario_check(const ms_scenario *sc, const ms_failure_model *m,
                      ms_error *err) {
  if (sc == NULL || m == NULL)
    return ms_fail(err, MS_EINVAL, "NULL argument to ms_scenario_check");
  ms_error why;
  int st =
      ms_sim_value_check(MS_SIM_SPAN, "scenario duration", sc->duration, err);
  if (st == MS_OK)
    st = ms_sim_value_check(MS_SIM_LOAD, "scenario offered load",
                            sc->offered_load, err);
  if (st != MS_OK)
    return st;
  if (sc->n_triggers < 0 || sc->n_triggers > MS_SIM_MAX_TRIGGERS)
    return ms_fail(err, MS_EINVAL, "scenario has %d triggers, outside [0, %d]",
                   sc->n_triggers, MS_SIM_MAX_TRIGGERS);
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *tr = &sc->triggers[i];
    const double f[4] = {tr->start, tr->rise, tr->hold, tr->fall};
    const char *const fn[4] = {"start", "rise", "hold", "fall"};
    for (int j = 0; j < 4; j++)
      if (ms_sim_value_check(MS_SIM_TIME, fn[j], f[j], &why) != MS_OK)
        return ms_fail(err, MS_EINVAL, "trigger %d: %s", i + 1, why.msg);
    switch (tr->kind) {
    case MS_TRIGGER_LOAD:
      if (ms_sim_value_check(MS_SIM_LOAD_CHANGE, "load", tr->load, &why) !=
          MS_OK)
        return ms_fail(err, MS_EINVAL, "trigger %d: %s", i + 1, why.msg);
      break;
    case MS_TRIGGER_SERVERS:
      if (tr->rise != 0.0 || tr->fall != 0.0)
        return ms_fail(err, MS_EINVAL,
                       "trigger %d: a pool change takes effect at once "
                       "(rise = %g s and fall = %g s must be 0)",
                       i + 1, tr->rise, tr->fall);
      if (m->kind == MS_MODEL_ERLANG) {
        if (ms_sim_value_check(MS_SIM_POOL, "servers", (double)tr->servers,
                               &why) != MS_OK)
          return ms_fail(err, MS_EINVAL, "trigger %d: %s", i + 1, why.msg);
      } else if (MS_PARAM_CHECK(MS_PARAM_CAPACITY, tr->capacity, &why) !=
                 MS_OK) {
        return ms_fail(err, MS_EINVAL, "trigger %d: %s (capacity model)", i + 1,
                       why.msg);
      }
      break;
    default:
      return ms_fail(err, MS_EINVAL, "trigger %d: kind %d is not a trigger",
                     i + 1, (int)tr->kind);
    }
  }
  return MS_OK;
}

/*
 * The effect of a LOAD trigger (0 .. 1) and its slope (1/s) at t.  At a
 * breakpoint the value is that of the phase starting there; callers that
 * integrate evaluate strictly inside phases.
 */
static void trigger_shape(const ms_trigger *tr, double t, double *v,
                          double *slope) {
  double u = t - tr->start;
  *slope = 0.0;
  if (u < 0.0) {
    *v = 0.0;
  } else if (u < tr->rise) {
    *v = u / tr->rise;
    *slope = 1.0 / tr->rise;
  } else if (u < tr->rise + tr->hold) {
    *v = 1.0;
  } else if (u < tr->rise + tr->hold + tr->fall) {
    *v = 1.0 - (u - tr->rise - tr->hold) / tr->fall;
    *slope = -1.0 / tr->fall;
  } else {
    *v = 0.0;
  }
}

/* lambda before clamping at 0, and its slope, at t. */
static void raw_load(const ms_scenario *sc, double t, double *v,
                     double *slope) {
  double sum = sc->offered_load, ds = 0.0;
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *tr = &sc->triggers[i];
    if (tr->kind != MS_TRIGGER_LOAD)
      continue;
    double s, d;
    trigger_shape(tr, t, &s, &d);
    sum += tr->load * s;
    ds += tr->load * d;
  }
  *v = sum;
  *slope = ds;
}

double ms_scenario_offered_load(const ms_scenario *sc, double t) {
  double v, s;
  raw_load(sc, t, &v, &s);
  return v > 0.0 ? v : 0.0;
}

/* Integral of max(0, f) over [u, w] where f is linear with f(m) = fm. */
static double positive_part_integral(double u, double w, double m, double fm,
                                     double slope) {
  if (!isfinite(slope)) /* a rise of a subnormal length: no width to it */
    return fmax(fm, 0.0) * (w - u);
  double fu = fm + slope * (u - m), fw = fm + slope * (w - m);
  if (fu >= 0.0 && fw >= 0.0)
    return 0.5 * (fu + fw) * (w - u);
  if (fu <= 0.0 && fw <= 0.0)
    return 0.0;
  /* one sign change at z: the positive triangle */
  double z = u + fu / (fu - fw) * (w - u);
  return fu > 0.0 ? 0.5 * fu * (z - u) : 0.5 * fw * (w - z);
}

double ms_scenario_mean_offered_load(const ms_scenario *sc, double t0,
                                     double t1) {
  /* beyond +-1e300 s lambda is the base load, whatever the triggers: the
   * clamp keeps the span finite (an infinite time or a span past
   * DBL_MAX gave inf or NaN) */
  t0 = fmin(fmax(t0, -1e300), 1e300);
  t1 = fmin(fmax(t1, -1e300), 1e300);
  if (!(t1 > t0))
    return ms_scenario_offered_load(sc, t0);
  double bp[4 * MS_SIM_MAX_TRIGGERS + 2];
  int n = 0;
  bp[n++] = t0;
  bp[n++] = t1;
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *tr = &sc->triggers[i];
    if (tr->kind != MS_TRIGGER_LOAD)
      continue;
    const double e[4] = {tr->start, tr->start + tr->rise,
                         tr->start + tr->rise + tr->hold, trigger_end(tr)};
    for (int j = 0; j < 4; j++)
      if (e[j] > t0 && e[j] < t1)
        bp[n++] = e[j];
  }
  ms_sort_doubles(bp, (size_t)n);
  double area = 0.0;
  for (int i = 0; i + 1 < n; i++) {
    double u = bp[i], w = bp[i + 1];
    if (!(w > u))
      continue;
    double m = u + 0.5 * (w - u), fm, slope;
    raw_load(sc, m, &fm, &slope);
    area += positive_part_integral(u, w, m, fm, slope);
  }
  return area / (t1 - t0);
}

void ms_scenario_pool(const ms_scenario *sc, const ms_failure_model *base,
                      double t, ms_failure_model *out) {
  *out = *base;
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *tr = &sc->triggers[i];
    if (tr->kind != MS_TRIGGER_SERVERS || t < tr->start ||
        !(t < tr->start + tr->hold))
      continue;
    if (base->kind == MS_MODEL_ERLANG)
      out->servers = tr->servers;
    else
      out->capacity = tr->capacity;
  }
}

double ms_scenario_trigger_end(const ms_scenario *sc) {
  double e = 0.0;
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *tr = &sc->triggers[i];
    e = fmax(e, trigger_end(tr));
  }
  return e;
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

void ms_sim_config_init(ms_sim_config *c, const ms_service_params *service) {
  memset(c, 0, sizeof *c);
  c->service = *service;
  c->backoff = (ms_backoff){.kind = MS_BACKOFF_NONE};
  c->budget_window = 10.0;
  c->token_capacity = 100.0;
  c->scenario.duration = 60.0;
  c->sample_interval = 1.0;
  c->dt = 0.0;
  c->queue_memory = false;
  c->seed = 1;
  c->settle_tolerance = 0.02;
}

int ms_sim_config_check(const ms_sim_config *c, ms_error *err) {
  if (c == NULL)
    return ms_fail(err, MS_EINVAL, "simulation configuration is NULL");
  int st = ms_service_params_check(&c->service, err);
  if (st != MS_OK)
    return st;
  if (c->service.policy.tiers != 1)
    return ms_fail(err, MS_EINVAL,
                   "tiers = %d: the simulation engines model one retrying "
                   "tier (set tiers to 1)",
                   c->service.policy.tiers);
  st = ms_backoff_check(&c->backoff, err);
  if (st != MS_OK)
    return st;
  st = ms_scenario_check(&c->scenario, &c->service.model, err);
  if (st != MS_OK)
    return st;
  if ((st = ms_sim_value_check(MS_SIM_SPAN, "budget window", c->budget_window,
                               err)) != MS_OK ||
      (st = ms_sim_value_check(MS_SIM_TOKENS, "token capacity",
                               c->token_capacity, err)) != MS_OK ||
      (st = ms_sim_value_check(MS_SIM_SPAN, "sample interval",
                               c->sample_interval, err)) != MS_OK)
    return st;
  if (!isfinite(c->dt) || c->dt < 0.0 || c->dt > c->sample_interval) {
    char dt[32];
    return ms_fail(
        err, MS_EINVAL,
        "dt = %s s is outside [0, sample interval = %g s] "
        "(0 picks the default)",
        ms_format_against(dt, c->dt, c->dt < 0.0 ? 0.0 : c->sample_interval),
        c->sample_interval);
  }
  if (c->dt > 0.0) {
    double n = round(c->sample_interval / c->dt);
    if (n < 1.0 ||
        fabs(n * c->dt - c->sample_interval) > 1e-9 * c->sample_interval)
      return ms_fail(err, MS_EINVAL,
                     "dt = %g s must divide the sample interval %g s", c->dt,
                     c->sample_interval);
  }
  if (!isfinite(c->settle_tolerance) || !(c->settle_tolerance > 0.0) ||
      !(c->settle_tolerance < 1.0)) {
    char tol[32];
    return ms_fail(err, MS_EINVAL, "settle tolerance = %s is outside (0, 1)",
                   ms_format_against(tol, c->settle_tolerance,
                                     c->settle_tolerance <= 0.0 ? 0.0 : 1.0));
  }
  /* The windows are bounded as the fluid engine's bins are: a subnormal
   * sample interval (accepted as a span > 0) gave the discrete-event
   * engine 60 s / 5e-324 windows, a run that never ended. */
  double windows = c->scenario.duration / c->sample_interval;
  if (!(windows <= (double)MS_SIM_MAX_BINS))
    return ms_fail(err, MS_ELIMIT,
                   "%g s in sample windows of %g s is %g windows, more than "
                   "%ld",
                   c->scenario.duration, c->sample_interval, windows,
                   MS_SIM_MAX_BINS);
  return MS_OK;
}

/* ------------------------------------------------------------------ */
/* Recorder                                                            */
/* ------------------------------------------------------------------ */

static bool same_pool(const ms_failure_model *a, const ms_failure_model *b) {
  return a->kind == MS_MODEL_ERLANG ? a->servers == b->servers
                                    : a->capacity == b->capacity;
}

static int add_pool(ms_sim_recorder *r, const ms_failure_model *m,
                    ms_error *err) {
  for (int i = 0; i < r->n_pools; i++)
    if (same_pool(&r->pool[i], m))
      return MS_OK;
  int i = r->n_pools++;
  r->pool[i] = *m;
  r->pool_ok[i] = !(m->kind == MS_MODEL_ERLANG && m->servers == 0);
  if (!r->pool_ok[i])
    return MS_OK;
  ms_service_params s = {.model = *m, .policy = r->cfg->service.policy};
  return ms_landscape_build(&s, &r->ls[i], err);
}

int ms_sim_recorder_init(ms_sim_recorder *r, const ms_sim_config *c,
                         ms_sim_sink sink, void *ctx, ms_error *err) {
  memset(r, 0, sizeof *r);
  r->cfg = c;
  r->sink = sink;
  r->ctx = ctx;
  int st = add_pool(r, &c->service.model, err);
  for (int i = 0; st == MS_OK && i < c->scenario.n_triggers; i++) {
    const ms_trigger *tr = &c->scenario.triggers[i];
    if (tr->kind != MS_TRIGGER_SERVERS)
      continue;
    ms_failure_model m = c->service.model;
    if (m.kind == MS_MODEL_ERLANG)
      m.servers = tr->servers;
    else
      m.capacity = tr->capacity;
    st = add_pool(r, &m, err);
  }
  if (st != MS_OK)
    return st;
  /* A policy that depends on the load has no amplification of p alone:
   * its share part (Envoy's budget_percent, Finagle's percent) caps the
   * collapse of a pool without servers, its minimum left out. */
  const ms_retry_policy *pol = &c->service.policy;
  if (pol->kind == MS_POLICY_ENVOY)
    r->collapse_amp =
        pol->envoy_budget < 1.0
            ? fmin(pol->retries + 1.0, 1.0 / (1.0 - pol->envoy_budget))
            : pol->retries + 1.0;
  else if (ms_policy_load_dependent(pol))
    r->collapse_amp = fmin(pol->retries + 1.0, 1.0 + pol->finagle_percent);
  else if ((st = ms_amplification(pol, 1.0, &r->collapse_amp, err)) != MS_OK)
    return st;
  r->sum.first_storm_at = -1.0;
  r->sum.storm_ended_at = -1.0;
  r->sum.verdict_ended_at = -1.0;
  r->sum.amplification = 1.0;
  r->sum.trigger_end = ms_scenario_trigger_end(&c->scenario);
  return MS_OK;
}

static int find_pool(const ms_sim_recorder *r, const ms_failure_model *m) {
  for (int i = 0; i < r->n_pools; i++)
    if (same_pool(&r->pool[i], m))
      return i;
  return 0; /* not reached: every pool of the scenario was added */
}

/* The interval, s, over which the plugin's verdict weighs a window of
 * the fluid engine (ms_observation.interval): its rates are expectations,
 * not counts, so no window's counting noise applies; but it is not
 * infinite either, since the engine's arithmetic differs from the model's
 * in the last digits.  A healthy run fails at p(x) to about 1e-13
 * (relative), and a tail the model rounds to 0 comes out as 1e-32: over an
 * infinite interval either is a failure beyond the healthy level, and the
 * storm flag would stay up for ever after a storm (the fluid run of 10
 * servers, no retries, no base failure at 33 req/s).  Over 1e15 s the noise
 * bound is z^2 / tau = 9e-15 failures per second above the reference, and
 * z sqrt(r / tau) < 1e-7 r for a reference rate r above 1/s (1e-5 r above
 * 1e-4/s): above that rounding, below any difference the engines mean. */
#define MS_SIM_FLUID_TAU 1e15

static bool near(double x, double target, double tol, double floor_abs) {
  return fabs(x - target) <= fmax(tol * target, floor_abs);
}

/* The window's counts as rates per second, and the shares of its
 * outcomes; the amplification is 1 in a window without first attempts. */
static void window_rates(ms_sim_sample *s, const ms_sim_config *c, double t_end,
                         double w, const ms_sim_counts *cnt, double backlog) {
  s->time = t_end;
  s->width = w;
  s->nominal_offered =
      ms_scenario_mean_offered_load(&c->scenario, t_end - w, t_end);
  s->offered = cnt->first / w;
  s->attempts = (cnt->first + cnt->retries) / w;
  s->retries = cnt->retries / w;
  s->failures = cnt->failures / w;
  s->goodput = cnt->successes / w;
  s->given_up = cnt->given_up / w;
  s->refused = cnt->refused / w;
  s->backlog = backlog;
  double outcomes = cnt->failures + cnt->successes;
  s->failure_ratio = outcomes > 0.0 ? cnt->failures / outcomes : 0.0;
  s->amplification = cnt->first > 0.0 ? s->attempts / s->offered : 1.0;
  s->has_service = cnt->served;
  if (cnt->served) {
    s->busy_servers = cnt->busy_time / w;
    s->completion_rate = cnt->completions / w;
    s->has_latency = cnt->completions > 0.0;
    s->latency = s->has_latency ? cnt->service_time / cnt->completions : 0.0;
  }
}

/* The plugin's verdict on the window, as ms_analyze gives it from the
 * observed rates and the previous verdict, for the pool at the window's
 * last instant; and the equilibria at the scenario's load, for the
 * settling check.  The observation is what the plugin would read from
 * the simulated service (doc/design.md §1.7): the window's offered load,
 * attempts and failure ratio, the backlog where the engine has a queue
 * (the DES, the queue-memory fluid engine), and the previous window's
 * state and storm flag; the storm flag is the verdict's (ms_analysis.storm),
 * not the state's, so it stays up while the observed attempts still fail
 * beyond the healthy level and does not rise past the tipping load before
 * they do.  A pool of no servers has only the collapsed state and no
 * landscape to judge by: no attempt can succeed there, storm.
 * Errors of ms_analyze and ms_equilibria. */
static int judge_window(ms_sim_recorder *r, ms_sim_sample *s, ms_error *err) {
  const ms_sim_config *c = r->cfg;
  ms_failure_model pm;
  ms_scenario_pool(&c->scenario, &c->service.model, s->time - 1e-9 * s->width,
                   &pm);
  int pi = find_pool(r, &pm);
  s->servers = pm.kind == MS_MODEL_ERLANG ? pm.servers : 0;
  s->capacity = ms_saturation_load(&pm);
  if (!r->pool_ok[pi]) {
    s->state = MS_STATE_OVERLOADED;
    s->storm = 1;
    s->has_collapsed = true;
    s->collapsed_load = s->nominal_offered * r->collapse_amp;
  } else {
    const ms_landscape *ls = &r->ls[pi];
    /* the noise bound of doc/design.md §1.7 counts over the window; the
     * fluid engine's rates are expectations, without counting noise, and
     * are weighed over MS_SIM_FLUID_TAU instead */
    ms_observation obs = {.offered_load = s->offered,
                          .has_observed_attempts = true,
                          .observed_attempts = s->attempts,
                          .has_observed_failure = true,
                          .observed_failure = s->failure_ratio,
                          .has_previous = r->has_prev,
                          .previous = r->prev,
                          .previous_storm = r->prev_storm,
                          .interval = r->counted ? s->width : MS_SIM_FLUID_TAU,
                          .has_queue_length = r->counted || c->queue_memory,
                          .queue_length = s->backlog};
    ms_analysis rep;
    int st = ms_analyze(ls, &obs, &rep, err);
    if (st != MS_OK)
      return st;
    s->state = rep.state;
    s->storm = rep.storm;
    s->tipping_load = ls->tipping_load;
    s->recovery_load = ls->recovery_load;
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n;
    st = ms_equilibria(ls, s->nominal_offered, eq, &n, err);
    if (st != MS_OK)
      return st;
    if (s->nominal_offered <= ls->tipping_load) {
      s->has_healthy = true;
      s->healthy_load = eq[0].effective_load;
    }
    if (s->nominal_offered >= ls->recovery_load) {
      s->has_collapsed = true;
      s->collapsed_load = eq[n - 1].effective_load;
    }
  }
  r->has_prev = true;
  r->prev = s->state;
  r->prev_storm = s->storm != 0;
  return MS_OK;
}

/* The totals, the peaks and the storm's times: when it started, how long
 * it lasted (after the triggers too), when the verdict left it and when
 * goodput returned (ms_sim_summary). */
static void add_to_summary(ms_sim_recorder *r, const ms_sim_sample *s,
                           const ms_sim_counts *cnt) {
  ms_sim_summary *m = &r->sum;
  double t_end = s->time, w = s->width;
  m->samples++;
  m->requests += cnt->first;
  m->attempts += cnt->first + cnt->retries;
  m->retries += cnt->retries;
  m->failures += cnt->failures;
  m->successes += cnt->successes;
  m->given_up += cnt->given_up;
  m->refused += cnt->refused;
  m->peak_attempts = fmax(m->peak_attempts, s->attempts);
  m->amplification = m->requests > 0.0 ? m->attempts / m->requests : 1.0;
  m->peak_backlog = fmax(m->peak_backlog, s->backlog);
  bool storm;
  if (s->storm) {
    m->storm_time += w;
    if (m->first_storm_at < 0.0)
      m->first_storm_at = t_end;
    m->storm_after_trigger += fmax(0.0, fmin(w, t_end - m->trigger_end));
    m->verdict_ended_at = -1.0;
    storm = true;
  } else {
    if (r->in_storm && m->verdict_ended_at < 0.0)
      m->verdict_ended_at = t_end - w;
    /* after the verdict: the storm lasts until goodput returns */
    storm = r->in_storm && s->failure_ratio > MS_SIM_GOODPUT_SHARE;
    if (storm)
      m->draining_time += w;
  }
  if (storm)
    m->storm_ended_at = -1.0;
  else if (r->in_storm)
    m->storm_ended_at = t_end - w;
  r->in_storm = storm;
  m->recovered = !storm;
}

/* Whether the attempts have settled at an equilibrium, and since when:
 * the end of the last window outside its band.  Then the last window's
 * values, which are the summary's final ones. */
static void track_settling(ms_sim_recorder *r, const ms_sim_sample *s) {
  ms_sim_summary *m = &r->sum;
  double t_end = s->time;
  /* one attempt per window is the resolution of a count */
  double floor_abs = 1.0 / s->width;
  double tol = r->cfg->settle_tolerance;
  /* healthy also needs goodput back: a queue still draining can send
   * the healthy attempt rate while most of it fails */
  bool in_h = s->has_healthy && !r->in_storm &&
              near(s->attempts, s->healthy_load, tol, floor_abs);
  bool in_c =
      s->has_collapsed && near(s->attempts, s->collapsed_load, tol, floor_abs);
  if (!in_h)
    r->off_healthy_at = t_end;
  if (!in_c)
    r->off_collapsed_at = t_end;
  m->settled_healthy = in_h;
  m->settled_collapsed = in_c && !in_h;
  m->settled_at =
      in_h ? r->off_healthy_at : (in_c ? r->off_collapsed_at : -1.0);
  m->final_state = s->state;
  m->final_storm = s->storm;
  m->final_offered = s->offered;
  m->final_attempts = s->attempts;
  m->final_failure_ratio = s->failure_ratio;
}

int ms_sim_recorder_window(ms_sim_recorder *r, double t_end, double width,
                           const ms_sim_counts *cnt, double backlog,
                           ms_error *err) {
  ms_sim_sample s;
  memset(&s, 0, sizeof s);
  window_rates(&s, r->cfg, t_end, width, cnt, backlog);
  int st = judge_window(r, &s, err);
  if (st != MS_OK)
    return st;
  add_to_summary(r, &s, cnt);
  track_settling(r, &s);
  if (r->sink != NULL && r->sink(r->ctx, &s) != 0) {
    r->stop = true;
    r->sum.stopped = true;
  }
  return MS_OK;
}

void ms_sim_recorder_finish(ms_sim_recorder *r, double duration, double events,
                            ms_sim_summary *out) {
  r->sum.duration = duration;
  r->sum.events = events;
  if (out != NULL)
    *out = r->sum;
}

/* ------------------------------------------------------------------ */
/* Dispatch and threshold search                                       */
/* ------------------------------------------------------------------ */

/* The longest backoff wait before retry r (the last), s. */
static double longest_backoff(const ms_backoff *b, int r) {
  switch (b->kind) {
  case MS_BACKOFF_NONE:
    return 0.0;
  case MS_BACKOFF_CONSTANT:
    return b->base;
  case MS_BACKOFF_DECORRELATED:
    return b->cap;
  default:
    return r > 0 ? ms_backoff_ceiling(b, r) : 0.0;
  }
}

/* The delay distributions the fluid engine builds (ms_delay_dists_build):
 * where the delay stops changing, at most r. */
static double delay_dists(const ms_backoff *b, int r) {
  double k;
  switch (b->kind) {
  case MS_BACKOFF_NONE:
  case MS_BACKOFF_CONSTANT:
    k = 1.0;
    break;
  case MS_BACKOFF_DECORRELATED:
    k = 64.0;
    break;
  default: {
    double m = b->multiplier > 0.0 ? b->multiplier : 2.0;
    k = b->base > 0.0 && m > 1.0
            ? 2.0 + ceil(log(fmax(b->cap / b->base, 1.0)) / log(m))
            : 1.0;
  }
  }
  return fmax(1.0, fmin(k, (double)r));
}

int ms_sim_memory_estimate(ms_sim_engine engine, const ms_sim_config *c,
                           double *bytes, ms_error *err) {
  const ms_failure_model *m = &c->service.model;
  const ms_retry_policy *pol = &c->service.policy;
  const ms_scenario *sc = &c->scenario;
  double lam = sc->offered_load, pool = (double)m->servers;
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *t = &sc->triggers[i];
    if (t->kind == MS_TRIGGER_LOAD && t->load > 0.0)
      lam += t->load;
    if (t->kind == MS_TRIGGER_SERVERS && (double)t->servers > pool)
      pool = (double)t->servers;
  }
  double r = pol->retries, T = m->kind == MS_MODEL_ERLANG ? m->timeout : 0.0;
  double B = longest_backoff(&c->backoff, pol->retries);
  bool finagle = pol->kind == MS_POLICY_FINAGLE;
  double W =
      finagle ? pol->finagle_ttl : (pol->has_budget ? c->budget_window : 0.0);
  double v;
  if (engine == MS_ENGINE_DES) {
    /* a spread timeout: the longest patience T + w, a timeout event per
     * waiting attempt, 4 bytes more a request; a timed response: 8 more
     * a request (its deadline) and an event per server */
    bool spread = m->kind == MS_MODEL_ERLANG && m->timeout_spread > 0.0;
    bool response = m->kind == MS_MODEL_ERLANG &&
                    m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE;
    double Tw = spread ? T + m->timeout_spread : T;
    double A = lam * (1.0 + r);
    double nq = A * Tw, nb = A * W;
    double nr = fmin(pool + lam * ((1.0 + r) * Tw + r * B), 2147483648.0);
    double ne =
        pool + lam * r * B + (spread ? nq : 0.0) + (response ? pool : 0.0);
    double per_request = 22.0 + (spread ? 4.0 : 0.0) + (response ? 8.0 : 0.0);
    v = 2.0 * (per_request * nr + 24.0 * ne) + 48.0 * (nq + nb);
  } else if (engine == MS_ENGINE_FLUID) {
    double dt;
    long spb;
    int st = ms_sim_fluid_dt(c, &dt, &spb, err);
    if (st != MS_OK)
      return st;
    /* a timeout range: retries land up to its longest timeout */
    double Tl = m->kind == MS_MODEL_ERLANG ? ms_timeout_longest(m) : 0.0;
    double J = ceil((Tl + B) / dt) + 2.0, k = delay_dists(&c->backoff, (int)r);
    v = 8.0 * r * J + 16.0 * k * J + 16.0 * ceil(W / dt);
    if (r > 0 && pol->kind == MS_POLICY_AWS)
      v += 8.0 * J;
    if (c->backoff.kind == MS_BACKOFF_DECORRELATED)
      v += 24.0 * k * (MS_DECORR_CELLS + 1);
  } else {
    return ms_fail(err, MS_EINVAL, "unknown engine %d", (int)engine);
  }
  /* a bin width near the smallest double makes the count overflow: such
   * a run is beyond every limit, and the estimate stays finite */
  *bytes = fmin(MS_SIM_MEMORY_BASE + v, DBL_MAX);
  return MS_OK;
}
