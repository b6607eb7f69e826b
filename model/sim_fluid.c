/* SPDX-License-Identifier: MIT */
/*
 * The fluid engine: rates in bins of width dt, retries scheduled into later
 * bins by the backoff policy, failure probability from the model (memoryless,
 * doc/design.md §6) or from a queue carried between bins (pointwise stationary
 * fluid flow approximation, its excess over the stationary queue a FIFO
 * backlog: bin_failure).  See ms_sim_fluid in sim.h.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* Failure causes, by when the client learns of them. */
enum { CAUSE_TIMEOUT = 0, CAUSE_FAST = 1, CAUSES = 2 };

/* Farthest bin a retry may land in, relative to its attempt's (the
 * schedule holds r times this many bins). */
#define MAX_REACH (1L << 22)
/* Most cells of the retry schedule, retries x ring bins: the most that
 * 100 retries could ask for when 100 was the limit (100 x MAX_REACH
 * doubles, 3.4 GB), so 10,000 retries need a ring 100 times shorter. */
#define MAX_SCHEDULE (100.0 * (double)MAX_REACH)

/* Where the retries of attempts sent in bin i land: bin i + j, j >= 1. */
typedef struct {
  long first, last; /* j range, 1 <= first <= last */
  double *w;        /* last - first + 1 weights summing to 1 */
} kernel;

/* Integral of the unit tent max(0, 1 - |z|) from -infinity to z. */
static double tent_cdf(double z) {
  if (z <= -1.0)
    return 0.0;
  if (z <= 0.0)
    return 0.5 * (z + 1.0) * (z + 1.0);
  if (z < 1.0)
    return 1.0 - 0.5 * (1.0 - z) * (1.0 - z);
  return 1.0;
}

/* The integral of tent_cdf from -infinity to z, less the ramp max(z, 0):
 * max(0, 1 - |z|)^3 / 6, nonzero only within one bin of 0. */
static double tent_cubic(double z) {
  double a = fmax(0.0, 1.0 - fabs(z));
  return a * a * a / 6.0;
}

/*
 * The landing distribution of a retry whose delay (detection plus backoff)
 * is `detect` plus a draw from dist, for an attempt uniform within its bin:
 * a point delay L (in bins) puts 1 - frac(L) into bin floor(L) and frac(L)
 * into the next (the unit tent centred on L), a uniform delay on [a, b] the
 * tent averaged over [a, b].  Mass before bin 1 moves to bin 1.
 *
 * A detection uniform on [detect, detect + spread] (a timeout range,
 * spread > 0 s) is convolved in exactly: a point piece becomes a uniform
 * one of width spread; a uniform piece of width b - a becomes the
 * trapezoid U[a, b] + U[0, W], W = spread / dt, whose mass in bin j is
 * [T2(j - a) - T2(j - a - W) - T2(j - b) + T2(j - b - W)] / ((b - a) W),
 * T2 the integral of tent_cdf, written as a clamped ramp plus tent_cubic
 * so that far bins do not cancel.  spread = 0: the code of before.
 */
static int kernel_build(const ms_delay_dist *dist, double detect, double spread,
                        double dt, kernel *k) {
  long jmax = 1;
  for (int i = 0; i < dist->n; i++) {
    double jb = ceil((detect + dist->hi[i] + spread) / dt) + 1;
    if (jb > (double)MAX_REACH)
      return MS_ELIMIT;
    if ((long)jb > jmax)
      jmax = (long)jb;
  }
  double *w = calloc((size_t)jmax + 1, sizeof *w);
  if (w == NULL)
    return MS_ENOMEM;
  double W = spread / dt;
  for (int i = 0; i < dist->n; i++) {
    double a = (detect + dist->lo[i]) / dt, b = (detect + dist->hi[i]) / dt;
    double wi = dist->w[i];
    if (W > 0.0 && (b - a < 1e-9 || W < 1e-6))
      b += W; /* a point, or a spread too small to shape: one uniform */
    else if (W > 0.0) {
      long j0 = (long)floor(a), j1 = (long)ceil(b + W);
      double den = (b - a) * W;
      for (long j = j0; j <= j1 && j <= jmax; j++) {
        double za = (double)j - a, zb = (double)j - b;
        double ramp = fmin(W, fmax(0.0, za)) - fmin(W, fmax(0.0, zb));
        double cub = tent_cubic(za) - tent_cubic(za - W) - tent_cubic(zb) +
                     tent_cubic(zb - W);
        double m = wi * fmax(0.0, ramp + cub) / den;
        w[j > 1 ? j : 1] += m;
      }
      continue;
    }
    if (b - a < 1e-9) {
      double jf = floor(a), f = a - jf;
      long j = (long)jf;
      w[j > 1 ? j : 1] += wi * (1.0 - f);
      w[j + 1 > 1 ? j + 1 : 1] += wi * f;
      continue;
    }
    long j0 = (long)floor(a), j1 = (long)ceil(b);
    for (long j = j0; j <= j1; j++) {
      double m =
          wi * (tent_cdf((double)j - a) - tent_cdf((double)j - b)) / (b - a);
      w[j > 1 ? j : 1] += m;
    }
  }
  long first = 1, last = jmax;
  while (first < last && w[first] == 0.0)
    first++;
  while (last > first && w[last] == 0.0)
    last--;
  double sum = 0.0;
  for (long j = first; j <= last; j++)
    sum += w[j];
  k->first = first;
  k->last = last;
  k->w = malloc((size_t)(last - first + 1) * sizeof *k->w);
  if (k->w == NULL) {
    free(w);
    return MS_ENOMEM;
  }
  for (long j = first; j <= last; j++)
    k->w[j - first] = w[j] / sum;
  free(w);
  return MS_OK;
}

/* ---- failure probability ------------------------------------------- */

/* p and the timeout (or overload) probability q of the memoryless model;
 * a timeout range averages q over it as the model does (ms_failure_eval_at
 * without the base failures: loop.c's adaptive Gauss-Kronrod). */
