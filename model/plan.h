/* SPDX-License-Identifier: MIT */
/*
 * Planning: the capacity plan's quantities in units (`metastable plan`,
 * model/plan.c, doc/design.md §1.10) and the safe settings at a peak load
 * (`metastable recommend` and the plugin's safe_retries,
 * model/recommend.c).  Conventions: base.h.
 */
#ifndef METASTABLE_PLAN_H
#define METASTABLE_PLAN_H

#include "landscape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the capacity plan (model/plan.c) ---------------------------------- */
/*
 * ms_response_tail: P(W + S > H), the probability that an attempt's
 * response time (its wait for a server plus its service) exceeds H, in
 * the M/M/c queue at arrival rate x.  W is 0 with probability 1 - C(c, a)
 * and exponential of rate gamma = c mu - x otherwise, S is exponential of
 * rate mu, independent of W; so
 *   P(W + S > H) = e^(-mu H) + C(c, a) mu (e^(-gamma H) - e^(-mu H))
 *                  / (mu - gamma)       (H e^(-mu H) at gamma = mu)
 * (Kleinrock, Queueing Systems vol. 1, 1975, sec. 3.4, the response time
 * of M/M/c; Gross and Harris, Fundamentals of Queueing Theory, sec. 2.3).
 *   m     a valid erlang model without a queue limit and with exponential
 *         service (no service_time_cv, or 1)
 *   x     effective load, attempts/s, finite, >= 0; at and above c mu the
 *         queue has no steady state and the tail is 1
 *   H     response time limit, s, finite, >= 0
 *   tail  out: in [0, 1]
 * Errors: MS_EINVAL for another model, a queue limit, cv != 1, or x or H
 * outside their domain.
 */
int ms_response_tail(const ms_failure_model *m, double x, double H,
                     double *tail, ms_error *err);

/*
 * ms_health_check_load: the effective load, attempts/s, at which a health
 * check with timeout H sent through the replica's queue fails more often
 * than `tolerance`: the smallest x with
 *   1 - (1 - base)(1 - P(W + S > H)) >= tolerance
 * (the probe errors with the base failure or is slower than H;
 * ms_response_tail), found by bisection to a few ulps of c mu.  The
 * failure share rises with x, so above this load the check starts
 * removing replicas that are slow, not dead (doc/design.md §1.10).
 *   m          as ms_response_tail
 *   H          s, finite, >= 0
 *   tolerance  the share of failed checks the balancer tolerates, (0, 1)
 *   x          out: in [0, c mu]; 0 when the check fails too often even
 *              on an idle replica (e^(-mu H) or the base failure too large)
 * Errors: MS_EINVAL as ms_response_tail, or a tolerance outside (0, 1).
 */
int ms_health_check_load(const ms_failure_model *m, double H, double tolerance,
                         double *x, ms_error *err);

/*
 * ms_failure_onset_load: the smallest effective load x in [0, x_hi] at
 * which one attempt's failure probability p(x) (doc/design.md §1.1, §1.9)
 * reaches target, by bisection (p does not fall with x) to a few ulps.
 * The capacity plan's "load at which retries begin to fire" is this x for
 * target = 1 - (1 - base)(1 - 1 %): one attempt in a hundred fails from
 * overload (doc/design.md §1.10).
 *   s       valid service parameters
 *   target  failure probability, [0, 1]
 *   x_hi    attempts/s, [0, MS_MAX_RATE]: where to stop looking (the
 *           tipping point's effective load: beyond it the healthy branch
 *           does not go)
 *   x       out: attempts/s; found: whether p reaches target by x_hi (when
 *           not, *x = x_hi)
 * Errors: MS_EINVAL for invalid parameters, target or x_hi.
 */
int ms_failure_onset_load(const ms_service_params *s, double target,
                          double x_hi, double *x, bool *found, ms_error *err);

/*
 * ms_inflight_capacity: c / T, requests/s, the most attempts per second the
 * pool of c slots can start while every attempt holds its slot for the
 * whole timeout T (a dependency that does not answer): the capacity while
 * a dependency times out, which is c mu x 1 / (mu T) of the normal one
 * (doc/design.md §1.10).
 *   m     a valid erlang model with T > 0
 *   rate  out: requests/s, finite, > 0
 * Errors: MS_EINVAL for the capacity model (no pool, no timeout), T = 0,
 * or a T so small (below c / DBL_MAX) that c / T overflows.
 */
