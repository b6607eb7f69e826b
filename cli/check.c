/* SPDX-License-Identifier: MIT */
/*
 * metastable check: a service file validated exactly as the plugin loads
 * it (ms_service_file_load: the same parser, the same parameter rules of
 * MS_PARAMS, the same landscape solved once per service), then summarised
 * per service with the tipping and recovery loads at the configured
 * values (doc/design.md §1.3), and the warnings of what loads but cannot
 * work as meant: a service time longer than the timeout, a timeout so
 * long that the wait tail underflows, a bare duration that looks like
 * milliseconds (ms_service_unit_warnings), inputs that give no
 * observation, an offered load that only constants give.  With
 * --collectd, each identifier and glob input is looked up in a running
 * collectd through its unixsock plugin (cli/collectdsock.h): found with
 * its value, or missing (a warning) with the identifiers near it.  The
 * word of the first line matches the exit status: "valid", "valid, N
 * warnings", or under --strict "not valid, N warnings (--strict)" with
 * exit status 1.
 */
#define _GNU_SOURCE /* vasprintf */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectdsock.h"
#include "common.h"
#include "json.h"

static const char usage[] =
    "Usage: metastable check [--strict] [--shards N] [--format text|json] "
    "FILE\n"
    "       metastable check --collectd SOCKET [--timeout T] [--strict]\n"
    "                        [--format text|json] FILE\n"
    "\n"
    "Validate a service file as the plugin does, and summarise each service:\n"
    "its model and parameters, its tipping and recovery loads, and which\n"
    "inputs give its offered load and its observations.  An invalid file is\n"
    "an error \"FILE:LINE:COLUMN: what\" (exit 1).  Warnings, printed as\n"
    "\"FILE:LINE:COLUMN: warning: what\" on stderr, name what loads but\n"
    "cannot work as meant: a service time longer than the timeout, a timeout\n"
    "so long that the wait tail underflows, a duration written without a\n"
    "unit that reads as seconds but looks like milliseconds (timeout: 500\n"
    "beside service_time: 100ms), inputs that give no observation (the storm\n"
    "flag then comes from the model alone), an offered load that only\n"
    "constants give.  The word after the services matches the exit\n"
    "status: \"valid\" or \"valid, N warnings\" (exit 0); with --strict a\n"
    "warning makes the file \"not valid\" (exit 1).  With --collectd, each\n"
    "identifier and glob input is looked up in a running collectd through\n"
    "its unixsock plugin: found, with its current value, or missing (a\n"
    "warning), with the identifiers collectd holds that are near it.\n";

enum { OPT_STRICT = MS_OPT_SHARED_END, OPT_SHARDS, OPT_COLLECTD, OPT_TIMEOUT };

static const ms_cli_option options[] = {
    {"--strict", NULL, OPT_STRICT, "exit 1 when there is a warning"},
    {"--shards", "N", OPT_SHARDS,
     "each service's shard among N aggregators (Shard \"K/N\" of the plugin, "
     "1 <= N <= 1024) and the services per shard: in text instead of the "
     "summaries; in JSON \"shard\" in each service and \"shards\""},
    {"--collectd", "SOCKET", OPT_COLLECTD,
     "look each identifier and glob input up in the collectd whose unixsock "
     "plugin listens on SOCKET (its SocketFile): found with its value, or "
     "missing (a warning) with the nearest identifiers collectd holds"},
    {"--timeout", "T", OPT_TIMEOUT,
     "with --collectd: the longest wait for each answer of collectd, a "
     "duration in (0, 1h] (default 5s)"},
    {"--format", "text|json", MS_OPT_FORMAT,
     "text (default) or one JSON object with the file, its services and the "
     "warnings"},
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

/* From c mu T on (the requests the pool completes in one timeout) the wait
 * tail P(W > T) <= e^(-(c mu - x) T) is 0 in double precision (below
 * e^-744.44, the smallest subnormal) for every effective load x below
 * (1 - 744.44 / (c mu T)) c mu, above 99.9999999 % of c mu here: the
 * timeout is invisible but in a sliver at saturation, and the model is, to
 * 10 digits, the one without a timeout.  A thousandth of the model's limit
 * MS_MAX_TIMEOUT_COMPLETIONS, past which it refuses the service. */
#define WARN_TIMEOUT_COMPLETIONS 1e12
/* -ln of the smallest positive double, 2^-1074. */
#define LN_SMALLEST_DOUBLE 744.44007192138126

/* One warning, where it points. */
typedef struct {
  int line, column;
  char *text; /* malloc'd; NULL when out of memory */
} warning;

#define MAX_WARNINGS_PER_SERVICE 16

/* One identifier an input found in collectd (--collectd). */
typedef struct {
  char *name;
  int n_ds;     /* its data sources (GETVAL); the plugin needs 1 */
  double value; /* the first one's value; NaN: no rate yet */
} probe_match;

/* What collectd holds of one identifier or glob input (--collectd). */
#define MAX_SUGGESTIONS 3
typedef struct {
  bool probed;    /* looked up */
  size_t n;       /* identifiers found: 0 or 1 for an identifier */
  probe_match *m; /* the n found, by name */
  size_t usable;  /* those of one data source with a rate */
  double sum;     /* their sum, as read (before scale) */
  size_t n_suggest;
  char *suggest[MAX_SUGGESTIONS]; /* did you mean, nearest first */
} input_probe;

/* What check says of one service. */
typedef struct {
  const ms_service_spec *sp;
  ms_landscape ls;
  char summary[256];
  bool pool;            /* servers come from a pool_size input */
  long max_pool;        /* the largest pool the timeout rule accepts */
  const char *offered;  /* how the offered load is inferred */
  const char *attempts; /* how the observed attempts are, or NULL */
  const char *failure;  /* how the observed failure ratio is, or NULL */
  bool backlog;         /* queue_length read from collectd (erlang): a
                           backlog past the timeout horizon is evidence */
  bool evidence;        /* an observation read from collectd */
  int n_warnings;
  warning warnings[MAX_WARNINGS_PER_SERVICE];
  input_probe probe[MS_INPUT_COUNT]; /* --collectd */
} service_check;

typedef struct {
  bool strict;
  ms_cli_shared sh; /* --format */
  bool help;
  long shards;          /* --shards N; 0: not asked */
  const char *collectd; /* --collectd SOCKET, or NULL */
  double timeout;       /* --timeout, s; 0: not given */
} check_args;

static int take_option(void *args, int c, const char *arg) {
  check_args *a = args;
  switch (c) {
  case OPT_STRICT:
    a->strict = true;
    return 0;
  case OPT_SHARDS:
    return ms_cli_long("--shards", arg, 1, MS_SHARD_MAX, &a->shards);
  case OPT_COLLECTD:
    a->collectd = arg;
    return 0;
  case OPT_TIMEOUT:
    return ms_cli_duration("--timeout", arg, 0, 3600, MS_RANGE_LO_OPEN,
                           &a->timeout);
  default:
    return ms_cli_shared_option(&a->sh, c, arg);
  }
}

static void warn_at(service_check *s, int line, int column, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));

