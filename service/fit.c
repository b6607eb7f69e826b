/* SPDX-License-Identifier: MIT */
/* The estimation of `metastable fit` (fit.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibration.h"
#include "fit.h"

/* Half the 95 % point of chi-square with one degree of freedom
 * (3.841458820694124 / 2). */
#define HALF_CHI2_95 1.920729410347062
/* Probabilities are kept inside [P_EPS, 1 - P_EPS] in the logs: a model
 * that says 1 where one attempt succeeded costs ln(1e-12) = -27.6 for it,
 * not minus infinity. */
#define P_EPS 1e-12
/* Most attempts failing: a storm, or below saturation a draining backlog. */
#define MOSTLY_FAILING 0.5
/* The grid of ln T (or ln C): points per decade, and its span around the
 * service time (T from S/1000 to 10^4 S) or the configured capacity (C
 * from C0/100 to 100 C0). */
#define GRID_PER_DECADE 8
#define GRID_MAX 64
/* Golden-section steps: the bracket of ln T shrinks by 0.618 a step, from
 * two grid cells (0.58) to 2e-8 in 36. */
#define GOLDEN_STEPS 36

/* ---- the intervals --------------------------------------------------- */

bool ms_fit_observe(const ms_service_spec *spec, const ms_inputs *in, int line,
                    ms_fit_obs *o, char *problem, size_t len) {
  memset(o, 0, sizeof *o);
  o->line = line;
  o->tau = in->interval > 0 && isfinite(in->interval) ? in->interval : 1.0;
  ms_inference inf;
  ms_input_id bad;
  if (ms_infer(spec, in, &inf, &bad, problem, len) != 0)
    return false;
  o->ok = true;
  o->lambda = inf.offered_load;
  o->servers = inf.servers;
  o->has_x = inf.has_observed_attempts && inf.observed_attempts > 0;
  o->x = inf.observed_attempts;
  o->has_q = o->has_x && inf.has_observed_failure;
  o->q = inf.observed_failure;
  /* the offered load is observed, not inferred through A(p_obs) */
  const ms_source *src = spec->inputs;
  o->has_amp = o->has_q && (src[MS_INPUT_OFFERED].kind != MS_SOURCE_NONE ||
                            src[MS_INPUT_RETRY].kind != MS_SOURCE_NONE);
  o->errors = o->q * o->x;
  const ms_source *e = &src[MS_INPUT_ERROR];
  if (e->kind == MS_SOURCE_NUMBER)
    o->errors = fmax(o->errors, e->number);
  else if (o->has_q && in->has[MS_INPUT_ERROR] &&
           isfinite(in->value[MS_INPUT_ERROR]))
    o->errors = fmax(o->errors, in->value[MS_INPUT_ERROR] *
                                    (e->scale > 0 ? e->scale : 1.0));
  /* the plugin's own sample rule; a row of a trace has no storm flag to
   * tell a backlog's drain, so more completions than attempts is taken as
   * one (storm true), as the plugin takes it in a storm */
  char why[160];
  o->sample = ms_service_time_sample(
      &inf, inf.servers, (spec->calibrate & MS_CALIBRATE_SERVERS) != 0, true,
      o->tau, o->tau, &o->sample_x, &o->sample_w, why, sizeof why);
  return true;
}

/* The failure model of interval o: m with the interval's pool. */
static ms_failure_model obs_model(const ms_fit_obs *o,
                                  const ms_failure_model *m) {
  ms_failure_model r = *m;
  if (r.kind == MS_MODEL_ERLANG && o->servers > 0)
    r.servers = o->servers;
  return r;
}

/* Roles under model m: draining where most attempts fail below
 * saturation, filling where most succeed above it; recovering for the
 * interval right after a mostly failing one (its backlog emptied within
 * it); the rest used. */
static void assign_roles(ms_fit_obs *o, size_t n, const ms_failure_model *m) {
  bool after_failing = false;
  for (size_t i = 0; i < n; i++) {
    if (!o[i].has_q) { /* no verdict or nothing observed */
      o[i].role = MS_FIT_NONE;
      continue;
    }
    ms_failure_model mm = obs_model(&o[i], m);
    bool failing = o[i].q > MOSTLY_FAILING;
    if (failing && o[i].x < ms_saturation_load(&mm))
      o[i].role = MS_FIT_DRAINING;
    else if (!failing && o[i].x >= ms_saturation_load(&mm))
      o[i].role = MS_FIT_FILLING;
    else if (!failing && after_failing)
      o[i].role = MS_FIT_RECOVERING;
    else
      o[i].role = MS_FIT_USED;
    after_failing = failing;
  }
}

/* ---- step 1: the service time ----------------------------------------- */

