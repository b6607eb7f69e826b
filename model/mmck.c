/* SPDX-License-Identifier: MIT */
/*
 * The M/M/c/K queue: c servers, K waiting places, arrivals that find all
 * c + K places taken are rejected (Gross & Harris, Fundamentals of Queueing
 * Theory, ch. 2, M/M/c/K; doc/design.md §1.9).  Its blocking probability
 * and the wait tail of the admitted arrivals, in log space, at a cost that
 * does not grow with c and grows with K only on a narrow band around
 * x = c mu (below).
 *
 * With a = x / mu, rho = a / c and G = 1 / B(c, a) (Erlang B), the
 * stationary probabilities are pi_n = pi_c rho^(n - c) for c <= n <= c + K
 * and 1 / pi_c = Z_K, where Z_n = G + sum_{j=1}^{n} rho^j.  So
 *   P_block = rho^K / Z_K,     1 - P_block = Z_{K-1} / Z_K,
 * and with tau = c mu T, m = n - c the queue an admitted arrival finds and
 * Q(m + 1, tau) = P(Poisson(tau) <= m) its chance to wait longer than T,
 *   P(W > T | admitted) = S / Z_{K-1},
 *   S = sum_{m<K} rho^m Q(m + 1, tau)
 *     = [e^(-(c mu - x) T) F(K - 1; x T) - rho^K F(K - 1; tau)] / (1 - rho)
 * (exchange the sums: sum_m rho^m sum_{j<=m} pois(j; tau) = sum_{j<K}
 * pois(j; tau) (rho^j - rho^K) / (1 - rho), and e^(-tau) (rho tau)^j / j!
 * = e^(-(1 - rho) tau) pois(j; rho tau)), F the Poisson cdf.  Where the two
 * terms of S come within a factor e of each other (rho near 1) the
 * difference would cancel; there S is summed over j instead, its terms
 * pois(j; tau) (rho^j - rho^K) / (1 - rho) being log-concave in j, so the
 * sum starts at the mode and stops with a proven bound on the rest.
 * For rho > 1 every quantity is scaled by rho^-K, so that K ln rho never
 * has to cancel against itself.
 */
#include <float.h>
#include <math.h>

#include "internal.h"

/* ln(e^u + e^v), either may be -inf. */
static double log_add(double u, double v) {
  double hi = fmax(u, v), lo = fmin(u, v);
  if (hi == -INFINITY)
    return -INFINITY;
  return hi + log1p(exp(lo - hi));
}

/* ln [n]_r = ln sum_{j<n} r^j for n >= 0 (-inf for n = 0), given
 * d = 1 - r (accurately) and ln r. */
static double ln_qnum(long n, double d, double ln_r) {
  if (n <= 0)
    return -INFINITY;
  if (d == 0.0)
    return log((double)n);
  double e = (double)n * ln_r;
  if (d > 0.0)
    return log(-expm1(e)) - log(d);
  if (e < 1.0)
    return log(expm1(e)) - log(-d);
  return e + log1p(-exp(-e)) - log(-d);
}

/* ln F(n; y) for y >= 0, -inf for y not finite (an overflowing x T). */
static double ln_cdf(long n, double y) {
  if (y == 0.0)
    return 0.0;
  if (!(y <= DBL_MAX))
    return -INFINITY;
  double l, r;
  ms_poisson_cdf(n, y, &l, &r);
  return l;
}

/* The shape of the queue: rho = x / (c mu) through d = 1 - rho, ln rho, and
 * for rho > 1 d' = 1 - 1/rho. */
typedef struct {
  long c, K;
  double mu, cmu, x, T, tau;
  double d, ln_rho, d_inv; /* d_inv used for rho > 1 */
  bool over;               /* rho > 1: quantities scaled by rho^-K */
  double ln_g;             /* ln G = -ln B(c, a) */
} shape;

/* ln (Z_n rho^-K if over, else Z_n), 0 <= n <= K. */
static double ln_z(const shape *q, long n) {
  if (!q->over)
    return log_add(q->ln_g, q->ln_rho + ln_qnum(n, q->d, q->ln_rho));
  double K = (double)q->K;
  return log_add(q->ln_g - K * q->ln_rho, ((double)n - K) * q->ln_rho +
                                              ln_qnum(n, q->d_inv, -q->ln_rho));
}

