/* SPDX-License-Identifier: MIT */
/*
 * The per-interval step shared by the plugin and `metastable replay`:
 * inputs -> offered load and observations -> model -> state and
 * notifications.  Data flows one way; the model never calls back.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calibration.h"
#include "service.h"
#include "sim.h"

const char *ms_note_severity_name(ms_note_severity s) {
  switch (s) {
  case MS_NOTE_FAILURE:
    return "FAILURE";
  case MS_NOTE_WARNING:
    return "WARNING";
  case MS_NOTE_OKAY:
    return "OKAY";
  }
  return "UNKNOWN";
}

static int bad_input(ms_input_id id, ms_input_id *bad, char *problem,
                     size_t len, const char *what) {
  *bad = id;
  snprintf(problem, len, "input %s %s", ms_input_name(id), what);
  return -1;
}

/* The value of a configured input, or -1 with the problem described. */
static int need(const ms_service_spec *spec, const ms_inputs *in,
                ms_input_id id, double *v, ms_input_id *bad, char *problem,
                size_t len) {
  if (spec->inputs[id].kind == MS_SOURCE_NUMBER) {
    *v = spec->inputs[id].number;
    return 0;
  }
  if (!in->has[id]) {
    /* `missing: zero`: a counter that does not exist yet (statsd makes it
     * at its first event) has counted nothing.  Only absence: a NaN below
     * is a value whose rate is unknown, not 0. */
    if (spec->inputs[id].missing == MS_MISSING_ZERO) {
      *v = 0;
      return 0;
    }
    return bad_input(id, bad, problem, len, "has no value this interval");
  }
  double x = in->value[id];
  if (!isfinite(x))
    return bad_input(id, bad, problem, len,
                     isnan(x) ? "is not a number (no value, or no rate, "
                                "this interval)"
                              : "is infinite");
  if (x < 0)
    return bad_input(id, bad, problem, len, "is negative");
  double k = spec->inputs[id].scale;
  *v = k > 0 ? x * k : x;
  if (!isfinite(*v))
    return bad_input(id, bad, problem, len, "is infinite once scaled");
  return 0;
}

static bool configured(const ms_service_spec *sp, ms_input_id id) {
  return sp->inputs[id].kind != MS_SOURCE_NONE;
}

/* Whether the service observes its attempts or its failure ratio through
 * an input read from collectd, as ms_infer below reads them. */
static bool observes_attempts_or_failures(const ms_service_spec *sp) {
  if (configured(sp, MS_INPUT_ARRIVAL))
    return ms_input_observed(sp, MS_INPUT_ARRIVAL) ||
           ms_input_observed(sp, MS_INPUT_ERROR);
  return configured(sp, MS_INPUT_OFFERED) &&
         ms_input_observed(sp, MS_INPUT_RETRY);
}

/* The decision, input by input, with its reason (service.h; the table of
 * doc/configuration.md, "What the verdict needs", says the same). */
ms_input_role ms_input_role_of(const ms_service_spec *sp, ms_input_id id) {
  if ((unsigned)id >= MS_INPUT_COUNT || !configured(sp, id))
    return MS_INPUT_UNUSED;
  switch (id) {
  case MS_INPUT_OFFERED: /* the offered load itself */
  case MS_INPUT_ARRIVAL: /* the observed attempts, which say on which branch
                            the service is; the offered load without
                            offered_rate */
  case MS_INPUT_POOL:    /* the model's servers: no landscape without */
    return MS_INPUT_NEEDED;
  case MS_INPUT_RETRY:
    /* the offered load (arrival_rate - retry_rate) without offered_rate,
     * the attempts (offered_rate + retry_rate) without arrival_rate; with
     * both, neither */
    return configured(sp, MS_INPUT_OFFERED) && configured(sp, MS_INPUT_ARRIVAL)
               ? MS_INPUT_UNUSED
               : MS_INPUT_NEEDED;
  case MS_INPUT_ERROR:
    /* the failure ratio error_rate / arrival_rate, the storm's strongest
     * evidence, and the offered load from it; nothing without
     * arrival_rate */
    return configured(sp, MS_INPUT_ARRIVAL) ? MS_INPUT_NEEDED : MS_INPUT_UNUSED;
  case MS_INPUT_QUEUE:
    /* drain_time, and in the erlang model a backlog past the timeout
     * horizon as evidence of a storm.  Beside attempts or failures read
     * from collectd, which show a storm too, an interval without it loses
     * only that; alone, the storm flag would come from the model alone
     * without it, which is no verdict from observations */
    return sp->params.model.kind == MS_MODEL_ERLANG &&
                   !observes_attempts_or_failures(sp)
               ? MS_INPUT_NEEDED
               : MS_INPUT_EXTRA;
  case MS_INPUT_BUSY:       /* the service time by the utilisation law, */
  case MS_INPUT_COMPLETION: /* and the pool while saturated (§1.8) */
  case MS_INPUT_LATENCY:    /* the service time, directly */
    return MS_INPUT_CALIBRATION;
  case MS_INPUT_COUNT:
    break;
  }
  return MS_INPUT_UNUSED;
}