static void fit_service_time(const ms_fit_obs *o, size_t n,
                             const ms_failure_model *m, ms_fit_param *p) {
  p->configured = m->kind == MS_MODEL_ERLANG ? 1.0 / m->service_rate : INFINITY;
  if (m->kind != MS_MODEL_ERLANG) {
    snprintf(p->why, sizeof p->why, "the capacity model has no service time");
    return;
  }
  ms_estimator e;
  ms_estimator_init(&e, INFINITY);
  bool law = false;
  /* the utilisation law where the trace has it, else the latency */
  for (size_t i = 0; i < n && !law; i++)
    law = o[i].ok && o[i].sample == MS_SAMPLE_UTILIZATION;
  ms_sample_kind want = law ? MS_SAMPLE_UTILIZATION : MS_SAMPLE_LATENCY;
  for (size_t i = 0; i < n; i++)
    if (o[i].ok && o[i].sample == want) {
      ms_estimator_add(&e, o[i].sample_x, o[i].sample_w, o[i].tau, NULL);
      p->events += o[i].sample_w;
    }
  double mean, se;
  p->samples = (double)e.samples;
  if (!ms_estimator_get(&e, &mean, &se) || !(mean > 0)) {
    snprintf(p->why, sizeof p->why,
             "the trace has no busy_servers and completion_rate, nor "
             "latency, in two intervals or more");
    return;
  }
  p->fitted = true;
  p->value = mean;
  p->se = se;
  p->lo = fmax(0.0, mean - MS_Z95 * se);
  p->hi = mean + MS_Z95 * se;
  p->identified = ms_param_check(MS_PARAM_SERVICE_TIME, mean, NULL) == MS_OK;
  snprintf(p->why, sizeof p->why, "%s",
           law ? "utilisation law: busy_servers / completion_rate" : "latency");
}

/* ---- steps 2 and 3: the failures ----------------------------------------
 *
 * The failures of an interval are binomial: k = q n of n = x tau attempts,
 * each failing with p = P + b (1 - P), P the overload part of p(x) (the
 * wait tail C(c, x/mu) e^(-(c mu - x) T), 1 at or above saturation; or
 * the excess (x - C)/x over a capacity), b the base failure: the model of
 * ms_failure_probability.  Their log-likelihood is concave in b at a fixed
 * shape theta (T or C), so the base is profiled out exactly at each
 * theta; at low load P vanishes and what is left is the pooled binomial
 * estimate of b.  For the erlang model ln C(c, x/mu) does not depend on T
 * and is computed once per interval (ms_erlang_ln_c).
 */

typedef struct {
  const ms_fit_obs *o;
  size_t n;
  ms_failure_model m; /* the service time in place; base, shape vary */
  bool amp;           /* some interval has its offered load observed */
  ms_retry_policy pol;
  /* the used intervals, packed: their index in o, failures k, attempts
   * n, c mu - x, x, ln C(c, x/mu) (erlang, below saturation; else NaN),
   * and P at the current shape */
  size_t used;
  size_t *idx;
  double *k, *nn, *room, *x, *lnc, *tail;
  double u_hint; /* where the last maximum over u was */
  double b_hint; /* and the last maximum over b */
} lik;

static void set_shape(ms_failure_model *m, double theta) {
  if (m->kind == MS_MODEL_ERLANG)
    m->timeout = theta;
  else
    m->capacity = theta;
}

static double get_shape(const ms_failure_model *m) {
  return m->kind == MS_MODEL_ERLANG ? m->timeout : m->capacity;
}

static double clamp_p(double p) { return fmin(fmax(p, P_EPS), 1 - P_EPS); }

static void lik_free(lik *L) {
  free(L->idx);
  free(L->k);
  free(L->nn);
  free(L->room);
  free(L->x);
  free(L->lnc);
  free(L->tail);
}

static int lik_init(lik *L, const ms_fit_obs *o, size_t n,
                    const ms_service_params *p) {
  memset(L, 0, sizeof *L);
  L->o = o;
  L->n = n;
  L->m = p->model;
  L->pol = p->policy;
  size_t cap = n ? n : 1;
  L->idx = malloc(cap * sizeof *L->idx);
  double **arrays[] = {&L->k, &L->nn, &L->room, &L->x, &L->lnc, &L->tail};
  for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++)
    if ((*arrays[a] = malloc(cap * sizeof(double))) == NULL)
      return -1;
  if (L->idx == NULL)
    return -1;
  for (size_t i = 0; i < n; i++) {
    L->amp |= o[i].has_amp;
    if (o[i].role != MS_FIT_USED)
      continue;
    ms_failure_model m = obs_model(&o[i], &L->m);
    size_t j = L->used++;
    L->idx[j] = i;
    L->nn[j] = o[i].x * o[i].tau;
    L->k[j] = o[i].q * L->nn[j];
    L->x[j] = o[i].x;
    L->room[j] = ms_saturation_load(&m) - o[i].x;
    L->lnc[j] = NAN;
    double a = o[i].x / m.service_rate;
    if (m.kind == MS_MODEL_ERLANG && a < (double)m.servers)
      ms_erlang_ln_c(m.servers, a, &L->lnc[j], NULL);
  }
  return 0;
}