/* ln_z(q, n) - ln G, formed without the difference of two large logs:
 * with c large and rho small ln G is of order c ln(c / a) (1.9e9 at c =
 * 4e6, a = 1e-200), whose rounding (2.4e-7 there) would swamp a response
 * tail of e^(-mu T) read as a difference of such logs. */
static double ln_z_rel(const shape *q, long n) {
  if (!q->over)
    return log_add(0.0, q->ln_rho + ln_qnum(n, q->d, q->ln_rho) - q->ln_g);
  double K = (double)q->K;
  return log_add(-K * q->ln_rho, ((double)n - K) * q->ln_rho +
                                     ln_qnum(n, q->d_inv, -q->ln_rho) -
                                     q->ln_g);
}

/* ln of the j-th term of S (scaled by rho^-K if over), without the
 * Poisson factor: ln [(rho^j - rho^K) / (1 - rho)]. */
static double ln_g_j(const shape *q, long j) {
  if (!q->over)
    return (double)j * q->ln_rho + ln_qnum(q->K - j, q->d, q->ln_rho);
  /* (rho^K - rho^j) / (rho - 1) = rho^(K-1) [K - j]_{1/rho} */
  return -q->ln_rho + ln_qnum(q->K - j, q->d_inv, -q->ln_rho);
}

/* A sum over j of pois(j; tau) h^e(j) [n(j)]_b, the form of both the wait's
 * S and the response's E: e(j) = e_step j + e_off and n(j) = n_off + n_step j
 * integers, n(j) >= 1 over the range summed, b <= 1 through d_b = 1 - b >= 0
 * and ln b (-inf for b = 0). */
typedef struct {
  double tau;         /* the Poisson mean, > 0 */
  double ln_h;        /* ln h, finite */
  long e_step, e_off; /* e_step 0 or 1 */
  long n_off, n_step; /* n_step -1 or 1 */
  double d_b, ln_b;
} series;

/* ln of the j-th term without the [n]_b factor, in the exact log form:
 * ln pois(j; tau) + e(j) ln h, e(j) formed exactly as an integer so that
 * e.g. (j - 1 - K) ln rho does not cancel. */
static double series_ln_a(const series *s, long j) {
  return ms_ln_poisson_pmf(j, s->tau) +
         (double)(s->e_step * j + s->e_off) * s->ln_h;
}

/* [n]_b up to the factor 1 / d_b when d_b > 0: -expm1(n ln b), else n. */
static double series_q(const series *s, long n) {
  return s->d_b == 0.0 ? (double)n : -expm1((double)n * s->ln_b);
}

/* How often the Poisson and geometric factors, carried by recurrence from
 * the mode, are formed afresh from the exact log form: each step rounds
 * them by at most about 2.5 units in the last place (one quotient, two
 * products), so the relative error of a term stays below 128 x 2.5 x
 * 1.1e-16 = 3.6e-14 (and that of the sum, all terms positive, too). */
enum { SERIES_REFRESH = 128 };

/* ln of the sum of the terms over j in [lo, hi], from j0 outwards: each
 * direction stops once the terms fall and the geometric bound t q / (1 - q)
 * on the rest (log-concavity: the ratios q only shrink) is below 1e-17 of
 * the sum.  Each term costs a quotient, two products and one expm1: the
 * Poisson factor by pois(j + 1) = pois(j) tau / (j + 1), h^e(j) by products,
 * both refreshed every SERIES_REFRESH steps.  Counts the terms in *terms when
 * not NULL. */
