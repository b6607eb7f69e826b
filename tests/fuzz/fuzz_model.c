/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the model's public entry points (model/metastable.h,
 * model/sim.h) with arbitrary numbers.  The input's bytes are read as a
 * sequence of numbers: each double is either taken raw (any bit pattern:
 * NaN, infinities, subnormals) or built from a mantissa and a decimal
 * exponent in [-12, 12], so that most inputs land inside the domains.
 * The first byte picks the entry point.  Whatever the input, a call either
 * fails with a status and a message, or returns MS_OK with finite results
 * inside their documented ranges (doc/design.md §4: no NaN or infinity is
 * returned); anything else aborts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "metastable.h"
#include "sim.h"

typedef struct {
  const uint8_t *p;
  size_t n;
} bytes;

static uint8_t take_byte(bytes *b) {
  if (b->n == 0)
    return 0;
  b->n--;
  return *b->p++;
}

static uint32_t take_u32(bytes *b) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v = v << 8 | take_byte(b);
  return v;
}

/* A double: raw bits (1 in 8), or m 10^e with m in [0, 1], e in [-12, 12],
 * negated 1 in 16. */
static double take_double(bytes *b) {
  uint8_t mode = take_byte(b);
  if (mode % 8 == 0) {
    uint64_t u = (uint64_t)take_u32(b) << 32 | take_u32(b);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
  }
  double m = take_u32(b) / 4294967295.0;
  double v = m * pow(10.0, (int)(take_byte(b) % 25) - 12);
  return mode % 16 == 1 ? -v : v;
}

/* A count: small (1 in 2), or any 32-bit value, signed. */
static long take_long(bytes *b) {
  uint8_t mode = take_byte(b);
  if (mode % 2 == 0)
    return (long)(take_byte(b) % 64);
  return (long)(int32_t)take_u32(b);
}

static void need(bool ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_model: %s\n", what);
    abort();
  }
}

static void need_finite(double v, const char *what) { need(isfinite(v), what); }

static void fuzz_erlang(bytes *b) {
  long c = take_long(b);
  double a = take_double(b);
  ms_error err;
  ms_erlang_values v;
  if (ms_erlang(c, a, &v, &err) == MS_OK) {
    need_finite(v.ln_erlang_b, "ms_erlang: ln B not finite");
    need_finite(v.ln_erlang_c, "ms_erlang: ln C not finite");
    need(v.erlang_b >= 0 && v.erlang_b <= 1, "ms_erlang: B outside [0, 1]");
    need(v.erlang_c >= 0 && v.erlang_c <= 1, "ms_erlang: C outside [0, 1]");
    need(v.ln_erlang_b <= 0 && v.ln_erlang_c <= 0, "ms_erlang: log > 0");
  }
  double ln;
  if (ms_erlang_ln_b(c, a, &ln, &err) == MS_OK)
    need(isfinite(ln) && ln <= 0, "ms_erlang_ln_b: not finite or > 0");
  if (ms_erlang_ln_c(c, a, &ln, &err) == MS_OK)
    need(isfinite(ln) && ln <= 0, "ms_erlang_ln_c: not finite or > 0");
}

/* A service from the input: erlang or capacity, a count policy with an
 * optional budget or token bucket, one to three tiers. */
static void take_service(bytes *b, ms_service_params *s) {
  memset(s, 0, sizeof *s);
  uint8_t kind = take_byte(b);
  if (kind % 2 == 0) {
    ms_failure_model_capacity(&s->model, take_double(b));
  } else {
    long c = take_long(b);
    double mu = take_double(b);
    double T = take_double(b);
    ms_failure_model_erlang(&s->model, c, mu, T);
  }
  s->model.base_failure = (kind & 2) ? take_double(b) : 0.0;
  ms_retry_policy_fixed(&s->policy, (int)(take_byte(b) % 12));
  s->policy.tiers = 1 + (kind >> 2) % 3;
  if (kind & 32) {
    s->policy.has_budget = true;
    s->policy.retry_budget = take_double(b);
  }
  if (kind & 64) {
    s->policy.has_token = true;
    s->policy.token_ratio = take_double(b);
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

static void fuzz_landscape(bytes *b) {
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
    double lambda = take_double(b);
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

static void fuzz_capacity(bytes *b) {
  ms_failure_model m;
  ms_failure_model_capacity(&m, take_double(b));
  m.base_failure = take_double(b);
  ms_error err;
  if (ms_failure_model_check(&m, &err) != MS_OK)
    return;
  need_finite(ms_saturation_load(&m), "ms_saturation_load: not finite");
  for (int k = 0; k < 3; k++) {
    double p;
    if (ms_failure_probability(&m, take_double(b), &p, &err) == MS_OK)
      need(p >= 0 && p <= 1, "ms_failure_probability: outside [0, 1]");
  }
}

static void fuzz_plan(bytes *b) {
  ms_service_params s;
  take_service(b, &s);
  double peak = take_double(b), margin = take_double(b);
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
}

/* The trigger tolerance, kept cheap: a small pool, short holds. */
static void fuzz_tolerance(bytes *b) {
  ms_service_params s;
  memset(&s, 0, sizeof s);
  long c = 1 + (long)(take_byte(b) % 16);
  double mu = take_double(b), T = take_double(b);
  ms_failure_model_erlang(&s.model, c, mu, T);
  ms_retry_policy_fixed(&s.policy, (int)(take_byte(b) % 6));
  ms_error err;
  if (ms_service_params_check(&s, &err) != MS_OK)
    return;
  /* at most 1000 completions per timeout and per second: short fluid runs */
  if (!(c * mu * T <= 1000 && c * mu <= 1000 && T <= 10 && 1 / mu <= 10))
    return;
  ms_sim_config cfg;
  ms_sim_config_init(&cfg, &s);
  cfg.scenario.offered_load = take_double(b);
  ms_tolerance_query q;
  memset(&q, 0, sizeof q);
  uint8_t kind = take_byte(b);
  if (kind % 2 == 0) {
    q.kind = MS_TRIGGER_SERVERS;
    q.servers = (long)(take_byte(b) % (uint8_t)c);
  } else {
    q.kind = MS_TRIGGER_LOAD;
    q.spike_load = take_double(b);
  }
  q.rel_tol = 0.1;
  q.max_hold = 1 + take_byte(b) % 60;
  ms_tolerance t;
  if (ms_trigger_tolerance(&cfg, &q, &t, &err) != MS_OK)
    return;
  need_finite(t.tolerance, "ms_trigger_tolerance: tolerance not finite");
  need(t.tolerance >= 0 && t.tolerance <= q.max_hold,
       "ms_trigger_tolerance: tolerance outside [0, max_hold]");
  need_finite(t.latch, "ms_trigger_tolerance: latch not finite");
  need_finite(t.tipping_load, "ms_trigger_tolerance: tipping not finite");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bytes b = {data, size};
  switch (take_byte(&b) % 5) {
  case 0:
    fuzz_erlang(&b);
    break;
  case 1:
    fuzz_landscape(&b);
    break;
  case 2:
    fuzz_capacity(&b);
    break;
  case 3:
    fuzz_plan(&b);
    break;
  default:
    fuzz_tolerance(&b);
    break;
  }
  return 0;
}
