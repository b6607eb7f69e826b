/* SPDX-License-Identifier: MIT */
/*
 * The retrial queue of doc/design.md §1.9 ("Retries soon after a
 * rejection"): c servers at rate mu, K waiting places, rejected attempts
 * in an orbit that they leave at rate theta each.  Level m (the orbit),
 * phase n (in the system, 0 .. N = c + K).  Within a level the phase is a
 * birth-death chain (births lam, the fresh attempts and the retries after
 * timeouts; deaths min(n, c) mu); an attempt that finds n = N joins the
 * orbit with probability qp (it has a retry left): m -> m + 1; an orbiting
 * one comes back at rate m theta, joins the queue if n < N (m -> m - 1,
 * n -> n + 1) and otherwise stays (probability qo) or leaves (m -> m - 1).
 *
 * Linear level reduction (Latouche and Ramaswami 1999, the finite
 * level-dependent QBD): with U_M = A1(M) and U_m = A1(m) + R_(m+1) A2(m+1),
 * pi_m = pi_(m-1) R_m and R_m = -A0 U_m^-1.  A0 has one entry, lam qp at
 * (N, N), so R_m = e_N r_m^T with r_m^T U_m = -lam qp e_N^T, and
 * pi_m = pi_(m-1)[N] r_m^T.  U_m is tridiagonal but for its row N, and its
 * rows are diagonally dominant (a censored generator), so each solve is a
 * Thomas sweep without pivoting, O(N), stable (its transpose is dominant
 * by columns).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "retrial.h"

typedef struct {
  long c, N, M;
  double mu, lam, qp, theta, qo;
  double *r;    /* (M + 1) x (N + 1): r_m, row 0 holds pi_0 */
  double *work; /* 3 (N + 1) */
} chain;

static double death(const chain *ch, long n) {
  return (double)(n < ch->c ? n : ch->c) * ch->mu;
}

/* x^T U = b^T for U = A1(m) + e_N v^T with b = bN e_N; level 0 is
 * homogeneous (b = 0) and solved with x_N = 1.  Columns j < N form a
 * tridiagonal system T q = w in x_0 .. x_(N-1), x_N's coefficients w_j
 * on the right.  Every pivot is formed from positive terms only, as in
 * the GTH algorithm (Grassmann, Taksar and Heyman 1985): the pivot of
 * column j is -D_j, D_j = lam + E_j, where E_j = m theta + death_j
 * h_(j-1) is the rate of leaving phases 0 .. j other than up to j + 1 and
 * h_j = E_j / D_j the chance of doing so first.  The last pivot is minus
 * the rate of leaving (m, N) for level m - 1 before coming back: with P_j
 * the chance of leaving from phase j before reaching N (P_j = h_j +
 * (1 - h_j) P_(j+1)),
 *   esc = m theta (1 - qo) + death_N P_(N-1) + sum_(j<N) v_j P_j. */
static int solve_level(const chain *ch, long m, const double *v, double bN,
                       double *x) {
  long N = ch->N;
  double *cp = ch->work, *w = ch->work + (N + 1);
  double lam = ch->lam, mt = (double)m * ch->theta;
  for (long j = 0; j < N; j++)
    w[j] = v[j];
  w[N - 1] += death(ch, N);
  double h_prev = 0.0, prev_q = 0.0;
  for (long j = 0; j < N; j++) {
    double E = mt + death(ch, j) * h_prev, D = lam + E;
    if (!(D > 0.0))
      return MS_ELIMIT;
    double sub = j > 0 ? lam : 0.0;
    cp[j] = (j + 1 < N ? death(ch, j + 1) : 0.0) / -D;
    x[j] = (w[j] - sub * prev_q) / -D;
    prev_q = x[j];
    h_prev = E / D;
    w[j] = h_prev; /* w_j is used; keep h_j */
  }
  for (long j = N - 2; j >= 0; j--)
    x[j] -= cp[j] * x[j + 1];
  double xN = 1.0;
  if (m > 0) {
    double P = 0.0, esc = 0.0;
    for (long j = N - 1; j >= 0; j--) {
      P = w[j] + (1.0 - w[j]) * P;
      esc += v[j] * P;
      if (j == N - 1)
        esc += death(ch, N) * P;
    }
    esc += mt * (1.0 - ch->qo);
    if (!(esc > 0.0))
      return MS_ELIMIT;
    xN = bN / -esc;
  }
  for (long j = 0; j < N; j++)
    x[j] = -xN * x[j];
  x[N] = xN;
  return MS_OK;
}

