/* SPDX-License-Identifier: MIT */
/*
 * The estimation of `metastable fit`: the parameters of a service
 * estimated from a whole trace, offline (the per-interval calibration of
 * service.h learns the service time and the base failure online; this also
 * finds the timeout and the retries, with their confidence intervals).
 *
 * One interval of the trace gives, through ms_infer (the plugin's own
 * reading of the inputs), its offered load lambda, its attempt rate x,
 * its failure ratio q, its pool c and the calibration inputs.  Then, in
 * order:
 *
 *  1. the service time S (erlang model): the utilisation law busy = S x
 *     completions (P. J. Denning and J. P. Buzen, "The operational analysis
 *     of queueing network models", ACM Computing Surveys 10(3), 1978), one
 *     sample busy/completions per interval weighted by its completions, in
 *     an ms_estimator without fading; else the latency input, weighted
 *     alike.  95 % interval: the mean +- 1.96 standard errors.
 *  2. the base failure b and the timeout T (erlang) or the capacity C
 *     (capacity model): maximum likelihood of the failures, binomial per
 *     interval: k = q n failures of n = x tau attempts, each failing with
 *     the model's p(x) = 1 - (1 - b)(1 - P(x)) (ms_failure_probability;
 *     P the wait tail C(c, x/mu) e^(-(c mu - x) T), or the excess over C).
 *     At a fixed T the log-likelihood is concave in b, which is profiled
 *     out exactly; ln T is searched on a log grid (8 points a decade, T
 *     from S/1000 to 10^4 S) refined by golden-section search (J. Kiefer,
 *     "Sequential minimax search for a maximum", Proc. AMS 4, 1953).
 *     Where nothing fails from overload (low load) this is the pooled
 *     binomial estimate b = sum k / sum n of those intervals; the
 *     intervals near saturation say T.
 *  3. the retries r: maximum likelihood over r = 0 .. r_max, when the
 *     offered load is observed rather than inferred (offered_rate, or
 *     arrival_rate less retry_rate): an interval's R = (x - lambda) tau
 *     retries out of its failures, binomial with the share of failed
 *     attempts the policy retries at the observed failure ratio q,
 *     rho = (A(q) - 1) / (q A(q)) (ms_amplification): 1 - q^r / (1 + q +
 *     ... + q^r) for plain retries, r / (r + 1) in a storm, where every
 *     attempt fails: the amplification of a storm says r.  The failures do
 *     not depend on r (x is observed), nor this on T: the two maxima are
 *     separate.
 *
 * The model is stationary: intervals where most attempts fail below the
 * saturation load (a backlog draining, the queue a storm left behind),
 * where most succeed above it (a backlog building), and the interval just
 * after a mostly failing one are counted and left out of step 2 (their
 * clients' retries still count in step 3).  Step 2 is repeated once for
 * the capacity model, whose fitted C moves the saturation load.
 *
 * Confidence intervals of 2 and 3 come from the profile likelihood: the
 * values whose log-likelihood, maximised over the other parameter, is
 * within 1.92 (half the 95 % point of chi-square with one degree of
 * freedom) of the maximum (D. J. Venzon and S. H. Moolgavkar, "A method
 * for computing profile-likelihood-based confidence intervals", Applied
 * Statistics 37(1), 1988), the threshold multiplied by the dispersion
 * phi >= 1 of that term's counts, Pearson's chi-square over its degrees
 * of freedom (quasi-likelihood: P. McCullagh and J. A. Nelder, Generalized
 * Linear Models, 2nd ed., 1989, sec. 4.5), since failures and retries come
 * in bursts.  A parameter whose interval reaches the end of the range
 * searched is not identified by the trace: its configured value is kept
 * (the estimate where the configured value lies outside the interval).
 *
 * What the stationary model cannot say (measured on the discrete-event
 * engine, doc/metastable.md): with retries and no backoff a timeout's
 * retry lands in the congestion that failed it, and near the tipping
 * load the windows that stay healthy are those without the excursions
 * that tip the service; both bias T.  The timeout is identified without
 * bias by a trace whose clients back off and whose load climbs into the
 * timeouts below the recovery load.
 */
#ifndef METASTABLE_CLI_FIT_H
#define METASTABLE_CLI_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "service.h"

/* What an interval is to the fit. */
typedef enum {
  MS_FIT_NONE = 0,   /* no verdict, or no attempts and failures observed */
  MS_FIT_USED,       /* in the likelihood of step 3 */
  MS_FIT_DRAINING,   /* most attempts fail below saturation: left out */
  MS_FIT_RECOVERING, /* right after a mostly failing interval: left out */
  MS_FIT_FILLING,    /* above saturation with most attempts succeeding:
                        a backlog building, left out (the model has no
                        steady state there, and p = 1 for every timeout) */
} ms_fit_role;

