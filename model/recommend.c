/* SPDX-License-Identifier: MIT */
/*
 * Capacity planning: the settings under which a service is safe at a peak
 * load, a storm ending once its trigger is gone (doc/design.md §1.3, §1.4).
 * Safe at peak L with margin m means stable at every offered load up to
 * (1 + m) L; stable at lambda means lambda < lambda_rec (ms_analyze), so
 * safe is lambda_rec > (1 + m) L, with or without a band.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "metastable.h"

int ms_recommend_safe(const ms_service_params *s, double peak, double margin,
                      bool *safe, ms_landscape *ls, ms_error *err) {
  if (!(isfinite(peak) && peak >= 0.0 && peak <= MS_MAX_RATE))
    return ms_fail(err, MS_EINVAL, "peak load %g req/s is not in [0, %g]", peak,
                   MS_MAX_RATE);
  if (!(isfinite(margin) && margin >= 0.0 && margin <= MS_RECOMMEND_MAX_MARGIN))
    return ms_fail(err, MS_EINVAL, "margin %g is not in [0, %g]", margin,
                   MS_RECOMMEND_MAX_MARGIN);
  ms_landscape l;
  int st = ms_landscape_build(s, &l, err);
  if (st != MS_OK)
    return st;
  *safe = ms_recommend_recovery_safe(l.recovery_load, peak, margin);
  if (ls != NULL)
    *ls = l;
  return MS_OK;
}

/* The answer for service s: its value v, its verdict and its loads. */
static int answer(const ms_service_params *s, double v, double peak,
                  double margin, ms_recommend_answer *a, ms_error *err) {
  ms_landscape ls;
  bool safe;
  int st = ms_recommend_safe(s, peak, margin, &safe, &ls, err);
  if (st != MS_OK)
    return st;
  a->value = v;
  a->safe = safe;
  a->tipping_load = ls.tipping_load;
  a->recovery_load = ls.recovery_load;
  return MS_OK;
}

bool ms_recommend_recovery_safe(double recovery_load, double peak,
                                double margin) {
  return recovery_load > (1.0 + margin) * peak;
}

int ms_recommend_retry_counts(const ms_service_params *s) {
  ms_service_params t = *s;
  int r;
  for (r = 1; r <= MS_RECOMMEND_MAX_RETRIES; r++) {
    t.policy.retries = r;
    if (ms_service_params_check(&t, NULL) != MS_OK)
      break; /* a policy's own cap (gRPC's 5 attempts) */
  }
  return r;
}

int ms_recommend_retry_recovery(const ms_service_params *s, int r,
                                double *recovery, ms_error *err) {
  ms_service_params t = *s;
  t.policy.retries = r;
  if (r < 0 || r > MS_RECOMMEND_MAX_RETRIES ||
      (r > 0 && ms_service_params_check(&t, NULL) != MS_OK))
    return ms_fail(err, MS_EINVAL, "retry count %d is not in [0, %d)", r,
                   ms_recommend_retry_counts(s));
  ms_landscape l;
  int st = ms_landscape_build(&t, &l, err);
  if (st == MS_OK)
    *recovery = l.recovery_load;
  return st;
}

int ms_recommend_max_retries(const ms_service_params *s, double peak,
                             double margin, ms_recommend_answer *out,
                             ms_error *err) {
  bool safe; /* checks peak and margin, as before any build */
  int st = ms_recommend_safe(s, peak, margin, &safe, NULL, err);
  if (st != MS_OK)
    return st;
  int best = -1, n = ms_recommend_retry_counts(s);
  for (int r = 0; r < n; r++) {
    double rec;
    st = ms_recommend_retry_recovery(s, r, &rec, err);
    if (st != MS_OK)
      return st;
    if (ms_recommend_recovery_safe(rec, peak, margin))
      best = r;
  }
  ms_service_params t = *s;
  ms_recommend_answer a = {0};
  t.policy.retries = best < 0 ? 0 : best;
  st = answer(&t, t.policy.retries, peak, margin, &a, err);
  if (st != MS_OK)
    return st;
  a.at_bound = best == MS_RECOMMEND_MAX_RETRIES;
  *out = a;
  return MS_OK;
}