int ms_inflight_capacity(const ms_failure_model *m, double *rate,
                         ms_error *err);

/*
 * ms_worst_amplification: prod_i (r_i + 1), the attempts one request can
 * cause at the dependency when every attempt of every tier fails and each
 * tier retries its own count: (r + 1)^k for k tiers of r retries (4 tiers
 * of 3 retries: 256).  The retry counts' bound; a budget or quota caps
 * the policy's amplification below it (ms_amplification at p = 1).
 *   p  a valid policy.  Result: >= 1, at most 10001^10.
 */
double ms_worst_amplification(const ms_retry_policy *p);

/* ---- safe settings at a peak load (model/recommend.c) ------------------ */

/* Largest margin above the peak load (10: safe up to 11 times the peak). */
#define MS_RECOMMEND_MAX_MARGIN 10.0
/* The margin `metastable recommend` and the plugin's safe_retries use when
 * none is given: stable up to 1.2 times the load. */
#define MS_RECOMMEND_DEFAULT_MARGIN 0.2
/* Largest retry count ms_recommend_max_retries examines. */
#define MS_RECOMMEND_MAX_RETRIES 100
/* Relative width of the bracket at which ms_recommend_knob stops. */
#define MS_RECOMMEND_TOLERANCE 1e-9
/* max_tokens of gRPC throttling where a service without it is given it
 * (gRFC A6 has no default; its example's 10). */
#define MS_RECOMMEND_GRPC_MAX_TOKENS 10.0

/* One answer of the planning functions. */
typedef struct {
  double value;         /* the setting (retries, servers, a share, s) */
  bool safe;            /* the service with that value is safe; false:
                           nothing in the searched range is, and value is
                           the closest (the range's safest end) */
  bool at_bound;        /* value is an end of the searched range (safe at
                           the end: perhaps beyond it too) */
  double tipping_load;  /* req/s, of the service with that value */
  double recovery_load; /* req/s, likewise */
} ms_recommend_answer;

/*
 * ms_recommend_safe: whether service s is safe at peak load `peak` with margin
 * `margin`: its state is stable (doc/design.md §1.4) at every offered load
 * up to (1 + margin) peak, so no collapsed equilibrium exists there and a
 * storm started by any trigger ends once the trigger is gone.  The state
 * is stable exactly below the recovery load, with a band or without one
 * (then the recovery load is the load whose equilibrium reaches capacity,
 * above which the one equilibrium is the overloaded one), so safe is
 * recovery_load > (1 + margin) peak; tests/check_recommend.c holds it to a
 * scan of ms_equilibria over the loads.
 *   s       valid service parameters
 *   peak    req/s, finite, in [0, MS_MAX_RATE]
 *   margin  share, in [0, MS_RECOMMEND_MAX_MARGIN]
 *   safe    out; ls out (may be NULL): the landscape of s
 * Errors: those of ms_landscape_build; MS_EINVAL for peak or margin.
 */
int ms_recommend_safe(const ms_service_params *s, double peak, double margin,
                      bool *safe, ms_landscape *ls, ms_error *err);

/*
 * ms_recommend_recovery_safe: the rule of ms_recommend_safe on a recovery load
 * already known: whether recovery_load (req/s) makes a service safe at
 * peak load `peak` (req/s) with margin `margin` (share).  The one home of
 * the rule; every planning answer and the plugin's safe_retries use it.
 * Any doubles (NaN is never safe); no errors.
 */
bool ms_recommend_recovery_safe(double recovery_load, double peak,
                                double margin);

/*
 * ms_recommend_retry_counts: how many retry counts r = 0, 1, ... the planner
 * examines for s: up to MS_RECOMMEND_MAX_RETRIES, or fewer where the policy has
 * its own cap (gRPC's 5 attempts).  r is policy.retries, tier 0 and the
 * tiers without their own count.  No landscape is built.
 *   s  valid service parameters.  Result: 1 to MS_RECOMMEND_MAX_RETRIES + 1.
 */
int ms_recommend_retry_counts(const ms_service_params *s);