/* pi of the truncated chain, unnormalized rows in ch->r; *tot its mass. */
static int chain_solve(chain *ch, double *tot) {
  long S = ch->N + 1;
  double *v = ch->work + 2 * S;
  double a0 = ch->lam * ch->qp;
  for (long m = ch->M; m >= 0; m--) {
    memset(v, 0, (size_t)S * sizeof *v);
    if (m < ch->M) { /* v = r_(m+1)^T A2(m+1) */
      const double *rn = ch->r + (m + 1) * S;
      double mt = (double)(m + 1) * ch->theta;
      for (long j = 1; j <= ch->N; j++)
        v[j] = rn[j - 1] * mt;
      v[ch->N] += rn[ch->N] * mt * (1.0 - ch->qo);
    }
    if (m > 0 && a0 == 0.0) { /* no orbit: the levels above 0 are empty */
      memset(ch->r + m * S, 0, (size_t)S * sizeof *ch->r);
      continue;
    }
    int st = solve_level(ch, m, v, -a0, ch->r + m * S);
    if (st != MS_OK)
      return st;
  }
  double t = 0.0;
  for (long m = 0; m <= ch->M; m++) {
    double *row = ch->r + m * S;
    if (m > 0) {
      double s = ch->r[(m - 1) * S + ch->N];
      for (long n = 0; n < S; n++)
        row[n] *= s;
    }
    double rt = 0.0;
    for (long n = 0; n < S; n++)
      rt += row[n];
    t += rt;
    if (rt > 0x1p600) { /* the empty orbit is rare: rescale what is done */
      for (long k = 0; k < (m + 1) * S; k++)
        ch->r[k] *= 0x1p-600;
      t *= 0x1p-600;
    }
  }
  if (!isfinite(t) || !(t > 0.0))
    return MS_ELIMIT;
  *tot = t;
  return MS_OK;
}

/* Q_n, the share of the attempts admitted with n in the system (n < N)
 * that time out.  On the wait: P(W > T) = F(n - c; c mu T), W the
 * Erlang(k, c mu) wait for k = n - c + 1 completions (0 for n < c).  On
 * the response (response true): P(W + S > T), S the attempt's own
 * exponential service: e^(-mu T) for n < c, else
 *   F(k - 1; c mu T) + e^(-mu T) (c / (c - 1))^k P(Pois((c - 1) mu T) >= k)
 * (the convolution of the Erlang wait's density with e^(-mu (T - w)) over
 * [0, T], the same integral as doc/design.md §1.9's response tail, one
 * state at a time), and F(k; mu T) for one server.  Every term is
 * positive; the Poisson tail from ms_poisson_cdf keeps its digits. */
static void wait_tails(long c, long N, double mu, double T, bool response,
                       double *Q) {
  double tau = (double)c * mu * T;
  for (long n = 0; n <= N; n++) {
    if (n == N)
      Q[n] = 0.0; /* rejected, not admitted */
    else if (T == 0.0)
      Q[n] = response || n >= c ? 1.0 : 0.0;
    else if (isinf(T))
      Q[n] = 0.0;
    else if (n < c)
      Q[n] = response ? exp(-mu * T) : 0.0;
    else {
      double ln_cdf, ln_ratio;
      long k = n - c + 1;
      if (response && c == 1) {
        ms_poisson_cdf(k, mu * T, &ln_cdf, &ln_ratio);
        Q[n] = exp(ln_cdf);
        continue;
      }
      ms_poisson_cdf(k - 1, tau, &ln_cdf, &ln_ratio);
      Q[n] = exp(ln_cdf);
      if (response) {
        double ln_f, ln_r;
        ms_poisson_cdf(k - 1, (double)(c - 1) * mu * T, &ln_f, &ln_r);
        double ln_sf = log(-expm1(ln_f));
        Q[n] = fmin(1.0, Q[n] + exp(-mu * T +
                                    (double)k * log1p(1.0 / (double)(c - 1)) +
                                    ln_sf));
      }
    }
  }
}

