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
 * ms_parse_number: text is one finite number for strtod ("12", "1e-3",
 * " 2.5 "; blanks around it allowed).  Returns 0 with *out set, or -1.
 */
int ms_parse_number(const char *text, double *out);

/*
 * ms_parse_whole: text is a whole number written in decimal ("12", "1e3",
 * "10.0"; not "2.5", not hexadecimal), of any size a double holds.
 * Returns 0 with *out set, or -1.
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
 * duration"), as the units have no negative meaning.  Return 0, or -1 with
 * errbuf saying what was expected.  Other ranges are the callers' (for the
 * model's parameters, ms_param_check).
 */
int ms_parse_duration(const char *text, double *seconds, char *errbuf,
                      size_t errlen);
int ms_parse_rate(const char *text, double *per_second, char *errbuf,
                  size_t errlen);

/*
 * ms_parse_share: a share of 1 (a probability, a ratio), as a plain number
 * or as a percentage: "0.1" and "10%" (or "10 %") -> 0.1, "0.5%" -> 0.005.
 * Any finite number (the range is the caller's).  Returns 0 with *share
 * set, or -1.
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
  MS_PARSE_NOT_UNIT,   /* not a duration, or not a rate: why says which */
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

#ifdef __cplusplus
}
#endif

#endif
