/* SPDX-License-Identifier: MIT */
/*
 * metastable solve: every equilibrium of one service at one offered load,
 * its tipping and recovery loads, and its state (doc/design.md §1.3-1.5),
 * computed by ms_landscape_build and ms_analyze exactly as the plugin does.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "exact.h"
#include "json.h"
#include "report.h"

static const char usage[] =
    "Usage: metastable solve [MODEL OPTIONS] [--hazard-horizon D]\n"
    "                        [--max-hazard H] [--format text|json]\n"
    "       metastable solve [MODEL OPTIONS] --load L [--observed-load X]\n"
    "                        [--observed-failure P] [--previous STATE]\n"
    "                        [--previous-storm 0|1] [--interval S]\n"
    "                        [--queue-length Q] [--format text|json]\n"
    "                        [--hazard-horizon D] [--max-hazard H]\n"
    "\n"
    "Without --load: the landscape of the service, its tipping and recovery\n"
    "loads, the bistable band between them and the saturation load.\n"
    "With --load: every equilibrium of the retry loop x = L * A(p(x)) at\n"
    "offered load L, the tipping and recovery loads, the headroom and the\n"
    "state, and the time to a storm with the storm hazard within the\n"
    "horizon (a prediction of the model, doc/design.md 1.12).  The options\n"
    "below but --format and the hazard's need --load.\n";

enum {
  OPT_OBSERVED_LOAD = MS_OPT_SHARED_END,
  OPT_OBSERVED_FAILURE,
  OPT_PREVIOUS,
  OPT_PREVIOUS_STORM,
  OPT_INTERVAL,
  OPT_QUEUE_LENGTH,
};

static const ms_cli_option options[] = {
    MS_CLI_SHARED(MS_OPT_LOAD),
    {"--observed-load", "X", OPT_OBSERVED_LOAD,
     "observed attempts/s reaching the service: decides the basin in the "
     "bistable band"},
    {"--observed-failure", "P", OPT_OBSERVED_FAILURE,
     "observed failed share of attempts, [0, 1]"},
    {"--previous", "STATE", OPT_PREVIOUS,
     "last state (stable, vulnerable, metastable, overloaded): keeps its "
     "side of the recovery and tipping loads while the load is within the "
     "noise of them, and decides the basin when nothing is observed; "
     "default none (cold start: healthy)"},
    {"--previous-storm", "0|1", OPT_PREVIOUS_STORM,
     "last storm flag (default: 1 for metastable and overloaded): a storm "
     "goes on while observed failures exceed the healthy level"},
    {"--interval", "S", OPT_INTERVAL,
     "seconds the observed rates and the load cover (noise of the counts; "
     "default 1 s)"},
    {"--queue-length", "Q", OPT_QUEUE_LENGTH,
     "requests waiting: gives the drain time"},
    MS_CLI_SHARED(MS_OPT_HAZARD_HORIZON),
    MS_CLI_SHARED(MS_OPT_MAX_HAZARD),
    {"--format", "text|json", MS_OPT_FORMAT,
     "text (default) or one JSON object with the keys the plugin dispatches, "
     "the model load and an \"equilibria\" array"},
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

static const char *state_story(const ms_report *r) {
  switch (r->analysis.state) {
  case MS_STATE_STABLE:
    /* one equilibrium; healthy unless the timeout alone fails most
     * attempts (a timeout on the response shorter than the service) */
    if (r->analysis.equilibria > 0 &&
        r->analysis.eq[0].failure_probability >= 0.5)
      return "below the recovery load, only one equilibrium exists, and it "
             "fails most attempts at any load: the timeout is too short for "
             "the service (see check)";
    return "below the recovery load, only the healthy equilibrium exists";
  case MS_STATE_VULNERABLE:
    return "between the recovery and the tipping load, in the healthy "
           "basin; a spike past the unstable equilibrium would start a "
           "storm that outlasts it";
  case MS_STATE_METASTABLE:
    return "between the recovery and the tipping load, in the collapsed "
           "basin; the retries sustain the storm until the load falls below "
           "the recovery load";
  case MS_STATE_OVERLOADED:
    return "above the tipping load, only the collapsed equilibrium exists";
  }
  return "";
}