/* Segments of the spread's average at most, and its tolerance: each
 * state's share within SPREAD_ABS (a probability; the chain needs no
 * more). */
enum { SPREAD_SEGMENTS = 64 };
#define SPREAD_ABS 1e-11

/* One segment [lo, hi] of the average over T: out[n] its integral of Q_n
 * over the spread w, err[n] |K15 - G7| of it; tmp S doubles. */
static void spread_segment(long c, long N, double mu, bool response, double lo,
                           double hi, double w, double *out, double *err,
                           double *tmp, double *g) {
  long S = N + 1;
  double mid = 0.5 * (lo + hi), half = 0.5 * (hi - lo);
  for (long n = 0; n < S; n++)
    out[n] = g[n] = 0.0;
  for (int i = 0; i < 8; i++) {
    for (int side = 0; side < (i < 7 ? 2 : 1); side++) {
      double t = side ? mid - half * ms_qk15_x[i] : mid + half * ms_qk15_x[i];
      wait_tails(c, N, mu, fmin(hi, fmax(lo, t)), response, tmp);
      for (long n = 0; n < S; n++) {
        out[n] += ms_qk15_wk[i] * tmp[n];
        if (i % 2 == 1)
          g[n] += ms_qk15_wg[i / 2] * tmp[n];
      }
    }
  }
  for (long n = 0; n < S; n++) {
    err[n] = fabs(out[n] - g[n]) * half / w;
    out[n] *= half / w;
  }
}

/* Q_n averaged over a timeout uniform on [T, T + w] (w > 0): adaptive
 * Gauss-Kronrod, the segment with the largest error halved until every
 * state's error is within SPREAD_ABS or SPREAD_SEGMENTS are used.  Each
 * Q_n(T) is a smooth step in T (a Poisson cdf in c mu T), so the segments
 * gather where the queue's states turn from timing out to not. */
static int spread_tails(long c, long N, double mu, double T, double w,
                        bool response, double *Q) {
  long S = N + 1;
  double *v = malloc((size_t)(SPREAD_SEGMENTS * 2 * S + 2 * S) * sizeof *v);
  double lo[SPREAD_SEGMENTS], hi[SPREAD_SEGMENTS];
  if (v == NULL)
    return MS_ENOMEM;
  double *tmp = v + SPREAD_SEGMENTS * 2 * S, *g = tmp + S;
#define SEG_V(i) (v + (size_t)(i)*2 * S)
#define SEG_E(i) (v + (size_t)(i)*2 * S + S)
  int n = 1;
  lo[0] = T;
  hi[0] = T + w;
  spread_segment(c, N, mu, response, lo[0], hi[0], w, SEG_V(0), SEG_E(0), tmp,
                 g);
  for (;;) {
    /* done when every state's summed error is within SPREAD_ABS; else
     * halve the segment whose worst state errs most */
    double most = 0.0;
    int at = -1;
    bool ok = true;
    for (long k = 0; k < S; k++) {
      double e = 0.0;
      for (int i = 0; i < n; i++)
        e += SEG_E(i)[k];
      if (e > SPREAD_ABS)
        ok = false;
    }
    if (ok || n == SPREAD_SEGMENTS)
      break;
    for (int i = 0; i < n; i++)
      for (long k = 0; k < S; k++)
        if (SEG_E(i)[k] > most) {
          most = SEG_E(i)[k];
          at = i;
        }
    if (at < 0)
      break; /* the errors are not numbers: nothing to halve */
    double mid = 0.5 * (lo[at] + hi[at]);
    if (!(mid > lo[at] && mid < hi[at]))
      break; /* as short as doubles allow */
    lo[n] = mid;
    hi[n] = hi[at];
    hi[at] = mid;
    spread_segment(c, N, mu, response, lo[at], hi[at], w, SEG_V(at), SEG_E(at),
                   tmp, g);
    spread_segment(c, N, mu, response, lo[n], hi[n], w, SEG_V(n), SEG_E(n), tmp,
                   g);
    n++;
  }
  for (long k = 0; k < S; k++) {
    double q = 0.0;
    for (int i = 0; i < n; i++)
      q += SEG_V(i)[k];
    Q[k] = k == N ? 0.0 : fmin(1.0, fmax(0.0, q));
  }
#undef SEG_V
#undef SEG_E
  free(v);
  return MS_OK;
}

