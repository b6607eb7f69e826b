/* SPDX-License-Identifier: MIT */
/*
 * The parameter rules of MS_PARAMS (model/loop.h): the one place where the
 * range of a service parameter is decided and put into words.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const ms_param_info ms_param_table[MS_PARAM_COUNT] = {
#define MS_PARAM_ROW(ID, key, unit, lo, hi, bounds, whole, scope)              \
  {key, unit, lo, hi, bounds, whole, scope},
    MS_PARAMS(MS_PARAM_ROW)
#undef MS_PARAM_ROW
};

const ms_param_info *ms_param_get(ms_param id) {
  return (int)id >= 0 && id < MS_PARAM_COUNT ? &ms_param_table[id] : NULL;
}

int ms_param_find(const char *key) {
  for (int i = 0; key != NULL && i < MS_PARAM_COUNT; i++)
    if (strcmp(ms_param_table[i].key, key) == 0)
      return i;
  return -1;
}

/* A bound or a value as people write it: whole numbers in full
 * (10000000, not 1e+07), others by %g. */
static const char *number(char *buf, size_t len, double v, bool whole) {
  if (whole && fabs(v) < 1e15 && v == floor(v))
    snprintf(buf, len, "%.0f", v);
  else
    snprintf(buf, len, "%g", v);
  return buf;
}

const char *ms_param_range(ms_param id, char *buf, size_t len) {
  const ms_param_info *p = ms_param_get(id);
  if (len > 0)
    buf[0] = '\0';
  if (p == NULL)
    return buf;
  char lo[32], hi[32];
  number(lo, sizeof lo, p->lo, p->whole);
  number(hi, sizeof hi, p->hi, p->whole);
  if (p->bounds & MS_BOUND_LIMIT) {
    /* the quantity is positive (or non-negative); the ends that are not 0
     * are the limits of the arithmetic */
    bool positive = (p->bounds & MS_BOUND_LO_OPEN) || p->lo > 0.0;
    if (p->lo > 0.0)
      snprintf(buf, len, "> 0, at least %s and at most %s", lo, hi);
    else
      snprintf(buf, len, "%s 0 and at most %s", positive ? ">" : ">=", hi);
  } else {
    snprintf(buf, len, "in %c%s, %s%c",
             p->bounds & MS_BOUND_LO_OPEN ? '(' : '[', lo, hi,
             p->bounds & MS_BOUND_HI_OPEN ? ')' : ']');
  }
  return buf;
}

int ms_param_check(ms_param id, double v, ms_error *err) {
  const ms_param_info *p = ms_param_get(id);
  if (p == NULL)
    return ms_fail(err, MS_EINVAL, "parameter %d is not a parameter", (int)id);
  if (ms_param_ok(id, v))
    return MS_OK;
  char value[32], range[96];
  /* the value with the digits that keep it apart from the bound it passes
   * (or from the whole number it misses) */
  if (p->whole && fabs(v) < 1e15 && v == floor(v))
    number(value, sizeof value, v, true);
  else
    ms_format_against(value, v,
                      p->whole && isfinite(v) && v >= p->lo && v <= p->hi
                          ? floor(v)
                      : v <= p->lo ? p->lo
                                   : p->hi);
  ms_param_range(id, range, sizeof range);
  if (p->bounds & MS_BOUND_LIMIT) {
    /* "0 req/s", "2 s", but "0/s" for a rate per server (1/s) */
    bool per = strncmp(p->unit, "1/", 2) == 0;
    return ms_fail(err, MS_EINVAL, "%s = %s%s%s must be %s", p->key, value,
                   per || !p->unit[0] ? "" : " ", per ? p->unit + 1 : p->unit,
                   range);
  }
  if (p->whole && isfinite(v) && v != floor(v))
    return ms_fail(err, MS_EINVAL, "%s = %s is not a whole number", p->key,
                   value);
  /* "in [1, 10]" reads "is outside [1, 10]" */
  return ms_fail(err, MS_EINVAL, "%s = %s is outside %s", p->key, value,
                 range + 3);
}