/* Whether P is the plain M/M/c wait tail C e^(-(c mu - x) T), which
 * tails_at evaluates from the cached ln C: a timeout on the wait alone,
 * fixed, exponential service, no queue limit. */
static bool plain_wait_tail(const ms_failure_model *m) {
  return m->kind == MS_MODEL_ERLANG &&
         m->timeout_covers == MS_TIMEOUT_COVERS_WAIT &&
         !(m->timeout_spread > 0.0) && !m->has_queue_limit &&
         (!m->has_service_time_cv || m->service_time_cv == 1.0);
}

/* The overload part P of every used interval at shape theta.  Any other
 * erlang service (the timeout on the response, a timeout range, a
 * service_time_cv, a queue limit) takes P from the model itself
 * (ms_failure_probability with no base failure), so the fitted timeout
 * means what the service file's does. */
static void tails_at(lik *L, double theta) {
  bool capacity = L->m.kind == MS_MODEL_CAPACITY;
  bool plain = capacity || plain_wait_tail(&L->m);
  for (size_t j = 0; j < L->used; j++) {
    if (!plain) {
      ms_failure_model m = obs_model(&L->o[L->idx[j]], &L->m);
      set_shape(&m, theta);
      m.base_failure = 0.0;
      double q;
      L->tail[j] =
          ms_failure_probability(&m, L->x[j], &q, NULL) == MS_OK ? q : 1.0;
    } else if (capacity)
      L->tail[j] = L->x[j] > theta ? (L->x[j] - theta) / L->x[j] : 0.0;
    else
      L->tail[j] = isnan(L->lnc[j]) ? 1.0 : exp(L->lnc[j] - L->room[j] * theta);
  }
}

/* The failures' log-likelihood at base b and the current tails. */
static double base_ll(const lik *L, double b) {
  double ll = 0;
  for (size_t j = 0; j < L->used; j++) {
    double pc = clamp_p(L->tail[j] + b * (1 - L->tail[j]));
    ll += L->k[j] * log(pc) + (L->nn[j] - L->k[j]) * log1p(-pc);
  }
  return ll;
}

/* The first and second derivatives of base_ll in b; the second is < 0
 * (the log-likelihood is concave in b). */
static void base_slope(const lik *L, double b, double *d1, double *d2) {
  double g = 0, h = 0;
  for (size_t j = 0; j < L->used; j++) {
    double w = 1 - L->tail[j];
    if (!(w > 0))
      continue;
    double pc = clamp_p(L->tail[j] + b * w), f = L->nn[j] - L->k[j];
    g += w * (L->k[j] / pc - f / (1 - pc));
    h -= w * w * (L->k[j] / (pc * pc) + f / ((1 - pc) * (1 - pc)));
  }
  *d1 = g;
  *d2 = h;
}

/* The most likely base at the current tails, in [0, MS_BASE_FAILURE_MAX]: the
 * root of the slope by Newton's method, kept inside the bracket where the slope
 * changes sign (bisection when a step leaves it). */
static double best_base(lik *L, double *ll) {
  double lo = 0, hi = MS_BASE_FAILURE_MAX, g, h, b;
  base_slope(L, lo, &g, &h);
  if (g <= 0) {
    *ll = base_ll(L, 0.0);
    return 0.0;
  }
  base_slope(L, hi, &g, &h);
  if (g >= 0) {
    *ll = base_ll(L, hi);
    return hi;
  }
  b = L->b_hint > 0 && L->b_hint < MS_BASE_FAILURE_MAX ? L->b_hint : 0.01;
  for (int i = 0; i < 100; i++) {
    base_slope(L, b, &g, &h);
    if (g > 0)
      lo = b;
    else
      hi = b;
    double next = h < 0 ? b - g / h : 0.5 * (lo + hi);
    if (!(next > lo && next < hi))
      next = 0.5 * (lo + hi);
    bool done = fabs(next - b) <= 1e-13 * fmax(b, 1e-12);
    b = next;
    if (done || hi - lo <= 1e-15)
      break;
  }
  *ll = base_ll(L, b);
  L->b_hint = b;
  return b;
}

/* The profile over the base at u = ln theta. */
static double profile_u(lik *L, double u, double *b) {
  tails_at(L, exp(u));
  double ll, bb = best_base(L, &ll);
  if (b != NULL)
    *b = bb;
  return ll;
}

/* The grid of u = ln theta, with the profile at each point. */
typedef struct {
  int n;
  double u[GRID_MAX], ll[GRID_MAX];
} shape_grid;

/* The grid's span: T from S/1000 to 10^4 S within the model's limit on
 * c mu T (the largest pool), or C from C0/100 to 100 C0. */
