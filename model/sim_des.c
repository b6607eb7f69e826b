/* SPDX-License-Identifier: MIT */
/*
 * The discrete-event engine: an M/M/c (or M/G/c) FIFO queue, Poisson first
 * attempts, clients that time out after T and retry with backoff while the
 * servers still serve what they abandoned.  See ms_sim_des in sim.h.
 *
 * Events: service completions and retries live in one binary heap.  The
 * other event kinds need none: the next arrival is one number (thinning),
 * pool changes are a short sorted list, and timeouts happen in queue order
 * (every attempt has the same patience T and the queue is FIFO), so the
 * next timeout is always that of the oldest live attempt in the queue.
 * Attempts whose client gave up are kept as a count in front of the live
 * ones: they still take a server each, and nothing else is known of them.
 *
 * With a spread timeout (doc/design.md §1.1) each attempt draws its own
 * patience, uniform on [T, T + w], and timeouts no longer come in queue
 * order: each is an event of the heap (EV_TIMEOUT), and an attempt whose
 * client gave up stays at its place in the queue, told from a live one by
 * its serial number (the request's waiting_serial moves on).  Without a
 * spread nothing of this runs and no random number is drawn for it.
 *
 * When the timeout covers the response (timeout_covers), an attempt whose
 * service would end after its client's deadline (sent + its own timeout,
 * drawn when it is sent with a spread) gets an EV_RESPONSE_TIMEOUT in the
 * heap at that deadline, and its completion becomes an abandoned one.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim_internal.h"

/* a request's retries so far fit its counter */
_Static_assert(MS_MAX_RETRIES <= UINT16_MAX, "retries_done is 16 bits");

/* ---- random numbers ------------------------------------------------- */

/*
 * xoshiro256** 1.0 with its state seeded by splitmix64, as its authors
 * recommend (Blackman and Vigna, ACM TOMS 47(4), 2021; splitmix64 from
 * Steele, Lea and Flood, OOPSLA 2014).
 */
typedef struct {
  uint64_t s[4];
} rng_t;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static void rng_seed(rng_t *g, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++)
    g->s[i] = splitmix64(&x);
}