static void warn_at(service_check *s, int line, int column, const char *fmt,
                    ...) {
  if (s->n_warnings >= MAX_WARNINGS_PER_SERVICE)
    return;
  warning *w = &s->warnings[s->n_warnings++];
  w->line = line;
  w->column = column;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&w->text, fmt, ap) < 0)
    w->text = NULL;
  va_end(ap);
}

/* The text of a warning ("out of memory" when it could not be kept). */
static const char *warning_text(const warning *w) {
  return w->text ? w->text : "out of memory";
}

static bool configured(const ms_service_spec *sp, ms_input_id i) {
  return sp->inputs[i].kind != MS_SOURCE_NONE;
}

static bool from_collectd(const ms_service_spec *sp, ms_input_id i) {
  return ms_input_observed(sp, i);
}

/* Which inputs give the offered load and the observations, by the rules
 * of ms_infer (service/tracker.c), and the warnings about them. */
static void check_inputs(service_check *s) {
  const ms_service_spec *sp = s->sp;
  bool arr = configured(sp, MS_INPUT_ARRIVAL);
  bool off = configured(sp, MS_INPUT_OFFERED);
  bool ret = configured(sp, MS_INPUT_RETRY);
  bool err = configured(sp, MS_INPUT_ERROR);
  /* the loader has made sure one of the three applies */
  ms_input_id lam[2] = {MS_INPUT_OFFERED, MS_INPUT_COUNT};
  if (off) {
    s->offered = "offered_rate";
  } else if (ret) {
    s->offered = "arrival_rate - retry_rate";
    lam[0] = MS_INPUT_ARRIVAL;
    lam[1] = MS_INPUT_RETRY;
  } else {
    s->offered = "arrival_rate / A(error_rate / arrival_rate)";
    lam[0] = MS_INPUT_ARRIVAL;
    lam[1] = MS_INPUT_ERROR;
  }
  if (arr)
    s->attempts = "arrival_rate";
  else if (off && ret)
    s->attempts = "offered_rate + retry_rate";
  if (arr && err)
    s->failure = "error_rate / arrival_rate";
  /* the observations the plugin would have: ms_infer on an interval in
   * which every input read from collectd has a value */
  ms_inputs probe = {.interval = 1.0};
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    probe.has[i] = from_collectd(sp, (ms_input_id)i);
    probe.value[i] = 1.0;
  }
  ms_inference inf;
  ms_input_id bad;
  char why[256];
  bool inferred = ms_infer(sp, &probe, &inf, &bad, why, sizeof why) == 0;
  s->backlog = inferred && inf.has_queue_length &&
               isfinite(ms_timeout_horizon(&sp->params.model));
  s->evidence = inferred && (inf.has_observed_attempts ||
                             inf.has_observed_failure || s->backlog);
  if (!s->evidence)
    warn_at(s, sp->line, sp->column,
            "service '%s': %s, so the storm flag comes from the model "
            "alone (an observation needs arrival_rate, or offered_rate with "
            "retry_rate, or queue_length, read from collectd)",
            sp->name,
            s->attempts || s->failure
                ? "its observations come from constants only"
                : "its inputs give no observation");
  if (err && !arr) {
    const ms_source *e = &sp->inputs[MS_INPUT_ERROR];
    warn_at(s, e->line, e->column,
            "service '%s': error_rate is not used without arrival_rate (the "
            "failure ratio is error_rate / arrival_rate)",
            sp->name);
  }
  bool constant = true;
  for (int i = 0; i < 2; i++)
    if (lam[i] != MS_INPUT_COUNT && from_collectd(sp, lam[i]))
      constant = false;
  if (constant) {
    const ms_source *c = &sp->inputs[lam[0]];
    warn_at(s, c->line, c->column,
            "service '%s': the offered load (%s) comes only from constants: "
            "it never changes, nor does the verdict",
            sp->name, s->offered);
  }
}

/* The share of attempts failing on an idle pool above which a timeout on
 * the response is warned about: 5 %, a timeout under three exponential
 * service times. */
#define IDLE_FAILURE_WARNING 0.05

