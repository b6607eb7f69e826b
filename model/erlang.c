/* SPDX-License-Identifier: MIT */
/*
 * Erlang B, Erlang C and the M/M/c waiting-time tail, in log space.
 *
 * B(c, a) = pmf(c; a) / cdf(c; a) for a Poisson variable of mean a.  Both
 * parts are computed so that no step loses digits to cancellation:
 *
 *  - ln pmf(c; a) = -stirlerr(c) - bd0(c, a) - ln(2 pi c)/2 (Loader 2000),
 *    where bd0(x, M) = x ln(x/M) + M - x is summed as a series in
 *    v = (x - M)/(x + M) when x and M are close.  The direct form
 *    c ln a - a - lgamma(c + 1) cancels about 13 digits at c = 10^6.
 *  - cdf(c; a) = Q(c + 1, a) >= 1/2 for a < c, so only its absolute error
 *    matters.  The lower tail P(c + 1, a) = 1 - cdf is summed as a power
 *    series when its terms shrink fast (few servers, or a well below c), and
 *    otherwise taken from Temme's uniform asymptotic expansion, whose
 *    exponent exp(-bd0(c + 1, a)) reuses the same careful bd0.
 *
 * The cost is bounded: at most ~130 series terms, or 25 x 25 coefficients.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "log_table.h"
#include "temme_coeffs.h"

/* ln(2 pi) */
#define MS_LN_2PI 1.8378770664093454835606594728112

/*
 * stirlerr(n) = ln n! - (n + 1/2) ln n + n - ln(2 pi)/2, the error of
 * Stirling's formula, for integers n >= 1.  Table from
 * tools/gen_stirlerr.py (40-digit arithmetic); beyond it the asymptotic
 * series with Bernoulli-number coefficients 1/12, 1/360, 1/1260, 1/1680,
 * 1/1188 (Abramowitz & Stegun 6.1.40), truncation error < 1e-19 for n > 30.
 */
static const double stirlerr_table[31] = {
    0.0,
    0.08106146679532725822,
    0.041340695955409294094,
    0.027677925684998339149,
    0.020790672103765093112,
    0.016644691189821192163,
    0.013876128823070747999,
    0.011896709945891770095,
    0.010411265261972096497,
    0.0092554621827127329177,
    0.0083305634333628712565,
    0.007573675487951840795,
    0.0069428401072095298657,
    0.0064089941880042070684,
    0.0059513701127588477356,
    0.005554733551962801371,
    0.0052076559196096404407,
    0.0049013959484347378607,
    0.0046291537493340285924,
    0.0043855602492323242683,
    0.0041663196919969224575,
    0.0039679542186408596173,
    0.0037876180684444345779,
    0.0036229602246830947074,
    0.0034720213829787669629,
    0.0033331556367280928758,
    0.0032049702280550380112,
    0.0030862786826087770633,
    0.002976063983550408826,
    0.0028734493623524663876,
    0.0027776749297526936036,
};

static double stirlerr(long n) {
  if (n <= 30)
    return stirlerr_table[n];
  const double s0 = 1.0 / 12, s1 = 1.0 / 360, s2 = 1.0 / 1260, s3 = 1.0 / 1680,
               s4 = 1.0 / 1188;
  double nn = (double)n, n2 = nn * nn;
  return (s0 - (s1 - (s2 - (s3 - s4 / n2) / n2) / n2) / n2) / nn;
}

/*
 * ms_bd0(x, M) = x ln(x/M) + M - x >= 0, the deviance term of Loader (2000).
 * Near x = M it is summed as (x - M) v + 2 x sum_{j>=1} v^(2j+1)/(2j+1),
 * v = (x - M)/(x + M), which has no cancellation; |v| < 1/2 keeps the
 * series under 30 terms and the direct form's cancellation under 2 digits.
 */
double ms_bd0(double x, double M) {
  double d = x - M, sum = x + M;
  if (fabs(d) < 0.5 * sum) {
    double v = d / sum;
    double s = d * v;
    double ej = 2.0 * x * v;
    double v2 = v * v;
    for (int j = 1; j < 100; j++) {
      ej *= v2;
      double next = s + ej / (2 * j + 1);
      if (next == s)
        break;
      s = next;
    }
    return s;
  }
  /* x / M overflows for M below x/DBL_MAX (a of 1e-308 at c = 10): then
   * ln x - ln M, whose rounding is that of ln(x/M) within an ulp of 709 */
  double q = x / M;
  double l = isfinite(q) && q > 0.0 ? log(q) : log(x) - log(M);
  return x * l + M - x;
}

/*
 * Double-double arithmetic (doc/design.md §5): a value is an unevaluated sum
 * hi + lo of two doubles with |lo| <= ulp(hi) / 2.  two_sum and two_prod
 * return the rounded result and its exact rounding error (Knuth's TwoSum;
 * the product by a fused multiply-add where the target has one, else by
 * Dekker's splitting, exact for |a b| below 2^996).
 */