static uint64_t rng_next(rng_t *g) {
  uint64_t *s = g->s;
  uint64_t result = rotl64(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64(s[3], 45);
  return result;
}

/* uniform on [0, 1), 53 random bits */
static double rng_uniform(rng_t *g) {
  return (double)(rng_next(g) >> 11) * 0x1.0p-53;
}

/* exponential of the given rate, by inversion */
static double rng_exp(rng_t *g, double rate) {
  return -log1p(-rng_uniform(g)) / rate;
}

/* a standard normal, by Marsaglia's polar method (one of the pair kept
 * unused: a stateless draw keeps the stream simple) */
static double rng_normal(rng_t *g) {
  for (;;) {
    double u = 2.0 * rng_uniform(g) - 1.0, v = 2.0 * rng_uniform(g) - 1.0;
    double s = u * u + v * v;
    if (s > 0.0 && s < 1.0)
      return u * sqrt(-2.0 * log(s) / s);
  }
}

/* gamma of shape k > 0 and scale 1: Marsaglia and Tsang (ACM TOMS 26(3),
 * 2000), with their boost U^(1/k) for k < 1 */
static double rng_gamma(rng_t *g, double k) {
  double boost = 1.0;
  if (k < 1.0) {
    boost = pow(rng_uniform(g), 1.0 / k);
    k += 1.0;
  }
  double dd = k - 1.0 / 3.0, cc = 1.0 / sqrt(9.0 * dd);
  for (;;) {
    double z = rng_normal(g), v = 1.0 + cc * z;
    if (v <= 0.0)
      continue;
    v = v * v * v;
    double u = rng_uniform(g);
    if (log(u) < 0.5 * z * z + dd - dd * v + dd * log(v))
      return boost * dd * v;
  }
}

/* ---- service times (ms_service_dist, sim.h) ------------------------- */

static const char *const service_dist_names[MS_SERVICE_DISTS] = {
    "exponential", "deterministic", "lognormal", "hyperexponential", "gamma"};

const char *ms_service_dist_name(ms_service_dist d) {
  return (int)d >= 0 && d < MS_SERVICE_DISTS ? service_dist_names[d]
                                             : "unknown";
}

int ms_service_dist_from_name(const char *name, ms_service_dist *d,
                              ms_error *err) {
  if (name == NULL || d == NULL)
    return ms_fail(err, MS_EINVAL,
                   "NULL argument to ms_service_dist_from_name");
  for (int i = 0; i < MS_SERVICE_DISTS; i++)
    if (strcasecmp(name, service_dist_names[i]) == 0) {
      *d = (ms_service_dist)i;
      return MS_OK;
    }
  return ms_fail(err, MS_EINVAL,
                 "service distribution '%s' is not one of exponential, "
                 "deterministic, lognormal, hyperexponential, gamma",
                 name);
}

int ms_service_dist_check(ms_service_dist d, double cv, ms_error *err) {
  if (!(isfinite(cv) && cv >= 0.0))
    return ms_fail(err, MS_EINVAL,
                   "service time cv = %g must be finite and >= 0", cv);
  bool ok = false;
  const char *need = "";
  switch (d) {
  case MS_SERVICE_EXPONENTIAL:
    ok = cv == 1.0, need = "cv 1";
    break;
  case MS_SERVICE_DETERMINISTIC:
    ok = cv == 0.0, need = "cv 0";
    break;
  case MS_SERVICE_LOGNORMAL:
  case MS_SERVICE_GAMMA:
    ok = cv > 0.0, need = "a cv > 0";
    break;
  case MS_SERVICE_HYPEREXPONENTIAL:
    ok = cv >= 1.0, need = "a cv >= 1";
    break;
  default:
    return ms_fail(err, MS_EINVAL,
                   "service distribution %d is not a distribution", (int)d);
  }
  if (ok)
    return MS_OK;
  return ms_fail(err, MS_EINVAL,
                 "service_time_cv = %g: %s service times have %s (exponential "
                 "1, deterministic 0, lognormal and gamma > 0, "
                 "hyperexponential >= 1)",
                 cv, service_dist_names[d], need);
}

/* One service time's distribution, its parameters worked out once. */
typedef struct {
  ms_service_dist dist;
  double mu;        /* 1 / mean */
  double m, s;      /* lognormal: ln-mean and ln-sd */
  double p, r1, r2; /* H2: branch probability and the two rates */
  double k, scale;  /* gamma: shape and scale */
} service_sampler;

static void service_sampler_init(service_sampler *v, ms_service_dist dist,
                                 double mu, double cv) {
  double c2 = cv * cv;
  *v = (service_sampler){.dist = dist, .mu = mu};
  v->s = sqrt(log1p(c2));
  v->m = -log(mu) - 0.5 * v->s * v->s;
  v->p = 0.5 * (1.0 + sqrt((c2 - 1.0) / (c2 + 1.0)));
  v->r1 = 2.0 * v->p * mu;
  v->r2 = 2.0 * (1.0 - v->p) * mu;
  v->k = c2 > 0.0 ? 1.0 / c2 : 1.0;
  v->scale = c2 / mu;
}

/* A service time, s.  The exponential draws exactly what rng_exp drew
 * before the other distributions existed: same seed, same run. */
static double service_sample(const service_sampler *v, rng_t *g) {
  switch (v->dist) {
  case MS_SERVICE_DETERMINISTIC:
    return 1.0 / v->mu;
  case MS_SERVICE_LOGNORMAL:
    return exp(v->m + v->s * rng_normal(g));
  case MS_SERVICE_HYPEREXPONENTIAL:
    return rng_uniform(g) < v->p ? rng_exp(g, v->r1) : rng_exp(g, v->r2);
  case MS_SERVICE_GAMMA:
    return v->scale * rng_gamma(g, v->k);
  case MS_SERVICE_EXPONENTIAL:
  default:
    return rng_exp(g, v->mu);
  }
}

/* ---- containers ----------------------------------------------------- */

/* EV_TIMEOUT: a spread timeout of a waiting attempt (its dur is the
 * attempt's serial); EV_RESPONSE_TIMEOUT: the deadline of an attempt in
 * service, when the timeout covers the response (its server goes on: an
 * EV_DONE_ABANDONED) */
enum {
  EV_DONE_OK,
  EV_DONE_FAIL,
  EV_DONE_ABANDONED,
  EV_RETRY,
  EV_TIMEOUT,
  EV_RESPONSE_TIMEOUT
};

typedef struct {
  double t;
  double dur; /* a completion: the service time it ends, s; a timeout:
                 the serial number of its attempt */
  uint32_t id;
  uint32_t kind;
} event;

typedef struct {
  event *a;
  size_t n, cap;
} heap_t;

/* Grow an array to hold at least need elements (doubling). */
static int grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return MS_OK;
  size_t nc = *cap ? *cap : 256;
  while (nc < need)
    nc *= 2;
  void *q = realloc(*p, nc * size);
  if (q == NULL)
    return MS_ENOMEM;
  *p = q;
  *cap = nc;
  return MS_OK;
}

