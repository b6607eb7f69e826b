/* SPDX-License-Identifier: MIT */
/*
 * What is reported per service: MS_OUTPUTS, the one table of the outputs
 * (name, unit, types.db range, meaning), and ms_report, the values of one
 * service at one interval (doc/design.md §1.5).  Shared by the plugin's
 * dispatch and the command's CSV and JSON writers.
 */
#ifndef METASTABLE_OUTPUTS_H
#define METASTABLE_OUTPUTS_H

#include "metastable.h"

/*
 * MS_OUTPUTS: every value reported per service (doc/design.md §1.5), in the
 * order the plugin dispatches them and conf/types.db declares them.  The
 * plugin's dispatch, the command line's CSV and JSON writers, the
 * finiteness checks and the types.db test all derive from this table:
 * adding an output is one row here, one member of the same name (in
 * ms_analysis or ms_report), its computation and its row in
 * conf/types.db.
 *   X(ID, name, in, kind, unit, ds_min, ds_max, meaning)
 *     ID      the constant MS_OUT_<ID>
 *     name    the member, the collectd type and the key in the command's
 *             CSV and JSON (Prometheus: collectd_metastable_<name>)
 *     in      where the member is: "analysis." (ms_analyze's, model/
 *             landscape.h) or empty (ms_report's own, set by the tracker)
 *     kind    an ms_output_kind
 *     unit    for people: "req/s", "attempts/s", "attempts per request",
 *             "probability", "ratio", "count", "code", "0 or 1", "s",
 *             "z-score"; the unit column of the documents' tables
 *             (tests/cli/test_docs.py)
 *     ds_min, ds_max  the range of its types.db data source ("U": none)
 *     meaning one line for people
 */
typedef enum {
  MS_OUTPUT_NUMBER,   /* a finite double */
  MS_OUTPUT_COUNT,    /* a whole number (an int member) */
  MS_OUTPUT_STATE,    /* an ms_state code, written by name by the command */
  MS_OUTPUT_FLAG,     /* 0 or 1 (an int member) */
  MS_OUTPUT_OBSERVED, /* a finite double, present only when observed:
                         ms_report.has_<name> */
  MS_OUTPUT_OPTIONAL  /* a finite double computed from an optional input,
                         present only when ms_report.has_<name> */
} ms_output_kind;

