/* SPDX-License-Identifier: MIT */
/*
 * Calibration in the per-interval step (doc/design.md §1.8; calibration.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calibration.h"

/* The service's settings, defaults filled in (ms_service_settings_of). */
static double time_constant(const ms_service_spec *s) {
  return ms_service_settings_of(s).calibration_time;
}
static double threshold(const ms_service_spec *s) {
  return ms_service_settings_of(s).calibration_threshold;
}
static unsigned long min_samples(const ms_service_spec *s) {
  return (unsigned long)ms_service_settings_of(s).calibration_intervals;
}
static double misfit_threshold(const ms_service_spec *s) {
  return ms_service_settings_of(s).misfit_threshold;
}

/* A learned service time is taken into use only once its standard error
 * is under this share of it. */
#define SERVICE_TIME_MAX_REL_ERROR 0.1
/* A service time misfit is also this far (relatively) from the one used. */
#define SERVICE_TIME_MISFIT 0.1
/* The recovery tail after a storm, in which nothing is learned and the
 * misfit window takes nothing: at least this long, and this many
 * intervals (doc/design.md §1.8). */
#define RECOVERY_TAIL_SECONDS 30.0
#define RECOVERY_TAIL_INTERVALS 3u

/* Whether this interval is in a storm or its recovery tail: the storm
 * flag of the previous interval (this one's is not known yet), or a storm
 * that ended less than the tail ago. */
static bool unsettled(const ms_calibration *c, bool storm) {
  return storm ||
         (c->storm_seen && (c->calm_seconds < RECOVERY_TAIL_SECONDS ||
                            c->calm_intervals < RECOVERY_TAIL_INTERVALS));
}

/* A service time sample this many standard deviations from the estimate
 * is kept out of it (a trigger's slow requests: doc/design.md §1.8,
 * "Changes"), though the change watch sees it. */
#define OUTLIER_Z 4.0

/* The storm clock: this interval (tau s) was in a storm, or not. */
static void track_storms(ms_calibration *c, bool storm, double tau) {
  if (storm) {
    c->storm_seen = true;
    c->calm_seconds = 0;
    c->calm_intervals = 0;
  } else if (c->storm_seen) {
    c->calm_seconds += tau;
    c->calm_intervals++;
  }
}

/* The misfit window takes this interval's attempts and failures, outside
 * storms and their tails, into the batch; a batch that spans
 * MS_MISFIT_BATCH seconds goes into the estimators, judged by model m at
 * its own attempt rate (doc/design.md §1.8, "The residual"). */
static void feed_window(ms_calibration *c, const ms_failure_model *m,
                        const ms_inference *inf, bool unsettled_now,
                        double tau) {
  ms_misfit_window *w = &c->window;
  w->since += tau;
  if (unsettled_now || !inf->has_observed_attempts ||
      !inf->has_observed_failure || !(inf->observed_attempts >= 0))
    return;
  w->attempts += inf->observed_attempts * tau;
  w->failures += inf->observed_failure * inf->observed_attempts * tau;
  w->seconds += tau;
  if (w->seconds < MS_MISFIT_BATCH)
    return;
  double x = w->attempts / w->seconds, p;
  ms_estimator_add(&w->rate, x, w->seconds, w->since, NULL);
  if (w->attempts > 0 && ms_failure_probability(m, x, &p, NULL) == MS_OK) {
    ms_estimator_add(&w->observed, w->failures / w->attempts, w->attempts,
                     w->since, NULL);
    ms_estimator_add(&w->predicted, p, w->attempts, w->since, NULL);
    ms_estimator_add(&w->excess, w->failures / w->attempts - p, w->attempts,
                     w->since, NULL);
  }
  w->attempts = w->failures = w->seconds = w->since = 0;
}

/* The overload part of p(x) (doc/design.md §1.1): p(x) of the model
 * without its base failure, P(W > T) or (x - C)/x. */
