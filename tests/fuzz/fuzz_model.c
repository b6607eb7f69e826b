/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the model's searches (model/metastable.h, model/sim.h): the
 * landscape and its equilibria, the capacity plans (ms_recommend_safe,
 * ms_recommend_max_retries, ms_failure_onset_load), the trigger
 * tolerance, the AWS quota's amplification and decorrelated jitter's mean
 * delay, with numbers decoded from the bytes (fuzz.h: each double raw,
 * NaN, infinities and subnormals among them, or a mantissa and a decimal
 * exponent in [-12, 12], so that most inputs land inside the domains).
 * The first byte picks the entry point.  Whatever the input, a call either
 * fails with a status and a message, or returns MS_OK with finite results
 * inside their documented ranges (doc/design.md §4: no NaN or infinity is
 * returned); anything else aborts.  An input costs milliseconds (a plan
 * examines up to 100 landscapes; a tolerance search runs fluid
 * simulations, kept short below); the cheap entry points are
 * fuzz_model_fast.c's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "metastable.h"
#include "sim.h"

static void need(bool ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_model: %s\n", what);
    abort();
  }
}

static void need_finite(double v, const char *what) { need(isfinite(v), what); }

/* A service from the input: erlang or capacity, a count policy with an
 * optional budget or token bucket, one to three tiers. */
static void take_service(fuzz_bytes *b, ms_service_params *s) {
  memset(s, 0, sizeof *s);
  uint8_t kind = fuzz_byte(b);
  if (kind % 2 == 0) {
    ms_failure_model_capacity(&s->model, fuzz_double(b));
  } else {
    long c = fuzz_long(b);
    double mu = fuzz_double(b);
    double T = fuzz_double(b);
    ms_failure_model_erlang(&s->model, c, mu, T);
  }
  s->model.base_failure = (kind & 2) ? fuzz_double(b) : 0.0;
  ms_retry_policy_fixed(&s->policy, (int)(fuzz_byte(b) % 12));
  s->policy.tiers = 1 + (kind >> 2) % 3;
  if (kind & 32) {
    s->policy.has_budget = true;
    s->policy.retry_budget = fuzz_double(b);
  }
  if (kind & 64) {
    s->policy.has_token = true;
    s->policy.token_ratio = fuzz_double(b);
  }
}

static void check_landscape(const ms_landscape *ls) {
  need_finite(ls->tipping_load, "landscape: tipping load not finite");
  need_finite(ls->recovery_load, "landscape: recovery load not finite");
  need(ls->recovery_load <= ls->tipping_load,
       "landscape: recovery load above tipping load");
  need_finite(ls->saturation_load, "landscape: saturation load not finite");
  for (int i = 0; i <= ls->n_breaks; i++) {
    need_finite(ls->break_x[i], "landscape: breakpoint not finite");
    need_finite(ls->break_lambda[i], "landscape: breakpoint not finite");
  }
}

static void fuzz_landscape(fuzz_bytes *b) {
  ms_service_params s;
  take_service(b, &s);
  ms_error err;
  if (ms_service_params_check(&s, &err) != MS_OK)
    return;
  ms_landscape ls;
  if (ms_landscape_build(&s, &ls, &err) != MS_OK)
    return;
  check_landscape(&ls);
  for (int k = 0; k < 3; k++) {
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n = 0;
    double lambda = fuzz_double(b);
    if (ms_equilibria(&ls, lambda, eq, &n, &err) != MS_OK)
      continue;
    need(n >= 1 && n <= MS_MAX_EQUILIBRIA, "ms_equilibria: count");
    for (int i = 0; i < n; i++) {
      need_finite(eq[i].effective_load, "equilibrium: x not finite");
      need(eq[i].failure_probability >= 0 && eq[i].failure_probability <= 1,
           "equilibrium: p outside [0, 1]");
      need_finite(eq[i].amplification, "equilibrium: A not finite");
    }
  }
}

static void fuzz_plan(fuzz_bytes *b) {
  ms_service_params s;
  take_service(b, &s);
  double peak = fuzz_double(b), margin = fuzz_double(b);
  ms_error err;
  if (ms_service_params_check(&s, &err) != MS_OK)
    return;
  bool safe;
  ms_landscape ls;
  if (ms_recommend_safe(&s, peak, margin, &safe, &ls, &err) == MS_OK)
    check_landscape(&ls);
  ms_recommend_answer a;
  if (ms_recommend_max_retries(&s, peak, margin, &a, &err) == MS_OK) {
    need_finite(a.value, "ms_recommend_max_retries: value not finite");
    need_finite(a.tipping_load, "ms_recommend_max_retries: tipping not finite");
    need_finite(a.recovery_load,
                "ms_recommend_max_retries: recovery not finite");
  }
  /* the load at which retries begin to fire: a bisection over p(x) */
  double x, target = fuzz_double(b), x_hi = fuzz_double(b);
  bool found;
  if (ms_failure_onset_load(&s, target, x_hi, &x, &found, &err) == MS_OK)
    need(x >= 0 && x <= x_hi, "ms_failure_onset_load: outside [0, x_hi]");
}

