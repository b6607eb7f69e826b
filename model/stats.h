/* SPDX-License-Identifier: MIT */
/*
 * Statistics: calibration's fading weighted mean with its standard error
 * and the residual of an observed failure ratio against the model
 * (doc/design.md §1.8); the intervals and quantiles that summarise
 * repeated runs (`metastable simulate --seeds`, `metastable fit`).
 * Conventions: base.h.
 */
#ifndef METASTABLE_STATS_H
#define METASTABLE_STATS_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ms_estimator: an exponentially weighted mean of samples x_i with weights
 * w_i, and the standard error of that mean (doc/design.md §1.8).  Each
 * sample's weight is its count of events (the completions behind a
 * service-time sample, the attempts behind a failure ratio), so that the
 * sample's variance is sigma^2 / w_i; older samples fade by exp(-dt /
 * time_constant).  With a_i the fading factor of sample i:
 *   mean      m = sum a_i w_i x_i / sum a_i w_i
 *   sigma^2     = [sum a_i w_i (x_i - m)^2 / sum a_i] * k / (k - 1),
 *                 k = (sum a_i)^2 / sum a_i^2 the effective samples
 *   std error   = sqrt(sigma^2 sum a_i^2 w_i) / sum a_i w_i
 * The sums are updated by West's weighted incremental algorithm (D. H. D.
 * West, "Updating mean and variance estimates: an improved method", CACM
 * 22(9), 1979), which keeps the scatter without the cancellation of sum
 * w x^2 - (sum w x)^2 / sum w.  Constant memory, a few flops per sample.
 * The scatter is measured, not assumed: the error holds whatever the
 * samples' distribution, as long as intervals are roughly independent.
 */
typedef struct {
  double time_constant;  /* s, > 0; +infinity: nothing fades */
  double weight;         /* sum a_i w_i */
  double mean;           /* m, in the samples' unit */
  double scatter;        /* sum a_i w_i (x_i - m)^2 */
  double count;          /* sum a_i */
  double count_sq;       /* sum a_i^2 */
  double weight_sq;      /* sum a_i^2 w_i */
  unsigned long samples; /* samples taken since ms_estimator_init */
} ms_estimator;

/* An empty estimator whose samples fade with time_constant seconds
 * (finite and > 0, or +infinity; anything else is taken as +infinity). */
void ms_estimator_init(ms_estimator *e, double time_constant);

/*
 * ms_estimator_add: fade the estimator by dt seconds, then take sample x
 * with weight w.
 *   x   finite
 *   w   finite, > 0 (events behind the sample)
 *   dt  seconds since the previous sample, finite, >= 0
 * Errors: MS_EINVAL, also for a sample whose sums overflow a double (x
 * and the mean of opposite signs near 1e308, w (x - m)^2 beyond DBL_MAX);
 * the estimator is then unchanged.
 */
int ms_estimator_add(ms_estimator *e, double x, double w, double dt,
                     ms_error *err);

/*
 * ms_estimator_get: the mean and its standard error.
 *   mean, se  out (either may be NULL); se >= 0, 0 when every sample was
 *             equal
 * Returns false (outputs untouched) before the estimator has two samples.
 */
bool ms_estimator_get(const ms_estimator *e, double *mean, double *se);

/* k = (sum a_i)^2 / sum a_i^2: how many samples the estimate rests on
 * (the samples taken, at most, once they fade); 0 when empty. */
double ms_estimator_effective_samples(const ms_estimator *e);

/*
 * ms_estimator_standardize: how far a new sample x of weight w lies from
 * the estimate, in standard deviations of what a sample of that weight
 * scatters by: z = (x - m) / sqrt(sigma^2 / w + se^2), sigma^2 the
 * measured scatter per unit weight (above), se the mean's standard error.
 *   x  finite;  w  finite, > 0
 *   z  out: finite
 * Returns false (z untouched) before the estimator has two samples, when
 * its scatter is 0 (every sample equal: no scale to judge by), or for
 * arguments outside the domain.  Source: the predictive distribution of
 * a new observation under the weighted model of doc/design.md §1.8.
 */
bool ms_estimator_standardize(const ms_estimator *e, double x, double w,
                              double *z);