static void grid_build(lik *L, double theta0, shape_grid *g) {
  double lo, hi;
  if (L->m.kind == MS_MODEL_CAPACITY) {
    lo = log(theta0 / 100);
    hi = log(theta0 * 100);
  } else {
    double c = (double)L->m.servers, s = 1.0 / L->m.service_rate;
    for (size_t i = 0; i < L->n; i++)
      c = fmax(c, (double)L->o[i].servers);
    lo = log(1e-3 * s);
    hi = log(fmax(fmin(1e4 * s, 0.5 * MS_MAX_TIMEOUT_COMPLETIONS * s / c),
                  2e-3 * s));
  }
  int n = (int)ceil((hi - lo) / log(10.0) * GRID_PER_DECADE) + 1;
  g->n = n < 3 ? 3 : n > GRID_MAX ? GRID_MAX : n;
  for (int k = 0; k < g->n; k++) {
    g->u[k] = lo + (hi - lo) * k / (g->n - 1);
    g->ll[k] = profile_u(L, g->u[k], NULL);
  }
}

/* The maximum of f over the grid's cells beside its best point k:
 * golden-section search (the grid point when it is higher). */
typedef double (*u_function)(lik *L, double u, void *ctx);

static double golden(lik *L, u_function f, void *ctx, const shape_grid *g,
                     int k, double fk, int steps, double *f_best) {
  const double ratio = 0.6180339887498949;
  double a = g->u[k > 0 ? k - 1 : 0], b = g->u[k < g->n - 1 ? k + 1 : k];
  double c = b - ratio * (b - a), d = a + ratio * (b - a);
  double fc = f(L, c, ctx), fd = f(L, d, ctx);
  for (int i = 0; i < steps; i++) {
    if (fc >= fd) {
      b = d, d = c, fd = fc;
      c = b - ratio * (b - a);
      fc = f(L, c, ctx);
    } else {
      a = c, c = d, fc = fd;
      d = a + ratio * (b - a);
      fd = f(L, d, ctx);
    }
  }
  double u = fc >= fd ? c : d, fu = fmax(fc, fd);
  if (!(fu >= fk)) {
    u = g->u[k];
    fu = fk;
  }
  *f_best = fu;
  return u;
}

static double f_profile(lik *L, double u, void *ctx) {
  (void)ctx;
  return profile_u(L, u, NULL);
}

/* The failures' log-likelihood at base *ctx, maximised over u. */
static double f_at_base(lik *L, double u, void *ctx) {
  tails_at(L, exp(u));
  return base_ll(L, *(const double *)ctx);
}

/* The maximum over u of the failures at base b: the grid's points near
 * the last maximum (as far as they rise), then golden-section search. */
static double max_over_u(lik *L, const shape_grid *g, double b) {
  int near = 0;
  for (int j = 1; j < g->n; j++)
    if (fabs(g->u[j] - L->u_hint) < fabs(g->u[near] - L->u_hint))
      near = j;
  int k = near;
  double fk = f_at_base(L, g->u[k], &b);
  for (int dir = -1; dir <= 1; dir += 2)
    for (int j = near + dir; j >= 0 && j < g->n; j += dir) {
      double f = f_at_base(L, g->u[j], &b);
      if (f > fk) {
        fk = f;
        k = j;
      } else if (abs(j - near) >= 2) {
        break;
      }
    }
  double best;
  L->u_hint = golden(L, f_at_base, &b, g, k, fk, GOLDEN_STEPS / 2, &best);
  return best;
}

/* Where the profile over the base falls to target on one side of u_hat
 * (dir -1 or +1): the first grid point beyond it below target, then
 * bisection; false when the grid ends first (not bounded that side). */
static bool shape_bound(lik *L, const shape_grid *g, double u_hat,
                        double target, int dir, double *bound) {
  int k = dir > 0 ? 0 : g->n - 1;
  while (k >= 0 && k < g->n && (dir > 0 ? g->u[k] <= u_hat : g->u[k] >= u_hat))
    k += dir;
  double inside = u_hat;
  for (; k >= 0 && k < g->n && g->ll[k] >= target; k += dir)
    inside = g->u[k];
  if (k < 0 || k >= g->n)
    return false;
  double outside = g->u[k];
  for (int i = 0; i < 40 && fabs(outside - inside) > 1e-9; i++) {
    double mid = 0.5 * (inside + outside);
    if (profile_u(L, mid, NULL) >= target)
      inside = mid;
    else
      outside = mid;
  }
  *bound = 0.5 * (inside + outside);
  return true;
}

/* Where the profile over the shape falls to target between b_in (inside)
 * and b_out, by bisection. */
static double base_bound(lik *L, const shape_grid *g, double target,
                         double b_in, double b_out) {
  for (int i = 0; i < 40 && fabs(b_out - b_in) > 1e-4 * fmax(b_in, 1e-6); i++) {
    double mid = 0.5 * (b_in + b_out);
    if (max_over_u(L, g, mid) >= target)
      b_in = mid;
    else
      b_out = mid;
  }
  return 0.5 * (b_in + b_out);
}

/* Pearson's chi-square of the failures over its degrees of freedom (two
 * parameters) at base b and the current tails, at least 1; terms at a
 * clamp (p = 1 in a storm) carry no variance and are left out. */