/*
 * ms_recommend_retry_recovery: the recovery load (req/s) of s with r retries
 * (as ms_recommend_retry_counts counts them), by one landscape build
 * (doc/design.md §1.3).  It does not depend on a load, so a caller that
 * asks at many loads (the plugin, every interval) keeps it.
 *   r  in [0, ms_recommend_retry_counts(s))
 * Errors: MS_EINVAL for r outside that range; those of ms_landscape_build.
 */
int ms_recommend_retry_recovery(const ms_service_params *s, int r,
                                double *recovery, ms_error *err);

/*
 * ms_recommend_max_retries: the largest retry count r (policy.retries, tier 0
 * and the tiers without their own count) in [0, MS_RECOMMEND_MAX_RETRIES] for
 * which s is safe (ms_recommend_safe), every count examined (no monotonicity
 * assumed), up to the policy's own cap (gRPC's 5 attempts).  When none is,
 * out->safe is false and out->value is 0 with its loads.
 * Errors: those of ms_recommend_safe.
 */
int ms_recommend_max_retries(const ms_service_params *s, double peak,
                             double margin, ms_recommend_answer *out,
                             ms_error *err);

/*
 * ms_recommend_knob: the largest (larger_safer false) or smallest (true) value
 * of parameter id over its MS_PARAMS range for which s, with only that
 * parameter changed, is safe; by bisection to MS_RECOMMEND_TOLERANCE relative,
 * which assumes safety changes once over the range (tests/check_recommend.c
 * scans it for the services it tests).  The timeout is the exception:
 * safety is not monotone in it (a very short timeout removes the band, one
 * in between can be the least safe; tests/check_recommend.c), so the answer is
 * where the safe stretch that reaches the longest timeout begins, found by
 * a scan down from the longest by factors of 10^(1/8), then bisection;
 * shorter timeouts may be safe as well.  out->value is the safe end of
 * the final bracket.
 *   id  MS_PARAM_RETRY_BUDGET or MS_PARAM_TOKEN_RATIO (the count policy
 *       with that cap, a named policy replaced), MS_PARAM_GRPC_TOKEN_RATIO,
 *       MS_PARAM_ENVOY_BUDGET, MS_PARAM_FINAGLE_PERCENT, MS_PARAM_AWS_REFUND
 *       (that named policy, with its defaults when s has another one;
 *       gRPC with MS_RECOMMEND_GRPC_MAX_TOKENS), MS_PARAM_TIMEOUT (erlang, up
 *       to MS_MAX_TIMEOUT_COMPLETIONS / (c mu)), MS_PARAM_CAPACITY
 *       (capacity model)
 * When the safe end of the range is not safe, out->safe is false and
 * out->value is that end; when both ends are safe, out->value is the
 * other end (at_bound).
 * Errors: MS_EINVAL for an id that is not a knob of s; those of
 * ms_recommend_safe.
 */
int ms_recommend_knob(const ms_service_params *s, ms_param id,
                      bool larger_safer, double peak, double margin,
                      ms_recommend_answer *out, ms_error *err);

/*
 * ms_recommend_apply: service s with parameter id set to value as the
 * planner sets it (ms_recommend_max_retries, ms_recommend_min_servers,
 * ms_recommend_knob): the service an answer describes.
 *   id     MS_PARAM_RETRIES (policy.retries), MS_PARAM_SERVERS (erlang),
 *          or a knob of ms_recommend_knob
 *   value  in the parameter's unit; retries a whole number in [0,
 *          MS_RECOMMEND_MAX_RETRIES], servers one in [1, MS_MAX_SERVERS]
 *   out    the service; untouched on an error
 * Errors: MS_EINVAL for an id that is not a knob of s, a value outside
 * the above, or a service that ms_service_params_check refuses.
 */
int ms_recommend_apply(const ms_service_params *s, ms_param id, double value,
                       ms_service_params *out, ms_error *err);

/*
 * ms_recommend_min_servers: the fewest servers (erlang) for which s is safe, by
 * bisection over [1, min(MS_MAX_SERVERS, MS_MAX_TIMEOUT_COMPLETIONS /
 * (mu T))], which assumes more servers are never less safe.  When the
 * largest is not safe, out->safe is false and out->value is that largest.
 * Errors: MS_EINVAL for the capacity model; those of ms_recommend_safe.
 */
int ms_recommend_min_servers(const ms_service_params *s, double peak,
                             double margin, ms_recommend_answer *out,
                             ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
