/* SPDX-License-Identifier: MIT */
/*
 * The retrial queue: an M/M/c/K queue whose rejected attempts come back
 * after a short backoff, while the queue may still be full (doc/design.md
 * §1.9, "Retries soon after a rejection").  Conventions: base.h.
 */
#ifndef METASTABLE_MODEL_RETRIAL_H
#define METASTABLE_MODEL_RETRIAL_H

#include "base.h"
#include "sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest c + K the chain accepts: its levels are vectors of c + K + 1. */
#define MS_RETRIAL_MAX_QUEUE 4096L
/* Largest number of chain states, (c + K + 1) x orbit levels: 16 MB. */
#define MS_RETRIAL_MAX_STATES (1L << 21)
/* ms_retrial_loads solves about 30 fixed points: at most this many
 * states each, or 512 orbit levels where c + K is long (and at most
 * MS_RETRIAL_MAX_STATES): a few seconds in all.  A mean backoff of 30 s
 * on 8 servers and 64 places holds more. */
#define MS_RETRIAL_LOADS_MAX_STATES (1L << 18)
/* State updates one call may make in all, its fixed points' chain solves
 * summed: 4 to 8 s on this project's 2-core test machine (2026-12-07),
 * by its load.  5 retries on 2 servers with 4000 places took over 20 s
 * before it, and are refused in 6 s. */
#define MS_RETRIAL_MAX_WORK 4e8

typedef struct {
  double attempts;     /* attempts per request, >= 1 */
  double p_full;       /* time share of the full queue (c + K in it) */
  double p_full_retry; /* share of the retries after a rejection that find
                          the queue full */
  double orbit;        /* mean requests waiting out a backoff after a
                          rejection */
  double timeout_rate; /* retries after a timeout, 1/s */
  long levels;         /* orbit levels of the truncated chain, 0 .. levels-1 */
  int iterations;      /* of the fixed point */
} ms_retrial_result;

/* The relative width to which ms_retrial_loads brackets each load. */
#define MS_RETRIAL_LOAD_REL 1e-3

/*
 * ms_retrial_attempts: attempts per request of c servers with K waiting
 * places, rejections and timeouts both retried, at offered load x.
 *
 * The chain's state is (n in the system, m requests waiting out a backoff
 * after a rejection).  Each of the m comes back at rate theta, the
 * orbit-weighted reciprocal of the mean backoff of its retry (one
 * exponential per retry, with the backoff's mean).  An admitted attempt
 * that waits longer than its timeout (or, with covers
 * MS_TIMEOUT_COVERS_RESPONSE, whose wait plus its exponential service
 * does) fails and is retried after the timeout and its backoff, which the
 * chain sees as a Poisson stream.  A fixed point over retry stages sets
 * that stream, theta and the shares of rejected attempts that have a
 * retry left; it starts with no timeouts, so in the bistable band it
 * finds the healthy equilibrium.  Attempts that timed out stay in the
 * queue and are served (as in the DES).
 *
 *   c        servers, 1 <= c, c + K <= MS_RETRIAL_MAX_QUEUE
 *   mu       service rate of one server, 1/s, finite, > 0
 *   K        waiting places, >= 0
 *   T        timeout, s, >= 0; INFINITY for none
 *   w        timeout spread, s, finite, >= 0: each attempt's timeout is
 *            uniform on [T, T + w] (a coarse client timer; doc/design.md
 *            §1.1), the per-state tails averaged over it by adaptive
 *            Gauss-Kronrod to 1e-11; 0 for a fixed T
 *   covers   what T times: the wait, or the response (wait + service)
 *   retries  0 .. MS_MAX_RETRIES
 *   b        valid backoff whose mean delays (ms_backoff_mean_delay) are
 *            all > 0 when retries > 0
 *   x        offered requests, 1/s, finite, > 0
 *   out      the result
 * Cost: O((c + K) levels) per fixed-point step, a few ms for c + K = 30;
 * a spread adds 15 to 64 x 15 evaluations of the tails, once.
 * Errors: MS_EINVAL outside the domain; MS_ELIMIT when the orbit needs
 * more than MS_RETRIAL_MAX_STATES states, the solves more than
 * MS_RETRIAL_MAX_WORK state updates in all, or the full queue is too rare
 * to represent (then rejections do not matter: use ms_mmck_*);
 * MS_ENOCONV when the fixed point does not settle in 2000 steps;
 * MS_ENOMEM.
 * Sources: Falin and Templeton, Retrial Queues (1997), ch. 1 (the M/M/c
 * retrial queue and its truncation); Artalejo and Gomez-Corral, Retrial
 * Queueing Systems (2008), ch. 2-3 (finite buffer, level-dependent QBD);
 * Latouche and Ramaswami, Introduction to Matrix Analytic Methods (1999),
 * linear level reduction.
 */
int ms_retrial_attempts(long c, double mu, long K, double T, double w,
                        ms_timeout_covers covers, int retries,
                        const ms_backoff *b, double x, ms_retrial_result *out,
                        ms_error *err);

/*
 * ms_retrial_loads: the retrial queue's tipping and recovery loads
 * (doc/design.md §1.9, "The retrial queue's loads"), req/s.  The same
 * chain and fixed point as ms_retrial_attempts, the arguments the same
 * (retries >= 1).  A fixed point is collapsed when its attempts reach the
 * servers' capacity, x A >= c mu.
 *   tipping   out: the least load at which the fixed point started
 *             healthy (no timeouts) is collapsed
 *   recovery  out: the least load at which the fixed point started in a
 *             storm (every attempt timed out: r x retries per second) is
 *             collapsed; <= tipping
 * Both are bisections between c mu / (r + 1) and c mu, to a relative
 * MS_RETRIAL_LOAD_REL, assuming the collapse is monotone in the load.
 * Cost: about 2 x 10 fixed points, 0.1 to 1 s for c + K = 72, up to
 * about 7 s for c + K = 4096.
 * Errors: as ms_retrial_attempts, with MS_RETRIAL_LOADS_MAX_STATES for
 * MS_RETRIAL_MAX_STATES (a long backoff's orbit: then the M/M/c/K
 * landscape's loads stand); MS_EINVAL without retries.
 * Sources: as ms_retrial_attempts; the two starts are the two basins of
 * the fluid model's fixed point (doc/design.md §1.3).
 */
int ms_retrial_loads(long c, double mu, long K, double T, double w,
                     ms_timeout_covers covers, int retries, const ms_backoff *b,
                     double *tipping, double *recovery, ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