/* The erlang model's warnings: service time and timeout. */
static void check_erlang(service_check *s) {
  const ms_service_spec *sp = s->sp;
  const ms_failure_model *m = &sp->params.model;
  double mu = m->service_rate, T = m->timeout;
  s->max_pool = MS_MAX_SERVERS;
  double pool_limit = floor(MS_MAX_TIMEOUT_COMPLETIONS / (mu * T));
  if (T > 0 && pool_limit < (double)MS_MAX_SERVERS)
    s->max_pool = (long)pool_limit;
  /* the share an idle pool fails, the model's own (a timeout range
   * averaged, the service time's cv taken), without the base failure */
  ms_failure_model idle = *m;
  idle.base_failure = 0.0;
  double q_idle = 0.0, T_hi = ms_timeout_longest(m);
  char range[96] = "";
  if (T_hi > T)
    snprintf(range, sizeof range, " to %.6g s", T_hi);
  if (m->timeout_covers == MS_TIMEOUT_COVERS_RESPONSE &&
      ms_failure_probability(&idle, 0.0, &q_idle, NULL) == MS_OK &&
      q_idle >= IDLE_FAILURE_WARNING)
    warn_at(s, sp->line, sp->column,
            "service '%s': the timeout %.6g s%s is %.3g service times%s: it "
            "times the whole response (timeout_covers: response), so %.3g %% "
            "of attempts fail even on an idle pool (the service alone "
            "outlasts it)",
            sp->name, T, range, T * mu, T_hi > T ? " or more" : "",
            100.0 * q_idle);
  else if (m->timeout_covers == MS_TIMEOUT_COVERS_WAIT && 1.0 / mu > T)
    warn_at(s, sp->line, sp->column,
            "service '%s': the service time %.6g s is longer than the "
            "timeout %.6g s: with timeout_covers: wait the timeout covers "
            "the wait for a server only; a client whose timeout covers the "
            "whole response would fail most attempts even when idle",
            sp->name, 1.0 / mu, T);
  double span = (double)m->servers * mu * T;
  if (span >= WARN_TIMEOUT_COMPLETIONS)
    warn_at(s, sp->line, sp->column,
            "service '%s': timeout x servers x service rate = %.6g: the wait "
            "tail P(W > T) underflows to 0 below %.10g %% of servers x "
            "service rate%s, so the timeout fires only at saturation and the "
            "model is the one without a timeout (the model refuses more "
            "than %g)",
            sp->name, span, 100.0 * (1.0 - LN_SMALLEST_DOUBLE / span),
            s->pool && !sp->has_servers ? " (at 1 server)" : "",
            MS_MAX_TIMEOUT_COMPLETIONS);
  if (s->pool && s->max_pool < MS_MAX_SERVERS)
    warn_at(s, sp->inputs[MS_INPUT_POOL].line, sp->inputs[MS_INPUT_POOL].column,
            "service '%s': a pool_size above %ld servers gives no verdict: "
            "timeout x servers x service rate must be at most %g",
            sp->name, s->max_pool, MS_MAX_TIMEOUT_COMPLETIONS);
  /* A retried rejection is not an independent attempt: it comes while
   * the queue is still full, and rejected requests crowd the periods when
   * it is.  No closed form holds there (doc/design.md §1.9, measured up
   * to 41 % off the discrete-event engine); the engine is the answer. */
  /* With the clients' backoff, solve reports the retrial queue's
   * attempts (within 5 % of the engine on the grpc-js case): no warning,
   * unless the chain does not model the service. */
  const char *unlike = ms_cli_retrial_unlike(&sp->params);
  if (m->has_queue_limit && !m->rejections_final &&
      sp->params.policy.retries > 0 && sp->has_backoff && unlike != NULL)
    warn_at(s, sp->line, sp->column,
            "service '%s': rejected attempts are retried with a backoff, but "
            "the retrial queue that solve reports for them does not model "
            "%s: the attempts per request near the tipping load can be off "
            "by tens of percent; check with metastable simulate --engine des "
            "--seeds 20",
            sp->name, unlike);
  else if (m->has_queue_limit && !m->rejections_final &&
           sp->params.policy.retries > 0 && !sp->has_backoff)
    warn_at(s, sp->line, sp->column,
            "service '%s': rejected attempts are retried: the model counts "
            "every attempt as independent of the last, but a retry soon "
            "after a rejection finds the queue still full, and near the "
            "tipping load the attempts per request can be off by tens of "
            "percent; give the clients' backoff (key 'backoff') and solve "
            "reports the retrial queue's attempts, or check with metastable "
            "simulate --engine des --seeds 20 and the clients' --backoff",
            sp->name);
}

/* Build the landscape and collect the warnings of one service. */
static int check_service(const ms_service_spec *sp, service_check *s) {
  memset(s, 0, sizeof *s);
  s->sp = sp;
  bool erlang = sp->params.model.kind == MS_MODEL_ERLANG;
  s->pool = erlang && configured(sp, MS_INPUT_POOL);
  ms_error err;
  /* the loader solved it already: this cannot fail for a loaded file */
  if (ms_landscape_build(&sp->params, &s->ls, &err) != MS_OK)
    return ms_cli_fail("service '%s': model: %s", sp->name, err.msg);
  ms_cli_describe(&sp->params, erlang && (sp->has_servers || !s->pool),
                  s->summary, sizeof s->summary);
  if (erlang)
    check_erlang(s);
  ms_spec_warning units[2];
  int n = ms_service_unit_warnings(sp, units);
  for (int i = 0; i < n; i++)
    warn_at(s, units[i].line, units[i].column, "service '%s': %s", sp->name,
            units[i].text);
  check_inputs(s);
  return 0;
}

