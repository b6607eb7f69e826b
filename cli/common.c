/* SPDX-License-Identifier: MIT */
/*
 * What the sub-commands of `metastable` share: diagnostics, option values,
 * the model options, and output helpers.  See common.h.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "plot.h"
#include "sanitize.h"

/* ---- diagnostics ----------------------------------------------------- */

static const char *current_command;

void ms_cli_set_command(const char *name) { current_command = name; }
const char *ms_cli_get_command(void) { return current_command; }

/* Every diagnostic goes through here: the message is escaped
 * (ms_sanitize), since it may quote bytes of the user's files. */
static void vmessage(const char *kind, const char *fmt, va_list ap) {
  fflush(stdout);
  char raw[2048], safe[4 * sizeof raw];
  vsnprintf(raw, sizeof raw, fmt, ap);
  ms_sanitize(safe, sizeof safe, raw);
  if (current_command)
    fprintf(stderr, "metastable %s: %s%s\n", current_command, kind, safe);
  else
    fprintf(stderr, "metastable: %s%s\n", kind, safe);
}

int ms_cli_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage("", fmt, ap);
  va_end(ap);
  if (current_command)
    fprintf(stderr, "Try 'metastable %s --help' for the options.\n",
            current_command);
  else
    fprintf(stderr, "Try 'metastable --help' for the sub-commands.\n");
  return MS_EXIT_USAGE;
}

int ms_cli_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage("", fmt, ap);
  va_end(ap);
  return MS_EXIT_RUNTIME;
}

void ms_cli_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage("warning: ", fmt, ap);
  va_end(ap);
}

/* ---- interruption ---------------------------------------------------- */

static volatile sig_atomic_t got_sigint;

static void on_sigint(int sig) {
  (void)sig;
  got_sigint = 1;
}

void ms_cli_interrupt_catch(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  /* a second Ctrl-C kills; a write blocked on a full pipe goes on */
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
}

bool ms_cli_interrupted(void) { return got_sigint != 0; }

int ms_cli_interrupt_exit(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage("interrupted: ", fmt, ap);
  va_end(ap);
  return MS_EXIT_INTERRUPTED;
}

int ms_cli_bad_option(int c, char **argv, const struct option *options) {
  /* getopt_long leaves optind just past the offending word */
  const char *word = optind > 0 ? argv[optind - 1] : "?";
  if (c == ':')
    return ms_cli_usage("option '%s' needs a value", word);
  if (optopt != 0 && strncmp(word, "--", 2) != 0)
    return ms_cli_usage("unknown option '-%c'", optopt);
  /* "--name=value": the name only; an abbreviation of several options is
   * ambiguous rather than unknown */
  size_t n = strcspn(word, "=");
  char names[300] = "";
  int matches = 0;
  for (const struct option *o = options; n > 2 && o && o->name; o++) {
    if (strncmp(o->name, word + 2, n - 2) != 0)
      continue;
    size_t len = strlen(names);
    snprintf(names + len, sizeof names - len, "%s--%s", matches ? ", " : "",
             o->name);
    matches++;
  }
  if (matches > 1)
    return ms_cli_usage("option '%.*s' is ambiguous: %s", (int)n, word, names);
  return ms_cli_usage("unknown option '%.*s'", (int)n, word);
}

/* ---- option values --------------------------------------------------- */

static void range_text(char *buf, size_t len, double lo, double hi,
                       int bounds) {
  if (isinf(hi))
    snprintf(buf, len, "%s %g", bounds & MS_RANGE_LO_OPEN ? ">" : ">=", lo);
  else
    snprintf(buf, len, "in %c%g, %g%c", bounds & MS_RANGE_LO_OPEN ? '(' : '[',
             lo, hi, bounds & MS_RANGE_HI_OPEN ? ')' : ']');
}

static int in_range(double x, double lo, double hi, int bounds) {
  if (bounds & MS_RANGE_LO_OPEN ? !(x > lo) : !(x >= lo))
    return 0;
  if (bounds & MS_RANGE_HI_OPEN ? !(x < hi) : !(x <= hi))
    return 0;
  return 1;
}

static int check_range(const char *opt, const char *text, double x, double lo,
                       double hi, int bounds, double *out, char *msg,
                       size_t len) {
  if (!in_range(x, lo, hi, bounds)) {
    char r[96];
    range_text(r, sizeof r, lo, hi, bounds);
    snprintf(msg, len, "%s: '%s' is out of range: it must be %s", opt, text, r);
    return -1;
  }
  *out = x;
  return 0;
}

int ms_cli_check_real(const char *opt, const char *text, double lo, double hi,
                      int bounds, double *out, char *msg, size_t len) {
  char *end;
  errno = 0;
  double x = strtod(text, &end);
  /* the one rule for numbers near 0 (service/units.h): a subnormal, or a
   * number strtod rounds to 0, is refused as the service files refuse it */
  if (end != text && *end == '\0' &&
      ((x != 0 && fabs(x) < DBL_MIN) || (errno == ERANGE && x == 0))) {
    char tiny[320];
    snprintf(msg, len, "%s: %s", opt,
             ms_number_tiny_message(tiny, sizeof tiny, text));
    return -1;
  }
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(x)) {
    snprintf(msg, len, "%s: '%s' is not a number", opt, text);
    return -1;
  }
  return check_range(opt, text, x, lo, hi, bounds, out, msg, len);
}

int ms_cli_check_long(const char *opt, const char *text, long lo, long hi,
                      long *out, char *msg, size_t len) {
  char *end;
  errno = 0;
  long x = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE) {
    snprintf(msg, len, "%s: '%s' is not a whole number", opt, text);
    return -1;
  }
  if (x < lo || x > hi) {
    snprintf(msg, len, "%s: '%s' is out of range: it must be in [%ld, %ld]",
             opt, text, lo, hi);
    return -1;
  }
  *out = x;
  return 0;
}

int ms_cli_check_rate(const char *opt, const char *text, double lo, double hi,
                      int bounds, double *out, char *msg, size_t len) {
  double x;
  char why[200];
  if (ms_parse_rate(text, &x, why, sizeof why) != 0) {
    snprintf(msg, len, "%s: %s", opt, why);
    return -1;
  }
  return check_range(opt, text, x, lo, hi, bounds, out, msg, len);
}

int ms_cli_check_duration(const char *opt, const char *text, double lo,
                          double hi, int bounds, double *out, char *msg,
                          size_t len) {
  double x;
  char why[200];
  if (ms_parse_duration(text, &x, why, sizeof why) != 0) {
    snprintf(msg, len, "%s: %s", opt, why);
    return -1;
  }
  return check_range(opt, text, x, lo, hi, bounds, out, msg, len);
}

int ms_cli_check_share(const char *opt, const char *text, double lo, double hi,
                       int bounds, double *out, char *msg, size_t len) {
  double x;
  int r = ms_parse_share(text, &x);
  if (r == MS_NUMBER_TINY) {
    char tiny[320];
    snprintf(msg, len, "%s: %s", opt,
             ms_number_tiny_message(tiny, sizeof tiny, text));
    return -1;
  }
  if (r != 0) {
    snprintf(msg, len, "%s: '%s' is not a number or a percentage", opt, text);
    return -1;
  }
  return check_range(opt, text, x, lo, hi, bounds, out, msg, len);
}

int ms_cli_check_param(const char *opt, const char *text, ms_param id,
                       double *out, char *msg, size_t len) {
  double x;
  char why[200];
  switch (ms_parse_param(id, text, &x, why, sizeof why)) {
  case MS_PARSE_OK:
    break;
  case MS_PARSE_NOT_WHOLE:
    snprintf(msg, len, "%s: '%s' is not a whole number", opt, text);
    return -1;
  case MS_PARSE_NOT_NUMBER:
    snprintf(msg, len, "%s: '%s' is not a %s", opt, text,
             ms_param_is_share(id) ? "number or a percentage" : "number");
    return -1;
  case MS_PARSE_NOT_UNIT:
    snprintf(msg, len, "%s: %s", opt, why);
    return -1;
  }
  if (ms_param_check(id, x, NULL) != MS_OK) {
    char range[96];
    snprintf(msg, len, "%s: '%s' is out of range: it must be %s", opt, text,
             ms_param_range(id, range, sizeof range));
    return -1;
  }
  *out = x;
  return 0;
}

