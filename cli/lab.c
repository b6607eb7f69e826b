/* SPDX-License-Identifier: MIT */
/*
 * metastable lab: the capacity model's lab (doc/design.md §1.6) in exact
 * rational arithmetic (model/exact.h, GMP).  The decimals on the command line
 * are read exactly (0.95 is 19/20), the map L' = lambda A(p(L)) is iterated
 * without rounding until the fractions pass a digit limit, and the fixed
 * point is then bracketed by bisection with exact ends (doc/design.md §1.6).
 */
#include <float.h>
#include <gmp.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "exact.h"

/* Largest --max-seconds, s (a day). */
#define MAX_SECONDS 86400.0

static const char usage[] =
    "Usage: metastable lab --load L --base-failure P --retries R "
    "[--capacity C]\n"
    "                      [--tiers K] [--retry-budget B] [--token-ratio "
    "T]\n"
    "                      [--iterations N] [--digit-limit D] [--bits B]\n"
    "                      [--max-seconds S]\n"
    "\n"
    "The capacity model in exact rational arithmetic (GMP).  The\n"
    "numbers are read exactly (0.95 is 19/20; 19/20 also works).  Prints the\n"
    "iteration L0 = L, L(n+1) = L * A(p(Ln)) with the digits of every "
    "fraction,\n"
    "stopping when they pass the limit, then the exact bracket of the fixed\n"
    "point found by bisection, and how many decimal places its ends share.\n";

#define STR_(x) #x
#define STR(x) STR_(x)

enum {
  OPT_LOAD = MS_OPT_SHARED_END,
  OPT_BASE,
  OPT_RETRIES,
  OPT_CAPACITY,
  OPT_ITERATIONS,
  OPT_DIGITS,
  OPT_BITS,
  OPT_MAX_SECONDS,
};

/* --tiers, --retry-budget and --token-ratio are the model's, read
 * exactly. */