/* Why a storm goes on in a state without one (recovering), in words that
 * agree with the equilibria listed: none collapsed at this load, or the
 * observations on the healthy side of the unstable one. */
static const char *recovering_story(const ms_report *r) {
  bool collapsed_listed = false;
  for (int i = 1; i < r->analysis.equilibria; i++)
    collapsed_listed = collapsed_listed || r->analysis.eq[i].stable;
  if (r->analysis.state == MS_STATE_VULNERABLE)
    return " (recovering: the observations are on the healthy side of the "
           "unstable equilibrium, but attempts still fail beyond the healthy "
           "level)";
  if (!collapsed_listed)
    return " (recovering: no collapsed equilibrium at this load, but attempts "
           "still fail while the backlog the storm left drains)";
  return " (recovering: attempts still fail)";
}

/* The share of the operating point's failures that are rejections the
 * clients retry: P_block(x) / p(x) at its effective load x, 0 without a
 * queue limit, with final rejections or without retries.  The model takes
 * such a retry as independent of the rejection before it; it is not (it
 * comes while the queue is still full, and rejected requests crowd the
 * periods when it is full), and no closed form holds (doc/design.md §1.9):
 * the larger the share, the more the discrete-event engine is the answer. */
static double retried_rejection_share(const ms_service_params *s,
                                      const ms_analysis *an) {
  const ms_failure_model *fm = &s->model;
  double x = an->effective_load, p = an->failure_probability;
  if (fm->kind != MS_MODEL_ERLANG || !fm->has_queue_limit ||
      fm->rejections_final || s->policy.retries == 0 || !(p > 0.0) ||
      !(x / fm->service_rate >= MS_MMCK_MIN_TRAFFIC))
    return 0.0;
  double ln_block;
  ms_error err;
  if (ms_mmck_ln_block(fm->servers, fm->queue_limit, x / fm->service_rate,
                       &ln_block, &err) != MS_OK)
    return 0.0;
  return fmin(1.0, exp(ln_block) / p);
}

/* The retrial queue's answer for solve (model/retrial.h, doc/design.md
 * §1.9): the attempts per request at the offered load, and the tipping
 * and recovery loads, when rejected attempts are retried soon after, as
 * the chain takes them. */
typedef struct {
  bool has_backoff;         /* the service file gives the clients' backoff */
  bool ok;                  /* attempts is the chain's answer */
  double attempts;          /* attempts per request, >= 1 */
  bool loads_ok;            /* tipping and recovery are the chain's */
  double tipping, recovery; /* req/s */
  char why[256];            /* when !ok with a backoff: why there is none */
  char loads_why[256];      /* when !loads_ok with a backoff: the same */
} retrial_answer;

/* load: the offered load, req/s, or NaN for the landscape alone. */
static void retrial_solve(const ms_cli_model *m, double load,
                          retrial_answer *out) {
  memset(out, 0, sizeof *out);
  const ms_service_params *s = &m->params;
  const ms_failure_model *fm = &s->model;
  if (fm->kind != MS_MODEL_ERLANG || !fm->has_queue_limit ||
      fm->rejections_final || s->policy.retries == 0)
    return;
  out->has_backoff = m->spec != NULL && m->spec->has_backoff;
  if (!out->has_backoff)
    return;
  const char *unlike = ms_cli_retrial_unlike(s);
  if (unlike) {
    snprintf(out->why, sizeof out->why, "the retrial queue does not model %s",
             unlike);
    snprintf(out->loads_why, sizeof out->loads_why, "%s", out->why);
    return;
  }
  ms_error err;
  if (ms_retrial_loads(fm->servers, fm->service_rate, fm->queue_limit,
                       fm->timeout, fm->timeout_spread, fm->timeout_covers,
                       s->policy.retries, &m->spec->backoff, &out->tipping,
                       &out->recovery, &err) != MS_OK)
    snprintf(out->loads_why, sizeof out->loads_why, "the %s", err.msg);
  else
    out->loads_ok = true;
  if (isnan(load))
    return;
  if (!(load > 0.0)) {
    snprintf(out->why, sizeof out->why,
             "the retrial queue does not model no offered load");
    return;
  }
  ms_retrial_result res;
  if (ms_retrial_attempts(fm->servers, fm->service_rate, fm->queue_limit,
                          fm->timeout, fm->timeout_spread, fm->timeout_covers,
                          s->policy.retries, &m->spec->backoff, load, &res,
                          &err) != MS_OK) {
    snprintf(out->why, sizeof out->why, "the %s", err.msg);
    return;
  }
  out->ok = true;
  out->attempts = res.attempts;
}