static const char *source_kind(ms_source_kind k) {
  switch (k) {
  case MS_SOURCE_NUMBER:
    return "constant";
  case MS_SOURCE_IDENTIFIER:
    return "identifier";
  case MS_SOURCE_GLOB:
    return "glob";
  case MS_SOURCE_NONE:
    break;
  }
  return "none";
}

/* ---- --collectd: the inputs looked up in a running collectd ------------ */

static double input_scale(const ms_source *src) {
  return src->scale > 0 ? src->scale : 1.0;
}

/* GETVAL name; when collectd has it, one more match of p.  0, or -1 with
 * err (the connection failed). */
static int probe_add(ms_collectd *c, const char *name, input_probe *p,
                     char *err, size_t errlen) {
  ms_collectd_values v;
  int r = ms_collectd_getval(c, name, &v, err, errlen);
  if (r <= 0) /* 0: not there (or gone since LISTVAL) */
    return r;
  probe_match *m = &p->m[p->n];
  if ((m->name = strdup(name)) == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  m->n_ds = v.n;
  m->value = v.n > 0 ? v.value[0] : NAN;
  p->n++;
  /* what the plugin sums: one data source with a finite rate */
  if (v.n == 1 && isfinite(v.value[0])) {
    p->usable++;
    p->sum += v.value[0];
  }
  return 0;
}

/* The names near a pattern that found nothing, in the pattern's form. */
static int probe_suggest(const ms_collectd_list *l, const char *pattern,
                         input_probe *p) {
  size_t best[MAX_SUGGESTIONS];
  size_t k =
      ms_collectd_suggest(pattern, l->names, l->n, best, MAX_SUGGESTIONS);
  for (size_t i = 0; i < k; i++) {
    char buf[2 * MS_COLLECTD_MAX_LINE];
    ms_collectd_suggestion(pattern, l->names[best[i]], buf, sizeof buf);
    bool seen = false;
    for (size_t j = 0; j < p->n_suggest; j++)
      seen |= strcmp(p->suggest[j], buf) == 0;
    if (seen)
      continue;
    if ((p->suggest[p->n_suggest] = strdup(buf)) == NULL)
      return -1;
    p->n_suggest++;
  }
  return 0;
}

/* Look one identifier or glob input up: GETVAL of the identifier, or of
 * each identifier of the list the glob matches (as the plugin matches
 * globs against collectd's cache). */
static int probe_input(ms_collectd *c, const ms_collectd_list *l,
                       const ms_source *src, input_probe *p, char *err,
                       size_t errlen) {
  p->probed = true;
  size_t cap = 1;
  if (src->kind == MS_SOURCE_GLOB) {
    cap = 0;
    for (size_t i = 0; i < l->n; i++)
      cap += ms_collectd_matches(src->pattern, l->names[i]);
  }
  p->m = calloc(cap > 0 ? cap : 1, sizeof *p->m);
  if (p->m == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (src->kind == MS_SOURCE_IDENTIFIER) {
    if (probe_add(c, src->pattern, p, err, errlen) != 0)
      return -1;
  } else {
    for (size_t i = 0; i < l->n && p->n < cap; i++)
      if (ms_collectd_matches(src->pattern, l->names[i]) &&
          probe_add(c, l->names[i], p, err, errlen) != 0)
        return -1;
  }
  if (p->n == 0 && probe_suggest(l, src->pattern, p) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}

/* The warnings of one input looked up: missing, or of a type the plugin
 * cannot read. */
static void warn_probe(service_check *s, ms_input_id i) {
  const ms_source *src = &s->sp->inputs[i];
  const input_probe *p = &s->probe[i];
  const char *name = ms_input_name(i);
  if (p->n == 0) {
    char mean[4 * MS_COLLECTD_MAX_LINE] = "";
    size_t w = 0;
    for (size_t k = 0; k < p->n_suggest && w < sizeof mean; k++)
      w += (size_t)snprintf(mean + w, sizeof mean - w, "%s'%s'",
                            k == 0                  ? "; did you mean "
                            : k + 1 == p->n_suggest ? " or "
                                                    : ", ",
                            p->suggest[k]);
    if (p->n_suggest > 0 && w < sizeof mean)
      snprintf(mean + w, sizeof mean - w, "?");
    /* a statsd counter is absent until its first event: no typo then */
    const char *hint = "";
    if (src->missing == MS_MISSING_ZERO)
      hint = " (read as 0 until it appears: missing: zero)";
    else if (p->n_suggest == 0 && strstr(src->pattern, "/statsd/") != NULL)
      hint = " (a statsd counter appears at its first event; missing: zero "
             "reads it as 0 until then)";
    if (src->kind == MS_SOURCE_IDENTIFIER)
      warn_at(s, src->line, src->column,
              "service '%s': input %s '%s' is not in collectd's cache%s%s",
              s->sp->name, name, src->pattern, mean, hint);
    else
      warn_at(s, src->line, src->column,
              "service '%s': input %s: no identifier in collectd's cache "
              "matches the glob '%s'%s%s",
              s->sp->name, name, src->pattern, mean, hint);
    return;
  }
  for (size_t k = 0; k < p->n; k++)
    if (p->m[k].n_ds != 1) {
      warn_at(s, src->line, src->column,
              "service '%s': input %s: '%s' has %d data sources; the plugin "
              "reads a type with one (derive, gauge, counter)",
              s->sp->name, name, p->m[k].name, p->m[k].n_ds);
      return;
    }
}

/* --collectd: every identifier and glob input of every service looked up
 * in the collectd at a->collectd; *n_names gets how many identifiers it
 * holds.  0, or the exit code of the message printed. */
static int probe_all(const check_args *a, const ms_service_file *f,
                     service_check *checks, size_t *n_names) {
  ms_collectd c;
  ms_collectd_list l = {0};
  char err[1024];
  if (ms_collectd_open(&c, a->collectd, a->timeout, err, sizeof err) != 0)
    return ms_cli_fail("%s", err);
  int rc = 0;
  if (ms_collectd_listval(&c, &l, err, sizeof err) != 0) {
    rc = ms_cli_fail("%s", err);
    goto out;
  }
  *n_names = l.n;
  for (size_t k = 0; k < f->n_services; k++)
    for (int i = 0; i < MS_INPUT_COUNT; i++) {
      const ms_source *src = &f->services[k].inputs[i];
      if (src->kind != MS_SOURCE_IDENTIFIER && src->kind != MS_SOURCE_GLOB)
        continue;
      if (probe_input(&c, &l, src, &checks[k].probe[i], err, sizeof err) != 0) {
        rc = ms_cli_fail("%s", err);
        goto out;
      }
      warn_probe(&checks[k], (ms_input_id)i);
    }
out:
  ms_collectd_list_free(&l);
  ms_collectd_close(&c);
  return rc;
}

static void free_probes(service_check *s) {
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    input_probe *p = &s->probe[i];
    for (size_t k = 0; k < p->n; k++)
      free(p->m[k].name);
    free(p->m);
    for (size_t k = 0; k < p->n_suggest; k++)
      free(p->suggest[k]);
  }
  for (int k = 0; k < s->n_warnings; k++)
    free(s->warnings[k].text);
}

/* Of every service: the inputs looked up, and those found. */
static void count_probes(const service_check *c, size_t n, size_t *probed,
                         size_t *found) {
  *probed = *found = 0;
  for (size_t k = 0; k < n; k++)
    for (int i = 0; i < MS_INPUT_COUNT; i++) {
      *probed += c[k].probe[i].probed;
      *found += c[k].probe[i].probed && c[k].probe[i].n > 0;
    }
}

/* " = 12.5", " = no rate yet ...": one match's value as text. */
static void print_match_value(const probe_match *m) {
  if (m->n_ds != 1)
    printf(": %d data sources, the plugin reads a type with one", m->n_ds);
  else if (isnan(m->value))
    printf(" = no rate yet (a counter's first value)");
  else if (isinf(m->value))
    printf(" = infinite");
  else
    printf(" = %.6g", m->value);
}

/* The "in collectd" lines of a service (--collectd): each input looked up,
 * found with its value or missing with the names near it; a glob's
 * matches, the first few. */
static void write_text_probes(const service_check *s) {
  const char *lead = "  in collectd    ";
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const input_probe *p = &s->probe[i];
    const ms_source *src = &s->sp->inputs[i];
    if (!p->probed)
      continue;
    printf("%s%-15s %s", lead, ms_input_name((ms_input_id)i), src->pattern);
    lead = "                 ";
    if (p->n == 0) {
      printf(": not found");
      for (size_t k = 0; k < p->n_suggest; k++)
        printf("%s%s", k == 0 ? "; did you mean " : ", ", p->suggest[k]);
      printf("%s\n", p->n_suggest > 0 ? "?" : "");
      continue;
    }
    double scale = input_scale(src);
    if (src->kind == MS_SOURCE_IDENTIFIER) {
      print_match_value(&p->m[0]);
    } else {
      printf(": %zu match%s", p->n, p->n == 1 ? "" : "es");
      if (p->usable == p->n)
        printf(", sum %.6g", p->sum);
      else if (p->usable > 0)
        printf(", sum %.6g of the %zu with a rate", p->sum, p->usable);
      else
        printf(", none with a rate yet");
    }
    if (p->usable > 0 && scale != 1.0)
      printf(" (x %g = %.6g, as the plugin reads it)", scale, p->sum * scale);
    printf("\n");
    if (src->kind != MS_SOURCE_GLOB)
      continue;
    size_t shown = p->n < 5 ? p->n : 5;
    for (size_t k = 0; k < shown; k++) {
      printf("%s                  %s", lead, p->m[k].name);
      print_match_value(&p->m[k]);
      printf("\n");
    }
    if (shown < p->n)
      printf("%s                  ... and %zu more\n", lead, p->n - shown);
  }
}

/* The "collectd" object of a service (--collectd). */
static void write_json_probes(ms_json *j, const service_check *s) {
  size_t found = 0, probed = 0;
  count_probes(s, 1, &probed, &found);
  ms_json_begin_object(j, "collectd");
  ms_json_int(j, "inputs_found", (long long)found);
  ms_json_int(j, "inputs_missing", (long long)(probed - found));
  ms_json_begin_object(j, "inputs");
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const input_probe *p = &s->probe[i];
    const ms_source *src = &s->sp->inputs[i];
    if (!p->probed)
      continue;
    ms_json_begin_object(j, ms_input_name((ms_input_id)i));
    ms_json_string(j, "kind", source_kind(src->kind));
    ms_json_string(j, "source", src->pattern);
    ms_json_bool(j, "found", p->n > 0);
    ms_json_begin_array(j, "matches");
    for (size_t k = 0; k < p->n; k++) {
      ms_json_begin_object(j, NULL);
      ms_json_string(j, "identifier", p->m[k].name);
      ms_json_int(j, "data_sources", p->m[k].n_ds);
      ms_json_number(j, "value", p->m[k].value);
      ms_json_end_object(j);
    }
    ms_json_end_array(j);
    ms_json_int(j, "with_rate", (long long)p->usable);
    ms_json_number(j, "scale", input_scale(src));
    if (p->usable > 0)
      ms_json_number(j, "value", p->sum * input_scale(src));
    else
      ms_json_null(j, "value");
    ms_json_begin_array(j, "suggestions");
    for (size_t k = 0; k < p->n_suggest; k++)
      ms_json_string(j, NULL, p->suggest[k]);
    ms_json_end_array(j);
    ms_json_end_object(j);
  }
  ms_json_end_object(j);
  ms_json_end_object(j);
}

