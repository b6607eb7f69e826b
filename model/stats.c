/* SPDX-License-Identifier: MIT */
/*
 * Statistics (stats.h): the exponentially weighted estimator behind every
 * learned parameter and the residual that says how far the model's
 * failure probability is from what is observed (doc/design.md §1.8); the
 * Wilson interval and quantiles that summarise repeated runs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ms_estimator_init(ms_estimator *e, double time_constant) {
  memset(e, 0, sizeof *e);
  e->time_constant =
      isfinite(time_constant) && time_constant > 0 ? time_constant : INFINITY;
}

int ms_estimator_add(ms_estimator *e, double x, double w, double dt,
                     ms_error *err) {
  if (!isfinite(x))
    return ms_fail(err, MS_EINVAL, "estimator sample %g is not finite", x);
  if (!(isfinite(w) && w > 0))
    return ms_fail(err, MS_EINVAL, "estimator weight %g must be > 0", w);
  if (!(isfinite(dt) && dt >= 0))
    return ms_fail(err, MS_EINVAL, "estimator time step %g s must be >= 0", dt);
  /* fade: exp(-dt / tc) in (0, 1]; never 0, so an estimate is never lost
   * altogether (a long gap leaves the old samples as a faint prior) */
  double a = isinf(e->time_constant) ? 1.0 : exp(-dt / e->time_constant);
  if (a < 1e-12)
    a = 1e-12;
  /* West (1979): the mean moves by the sample's share of the weight; the
   * scatter grows by w (x - m_old)(x - m_new).  The new sums are taken in
   * locals first: a sample whose arithmetic overflows (x - m of two samples
   * near +-1e308, w (x - m)^2 past DBL_MAX, weights summing past it) is
   * refused and the estimator left as it was, instead of an inf scatter
   * whose later inf x 0 made the mean and error NaN. */
  double weight = e->weight * a, total = weight + w;
  double delta = x - e->mean;
  double mean = e->mean + delta * (w / total);
  double scatter = e->scatter * a + w * delta * (x - mean);
  double weight_sq = e->weight_sq * a * a + w;
  if (!(isfinite(total) && isfinite(delta) && isfinite(mean) &&
        isfinite(scatter) && isfinite(weight_sq)))
    return ms_fail(err, MS_EINVAL,
                   "estimator sample %g with weight %g overflows its sums "
                   "(mean %g)",
                   x, w, e->mean);
  e->scatter = scatter < 0 ? 0 : scatter;
  e->mean = mean;
  e->weight = total;
  e->count = e->count * a + 1;
  e->count_sq = e->count_sq * a * a + 1;
  e->weight_sq = weight_sq;
  e->samples++;
  return MS_OK;
}

double ms_estimator_effective_samples(const ms_estimator *e) {
  return e->count_sq > 0 ? e->count * e->count / e->count_sq : 0.0;
}

bool ms_estimator_get(const ms_estimator *e, double *mean, double *se) {
  if (e->samples < 2 || !(e->weight > 0))
    return false;
  double k = ms_estimator_effective_samples(e);
  double s = 0;
  if (k > 1) {
    double sigma2 = e->scatter / e->count * (k / (k - 1));
    s = sqrt(sigma2 * e->weight_sq) / e->weight;
  }
  if (mean != NULL)
    *mean = e->mean;
  if (se != NULL)
    *se = isfinite(s) ? s : 0.0;
  return true;
}

bool ms_estimator_standardize(const ms_estimator *e, double x, double w,
                              double *z) {
  if (e->samples < 2 || !(e->weight > 0) || !isfinite(x) || !(w > 0) ||
      !isfinite(w))
    return false;
  double k = ms_estimator_effective_samples(e);
  if (!(k > 1))
    return false;
  double sigma2 = e->scatter / e->count * (k / (k - 1));
  double se2 = sigma2 * e->weight_sq / (e->weight * e->weight);
  double var = sigma2 / w + se2;
  if (!(var > 0) || !isfinite(var))
    return false;
  double v = (x - e->mean) / sqrt(var);
  if (!isfinite(v))
    return false;
  *z = v;
  return true;
}