static double failures_dispersion(const lik *L, double b) {
  double x2 = 0, terms = 0;
  for (size_t j = 0; j < L->used; j++) {
    double p = L->tail[j] + b * (1 - L->tail[j]), nn = L->nn[j];
    if (p > 1e-9 && p < 1 - 1e-9 && nn > 0) {
      x2 += (L->k[j] - nn * p) * (L->k[j] - nn * p) / (nn * p * (1 - p));
      terms++;
    }
  }
  return terms > 2 ? fmax(1.0, x2 / (terms - 2)) : 1.0;
}

/* The low-load intervals at the fitted model: the base's own sample. */
static void mark_low_load(ms_fit_obs *o, size_t n, const lik *L) {
  for (size_t i = 0; i < n; i++)
    o[i].low_load = false;
  for (size_t j = 0; j < L->used; j++) {
    ms_fit_obs *oi = &o[L->idx[j]];
    ms_failure_model mm = obs_model(oi, &L->m);
    oi->low_load = oi->q <= MOSTLY_FAILING &&
                   oi->x <= MS_LOW_LOAD_UTILIZATION * ms_saturation_load(&mm) &&
                   L->tail[j] <= MS_LOW_LOAD_OVERLOAD;
  }
}

/* Steps 2 and 3 for the failures: the joint maximum over (b, ln theta),
 * the profile-likelihood interval of each, and the values the fitted
 * service takes: theta when identified (else the configured one, or the
 * estimate when the configured one lies outside its interval), and the
 * most likely base at that theta. */
static void fit_failure_model(lik *L, ms_fit_param *base, ms_fit_param *shape,
                              double theta0, double *loglik) {
  shape_grid g;
  grid_build(L, theta0, &g);
  int k = 0;
  for (int j = 1; j < g.n; j++)
    if (g.ll[j] > g.ll[k])
      k = j;
  double best, b_hat;
  double u_hat =
      golden(L, f_profile, NULL, &g, k, g.ll[k], GOLDEN_STEPS, &best);
  profile_u(L, u_hat, &b_hat);
  L->u_hint = u_hat;
  double phi = failures_dispersion(L, b_hat);
  double target = best - HALF_CHI2_95 * phi;
  double lo, hi;
  bool has_lo = shape_bound(L, &g, u_hat, target, -1, &lo);
  bool has_hi = shape_bound(L, &g, u_hat, target, +1, &hi);
  shape->fitted = true;
  shape->value = exp(u_hat);
  shape->lo = has_lo ? exp(lo) : 0.0;
  shape->hi = has_hi ? exp(hi) : INFINITY;
  shape->identified = has_lo && has_hi;
  shape->dispersion = phi;
  base->fitted = true;
  base->dispersion = phi;
  base->lo = max_over_u(L, &g, 0.0) >= target
                 ? 0.0
                 : base_bound(L, &g, target, b_hat, 0.0);
  base->hi = max_over_u(L, &g, MS_BASE_FAILURE_MAX) >= target
                 ? INFINITY
                 : base_bound(L, &g, target, b_hat, MS_BASE_FAILURE_MAX);
  base->identified = isfinite(base->hi);
  /* the shape the fitted service takes, and its base */
  double used = shape->identified || theta0 < shape->lo || theta0 > shape->hi
                    ? shape->value
                    : theta0;
  base->value = b_hat;
  *loglik = best;
  if (used != shape->value)
    profile_u(L, log(used), &base->value);
  tails_at(L, used);
  set_shape(&L->m, used);
  snprintf(shape->why, sizeof shape->why,
           "maximum likelihood of the failures (binomial)");
  if (!shape->identified)
    snprintf(shape->note, sizeof shape->note, "%s",
             used == theta0 ? "the configured value is kept"
                            : "the configured value is outside the interval: "
                              "the estimate is taken");
  if (!base->identified)
    snprintf(base->note, sizeof base->note, "the configured value is kept");
}

/* ---- step 3: the retries ----------------------------------------------- */

/* The share of failed attempts that the policy retries when attempts fail
 * with probability p: retries per request A(p) - 1 over failures per
 * request p A(p); for the plain policy in closed form, 1 - p^r / (1 + p
 * + ... + p^r), exact for small p where A - 1 would cancel.  The sum is
 * the loop for up to 100 retries and (1 - p^(r+1)) / (1 - p), through
 * expm1 and log so that p near 1 keeps its digits, beyond: the fit tries
 * every r up to twice the configured one, and 10,000 retries would make
 * the loop quadratic. */
