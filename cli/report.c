/* SPDX-License-Identifier: MIT */
/* The values the plugin dispatches, as CSV and JSON; see report.h. */
#include <math.h>

#include "common.h"
#include "report.h"

/* The outputs a report holds: every output of MS_OUTPUTS but the
 * observations, which replay writes beside the inputs they come from. */
static bool in_report(int i) {
  return ms_output_get((ms_output)i)->kind != MS_OUTPUT_OBSERVED;
}

void ms_report_csv_header(FILE *f) {
  const char *sep = "";
  for (int i = 0; i < MS_OUT_COUNT; i++)
    if (in_report(i)) {
      fprintf(f, "%s%s", sep, ms_output_get((ms_output)i)->name);
      sep = ",";
    }
}

void ms_report_csv(FILE *f, const ms_report *r) {
  const char *sep = "";
  for (int i = 0; i < MS_OUT_COUNT; i++) {
    if (!in_report(i))
      continue;
    fputs(sep, f);
    sep = ",";
    double v;
    if (!ms_report_output(r, (ms_output)i, &v))
      continue;
    char buf[32];
    switch (ms_output_get((ms_output)i)->kind) {
    case MS_OUTPUT_STATE:
      fputs(ms_state_name((ms_state)v), f);
      break;
    case MS_OUTPUT_COUNT:
    case MS_OUTPUT_FLAG:
      fprintf(f, "%.0f", v);
      break;
    case MS_OUTPUT_NUMBER:
    case MS_OUTPUT_OBSERVED:
    case MS_OUTPUT_OPTIONAL:
      fputs(ms_format_double(buf, v), f);
      break;
    }
  }
}

void ms_report_json(ms_json *j, const ms_report *r, bool count_only) {
  for (int i = 0; i < MS_OUT_COUNT; i++) {
    const ms_output_info *o = ms_output_get((ms_output)i);
    double v;
    if (!in_report(i) || !ms_report_output(r, (ms_output)i, &v))
      continue;
    switch (o->kind) {
    case MS_OUTPUT_STATE:
      ms_json_string(j, o->name, ms_state_name((ms_state)v));
      break;
    case MS_OUTPUT_COUNT:
      if (count_only)
        ms_json_int(j, o->name, (long long)v);
      break;
    case MS_OUTPUT_FLAG:
      ms_json_int(j, o->name, (long long)v);
      break;
    case MS_OUTPUT_NUMBER:
    case MS_OUTPUT_OBSERVED:
    case MS_OUTPUT_OPTIONAL:
      ms_json_number(j, o->name, v);
      break;
    }
  }
}

static int not_finite(const char *what, double v, double lambda, char *msg,
                      size_t len) {
  char l[32];
  snprintf(msg, len, "the %s at offered load %s req/s is %s", what,
           ms_format_double(l, lambda),
           isnan(v) ? "not a number" : "beyond the range of a double");
  return -1;
}

int ms_equilibria_finite(const ms_equilibrium *eq, int n, double lambda,
                         char *msg, size_t len) {
  for (int i = 0; i < n; i++) {
    if (!isfinite(eq[i].effective_load))
      return not_finite("effective load", eq[i].effective_load, lambda, msg,
                        len);
    if (!isfinite(eq[i].failure_probability))
      return not_finite("failure probability", eq[i].failure_probability,
                        lambda, msg, len);
    if (!isfinite(eq[i].amplification))
      return not_finite("amplification", eq[i].amplification, lambda, msg, len);
  }
  return 0;
}

int ms_report_finite(const ms_report *r, char *msg, size_t len) {
  for (int i = 0; i < MS_OUT_COUNT; i++) {
    double v;
    if (!ms_report_output(r, (ms_output)i, &v) || isfinite(v))
      continue;
    /* "tipping_load" reads "tipping load" */
    char what[64];
    snprintf(what, sizeof what, "%s", ms_output_get((ms_output)i)->name);
    for (char *c = what; *c; c++)
      if (*c == '_')
        *c = ' ';
    return not_finite(what, v, r->analysis.offered_load, msg, len);
  }
  return ms_equilibria_finite(r->analysis.eq, r->analysis.equilibria,
                              r->analysis.offered_load, msg, len);
}
