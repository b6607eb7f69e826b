/* SPDX-License-Identifier: MIT */
/*
 * Every public function rejects invalid parameters with MS_EINVAL and a
 * message, and leaves its outputs untouched (table-driven).
 */
#include <math.h>
#include <string.h>

#include "check_suites.h"
#include "exact.h"
#include "metastable.h"

#define SENTINEL 12345.0

static ms_service_params good_erlang(void) {
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 30, 10, 1);
  ms_retry_policy_fixed(&s.policy, 2);
  return s;
}

static ms_service_params good_capacity(void) {
  ms_service_params s;
  ms_failure_model_capacity(&s.model, 300);
  ms_retry_policy_fixed(&s.policy, 2);
  return s;
}

/* ---- one row per invalid call ---------------------------------------- */

typedef int (*call_fn)(ms_error *err, double *out);

#define ROW(name, ...)                                                         \
  static int name(ms_error *err, double *out) { __VA_ARGS__ }

ROW(b_c0, return ms_erlang_ln_b(0, 0.5, out, err);)
ROW(b_cneg, return ms_erlang_ln_b(-3, 0.5, out, err);)
ROW(b_cbig, return ms_erlang_ln_b(MS_MAX_SERVERS + 1, 0.5, out, err);)
ROW(b_a0, return ms_erlang_ln_b(10, 0.0, out, err);)
ROW(b_aneg, return ms_erlang_ln_b(10, -1.0, out, err);)
ROW(b_anan, return ms_erlang_ln_b(10, NAN, out, err);)
ROW(b_ainf, return ms_erlang_ln_b(10, INFINITY, out, err);)
ROW(c_c0, return ms_erlang_ln_c(0, 0.5, out, err);)
ROW(c_aeqc, return ms_erlang_ln_c(5, 5.0, out, err);)
ROW(c_agtc, return ms_erlang_ln_c(5, 7.0, out, err);)
ROW(c_anan, return ms_erlang_ln_c(5, NAN, out, err);)
ROW(v_c0, ms_erlang_values v; v.erlang_b = SENTINEL;
    int st = ms_erlang(0, 0.5, &v, err); *out = v.erlang_b; return st;)
ROW(v_anan, ms_erlang_values v; v.erlang_b = SENTINEL;
    int st = ms_erlang(3, NAN, &v, err); *out = v.erlang_b; return st;)
ROW(r_c0, return ms_erlang_ln_b_recursive(0, 0.5, out, err);)
ROW(r_a0, return ms_erlang_ln_b_recursive(10, 0.0, out, err);)
ROW(r_anan, return ms_erlang_ln_b_recursive(10, NAN, out, err);)
ROW(w_c0, return ms_ln_wait_tail(0, 1, 1, 1, out, err);)
ROW(w_mu0, return ms_ln_wait_tail(3, 0, 1, 1, out, err);)
ROW(w_muneg, return ms_ln_wait_tail(3, -1, 1, 1, out, err);)
ROW(w_munan, return ms_ln_wait_tail(3, NAN, 1, 1, out, err);)
ROW(w_x0, return ms_ln_wait_tail(3, 1, 0, 1, out, err);)
ROW(w_xneg, return ms_ln_wait_tail(3, 1, -1, 1, out, err);)
ROW(w_xinf, return ms_ln_wait_tail(3, 1, INFINITY, 1, out, err);)
ROW(w_tneg, return ms_ln_wait_tail(3, 1, 1, -1, out, err);)
ROW(w_tnan, return ms_ln_wait_tail(3, 1, 1, NAN, out, err);)
ROW(w_cmuinf, return ms_ln_wait_tail(MS_MAX_SERVERS, 1e303, 1, 1, out, err);)

#define MODEL_ROW(name, field_change)                                          \
  static int name(ms_error *err, double *out) {                                \
    ms_service_params s = good_erlang();                                       \
    ms_service_params c = good_capacity();                                     \
    (void)c;                                                                   \
    field_change;                                                              \
    return ms_failure_probability(&s.model, 1.0, out, err);                    \
  }
MODEL_ROW(m_baseneg, s.model.base_failure = -0.1)
MODEL_ROW(m_base1, s.model.base_failure = 1.0)
MODEL_ROW(m_basenan, s.model.base_failure = NAN)
MODEL_ROW(m_cap0, s = c; s.model.capacity = 0)
MODEL_ROW(m_capneg, s = c; s.model.capacity = -5)
MODEL_ROW(m_capinf, s = c; s.model.capacity = INFINITY)
MODEL_ROW(m_servers0, s.model.servers = 0)
MODEL_ROW(m_serversbig, s.model.servers = MS_MAX_SERVERS + 1)
MODEL_ROW(m_mu0, s.model.service_rate = 0)
MODEL_ROW(m_munan, s.model.service_rate = NAN)
MODEL_ROW(m_tneg, s.model.timeout = -1)
MODEL_ROW(m_tinf, s.model.timeout = INFINITY)
MODEL_ROW(m_kind, s.model.kind = (ms_model_kind)7)
ROW(p_xneg, ms_service_params s = good_erlang();
    return ms_failure_probability(&s.model, -1.0, out, err);)
