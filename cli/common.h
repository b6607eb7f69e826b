/* SPDX-License-Identifier: MIT */
/*
 * metastable, the command-line tool: what the sub-commands share.
 *
 *  - the sub-command table's entry type and every sub-command's entry point
 *    (cli/main.c dispatches; each sub-command lives in its own file);
 *  - diagnostics and exit codes (doc/design.md §4: 0 success, 2 usage
 *    error naming the option and its accepted range, 1 runtime error
 *    naming the file and the reason);
 *  - option values: numbers with ranges, durations and rates with units,
 *    choices;
 *  - the model options every solving sub-command takes (--model, --servers,
 *    ... or --spec FILE --service NAME), resolved into ms_service_params;
 *  - output helpers: doubles that read back exactly, CSV fields, progress on
 *    a terminal.
 *
 * Adding a sub-command (e.g. `simulate`): write cli/simulate.c with
 * `int ms_cmd_simulate(int argc, char **argv)`, declare it below, add one
 * line to the table in cli/main.c and the file to cli/Makefile.inc.  Inside,
 * list the options in an ms_cli_option table (the command's own, the shared
 * ones by MS_CLI_SHARED), parse them with ms_cli_parse (the command's own
 * in a take function that hands the rest to ms_cli_shared_option; the
 * model options then go to ms_cli_model_resolve), print --help with
 * ms_cli_help, report problems with ms_cli_usage (exit 2) or ms_cli_fail
 * (exit 1), and write results only to stdout (CONTRIBUTING.md, "A new
 * sub-command").  The docs' option lists are made from --help
 * (tools/cli_docs.py): run it after changing an option.
 */
#ifndef METASTABLE_CLI_COMMON_H
#define METASTABLE_CLI_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "json.h"
#include "metastable.h"
#include "service.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Exit codes and sub-commands                                         */
/* ------------------------------------------------------------------ */

enum {
  MS_EXIT_OK = 0,            /* the results were written */
  MS_EXIT_RUNTIME = 1,       /* a file could not be read, an input row is bad,
                                the model failed, gnuplot is missing */
  MS_EXIT_USAGE = 2,         /* the command line is wrong */
  MS_EXIT_INTERRUPTED = 130, /* stopped by SIGINT (128 + 2, as a shell
                                reports a job killed by Ctrl-C) */
};

/* Output formats of the sub-commands. */
typedef enum { MS_FORMAT_TEXT, MS_FORMAT_CSV, MS_FORMAT_JSON } ms_format;

/* A sub-command: argv[0] is its name ("solve"), the rest its arguments.
 * Returns an exit code (MS_EXIT_*). */
typedef int (*ms_cli_main)(int argc, char **argv);

typedef struct {
  const char *name;    /* "solve" */
  ms_cli_main main;    /* its entry point */
  const char *summary; /* one line for `metastable --help` */
} ms_cli_command;

int ms_cmd_solve(int argc, char **argv);
int ms_cmd_erlang(int argc, char **argv);
int ms_cmd_sweep(int argc, char **argv);
int ms_cmd_lab(int argc, char **argv);
int ms_cmd_replay(int argc, char **argv);
int ms_cmd_simulate(int argc, char **argv);
int ms_cmd_check(int argc, char **argv);
int ms_cmd_fit(int argc, char **argv);
int ms_cmd_plan(int argc, char **argv);
int ms_cmd_escapes(int argc, char **argv);
int ms_cmd_tolerance(int argc, char **argv);
int ms_cmd_recommend(int argc, char **argv);
int ms_cmd_init(int argc, char **argv);

/* ------------------------------------------------------------------ */
/* Diagnostics                                                         */
/* ------------------------------------------------------------------ */

/* Name the running sub-command in every message ("metastable solve: ...").
 * Called by the dispatcher; NULL for the top level. */
void ms_cli_set_command(const char *name);
const char *ms_cli_get_command(void);