static double series_sum(const series *s, long j0, long lo, long hi,
                         long *terms) {
  double ln_a0 = series_ln_a(s, j0);
  long n0 = s->n_off + s->n_step * j0;
  double q0_inv = 1.0 / series_q(s, n0);
  double ln_mode = ln_a0 + ln_qnum(n0, s->d_b, s->ln_b);
  double h = s->e_step != 0 ? exp(s->ln_h) : 1.0;
  double h_inv = s->e_step != 0 ? exp(-s->ln_h) : 1.0;
  double sum = 1.0;
  long count = 1;
  if (ln_a0 == -INFINITY) { /* tau underflowed: no term but at j = 0 */
    if (terms != NULL)
      *terms = count;
    return ln_mode;
  }
  for (int dir = 1; dir >= -1; dir -= 2) {
    double a = 1.0, prev = 1.0;
    long k = 1;
    for (long j = j0 + dir; j >= lo && j <= hi; j += dir, k++) {
      if (k % SERIES_REFRESH == 0)
        a = exp(series_ln_a(s, j) - ln_a0);
      else if (dir > 0)
        a = a * (s->tau / (double)j) * h;
      else
        a = a * ((double)(j + 1) / s->tau) * h_inv;
      double t = a * (series_q(s, s->n_off + s->n_step * j) * q0_inv);
      sum += t;
      count++;
      /* the ratio q = t / prev < 1 and t q / (1 - q) = t^2 / (prev - t),
       * without a division */
      if (t < prev && t * t <= 1e-17 * sum * (prev - t))
        break;
      prev = t;
    }
  }
  if (terms != NULL)
    *terms = count;
  return ln_mode + log(sum);
}

/* ln S by summing its terms pois(j; tau) (rho^j - rho^K) / (1 - rho) over
 * j < K from the mode outwards (series_sum): rho^j [K - j]_rho, or over
 * rho^-1 [K - j]_(1/rho), scaled by rho^-K.  Returns the count of terms in
 * *terms when not NULL. */
static double wait_sum(const shape *q, long *terms) {
  double rho1 = q->ln_rho < 0.0 ? exp(q->ln_rho) : 1.0;
  double jf = floor(rho1 * q->tau);
  long j0 = jf >= (double)(q->K - 1) ? q->K - 1 : (long)jf;
  series s = {.tau = q->tau, .ln_h = q->ln_rho, .n_off = q->K, .n_step = -1};
  if (!q->over) {
    s.e_step = 1;
    s.e_off = 0;
    s.d_b = q->d;
    s.ln_b = q->ln_rho;
  } else {
    s.e_step = 0;
    s.e_off = -1;
    s.d_b = q->d_inv;
    s.ln_b = -q->ln_rho;
  }
  return series_sum(&s, j0, 0, q->K - 1, terms);
}

/* ln S (scaled by rho^-K if over), K >= 1. */
static double ln_wait_numerator(const shape *q, long *terms) {
  if (terms != NULL)
    *terms = 0;
  if (q->tau == 0.0)
    return ln_g_j(q, 0); /* S = [K]_rho: every admitted arrival waits */
  if (q->d != 0.0) {
    double K = (double)q->K, xT = q->x * q->T;
    double f_tau = ln_cdf(q->K - 1, q->tau);
    double f_xt = ln_cdf(q->K - 1, xT);
    if (!q->over) {
      /* L1 - L2 with L1 = -(c mu - x) T + ln F(K - 1; x T), L2 = K ln rho +
       * ln F(K - 1; tau) */
      double l1 = -(q->cmu - q->x) * q->T + f_xt;
      double diff = l1 - (K * q->ln_rho + f_tau);
      if (diff >= 1.0)
        return l1 + log(-expm1(-diff)) - log(q->d);
    } else {
      double l1 = isfinite(xT) ? (q->x - q->cmu) * q->T + f_xt - K * q->ln_rho
                               : -INFINITY;
      double diff = l1 - f_tau;
      if (diff <= -1.0)
        return f_tau + log(-expm1(diff)) - log(-q->d);
    }
  }
  return wait_sum(q, terms);
}

