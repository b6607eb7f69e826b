/* SPDX-License-Identifier: MIT */
/* The main of the model library's Check programs (tests/Makefile.inc):
 * each runs the suites its MS_CHECK_SUITES names, a share of the model's
 * tests, so that make -j runs the shares side by side. */
#include <stddef.h>

#include "check_run.h"
#include "check_suites.h"

#ifndef MS_CHECK_SUITES
#error "MS_CHECK_SUITES: the suites to run, e.g. erlang_suite, exact_suite"
#endif

int main(void) {
  Suite *(*const suites[])(void) = {MS_CHECK_SUITES};
  SRunner *sr = srunner_create(suites[0]());
  for (size_t i = 1; i < sizeof suites / sizeof suites[0]; i++)
    srunner_add_suite(sr, suites[i]());
  return ms_check_run(sr);
}
