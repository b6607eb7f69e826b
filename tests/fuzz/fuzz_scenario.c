/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the scenario file parser (service/scenario.c), from a buffer
 * as ms_scenario_file_load reads a file.  An accepted scenario's offered
 * load is finite and not negative over its run, and its mean over the run
 * is too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ms_scenario_file f;
  char err[512];
  err[0] = '\0';
  if (ms_scenario_file_parse((const char *)data, size, "fuzz.yaml", &f, err,
                             sizeof err) != 0) {
    if (err[0] == '\0')
      abort(); /* a rejection always says why */
    return 0;
  }
  const ms_scenario *sc = &f.scenario;
  double d = sc->duration;
  if (!(isfinite(d) && d > 0))
    abort();
  for (int k = 0; k <= 16; k++) {
    double lambda = ms_scenario_offered_load(sc, d * k / 16);
    if (!(isfinite(lambda) && lambda >= 0))
      abort();
  }
  double mean = ms_scenario_mean_offered_load(sc, 0, d);
  double end = ms_scenario_trigger_end(sc);
  if (!(isfinite(mean) && mean >= 0 && isfinite(end) && end >= 0))
    abort();
  return 0;
}