/*
 * A two-sided CUSUM on standardized samples (E. S. Page, "Continuous
 * inspection schemes", Biometrika 41, 1954): S+ = max(0, S+ + z - k),
 * S- = max(0, S- - z - k), with each z clamped to +-MS_CUSUM_CAP so that
 * a few wild samples (a trigger's) cannot raise an alarm alone: at
 * least ceil(h / (cap - k)) = 6 samples beyond the cap are needed.
 * With k = 0.5, h = 8 and the cap at 2, Siegmund's approximation
 * (D. Siegmund, Sequential Analysis, 1985, ch. X) puts the false alarms
 * at about one in 18,000 samples under no change, and a shift of 2
 * standard deviations found after about 8 (tests/check_calibration.c
 * holds both to a simulation).
 */
#define MS_CUSUM_K 0.5
#define MS_CUSUM_H 8.0
#define MS_CUSUM_CAP 2.0
/* The level at which a change is suspected: half the threshold (the
 * service time's error bar then covers it, doc/design.md §1.8). */
#define MS_CUSUM_SUSPECT (MS_CUSUM_H / 2)
typedef struct {
  double up, down;            /* S+ and S- */
  unsigned long up_n, down_n; /* samples since each was last 0 */
} ms_cusum;

/*
 * ms_cusum_add: take standardized sample z (NaN is ignored).
 * Returns +1 when S+ passes MS_CUSUM_H (a rise), -1 when S- does (a fall),
 * else 0; on an alarm *since (may be NULL) is the samples since that sum
 * was last 0 (the change's estimated start, this sample included) and the
 * detector starts again from 0.
 */
int ms_cusum_add(ms_cusum *c, double z, unsigned long *since);

/* The larger of S+ and S-, and the samples since it was last 0. */
double ms_cusum_level(const ms_cusum *c, unsigned long *since);

/*
 * ms_failure_residual: how far a failure ratio observed over n attempts is
 * from the model's failure probability p, as a signed likelihood-ratio
 * statistic (doc/design.md §1.8): with Anscombe's half-count correction
 * (F. J. Anscombe, Biometrika 43, 1956) q~ = (k + 1/2)/(n + 1) and p~ =
 * (n p + 1/2)/(n + 1), k = q n failures,
 *   D = 2 (n + 1) [q~ ln(q~/p~) + (1 - q~) ln((1 - q~)/(1 - p~))]
 *   r = sign(q~ - p~) sqrt(D)
 * r is about a standard normal when the model is right (|r| > 3 about 3
 * times in a thousand intervals), 0 when q = p, and finite for every
 * input, p = 0 included: one failure where none is predicted is not a
 * misfit, ten in a thousand are (r = 6.6).  The same scale for every
 * service, whatever its traffic.
 *   observed   q, failed attempts / attempts, in [0, 1]
 *   predicted  p, in [0, 1]
 *   attempts   n, attempts counted over the interval, finite, >= 0
 * Returns r; 0 for arguments outside their domain (NaN, n = 0: no
 * attempts, no evidence).
 */
double ms_failure_residual(double observed, double predicted, double attempts);

/* The 97.5 % point of the standard normal: the z of a 95 % two-sided
 * interval. */
#define MS_Z95 1.959963984540054

/*
 * ms_wilson_interval: the Wilson score interval of a binomial proportion,
 * k successes in n trials, at normal quantile z (MS_Z95 for 95 %).  With
 * p = k/n:
 *   centre = (p + z^2/(2n)) / (1 + z^2/n)
 *   half   = z / (1 + z^2/n) sqrt(p (1 - p)/n + z^2/(4 n^2))
 *   k, n    0 <= k <= n, n >= 1
 *   lo, hi  out: [centre - half, centre + half] within [0, 1]; lo is 0 at
 *           k = 0 and hi 1 at k = n exactly (not empty, as Wald's is)
 * No errors: arguments outside the domain give lo = 0, hi = 1.
 * Source: E. B. Wilson, JASA 22(158), 1927; its coverage: A. Agresti and
 * B. A. Coull, The American Statistician 52(2), 1998.
 */
void ms_wilson_interval(long k, long n, double z, double *lo, double *hi);

/* Sort x[0..n-1] ascending (NaN last).  Allocates nothing. */
void ms_sort_doubles(double *x, size_t n);

/*
 * ms_quantile_sorted: the q-quantile of the sorted x[0..n-1] by linear
 * interpolation between order statistics at h = (n - 1) q (R's type 7:
 * R. J. Hyndman and Y. Fan, The American Statistician 50(4), 1996).
 *   q  in [0, 1];  n >= 1.  Result: in [x[0], x[n-1]]; NaN when n = 0.
 */
double ms_quantile_sorted(const double *x, size_t n, double q);

#ifdef __cplusplus
}
#endif

#endif