static void memoryless_failure(const ms_failure_model *m, double x, double *p,
                               double *q) {
  double base = m->base_failure;
  if (m->kind == MS_MODEL_ERLANG && m->servers > 0 &&
      x < (double)m->servers * m->service_rate &&
      m->timeout + m->timeout_spread > m->timeout) {
    ms_failure_model one = *m;
    one.base_failure = 0.0;
    ms_failure_eval f;
    ms_failure_eval_at(&one, x, &f);
    *q = f.p;
  } else if (m->kind == MS_MODEL_CAPACITY) {
    *q = x > m->capacity ? (x - m->capacity) / x : 0.0;
  } else if (m->servers == 0) {
    *q = 1.0;
  } else {
    double mu = m->service_rate, cmu = (double)m->servers * mu;
    double a = x / mu;
    if (x >= cmu) {
      *q = 1.0;
    } else if (m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE) {
      /* P(W + S > T) (ms_failure_tail's), with the service's cv */
      double ln_q, xdlnq;
      ms_response_terms_unchecked(
          m->servers, mu, x, a, fma((double)m->servers, mu, -x), m->timeout,
          m->has_service_time_cv ? m->service_time_cv : 1.0, &ln_q, &xdlnq);
      *q = exp(ln_q);
    } else if (!(a >= DBL_MIN)) {
      *q = 0.0;
    } else {
      ms_erlang_terms t;
      ms_erlang_terms_unchecked(m->servers, a, &t);
      *q = exp(t.ln_c - (cmu - x) * ms_effective_timeout(m));
    }
  }
  *p = *q + base * (1.0 - *q);
}

/*
 * Mean number in an M/M/c system at utilisation rho = 1 - s (s in (0, 1]),
 * G = c rho + C(c, c rho) rho / (1 - rho), its derivative in rho, and
 * ln C (Kleinrock 1975, eq. 3.39-3.40).  dC/da from
 * a d ln C / da = (c - a) + a (1 - B) / (c - a + a B) (as in loop.c).
 */
typedef struct {
  double G, dG, ln_c;
} mmc_mean;

static void mmc_mean_number(long c, double s, mmc_mean *o) {
  double cd = (double)c, rho = 1.0 - s, a = cd * rho;
  if (!(a >= 1e-300)) {
    o->G = a;
    o->dG = cd;
    o->ln_c = -HUGE_VAL; /* C underflows: no waiting at all */
    return;
  }
  ms_erlang_terms t;
  ms_erlang_terms_unchecked(c, a, &t);
  double C = exp(t.ln_c), ca = cd * s;
  double adlnc = ca + a * (1.0 - t.b) / (ca + a * t.b);
  o->G = a + C * rho / s;
  o->dG = cd + (C / s) * (adlnc + 1.0 / s);
  o->ln_c = t.ln_c;
}

/* Smallest 1 - rho the queue-memory state resolves (1 - s < 1 in double). */
#define S_MIN 1e-15

/*
 * One implicit Euler step of dN/dt = x - c mu rho(N): find rho' with
 * G(rho') + c mu dt rho' = N + x dt, by Newton's method on v = ln(1 - rho')
 * kept inside a bisection bracket (the left side increases with rho').
 * *v carries the previous solution as the starting guess.
 */
static void psffa_step(long c, double kappa, double M, double *v, mmc_mean *out,
                       double *s_out) {
  mmc_mean g;
  if (!(M > 0.0)) {
    mmc_mean_number(c, 1.0, out);
    *s_out = 1.0;
    *v = 0.0;
    return;
  }
  double vlo = log(S_MIN), vhi = 0.0;
  mmc_mean_number(c, S_MIN, &g);
  if (g.G + kappa * (1.0 - S_MIN) < M) {
    /* beyond what a double resolves: every server busy */
    *out = g;
    out->G = M - kappa * (1.0 - S_MIN);
    *s_out = S_MIN;
    *v = vlo;
    return;
  }
  double x = fmin(fmax(*v, vlo), vhi);
  if (x == vhi)
    x = -1e-3;
  for (int it = 0; it < 200; it++) {
    double s = exp(x);
    mmc_mean_number(c, s, &g);
    double H = g.G + kappa * (1.0 - s) - M;
    if (fabs(H) <= 1e-14 * M)
      break;
    if (H > 0.0)
      vlo = x;
    else
      vhi = x;
    double dH = -(g.dG + kappa) * s;
    double nx = x - H / dH;
    if (!(nx > vlo && nx < vhi))
      nx = vlo + 0.5 * (vhi - vlo);
    bool done = fabs(nx - x) <= 1e-13 * fmax(1.0, fabs(x)) || vhi - vlo < 1e-13;
    x = nx;
    if (done)
      break;
  }
  double s = exp(x);
  mmc_mean_number(c, s, out);
  *s_out = s;
  *v = x;
}

/* ---- the run ------------------------------------------------------- */