/* Print "metastable CMD: <message>" and a pointer to --help on stderr;
 * returns MS_EXIT_USAGE. */
int ms_cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "metastable CMD: <message>" on stderr; returns MS_EXIT_RUNTIME. */
int ms_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "metastable CMD: warning: <message>" on stderr. */
void ms_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Handle a getopt_long return that no case of the sub-command took: '?'
 * (an unknown or ambiguous option: the candidates from `options` are
 * named) or ':' (missing argument).  optstring must start with ':' and
 * opterr be 0.  Returns MS_EXIT_USAGE. */
int ms_cli_bad_option(int c, char **argv, const struct option *options);

typedef struct ms_cli_model ms_cli_model;

/*
 * One option of a command, as ms_cli_parse takes it and --help shows it:
 * "  --name ARG" and its help wrapped to 79 columns from column 27.  The
 * option lists of doc/metastable.1 and doc/metastable.md are made from
 * --help (tools/cli_docs.py), so a table is the one source of its
 * command's options.  A table ends with MS_CLI_END; MS_CLI_HEADING starts a
 * group under a heading ("Engine:"); MS_CLI_SHARED stands for an option
 * whose entry lives in common.c: a shared option (MS_OPT_LOAD...) or a
 * model option (MS_OPT_SERVERS..., for a command that takes it without the
 * model: erlang, lab).
 */
typedef struct {
  const char *name; /* "--load" */
  const char *arg;  /* its value as --help writes it: "L", "text|json"
                       (words the option accepts); NULL for a switch */
  int id;           /* the value the take function receives */
  const char *help; /* what it does: one paragraph, no line breaks */
} ms_cli_option;

/* clang-format off */
#define MS_CLI_SHARED(id) {NULL, NULL, (id), NULL}
#define MS_CLI_HEADING(text) {NULL, NULL, 0, (text)}
#define MS_CLI_END {NULL, NULL, 0, NULL}
/* clang-format on */

/* A command's own options, for ms_cli_parse: take option id with its
 * argument arg (NULL for a switch) into args.  Returns 0, an exit code
 * (the message printed), or -1 when id is none of the command's options. */
typedef int (*ms_cli_take)(void *args, int id, const char *arg);

/* A command's command line: what --help prints and ms_cli_parse reads. */
typedef struct {
  const char *usage;            /* the usage lines, a blank line and what
                                   the command does, ending in a newline */
  const ms_cli_option *options; /* its options, in --help's order */
} ms_cli_syntax;

/*
 * ms_cli_parse: the option loop every sub-command shares: getopt_long over
 * argv (argv[0] the sub-command) with the options of syntax (and the model
 * options when m is not NULL; an option of the command shadows a model
 * option of the same name, as plan's --latency-objective does), in the
 * order given, stopping at the first bad option so that the message names
 * the one the user got wrong first.  A model option goes to m
 * (ms_cli_model_option), any other option to take; what neither takes is
 * an unknown option or a missing value (ms_cli_bad_option).  --help prints
 * the command's help (the usage, the options wrapped at 79 columns from
 * column 27, then the model options with their ranges from MS_PARAMS but
 * those the command shadows), sets *help and stops.  The arguments after
 * the options: with first_arg NULL there must be none ("unexpected
 * argument 'x'"), else *first_arg is the index of the first.  Returns 0 or
 * the exit code of the message printed (with *help, of writing the help:
 * MS_EXIT_OK unless stdout failed).
 */
int ms_cli_parse(int argc, char **argv, const ms_cli_syntax *syntax,
                 ms_cli_model *m, ms_cli_take take, void *args, bool *help,
                 int *first_arg);

/* ------------------------------------------------------------------ */
/* Option values                                                       */
/* ------------------------------------------------------------------ */

/* Bounds of a range check. */
enum {
  MS_RANGE_CLOSED = 0,
  MS_RANGE_LO_OPEN = 1, /* value must be > lo, not >= lo */
  MS_RANGE_HI_OPEN = 2, /* value must be < hi, not <= hi */
};

