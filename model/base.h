/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable, the model library: what every header shares.
 *
 * Conventions for every function of the model (doc/design.md §4):
 *   - rates are per second (requests or attempts), times in seconds;
 *   - a function returns MS_OK (0) or a negative ms_status, and on failure
 *     writes one line into *err when err is not NULL; results are written
 *     only on success, and no result is ever NaN or infinite;
 *   - nothing prints, aborts or keeps global state; only the exact (GMP)
 *     functions and the simulation engines allocate; all are reentrant.
 *
 * The limits below are the model's domain: every range of MS_PARAMS
 * (loop.h) is built from them, so each is decided here once.
 */
#ifndef METASTABLE_BASE_H
#define METASTABLE_BASE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  MS_OK = 0,
  MS_EINVAL = -1,  /* an argument is outside its documented domain */
  MS_ENOCONV = -2, /* an iteration did not converge, or the model's shape
                      is outside what the analysis covers */
  MS_ELIMIT = -3,  /* a documented limit (digits, array size, simulation
                      bins) was reached */
  MS_ENOMEM = -4,  /* memory could not be allocated (exact functions and
                      simulations only) */
} ms_status;

/* A diagnostic: what was wrong and with which value. */
typedef struct {
  char msg[192];
} ms_error;

/* The version ("0.2.0"), from configure.ac's AC_INIT: the one home of the
 * version, which `metastable --version` shows and the plugin logs. */
const char *ms_version(void);

/* The name of a status ("invalid argument", ...); never NULL. */
const char *ms_status_name(int status);

/*
 * ms_format_against: x for a message that compares it with bound ("x is
 * outside [lo, hi]", "more than the limit of"), with the fewest
 * significant digits, from 6 (%g) up to 17, whose text reads back on the
 * same side of bound as x does (above, below or equal).  A message then
 * never shows a value equal to the bound it is said to pass:
 * 10.000000000000002 against 10 is "10.000000000000002", not "10"; 2e12
 * against 1e12 stays "2e+12".  "nan", "inf" and "-inf" as %g writes them.
 *   buf    at least 32 bytes; returned
 *   bound  the bound x is compared with (for a range, the one x passed)
 * The one formatter of a value in every range message of the model, the
 * service layer and the command.
 */
const char *ms_format_against(char buf[32], double x, double bound);

/* Largest pool size c (servers). */
#define MS_MAX_SERVERS 10000000L
/* Largest queue limit K (waiting places) of the M/M/c/K model. */
#define MS_MAX_QUEUE_LIMIT 10000000L
/* Largest retries per request per tier, and largest number of tiers. */
#define MS_MAX_RETRIES 10000
#define MS_MAX_TIERS 10
/* Largest rate (a capacity, an offered or effective load), per second:
 * far below DBL_MAX, so that intermediate products stay finite. */
#define MS_MAX_RATE 1e300
/* Largest service rate of one server, 1/s: c mu <= 1e297 < MS_MAX_RATE. */
#define MS_MAX_SERVICE_RATE 1e290
/* Largest duration (a timeout, a service time), seconds. */
#define MS_MAX_DURATION 1e300
/* Largest c mu T of the erlang model (servers x service rate x timeout,
 * the requests the pool completes in one timeout).  Beyond it the
 * landscape's grid cannot place the fold (doc/design.md §1.3); checked by
 * ms_failure_model_check, so by every caller alike. */
#define MS_MAX_TIMEOUT_COMPLETIONS 1e15
/* Largest coefficient of variation of the service time.  The M/G/c
 * approximation's error is measured up to 4 (doc/design.md §1.1). */
#define MS_MAX_SERVICE_TIME_CV 10.0

#ifdef __cplusplus
}
#endif

#endif
