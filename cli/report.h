/* SPDX-License-Identifier: MIT */
/*
 * The values the plugin dispatches for one service, written the same way by
 * every sub-command that reports them (solve, replay): same names, same order,
 * `state` by name ("stable", "vulnerable", "metastable", "overloaded"),
 * `storm` 0 or 1.
 */
#ifndef METASTABLE_CLI_REPORT_H
#define METASTABLE_CLI_REPORT_H

#include <stdio.h>

#include "json.h"
#include "metastable.h"

/* Write the CSV header of the values, comma-separated, no newline:
 * "offered_load,effective_load,...,state,storm" (the outputs of
 * MS_OUTPUTS but the observations). */
void ms_report_csv_header(FILE *f);

/* The values as CSV fields matching ms_report_csv_header (no newline); an
 * output a report does not hold is an empty field (a zeroed report, no
 * report at all, holds only reporting, 0).  The state is written by name. */
void ms_report_csv(FILE *f, const ms_report *r);

/* The values as members of the JSON object being written; `equilibria` is
 * the count (solve writes its own array instead when count_only is false).
 */
void ms_report_json(ms_json *j, const ms_report *r, bool count_only);

/* 0 when every number of r (its values and equilibria) is finite; else -1
 * with msg naming the first that is not, with the offered load: "the
 * effective load at offered load 1e+300 req/s is beyond the range of a
 * double".
 * The commands check before they write, so that no inf, nan or JSON null
 * ever stands for a number in a successful run. */
int ms_report_finite(const ms_report *r, char *msg, size_t len);

/* The same for the equilibria at offered load lambda. */
int ms_equilibria_finite(const ms_equilibrium *eq, int n, double lambda,
                         char *msg, size_t len);

#endif