static double overload_part(const ms_failure_model *m, double x) {
  ms_failure_model bare = *m;
  bare.base_failure = 0;
  double q;
  return ms_failure_probability(&bare, x, &q, NULL) == MS_OK ? q : 1.0;
}

/* The estimator of what calibrate: bit i (1 << i, ms_calibrate_flags)
 * learns. */
static const ms_estimator *estimator(const ms_calibration *c, int i) {
  return i == 0 ? &c->service_time : i == 1 ? &c->base_failure : &c->servers;
}

ms_sample_kind ms_service_time_sample(const ms_inference *inf, long servers,
                                      bool learn_pool, bool storm, double tau,
                                      double span, double *x, double *w,
                                      char *problem, size_t len) {
  if (inf->has_busy_servers && inf->has_completion_rate) {
    double busy = inf->busy_servers, done = inf->completion_rate;
    if (!learn_pool && busy > (double)servers * (1 + 1e-9)) {
      snprintf(problem, len,
               "busy_servers %.5g exceeds the pool of %ld servers: no "
               "service time sample",
               busy, servers);
      return MS_SAMPLE_CONTRADICTION;
    }
    /* more completions than attempts: a contradiction, unless a backlog
     * is being served (a queue, or the storm that left one) */
    bool backlog = (inf->has_queue_length && inf->queue_length >= 1) || storm;
    if (inf->has_observed_attempts && !backlog &&
        ms_beyond_noise(done, inf->observed_attempts, tau)) {
      snprintf(problem, len,
               "completion_rate %.5g/s exceeds the %.5g attempts/s observed: "
               "no service time sample",
               done, inf->observed_attempts);
      return MS_SAMPLE_CONTRADICTION;
    }
    if (!(busy > 0 && done > 0))
      return MS_SAMPLE_NONE;
    /* Denning & Buzen (1978): busy = completions x service time */
    *x = busy / done;
    *w = done * span;
    return MS_SAMPLE_UTILIZATION;
  }
  if (!(inf->has_latency && inf->latency > 0))
    return MS_SAMPLE_NONE;
  double rate = inf->has_completion_rate     ? inf->completion_rate
                : inf->has_observed_attempts ? inf->observed_attempts
                                             : 0.0;
  /* Little's law: the servers that latency keeps busy at this rate; more
   * than the pool (or than the busy servers seen, when the pool is being
   * learned) is a latency in the wrong unit (ms for s) */
  double pool = (double)servers;
  if (inf->has_busy_servers && inf->busy_servers > pool)
    pool = inf->busy_servers;
  if (rate * inf->latency > pool * 1.05 + 1) {
    snprintf(problem, len,
             "latency %.5g s at %.5g completions/s keeps %.5g servers busy, "
             "more than the pool of %.5g: is it in seconds (scale:)? no "
             "service time sample",
             inf->latency, rate, rate * inf->latency, pool);
    return MS_SAMPLE_CONTRADICTION;
  }
  *x = inf->latency;
  *w = inf->has_completion_rate && inf->completion_rate > 0
           ? inf->completion_rate * span
           : 1.0;
  return MS_SAMPLE_LATENCY;
}

/* Keep a sample in the change watch's ring. */
static void watch_keep(ms_change_watch *cw, double x, double w, double dt) {
  cw->x[cw->next] = x;
  cw->w[cw->next] = w;
  cw->dt[cw->next] = dt;
  cw->next = (cw->next + 1) % MS_CHANGE_RING;
  if (cw->n < MS_CHANGE_RING)
    cw->n++;
}

/* The weighted mean of the ring's last `last` samples (all it holds when
 * it holds fewer), with the fading the estimator would give them; 0
 * samples: false. */
static bool ring_mean(const ms_change_watch *cw, unsigned long last,
                      double *mean) {
  unsigned k = last < cw->n ? (unsigned)last : cw->n;
  double sw = 0, swx = 0;
  for (unsigned i = 1; i <= k; i++) {
    unsigned j = (cw->next + MS_CHANGE_RING - i) % MS_CHANGE_RING;
    sw += cw->w[j];
    swx += cw->w[j] * cw->x[j];
  }
  if (!(sw > 0))
    return false;
  *mean = swx / sw;
  return true;
}