/* The usage error a check reported in msg when it failed, else 0. */
static int usage_if(int failed, const char *msg) {
  return failed ? ms_cli_usage("%s", msg) : 0;
}

int ms_cli_param(const char *opt, const char *text, ms_param id, double *out) {
  char msg[400];
  return usage_if(ms_cli_check_param(opt, text, id, out, msg, sizeof msg), msg);
}

int ms_cli_real(const char *opt, const char *text, double lo, double hi,
                int bounds, double *out) {
  char msg[400];
  return usage_if(
      ms_cli_check_real(opt, text, lo, hi, bounds, out, msg, sizeof msg), msg);
}

int ms_cli_long(const char *opt, const char *text, long lo, long hi,
                long *out) {
  char msg[400];
  return usage_if(ms_cli_check_long(opt, text, lo, hi, out, msg, sizeof msg),
                  msg);
}

int ms_cli_rate(const char *opt, const char *text, double lo, double hi,
                int bounds, double *out) {
  char msg[400];
  return usage_if(
      ms_cli_check_rate(opt, text, lo, hi, bounds, out, msg, sizeof msg), msg);
}

int ms_cli_duration(const char *opt, const char *text, double lo, double hi,
                    int bounds, double *out) {
  char msg[400];
  return usage_if(
      ms_cli_check_duration(opt, text, lo, hi, bounds, out, msg, sizeof msg),
      msg);
}

int ms_cli_share(const char *opt, const char *text, double lo, double hi,
                 int bounds, double *out) {
  char msg[400];
  return usage_if(
      ms_cli_check_share(opt, text, lo, hi, bounds, out, msg, sizeof msg), msg);
}

int ms_cli_choice(const char *opt, const char *text, const char *const *choices,
                  int *out) {
  char list[200] = "";
  for (int i = 0; choices[i]; i++) {
    if (strcmp(text, choices[i]) == 0) {
      *out = i;
      return 0;
    }
    size_t n = strlen(list);
    snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", choices[i]);
  }
  return ms_cli_usage("%s: '%s' is not one of: %s", opt, text, list);
}

/* The names of the formats on the command line, by ms_format. */
static const char *const format_names[] = {
    [MS_FORMAT_TEXT] = "text",
    [MS_FORMAT_CSV] = "csv",
    [MS_FORMAT_JSON] = "json",
};

int ms_cli_format(const char *text, const ms_format *accepted, size_t n,
                  ms_format *out) {
  const char *names[sizeof format_names / sizeof format_names[0] + 1];
  /* a longer list can only repeat a format: there are three */
  if (n >= sizeof names / sizeof names[0])
    n = sizeof names / sizeof names[0] - 1;
  for (size_t i = 0; i < n; i++)
    names[i] = format_names[accepted[i]];
  names[n] = NULL;
  int k;
  int r = ms_cli_choice("--format", text, names, &k);
  if (r == 0)
    *out = accepted[k];
  return r;
}

/* ---- model options --------------------------------------------------- */

/* The numeric model options: option, parameter, argument name and what it
 * is, in the order --help lists them.  Their ranges come from MS_PARAMS;
 * every MS_SCOPE_SERVICE row of MS_PARAMS has one (tests/cli/test_usage.py
 * checks --help). */
typedef struct {
  int opt; /* its getopt value, MS_OPT_* */
  const char *name, *arg, *what;
  ms_param param;
} model_option;

static const model_option model_options[] = {
    {MS_OPT_SERVERS, "--servers", "N", "erlang: servers c", MS_PARAM_SERVERS},
    {MS_OPT_SERVICE_TIME, "--service-time", "S",
     "erlang: mean service time 1/mu", MS_PARAM_SERVICE_TIME},
    {MS_OPT_SERVICE_RATE, "--service-rate", "MU",
     "erlang: service rate of one server", MS_PARAM_SERVICE_RATE},
    {MS_OPT_TIMEOUT, "--timeout", "T",
     "erlang: client timeout (an attempt fails when its response outlasts "
     "it, or its wait when the timeout covers the wait), or the range "
     "MIN..MAX a client's timer fires in (uniform)",
     MS_PARAM_TIMEOUT},
    {MS_OPT_TIMEOUT_GRANULARITY, "--timeout-granularity", "G",
     "erlang: the client's timer ticks every G and fires at the first tick "
     "after the timeout (uniform on [T, T + G])",
     MS_PARAM_TIMEOUT_GRANULARITY},
    {MS_OPT_SERVICE_TIME_CV, "--service-time-cv", "CV",
     "erlang: service time's coefficient of variation (default 1: "
     "exponential; else the M/G/c approximation)",
     MS_PARAM_SERVICE_TIME_CV},
    {MS_OPT_CAPACITY, "--capacity", "C", "capacity: requests/s served",
     MS_PARAM_CAPACITY},
    {MS_OPT_BASE_FAILURE, "--base-failure", "P",
     "failure probability when not overloaded (default 0)",
     MS_PARAM_BASE_FAILURE},
    {MS_OPT_RETRIES, "--retries", "R", "retries per request per tier",
     MS_PARAM_RETRIES},
    {MS_OPT_TIERS, "--tiers", "K",
     "layers that each retry (default 1; amplification up to (R + 1)^K)",
     MS_PARAM_TIERS},
    {MS_OPT_RETRY_BUDGET, "--retry-budget", "B",
     "retries at most this share of requests", MS_PARAM_RETRY_BUDGET},
    {MS_OPT_TOKEN_RATIO, "--token-ratio", "T",
     "token-bucket retry quota, tokens per success", MS_PARAM_TOKEN_RATIO},
    {MS_OPT_QUEUE_LIMIT, "--queue-limit", "K",
     "erlang: waiting places; an attempt that finds every server busy and "
     "every place taken is rejected at once (M/M/c/K)",
     MS_PARAM_QUEUE_LIMIT},
};

#define N_MODEL_OPTIONS (sizeof model_options / sizeof model_options[0])

/* The named policies' options: NAME A:B:..., the fields in order, an empty
 * field or the word "default" for the stack's default. */
typedef struct {
  int opt;
  const char *name, *arg, *what;
  ms_policy_kind kind;
  int required; /* how many of its fields (ms_policy_params) must be given */
} policy_option;

static const policy_option policy_options[] = {
    {MS_OPT_GRPC_THROTTLING, "--grpc-throttling", "MAX:RATIO",
     "gRPC retry throttling (gRFC A6): a bucket of MAX tokens (1 to 1000); "
     "each failed attempt takes one, each success adds RATIO, (0, 1]; no "
     "retry while the bucket is at most half full",
     MS_POLICY_GRPC, 2},
    {MS_OPT_ENVOY_RETRY_BUDGET, "--envoy-retry-budget", "PCT:MIN",
     "Envoy's retry budget: retries in flight at most PCT of the requests in "
     "flight, or MIN (default 20%:3; a field left empty, or the word "
     "default, takes the default); erlang model, one tier",
     MS_POLICY_ENVOY, 0},
    {MS_OPT_FINAGLE_RETRY_BUDGET, "--finagle-retry-budget", "PCT:MIN:TTL",
     "Finagle's and Linkerd's RetryBudget: retries at most PCT of the "
     "requests (0 to 10) plus MIN per second, over a window of TTL (default "
     "20%:10:10s, or default)",
     MS_POLICY_FINAGLE, 0},
    {MS_OPT_AWS_RETRY_QUOTA, "--aws-retry-quota",
     "[legacy:]CAP:COST:TCOST:REFUND:THCOST:SHARE",
     "the AWS SDK's standard retry quota: a bucket of CAP tokens; a retry "
     "takes COST after a transient error, TCOST after a timeout, THCOST "
     "after a throttling error (SHARE of the errors other than timeouts); "
     "a first-attempt success adds REFUND, a successful retry returns its "
     "cost (default 500:14:14:1:5:0; legacy: the older costs 5, 10 and 5); "
     "a field may be NAME=VALUE, as throttling_share=30%",
     MS_POLICY_AWS, 0},
};

#define N_POLICY_OPTIONS (sizeof policy_options / sizeof policy_options[0])

/* The model options that are neither numbers nor policies, in --help's
 * order: --model first, --layering after the numbers, the rest after the
 * policies. */