static int check_args(long c, double mu, long K, double T, double w,
                      int retries, const ms_backoff *b, ms_error *err) {
  if (b == NULL)
    return ms_fail(err, MS_EINVAL, "retrial queue: NULL backoff");
  if (c < 1 || K < 0 || c > MS_RETRIAL_MAX_QUEUE ||
      K > MS_RETRIAL_MAX_QUEUE - c)
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: servers = %ld and queue_limit = %ld need "
                   "servers >= 1, queue_limit >= 0, their sum <= %ld",
                   c, K, MS_RETRIAL_MAX_QUEUE);
  if (!(mu > 0.0) || !isfinite(mu))
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: service rate %g is not finite and > 0", mu);
  if (!(T >= 0.0))
    return ms_fail(err, MS_EINVAL, "retrial queue: timeout %g s is not >= 0",
                   T);
  if (!(w >= 0.0) || !(isfinite(w) || w == 0.0) || (w > 0.0 && isinf(T)))
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: timeout spread %g s is not finite and "
                   ">= 0 (with a finite timeout)",
                   w);
  if (retries < 0 || retries > MS_MAX_RETRIES)
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: retries = %d is outside [0, %d]", retries,
                   MS_MAX_RETRIES);
  return ms_backoff_check(b, err);
}

static int check_load(double x, ms_error *err) {
  if (!(x > 0.0) || !isfinite(x))
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: offered load %g req/s is not finite "
                   "and > 0",
                   x);
  return MS_OK;
}

/* The chain without its orbit, for when the full queue is too rare for
 * the levels' normalisation at phase N (pi_N / pi_0 below the doubles):
 * level 0 is then the M/M/c/K birth-death chain, summed from phase 0 with
 * rescaling, and the levels above are empty (their mass is of the order
 * of pi_N).  Fails unless pi_N is negligible: under 1e-12. */
static int chain_solve_no_orbit(chain *ch, double *tot) {
  long S = ch->N + 1;
  memset(ch->r, 0, (size_t)((ch->M + 1) * S) * sizeof *ch->r);
  double *row = ch->r, t = 1.0;
  row[0] = 1.0;
  for (long n = 1; n < S; n++) {
    row[n] = row[n - 1] * ch->lam / death(ch, n);
    t += row[n];
    if (t > 0x1p600) {
      for (long k = 0; k <= n; k++)
        row[k] *= 0x1p-600;
      t *= 0x1p-600;
    }
  }
  if (!isfinite(t) || !(t > 0.0) || !(row[ch->N] <= 1e-12 * t))
    return MS_ELIMIT;
  *tot = t;
  return MS_OK;
}

/* Solve the chain, doubling the orbit's levels (from *M) until the last
 * holds less than 1e-14 of the mass; *tot the unnormalized mass. */