static int heap_push(heap_t *h, double t, double dur, uint32_t id,
                     uint32_t kind) {
  if (grow((void **)&h->a, &h->cap, h->n + 1, sizeof *h->a) != MS_OK)
    return MS_ENOMEM;
  size_t i = h->n++;
  event e = {t, dur, id, kind};
  while (i > 0) {
    size_t up = (i - 1) / 2;
    if (!(h->a[up].t > t))
      break;
    h->a[i] = h->a[up];
    i = up;
  }
  h->a[i] = e;
  return MS_OK;
}

static event heap_pop(heap_t *h) {
  event top = h->a[0];
  event last = h->a[--h->n];
  size_t i = 0, n = h->n;
  for (;;) {
    size_t l = 2 * i + 1;
    if (l >= n)
      break;
    size_t m = l + 1 < n && h->a[l + 1].t < h->a[l].t ? l + 1 : l;
    if (!(h->a[m].t < last.t))
      break;
    h->a[i] = h->a[m];
    i = m;
  }
  if (n > 0)
    h->a[i] = last;
  return top;
}

/* A FIFO ring of (time, id, serial); capacity a power of two. */
typedef struct {
  double t;
  uint32_t id;
  /* with a spread timeout: the attempt's serial number mod 2^32, never
   * 0; else 0.  A stale entry is at most T + w old, and the run's memory
   * limit keeps far fewer than 2^32 attempts in that time, so the low 32
   * bits tell it from the live one; the entry stays 16 bytes. */
  uint32_t serial;
} qentry;

typedef struct {
  qentry *a;
  size_t head, len, cap;
} ring_t;

static int ring_push_serial(ring_t *q, double t, uint32_t id, uint32_t serial) {
  if (q->len == q->cap) {
    size_t nc = q->cap ? 2 * q->cap : 1024;
    qentry *b = malloc(nc * sizeof *b);
    if (b == NULL)
      return MS_ENOMEM;
    for (size_t i = 0; i < q->len; i++)
      b[i] = q->a[(q->head + i) & (q->cap - 1)];
    free(q->a);
    q->a = b;
    q->head = 0;
    q->cap = nc;
  }
  q->a[(q->head + q->len) & (q->cap - 1)] = (qentry){t, id, serial};
  q->len++;
  return MS_OK;
}

static int ring_push(ring_t *q, double t, uint32_t id) {
  return ring_push_serial(q, t, id, 0);
}

static qentry *ring_front(ring_t *q) { return &q->a[q->head]; }

static void ring_pop(ring_t *q) {
  q->head = (q->head + 1) & (q->cap - 1);
  q->len--;
}

/* ---- the simulation state -------------------------------------------- */

#define MAX_REQUESTS ((size_t)1 << 31)

typedef struct {
  const ms_sim_config *cfg;
  rng_t rng;
  service_sampler service;
  double mu, T, base;
  double spread;            /* w: patience uniform on [T, T + w]; 0: T */
  uint64_t serial_next;     /* the last attempt's serial (spread only) */
  uint32_t *waiting_serial; /* per request: its waiting attempt's serial
                               (qentry), 0 when none waits; allocated with
                               a spread only */
  bool response;    /* the timeout covers the response, not only the wait */
  double *deadline; /* per request: its attempt's sent + timeout, s;
                       allocated with response only */
  int r;
  long long queue_limit; /* waiting places; -1: none (M/M/c/K, §1.9) */
  bool rejections_final; /* a rejection ends its request */
  heap_t heap;
  ring_t live;         /* waiting attempts whose client still waits */
  long long abandoned; /* waiting attempts whose client gave up */
  long busy, servers;
  double busy_since; /* when d->busy last changed or was last integrated */
  /* requests in flight */
  uint16_t *retries_done; /* 0 .. MS_MAX_RETRIES */
  double *sleep;          /* decorrelated jitter: previous sleep */
  double *cost;           /* AWS quota: what the request's pending retry took */
  size_t req_cap, req_top;
  uint32_t *free_ids;
  size_t free_n, free_cap;
  /* retry budget: send times in the last budget window */
  ring_t bud_first, bud_retry;
  double budget_ratio;
  double tokens; /* the token bucket; gRPC's token_count; the AWS quota */
  /* Envoy: attempts in flight (sent, outcome not yet known to the client)
   * and retries in flight (admitted, until their outcome is known) */
  long active, retries_active;
  ms_sim_counts win;
  double events;
} des_t;

static void des_free(des_t *d) {
  free(d->heap.a);
  free(d->live.a);
  free(d->retries_done);
  free(d->waiting_serial);
  free(d->deadline);
  free(d->sleep);
  free(d->cost);
  free(d->free_ids);
  free(d->bud_first.a);
  free(d->bud_retry.a);
}

