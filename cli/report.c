/* The values of DESIGN 1.5, as CSV and JSON; see report.h. */
#include "report.h"
#include "common.h"

const char ms_report_csv_header[] =
    "offered_load,effective_load,self_inflicted_load,amplification,"
    "failure_probability,utilization,tipping_load,recovery_load,"
    "tipping_distance,tipping_headroom,equilibria,state,storm";

void ms_report_csv(FILE *f, const ms_report *r) {
  if (r == NULL) {
    fputs(",,,,,,,,,,,,", f);
    return;
  }
  const double v[] = {r->offered_load,        r->effective_load,
                      r->self_inflicted_load, r->amplification,
                      r->failure_probability, r->utilization,
                      r->tipping_load,        r->recovery_load,
                      r->tipping_distance,    r->tipping_headroom};
  char buf[32];
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    fprintf(f, "%s,", ms_cli_fmt_double(buf, v[i]));
  fprintf(f, "%d,%s,%d", r->equilibria, ms_state_name(r->state), r->storm);
}

void ms_report_json(ms_json *j, const ms_report *r, bool count_only) {
  ms_json_number(j, "offered_load", r->offered_load);
  ms_json_number(j, "effective_load", r->effective_load);
  ms_json_number(j, "self_inflicted_load", r->self_inflicted_load);
  ms_json_number(j, "amplification", r->amplification);
  ms_json_number(j, "failure_probability", r->failure_probability);
  ms_json_number(j, "utilization", r->utilization);
  ms_json_number(j, "tipping_load", r->tipping_load);
  ms_json_number(j, "recovery_load", r->recovery_load);
  ms_json_number(j, "tipping_distance", r->tipping_distance);
  ms_json_number(j, "tipping_headroom", r->tipping_headroom);
  if (count_only)
    ms_json_int(j, "equilibria", r->equilibria);
  ms_json_string(j, "state", ms_state_name(r->state));
  ms_json_int(j, "storm", r->storm);
}
