/* SPDX-License-Identifier: MIT */
/*
 * The naive baseline: what a careful engineer would write first to answer
 * the plugin's question for one erlang service with a fixed retry count.
 *
 *  - Erlang B by the textbook recursion B_k = a B_{k-1} / (k + a B_{k-1}),
 *    B_0 = 1 (Jagerman 1974), in double: it never overflows (B stays in
 *    (0, 1]) and is accurate; O(c) per evaluation.  Erlang C and the wait
 *    tail P(W > T) = C exp(-(c mu - x) T) from it; p(x), A(p) and
 *    lambda(x) = x / A(p(x)) straight from doc/design.md §1.1-1.3.
 *  - The bifurcation diagram by a dense uniform grid of lambda(x), one point
 *    every 1/1000 of the capacity c mu, up to 1.25 c mu; each sampled local
 *    maximum or minimum refined by golden-section search to a relative
 *    bracket of 1e-12 (so kinks are found as well as smooth extrema).
 *  - The equilibria at offered load lambda by bisection of every sign change
 *    of lambda(x) - lambda on the same grid, to a relative bracket of 1e-12;
 *    beyond the grid lambda(x) rises, and the last root is bisected on
 *    [1.25 c mu, 2 (r + 1) lambda].
 *  - The state from lambda against the tipping and recovery loads, a cold
 *    start in the healthy basin inside the band.
 *
 * It is deliberately not a strawman: double instead of extended precision
 * (the faster choice), no needless allocation, the grid reused for the
 * roots.  It is O(c) per point and needs about 1,500 points.
 */
#ifndef MS_BENCH_NAIVE_H
#define MS_BENCH_NAIVE_H

typedef struct {
  long servers;   /* c */
  double mu;      /* service rate per server, 1/s */
  double timeout; /* T, s */
  int retries;    /* r, one tier, no budget, no token bucket */
  double base;    /* base failure probability */
} naive_service;

typedef struct {
  double tipping_load, recovery_load; /* req/s */
  int equilibria;
  double x[8];      /* the equilibria, ascending */
  int state;        /* as ms_state: 0 stable, 1 vulnerable, 3 overloaded */
  long evaluations; /* lambda(x) evaluations used (each O(c)) */
} naive_result;

/* Erlang B(c, a) by the recursion in double; 0 where it underflows. */
double naive_erlang_b(long c, double a);

/* ln P(W > T) from naive_erlang_b; -inf where the tail underflows. */
double naive_ln_wait_tail(long c, double mu, double x, double T);

/* lambda(x) for the service. */
double naive_offered_load_at(const naive_service *s, double x);

/* The whole analysis at offered load lambda.  Returns 0, or -1 if the grid
 * finds more extrema or roots than the arrays hold. */
int naive_analyze(const naive_service *s, double lambda, naive_result *out);

#endif