static int request_new(des_t *d, uint32_t *id) {
  if (d->free_n > 0) {
    *id = d->free_ids[--d->free_n];
  } else {
    if (d->req_top >= MAX_REQUESTS)
      return MS_ELIMIT;
    size_t cap = d->req_cap;
    if (grow((void **)&d->retries_done, &cap, d->req_top + 1,
             sizeof *d->retries_done) != MS_OK)
      return MS_ENOMEM;
    cap = d->req_cap;
    if (grow((void **)&d->sleep, &cap, d->req_top + 1, sizeof *d->sleep) !=
        MS_OK)
      return MS_ENOMEM;
    cap = d->req_cap;
    if (grow((void **)&d->cost, &cap, d->req_top + 1, sizeof *d->cost) != MS_OK)
      return MS_ENOMEM;
    if (d->spread > 0.0) {
      cap = d->req_cap;
      if (grow((void **)&d->waiting_serial, &cap, d->req_top + 1,
               sizeof *d->waiting_serial) != MS_OK)
        return MS_ENOMEM;
    }
    if (d->response) {
      cap = d->req_cap;
      if (grow((void **)&d->deadline, &cap, d->req_top + 1,
               sizeof *d->deadline) != MS_OK)
        return MS_ENOMEM;
    }
    d->req_cap = cap;
    *id = (uint32_t)d->req_top++;
  }
  d->retries_done[*id] = 0;
  if (d->spread > 0.0)
    d->waiting_serial[*id] = 0;
  d->sleep[*id] = d->cfg->backoff.base;
  d->cost[*id] = 0.0;
  return MS_OK;
}

static int request_free(des_t *d, uint32_t id) {
  if (grow((void **)&d->free_ids, &d->free_cap, d->free_n + 1,
           sizeof *d->free_ids) != MS_OK)
    return MS_ENOMEM;
  d->free_ids[d->free_n++] = id;
  return MS_OK;
}

/* The backoff before retry k of request id (k = 1 .. r). */
static double backoff_delay(des_t *d, uint32_t id, int k) {
  const ms_backoff *b = &d->cfg->backoff;
  double v;
  switch (b->kind) {
  case MS_BACKOFF_NONE:
    return 0.0;
  case MS_BACKOFF_CONSTANT:
    return b->base;
  case MS_BACKOFF_EXPONENTIAL:
    return ms_backoff_ceiling(b, k);
  case MS_BACKOFF_FULL_JITTER:
    v = ms_backoff_ceiling(b, k);
    return rng_uniform(&d->rng) * v;
  case MS_BACKOFF_EQUAL_JITTER:
    v = ms_backoff_ceiling(b, k);
    return 0.5 * v + rng_uniform(&d->rng) * 0.5 * v;
  case MS_BACKOFF_DECORRELATED:
    v = b->base + rng_uniform(&d->rng) * (3.0 * d->sleep[id] - b->base);
    v = fmin(b->cap, v);
    d->sleep[id] = v;
    return v;
  }
  return 0.0;
}

/* Add the busy servers' time since the last change up to t to the
 * window's integral (busy_servers is its time-average). */
static void integrate_busy(des_t *d, double t) {
  d->win.busy_time += (double)d->busy * (t - d->busy_since);
  d->busy_since = t;
}

/* A server takes attempt id at time t.  When the timeout covers the
 * response and the client's deadline (d->deadline[id]: sent + its own
 * timeout) comes before the service ends, the client fails then
 * (EV_RESPONSE_TIMEOUT) and the server serves on: its completion is an
 * abandoned one. */
static int start_service(des_t *d, uint32_t id, double t) {
  integrate_busy(d, t);
  d->busy++;
  bool fail = d->base > 0.0 && rng_uniform(&d->rng) < d->base;
  double dur = service_sample(&d->service, &d->rng);
  if (d->response && d->deadline[id] < t + dur) {
    if (heap_push(&d->heap, t + dur, dur, 0, EV_DONE_ABANDONED) != MS_OK)
      return MS_ENOMEM;
    return heap_push(&d->heap, d->deadline[id], 0.0, id, EV_RESPONSE_TIMEOUT);
  }
  return heap_push(&d->heap, t + dur, dur, id,
                   fail ? EV_DONE_FAIL : EV_DONE_OK);
}

/* A server takes an attempt whose client gave up: it is served all the
 * same, and its completion tells nobody. */
static int serve_abandoned(des_t *d, double t) {
  integrate_busy(d, t);
  d->busy++;
  double dur = service_sample(&d->service, &d->rng);
  return heap_push(&d->heap, t + dur, dur, 0, EV_DONE_ABANDONED);
}

