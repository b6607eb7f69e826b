/* SPDX-License-Identifier: MIT */
/*
 * Queues: Erlang B and C, the M/M/c wait tail, and the M/M/c/K queue that
 * rejects (doc/design.md §1.1, §1.9, §5).  Conventions: base.h.
 *
 * Accuracy is stated as the bound the tests hold (tests/check_erlang.c,
 * tests/check_mmck.c against 50- and 60-digit references); the measured
 * figures, usually ten times better, are in doc/design.md §5.
 */
#ifndef METASTABLE_ERLANG_H
#define METASTABLE_ERLANG_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ms_erlang_ln_b: ln B(c, a), the Erlang B blocking probability of the
 * loss system M/M/c/c, B = (a^c / c!) / sum_{k<=c} a^k / k!.
 *   c     servers, 1 <= c <= MS_MAX_SERVERS
 *   a     offered traffic, erlangs (arrival rate / per-server rate),
 *         finite, > 0; a >= c allowed (a loss system is stable at any load)
 *   ln_b  out: <= 0, finite also where B underflows a double
 * Method (doc/design.md §5): for a < c the Poisson ratio pmf(c; a) /
 * cdf(c; a), the pmf by Loader's saddle point carried as a double-double,
 * the cdf by the incomplete gamma function (series, or Temme's expansion);
 * for a >= c the sum of B's definition over its last term.  Bounded cost.
 * Accuracy (of B where it is a normal double, else of ln B): relative
 * error at most 2e-15 for c <= 1000 and 1e-14 beyond.
 * Errors: MS_EINVAL when c or a is outside the domain.
 * Source: C. Loader, "Fast and accurate computation of binomial
 * probabilities", 2000; N. M. Temme, SIAM J. Math. Anal. 10, 1979.
 */
int ms_erlang_ln_b(long c, double a, double *ln_b, ms_error *err);

/*
 * ms_erlang_ln_c: ln C(c, a), the Erlang C probability of waiting in the
 * M/M/c queue, C = c B / (c - a (1 - B)).
 *   c, a  as ms_erlang_ln_b, but 0 < a < c (at a >= c the queue has no
 *         steady state and C is undefined: MS_EINVAL)
 *   ln_c  out: <= 0, finite; accuracy as ms_erlang_ln_b
 * Source: Kleinrock, Queueing Systems vol. 1, 1975, eq. 3.40.
 */
int ms_erlang_ln_c(long c, double a, double *ln_c, ms_error *err);

/* Erlang B and C together, with their logs; b and c may underflow to 0. */
typedef struct {
  double erlang_b, erlang_c;       /* probabilities in [0, 1] */
  double ln_erlang_b, ln_erlang_c; /* natural logs, finite, <= 0 */
  bool steady_state;               /* a < c: C is the M/M/c queue's */
} ms_erlang_values;

/*
 * ms_erlang: both Erlang values for (c, a); domain, accuracy and errors as
 * ms_erlang_ln_b.  For a >= c, C is 1 by convention (its limit as a rises
 * to c; every arrival waits), ln C = 0 and steady_state is false.
 */
int ms_erlang(long c, double a, ms_erlang_values *out, ms_error *err);

/*
 * ms_erlang_ln_b_recursive: ln B(c, a) by the exact recursion B_0 = 1,
 * B_k = a B_(k-1) / (k + a B_(k-1)) in extended precision with rescaling,
 * O(c).  An independent check for tests and the benchmarks' naive
 * baseline, not for the per-interval path.  Domain and errors as
 * ms_erlang_ln_b.  Source: D. L. Jagerman, Bell Syst. Tech. J. 53, 1974.
 */
int ms_erlang_ln_b_recursive(long c, double a, double *ln_b, ms_error *err);

/*
 * ms_ln_wait_tail: ln P(W > T), the probability that an arrival to the
 * M/M/c queue waits longer than T for a server:
 *   P(W > T) = C(c, x/mu) e^(-(c mu - x) T) for x < c mu, 1 for x >= c mu.
 *   c        servers, 1 <= c <= MS_MAX_SERVERS
 *   mu       service rate of one server, 1/s, finite, > 0
 *   x        arrival rate, 1/s, finite, > 0
 *   T        timeout, s, finite, >= 0
 *   ln_tail  out: finite, <= 0
 * Accuracy: |error| / max(1, |ln P|) at most 5e-16 where x/mu is exact (a
 * rounded x/mu adds its rounding, amplified by c / (c - a) near
 * saturation).  Errors: MS_EINVAL outside the domain.
 * Source: Kleinrock 1975, eq. 3.41; Gross and Harris, Fundamentals of
 * Queueing Theory, sec. 2.3.
 */
int ms_ln_wait_tail(long c, double mu, double x, double T, double *ln_tail,
                    ms_error *err);

/*
 * ms_ln_wait_tail_erlangs: ms_ln_wait_tail given the offered traffic a =
 * x / mu, erlangs, instead of x: c mu - x is formed as (c - a) mu, exact
 * near saturation where a is exact (the command's --offered).
 *   a  erlangs, finite, > 0; the rest, the result and the errors as
 *      ms_ln_wait_tail.
 */
int ms_ln_wait_tail_erlangs(long c, double mu, double a, double T,
                            double *ln_tail, ms_error *err);

/*
 * ms_ln_response_tail: ln P(W + S > T), the probability that an arrival's
 * response time (its wait W plus its service S) exceeds T in the M/M/c
 * queue, or with cv != 1 its M/G/c approximation (doc/design.md §1.1).
 * W is 0 with probability 1 - C(c, a), else exponential of rate
 * gamma = c mu - x (cv != 1: rate 2 gamma / (1 + cv^2), Allen-Cunneen);
 * S is exponential of rate mu (cv = 1; Kleinrock 1975, sec. 3.4):
 *   P(W + S > T) = e^(-mu T) + C mu (e^(-gamma T) - e^(-mu T)) / (mu - gamma),
 * else of mean 1/mu and coefficient of variation cv: a shift (1 - cv)/mu
 * plus an exponential of mean cv/mu for cv < 1 (the constant 1/mu at 0),
 * the balanced-means two-phase hyperexponential for cv > 1 (W. Whitt,
 * "Approximating a point process by a renewal process", Oper. Res. 30,
 * 1982).  Summed in log space from positive terms: no cancellation near
 * gamma = mu, digits kept where the tail is far below the smallest double.
 *   c, mu, T  as ms_ln_wait_tail (T = 0 gives 0: every attempt fails)
 *   x         arrival rate, 1/s, finite, >= 0 (0: the service alone)
 *   cv        [0, MS_MAX_SERVICE_TIME_CV]; 1 for exponential service
 *   ln_tail   out: in [-DBL_MAX, 0]; 0 at and above c mu
 * Accuracy (cv = 1): relative error of P at most 1e-13 where it is a
 * normal double (tests/check_response.c against 40-digit references,
 * tools/response_reference.py).  Errors: MS_EINVAL outside the domain.
 */
int ms_ln_response_tail(long c, double mu, double x, double T, double cv,
                        double *ln_tail, ms_error *err);

/* Smallest offered traffic a = x / mu, erlangs, of the M/M/c/K functions:
 * below it every probability they give is below e^-690. */
#define MS_MMCK_MIN_TRAFFIC 1e-300

/*
 * ms_mmck_ln_block: ln P_(c+K), the blocking probability of the M/M/c/K
 * queue (all c servers busy and all K places taken; by PASTA the share of
 * arrivals rejected).  With rho = a / c and B = B(c, a):
 *   P_(c+K) = B rho^K / (1 + B sum_{j=1}^{K} rho^j);  K = 0 is Erlang B.
 *   c         servers, 1 <= c <= MS_MAX_SERVERS
 *   K         waiting places, 0 <= K <= MS_MAX_QUEUE_LIMIT
 *   a         erlangs, MS_MMCK_MIN_TRAFFIC <= a <= MS_MAX_RATE; a >= c
 *             allowed (the system is finite)
 *   ln_block  out: finite, <= 0, also where P underflows
 * Method: doc/design.md §1.9, bounded cost for any c and K.  Accuracy
 * (relative, of P, or of ln P where P underflows): at most 1e-12 for
 * c + K <= 10^4 and 1e-10 beyond.  Errors: MS_EINVAL outside the domain.
 * Source: Gross and Harris, ch. 2, M/M/c/K.
 */
int ms_mmck_ln_block(long c, long K, double a, double *ln_block, ms_error *err);

/*
 * ms_mmck_ln_wait_tail: ln P(W > T | admitted) in the M/M/c/K queue.  An
 * arrival finding n >= c in the system waits for n - c + 1 completions at
 * rate c mu; with tau = c mu T and Q the regularized upper incomplete
 * gamma function:
 *   P(W > T | admitted) = sum_{n=c}^{c+K-1} pi_n Q(n - c + 1, tau)
 *                         / (1 - P_(c+K))
 * It tends to ms_ln_wait_tail's M/M/c tail as K grows (x < c mu).
 *   c, K     as ms_mmck_ln_block
 *   mu       1/s, > 0, c mu <= MS_MAX_RATE
 *   x        1/s, finite, x <= MS_MAX_RATE, x / mu in
 *            [MS_MMCK_MIN_TRAFFIC, MS_MAX_RATE];
 *            x >= c mu allowed
 *   T        s, >= 0, c mu T <= MS_MAX_TIMEOUT_COMPLETIONS
 *   ln_tail  out: finite, <= 0; -DBL_MAX (the log of 0) for K = 0
 * Method: two Poisson cdfs in closed form; near x = c mu, where that
 * would cancel, a sum from the mode outwards stopped by a proven bound
 * (doc/design.md §1.9).  Accuracy as ms_mmck_ln_block.
 * Errors: MS_EINVAL outside the domain.  Source: Gross and Harris, ch. 2.
 */
int ms_mmck_ln_wait_tail(long c, long K, double mu, double x, double T,
                         double *ln_tail, ms_error *err);

/*
 * ms_mmck_ln_response_tail: ln P(W + S > T | admitted) in the M/M/c/K
 * queue, W the wait and S the admitted arrival's own exponential service.
 * One finding m = n - c >= 0 waiting starts service at the (m + 1)-th of
 * the Poisson(c mu) completions, then ends at each later one with chance
 * 1/c; with J ~ Poisson(c mu T) and r = 1 - 1/c,
 *   P(R > T | m) = E[r^((J - m - 1)+)],
 * and one served at once (n < c) has e^(-mu T).  It tends to
 * ms_ln_response_tail's M/M/c tail as K grows (x < c mu).
 *   c, K, mu, x, T  as ms_mmck_ln_wait_tail
 *   ln_tail  out: finite, <= 0; -mu T for K = 0; 0 for T = 0
 * Method: the wait's numerator plus a sum of log-concave terms from near
 * its mode outwards, stopped by a proven bound (doc/design.md §1.9); its
 * cost grows like sqrt(c mu T).  Accuracy: relative 1e-12 against
 * tests/data/mmck_response.csv (tools/mmck_response_reference.py).
 * Errors: MS_EINVAL outside the domain (the messages of
 * ms_mmck_ln_wait_tail).  Source: Gross and Harris, ch. 2, M/M/c/K.
 */
int ms_mmck_ln_response_tail(long c, long K, double mu, double x, double T,
                             double *ln_tail, ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