/* clang-format off */
#define MS_OUTPUTS(X)                                                         \
  X(OFFERED_LOAD, offered_load, analysis., MS_OUTPUT_NUMBER,                  \
    "req/s", "0", "U",                                                        \
    "offered load: first attempts per second, what the users ask for")        \
  X(EFFECTIVE_LOAD, effective_load, analysis., MS_OUTPUT_NUMBER,              \
    "attempts/s", "0", "U",                                                   \
    "all attempts per second at the equilibrium of the current basin")        \
  X(SELF_INFLICTED_LOAD, self_inflicted_load, analysis., MS_OUTPUT_NUMBER,    \
    "attempts/s", "U", "U",                                                   \
    "effective minus offered load: the attempts the retries add")             \
  X(AMPLIFICATION, amplification, analysis., MS_OUTPUT_NUMBER,                \
    "attempts per request", "0", "U",                                         \
    "effective / offered load: attempts per request")                         \
  X(FAILURE_PROBABILITY, failure_probability, analysis., MS_OUTPUT_NUMBER,    \
    "probability", "0", "1",                                                  \
    "failure probability of one attempt at that equilibrium")                 \
  X(UTILIZATION, utilization, analysis., MS_OUTPUT_NUMBER,                    \
    "ratio", "0", "U",                                                        \
    "effective load / saturation load (capacity, or servers x rate)")         \
  X(TIPPING_LOAD, tipping_load, analysis., MS_OUTPUT_NUMBER,                  \
    "req/s", "0", "U",                                                        \
    "offered load above which the healthy equilibrium disappears")            \
  X(RECOVERY_LOAD, recovery_load, analysis., MS_OUTPUT_NUMBER,                \
    "req/s", "0", "U",                                                        \
    "offered load below which the collapsed equilibrium disappears")          \
  X(TIPPING_DISTANCE, tipping_distance, analysis., MS_OUTPUT_NUMBER,          \
    "req/s", "U", "U",                                                        \
    "tipping load minus offered load (negative past it)")                     \
  X(TIPPING_HEADROOM, tipping_headroom, analysis., MS_OUTPUT_NUMBER,          \
    "ratio", "U", "U",                                                        \
    "tipping distance / tipping load")                                        \
  X(EQUILIBRIA, equilibria, analysis., MS_OUTPUT_COUNT,                       \
    "count", "0", "U",                                                        \
    "number of equilibria at the offered load")                               \
  X(STATE, state, analysis., MS_OUTPUT_STATE,                                 \
    "code", "0", "3",                                                         \
    "0 stable, 1 vulnerable, 2 metastable, 3 overloaded")                     \
  X(STORM, storm, analysis., MS_OUTPUT_FLAG,                                  \
    "0 or 1", "0", "1",                                                       \
    "1 while a retry storm is observed (the model's states 2, 3 if unobserved)")                      \
  X(OBSERVED_EFFECTIVE_LOAD, observed_effective_load, analysis., MS_OUTPUT_OBSERVED,\
    "attempts/s", "0", "U",                                                   \
    "attempts per second observed reaching the service")                      \
  X(OBSERVED_FAILURE_RATIO, observed_failure_ratio, analysis., MS_OUTPUT_OBSERVED,\
    "ratio", "0", "1",                                                        \
    "failed attempts / attempts, as observed")                                \
  X(SHED_LOAD, shed_load, analysis., MS_OUTPUT_NUMBER,                        \
    "req/s", "0", "U",                                                        \
    "in a storm, the offered load to shed for it to end; else 0")             \
  X(RECOVERING, recovering, analysis., MS_OUTPUT_FLAG,                        \
    "0 or 1", "0", "1",                                                       \
    "1 in a storm the model says is over while attempts still fail")          \
  X(DRAIN_TIME, drain_time, analysis., MS_OUTPUT_OPTIONAL,                    \
    "s", "0", "U",                                                            \
    "seconds to serve the observed queue at this offered load")               \
  X(STALL_TOLERANCE, stall_tolerance, , MS_OUTPUT_OPTIONAL,                   \
    "s", "0", "U",                                                            \
    "longest full stall survived at this offered load without a storm")       \
  X(TIME_TO_STORM, time_to_storm, , MS_OUTPUT_OPTIONAL,                       \
    "s", "0", "U",                                                            \
    "a prediction: mean time until a storm starts by itself at this load")   \
  X(STORM_HAZARD, storm_hazard, , MS_OUTPUT_OPTIONAL,                         \
    "probability", "0", "1",                                                  \
    "a prediction: probability of a storm within hazard_horizon at this load")\
  X(SAFE_RETRIES, safe_retries, , MS_OUTPUT_OPTIONAL,                         \
    "count", "0", "U",                                                        \
    "most retries per request that keep this load with its margin stable")    \
  X(SERVICE_TIME_ESTIMATE, service_time_estimate, , MS_OUTPUT_OPTIONAL,       \
    "s", "0", "U",                                                            \
    "service time learned from busy_servers, completion_rate or latency")     \
  X(SERVICE_TIME_ERROR, service_time_error, , MS_OUTPUT_OPTIONAL,             \
    "s", "0", "U",                                                            \
    "standard error of the learned service time")                             \
  X(SERVICE_TIME_RATIO, service_time_ratio, , MS_OUTPUT_OPTIONAL,             \
    "ratio", "0", "U",                                                        \
    "learned / configured service time (1: as configured)")                   \
  X(BASE_FAILURE_ESTIMATE, base_failure_estimate, , MS_OUTPUT_OPTIONAL,       \
    "probability", "0", "1",                                                  \
    "base failure learned from the failure ratio at low utilisation")         \
  X(SERVERS_ESTIMATE, servers_estimate, , MS_OUTPUT_OPTIONAL,                 \
    "count", "0", "U",                                                        \
    "pool size learned from busy_servers while the pool is saturated")        \
  X(CALIBRATED, calibrated, , MS_OUTPUT_OPTIONAL,                             \
    "count", "0", "3",                                                        \
    "how many learned values the model uses (calibrate: in the file)")        \
  X(MODEL_FAILURE_RATIO, model_failure_ratio, , MS_OUTPUT_OPTIONAL,           \
    "probability", "0", "1",                                                  \
    "the model's failure probability at the observed attempt rate")           \
  X(MODEL_RESIDUAL, model_residual, , MS_OUTPUT_OPTIONAL,                     \
    "z-score", "U", "U",                                                      \
    "observed vs model failures over a window outside storms, z (0: fits)")   \
  X(REPORTING, reporting, , MS_OUTPUT_FLAG,                                   \
    "0 or 1", "0", "1",                                                       \
    "1 for a report; 0, alone, when this interval's inputs gave none")