static void shape_init(long c, long K, double mu, double x, double T,
                       shape *q) {
  q->c = c;
  q->K = K;
  q->mu = mu;
  q->cmu = (double)c * mu;
  q->x = x;
  q->T = T;
  q->tau = q->cmu * T;
  q->d = (q->cmu - x) / q->cmu;
  q->ln_rho = fabs(q->d) <= 0.5 ? log1p(-q->d) : log(x) - log(q->cmu);
  q->over = q->d < 0.0;
  q->d_inv = (x - q->cmu) / x;
  double a = x / mu;
  if (a < (double)c) {
    ms_erlang_terms t;
    ms_erlang_terms_unchecked(c, a, &t);
    q->ln_g = -t.ln_b;
  } else {
    double l;
    ms_poisson_cdf(c, a, &l, &q->ln_g);
  }
}

/* ln P_block and ln(1 - P_block) into *t; ln Z_(K-1) (0 for K = 0)
 * returned. */
static double block_terms(const shape *q, ms_mmck_terms *t) {
  long K = q->K;
  double lz_k = ln_z(q, K);
  t->ln_block = (q->over ? 0.0 : (double)K * q->ln_rho) - lz_k;
  if (t->ln_block > 0.0)
    t->ln_block = 0.0;
  double lz_k1 = K >= 1 ? ln_z(q, K - 1) : 0.0;
  if (t->ln_block < -M_LN2)
    t->ln_admit = log1p(-exp(t->ln_block));
  else if (K >= 1)
    t->ln_admit = lz_k1 - lz_k;
  else
    t->ln_admit = log(-expm1(-q->ln_g));
  return lz_k1;
}

void ms_mmck_terms_unchecked(long c, long K, double mu, double x, double T,
                             ms_mmck_terms *t) {
  shape q;
  shape_init(c, K, mu, x, T, &q);
  double lz_k1 = block_terms(&q, t);
  t->wait_terms = 0;
  if (K == 0) {
    t->ln_wait = -DBL_MAX;
    return;
  }
  t->ln_wait = ln_wait_numerator(&q, &t->wait_terms) - lz_k1;
  if (t->ln_wait > 0.0)
    t->ln_wait = 0.0;
  if (t->ln_wait < -DBL_MAX)
    t->ln_wait = -DBL_MAX;
}

/*
 * The response R = W + S of an admitted arrival (doc/design.md §1.9).  One
 * that finds m = n - c >= 0 waiting starts service at the (m + 1)-th
 * completion of the c busy servers, a Poisson stream of rate c mu; its own
 * service then ends at each later event of that stream with chance 1/c
 * (the stream thinned; the other servers' events may be fictitious once
 * they idle, which leaves its own exponential service unchanged).  With
 * J ~ Poisson(tau), tau = c mu T, and r = 1 - 1/c:
 *   P(R > T | m) = E[r^((J - m - 1)+)]
 *               = F(m; tau) + sum_{j>m} pois(j; tau) r^(j-m-1),
 * and one served at once (n < c) has P(S > T) = e^(-mu T).  Weighted by
 * pi_n / pi_c (G - 1 below c, rho^m above), the numerator over Z_{K-1} is
 *   (G - 1) e^(-mu T) + S + E,  E = sum_{j>=1} pois(j; tau) w_j,
 * S the wait's (above) and w_j = sum_{m<min(j, K)} rho^m r^(j-1-m), all
 * terms positive.  Its terms j <= K have a closed form like S's
 * (response_closed) except near rho = r, where it would cancel; there
 * pois(j) w_j, log-concave in j (w is the convolution of two log-concave
 * sequences), is summed like wait_sum: from near its mode outwards,
 * stopped by the geometric bound on the rest.
 */

/* The shape of w_j = hi^(j-1) [j]_b for j <= K, hi = max(rho, r), b the
 * other over hi: ln hi, d = 1 - b >= 0 and ln b. */
static void w_shape(const shape *q, double ln_r, double *ln_hi, double *d,
                    double *ln_ratio) {
  double diff = 1.0 / (double)q->c - q->d; /* rho - r */
  if (diff >= 0.0) { /* rho >= r: w_j = rho^(j-1) [j]_(r/rho) */
    *ln_hi = q->ln_rho;
    *d = diff / exp(q->ln_rho);
    *ln_ratio = ln_r - q->ln_rho;
  } else { /* w_j = r^(j-1) [j]_(rho/r) */
    *ln_hi = ln_r;
    *d = -diff / exp(ln_r);
    *ln_ratio = q->ln_rho - ln_r;
  }
  /* near rho = r the difference of the logs cancels: the ratio's log from
   * d itself, so that [j] = (1 - (1 - d)^j) / d stays consistent */
  if (*d <= 0.5)
    *ln_ratio = log1p(-*d);
}

