/* SPDX-License-Identifier: MIT */
/*
 * The unit-aware scalars of the service and scenario files and of the
 * command line: numbers, durations and rates written as people write them.
 * Included by service.h; nothing here knows YAML.
 */
#ifndef METASTABLE_UNITS_H
#define METASTABLE_UNITS_H

#include <stdbool.h>
#include <stddef.h>

#include "metastable.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ms_format_double: x as the shortest decimal (%.15g, %.16g or %.17g)
 * that reads back as exactly x (doc/design.md §4: what the command's CSV
 * and JSON write); "nan", "inf", "-inf" for the non-finite.
 *   buf  at least 32 bytes; returned
 */
const char *ms_format_double(char buf[32], double x);

/*
 * ms_format_share: a share x (a probability, a fraction, >= 0) for people,
 * with `digits` significant digits: exactly 0 as "0", else a percentage
 * ("1 %", "0.025 %") down to 0.001 %, below that the share itself in
 * scientific notation ("8.62e-40"), never a percentage of an exponent
 * ("3.2e-43 %").  Into buf (at least 32 bytes), returned.
 */
const char *ms_format_share(char *buf, size_t len, double x, int digits);

/*
 * The one rule for numbers near 0, in every spelling and every key of
 * the service and scenario files and of the command line: a number that
 * is not 0 but smaller in magnitude than DBL_MIN (2.2250738585072014e-308,
 * the smallest normal double) is refused, whether written in decimal
 * ("4.9e-324", "1e-400", which strtod rounds to 0), in hexadecimal
 * ("0x1p-1074", which strtod takes without a word) or with a unit that
 * makes it so ("1e-306us", "1e-307%").  A subnormal has fewer than 53
 * bits, and its reciprocal (the service time of a service_rate) is
 * infinite.  The parsers below return MS_NUMBER_TINY for it (those
 * without a message) or say so in their message (ms_number_tiny_message).
 */
#define MS_NUMBER_TINY (-2)

/*
 * ms_number_tiny_message: the message of the rule above for text, into
 * buf (len bytes; 160 hold it with a number of 40 characters):
 * "'4.9e-324' is too close to 0: below 2.2250738585072014e-308, the
 * smallest double with full precision; write 0 or a larger number".
 * Returns buf.
 */
const char *ms_number_tiny_message(char *buf, size_t len, const char *text);

/*
 * ms_quoted: text in single quotes for a message, into buf: whole up to
 * MS_QUOTED_WHOLE bytes, else its first MS_QUOTED_HEAD bytes, "\u2026",
 * its last MS_QUOTED_TAIL and its length in bytes, so that a value of a
 * hostile file (600 digits, a 60 MB name) cannot push the reason out of a
 * bounded message.  UTF-8 sequences are not split.  NULL reads as "".
 * Returns buf; MS_QUOTED_SIZE bytes always hold the result.
 */
#define MS_QUOTED_WHOLE 64
#define MS_QUOTED_HEAD 40
#define MS_QUOTED_TAIL 8
#define MS_QUOTED_SIZE 96
const char *ms_quoted(char *buf, size_t len, const char *text);

/*
 * ms_parse_number: text is one finite number for strtod ("12", "1e-3",
 * " 2.5 "; blanks around it allowed).  Returns 0 with *out set,
 * MS_NUMBER_TINY for a number the rule above refuses, or -1.
 */
int ms_parse_number(const char *text, double *out);

/*
 * ms_parse_whole: text is a whole number written in decimal ("12", "1e3",
 * "10.0"; not "2.5", not hexadecimal), of any size a double holds.
 * Returns 0 with *out set, MS_NUMBER_TINY ("1e-400"), or -1.
 */
int ms_parse_whole(const char *text, double *out);

/*
 * ms_parse_duration / ms_parse_rate: the unit-aware scalars of the service
 * file and of the command line.  Durations: seconds, or a number with us
 * (or µs), ms, s, m (minutes) or h (hours): "100ms" -> 0.1, "1.5" -> 1.5,
 * "250us", "2m" -> 120, "1.5h" -> 5400 (the unit is the whole rest of the
 * text: "m" is minutes, "ms" milliseconds, "min" unknown); a duration that
 * overflows a double in seconds is refused.  Rates: "10", "10/s".  Result
 * finite and >= 0: a negative value is a syntax error here ("is not a
 * duration"), as the units have no negative meaning; a result too close
 * to 0 is refused by the rule above ("'1e-306us' is 1e-312 s, too close to 0:
 * ...").  Return 0, or -1 with
 * errbuf saying what was expected.  Other ranges are the callers' (for the
 * model's parameters, ms_param_check).
 */
int ms_parse_duration(const char *text, double *seconds, char *errbuf,
                      size_t errlen);
int ms_parse_rate(const char *text, double *per_second, char *errbuf,
                  size_t errlen);