/*
 * The pure checks behind the option parsers: they return 0 and set *out,
 * or -1 with msg saying "--opt: 'text' is ..., accepted range [lo, hi]".
 *   ms_cli_check_real     a plain finite number (strtod, whole text)
 *   ms_cli_check_long     a whole number in [lo, hi]
 *   ms_cli_check_rate     a rate per second ("10", "10/s"), ms_parse_rate
 *   ms_cli_check_duration a duration ("0.1", "100ms", "250us", "2m",
 *                         "1.5h"), ms_parse_duration
 *   ms_cli_check_share    a share of 1, also as a percentage ("0.02",
 *                         "2%"), ms_parse_share
 * bounds is MS_RANGE_* flags; hi may be INFINITY.
 */
int ms_cli_check_real(const char *opt, const char *text, double lo, double hi,
                      int bounds, double *out, char *msg, size_t len);
int ms_cli_check_long(const char *opt, const char *text, long lo, long hi,
                      long *out, char *msg, size_t len);
int ms_cli_check_rate(const char *opt, const char *text, double lo, double hi,
                      int bounds, double *out, char *msg, size_t len);
int ms_cli_check_duration(const char *opt, const char *text, double lo,
                          double hi, int bounds, double *out, char *msg,
                          size_t len);
int ms_cli_check_share(const char *opt, const char *text, double lo, double hi,
                       int bounds, double *out, char *msg, size_t len);

/*
 * ms_cli_check_param: the value of a model parameter (MS_PARAMS) given as
 * option opt: parsed by the parameter's unit (a duration for "s", a rate
 * for a unit per second, a whole number for whole parameters, a number or
 * a percentage for a share, else a plain number: ms_parse_param), then checked
 * by ms_param_check.  Returns 0 and sets *out, or -1 with msg "--opt: 'text' is
 * out of range: it must be in [1, 10]".
 */
int ms_cli_check_param(const char *opt, const char *text, ms_param id,
                       double *out, char *msg, size_t len);

/* The same, printing the message as a usage error: return 0, or
 * MS_EXIT_USAGE. */
int ms_cli_param(const char *opt, const char *text, ms_param id, double *out);

/* The same, printing the message as a usage error: return 0, or
 * MS_EXIT_USAGE. */
int ms_cli_real(const char *opt, const char *text, double lo, double hi,
                int bounds, double *out);
int ms_cli_long(const char *opt, const char *text, long lo, long hi, long *out);
int ms_cli_rate(const char *opt, const char *text, double lo, double hi,
                int bounds, double *out);
int ms_cli_duration(const char *opt, const char *text, double lo, double hi,
                    int bounds, double *out);
int ms_cli_share(const char *opt, const char *text, double lo, double hi,
                 int bounds, double *out);

/* text must be one of choices (a NULL-terminated list); *out its index.
 * Returns 0 or MS_EXIT_USAGE naming the choices. */
int ms_cli_choice(const char *opt, const char *text, const char *const *choices,
                  int *out);

/* ------------------------------------------------------------------ */
/* Model options                                                       */
/* ------------------------------------------------------------------ */

/* getopt_long values of the model options (above any character). */
enum {
  MS_OPT_MODEL = 0x100,
  MS_OPT_SERVERS,
  MS_OPT_SERVICE_TIME,
  MS_OPT_SERVICE_RATE,
  MS_OPT_TIMEOUT,
  MS_OPT_TIMEOUT_GRANULARITY,
  MS_OPT_SERVICE_TIME_CV,
  MS_OPT_CAPACITY,
  MS_OPT_BASE_FAILURE,
  MS_OPT_RETRIES,
  MS_OPT_TIERS,
  MS_OPT_RETRY_BUDGET,
  MS_OPT_TOKEN_RATIO,
  MS_OPT_LAYERING,
  MS_OPT_GRPC_THROTTLING,
  MS_OPT_ENVOY_RETRY_BUDGET,
  MS_OPT_FINAGLE_RETRY_BUDGET,
  MS_OPT_AWS_RETRY_QUOTA,
  MS_OPT_QUEUE_LIMIT,
  MS_OPT_LATENCY_OBJECTIVE,
  MS_OPT_RETRY_REJECTIONS,
  MS_OPT_NO_RETRY_REJECTIONS,
  MS_OPT_TIMEOUT_COVERS,
  MS_OPT_SPEC,
  MS_OPT_SERVICE,
  MS_OPT_MODEL_END, /* the shared options are numbered from here */
};