/* "calibration    learns service_time (busy_servers / completion_rate),
 * ...": what is learned, from which inputs, with which settings
 * (doc/design.md §1.8). */
static void print_calibration(const ms_service_spec *sp) {
  bool util = from_collectd(sp, MS_INPUT_BUSY) &&
              from_collectd(sp, MS_INPUT_COMPLETION);
  bool lat = from_collectd(sp, MS_INPUT_LATENCY);
  if (sp->calibrate == 0) {
    if (util || lat)
      printf("  calibration    none: service_time_estimate reported (from "
             "%s), the model keeps the file's values\n",
             util ? "busy_servers / completion_rate" : "latency");
    return;
  }
  printf("  calibration    learns");
  const char *sep = " ";
  for (int i = 0; i < 3; i++)
    if (sp->calibrate & (1 << i)) {
      printf("%s%s", sep, ms_calibrate_name(i));
      if (i == 0)
        printf(" (%s)", util ? "busy_servers / completion_rate" : "latency");
      sep = ", ";
    }
  ms_service_settings set = ms_service_settings_of(sp);
  printf("; time constant %.6g s, in use after %d samples, landscape rebuilt "
         "past %.4g %%\n",
         set.calibration_time, set.calibration_intervals,
         100 * set.calibration_threshold);
}

