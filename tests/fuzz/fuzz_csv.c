/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the CSV trace reader (service/trace.c) over a stream of the
 * input's bytes (fmemopen), row by row as metastable replay and fit read
 * a file.  Every row it returns has a finite time inside the trace's range,
 * times that increase; a rejection says why.  (Values may be NaN or
 * infinite, as collectd's can: the service layer judges them.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0; /* fmemopen of an empty buffer is not portable */
  FILE *f = fmemopen((void *)(uintptr_t)data, size, "r");
  if (f == NULL)
    return 0;
  ms_trace t;
  char err[512];
  err[0] = '\0';
  if (ms_trace_open(&t, f, "fuzz.csv", err, sizeof err) != 0) {
    if (err[0] == '\0')
      abort();
    ms_trace_close(&t); /* as after a good open (service/trace.c's callers) */
    fclose(f);
    return 0;
  }
  ms_trace_row row;
  double last = -INFINITY;
  int rc;
  while ((rc = ms_trace_next(&t, &row, err, sizeof err)) == 1) {
    if (!(isfinite(row.unix_time) && row.unix_time >= 0 &&
          row.unix_time < MS_TRACE_TIME_END && row.unix_time > last))
      abort();
    last = row.unix_time;
  }
  if (rc < 0 && err[0] == '\0')
    abort();
  ms_trace_close(&t);
  fclose(f);
  return 0;
}