/* getopt_long values of the options several commands share (their
 * entries and their parser are in common.c: ms_cli_shared_option). */
enum {
  MS_OPT_LOAD = MS_OPT_MODEL_END, /* --load L: offered load, req/s */
  MS_OPT_MARGIN,                  /* --margin M: share above the load */
  MS_OPT_OBJECTIVE,               /* --latency-objective D of plan and
                                     escapes: the queue bound only */
  MS_OPT_FORMAT,                  /* --format text|json (or its own entry) */
  MS_OPT_PLOT,                    /* --plot FILE, .svg or .png (its own entry:
                                     what the picture shows) */
  MS_OPT_TITLE,                   /* --title TEXT: the plot's title */
  MS_OPT_HAZARD_HORIZON,          /* --hazard-horizon D: the storm hazard's
                                     horizon, s */
  MS_OPT_MAX_HAZARD,              /* --max-hazard H: the storm hazard taken
                                     as negligible within the horizon */
  MS_OPT_SHARED_END, /* sub-commands number their own options from here */
};

/* Formats --format accepts, as flags for ms_cli_shared_init. */
enum {
  MS_FORMATS_TEXT_JSON = 1 << MS_FORMAT_TEXT | 1 << MS_FORMAT_JSON,
  MS_FORMATS_ALL = MS_FORMATS_TEXT_JSON | 1 << MS_FORMAT_CSV,
};

/* The values of the shared options, as given. */
typedef struct {
  double load;              /* --load, req/s; NaN until given */
  double margin;            /* --margin, a share; NaN until given */
  double latency_objective; /* --latency-objective, s; NaN until given */
  unsigned formats;         /* the formats --format accepts (1 << format) */
  ms_format format;         /* --format, else the command's default */
  bool has_format;          /* --format given */
  const char *plot;         /* --plot FILE (.svg or .png), or NULL */
  const char *title;        /* --title TEXT, or NULL */
  double hazard_horizon;    /* --hazard-horizon, s; default
                               MS_CLI_HAZARD_HORIZON */
  double max_hazard;        /* --max-hazard, a share; default
                               MS_CLI_MAX_HAZARD */
} ms_cli_shared;

/* The options of replay and fit that read a trace from Prometheus (their
 * ids and their parser, ms_trace_source_option, are source.h's). */
/* clang-format off */
#define MS_CLI_TRACE_OPTIONS                                                 \
  {"--prometheus-json", "INPUT=FILE", MS_OPT_TRACE_PROMETHEUS,               \
   "instead of a CSV trace: a Prometheus /api/v1/query_range response (one " \
   "series) for INPUT (arrival_rate, ...); repeat per input"},               \
  {"--write-trace", "OUT.csv", MS_OPT_TRACE_WRITE,                           \
   "also save the trace built from the Prometheus responses"}
/* clang-format on */

/* Nothing given yet; --format's default and the formats it accepts
 * (MS_FORMATS_*). */
void ms_cli_shared_init(ms_cli_shared *s, ms_format format, unsigned formats);

/* Take shared option id (MS_OPT_LOAD...) with its argument into s: 0, an
 * exit code (a bad value: the message printed), or -1 when id is not a
 * shared option.  An ms_cli_take over s, for a command whose options are
 * all shared. */