/* The estimator started again from the ring's last `last` samples. */
static void restart(ms_estimator *e, const ms_change_watch *cw,
                    unsigned long last, double time_constant) {
  ms_estimator_init(e, time_constant);
  unsigned k = last < cw->n ? (unsigned)last : cw->n;
  for (unsigned i = k; i > 0; i--) {
    unsigned j = (cw->next + MS_CHANGE_RING - i) % MS_CHANGE_RING;
    ms_estimator_add(e, cw->x[j], cw->w[j], i == k ? 0.0 : cw->dt[j], NULL);
  }
}

/* One service time sample (x s, weight w), dt s after the previous one
 * (doc/design.md §1.8, "Changes"): judged against the estimate once it
 * rests on calibration_intervals samples; a change the CUSUM finds starts
 * the estimator again from the samples since the change began (and says
 * so in info); an outlier is kept out; anything else is learned. */
static void learn_service_time(ms_calibration *c, const ms_service_spec *spec,
                               double x, double w, double dt, char *info,
                               size_t info_len) {
  ms_change_watch *cw = &c->watch;
  double z;
  bool judged = c->service_time.samples >= min_samples(spec) &&
                ms_estimator_standardize(&c->service_time, x, w, &z);
  watch_keep(cw, x, w, dt);
  cw->last_held_out = false;
  if (!judged) {
    ms_estimator_add(&c->service_time, x, w, dt, NULL);
    return;
  }
  unsigned long since = 0;
  int alarm = ms_cusum_add(&cw->cusum, z, &since);
  if (alarm != 0) {
    double before = NAN, after = NAN;
    ms_estimator_get(&c->service_time, &before, NULL);
    restart(&c->service_time, cw, since, time_constant(spec));
    ring_mean(cw, since, &after);
    cw->changes++;
    if (info_len > 0 && info[0] == '\0')
      snprintf(info, info_len,
               "the service time changed: %.4g ms before, %.4g ms over the "
               "last %lu samples; learning it again from those",
               1e3 * before, 1e3 * after, since);
    return;
  }
  if (fabs(z) > OUTLIER_Z) {
    cw->held_out++;
    cw->last_held_out = true;
    return;
  }
  ms_estimator_add(&c->service_time, x, w, dt, NULL);
}

/* The base failure sample, outside storms, where the model says almost
 * nothing fails from the load: the model's failure share q(x) at most
 * MS_LOW_LOAD_OVERLOAD above its share on an idle pool q(0).  q(0) is 0
 * when the timeout covers the wait; with the timeout on the response it is
 * what the service time alone outlasts (e^(-mu T) for exponential
 * service), known from the model, so the sample is the observed failure
 * ratio f with q taken out, (f - q) / (1 - q), of the (1 - q) x span
 * attempts q did not fail.  Without that, a timeout under about 7 service
 * times on the response (q(0) above 1e-3) would never give a sample.  An
 * idle pool that fails half its attempts or more tells the base failure
 * too little: no sample. */
static void sample_base_failure(ms_calibration *c, const ms_failure_model *m,
                                bool storm, const ms_inference *inf, double tau,
                                double span) {
  if (storm || !inf->has_observed_failure || !inf->has_observed_attempts)
    return;
  double x = inf->observed_attempts;
  if (x <= 0 || x > MS_LOW_LOAD_UTILIZATION * ms_saturation_load(m))
    return;
  double q = overload_part(m, x), q0 = overload_part(m, 0.0);
  if (q - q0 > MS_LOW_LOAD_OVERLOAD || q0 >= 0.5)
    return;
  ms_error e;
  ms_estimator_add(&c->base_failure, (inf->observed_failure - q) / (1.0 - q),
                   x * span * (1.0 - q), tau, &e);
}

/* The pool size sample: the busy servers of an interval that shows the
 * pool saturated (a backlog, or attempts beyond completions).  More busy
 * servers than the pool in use proves only that the pool is larger, not
 * that it is full: no sample. */