/* ln w_j (scaled by rho^-K if over), j >= 1. */
static double ln_w_j(const shape *q, long j, double ln_r) {
  long jj = j <= q->K ? j : q->K;
  double ln_hi, d, ln_ratio;
  w_shape(q, ln_r, &ln_hi, &d, &ln_ratio);
  double v = ln_qnum(jj, d, ln_ratio);
  if (q->over) /* hi = rho here: rho > 1 > r */
    v += ((double)(jj - 1) - (double)q->K) * q->ln_rho;
  else
    v += (double)(jj - 1) * ln_hi;
  if (j > q->K)
    v += ln_r == -INFINITY ? -INFINITY : (double)(j - q->K) * ln_r;
  return v;
}

/* ln P(N > K), N Poisson of mean y >= 0: where y < K + 1 from its terms
 * pois(K + 1 + i; y), shrinking by y / (K + 2 + i) < 1, stopped by the
 * geometric bound on the rest (about 9 sqrt(K) terms at y near K + 1, a
 * few dozen at y <= (K + 1) / 2); above, 1 - F with F <= 1/2 or so. */
static double ln_poisson_above(long K, double y) {
  if (!(y > 0.0))
    return -INFINITY;
  double s = (double)K + 1.0;
  if (y >= s)
    return log1p(-exp(ln_cdf(K, y)));
  double term = 1.0, sum = 1.0;
  for (double j = s + 1.0;; j += 1.0) {
    double ratio = y / j;
    term *= ratio;
    sum += term;
    if (term * ratio / (1.0 - ratio) <= 1e-17 * sum)
      break;
  }
  return ms_ln_poisson_pmf(K + 1, y) + log(sum);
}

/* The terms j <= K of E in closed form, where it does not cancel: there
 * w_j = (rho^j - r^j) / (rho - r), the term j = 0 is 0, and e^(-tau)
 * (rho tau)^j / j! = e^(-(1 - rho) tau) pois(j; rho tau), so
 *   sum_{j<=K} pois(j; tau) w_j
 *     = [e^(-(1 - rho) tau) F(K; rho tau) - e^(-mu T) F(K; r tau)] / (rho - r)
 * ((1 - r) tau = mu T), the wait's closed form (above) with r for 1 and K for
 * K - 1.  Over, scaled by rho^-K, the first term is e^((rho - 1) tau) rho^-K
 * F(K; rho tau) or, the same by the identity at j = K, pois(K; tau) F(K; rho
 * tau) / pmf(K; rho tau): the first form cancels where (rho - 1) tau nears
 * K ln rho, the second where K is far above tau and rho near 1, so the one
 * whose parts are smaller is taken (its absolute rounding, about 1e-16 of
 * the parts, the smaller).  The second term, e^(-mu T) F(K; r tau) rho^-K,
 * has all its logs of one sign.  rho - r = (x - (c - 1) mu) / (c mu)
 * with one rounding in the difference (fma).  Returns false, to sum
 * instead, where the two terms come within a factor e of each other (rho
 * near r, where the difference would cancel), or where tau or x T is 0 or
 * not finite. */
