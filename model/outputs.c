/* SPDX-License-Identifier: MIT */
/*
 * The outputs of MS_OUTPUTS (metastable.h): their descriptions, and the
 * value of each in a report.
 */
#include <stddef.h>
#include <string.h>

#include "internal.h"

static const ms_output_info outputs[MS_OUT_COUNT] = {
#define MS_OUT_ROW(ID, name, kind, unit, ds_min, ds_max, meaning)              \
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

/* The presence of each kind's value: observed ones only when observed. */
#define PRESENT_MS_OUTPUT_NUMBER(r, name) true
#define PRESENT_MS_OUTPUT_COUNT(r, name) true
#define PRESENT_MS_OUTPUT_STATE(r, name) true
#define PRESENT_MS_OUTPUT_FLAG(r, name) true
#define PRESENT_MS_OUTPUT_OBSERVED(r, name) (r)->has_##name
#define PRESENT_MS_OUTPUT_OPTIONAL(r, name) (r)->has_##name

bool ms_report_output(const ms_report *r, ms_output id, double *v) {
  /* no report this interval: only its heartbeat, reporting = 0 */
  if (r->reporting == 0 && id != MS_OUT_REPORTING)
    return false;
  switch (id) {
#define MS_OUT_CASE(ID, name, kind, unit, ds_min, ds_max, meaning)             \
  case MS_OUT_##ID:                                                            \
    if (!PRESENT_##kind(r, name))                                              \
      return false;                                                            \
    *v = (double)r->name;                                                      \
    return true;
    MS_OUTPUTS(MS_OUT_CASE)
#undef MS_OUT_CASE
  case MS_OUT_COUNT:
    break;
  }
  return false;
}

/* The offsets in ms_report of the MS_OUTPUT_NUMBER outputs. */
#define OFFSET_MS_OUTPUT_NUMBER(name) offsetof(ms_report, name),
#define OFFSET_MS_OUTPUT_COUNT(name)
#define OFFSET_MS_OUTPUT_STATE(name)
#define OFFSET_MS_OUTPUT_FLAG(name)
#define OFFSET_MS_OUTPUT_OBSERVED(name)
#define OFFSET_MS_OUTPUT_OPTIONAL(name)
#define MS_OUT_OFFSET(ID, name, kind, unit, ds_min, ds_max, meaning)           \
  OFFSET_##kind(name)

const size_t ms_number_output_offsets[] = {MS_OUTPUTS(MS_OUT_OFFSET)};
const int ms_number_outputs =
    (int)(sizeof ms_number_output_offsets / sizeof ms_number_output_offsets[0]);
