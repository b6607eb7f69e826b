/* SPDX-License-Identifier: MIT */
/*
 * The outputs of MS_OUTPUTS (outputs.h): their descriptions, and the
 * value of each in a report.
 */
#include <stddef.h>
#include <string.h>

#include "outputs.h"

static const ms_output_info outputs[MS_OUT_COUNT] = {
#define MS_OUT_ROW(ID, name, in, kind, unit, ds_min, ds_max, meaning)          \
  {#name, kind, unit, ds_min, ds_max, meaning},
    MS_OUTPUTS(MS_OUT_ROW)
#undef MS_OUT_ROW
};

const ms_output_info *ms_output_get(ms_output id) {
  return (int)id >= 0 && id < MS_OUT_COUNT ? &outputs[id] : NULL;
}

int ms_output_find(const char *name) {
  for (int i = 0; name != NULL && i < MS_OUT_COUNT; i++)
    if (strcmp(outputs[i].name, name) == 0)
      return i;
  return -1;
}

void ms_report_of(ms_report *r, const ms_analysis *a) {
  memset(r, 0, sizeof *r);
  r->analysis = *a;
  r->reporting = 1;
}

/* The presence of each kind's value: observed and optional ones only when
 * their has_ flag is set (in the same place as the value). */
#define PRESENT_MS_OUTPUT_NUMBER(r, in, name) true
#define PRESENT_MS_OUTPUT_COUNT(r, in, name) true
#define PRESENT_MS_OUTPUT_STATE(r, in, name) true
#define PRESENT_MS_OUTPUT_FLAG(r, in, name) true
#define PRESENT_MS_OUTPUT_OBSERVED(r, in, name) (r)->in has_##name
#define PRESENT_MS_OUTPUT_OPTIONAL(r, in, name) (r)->in has_##name

bool ms_report_output(const ms_report *r, ms_output id, double *v) {
  /* no report this interval: only its heartbeat, reporting = 0 */
  if (r->reporting == 0 && id != MS_OUT_REPORTING)
    return false;
  switch (id) {
#define MS_OUT_CASE(ID, name, in, kind, unit, ds_min, ds_max, meaning)         \
  case MS_OUT_##ID:                                                            \
    if (!PRESENT_##kind(r, in, name))                                          \
      return false;                                                            \
    *v = (double)r->in name;                                                   \
    return true;
    MS_OUTPUTS(MS_OUT_CASE)
#undef MS_OUT_CASE
  case MS_OUT_COUNT:
    break;
  }
  return false;
}