/* Where parameter id sits in a service, and the service that varies it. */
static double *knob(ms_service_params *t, ms_param id) {
  switch (id) {
  case MS_PARAM_RETRY_BUDGET:
    t->policy.kind = MS_POLICY_COUNT;
    t->policy.has_budget = true;
    return &t->policy.retry_budget;
  case MS_PARAM_TOKEN_RATIO:
    t->policy.kind = MS_POLICY_COUNT;
    t->policy.has_token = true;
    return &t->policy.token_ratio;
  case MS_PARAM_TIMEOUT:
    return t->model.kind == MS_MODEL_ERLANG ? &t->model.timeout : NULL;
  case MS_PARAM_CAPACITY:
    return t->model.kind == MS_MODEL_CAPACITY ? &t->model.capacity : NULL;
  case MS_PARAM_GRPC_TOKEN_RATIO:
  case MS_PARAM_ENVOY_BUDGET:
  case MS_PARAM_FINAGLE_PERCENT:
  case MS_PARAM_AWS_REFUND: {
    ms_policy_kind k = id == MS_PARAM_GRPC_TOKEN_RATIO  ? MS_POLICY_GRPC
                       : id == MS_PARAM_ENVOY_BUDGET    ? MS_POLICY_ENVOY
                       : id == MS_PARAM_FINAGLE_PERCENT ? MS_POLICY_FINAGLE
                                                        : MS_POLICY_AWS;
    if (t->policy.kind != k) {
      t->policy.has_budget = t->policy.has_token = false;
      ms_policy_defaults(&t->policy, k);
      t->policy.kind = k;
      if (k == MS_POLICY_GRPC)
        t->policy.grpc_max_tokens = MS_RECOMMEND_GRPC_MAX_TOKENS;
    }
    return ms_policy_field(&t->policy, id);
  }
  default:
    return NULL;
  }
}

int ms_recommend_apply(const ms_service_params *s, ms_param id, double value,
                       ms_service_params *out, ms_error *err) {
  ms_service_params t = *s;
  if (id == MS_PARAM_RETRIES || id == MS_PARAM_SERVERS) {
    /* whole, and in range before the conversion */
    double hi = id == MS_PARAM_RETRIES ? MS_RECOMMEND_MAX_RETRIES
                                       : (double)MS_MAX_SERVERS;
    if (!(value >= 0 && value <= hi && value == floor(value)))
      return ms_fail(err, MS_EINVAL, "%s %g is not a whole number in [0, %g]",
                     id == MS_PARAM_RETRIES ? "retries" : "servers", value, hi);
    if (id == MS_PARAM_SERVERS && t.model.kind != MS_MODEL_ERLANG)
      return ms_fail(err, MS_EINVAL, "servers: the capacity model has none");
  }
  if (id == MS_PARAM_RETRIES) {
    t.policy.retries = (int)value;
  } else if (id == MS_PARAM_SERVERS) {
    t.model.servers = (long)value;
  } else {
    double *v = knob(&t, id);
    if (v == NULL)
      return ms_fail(err, MS_EINVAL,
                     "parameter %d is not a knob of this service", (int)id);
    *v = value;
  }
  int st = ms_service_params_check(&t, err);
  if (st == MS_OK)
    *out = t;
  return st;
}

/* The midpoint of [lo, hi]: geometric when both ends are positive and far
 * apart (a range of 20 decades takes 70 steps, not 3000), else
 * arithmetic. */
static double midpoint(double lo, double hi) {
  if (lo > 0.0 && hi > 4.0 * lo)
    return sqrt(lo) * sqrt(hi);
  return lo + 0.5 * (hi - lo);
}