typedef struct {
  double hi, lo;
} dd;

static inline dd two_sum(double a, double b) {
  double s = a + b, bb = s - a;
  return (dd){s, (a - (s - bb)) + (b - bb)};
}

static inline dd two_prod(double a, double b) {
  double p = a * b;
#if defined(__FMA__) || defined(FP_FAST_FMA)
  return (dd){p, fma(a, b, -p)};
#else
  const double split = 134217729.0; /* 2^27 + 1 */
  double ta = split * a, ah = ta - (ta - a), al = a - ah;
  double tb = split * b, bh = tb - (tb - b), bl = b - bh;
  return (dd){p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
#endif
}

/* hi + lo renormalised (Dekker's Fast2Sum): the error term is exact when the
 * exponent of hi is at least lo's, or hi is 0; hi is fl(hi + lo) always. */
static inline dd dd_norm(double hi, double lo) {
  double s = hi + lo;
  return (dd){s, lo - (s - hi)};
}

/* e^(hi + lo) = e^hi (1 + lo) to within an ulp: |lo| <= 2^-53 |hi| makes
 * lo^2 / 2 < 2^-60 for |hi| < 746, where the result is not 0. */
static inline double dd_exp(dd v) {
  double e = exp(v.hi);
  return e + e * v.lo;
}

static inline uint64_t double_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static inline double bits_double(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

#define MS_MANTISSA_BITS ((UINT64_C(1) << 52) - 1)

/* x with the 9 lowest bits of its significand cleared: its product by a
 * multiple of 2^-8 below 2 (9 significant bits) is exact. */
static inline double head44(double x) {
  return bits_double(double_bits(x) & ~UINT64_C(0x1ff));
}

/*
 * ln y + ylo / y as a double-double for a normal y > 0, |ylo| <= ulp(y),
 * with an absolute error below 1e-20 + 2^-104 |ln y|.  With y = 2^e m,
 * m in [1, 2), and G = j / 256 the nearest such number to 2 / m (j in
 * [256, 512]), t = m G / 2 - 1 is exact and |t| <= 2^-9, so
 *   ln y = (e + 1) ln 2 - ln G + t + (log1p(t) - t),
 * ln G from a 50-digit table (tools/gen_log_table.py), the last term
 * (below 2^-19) by its Taylor series to t^7.
 */
static dd dd_log(double y, double ylo) {
  uint64_t u = double_bits(y);
  int e = (int)(u >> 52) - 1023;
  double m = bits_double((u & MS_MANTISSA_BITS) | (UINT64_C(1023) << 52));
  int j = (int)(512.0 / m + 0.5);
  double g = j * (1.0 / 256), mh = head44(m);
  double t = (mh * g * 0.5 - 1.0) + (m - mh) * g * 0.5;
  double p = t * t *
             (-0.5 + t * (1.0 / 3 +
                          t * (-0.25 + t * (0.2 + t * (-1.0 / 6 + t / 7.0)))));
  double k = (double)(e + 1);
  const double *lg = ms_log_table[j - 256];
  dd s = dd_norm(k * MS_LN2_HI, -lg[0]); /* k = 0 or |k ln 2| >= lg[0] */
  dd s2 = two_sum(s.hi, t);
  double lo =
      s.lo + s2.lo + ((k * MS_LN2_MID - lg[1]) + k * MS_LN2_LO + p + ylo / y);
  return dd_norm(s2.hi, lo);
}

/*
 * The deviance bd0(x, M) = x ln(x/M) + M - x as a double-double, for an
 * integer-valued 1 <= x <= 2^30 and M > 0 finite (doc/design.md §5: an
 * extended deviance in the manner of Welinder's for R, derived there).
 * For any g > 0, with t = M g / x - 1,
 *   bd0 = M (1 - g) + x ln g - x (log1p(t) - t).
 * g = 2^k G, G = j / 256 in [1, 2], is chosen so that |t| <= 2^-9: then
 * M g and t are exact (or exact double-doubles), M (1 - g) and x ln g are
 * double-double products, and -x (log1p(t) - t) = (x t^2 / 2)(1 - 2t/3 +
 * ...) has its leading factor as a double-double and the rest, at most
 * 2^-8.4 of it, in double.  Absolute error below 2^-100 x (|ln g| + 1) +
 * 2e-19 x t^2: 1e-17 where bd0 < 750, relative 1e-19 beyond.
 */
static dd ebd0(double x, double M) {
  /* M1 = M 2^k in (x/2, x]: M's significand with x's exponent */
  int k = 0;
  double ms = M;
  if (ms < DBL_MIN) {
    ms *= 0x1p64;
    k = 64;
  }
  uint64_t ux = double_bits(x), um = double_bits(ms);
  int ex = (int)(ux >> 52), em = (int)(um >> 52);
  double m1 = bits_double((um & MS_MANTISSA_BITS) | ((uint64_t)ex << 52));
  k += ex - em;
  if (m1 > x) {
    m1 *= 0.5;
    k--;
  }
  int j = (int)(256.0 * x / m1 + 0.5);
  double g = j * (1.0 / 256), mh = head44(m1);
  /* P = M g = M1 G exactly, n = P - x exactly, t = n / x */
  double p_hi = mh * g, p_lo = (m1 - mh) * g;
  dd n = two_sum(p_hi - x, p_lo);
  double th = n.hi / x;
  dd tx = two_prod(th, x);
  double tl = (((n.hi - tx.hi) - tx.lo) + n.lo) / x;
  /* Q = -x (log1p(t) - t) = (n t / 2)(1 + t poly(t)) */
  dd nt = two_prod(n.hi, th);
  nt.lo += n.hi * tl + n.lo * th;
  double poly =
      -2.0 / 3 +
      th * (0.5 +
            th * (-0.4 + th * (1.0 / 3 +
                               th * (-2.0 / 7 + th * (0.25 - th * 2.0 / 9)))));
  dd q = {0.5 * nt.hi, 0.5 * nt.lo + 0.5 * nt.hi * th * poly};
  /* A = M (1 - g) = M - P */
  dd am = two_sum(M, -p_hi);
  am.lo -= p_lo;
  /* X = x ln g = x (k ln 2 + ln G) */
  double kd = (double)k;
  const double *lg = ms_log_table[j - 256];
  dd lng = dd_norm(kd * MS_LN2_HI, lg[0]);
  lng.lo += (kd * MS_LN2_MID + lg[1]) + kd * MS_LN2_LO;
  dd xl = two_prod(x, lng.hi);
  xl.lo += x * lng.lo;
  dd s = two_sum(am.hi, xl.hi);
  s = dd_norm(s.hi, s.lo + (am.lo + xl.lo));
  dd s2 = two_sum(s.hi, q.hi);
  return dd_norm(s2.hi, s2.lo + (s.lo + q.lo));
}

/* ln pmf(c; a) of a Poisson variable of mean a > 0, c >= 1; ln_cd = ln c. */
static double ln_poisson_pmf(long c, double ln_cd, double a) {
  return -stirlerr(c) - ms_bd0((double)c, a) - 0.5 * (MS_LN_2PI + ln_cd);
}

/*
 * sum_k c_k(eta) s^-k, the series of Temme's expansion (DLMF 8.12.3-8.12.4)
 * with c_k(eta) from its Taylor coefficients (tools/gen_temme_coeffs.py),
 * |eta| <= 1.  The Taylor terms of c_k(eta) from eta^m on sum to at most
 * |eta|^m sum_n |d[k][n]|.  With m the least degree where |eta|^m <= 2^-64
 * they change the sum by less than 1e-19 of itself (sum_n |d[0][n]| < 0.5,
 * and the sums for k >= 1 come with s^-k, s > 40), which rounding cannot
 * see; near saturation, where |eta| is small, this drops most of the 25
 * terms.
 */
static double temme_sum(double s, double eta) {
  int m = MS_TEMME_N;
  double ae = fabs(eta), power = ae;
  for (int n = 1; n < MS_TEMME_N; n++, power *= ae)
    if (power <= 0x1p-64) {
      m = n;
      break;
    }
  double sum = 0.0, scale = 1.0;
  for (int k = 0; k < MS_TEMME_K; k++) {
    const double *d = ms_temme_d[k];
    double ck = d[m - 1];
    for (int n = m - 2; n >= 0; n--)
      ck = ck * eta + d[n];
    double term = ck * scale;
    sum += term;
    if (fabs(term) <= 1e-18 * fabs(sum))
      break;
    scale /= s;
  }
  return sum;
}

/*
 * The lower regularized incomplete gamma function P(s, x) for x < s, from
 * Temme's expansion Q = erfc(eta sqrt(s/2))/2 + R (DLMF 8.12.3-8.12.4).
 * With x < s, eta < 0 and s eta^2 / 2 = bd0(s, x), so
 *   P = erfc(sqrt(bd0))/2 - exp(-bd0)/sqrt(2 pi s) sum_k c_k(eta) s^-k.
 * c_k(eta) from its Taylor coefficients (tools/gen_temme_coeffs.py).
 */
static double temme_lower(double s, double x) {
  double b = ms_bd0(s, x);
  double eta = -sqrt(2.0 * b / s);
  return 0.5 * erfc(sqrt(b)) -
         exp(-b) / sqrt(2.0 * M_PI * s) * temme_sum(s, eta);
}

/*
 * Temme's expansion is used from this many servers on, for a / (c + 1) at
 * least MS_TEMME_RHO; below, the series' terms shrink by a factor of at least
 * MS_TEMME_RHO per step or the number of servers bounds their count.  Both
 * limits were chosen from the accuracy tests against 50-digit references
 * (tests/data/erlang_dense.csv and the shared fixture).
 */
#define MS_TEMME_MIN_SERVERS 40
#define MS_TEMME_RHO 0.6

/*
 * ln pmf(c; a) = -stirlerr(c) - bd0(c, a) - ln(2 pi c) / 2 as a double-double
 * (Loader's form with the extended deviance); ln_c = ln c.
 */
static dd ln_poisson_pmf_dd(long c, dd ln_c, double a) {
  dd b = ebd0((double)c, a);
  dd h = two_sum(MS_LN_2PI_HI, ln_c.hi);
  h.lo += MS_LN_2PI_LO + ln_c.lo;
  dd s = two_sum(-b.hi, -0.5 * h.hi);
  return dd_norm(s.hi, s.lo - (b.lo + 0.5 * h.lo) - stirlerr(c));
}

/* sum_{n>=1} prod_{j=1}^{n} a / (c + j), c = cd: (1 - cdf(c; a)) / pmf(c; a)
 * for a < c, to a relative 1e-18 (terms shrink by a / c a step). */
static double upper_series(double a, double cd) {
  double term = 1.0, tail = 0.0;
  for (long j = 1; j < 100000; j++) {
    term *= a / (cd + (double)j);
    tail += term;
    if (term <= 1e-18 * tail)
      break;
  }
  return tail;
}

/* ln cdf(c; a) = ln Q(c + 1, a), a < c, from the lower tail (see the head
 * of the file); ln_pmf is ln pmf(c; a). */
static double ln_poisson_cdf_below(long c, double a, dd ln_pmf) {
  double cd = (double)c;
  if (c >= MS_TEMME_MIN_SERVERS && a >= MS_TEMME_RHO * (cd + 1.0))
    return log1p(-temme_lower(cd + 1.0, a));
  /* 1 - cdf(c; a) = pmf(c; a) sum_{n>=1} prod_{j=1}^{n} a / (c + j).  Each
   * term carries the rounding of its j steps; below MS_TEMME_MIN_SERVERS
   * near saturation there are over a hundred of them and 1 - cdf is near
   * 1/2, so its absolute error would reach 8e-16 in B (doc/design.md §5):
   * there the sum is in long double.  Beyond, a < 0.6 (c + 1) and the
   * terms shrink by 0.6 a step. */
  if (c < MS_TEMME_MIN_SERVERS) {
    long double al = (long double)a, term = 1.0L, tail = 0.0L;
    for (long j = 1; j < 100000; j++) {
      term *= al / ((long double)c + (long double)j);
      tail += term;
      if (term <= 1e-19L * tail)
        break;
    }
    return log1p(-dd_exp(ln_pmf) * (double)tail);
  }
  return log1p(-dd_exp(ln_pmf) * upper_series(a, cd));
}

void ms_erlang_terms_unchecked(long c, double a, ms_erlang_terms *t) {
  double cd = (double)c;
  dd ln_c = dd_log(cd, 0.0);
  dd ln_pmf = ln_poisson_pmf_dd(c, ln_c, a);
  double ln_cdf = ln_poisson_cdf_below(c, a, ln_pmf);
  dd lb = dd_norm(ln_pmf.hi, -ln_cdf); /* |ln pmf| > 0.9 > |ln cdf| */
  lb = dd_norm(lb.hi, lb.lo + ln_pmf.lo);
  t->ln_b = lb.hi;
  t->ln_b_lo = lb.lo;
  t->b = dd_exp(lb);
  /* C = c B / w, w = (c - a) + a B: c - a as an exact double-double, and
   * both terms of w positive, so nothing cancels. */
  dd cma = dd_norm(cd, -a);
  dd w = two_sum(cma.hi, a * t->b);
  dd ln_w = dd_log(w.hi, w.lo + cma.lo);
  dd s = two_sum(lb.hi, ln_c.hi);
  dd s2 = two_sum(s.hi, -ln_w.hi);
  dd lc = dd_norm(s2.hi, s2.lo + (s.lo + ((lb.lo + ln_c.lo) - ln_w.lo)));
  if (lc.hi > 0.0)
    lc = (dd){0.0, 0.0};
  t->ln_c = lc.hi;
  t->ln_c_lo = lc.lo;
}

/*
 * ln B(c, a) for a >= c, the overloaded loss system.  Dividing the sum of
 * B's definition by its last term,
 *   1/B = sum_{j=0}^{c} t_j,  t_0 = 1,  t_j = t_(j-1) (c - j + 1) / a,
 * a sum of positive terms that shrink by at least c/a <= 1 each: no
 * cancellation, and ln B = -log1p(sum_{j>=1} t_j) keeps the digits of B
 * near 1 (a >> c).  The terms fall below 1e-19 of the sum after about
 * 9 sqrt(c) of them at a = c (26,000 at c = 1e7), after at most 100 once
 * c/a <= 0.65; they are carried in long double, whose rounding (1e-19 a
 * step) keeps the error of the longest sum under 1e-14.  B >= 1/(c + 1)
 * here, so it never underflows.
 */
static void overload_ln_b(long c, double a, ms_erlang_terms *t) {
  long double al = (long double)a, term = 1.0L, tail = 0.0L;
  for (long j = 0; j < c; j++) {
    term *= (long double)(c - j) / al;
    tail += term;
    if (term <= 1e-19L * tail)
      break;
  }
  long double ln_b = -log1pl(tail);
  t->ln_b = (double)ln_b;
  t->ln_b_lo = (double)(ln_b - (long double)t->ln_b);
  t->b = (double)(1.0L / (1.0L + tail));
}

/* c in [1, MS_MAX_SERVERS], a finite and > 0; below_c: a < c too. */
static int check_erlang_args(long c, double a, bool below_c, ms_error *err) {
  if (c < 1 || c > MS_MAX_SERVERS)
    return ms_fail(err, MS_EINVAL, "servers = %ld is outside [1, %ld]", c,
                   MS_MAX_SERVERS);
  if (!isfinite(a) || !(a > 0.0))
    return ms_fail(err, MS_EINVAL,
                   "offered traffic a = %g erlangs must be finite and > 0", a);
  if (below_c && !(a < (double)c))
    return ms_fail(err, MS_EINVAL,
                   "offered traffic a = %g erlangs is outside (0, c = %ld): "
                   "at a >= c the queue has no steady state",
                   a, c);
  return MS_OK;
}

/* Both values for valid arguments: C = 1 for a >= c (erlang.h). */
static void erlang_terms(long c, double a, ms_erlang_terms *t) {
  if (a < (double)c) {
    ms_erlang_terms_unchecked(c, a, t);
    return;
  }
  overload_ln_b(c, a, t);
  t->ln_c = t->ln_c_lo = 0.0;
}

int ms_erlang_ln_b(long c, double a, double *ln_b, ms_error *err) {
  int st = check_erlang_args(c, a, false, err);
  if (st != MS_OK)
    return st;
  ms_erlang_terms t;
  erlang_terms(c, a, &t);
  *ln_b = t.ln_b;
  return MS_OK;
}

int ms_erlang_ln_c(long c, double a, double *ln_c, ms_error *err) {
  int st = check_erlang_args(c, a, true, err);
  if (st != MS_OK)
    return st;
  ms_erlang_terms t;
  ms_erlang_terms_unchecked(c, a, &t);
  *ln_c = t.ln_c;
  return MS_OK;
}

int ms_erlang(long c, double a, ms_erlang_values *out, ms_error *err) {
  int st = check_erlang_args(c, a, false, err);
  if (st != MS_OK)
    return st;
  ms_erlang_terms t;
  erlang_terms(c, a, &t);
  out->ln_erlang_b = t.ln_b;
  out->ln_erlang_c = t.ln_c;
  out->erlang_b = t.b;
  out->erlang_c = dd_exp((dd){t.ln_c, t.ln_c_lo});
  out->steady_state = a < (double)c;
  return MS_OK;
}

int ms_erlang_ln_b_recursive(long c, double a, double *ln_b, ms_error *err) {
  if (c < 1 || c > MS_MAX_SERVERS)
    return ms_fail(err, MS_EINVAL, "servers = %ld is outside [1, %ld]", c,
                   MS_MAX_SERVERS);
  if (!isfinite(a) || !(a > 0.0))
    return ms_fail(err, MS_EINVAL,
                   "offered traffic a = %g erlangs must be finite and > 0", a);
  /* 1/B_k = 1 + (k/a) / B_{k-1}; keep 1/B_k = m 2^e with m < 2^960. */
  long double m = 1.0L, al = (long double)a;
  long e = 0;
  for (long k = 1; k <= c; k++) {
    long double one = e < 16000 ? ldexpl(1.0L, (int)-e) : 0.0L;
    m = one + ((long double)k / al) * m;
    while (m > 0x1p960L) { /* k/a up to 1e307: more than 2^960 a step */
      m = ldexpl(m, -960);
      e += 960;
    }
  }
  *ln_b = -(double)(logl(m) + (long double)e * 0.693147180559945309417232L);
  return MS_OK;
}

static int wait_tail_args(long c, double mu, double T, ms_error *err) {
  if (c < 1 || c > MS_MAX_SERVERS)
    return ms_fail(err, MS_EINVAL, "servers = %ld is outside [1, %ld]", c,
                   MS_MAX_SERVERS);
  if (!isfinite(mu) || !(mu > 0.0))
    return ms_fail(err, MS_EINVAL,
                   "service rate mu = %g/s must be finite and > 0", mu);
  if (!isfinite(T) || !(T >= 0.0))
    return ms_fail(err, MS_EINVAL, "timeout T = %g s must be finite and >= 0",
                   T);
  if (!isfinite((double)c * mu))
    return ms_fail(err, MS_EINVAL, "capacity c mu = %ld x %g overflows", c, mu);
  return MS_OK;
}

/* ln P(W > T) = ln C(c, a) - gamma T, gamma = c mu - x > 0 as the caller
 * formed it without cancellation. */
static double wait_tail_core(long c, double a, double gamma, double T) {
  double ln_c, ln_c_lo = 0.0;
  if (a >= (double)c) {
    ln_c = 0.0; /* x < c mu but x/mu rounds up to c: C = 1 to rounding */
  } else if (!(a >= DBL_MIN)) {
    return -DBL_MAX; /* a underflows: the probability is below 1e-300k */
  } else {
    ms_erlang_terms t;
    ms_erlang_terms_unchecked(c, a, &t);
    ln_c = t.ln_c;
    ln_c_lo = t.ln_c_lo;
  }
  double y = gamma * T;
  dd rs = two_sum(ln_c, -y);
  double r = y <= DBL_MAX ? rs.hi + (rs.lo + ln_c_lo) : -DBL_MAX;
  return r < -DBL_MAX ? -DBL_MAX : r;
}

int ms_ln_wait_tail(long c, double mu, double x, double T, double *ln_tail,
                    ms_error *err) {
  int st = wait_tail_args(c, mu, T, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(x) || !(x > 0.0))
    return ms_fail(err, MS_EINVAL,
                   "arrival rate x = %g/s must be finite and > 0", x);
  /* c mu - x with one rounding: c mu rounded first would lose digits
   * near saturation (at 1 - 1e-6 of c mu, 1e-10 of the tail) */
  double gamma = fma((double)c, mu, -x);
  if (!(x < (double)c * mu) || !(gamma > 0.0)) {
    *ln_tail = 0.0;
    return MS_OK;
  }
  *ln_tail = wait_tail_core(c, x / mu, gamma, T);
  return MS_OK;
}

int ms_ln_wait_tail_erlangs(long c, double mu, double a, double T,
                            double *ln_tail, ms_error *err) {
  int st = wait_tail_args(c, mu, T, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(a) || !(a > 0.0))
    return ms_fail(err, MS_EINVAL,
                   "offered traffic a = %g erlangs must be finite and > 0", a);
  /* c - a is exact where a is within a factor 2 of c (Sterbenz), the
   * only place where it could cancel */
  double gamma = ((double)c - a) * mu;
  if (!(gamma > 0.0)) {
    *ln_tail = 0.0;
    return MS_OK;
  }
  *ln_tail = wait_tail_core(c, a, gamma, T);
  return MS_OK;
}

/* h(u) = 1/u - 1/(e^u - 1), in (0, 1): the mean, in units of T, of the
 * density proportional to e^(-u s / T) on [0, T] (1/2 at u = 0).  Below
 * |u| = 0.1 by its series (the Bernoulli numbers of u / (e^u - 1); the
 * first term left out is below 3e-18), where the closed form cancels. */
static double trunc_exp_mean(double u) {
  if (fabs(u) < 0.1) {
    double u2 = u * u;
    return 0.5 -
           u / 12.0 * (1.0 - u2 / 60.0 * (1.0 - u2 / 42.0 * (1.0 - u2 / 40.0)));
  }
  if (u > 700.0)
    return 1.0 / u; /* 1 / (e^u - 1) is below e^-700 */
  double e = expm1(u);
  return (e - u) / (u * e);
}

/* ln(e^u + e^v); either may be -inf. */
static double ln_add(double u, double v) {
  double hi = fmax(u, v), lo = fmin(u, v);
  if (hi == -INFINITY)
    return -INFINITY;
  return hi + log1p(exp(lo - hi));
}

void ms_service_fit_of(double mu, double cv, ms_service_fit *f) {
  /* exponential (cv = 1); D = (1 - cv) / mu plus an exponential of mean
   * cv / mu (cv < 1; cv = 0 the constant 1/mu); the balanced-means
   * hyperexponential (cv > 1) */
  f->D = 0.0;
  f->n = 1;
  f->w[0] = 1.0;
  f->w[1] = 0.0;
  f->r[0] = mu;
  f->r[1] = 0.0;
  f->kappa = 1.0; /* the wait's rate is kappa gamma (Allen-Cunneen) */
  if (cv == 1.0)
    return;
  double cv2 = cv * cv;
  f->kappa = 2.0 / (1.0 + cv2);
  if (cv < 1.0) {
    f->D = (1.0 - cv) / mu;
    f->r[0] = mu / cv;
    if (!(f->r[0] <= DBL_MAX)) {
      f->n = 0; /* constant service */
      f->w[0] = 0.0;
      f->r[0] = 0.0;
    }
  } else {
    double s = sqrt((cv2 - 1.0) / (cv2 + 1.0));
    f->w[0] = 0.5 * (1.0 + s);
    f->w[1] = 1.0 / (2.0 * (cv2 + 1.0) * f->w[0]); /* 1 - w[0] */
    f->r[0] = 2.0 * f->w[0] * mu;
    f->r[1] = 2.0 * f->w[1] * mu;
    f->n = 2;
  }
}

void ms_response_terms_unchecked(long c, double mu, double x, double a,
                                 double gamma, double T, double cv,
                                 double *ln_q, double *xdlnq) {
  double ln_c = -INFINITY, dlnc = 0.0;
  if (a >= (double)c) {
    ln_c = 0.0; /* x < c mu but x/mu rounds up to c: C = 1 to rounding */
  } else if (a >= DBL_MIN) {
    ms_erlang_terms t;
    ms_erlang_terms_unchecked(c, a, &t);
    ln_c = t.ln_c;
    double ca = (double)c - a;
    dlnc = ca + a * (1.0 - t.b) / (ca + a * t.b);
  }
  /* the service time as a shift D and up to two exponential phases */
  ms_service_fit fit;
  ms_service_fit_of(mu, cv, &fit);
  const double *w = fit.w, *r = fit.r, D = fit.D, kappa = fit.kappa;
  int n = fit.n;
  double Tr = T - D, g = kappa * gamma;
  if (n == 0) {
    /* P(W + D > T) = P(W > T - D) */
    if (Tr < 0.0) {
      *ln_q = 0.0;
      *xdlnq = 0.0;
      return;
    }
    double l = ln_c - g * Tr;
    *ln_q = l < -DBL_MAX ? -DBL_MAX : fmin(0.0, l);
    *xdlnq = ln_c > -INFINITY ? dlnc + x * kappa * Tr : 0.0;
    return;
  }
  if (!(Tr > 0.0)) {
    *ln_q = 0.0; /* the service alone outlasts T */
    *xdlnq = 0.0;
    return;
  }
  /* Per phase: P(S > T) and the part of the waiting arrivals, C times
   * P(W' + S > T, W' <= T) = r g_T with g_T = integral_0^T e^(-g s)
   * e^(-r (T - s)) ds = e^(-min T) (1 - e^(-|r - g| T)) / |r - g|, whose
   * log slope in g is -T h((g - r) T) (the mean of s under that
   * integrand).  Every term is positive: their sum has no cancellation. */
  double lt[4], sl[4];
  int k = 0;
  for (int i = 0; i < n; i++) {
    double lw = log(w[i]);
    lt[k] = lw - r[i] * Tr;
    sl[k++] = 0.0;
    if (ln_c > -INFINITY) {
      double lo = fmin(g, r[i]), d = fabs(r[i] - g), dT = d * Tr;
      double lq = dT > 0.0 ? log(-expm1(-dT)) - log(d) : log(Tr);
      lt[k] = ln_c + lw + log(r[i]) - lo * Tr + lq;
      sl[k++] = dlnc + x * kappa * Tr * trunc_exp_mean((g - r[i]) * Tr);
    }
  }
  double l = -INFINITY;
  for (int i = 0; i < k; i++)
    l = ln_add(l, lt[i]);
  double slope = 0.0;
  for (int i = 0; i < k; i++) {
    double wt = exp(lt[i] - l);
    if (wt > 0.0 && sl[i] > 0.0)
      slope += wt * sl[i];
  }
  *ln_q = l < -DBL_MAX ? -DBL_MAX : fmin(0.0, l);
  *xdlnq = slope;
}

int ms_ln_response_tail(long c, double mu, double x, double T, double cv,
                        double *ln_tail, ms_error *err) {
  int st = wait_tail_args(c, mu, T, err);
  if (st != MS_OK)
    return st;
  if (!isfinite(x) || !(x >= 0.0))
    return ms_fail(err, MS_EINVAL,
                   "arrival rate x = %g/s must be finite and >= 0", x);
  if (!(cv >= 0.0 && cv <= MS_MAX_SERVICE_TIME_CV)) {
    char v[32];
    return ms_fail(
        err, MS_EINVAL, "service_time_cv = %s is outside [0, %g]",
        ms_format_against(v, cv, cv < 0.0 ? 0.0 : MS_MAX_SERVICE_TIME_CV),
        MS_MAX_SERVICE_TIME_CV);
  }
  double gamma = fma((double)c, mu, -x), slope;
  if (!(x < (double)c * mu) || !(gamma > 0.0)) {
    *ln_tail = 0.0;
    return MS_OK;
  }
  ms_response_terms_unchecked(c, mu, x, x / mu, gamma, T, cv, ln_tail, &slope);
  return MS_OK;
}

/* ln pmf(n; y) of a Poisson variable of mean y > 0, any n >= 0. */
double ms_ln_poisson_pmf(long n, double y) {
  if (n == 0)
    return -y;
  return ln_poisson_pmf(n, log((double)n), y);
}

/* erfcx(z) = e^(z^2) erfc(z) for z >= 0: directly while erfc(z) is a normal
 * double, beyond by its asymptotic series (DLMF 7.12.1), whose terms
 * (2k - 1)!! / (2 z^2)^k shrink below 1e-17 of the sum within a dozen
 * steps at z >= 25. */
static double erfcx_nonneg(double z) {
  if (z < 25.0)
    return exp(z * z) * erfc(z);
  double w = 1.0 / (2.0 * z * z), term = 1.0, sum = 1.0;
  for (int k = 1; k < 40; k++) {
    term *= -(2.0 * k - 1.0) * w;
    sum += term;
    if (fabs(term) <= 1e-17 * sum)
      break;
  }
  return sum / (z * sqrt(M_PI));
}

/*
 * ln[Q(s, x) e^(bd0(s, x))] for x >= s from Temme's expansion (DLMF
 * 8.12.3-8.12.4, eta >= 0, s eta^2 / 2 = bd0(s, x)):
 *   Q = e^(-bd0) [erfcx(sqrt(bd0)) / 2 + sum_k c_k(eta) s^-k / sqrt(2 pi s)],
 * the exponent kept apart so that a tail below a double's range keeps its
 * digits (temme_sum).
 */
static double temme_ln_upper_scaled(double s, double b) {
  double eta = sqrt(2.0 * b / s);
  return log(0.5 * erfcx_nonneg(sqrt(b)) +
             temme_sum(s, eta) / sqrt(2.0 * M_PI * s));
}

/*
 * The Poisson cdf F(n; y) = P(N <= n), N Poisson of mean y, in log space and
 * as the ratio F / pmf(n; y) (DLMF 8.4.10: F = Q(n + 1, y)).  The regions:
 *  - y < n + 1: F >= 1/2; its complement by the power series (n < 40, or
 *    y <= 0.6 (n + 1)) or Temme's expansion, then ln F = log1p(-(1 - F));
 *  - y >= n + 1, n < 40 or y >= 1.6 (n + 1): F = pmf sum_{i=0}^{n}
 *    prod_{l<i} (n - l) / y, positive terms shrinking by n / y;
 *  - otherwise Temme's expansion of Q(n + 1, y) with eta >= 0, whose
 *    e^(-bd0(n + 1, y)) is combined with the pmf's e^(-bd0(n, y)) through
 *    bd0(n, y) - bd0(n + 1, y) = ln(y / (n + 1)) + 1 - n log1p(1/n), so that
 *    the ratio keeps its digits where both exponents are large.
 * n >= 0, y > 0 finite.  Cost bounded: about 130 series terms, or Temme.
 */
void ms_poisson_cdf(long n, double y, double *ln_cdf, double *ln_ratio) {
  double nd = (double)n, s = nd + 1.0;
  double ln_pmf = ms_ln_poisson_pmf(n, y);
  if (y < s) {
    double lower;
    if (n >= MS_TEMME_MIN_SERVERS && y >= MS_TEMME_RHO * s) {
      lower = temme_lower(s, y);
    } else {
      lower = exp(ln_pmf) * upper_series(y, nd);
    }
    *ln_cdf = log1p(-lower);
    *ln_ratio = *ln_cdf - ln_pmf;
    return;
  }
  if (n < MS_TEMME_MIN_SERVERS || y >= s / MS_TEMME_RHO) {
    double term = 1.0, sum = 1.0;
    for (long l = 0; l < n; l++) {
      term *= (nd - (double)l) / y;
      sum += term;
      if (term <= 1e-18 * sum)
        break;
    }
    *ln_ratio = log(sum);
    *ln_cdf = ln_pmf + *ln_ratio;
    return;
  }
  double b = ms_bd0(s, y);
  double scaled = temme_ln_upper_scaled(s, b);
  /* ln F - ln pmf(n; y) = -bd0(s, y) + scaled + stirlerr(n) + bd0(n, y)
   *                       + ln(2 pi n) / 2 */
  double dbd = log(y / s) + 1.0 - nd * log1p(1.0 / nd);
  *ln_ratio = dbd + scaled + stirlerr(n) + 0.5 * (MS_LN_2PI + log(nd));
  *ln_cdf = -b + scaled;
}