int ms_cli_shared_option(void *s, int id, const char *arg);

/* What the model options said, and the service they resolve to. */
struct ms_cli_model {
  /* as given */
  bool given[MS_OPT_MODEL_END - MS_OPT_MODEL];
  ms_model_kind kind;
  double value[MS_PARAM_COUNT];     /* by parameter: the numeric options */
  bool field_given[MS_PARAM_COUNT]; /* a named policy's fields given */
  ms_policy_kind policy;            /* the named policy's option, if given */
  int aws_costs; /* --aws-retry-quota's set of costs (ms_aws_costs), -1 */
  ms_layering layering;     /* --layering, if given */
  double latency_objective; /* --latency-objective, s */
  double timeout_spread;    /* --timeout MIN..MAX: MAX - MIN, s (else 0) */
  bool retry_rejections;    /* --retry-rejections, --no-retry-... */
  ms_timeout_covers timeout_covers; /* --timeout-covers */
  const char *spec_path, *service_name;
  /* resolved by ms_cli_model_resolve */
  ms_service_file file;        /* the --spec file, if any */
  const ms_service_spec *spec; /* the service taken from it, or NULL */
  ms_service_params params;    /* the service to solve */
  char name[64];               /* the service's name, or "" */
  char summary[256];           /* "erlang model: 30 servers, ..." */
  char label[330];             /* "api: erlang model: ...", or the summary
                                  alone when the service has no name */
};

void ms_cli_model_init(ms_cli_model *m);
void ms_cli_model_free(ms_cli_model *m);

/* The entry point of a command that takes the model options: run(m, argc,
 * argv) with m set up before and freed after; its exit code. */
int ms_cli_with_model(int (*run)(ms_cli_model *m, int argc, char **argv),
                      int argc, char **argv);

/* Begin a command's JSON object on stdout (pretty_depth as for
 * ms_json_init) with its first key, "service": the service's name, or null
 * when it has none (no --spec). */
void ms_cli_json_begin(ms_json *j, int pretty_depth, const ms_cli_model *m);

/* If opt is a model option, take its value: returns 0 when taken,
 * MS_EXIT_USAGE for a bad value (message printed), -1 when opt is not a
 * model option. */
int ms_cli_model_option(ms_cli_model *m, int opt, const char *arg);

/*
 * ms_cli_model_resolve: turn the options into m->params.  With --spec the
 * service file is loaded (ms_service_file_load) and the service named by
 * --service taken (the only one when the file has one); options given on
 * the command line then override the file's values, so "what if we add a
 * retry" is `--spec f --service api --retries 4`.  Without --spec the
 * model is --model, or the one the options imply.
 *   need_servers  false when the servers may stay unresolved because an
 *                 input (pool_size) will give them (replay)
 * Returns 0; MS_EXIT_RUNTIME when the file cannot be read or is invalid
 * (message "path:line:column: ..."); MS_EXIT_USAGE for options that are
 * missing, contradictory or belong to the other model.
 */
int ms_cli_model_resolve(ms_cli_model *m, bool need_servers);

/* ms_cli_model_resolve(m, true), then the service's landscape
 * (ms_landscape_build) into *ls.  Returns 0, or the exit code of the
 * message printed ("model: ..." when the model fails). */
int ms_cli_model_landscape(ms_cli_model *m, ms_landscape *ls);

/*
 * ms_cli_model_service: the service of --spec as the plugin would run it,
 * with the command line's overrides (m->params, after
 * ms_cli_model_resolve found a service): --servers wins over a pool size
 * read from collectd, whose input is then not read.  *spec shares its
 * strings with m->spec (valid until ms_cli_model_free).
 */
void ms_cli_model_service(const ms_cli_model *m, ms_service_spec *spec);

/* The service parameters in one line, e.g. "erlang model: 30 servers,
 * service time 100 ms, timeout 1 s, 3 retries"; into buf, returned. */