/* Free servers take waiting attempts, oldest first. */
static int dispatch(des_t *d, double t) {
  while (d->busy < d->servers) {
    if (d->spread > 0.0 && d->live.len > 0) {
      qentry e = *ring_front(&d->live);
      ring_pop(&d->live);
      bool live = d->waiting_serial[e.id] == e.serial;
      if (live)
        d->waiting_serial[e.id] = 0;
      if ((live ? start_service(d, e.id, t) : serve_abandoned(d, t)) != MS_OK)
        return MS_ENOMEM;
    } else if (d->abandoned > 0) {
      d->abandoned--;
      integrate_busy(d, t);
      d->busy++;
      double dur = service_sample(&d->service, &d->rng);
      if (heap_push(&d->heap, t + dur, dur, 0, EV_DONE_ABANDONED) != MS_OK)
        return MS_ENOMEM;
    } else if (d->live.len > 0) {
      uint32_t id = ring_front(&d->live)->id;
      ring_pop(&d->live);
      if (start_service(d, id, t) != MS_OK)
        return MS_ENOMEM;
    } else {
      break;
    }
  }
  return MS_OK;
}

static int attempt_failed(des_t *d, uint32_t id, double t, bool timeout);
static void attempt_outcome(des_t *d, uint32_t id, bool ok);

/* The timeout of one attempt, s: T, or uniform on [T, T + w] with a
 * spread w (one random number). */
static double patience_draw(des_t *d) {
  return d->spread > 0.0 ? d->T + d->spread * rng_uniform(&d->rng) : d->T;
}

/* Attempt of request id sent at t.  With a queue limit an attempt that
 * finds every waiting place taken (by live or abandoned attempts: the
 * queue serves both) is rejected at once: it fails, and is retried unless
 * rejections end the request (doc/design.md §1.9). */
static int send_attempt(des_t *d, uint32_t id, double t) {
  d->active++;
  /* the attempt's own timeout: with the response timed every attempt's
   * counts, so it is drawn now; with the wait alone only a waiting one's
   * (below, the random numbers of a wait run unchanged) */
  double patience = d->response ? patience_draw(d) : d->T;
  if (d->response)
    d->deadline[id] = t + patience;
  if (d->abandoned == 0 && d->live.len == 0 && d->busy < d->servers)
    return start_service(d, id, t);
  if (d->queue_limit >= 0 &&
      d->abandoned + (long long)d->live.len >= d->queue_limit) {
    if (!d->rejections_final)
      return attempt_failed(d, id, t, false);
    d->win.failures += 1.0;
    d->win.given_up += 1.0;
    attempt_outcome(d, id, false); /* the attempt is no longer in flight */
    return request_free(d, id);
  }
  if (d->spread > 0.0) {
    uint32_t serial;
    do
      serial = (uint32_t)++d->serial_next;
    while (serial == 0);
    d->waiting_serial[id] = serial;
    if (!d->response)
      patience = patience_draw(d);
    if (heap_push(&d->heap, t + patience, (double)serial, id, EV_TIMEOUT) !=
        MS_OK)
      return MS_ENOMEM;
    return ring_push_serial(&d->live, t, id, serial);
  }
  return ring_push(&d->live, t, id);
}

/*
 * The bookkeeping of the named policies when the client of request id
 * learns the outcome of its attempt (ok: it succeeded): the attempt leaves
 * flight (and, a retry, Envoy's retries in flight); gRFC A6's token_count
 * gains token_ratio on a success and loses 1 on a failure, within
 * [0, max_tokens]; the AWS quota gets a retry's cost back when the retry
 * succeeds, `refund` when a first attempt does, up to its capacity.
 */
static void attempt_outcome(des_t *d, uint32_t id, bool ok) {
  const ms_retry_policy *pol = &d->cfg->service.policy;
  d->active--;
  if (d->retries_done[id] > 0 && d->retries_active > 0)
    d->retries_active--;
  if (pol->kind == MS_POLICY_GRPC)
    d->tokens =
        ok ? fmin(pol->grpc_max_tokens, d->tokens + pol->grpc_token_ratio)
           : fmax(0.0, d->tokens - 1.0);
  else if (pol->kind == MS_POLICY_AWS && ok)
    d->tokens = fmin(
        pol->aws_capacity,
        d->tokens + (d->retries_done[id] > 0 ? d->cost[id] : pol->aws_refund));
}

static void evict_before(ring_t *q, double t) {
  while (q->len > 0 && ring_front(q)->t <= t)
    ring_pop(q);
}

/*
 * Whether a named policy lets request id retry, decided at t when the
 * client learns that its attempt failed (timeout: by its own timeout), as
 * the stacks decide before their backoff: gRFC A6 while token_count >
 * max_tokens / 2 (after this failure's decrement); Envoy while the retries
 * in flight are fewer than max(min_retry_concurrency, budget_percent x the
 * attempts in flight) (the admitted retry counts from now, through its
 * backoff); Finagle while percent x the requests of the last ttl seconds +
 * min_per_second x ttl - the retries of the last ttl seconds >= 1 (and
 * withdraws one); AWS while the quota holds the retry's cost, which it
 * takes: timeout_cost after a timeout; after another failure
 * throttling_cost when the failure is a throttling error (drawn with
 * throttling_share; no draw at a share of 0 or 1, so that the other
 * draws of a run stay as they were), retry_cost otherwise.
 */
