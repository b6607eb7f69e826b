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

/*
 * ms_retrial_attempts: attempts per request of c servers with K waiting
 * places, rejections and timeouts both retried.  The chain's state is
 * (n in the system, m requests waiting out a backoff after a rejection);
 * each of the m comes back at rate theta, the orbit-weighted reciprocal of
 * the mean backoff of its retry (one exponential per retry, with the
 * backoff's mean); an admitted attempt that waits longer than T (or,
 * with covers MS_TIMEOUT_COVERS_RESPONSE, whose wait plus its exponential
 * service exceeds T) fails and is retried after T and its backoff, which
 * the chain sees as a Poisson stream.  A fixed point over retry stages sets
 * that stream, theta and the shares of rejected attempts that have a retry
 * left.  Attempts that timed out stay in the queue and are served (as in the
 * DES). c        servers, 1 <= c, c + K <= MS_RETRIAL_MAX_QUEUE mu service rate
 * of one server, 1/s, finite, > 0 K        waiting places, >= 0 T timeout, s,
 * >= 0; INFINITY for none covers   what T times: the wait, or the response
 * (wait + service) retries  0 .. MS_MAX_RETRIES b        valid backoff whose
 * mean delays (ms_backoff_mean_delay) are all > 0 when retries > 0 x offered
 * requests, 1/s, finite, > 0 out      the result Cost: O((c + K) levels) per
 * fixed-point step, a few ms for c + K = 30. Errors: MS_EINVAL outside the
 * domain; MS_ELIMIT when the orbit needs more than MS_RETRIAL_MAX_STATES
 * states, or the full queue is too rare to represent (then rejections do not
 * matter: use ms_mmck_*); MS_ENOCONV when the fixed point does not settle in
 * 2000 steps; MS_ENOMEM.  Sources: Falin and Templeton, Retrial Queues (1997),
 * ch. 1 (the M/M/c retrial queue and its truncation); Artalejo and
 * Gomez-Corral, Retrial Queueing Systems (2008), ch. 2-3 (finite buffer,
 * level-dependent QBD); Latouche and Ramaswami, Introduction to Matrix
 * Analytic Methods (1999), linear level reduction.
 */
int ms_retrial_attempts(long c, double mu, long K, double T,
                        ms_timeout_covers covers, int retries,
                        const ms_backoff *b, double x, ms_retrial_result *out,
                        ms_error *err);

#ifdef __cplusplus
}
#endif

#endif
