/* SPDX-License-Identifier: MIT */
/*
 * metastable plan: the statement a capacity plan must make about the
 * retry loop, in units (doc/design.md §1.10): the retry amplification at
 * the base failure rate, the load at which retries begin to fire, the
 * tipping and recovery loads, the in-flight capacity while a dependency
 * times out, the queue bound admission control should enforce, the load at
 * which a health check starts removing replicas, and the worst-case
 * amplification of the tiers.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "json.h"

static const char usage[] =
    "Usage: metastable plan [MODEL OPTIONS] [--latency-objective D]\n"
    "                       [--health-check-timeout H]\n"
    "                       [--health-check-tolerance F] [--load PEAK]\n"
    "                       [--hazard-horizon D] [--max-hazard H]\n"
    "                       [--format text|json]\n"
    "\n"
    "The capacity plan of one service in units: retry amplification at the\n"
    "base failure rate, the offered load at which retries begin to fire\n"
    "(1 % of attempts failing from overload), the tipping and recovery\n"
    "loads, the in-flight capacity while a dependency times out (servers /\n"
    "timeout), the queue bound for admission control (throughput x latency\n"
    "objective), the load at which a health check starts removing replicas,\n"
    "the worst-case amplification of the tiers, and how often a storm\n"
    "starts by itself at the peak load and at the tipping load (a\n"
    "prediction of the model, doc/design.md 1.12).  The text is sentences\n"
    "for a design document.\n";

/* The share of attempts failing from overload at which the plan says
 * retries begin to fire (doc/design.md §1.10). */
#define RETRY_ONSET_SHARE 0.01

enum {
  OPT_HC_TIMEOUT = MS_OPT_SHARED_END,
  OPT_HC_TOLERANCE,
};

