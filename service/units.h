/* SPDX-License-Identifier: MIT */
/*
 * The unit-aware scalars of the service and scenario files and of the
 * command line: numbers, durations and rates written as people write them.
 * Included by service.h; nothing here knows YAML.
 */
#ifndef METASTABLE_UNITS_H
#define METASTABLE_UNITS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ms_parse_number: text is one finite number for strtod ("12", "1e-3",
 * " 2.5 "; blanks around it allowed).  Returns 0 with *out set, or -1.
 */
int ms_parse_number(const char *text, double *out);

/*
 * ms_parse_duration / ms_parse_rate: the unit-aware scalars of the service
 * file and of the command line.  "100ms" -> 0.1, "1.5" -> 1.5, "250us";
 * rates: "10", "10/s".  Result finite and >= 0.  Return 0, or -1 with
 * errbuf saying what was expected.  Ranges are the callers' (for the
 * model's parameters, ms_param_check).
 */
int ms_parse_duration(const char *text, double *seconds, char *errbuf,
                      size_t errlen);
int ms_parse_rate(const char *text, double *per_second, char *errbuf,
                  size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
