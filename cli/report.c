/* The values the plugin dispatches, as CSV and JSON; see report.h. */
#include <math.h>

#include "common.h"
#include "report.h"

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

static int not_finite(const char *what, double v, double lambda, char *msg,
                      size_t len) {
  char l[32];
  snprintf(msg, len, "the %s at offered load %s req/s is %s", what,
           ms_cli_fmt_double(l, lambda),
           isnan(v) ? "not a number" : "beyond the range of a double");
  return -1;
}

int ms_equilibria_finite(const ms_equilibrium *eq, int n, double lambda,
                         char *msg, size_t len) {
  for (int i = 0; i < n; i++) {
    if (!isfinite(eq[i].effective_load))
      return not_finite("effective load", eq[i].effective_load, lambda, msg,
                        len);
    if (!isfinite(eq[i].failure_probability))
      return not_finite("failure probability", eq[i].failure_probability,
                        lambda, msg, len);
    if (!isfinite(eq[i].amplification))
      return not_finite("amplification", eq[i].amplification, lambda, msg, len);
  }
  return 0;
}

int ms_report_finite(const ms_report *r, char *msg, size_t len) {
  const struct {
    const char *what;
    double v;
  } v[] = {{"offered load", r->offered_load},
           {"effective load", r->effective_load},
           {"self-inflicted load", r->self_inflicted_load},
           {"amplification", r->amplification},
           {"failure probability", r->failure_probability},
           {"utilization", r->utilization},
           {"tipping load", r->tipping_load},
           {"recovery load", r->recovery_load},
           {"tipping distance", r->tipping_distance},
           {"tipping headroom", r->tipping_headroom}};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (!isfinite(v[i].v))
      return not_finite(v[i].what, v[i].v, r->offered_load, msg, len);
  return ms_equilibria_finite(r->eq, r->equilibria, r->offered_load, msg, len);
}