typedef struct {
  int r;
  long J; /* ring length of the retry schedule */
  /* retry k+1 lands by ker[min(k, nk - 1)]: the retries from the nk-th on
   * share one delay, so one kernel (ms_delay_dists_build) */
  int nk;
  kernel (*ker)[CAUSES]; /* nk */
  double *pend;          /* r x J: retry k+1 attempts due in each bin */
  double *pend_cost;     /* J: AWS quota, the cost those retries ask, summed */
  double cause_cost[CAUSES];     /* AWS quota: a retry's cost by its cause */
  double *att;                   /* r + 1: what a bin sends of each attempt */
  long nb;                       /* budget window, bins */
  double *bud_first, *bud_retry; /* rings of nb */
  ms_delay_dist *dist;           /* r, the first nk built */
  /* carried from bin to bin */
  double budget_ratio;                 /* retries allowed per first attempt */
  double bud_first_sum, bud_retry_sum; /* over the budget window */
  double tokens;        /* token bucket; gRPC's token_count; the AWS quota */
  double x_prev;        /* Envoy: the last bin's attempt rate, /s */
  double paid;          /* AWS quota: the cost of the bin's retries */
  double N, v, backlog; /* queue memory: number in system, psffa_step's
                           guess, waiting */
  double rho_cap;       /* queue memory: the most utilisation the queue's
                           stationary part holds (fifo_split) */
  long *pool;           /* queue memory: the pool of bins i .. i + L - 1 */
  long L;               /* its ring length: the bins a timeout spans, + 2 */
  long filled;          /* bins whose pool the ring holds: 0 .. filled - 1 */
  long changed;         /* the last bin whose pool differs from the one
                           before it, or -1 */
  long k_prev;          /* queue memory: the last bin's pool */
  double busy;          /* its busy servers at its end */
  double leaving;       /* attempts still in service on servers the pool
                           lost: they finish, no new one starts there */
} fluid_state;

static void fluid_free(fluid_state *f) {
  for (int k = 0; f->ker != NULL && k < f->nk; k++)
    for (int c = 0; c < CAUSES; c++)
      free(f->ker[k][c].w);
  free(f->ker);
  if (f->dist != NULL)
    ms_delay_dists_free(f->dist, f->r);
  free(f->dist);
  free(f->att);
  free(f->pend);
  free(f->pend_cost);
  free(f->bud_first);
  free(f->bud_retry);
  free(f->pool);
}

/* dt and bins per window, from the configuration (sim_internal.h). */
int ms_sim_fluid_dt(const ms_sim_config *c, double *dt, long *spb,
                    ms_error *err) {
  double si = c->sample_interval;
  if (c->dt > 0.0) {
    double n = round(si / c->dt);
    if (n < 1.0 || fabs(n * c->dt - si) > 1e-9 * si)
      return ms_fail(err, MS_EINVAL,
                     "dt = %g s must divide the sample interval %g s", c->dt,
                     si);
    *dt = c->dt;
    *spb = (long)n;
    return MS_OK;
  }
  const ms_failure_model *m = &c->service.model;
  double d0;
  if (m->kind == MS_MODEL_ERLANG)
    d0 = m->timeout > 0.0 ? m->timeout / 20.0 : 1.0 / (20.0 * m->service_rate);
  else
    d0 = si / 10.0;
  double n = ceil(si / d0 - 1e-9);
  if (n < 1.0)
    n = 1.0;
  if (n > (double)MS_SIM_MAX_BINS)
    return ms_fail(err, MS_ELIMIT,
                   "default dt %g s gives more than %ld bins per sample", d0,
                   MS_SIM_MAX_BINS);
  *dt = si / n;
  *spb = (long)n;
  return MS_OK;
}

/* dt, bins per window and the bins of the whole run, within the limit. */
static int pick_bins(const ms_sim_config *c, double *dt, long *spb, long *nbins,
                     ms_error *err) {
  int st = ms_sim_fluid_dt(c, dt, spb, err);
  if (st != MS_OK)
    return st;
  double nbins_d = ceil(c->scenario.duration / *dt - 1e-9);
  if (nbins_d > (double)MS_SIM_MAX_BINS)
    return ms_fail(err, MS_ELIMIT,
                   "%.0f bins of dt = %g s exceed the limit of %ld: raise dt",
                   nbins_d, *dt, MS_SIM_MAX_BINS);
  *nbins = (long)nbins_d;
  return MS_OK;
}

/* Where the retries of each attempt land, by cause: a timeout is learned
 * T after the attempt (uniform on [T, T + w] for a timeout range), a fast
 * failure after one service time (nothing to wait for in the capacity model);
 * the schedule's ring is as long as the farthest landing needs. */
static int build_kernels(fluid_state *f, const ms_failure_model *m0, double dt,
                         ms_error *err) {
  double detect[CAUSES] = {0.0, 0.0}, spread[CAUSES] = {0.0, 0.0};
  if (m0->kind == MS_MODEL_ERLANG) {
    detect[CAUSE_TIMEOUT] = m0->timeout;
    /* the width as the doubles hold it (loop.c's spread_eval) */
    spread[CAUSE_TIMEOUT] = (m0->timeout + m0->timeout_spread) - m0->timeout;
    detect[CAUSE_FAST] = 1.0 / m0->service_rate;
  }
  f->J = 2;
  int st = MS_OK;
  for (int k = 0; k < f->nk && st == MS_OK; k++)
    for (int cs = 0; cs < CAUSES && st == MS_OK; cs++) {
      int kb =
          kernel_build(&f->dist[k], detect[cs], spread[cs], dt, &f->ker[k][cs]);
      if (kb == MS_ELIMIT)
        st = ms_fail(err, MS_ELIMIT,
                     "retry %d can land more than %ld bins of dt = %g s "
                     "after its attempt (timeout plus backoff cap): raise dt",
                     k + 1, MAX_REACH, dt);
      else if (kb != MS_OK)
        st = ms_fail(err, MS_ENOMEM, "no memory for the retry schedule");
      else if (f->ker[k][cs].last + 1 > f->J)
        f->J = f->ker[k][cs].last + 1;
    }
  return st;
}

/* Everything the run needs before its first bin: the delay
 * distributions, the kernels, the schedule, the budget window's rings,
 * and the state carried between bins.  On failure what was made is left
 * for fluid_free, which f is always ready for. */