static void write_text_service(const service_check *s) {
  const ms_service_spec *sp = s->sp;
  const ms_landscape *ls = &s->ls;
  printf("%s (line %d): %s\n", sp->name, sp->line, s->summary);
  if (s->pool && sp->has_servers)
    printf("  servers        %ld from the file until pool_size reports; the "
           "loads are at %ld\n",
           sp->params.model.servers, sp->params.model.servers);
  else if (s->pool)
    printf("  servers        from pool_size: the loads depend on the pool "
           "size; here at 1\n");
  if (ls->has_fold && ls->tipping_load > ls->recovery_load) {
    printf("  tipping load   %.6g req/s\n", ls->tipping_load);
    printf("  recovery load  %.6g req/s\n", ls->recovery_load);
  } else {
    printf("  tipping load   %.6g req/s (no hysteresis band)\n",
           ls->tipping_load);
    printf("  recovery load  %.6g req/s\n", ls->recovery_load);
  }
  printf("  inputs        ");
  const char *sep = " ";
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const ms_source *src = &sp->inputs[i];
    if (src->kind == MS_SOURCE_NONE)
      continue;
    printf("%s%s", sep, ms_input_name((ms_input_id)i));
    if (src->kind == MS_SOURCE_NUMBER)
      printf(" = %.6g (constant)", src->number);
    sep = ", ";
  }
  printf("\n  offered load   %s\n", s->offered);
  if (s->attempts && s->failure)
    printf("  observations   attempts = %s; failure ratio = %s\n", s->attempts,
           s->failure);
  else if (s->attempts)
    printf("  observations   attempts = %s\n", s->attempts);
  else if (!s->backlog)
    printf("  observations   none\n");
  if (s->backlog)
    printf("  observations   backlog = queue_length (past servers x service "
           "rate x timeout: a storm)\n");
  printf("  storm flag     %s\n",
         s->evidence ? "from the observations" : "from the model alone");
  print_calibration(sp);
  int clear = ms_service_settings_of(sp).clear_after;
  if (sp->has_headroom_warning)
    printf("  notifications  WARNING below %.4g %% headroom; OKAY after %d "
           "healthy intervals\n",
           100 * sp->headroom_warning, clear);
  else
    printf("  notifications  OKAY after %d healthy intervals\n", clear);
  write_text_probes(s);
}