static bool response_closed(const shape *q, double *ln_low) {
  double diff = fma(-(double)(q->c - 1), q->mu, q->x) / q->cmu;
  double xT = q->x * q->T, mu_t = q->tau / (double)q->c;
  if (diff == 0.0 || !(q->tau > 0.0) || !(xT > 0.0) || !(xT <= DBL_MAX))
    return false;
  double l1, l2 = -mu_t + ln_cdf(q->K, q->tau - mu_t);
  if (!q->over) {
    l1 = -(q->cmu - q->x) * q->T + ln_cdf(q->K, xT);
  } else {
    /* two forms of the first term, each a sum whose parts may cancel: the
     * one whose parts are smaller in size (its rounding the smaller) */
    double ln_f, ln_ratio, k_ln_rho = (double)q->K * q->ln_rho;
    ms_poisson_cdf(q->K, xT, &ln_f, &ln_ratio);
    double up = (q->x - q->cmu) * q->T,
           ln_pmf = ms_ln_poisson_pmf(q->K, q->tau);
    if (up + k_ln_rho - ln_f <= ln_ratio - ln_pmf)
      l1 = up - k_ln_rho + ln_f;
    else
      l1 = ln_pmf + ln_ratio;
    l2 -= k_ln_rho;
  }
  if (diff > 0.0 && l1 - l2 >= 1.0) {
    *ln_low = l1 + log(-expm1(l2 - l1)) - log(diff);
    return true;
  }
  if (diff < 0.0 && l2 - l1 >= 1.0) {
    *ln_low = l2 + log(-expm1(l1 - l2)) - log(-diff);
    return true;
  }
  return false;
}

/* ln of the terms j <= K of E summed from near their mode (series_sum). */
static double response_sum(const shape *q, double ln_r, long *terms) {
  /* the mode of pois(j; tau) max(rho, r)^j, the growth of w_j */
  double hi = fmax(exp(q->ln_rho), exp(ln_r));
  /* tau = 0 (c mu T underflows) puts the mode at 0 whatever rho, also
   * where rho overflows (a subnormal mu): inf x 0 would be NaN */
  double jf = q->tau > 0.0 ? floor(hi * q->tau) : 0.0;
  long j0 = jf >= (double)q->K ? q->K : (long)jf;
  if (j0 < 1)
    j0 = 1;
  /* pois(j; tau) w_j = pois(j; tau) hi^(j-1) [j]_b (over: hi^(j-1-K)) */
  series s = {.tau = q->tau, .e_step = 1, .n_off = 0, .n_step = 1};
  w_shape(q, ln_r, &s.ln_h, &s.d_b, &s.ln_b);
  s.e_off = q->over ? -1 - q->K : -1;
  return series_sum(&s, j0, 1, q->K, terms);
}

/* ln E (scaled by rho^-K if over), tau > 0, K >= 1: the terms j <= K
 * in closed form (response_closed) or, where that would cancel, summed
 * from near their mode; the rest in closed form,
 *   sum_{j>K} pois(j; tau) w_K r^(j-K) = w_K r^-K e^(-mu T) P(N > K),
 * N Poisson of mean r tau (for c = 1, r = 0, it is 0). */
static double ln_response_extra(const shape *q, long *terms) {
  double ln_r = log1p(-1.0 / (double)q->c);
  double low;
  if (response_closed(q, &low)) {
    if (terms != NULL)
      *terms = 0;
  } else
    low = response_sum(q, ln_r, terms);
  if (q->c == 1)
    return low;
  double r = exp(ln_r);
  double high = ln_w_j(q, q->K, ln_r) - (double)q->K * ln_r -
                q->tau / (double)q->c + ln_poisson_above(q->K, r * q->tau);
  return log_add(low, high);
}

void ms_mmck_response_terms_unchecked(long c, long K, double mu, double x,
                                      double T, ms_mmck_terms *t) {
  shape q;
  shape_init(c, K, mu, x, T, &q);
  block_terms(&q, t); /* the wait's own sum not needed */
  t->wait_terms = 0;
  if (T == 0.0) {
    t->ln_wait = 0.0; /* every response takes some time */
    return;
  }
  if (K == 0) {
    t->ln_wait = -mu * T; /* served at once: the service alone */
    return;
  }
  /* numerator and denominator both over G = 1 / B >= 1: ln G may be so
   * large that its rounding would swamp mu T (ln_z_rel) */
  long wterms, eterms;
  double ln_s = ln_wait_numerator(&q, &wterms) - q.ln_g;
  double ln_e = ln_response_extra(&q, &eterms) - q.ln_g;
  double ln_below = log(-expm1(-q.ln_g)); /* ln ((G - 1) / G) */
  if (q.over)
    ln_below -= (double)K * q.ln_rho;
  ln_below -= mu * T;
  double num = log_add(log_add(ln_below, ln_s), ln_e);
  t->ln_wait = num - ln_z_rel(&q, K - 1);
  t->wait_terms = wterms + eterms;
  if (t->ln_wait > 0.0)
    t->ln_wait = 0.0;
  if (t->ln_wait < -DBL_MAX)
    t->ln_wait = -DBL_MAX;
}