static int fluid_setup(fluid_state *f, const ms_sim_config *c, double dt,
                       double rho_cap, ms_error *err) {
  const ms_retry_policy *pol = &c->service.policy;
  memset(f, 0, sizeof *f);
  f->r = pol->retries;
  int r = f->r;
  f->dist = calloc((size_t)r + 1, sizeof *f->dist);
  f->att = calloc((size_t)r + 1, sizeof *f->att);
  if (f->dist == NULL || f->att == NULL)
    return ms_fail(err, MS_ENOMEM, "no memory for %d retries", r);
  int st = ms_delay_dists_build(&c->backoff, r, f->dist, &f->nk, err);
  if (st != MS_OK)
    return st;
  f->ker = calloc((size_t)f->nk + 1, sizeof *f->ker);
  if (f->ker == NULL)
    return ms_fail(err, MS_ENOMEM, "no memory for the retry schedule");
  st = build_kernels(f, &c->service.model, dt, err);
  /* r rows of the ring: a bound on memory as on the time of a bin */
  if (st == MS_OK && r > 0 && (double)r * (double)f->J > MAX_SCHEDULE)
    st = ms_fail(err, MS_ELIMIT,
                 "the retry schedule would hold %d retries x %ld bins, more "
                 "than %.0f: raise dt, or lower the timeout, the backoff cap "
                 "or the retries",
                 r, f->J, MAX_SCHEDULE);
  if (st == MS_OK && r > 0) {
    f->pend = calloc((size_t)r * (size_t)f->J, sizeof *f->pend);
    if (f->pend == NULL)
      st = ms_fail(err, MS_ENOMEM, "no memory for %d x %ld schedule bins", r,
                   f->J);
  }
  bool finagle = pol->kind == MS_POLICY_FINAGLE;
  if (st == MS_OK && r > 0 && pol->kind == MS_POLICY_AWS) {
    f->pend_cost = calloc((size_t)f->J, sizeof *f->pend_cost);
    if (f->pend_cost == NULL)
      st = ms_fail(err, MS_ENOMEM, "no memory for the retry quota's costs");
  }
  if (st == MS_OK) {
    double nb = round((finagle ? pol->finagle_ttl : c->budget_window) / dt);
    f->nb = nb < 1.0 ? 1 : (long)fmin(nb, (double)MS_SIM_MAX_BINS);
    if (pol->has_budget || finagle) {
      f->bud_first = calloc((size_t)f->nb, sizeof *f->bud_first);
      f->bud_retry = calloc((size_t)f->nb, sizeof *f->bud_retry);
      if (f->bud_first == NULL || f->bud_retry == NULL)
        st = ms_fail(err, MS_ENOMEM, "no memory for the budget window");
    }
  }
  if (st == MS_OK && c->queue_memory) {
    f->rho_cap = rho_cap;
    f->changed = -1;
    /* the longest timeout: T + w with a timeout range */
    f->L = (long)ceil(ms_timeout_longest(&c->service.model) / dt) + 2;
    f->pool = calloc((size_t)f->L, sizeof *f->pool);
    if (f->pool == NULL)
      st = ms_fail(err, MS_ENOMEM, "no memory for %ld bins of pools", f->L);
  }
  if (st != MS_OK)
    return st;
  f->budget_ratio =
      pol->has_budget ? pol->retry_budget / (1.0 - pol->retry_budget) : 0.0;
  f->tokens = pol->kind == MS_POLICY_GRPC  ? pol->grpc_max_tokens
              : pol->kind == MS_POLICY_AWS ? pol->aws_capacity
                                           : c->token_capacity;
  /* the erlang model's timeouts cost timeout_cost; the capacity model's
   * overload is a rejection, another failure (at the mean cost below) */
  f->cause_cost[CAUSE_TIMEOUT] =
      c->service.model.kind == MS_MODEL_ERLANG
          ? pol->aws_timeout_cost
          : pol->aws_retry_cost +
                (pol->aws_throttling_cost - pol->aws_retry_cost) *
                    pol->aws_throttling_share;
  /* the other failures: throttling errors at throttling_cost, in their
   * share, the rest at retry_cost (a mean: the fluid has no bucket levels
   * at which the cheap retries pass and the dear ones do not) */
  f->cause_cost[CAUSE_FAST] =
      pol->aws_retry_cost + (pol->aws_throttling_cost - pol->aws_retry_cost) *
                                pol->aws_throttling_share;
  return MS_OK;
}

/*
 * The retries a named policy lets through of cand due in bin i (first: the
 * bin's first attempts; hold: the time an attempt holds its slot, s), as
 * fluids of its algorithm: gRFC A6's token_count as a mean, the share of
 * decisions above max_tokens/2 spread over one token (the step of a mean
 * would chatter); Envoy's concurrency by Little's law, retries x hold <=
 * max(min_retry_concurrency, budget_percent x attempts x hold); Finagle's
 * windows as the budget's rings over ttl; the AWS quota pays the cost the
 * retries ask (pend_cost) while it lasts.
 */
static double named_allowed(fluid_state *f, const ms_retry_policy *pol, long i,
                            long slot, double first, double cand, double dt,
                            double hold) {
  switch (pol->kind) {
  case MS_POLICY_GRPC:
    return cand * fmin(1.0, fmax(0.0, f->tokens - 0.5 * pol->grpc_max_tokens));
  case MS_POLICY_ENVOY: {
    double cap_m = hold > 0.0 ? pol->envoy_min_concurrency * dt / hold : cand;
    double b = pol->envoy_budget;
    double cap_b = b < 1.0 ? b * first / (1.0 - b) : cand;
    return fmin(cand, fmax(cap_m, cap_b));
  }
  case MS_POLICY_FINAGLE: {
    long bs = i % f->nb;
    f->bud_first_sum -= f->bud_first[bs];
    f->bud_retry_sum -= f->bud_retry[bs];
    double room = pol->finagle_percent * (f->bud_first_sum + first) +
                  pol->finagle_min_per_second * (double)f->nb * dt -
                  f->bud_retry_sum;
    return fmin(cand, fmax(0.0, room));
  }
  case MS_POLICY_AWS: {
    double ask = f->pend_cost[slot];
    f->pend_cost[slot] = 0.0;
    double share = ask > f->tokens ? f->tokens / ask : 1.0;
    f->tokens -= share * ask;
    f->paid = share * ask;
    return cand * share;
  }
  default:
    return cand;
  }
}