static double retried_share(const ms_retry_policy *pol, double p) {
  if (pol->retries == 0)
    return 0.0;
  if (pol->tiers == 1 && !pol->has_budget && !pol->has_token) {
    double pr = 1, sum = 1;
    if (pol->retries > 100 && !(p > 0))
      return 1.0; /* p^r = 0, the sum 1 */
    if (pol->retries > 100 && p >= 1)
      return 1 - 1.0 / (pol->retries + 1);
    if (pol->retries > 100) {
      double lp = log(p);
      pr = exp(pol->retries * lp);
      sum = expm1((pol->retries + 1) * lp) / expm1(lp);
      return 1 - pr / sum;
    }
    for (int k = 1; k <= pol->retries; k++) {
      pr *= p;
      sum += pr;
    }
    return 1 - pr / sum;
  }
  double q = fmax(p, 1e-6), A;
  if (ms_amplification(pol, q, &A, NULL) != MS_OK)
    return 0.0;
  return fmin(fmax((A - 1) / (q * A), 0.0), 1.0);
}

/* The retries of interval o, and the failures they come from. */
static void retries_of(const ms_fit_obs *o, double *R, double *F) {
  *F = o->errors * o->tau;
  *R = fmin(fmax((o->x - o->lambda) * o->tau, 0.0), *F);
}

/* The retries' log-likelihood with r retries: R retries of F failures,
 * binomial with the share rho(q) the policy retries at the interval's
 * observed failure ratio q.  Every interval with its offered load
 * observed counts, a draining one too: its clients retry as in a storm
 * (the stationary p(x) does not describe it, the policy does).  It does
 * not depend on the timeout. */
static double retries_ll(const lik *L, int r) {
  if (!L->amp)
    return 0.0;
  ms_retry_policy pol = L->pol;
  pol.retries = r;
  double ll = 0;
  for (size_t i = 0; i < L->n; i++) {
    const ms_fit_obs *o = &L->o[i];
    double R, F;
    retries_of(o, &R, &F);
    if (o->role == MS_FIT_NONE || !o->has_amp || !(F > 0))
      continue;
    double rho = clamp_p(retried_share(&pol, o->q));
    ll += R * log(rho) + (F - R) * log1p(-rho);
  }
  return ll;
}

/* Pearson's chi-square of the retries over its degrees of freedom, at
 * least 1. */
static double retries_dispersion(const lik *L, int r) {
  ms_retry_policy pol = L->pol;
  pol.retries = r;
  double x2 = 0, terms = 0;
  for (size_t i = 0; L->amp && i < L->n; i++) {
    const ms_fit_obs *o = &L->o[i];
    double R, F, rho = retried_share(&pol, o->q);
    retries_of(o, &R, &F);
    if (o->role != MS_FIT_NONE && o->has_amp && F > 0 && rho > 1e-9 &&
        rho < 1 - 1e-9) {
      x2 += (R - F * rho) * (R - F * rho) / (F * rho * (1 - rho));
      terms++;
    }
  }
  return terms > 1 ? fmax(1.0, x2 / (terms - 1)) : 1.0;
}

/* The most likely r in 0 .. rmax, and the r within the threshold (times
 * the dispersion) of it.  Identified when that set stops below rmax and
 * the offered load was observed. */
static void fit_retries(const lik *L, int rmax, ms_fit_param *p) {
  double ll[MS_MAX_RETRIES + 1];
  int r_hat = 0;
  for (int r = 0; r <= rmax; r++) {
    ll[r] = retries_ll(L, r);
    if (ll[r] > ll[r_hat])
      r_hat = r;
  }
  double phi = retries_dispersion(L, r_hat);
  int lo = r_hat, hi = r_hat;
  for (int r = 0; r <= rmax; r++)
    if (ll[r] >= ll[r_hat] - HALF_CHI2_95 * phi) {
      lo = r < lo ? r : lo;
      hi = r > hi ? r : hi;
    }
  p->fitted = L->amp;
  p->value = r_hat;
  p->lo = lo;
  p->hi = hi < rmax ? hi : INFINITY;
  p->dispersion = phi;
  p->identified = L->amp && hi < rmax;
  snprintf(p->why, sizeof p->why, "%s",
           L->amp ? "maximum likelihood of the retries (binomial)"
                  : "the offered load is not observed apart from the "
                    "attempts (offered_rate or retry_rate)");
  if (L->amp && !p->identified)
    snprintf(p->note, sizeof p->note, "the configured value is kept");
}

/* ---- the whole fit ----------------------------------------------------- */

/* The RMS of ms_failure_residual over the used intervals out of storm
 * under model m, and the sum of its squares (as the online misfit check,
 * which waits for calm: in a storm the model's p is 1 and a window that
 * counts the failures of the one before it is all that is left). */
static void residuals(const ms_fit_obs *o, size_t n, const ms_failure_model *m,
                      double *rms, double *deviance) {
  double sum = 0, cnt = 0;
  for (size_t i = 0; i < n; i++) {
    if (o[i].role != MS_FIT_USED || o[i].q > MOSTLY_FAILING)
      continue;
    ms_failure_model mm = obs_model(&o[i], m);
    double p;
    if (ms_failure_probability(&mm, o[i].x, &p, NULL) != MS_OK)
      continue;
    double r = ms_failure_residual(o[i].q, p, o[i].x * o[i].tau);
    sum += r * r;
    cnt++;
  }
  *deviance = sum;
  *rms = cnt > 0 ? sqrt(sum / cnt) : 0.0;
}

