/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the service file parser (service/spec.c), from a buffer as
 * ms_service_file_load reads a file.  A file is either accepted, with
 * services whose parameters pass the model's own checks, or rejected with
 * a message.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ms_service_file f;
  char err[512];
  err[0] = '\0';
  int rc = ms_service_file_parse((const char *)data, size, "fuzz.yaml", &f, err,
                                 sizeof err);
  if (rc != 0) {
    if (err[0] == '\0')
      abort(); /* a rejection always says why */
    return 0;
  }
  for (size_t i = 0; i < f.n_services; i++) {
    ms_error e;
    if (f.services[i].name == NULL)
      abort();
    if (ms_service_params_check(&f.services[i].params, &e) != MS_OK)
      abort(); /* an accepted service is a valid one */
    (void)ms_service_file_find(&f, f.services[i].name);
  }
  ms_service_file_free(&f);
  return 0;
}
