/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: services as the plugin and the command-line tool see
 * them.  One home for both (doc/design.md §3):
 *
 *  - the service file (YAML, libyaml): what each service is and where its
 *    inputs come from;
 *  - the per-interval step: turn this interval's input values into the
 *    offered load and observations (doc/design.md §1.5), solve, keep the state
 *    machine of doc/design.md §1.4, and decide which notifications fire.
 *
 * Nothing here knows collectd: the plugin reads inputs from collectd's cache
 * and dispatches the results; `metastable replay` reads them from a trace.
 * So a replay gives exactly the plugin's verdicts.
 */
#ifndef METASTABLE_SERVICE_H
#define METASTABLE_SERVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metastable.h"
#include "outputs.h"
#include "suggest.h" /* ms_suggest: did you mean */
#include "units.h"   /* ms_parse_number, ms_parse_duration, ms_parse_rate */

#ifdef __cplusplus
extern "C" {
#endif

/* The inputs a service can take, in the order of this enum everywhere. */
typedef enum {
  MS_INPUT_ARRIVAL = 0, /* arrival_rate: attempts/s reaching the service,
                           retries included */
  MS_INPUT_OFFERED,     /* offered_rate: first attempts/s */
  MS_INPUT_RETRY,       /* retry_rate: retries/s */
  MS_INPUT_ERROR,       /* error_rate: failed attempts/s */
  MS_INPUT_POOL,        /* pool_size: live servers (erlang model) */
  MS_INPUT_QUEUE,       /* queue_length: requests waiting for a server */
  /* calibration inputs (doc/design.md §1.8): what the service is seen to
   * do, for learning its parameters; never needed for a verdict */
  MS_INPUT_BUSY,       /* busy_servers: servers busy, on average over the
                          interval (php-fpm's active processes) */
  MS_INPUT_COMPLETION, /* completion_rate: attempts the service completed
                          per second, failed ones it served included */
  MS_INPUT_LATENCY,    /* latency: mean service time of a completed
                          attempt, s (the time in service, not the wait) */
  MS_INPUT_COUNT
} ms_input_id;

/* "arrival_rate", "offered_rate", ... for an ms_input_id; NULL otherwise. */
const char *ms_input_name(ms_input_id id);

typedef enum {
  MS_SOURCE_NONE = 0,   /* not configured */
  MS_SOURCE_NUMBER,     /* a constant */
  MS_SOURCE_IDENTIFIER, /* one collectd identifier host/plugin/type */
  MS_SOURCE_GLOB,       /* identifiers matching a glob, summed */
} ms_source_kind;

/* What an identifier or glob input that is absent from collectd's cache
 * (or an empty cell of a trace) means.  A statsd counter does not exist
 * until its first event, so a service without retries would report
 * nothing at all, again after every restart of collectd. */
typedef enum {
  MS_MISSING_SKIP = 0, /* `missing: skip`: no value, the service reports
                          nothing that interval (the default) */
  MS_MISSING_ZERO,     /* `missing: zero`: nothing counted yet, 0 */
} ms_missing;

typedef struct {
  ms_source_kind kind;
  double number;      /* MS_SOURCE_NUMBER */
  char *pattern;      /* MS_SOURCE_IDENTIFIER or MS_SOURCE_GLOB, else NULL */
  ms_missing missing; /* identifier or glob; always skip for a number */
  double scale;       /* identifier or glob: the value read is multiplied
                         by it (`scale: 0.001` for a timer in ms); 0 means
                         1 */
  int line, column;   /* where it was written (1-based) */
} ms_source;

/* Intervals without a storm before the OKAY notification: by default, and
 * at most (a service file's clear_after is 1 to MS_MAX_CLEAR_AFTER). */
#define MS_DEFAULT_CLEAR_AFTER 3
#define MS_MAX_CLEAR_AFTER 1000
/* A service file's headroom_warning is a share of the tipping load,
 * strictly between 0 and MS_MAX_HEADROOM_WARNING (all of it). */
#define MS_MAX_HEADROOM_WARNING 1.0
/* The storm hazard (doc/outputs.md, "Storm hazard"): hazard_horizon, the
 * time storm_hazard looks ahead, s, in (0, MS_MAX_HAZARD_HORIZON] (a
 * year); hazard_warning, the storm_hazard past which a WARNING goes out,
 * in (0, 1).  0 in ms_service_spec means the default. */
#define MS_DEFAULT_HAZARD_HORIZON 3600.0
#define MS_MAX_HAZARD_HORIZON 31536000.0
#define MS_DEFAULT_HAZARD_WARNING 0.5
#define MS_MAX_HAZARD_WARNING 1.0
/* A pool whose storm at the tipping load itself is expected only after
 * this many horizons (a hazard under 0.1 % within one) has a negligible
 * hazard up to the fold: time_to_storm is never below the tipping load,
 * and the fold is the answer. */
#define MS_HAZARD_NEGLIGIBLE_HORIZONS 1000.0

/* What `calibrate:` learns (doc/design.md §1.8), as bits; bit i is the
 * i-th estimator of ms_calibration (service_time, base_failure, servers). */
typedef enum {
  MS_CALIBRATE_SERVICE_TIME = 1, /* from busy_servers and completion_rate,
                                    or latency */
  MS_CALIBRATE_BASE_FAILURE = 2, /* from the failure ratio at low load */
  MS_CALIBRATE_SERVERS = 4,      /* from busy_servers while saturated,
                                    when there is no pool_size input */
} ms_calibrate_flags;

/* "service_time", "base_failure", "servers": the name in `calibrate:` of
 * bit i (1 << i); NULL for any other i. */
const char *ms_calibrate_name(int i);

/* The calibration settings of a service file: default, and range.  0 in
 * ms_service_spec means the default. */
#define MS_DEFAULT_CALIBRATION_TIME                                            \
  300.0                                  /* s: the estimators' time            \
                                            constant */
#define MS_MAX_CALIBRATION_TIME 604800.0 /* s: a week */
#define MS_DEFAULT_CALIBRATION_THRESHOLD                                       \
  0.01 /* relative move of an                                                  \
          estimate that rebuilds                                               \
          the landscape */
#define MS_MAX_CALIBRATION_THRESHOLD 1.0
#define MS_DEFAULT_CALIBRATION_INTERVALS                                       \
  10 /* samples before a learned                                               \
        value replaces the file's */
#define MS_MAX_CALIBRATION_INTERVALS 100000
#define MS_DEFAULT_MISFIT_THRESHOLD                                            \
  4.0 /* |model_residual| beyond it is a                                       \
         misfit */
#define MS_MAX_MISFIT_THRESHOLD 1000.0
#define MS_DEFAULT_MISFIT_INTERVALS                                            \
  5 /* consecutive misfits before the                                          \
       WARNING */
#define MS_MAX_MISFIT_INTERVALS 100000

/* A duration of the service file written as a bare number, read in
 * seconds (doc/configuration.md, "Units and bare numbers"). */
typedef struct {
  double seconds;   /* as read; 0: written with a unit, or absent */
  int line, column; /* of the value (1-based) */
} ms_bare_duration;

/* One service of a service file. */
typedef struct {
  char *name;               /* the plugin instance: [A-Za-z0-9_.-]{1,63} */
  ms_service_params params; /* servers: from the file, or 1 until a
                               pool_size input says otherwise */
  bool has_servers;         /* `servers` was given */
  bool has_headroom_warning;
  double headroom_warning; /* WARNING when tipping headroom falls below */
  bool has_safety_margin;
  double safety_margin;  /* safe_retries: stable up to (1 + it) times the
                            offered load, [0, MS_RECOMMEND_MAX_MARGIN]; absent:
                            MS_RECOMMEND_DEFAULT_MARGIN */
  double hazard_horizon; /* s; 0: MS_DEFAULT_HAZARD_HORIZON */
  double hazard_warning; /* 0: MS_DEFAULT_HAZARD_WARNING */
  int clear_after;       /* OKAY (and re-arming the WARNING) after this
                            many intervals without a storm; 0 means
                            MS_DEFAULT_CLEAR_AFTER */
  ms_source inputs[MS_INPUT_COUNT];
  int calibrate;                /* ms_calibrate_flags: what is learned */
  double calibration_time;      /* s; 0: MS_DEFAULT_CALIBRATION_TIME */
  double calibration_threshold; /* 0: MS_DEFAULT_CALIBRATION_THRESHOLD */
  int calibration_intervals;    /* 0: MS_DEFAULT_CALIBRATION_INTERVALS */
  double misfit_threshold;      /* 0: MS_DEFAULT_MISFIT_THRESHOLD */
  int misfit_intervals;         /* 0: MS_DEFAULT_MISFIT_INTERVALS */
  bool has_backoff;             /* `backoff` was given */
  ms_backoff backoff; /* the clients' wait before a retry (model/sim.h) */
  ms_bare_duration bare_service_time,
      bare_timeout; /* erlang: for
                       ms_service_unit_warnings */
  int line, column; /* where the service starts in the file (1-based) */
} ms_service_spec;

typedef struct {
  char *path; /* the file name used in messages */
  ms_service_spec *services;
  size_t n_services;
} ms_service_file;

/* The largest service file read, bytes (64 MiB). */
#define MS_SERVICE_FILE_MAX_BYTES ((size_t)64 << 20)

/*
 * What a service file may hold, counted by a pass over libyaml's events
 * before any document is built (service/yamldoc.c): past a limit the file
 * is refused at the event that passed it, with its line and column.  A
 * node is a scalar, a list or a mapping; an alias counts as the nodes it
 * repeats, so a file's cost is bounded by these numbers, not by its bytes
 * (no "billion laughs").  doc/configuration.md, "Limits of a file".
 */
/* Services in one file (a fleet sharded over aggregators still keeps
 * every service in each aggregator's file). */
#define MS_SERVICE_FILE_MAX_SERVICES 100000
/* Nodes of one service: the largest legal service (every key, ten tiers,
 * a timeout range, every input as a mapping: tests/check_service.c) has
 * 197; about twice that. */
#define MS_SERVICE_MAX_NODES 400
/* Nodes of a whole file, aliases expanded: 40 a service at the largest
 * count of services.  libyaml's document costs about 160 bytes a node:
 * 4,000,000 scalars took 650 MB to build (and refuse). */
#define MS_SERVICE_FILE_MAX_NODES 4000000
/* Anchors (&name) in one file: libyaml looks each alias up among all the
 * anchors, one by one. */
#define MS_SERVICE_FILE_MAX_ANCHORS 100

/*
 * ms_service_file_load: read and validate a service file.
 *   path    file to read
 *   out     on success the services; on failure left empty (nothing
 *           half-loaded)
 *   errbuf  on failure "path:line:column: what is wrong (key 'k')"
 * Returns 0 on success, -1 on failure.  The whole file is rejected at the
 * first error.  Formats: durations are seconds, or a number with s, ms, us
 * (100ms); rates are per second, optionally written with "/s".
 */
int ms_service_file_load(const char *path, ms_service_file *out, char *errbuf,
                         size_t errlen);

/* As ms_service_file_load, from a buffer; name is used in messages. */
int ms_service_file_parse(const char *text, size_t len, const char *name,
                          ms_service_file *out, char *errbuf, size_t errlen);

/* As ms_service_file_parse, stoppable from another thread: when *cancel
 * becomes true (cancel not NULL) the parse stops at its next check (each
 * service, and the YAML reader's) and returns -1 with "name: load
 * cancelled", *out empty.  The plugin's reload thread (plugin/reload.c). */
int ms_service_file_parse_cancel(const char *text, size_t len, const char *name,
                                 const atomic_bool *cancel,
                                 ms_service_file *out, char *errbuf,
                                 size_t errlen);

/* Release everything ms_service_file_load allocated; *f becomes empty. */
void ms_service_file_free(ms_service_file *f);

/* Whether the service reads input id from collectd (or a trace): an
 * identifier or a glob.  An input set to a number observes nothing. */
bool ms_input_observed(const ms_service_spec *sp, ms_input_id id);

/* What an input is for in one service, and so what an interval without a
 * usable value of it (absent, NaN, negative, infinite) costs. */
typedef enum {
  MS_INPUT_NEEDED = 0,  /* the verdict needs it: the service reports nothing
                           that interval (reporting 0) */
  MS_INPUT_EXTRA,       /* it adds to the verdict (queue_length: drain_time,
                           and a backlog as evidence) but the service reports
                           without it, saying so */
  MS_INPUT_CALIBRATION, /* it only teaches calibration (doc/design.md
                           §1.8): the interval gives no sample, the service
                           reports, saying so */
  MS_INPUT_UNUSED,      /* the service's other inputs leave it unused (or it
                           is not configured): nothing is lost */
} ms_input_role;

/*
 * ms_input_role_of: the role of input id in service sp, the one place it
 * is decided: ms_infer (and with it `metastable replay`) and the plugin's
 * reads (plugin/inputs.c) both ask here, so that a trace's empty or NaN
 * cell and collectd's absent or NaN value cost the same.  By input
 * (doc/configuration.md, "What the verdict needs"):
 *   offered_rate, arrival_rate, pool_size: needed (the offered load, the
 *     observed attempts, the model's servers);
 *   retry_rate: needed, unless both offered_rate and arrival_rate are
 *     configured (then the offered load and the attempts come from them:
 *     unused);
 *   error_rate: needed with arrival_rate (the failure ratio, and the
 *     offered load from it), unused without;
 *   queue_length: extra in the capacity model (no timeout horizon: it
 *     gives drain_time only) and in the erlang model beside another
 *     observation read from collectd (attempts, or a failure ratio, which
 *     still show a storm); needed when it is an erlang service's only
 *     observation (without it the storm flag would come from the model
 *     alone);
 *   busy_servers, completion_rate, latency: calibration.
 * Pure; an input that is not configured, or an id out of range, is
 * MS_INPUT_UNUSED.
 */
ms_input_role ms_input_role_of(const ms_service_spec *sp, ms_input_id id);

/* A service's settings with their defaults filled in: the one place where
 * a 0 of ms_service_spec becomes its default. */
typedef struct {
  int clear_after;              /* intervals, >= 1 */
  double calibration_time;      /* s, > 0 */
  double calibration_threshold; /* relative, > 0 */
  int calibration_intervals;    /* samples, >= 2 */
  double misfit_threshold;      /* |z|, > 0 */
  int misfit_intervals;         /* intervals, >= 1 */
  double safety_margin;         /* share, [0, MS_RECOMMEND_MAX_MARGIN] */
  double hazard_horizon;        /* s, (0, MS_MAX_HAZARD_HORIZON] */
  double hazard_warning;        /* probability, (0, 1) */
} ms_service_settings;

/* The settings of sp, defaults filled in. */
ms_service_settings ms_service_settings_of(const ms_service_spec *sp);

/* A warning about a service that loads: what is valid but looks wrong. */
typedef struct {
  int line, column; /* of the value at fault (1-based) */
  char text[320];   /* "timeout: 500 was read as 500 s, ..." */
} ms_spec_warning;

/*
 * ms_service_unit_warnings: the erlang model's durations of sp written as
 * bare numbers that ms_bare_duration_warning finds implausible against
 * each other (doc/configuration.md, "Units and bare numbers"): at most
 * one for timeout and one for service_time, in that order, into out.
 * The service time a bare timeout is held to is the file's, whether
 * written as service_time or as service_rate.  Returns how many (0 to
 * 2); always 0 for the capacity model.  The loader computes nothing more
 * for them: `metastable check` reports them as warnings, the plugin logs
 * them once when it loads the file.
 */
int ms_service_unit_warnings(const ms_service_spec *sp, ms_spec_warning out[2]);

/* The service called name, or NULL. */
const ms_service_spec *ms_service_file_find(const ms_service_file *f,
                                            const char *name);

/* ------------------------------------------------------------------ */
/* Sharding (service/shard.c; doc/fleets.md)                           */
/* ------------------------------------------------------------------ */

/* The most shards: Shard "K/N" takes 1 <= K <= N <= MS_SHARD_MAX. */
#define MS_SHARD_MAX 1024

/* FNV-1a, 64 bits (Fowler, Noll, Vo; offset basis 14695981039346656037,
 * prime 1099511628211) of len bytes at data; any bytes, len 0 gives the
 * offset basis.  Pure, no error.  The one FNV-1a of the tree: shards, and
 * the plugin's hash tables of identifiers. */
#define MS_FNV1A64_OFFSET 14695981039346656037ULL
uint64_t ms_fnv1a64(const void *data, size_t len);
/* The same, continuing from hash h (MS_FNV1A64_OFFSET to start), so that
 * several pieces hash as their concatenation. */
uint64_t ms_fnv1a64_update(uint64_t h, const void *data, size_t len);

/* Jump consistent hashing (Lamping and Veach 2014, fig. 1): the bucket of
 * key among buckets, in [0, buckets - 1]; from buckets to buckets + 1 a
 * key either stays or moves to the new bucket buckets.  -1 when buckets
 * < 1. */
int32_t ms_jump_hash(uint64_t key, int32_t buckets);

/* The shard of the service called name among n: 1-based, in [1, n],
 * ms_jump_hash(ms_fnv1a64(name's bytes, no terminator), n) + 1.  Part of
 * the interface: the same on every machine and in every version.  0 when
 * name is NULL or n is outside [1, MS_SHARD_MAX]. */
int ms_shard_of(const char *name, int n);

/* "K/N" (decimal integers, nothing else) into *k, *n; 0, or -1 with what
 * is wrong in err (not K/N; outside 1 <= K <= N <= MS_SHARD_MAX). */
int ms_shard_parse(const char *text, int *k, int *n, char *err, size_t errlen);

/* Keep in f only the services of shard k of n (ms_shard_of), in their
 * order; the others are freed.  Returns how many were left out.  k, n as
 * ms_shard_parse accepts them; n = 0 keeps every service. */
size_t ms_service_file_keep_shard(ms_service_file *f, int k, int n);

/* The balance of an assignment: services per shard. */
typedef struct {
  size_t min, max;      /* services in the least and most loaded shard */
  double mean;          /* services / shards */
  double max_over_mean; /* max / mean, >= 1; 0 for no service */
} ms_shard_stats;

/* counts[0 .. n-1] (the caller's array of n) the services per shard of
 * shard[0 .. n_services-1] (each in [1, n]), and their stats; 0, or -1
 * when n is outside [1, MS_SHARD_MAX] or a shard outside [1, n]. */
int ms_shard_balance(const int *shard, size_t n_services, int n, size_t *counts,
                     ms_shard_stats *stats);

/* ------------------------------------------------------------------ */
/* The per-interval step                                               */
/* ------------------------------------------------------------------ */

/* This interval's input values, for inputs read from collectd (identifier
 * or glob) or from a trace; has[i] false when the input is absent (not in
 * collectd's cache, a glob without a match, an empty cell of a trace):
 * ms_infer then takes 0 for an input with `missing: zero`.  A value present
 * without a rate (a first sample, a reset) is a NaN, never 0.  Inputs
 * configured as numbers are taken from the service file. */
typedef struct {
  bool has[MS_INPUT_COUNT];
  double value[MS_INPUT_COUNT];
  double interval; /* s the rates were measured over (the plugin's
                      interval, a trace's time step); 0: unknown */
} ms_inputs;

/* What was inferred from the inputs (doc/design.md §1.5). */
typedef struct {
  double offered_load; /* lambda, req/s */
  long servers;        /* pool size used (erlang), else 0 */
  bool has_observed_attempts;
  double observed_attempts; /* attempts/s */
  bool has_observed_failure;
  double observed_failure; /* failed attempts / attempts */
  bool has_queue_length;
  double queue_length; /* requests waiting */
  /* calibration inputs read this interval (doc/design.md §1.8); a problem
   * with one of them costs the calibration its sample, never the verdict */
  bool has_busy_servers;
  double busy_servers; /* servers busy on average */
  bool has_completion_rate;
  double completion_rate; /* attempts completed per second */
  bool has_latency;
  double latency; /* s, mean service time */
  /* "" or why an input the verdict can go without (ms_input_role_of:
   * extra or calibration) has no value this interval, or gave calibration
   * no sample */
  char calibration_problem[256];
} ms_inference;

/*
 * ms_infer: the offered load and observations of one interval.
 * Offered load: offered_rate; else arrival_rate - retry_rate; else
 * arrival_rate / A(p_obs) with p_obs = error_rate / arrival_rate.
 * Observed attempts: arrival_rate, else offered_rate + retry_rate.
 * Observed failure: error_rate / arrival_rate (when arrival_rate > 0).
 * Pool: pool_size rounded, else the file's servers.
 * Only the inputs the verdict needs (ms_input_role_of) must have a usable
 * value.  One it can go without (extra, calibration), times its scale as
 * every input is, is left out when it has none, and calibration_problem
 * says why (the first such input's reason); the step goes on.  An unused
 * input is not read.
 * An absent input (has[] false) with `missing: zero` counts as 0.
 * Returns 0, or -1 with *bad the input at fault (MS_INPUT_COUNT when the
 * inputs cannot give an offered load at all) and problem saying what is
 * wrong (missing, not a number, negative, pool size 0, ...).
 */
int ms_infer(const ms_service_spec *spec, const ms_inputs *in,
             ms_inference *out, ms_input_id *bad, char *problem,
             size_t problem_len);

typedef enum {
  MS_NOTE_FAILURE = 1, /* a storm started */
  MS_NOTE_WARNING = 2, /* tipping headroom fell below headroom_warning */
  MS_NOTE_OKAY = 4,    /* the storm ended */
} ms_note_severity;

/* "FAILURE", "WARNING", "OKAY" */
const char *ms_note_severity_name(ms_note_severity s);

typedef struct {
  ms_note_severity severity;
  char message[320];
} ms_note;

/* Where a service time sample came from (ms_service_time_sample). */
typedef enum {
  MS_SAMPLE_CONTRADICTION = -1, /* the inputs contradict each other */
  MS_SAMPLE_NONE = 0,           /* nothing to sample this interval */
  MS_SAMPLE_UTILIZATION = 1,    /* busy_servers / completion_rate */
  MS_SAMPLE_LATENCY = 2,        /* the latency input */
} ms_sample_kind;

/*
 * ms_service_time_sample: one interval's service time sample (doc/design.md
 * §1.8), the one rule of the plugin's calibration and of `metastable fit`:
 * busy_servers / completion_rate by the utilisation law (Denning & Buzen
 * 1978), weight the completions over span seconds; else the latency,
 * weight its completions over span (1 without completion_rate).
 *   inf         the interval's inference (its calibration inputs)
 *   servers     the pool in use; learn_pool: the pool is being learned, so
 *               more busy servers than it is no contradiction
 *   storm       a storm was on: more completions than attempts is then a
 *               backlog draining, as with a queue_length of 1 or more
 *   tau         s the rates cover, > 0 (the noise of the counts, §1.7)
 *   span        s a sample may weigh: min(tau, the estimator's time
 *               constant)
 *   x, w        out: the sample, s, and its weight, events (with a sample)
 * Returns the sample's kind; MS_SAMPLE_CONTRADICTION with problem saying
 * why: busy servers above the pool, completions above the attempts with
 * no backlog, or a latency that keeps more servers busy than the pool (or
 * the busy servers) by Little's law, a latency in ms read as seconds.
 */
ms_sample_kind ms_service_time_sample(const ms_inference *inf, long servers,
                                      bool learn_pool, bool storm, double tau,
                                      double span, double *x, double *w,
                                      char *problem, size_t len);

/* The misfit window (doc/design.md §1.8, "The residual"): the observed
 * attempts and failures outside storms, pooled into batches of at least
 * MS_MISFIT_BATCH seconds; each batch's failure ratio less the model's
 * failure probability at the batch's attempt rate, in a fading estimator
 * whose scatter is measured. */
#define MS_MISFIT_BATCH 10.0
typedef struct {
  double attempts, failures, seconds; /* the batch being filled */
  double since;          /* s since the last batch was taken, pauses included */
  ms_estimator rate;     /* attempts/s of each batch, weight its seconds */
  ms_estimator observed; /* failure ratio of each, weight its attempts */
  ms_estimator predicted; /* the model's p at its rate, weight attempts */
  ms_estimator excess;    /* failure ratio - p, weight its attempts */
} ms_misfit_window;

/* The service time's change watch (doc/design.md §1.8, "Changes"): a
 * CUSUM on the standardized samples, and the last MS_CHANGE_RING samples
 * (outliers held out of the estimate included), from which the estimator
 * starts again after a change. */
#define MS_CHANGE_RING 16
typedef struct {
  ms_cusum cusum;
  double x[MS_CHANGE_RING], w[MS_CHANGE_RING], dt[MS_CHANGE_RING];
  unsigned n, next;       /* samples held, the slot of the next */
  double since;           /* s since the last sample, pauses included */
  unsigned long changes;  /* restarts after a change */
  unsigned long held_out; /* samples kept out of the estimate as outliers */
  bool last_held_out;     /* the latest sample was one */
} ms_change_watch;

/* What calibration remembers of one service (doc/design.md §1.8). */
typedef struct {
  ms_estimator service_time; /* s */
  ms_estimator base_failure; /* probability */
  ms_estimator servers;      /* busy servers while saturated */
  ms_misfit_window window;   /* the model against the observed failures */
  ms_change_watch watch;     /* of the service time */
  int in_use;                /* ms_calibrate_flags: learned values the
                                model uses now */
  unsigned long intervals;   /* intervals stepped since the start */
  bool storm_seen;           /* some interval was in a storm */
  double calm_seconds;       /* s since the last one */
  unsigned calm_intervals;   /* intervals since the last one */
  int misfit_streak;         /* consecutive intervals beyond the threshold */
  int fit_streak;            /* consecutive intervals within it */
  bool misfit_warned;        /* the misfit WARNING went out, not re-armed */
  bool ready;                /* the estimators were initialised */
} ms_calibration;

/* Offered-load buckets of stall_tolerance a tracker remembers. */
#define MS_TOLERANCE_CACHE 8
/* The bucket's width: stall_tolerance is computed at the upper end of the
 * relative step of 1 % that holds the offered load. */
#define MS_TOLERANCE_BUCKET 1.01
/* The longest stall the plugin searches, s: a service that survives more
 * reports this. */
#define MS_TOLERANCE_MAX_STALL 600.0
/* Intervals a tracker waits after a stall-tolerance search before its
 * next one (about 6 ms each): a service searches at most once per
 * MS_TOLERANCE_SEARCH_GAP intervals, and others take their turn under the
 * plugin's per-cycle budget (ms_tracker.tolerance_defer). */
#define MS_TOLERANCE_SEARCH_GAP 5

/* The memory of one service between intervals. */
typedef struct {
  bool has_landscape;
  ms_landscape landscape; /* rebuilt only when parameters change */
  bool has_state;
  ms_state state;
  bool storm;                     /* the previous interval's storm flag */
  bool storm_announced;           /* a FAILURE went out and no OKAY yet */
  bool latch_warned;              /* the above-the-tipping-load WARNING went
                                     out and has not re-armed */
  int latch_streak;               /* intervals under the tipping load since */
  int calm_streak;                /* intervals without a storm since */
  bool headroom_warned;           /* a WARNING went out and has not re-armed */
  int roomy_streak;               /* intervals with enough headroom since */
  unsigned long landscape_builds; /* how many times it was (re)built */
  ms_calibration calibration;
  /* stall_tolerance (ms_trigger_tolerance), cached per offered-load bucket
   * b = floor(ln lambda / ln 1.01) for the landscape of build
   * tolerance_builds: the last MS_TOLERANCE_CACHE buckets seen, so that a
   * load wandering over a few buckets searches each once */
  /* safe_retries: the recovery load at the retry counts the bisection
   * asked for (ms_recommend_retry_recovery), req/s; < 0 where not computed,
   * NAN where the build failed; kept until the landscape is rebuilt */
  unsigned long safe_builds; /* landscape_builds they belong to; 0: none */
  int safe_n;                /* counts examined (ms_recommend_retry_counts) */
  double safe_recovery[MS_RECOMMEND_MAX_RETRIES + 1]; /* req/s */
  unsigned long safe_computed; /* recovery loads computed, for tests */
  /* set by the caller: a step does not build the landscapes of its
   * landscape's first bisection but leaves them pending (safe_pending, at
   * safe_pending_load req/s and margin safe_pending_margin) for
   * ms_tracker_safe_build; safe_ready once one bisection is complete */
  bool safe_defer;
  bool safe_pending;
  bool safe_ready;
  double safe_pending_load, safe_pending_margin;
  unsigned long tolerance_builds;
  int tolerance_n, tolerance_next;
  long tolerance_bucket[MS_TOLERANCE_CACHE];
  double tolerance_value[MS_TOLERANCE_CACHE]; /* s; < 0: none */
  unsigned long tolerance_searches;           /* searches run, for tests */
  int tolerance_wait; /* intervals until the next search is allowed */
  /* set by the caller, or NULL: a search under way ends when it returns
   * non-zero (ms_tolerance_query.stop: the plugin's cycle deadline); the
   * bucket is then not remembered, and searched again after the gap */
  int (*tolerance_stop)(void *ctx);
  void *tolerance_stop_ctx;
  unsigned long tolerance_stopped; /* searches stopped so, for tests */
  /* set by the caller: a step does not search but leaves the search
   * pending (tolerance_pending) for ms_tracker_tolerance_search, which the
   * plugin calls after its cycle's services with the time left */
  bool tolerance_defer;
  bool tolerance_pending;
  double tolerance_pending_load; /* req/s */
  long tolerance_pending_bucket;
  /* the bracket a stopped search reached (ms_tolerance_query.resume_lo,
   * resume_hi, s), for bucket tolerance_resume_bucket of landscape build
   * tolerance_resume_builds (0: none): the next search of that bucket
   * goes on from it, in the next interval */
  unsigned long tolerance_resume_builds;
  long tolerance_resume_bucket;
  double tolerance_resume_lo, tolerance_resume_hi;
  /* time_to_storm and storm_hazard: the table over the load of landscape
   * build hazard_builds (0: none yet), built when the landscape is; with
   * hazard_defer a step leaves its points pending (hazard_pending) for
   * ms_tracker_hazard_build, and reports nothing until it is complete */
  ms_hazard_table hazard;
  unsigned long hazard_builds;
  bool hazard_defer;
  bool hazard_pending;
  bool hazard_warned; /* the hazard WARNING went out and has not re-armed */
  int hazard_calm;    /* intervals under hazard_warning since */
} ms_tracker;

/* Result of one step. */
typedef struct {
  bool ok;           /* false: nothing to report this interval */
  ms_input_id bad;   /* when !ok: the input at fault, or COUNT */
  char problem[256]; /* when !ok: why */
  ms_inference inference;
  ms_report report; /* when ok */
  int n_notes;
  ms_note notes[2];
  char info[256]; /* "" or a line for the log: a learned value that the
                     model starts to use */
} ms_step;

/* A fresh tracker: cold start, healthy (doc/design.md §1.4). */
void ms_tracker_init(ms_tracker *t);

/*
 * ms_tracker_carry: take tracker t of a service specified by was over to
 * its new specification now (a reload of the service file; the plugin's
 * plugin/reload.c).  What the service did stays: its state and storm flag
 * and the notifications' hysteresis (a storm announced is not announced
 * again, its OKAY still comes after clear_after calm intervals).  The
 * landscape, and the stall-tolerance and safe-retries caches built on it,
 * stay when the model and retry policy (params) are the same, and are
 * dropped otherwise: the next ms_tracker_step builds them from now.  The
 * calibration (doc/design.md §1.8: estimators, learned values in use,
 * misfit streaks) stays when what it learns from is the same: every
 * input's source (kind, number, identifier or glob, missing, scale), the
 * model kind, calibrate and calibration_time; otherwise it restarts
 * empty and the file's parameters are used until it has learned again.
 * Other settings (thresholds, clear_after, headroom_warning, safety
 * margin) take effect at the next step.  No errors.
 */
void ms_tracker_carry(ms_tracker *t, const ms_service_spec *was,
                      const ms_service_spec *now);

/*
 * ms_tracker_step: one interval of one service.  Infers, rebuilds the
 * landscape if the parameters changed (pool size), analyzes with the
 * previous state and storm flag (doc/design.md §1.7), updates them, and
 * lists the notifications to send (doc/design.md §7): FAILURE when the
 * storm flag turns 1 (including a cold start inside a storm), OKAY when it
 * has been 0 for clear_after consecutive intervals; WARNING once when the
 * offered load is above the tipping load with nothing failing yet ("the
 * next trigger latches"), and once when the tipping headroom falls below
 * headroom_warning (neither in an interval whose other notification says
 * more; each armed again after clear_after intervals without its cause).
 * A flapping storm flag pages once.  When the inputs are unusable the step
 * reports !ok and the state and counts are left as they were.
 *   in->interval  seconds the input rates cover (the noise bound of §1.7)
 */
void ms_tracker_step(ms_tracker *t, const ms_service_spec *spec,
                     const ms_inputs *in, ms_step *out);

/*
 * ms_tracker_tolerance_search: the stall-tolerance search that the last
 * ms_tracker_step left pending (t->tolerance_defer set,
 * t->tolerance_pending true), on the landscape of that step: one
 * ms_trigger_tolerance search (milliseconds to most of a second,
 * doc/performance.md), ended early by t->tolerance_stop.  The value is
 * remembered for the offered load's bucket and reported from the next
 * step on; a stopped search remembers only the bracket it reached and is
 * pending again in the next step, resumed from that bracket.  Returns
 * whether a search ran (false: none pending, or t NULL).  Source:
 * doc/outputs.md, "Stall tolerance".
 */
bool ms_tracker_tolerance_search(ms_tracker *t);

/*
 * ms_tracker_hazard_build: the points of the time-to-storm table that the
 * last ms_tracker_step left pending (t->hazard_defer set, t->hazard_pending
 * true), on the landscape of that step: ms_hazard_table_step
 * (model/hazard_table.h) until the table is complete or stop(ctx) returns
 * non-zero, asked after each point and within one every
 * MS_HAZARD_WALK_STRIDE states (stop NULL: to the end); a point stopped
 * part way goes on at the next call, its work kept.  One point costs one
 * ms_time_to_storm call: 0.12-0.18 ms at 10 servers x 100 ms, T = 1 s, to
 * 14-89 ms at 10^4 (doc/design.md §1.12).  The outputs come from the next
 * step after the last point.  Returns how many points were completed (0:
 * none pending, or t NULL).
 */
int ms_tracker_hazard_build(ms_tracker *t, int (*stop)(void *ctx), void *ctx);

/*
 * ms_tracker_safe_build: the landscape builds of safe_retries' bisection
 * that the last ms_tracker_step left pending (t->safe_defer set,
 * t->safe_pending true), at that step's offered load and safety margin,
 * on its landscape: one ms_recommend_retry_recovery per retry count the
 * bisection asks for (about 7; 0.05-0.5 ms each, doc/performance.md),
 * until it is complete or stop(ctx) returns non-zero, asked before each
 * build (stop NULL: to the end).  The builds done are kept; a stopped
 * bisection goes on at the next call.  safe_retries comes from the next
 * step after the last build.  Returns how many landscapes were built (0:
 * none pending, or t NULL).  Source: doc/outputs.md, "Safe retries".
 */
int ms_tracker_safe_build(ms_tracker *t, int (*stop)(void *ctx), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