static const ms_cli_option model_head[] = {
    {"--model", "erlang|capacity", MS_OPT_MODEL,
     "failure model (default: implied by the options)"},
};
static const ms_cli_option model_layering[] = {
    {"--layering", "nested|independent", MS_OPT_LAYERING,
     "how the tiers' retries compose: nested when each tier's timeout "
     "covers the chain below, else independent (default; A^k, the worst "
     "case)"},
};
static const ms_cli_option model_tail[] = {
    {"--timeout-covers", "response|wait", MS_OPT_TIMEOUT_COVERS,
     "erlang: what the timeout times: the whole response, wait plus service "
     "(default; HAProxy, nginx, gRPC deadlines, most HTTP clients), or the "
     "wait for a server only"},
    {"--latency-objective", "S", MS_OPT_LATENCY_OBJECTIVE,
     "erlang, without --queue-limit: queue limit round(servers x service "
     "rate x S)"},
    {"--retry-rejections", "true|false", MS_OPT_RETRY_REJECTIONS,
     "whether a rejected attempt is retried (default true)"},
    {"--no-retry-rejections", NULL, MS_OPT_NO_RETRY_REJECTIONS,
     "a rejection ends its request"},
    {"--spec", "FILE", MS_OPT_SPEC,
     "take the service from a service file (YAML); options given as well "
     "override its values"},
    {"--service", "NAME", MS_OPT_SERVICE,
     "which service of the file (optional when it has one)"},
};

#define N_OF(a) (sizeof(a) / sizeof(a)[0])

/* The k-th model option in --help's order into *out, its help composed in
 * buf (a number's: what it is and its range, from MS_PARAMS).  Returns
 * false past the last. */
static bool model_entry(size_t k, ms_cli_option *out, char *buf, size_t len) {
  if (k < N_OF(model_head)) {
    *out = model_head[k];
    return true;
  }
  k -= N_OF(model_head);
  if (k < N_OF(model_options)) {
    const model_option *o = &model_options[k];
    char range[96];
    snprintf(buf, len, "%s, %s", o->what,
             ms_param_range(o->param, range, sizeof range));
    *out = (ms_cli_option){o->name, o->arg, o->opt, buf};
    return true;
  }
  k -= N_OF(model_options);
  if (k < N_OF(model_layering)) {
    *out = model_layering[k];
    return true;
  }
  k -= N_OF(model_layering);
  if (k < N_OF(policy_options)) {
    const policy_option *o = &policy_options[k];
    *out = (ms_cli_option){o->name, o->arg, o->opt, o->what};
    return true;
  }
  k -= N_OF(policy_options);
  if (k < N_OF(model_tail)) {
    *out = model_tail[k];
    return true;
  }
  return false;
}

/* The options several commands share: one entry and one parser
 * (ms_cli_shared_option) for all of them.  --format and --plot say what
 * a command writes and draws, so most commands give their own entry for
 * them, with these ids. */
static const ms_cli_option shared_options[] = {
    {"--load", "L", MS_OPT_LOAD, "offered load, requests/s, >= 0"},
    {"--margin", "M", MS_OPT_MARGIN,
     "share above the load to stay stable at, [0, 10], also as a percentage "
     "(default: the --spec service's safety_margin, else 20 %)"},
    {"--latency-objective", "D", MS_OPT_OBJECTIVE,
     "the wait an admitted request may have, s, > 0 (default: the timeout): "
     "it sets the queue bound, capacity x D, and not the model's queue "
     "limit"},
    {"--format", "text|json", MS_OPT_FORMAT,
     "text (default) or one JSON object"},
    {"--plot", "FILE", MS_OPT_PLOT,
     "draw the picture into FILE (.svg or .png) with gnuplot"},
    {"--title", "TEXT", MS_OPT_TITLE, "the plot's title"},
    {"--hazard-horizon", "D", MS_OPT_HAZARD_HORIZON,
     "the horizon of the storm hazard (the probability of a storm within "
     "it), s, > 0 (default 1 h)"},
    {"--max-hazard", "H", MS_OPT_MAX_HAZARD,
     "the storm hazard within the horizon that counts as unlikely enough, "
     "(0, 1), also as a percentage (default 1 %)"},
};

static bool is_end(const ms_cli_option *o) {
  return o->name == NULL && o->id == 0 && o->help == NULL;
}

static bool is_heading(const ms_cli_option *o) {
  return o->name == NULL && o->id == 0 && o->help != NULL;
}

/* The entry an option of a table stands for: itself, or for MS_CLI_SHARED
 * the shared or model option with its id (help composed in buf).  An id
 * that is neither is a mistake in the table: abort. */
static ms_cli_option resolve(const ms_cli_option *o, char *buf, size_t len) {
  if (o->name != NULL)
    return *o;
  for (size_t i = 0; i < N_OF(shared_options); i++)
    if (shared_options[i].id == o->id)
      return shared_options[i];
  ms_cli_option e;
  for (size_t k = 0; model_entry(k, &e, buf, len); k++)
    if (e.id == o->id)
      return e;
  fprintf(stderr, "metastable: internal error: no option %d\n", o->id);
  abort();
}

/* Whether the table has an option called name. */
static bool has_option(const ms_cli_option *options, const char *name) {
  char buf[400];
  for (const ms_cli_option *o = options; !is_end(o); o++)
    if (!is_heading(o) && strcmp(resolve(o, buf, sizeof buf).name, name) == 0)
      return true;
  return false;
}

/* Most options of one command (simulate has 45 with the model's). */
#define MAX_OPTIONS 80

static void add_long_option(struct option *longopts, size_t *n,
                            const ms_cli_option *o) {
  if (*n >= MAX_OPTIONS) {
    fprintf(stderr, "metastable: internal error: more than %d options\n",
            MAX_OPTIONS);
    abort();
  }
  longopts[(*n)++] = (struct option){
      o->name + 2, o->arg ? required_argument : no_argument, NULL, o->id};
}

static int print_help(const ms_cli_syntax *syntax, bool model);

/* The erlang model's durations the command line wrote as bare numbers
 * (read in seconds), for the warning of ms_cli_model_resolve: recorded by
 * ms_cli_parse, which reads the command line once, and said at the first
 * resolve only, so that a command that resolves again with values of its
 * own (sweep --vary) says nothing more. */
static struct bare_given { bool service_time, timeout; } bare_given;

static void note_bare(int opt, const char *arg) {
  double x;
  bool bare = arg != NULL && ms_parse_number(arg, &x) == 0;
  if (opt == MS_OPT_SERVICE_TIME)
    bare_given.service_time = bare;
  else if (opt == MS_OPT_TIMEOUT)
    bare_given.timeout = bare;
  else if (opt == MS_OPT_SERVICE_RATE)
    bare_given.service_time = false; /* the later option wins */
}

/* The warnings of ms_bare_duration_warning for the durations of p that
 * the command line wrote bare (doc/configuration.md, "Units and bare
 * numbers"), on stderr; the exit status is not changed. */
static void warn_bare(const ms_cli_model *m, const ms_service_params *p) {
  struct bare_given b = bare_given;
  bare_given = (struct bare_given){0};
  if (p->model.kind != MS_MODEL_ERLANG || !(p->model.service_rate > 0))
    return;
  double service_time = b.service_time ? m->value[MS_PARAM_SERVICE_TIME]
                                       : 1.0 / p->model.service_rate;
  char msg[320];
  if (b.timeout &&
      ms_bare_duration_warning(MS_PARAM_TIMEOUT, "--timeout", " ", service_time,
                               p->model.timeout, msg, sizeof msg))
    ms_cli_warn("%s", msg);
  if (b.service_time &&
      ms_bare_duration_warning(MS_PARAM_SERVICE_TIME, "--service-time", " ",
                               service_time, p->model.timeout, msg, sizeof msg))
    ms_cli_warn("%s", msg);
}