/* The retrial queue's loads, one text line (label: the column's).  Two
 * loads within two bisection widths are one: no band, the attempts
 * climb to capacity there without a fold. */
static void write_retrial_loads_text(const char *label,
                                     const retrial_answer *rq) {
  if (!rq->loads_ok) {
    if (rq->has_backoff && rq->loads_why[0])
      printf("%snone: %s\n", label, rq->loads_why);
    return;
  }
  if (rq->tipping - rq->recovery <= 2 * MS_RETRIAL_LOAD_REL * rq->tipping)
    printf("%sno band: the attempts reach the servers' capacity at %.6g "
           "req/s with the clients' backoff (the retrial queue, "
           "doc/design.md 1.9)\n",
           label, rq->tipping);
  else
    printf("%stipping %.6g req/s, recovery %.6g req/s with the clients' "
           "backoff: the retrial queue, whose retries soon after a "
           "rejection find the queue still full (doc/design.md 1.9); "
           "advice: the state and the plugin keep the M/M/c/K loads\n",
           label, rq->tipping, rq->recovery);
}

static void write_retrial_loads_json(ms_json *j, const retrial_answer *rq) {
  if (rq->loads_ok) {
    ms_json_number(j, "retrial_tipping_load", rq->tipping);
    ms_json_number(j, "retrial_recovery_load", rq->recovery);
  } else {
    ms_json_null(j, "retrial_tipping_load");
    ms_json_null(j, "retrial_recovery_load");
  }
}

/* The storm hazard at the offered load and at the tipping load
 * (doc/design.md §1.12): the fold is the answer when the hazard within the
 * horizon stays under --max-hazard up to it. */
typedef struct {
  ms_cli_hazard at;
  ms_cli_fold fold;
  double horizon, max_hazard, tipping; /* s, share, req/s */
} hazard_answer;

static void hazard_solve(const ms_cli_model *m, const ms_landscape *ls,
                         double load, const ms_cli_shared *sh,
                         hazard_answer *h) {
  h->horizon = sh->hazard_horizon;
  h->max_hazard = sh->max_hazard;
  h->tipping = ls->tipping_load;
  if (isnan(load))
    h->at = (ms_cli_hazard){.seconds = NAN, .hazard = NAN};
  else
    ms_cli_hazard_at(&m->params, load, h->horizon, &h->at);
  ms_cli_hazard_fold(&m->params, ls->recovery_load, ls->tipping_load,
                     h->horizon, h->max_hazard, &h->fold);
}

/* The fold line: the hazard at the tipping load, and whether the tipping
 * load is the answer.  label is the line's label, padded. */
static void write_fold_text(const char *label, const hazard_answer *h) {
  char t[64], hz[96], mx[96];
  if (!h->fold.tip.ok)
    return;
  ms_cli_every(t, sizeof t, h->fold.tip.seconds);
  ms_cli_hazard_phrase(hz, sizeof hz, h->fold.tip.hazard, h->horizon);
  ms_cli_hazard_phrase(mx, sizeof mx, h->max_hazard, h->horizon);
  if (h->fold.fold_answer)
    printf("%sat the tipping load %.6g req/s a storm %s (%s): "
           "under %s up to it, so the tipping load is the answer\n",
           label, h->tipping, t, hz, mx);
  else
    printf("%sat the tipping load %.6g req/s a storm %s (%s): "
           "storms come before the fold, under %s below %.6g req/s\n",
           label, h->tipping, t, hz, mx, h->fold.hazard_load);
}

