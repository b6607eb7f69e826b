/* SPDX-License-Identifier: MIT */
/* Runs every suite of the model library's unit tests. */
#include <stdlib.h>

#include "check_run.h"
#include "check_suites.h"

int main(void) {
  SRunner *sr = srunner_create(erlang_suite());
  srunner_add_suite(sr, landscape_suite());
  srunner_add_suite(sr, exact_suite());
  srunner_add_suite(sr, errors_suite());
  srunner_add_suite(sr, tables_suite());
  srunner_add_suite(sr, verdict_suite());
  srunner_add_suite(sr, policy_suite());
  srunner_add_suite(sr, mmck_suite());
  srunner_add_suite(sr, recommend_suite());
  return ms_check_run(sr);
}
