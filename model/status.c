/* SPDX-License-Identifier: MIT */
/* Status names and error messages. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "ms_config.h"

const char *ms_version(void) { return PACKAGE_VERSION; }

const char *ms_status_name(int status) {
  switch (status) {
  case MS_OK:
    return "success";
  case MS_EINVAL:
    return "invalid argument";
  case MS_ENOCONV:
    return "no convergence";
  case MS_ELIMIT:
    return "limit reached";
  case MS_ENOMEM:
    return "out of memory";
  default:
    return "unknown status";
  }
}

int ms_fail(ms_error *err, int status, const char *fmt, ...) {
  if (err != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return status;
}

/* -1, 0 or 1 as a is below, at or above b. */
static int side(double a, double b) { return (a > b) - (a < b); }

const char *ms_format_against(char buf[32], double x, double bound) {
  for (int digits = 6; digits <= 17; digits++) {
    snprintf(buf, 32, "%.*g", digits, x);
    if (!isfinite(x) || isnan(bound) ||
        side(strtod(buf, NULL), bound) == side(x, bound))
      break;
  }
  return buf;
}
