/* SPDX-License-Identifier: MIT */
/* Status names and error messages. */
#include <stdarg.h>
#include <stdio.h>

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