static int policy_admits(des_t *d, uint32_t id, double t, bool timeout,
                         bool *ok) {
  const ms_retry_policy *pol = &d->cfg->service.policy;
  switch (pol->kind) {
  case MS_POLICY_GRPC:
    *ok = d->tokens > 0.5 * pol->grpc_max_tokens;
    return MS_OK;
  case MS_POLICY_ENVOY:
    *ok =
        (double)d->retries_active <
        fmax(pol->envoy_min_concurrency, pol->envoy_budget * (double)d->active);
    if (*ok)
      d->retries_active++;
    return MS_OK;
  case MS_POLICY_FINAGLE:
    evict_before(&d->bud_first, t - pol->finagle_ttl);
    evict_before(&d->bud_retry, t - pol->finagle_ttl);
    *ok = (double)d->bud_first.len * pol->finagle_percent +
              pol->finagle_min_per_second * pol->finagle_ttl -
              (double)d->bud_retry.len >=
          1.0;
    return *ok ? ring_push(&d->bud_retry, t, id) : MS_OK;
  case MS_POLICY_AWS: {
    double th = pol->aws_throttling_share;
    bool throttled =
        !timeout && th > 0.0 && (th >= 1.0 || rng_uniform(&d->rng) < th);
    double cost = timeout     ? pol->aws_timeout_cost
                  : throttled ? pol->aws_throttling_cost
                              : pol->aws_retry_cost;
    *ok = d->tokens >= cost;
    if (*ok) {
      d->tokens -= cost;
      d->cost[id] = cost;
    }
    return MS_OK;
  }
  default:
    *ok = true; /* the budget and the bucket decide when the retry is due */
    return MS_OK;
  }
}

/* The client of request id learned at t that its attempt failed (timeout:
 * its timeout fired). */
static int attempt_failed(des_t *d, uint32_t id, double t, bool timeout) {
  d->win.failures += 1.0;
  attempt_outcome(d, id, false);
  int done = d->retries_done[id];
  if (done < d->r) {
    bool ok;
    int st = policy_admits(d, id, t, timeout, &ok);
    if (st != MS_OK)
      return st;
    if (ok)
      return heap_push(&d->heap, t + backoff_delay(d, id, done + 1), 0.0, id,
                       EV_RETRY);
    d->win.refused += 1.0;
  }
  d->win.given_up += 1.0;
  return request_free(d, id);
}

/* Request id wants to send retry k at t: budget and bucket decide. */
static int retry_due(des_t *d, uint32_t id, double t) {
  const ms_retry_policy *pol = &d->cfg->service.policy;
  bool ok = true;
  if (pol->has_budget) {
    evict_before(&d->bud_first, t - d->cfg->budget_window);
    evict_before(&d->bud_retry, t - d->cfg->budget_window);
    ok = (double)d->bud_retry.len + 1.0 <=
         d->budget_ratio * (double)d->bud_first.len;
  }
  if (ok && pol->has_token) {
    ok = d->tokens >= 1.0;
    if (ok)
      d->tokens -= 1.0;
  }
  if (!ok) {
    d->win.refused += 1.0;
    d->win.given_up += 1.0;
    return request_free(d, id);
  }
  d->retries_done[id]++;
  d->win.retries += 1.0;
  if (pol->has_budget && ring_push(&d->bud_retry, t, id) != MS_OK)
    return MS_ENOMEM;
  return send_attempt(d, id, t);
}

/* A completion at t. */
static int completion(des_t *d, const event *e, double t) {
  integrate_busy(d, t);
  d->busy--;
  d->win.completions += 1.0;
  d->win.service_time += e->dur;
  int st = MS_OK;
  if (e->kind == EV_DONE_OK) {
    d->win.successes += 1.0;
    attempt_outcome(d, e->id, true);
    if (d->cfg->service.policy.has_token)
      d->tokens = fmin(d->cfg->token_capacity,
                       d->tokens + d->cfg->service.policy.token_ratio);
    st = request_free(d, e->id);
  } else if (e->kind == EV_DONE_FAIL) {
    st = attempt_failed(d, e->id, t, false);
  }
  if (st != MS_OK)
    return st;
  return dispatch(d, t);
}

/* A pool change: (time, servers). */
typedef struct {
  double t;
  long servers;
} pool_change;

static int cmp_change(const void *a, const void *b) {
  double x = ((const pool_change *)a)->t, y = ((const pool_change *)b)->t;
  return (x > y) - (x < y);
}