/* The trigger tolerance, kept cheap: a small pool, short holds. */
static void fuzz_tolerance(fuzz_bytes *b) {
  ms_service_params s;
  memset(&s, 0, sizeof s);
  long c = 1 + (long)(fuzz_byte(b) % 16);
  double mu = fuzz_double(b), T = fuzz_double(b);
  ms_failure_model_erlang(&s.model, c, mu, T);
  ms_retry_policy_fixed(&s.policy, (int)(fuzz_byte(b) % 6));
  ms_error err;
  if (ms_service_params_check(&s, &err) != MS_OK)
    return;
  /* at most 1000 completions per timeout and per second: short fluid runs */
  if (!(c * mu * T <= 1000 && c * mu <= 1000 && T <= 10 && 1 / mu <= 10))
    return;
  ms_sim_config cfg;
  ms_sim_config_init(&cfg, &s);
  cfg.scenario.offered_load = fuzz_double(b);
  ms_tolerance_query q;
  memset(&q, 0, sizeof q);
  uint8_t kind = fuzz_byte(b);
  if (kind % 2 == 0) {
    q.kind = MS_TRIGGER_SERVERS;
    q.servers = (long)(fuzz_byte(b) % (uint8_t)c);
  } else {
    q.kind = MS_TRIGGER_LOAD;
    q.spike_load = fuzz_double(b);
  }
  q.rel_tol = 0.1;
  q.max_hold = 1 + fuzz_byte(b) % 60;
  ms_tolerance t;
  if (ms_trigger_tolerance(&cfg, &q, &t, &err) != MS_OK)
    return;
  need_finite(t.tolerance, "ms_trigger_tolerance: tolerance not finite");
  need(t.tolerance >= 0 && t.tolerance <= q.max_hold,
       "ms_trigger_tolerance: tolerance outside [0, max_hold]");
  need_finite(t.latch, "ms_trigger_tolerance: latch not finite");
  need_finite(t.tipping_load, "ms_trigger_tolerance: tipping not finite");
}

/* The two fixed points of bounded but millisecond cost: the AWS retry
 * quota's amplification (its bucket's levels) and decorrelated jitter's
 * mean delay (a recursion over a grid of 4096 cells, at most 200 retries
 * here: it may never turn stationary, and costs O(k) then). */
static void fuzz_quota(fuzz_bytes *b) {
  ms_retry_policy p;
  ms_retry_policy_fixed(&p, (int)(fuzz_byte(b) % 12));
  uint8_t flags = fuzz_byte(b);
  p.tiers = 1 + flags % 3;
  ms_policy_defaults(&p, MS_POLICY_AWS);
  if (flags & 4) {
    p.aws_capacity = fuzz_double(b);
    p.aws_retry_cost = fuzz_double(b);
    p.aws_timeout_cost = fuzz_double(b);
    p.aws_refund = fuzz_double(b);
    p.aws_throttling_cost = fuzz_double(b);
    p.aws_throttling_share = fuzz_double(b);
  }
  ms_error err = {{0}};
  double A, fail = fuzz_double(b);
  if (ms_amplification(&p, fail, &A, &err) == MS_OK)
    need(isfinite(A) && A >= 1 && A <= ms_worst_amplification(&p) * (1 + 1e-12),
         "ms_amplification (AWS): outside [1, worst]");
  else
    need(err.msg[0] != '\0', "ms_amplification (AWS): no message");
  ms_backoff bo = {MS_BACKOFF_DECORRELATED, fuzz_double(b), fuzz_double(b), 0};
  int k = 1 + (int)(fuzz_byte(b) % 200);
  double mean;
  if (ms_backoff_mean_delay(&bo, k, &mean, &err) == MS_OK)
    need(isfinite(mean) && mean >= bo.base * (1 - 1e-6) &&
             mean <= bo.cap * (1 + 1e-6),
         "ms_backoff_mean_delay: outside [base, cap]");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_bytes b = {data, size};
  /* % 5 as before the cheap cases moved to fuzz_model_fast.c, so that
   * the corpus keeps its meaning: 0 and 1 the landscape, 2 and 3 the
   * plans, 4 the trigger tolerance */
  uint8_t pick = fuzz_byte(&b);
  if (pick >= 250) { /* none of the older corpus starts so */
    fuzz_quota(&b);
    return 0;
  }
  switch (pick % 5) {
  case 0:
  case 1:
    fuzz_landscape(&b);
    break;
  case 2:
  case 3:
    fuzz_plan(&b);
    break;
  default:
    fuzz_tolerance(&b);
    break;
  }
  return 0;
}