/* One service's object; its "shard" among --shards (0: not asked). */
static void write_json_service(ms_json *j, const service_check *s, int shard) {
  const ms_service_spec *sp = s->sp;
  const ms_landscape *ls = &s->ls;
  const ms_failure_model *m = &sp->params.model;
  const ms_retry_policy *pol = &sp->params.policy;
  bool erlang = m->kind == MS_MODEL_ERLANG;
  ms_json_begin_object(j, NULL);
  ms_json_string(j, "name", sp->name);
  ms_json_int(j, "line", sp->line);
  ms_json_string(j, "model", erlang ? "erlang" : "capacity");
  ms_json_string(j, "summary", s->summary);
  ms_json_begin_object(j, "parameters");
  if (erlang) {
    if (sp->has_servers || !s->pool)
      ms_json_int(j, "servers", m->servers);
    else
      ms_json_null(j, "servers");
    ms_json_number(j, "service_rate", m->service_rate);
    ms_json_number(j, "timeout", m->timeout);
    ms_json_string(j, "timeout_covers",
                   ms_timeout_covers_name(m->timeout_covers));
    if (m->has_service_time_cv)
      ms_json_number(j, "service_time_cv", m->service_time_cv);
  } else {
    ms_json_number(j, "capacity", m->capacity);
  }
  ms_json_number(j, "base_failure", m->base_failure);
  ms_json_int(j, "retries", pol->retries);
  ms_json_int(j, "tiers", pol->tiers);
  if (pol->has_budget)
    ms_json_number(j, "retry_budget", pol->retry_budget);
  if (pol->has_token)
    ms_json_number(j, "token_ratio", pol->token_ratio);
  ms_json_end_object(j);
  if (erlang)
    ms_json_string(j, "servers_from", s->pool ? "pool_size" : "file");
  if (s->pool)
    ms_json_int(j, "loads_at_servers", m->servers);
  if (s->pool)
    ms_json_int(j, "max_pool_size", s->max_pool);
  ms_json_number(j, "tipping_load", ls->tipping_load);
  ms_json_number(j, "recovery_load", ls->recovery_load);
  ms_json_bool(j, "band", ls->has_fold && ls->tipping_load > ls->recovery_load);
  ms_json_begin_object(j, "inputs");
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const ms_source *src = &sp->inputs[i];
    if (src->kind == MS_SOURCE_NONE)
      continue;
    ms_json_begin_object(j, ms_input_name((ms_input_id)i));
    ms_json_string(j, "kind", source_kind(src->kind));
    if (src->kind == MS_SOURCE_NUMBER)
      ms_json_number(j, "value", src->number);
    else
      ms_json_string(j, "value", src->pattern);
    ms_json_end_object(j);
  }
  ms_json_end_object(j);
  ms_json_string(j, "offered_load_from", s->offered);
  if (s->attempts)
    ms_json_string(j, "observed_attempts_from", s->attempts);
  else
    ms_json_null(j, "observed_attempts_from");
  if (s->failure)
    ms_json_string(j, "observed_failure_from", s->failure);
  else
    ms_json_null(j, "observed_failure_from");
  ms_json_string(j, "storm_flag", s->evidence ? "observations" : "model");
  ms_json_begin_array(j, "calibrate");
  for (int i = 0; i < 3; i++)
    if (sp->calibrate & (1 << i))
      ms_json_string(j, NULL, ms_calibrate_name(i));
  ms_json_end_array(j);
  if (sp->has_headroom_warning)
    ms_json_number(j, "headroom_warning", sp->headroom_warning);
  else
    ms_json_null(j, "headroom_warning");
  ms_json_int(j, "clear_after", ms_service_settings_of(sp).clear_after);
  if (shard > 0)
    ms_json_int(j, "shard", shard);
  bool probed = false;
  for (int i = 0; i < MS_INPUT_COUNT; i++)
    probed |= s->probe[i].probed;
  if (probed)
    write_json_probes(j, s);
  ms_json_end_object(j);
}

static void write_json_warnings(ms_json *j, const char *path,
                                const service_check *c, size_t n) {
  ms_json_begin_array(j, "warnings");
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < c[i].n_warnings; k++) {
      const warning *w = &c[i].warnings[k];
      ms_json_begin_object(j, NULL);
      ms_json_string(j, "file", path);
      ms_json_int(j, "line", w->line);
      ms_json_int(j, "column", w->column);
      ms_json_string(j, "service", c[i].sp->name);
      ms_json_string(j, "message", warning_text(w));
      ms_json_end_object(j);
    }
  ms_json_end_array(j);
}

/* The assignment to shards (--shards): each service's shard, the
 * services per shard and their balance. */
typedef struct {
  int n;          /* shards */
  int *shard;     /* per service, 1-based */
  size_t *counts; /* per shard */
  ms_shard_stats stats;
} shard_plan;

static void write_json_shards(ms_json *j, const shard_plan *p) {
  ms_json_begin_object(j, "shards");
  ms_json_int(j, "n", p->n);
  ms_json_string(j, "hash", "jump(fnv1a64(name), n) + 1");
  ms_json_begin_array(j, "services");
  for (int k = 0; k < p->n; k++)
    ms_json_int(j, NULL, (long)p->counts[k]);
  ms_json_end_array(j);
  ms_json_int(j, "min", (long)p->stats.min);
  ms_json_int(j, "max", (long)p->stats.max);
  ms_json_number(j, "mean", p->stats.mean);
  ms_json_number(j, "max_over_mean", p->stats.max_over_mean);
  ms_json_end_object(j);
}

static void write_text_shards(const service_check *c, size_t n,
                              const shard_plan *p) {
  int width = 7;
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(c[i].sp->name) > width)
      width = (int)strlen(c[i].sp->name);
  printf("\n%-*s  shard\n", width, "service");
  for (size_t i = 0; i < n; i++)
    printf("%-*s  %d/%d\n", width, c[i].sp->name, p->shard[i], p->n);
  printf("\nshard  services\n");
  for (int k = 0; k < p->n; k++)
    printf("%5d  %zu\n", k + 1, p->counts[k]);
  printf("\nbalance: min %zu, max %zu, mean %.4g services per shard; max / "
         "mean %.4g\n",
         p->stats.min, p->stats.max, p->stats.mean, p->stats.max_over_mean);
}

/* What the whole check says, for the header and the exit status. */
typedef struct {
  int n_warnings;
  bool valid;     /* no warning, or not --strict: exit 0 */
  size_t n_names; /* --collectd: identifiers collectd holds */
  size_t probed;  /* --collectd: inputs looked up */
  size_t found;   /* --collectd: those found */
} check_result;

/* "valid", "valid, 2 warnings", "not valid, 2 warnings (--strict)": the
 * word matches the exit status. */
static const char *verdict_word(const check_result *r, char *buf, size_t len) {
  if (r->n_warnings == 0)
    snprintf(buf, len, "valid");
  else
    snprintf(buf, len, "%svalid, %d warning%s%s", r->valid ? "" : "not ",
             r->n_warnings, r->n_warnings == 1 ? "" : "s",
             r->valid ? "" : " (--strict)");
  return buf;
}