int ms_cli_parse(int argc, char **argv, const ms_cli_syntax *syntax,
                 ms_cli_model *m, ms_cli_take take, void *args, bool *help,
                 int *first_arg) {
  const ms_cli_option *options = syntax->options;
  struct option longopts[MAX_OPTIONS + 2];
  size_t n = 0;
  char buf[400];
  for (const ms_cli_option *o = options; !is_end(o); o++)
    if (!is_heading(o)) {
      ms_cli_option e = resolve(o, buf, sizeof buf);
      add_long_option(longopts, &n, &e);
    }
  ms_cli_option e;
  for (size_t k = 0; m != NULL && model_entry(k, &e, buf, sizeof buf); k++)
    if (!has_option(options, e.name))
      add_long_option(longopts, &n, &e);
  longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
  longopts[n] = (struct option){NULL, 0, NULL, 0};
  int c;
  optind = 0;
  opterr = 0;
  bare_given = (struct bare_given){0};
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    int r = m != NULL ? ms_cli_model_option(m, c, optarg) : -1;
    if (r == 0)
      note_bare(c, optarg);
    if (r < 0 && c == 'h') {
      *help = true;
      return print_help(syntax, m != NULL);
    }
    if (r < 0)
      r = take(args, c, optarg);
    if (r < 0)
      return ms_cli_bad_option(c, argv, longopts);
    if (r > 0)
      return r;
  }
  if (first_arg != NULL)
    *first_arg = optind;
  else if (optind < argc)
    return ms_cli_usage("unexpected argument '%s'", argv[optind]);
  return 0;
}

/* --help's layout: the options' help from this column, lines up to this
 * width (the model's ranges are read back at this column by
 * tests/cli/test_usage.py, the options by tools/cli_docs.py and the bash
 * completion). */
#define HELP_COLUMN 27
#define HELP_WIDTH 79

/* Whether a line may break at the space w[at]: not inside a short
 * bracket such as a range, "[0, 10]" or "(0, 1]". */
static bool breakable(const char *w, size_t at) {
  int depth = 0;
  size_t open = at;
  while (open > 0 && depth >= 0) {
    open--;
    if (strchr(")]", w[open]))
      depth++;
    else if (strchr("([", w[open]))
      depth--;
  }
  if (depth >= 0)
    return true;
  size_t close = at + strcspn(w + at, ")]");
  return w[close] == '\0' || close - open > 16;
}

/* "  --name ARG" and its help wrapped to HELP_WIDTH from HELP_COLUMN (on
 * the next line when fewer than two spaces would separate them, so that a
 * reader of --help tells a value from the text). */
static void print_option(const ms_cli_option *o) {
  int col =
      printf("  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
  if (col > HELP_COLUMN - 2) {
    putchar('\n');
    col = 0;
  }
  const char *w = o->help;
  while (*w) {
    size_t len = strlen(w), room = HELP_WIDTH - HELP_COLUMN;
    if (len > room) {
      len = room;
      while (len > 0 && (w[len] != ' ' || !breakable(w, len)))
        len--;
      if (len == 0)
        len = strcspn(w, " ");
    }
    printf("%*s%.*s\n", HELP_COLUMN - col, "", (int)len, w);
    col = 0;
    w += len;
    while (*w == ' ')
      w++;
  }
}

/* --help: the usage, the options, the model options with model. */
static int print_help(const ms_cli_syntax *syntax, bool model) {
  const ms_cli_option *options = syntax->options;
  char buf[400];
  fputs(syntax->usage, stdout);
  if (!is_heading(options))
    fputs("\nOptions:\n", stdout);
  for (const ms_cli_option *o = options; !is_end(o); o++) {
    if (is_heading(o)) {
      printf("\n%s\n", o->help);
      continue;
    }
    ms_cli_option e = resolve(o, buf, sizeof buf);
    print_option(&e);
  }
  if (model) {
    fputs("\nModel options (seconds and per second; 100ms, 2m, 1.5h, 10/s "
          "and 10% work):\n",
          stdout);
    ms_cli_option e;
    for (size_t k = 0; model_entry(k, &e, buf, sizeof buf); k++)
      if (!has_option(options, e.name))
        print_option(&e);
  }
  return ms_cli_finish_output(MS_EXIT_OK);
}

/* ---- shared options ---------------------------------------------------- */

void ms_cli_shared_init(ms_cli_shared *s, ms_format format, unsigned formats) {
  *s = (ms_cli_shared){.load = NAN,
                       .margin = NAN,
                       .latency_objective = NAN,
                       .hazard_horizon = MS_CLI_HAZARD_HORIZON,
                       .max_hazard = MS_CLI_MAX_HAZARD,
                       .formats = formats,
                       .format = format};
}

int ms_cli_shared_option(void *shared, int id, const char *arg) {
  ms_cli_shared *s = shared;
  switch (id) {
  case MS_OPT_LOAD:
    return ms_cli_param("--load", arg, MS_PARAM_OFFERED_LOAD, &s->load);
  case MS_OPT_MARGIN:
    return ms_cli_share("--margin", arg, 0.0, MS_RECOMMEND_MAX_MARGIN,
                        MS_RANGE_CLOSED, &s->margin);
  case MS_OPT_OBJECTIVE:
    return ms_cli_duration("--latency-objective", arg, 0.0, MS_MAX_DURATION,
                           MS_RANGE_LO_OPEN, &s->latency_objective);
  case MS_OPT_FORMAT: {
    ms_format accepted[3];
    size_t n = 0;
    for (int f = MS_FORMAT_TEXT; f <= MS_FORMAT_JSON; f++)
      if (s->formats & 1u << f)
        accepted[n++] = (ms_format)f;
    s->has_format = true;
    return ms_cli_format(arg, accepted, n, &s->format);
  }
  case MS_OPT_PLOT: {
    ms_plot_format f;
    if (ms_plot_format_of(arg, &f) != 0)
      return ms_cli_usage("--plot: '%s' must end in .svg or .png", arg);
    s->plot = arg;
    return 0;
  }
  case MS_OPT_TITLE:
    s->title = arg;
    return 0;
  case MS_OPT_HAZARD_HORIZON:
    return ms_cli_duration("--hazard-horizon", arg, 0.0, MS_MAX_DURATION,
                           MS_RANGE_LO_OPEN, &s->hazard_horizon);
  case MS_OPT_MAX_HAZARD:
    return ms_cli_share("--max-hazard", arg, 0.0, 1.0,
                        MS_RANGE_LO_OPEN | MS_RANGE_HI_OPEN, &s->max_hazard);
  default:
    return -1;
  }
}

void ms_cli_hazard_at(const ms_service_params *s, double load, double horizon,
                      ms_cli_hazard *out) {
  *out = (ms_cli_hazard){.seconds = NAN, .hazard = NAN};
  ms_error err;
  double t, h;
  /* the plugin's bound on a pool's states (model/hazard_table.h): past
   * it the command's several walks would take minutes (10^5 servers x
   * 100 ms behind 1 s: 73 s for "never") */
  double states = ms_hazard_states(s);
  if (states > MS_HAZARD_TABLE_MAX_STATES) {
    snprintf(out->why, sizeof out->why,
             "a pool of %.3g states (c + c mu T), past the %.3g the hazard is "
             "computed for",
             states, MS_HAZARD_TABLE_MAX_STATES);
    return;
  }
  if (ms_time_to_storm(s, load, &t, &err) != MS_OK ||
      ms_storm_hazard(t, horizon, &h, &err) != MS_OK) {
    /* the message without its "time to a storm: " prefix, which the
     * commands' own labels say */
    const char *why = err.msg, *prefix = "time to a storm: ";
    if (strncmp(why, prefix, strlen(prefix)) == 0)
      why += strlen(prefix);
    snprintf(out->why, sizeof out->why, "%s", why);
    return;
  }
  out->ok = true;
  out->never = t >= MS_TIME_TO_STORM_NEVER;
  out->seconds = t;
  out->hazard = out->never ? 0.0 : h;
}

void ms_cli_hazard_fold(const ms_service_params *s, double recovery_load,
                        double tipping_load, double horizon, double max_hazard,
                        ms_cli_fold *out) {
  out->hazard_load = NAN;
  ms_cli_hazard_at(s, tipping_load, horizon, &out->tip);
  out->fold_answer = out->tip.ok && out->tip.hazard <= max_hazard;
  if (!out->tip.ok)
    return;
  if (out->fold_answer) {
    out->hazard_load = tipping_load;
    return;
  }
  ms_cli_hazard h = out->tip;
  /* f(load) = ln time - ln target falls with the load: f >= 0 (at or
   * under the target) at lo, the recovery load, where there is no storm
   * to fall into; f < 0 at hi.  The Illinois variant of regula falsi
   * (Dowell and Jarratt, BIT 11(2), 1971) keeps the bracket and takes
   * about ten calls where a bisection to 10^-6 takes twenty. */
  double ln_target = log(-horizon / log1p(-max_hazard));
  double hi = tipping_load, fhi = log(h.seconds) - ln_target;
  double lo = fmin(recovery_load, tipping_load);
  ms_cli_hazard_at(s, lo, horizon, &h);
  if (!h.ok)
    return;
  double flo = log(h.seconds) - ln_target;
  int kept = 0; /* which end the last step kept: -1 lo moved, 1 hi moved */
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; i++) {
    double mid = hi - fhi * (hi - lo) / (fhi - flo);
    if (!(mid > lo && mid < hi))
      mid = lo + 0.5 * (hi - lo);
    ms_cli_hazard_at(s, mid, horizon, &h);
    if (!h.ok)
      return;
    double f = log(h.seconds) - ln_target;
    if (f >= 0) {
      lo = mid, flo = f;
      if (f < 1e-6)
        break; /* the time within 10^-6 of the target's, on its safe side */
      if (kept == -1)
        fhi *= 0.5;
      kept = -1;
    } else {
      hi = mid, fhi = f;
      if (kept == 1)
        flo *= 0.5;
      kept = 1;
    }
  }
  out->hazard_load = lo;
}