/* The pool of the landscapes: the file's, else the last one read. */
static long landscape_pool(const ms_service_spec *spec, const ms_fit_obs *o,
                           size_t n) {
  if (spec->params.model.kind != MS_MODEL_ERLANG)
    return 0;
  for (size_t i = n; !spec->has_servers && i-- > 0;)
    if (o[i].servers > 0)
      return o[i].servers;
  return spec->params.model.servers;
}

static void count_roles(const ms_fit_obs *o, size_t n, ms_fit_result *r) {
  r->rows = n;
  for (size_t i = 0; i < n; i++) {
    r->no_verdict += !o[i].ok;
    r->used += o[i].role == MS_FIT_USED;
    r->storm += o[i].role == MS_FIT_USED && o[i].q > MOSTLY_FAILING;
    r->draining += o[i].role == MS_FIT_DRAINING;
    r->recovering += o[i].role == MS_FIT_RECOVERING;
    r->filling += o[i].role == MS_FIT_FILLING;
    r->low_load += o[i].low_load;
  }
}

/* Steps 2 and 3: the roles (again with the fitted capacity, which moves
 * the saturation load of the capacity model), the failures, the
 * retries. */
static int fit_failures(ms_fit_obs *o, size_t n, ms_fit_result *r,
                        ms_service_params *p) {
  double theta0 = get_shape(&r->configured.model);
  int rounds = p->model.kind == MS_MODEL_CAPACITY ? 2 : 1;
  for (int round = 0; round < rounds; round++) {
    assign_roles(o, n, &p->model);
    lik L;
    if (lik_init(&L, o, n, p) != 0) {
      lik_free(&L);
      return -1;
    }
    memset(&r->base_failure, 0, sizeof r->base_failure);
    memset(&r->shape, 0, sizeof r->shape);
    fit_failure_model(&L, &r->base_failure, &r->shape, theta0, &r->loglik);
    mark_low_load(o, n, &L);
    for (size_t i = 0; i < n; i++)
      if (o[i].low_load) {
        r->base_failure.samples++;
        r->base_failure.events += o[i].x * o[i].tau;
      }
    snprintf(r->base_failure.why, sizeof r->base_failure.why,
             "failure ratio at low load (binomial, the %s profiled out)",
             p->model.kind == MS_MODEL_ERLANG ? "timeout" : "capacity");
    fit_retries(&L, r->max_retries, &r->retries);
    p->model = L.m;
    if (r->base_failure.identified)
      p->model.base_failure = r->base_failure.value;
    if (r->retries.identified)
      p->policy.retries = (int)r->retries.value;
    r->amplification = L.amp;
    lik_free(&L);
  }
  return 0;
}

int ms_fit_run(const ms_service_spec *spec, ms_fit_obs *o, size_t n,
               ms_fit_result *r, char *err, size_t len) {
  memset(r, 0, sizeof *r);
  r->configured = r->fitted = spec->params;
  r->servers = landscape_pool(spec, o, n);
  if (r->servers > 0)
    r->configured.model.servers = r->fitted.model.servers = r->servers;
  const ms_failure_model *cm = &r->configured.model;
  int rmax = 2 * r->configured.policy.retries + 2;
  r->max_retries = rmax < 10               ? 10
                   : rmax > MS_MAX_RETRIES ? MS_MAX_RETRIES
                                           : rmax;
  ms_service_params p = r->configured;
  fit_service_time(o, n, cm, &r->service_time);
  if (r->service_time.identified)
    p.model.service_rate = 1.0 / r->service_time.value;
  bool failures = false;
  for (size_t i = 0; i < n; i++)
    failures |= o[i].has_q;
  if (failures && fit_failures(o, n, r, &p) != 0) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  if (!failures)
    snprintf(r->base_failure.why, sizeof r->base_failure.why,
             "the trace has no attempts and failures (arrival_rate and "
             "error_rate)");
  r->base_failure.configured = cm->base_failure;
  r->shape.configured =
      cm->kind == MS_MODEL_ERLANG ? cm->timeout : cm->capacity;
  r->retries.configured = r->configured.policy.retries;
  count_roles(o, n, r);
  if (!r->service_time.fitted && !failures) {
    snprintf(err, len,
             "nothing to fit: no interval has busy_servers and "
             "completion_rate, latency, or attempts and failures "
             "(arrival_rate and error_rate) with a verdict");
    return -1;
  }
  ms_error e;
  if (ms_service_params_check(&p, &e) != MS_OK) {
    snprintf(err, len, "the fitted service is not valid: %s", e.msg);
    return -1;
  }
  r->fitted = p;
  residuals(o, n, &r->configured.model, &r->rms_before, &r->deviance_before);
  residuals(o, n, &r->fitted.model, &r->rms_after, &r->deviance_after);
  if (ms_landscape_build(&r->configured, &r->ls_configured, &e) != MS_OK ||
      ms_landscape_build(&r->fitted, &r->ls_fitted, &e) != MS_OK) {
    snprintf(err, len, "model: %s", e.msg);
    return -1;
  }
  return 0;
}