static void sample_servers(ms_calibration *c, const ms_inference *inf,
                           double tau) {
  if (!inf->has_busy_servers)
    return;
  double busy = inf->busy_servers;
  bool saturated =
      (inf->has_queue_length && inf->queue_length >= 1) ||
      (inf->has_completion_rate && inf->has_observed_attempts &&
       ms_beyond_noise(inf->observed_attempts, inf->completion_rate, tau));
  ms_error e;
  if (saturated && busy > 0)
    ms_estimator_add(&c->servers, busy, 1.0, tau, &e);
}

/* Whether the value of calibrate: bit i may be taken into use now. */
static bool ready(const ms_calibration *c, const ms_service_spec *spec, int i) {
  const ms_estimator *e = estimator(c, i);
  double m, se;
  if (e->samples < min_samples(spec) || !ms_estimator_get(e, &m, &se))
    return false;
  if (1 << i == MS_CALIBRATE_SERVICE_TIME)
    return m > 0 && se <= SERVICE_TIME_MAX_REL_ERROR * m;
  return true;
}

/* The base failure the model uses for a learned mean m: a mean of
 * samples with the model's timeouts taken out falls a little under 0 when
 * nothing else fails (-0.000373 % in the integration test). */
static double base_failure_in_use(double m) {
  return fmin(fmax(m, 0.0), MS_BASE_FAILURE_MAX);
}

/* The learned values in use, into *p; a value within the threshold of
 * the current landscape's keeps the landscape's. */
static void substitute(const ms_calibration *c, const ms_service_spec *spec,
                       const ms_landscape *current, ms_service_params *p) {
  double m, thr = threshold(spec);
  ms_failure_model *fm = &p->model;
  const ms_failure_model *old = current ? &current->params.model : NULL;
  if ((c->in_use & MS_CALIBRATE_SERVICE_TIME) &&
      ms_estimator_get(&c->service_time, &m, NULL) &&
      ms_param_check(MS_PARAM_SERVICE_TIME, m, NULL) == MS_OK) {
    double mu = 1.0 / m;
    fm->service_rate =
        old && fabs(old->service_rate / mu - 1) <= thr ? old->service_rate : mu;
  }
  if ((c->in_use & MS_CALIBRATE_BASE_FAILURE) &&
      ms_estimator_get(&c->base_failure, &m, NULL)) {
    double b = base_failure_in_use(m);
    fm->base_failure = old && fabs(old->base_failure - b) <=
                                   thr * fmax(old->base_failure, 0.01)
                           ? old->base_failure
                           : b;
  }
  if ((c->in_use & MS_CALIBRATE_SERVERS) &&
      ms_estimator_get(&c->servers, &m, NULL)) {
    double n = fmax(1.0, floor(m + 0.5));
    if (ms_param_check(MS_PARAM_SERVERS, n, NULL) == MS_OK)
      fm->servers = (long)n;
  }
}

/* "service time 51.2 ms ± 1.3 ms (configured 80 ms)", for the log. */
static int describe(const ms_calibration *c, const ms_service_spec *spec,
                    int flag, char *buf, size_t len) {
  double m, se;
  const ms_failure_model *fm = &spec->params.model;
  if (flag == MS_CALIBRATE_SERVICE_TIME) {
    ms_estimator_get(&c->service_time, &m, &se);
    return snprintf(buf, len,
                    "service time %.4g ms ± %.2g ms (configured %.4g ms)",
                    1e3 * m, 1e3 * se, 1e3 / fm->service_rate);
  }
  if (flag == MS_CALIBRATE_BASE_FAILURE) {
    ms_estimator_get(&c->base_failure, &m, &se);
    m = base_failure_in_use(m); /* what substitute takes into use */
    return snprintf(buf, len,
                    "base failure %.3g%% ± %.2g%% (configured %.3g%%)", 100 * m,
                    100 * se, 100 * fm->base_failure);
  }
  ms_estimator_get(&c->servers, &m, &se);
  return snprintf(buf, len, "pool of %.0f servers (configured %ld)",
                  fmax(1.0, floor(m + 0.5)), fm->servers);
}