/* The retries due in bin i, taken off the schedule, and how many of them
 * the retry budget, the token bucket or the named policy let through;
 * those refused are taken alike from every retry number.  Sets att[k] to
 * what is sent of attempt k (0 the first) and *refused; returns the
 * retries sent. */
static double admit_retries(fluid_state *f, const ms_retry_policy *pol, long i,
                            long slot, double first, double dt, double hold,
                            double *att, double *refused) {
  int r = f->r;
  double cand = 0.0;
  for (int k = 0; k < r; k++) {
    att[k + 1] = f->pend[(size_t)k * f->J + slot];
    f->pend[(size_t)k * f->J + slot] = 0.0;
    cand += att[k + 1];
  }
  double allowed =
      r > 0 ? named_allowed(f, pol, i, slot, first, cand, dt, hold) : cand;
  if (pol->has_budget) {
    long bs = i % f->nb;
    f->bud_first_sum -= f->bud_first[bs];
    f->bud_retry_sum -= f->bud_retry[bs];
    double room =
        f->budget_ratio * (f->bud_first_sum + first) - f->bud_retry_sum;
    allowed = fmin(allowed, fmax(0.0, room));
  }
  if (pol->has_token)
    allowed = fmin(allowed, fmax(0.0, f->tokens));
  double pass = cand > 0.0 ? allowed / cand : 0.0;
  *refused = cand - allowed;
  att[0] = first;
  for (int k = 1; k <= r; k++)
    att[k] *= pass;
  return allowed;
}

/* ---- the FIFO backlog (queue memory) ------------------------------ */

/* The pools of the bins up to `upto` into the ring (the pool at each
 * bin's middle, as fluid_bin takes it), noting the last change. */
static void pool_fill(fluid_state *f, const ms_sim_config *c, long upto,
                      double dt) {
  while (f->filled <= upto) {
    long j = f->filled;
    ms_failure_model pm;
    ms_scenario_pool(&c->scenario, &c->service.model, ((double)j + 0.5) * dt,
                     &pm);
    if (j > 0 && pm.servers != f->pool[(j - 1) % f->L])
      f->changed = j;
    f->pool[j % f->L] = pm.servers;
    f->filled++;
  }
}

/*
 * The deterministic wait, s, of an attempt sent a share u (0 .. 1) into
 * bin i behind E attempts that must start service before it (FIFO): the
 * time until the pools of the bins ahead have started E, each server that
 * comes back starting one at once, and a server is there for it.  Beyond
 * one timeout the answer only has to say "more than T": the walk stops
 * there and extrapolates at the pool it reached (2 T when that pool is 0).
 */
static double fifo_wait(const fluid_state *f, long i, double u, double E,
                        double mu, double T, double dt) {
  long k = f->pool[i % f->L];
  if (f->changed <= i) /* the pool stays k over the ring */
    return k > 0 ? fmax(0.0, E) / ((double)k * mu) : 2.0 * T;
  double need = E, w = 0.0, span = (1.0 - u) * dt;
  if (k > 0 && !(need > 0.0))
    return 0.0;
  for (long j = i;;) {
    double rate = (double)k * mu;
    if (k > 0 && rate * span >= need)
      return w + need / rate;
    need -= rate * span;
    w += span;
    if (w >= T || j + 1 >= f->filled)
      return k > 0 ? w + need / rate : 2.0 * T;
    long kn = f->pool[++j % f->L];
    if (kn > k)
      need -= (double)(kn - k);
    k = kn;
    span = dt;
    if (k > 0 && !(need > 0.0))
      return w;
  }
}

/*
 * The tail of what an attempt waits beyond its deterministic wait D:
 * P(fail | D) = sum_j exp(lna_j - k_j s (T - D)) for D < T (at most 1), 1
 * for D >= T, with s = T'/T (ms_effective_timeout: 1 for exponential
 * service).  The timeout covers the wait: one term, the stationary M/M/c
 * wait tail C e^(-theta u), theta = c mu - x (Kleinrock 1975, eq. 3.40).
 * A timeout that covers the response (wait + service > T) is the
 * convolution with the service time (response_tail): one term per
 * exponential phase of the service and one for the wait, some of them
 * negative (neg), so tail_mean sums them with their signs; s is 1 and the
 * service's shift is taken off T instead.
 */
#define TAIL_TERMS 3
typedef struct {
  int n;
  double lna[TAIL_TERMS], k[TAIL_TERMS];
  bool neg[TAIL_TERMS]; /* the term counts negative */
} fifo_tail;

/* Add the term a e^(-k u), a = sign x e^(ln_a), unless a is 0. */
static void tail_add(fifo_tail *tl, double ln_a, bool neg, double k) {
  if (!(ln_a > -HUGE_VAL))
    return;
  tl->lna[tl->n] = ln_a;
  tl->k[tl->n] = k;
  tl->neg[tl->n++] = neg;
}

/*
 * The response tail P(W + S' > u) of the stationary queue, the service
 * time S = sf->D + S' (ms_service_fit_of: S' has sf->n exponential phases
 * of weights w_i and rates r_i), the wait W 0 with probability 1 - C and
 * else exponential of rate g = kappa theta, theta = c mu - x (the
 * Allen-Cunneen wait of ms_ln_response_tail).  Per phase, (1 - C)
 * e^(-r u) + C (r e^(-g u) - g e^(-r u)) / (r - g) (Kleinrock 1975, sec.
 * 3.4); summed over the phases, the terms e^(-r_i u) w_i (1 - C r_i /
 * (r_i - g)) and one e^(-g u) C sum_i w_i r_i / (r_i - g): at most 3.
 * Constant service (n = 0): C e^(-g u) alone.  The caller takes u = T -
 * D_fifo - sf->D.  ln_c = ln C (-inf: no wait).  g within 1e-6 r_i of
 * r_i moves 1e-6 r_i away: the two terms then cancel to at most 1e-10 of
 * their size, and the tail moves by about 1e-6 of itself; two phases
 * within 4e-6 of each other (cv within 1e-11 of 1) are merged first, so
 * that one move cannot bring g near the other.
 */