/*
 * ms_timeout_from_range: the erlang model's timeout and its spread
 * (doc/design.md §1.1) from the shortest and the longest timeout a client
 * fires, s: *timeout = lo, *spread = hi - lo.  Each must be a timeout
 * (ms_param_check of MS_PARAM_TIMEOUT) and hi >= lo.  The one check of a
 * range for the service files (`timeout: {min: 500ms, max: 1.1s}`) and the
 * command line (`--timeout 500ms..1.1s`).  Returns 0, or -1 with why
 * ("timeout max 0.5 s is below its min 1.1 s").
 */
int ms_timeout_from_range(double lo, double hi, double *timeout, double *spread,
                          char *why, size_t len);

/*
 * ms_parse_timeout_range: a timeout or a range of them, "400ms" or
 * "500ms..1.1s" (two durations of ms_parse_duration joined by ".."),
 * into the timeout and its spread of ms_timeout_from_range (0 for one
 * duration).  Returns 0, or -1 with why.
 */
int ms_parse_timeout_range(const char *text, double *timeout, double *spread,
                           char *why, size_t len);

/*
 * ms_parse_share: a share of 1 (a probability, a ratio), as a plain number
 * or as a percentage: "0.1" and "10%" (or "10 %") -> 0.1, "0.5%" -> 0.005.
 * Any finite number (the range is the caller's).  Returns 0 with *share
 * set, MS_NUMBER_TINY for a share the rule above refuses ("1e-307%"), or
 * -1.
 */
int ms_parse_share(const char *text, double *share);

/*
 * ms_param_is_share: whether parameter id (MS_PARAMS) is a share of 1: no
 * unit, not whole, and a range within [0, 1] (base_failure, retry_budget,
 * token_ratio, observed_failure).  These take a percentage ("10%"); counts
 * (servers, retries, tiers, queue_length) do not.
 */
bool ms_param_is_share(ms_param id);

/* How a parameter's text failed its syntax (ms_parse_param). */
typedef enum {
  MS_PARSE_OK = 0,
  MS_PARSE_NOT_NUMBER, /* a plain number was expected */
  MS_PARSE_NOT_WHOLE,  /* a whole number, in decimal, was expected */
  MS_PARSE_NOT_UNIT,   /* not a duration, not a rate, or a number too
                          close to 0 (MS_NUMBER_TINY): why says which */
} ms_parse_result;

/*
 * ms_parse_param: the value of parameter id (MS_PARAMS) written as text,
 * read as the parameter's row says: a whole parameter as a whole number in
 * decimal ("12", "1e3", "10.0"; not "2.5", not hexadecimal), unit "s" as a
 * duration, another unit (req/s, 1/s, attempts/s) as a rate, a share
 * (ms_param_is_share) as a number or a percentage ("10%"), another
 * parameter without a unit as a plain number.  The one syntax of
 * parameters for the service files and the command line; the range is
 * ms_param_check's.
 * Returns MS_PARSE_OK with *out set, or how it failed (why, len bytes,
 * holds the unit parser's message for MS_PARSE_NOT_UNIT, which is also
 * the verdict on a percentage given for a parameter that is not a share:
 * "'10%' is a percentage, but retries is a count, not a share").
 */
ms_parse_result ms_parse_param(ms_param id, const char *text, double *out,
                               char *why, size_t len);

/*
 * Bare durations (doc/configuration.md, "Units and bare numbers"): a
 * duration written without a unit is read in seconds, and one meant in
 * milliseconds is then 1,000 times too long without any error.  The
 * erlang model's two durations are held against each other:
 *
 *   a bare timeout more than MS_BARE_TIMEOUT_RATIO service times;
 *   a bare service time longer than the timeout, or of
 *   MS_BARE_SERVICE_TIME_MAX s or more.
 *
 * Writing the unit ("500s", "500ms") says what was meant and silences it.
 */
#define MS_BARE_TIMEOUT_RATIO 1000.0
#define MS_BARE_SERVICE_TIME_MAX 10.0 /* s */

/*
 * ms_bare_duration_warning: whether a duration of the erlang model that
 * was written as a bare number is implausible by the rule above, and if
 * so the warning, naming the unit it was read in:
 *   "timeout: 500 was read as 500 s, 5,000 times the service time; write
 *   500ms if you meant milliseconds"
 *   id            MS_PARAM_TIMEOUT or MS_PARAM_SERVICE_TIME: the one that
 *                 was written bare (any other id: false)
 *   key, sep      how the value was introduced: "timeout" and ": " for a
 *                 file, "--timeout" and " " for the command line
 *   service_time  s, > 0 (as read, or 1 / service_rate)
 *   timeout       s, >= 0 (as read)
 *   buf, len      the warning, "" when there is none
 * Non-finite or out-of-domain durations give no warning (the model's
 * checks refuse them).  Returns true when there is a warning.
 */
bool ms_bare_duration_warning(ms_param id, const char *key, const char *sep,
                              double service_time, double timeout, char *buf,
                              size_t len);

#ifdef __cplusplus
}
#endif

#endif