static void write_json_all(const check_args *a, const char *path,
                           const service_check *c, size_t n,
                           const shard_plan *p, const check_result *res) {
  ms_json j;
  ms_json_init(&j, stdout, 2);
  ms_json_begin_object(&j, NULL);
  ms_json_string(&j, "file", path);
  ms_json_bool(&j, "valid", res->valid);
  ms_json_bool(&j, "strict", a->strict);
  if (a->collectd != NULL) {
    ms_json_begin_object(&j, "collectd");
    ms_json_string(&j, "socket", a->collectd);
    ms_json_int(&j, "identifiers", (long long)res->n_names);
    ms_json_int(&j, "inputs_found", (long long)res->found);
    ms_json_int(&j, "inputs_missing", (long long)(res->probed - res->found));
    ms_json_end_object(&j);
  }
  ms_json_begin_array(&j, "services");
  for (size_t i = 0; i < n; i++)
    write_json_service(&j, &c[i], p != NULL ? p->shard[i] : 0);
  ms_json_end_array(&j);
  if (p != NULL)
    write_json_shards(&j, p);
  write_json_warnings(&j, path, c, n);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

static void write_all(const check_args *a, const char *path,
                      const service_check *c, size_t n, const shard_plan *p,
                      const check_result *res) {
  if (a->sh.format == MS_FORMAT_JSON) {
    write_json_all(a, path, c, n, p, res);
    return;
  }
  char word[64];
  printf("%s: %zu service%s, %s\n", path, n, n == 1 ? "" : "s",
         verdict_word(res, word, sizeof word));
  if (a->collectd != NULL)
    printf("collectd at %s: %zu identifiers; %zu of %zu inputs found\n",
           a->collectd, res->n_names, res->found, res->probed);
  if (p != NULL) {
    printf("%d shard%s: shard = jump(FNV-1a 64 of the name, %d) + 1\n", p->n,
           p->n == 1 ? "" : "s", p->n);
    write_text_shards(c, n, p);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    printf("\n");
    write_text_service(&c[i]);
  }
}

/* The assignment to --shards N shards; 0, or the exit code printed. */
static int make_plan(const ms_service_file *f, long shards, shard_plan *plan) {
  plan->n = (int)shards;
  plan->shard = calloc(f->n_services ? f->n_services : 1, sizeof *plan->shard);
  plan->counts = calloc((size_t)shards, sizeof *plan->counts);
  if (plan->shard == NULL || plan->counts == NULL)
    return ms_cli_fail("out of memory");
  for (size_t i = 0; i < f->n_services; i++)
    plan->shard[i] = ms_shard_of(f->services[i].name, plan->n);
  ms_shard_balance(plan->shard, f->n_services, plan->n, plan->counts,
                   &plan->stats);
  return 0;
}

static int run(ms_service_file *f, service_check **checks, int argc,
               char **argv) {
  check_args a = {0};
  ms_cli_shared_init(&a.sh, MS_FORMAT_TEXT, MS_FORMATS_TEXT_JSON);
  int first;
  int r =
      ms_cli_parse(argc, argv, &syntax, NULL, take_option, &a, &a.help, &first);
  if (r != 0 || a.help)
    return r;
  if (first >= argc)
    return ms_cli_usage("give the service file: FILE");
  if (first + 1 < argc)
    return ms_cli_usage("unexpected argument '%s' (one file at a time)",
                        argv[first + 1]);
  if (a.timeout > 0 && a.collectd == NULL)
    return ms_cli_usage("--timeout is the wait for collectd: it goes with "
                        "--collectd SOCKET");
  if (a.collectd != NULL && a.shards > 0)
    return ms_cli_usage("--collectd and --shards: one at a time");
  const char *path = argv[first];
  char err[512];
  if (ms_service_file_load(path, f, err, sizeof err) != 0)
    return ms_cli_fail("%s", err);
  *checks = calloc(f->n_services ? f->n_services : 1, sizeof **checks);
  if (*checks == NULL)
    return ms_cli_fail("out of memory");
  for (size_t i = 0; i < f->n_services; i++)
    if ((r = check_service(&f->services[i], &(*checks)[i])) != 0)
      return r;
  check_result res = {0};
  if (a.collectd != NULL) {
    if ((r = probe_all(&a, f, *checks, &res.n_names)) != 0)
      return r;
    count_probes(*checks, f->n_services, &res.probed, &res.found);
  }
  for (size_t i = 0; i < f->n_services; i++)
    res.n_warnings += (*checks)[i].n_warnings;
  res.valid = !(a.strict && res.n_warnings > 0);
  shard_plan plan = {0};
  if (a.shards > 0 && (r = make_plan(f, a.shards, &plan)) == 0)
    write_all(&a, path, *checks, f->n_services, &plan, &res);
  else if (a.shards == 0)
    write_all(&a, path, *checks, f->n_services, NULL, &res);
  free(plan.shard);
  free(plan.counts);
  if (r != 0)
    return r;
  fflush(stdout);
  for (size_t i = 0; i < f->n_services; i++)
    for (int k = 0; k < (*checks)[i].n_warnings; k++) {
      const warning *w = &(*checks)[i].warnings[k];
      fprintf(stderr, "%s:%d:%d: warning: %s\n", path, w->line, w->column,
              warning_text(w));
    }
  return ms_cli_finish_output(res.valid ? MS_EXIT_OK : MS_EXIT_RUNTIME);
}

int ms_cmd_check(int argc, char **argv) {
  ms_service_file f;
  memset(&f, 0, sizeof f);
  service_check *checks = NULL;
  int rc = run(&f, &checks, argc, argv);
  if (checks != NULL)
    for (size_t i = 0; i < f.n_services; i++)
      free_probes(&checks[i]);
  free(checks);
  ms_service_file_free(&f);
  return rc;
}