static void response_tail(double ln_c, double theta, const ms_service_fit *sf,
                          fifo_tail *tl) {
  int n = sf->n;
  double w[2] = {sf->w[0], sf->w[1]}, r[2] = {sf->r[0], sf->r[1]};
  if (n == 2 && fabs(r[0] - r[1]) < 4e-6 * fmax(r[0], r[1])) {
    r[0] = 1.0 / (w[0] / r[0] + w[1] / r[1]); /* the same mean */
    w[0] = 1.0;
    n = 1;
  }
  double g = sf->kappa * theta;
  for (int i = 0; i < n; i++)
    if (fabs(r[i] - g) < 1e-6 * r[i])
      g = g > r[i] ? r[i] * (1.0 + 1e-6) : r[i] * (1.0 - 1e-6);
  double C = exp(ln_c), sw = n == 0 ? 1.0 : 0.0;
  tl->n = 0;
  for (int i = 0; i < n; i++) {
    double m = r[i] / (r[i] - g); /* of C, in the wait's term */
    double cs = w[i] * (1.0 - C * m);
    sw += w[i] * m;
    if (cs != 0.0)
      tail_add(tl, log(fabs(cs)), cs < 0.0, r[i]);
  }
  if (sw != 0.0)
    tail_add(tl, ln_c + log(fabs(sw)), sw < 0.0, g);
}

/* The mean of P(fail | D) over D linear from D0 to D1 (the attempts of
 * one bin, sent uniformly through it): the share past T, and the terms
 * integrated exactly over the rest. */
static double tail_mean(const fifo_tail *tl, double D0, double D1, double T,
                        double sc) {
  double lo = fmin(D0, D1), hi = fmax(D0, D1), w = hi - lo;
  if (lo >= T)
    return 1.0;
  double b = fmin(hi, T), sum = 0.0;
  bool flat = !(w > 1e-12 * T);
  for (int j = 0; j < tl->n; j++) {
    double kk = tl->k[j] * sc, v;
    if (flat || kk * (b - lo) < 1e-9)
      v = exp(tl->lna[j] - kk * (T - b)) * (flat ? 1.0 : b - lo);
    else
      v = (exp(tl->lna[j] - kk * (T - b)) - exp(tl->lna[j] - kk * (T - lo))) /
          kk;
    sum += tl->neg[j] ? -v : v;
  }
  sum = fmax(0.0, sum); /* the response's two terms, rounded */
  if (flat)
    return fmin(1.0, sum);
  return (hi - b) / w + fmin(sum, b - lo) / w;
}

/* Gauss-Legendre's 8 nodes on [-1, 1] (the positive half) and weights
 * (Abramowitz and Stegun 1964, table 25.4). */
static const double gl8_x[4] = {
    0.183434642495649804939476142360184, 0.525532409916328985817739049189246,
    0.796666477413626739591553936475830, 0.960289856497536231683560868569473};
static const double gl8_w[4] = {
    0.362683783378361982965150449277195, 0.313706645877887287337962201986601,
    0.222381034453374470544355994426241, 0.101228536290376259152531354309962};

/* The mean of e^(-v) over v uniform on [0, z], z >= 0. */
static double exp_mean(double z) { return z > 1e-12 ? -expm1(-z) / z : 1.0; }

/*
 * tail_mean averaged over a timeout range: T uniform on [U0, U1] (U1 >
 * U0; the response's shift already taken off, so U0 may be negative).
 * With the bin's waits D on [lo, hi]: T <= lo fails every attempt (1); T
 * >= hi fails none by the backlog, and there each term a e^(-k s (T - D))
 * is a product of a function of T and one of D, averaged exactly; lo < T
 * < hi, where tail_mean has its kink at D = T, by Gauss-Legendre with 8
 * nodes per panel, one panel per 8 units of k s (T - D) (at most 16):
 * the rule is exact to 1e-9 of e^(-v) over a panel of v <= 8, and the
 * kink sits at the ends of the part, not inside it.
 */
static double tail_spread_mean(const fifo_tail *tl, double D0, double D1,
                               double U0, double U1, double sc) {
  double lo = fmin(D0, D1), hi = fmax(D0, D1), w = U1 - U0;
  double a = fmin(U1, fmax(U0, lo)), b = fmin(U1, fmax(U0, hi));
  double sum = a - U0; /* T <= lo: every wait passes T */
  if (b > a) {
    double kmax = 0.0;
    for (int j = 0; j < tl->n; j++)
      kmax = fmax(kmax, tl->k[j] * sc);
    int panels = (int)fmin(16.0, fmax(1.0, ceil(kmax * (b - a) / 8.0)));
    double h = (b - a) / panels, part = 0.0;
    for (int pn = 0; pn < panels; pn++) {
      double mid = a + h * (pn + 0.5);
      for (int n = 0; n < 4; n++)
        part +=
            gl8_w[n] * (tail_mean(tl, D0, D1, mid - 0.5 * h * gl8_x[n], sc) +
                        tail_mean(tl, D0, D1, mid + 0.5 * h * gl8_x[n], sc));
    }
    sum += 0.5 * h * part;
  }
  if (U1 > b) { /* T >= hi: every wait is shorter than T */
    double t = 0.0;
    for (int j = 0; j < tl->n; j++) {
      double kk = tl->k[j] * sc;
      double v = exp(tl->lna[j] - kk * (b - hi)) * exp_mean(kk * (hi - lo)) *
                 exp_mean(kk * (U1 - b));
      t += tl->neg[j] ? -v : v;
    }
    sum += (U1 - b) * fmin(1.0, fmax(0.0, t));
  }
  return fmin(1.0, fmax(0.0, sum / w));
}