/* ---- the fitted service file ------------------------------------------ */

/* A number that reads back as the same double. */
static const char *num(char buf[32], double x) {
  snprintf(buf, 32, "%.17g", x);
  for (int prec = 15; prec < 17; prec++) {
    char t[32];
    snprintf(t, sizeof t, "%.*g", prec, x);
    if (strtod(t, NULL) == x) {
      memcpy(buf, t, sizeof t);
      break;
    }
  }
  return buf;
}

/* A YAML double-quoted scalar (YAML 1.2 sec. 7.3.1): backslashes and
 * quotes escaped (an identifier has no quote or blank, but a glob may
 * hold a backslash). */
static void quoted(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void write_inputs(FILE *f, const ms_service_spec *spec) {
  char b[32];
  fputs("    inputs:\n", f);
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const ms_source *src = &spec->inputs[i];
    if (src->kind == MS_SOURCE_NONE)
      continue;
    fprintf(f, "      %s: ", ms_input_name((ms_input_id)i));
    if (src->kind == MS_SOURCE_NUMBER) {
      fprintf(f, "%s\n", num(b, src->number));
      continue;
    }
    bool plain = src->missing == MS_MISSING_SKIP && !(src->scale > 0);
    if (!plain)
      fputs("{source: ", f);
    quoted(f, src->pattern);
    if (src->missing == MS_MISSING_ZERO)
      fputs(", missing: zero", f);
    if (src->scale > 0)
      fprintf(f, ", scale: %s", num(b, src->scale));
    fputs(plain ? "\n" : "}\n", f);
  }
}

static void write_settings(FILE *f, const ms_service_spec *spec) {
  char b[32];
  if (spec->has_headroom_warning)
    fprintf(f, "    headroom_warning: %s\n", num(b, spec->headroom_warning));
  if (spec->clear_after > 0)
    fprintf(f, "    clear_after: %d\n", spec->clear_after);
  if (spec->calibrate) {
    fputs("    calibrate: [", f);
    for (int k = 0, n = 0; k < 3; k++)
      if (spec->calibrate & (1 << k))
        fprintf(f, "%s%s", n++ ? ", " : "", ms_calibrate_name(k));
    fputs("]\n", f);
  }
  if (spec->calibration_time > 0)
    fprintf(f, "    calibration_time: %s\n", num(b, spec->calibration_time));
  if (spec->calibration_threshold > 0)
    fprintf(f, "    calibration_threshold: %s\n",
            num(b, spec->calibration_threshold));
  if (spec->calibration_intervals > 0)
    fprintf(f, "    calibration_intervals: %d\n", spec->calibration_intervals);
  if (spec->misfit_threshold > 0)
    fprintf(f, "    misfit_threshold: %s\n", num(b, spec->misfit_threshold));
  if (spec->misfit_intervals > 0)
    fprintf(f, "    misfit_intervals: %d\n", spec->misfit_intervals);
}

int ms_fit_write_spec(FILE *f, const ms_service_spec *spec,
                      const ms_fit_result *r) {
  const ms_failure_model *m = &r->fitted.model;
  const ms_retry_policy *pol = &r->fitted.policy;
  char b[32];
  fprintf(f, "services:\n  - name: %s\n", spec->name);
  if (m->kind == MS_MODEL_ERLANG) {
    fputs("    model: erlang\n", f);
    if (spec->has_servers)
      fprintf(f, "    servers: %ld\n", spec->params.model.servers);
    /* with their unit: a bare number is seconds, but one that looks like
     * milliseconds is warned about (ms_service_unit_warnings) */
    fprintf(f, "    service_time: %ss\n", num(b, 1.0 / m->service_rate));
    fprintf(f, "    timeout: %ss\n", num(b, m->timeout));
    if (m->timeout_covers != MS_TIMEOUT_COVERS_DEFAULT)
      fprintf(f, "    timeout_covers: %s\n",
              ms_timeout_covers_name(m->timeout_covers));
    if (m->has_service_time_cv)
      fprintf(f, "    service_time_cv: %s\n", num(b, m->service_time_cv));
  } else {
    fprintf(f, "    model: capacity\n    capacity: %s\n", num(b, m->capacity));
  }
  fprintf(f, "    base_failure: %s\n", num(b, m->base_failure));
  fprintf(f, "    retries: %d\n", pol->retries);
  if (pol->tiers > 1)
    fprintf(f, "    tiers: %d\n", pol->tiers);
  if (pol->has_budget)
    fprintf(f, "    retry_budget: %s\n", num(b, pol->retry_budget));
  if (pol->has_token)
    fprintf(f, "    token_ratio: %s\n", num(b, pol->token_ratio));
  write_settings(f, spec);
  write_inputs(f, spec);
  return ferror(f) ? -1 : 0;
}