const char *ms_cli_every(char *buf, size_t len, double seconds) {
  char t[32];
  ms_cli_human_time(t, sizeof t, seconds);
  if (seconds >= MS_TIME_TO_STORM_NEVER)
    snprintf(buf, len, "never");
  else if (strncmp(t, "over ", 5) == 0)
    snprintf(buf, len, "less than once in %s", t + 5);
  else
    snprintf(buf, len, "about once every %s", t);
  return buf;
}

const char *ms_cli_hazard_phrase(char *buf, size_t len, double hazard,
                                 double horizon) {
  char t[32];
  ms_cli_human_time(t, sizeof t, horizon);
  char p[32];
  snprintf(p, sizeof p, "%.6g", 100 * hazard);
  if (hazard > 0.999 && hazard < 1 && strcmp(p, "100") == 0)
    snprintf(buf, len, "over 99.9999 %% within %s", t);
  else if (hazard > 0.999 && hazard < 1)
    snprintf(buf, len, "%s %% within %s", p, t); /* not "over 99.9 %": a
                                                  * target reads "under" it */
  else
    snprintf(buf, len, "%.3g %% within %s", 100 * hazard, t);
  return buf;
}

const char *ms_cli_human_time(char *buf, size_t len, double seconds) {
  static const struct {
    double unit, below; /* seconds in the unit; used below that many s */
    const char *one, *many;
  } units[] = {
      {1.0, 90.0, "s", "s"},
      {60.0, 3600.0, "min", "min"},
      {3600.0, 36.0 * 3600.0, "hour", "hours"},
      {86400.0, 14.0 * 86400.0, "day", "days"},
      {7.0 * 86400.0, 365.25 * 86400.0, "week", "weeks"},
      {365.25 * 86400.0, 9999.5 * 365.25 * 86400.0, "year", "years"},
  };
  if (seconds >= MS_TIME_TO_STORM_NEVER) {
    snprintf(buf, len, "never");
    return buf;
  }
  for (size_t i = 0; i < N_OF(units); i++) {
    if (!(seconds < units[i].below))
      continue;
    double v = seconds / units[i].unit;
    char num[32];
    /* two significant digits, without an exponent: 0.25, 2.5, 45, 120 */
    if (v < 1)
      snprintf(num, sizeof num, "%.2g", v);
    else if (v < 10)
      snprintf(num, sizeof num, "%.1f", v);
    else {
      double step = pow(10.0, floor(log10(v)) - 1);
      snprintf(num, sizeof num, "%.0f", round(v / step) * step);
    }
    /* 2.0 is 2 */
    size_t n = strlen(num);
    if (n > 2 && strcmp(num + n - 2, ".0") == 0)
      num[n - 2] = '\0';
    snprintf(buf, len, "%s %s", num,
             strcmp(num, "1") == 0 ? units[i].one : units[i].many);
    return buf;
  }
  snprintf(buf, len, "over 10000 years");
  return buf;
}

/* The field of a named policy whose service-file key ends in `name`
 * ("throttling_share"), or -1. */
static int policy_field_named(const ms_param *field, int n, const char *name,
                              size_t len) {
  for (int i = 0; i < n; i++) {
    const char *key = ms_param_get(field[i])->key;
    const char *dot = strchr(key, '.');
    key = dot ? dot + 1 : key;
    if (strlen(key) == len && strncmp(key, name, len) == 0)
      return i;
  }
  return -1;
}

/* The AWS quota's set of costs in `part` ("legacy"): 0 and m->aws_costs
 * set, or an exit code. */
static int aws_costs_parse(ms_cli_model *m, const policy_option *o,
                           const char *part) {
  int costs = ms_aws_costs_find(part);
  if (costs < 0)
    return ms_cli_usage("%s (costs): '%s' is neither %s nor %s", o->name, part,
                        ms_aws_costs_name(MS_AWS_COSTS_CURRENT),
                        ms_aws_costs_name(MS_AWS_COSTS_LEGACY));
  m->aws_costs = costs;
  return 0;
}

/* NAME A:B:...: each field by its parameter's rule; "default" or an empty
 * field leaves the default.  A field KEY=VALUE sets the field of that
 * service-file key wherever it stands; the AWS quota's first field may
 * name its set of costs ("legacy", or costs=legacy). */
static int policy_option_parse(ms_cli_model *m, const policy_option *o,
                               const char *arg) {
  int n;
  const ms_param *field = ms_policy_params(o->kind, &n);
  bool aws = o->kind == MS_POLICY_AWS;
  if (m->policy != MS_POLICY_COUNT && m->policy != o->kind)
    return ms_cli_usage("%s: give one retry policy (%s was given)", o->name,
                        ms_policy_name(m->policy));
  for (int i = 0; i < n; i++)
    m->field_given[field[i]] = false;
  m->aws_costs = -1;
  bool all_default = strcmp(arg, "default") == 0;
  const char *s = arg;
  int i = 0, nth = 0;
  while (!all_default && *s != '\0') {
    size_t len = strcspn(s, ":");
    char part[64], name[96];
    if (len >= sizeof part)
      return ms_cli_usage("%s: '%s' is too long", o->name, arg);
    memcpy(part, s, len);
    part[len] = '\0';
    const char *eq = strchr(part, '=');
    int j = i, r = 0;
    if (eq != NULL && aws && (size_t)(eq - part) == 5 &&
        strncmp(part, "costs", 5) == 0) {
      r = aws_costs_parse(m, o, eq + 1);
      j = -2;
    } else if (eq != NULL) {
      j = policy_field_named(field, n, part, (size_t)(eq - part));
      if (j < 0)
        return ms_cli_usage("%s: no field '%.*s' (%s)", o->name,
                            (int)(eq - part), part, o->arg);
    } else if (aws && nth == 0 && ms_aws_costs_find(part) >= 0) {
      r = aws_costs_parse(m, o, part);
      j = -2;
    } else if (i == n) {
      return ms_cli_usage("%s takes %s: '%s' has more fields", o->name, o->arg,
                          arg);
    }
    if (r != 0)
      return r;
    const char *val = eq != NULL ? eq + 1 : part;
    if (j >= 0 && *val != '\0') {
      snprintf(name, sizeof name, "%s (%s)", o->name,
               ms_param_get(field[j])->key);
      r = ms_cli_param(name, val, field[j], &m->value[field[j]]);
      if (r != 0)
        return r;
      m->field_given[field[j]] = true;
    }
    if (eq == NULL && j >= 0)
      i++;
    nth++;
    if (s[len] == '\0')
      break;
    s += len + 1;
  }
  for (int j = 0; j < o->required; j++)
    if (!m->field_given[field[j]])
      return ms_cli_usage("%s needs %s (no default: gRFC A6 has none)", o->name,
                          o->arg);
  m->policy = o->kind;
  return 0;
}

/* The model option of a getopt value, or NULL. */
static const model_option *model_option_of(int opt) {
  for (size_t i = 0; i < N_MODEL_OPTIONS; i++)
    if (model_options[i].opt == opt)
      return &model_options[i];
  return NULL;
}

