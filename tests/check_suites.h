/* SPDX-License-Identifier: MIT */
/* The Check suites of the model library (tests/check_model.c). */
#ifndef MS_CHECK_SUITES_H
#define MS_CHECK_SUITES_H

#include <check.h>

Suite *erlang_suite(void);
Suite *landscape_suite(void);
Suite *exact_suite(void);
Suite *errors_suite(void);
Suite *tables_suite(void);
Suite *verdict_suite(void);
Suite *policy_suite(void);
Suite *mmck_suite(void);
Suite *recommend_suite(void);
Suite *response_suite(void);
Suite *hazard_suite(void);
Suite *hazard_table_suite(void);

#endif