void ms_calibration_update(ms_calibration *c, const ms_service_spec *spec,
                           const ms_landscape *current, bool storm,
                           const ms_inference *inf, double tau,
                           ms_service_params *params, char *info,
                           size_t info_len, char *problem, size_t problem_len) {
  if (info_len > 0)
    info[0] = '\0';
  if (problem_len > 0)
    problem[0] = '\0';
  if (!(tau > 0 && isfinite(tau)))
    tau = 1.0;
  if (!c->ready) {
    double tc = time_constant(spec);
    ms_estimator_init(&c->service_time, tc);
    ms_estimator_init(&c->base_failure, tc);
    ms_estimator_init(&c->servers, tc);
    ms_estimator_init(&c->window.rate, tc);
    ms_estimator_init(&c->window.observed, tc);
    ms_estimator_init(&c->window.predicted, tc);
    ms_estimator_init(&c->window.excess, tc);
    c->ready = true;
  }
  bool hold = unsettled(c, storm);
  track_storms(c, storm, tau);
  /* a storm forgets the change watch's evidence: the samples just before
   * it are its trigger's, a transient; a real change shows again after */
  if (storm)
    c->watch.cusum = (ms_cusum){0};
  feed_window(c, current ? &current->params.model : &params->model, inf, hold,
              tau);
  /* nothing to learn from: the file's parameters, at no cost */
  if (spec->calibrate == 0 && !ms_input_observed(spec, MS_INPUT_BUSY) &&
      !ms_input_observed(spec, MS_INPUT_COMPLETION) &&
      !ms_input_observed(spec, MS_INPUT_LATENCY))
    return;
  c->intervals++;
  /* a sample counts for at most one time constant of the estimator: a
   * trace's row after a gap of a day must not outweigh everything after
   * it */
  double span = fmin(tau, time_constant(spec));
  bool erlang = params->model.kind == MS_MODEL_ERLANG;
  /* the pool in use: the file's or pool_size's, or the learned one */
  ms_service_params in_use = *params;
  substitute(c, spec, current, &in_use);
  double x, w;
  c->watch.since += tau;
  if (erlang &&
      ms_service_time_sample(inf, in_use.model.servers,
                             (spec->calibrate & MS_CALIBRATE_SERVERS) != 0,
                             storm, tau, span, &x, &w, problem,
                             problem_len) > MS_SAMPLE_NONE &&
      !hold) {
    learn_service_time(c, spec, x, w, c->watch.since, info, info_len);
    c->watch.since = 0;
  }
  if (spec->calibrate & MS_CALIBRATE_BASE_FAILURE)
    sample_base_failure(c, current ? &current->params.model : &in_use.model,
                        hold, inf, tau, span);
  if (erlang && (spec->calibrate & MS_CALIBRATE_SERVERS))
    sample_servers(c, inf, tau);
  /* take into use what is known well enough now */
  int before = c->in_use;
  size_t used = info_len > 0 ? strlen(info) : 0;
  for (int i = 0; i < 3; i++) {
    int f = 1 << i;
    if (!(spec->calibrate & f) || (c->in_use & f) || !ready(c, spec, i))
      continue;
    c->in_use |= f;
    if (used < info_len) {
      int n = snprintf(info + used, info_len - used, "%slearned ",
                       used == 0 ? "" : "; ");
      used += n > 0 ? (size_t)n : 0;
    }
    if (used < info_len) {
      int n = describe(c, spec, f, info + used, info_len - used);
      used += n > 0 ? (size_t)n : 0;
    }
  }
  /* the values in use, again only when one was taken into use just now */
  if (c->in_use != before) {
    in_use = *params;
    substitute(c, spec, current, &in_use);
  }
  /* a learned value the model cannot take keeps the file's */
  if (ms_service_params_check(&in_use, NULL) == MS_OK)
    *params = in_use;
}