#define GIVEN(m, opt) ((m)->given[(opt)-MS_OPT_MODEL])

void ms_cli_model_init(ms_cli_model *m) {
  memset(m, 0, sizeof *m);
  m->aws_costs = -1;
}

void ms_cli_model_free(ms_cli_model *m) {
  ms_service_file_free(&m->file);
  m->spec = NULL;
}

int ms_cli_with_model(int (*run)(ms_cli_model *m, int argc, char **argv),
                      int argc, char **argv) {
  ms_cli_model m;
  ms_cli_model_init(&m);
  int rc = run(&m, argc, argv);
  ms_cli_model_free(&m);
  return rc;
}

void ms_cli_json_begin(ms_json *j, int pretty_depth, const ms_cli_model *m) {
  ms_json_init(j, stdout, pretty_depth);
  ms_json_begin_object(j, NULL);
  if (m->name[0])
    ms_json_string(j, "service", m->name);
  else
    ms_json_null(j, "service");
  /* what the erlang model's timeout times (doc/design.md §1.1) */
  if (m->params.model.kind == MS_MODEL_ERLANG)
    ms_json_string(j, "timeout_covers",
                   ms_timeout_covers_name(m->params.model.timeout_covers));
}

int ms_cli_model_option(ms_cli_model *m, int opt, const char *arg) {
  if (opt < MS_OPT_MODEL || opt >= MS_OPT_MODEL_END)
    return -1;
  int r = 0, choice;
  static const char *const models[] = {"capacity", "erlang", NULL};
  const model_option *o = model_option_of(opt);
  if (opt == MS_OPT_TIMEOUT && arg != NULL && strstr(arg, "..") != NULL) {
    char why[300];
    r = ms_parse_timeout_range(arg, &m->value[MS_PARAM_TIMEOUT],
                               &m->timeout_spread, why, sizeof why) != 0
            ? ms_cli_usage("--timeout: %s", why)
            : 0;
  } else if (o != NULL) {
    r = ms_cli_param(o->name, arg, o->param, &m->value[o->param]);
    if (opt == MS_OPT_TIMEOUT)
      m->timeout_spread = 0.0; /* the later --timeout wins */
  } else if (opt == MS_OPT_MODEL) {
    r = ms_cli_choice("--model", arg, models, &choice);
    m->kind = choice == 1 ? MS_MODEL_ERLANG : MS_MODEL_CAPACITY;
  } else if (opt == MS_OPT_LAYERING) {
    static const char *const layerings[] = {"independent", "nested", NULL};
    r = ms_cli_choice("--layering", arg, layerings, &choice);
    m->layering = choice == 1 ? MS_LAYERING_NESTED : MS_LAYERING_INDEPENDENT;
  } else if (opt >= MS_OPT_GRPC_THROTTLING && opt <= MS_OPT_AWS_RETRY_QUOTA) {
    for (size_t i = 0; i < N_POLICY_OPTIONS; i++)
      if (policy_options[i].opt == opt)
        r = policy_option_parse(m, &policy_options[i], arg);
  } else if (opt == MS_OPT_LATENCY_OBJECTIVE) {
    r = ms_cli_duration("--latency-objective", arg, 0.0, MS_MAX_DURATION,
                        MS_BOUND_LO_OPEN | MS_BOUND_LIMIT,
                        &m->latency_objective);
  } else if (opt == MS_OPT_RETRY_REJECTIONS) {
    static const char *const flags[] = {"false", "true", NULL};
    r = ms_cli_choice("--retry-rejections", arg, flags, &choice);
    m->retry_rejections = choice == 1;
  } else if (opt == MS_OPT_NO_RETRY_REJECTIONS) {
    m->retry_rejections = false;
    GIVEN(m, MS_OPT_RETRY_REJECTIONS) = true;
  } else if (opt == MS_OPT_TIMEOUT_COVERS) {
    static const char *const covers[] = {"wait", "response", NULL};
    r = ms_cli_choice("--timeout-covers", arg, covers, &choice);
    m->timeout_covers =
        choice == 1 ? MS_TIMEOUT_COVERS_RESPONSE : MS_TIMEOUT_COVERS_WAIT;
  } else if (opt == MS_OPT_SPEC) {
    m->spec_path = arg;
  } else if (opt == MS_OPT_SERVICE) {
    m->service_name = arg;
  } else {
    return -1;
  }
  if (r == 0)
    GIVEN(m, opt) = true;
  return r;
}

/* The first erlang-only option given, or NULL. */
static const char *erlang_option_given(const ms_cli_model *m) {
  static const int erlang_ids[] = {MS_OPT_SERVERS,
                                   MS_OPT_SERVICE_TIME,
                                   MS_OPT_SERVICE_RATE,
                                   MS_OPT_TIMEOUT,
                                   MS_OPT_SERVICE_TIME_CV,
                                   MS_OPT_QUEUE_LIMIT,
                                   MS_OPT_LATENCY_OBJECTIVE,
                                   MS_OPT_RETRY_REJECTIONS,
                                   MS_OPT_TIMEOUT_GRANULARITY,
                                   MS_OPT_TIMEOUT_COVERS};
  static const char *const names[] = {NULL,
                                      NULL,
                                      NULL,
                                      NULL,
                                      NULL,
                                      NULL,
                                      "--latency-objective",
                                      "--retry-rejections",
                                      NULL,
                                      "--timeout-covers"};
  for (size_t i = 0; i < sizeof erlang_ids / sizeof erlang_ids[0]; i++)
    if (GIVEN(m, erlang_ids[i]))
      return names[i] ? names[i] : model_option_of(erlang_ids[i])->name;
  return NULL;
}

static void list_services(const ms_service_file *f, char *buf, size_t len) {
  buf[0] = '\0';
  for (size_t i = 0; i < f->n_services; i++) {
    size_t n = strlen(buf);
    if (i == 8) {
      snprintf(buf + n, len - n, ", ... (%zu in all)", f->n_services);
      return;
    }
    snprintf(buf + n, len - n, "%s%s", i ? ", " : "", f->services[i].name);
  }
}

/* Load --spec and take the service --service names (the only one when the
 * file has one) into m->spec and *p.  Returns 0 or an exit code. */
static int take_spec(ms_cli_model *m, ms_service_params *p) {
  char err[512];
  if (ms_service_file_load(m->spec_path, &m->file, err, sizeof err) != 0)
    return ms_cli_fail("%s", err);
  char names[400];
  list_services(&m->file, names, sizeof names);
  if (m->service_name) {
    m->spec = ms_service_file_find(&m->file, m->service_name);
    if (m->spec == NULL)
      return ms_cli_usage("--service: %s has no service '%s' (it has: %s)",
                          m->spec_path, m->service_name, names);
  } else if (m->file.n_services == 1) {
    m->spec = &m->file.services[0];
  } else {
    return ms_cli_usage("%s has %zu services (%s): choose one with "
                        "--service NAME",
                        m->spec_path, m->file.n_services, names);
  }
  *p = m->spec->params;
  snprintf(m->name, sizeof m->name, "%s", m->spec->name);
  return 0;
}

/* Decide p->model.kind from --model, the file and the options given;
 * switching a file's service to the other model keeps its base failure and
 * policy only (*from_file and *file_servers become false).  Returns 0 or an
 * exit code. */
static int resolve_kind(const ms_cli_model *m, ms_service_params *p,
                        bool *from_file, bool *file_servers) {
  const char *erl = erlang_option_given(m);
  bool cap = GIVEN(m, MS_OPT_CAPACITY);
  if (GIVEN(m, MS_OPT_MODEL)) {
    if (m->spec != NULL && m->kind != p->model.kind) {
      double base = p->model.base_failure;
      memset(&p->model, 0, sizeof p->model);
      p->model.base_failure = base;
      *from_file = *file_servers = false;
    }
    p->model.kind = m->kind;
  } else if (m->spec == NULL) {
    if (erl && cap)
      return ms_cli_usage("%s belongs to the erlang model and --capacity to "
                          "the capacity model: give one model's options",
                          erl);
    if (!erl && !cap)
      return ms_cli_usage(
          "no model: give --model erlang (--servers, --service-time, "
          "--timeout) or --model capacity (--capacity), or --spec FILE");
    p->model.kind = erl ? MS_MODEL_ERLANG : MS_MODEL_CAPACITY;
  }
  bool erlang = p->model.kind == MS_MODEL_ERLANG;
  const char *svc = m->spec ? m->spec->name : NULL;
  if (erlang && cap)
    return ms_cli_usage("--capacity applies to the capacity model, and the "
                        "model is erlang%s%s%s",
                        svc ? " (service '" : "", svc ? svc : "",
                        svc ? "')" : "");
  if (!erlang && erl)
    return ms_cli_usage("%s applies to the erlang model, and the model is "
                        "capacity%s%s%s",
                        erl, svc ? " (service '" : "", svc ? svc : "",
                        svc ? "')" : "");
  if (GIVEN(m, MS_OPT_SERVICE_TIME) && GIVEN(m, MS_OPT_SERVICE_RATE))
    return ms_cli_usage("give --service-time or --service-rate, not both");
  return 0;
}