static int solve_grown(chain *ch, long *M, long max_states, double *work,
                       bool grow, double x, double *tot, ms_error *err) {
  long S = ch->N + 1;
  for (;;) {
    if (*M * S > max_states)
      return ms_fail(err, MS_ELIMIT,
                     "retrial queue: over %ld states of rejected requests "
                     "in backoff at %g req/s (a long backoff, or a load far "
                     "past capacity): the M/M/c/K answer stands",
                     max_states, x);
    *work -= (double)((*M + 1) * S);
    if (*work < 0.0)
      return ms_fail(err, MS_ELIMIT,
                     "retrial queue: more than %g state updates (c + K = "
                     "%ld, %ld orbit levels at %g req/s): too long to wait for",
                     MS_RETRIAL_MAX_WORK, S - 1, *M + 1, x);
    double *nr = realloc(ch->r, (size_t)((*M + 1) * S) * sizeof *nr);
    if (nr == NULL)
      return ms_fail(err, MS_ENOMEM, "retrial queue: out of memory");
    ch->r = nr;
    ch->M = *M;
    if (chain_solve(ch, tot) != MS_OK && chain_solve_no_orbit(ch, tot) != MS_OK)
      return ms_fail(err, MS_ELIMIT,
                     "retrial queue: the full queue is too rare to represent "
                     "at %g req/s (c = %ld, K = %ld); rejections do not "
                     "matter there",
                     x, ch->c, ch->N - ch->c);
    double last = 0.0;
    for (long n = 0; n < S; n++)
      last += ch->r[*M * S + n];
    if (!grow || last <= 1e-14 * *tot)
      return MS_OK;
    *M *= 2;
  }
}

/* The chain's shares: full and timed out, as time averages (pfull, pw)
 * and weighted by the orbit (h, g); em the mean orbit. */
typedef struct {
  double pfull, pw, h, g, em;
} shares;

static shares chain_shares(const chain *ch, const double *Q, double tot) {
  long S = ch->N + 1;
  shares z = {0};
  double hm = 0.0, gm = 0.0;
  for (long m = 0; m <= ch->M; m++) {
    const double *row = ch->r + m * S;
    double mass = 0.0, wt = 0.0;
    for (long n = 0; n < S; n++) {
      mass += row[n];
      wt += row[n] * Q[n];
    }
    z.pfull += row[ch->N];
    z.pw += wt;
    z.em += (double)m * mass;
    hm += (double)m * row[ch->N];
    gm += (double)m * wt;
  }
  z.pfull /= tot;
  z.pw /= tot;
  z.em /= tot;
  z.h = z.em > 0.0 ? hm / tot / z.em : z.pfull;
  z.g = z.em > 0.0 ? gm / tot / z.em : z.pw;
  return z;
}

/* What one service's chain keeps between fixed points: the per-state
 * tails, the backoff's mean delays and the chain's buffers. */
typedef struct {
  int r;
  double *d, *fp, *fo, *Q, *work;
  chain ch;
  long M;          /* orbit levels, grown as needed */
  long max_states; /* (c + K + 1) x levels at most */
  double budget;   /* state updates left, of MS_RETRIAL_MAX_WORK */
} retrial;

static void retrial_free(retrial *q) {
  free(q->d);
  free(q->fp);
  free(q->fo);
  free(q->Q);
  free(q->work);
  free(q->ch.r);
}

static int retrial_init(retrial *q, long c, double mu, long K, double T,
                        double w, ms_timeout_covers covers, int retries,
                        const ms_backoff *b, ms_error *err) {
  memset(q, 0, sizeof *q);
  if (covers != MS_TIMEOUT_COVERS_WAIT && covers != MS_TIMEOUT_COVERS_RESPONSE)
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: timeout_covers = %d is neither wait nor "
                   "response",
                   (int)covers);
  int st = check_args(c, mu, K, T, w, retries, b, err);
  if (st != MS_OK)
    return st;
  long N = c + K, S = N + 1;
  int r = retries;
  q->r = r;
  q->M = 16;
  q->max_states = MS_RETRIAL_MAX_STATES;
  q->budget = MS_RETRIAL_MAX_WORK;
  q->d = malloc((size_t)(r + 1) * sizeof *q->d);
  q->fp = malloc((size_t)(r + 1) * sizeof *q->fp);
  q->fo = malloc((size_t)(r + 1) * sizeof *q->fo);
  q->Q = malloc((size_t)S * sizeof *q->Q);
  q->work = malloc((size_t)(3 * S) * sizeof *q->work);
  q->ch = (chain){.c = c, .N = N, .mu = mu, .work = q->work};
  if (!q->d || !q->fp || !q->fo || !q->Q || !q->work) {
    retrial_free(q);
    return ms_fail(err, MS_ENOMEM, "retrial queue: out of memory");
  }
  if (r > 0 && (st = ms_backoff_mean_delays(b, r, &q->d[1], err)) != MS_OK) {
    retrial_free(q);
    return st;
  }
  for (int k = 1; k <= r; k++) {
    if (!(q->d[k] > 0.0)) {
      retrial_free(q);
      return ms_fail(err, MS_EINVAL,
                     "retrial queue: retry %d's mean backoff is 0; the chain "
                     "needs a backoff (a retry at once meets the same queue)",
                     k);
    }
  }
  bool response = covers == MS_TIMEOUT_COVERS_RESPONSE;
  /* a spread below the rounding of T is no spread */
  if (T + w > T && isfinite(T + w)) {
    if (spread_tails(c, N, mu, T, (T + w) - T, response, q->Q) != MS_OK) {
      retrial_free(q);
      return ms_fail(err, MS_ENOMEM, "retrial queue: out of memory");
    }
  } else
    wait_tails(c, N, mu, T, response, q->Q);
  return MS_OK;
}