/* Largest offered load over [0, duration]: lambda is piecewise linear. */
static double max_offered(const ms_scenario *sc) {
  double m = fmax(ms_scenario_offered_load(sc, 0.0),
                  ms_scenario_offered_load(sc, sc->duration));
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *tr = &sc->triggers[i];
    const double e[4] = {tr->start, tr->start + tr->rise,
                         tr->start + tr->rise + tr->hold,
                         tr->start + tr->rise + tr->hold + tr->fall};
    for (int j = 0; j < 4; j++) {
      m = fmax(m, ms_scenario_offered_load(sc, e[j]));
      /* the value just before a jump (spike end) */
      m = fmax(m, ms_scenario_offered_load(sc, nextafter(e[j], -HUGE_VAL)));
    }
  }
  return m;
}

static int status_message(int st, ms_error *err, double t) {
  if (st == MS_ENOMEM)
    return ms_fail(err, MS_ENOMEM, "out of memory at t = %g s", t);
  if (st == MS_ELIMIT)
    return ms_fail(err, MS_ELIMIT,
                   "more than 2^31 requests in flight at t = %g s", t);
  return st;
}

/* The simulation at time 0: the service's parameters, the random stream
 * of the seed, a full token bucket, and the pool the scenario starts
 * with. */
static void des_init(des_t *d, const ms_sim_config *c) {
  const ms_failure_model *m0 = &c->service.model;
  memset(d, 0, sizeof *d);
  d->cfg = c;
  rng_seed(&d->rng, c->seed);
  d->mu = m0->service_rate;
  service_sampler_init(&d->service, c->service_dist, d->mu,
                       m0->has_service_time_cv ? m0->service_time_cv : 1.0);
  d->T = m0->timeout;
  d->spread = (m0->timeout + m0->timeout_spread) - m0->timeout;
  d->response = m0->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE;
  d->base = m0->base_failure;
  d->queue_limit = m0->has_queue_limit ? m0->queue_limit : -1;
  d->rejections_final = m0->rejections_final;
  d->r = c->service.policy.retries;
  d->tokens = c->service.policy.kind == MS_POLICY_GRPC
                  ? c->service.policy.grpc_max_tokens
              : c->service.policy.kind == MS_POLICY_AWS
                  ? c->service.policy.aws_capacity
                  : c->token_capacity;
  d->budget_ratio = c->service.policy.has_budget
                        ? c->service.policy.retry_budget /
                              (1.0 - c->service.policy.retry_budget)
                        : 0.0;
  ms_failure_model pm;
  ms_scenario_pool(&c->scenario, m0, 0.0, &pm);
  d->servers = pm.servers;
}

/* The events that need no heap: the pool changes in time order and the
 * next candidate arrival. */
typedef struct {
  pool_change changes[2 * MS_SIM_MAX_TRIGGERS];
  int n_changes, next_change;
  double lam_max;      /* the thinning rate: the highest offered load */
  double next_arrival; /* HUGE_VAL when no load is ever offered */
} des_sources;

/* The pool changes: the start and the end of every SERVERS trigger inside
 * the run, in time order, each with the pool from then on. */
static void pool_changes(des_sources *src, const ms_scenario *sc,
                         const ms_failure_model *m0) {
  src->n_changes = 0;
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *tr = &sc->triggers[i];
    if (tr->kind != MS_TRIGGER_SERVERS)
      continue;
    const double e[2] = {tr->start, tr->start + tr->hold};
    for (int j = 0; j < 2; j++)
      if (e[j] > 0.0 && e[j] < sc->duration)
        src->changes[src->n_changes++] = (pool_change){e[j], 0};
  }
  qsort(src->changes, (size_t)src->n_changes, sizeof *src->changes, cmp_change);
  for (int i = 0; i < src->n_changes; i++) {
    ms_failure_model pm;
    ms_scenario_pool(sc, m0, src->changes[i].t, &pm);
    src->changes[i].servers = pm.servers;
  }
  src->next_change = 0;
}

/* A candidate arrival at t.  Candidates come at the highest offered load
 * and each is a first attempt with probability lambda(t) / lam_max
 * (thinning): the next candidate is drawn, then whether this one is
 * kept. */
static int arrival(des_t *d, des_sources *src, double t) {
  src->next_arrival = t + rng_exp(&d->rng, src->lam_max);
  if (!(rng_uniform(&d->rng) * src->lam_max <
        ms_scenario_offered_load(&d->cfg->scenario, t)))
    return MS_OK;
  uint32_t id;
  int st = request_new(d, &id);
  if (st == MS_OK) {
    d->win.first += 1.0;
    const ms_retry_policy *pol = &d->cfg->service.policy;
    if (pol->kind == MS_POLICY_FINAGLE) /* deposits older than ttl expire */
      evict_before(&d->bud_first, t - pol->finagle_ttl);
    if (pol->has_budget || pol->kind == MS_POLICY_FINAGLE)
      st = ring_push(&d->bud_first, t, id);
  }
  if (st == MS_OK)
    st = send_attempt(d, id, t);
  return st;
}