/* clang-format on */

typedef enum {
#define MS_OUT_ENUM(ID, name, in, kind, unit, ds_min, ds_max, meaning)         \
  MS_OUT_##ID,
  MS_OUTPUTS(MS_OUT_ENUM)
#undef MS_OUT_ENUM
      MS_OUT_COUNT
} ms_output;

/* One row of MS_OUTPUTS. */
typedef struct {
  const char *name;
  ms_output_kind kind;
  const char *unit, *ds_min, *ds_max, *meaning;
} ms_output_info;

/* The row of an output; NULL when id is not one. */
const ms_output_info *ms_output_get(ms_output id);

/* The output called name ("tipping_load"), or -1. */
int ms_output_find(const char *name);

/*
 * The report of one service at one interval: what the model says
 * (ms_analyze's analysis) and what the tracker adds from what it keeps
 * across intervals.  ms_tracker_step (service.h) fills it; the plugin
 * dispatches it and the command writes it, both through ms_report_output.
 */
typedef struct {
  ms_analysis analysis; /* offered load ... drain time (model/landscape.h) */
  /* a search of fluid runs, cached per offered-load bucket (service.h) */
  bool has_stall_tolerance; /* erlang, one tier, at or above the recovery
                               load (below it every stall is survived) */
  double stall_tolerance;   /* s, ms_trigger_tolerance: 0 overloaded */
  /* the storm hazard, from the tracker's table (doc/outputs.md) */
  bool has_time_to_storm; /* erlang, in ms_time_to_storm's domain, table
                             complete */
  double time_to_storm;   /* s, (0, MS_TIME_TO_STORM_NEVER] */
  bool has_storm_hazard;  /* with time_to_storm */
  double storm_hazard;    /* probability within hazard_horizon */
  bool has_safe_retries;  /* some count is safe */
  double safe_retries;    /* retries, whole, [0, MS_RECOMMEND_MAX_RETRIES] */
  /* calibration (doc/design.md §1.8) */
  bool has_service_time_estimate; /* busy/completion or latency inputs */
  double service_time_estimate;   /* s */
  bool has_service_time_error;    /* with the estimate */
  double service_time_error;      /* s, standard error */
  bool has_service_time_ratio;    /* with the estimate (erlang) */
  double service_time_ratio;      /* learned / configured */
  bool has_base_failure_estimate; /* calibrate: [base_failure] */
  double base_failure_estimate;   /* probability */
  bool has_servers_estimate;      /* calibrate: [servers] */
  double servers_estimate;        /* servers, whole */
  bool has_calibrated;            /* calibrate: given */
  double calibrated;              /* learned values in use, 0..3 */
  bool has_model_failure_ratio;   /* observed attempts and failures */
  double model_failure_ratio;     /* p(x_obs) */
  bool has_model_residual;        /* observed failure ratio known */
  double model_residual;          /* ms_failure_residual */
  int reporting; /* 1 for a report; 0: this interval's inputs gave none,
                    and the report carries only this heartbeat */
} ms_report;

/* *r = a report of analysis a alone: nothing learned, reporting 1. */
void ms_report_of(ms_report *r, const ms_analysis *a);

/*
 * ms_report_output: output id of report r as a double (counts, state codes
 * and flags converted exactly).
 *   v  out: the value, when present
 * Returns true when present: always, except an MS_OUTPUT_OBSERVED or
 * MS_OUTPUT_OPTIONAL output without its value, and every output but
 * reporting in a report whose reporting is 0 (an interval without a
 * report: ms_report zeroed carries only the heartbeat); false (v
 * untouched) also for an id that is not an output.
 */
bool ms_report_output(const ms_report *r, ms_output id, double *v);

#endif