int ms_recommend_knob(const ms_service_params *s, ms_param id,
                      bool larger_safer, double peak, double margin,
                      ms_recommend_answer *out, ms_error *err) {
  const ms_param_info *info = ms_param_get(id);
  ms_service_params t = *s;
  double *v = knob(&t, id);
  if (info == NULL || v == NULL)
    return ms_fail(err, MS_EINVAL, "parameter %d is not a knob of this service",
                   (int)id);
  double lo = info->lo, hi = info->hi;
  /* the open ends, and the timeout's reach (MS_MAX_TIMEOUT_COMPLETIONS) */
  if (info->bounds & MS_BOUND_LO_OPEN)
    lo = fmax(lo * (1 + 1e-12), lo + 1e-12);
  if (info->bounds & MS_BOUND_HI_OPEN)
    hi = hi - 1e-12 * fmax(1.0, fabs(hi));
  /* a timeout range [T, T + w] moves its shortest timeout T and keeps its
   * width w (a timer's tick): the longest, T + w, is what must reach no
   * further than the limit */
  if (id == MS_PARAM_TIMEOUT)
    hi = fmin(hi, MS_MAX_TIMEOUT_COMPLETIONS /
                          ((double)t.model.servers * t.model.service_rate) -
                      t.model.timeout_spread);
  bool safe;
  int st;
  /* the safe end first: when it is not safe, nothing in the range is */
  double safe_end = larger_safer ? hi : lo, other = larger_safer ? lo : hi;
  *v = safe_end;
  if ((st = ms_recommend_safe(&t, peak, margin, &safe, NULL, err)) != MS_OK)
    return st;
  ms_recommend_answer a = {0};
  if (!safe) {
    if ((st = answer(&t, safe_end, peak, margin, &a, err)) != MS_OK)
      return st;
    a.at_bound = true;
    *out = a;
    return MS_OK;
  }
  *v = other;
  if ((st = ms_recommend_safe(&t, peak, margin, &safe, NULL, err)) != MS_OK)
    return st;
  if (safe && id != MS_PARAM_TIMEOUT) {
    if ((st = answer(&t, other, peak, margin, &a, err)) != MS_OK)
      return st;
    a.at_bound = true;
    *out = a;
    return MS_OK;
  }
  /* bisection, keeping good (safe) and bad (not) apart */
  double good = safe_end, bad = other;
  if (id == MS_PARAM_TIMEOUT) {
    /* Safety is not monotone in the timeout: a timeout short enough
     * removes the band (the recovery load rises to the tipping load) and
     * a long one lowers the failures below c mu, while one in between can
     * be the least safe (tests/check_recommend.c).  So the boundary sought is
     * that of the safe stretch that reaches the longest timeout: scan down
     * from it by factors of 10^(1/8) to the first unsafe timeout. */
    double T = safe_end;
    for (int i = 0; i < 8 * 30 && T > 0.0; i++) {
      double next = T / 1.333521432163324; /* 10^(1/8) */
      if (next <= other)
        break;
      *v = next;
      if ((st = ms_recommend_safe(&t, peak, margin, &safe, NULL, err)) != MS_OK)
        return st;
      if (!safe) {
        bad = next;
        break;
      }
      good = next;
      T = next;
    }
    if (bad == other && safe) { /* safe all the way down */
      if ((st = answer(&t, other, peak, margin, &a, err)) != MS_OK)
        return st;
      a.at_bound = true;
      *out = a;
      return MS_OK;
    }
  }
  for (int i = 0; i < 200; i++) {
    double a0 = fmin(good, bad), b0 = fmax(good, bad);
    if (b0 - a0 <= MS_RECOMMEND_TOLERANCE * fmax(fabs(a0), 1e-300) ||
        b0 - a0 <= 1e-300)
      break;
    double mid = midpoint(a0, b0);
    if (!(mid > a0 && mid < b0))
      break;
    *v = mid;
    if ((st = ms_recommend_safe(&t, peak, margin, &safe, NULL, err)) != MS_OK)
      return st;
    if (safe)
      good = mid;
    else
      bad = mid;
  }
  *v = good;
  if ((st = answer(&t, good, peak, margin, &a, err)) != MS_OK)
    return st;
  *out = a;
  return MS_OK;
}

int ms_recommend_min_servers(const ms_service_params *s, double peak,
                             double margin, ms_recommend_answer *out,
                             ms_error *err) {
  if (s->model.kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL, "servers: the capacity model has none");
  ms_service_params t = *s;
  long hi = MS_MAX_SERVERS;
  double span = t.model.service_rate * t.model.timeout;
  if (span > 0.0 && MS_MAX_TIMEOUT_COMPLETIONS / span < (double)hi)
    hi = (long)floor(MS_MAX_TIMEOUT_COMPLETIONS / span);
  bool safe;
  int st;
  ms_recommend_answer a = {0};
  t.model.servers = hi;
  if ((st = ms_recommend_safe(&t, peak, margin, &safe, NULL, err)) != MS_OK)
    return st;
  if (!safe) {
    if ((st = answer(&t, (double)hi, peak, margin, &a, err)) != MS_OK)
      return st;
    a.at_bound = true;
    *out = a;
    return MS_OK;
  }
  long lo = 0; /* not safe (no servers), hi safe */
  while (hi - lo > 1) {
    long mid = lo + (hi - lo) / 2;
    t.model.servers = mid;
    if ((st = ms_recommend_safe(&t, peak, margin, &safe, NULL, err)) != MS_OK)
      return st;
    if (safe)
      hi = mid;
    else
      lo = mid;
  }
  t.model.servers = hi;
  if ((st = answer(&t, (double)hi, peak, margin, &a, err)) != MS_OK)
    return st;
  a.at_bound = hi == 1;
  *out = a;
  return MS_OK;
}