/* The event at t, the earliest of all; when several fall at t, a pool
 * change goes first, then a timeout, then the heap's (a retry due or a
 * completion), then an arrival. */
static int des_event(des_t *d, des_sources *src, double t, double t_heap,
                     double t_timeout, double t_change) {
  if (t_change == t) {
    d->servers = src->changes[src->next_change++].servers;
    return dispatch(d, t);
  }
  if (t_timeout == t) {
    uint32_t id = ring_front(&d->live)->id;
    ring_pop(&d->live);
    d->abandoned++;
    return attempt_failed(d, id, t, true);
  }
  if (t_heap == t) {
    event e = heap_pop(&d->heap);
    if (e.kind == EV_RETRY)
      return retry_due(d, e.id, t);
    if (e.kind == EV_TIMEOUT) {
      /* a spread timeout: the client gives up unless a server took it */
      if (d->waiting_serial[e.id] != (uint32_t)e.dur)
        return MS_OK;
      d->waiting_serial[e.id] = 0;
      return attempt_failed(d, e.id, t, true);
    }
    if (e.kind == EV_RESPONSE_TIMEOUT)
      return attempt_failed(d, e.id, t, true);
    return completion(d, &e, t);
  }
  return arrival(d, src, t);
}

/* The events in time order, a window to the recorder whenever the next
 * event lies past the window's end, until the end of the run or until the
 * sink asks to stop. */
static int des_run(des_t *d, des_sources *src, ms_sim_recorder *rec,
                   ms_error *err) {
  double duration = d->cfg->scenario.duration, si = d->cfg->sample_interval;
  long win_index = 1;
  double win_start = 0.0, win_end = fmin(si, duration);
  for (;;) {
    double t_heap = d->heap.n > 0 ? d->heap.a[0].t : HUGE_VAL;
    double t_timeout = d->live.len > 0 && !(d->spread > 0.0)
                           ? ring_front(&d->live)->t + d->T
                           : HUGE_VAL;
    double t_change = src->next_change < src->n_changes
                          ? src->changes[src->next_change].t
                          : HUGE_VAL;
    double t_ev =
        fmin(fmin(t_heap, t_timeout), fmin(t_change, src->next_arrival));

    if (win_end <= t_ev) {
      double backlog = (double)d->abandoned + (double)d->live.len;
      integrate_busy(d, win_end);
      d->win.served = true;
      int st = ms_sim_recorder_window(rec, win_end, win_end - win_start,
                                      &d->win, backlog, err);
      if (st != MS_OK)
        return st;
      d->win = (ms_sim_counts){0};
      if (rec->stop || win_end >= duration)
        return MS_OK;
      win_start = win_end;
      win_index++;
      win_end = fmin((double)win_index * si, duration);
      continue;
    }
    d->events += 1.0;
    int st = des_event(d, src, t_ev, t_heap, t_timeout, t_change);
    if (st != MS_OK)
      return status_message(st, err, t_ev);
  }
}

int ms_sim_des(const ms_sim_config *c, ms_sim_sink sink, void *ctx,
               ms_sim_summary *summary, ms_error *err) {
  int st = ms_sim_config_check(c, err);
  if (st != MS_OK)
    return st;
  const ms_failure_model *m0 = &c->service.model;
  if (m0->kind != MS_MODEL_ERLANG)
    return ms_fail(err, MS_EINVAL,
                   "the discrete-event engine simulates an M/M/c queue: it "
                   "needs the erlang model (servers, service time, timeout)");
  if ((st = ms_service_dist_check(
           c->service_dist, m0->has_service_time_cv ? m0->service_time_cv : 1.0,
           err)) != MS_OK)
    return st;
  const ms_scenario *sc = &c->scenario;
  ms_sim_recorder rec;
  st = ms_sim_recorder_init(&rec, c, sink, ctx, err);
  if (st != MS_OK)
    return st;
  rec.counted = true;

  des_t d;
  des_init(&d, c);
  des_sources src;
  pool_changes(&src, sc, m0);
  src.lam_max = max_offered(sc) * (1.0 + 1e-12);
  src.next_arrival =
      src.lam_max > 0.0 ? rng_exp(&d.rng, src.lam_max) : HUGE_VAL;
  st = des_run(&d, &src, &rec, err);
  double events = d.events;
  des_free(&d);
  if (st != MS_OK)
    return st;
  ms_sim_recorder_finish(&rec, sc->duration, events, summary);
  return MS_OK;
}