static void write_hazard_text(const hazard_answer *h, const ms_report *r) {
  char t[48], hz[96];
  if (!h->at.ok) {
    printf("time to storm  not modelled: %s\n", h->at.why);
    return;
  }
  if (h->at.never)
    printf("time to storm  never (a prediction): %s\n",
           r->analysis.offered_load < r->analysis.recovery_load
               ? "below the recovery load there is no storm to fall into"
               : "a storm is later than any horizon at this load (over "
                 "1e300 s)");
  else
    printf("time to storm  %.4g s on average from a healthy pool: a storm %s "
           "(a prediction of the model)\n",
           h->at.seconds, ms_cli_every(t, sizeof t, h->at.seconds));
  printf("storm hazard   %s\n",
         ms_cli_hazard_phrase(hz, sizeof hz, h->at.hazard, h->horizon));
  if (h->fold.fold_answer)
    write_fold_text("fold           ", h);
}

static void write_text(const ms_cli_model *m, const ms_landscape *ls,
                       const ms_report *r, bool has_queue,
                       const hazard_answer *hz) {
  double lm = r->analysis.model_load;
  printf("service        %s\n", m->label);
  printf("offered load   %.6g req/s\n", r->analysis.offered_load);
  if (lm != r->analysis.offered_load)
    printf("model load     %.6g req/s, the %s load: the offered load is "
           "within the noise of its count, so the state keeps its side\n",
           lm, lm == ls->recovery_load ? "recovery" : "tipping");
  printf("\nEquilibria at %.6g req/s, ascending:\n", lm);
  printf("  %16s  %14s  %13s  %s\n", "effective load", "failure prob.",
         "amplification", "stability");
  int op = r->analysis.collapsed_basin ? r->analysis.equilibria - 1 : 0;
  for (int i = 0; i < r->analysis.equilibria; i++) {
    const ms_equilibrium *e = &r->analysis.eq[i];
    const char *note = "";
    if (i == op)
      note = "<- operating point";
    else if (!e->stable)
      note = "(boundary between the basins)";
    printf("  %12.6g /s  %14.6g  %13.6g  %s%s%s\n", e->effective_load,
           e->failure_probability, e->amplification,
           e->stable ? "stable" : "unstable", *note ? "  " : "", note);
  }
  printf("\n");
  if (ls->has_fold && ls->tipping_load > ls->recovery_load) {
    printf("tipping load   %.6g req/s (the healthy equilibrium disappears "
           "above it)\n",
           r->analysis.tipping_load);
    printf("recovery load  %.6g req/s (the collapsed equilibrium "
           "disappears below it)\n",
           r->analysis.recovery_load);
  } else {
    printf("tipping load   %.6g req/s (the loop reaches capacity above it; "
           "no hysteresis band)\n",
           r->analysis.tipping_load);
    printf("recovery load  %.6g req/s\n", r->analysis.recovery_load);
  }
  printf("headroom       %.6g req/s, %.3g %% of the tipping load\n",
         r->analysis.tipping_distance, 100 * r->analysis.tipping_headroom);
  printf("state          %s: %s\n", ms_state_name(r->analysis.state),
         state_story(r));
  const char *why = "";
  if (r->analysis.state == MS_STATE_OVERLOADED && !r->analysis.storm)
    why = " (above the tipping load, nothing failing yet: the next trigger "
          "latches)";
  else if (r->analysis.recovering)
    why = recovering_story(r);
  printf("storm          %s%s\n", r->analysis.storm ? "yes" : "no", why);
  if (r->analysis.storm && r->analysis.shed_load > 0)
    printf("shed load      %.6g req/s to end the storm\n",
           r->analysis.shed_load);
  else if (r->analysis.storm)
    printf("shed load      0 req/s: the storm ends as the backlog drains\n");
  write_hazard_text(hz, r);
  if (r->analysis.has_drain_time)
    printf("drain time     %.6g s to serve the queue at this load\n",
           r->analysis.drain_time);
  else if (has_queue)
    printf("drain time     never: the queue grows at this load\n");
  /* the root is accurate to a few ulps: do not show -1e-13 attempts/s
   * of self-inflicted load to a person */
  double self = r->analysis.self_inflicted_load;
  if (fabs(self) < 1e-9 * fmax(r->analysis.offered_load, 1e-300))
    self = 0;
  printf("effective load %.6g attempts/s%s: %.6g self-inflicted, "
         "amplification %.6g, failure probability %.4g, utilization %.4g "
         "%%\n",
         r->analysis.effective_load,
         r->analysis.certified ? " (certified by an exact enclosure)" : "",
         self, r->analysis.amplification, r->analysis.failure_probability,
         100 * r->analysis.utilization);
  retrial_answer rq;
  retrial_solve(m, r->analysis.offered_load, &rq);
  double share = retried_rejection_share(&m->params, &r->analysis);
  if (rq.ok)
    printf("retrial queue  %.6g attempts per request at %.6g req/s with the "
           "clients' backoff (M/M/c/K above: %.6g); rejections are %.4g %% "
           "of the failures there, and a retry soon after one finds the "
           "queue still full: the retrial queue counts that\n",
           rq.attempts, r->analysis.offered_load, r->analysis.amplification,
           100 * share);
  else if (share > 0.0 && rq.has_backoff)
    printf("rejections     %.4g %% of the failures, retried: %s; check the "
           "attempts with simulate --engine des\n",
           100 * share, rq.why);
  else if (share > 0.0)
    printf("rejections     %.4g %% of the failures, retried: the model takes "
           "each retry as independent of the rejection before it, which a "
           "fast retry is not; give the clients' backoff in the service "
           "file (key 'backoff') for the retrial queue, or check the "
           "attempts with simulate --engine des\n",
           100 * share);
  write_retrial_loads_text("retrial loads  ", &rq);
}