static const ms_cli_option options[] = {
    MS_CLI_SHARED(MS_OPT_OBJECTIVE),
    {"--health-check-timeout", "H", OPT_HC_TIMEOUT,
     "the health check's timeout, s (default: the timeout)"},
    {"--health-check-tolerance", "F", OPT_HC_TOLERANCE,
     "the share of failed checks the balancer tolerates before it removes a "
     "replica, (0, 1) (default 1 %)"},
    {"--load", "PEAK", MS_OPT_LOAD,
     "the peak offered load, requests/s, >= 0: how often a storm starts by "
     "itself there"},
    MS_CLI_SHARED(MS_OPT_HAZARD_HORIZON),
    MS_CLI_SHARED(MS_OPT_MAX_HAZARD),
    MS_CLI_SHARED(MS_OPT_FORMAT),
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

typedef struct {
  ms_cli_shared sh; /* --latency-objective, --load, --hazard-horizon,
                       --max-hazard, --format */
  double hc_timeout, hc_tolerance; /* NaN: default */
  bool help;
} plan_args;

static int take_option(void *args, int c, const char *arg) {
  plan_args *a = args;
  switch (c) {
  case OPT_HC_TIMEOUT:
    return ms_cli_duration("--health-check-timeout", arg, 0.0, MS_MAX_DURATION,
                           MS_RANGE_CLOSED, &a->hc_timeout);
  case OPT_HC_TOLERANCE:
    return ms_cli_share("--health-check-tolerance", arg, 0.0, 1.0,
                        MS_RANGE_LO_OPEN | MS_RANGE_HI_OPEN, &a->hc_tolerance);
  default:
    return ms_cli_shared_option(&a->sh, c, arg);
  }
}

/* The plan's numbers; NaN where a quantity does not apply (JSON null). */
typedef struct {
  double base, idle, amp_base;             /* idle: p(0), the base and, with the
                                             timeout on the response, what the
                                             service alone outlasts */
  double onset_share, onset_x, onset_load; /* onset_load NaN: not healthy */
  bool onset_found;
  double tipping, recovery, band, capacity;
  double inflight, inflight_ratio;
  double latency_objective, queue_bound;
  double hc_timeout, hc_tolerance, hc_x, hc_load;
  const char *hc_why; /* why the health check is not evaluated, or NULL */
  double worst, storm_amp;
  /* the storm hazard (doc/design.md §1.12) at the peak (--load; peak NaN
   * without it) and at the tipping load */
  double peak, horizon, max_hazard;
  ms_cli_hazard at_peak;
  ms_cli_fold fold; /* at the tipping load, and the load under max_hazard */
} plan;

/* Retries begin to fire where 1 % of attempts fail from overload, on the
 * healthy branch (below the tipping point's effective load). */
static int plan_onset(const ms_landscape *ls, plan *p, ms_error *err) {
  const ms_service_params *s = &ls->params;
  double x_hi =
      ls->has_fold ? ls->tipping_effective_load : 1e6 * ls->saturation_load;
  p->onset_share = RETRY_ONSET_SHARE;
  double target = 1.0 - (1.0 - p->idle) * (1.0 - RETRY_ONSET_SHARE);
  int rc =
      ms_failure_onset_load(s, target, x_hi, &p->onset_x, &p->onset_found, err);
  if (rc != MS_OK)
    return rc;
  p->onset_load = NAN;
  if (p->onset_found)
    return ms_offered_load_at(s, p->onset_x, &p->onset_load, err);
  p->onset_x = NAN;
  return MS_OK;
}

static int plan_health_check(const ms_landscape *ls, plan *p, ms_error *err) {
  const ms_failure_model *m = &ls->params.model;
  p->hc_x = p->hc_load = NAN;
  p->hc_why = NULL;
  if (m->kind != MS_MODEL_ERLANG) {
    p->hc_why = "the capacity model has no response time";
    return MS_OK;
  }
  if (m->has_queue_limit) {
    p->hc_why = "derived for an unbounded queue; this service has a queue "
                "limit";
    return MS_OK;
  }
  if (m->has_service_time_cv && m->service_time_cv != 1.0) {
    p->hc_why = "derived for exponential service times; this service has "
                "service_time_cv";
    return MS_OK;
  }
  if (isnan(p->hc_timeout))
    p->hc_timeout = m->timeout;
  int rc =
      ms_health_check_load(m, p->hc_timeout, p->hc_tolerance, &p->hc_x, err);
  if (rc != MS_OK)
    return rc;
  /* the healthy branch reaches x only below the tipping point */
  if (ls->has_fold && p->hc_x > ls->tipping_effective_load)
    return MS_OK;
  return ms_offered_load_at(&ls->params, p->hc_x, &p->hc_load, err);
}

static int plan_compute(const ms_landscape *ls, plan *p, ms_error *err) {
  const ms_service_params *s = &ls->params;
  const ms_failure_model *m = &s->model;
  p->base = m->base_failure;
  int rc = ms_failure_probability(m, 0.0, &p->idle, err);
  if (rc != MS_OK)
    return rc;
  p->tipping = ls->tipping_load;
  p->recovery = ls->recovery_load;
  p->band = ls->tipping_load - ls->recovery_load;
  p->capacity = ls->saturation_load;
  /* a load-dependent policy (Envoy, Finagle's reserve) needs a load: the
   * tipping load, the edge of the healthy branch */
  rc = ms_amplification_at(s, p->idle, ls->tipping_load, &p->amp_base, err);
  if (rc != MS_OK)
    return rc;
  if ((rc = plan_onset(ls, p, err)) != MS_OK)
    return rc;
  p->inflight = p->inflight_ratio = NAN;
  if (m->kind == MS_MODEL_ERLANG && m->timeout > 0.0) {
    if ((rc = ms_inflight_capacity(m, &p->inflight, err)) != MS_OK)
      return rc;
    p->inflight_ratio = p->inflight / p->capacity;
  }
  if (isnan(p->latency_objective) && m->kind == MS_MODEL_ERLANG)
    p->latency_objective = m->timeout;
  p->queue_bound = round(p->capacity * p->latency_objective);
  if ((rc = plan_health_check(ls, p, err)) != MS_OK)
    return rc;
  p->worst = ms_worst_amplification(&s->policy);
  rc = ms_amplification_at(s, 1.0, ls->recovery_load, &p->storm_amp, err);
  if (rc != MS_OK)
    return rc;
  p->at_peak = (ms_cli_hazard){.seconds = NAN, .hazard = NAN};
  if (!isnan(p->peak))
    ms_cli_hazard_at(s, p->peak, p->horizon, &p->at_peak);
  ms_cli_hazard_fold(s, ls->recovery_load, ls->tipping_load, p->horizon,
                     p->max_hazard, &p->fold);
  return MS_OK;
}

/* How often a storm starts by itself: at the peak, and whether the fold
 * is the answer. */
static void text_hazard(const plan *p) {
  char t[64], hz[96], mx[96];
  if (!isnan(p->peak) && !p->at_peak.ok) {
    printf("- Storms by themselves at the peak: not modelled (%s).\n",
           p->at_peak.why);
  } else if (!isnan(p->peak) && p->at_peak.never) {
    printf("- At the peak of %.6g req/s, no storm starts by itself "
           "(a prediction: %s).\n",
           p->peak,
           p->peak < p->recovery ? "below the recovery load there is none to "
                                   "fall into"
                                 : "the time to one is over 1e300 s");
  } else if (!isnan(p->peak)) {
    printf("- At the peak of %.6g req/s, a storm %s from a healthy pool (a "
           "prediction: %s).\n",
           p->peak, ms_cli_every(t, sizeof t, p->at_peak.seconds),
           ms_cli_hazard_phrase(hz, sizeof hz, p->at_peak.hazard, p->horizon));
  }
  if (!p->fold.tip.ok) {
    if (isnan(p->peak))
      printf("- Storms by themselves: not modelled (%s).\n", p->fold.tip.why);
    return;
  }
  ms_cli_every(t, sizeof t, p->fold.tip.seconds);
  ms_cli_hazard_phrase(hz, sizeof hz, p->fold.tip.hazard, p->horizon);
  ms_cli_hazard_phrase(mx, sizeof mx, p->max_hazard, p->horizon);
  if (p->fold.fold_answer)
    printf("- Up to the tipping load a storm by itself stays under %s (at "
           "the tipping load, %s): plan to the tipping "
           "load.\n",
           mx, t);
  else
    printf("- At the tipping load a storm by itself comes %s (%s): plan below "
           "%.4g req/s, where it is under %s.\n",
           t, hz, p->fold.hazard_load, mx);
}

static void text_onset(const plan *p) {
  if (p->onset_found)
    printf("- Retries begin to fire at an offered load of %.4g req/s "
           "(%.4g attempts/s): there %.3g %% of attempts fail from "
           "overload, beyond those of an idle pool.\n",
           p->onset_load, p->onset_x, 100 * p->onset_share);
  else
    printf("- Retries do not begin to fire on the healthy branch: below "
           "the tipping load fewer than %.3g %% of attempts fail from "
           "overload; the service tips before they do.\n",
           100 * p->onset_share);
}

static void text_health_check(const plan *p) {
  if (p->hc_why != NULL)
    printf("- Health check: not evaluated (%s).\n", p->hc_why);
  else if (p->hc_x == 0)
    printf("- A health check with a %.4g s timeout fails more than %.3g %% "
           "of the time even on an idle replica: it removes healthy "
           "replicas at any load.\n",
           p->hc_timeout, 100 * p->hc_tolerance);
  else if (isnan(p->hc_load))
    printf("- A health check with a %.4g s timeout fails more than %.3g %% "
           "of the time only above %.4g attempts/s, beyond the tipping "
           "point: it removes replicas only in a storm.\n",
           p->hc_timeout, 100 * p->hc_tolerance, p->hc_x);
  else
    printf("- A health check with a %.4g s timeout starts removing replicas "
           "at an offered load of %.4g req/s (%.4g attempts/s): there more "
           "than %.3g %% of responses take longer than %.4g s.\n",
           p->hc_timeout, p->hc_load, p->hc_x, 100 * p->hc_tolerance,
           p->hc_timeout);
}

static void write_text(const ms_cli_model *m, const plan *p) {
  const ms_retry_policy *pol = &m->params.policy;
  printf("Capacity plan for %s.\n\n", m->label);
  if (p->idle > p->base)
    printf("- Retry amplification on an idle pool: %.6g attempt%s per "
           "request; %.4g %% of attempts fail there (base failure %.4g %%, "
           "the rest responses that outlast the timeout).\n",
           p->amp_base, p->amp_base == 1 ? "" : "s", 100 * p->idle,
           100 * p->base);
  else
    printf("- Retry amplification at the base failure rate (%.4g %%): %.6g "
           "attempt%s per request.\n",
           100 * p->base, p->amp_base, p->amp_base == 1 ? "" : "s");
  text_onset(p);
  if (p->band > 0)
    printf("- Tipping load %.6g req/s: above it the healthy equilibrium is "
           "gone.  Recovery load %.6g req/s: a storm ends only below it.  "
           "The band between them is %.6g req/s wide.\n",
           p->tipping, p->recovery, p->band);
  else
    printf("- Tipping load %.6g req/s, recovery load %.6g req/s: no band, "
           "the loop reaches capacity there without hysteresis.\n",
           p->tipping, p->recovery);
  if (!isnan(p->inflight))
    printf("- In-flight capacity while a dependency times out: %ld slots / "
           "%.4g s = %.4g requests/s, %.3g of the normal capacity of %.6g "
           "requests/s.\n",
           m->params.model.servers, m->params.model.timeout, p->inflight,
           p->inflight_ratio, p->capacity);
  else
    printf("- In-flight capacity while a dependency times out: not "
           "modelled (the capacity model has no pool and no timeout).\n");
  if (!isnan(p->queue_bound))
    printf("- Queue bound for admission control: %.6g req/s x %.4g s = %.6g "
           "requests waiting.\n",
           p->capacity, p->latency_objective, p->queue_bound);
  else
    printf("- Queue bound for admission control: give the latency "
           "objective (--latency-objective D).\n");
  text_health_check(p);
  printf("- Worst-case amplification of the tiers: %.6g attempt%s per "
         "request (%d tier%s",
         p->worst, p->worst == 1 ? "" : "s", pol->tiers,
         pol->tiers == 1 ? "" : "s");
  if (!pol->has_tier_retries)
    printf(" of %d retries: (%d + 1)^%d", pol->retries, pol->retries,
           pol->tiers);
  printf("); the policy allows %.6g in a full storm.\n", p->storm_amp);
  text_hazard(p);
}

static void write_json(const ms_cli_model *m, const plan *p) {
  ms_json j;
  ms_cli_json_begin(&j, 1, m);
  ms_json_number(&j, "base_failure", p->base);
  ms_json_number(&j, "idle_failure", p->idle);
  ms_json_number(&j, "retry_amplification", p->amp_base);
  ms_json_number(&j, "retry_onset_share", p->onset_share);
  ms_json_number(&j, "retry_onset_load", p->onset_load);
  ms_json_number(&j, "retry_onset_effective_load", p->onset_x);
  ms_json_number(&j, "tipping_load", p->tipping);
  ms_json_number(&j, "recovery_load", p->recovery);
  ms_json_number(&j, "band_width", p->band);
  ms_json_number(&j, "capacity", p->capacity);
  ms_json_number(&j, "inflight_capacity", p->inflight);
  ms_json_number(&j, "inflight_ratio", p->inflight_ratio);
  ms_json_number(&j, "latency_objective", p->latency_objective);
  ms_json_number(&j, "queue_bound", p->queue_bound);
  ms_json_number(&j, "health_check_timeout", p->hc_timeout);
  ms_json_number(&j, "health_check_tolerance", p->hc_tolerance);
  ms_json_number(&j, "health_check_effective_load", p->hc_x);
  ms_json_number(&j, "health_check_load", p->hc_load);
  ms_json_number(&j, "worst_case_amplification", p->worst);
  ms_json_number(&j, "storm_amplification", p->storm_amp);
  ms_json_number(&j, "peak_load", p->peak);
  ms_json_number(&j, "hazard_horizon", p->horizon);
  ms_json_number(&j, "max_hazard", p->max_hazard);
  ms_json_number(&j, "time_to_storm", p->at_peak.seconds);
  ms_json_number(&j, "storm_hazard", p->at_peak.hazard);
  ms_json_number(&j, "tipping_time_to_storm", p->fold.tip.seconds);
  ms_json_number(&j, "tipping_storm_hazard", p->fold.tip.hazard);
  ms_json_bool(&j, "fold_is_answer", p->fold.fold_answer);
  ms_json_number(&j, "hazard_load", p->fold.hazard_load);
  const char *why = !isnan(p->peak) && !p->at_peak.ok ? p->at_peak.why
                    : !p->fold.tip.ok                 ? p->fold.tip.why
                                                      : NULL;
  if (why)
    ms_json_string(&j, "hazard_note", why);
  else
    ms_json_null(&j, "hazard_note");
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

static int run(ms_cli_model *m, int argc, char **argv) {
  plan_args a = {.hc_timeout = NAN, .hc_tolerance = 0.01};
  ms_cli_shared_init(&a.sh, MS_FORMAT_TEXT, MS_FORMATS_TEXT_JSON);
  int r = ms_cli_parse(argc, argv, &syntax, m, take_option, &a, &a.help, NULL);
  if (r != 0 || a.help)
    return r;
  ms_landscape ls;
  if ((r = ms_cli_model_landscape(m, &ls)) != 0)
    return r;
  ms_error err;
  plan p = {.latency_objective = a.sh.latency_objective,
            .hc_timeout = a.hc_timeout,
            .hc_tolerance = a.hc_tolerance,
            .peak = a.sh.load,
            .horizon = a.sh.hazard_horizon,
            .max_hazard = a.sh.max_hazard};
  if (plan_compute(&ls, &p, &err) != MS_OK)
    return ms_cli_fail("model: %s", err.msg);
  if (a.sh.format == MS_FORMAT_JSON)
    write_json(m, &p);
  else
    write_text(m, &p);
  return ms_cli_finish_output(MS_EXIT_OK);
}

int ms_cmd_plan(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