ROW(p_xnan, ms_service_params s = good_erlang();
    return ms_failure_probability(&s.model, NAN, out, err);)
ROW(p_null, return ms_failure_probability(NULL, 1.0, out, err);)

#define POLICY_ROW(name, change)                                               \
  static int name(ms_error *err, double *out) {                                \
    ms_retry_policy p;                                                         \
    ms_retry_policy_fixed(&p, 2);                                              \
    change;                                                                    \
    return ms_amplification(&p, 0.5, out, err);                                \
  }
POLICY_ROW(a_rneg, p.retries = -1)
POLICY_ROW(a_rbig, p.retries = MS_MAX_RETRIES + 1)
POLICY_ROW(a_tiers0, p.tiers = 0)
POLICY_ROW(a_tiersbig, p.tiers = MS_MAX_TIERS + 1)
POLICY_ROW(a_budget1, p.has_budget = true; p.retry_budget = 1.0)
POLICY_ROW(a_budgetneg, p.has_budget = true; p.retry_budget = -0.1)
POLICY_ROW(a_budgetnan, p.has_budget = true; p.retry_budget = NAN)
POLICY_ROW(a_token0, p.has_token = true; p.token_ratio = 0.0)
POLICY_ROW(a_tokenbig, p.has_token = true; p.token_ratio = 1.5)
ROW(a_pneg, ms_retry_policy p; ms_retry_policy_fixed(&p, 2);
    return ms_amplification(&p, -0.1, out, err);)
ROW(a_pbig, ms_retry_policy p; ms_retry_policy_fixed(&p, 2);
    return ms_amplification(&p, 1.1, out, err);)
ROW(a_pnan, ms_retry_policy p; ms_retry_policy_fixed(&p, 2);
    return ms_amplification(&p, NAN, out, err);)
ROW(o_xneg, ms_service_params s = good_erlang();
    return ms_offered_load_at(&s, -1.0, out, err);)
ROW(o_bad, ms_service_params s = good_erlang(); s.policy.tiers = 0;
    return ms_offered_load_at(&s, 1.0, out, err);)
ROW(l_bad, ms_service_params s = good_capacity(); s.model.base_failure = 2;
    ms_landscape ls; ls.tipping_load = SENTINEL;
    int st = ms_landscape_build(&s, &ls, err); *out = ls.tipping_load;
    return st;)

static int equilibria_at(double lambda, ms_error *err, double *out) {
  ms_service_params s = good_erlang();
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n = -1;
  int st = ms_equilibria(&ls, lambda, eq, &n, err);
  *out = n == -1 ? SENTINEL : n;
  return st;
}
ROW(e_neg, return equilibria_at(-1.0, err, out);)
ROW(e_nan, return equilibria_at(NAN, err, out);)
ROW(e_inf, return equilibria_at(INFINITY, err, out);)

static int analyze_with(ms_observation o, ms_error *err, double *out) {
  ms_service_params s = good_erlang();
  ms_landscape ls;
  ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_OK);
  ms_analysis r;
  r.offered_load = SENTINEL;
  int st = ms_analyze(&ls, &o, &r, err);
  *out = r.offered_load;
  return st;
}
ROW(z_lamnan,
    return analyze_with((ms_observation){.offered_load = NAN}, err, out);)
ROW(z_lamneg,
    return analyze_with((ms_observation){.offered_load = -2}, err, out);)
ROW(z_obsneg,
    return analyze_with((ms_observation){.offered_load = 100,
                                         .has_observed_attempts = true,
                                         .observed_attempts = -1},
                        err, out);)
ROW(z_failbig,
    return analyze_with((ms_observation){.offered_load = 100,
                                         .has_observed_failure = true,
                                         .observed_failure = 1.5},
                        err, out);)
ROW(z_prev, return analyze_with((ms_observation){.offered_load = 100,
                                                 .has_previous = true,
                                                 .previous = (ms_state)9},
                                err, out);)

ROW(x_erlang, ms_service_params s = good_erlang(); ms_exact_capacity e;
    ms_exact_capacity_init(&e); int st = ms_exact_capacity_set(&e, &s, 1, err);
    ms_exact_capacity_clear(&e); *out = SENTINEL; return st;)
ROW(x_lamneg, ms_service_params s = good_capacity(); ms_exact_capacity e;
    ms_exact_capacity_init(&e); int st = ms_exact_capacity_set(&e, &s, -1, err);
    ms_exact_capacity_clear(&e); *out = SENTINEL; return st;)