/* The failure probability p of the attempts sent in a bin, and its share
 * q from timeouts (or overload): from the model alone when memoryless,
 * else from the queue, which carries what the servers could not take to
 * the next bin.
 *
 * The queue: its mean number in system N is carried from bin to bin and
 * drained by the busy servers (the pointwise stationary fluid flow
 * approximation, psffa_step).  Of N, the stationary M/M/c queue at
 * utilisation rho' = min(rho(N), x / c mu, rho_cap) is the random part an
 * attempt may find; the rest, E = N - G(rho'), is a backlog ahead of it
 * in FIFO order, which it waits out deterministically: D from fifo_wait,
 * through the pools of the bins to come (a stall's attempts wait for the
 * servers to come back).  It fails when D plus the stationary wait passes
 * T.  In a steady state E = 0 and this is the model's p(x); a backlog
 * larger than one timeout's work fails every attempt, the oldest first,
 * as the queue does. */
static void bin_failure(fluid_state *f, const ms_sim_config *c,
                        const ms_failure_model *pm, long i, double sent,
                        double dt, double *p, double *q) {
  double base = c->service.model.base_failure;
  double x = sent / dt;
  if (!c->queue_memory) {
    memoryless_failure(pm, x, p, q);
    return;
  }
  long k = pm->servers;
  double mu = pm->service_rate, kmu = (double)k * mu, T = pm->timeout;
  bool response = pm->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE;
  double N0 = f->N, G = 0.0;
  fifo_tail tl = {0};
  ms_service_fit sf; /* the service time, for the response (erlang.c) */
  ms_service_fit_of(mu, pm->has_service_time_cv ? pm->service_time_cv : 1.0,
                    &sf);
  pool_fill(f, c, i + f->L - 1, dt);
  if (i > 0 && k < f->k_prev) /* servers leave: what they serve finishes */
    f->leaving += fmax(0.0, f->busy - (double)k);
  if (f->leaving > 0.0) {
    double done = f->leaving * -expm1(-mu * dt);
    f->leaving -= done;
    f->N = fmax(0.0, f->N - done);
    N0 = f->N;
  }
  f->k_prev = k;
  if (k == 0) {
    f->N += sent;
    f->backlog = f->N - f->leaving;
    f->busy = 0.0;
    G = f->leaving;
  } else {
    double s;
    mmc_mean g;
    psffa_step(k, kmu * dt, f->N + sent, &f->v, &g, &s);
    f->N = g.G;
    f->backlog = fmax(0.0, f->N - (double)k * (1.0 - s));
    f->busy = (double)k * (1.0 - s);
    double s1 = fmax(s, fmax((kmu - x) / kmu, 1.0 - f->rho_cap));
    if (s1 > s)
      mmc_mean_number(k, s1, &g);
    G = g.G;
    /* a backlog ahead keeps every server busy: it drains at k mu, not at
     * the k mu rho of a stationary queue of the same mean */
    if (s1 > s && N0 > G) {
      f->N = fmax(N0 + sent - kmu * dt, G);
      f->backlog = fmax(0.0, f->N - (double)k);
      f->busy = (double)k;
    }
    tl.n = 1;
    tl.lna[0] = g.ln_c;
    tl.k[0] = kmu * s1;
    if (response)
      response_tail(g.ln_c, kmu * s1, &sf, &tl);
  }
  if (response && k == 0) /* after a wait for servers: the service alone */
    response_tail(-HUGE_VAL, 0.0, &sf, &tl);
  double w = (pm->timeout + pm->timeout_spread) - pm->timeout;
  if (w > 0.0) {
    /* a timeout range: the waits walked out to the longest timeout, q
     * averaged over T uniform on [T, T + w] (the wait's T' = sc T) */
    double cv = pm->has_service_time_cv ? pm->service_time_cv : 1.0;
    double sc = response ? 1.0 : 2.0 / (1.0 + cv * cv);
    double shift = response ? sf.D : 0.0, T1 = T + w;
    double D0 = fifo_wait(f, i, 0.0, N0 - G, mu, T1, dt);
    double D1 = fifo_wait(f, i, 1.0, f->N - G, mu, T1, dt);
    *q = tail_spread_mean(&tl, D0, D1, T - shift, T1 - shift, sc);
    *p = *q + base * (1.0 - *q);
    return;
  }
  /* the wait's timeout T' (sc = T'/T); the response's shift is a shorter
   * timeout, its wait rate already in the tail's terms */
  double sc = !response && T > 0.0 ? ms_effective_timeout(pm) / T : 1.0;
  double Tu = response ? T - sf.D : T;
  double D0 = fifo_wait(f, i, 0.0, N0 - G, mu, T, dt);
  double D1 = fifo_wait(f, i, 1.0, f->N - G, mu, T, dt);
  if (Tu > 0.0)
    *q = tail_mean(&tl, D0, D1, Tu, sc);
  else if (Tu < 0.0 || (response && sf.n > 0))
    *q = 1.0; /* the service alone outlasts T: every attempt fails */
  else /* T = 0, or T = the constant service: one that waits at all fails */
    *q = D0 > 0.0 && D1 > 0.0 ? 1.0 : tl.n > 0 ? exp(tl.lna[0]) : 0.0;
  *p = *q + base * (1.0 - *q);
}

/* The failures of the attempts sent in the bin at slot: those of the last
 * retry are requests that failed for good (added to *given_up), the
 * others become retries, scheduled into later bins by the kernel of their
 * cause. */