/* The queue limit: --queue-limit K, else --latency-objective S as K =
 * round(c mu S) (the queue a pool empties within S), else the file's; and
 * whether rejections are retried.  Returns 0 or an exit code. */
static int resolve_queue_limit(const ms_cli_model *m, ms_failure_model *fm) {
  if (GIVEN(m, MS_OPT_QUEUE_LIMIT)) {
    fm->has_queue_limit = true;
    fm->queue_limit = (long)m->value[MS_PARAM_QUEUE_LIMIT];
  } else if (GIVEN(m, MS_OPT_LATENCY_OBJECTIVE)) {
    double k =
        round((double)fm->servers * fm->service_rate * m->latency_objective);
    if (!(k <= (double)MS_MAX_QUEUE_LIMIT))
      return ms_cli_usage("--latency-objective %g s gives a queue limit of "
                          "%.4g, above %ld: give --queue-limit K",
                          m->latency_objective, k, MS_MAX_QUEUE_LIMIT);
    fm->has_queue_limit = true;
    fm->queue_limit = (long)k;
  }
  if (GIVEN(m, MS_OPT_RETRY_REJECTIONS))
    fm->rejections_final = !m->retry_rejections;
  return 0;
}

/* The erlang model's pool, service rate and timeout from the options, else
 * the file.  Returns 0 or an exit code. */
static int resolve_erlang(const ms_cli_model *m, ms_failure_model *fm,
                          bool need_servers, bool from_file,
                          bool file_servers) {
  const char *svc = m->spec ? m->spec->name : NULL;
  if (GIVEN(m, MS_OPT_SERVERS))
    fm->servers = (long)m->value[MS_PARAM_SERVERS];
  else if (!file_servers) {
    if (need_servers && svc)
      return ms_cli_usage("service '%s' takes its pool size from its "
                          "pool_size input: give --servers N",
                          svc);
    if (need_servers)
      return ms_cli_usage("the erlang model needs --servers N");
    fm->servers = 1; /* until a pool_size input says otherwise */
  }
  if (GIVEN(m, MS_OPT_SERVICE_TIME))
    fm->service_rate = 1.0 / m->value[MS_PARAM_SERVICE_TIME];
  else if (GIVEN(m, MS_OPT_SERVICE_RATE))
    fm->service_rate = m->value[MS_PARAM_SERVICE_RATE];
  else if (!from_file)
    return ms_cli_usage("the erlang model needs --service-time S or "
                        "--service-rate MU");
  if (GIVEN(m, MS_OPT_TIMEOUT)) {
    fm->timeout = m->value[MS_PARAM_TIMEOUT];
    fm->timeout_spread = m->timeout_spread;
  } else if (!from_file)
    return ms_cli_usage("the erlang model needs --timeout T (the client "
                        "timeout, seconds)");
  if (GIVEN(m, MS_OPT_TIMEOUT_GRANULARITY)) {
    if (GIVEN(m, MS_OPT_TIMEOUT) && m->timeout_spread > 0.0)
      return ms_cli_usage("give --timeout MIN..MAX or --timeout-granularity, "
                          "not both");
    fm->timeout_spread = m->value[MS_PARAM_TIMEOUT_GRANULARITY];
  }
  if (GIVEN(m, MS_OPT_SERVICE_TIME_CV)) {
    fm->has_service_time_cv = true;
    fm->service_time_cv = m->value[MS_PARAM_SERVICE_TIME_CV];
  }
  if (GIVEN(m, MS_OPT_TIMEOUT_COVERS))
    fm->timeout_covers = m->timeout_covers;
  else if (!from_file)
    fm->timeout_covers = MS_TIMEOUT_COVERS_DEFAULT;
  return resolve_queue_limit(m, fm);
}

/* The base failure and the retry policy from the options, over the file's.
 * Returns 0 or an exit code. */
static int resolve_policy(const ms_cli_model *m, ms_service_params *p) {
  ms_retry_policy *pol = &p->policy;
  if (GIVEN(m, MS_OPT_BASE_FAILURE))
    p->model.base_failure = m->value[MS_PARAM_BASE_FAILURE];
  if (GIVEN(m, MS_OPT_RETRIES))
    pol->retries = (int)m->value[MS_PARAM_RETRIES];
  else if (!m->spec)
    return ms_cli_usage("give --retries R, the retries per request (0 for "
                        "none)");
  if (GIVEN(m, MS_OPT_TIERS))
    pol->tiers = (int)m->value[MS_PARAM_TIERS];
  if (GIVEN(m, MS_OPT_RETRY_BUDGET)) {
    pol->has_budget = true;
    pol->retry_budget = m->value[MS_PARAM_RETRY_BUDGET];
  }
  if (GIVEN(m, MS_OPT_TOKEN_RATIO)) {
    pol->has_token = true;
    pol->token_ratio = m->value[MS_PARAM_TOKEN_RATIO];
  }
  if (m->policy != MS_POLICY_COUNT) {
    /* the option's policy replaces the file's named policy */
    if (pol->kind != m->policy)
      ms_policy_defaults(pol, m->policy);
    if (m->policy == MS_POLICY_AWS && m->aws_costs >= 0)
      ms_aws_costs_defaults(pol, (ms_aws_costs)m->aws_costs);
    int n;
    const ms_param *field = ms_policy_params(m->policy, &n);
    for (int i = 0; i < n; i++)
      if (m->field_given[field[i]])
        *ms_policy_field(pol, field[i]) = m->value[field[i]];
  }
  if (GIVEN(m, MS_OPT_LAYERING)) {
    pol->nested = m->layering == MS_LAYERING_NESTED
                      ? ((1u << pol->tiers) - 1u) & ~1u
                      : 0u;
  } else if (GIVEN(m, MS_OPT_TIERS) && pol->nested != 0) {
    /* a new tier count keeps the file's layering, uniformly */
    pol->nested = ((1u << pol->tiers) - 1u) & ~1u;
  }
  if (GIVEN(m, MS_OPT_TIERS) || GIVEN(m, MS_OPT_RETRIES))
    pol->has_tier_retries = false; /* the options describe uniform tiers */
  return 0;
}

int ms_cli_model_resolve(ms_cli_model *m, bool need_servers) {
  ms_service_params p;
  memset(&p, 0, sizeof p);
  p.policy.tiers = 1;
  bool from_file = false, file_servers = false;
  int r;
  m->name[0] = '\0';
  if (m->spec_path) {
    if ((r = take_spec(m, &p)) != 0)
      return r;
    from_file = true;
    file_servers = m->spec->has_servers;
  } else if (m->service_name) {
    return ms_cli_usage("--service needs --spec FILE");
  }
  if ((r = resolve_kind(m, &p, &from_file, &file_servers)) != 0)
    return r;
  bool erlang = p.model.kind == MS_MODEL_ERLANG;
  if (erlang) {
    r = resolve_erlang(m, &p.model, need_servers, from_file, file_servers);
  } else if (GIVEN(m, MS_OPT_CAPACITY)) {
    p.model.capacity = m->value[MS_PARAM_CAPACITY];
  } else if (!from_file) {
    r = ms_cli_usage("the capacity model needs --capacity C (requests/s)");
  }
  if (r != 0 || (r = resolve_policy(m, &p)) != 0)
    return r;
  ms_error err;
  if (ms_service_params_check(&p, &err) != MS_OK)
    return ms_cli_usage("%s", err.msg);
  warn_bare(m, &p);
  m->params = p;
  ms_cli_describe(
      &p, erlang && (need_servers || GIVEN(m, MS_OPT_SERVERS) || file_servers),
      m->summary, sizeof m->summary);
  snprintf(m->label, sizeof m->label, "%s%s%s", m->name, m->name[0] ? ": " : "",
           m->summary);
  return 0;
}