static const ms_cli_option options[] = {
    {"--load", "L", OPT_LOAD, "offered load, requests/s, > 0"},
    {"--base-failure", "P", OPT_BASE,
     "failure probability below capacity, [0, 1)"},
    {"--retries", "R", OPT_RETRIES,
     "retries per request, in [0, " STR(MS_EXACT_MAX_RETRIES) "] (exact "
                                                              "arithmetic)"},
    {"--capacity", "C", OPT_CAPACITY,
     "capacity, requests/s, > 0 (default 1: loads in units of capacity)"},
    MS_CLI_SHARED(MS_OPT_TIERS),
    MS_CLI_SHARED(MS_OPT_RETRY_BUDGET),
    MS_CLI_SHARED(MS_OPT_TOKEN_RATIO),
    {"--iterations", "N", OPT_ITERATIONS,
     "most iterates to show, 1..1000 (default 12)"},
    {"--digit-limit", "D", OPT_DIGITS,
     "stop when a numerator or denominator has more than D digits, "
     "1..1000000 (default 3000)"},
    {"--bits", "B", OPT_BITS,
     "bracket until its width is below 2^-B of its lower end, 1..10000 "
     "(default 60)"},
    {"--max-seconds", "S", OPT_MAX_SECONDS,
     "time budget of the iteration and the bisection, s, (0, 86400] "
     "(default 60): when it runs out, the bracket reached so far is printed "
     "with how far it got (Ctrl-C does the same, with exit status 130)"},
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

/* ---- exact decimals -------------------------------------------------- */

/* q to `digits` significant digits in the style of %g ("1.72736",
 * "1.10462e+310"), from the exact value: a GMP float has no double's
 * range limit.  A value outside a double's range is not shown as inf: it
 * gets a '*' after it and *beyond is set, for a footnote (see
 * beyond_note). */
static const char *sci(char *buf, size_t len, const mpq_t q, int digits,
                       bool *beyond) {
  mpf_t f;
  mpf_init2(f, 128);
  mpf_set_q(f, q);
  int n = gmp_snprintf(buf, len, "%.*Fg", digits, f);
  mpf_abs(f, f);
  bool out = mpf_cmp_d(f, DBL_MAX) > 0 ||
             (mpf_sgn(f) != 0 && mpf_cmp_d(f, DBL_MIN) < 0);
  mpf_clear(f);
  if (out && n >= 0 && (size_t)n + 1 < len)
    strcpy(buf + n, "*");
  *beyond |= out;
  return buf;
}

static void beyond_note(bool beyond) {
  if (beyond)
    printf("  * beyond the range of a double (about 2.2e-308 to 1.8e+308): "
           "exact here, but\n    too large or too small for any program "
           "that reads doubles\n");
}

/* q >= 0 written with `places` decimals, truncated (not rounded), with
 * "..." when digits remain; trailing zeros of an exact value dropped.
 * Returns a malloc'd string. */
static char *decimal(const mpq_t q, unsigned places) {
  mpz_t scaled, rem, pow10;
  mpz_inits(scaled, rem, pow10, NULL);
  mpz_ui_pow_ui(pow10, 10, places);
  mpz_mul(scaled, mpq_numref(q), pow10);
  mpz_tdiv_qr(scaled, rem, scaled, mpq_denref(q));
  int exact = mpz_sgn(rem) == 0;
  char *digits = mpz_get_str(NULL, 10, scaled);
  size_t n = strlen(digits);
  char *out = malloc(n + places + 8);
  if (out == NULL) {
    free(digits);
    mpz_clears(scaled, rem, pow10, NULL);
    return NULL;
  }
  /* pad so there is at least one digit before the point */
  size_t pad = n <= places ? places + 1 - n : 0;
  char *buf = malloc(n + pad + 1);
  if (buf == NULL) {
    free(out);
    free(digits);
    mpz_clears(scaled, rem, pow10, NULL);
    return NULL;
  }
  memset(buf, '0', pad);
  memcpy(buf + pad, digits, n + 1);
  size_t len = n + pad, int_len = len - places;
  memcpy(out, buf, int_len);
  size_t k = int_len;
  if (places > 0) {
    size_t frac_len = places;
    if (exact)
      while (frac_len > 0 && buf[int_len + frac_len - 1] == '0')
        frac_len--;
    if (frac_len > 0) {
      out[k++] = '.';
      memcpy(out + k, buf + int_len, frac_len);
      k += frac_len;
    }
  }
  if (!exact) {
    memcpy(out + k, "...", 3);
    k += 3;
  }
  out[k] = '\0';
  free(buf);
  free(digits);
  mpz_clears(scaled, rem, pow10, NULL);
  return out;
}

/* How many decimal places a and b (0 <= a <= b) share when truncated, at
 * most `limit`; -1 when their integer parts differ. */
static int agreeing_places(const mpq_t a, const mpq_t b, int limit) {
  mpz_t ta, tb, p;
  mpz_inits(ta, tb, p, NULL);
  /* the truncations to k places agree for k = 0 .. places */
  int places = -1;
  for (int k = 0; k <= limit; k++) {
    mpz_ui_pow_ui(p, 10, (unsigned long)k);
    mpz_mul(ta, mpq_numref(a), p);
    mpz_tdiv_q(ta, ta, mpq_denref(a));
    mpz_mul(tb, mpq_numref(b), p);
    mpz_tdiv_q(tb, tb, mpq_denref(b));
    if (mpz_cmp(ta, tb) != 0)
      break;
    places = k;
  }
  mpz_clears(ta, tb, p, NULL);
  return places;
}

/* A fraction, whole when short enough to read. */
static void print_fraction(const char *label, const mpq_t q) {
  size_t nd = ms_exact_digits(mpq_numref(q)),
         dd = ms_exact_digits(mpq_denref(q));
  if (nd + dd <= 240) {
    char *s = mpq_get_str(NULL, 10, q);
    printf("%s%s\n", label, s ? s : "?");
    free(s);
  } else {
    printf("%s(a fraction of %zu / %zu digits)\n", label, nd, dd);
  }
}

/* ---- the iteration table --------------------------------------------- */

struct lab_args_s;
static const char *stop_reason(const struct lab_args_s *a);

typedef struct {
  size_t digit_limit;
  int last_step;
  size_t prev_digits; /* denominator digits of the previous iterate */
  const struct lab_args_s *args;
  const char *stopped; /* why the iteration stopped early, or NULL */
} table;

static int row(void *user, int step, const mpq_t value, size_t nd, size_t dd) {
  table *t = user;
  t->last_step = step;
  if (value != NULL && (t->stopped = stop_reason(t->args)) != NULL)
    return 1;
  if (value == NULL) {
    printf("%4d  stopped: this iterate's %s has %zu digits, past the limit "
           "of %zu\n"
           "      (--digit-limit); the last step multiplied the digits by "
           "%.1f.  Iterating\n"
           "      further only makes the fractions longer, and rounding "
           "them would hide\n"
           "      that.  The bracket below does not iterate.\n",
           step, dd >= nd ? "denominator" : "numerator", dd >= nd ? dd : nd,
           t->digit_limit,
           t->prev_digits ? (double)dd / (double)t->prev_digits : 0.0);
    return 0;
  }
  t->prev_digits = dd;
  char *d = decimal(value, 12);
  printf("%4d  %-22s %10zu %12zu\n", step, d ? d : "?", nd, dd);
  free(d);
  return 0;
}

/* ---- the command ----------------------------------------------------- */

static int parse_exact(mpq_t q, const char *opt, const char *text) {
  ms_error err;
  if (ms_exact_parse(q, text, &err) != MS_OK)
    return ms_cli_usage("%s: '%s' is not a decimal or a fraction (0.95, "
                        "19/20)",
                        opt, text);
  return 0;
}

/* lo <(=) q <(=) hi, else a usage error naming the range. */
static int exact_range(const mpq_t q, const char *opt, const char *text,
                       long lo, long hi, bool lo_open, bool hi_open) {
  int a = mpq_cmp_si(q, lo, 1);
  int b = hi < 0 ? -1 : mpq_cmp_si(q, hi, 1);
  if ((lo_open ? a > 0 : a >= 0) && (hi_open ? b < 0 : b <= 0))
    return 0;
  if (hi < 0)
    return ms_cli_usage("%s: '%s' is out of range: it must be %s %ld", opt,
                        text, lo_open ? ">" : ">=", lo);
  return ms_cli_usage("%s: '%s' is out of range: it must be in %c%ld, %ld%c",
                      opt, text, lo_open ? '(' : '[', lo, hi,
                      hi_open ? ')' : ']');
}

/* What the command line asks for: the numbers as written, to be read
 * exactly once all options are in. */
typedef struct lab_args_s {
  const char *load, *base, *capacity, *budget, *token; /* NULL: not given */
  long retries;                                        /* -1 until given */
  long tiers, iterations, digit_limit, bits;
  double max_seconds; /* --max-seconds */
  double deadline;    /* monotonic seconds when the budget runs out */
  bool help;          /* --help: print it and do nothing else */
} lab_args;

/* Monotonic seconds. */
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Why the work must stop now: "interrupted", "the time budget", or
 * NULL to go on. */
static const char *stop_reason(const struct lab_args_s *a) {
  if (ms_cli_interrupted())
    return "interrupted (Ctrl-C)";
  if (now_seconds() >= a->deadline)
    return "out of time (--max-seconds)";
  return NULL;
}

/* A whole-number model parameter into a long, by the model's rule. */
static int take_whole(const char *opt, const char *arg, ms_param id,
                      long *out) {
  double v;
  int r = ms_cli_param(opt, arg, id, &v);
  if (r == 0)
    *out = (long)v;
  return r;
}

/* One option of the command (ms_cli_take). */
static int take_option(void *args, int c, const char *arg) {
  lab_args *a = args;
  int r = 0;
  switch (c) {
  case OPT_LOAD:
    a->load = arg;
    break;
  case OPT_BASE:
    a->base = arg;
    break;
  case OPT_CAPACITY:
    a->capacity = arg;
    break;
  case MS_OPT_RETRY_BUDGET:
    a->budget = arg;
    break;
  case MS_OPT_TOKEN_RATIO:
    a->token = arg;
    break;
  case OPT_RETRIES:
    r = take_whole("--retries", arg, MS_PARAM_RETRIES, &a->retries);
    if (r == 0 && a->retries > MS_EXACT_MAX_RETRIES)
      r = ms_cli_usage("--retries: '%s' is out of range: it must be in "
                       "[0, %d] (exact arithmetic)",
                       arg, MS_EXACT_MAX_RETRIES);
    break;
  case MS_OPT_TIERS:
    r = take_whole("--tiers", arg, MS_PARAM_TIERS, &a->tiers);
    break;
  case OPT_ITERATIONS:
    r = ms_cli_long("--iterations", arg, 1, 1000, &a->iterations);
    break;
  case OPT_DIGITS:
    r = ms_cli_long("--digit-limit", arg, 1, 1000000, &a->digit_limit);
    break;
  case OPT_BITS:
    r = ms_cli_long("--bits", arg, 1, 10000, &a->bits);
    break;
  case OPT_MAX_SECONDS:
    r = ms_cli_duration("--max-seconds", arg, 0, MAX_SECONDS, MS_RANGE_LO_OPEN,
                        &a->max_seconds);
    break;
  default:
    return -1;
  }
  return r;
}

/* Take the options in the order given, stopping at the first bad one (or
 * at --help), so that the message names the option the user got wrong
 * first.  Returns 0 or the exit code of the message printed. */
static int parse_options(lab_args *a, int argc, char **argv) {
  int r =
      ms_cli_parse(argc, argv, &syntax, NULL, take_option, a, &a->help, NULL);
  if (r != 0 || a->help)
    return r;
  if (!a->load)
    return ms_cli_usage("give the offered load with --load L");
  if (!a->base)
    return ms_cli_usage("give the base failure probability with "
                        "--base-failure P");
  if (a->retries < 0)
    return ms_cli_usage("give the retries per request with --retries R");
  return 0;
}

/* Read the numbers into e exactly (0.95 is 19/20), each checked against
 * its range, then the whole service.  Returns 0 or MS_EXIT_USAGE. */
static int read_exact(ms_exact_capacity *e, const lab_args *a) {
  int r;
  if ((r = parse_exact(e->offered_load, "--load", a->load)) ||
      (r = exact_range(e->offered_load, "--load", a->load, 0, -1, true,
                       false)) ||
      (r = parse_exact(e->capacity, "--capacity", a->capacity)) ||
      (r = exact_range(e->capacity, "--capacity", a->capacity, 0, -1, true,
                       false)) ||
      (r = parse_exact(e->base_failure, "--base-failure", a->base)) ||
      (r = exact_range(e->base_failure, "--base-failure", a->base, 0, 1, false,
                       true)))
    return r;
  if (a->budget) {
    if ((r = parse_exact(e->retry_budget, "--retry-budget", a->budget)) ||
        (r = exact_range(e->retry_budget, "--retry-budget", a->budget, 0, 1,
                         false, true)))
      return r;
    e->has_budget = 1;
  }
  if (a->token) {
    if ((r = parse_exact(e->token_ratio, "--token-ratio", a->token)) ||
        (r = exact_range(e->token_ratio, "--token-ratio", a->token, 0, 1, true,
                         false)))
      return r;
    e->has_token = 1;
  }
  e->retries = (int)a->retries;
  e->tiers = (int)a->tiers;
  ms_error err;
  if (ms_exact_check(e, &err) != MS_OK)
    return ms_cli_usage("%s", err.msg);
  return 0;
}

/* The service as read, every number as the exact fraction it became, and
 * the map that is iterated. */
static void print_setting(const ms_exact_capacity *e) {
  printf("The capacity model in exact rational arithmetic\n");
  print_fraction("  offered load  lambda = ", e->offered_load);
  print_fraction("  capacity      C      = ", e->capacity);
  print_fraction("  base failure  base   = ", e->base_failure);
  printf("  retries       r      = %d", e->retries);
  if (e->tiers > 1)
    printf(", in each of %d tiers", e->tiers);
  printf("\n");
  if (e->has_budget)
    print_fraction("  retry budget  b      = ", e->retry_budget);
  if (e->has_token)
    print_fraction("  token ratio   t      = ", e->token_ratio);
  printf("  map           L' = lambda * A(p(L)),  p(L) = base + (1 - base) "
         "* max(0, (L - C)/L)\n\n");
}

/* The iterates, one row each (see row), until --iterations or until the
 * fractions pass --digit-limit.  Returns 0 or MS_EXIT_RUNTIME. */
static int print_iteration(const ms_exact_capacity *e, const lab_args *a) {
  printf("Iteration from L0 = lambda, exact (decimals truncated, '...' where "
         "the fraction goes on):\n");
  printf("step  value                  num digits   den digits\n");
  table t = {.digit_limit = (size_t)a->digit_limit, .last_step = -1, .args = a};
  int steps, limit;
  ms_error err;
  if (ms_exact_iterate(e, (int)a->iterations, (size_t)a->digit_limit, row, &t,
                       &steps, &limit, &err) != MS_OK)
    return ms_cli_fail("%s", err.msg);
  if (t.stopped)
    printf("      %s after %d iterates\n", t.stopped, t.last_step);
  else if (!limit)
    printf("      stopped after %d iterates (--iterations)\n", steps);
  printf("\n");
  return 0;
}

/* A(1), the amplification when every attempt fails, in doubles: lambda
 * A(1) is the map at an infinite load, the top of the bisection's
 * bracket. */
static double collapse_amplification(const ms_exact_capacity *e) {
  ms_service_params sp;
  ms_failure_model_capacity(&sp.model, mpq_get_d(e->capacity));
  sp.model.base_failure = mpq_get_d(e->base_failure);
  ms_retry_policy_fixed(&sp.policy, e->retries);
  sp.policy.tiers = e->tiers;
  sp.policy.has_budget = e->has_budget;
  sp.policy.retry_budget = e->has_budget ? mpq_get_d(e->retry_budget) : 0;
  sp.policy.has_token = e->has_token;
  sp.policy.token_ratio = e->has_token ? mpq_get_d(e->token_ratio) : 0;
  double A1 = 1;
  ms_amplification(&sp.policy, 1.0, &A1, NULL);
  return A1;
}

/* The bracket [lo, hi] of the fixed point, as fractions and decimals, and
 * how many decimal places its ends share: the digits of the fixed point
 * that are known for certain. */
static void print_bracket(const ms_exact_capacity *e, const mpq_t lo,
                          const mpq_t hi, long bits, bool *beyond) {
  mpq_t w, ceiling;
  mpq_inits(w, ceiling, NULL);
  char b1[96], b2[96];
  mpq_set_d(ceiling, collapse_amplification(e)); /* whole: for display only */
  mpq_mul(ceiling, ceiling, e->offered_load);
  printf("Fixed point, bracketed by bisection on [lambda, lambda * A(1)] = "
         "[%s, %s],\n"
         "each probe evaluated exactly; stopped when hi - lo <= 2^-%ld lo:\n",
         sci(b1, sizeof b1, e->offered_load, 6, beyond),
         sci(b2, sizeof b2, ceiling, 6, beyond), bits);
  char *dlo = decimal(lo, 30), *dhi = decimal(hi, 30);
  print_fraction("  lo = ", lo);
  printf("     = %s\n", dlo ? dlo : "?");
  print_fraction("  hi = ", hi);
  printf("     = %s\n", dhi ? dhi : "?");
  free(dlo);
  free(dhi);
  int places = agreeing_places(lo, hi, 1000);
  mpq_sub(w, hi, lo);
  if (mpq_sgn(w) == 0) {
    char *d = decimal(lo, 30);
    printf("  the ends are equal: the fixed point is exactly %s\n",
           d ? d : "?");
    free(d);
  } else if (places < 0) {
    printf("  width %s; the ends differ already in the integer part\n",
           sci(b1, sizeof b1, w, 3, beyond));
  } else {
    char *d = decimal(lo, (unsigned)places);
    printf("  width %s; the ends agree to %d decimal place%s: %s\n",
           sci(b1, sizeof b1, w, 3, beyond), places, places == 1 ? "" : "s",
           d ? d : "?");
    free(d);
  }
  mpq_clears(w, ceiling, NULL);
}

/* What the fixed point means, from the bracket's exact lower end: the
 * effective load against capacity, the failure probability
 * p(L) = base + (1 - base) max(0, (L - C) / L), the amplification
 * A(p(L)) = F(L) / lambda and the load the retries add. */
static void print_meaning(const ms_exact_capacity *e, const mpq_t lo,
                          bool *beyond) {
  mpq_t p, A, tmp, hundred;
  mpq_inits(p, A, tmp, hundred, NULL);
  if (mpq_cmp(lo, e->capacity) > 0) {
    mpq_sub(tmp, lo, e->capacity);
    mpq_div(tmp, tmp, lo);
  }
  mpq_set_ui(p, 1, 1);
  mpq_sub(p, p, e->base_failure);
  mpq_mul(p, p, tmp);
  mpq_add(p, p, e->base_failure);
  ms_exact_map(e, A, lo);
  mpq_div(A, A, e->offered_load);
  char b1[96], b2[96], b3[96], b4[96];
  printf("\nAt the fixed point:\n");
  mpq_div(tmp, lo, e->capacity);
  mpq_set_ui(hundred, 100, 1);
  mpq_mul(tmp, tmp, hundred);
  printf("  effective load       %s req/s = %s %% of capacity%s\n",
         sci(b1, sizeof b1, lo, 6, beyond), sci(b2, sizeof b2, tmp, 4, beyond),
         mpq_cmp(lo, e->capacity) > 0 ? ": a retry storm" : "");
  mpq_mul(tmp, p, hundred);
  printf("  failure probability  %s (%s %%)\n",
         sci(b1, sizeof b1, p, 4, beyond), sci(b2, sizeof b2, tmp, 3, beyond));
  printf("  amplification        %s attempts per request\n",
         sci(b1, sizeof b1, A, 6, beyond));
  mpq_sub(tmp, lo, e->offered_load);
  printf("  self-inflicted load  %s req/s, what the retries add to the "
         "offered %s\n",
         sci(b3, sizeof b3, tmp, 6, beyond),
         sci(b4, sizeof b4, e->offered_load, 6, beyond));
  mpq_clears(p, A, tmp, hundred, NULL);
}

/* The offered load at which the equilibrium reaches capacity: x = C is a
 * fixed point of the map with offered load lambda' when
 * lambda' A(p(C)) = C, and F(C) = lambda A(p(C)), so
 * lambda' = C lambda / F(C), exactly. */
static void print_engage(const ms_exact_capacity *e) {
  mpq_t fc, engage;
  mpq_inits(fc, engage, NULL);
  ms_exact_map(e, fc, e->capacity);
  mpq_mul(engage, e->capacity, e->offered_load);
  mpq_div(engage, engage, fc);
  char *de = decimal(engage, 10);
  printf("  the loop reaches capacity at an offered load of C / A(base) = "
         "%s req/s",
         de ? de : "?");
  free(de);
  if (ms_exact_digits(mpq_numref(engage)) +
          ms_exact_digits(mpq_denref(engage)) <
      60) {
    char *s = mpq_get_str(NULL, 10, engage);
    printf(" (%s)", s ? s : "?");
    free(s);
  }
  printf("\n");
  mpq_clears(fc, engage, NULL);
}

/* The fixed point, bracketed by bisection with exact ends, and what it
 * means.  Returns 0 or MS_EXIT_RUNTIME. */
static int print_fixed_point(const ms_exact_capacity *e, const lab_args *a) {
  mpq_t lo, hi;
  mpq_inits(lo, hi, NULL);
  ms_error err;
  int rc = MS_EXIT_OK;
  /* one bit at a time (each call goes on from the bracket so far), so
   * that the time budget and Ctrl-C are read at every probe or two */
  long bits = 1;
  const char *stopped = NULL;
  int st = ms_exact_fixed_point(e, lo, hi, 1, &err);
  while (st == MS_OK && bits < a->bits && !(stopped = stop_reason(a)))
    st = ms_exact_enclose(e, lo, hi, (unsigned)++bits, &err);
  if (st != MS_OK) {
    rc = ms_cli_fail("%s", err.msg);
  } else {
    bool beyond = false;
    if (stopped) {
      printf("Bisection %s after %.3g s: the bracket reached is\n"
             "2^-%ld of its lower end, of the 2^-%ld asked (--bits).  To go "
             "further: a larger\n--max-seconds, or fewer --bits, --retries "
             "or --tiers.\n",
             stopped, a->max_seconds - (a->deadline - now_seconds()), bits,
             a->bits);
      if (ms_cli_interrupted())
        rc = MS_EXIT_INTERRUPTED;
    }
    print_bracket(e, lo, hi, bits, &beyond);
    print_meaning(e, lo, &beyond);
    print_engage(e);
    beyond_note(beyond);
  }
  mpq_clears(lo, hi, NULL);
  return rc;
}

static int run(ms_exact_capacity *e, int argc, char **argv) {
  lab_args a = {.capacity = "1",
                .retries = -1,
                .tiers = 1,
                .iterations = 12,
                .digit_limit = 3000,
                .bits = 60,
                .max_seconds = 60};
  int r = parse_options(&a, argc, argv);
  if (r != 0 || a.help)
    return r;
  if ((r = read_exact(e, &a)) != 0)
    return r;
  a.deadline = now_seconds() + a.max_seconds;
  ms_cli_interrupt_catch();
  print_setting(e);
  if ((r = print_iteration(e, &a)) != 0)
    return r;
  r = print_fixed_point(e, &a);
  if (r == MS_EXIT_INTERRUPTED) {
    fflush(stdout);
    return ms_cli_interrupt_exit("the bracket reached is printed above");
  }
  if (r != 0)
    return r;
  return ms_cli_finish_output(MS_EXIT_OK);
}

int ms_cmd_lab(int argc, char **argv) {
  ms_exact_capacity e;
  ms_exact_capacity_init(&e);
  int rc = run(&e, argc, argv);
  ms_exact_capacity_clear(&e);
  return rc;
}
