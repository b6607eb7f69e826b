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

static int check_args(long c, double mu, long K, double T, int retries,
                      const ms_backoff *b, double x,
                      const ms_retrial_result *out, ms_error *err) {
  if (out == NULL || b == NULL)
    return ms_fail(err, MS_EINVAL, "ms_retrial_attempts: NULL argument");
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
  if (retries < 0 || retries > MS_MAX_RETRIES)
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: retries = %d is outside [0, %d]", retries,
                   MS_MAX_RETRIES);
  if (!(x > 0.0) || !isfinite(x))
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: offered load %g req/s is not finite "
                   "and > 0",
                   x);
  return ms_backoff_check(b, err);
}

/* Solve the chain, doubling the orbit's levels (from *M) until the last
 * holds less than 1e-14 of the mass; *tot the unnormalized mass. */
static int solve_grown(chain *ch, long *M, bool grow, double x, double *tot,
                       ms_error *err) {
  long S = ch->N + 1;
  for (;;) {
    if (*M * S > MS_RETRIAL_MAX_STATES)
      return ms_fail(err, MS_ELIMIT,
                     "retrial queue: the orbit needs more than %ld states "
                     "(c + K + 1 = %ld) at %g req/s",
                     MS_RETRIAL_MAX_STATES, S, x);
    double *nr = realloc(ch->r, (size_t)((*M + 1) * S) * sizeof *nr);
    if (nr == NULL)
      return ms_fail(err, MS_ENOMEM, "retrial queue: out of memory");
    ch->r = nr;
    ch->M = *M;
    if (chain_solve(ch, tot) != MS_OK)
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

int ms_retrial_attempts(long c, double mu, long K, double T,
                        ms_timeout_covers covers, int retries,
                        const ms_backoff *b, double x, ms_retrial_result *out,
                        ms_error *err) {
  if (covers != MS_TIMEOUT_COVERS_WAIT && covers != MS_TIMEOUT_COVERS_RESPONSE)
    return ms_fail(err, MS_EINVAL,
                   "retrial queue: timeout_covers = %d is neither wait nor "
                   "response",
                   (int)covers);
  int st = check_args(c, mu, K, T, retries, b, x, out, err);
  if (st != MS_OK)
    return st;
  long N = c + K, S = N + 1;
  int r = retries;
  double *d = malloc((size_t)(r + 1) * sizeof *d);
  double *fp = malloc((size_t)(r + 1) * sizeof *fp);
  double *fo = malloc((size_t)(r + 1) * sizeof *fo);
  double *Q = malloc((size_t)S * sizeof *Q);
  double *work = malloc((size_t)(3 * S) * sizeof *work);
  chain ch = {.c = c, .N = N, .mu = mu, .lam = x, .work = work};
  if (!d || !fp || !fo || !Q || !work) {
    st = ms_fail(err, MS_ENOMEM, "retrial queue: out of memory");
    goto done;
  }
  if (r > 0 && (st = ms_backoff_mean_delays(b, r, &d[1], err)) != MS_OK)
    goto done;
  for (int k = 1; k <= r; k++) {
    if (!(d[k] > 0.0)) {
      st = ms_fail(err, MS_EINVAL,
                   "retrial queue: retry %d's mean backoff is 0; the chain "
                   "needs a backoff (a retry at once meets the same queue)",
                   k);
      goto done;
    }
  }
  wait_tails(c, N, mu, T, covers == MS_TIMEOUT_COVERS_RESPONSE, Q);
  ch.theta = r > 0 ? 1.0 / d[1] : 1.0;
  ch.qp = r > 0 ? 1.0 : 0.0;
  ch.qo = r > 1 ? 0.5 : 0.0;
  double lt = 0.0; /* retries after a timeout, 1/s */
  long M = 16;
  int it;
  double A = 1.0;
  shares z = {0};
  for (it = 1; it <= 2000; it++) {
    ch.lam = x + lt;
    double tot = 0.0;
    st = solve_grown(&ch, &M, r > 0, x, &tot, err);
    if (st != MS_OK)
      goto done;
    z = chain_shares(&ch, Q, tot);
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
    double qo = so > 0.0 ? sor / so : ch.qo;
    double theta = so > 0.0 ? so / sod : ch.theta;
    A = (sp + so) / x;
    double delta = fabs(lt_new - lt) / x + fabs(qp - ch.qp) + fabs(qo - ch.qo) +
                   fabs(theta / ch.theta - 1.0);
    lt = 0.5 * (lt + lt_new);
    ch.qp = qp;
    ch.qo = qo;
    ch.theta = theta;
    if (delta < 1e-10)
      break;
  }
  if (it > 2000) {
    st =
        ms_fail(err, MS_ENOCONV,
                "retrial queue: the fixed point did not settle at %g req/s", x);
    goto done;
  }
  *out = (ms_retrial_result){.attempts = A,
                             .p_full = z.pfull,
                             .p_full_retry = z.h,
                             .orbit = z.em,
                             .timeout_rate = lt,
                             .levels = M + 1,
                             .iterations = it};
  st = MS_OK;
done:
  free(d);
  free(fp);
  free(fo);
  free(Q);
  free(work);
  free(ch.r);
  return st;
}