/* Keep why as the inference's calibration_problem unless it has one. */
static void left_out(ms_inference *r, const char *why) {
  if (r->calibration_problem[0] == '\0')
    snprintf(r->calibration_problem, sizeof r->calibration_problem, "%s", why);
}

/* The calibration inputs read from collectd (or a trace): a value each may
 * lack costs only its sample (doc/design.md §1.8). */
static void read_calibration_inputs(const ms_service_spec *spec,
                                    const ms_inputs *in, ms_inference *r) {
  bool *has[] = {&r->has_busy_servers, &r->has_completion_rate,
                 &r->has_latency};
  double *val[] = {&r->busy_servers, &r->completion_rate, &r->latency};
  for (int i = 0; i < 3; i++) {
    ms_input_id id = (ms_input_id)(MS_INPUT_BUSY + i);
    if (!ms_input_observed(spec, id))
      continue; /* a constant observes nothing */
    ms_input_id bad;
    char why[sizeof r->calibration_problem];
    if (need(spec, in, id, val[i], &bad, why, sizeof why) != 0) {
      left_out(r, why);
      continue;
    }
    *has[i] = true;
  }
}

int ms_infer(const ms_service_spec *spec, const ms_inputs *in,
             ms_inference *out, ms_input_id *bad, char *problem,
             size_t problem_len) {
  ms_inference r;
  memset(&r, 0, sizeof r);
  double v[MS_INPUT_COUNT] = {0};
  bool have[MS_INPUT_COUNT] = {0};
  /* read[i]: the value came from collectd (or a trace), not the file: only
   * such a value observes anything */
  bool read[MS_INPUT_COUNT] = {0};
  int n_read = 0, n_absent = 0;
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    ms_input_role role = ms_input_role_of(spec, (ms_input_id)i);
    if (role == MS_INPUT_UNUSED || role == MS_INPUT_CALIBRATION)
      continue;
    if (role == MS_INPUT_EXTRA) {
      /* the verdict goes on without it, and says so */
      ms_input_id ignored;
      char why[sizeof r.calibration_problem];
      if (need(spec, in, (ms_input_id)i, &v[i], &ignored, why, sizeof why) !=
          0) {
        left_out(&r, why);
        continue;
      }
      have[i] = true;
      read[i] = ms_input_observed(spec, (ms_input_id)i);
      continue;
    }
    if (need(spec, in, (ms_input_id)i, &v[i], bad, problem, problem_len) != 0)
      return -1;
    have[i] = true;
    read[i] = ms_input_observed(spec, (ms_input_id)i);
    n_read += read[i];
    n_absent += read[i] && !in->has[i];
  }
  /* `missing: zero` fills an absent counter while the service is seen
   * through another input; when every input read is absent, the feed is
   * gone, which is no evidence of health */
  if (n_read > 0 && n_absent == n_read) {
    *bad = MS_INPUT_COUNT;
    snprintf(problem, problem_len,
             "no input has a value this interval (missing: zero stands in "
             "for an absent input only while another one has a value)");
    return -1;
  }
  /* pool */
  if (spec->params.model.kind == MS_MODEL_ERLANG) {
    if (have[MS_INPUT_POOL]) {
      double p = floor(v[MS_INPUT_POOL] + 0.5); /* >= 0 (need) */
      ms_error e;
      if (p == 0)
        return bad_input(MS_INPUT_POOL, bad, problem, problem_len,
                         "is 0: no live servers");
      if (ms_param_check(MS_PARAM_SERVERS, p, &e) != MS_OK) {
        char why[sizeof e.msg + 32];
        snprintf(why, sizeof why, "is too large to analyse: %s", e.msg);
        return bad_input(MS_INPUT_POOL, bad, problem, problem_len, why);
      }
      r.servers = (long)p;
    } else {
      r.servers = spec->params.model.servers;
    }
  }
  /* observations */
  /* observations: only what an input read from collectd adds (a constant
   * retry_rate of 0 observes nothing) */
  if (have[MS_INPUT_ARRIVAL]) {
    r.has_observed_attempts = read[MS_INPUT_ARRIVAL];
    r.observed_attempts = v[MS_INPUT_ARRIVAL];
    if (have[MS_INPUT_ERROR] && read[MS_INPUT_ERROR] &&
        v[MS_INPUT_ARRIVAL] > 0) {
      r.has_observed_failure = true;
      r.observed_failure = fmin(1.0, v[MS_INPUT_ERROR] / v[MS_INPUT_ARRIVAL]);
    }
  } else if (have[MS_INPUT_OFFERED] && have[MS_INPUT_RETRY]) {
    r.has_observed_attempts = read[MS_INPUT_RETRY];
    r.observed_attempts = v[MS_INPUT_OFFERED] + v[MS_INPUT_RETRY];
  }
  if (have[MS_INPUT_QUEUE] && read[MS_INPUT_QUEUE]) {
    r.has_queue_length = true;
    r.queue_length = v[MS_INPUT_QUEUE];
  }
  /* offered load */
  if (have[MS_INPUT_OFFERED]) {
    r.offered_load = v[MS_INPUT_OFFERED];
  } else if (have[MS_INPUT_ARRIVAL] && have[MS_INPUT_RETRY]) {
    double d = v[MS_INPUT_ARRIVAL] - v[MS_INPUT_RETRY];
    /* counters read a few milliseconds apart can cross by a hair */
    if (d < -1e-6 * v[MS_INPUT_ARRIVAL] - 1e-9)
      return bad_input(MS_INPUT_RETRY, bad, problem, problem_len,
                       "exceeds arrival_rate: retries cannot outnumber "
                       "attempts");
    r.offered_load = fmax(d, 0.0);
  } else if (have[MS_INPUT_ARRIVAL] && have[MS_INPUT_ERROR] &&
             v[MS_INPUT_ARRIVAL] > 0) {
    double p = fmin(1.0, v[MS_INPUT_ERROR] / v[MS_INPUT_ARRIVAL]);
    double lambda = v[MS_INPUT_ARRIVAL];
    ms_offered_load_given(&spec->params, v[MS_INPUT_ARRIVAL], p, &lambda, NULL);
    r.offered_load = lambda;
  } else if (have[MS_INPUT_ARRIVAL] && v[MS_INPUT_ARRIVAL] == 0) {
    r.offered_load = 0; /* no traffic, no failures to infer from */
  } else {
    *bad = MS_INPUT_COUNT;
    snprintf(problem, problem_len,
             "the inputs give no offered load (need offered_rate, or "
             "arrival_rate with retry_rate or error_rate)");
    return -1;
  }
  read_calibration_inputs(spec, in, &r);
  *out = r;
  return 0;
}