int ms_cusum_add(ms_cusum *c, double z, unsigned long *since) {
  if (isnan(z))
    return 0;
  z = fmin(fmax(z, -MS_CUSUM_CAP), MS_CUSUM_CAP);
  c->up = fmax(0.0, c->up + z - MS_CUSUM_K);
  c->down = fmax(0.0, c->down - z - MS_CUSUM_K);
  c->up_n = c->up > 0 ? c->up_n + 1 : 0;
  c->down_n = c->down > 0 ? c->down_n + 1 : 0;
  int alarm = c->up > MS_CUSUM_H ? 1 : c->down > MS_CUSUM_H ? -1 : 0;
  if (alarm != 0) {
    if (since != NULL)
      *since = alarm > 0 ? c->up_n : c->down_n;
    *c = (ms_cusum){0};
  }
  return alarm;
}

double ms_cusum_level(const ms_cusum *c, unsigned long *since) {
  bool up = c->up >= c->down;
  if (since != NULL)
    *since = up ? c->up_n : c->down_n;
  return up ? c->up : c->down;
}

double ms_failure_residual(double observed, double predicted, double attempts) {
  if (!(observed >= 0 && observed <= 1 && predicted >= 0 && predicted <= 1 &&
        attempts > 0 && isfinite(attempts)))
    return 0.0;
  /* with half a count added to failures and successes (Anscombe), the
   * deviance 2 (n + 1) KL(q~ || p~) as the two terms of Loader's bd0,
   * whose (M - x) parts cancel exactly: no cancellation where q~ is near
   * p~.  bd0 is homogeneous (bd0(s x, s M) = s bd0(x, M)), so it takes
   * the shares and r = sqrt(2) sqrt(n + 1) sqrt(KL): finite however many
   * attempts (2 (n + 1) KL overflowed past 1e296 attempts), and the
   * successes are counted as (1 - q) n + 1/2, not n + 1 - k, which
   * cancels to 0 once n passes 2^53. */
  double n1 = attempts + 1;
  double qk = (observed * attempts + 0.5) / n1;
  double pm = (predicted * attempts + 0.5) / n1;
  double qs = ((1 - observed) * attempts + 0.5) / n1;
  double ps = ((1 - predicted) * attempts + 0.5) / n1;
  double kl = ms_bd0(qk, pm) + ms_bd0(qs, ps);
  double r = sqrt(2.0) * sqrt(n1) * sqrt(kl > 0 ? kl : 0);
  return qk < pm ? -r : r;
}

void ms_wilson_interval(long k, long n, double z, double *lo, double *hi) {
  if (!(n >= 1 && k >= 0 && k <= n && isfinite(z) && z >= 0)) {
    *lo = 0.0;
    *hi = 1.0;
    return;
  }
  double p = (double)k / (double)n, nn = (double)n, z2 = z * z;
  double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  double half = z / (1 + z2 / nn) * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  *lo = fmax(0.0, centre - half);
  *hi = fmin(1.0, centre + half);
  if (k == 0)
    *lo = 0.0; /* exactly: centre = half there */
  if (k == n)
    *hi = 1.0;
}

/* Ascending, NaN last, so that a comparison never lies to qsort. */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  if (isnan(x) || isnan(y))
    return isnan(x) - isnan(y);
  return (x > y) - (x < y);
}

void ms_sort_doubles(double *x, size_t n) {
  if (x != NULL && n > 1)
    qsort(x, n, sizeof *x, cmp_double);
}

double ms_quantile_sorted(const double *x, size_t n, double q) {
  if (x == NULL || n == 0)
    return NAN;
  q = fmin(fmax(q, 0.0), 1.0);
  double h = (double)(n - 1) * q;
  size_t i = (size_t)floor(h);
  if (i + 1 >= n)
    return x[n - 1];
  return x[i] + (h - (double)i) * (x[i + 1] - x[i]);
}