const char *ms_cli_describe(const ms_service_params *p, bool with_servers,
                            char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

/* Write text as one CSV field (RFC 4180: quoted when it holds a comma, a
 * quote, or a line break; quotes doubled). */
void ms_cli_csv_field(FILE *f, const char *text);

/* The value of --format: text must name one of the n formats in accepted
 * ("text", "csv" or "json"), and *out is then that format.  Returns 0, or
 * MS_EXIT_USAGE naming the accepted formats in their order (as
 * ms_cli_choice does). */
int ms_cli_format(const char *text, const ms_format *accepted, size_t n,
                  ms_format *out);

/* Flush stdout and report a write error (full disk, closed pipe) as a
 * runtime error.  Returns code unchanged when the writes succeeded. */
int ms_cli_finish_output(int code);

/* ------------------------------------------------------------------ */
/* Interruption (Ctrl-C) of long work                                  */
/* ------------------------------------------------------------------ */

/*
 * ms_cli_interrupt_catch: from now on the first SIGINT only sets a flag,
 * which the long loops of simulate, sweep, tolerance, lab and recommend
 * read at every step (ms_cli_interrupted) to stop cleanly; a second SIGINT
 * kills the process as usual (the handler is SA_RESETHAND).  Only a
 * command that reads the flag may call this.
 */
void ms_cli_interrupt_catch(void);

/* Whether SIGINT arrived since ms_cli_interrupt_catch. */
bool ms_cli_interrupted(void);

/* Print "metastable CMD: interrupted: <message>" (what was completed) on
 * stderr, after flushing stdout; returns MS_EXIT_INTERRUPTED. */
int ms_cli_interrupt_exit(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Progress of a long loop on stderr, only when stderr is a terminal: a
 * line "what: done/total (pct %)" drawn half a second after the start,
 * then redrawn at most five times a second (by the clock, at any step, so
 * that slow steps show too) and erased at the end. */
typedef struct {
  bool on;
  const char *what;
  size_t total;
  double next_draw; /* monotonic seconds */
} ms_cli_progress;

void ms_cli_progress_start(ms_cli_progress *p, const char *what, size_t total);
void ms_cli_progress_update(ms_cli_progress *p, size_t done);
void ms_cli_progress_end(ms_cli_progress *p);

/* ---- the storm hazard (model/hazard.h, doc/design.md §1.12) --------- */

/* The horizon of the storm hazard when none is given, s: one hour, as the
 * plugin's hazard_horizon. */
#define MS_CLI_HAZARD_HORIZON 3600.0
/* The storm hazard within the horizon below which a storm is unlikely
 * enough: recommend's target, and where the fold is the answer. */
#define MS_CLI_MAX_HAZARD 0.01

/* The time to a storm of a service at one offered load, as the commands
 * show it. */
typedef struct {
  bool ok;        /* seconds and hazard hold; else why says why not */
  bool never;     /* seconds is MS_TIME_TO_STORM_NEVER: no storm to fall
                     into, or one later than any horizon */
  double seconds; /* mean time to a storm from an empty pool, s, in
                     (0, MS_TIME_TO_STORM_NEVER]; NaN when !ok */
  double hazard;  /* probability of one within the horizon, [0, 1]; 0 when
                     never; NaN when !ok */
  char why[256];  /* !ok: why the model has no answer, one line */
} ms_cli_hazard;

/*
 * ms_cli_hazard_at: the time to a storm of service s at offered load
 * `load` (req/s) and the storm hazard within `horizon` (s), by
 * ms_time_to_storm and ms_storm_hazard (doc/design.md §1.12; a birth-death
 * chain after Karlin and Taylor 1975, ch. 4 §7).  A service outside their
 * domain (the capacity model, a queue limit, a service_time_cv, a timeout
 * spread, a load-dependent policy) or a chain too long is no error of the
 * command: out->ok is false and out->why says why in one line.
 *   s        valid service parameters
 *   load     req/s, finite, >= 0
 *   horizon  s, finite, >= 0
 * Cost: that of ms_time_to_storm, O(c + c mu T).  No errors.
 */
void ms_cli_hazard_at(const ms_service_params *s, double load, double horizon,
                      ms_cli_hazard *out);

/* The hazard up to the fold (ms_cli_hazard_fold): at the tipping load,
 * whether the fold is the answer, and the load under the target. */
typedef struct {
  ms_cli_hazard tip;  /* at the tipping load */
  bool fold_answer;   /* the hazard at the tipping load is under max_hazard */
  double hazard_load; /* req/s: the largest load under max_hazard, or NaN */
} ms_cli_fold;

/*
 * ms_cli_hazard_fold: the storm hazard at the tipping load, and the
 * largest offered load up to it at which the hazard within `horizon`
 * stays at or under `max_hazard`: the tipping load itself when the hazard
 * there is (the fold is the answer), else by the Illinois method on ln
 * time_to_storm between the recovery load (no storm to fall into) and the
 * tipping load, until the time is within 10^-6 (relative) of the
 * target's or the bracket within 10^-9; that assumes the hazard grows
 * with the load (tests/check_hazard.c holds ms_time_to_storm to that).
 * hazard_load is the bracket's safe end: its hazard is at most
 * max_hazard.
 *   s              valid service parameters
 *   recovery_load  req/s, tipping_load req/s: of s (its landscape)
 *   horizon        s, max_hazard a share in (0, 1)
 *   out            out: tip (out->tip.ok false: the model has no answer,
 *                  and hazard_load is NaN)
 * Cost: about 10 calls of ms_time_to_storm (at most 102), the tipping
 * load's among them.  No errors.
 */
void ms_cli_hazard_fold(const ms_service_params *s, double recovery_load,
                        double tipping_load, double horizon, double max_hazard,
                        ms_cli_fold *out);

/*
 * ms_cli_every: how often a storm comes, for people: "about once every 3
 * hours", "less than once in 10000 years", "never" (ms_cli_human_time).
 *   buf, len  the text; seconds  the mean time to a storm, s, >= 0
 * Returns buf.
 */
const char *ms_cli_every(char *buf, size_t len, double seconds);

/*
 * ms_cli_hazard_phrase: a storm hazard within a horizon for people, "28 %
 * within 1 hour"; six digits above 99.9 %, and "over 99.9999 %" where
 * those would round to 100.
 *   buf, len  the text, NUL-terminated and cut to len
 *   hazard    a share, [0, 1]
 *   horizon   s, >= 0
 * Returns buf.
 */
const char *ms_cli_hazard_phrase(char *buf, size_t len, double hazard,
                                 double horizon);

/*
 * ms_cli_human_time: a duration for people, to two significant digits in
 * the largest unit it fills (seconds below 90 s, minutes below an hour,
 * hours below 36, days below 14, weeks below a year: "45 s", "12 min",
 * "2.5 hours", "3 days",
 * "6 weeks", "1.4 years"; "never" from MS_TIME_TO_STORM_NEVER, "over
 * 10000 years" beyond that).  A month is not a unit (not a fixed
 * length); a year is 365.25 days.
 *   buf, len  the text, NUL-terminated and cut to len
 *   seconds   s, >= 0
 * Returns buf.
 */
const char *ms_cli_human_time(char *buf, size_t len, double seconds);

/* What of service s the retrial queue (model/retrial.h, doc/design.md
 * §1.9) does not model, as a phrase ("more than one tier", "a retry budget
 * or quota", "a service_time_cv", "a timeout spread"), or NULL when it
 * models s: one tier, a fixed retry count, exponential service, one
 * timeout on the wait or the response.  solve and check share it. */
const char *ms_cli_retrial_unlike(const ms_service_params *s);

#ifdef __cplusplus
}
#endif

#endif