static int check_mmck_args(long c, long K, ms_error *err) {
  if (c < 1 || c > MS_MAX_SERVERS)
    return ms_fail(err, MS_EINVAL, "servers = %ld is outside [1, %ld]", c,
                   MS_MAX_SERVERS);
  if (K < 0 || K > MS_MAX_QUEUE_LIMIT)
    return ms_fail(err, MS_EINVAL, "queue_limit = %ld is outside [0, %ld]", K,
                   MS_MAX_QUEUE_LIMIT);
  return MS_OK;
}

int ms_mmck_ln_block(long c, long K, double a, double *ln_block,
                     ms_error *err) {
  int st = check_mmck_args(c, K, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(a) || !(a >= MS_MMCK_MIN_TRAFFIC) || !(a <= MS_MAX_RATE))
    return ms_fail(err, MS_EINVAL,
                   "offered traffic a = %g erlangs must be at least %g and at "
                   "most %g",
                   a, MS_MMCK_MIN_TRAFFIC, MS_MAX_RATE);
  ms_mmck_terms t;
  ms_mmck_terms_unchecked(c, K, 1.0, a, 0.0, &t);
  *ln_block = t.ln_block;
  return MS_OK;
}

/* The domain of ms_mmck_ln_wait_tail and ms_mmck_ln_response_tail. */
static int check_tail_args(long c, long K, double mu, double x, double T,
                           ms_error *err) {
  int st = check_mmck_args(c, K, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(mu) || !(mu > 0.0) || !((double)c * mu <= MS_MAX_RATE))
    return ms_fail(err, MS_EINVAL,
                   "service rate mu = %g/s must be > 0 with c mu at most %g",
                   mu, MS_MAX_RATE);
  /* x / mu within ms_mmck_ln_block's domain: with a subnormal mu it can
   * overflow, and an infinite rho made the response's mode NaN */
  double a = x / mu;
  if (!isfinite(x) || !(a >= MS_MMCK_MIN_TRAFFIC) || !(x <= MS_MAX_RATE) ||
      !(a <= MS_MAX_RATE))
    return ms_fail(err, MS_EINVAL,
                   "arrival rate x = %g/s must be at most %g, with x / mu in "
                   "[%g, %g]",
                   x, MS_MAX_RATE, MS_MMCK_MIN_TRAFFIC, MS_MAX_RATE);
  if (!isfinite(T) || !(T >= 0.0) ||
      !((double)c * mu * T <= MS_MAX_TIMEOUT_COMPLETIONS))
    return ms_fail(err, MS_EINVAL,
                   "timeout T = %g s must be >= 0 with c mu T at most %g", T,
                   MS_MAX_TIMEOUT_COMPLETIONS);
  return MS_OK;
}

int ms_mmck_ln_wait_tail(long c, long K, double mu, double x, double T,
                         double *ln_tail, ms_error *err) {
  int st = check_tail_args(c, K, mu, x, T, err);
  if (st != MS_OK)
    return st;
  ms_mmck_terms t;
  ms_mmck_terms_unchecked(c, K, mu, x, T, &t);
  *ln_tail = t.ln_wait;
  return MS_OK;
}

int ms_mmck_ln_response_tail(long c, long K, double mu, double x, double T,
                             double *ln_tail, ms_error *err) {
  int st = check_tail_args(c, K, mu, x, T, err);
  if (st != MS_OK)
    return st;
  ms_mmck_terms t;
  ms_mmck_response_terms_unchecked(c, K, mu, x, T, &t);
  *ln_tail = t.ln_wait;
  return MS_OK;
}