void ms_tracker_init(ms_tracker *t) { memset(t, 0, sizeof *t); }

static bool same_params(const ms_service_params *a,
                        const ms_service_params *b) {
  return ms_failure_model_same(&a->model, &b->model) &&
         ms_retry_policy_same(&a->policy, &b->policy);
}

static bool same_source(const ms_source *a, const ms_source *b) {
  if (a->kind != b->kind || a->missing != b->missing || a->scale != b->scale)
    return false;
  if (a->kind == MS_SOURCE_NUMBER)
    return a->number == b->number;
  return (a->pattern == NULL) == (b->pattern == NULL) &&
         (a->pattern == NULL || strcmp(a->pattern, b->pattern) == 0);
}

/* Whether calibration learns from the same things under both specs. */
static bool same_learning(const ms_service_spec *a, const ms_service_spec *b) {
  if (a->params.model.kind != b->params.model.kind ||
      a->calibrate != b->calibrate ||
      ms_service_settings_of(a).calibration_time !=
          ms_service_settings_of(b).calibration_time)
    return false;
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    if (!same_source(&a->inputs[i], &b->inputs[i]))
      return false;
  return true;
}

void ms_tracker_carry(ms_tracker *t, const ms_service_spec *was,
                      const ms_service_spec *now) {
  if (!same_params(&was->params, &now->params))
    t->has_landscape = false; /* rebuilt, and its caches with it */
  if (!same_learning(was, now))
    memset(&t->calibration, 0, sizeof t->calibration);
}