/* The fixed point at offered load x from lt0 retries after a timeout per
 * second: 0 starts healthy; r x (every attempt timed out) starts in a
 * storm.  Settled when the step's change is under tol.  last: on 2000
 * steps without settling, give the last step (a side of the fold is all
 * the load searches need; near a fold the damped iteration creeps, its
 * rate 1 - O(sqrt(distance))) instead of MS_ENOCONV. */
static int retrial_fixed_point(retrial *q, double x, double lt0, double tol,
                               bool last, ms_retrial_result *out,
                               ms_error *err) {
  chain *ch = &q->ch;
  int r = q->r, st;
  double *d = q->d, *fp = q->fp, *fo = q->fo;
  ch->lam = x;
  ch->theta = r > 0 ? 1.0 / d[1] : 1.0;
  ch->qp = r > 0 ? 1.0 : 0.0;
  ch->qo = r > 1 ? 0.5 : 0.0;
  double lt = lt0; /* retries after a timeout, 1/s */
  int it;
  double A = 1.0;
  shares z = {0};
  for (it = 1; it <= 2000; it++) {
    ch->lam = x + lt;
    double tot = 0.0;
    st = solve_grown(ch, &q->M, q->max_states, &q->budget, r > 0, x, &tot, err);
    if (st != MS_OK)
      return st;
    z = chain_shares(ch, q->Q, tot);
    /* flows by retry stage: fp Poisson-like arrivals (fresh, after a
     * timeout), fo arrivals from the orbit */
    fp[0] = x;
    fo[0] = 0.0;
    for (int k = 0; k < r; k++) {
      fo[k + 1] = fp[k] * z.pfull + fo[k] * z.h;
      fp[k + 1] = fp[k] * z.pw + fo[k] * z.g;
    }
    double sp = 0.0, so = 0.0, spr = 0.0, sor = 0.0, sod = 0.0;
    for (int k = 0; k <= r; k++) {
      sp += fp[k];
      so += fo[k];
      spr += k < r ? fp[k] : 0.0;
      sor += k > 0 && k < r ? fo[k] : 0.0;
      sod += k > 0 ? fo[k] * d[k] : 0.0;
    }
    double lt_new = sp - x;
    double qp = r > 0 ? spr / sp : 0.0;
    double qo = so > 0.0 ? sor / so : ch->qo;
    double theta = so > 0.0 ? so / sod : ch->theta;
    A = (sp + so) / x;
    double delta = fabs(lt_new - lt) / x + fabs(qp - ch->qp) +
                   fabs(qo - ch->qo) + fabs(theta / ch->theta - 1.0);
    lt = 0.5 * (lt + lt_new);
    ch->qp = qp;
    ch->qo = qo;
    ch->theta = theta;
    if (delta < tol)
      break;
  }
  if (it > 2000 && last)
    it = 2000;
  else if (it > 2000)
    return ms_fail(err, MS_ENOCONV,
                   "retrial queue: the fixed point did not settle at %g req/s",
                   x);
  *out = (ms_retrial_result){.attempts = A,
                             .p_full = z.pfull,
                             .p_full_retry = z.h,
                             .orbit = z.em,
                             .timeout_rate = lt,
                             .levels = q->M + 1,
                             .iterations = it};
  return MS_OK;
}