/* The misfit window's verdict (doc/design.md §1.8, "The residual"): the
 * batches' mean excess e of the failure ratio q over the model's p at
 * each batch's own attempt rate, as a z-score.  More failures than the
 * model's (e > 0) are judged against the failures the model itself
 * allows: binomial at p, widened by the dispersion the batches' ratios
 * show (failures come in bursts); fewer (e < 0) against the batches'
 * own scatter of e, which carries the noise of p where a batch's rate
 * nears saturation.  Never less than the binomial error at the larger
 * of q and p, so that a few stray failures where the model predicts none
 * are not a misfit.  false until the window holds two batches. */
typedef struct {
  double attempts_rate, observed, predicted, z;
} window_verdict;

static bool window_residual(const ms_misfit_window *w, window_verdict *v) {
  double x, p, e, se, q, se_q;
  if (!ms_estimator_get(&w->rate, &x, NULL) ||
      !ms_estimator_get(&w->predicted, &p, NULL) ||
      !ms_estimator_get(&w->excess, &e, &se) ||
      !ms_estimator_get(&w->observed, &q, &se_q))
    return false;
  double n = w->excess.weight; /* attempts in the window, faded */
  double var;
  if (e > 0) {
    /* the dispersion: the ratios' scatter per attempt (se_q^2 = sigma^2
     * sum a^2 w / (sum a w)^2) over a binomial one at their mean,
     * q (1 - q); at least 1 */
    double sigma2 = se_q * se_q * n * n / w->observed.weight_sq;
    double phi = q > 0 && q < 1 ? sigma2 / (q * (1 - q)) : 1.0;
    var = fmax(phi, 1.0) * p * (1 - p) / n;
  } else {
    var = se * se;
  }
  /* one failure where none is predicted is not a misfit: the count's own
   * Poisson error at the larger ratio */
  var = fmax(var, fmax(p * (1 - p), q * (1 - q)) / n);
  var = fmax(var, 1.0 / (n * n)); /* finite when nothing fails */
  *v = (window_verdict){x, q, p, e / sqrt(var)};
  return isfinite(v->z);
}

void ms_calibration_report(const ms_calibration *c, const ms_service_spec *spec,
                           const ms_landscape *ls, const ms_inference *inf,
                           double tau, ms_report *r) {
  if (!(tau > 0 && isfinite(tau)))
    tau = 1.0;
  double m, se;
  if (spec->params.model.kind == MS_MODEL_ERLANG &&
      ms_estimator_get(&c->service_time, &m, &se)) {
    r->has_service_time_estimate = r->has_service_time_error = true;
    r->service_time_estimate = m;
    /* the latest sample held out, or a change suspected (the CUSUM past
     * half its threshold) and not yet confirmed: the estimate may lag the
     * samples since by their distance, which the error bar covers
     * (doc/design.md §1.8, "Changes") */
    unsigned long since;
    double recent;
    bool suspect = ms_cusum_level(&c->watch.cusum, &since) >= MS_CUSUM_SUSPECT;
    if ((suspect || c->watch.last_held_out) &&
        ring_mean(&c->watch, suspect && since > 0 ? since : 1, &recent))
      se = hypot(se, recent - m);
    r->service_time_error = se;
    r->has_service_time_ratio = true;
    r->service_time_ratio = m * spec->params.model.service_rate;
  }
  if ((spec->calibrate & MS_CALIBRATE_BASE_FAILURE) &&
      ms_estimator_get(&c->base_failure, &m, NULL)) {
    r->has_base_failure_estimate = true;
    r->base_failure_estimate = fmin(fmax(m, 0.0), 1.0);
  }
  if ((spec->calibrate & MS_CALIBRATE_SERVERS) &&
      ms_estimator_get(&c->servers, &m, NULL)) {
    r->has_servers_estimate = true;
    r->servers_estimate = fmax(1.0, floor(m + 0.5));
  }
  if (spec->calibrate) {
    r->has_calibrated = true;
    r->calibrated = (double)__builtin_popcount((unsigned)c->in_use);
  }
  /* the model against the observed failure ratio, when there is one (an
   * Erlang C evaluation: paid only where it is compared with something) */
  double p;
  if (inf->has_observed_attempts && inf->has_observed_failure &&
      ms_failure_probability(&ls->params.model, inf->observed_attempts, &p,
                             NULL) == MS_OK) {
    r->has_model_failure_ratio = true;
    r->model_failure_ratio = p;
  }
  /* the residual: the window's, not this interval's (doc/design.md §1.8) */
  window_verdict v;
  if (c->ready && window_residual(&c->window, &v)) {
    r->has_model_residual = true;
    r->model_residual = v.z;
  }
}