int ms_cli_model_landscape(ms_cli_model *m, ms_landscape *ls) {
  int r = ms_cli_model_resolve(m, true);
  if (r != 0)
    return r;
  ms_error err;
  if (ms_landscape_build(&m->params, ls, &err) != MS_OK)
    return ms_cli_fail("model: %s", err.msg);
  return 0;
}

/* A duration for people: 100 ms, 250 us, 1.5 s. */
static void fmt_duration(char *buf, size_t len, double s) {
  if (s == 0)
    snprintf(buf, len, "0 s");
  else if (s < 1e-3)
    snprintf(buf, len, "%.4g us", s * 1e6);
  else if (s < 1)
    snprintf(buf, len, "%.4g ms", s * 1e3);
  else
    snprintf(buf, len, "%.4g s", s);
}

/* A count or rate for people: from 10000 on, 1M, 2.5M, 10k when that is
 * exact in at most four digits; else the plain number (1234567, 0.95). */
static void fmt_quantity(char *buf, size_t len, double v) {
  static const char suffix[] = "kMGT";
  if (fabs(v) >= 1e4 && fabs(v) < 1e16) {
    int k = (int)fmin(floor(log10(fabs(v)) / 3), 4);
    double unit = pow(1e3, k);
    char t[32];
    snprintf(t, sizeof t, "%.4g", v / unit);
    if (strtod(t, NULL) * unit == v) {
      snprintf(buf, len, "%.16s%c", t, suffix[k - 1]);
      return;
    }
  }
  snprintf(buf, len, "%.10g", v);
}

const char *ms_cli_describe(const ms_service_params *p, bool with_servers,
                            char *buf, size_t len) {
  const ms_failure_model *m = &p->model;
  const ms_retry_policy *q = &p->policy;
  size_t n = 0;
  char share[32];
#define ADD(...)                                                               \
  do {                                                                         \
    if (n < len)                                                               \
      n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__);                    \
  } while (0)
  if (m->kind == MS_MODEL_ERLANG) {
    char st[32], to[32];
    fmt_duration(st, sizeof st, 1.0 / m->service_rate);
    fmt_duration(to, sizeof to, m->timeout);
    ADD("erlang model: ");
    char sv[32];
    fmt_quantity(sv, sizeof sv, (double)m->servers);
    if (with_servers)
      ADD("%s server%s, ", sv, m->servers == 1 ? "" : "s");
    else
      ADD("servers from pool_size, ");
    ADD("service time %s", st);
    if (m->has_service_time_cv)
      ADD(" (cv %.4g)", m->service_time_cv);
    if (m->timeout_spread > 0.0) {
      char hi[32];
      fmt_duration(hi, sizeof hi, m->timeout + m->timeout_spread);
      ADD(", timeout %s to %s", to, hi);
    } else {
      ADD(", timeout %s", to);
    }
    /* what the timeout times, said when it is not the default */
    if (m->timeout_covers != MS_TIMEOUT_COVERS_DEFAULT)
      ADD(" on the %s", ms_timeout_covers_name(m->timeout_covers));
    if (m->has_queue_limit)
      ADD(", queue limit %ld%s", m->queue_limit,
          m->rejections_final ? " (rejections final)" : "");
  } else {
    char cap[32];
    fmt_quantity(cap, sizeof cap, m->capacity);
    ADD("capacity model: capacity %s req/s", cap);
  }
  if (m->base_failure > 0)
    ADD(", base failure %s",
        ms_format_share(share, sizeof share, m->base_failure, 4));
  ADD(", %d retr%s", q->retries, q->retries == 1 ? "y" : "ies");
  if (q->has_tier_retries) {
    ADD(" at the dependency, then");
    for (int i = 1; i < q->tiers; i++)
      ADD("%s %d", i > 1 ? "," : "", ms_policy_tier_retries(q, i));
    ADD(" in the tiers above");
  } else if (q->tiers > 1) {
    ADD(" x %d tiers", q->tiers);
  }
  if (q->tiers > 1) {
    unsigned all = ((1u << q->tiers) - 1u) & ~1u;
    if (q->nested != 0) /* independent, A^k, says nothing: the default */
      ADD(q->nested == all ? ", nested" : ", partly nested");
  }
  switch (q->kind) {
  case MS_POLICY_GRPC:
    ADD(", gRPC throttling %g tokens, ratio %g", q->grpc_max_tokens,
        q->grpc_token_ratio);
    break;
  case MS_POLICY_ENVOY:
    ADD(", Envoy retry budget %s, min %g concurrent",
        ms_format_share(share, sizeof share, q->envoy_budget, 4),
        q->envoy_min_concurrency);
    break;
  case MS_POLICY_FINAGLE:
    ADD(", Finagle retry budget %s + %g/s, ttl %g s",
        ms_format_share(share, sizeof share, q->finagle_percent, 4),
        q->finagle_min_per_second, q->finagle_ttl);
    break;
  case MS_POLICY_AWS:
    ADD(", AWS retry quota %g tokens, cost %g (timeout %g, throttling %g, "
        "%g%% of the errors), refund %g",
        q->aws_capacity, q->aws_retry_cost, q->aws_timeout_cost,
        q->aws_throttling_cost, 100.0 * q->aws_throttling_share, q->aws_refund);
    break;
  case MS_POLICY_COUNT:
    break;
  }
  if (q->has_budget)
    ADD(", retry budget %s",
        ms_format_share(share, sizeof share, q->retry_budget, 4));
  if (q->has_token)
    ADD(", token ratio %.4g", q->token_ratio);
#undef ADD
  return buf;
}

/* ---- output ---------------------------------------------------------- */

void ms_cli_csv_field(FILE *f, const char *text) {
  if (text[strcspn(text, ",\"\r\n")] == '\0') {
    fputs(text, f);
    return;
  }
  fputc('"', f);
  for (const char *c = text; *c; c++) {
    if (*c == '"')
      fputc('"', f);
    fputc(*c, f);
  }
  fputc('"', f);
}

int ms_cli_finish_output(int code) {
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    int e = errno;
    return ms_cli_fail("cannot write the results: %s",
                       e ? strerror(e) : "write error");
  }
  return code;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ms_cli_progress_start(ms_cli_progress *p, const char *what, size_t total) {
  p->on = isatty(STDERR_FILENO) == 1;
  p->what = what;
  p->total = total;
  p->next_draw = p->on ? now_seconds() + 0.5 : 0;
}

void ms_cli_progress_update(ms_cli_progress *p, size_t done) {
  if (!p->on)
    return;
  double t = now_seconds();
  if (t < p->next_draw)
    return;
  p->next_draw = t + 0.2;
  if (p->total)
    fprintf(stderr, "\r%s: %zu/%zu (%.0f %%) ", p->what, done, p->total,
            100.0 * (double)done / (double)p->total);
  else
    fprintf(stderr, "\r%s: %zu ", p->what, done);
  fflush(stderr);
}

void ms_cli_progress_end(ms_cli_progress *p) {
  if (p->on)
    fputs("\r\033[K", stderr);
  p->on = false;
}

void ms_cli_model_service(const ms_cli_model *m, ms_service_spec *spec) {
  *spec = *m->spec;
  spec->params = m->params;
  if (m->given[MS_OPT_SERVERS - MS_OPT_MODEL] &&
      spec->inputs[MS_INPUT_POOL].kind != MS_SOURCE_NONE) {
    spec->inputs[MS_INPUT_POOL].kind = MS_SOURCE_NONE;
    spec->has_servers = true;
  }
}

const char *ms_cli_retrial_unlike(const ms_service_params *s) {
  const ms_failure_model *fm = &s->model;
  if (s->policy.tiers != 1)
    return "more than one tier";
  if (s->policy.kind != MS_POLICY_COUNT || s->policy.has_budget ||
      s->policy.has_token)
    return "a retry budget or quota";
  if (fm->has_service_time_cv && fm->service_time_cv != 1.0)
    return "a service_time_cv";
  return NULL;
}
