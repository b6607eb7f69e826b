/* SPDX-License-Identifier: MIT */
/* The end of every Check program's main. */
#ifndef MS_CHECK_RUN_H
#define MS_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

/* Run every suite of sr (verbosity from CK_VERBOSITY, normal without it),
 * free it, and return the program's exit status: EXIT_SUCCESS when no test
 * failed. */
static inline int ms_check_run(SRunner *sr) {
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