/* Whether the learned service time is far from the one the model uses:
 * more than misfit_threshold standard errors and SERVICE_TIME_MISFIT. */
static bool service_time_off(const ms_service_spec *spec,
                             const ms_landscape *ls, const ms_report *r) {
  if (!r->has_service_time_estimate || ls->params.model.kind != MS_MODEL_ERLANG)
    return false;
  double used = 1.0 / ls->params.model.service_rate;
  double d = fabs(r->service_time_estimate - used);
  return d > SERVICE_TIME_MISFIT * used &&
         d > misfit_threshold(spec) * r->service_time_error;
}

/* Whether a value calibrate: asks for is still being learned: in the
 * first calibration_intervals intervals, before it can have been taken
 * into use, the file's value is a prior and its misfit what calibration
 * is about to fix.  Bounded in time: a value that never gets its samples
 * (a pool never saturated, a load never low) does not silence the misfit
 * for ever. */
static bool learning(const ms_calibration *c, const ms_service_spec *spec) {
  if (c->intervals > min_samples(spec))
    return false;
  for (int i = 0; i < 3; i++)
    if ((spec->calibrate & (1 << i)) && !(c->in_use & (1 << i)) &&
        estimator(c, i)->samples < min_samples(spec))
      return true;
  return false;
}

bool ms_calibration_misfit(ms_calibration *c, const ms_service_spec *spec,
                           const ms_landscape *ls, const ms_report *r,
                           bool previous_storm, int clear_after, bool room,
                           char *msg, size_t len) {
  /* a storm's transient is not the steady state the model describes:
   * streaks wait for calm */
  if (r->analysis.storm || previous_storm || learning(c, spec))
    return false;
  bool failures =
      r->has_model_residual && fabs(r->model_residual) > misfit_threshold(spec);
  bool slow = service_time_off(spec, ls, r);
  if (!failures && !slow) {
    c->misfit_streak = 0;
    if (c->misfit_warned && ++c->fit_streak >= clear_after) {
      c->misfit_warned = false;
      c->fit_streak = 0;
    }
    return false;
  }
  c->fit_streak = 0;
  if (++c->misfit_streak < ms_service_settings_of(spec).misfit_intervals ||
      c->misfit_warned || !room)
    return false; /* without room this interval, the next one warns */
  c->misfit_warned = true;
  size_t used = 0;
  int n;
  window_verdict v;
  char obs[32], pred[32];
  if (failures && window_residual(&c->window, &v))
    n = snprintf(msg, len,
                 "the model does not fit %s: observed failures %s where the "
                 "model predicts %s at %.5g attempts/s (z %+.3g, over the "
                 "last %.0f s outside storms)",
                 spec->name, ms_format_share(obs, sizeof obs, v.observed, 3),
                 ms_format_share(pred, sizeof pred, v.predicted, 3),
                 v.attempts_rate, v.z, time_constant(spec));
  else
    n = snprintf(msg, len, "the model does not fit %s", spec->name);
  used = n > 0 ? (size_t)n : 0;
  if (slow && used < len)
    snprintf(msg + used, len - used,
             "; the service time seems to be %.3g ms ± %.2g ms, not %.3g ms",
             1e3 * r->service_time_estimate, 1e3 * r->service_time_error,
             1e3 / ls->params.model.service_rate);
  return true;
}