ROW(x_certify0, ms_service_params s = good_capacity(); double hi = SENTINEL;
    return ms_exact_certify(&s, 100, 0.0, out, &hi, err);)
ROW(x_nobracket, ms_service_params s = good_capacity(); ms_exact_capacity e;
    ms_exact_capacity_init(&e); ms_exact_capacity_set(&e, &s, 100, NULL);
    mpq_t lo, hi; mpq_inits(lo, hi, NULL); mpq_set_ui(lo, 1, 1);
    mpq_set_ui(hi, 2, 1); /* F - L > 0 at both ends */
    int st = ms_exact_enclose(&e, lo, hi, 60, err); mpq_clears(lo, hi, NULL);
    ms_exact_capacity_clear(&e); *out = SENTINEL; return st;)
ROW(x_badbase, ms_exact_capacity e; ms_exact_capacity_init(&e);
    mpq_set_ui(e.capacity, 1, 1); mpq_set_ui(e.base_failure, 1, 1);
    mpq_t lo, hi; mpq_inits(lo, hi, NULL);
    int st = ms_exact_fixed_point(&e, lo, hi, 60, err);
    mpq_clears(lo, hi, NULL); ms_exact_capacity_clear(&e); *out = SENTINEL;
    return st;)

static const struct {
  const char *name;
  call_fn fn;
} rows[] = {
#define R(x)                                                                   \
  { #x, x }
    R(b_c0),       R(b_cneg),    R(b_cbig),      R(b_a0),         R(b_aneg),
    R(b_anan),     R(b_ainf),    R(c_c0),        R(c_aeqc),       R(c_agtc),
    R(c_anan),     R(v_c0),      R(v_anan),      R(r_c0),         R(r_a0),
    R(r_anan),     R(w_c0),      R(w_mu0),       R(w_muneg),      R(w_munan),
    R(w_x0),       R(w_xneg),    R(w_xinf),      R(w_tneg),       R(w_tnan),
    R(w_cmuinf),   R(m_baseneg), R(m_base1),     R(m_basenan),    R(m_cap0),
    R(m_capneg),   R(m_capinf),  R(m_servers0),  R(m_serversbig), R(m_mu0),
    R(m_munan),    R(m_tneg),    R(m_tinf),      R(m_kind),       R(p_xneg),
    R(p_xnan),     R(p_null),    R(a_rneg),      R(a_rbig),       R(a_tiers0),
    R(a_tiersbig), R(a_budget1), R(a_budgetneg), R(a_budgetnan),  R(a_token0),
    R(a_tokenbig), R(a_pneg),    R(a_pbig),      R(a_pnan),       R(o_xneg),
    R(o_bad),      R(l_bad),     R(e_neg),       R(e_nan),        R(e_inf),
    R(z_lamnan),   R(z_lamneg),  R(z_obsneg),    R(z_failbig),    R(z_prev),
    R(x_erlang),   R(x_lamneg),  R(x_certify0),  R(x_nobracket),  R(x_badbase),
#undef R
};

START_TEST(test_invalid_rejected) {
  ms_error err;
  memset(&err, 0, sizeof err);
  double out = SENTINEL;
  int st = rows[_i].fn(&err, &out);
  ck_assert_msg(st == MS_EINVAL, "%s: status %d (%s), want MS_EINVAL",
                rows[_i].name, st, ms_status_name(st));
  ck_assert_msg(err.msg[0] != '\0', "%s: no message", rows[_i].name);
  ck_assert_msg(out == SENTINEL, "%s: output written on error (%g)",
                rows[_i].name, out);
}
END_TEST

/* Valid extremes give finite results: no NaN or Inf leaves the library. */
START_TEST(test_extremes_finite) {
  double v;
  ck_assert_int_eq(ms_erlang_ln_b(MS_MAX_SERVERS, 1e-300, &v, NULL), MS_OK);
  ck_assert(isfinite(v));
  ck_assert_int_eq(ms_erlang_ln_c(1, 1e-300, &v, NULL), MS_OK);
  ck_assert(isfinite(v));
  ck_assert_int_eq(ms_ln_wait_tail(1, 1e290, 1e-300, 1e300, &v, NULL), MS_OK);
  ck_assert(isfinite(v));
  ck_assert_int_eq(ms_ln_wait_tail(MS_MAX_SERVERS, 1.0, 1e-320, 0.0, &v, NULL),
                   MS_OK);
  ck_assert(isfinite(v));
  ms_service_params s = good_erlang();
  ck_assert_int_eq(ms_offered_load_at(&s, 1e300, &v, NULL), MS_OK);
  ck_assert(isfinite(v));
  s = good_capacity();
  ck_assert_int_eq(ms_offered_load_at(&s, 1e300, &v, NULL), MS_OK);
  ck_assert(isfinite(v));
  ck_assert_str_eq(ms_status_name(MS_EINVAL), "invalid argument");
  ck_assert_str_eq(ms_state_name((ms_state)42), "unknown");
}
END_TEST

/* The rule across servers, service rate and timeout
 * (MS_MAX_TIMEOUT_COMPLETIONS): at the limit the landscape is the
 * no-timeout one in closed form, tipping load c mu / A(base)^k and
 * recovery load c mu / A(1)^k (doc/design.md §1.3: without a timeout no
 * attempt fails below c mu and every one fails at it), and a service at
 * 55 % of c mu is vulnerable; above the limit every entry point refuses
 * the parameters with the model's message. */
START_TEST(test_timeout_span) {
  static const struct {
    long c;
    double mu, base;
    int r, k;
  } cases[] = {{10, 10, 0, 3, 1},
               {1, 0.01, 0, 1, 1},
               {1, 1, 0.3, 100, 1},
               {30, 10, 0.1, 3, 3},
               {10000000, 1000, 0, 2, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double cmu = (double)cases[i].c * cases[i].mu;
    /* the largest timeout the rule accepts */
    double T = MS_MAX_TIMEOUT_COMPLETIONS / cmu;
    while (cmu * T > MS_MAX_TIMEOUT_COMPLETIONS)
      T = nextafter(T, 0.0);
    ms_service_params s;
    ms_failure_model_erlang(&s.model, cases[i].c, cases[i].mu, T);
    s.model.base_failure = cases[i].base;
    ms_retry_policy_fixed(&s.policy, cases[i].r);
    s.policy.tiers = cases[i].k;
    ms_error err;
    ms_landscape ls;
    ck_assert_int_eq(ms_landscape_build(&s, &ls, &err), MS_OK);
    double a_base = 0, a_one = cases[i].r + 1.0;
    for (int j = 0; j <= cases[i].r; j++)
      a_base += pow(cases[i].base, j);
    double tip = cmu / pow(a_base, cases[i].k);
    double rec = cmu / pow(a_one, cases[i].k);
    ck_assert_msg(ls.has_fold, "case %zu: no fold", i);
    ck_assert_msg(fabs(ls.tipping_load - tip) <= 1e-12 * tip,
                  "case %zu: tipping %.17g, no-timeout limit %.17g", i,
                  ls.tipping_load, tip);
    ck_assert_msg(fabs(ls.recovery_load - rec) <= 1e-13 * rec,
                  "case %zu: recovery %.17g, no-timeout limit %.17g", i,
                  ls.recovery_load, rec);
    ms_observation o = {.offered_load = 0.55 * tip};
    ms_analysis rep;
    ck_assert_int_eq(ms_analyze(&ls, &o, &rep, NULL), MS_OK);
    ck_assert_int_eq(rep.state, MS_STATE_VULNERABLE);
    ck_assert_int_eq(rep.storm, 0);

    /* one ulp of timeout past the limit: refused everywhere */
    s.model.timeout = nextafter(T, INFINITY);
    if (!(cmu * s.model.timeout > MS_MAX_TIMEOUT_COMPLETIONS))
      s.model.timeout *= 1 + 1e-15;
    err.msg[0] = '\0';
    ck_assert_int_eq(ms_failure_model_check(&s.model, &err), MS_EINVAL);
    ck_assert_msg(strstr(err.msg, "timeout x servers x service rate = ") &&
                      strstr(err.msg, "must be at most 1e+15"),
                  "%s", err.msg);
    ck_assert_int_eq(ms_service_params_check(&s, NULL), MS_EINVAL);
    ck_assert_int_eq(ms_landscape_build(&s, &ls, NULL), MS_EINVAL);
  }
  /* someone's "no timeout": 1e17 s at c mu = 100 */
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 10, 1e17);
  ms_retry_policy_fixed(&s.policy, 3);
  ms_error err;
  ck_assert_int_eq(ms_service_params_check(&s, &err), MS_EINVAL);
  ck_assert_str_eq(err.msg, "timeout = 1e+17 s: timeout x servers x service "
                            "rate = 1e+19 must be at most 1e+15; a longer "
                            "timeout never fires before the queue is "
                            "unbounded (no timeout: 1e+13 s)");
}
END_TEST

Suite *errors_suite(void) {
  Suite *s = suite_create("errors");
  TCase *tc = tcase_create("invalid");
  tcase_add_loop_test(tc, test_invalid_rejected, 0,
                      (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_extremes_finite);
  tcase_add_test(tc, test_timeout_span);
  suite_add_tcase(s, tc);
  return s;
}