static void note(ms_step *out, ms_note_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#include <stdarg.h>
static void note(ms_step *out, ms_note_severity sev, const char *fmt, ...) {
  if (out->n_notes >= (int)(sizeof out->notes / sizeof out->notes[0]))
    return;
  ms_note *n = &out->notes[out->n_notes++];
  n->severity = sev;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(n->message, sizeof n->message, fmt, ap);
  va_end(ap);
}

/* The observations behind a storm verdict, for the notification texts,
 * the strongest first: "450 queued > 200, 0% failing" (a backlog past the
 * timeout horizon), "72.4% of attempts failing", "31.2 attempts/s
 * observed", "450 waiting", or "model only" for a service without
 * observation inputs.  At most 46 characters, so that the FAILURE text
 * stays under collectd's 256 bytes whatever the values. */
static void evidence(const ms_landscape *ls, const ms_report *r,
                     const ms_inference *inf, char *buf, size_t len) {
  double horizon = ms_timeout_horizon(&ls->params.model);
  bool backlog = inf->has_queue_length && inf->queue_length > horizon;
  if (backlog && r->analysis.has_observed_failure_ratio)
    snprintf(buf, len, "%.5g queued > %.5g, %.3g%% failing", inf->queue_length,
             horizon, 100 * r->analysis.observed_failure_ratio);
  else if (backlog)
    snprintf(buf, len, "%.5g queued > %.5g", inf->queue_length, horizon);
  else if (r->analysis.has_observed_failure_ratio)
    snprintf(buf, len, "%.3g%% of attempts failing",
             100 * r->analysis.observed_failure_ratio);
  else if (r->analysis.has_observed_effective_load)
    snprintf(buf, len, "%.5g attempts/s observed",
             r->analysis.observed_effective_load);
  else if (inf->has_queue_length)
    snprintf(buf, len, "%.5g waiting", inf->queue_length);
  else
    snprintf(buf, len, "model only");
}

/* FAILURE when a storm starts, OKAY once it has been over for clear_after
 * intervals.  Returns whether a FAILURE went out. */
static bool storm_notes(ms_tracker *t, const ms_report *r, int clear_after,
                        ms_step *out) {
  char ev[96];
  if (r->analysis.storm) {
    t->calm_streak = 0;
    if (t->storm_announced)
      return false;
    evidence(&t->landscape, r, &out->inference, ev, sizeof ev);
    note(out, MS_NOTE_FAILURE,
         "retry storm (%s, %s): offered %.5g req/s, effective %.5g "
         "attempts/s, %.5g self-inflicted; shed %.5g req/s (recovery load "
         "%.5g req/s, tipping %.5g)",
         ms_state_name(r->analysis.state), ev, r->analysis.offered_load,
         r->analysis.effective_load, r->analysis.self_inflicted_load,
         r->analysis.shed_load, r->analysis.recovery_load,
         r->analysis.tipping_load);
    t->storm_announced = true;
    return true;
  }
  if (t->storm_announced && ++t->calm_streak >= clear_after) {
    evidence(&t->landscape, r, &out->inference, ev, sizeof ev);
    note(out, MS_NOTE_OKAY,
         "retry storm over: healthy for %d interval%s (%s, %s): offered "
         "%.5g req/s, recovery load %.5g, tipping load %.5g req/s",
         t->calm_streak, t->calm_streak == 1 ? "" : "s",
         ms_state_name(r->analysis.state), ev, r->analysis.offered_load,
         r->analysis.recovery_load, r->analysis.tipping_load);
    t->storm_announced = false;
    t->calm_streak = 0;
  }
  return false;
}

/* WARNING once when the offered load is clearly above the tipping load
 * (beyond the noise of counting it over the interval: a load that wavers
 * around the tipping load does not warn every few intervals) and the
 * observations show nothing failing yet: a prediction, not a storm.  Armed
 * again after clear_after intervals under the tipping load. */
static bool latch_note(ms_tracker *t, const ms_report *r, double tau,
                       int clear_after, ms_step *out) {
  if (r->analysis.state == MS_STATE_OVERLOADED && !r->analysis.storm) {
    t->latch_streak = 0;
    if (t->latch_warned || t->storm_announced ||
        !ms_beyond_noise(r->analysis.offered_load, r->analysis.tipping_load,
                         tau > 0 ? tau : 1.0))
      return false;
    if (t->landscape.has_fold)
      note(out, MS_NOTE_WARNING,
           "above the tipping load and nothing failing yet: offered %.5g > "
           "%.5g req/s; the next trigger latches a retry storm that lasts "
           "until offered load is under the recovery load %.5g req/s",
           r->analysis.offered_load, r->analysis.tipping_load,
           r->analysis.recovery_load);
    else
      note(out, MS_NOTE_WARNING,
           "above the load the service takes and nothing failing yet: "
           "offered %.5g > %.5g req/s (no hysteresis band: attempts fail "
           "while it lasts, no storm outlasts it)",
           r->analysis.offered_load, r->analysis.tipping_load);
    t->latch_warned = true;
    return true;
  }
  if (t->latch_warned && r->analysis.state != MS_STATE_OVERLOADED &&
      ++t->latch_streak >= clear_after) {
    t->latch_warned = false;
    t->latch_streak = 0;
  }
  return false;
}

/* WARNING once when the tipping headroom falls below headroom_warning
 * (not in an interval whose other notification says more); armed again
 * after clear_after intervals above it. */
static void headroom_note(ms_tracker *t, const ms_service_spec *spec,
                          const ms_report *r, int clear_after, bool quiet,
                          ms_step *out) {
  if (!spec->has_headroom_warning)
    return;
  if (r->analysis.tipping_headroom < spec->headroom_warning) {
    t->roomy_streak = 0;
    if (!t->headroom_warned) {
      if (!quiet)
        note(out, MS_NOTE_WARNING,
             "tipping headroom %.3g%% is below %.3g%%: offered %.5g req/s, "
             "tipping load %.5g req/s",
             100 * r->analysis.tipping_headroom, 100 * spec->headroom_warning,
             r->analysis.offered_load, r->analysis.tipping_load);
      t->headroom_warned = true;
    }
  } else if (t->headroom_warned && ++t->roomy_streak >= clear_after) {
    t->headroom_warned = false;
    t->roomy_streak = 0;
  }
}

/* Remember stall tolerance v (s; < 0: none) for bucket b. */
static void tolerance_remember(ms_tracker *t, long b, double v) {
  int k = t->tolerance_next;
  t->tolerance_bucket[k] = b;
  t->tolerance_value[k] = v;
  t->tolerance_next = (k + 1) % MS_TOLERANCE_CACHE;
  if (t->tolerance_n < MS_TOLERANCE_CACHE)
    t->tolerance_n++;
}

/* The search of bucket b (load lambda) on the tracker's landscape,
 * remembered unless the caller's tolerance_stop ended it.  Returns the
 * value (s), or -1 for none (a failed or stopped search). */
static double tolerance_search(ms_tracker *t, double lambda, long b) {
  const ms_landscape *ls = &t->landscape;
  t->tolerance_wait = MS_TOLERANCE_SEARCH_GAP;
  ms_sim_config cfg;
  ms_sim_config_init(&cfg, &ls->params);
  cfg.scenario.offered_load =
      fmax(lambda, pow(MS_TOLERANCE_BUCKET, (double)(b + 1)));
  ms_tolerance_query q = {.kind = MS_TRIGGER_SERVERS,
                          .max_hold = MS_TOLERANCE_MAX_STALL,
                          .stop = t->tolerance_stop,
                          .stop_ctx = t->tolerance_stop_ctx};
  bool resume = t->tolerance_resume_builds == t->landscape_builds &&
                t->tolerance_resume_bucket == b;
  if (resume) {
    q.resume = true;
    q.resume_lo = t->tolerance_resume_lo;
    q.resume_hi = t->tolerance_resume_hi;
  }
  t->tolerance_resume_builds = 0;
  ms_tolerance res;
  double v = -1.0;
  t->tolerance_searches++;
  if (ms_trigger_tolerance(&cfg, &q, &res, NULL) == MS_OK) {
    if (res.kind == MS_TOLERANCE_BOUNDED ||
        res.kind == MS_TOLERANCE_OVERLOADED || res.kind == MS_TOLERANCE_BEYOND)
      v = res.tolerance;
  } else if (res.stopped) {
    /* stopped, not failed: the bracket reached is kept, and the search
     * goes on from it in the next interval */
    t->tolerance_stopped++;
    t->tolerance_resume_builds = t->landscape_builds;
    t->tolerance_resume_bucket = b;
    t->tolerance_resume_lo = res.tolerance;
    t->tolerance_resume_hi = res.latch;
    t->tolerance_wait = 0;
    return -1.0;
  }
  tolerance_remember(t, b, v);
  return v;
}

/*
 * stall_tolerance (doc/outputs.md, "Stall tolerance"): the longest full
 * stall survived at the upper end of the 1 % bucket that holds the offered
 * load, by ms_trigger_tolerance (model/tolerance.h), searched once per bucket
 * and landscape and then taken from the tracker's cache.  The upper end
 * makes the value the same whatever load in the bucket came first, and
 * errs on the short side.  Erlang model, one tier; none below the
 * recovery load (every stall is survived), 0 above the tipping load,
 * MS_TOLERANCE_MAX_STALL when no stall up to it latches; none when the
 * search fails (a run too long for the engine's limits).  A bucket not
 * remembered is searched only MS_TOLERANCE_SEARCH_GAP intervals after the
 * service's last search; until then the nearest remembered
 * bucket above it answers (a higher load's stall tolerance: shorter, so
 * the value still errs short), or, with none above, nothing.  With
 * tolerance_defer the search is left pending for
 * ms_tracker_tolerance_search (the same answer meanwhile); a search the
 * caller's tolerance_stop ends keeps its bracket, goes on from it in the
 * next step, and until it ends the longest stall it saw survived is a
 * lower bound too (the larger of the two answers).
 */
static void stall_tolerance_report(ms_tracker *t, ms_report *r) {
  const ms_landscape *ls = &t->landscape;
  double lambda = r->analysis.offered_load;
  r->has_stall_tolerance = false;
  t->tolerance_pending = false;
  if (t->tolerance_wait > 0)
    t->tolerance_wait--;
  /* the search runs the fluid engine: none for a model it refuses */
  if (ls->params.model.kind != MS_MODEL_ERLANG ||
      ls->params.policy.tiers != 1 || !(lambda > 0) ||
      lambda < ls->recovery_load ||
      ms_sim_fluid_supports(&ls->params.model, NULL) != MS_OK)
    return;
  if (lambda > ls->tipping_load) {
    r->has_stall_tolerance = true;
    r->stall_tolerance = 0.0;
    return;
  }
  if (t->tolerance_builds != t->landscape_builds) {
    t->tolerance_n = t->tolerance_next = 0;
    t->tolerance_builds = t->landscape_builds;
    t->tolerance_wait = 0;
  }
  long b = (long)floor(log(lambda) / log(MS_TOLERANCE_BUCKET));
  double v = -1.0;
  int i, above = -1; /* the nearest remembered bucket above b */
  for (i = 0; i < t->tolerance_n; i++) {
    if (t->tolerance_bucket[i] == b)
      break;
    if (t->tolerance_bucket[i] > b &&
        (above < 0 || t->tolerance_bucket[i] < t->tolerance_bucket[above]))
      above = i;
  }
  if (i < t->tolerance_n) {
    v = t->tolerance_value[i];
  } else {
    if (t->tolerance_wait > 0 || t->tolerance_defer) {
      if (t->tolerance_wait == 0) {
        t->tolerance_pending = true;
        t->tolerance_pending_load = lambda;
        t->tolerance_pending_bucket = b;
      }
    } else {
      v = tolerance_search(t, lambda, b);
    }
    /* not known yet: the longest of the lower bounds at hand, the nearest
     * bucket above (a higher load survives less) and the longest stall a
     * stopped search of this bucket saw survived */
    if (v < 0 && above >= 0)
      v = t->tolerance_value[above];
    if (t->tolerance_resume_builds == t->landscape_builds &&
        t->tolerance_resume_bucket == b && t->tolerance_resume_lo > 0)
      v = fmax(v, t->tolerance_resume_lo);
  }
  if (v >= 0) {
    r->has_stall_tolerance = true;
    r->stall_tolerance = v;
  }
}

bool ms_tracker_tolerance_search(ms_tracker *t) {
  if (t == NULL || !t->tolerance_pending)
    return false;
  t->tolerance_pending = false;
  tolerance_search(t, t->tolerance_pending_load, t->tolerance_pending_bucket);
  return true;
}

/*
 * time_to_storm and storm_hazard (doc/outputs.md, "Storm hazard"): a
 * prediction, read from the tracker's table of ms_time_to_storm over the
 * offered load (model/hazard_table.h), begun whenever the landscape is
 * (re)built and completed in this step, or with hazard_defer by
 * ms_tracker_hazard_build after it (nothing reported until complete).
 * None outside ms_time_to_storm's domain (the capacity model, a queue
 * limit, a timeout spread...).  Below the tipping load of a pool whose
 * storm at the tipping load itself is expected only after
 * MS_HAZARD_NEGLIGIBLE_HORIZONS horizons, never: the hazard is
 * negligible up to the fold, and the fold is the answer.
 */
static void hazard_report(ms_tracker *t, const ms_service_spec *spec,
                          ms_report *r) {
  const ms_landscape *ls = &t->landscape;
  r->has_time_to_storm = r->has_storm_hazard = false;
  t->hazard_pending = false;
  if (t->hazard_builds != t->landscape_builds) {
    t->hazard_builds = t->landscape_builds;
    if (ls->params.model.kind != MS_MODEL_ERLANG ||
        ms_hazard_table_init(&t->hazard, &ls->params, ls->recovery_load,
                             ls->tipping_load, NULL) != MS_OK)
      t->hazard.valid = false;
  }
  if (!t->hazard.valid)
    return;
  if (!ms_hazard_table_complete(&t->hazard)) {
    if (t->hazard_defer) {
      t->hazard_pending = true;
      return;
    }
    ms_tracker_hazard_build(t, NULL, NULL);
    t->hazard_pending = false;
    if (!ms_hazard_table_complete(&t->hazard))
      return;
  }
  double lambda = r->analysis.offered_load, seconds;
  double horizon = ms_service_settings_of(spec).hazard_horizon;
  if (ms_hazard_table_lookup(&t->hazard, lambda, &seconds, NULL) != MS_OK)
    return;
  if (lambda <= ls->tipping_load &&
      t->hazard.fold_time >= MS_HAZARD_NEGLIGIBLE_HORIZONS * horizon)
    seconds = MS_TIME_TO_STORM_NEVER;
  double h = 0; /* never: none at all, not 1e-297 */
  if (seconds < MS_TIME_TO_STORM_NEVER &&
      ms_storm_hazard(seconds, horizon, &h, NULL) != MS_OK)
    return;
  r->has_time_to_storm = r->has_storm_hazard = true;
  r->time_to_storm = seconds;
  r->storm_hazard = h;
}

int ms_tracker_hazard_build(ms_tracker *t, int (*stop)(void *ctx), void *ctx) {
  if (t == NULL || !t->hazard.valid)
    return 0;
  int n = 0;
  t->hazard_pending = false;
  while (!ms_hazard_table_complete(&t->hazard)) {
    int built = t->hazard.built;
    if (ms_hazard_table_step(&t->hazard, &t->landscape.params, stop, ctx,
                             NULL) != MS_OK)
      return n;                     /* a pool too large: no hazard */
    if (t->hazard.built == built) { /* halted part way through a point */
      t->hazard_pending = true;
      break;
    }
    n++;
    if (stop != NULL && !ms_hazard_table_complete(&t->hazard) && stop(ctx)) {
      t->hazard_pending = true;
      break;
    }
  }
  return n;
}

/* A duration for people: "40 s", "25 min", "5.2 h", "3.1 days", "150
 * days" (not "1.5e+02 days"), "over 1000 years". */
static void human_time(char *buf, size_t len, double s) {
  if (s < 120)
    snprintf(buf, len, "%.2g s", s);
  else if (s < 7200)
    snprintf(buf, len, "%.2g min", s / 60);
  else if (s < 172800)
    snprintf(buf, len, "%.2g h", s / 3600);
  else if (s < 8640000)
    snprintf(buf, len, "%.2g days", s / 86400);
  else if (s < 1000 * 31536000.0)
    snprintf(buf, len, "%.0f days", s / 86400);
  else
    snprintf(buf, len, "over 1000 years");
}

/* WARNING once when storm_hazard passes hazard_warning (not in an interval
 * whose other notification says more, nor without a free slot: then the
 * next interval warns; not past the tipping load, where the latch WARNING
 * speaks); armed again after clear_after intervals under it.  A
 * prediction: the text says how soon, from time_to_storm. */
static void hazard_note(ms_tracker *t, const ms_service_spec *spec,
                        const ms_report *r, int clear_after, bool quiet,
                        ms_step *out) {
  if (!r->has_storm_hazard || r->analysis.state == MS_STATE_OVERLOADED)
    return;
  ms_service_settings set = ms_service_settings_of(spec);
  if (r->storm_hazard > set.hazard_warning) {
    t->hazard_calm = 0;
    bool room = out->n_notes < (int)(sizeof out->notes / sizeof out->notes[0]);
    if (t->hazard_warned || quiet || !room)
      return;
    char mean[32], horizon[32];
    human_time(mean, sizeof mean, r->time_to_storm);
    human_time(horizon, sizeof horizon, set.hazard_horizon);
    note(out, MS_NOTE_WARNING,
         "at this load a storm is expected within %s (a prediction: storm "
         "hazard %.3g%% within %s, over %.3g%%): offered %.5g req/s, "
         "tipping load %.5g req/s",
         mean, 100 * r->storm_hazard, horizon, 100 * set.hazard_warning,
         r->analysis.offered_load, r->analysis.tipping_load);
    t->hazard_warned = true;
  } else if (t->hazard_warned && ++t->hazard_calm >= clear_after) {
    t->hazard_warned = false;
    t->hazard_calm = 0;
  }
}

/* A stop that builds nothing: the first bisection of a deferring
 * tracker's step, left to ms_tracker_safe_build. */
static int build_nothing(void *ctx) {
  (void)ctx;
  return 1;
}

/* The recovery load with r retries from the tracker's cache into *v:
 * computed on first use unless stop (NULL: never) says stop.  Returns
 * false when the value is not in the cache and was not computed.  A build
 * that fails is cached as NAN: never safe, never built again on this
 * landscape. */
static bool safe_recovery(ms_tracker *t, int r, int (*stop)(void *ctx),
                          void *ctx, double *v) {
  if (t->safe_recovery[r] < 0) {
    if (stop != NULL && stop(ctx))
      return false;
    double x;
    t->safe_computed++;
    t->safe_recovery[r] =
        ms_recommend_retry_recovery(&t->landscape.params, r, &x, NULL) == MS_OK
            ? x
            : NAN;
  }
  *v = t->safe_recovery[r];
  return true;
}

/* Whether count r is safe at lambda with margin m, into *safe; false when
 * its recovery load is not at hand (safe_recovery). */
static bool safe_at(ms_tracker *t, int r, double lambda, double m,
                    int (*stop)(void *ctx), void *ctx, bool *safe) {
  double v;
  if (!safe_recovery(t, r, stop, ctx, &v))
    return false;
  *safe = ms_recommend_recovery_safe(v, lambda, m);
  return true;
}

/* The bisection of safe_retries at lambda and margin m over the cache:
 * into *best the largest safe count, -1 when not even 0 retries is safe.
 * Returns false when a recovery load it needs is not at hand (see
 * safe_recovery); the ones it had are kept for the next try. */
static bool safe_bisect(ms_tracker *t, double lambda, double m,
                        int (*stop)(void *ctx), void *ctx, int *best) {
  bool safe;
  if (!safe_at(t, 0, lambda, m, stop, ctx, &safe))
    return false;
  if (!safe) {
    *best = -1;
    return true;
  }
  int lo = 0, hi = t->safe_n - 1; /* lo safe; above hi nothing examined */
  if (!safe_at(t, hi, lambda, m, stop, ctx, &safe))
    return false;
  if (safe)
    lo = hi;
  while (hi - lo > 1) { /* lo safe, hi not */
    int mid = lo + (hi - lo) / 2;
    if (!safe_at(t, mid, lambda, m, stop, ctx, &safe))
      return false;
    if (safe)
      lo = mid;
    else
      hi = mid;
  }
  *best = lo;
  return true;
}

/*
 * safe_retries (doc/outputs.md, "Safe retries"): the largest retry count r
 * in [0, ms_recommend_retry_counts) at which the service, otherwise as the
 * model has it now, is safe at this interval's offered load with the
 * file's safety_margin (ms_recommend_recovery_safe), the answer of `metastable
 * recommend`'s max_safe_retries.  The recovery load does not grow with r
 * (more retries amplify every failure probability at least as much, so
 * the collapsed branch reaches at least as low a load; tests/check_service.c
 * holds the answer to a scan of every count), so a bisection finds r with
 * about log2(101) = 7 landscape builds, each kept until the landscape is
 * rebuilt: a steady load costs a comparison or two per interval.  The
 * count the landscape has is its own recovery load, free.  With
 * safe_defer the builds of a landscape's first bisection are left pending
 * (safe_pending) for ms_tracker_safe_build, and nothing is reported until
 * it is done, so that a first cycle costs what a steady one does; after it
 * a step builds what a load that moved needs (one or two counts) itself.
 * None when not even 0 retries is safe.
 */
static void safe_retries_report(ms_tracker *t, const ms_service_spec *spec,
                                ms_report *r) {
  r->has_safe_retries = false;
  if (t->safe_builds != t->landscape_builds) {
    t->safe_builds = t->landscape_builds;
    t->safe_n = ms_recommend_retry_counts(&t->landscape.params);
    for (int i = 0; i <= MS_RECOMMEND_MAX_RETRIES; i++)
      t->safe_recovery[i] = -1.0;
    int own = t->landscape.params.policy.retries;
    if (own >= 0 && own < t->safe_n)
      t->safe_recovery[own] = t->landscape.recovery_load;
    t->safe_ready = t->safe_pending = false;
  }
  double lambda = r->analysis.offered_load,
         m = ms_service_settings_of(spec).safety_margin;
  int best;
  t->safe_pending = false;
  if (!isfinite(lambda))
    return;
  bool wait = t->safe_defer && !t->safe_ready;
  if (!safe_bisect(t, lambda, m, wait ? build_nothing : NULL, NULL, &best)) {
    t->safe_pending = true;
    t->safe_pending_load = lambda;
    t->safe_pending_margin = m;
    return;
  }
  t->safe_ready = true;
  r->has_safe_retries = best >= 0;
  r->safe_retries = best >= 0 ? best : 0;
}

int ms_tracker_safe_build(ms_tracker *t, int (*stop)(void *ctx), void *ctx) {
  if (t == NULL || !t->safe_pending)
    return 0;
  unsigned long before = t->safe_computed;
  int best;
  if (safe_bisect(t, t->safe_pending_load, t->safe_pending_margin, stop, ctx,
                  &best)) {
    t->safe_pending = false;
    t->safe_ready = true;
  }
  return (int)(t->safe_computed - before);
}

void ms_tracker_step(ms_tracker *t, const ms_service_spec *spec,
                     const ms_inputs *in, ms_step *out) {
  memset(out, 0, sizeof *out);
  if (ms_infer(spec, in, &out->inference, &out->bad, out->problem,
               sizeof out->problem) != 0)
    return;
  ms_service_params params = spec->params;
  if (params.model.kind == MS_MODEL_ERLANG)
    params.model.servers = out->inference.servers;
  double tau = in->interval > 0 && isfinite(in->interval) ? in->interval : 0.0;
  ms_inference *inf = &out->inference;
  /* calibration (doc/design.md §1.8): the learned values in use replace the
   * file's; the landscape is rebuilt only when one moved past the
   * threshold */
  char problem[sizeof inf->calibration_problem];
  ms_calibration_update(&t->calibration, spec,
                        t->has_landscape ? &t->landscape : NULL, t->storm, inf,
                        tau > 0 ? tau : 1.0, &params, out->info,
                        sizeof out->info, problem, sizeof problem);
  if (inf->calibration_problem[0] == '\0' && problem[0] != '\0')
    memcpy(inf->calibration_problem, problem, sizeof problem);
  ms_error err;
  if (!t->has_landscape || !same_params(&t->landscape.params, &params)) {
    double old_tip = t->has_landscape ? t->landscape.tipping_load : NAN;
    if (ms_landscape_build(&params, &t->landscape, &err) != MS_OK) {
      t->has_landscape = false;
      out->bad = MS_INPUT_COUNT;
      snprintf(out->problem, sizeof out->problem, "model: %s", err.msg);
      return;
    }
    t->has_landscape = true;
    t->landscape_builds++;
    size_t n = strlen(out->info);
    if (n > 0 && isfinite(old_tip) && n < sizeof out->info)
      snprintf(out->info + n, sizeof out->info - n,
               "; the model uses it now: tipping load %.5g -> %.5g req/s",
               old_tip, t->landscape.tipping_load);
  }
  ms_observation obs = {
      .offered_load = inf->offered_load,
      .has_observed_attempts = inf->has_observed_attempts,
      .observed_attempts = inf->observed_attempts,
      .has_observed_failure = inf->has_observed_failure,
      .observed_failure = inf->observed_failure,
      .has_previous = t->has_state,
      .previous = t->state,
      .previous_storm = t->storm,
      .interval = tau,
      .has_queue_length = inf->has_queue_length,
      .queue_length = inf->queue_length,
  };
  if (ms_analyze(&t->landscape, &obs, &out->report.analysis, &err) != MS_OK) {
    out->bad = MS_INPUT_COUNT;
    snprintf(out->problem, sizeof out->problem, "model: %s", err.msg);
    return;
  }
  out->ok = true;
  out->report.reporting = 1;
  ms_calibration_report(&t->calibration, spec, &t->landscape, inf,
                        tau > 0 ? tau : 1.0, &out->report);
  stall_tolerance_report(t, &out->report);
  hazard_report(t, spec, &out->report);
  safe_retries_report(t, spec, &out->report);
  const ms_report *r = &out->report;
  /* Notifications have hysteresis in time: a storm is announced at once,
   * but announced over only after clear_after intervals without one, so a
   * storm flag that flaps with noisy load pages once, not every interval.
   * The same holds for the warnings.  Messages stay under collectd's
   * 256-byte notification limit; the service is the plugin instance of
   * the notification. */
  int clear_after = ms_service_settings_of(spec).clear_after;
  bool failure = storm_notes(t, r, clear_after, out);
  bool latch = latch_note(t, r, obs.interval, clear_after, out);
  headroom_note(t, spec, r, clear_after, failure || latch, out);
  hazard_note(t, spec, r, clear_after, failure || latch || r->analysis.storm,
              out);
  char misfit[256];
  bool room = out->n_notes < (int)(sizeof out->notes / sizeof out->notes[0]);
  if (ms_calibration_misfit(&t->calibration, spec, &t->landscape, r, t->storm,
                            clear_after, room, misfit, sizeof misfit))
    note(out, MS_NOTE_WARNING, "%s", misfit);
  t->state = r->analysis.state;
  t->storm = r->analysis.storm != 0;
  t->has_state = true;
}