/* One interval as the fit sees it.  The retries' likelihood takes the
 * retries R = (x - lambda) tau out of the failures counted in the same
 * interval, errors tau: without backoff a client retries at the instant
 * it learns of the failure, so both fall in the same interval even when
 * the attempt that failed was sent in the interval before. */
typedef struct {
  bool ok;       /* ms_infer gave a verdict */
  int line;      /* in the trace */
  double tau;    /* s the rates cover, > 0 */
  double lambda; /* offered load, req/s */
  long servers;  /* pool (erlang), else 0 */
  bool has_x, has_q, has_amp;
  double x;      /* attempts/s */
  double q;      /* failed attempts / attempts, at most 1 (ms_infer) */
  double errors; /* failed attempts/s as counted (error_rate), which a
                    window can count above its attempts: the failures of
                    the window before that timed out in it */
  /* has_amp: the offered load was observed (offered_rate, or arrival_rate
   * less retry_rate), not inferred through A(p_obs) */
  /* the interval's service time sample (ms_service_time_sample): its
   * kind (none, or a contradiction of the inputs), value (s) and weight
   * (completions) */
  ms_sample_kind sample;
  double sample_x, sample_w;
  ms_fit_role role;
  bool low_load; /* in the base failure's sample */
} ms_fit_obs;

/* One fitted parameter. */
typedef struct {
  bool fitted;     /* estimated from the trace */
  bool identified; /* the interval is bounded: the value is taken */
  double value;    /* the estimate (retries: whole) */
  double lo, hi;   /* 95 % interval; hi may be +infinity (not
                      identified above) */
  double se;       /* standard error (service time), else 0 */
  double configured;
  double samples;    /* intervals behind the estimate */
  double events;     /* completions or attempts behind it */
  double dispersion; /* phi, >= 1 (binomial estimates), else 0 */
  char why[160];     /* how it was estimated, or why it was not */
  char note[160];    /* "" or, when not identified, what was done */
} ms_fit_param;

/* The whole fit. */
typedef struct {
  ms_service_params configured; /* the file's, with the command line's */
  ms_service_params fitted;     /* identified values in place */
  long servers;                 /* pool of the landscapes */
  ms_fit_param service_time;    /* s (erlang) */
  ms_fit_param base_failure;    /* probability */
  ms_fit_param shape;           /* timeout, s (erlang) or capacity, req/s */
  ms_fit_param retries;         /* whole */
  int max_retries;              /* r searched: 0 .. max_retries */
  bool amplification;           /* the retries' likelihood was used */
  size_t rows, no_verdict, used, low_load, storm, draining, recovering, filling;
  double loglik; /* at the maximum */
  /* how far each model is from the observed failures over the used
   * intervals: ms_failure_residual per interval, its RMS, and the sum of
   * its squares (the binomial deviance, Anscombe-corrected) */
  double rms_before, rms_after, deviance_before, deviance_after;
  ms_landscape ls_configured, ls_fitted;
} ms_fit_result;

/*
 * ms_fit_observe: interval i of a trace, read as the plugin reads it.
 *   spec  the service (its inputs say which observations are there)
 *   in    the row's inputs with its interval (ms_trace_inputs)
 *   out   the interval; role MS_FIT_NONE when ms_infer gives no verdict
 *         (*problem then says why) or nothing was observed
 * Returns true when ms_infer gave a verdict.
 */
bool ms_fit_observe(const ms_service_spec *spec, const ms_inputs *in, int line,
                    ms_fit_obs *out, char *problem, size_t len);

/*
 * ms_fit_run: fit the service to the intervals (the header's steps 1-3).
 *   spec      the service: its parameters are the configured ones and the
 *             starting point
 *   obs, n    the intervals (roles and low_load are set here)
 *   out       the result
 * Returns 0, or -1 with err saying why nothing could be fitted (no
 * interval with a verdict; neither service time inputs nor observed
 * attempts and failures; the model failing).
 */
int ms_fit_run(const ms_service_spec *spec, ms_fit_obs *obs, size_t n,
               ms_fit_result *out, char *err, size_t errlen);

/*
 * ms_fit_write_spec: the fitted service as a service file of one service:
 * the service's name, model, pool, the fitted parameters (those not
 * identified as configured), its policy, settings, calibration and inputs
 * as they were.  It loads with ms_service_file_load.  Returns 0, or -1
 * on a write error.
 */
int ms_fit_write_spec(FILE *f, const ms_service_spec *spec,
                      const ms_fit_result *r);

#endif