/* The hazard's keys: a number, or null where the model has no answer
 * (hazard_note says why); 1e300 s is never. */
static void write_hazard_json(ms_json *j, const hazard_answer *h,
                              bool at_load) {
  ms_json_number(j, "hazard_horizon", h->horizon);
  ms_json_number(j, "max_hazard", h->max_hazard);
  if (at_load) {
    ms_json_number(j, "time_to_storm", h->at.seconds);
    ms_json_number(j, "storm_hazard", h->at.hazard);
  }
  ms_json_number(j, "tipping_time_to_storm", h->fold.tip.seconds);
  ms_json_number(j, "tipping_storm_hazard", h->fold.tip.hazard);
  ms_json_bool(j, "fold_is_answer", h->fold.fold_answer);
  ms_json_number(j, "hazard_load", h->fold.hazard_load);
  const char *why = at_load && !h->at.ok ? h->at.why
                    : !h->fold.tip.ok    ? h->fold.tip.why
                                         : NULL;
  if (why)
    ms_json_string(j, "hazard_note", why);
  else
    ms_json_null(j, "hazard_note");
}

static void write_json(const ms_cli_model *m, const ms_report *r,
                       const hazard_answer *hz) {
  ms_json j;
  ms_cli_json_begin(&j, 2, m);
  ms_report_json(&j, r, false);
  ms_json_bool(&j, "certified", r->analysis.certified);
  ms_json_number(&j, "retried_rejection_share",
                 retried_rejection_share(&m->params, &r->analysis));
  /* the retrial queue's attempts per request at the offered load: null
   * without a queue limit, retried rejections, retries and a backoff, or
   * outside the chain's model (doc/metastable.md) */
  retrial_answer rq;
  retrial_solve(m, r->analysis.offered_load, &rq);
  if (rq.ok)
    ms_json_number(&j, "retrial_attempts", rq.attempts);
  else
    ms_json_null(&j, "retrial_attempts");
  write_retrial_loads_json(&j, &rq);
  /* the load the equilibria are at: the offered load, or the boundary it
   * is within the noise of while the state keeps its side */
  ms_json_number(&j, "model_load", r->analysis.model_load);
  write_hazard_json(&j, hz, true);
  ms_json_begin_array(&j, "equilibria");
  for (int i = 0; i < r->analysis.equilibria; i++) {
    ms_json_begin_object(&j, NULL);
    ms_json_number(&j, "effective_load", r->analysis.eq[i].effective_load);
    ms_json_number(&j, "failure_probability",
                   r->analysis.eq[i].failure_probability);
    ms_json_number(&j, "amplification", r->analysis.eq[i].amplification);
    ms_json_bool(&j, "stable", r->analysis.eq[i].stable);
    ms_json_end_object(&j);
  }
  ms_json_end_array(&j);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

/* Whether the landscape has a bistable band of positive width. */
static bool has_band(const ms_landscape *ls) {
  return ls->has_fold && ls->tipping_load > ls->recovery_load;
}

/* The landscape alone (no --load): tipping and recovery loads, the band,
 * the saturation load (doc/design.md §1.3). */
static void write_landscape_text(const ms_cli_model *m, const ms_landscape *ls,
                                 const hazard_answer *hz) {
  printf("service          %s\n", m->label);
  if (has_band(ls)) {
    printf("tipping load     %.6g req/s (the healthy equilibrium disappears "
           "above it)\n",
           ls->tipping_load);
    printf("recovery load    %.6g req/s (the collapsed equilibrium "
           "disappears below it)\n",
           ls->recovery_load);
    printf("bistable band    %.6g to %.6g req/s, %.6g req/s wide\n",
           ls->recovery_load, ls->tipping_load,
           ls->tipping_load - ls->recovery_load);
  } else {
    printf("tipping load     %.6g req/s (the loop reaches capacity above it)"
           "\n",
           ls->tipping_load);
    printf("recovery load    %.6g req/s\n", ls->recovery_load);
    printf("bistable band    none: every storm ends with its trigger\n");
  }
  printf("saturation load  %.6g attempts/s (%s)\n", ls->saturation_load,
         ls->params.model.kind == MS_MODEL_CAPACITY ? "the capacity"
                                                    : "servers x service "
                                                      "rate");
  printf("state            stable below %.6g req/s, overloaded above %.6g "
         "req/s\n",
         ls->recovery_load, ls->tipping_load);
  if (hz->fold.tip.ok)
    write_fold_text("storm hazard     ", hz);
  else
    printf("storm hazard     not modelled: %s\n", hz->fold.tip.why);
  retrial_answer rq;
  retrial_solve(m, NAN, &rq);
  write_retrial_loads_text("retrial loads    ", &rq);
}

static void write_landscape_json(const ms_cli_model *m, const ms_landscape *ls,
                                 const hazard_answer *hz) {
  ms_json j;
  ms_cli_json_begin(&j, 2, m);
  ms_json_number(&j, "tipping_load", ls->tipping_load);
  ms_json_number(&j, "recovery_load", ls->recovery_load);
  ms_json_bool(&j, "band", has_band(ls));
  ms_json_number(&j, "band_width", ls->tipping_load - ls->recovery_load);
  ms_json_number(&j, "tipping_effective_load", ls->tipping_effective_load);
  ms_json_number(&j, "recovery_effective_load", ls->recovery_effective_load);
  ms_json_number(&j, "saturation_load", ls->saturation_load);
  retrial_answer rq;
  retrial_solve(m, NAN, &rq);
  write_retrial_loads_json(&j, &rq);
  write_hazard_json(&j, hz, false);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

/* What the command line asks for, besides the model. */
typedef struct {
  ms_cli_shared sh; /* --load, --format, --hazard-horizon, --max-hazard */
  double observed_load, observed_failure, interval, queue;
  bool has_observed_load, has_observed_failure, has_previous, has_queue;
  bool has_interval;            /* --interval given */
  int previous, previous_storm; /* previous_storm -1: from the state */
  bool help;                    /* --help: print it and do nothing else */
} solve_args;

/* One option of the command (ms_cli_take). */
static int take_option(void *args, int c, const char *arg) {
  static const char *const states[] = {"stable", "vulnerable", "metastable",
                                       "overloaded", NULL};
  static const char *const flags[] = {"0", "1", NULL};
  solve_args *a = args;
  switch (c) {
  case OPT_OBSERVED_LOAD:
    a->has_observed_load = true;
    return ms_cli_param("--observed-load", arg, MS_PARAM_OBSERVED_ATTEMPTS,
                        &a->observed_load);
  case OPT_OBSERVED_FAILURE:
    a->has_observed_failure = true;
    return ms_cli_param("--observed-failure", arg, MS_PARAM_OBSERVED_FAILURE,
                        &a->observed_failure);
  case OPT_PREVIOUS:
    a->has_previous = true;
    return ms_cli_choice("--previous", arg, states, &a->previous);
  case OPT_PREVIOUS_STORM:
    return ms_cli_choice("--previous-storm", arg, flags, &a->previous_storm);
  case OPT_INTERVAL:
    a->has_interval = true;
    return ms_cli_param("--interval", arg, MS_PARAM_INTERVAL, &a->interval);
  case OPT_QUEUE_LENGTH:
    a->has_queue = true;
    return ms_cli_param("--queue-length", arg, MS_PARAM_QUEUE_LENGTH,
                        &a->queue);
  default:
    return ms_cli_shared_option(&a->sh, c, arg);
  }
}

static int run(ms_cli_model *m, int argc, char **argv) {
  solve_args a = {.previous_storm = -1};
  ms_cli_shared_init(&a.sh, MS_FORMAT_TEXT, MS_FORMATS_TEXT_JSON);
  int r = ms_cli_parse(argc, argv, &syntax, m, take_option, &a, &a.help, NULL);
  if (r != 0 || a.help)
    return r;
  double load = a.sh.load;
  if (a.previous_storm >= 0 && !a.has_previous)
    return ms_cli_usage("--previous-storm needs --previous STATE");
  if (isnan(load)) {
    /* the options that describe an operating point have none to
     * describe without a load */
    const char *needs = a.has_observed_load      ? "--observed-load"
                        : a.has_observed_failure ? "--observed-failure"
                        : a.has_previous         ? "--previous"
                        : a.has_interval         ? "--interval"
                        : a.has_queue            ? "--queue-length"
                                                 : NULL;
    if (needs != NULL)
      return ms_cli_usage("%s describes an operating point: give the offered "
                          "load with --load L (requests/s)",
                          needs);
  }
  ms_landscape ls;
  if ((r = ms_cli_model_landscape(m, &ls)) != 0)
    return r;
  hazard_answer hz;
  hazard_solve(m, &ls, load, &a.sh, &hz);
  if (isnan(load)) {
    if (a.sh.format == MS_FORMAT_JSON)
      write_landscape_json(m, &ls, &hz);
    else
      write_landscape_text(m, &ls, &hz);
    return ms_cli_finish_output(MS_EXIT_OK);
  }
  ms_observation obs = {
      .offered_load = load,
      .has_observed_attempts = a.has_observed_load,
      .observed_attempts = a.observed_load,
      .has_observed_failure = a.has_observed_failure,
      .observed_failure = a.observed_failure,
      .has_previous = a.has_previous,
      .previous = (ms_state)a.previous,
      .previous_storm = a.previous_storm >= 0
                            ? a.previous_storm == 1
                            : ms_state_storm((ms_state)a.previous) != 0,
      .interval = a.interval,
      .has_queue_length = a.has_queue,
      .queue_length = a.queue,
  };
  ms_analysis an;
  ms_error err;
  if (ms_analyze(&ls, &obs, &an, &err) != MS_OK)
    return ms_cli_fail("model: %s", err.msg);
  /* the capacity model's root, certified by an exact enclosure; without
   * one (a tangency) the double root stands, marked not certified */
  ms_analysis_certify(&ls, &an, NULL);
  ms_report rep;
  ms_report_of(&rep, &an);
  char msg[256];
  if (ms_report_finite(&rep, msg, sizeof msg) != 0)
    return ms_cli_fail("model: %s", msg);
  if (a.sh.format == MS_FORMAT_JSON)
    write_json(m, &rep, &hz);
  else
    write_text(m, &ls, &rep, a.has_queue, &hz);
  return ms_cli_finish_output(MS_EXIT_OK);
}

int ms_cmd_solve(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