static void schedule_failures(fluid_state *f, const double *att, double p,
                              double q, double base, long slot,
                              double *given_up) {
  int r = f->r;
  double share[CAUSES] = {p > 0.0 ? q / p : 0.0,
                          p > 0.0 ? base * (1.0 - q) / p : 0.0};
  for (int k = 0; k <= r; k++) {
    double fk = att[k] * p;
    if (!(fk > 0.0))
      continue;
    if (k == r) {
      *given_up += fk;
      continue;
    }
    double *row = f->pend + (size_t)k * f->J;
    for (int cs = 0; cs < CAUSES; cs++) {
      double mass = fk * share[cs];
      if (!(mass > 0.0))
        continue;
      const kernel *ke = &f->ker[k < f->nk ? k : f->nk - 1][cs];
      for (long j = ke->first; j <= ke->last; j++) {
        long dst = slot + j;
        if (dst >= f->J)
          dst -= f->J;
        row[dst] += mass * ke->w[j - ke->first];
        if (f->pend_cost != NULL)
          f->pend_cost[dst] += f->cause_cost[cs] * mass * ke->w[j - ke->first];
      }
    }
  }
}

/* Bin i: the first attempts of the scenario and the retries let through
 * are sent, fail with the bin's probability, and their failures are
 * scheduled; the budget window and the bucket learn what was sent and
 * what succeeded.  Adds the bin's counts to win. */
static void fluid_bin(fluid_state *f, const ms_sim_config *c, long i, double dt,
                      ms_sim_counts *win) {
  const ms_retry_policy *pol = &c->service.policy;
  double t0 = (double)i * dt;
  double first = ms_scenario_mean_offered_load(&c->scenario, t0, t0 + dt) * dt;
  ms_failure_model pm;
  ms_scenario_pool(&c->scenario, &c->service.model, t0 + 0.5 * dt, &pm);
  long slot = i % f->J;

  double hold = 0.0;
  if (pol->kind == MS_POLICY_ENVOY)
    hold = pm.servers > 0 ? ms_hold_time(&pm, f->x_prev) : pm.timeout;
  double *att = f->att, refused;
  double allowed =
      admit_retries(f, pol, i, slot, first, dt, hold, att, &refused);
  double sent = first + allowed;
  double p, q;
  bin_failure(f, c, &pm, i, sent, dt, &p, &q);
  double given_up = refused;
  schedule_failures(f, att, p, q, c->service.model.base_failure, slot,
                    &given_up);

  double good = sent * (1.0 - p);
  f->x_prev = sent / dt;
  if (pol->kind == MS_POLICY_GRPC)
    f->tokens =
        fmin(pol->grpc_max_tokens,
             fmax(0.0, f->tokens + pol->grpc_token_ratio * good - sent * p));
  else if (pol->kind == MS_POLICY_AWS) /* a success refunds or returns */
    f->tokens =
        fmin(pol->aws_capacity,
             f->tokens + (1.0 - p) * (pol->aws_refund * first + f->paid));
  if (pol->has_budget || pol->kind == MS_POLICY_FINAGLE) {
    long bs = i % f->nb;
    f->bud_first[bs] = first;
    f->bud_retry[bs] = allowed;
    f->bud_first_sum += first;
    f->bud_retry_sum += allowed;
  }
  if (pol->has_token)
    f->tokens =
        fmin(c->token_capacity, f->tokens - allowed + pol->token_ratio * good);

  win->first += first;
  win->retries += allowed;
  win->failures += sent * p;
  win->successes += good;
  win->given_up += given_up;
  win->refused += refused;
}

/* The bins in order, a window to the recorder every spb bins (and at the
 * end), until the last bin or until the sink asks to stop. */
static int fluid_run(fluid_state *f, const ms_sim_config *c,
                     ms_sim_recorder *rec, double dt, long spb, long nbins,
                     ms_error *err) {
  ms_sim_counts win = {0};
  long in_win = 0;
  for (long i = 0; i < nbins && !rec->stop; i++) {
    fluid_bin(f, c, i, dt, &win);
    in_win++;
    if (in_win == spb || i + 1 == nbins) {
      int st =
          ms_sim_recorder_window(rec, (double)(i + 1) * dt, (double)in_win * dt,
                                 &win, f->backlog, err);
      if (st != MS_OK)
        return st;
      win = (ms_sim_counts){0};
      in_win = 0;
    }
  }
  return MS_OK;
}

int ms_sim_fluid_supports(const ms_failure_model *m, ms_error *err) {
  /* every valid model without a queue limit (the response is timed for
   * any cv) */
  if (m->has_queue_limit)
    return ms_fail(err, MS_EINVAL,
                   "the fluid engine has no queue limit: simulate a "
                   "queue_limit with the discrete-event engine");
  return MS_OK;
}

int ms_sim_fluid(const ms_sim_config *c, ms_sim_sink sink, void *ctx,
                 ms_sim_summary *summary, ms_error *err) {
  int st = ms_sim_config_check(c, err);
  if (st != MS_OK)
    return st;
  if (c->queue_memory && c->service.model.kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "queue memory needs the erlang model (servers, service "
                   "time, timeout); the capacity model has no queue");
  if ((st = ms_sim_fluid_supports(&c->service.model, err)) != MS_OK)
    return st;
  double dt = 0.0;
  long spb = 1, nbins = 0;
  st = pick_bins(c, &dt, &spb, &nbins, err);
  if (st != MS_OK)
    return st;

  ms_sim_recorder rec;
  st = ms_sim_recorder_init(&rec, c, sink, ctx, err);
  if (st != MS_OK)
    return st;
  /* the stationary part of the queue holds up to the tipping point's
   * utilisation: every equilibrium of the healthy branch stays the
   * model's (bin_failure) */
  const ms_landscape *ls = &rec.ls[0];
  double rho_cap =
      ls->has_fold ? ls->tipping_effective_load / ls->saturation_load : 1.0;
  fluid_state f;
  st = fluid_setup(&f, c, dt, rho_cap, err);
  if (st == MS_OK)
    st = fluid_run(&f, c, &rec, dt, spb, nbins, err);
  fluid_free(&f);
  if (st != MS_OK)
    return st;
  ms_sim_recorder_finish(&rec, (double)nbins * dt, (double)nbins, summary);
  return MS_OK;
}