int ms_retrial_attempts(long c, double mu, long K, double T, double w,
                        ms_timeout_covers covers, int retries,
                        const ms_backoff *b, double x, ms_retrial_result *out,
                        ms_error *err) {
  if (out == NULL)
    return ms_fail(err, MS_EINVAL, "ms_retrial_attempts: NULL argument");
  int st = check_load(x, err);
  if (st != MS_OK)
    return st;
  retrial q;
  if ((st = retrial_init(&q, c, mu, K, T, w, covers, retries, b, err)) != MS_OK)
    return st;
  st = retrial_fixed_point(&q, x, 0.0, 1e-10, false, out, err);
  retrial_free(&q);
  return st;
}

/* Whether the fixed point from lt0 at x is collapsed: its attempts reach
 * the servers' capacity c mu (the collapsed branch of doc/design.md §1.9
 * sits above it, where blocking takes the excess). */
static int collapsed_at(retrial *q, double x, bool storm_start, bool *yes,
                        ms_error *err) {
  ms_retrial_result res;
  int st = retrial_fixed_point(q, x, storm_start ? (double)q->r * x : 0.0, 1e-8,
                               true, &res, err);
  if (st != MS_OK)
    return st;
  *yes = x * res.attempts >= (double)q->ch.c * q->ch.mu;
  return MS_OK;
}

/* The least load in [lo, hi] at which the fixed point from the start is
 * collapsed, to MS_RETRIAL_LOAD_REL: bisection, collapsed at hi and not
 * at lo. */
static int fold_search(retrial *q, bool storm_start, double lo, double hi,
                       double *at, ms_error *err) {
  while (hi - lo > MS_RETRIAL_LOAD_REL * hi) {
    double mid = 0.5 * (lo + hi);
    bool yes;
    int st = collapsed_at(q, mid, storm_start, &yes, err);
    if (st != MS_OK)
      return st;
    if (yes)
      hi = mid;
    else
      lo = mid;
  }
  *at = 0.5 * (lo + hi);
  return MS_OK;
}

int ms_retrial_loads(long c, double mu, long K, double T, double w,
                     ms_timeout_covers covers, int retries, const ms_backoff *b,
                     double *tipping, double *recovery, ms_error *err) {
  if (tipping == NULL || recovery == NULL)
    return ms_fail(err, MS_EINVAL, "ms_retrial_loads: NULL argument");
  if (retries < 1)
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: without retries there is no storm to tip "
                   "into");
  retrial q;
  int st = retrial_init(&q, c, mu, K, T, w, covers, retries, b, err);
  if (st != MS_OK)
    return st;
  /* a long backoff's orbit takes thousands of levels, each solved some
   * 30 x 40 times: bound them; a long queue's 512 levels stay */
  q.max_states = 512 * (c + K + 1);
  if (q.max_states < MS_RETRIAL_LOADS_MAX_STATES)
    q.max_states = MS_RETRIAL_LOADS_MAX_STATES;
  if (q.max_states > MS_RETRIAL_MAX_STATES)
    q.max_states = MS_RETRIAL_MAX_STATES;
  /* Below c mu / (r + 1) no request can bring c mu attempts; at c mu the
   * fresh attempts alone do: both searches lie between. */
  double cap = (double)c * mu, lo = cap / (retries + 1.0);
  st = fold_search(&q, false, lo, cap, tipping, err);
  if (st == MS_OK)
    st = fold_search(&q, true, lo, *tipping, recovery, err);
  retrial_free(&q);
  if (st != MS_OK && err != NULL) {
    /* the load in the message is a step of the search: say so */
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    ms_fail(err, st, "%s (load search, %g to %g req/s)", why, lo, cap);
  }
  return st;
}
