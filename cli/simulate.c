/* SPDX-License-Identifier: MIT */
/*
 * metastable simulate: the path through the landscape, not only where it
 * ends (model/sim.h).  A scenario (baseline load and triggers: spikes,
 * ramps, drops, stalls) from the command line or a YAML file
 * (service/scenario.h) runs through the fluid engine (memoryless, doc/design.md
 * §6, or with queue memory) or the discrete-event engine, and comes out as a
 * time series (CSV or JSON) with the plugin's verdict on every window, a
 * summary (did the storm outlast its trigger; when did it end; did the
 * service settle back at the healthy equilibrium), and a gnuplot chart with
 * the tipping and recovery loads drawn.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "json.h"
#include "plot.h"
#include "scenario.h"
#include "sim.h"
#include "trace.h"

static const char usage[] =
    "Usage: metastable simulate [MODEL OPTIONS] [--engine fluid|des]\n"
    "                           [--memoryless] [--seed S] [--seeds N]\n"
    "                           [--scenario FILE] [--load L] [--duration D]\n"
    "                           [--spike|--ramp|--drop|--stall FIELDS ...]\n"
    "                           [--backoff KIND[,BASE[,CAP[,MULT]]]]\n"
    "                           [--format text|csv|json] [--plot FILE]\n"
    "\n"
    "Run a scenario through a simulation of the retry loop and report the\n"
    "path: attempts, retries, failures and backlog over time, the plugin's\n"
    "state in every window, and whether a storm outlived its triggers (a\n"
    "storm ends when goodput returns: at most half the attempts fail; the\n"
    "triggers end with the last, whatever its kind; amplification is\n"
    "attempts per request over the run, at most r + 1).  A --scenario file\n"
    "comes first, then the options on top; triggers from both are kept.\n";

/* Most runs of --seeds. */
#define MAX_SEEDS 100000L

enum {
  OPT_ENGINE = MS_OPT_SHARED_END,
  OPT_MEMORYLESS,
  OPT_DT,
  OPT_SEED,
  OPT_SEEDS,
  OPT_SERVICE_DIST,
  OPT_SCENARIO,
  OPT_DURATION,
  OPT_SPIKE,
  OPT_RAMP,
  OPT_DROP,
  OPT_STALL,
  OPT_BACKOFF,
  OPT_BUDGET_WINDOW,
  OPT_TOKEN_CAPACITY,
  OPT_SAMPLE_INTERVAL,
  OPT_SETTLE_TOLERANCE,
};

static const ms_cli_option options[] = {
    MS_CLI_HEADING("Engine:"),
    {"--engine", "fluid|des", OPT_ENGINE,
     "fluid (default): rates in bins of width dt, the queue carried between "
     "bins (erlang model); des: a discrete-event M/M/c simulation, clients "
     "that time out and retry, servers that still serve what was "
     "abandoned"},
    {"--memoryless", NULL, OPT_MEMORYLESS,
     "fluid: no queue between bins, each bin fails with p() of its own "
     "attempt rate (the textbook fluid model; always so for the capacity "
     "model)"},
    {"--dt", "D", OPT_DT,
     "fluid bin width, s (default T/20, dividing the sample interval)"},
    {"--seed", "S", OPT_SEED,
     "des: random seed, 0..2^53 (default 1); the same seed gives the same "
     "run"},
    {"--seeds", "N", OPT_SEEDS,
     "des: run N times, seeds --seed, --seed + 1, ... (1..100000) and report "
     "the latch probability (share of runs still in a storm at the end) "
     "with its 95 % Wilson score interval and the spread of the recovery "
     "times (triggers' end to goodput back); csv: one row per run"},
    {"--service-dist", "D", OPT_SERVICE_DIST,
     "des: service times exponential, deterministic, lognormal, "
     "hyperexponential or gamma, with the model's --service-time-cv "
     "(default: exponential for cv 1, deterministic for 0, else "
     "lognormal)"},
    MS_CLI_HEADING("Scenario:"),
    {"--scenario", "FILE", OPT_SCENARIO,
     "YAML scenario file (see metastable(1))"},
    {"--load", "L", MS_OPT_LOAD, "baseline offered load, requests/s"},
    {"--duration", "D", OPT_DURATION, "simulated time, s (default 300)"},
    {"--spike", "S,H,L", OPT_SPIKE,
     "L requests/s more from time S for H seconds"},
    {"--ramp", "S,R,H,F,L", OPT_RAMP,
     "up to L more over R s from S, held H s, down over F s: a load test "
     "that climbs, holds and descends"},
    {"--drop", "S,H,L", OPT_DROP, "L requests/s less from S for H seconds"},
    {"--stall", "S,H,N", OPT_STALL,
     "the pool has N servers (0: a full stall) from S for H seconds; "
     "capacity model: N is a capacity, requests/s"},
    {"--backoff", "K[,B[,C[,M]]]", OPT_BACKOFF,
     "none (default: the scenario file's backoff, else the --spec "
     "service's, else none), constant,B, exponential,B,C[,M], "
     "full-jitter,B,C[,M], "
     "equal-jitter,B,C[,M] or decorrelated-jitter,B,C: base B and cap C, s; "
     "retry k waits up to min(C, B M^(k-1)), M in [1, 1000] (default 2) "
     "(AWS Architecture Blog, Exponential Backoff And Jitter, 2015)"},
    {"--budget-window", "D", OPT_BUDGET_WINDOW,
     "retry budget window, s (default 10)"},
    {"--token-capacity", "N", OPT_TOKEN_CAPACITY,
     "token bucket size, tokens (default 100)"},
    MS_CLI_HEADING("Output:"),
    {"--sample-interval", "D", OPT_SAMPLE_INTERVAL,
     "window of every output row and of the plugin's verdict, s (default 1; "
     "the DES needs windows long enough for the observed rates to "
     "settle)"},
    {"--settle-tolerance", "F", OPT_SETTLE_TOLERANCE,
     "band around an equilibrium that counts as settled, relative (default "
     "0.02; des: four Poisson standard deviations of a window's count at the "
     "baseline load when wider, at most 0.5)"},
    {"--format", "text|csv|json", MS_OPT_FORMAT,
     "text (default): the summary; csv: one row per window: time, offered, "
     "attempts, retries, failures, goodput, given_up, refused, backlog, "
     "servers, failure_ratio, amplification (the window's attempts / first "
     "attempts), state, storm, tipping_load, recovery_load, healthy_load, "
     "collapsed_load, then the window as a trace that replay and fit read: "
     "offered_rate, arrival_rate, retry_rate, error_rate, queue_length, "
     "pool_size (erlang) and, des only, busy_servers, completion_rate, "
     "latency (time-average busy servers, completed attempts/s, their mean "
     "service time; the fluid "
     "engine does not measure them); json: the summary and the series"},
    {"--plot", "FILE", MS_OPT_PLOT,
     "draw the time series into FILE (.svg or .png) with gnuplot: offered "
     "load, attempts, goodput, the triggers and storm windows shaded, the "
     "tipping and recovery loads drawn; the summary is then written only "
     "when --format is given"},
    MS_CLI_SHARED(MS_OPT_TITLE),
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

/* ---- trigger options ---------------------------------------------------- */

/* A trigger as written, parsed once the model is known (a stall's third
 * field is servers or a capacity). */
typedef struct {
  int opt;
  const char *text;
} trigger_arg;

/*
 * Split text at commas into exactly n fields and parse each: 'd' a
 * duration >= 0, 'r' a rate >= 0, 'n' a whole number of servers.  Returns
 * 0, or MS_EXIT_USAGE with a message naming the option and the field.
 */
static int parse_fields(const char *opt, const char *text, const char *kinds,
                        const char *const *names, double *out) {
  int n = (int)strlen(kinds);
  char buf[256];
  if (strlen(text) >= sizeof buf)
    return ms_cli_usage("%s: '%.40s...' is too long", opt, text);
  strcpy(buf, text);
  char *p = buf;
  for (int i = 0; i < n; i++) {
    char *comma = strchr(p, ',');
    if ((comma == NULL) != (i == n - 1)) {
      char want[160] = "";
      for (int k = 0; k < n; k++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
                 k ? "," : "", names[k]);
      return ms_cli_usage("%s: '%s' is not %s (%d fields separated by commas)",
                          opt, text, want, n);
    }
    if (comma)
      *comma = '\0';
    char what[96], msg[400];
    snprintf(what, sizeof what, "%s %s", opt, names[i]);
    int bad;
    if (kinds[i] == 'd') {
      bad = ms_cli_check_duration(what, p, 0, MS_SIM_MAX_DURATION,
                                  MS_RANGE_CLOSED, &out[i], msg, sizeof msg);
    } else if (kinds[i] == 'r') {
      bad = ms_cli_check_rate(what, p, 0, MS_SIM_MAX_RATE, MS_RANGE_CLOSED,
                              &out[i], msg, sizeof msg);
    } else {
      long v;
      bad = ms_cli_check_long(what, p, 0, MS_MAX_SERVERS, &v, msg, sizeof msg);
      out[i] = (double)v;
    }
    if (bad)
      return ms_cli_usage("%s", msg);
    p = comma ? comma + 1 : p;
  }
  return 0;
}

/* The option of a trigger argument: "--spike", "--ramp", "--drop" or
 * "--stall". */
static const char *trigger_option(int opt) {
  return opt == OPT_SPIKE  ? "--spike"
         : opt == OPT_RAMP ? "--ramp"
         : opt == OPT_DROP ? "--drop"
                           : "--stall";
}

static int add_trigger(ms_scenario *sc, const trigger_arg *a,
                       ms_model_kind kind) {
  if (sc->n_triggers >= MS_SIM_MAX_TRIGGERS)
    return ms_cli_usage("%s: at most %d triggers in a scenario, file "
                        "included",
                        trigger_option(a->opt), MS_SIM_MAX_TRIGGERS);
  ms_trigger t;
  memset(&t, 0, sizeof t);
  double v[5];
  int st;
  switch (a->opt) {
  case OPT_SPIKE:
  case OPT_DROP: {
    static const char *const names[] = {"START", "HOLD", "LOAD"};
    const char *opt = a->opt == OPT_SPIKE ? "--spike" : "--drop";
    if ((st = parse_fields(opt, a->text, "ddr", names, v)) != 0)
      return st;
    t.kind = MS_TRIGGER_LOAD;
    t.start = v[0];
    t.hold = v[1];
    t.load = a->opt == OPT_SPIKE ? v[2] : -v[2];
    break;
  }
  case OPT_RAMP: {
    static const char *const names[] = {"START", "RISE", "HOLD", "FALL",
                                        "LOAD"};
    if ((st = parse_fields("--ramp", a->text, "ddddr", names, v)) != 0)
      return st;
    t.kind = MS_TRIGGER_LOAD;
    t.start = v[0];
    t.rise = v[1];
    t.hold = v[2];
    t.fall = v[3];
    t.load = v[4];
    break;
  }
  default: {
    bool erlang = kind == MS_MODEL_ERLANG;
    static const char *const en[] = {"START", "HOLD", "SERVERS"};
    static const char *const cn[] = {"START", "HOLD", "CAPACITY"};
    if ((st = parse_fields("--stall", a->text, erlang ? "ddn" : "ddr",
                           erlang ? en : cn, v)) != 0)
      return st;
    t.kind = MS_TRIGGER_SERVERS;
    t.start = v[0];
    t.hold = v[1];
    if (erlang)
      t.servers = (long)v[2];
    else if (!(v[2] > 0))
      return ms_cli_usage("--stall CAPACITY: the capacity model needs a "
                          "capacity > 0, not '%s'",
                          a->text);
    else
      t.capacity = v[2];
    break;
  }
  }
  if (t.rise + t.hold + t.fall <= 0)
    return ms_cli_usage("'%s': a trigger of no length does nothing", a->text);
  sc->triggers[sc->n_triggers++] = t;
  return 0;
}

static int parse_backoff(const char *text, ms_backoff *b) {
  char buf[128];
  if (strlen(text) >= sizeof buf)
    return ms_cli_usage("--backoff: '%.40s...' is too long", text);
  strcpy(buf, text);
  char *f[5] = {buf, NULL, NULL, NULL, NULL};
  int n = 1;
  for (char *p = buf; *p && n < 5; p++)
    if (*p == ',') {
      *p = '\0';
      f[n++] = p + 1;
    }
  ms_error err;
  memset(b, 0, sizeof *b);
  if (ms_backoff_from_name(f[0], &b->kind, &err) != MS_OK)
    return ms_cli_usage("--backoff: %s", err.msg);
  int want = b->kind == MS_BACKOFF_NONE       ? 1
             : b->kind == MS_BACKOFF_CONSTANT ? 2
                                              : 3;
  /* exponential and the two jitters may add a multiplier */
  bool mult = ms_backoff_multiplies(b->kind) && n == 4;
  if (n != want && !mult)
    return ms_cli_usage(
        "--backoff: %s takes %s, not '%s'", f[0],
        want == 1   ? "no base or cap"
        : want == 2 ? "a base (constant,BASE)"
        : ms_backoff_multiplies(b->kind)
            ? "a base, a cap and optionally a multiplier (KIND,BASE,CAP[,MULT])"
            : "a base and a cap (KIND,BASE,CAP)",
        text);
  if (want >= 2 && ms_cli_duration("--backoff BASE", f[1], 0, MS_BACKOFF_MAX,
                                   MS_RANGE_CLOSED, &b->base) != 0)
    return MS_EXIT_USAGE;
  if (want == 3 && ms_cli_duration("--backoff CAP", f[2], 0, MS_BACKOFF_MAX,
                                   MS_RANGE_CLOSED, &b->cap) != 0)
    return MS_EXIT_USAGE;
  if (mult && ms_cli_real("--backoff MULT", f[3], 1, MS_BACKOFF_MAX_MULTIPLIER,
                          MS_RANGE_CLOSED, &b->multiplier) != 0)
    return MS_EXIT_USAGE;
  if (ms_backoff_check(b, &err) != MS_OK)
    return ms_cli_usage("--backoff: %s", err.msg);
  return 0;
}

/* ---- collecting the run ------------------------------------------------- */

/* The CSV header: simulate's own columns, then the same window as a
 * trace that `metastable replay` and `metastable fit` read (service/trace.h):
 * the inputs by their names, pool_size with the erlang model, and with
 * the DES what the servers did (the calibration inputs busy_servers,
 * completion_rate and latency), which the fluid engine does not measure:
 * its busy servers would be the model's own c mu rho. */
static void csv_header(FILE *f, bool erlang, bool served) {
  fprintf(f,
          "time,%s,offered_rate,arrival_rate,retry_rate,error_rate,"
          "queue_length",
          MS_TRACE_SIMULATE_COLUMNS);
  if (erlang)
    fputs(",pool_size", f);
  if (served)
    fputs(",busy_servers,completion_rate,latency", f);
  fputc('\n', f);
}

static void csv_row(FILE *f, const ms_sim_sample *s, bool erlang) {
  char b[16][32];
  fprintf(
      f, "%s,%s,%s,%s,%s,%s,%s,%s,%s,%ld,%s,%s,%s,%d,%s,%s,%s,%s",
      ms_format_double(b[0], s->time), ms_format_double(b[1], s->offered),
      ms_format_double(b[2], s->attempts), ms_format_double(b[3], s->retries),
      ms_format_double(b[4], s->failures), ms_format_double(b[5], s->goodput),
      ms_format_double(b[6], s->given_up), ms_format_double(b[7], s->refused),
      ms_format_double(b[8], s->backlog), s->servers,
      ms_format_double(b[9], s->failure_ratio),
      ms_format_double(b[10], s->amplification), ms_state_name(s->state),
      s->storm, ms_format_double(b[11], s->tipping_load),
      ms_format_double(b[12], s->recovery_load),
      s->has_healthy ? ms_format_double(b[13], s->healthy_load) : "",
      s->has_collapsed ? ms_format_double(b[14], s->collapsed_load) : "");
  /* the trace: the same numbers under the inputs' names */
  fprintf(f, ",%s,%s,%s,%s,%s", b[1], b[2], b[3], b[4], b[8]);
  if (erlang)
    fprintf(f, ",%ld", s->servers);
  if (s->has_service)
    fprintf(f, ",%s,%s,%s", ms_format_double(b[0], s->busy_servers),
            ms_format_double(b[1], s->completion_rate),
            s->has_latency ? ms_format_double(b[2], s->latency) : "");
  fputc('\n', f);
}

typedef struct {
  bool stream_csv; /* write rows as they come */
  bool erlang;     /* the CSV has pool_size */
  bool keep;       /* keep them for the plot or JSON */
  ms_sim_sample *s;
  size_t n, cap;
  bool oom;
  double reached; /* simulated time of the last window, s */
  ms_cli_progress prog;
} collector;

static int collect(void *ctx, const ms_sim_sample *s) {
  collector *c = ctx;
  if (c->stream_csv)
    csv_row(stdout, s, c->erlang);
  if (c->keep) {
    if (c->n == c->cap) {
      size_t nc = c->cap ? 2 * c->cap : 1024;
      ms_sim_sample *p = realloc(c->s, nc * sizeof *p);
      if (p == NULL) {
        c->oom = true;
        return 1;
      }
      c->s = p;
      c->cap = nc;
    }
    c->s[c->n++] = *s;
  }
  ms_cli_progress_update(&c->prog, (size_t)(s->time + 0.5));
  c->reached = s->time;
  return ms_cli_interrupted(); /* Ctrl-C: stop at this window */
}

/* The sink of a --seeds run, which keeps no windows: stop on Ctrl-C. */
static int stop_on_sigint(void *ctx, const ms_sim_sample *s) {
  (void)ctx;
  (void)s;
  return ms_cli_interrupted();
}

/* ---- the summary -------------------------------------------------------- */

static void describe_trigger(char *buf, size_t len, const ms_trigger *t,
                             ms_model_kind kind) {
  if (t->kind == MS_TRIGGER_SERVERS) {
    if (kind == MS_MODEL_ERLANG)
      snprintf(buf, len, "pool of %ld server%s from %.6g s for %.6g s",
               t->servers, t->servers == 1 ? "" : "s", t->start, t->hold);
    else
      snprintf(buf, len, "capacity %.6g/s from %.6g s for %.6g s", t->capacity,
               t->start, t->hold);
  } else if (t->rise > 0 || t->fall > 0) {
    snprintf(buf, len,
             "ramp %+.6g/s from %.6g s (up %.6g s, hold %.6g s, down "
             "%.6g s)",
             t->load, t->start, t->rise, t->hold, t->fall);
  } else {
    snprintf(buf, len, "%s %+.6g/s from %.6g s for %.6g s",
             t->load >= 0 ? "spike" : "drop", t->load, t->start, t->hold);
  }
}

static const char *engine_text(char *buf, size_t len, const ms_sim_config *c,
                               ms_sim_engine e) {
  const ms_failure_model *m = &c->service.model;
  if (e == MS_ENGINE_DES && c->service_dist != MS_SERVICE_EXPONENTIAL)
    snprintf(buf, len, "discrete-event (M/G/c, %s service, cv %.4g), seed %llu",
             ms_service_dist_name(c->service_dist),
             m->has_service_time_cv ? m->service_time_cv : 1.0,
             (unsigned long long)c->seed);
  else if (e == MS_ENGINE_DES)
    snprintf(buf, len, "discrete-event (M/M/c), seed %llu",
             (unsigned long long)c->seed);
  else
    snprintf(buf, len, "fluid, %s",
             c->queue_memory ? "queue carried between bins"
                             : "memoryless (no queue between bins)");
  return buf;
}

static const char *backoff_text(char *buf, size_t len, const ms_backoff *b) {
  if (b->kind == MS_BACKOFF_NONE)
    snprintf(buf, len, "none");
  else if (b->kind == MS_BACKOFF_CONSTANT)
    snprintf(buf, len, "constant %.6g s", b->base);
  else if (ms_backoff_multiplies(b->kind) && b->multiplier != 0.0 &&
           b->multiplier != MS_BACKOFF_DEFAULT_MULTIPLIER)
    snprintf(buf, len, "%s, base %.6g s, cap %.6g s, multiplier %.6g",
             ms_backoff_name(b->kind), b->base, b->cap, b->multiplier);
  else
    snprintf(buf, len, "%s, base %.6g s, cap %.6g s", ms_backoff_name(b->kind),
             b->base, b->cap);
  return buf;
}

/* A share x in [0, 1] as a percentage for the text output, into buf
 * (at least 32 bytes): "0.7634 %" down to 0.001 %, below that in scientific
 * notation as a share ("8.6e-40"), never "8.6e-38 %"; exactly 0 as "0". */
static const char *fmt_share(char *buf, size_t len, double x) {
  return ms_format_share(buf, len, x, 4);
}

/* The scenario and the service, the head of both text outputs. */
static void write_text_head(const ms_cli_model *m, const ms_sim_config *c,
                            ms_sim_engine e, const ms_landscape *ls,
                            long seeds) {
  char b[256];
  printf("service:   %s\n", m->label);
  printf("landscape: tipping load %.6g/s, recovery load %.6g/s, capacity "
         "%.6g/s\n",
         ls->tipping_load, ls->recovery_load, ls->saturation_load);
  printf("engine:    %s", engine_text(b, sizeof b, c, e));
  if (seeds > 1)
    printf(" to %llu (%ld runs)", (unsigned long long)c->seed + (seeds - 1),
           seeds);
  printf("\n");
  printf("backoff:   %s\n", backoff_text(b, sizeof b, &c->backoff));
  printf("scenario:  %.6g s at %.6g/s, windows of %.6g s\n",
         c->scenario.duration, c->scenario.offered_load, c->sample_interval);
  for (int i = 0; i < c->scenario.n_triggers; i++) {
    describe_trigger(b, sizeof b, &c->scenario.triggers[i],
                     c->service.model.kind);
    printf("  trigger: %s\n", b);
  }
  if (c->scenario.n_triggers > 0)
    printf("  the triggers end at %.6g s\n",
           ms_scenario_trigger_end(&c->scenario));
  printf("\n");
}

static void write_text(const ms_cli_model *m, const ms_sim_config *c,
                       ms_sim_engine e, const ms_landscape *ls,
                       const ms_sim_summary *s) {
  char b[64];
  write_text_head(m, c, e, ls, 0);
  bool triggers = c->scenario.n_triggers > 0;
  if (s->first_storm_at < 0) {
    printf("outcome:   no storm: the plugin would have judged every window "
           "out of storm\n");
  } else if (!s->recovered) {
    printf("outcome:   STORM at the end of the run (%s",
           ms_state_name(s->final_state));
    if (s->final_storm && !ms_state_storm(s->final_state))
      printf(", recovering: the queue left by the storm still fails the "
             "attempts beyond the healthy level");
    else if (s->verdict_ended_at >= 0)
      printf(" since %.6g s, but most attempts still fail",
             s->verdict_ended_at);
    printf(")");
    if (triggers && s->trigger_end < s->duration)
      printf(": it outlasted the triggers, which ended at %.6g s",
             s->trigger_end);
    printf("\n");
  } else {
    printf("outcome:   storm ended at %.6g s, when goodput returned",
           s->storm_ended_at);
    if (triggers && s->storm_ended_at > s->trigger_end)
      printf(", %.6g s after the triggers ended (the storm outlived its "
             "trigger, then recovered by itself)",
             s->storm_ended_at - s->trigger_end);
    else if (triggers)
      printf(", before the triggers ended at %.6g s", s->trigger_end);
    printf("\n");
  }
  if (s->draining_time > 0)
    printf("draining:  %.6g s of windows judged out of storm with most "
           "attempts failing (the plugin's verdict left the storm at %.6g s): "
           "the queue left by the storm was still draining\n",
           s->draining_time,
           s->verdict_ended_at >= 0 ? s->verdict_ended_at : s->duration);
  printf("time in storm: %.6g s by the plugin's verdict (%.6g s of it at "
         "or after the triggers ended)\n",
         s->storm_time, s->storm_after_trigger);
  if (s->settled_healthy)
    printf("settled:   at the healthy equilibrium (within %s) since "
           "%.6g s\n",
           ms_format_share(b, sizeof b, c->settle_tolerance, 3), s->settled_at);
  else if (s->settled_collapsed)
    printf("settled:   at the collapsed equilibrium (within %s) since "
           "%.6g s\n",
           ms_format_share(b, sizeof b, c->settle_tolerance, 3), s->settled_at);
  else
    printf("settled:   near no equilibrium (within %s) in the last "
           "window\n",
           ms_format_share(b, sizeof b, c->settle_tolerance, 3));
  printf("last window: offered %.6g/s, attempts %.6g/s, failure ratio "
         "%s, state %s\n",
         s->final_offered, s->final_attempts,
         fmt_share(b, sizeof b, s->final_failure_ratio),
         ms_state_name(s->final_state));
  char amp[32];
  snprintf(amp, sizeof amp, "%.4g", s->amplification);
  printf("amplification: %s %s per request over the run (at most "
         "r + 1 = %d)\n",
         amp, strcmp(amp, "1") == 0 ? "attempt" : "attempts",
         c->service.policy.retries + 1);
  printf("peaks:     attempts %.6g/s, backlog %.6g\n", s->peak_attempts,
         s->peak_backlog);
  printf("totals:    %.0f requests, %.0f attempts (%.0f retries), %.0f "
         "failed attempts, %.0f requests given up, %.0f retries refused\n",
         s->requests, s->attempts, s->retries, s->failures, s->given_up,
         s->refused);
}

static void json_summary(ms_json *j, const ms_sim_summary *s) {
  ms_json_begin_object(j, "summary");
  ms_json_number(j, "duration", s->duration);
  ms_json_int(j, "windows", s->samples);
  ms_json_number(j, "requests", s->requests);
  ms_json_number(j, "attempts", s->attempts);
  ms_json_number(j, "retries", s->retries);
  ms_json_number(j, "failures", s->failures);
  ms_json_number(j, "successes", s->successes);
  ms_json_number(j, "given_up", s->given_up);
  ms_json_number(j, "refused", s->refused);
  ms_json_number(j, "peak_attempts", s->peak_attempts);
  ms_json_number(j, "amplification", s->amplification);
  ms_json_number(j, "peak_backlog", s->peak_backlog);
  ms_json_number(j, "storm_time", s->storm_time);
  if (s->first_storm_at >= 0)
    ms_json_number(j, "first_storm_at", s->first_storm_at);
  else
    ms_json_null(j, "first_storm_at");
  ms_json_number(j, "trigger_end", s->trigger_end);
  ms_json_number(j, "storm_after_trigger", s->storm_after_trigger);
  ms_json_bool(j, "recovered", s->recovered);
  if (s->storm_ended_at >= 0)
    ms_json_number(j, "storm_ended_at", s->storm_ended_at);
  else
    ms_json_null(j, "storm_ended_at");
  if (s->verdict_ended_at >= 0)
    ms_json_number(j, "verdict_ended_at", s->verdict_ended_at);
  else
    ms_json_null(j, "verdict_ended_at");
  ms_json_string(j, "settled",
                 s->settled_healthy     ? "healthy"
                 : s->settled_collapsed ? "collapsed"
                                        : "none");
  if (s->settled_at >= 0)
    ms_json_number(j, "settled_at", s->settled_at);
  else
    ms_json_null(j, "settled_at");
  ms_json_string(j, "final_state", ms_state_name(s->final_state));
  ms_json_bool(j, "final_storm", s->final_storm);
  ms_json_number(j, "final_offered", s->final_offered);
  ms_json_number(j, "final_attempts", s->final_attempts);
  ms_json_number(j, "final_failure_ratio", s->final_failure_ratio);
  ms_json_number(j, "events", s->events);
  ms_json_number(j, "failing_out_of_storm", s->draining_time);
  ms_json_end_object(j);
}

static void write_json(const ms_cli_model *m, const ms_sim_config *c,
                       ms_sim_engine e, const ms_landscape *ls,
                       const ms_sim_summary *s, const collector *col) {
  ms_json j;
  ms_json_init(&j, stdout, 2);
  ms_json_begin_object(&j, NULL);
  if (m->name[0])
    ms_json_string(&j, "service", m->name);
  ms_json_string(&j, "model", m->summary);
  ms_json_string(&j, "engine", ms_sim_engine_name(e));
  ms_json_bool(&j, "queue_memory", e == MS_ENGINE_FLUID && c->queue_memory);
  if (e == MS_ENGINE_DES)
    ms_json_number(&j, "seed", (double)c->seed);
  if (e == MS_ENGINE_DES && c->service_dist != MS_SERVICE_EXPONENTIAL)
    ms_json_string(&j, "service_dist", ms_service_dist_name(c->service_dist));
  char b[128];
  ms_json_string(&j, "backoff", backoff_text(b, sizeof b, &c->backoff));
  ms_json_number(&j, "tipping_load", ls->tipping_load);
  ms_json_number(&j, "recovery_load", ls->recovery_load);
  ms_json_number(&j, "capacity", ls->saturation_load);
  ms_json_number(&j, "offered_load", c->scenario.offered_load);
  ms_json_number(&j, "sample_interval", c->sample_interval);
  json_summary(&j, s);
  ms_json_begin_array(&j, "series");
  for (size_t i = 0; i < col->n; i++) {
    const ms_sim_sample *x = &col->s[i];
    ms_json_begin_object(&j, NULL);
    ms_json_number(&j, "time", x->time);
    ms_json_number(&j, "offered", x->offered);
    ms_json_number(&j, "attempts", x->attempts);
    ms_json_number(&j, "retries", x->retries);
    ms_json_number(&j, "failures", x->failures);
    ms_json_number(&j, "goodput", x->goodput);
    ms_json_number(&j, "given_up", x->given_up);
    ms_json_number(&j, "refused", x->refused);
    ms_json_number(&j, "backlog", x->backlog);
    ms_json_int(&j, "servers", x->servers);
    ms_json_number(&j, "failure_ratio", x->failure_ratio);
    ms_json_number(&j, "amplification", x->amplification);
    ms_json_string(&j, "state", ms_state_name(x->state));
    ms_json_int(&j, "storm", x->storm);
    ms_json_number(&j, "tipping_load", x->tipping_load);
    ms_json_number(&j, "recovery_load", x->recovery_load);
    if (x->has_healthy)
      ms_json_number(&j, "healthy_load", x->healthy_load);
    else
      ms_json_null(&j, "healthy_load");
    if (x->has_collapsed)
      ms_json_number(&j, "collapsed_load", x->collapsed_load);
    else
      ms_json_null(&j, "collapsed_load");
    if (x->has_service) {
      ms_json_number(&j, "busy_servers", x->busy_servers);
      ms_json_number(&j, "completion_rate", x->completion_rate);
      if (x->has_latency)
        ms_json_number(&j, "latency", x->latency);
      else
        ms_json_null(&j, "latency");
    }
    ms_json_end_object(&j);
  }
  ms_json_end_array(&j);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

/* ---- the plot ----------------------------------------------------------- */

/* Everything the chart is made of, built step by step by the functions
 * below.  The plot keeps pointers into the arrays and texts here, so they
 * live as long as the chart is drawn. */
typedef struct {
  size_t n;                     /* windows */
  double *t, *off, *att, *good; /* each window's values, at its middle */
  ms_plot_series series[3];
  ms_plot_band *bands; /* triggers, storms, draining queues */
  size_t nb;
  ms_plot_marker markers[3 + MS_SIM_MAX_TRIGGERS];
  size_t nm;
  char drop_text[MS_SIM_MAX_TRIGGERS][64];
  char tip[96], rec[96], cap[96];
  char sub[400], ttl[200];
} chart;

/* The chart's arrays, also those of a chart that ran out of memory half
 * made (a chart starts zeroed). */
static void chart_free(chart *ch) {
  free(ch->t), free(ch->off), free(ch->att), free(ch->good), free(ch->bands);
}

/* The three curves, each value at the middle of its window.  Returns 0,
 * or -1 when memory ran out. */
static int chart_series(chart *ch, const collector *col) {
  size_t n = col->n;
  ch->n = n;
  ch->t = malloc(n * sizeof *ch->t);
  ch->off = malloc(n * sizeof *ch->off);
  ch->att = malloc(n * sizeof *ch->att);
  ch->good = malloc(n * sizeof *ch->good);
  ch->bands = calloc(2 * n + MS_SIM_MAX_TRIGGERS, sizeof *ch->bands);
  if (!ch->t || !ch->off || !ch->att || !ch->good || !ch->bands)
    return -1;
  for (size_t i = 0; i < n; i++) {
    ch->t[i] = col->s[i].time - 0.5 * col->s[i].width;
    ch->off[i] = col->s[i].offered;
    ch->att[i] = col->s[i].attempts;
    ch->good[i] = col->s[i].goodput;
  }
  ch->series[0] = (ms_plot_series){.title = "offered load (first attempts)",
                                   .style = MS_PLOT_SOLID,
                                   .color = MS_PLOT_BLUE,
                                   .width = 2,
                                   .n = n,
                                   .x = ch->t,
                                   .y = ch->off};
  ch->series[1] = (ms_plot_series){.title = "attempts (retries included)",
                                   .style = MS_PLOT_SOLID,
                                   .color = MS_PLOT_VERMILION,
                                   .width = 2,
                                   .n = n,
                                   .x = ch->t,
                                   .y = ch->att};
  ch->series[2] = (ms_plot_series){.title = "goodput (successful attempts)",
                                   .style = MS_PLOT_DASHED,
                                   .color = MS_PLOT_GREEN,
                                   .width = 2,
                                   .n = n,
                                   .x = ch->t,
                                   .y = ch->good};
  return 0;
}

/* The triggers shaded, named once in the legend.  A drop relieves the
 * service instead: it is a line where it starts, with its load. */
static void chart_triggers(chart *ch, const ms_scenario *sc) {
  bool said_trigger = false;
  for (int i = 0; i < sc->n_triggers; i++) {
    const ms_trigger *tr = &sc->triggers[i];
    if (tr->kind == MS_TRIGGER_LOAD && !(tr->load > 0)) {
      snprintf(ch->drop_text[i], sizeof ch->drop_text[i], "load %+.4g/s",
               tr->load);
      ch->markers[ch->nm++] = (ms_plot_marker){.vertical = true,
                                               .at = tr->start,
                                               .text = ch->drop_text[i],
                                               .color = MS_PLOT_BLUE,
                                               .text_pos = 0.6};
      continue;
    }
    ch->bands[ch->nb++] =
        (ms_plot_band){.from = tr->start,
                       .to = tr->start + tr->rise + tr->hold + tr->fall,
                       .label = said_trigger ? NULL : "trigger",
                       .color = MS_PLOT_ORANGE};
    said_trigger = true;
  }
}

/* The storms by the plugin's verdict, one band per run of windows in
 * storm, named once in the legend. */
static void chart_storms(chart *ch, const collector *col) {
  bool labelled = false;
  for (size_t i = 0; i < ch->n;) {
    if (!col->s[i].storm) {
      i++;
      continue;
    }
    size_t k = i;
    while (k < ch->n && col->s[k].storm)
      k++;
    ch->bands[ch->nb++] = (ms_plot_band){
        .from = col->s[i].time - col->s[i].width,
        .to = col->s[k - 1].time,
        .label = labelled ? NULL : "storm (the plugin's verdict)",
        .color = MS_PLOT_PURPLE};
    labelled = true;
    i = k;
  }
}

/* The windows out of storm by the verdict while most attempts fail, after
 * a storm: the queue left by it draining, the storm of the summary going
 * on until goodput returns (ms_sim_summary).  Without them the chart would
 * show a storm that ended while the failures went on. */
static void chart_draining(chart *ch, const collector *col) {
  bool labelled = false;
  for (size_t i = 0; i < ch->n;) {
    const ms_sim_sample *x = &col->s[i];
    if (x->storm || !(x->failure_ratio > MS_SIM_GOODPUT_SHARE) || i == 0 ||
        !col->s[i - 1].storm) {
      i++;
      continue;
    }
    size_t k = i;
    while (k < ch->n && !col->s[k].storm &&
           col->s[k].failure_ratio > MS_SIM_GOODPUT_SHARE)
      k++;
    ch->bands[ch->nb++] = (ms_plot_band){
        .from = x->time - x->width,
        .to = col->s[k - 1].time,
        .label = labelled ? NULL : "most attempts failing, judged out of storm",
        .color = MS_PLOT_GREY};
    labelled = true;
    i = k;
  }
}

/* The loads as lines across the plot, named right of it where no data
 * hides their texts (moved apart when the lines are close); one line for
 * tipping and recovery when there is no band. */
static void chart_loads(chart *ch, const ms_landscape *ls) {
  bool no_band =
      !(ls->tipping_load - ls->recovery_load > 1e-9 * ls->tipping_load);
  snprintf(ch->tip, sizeof ch->tip,
           no_band ? "tipping = recovery load %.4g req/s"
                   : "tipping load %.4g req/s",
           ls->tipping_load);
  snprintf(ch->rec, sizeof ch->rec, "recovery load %.4g req/s",
           ls->recovery_load);
  snprintf(ch->cap, sizeof ch->cap, "capacity %.4g attempts/s",
           ls->saturation_load);
  ch->markers[ch->nm++] = (ms_plot_marker){.at = ls->saturation_load,
                                           .text = ch->cap,
                                           .color = MS_PLOT_SKY,
                                           .on_axis = true};
  ch->markers[ch->nm++] = (ms_plot_marker){.at = ls->tipping_load,
                                           .text = ch->tip,
                                           .color = MS_PLOT_GREY,
                                           .on_axis = true};
  if (!no_band)
    ch->markers[ch->nm++] = (ms_plot_marker){.at = ls->recovery_load,
                                             .text = ch->rec,
                                             .color = MS_PLOT_GREY,
                                             .on_axis = true};
}

/* The top of the y axis, fixed here (gnuplot would round it up to a tick)
 * so that the texts beside the plot can be spread: the highest curve or
 * horizontal line, and a margin. */
static double chart_ymax(const chart *ch) {
  double ymax = 0;
  for (size_t i = 0; i < ch->n; i++)
    ymax = fmax(ymax, fmax(ch->off[i], fmax(ch->att[i], ch->good[i])));
  for (size_t i = 0; i < ch->nm; i++)
    if (!ch->markers[i].vertical)
      ymax = fmax(ymax, ch->markers[i].at);
  return ymax > 0 ? 1.08 * ymax : 1;
}

/* The time series into path: the loads, the triggers and storms shaded,
 * the tipping and recovery loads drawn.  Returns 0, or MS_EXIT_RUNTIME
 * with the reason. */
static int write_plot(const char *path, const char *title,
                      const ms_cli_model *m, const ms_sim_config *c,
                      ms_sim_engine e, const ms_landscape *ls,
                      const collector *col) {
  chart ch;
  memset(&ch, 0, sizeof ch);
  if (chart_series(&ch, col) != 0) {
    chart_free(&ch);
    return ms_cli_fail("out of memory drawing %zu windows", col->n);
  }
  chart_triggers(&ch, &c->scenario);
  chart_storms(&ch, col);
  chart_draining(&ch, col);
  chart_loads(&ch, ls);
  char eng[128], bo[128];
  snprintf(ch.sub, sizeof ch.sub, "%s; %s; backoff %s", m->summary,
           engine_text(eng, sizeof eng, c, e),
           backoff_text(bo, sizeof bo, &c->backoff));
  snprintf(ch.ttl, sizeof ch.ttl, "%s%s%s", m->name[0] ? m->name : "",
           m->name[0] ? ": " : "", "simulated retry storm");
  ms_plot p;
  ms_plot_init(&p);
  p.title = title ? title : ch.ttl;
  p.subtitle = ch.sub;
  p.xlabel = "time (s)";
  p.ylabel = "requests or attempts per second";
  p.xmin = 0;
  p.xmax = c->scenario.duration;
  p.ymin = 0;
  p.series = ch.series;
  p.n_series = 3;
  p.bands = ch.bands;
  p.n_bands = ch.nb;
  p.markers = ch.markers;
  p.n_markers = ch.nm;
  /* below the plot area, as replay's: inside it, a corner of the curves
   * (a storm's attempts at the top, a run that latches to the end) lay
   * under the legend's box */
  p.legend = "below";
  p.legend_columns = 3;
  p.ymax = chart_ymax(&ch);
  char err[512];
  int r = ms_plot_write(&p, path, err, sizeof err);
  chart_free(&ch);
  return r == 0 ? MS_EXIT_OK : ms_cli_fail("%s", err);
}

/* ---- the command -------------------------------------------------------- */

/* What the command line asks for.  The has_ flags say which options were
 * given: only those override the scenario file and the configuration's
 * defaults. */
typedef struct {
  ms_sim_engine engine;
  bool memoryless;
  bool has_load, has_duration, has_dt, has_seed, has_backoff, has_dist;
  bool has_engine;
  long seeds; /* --seeds: runs of the DES, 0 for one run */
  ms_service_dist service_dist;
  bool has_budget_window, has_token_capacity, has_sample, has_settle;
  double load, duration, dt, budget_window, token_capacity, sample, settle;
  long seed;
  ms_backoff backoff;
  const char *scenario_path;
  trigger_arg targs[MS_SIM_MAX_TRIGGERS + 1]; /* parsed with the model */
  int n_targs;
  ms_cli_shared sh; /* --format (without it, --plot draws only), --plot,
                       --title */
  bool help;        /* --help: print it and do nothing else */
} sim_args;

/* One option of simulate's own (not a model option; ms_cli_take).
 * Returns 0, the exit code of the message printed, or -1 when c is none
 * of its options. */
static int take_option(void *args, int c, const char *arg) {
  static const char *const engines[] = {"fluid", "des", NULL};
  static const ms_sim_engine engine_of[] = {MS_ENGINE_FLUID, MS_ENGINE_DES};
  /* in the order of ms_service_dist */
  static const char *const dists[] = {"exponential", "deterministic",
                                      "lognormal",   "hyperexponential",
                                      "gamma",       NULL};
  sim_args *a = args;
  int st = 0, k;
  switch (c) {
  case OPT_ENGINE:
    if ((st = ms_cli_choice("--engine", arg, engines, &k)) == 0)
      a->engine = engine_of[k];
    a->has_engine = true;
    break;
  case OPT_MEMORYLESS:
    a->memoryless = true;
    break;
  case OPT_DT:
    st = ms_cli_duration("--dt", arg, 0, MS_SIM_MAX_DURATION, MS_RANGE_LO_OPEN,
                         &a->dt);
    a->has_dt = true;
    break;
  case OPT_SEED:
    st = ms_cli_long("--seed", arg, 0, 9007199254740992L, &a->seed);
    a->has_seed = true;
    break;
  case OPT_SEEDS:
    st = ms_cli_long("--seeds", arg, 1, MAX_SEEDS, &a->seeds);
    break;
  case OPT_SERVICE_DIST:
    if ((st = ms_cli_choice("--service-dist", arg, dists, &k)) == 0)
      a->service_dist = (ms_service_dist)k;
    a->has_dist = true;
    break;
  case OPT_SCENARIO:
    a->scenario_path = arg;
    break;
  case MS_OPT_LOAD: /* its own range: the simulation's */
    st = ms_cli_rate("--load", arg, 0, MS_SIM_MAX_RATE, MS_RANGE_CLOSED,
                     &a->load);
    a->has_load = true;
    break;
  case OPT_DURATION:
    st = ms_cli_duration("--duration", arg, 0, MS_SIM_MAX_DURATION,
                         MS_RANGE_LO_OPEN, &a->duration);
    a->has_duration = true;
    break;
  case OPT_SPIKE:
  case OPT_RAMP:
  case OPT_DROP:
  case OPT_STALL:
    if (a->n_targs > MS_SIM_MAX_TRIGGERS)
      st = ms_cli_usage("at most %d triggers", MS_SIM_MAX_TRIGGERS);
    else
      a->targs[a->n_targs++] = (trigger_arg){c, arg};
    break;
  case OPT_BACKOFF:
    st = parse_backoff(arg, &a->backoff);
    a->has_backoff = true;
    break;
  case OPT_BUDGET_WINDOW:
    st = ms_cli_duration("--budget-window", arg, 0, MS_SIM_MAX_DURATION,
                         MS_RANGE_LO_OPEN, &a->budget_window);
    a->has_budget_window = true;
    break;
  case OPT_TOKEN_CAPACITY:
    st = ms_cli_real("--token-capacity", arg, 1, 1e15, MS_RANGE_CLOSED,
                     &a->token_capacity);
    a->has_token_capacity = true;
    break;
  case OPT_SAMPLE_INTERVAL:
    st = ms_cli_duration("--sample-interval", arg, 0, MS_SIM_MAX_DURATION,
                         MS_RANGE_LO_OPEN, &a->sample);
    a->has_sample = true;
    break;
  case OPT_SETTLE_TOLERANCE:
    st = ms_cli_share("--settle-tolerance", arg, 0, 1,
                      MS_RANGE_LO_OPEN | MS_RANGE_HI_OPEN, &a->settle);
    a->has_settle = true;
    break;
  default:
    return ms_cli_shared_option(&a->sh, c, arg);
  }
  return st;
}

/* Take the options in the order given, stopping at the first bad one (or
 * at --help), so that the message names the option the user got wrong
 * first.  Returns 0 or the exit code of the message printed. */
static int parse_options(sim_args *a, ms_cli_model *m, int argc, char **argv) {
  int st = ms_cli_parse(argc, argv, &syntax, m, take_option, a, &a->help, NULL);
  if (st == 0 && !a->help && a->seeds > 0) {
    /* --seeds runs the discrete-event engine */
    if (a->has_engine && a->engine != MS_ENGINE_DES)
      return ms_cli_usage("--seeds runs the discrete-event engine; the fluid "
                          "engine is deterministic (use --engine des)");
    a->engine = MS_ENGINE_DES;
    if (a->sh.plot)
      return ms_cli_usage("--plot draws one run: give --seed S instead of "
                          "--seeds N");
  }
  return st;
}

/* A trigger that starts at or after the end of the run would never act:
 * refused, naming the trigger (its option and value, or its place in the
 * scenario file) and where the duration came from.  The file's own
 * triggers come first in sc (n_file of them), then the options'.
 * Returns 0, MS_EXIT_USAGE (an option is to blame: a trigger option or
 * --duration) or MS_EXIT_RUNTIME (the file alone). */
static int check_trigger_starts(const sim_args *a, const ms_scenario *sc,
                                int n_file) {
  char dur[600];
  if (a->has_duration)
    snprintf(dur, sizeof dur, "--duration %.6g s", sc->duration);
  else if (a->scenario_path)
    snprintf(dur, sizeof dur, "the duration of %s, %.6g s", a->scenario_path,
             sc->duration);
  else
    snprintf(dur, sizeof dur, "the default --duration of %.6g s", sc->duration);
  for (int i = 0; i < sc->n_triggers; i++) {
    double start = sc->triggers[i].start;
    if (start < sc->duration)
      continue;
    if (i >= n_file) {
      const trigger_arg *t = &a->targs[i - n_file];
      return ms_cli_usage("%s %s: START %.6g s is not before the end of the "
                          "run (%s): the trigger would never act; give a "
                          "longer --duration or an earlier START",
                          trigger_option(t->opt), t->text, start, dur);
    }
    char msg[1400];
    snprintf(msg, sizeof msg,
             "%s: trigger %d starts at %.6g s, not before the end of the "
             "run (%s): it would never act; give a longer --duration or an "
             "earlier start",
             a->scenario_path, i + 1, start, dur);
    return a->has_duration ? ms_cli_usage("%s", msg) : ms_cli_fail("%s", msg);
  }
  return 0;
}

/* The scenario: the file's, if any, then the load, the duration and the
 * triggers of the command line on top (triggers from both are kept).
 * Returns 0, MS_EXIT_RUNTIME for a bad file, MS_EXIT_USAGE for bad
 * options. */
static int apply_scenario(const sim_args *a, const ms_cli_model *m,
                          ms_sim_config *cfg) {
  if (a->scenario_path) {
    ms_scenario_file sf;
    char err[512];
    if (ms_scenario_file_load(a->scenario_path, &sf, err, sizeof err) != 0)
      return ms_cli_fail("%s", err);
    ms_scenario_file_apply(&sf, cfg);
  } else if (!a->has_load) {
    return ms_cli_usage("give the baseline offered load (--load L) or a "
                        "scenario file (--scenario FILE)");
  }
  if (a->has_load)
    cfg->scenario.offered_load = a->load;
  if (a->has_duration)
    cfg->scenario.duration = a->duration;
  int st = 0, n_file = cfg->scenario.n_triggers;
  for (int i = 0; i < a->n_targs && st == 0; i++)
    st = add_trigger(&cfg->scenario, &a->targs[i], m->params.model.kind);
  return st != 0 ? st : check_trigger_starts(a, &cfg->scenario, n_file);
}

/* The engine's settings given on the command line, over the file's and
 * the defaults. */
static void apply_settings(const sim_args *a, const ms_cli_model *m,
                           ms_sim_config *cfg) {
  if (a->has_dt)
    cfg->dt = a->dt;
  if (a->has_seed)
    cfg->seed = (uint64_t)a->seed;
  if (a->has_backoff)
    cfg->backoff = a->backoff;
  if (a->has_budget_window)
    cfg->budget_window = a->budget_window;
  if (a->has_token_capacity)
    cfg->token_capacity = a->token_capacity;
  if (a->has_sample)
    cfg->sample_interval = a->sample;
  if (a->has_settle) {
    cfg->settle_tolerance = a->settle;
  } else if (a->engine == MS_ENGINE_DES) {
    /* a window's count is random: widen the band to four Poisson standard
     * deviations of it at the baseline load */
    double count = cfg->scenario.offered_load * cfg->sample_interval;
    if (count > 0)
      cfg->settle_tolerance = fmin(0.5, fmax(0.02, 4.0 / sqrt(count)));
  }
  cfg->queue_memory = m->params.model.kind == MS_MODEL_ERLANG && !a->memoryless;
  /* the service times: as asked, else the one distribution a cv of 1 or 0
   * names, else lognormal (any cv > 0) */
  const ms_failure_model *fm = &m->params.model;
  double cv = fm->has_service_time_cv ? fm->service_time_cv : 1.0;
  cfg->service_dist = a->has_dist ? a->service_dist
                      : cv == 1.0 ? MS_SERVICE_EXPONENTIAL
                      : cv == 0.0 ? MS_SERVICE_DETERMINISTIC
                                  : MS_SERVICE_LOGNORMAL;
}

/* What the engines cannot simulate: the DES is an M/M/c queue, the
 * memoryless variant is the fluid engine's, and there is one retrying
 * tier.  Returns 0 or MS_EXIT_USAGE. */
static int check_engine(const sim_args *a, const ms_cli_model *m) {
  bool erlang = m->params.model.kind == MS_MODEL_ERLANG;
  if (a->engine == MS_ENGINE_DES && !erlang)
    return ms_cli_usage("--engine des simulates an M/M/c queue: it needs "
                        "the erlang model (--servers, --service-time, "
                        "--timeout)");
  if (a->engine == MS_ENGINE_DES && a->memoryless)
    return ms_cli_usage("--memoryless applies to the fluid engine only");
  if (a->engine != MS_ENGINE_DES && a->has_seed)
    return ms_cli_usage("--seed %ld applies to the discrete-event engine "
                        "only (--engine des): the fluid engine is "
                        "deterministic, every run is the same",
                        a->seed);
  if (a->engine != MS_ENGINE_DES && a->has_dist)
    return ms_cli_usage("--service-dist applies to the discrete-event engine "
                        "only (--engine des): the fluid engine takes the "
                        "model's wait tail");
  ms_error err;
  if (a->engine == MS_ENGINE_DES && a->has_dist &&
      ms_service_dist_check(a->service_dist,
                            m->params.model.has_service_time_cv
                                ? m->params.model.service_time_cv
                                : 1.0,
                            &err) != MS_OK)
    return ms_cli_usage("--service-dist: %s", err.msg);
  if (m->params.policy.tiers != 1)
    return ms_cli_usage("--tiers %d: the simulation models one retrying "
                        "tier; layered retries (A^k) have no single queue "
                        "to simulate",
                        m->params.policy.tiers);
  return 0;
}

/* ---- many seeds --------------------------------------------------------- */

/* One run of --seeds. */
typedef struct {
  uint64_t seed;
  bool stormed, recovered;
  double first_storm_at, storm_ended_at, recovery_time, amplification;
} seed_run;

/* The runs' verdict: latched runs, the Wilson interval, and the recovery
 * times of the runs that had a storm and recovered, sorted. */
typedef struct {
  long n, latched, never, recovered_n; /* recovered_n: stormed, recovered */
  double p, lo, hi;
  double *rt; /* recovered_n recovery times, sorted */
} seed_stats;

static void seed_summary(const seed_run *run, long n, double *rt,
                         seed_stats *st) {
  memset(st, 0, sizeof *st);
  st->n = n;
  st->rt = rt;
  for (long i = 0; i < n; i++) {
    if (!run[i].recovered)
      st->latched++;
    else if (!run[i].stormed)
      st->never++;
    else
      rt[st->recovered_n++] = run[i].recovery_time;
  }
  ms_sort_doubles(rt, (size_t)st->recovered_n);
  st->p = (double)st->latched / (double)n;
  ms_wilson_interval(st->latched, n, MS_Z95, &st->lo, &st->hi);
}

/* The singular for a count of exactly 1, else the plural. */
static const char *plural(long n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

static void seeds_text(const ms_cli_model *m, const ms_sim_config *c,
                       const ms_landscape *ls, const seed_stats *st) {
  write_text_head(m, c, MS_ENGINE_DES, ls, st->n);
  printf("latched:   %ld of %ld runs still in a storm at the end: latch "
         "probability %.4g, 95 %% interval [%.4g, %.4g] (Wilson score)\n",
         st->latched, st->n, st->p, st->lo, st->hi);
  printf("recovered: %ld %s (%ld of them never in a storm)\n",
         st->n - st->latched, plural(st->n - st->latched, "run", "runs"),
         st->never);
  if (st->recovered_n > 0) {
    const double *x = st->rt;
    size_t k = (size_t)st->recovered_n;
    printf("recovery:  from the triggers' end at %.6g s until goodput "
           "returned, %ld %s: min %.4g s, quartiles %.4g, %.4g, %.4g s, "
           "max %.4g s\n",
           ms_scenario_trigger_end(&c->scenario), st->recovered_n,
           plural(st->recovered_n, "run", "runs"), x[0],
           ms_quantile_sorted(x, k, 0.25), ms_quantile_sorted(x, k, 0.5),
           ms_quantile_sorted(x, k, 0.75), x[k - 1]);
  }
}

static void json_opt(ms_json *j, const char *key, bool has, double v) {
  if (has)
    ms_json_number(j, key, v);
  else
    ms_json_null(j, key);
}

static void seeds_json(const ms_cli_model *m, const ms_sim_config *c,
                       const ms_landscape *ls, const seed_stats *st,
                       const seed_run *run) {
  ms_json j;
  ms_json_init(&j, stdout, 2);
  ms_json_begin_object(&j, NULL);
  if (m->name[0])
    ms_json_string(&j, "service", m->name);
  ms_json_string(&j, "model", m->summary);
  ms_json_string(&j, "engine", "des");
  ms_json_number(&j, "first_seed", (double)c->seed);
  ms_json_int(&j, "runs", st->n);
  ms_json_number(&j, "tipping_load", ls->tipping_load);
  ms_json_number(&j, "recovery_load", ls->recovery_load);
  ms_json_number(&j, "trigger_end", ms_scenario_trigger_end(&c->scenario));
  ms_json_int(&j, "latched", st->latched);
  ms_json_number(&j, "latch_probability", st->p);
  ms_json_number(&j, "confidence", 0.95);
  ms_json_number(&j, "latch_low", st->lo);
  ms_json_number(&j, "latch_high", st->hi);
  ms_json_int(&j, "never_in_storm", st->never);
  ms_json_begin_object(&j, "recovery_time");
  ms_json_int(&j, "runs", st->recovered_n);
  size_t k = (size_t)st->recovered_n;
  const double *x = st->rt;
  json_opt(&j, "min", k > 0, k > 0 ? x[0] : 0);
  json_opt(&j, "q1", k > 0, k > 0 ? ms_quantile_sorted(x, k, 0.25) : 0);
  json_opt(&j, "median", k > 0, k > 0 ? ms_quantile_sorted(x, k, 0.5) : 0);
  json_opt(&j, "q3", k > 0, k > 0 ? ms_quantile_sorted(x, k, 0.75) : 0);
  json_opt(&j, "max", k > 0, k > 0 ? x[k - 1] : 0);
  ms_json_end_object(&j);
  ms_json_begin_array(&j, "runs_detail");
  for (long i = 0; i < st->n; i++) {
    const seed_run *r = &run[i];
    ms_json_begin_object(&j, NULL);
    ms_json_number(&j, "seed", (double)r->seed);
    ms_json_bool(&j, "recovered", r->recovered);
    json_opt(&j, "first_storm_at", r->stormed, r->first_storm_at);
    json_opt(&j, "storm_ended_at", r->stormed && r->recovered,
             r->storm_ended_at);
    json_opt(&j, "recovery_time", r->stormed && r->recovered, r->recovery_time);
    ms_json_number(&j, "amplification", r->amplification);
    ms_json_end_object(&j);
  }
  ms_json_end_array(&j);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

static void seeds_csv(const seed_stats *st, const seed_run *run) {
  char b[4][32];
  printf("seed,recovered,first_storm_at,storm_ended_at,recovery_time,"
         "amplification\n");
  for (long i = 0; i < st->n; i++) {
    const seed_run *r = &run[i];
    bool rec = r->stormed && r->recovered;
    printf("%llu,%d,%s,%s,%s,%s\n", (unsigned long long)r->seed, r->recovered,
           r->stormed ? ms_format_double(b[0], r->first_storm_at) : "",
           rec ? ms_format_double(b[1], r->storm_ended_at) : "",
           rec ? ms_format_double(b[2], r->recovery_time) : "",
           ms_format_double(b[3], r->amplification));
  }
}

/* --seeds N: the DES with seeds s, s + 1, ..., each run's summary kept,
 * then the latch probability and the recovery times. */
static int simulate_seeds(const sim_args *a, const ms_cli_model *m,
                          const ms_sim_config *cfg, const ms_landscape *ls) {
  long n = a->seeds;
  if (cfg->seed > (uint64_t)9007199254740992L - (uint64_t)(n - 1))
    return ms_cli_usage("--seed %llu with --seeds %ld goes past 2^53",
                        (unsigned long long)cfg->seed, n);
  seed_run *run = calloc((size_t)n, sizeof *run);
  double *rt = calloc((size_t)n, sizeof *rt);
  if (run == NULL || rt == NULL) {
    free(run);
    free(rt);
    return ms_cli_fail("out of memory for %ld runs", n);
  }
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "simulate --seeds", (size_t)n);
  int code = MS_EXIT_OK;
  for (long i = 0; i < n && code == MS_EXIT_OK; i++) {
    ms_sim_config c = *cfg;
    c.seed = cfg->seed + (uint64_t)i;
    ms_sim_summary s;
    ms_error err;
    if (ms_sim_des(&c, stop_on_sigint, NULL, &s, &err) != MS_OK) {
      code = ms_cli_fail("des engine, seed %llu: %s",
                         (unsigned long long)c.seed, err.msg);
      break;
    }
    run[i] =
        (seed_run){.seed = c.seed,
                   .stormed = s.first_storm_at >= 0,
                   .recovered = s.recovered,
                   .first_storm_at = s.first_storm_at,
                   .storm_ended_at = s.storm_ended_at,
                   .recovery_time = fmax(0.0, s.storm_ended_at - s.trigger_end),
                   .amplification = s.amplification};
    if (ms_cli_interrupted()) {
      ms_cli_progress_end(&prog);
      code = ms_cli_interrupt_exit("%ld of %ld runs completed (seed %llu "
                                   "stopped); no statistics written",
                                   i, n, (unsigned long long)c.seed);
      break;
    }
    ms_cli_progress_update(&prog, (size_t)i + 1);
  }
  ms_cli_progress_end(&prog);
  if (code == MS_EXIT_OK) {
    seed_stats st;
    seed_summary(run, n, rt, &st);
    if (a->sh.format == MS_FORMAT_TEXT)
      seeds_text(m, cfg, ls, &st);
    else if (a->sh.format == MS_FORMAT_JSON)
      seeds_json(m, cfg, ls, &st, run);
    else
      seeds_csv(&st, run);
  }
  free(run);
  free(rt);
  return ms_cli_finish_output(code);
}

/* Run the simulation, streaming CSV rows as they come or keeping them for
 * JSON and the plot, then write the outputs asked for.  Without --format:
 * the summary as text, or only the plot when asked for one. */
static int simulate(const sim_args *a, const ms_cli_model *m,
                    const ms_sim_config *cfg, const ms_landscape *ls) {
  bool results = a->sh.has_format || !a->sh.plot;
  collector col = {0};
  col.stream_csv = results && a->sh.format == MS_FORMAT_CSV;
  col.keep = a->sh.plot != NULL || (results && a->sh.format == MS_FORMAT_JSON);
  col.erlang = cfg->service.model.kind == MS_MODEL_ERLANG;
  if (col.stream_csv)
    csv_header(stdout, col.erlang, a->engine == MS_ENGINE_DES);
  ms_cli_progress_start(&col.prog, "simulate",
                        (size_t)(cfg->scenario.duration + 0.5));
  ms_sim_summary sum;
  ms_error err;
  int st = ms_sim_run(a->engine, cfg, collect, &col, &sum, &err);
  ms_cli_progress_end(&col.prog);
  int code = MS_EXIT_OK;
  if (st == MS_OK && ms_cli_interrupted()) {
    fflush(stdout);
    free(col.s);
    return ms_cli_interrupt_exit(
        "simulated %.6g of %.6g s%s", col.reached, cfg->scenario.duration,
        col.stream_csv ? " (the CSV rows written are those windows)"
                       : "; no summary written");
  }
  if (col.oom)
    code = ms_cli_fail("out of memory keeping %zu windows: use --format csv "
                       "without --plot, or a longer --sample-interval",
                       col.n);
  else if (st != MS_OK)
    code = ms_cli_fail("%s engine: %s", ms_sim_engine_name(a->engine), err.msg);
  if (code == MS_EXIT_OK) {
    if (results && a->sh.format == MS_FORMAT_TEXT)
      write_text(m, cfg, a->engine, ls, &sum);
    if (results && a->sh.format == MS_FORMAT_JSON)
      write_json(m, cfg, a->engine, ls, &sum, &col);
    if (a->sh.plot)
      code = write_plot(a->sh.plot, a->sh.title, m, cfg, a->engine, ls, &col);
  }
  free(col.s);
  return ms_cli_finish_output(code);
}

/* Refuse, before anything is allocated, a run whose peak memory
 * (ms_sim_memory_estimate, plus the windows kept for --plot or JSON)
 * would pass MS_SIM_MAX_MEMORY, saying what to shrink.  Returns 0 or
 * MS_EXIT_USAGE. */
static int check_memory(const sim_args *a, const ms_sim_config *cfg) {
  double bytes;
  ms_error err;
  if (ms_sim_memory_estimate(a->engine, cfg, &bytes, &err) != MS_OK)
    return ms_cli_usage("%s", err.msg);
  bool results = a->sh.has_format || !a->sh.plot;
  bool keep = a->seeds == 0 && (a->sh.plot != NULL ||
                                (results && a->sh.format == MS_FORMAT_JSON));
  double windows = ceil(cfg->scenario.duration / cfg->sample_interval);
  if (keep)
    bytes += 2.0 * windows * (double)sizeof(ms_sim_sample);
  if (bytes <= MS_SIM_MAX_MEMORY)
    return 0;
  const char *how =
      a->engine == MS_ENGINE_DES
          ? "the attempts in flight grow as load x (1 + retries) x timeout: "
            "lower --load (and the triggers' loads), --retries, --timeout or "
            "the --backoff cap"
          : "the retry schedule grows as retries x (timeout + backoff cap) / "
            "dt: raise --dt, or lower --retries, --timeout or the --backoff "
            "cap";
  return ms_cli_usage(
      "this run would need about %.0f MiB (%s engine%s), above the limit "
      "of %.0f MiB: %s%s",
      ceil(bytes / 1048576.0), /* above the limit, a whole MiB */
      ms_sim_engine_name(a->engine), keep ? ", with the windows kept" : "",
      MS_SIM_MAX_MEMORY / 1048576.0, how,
      keep ? "; or keep fewer windows: a shorter --duration, a longer "
             "--sample-interval, or --format csv without --plot"
           : "");
}

static int run(ms_cli_model *m, int argc, char **argv) {
  sim_args a = {.engine = MS_ENGINE_FLUID,
                .load = 0,
                .duration = 300,
                .dt = 0,
                .budget_window = 10,
                .token_capacity = 100,
                .sample = 1,
                .settle = 0.02,
                .seed = 1,
                .backoff = {MS_BACKOFF_NONE, 0, 0, 0}};
  ms_cli_shared_init(&a.sh, MS_FORMAT_TEXT, MS_FORMATS_ALL);
  int st = parse_options(&a, m, argc, argv);
  if (st != 0 || a.help)
    return st;
  if ((st = ms_cli_model_resolve(m, true)) != 0)
    return st;

  ms_sim_config cfg;
  ms_sim_config_init(&cfg, &m->params);
  cfg.scenario.duration = 300;
  /* the service file's backoff, under the scenario's and --backoff */
  if (m->spec != NULL && m->spec->has_backoff)
    cfg.backoff = m->spec->backoff;
  if ((st = apply_scenario(&a, m, &cfg)) != 0)
    return st;
  apply_settings(&a, m, &cfg);
  if ((st = check_engine(&a, m)) != 0)
    return st;
  ms_error err;
  if (ms_sim_config_check(&cfg, &err) != MS_OK)
    return ms_cli_usage("%s", err.msg);
  ms_landscape ls;
  if (ms_landscape_build(&m->params, &ls, &err) != MS_OK)
    return ms_cli_fail("model: %s", err.msg);
  if ((st = check_memory(&a, &cfg)) != 0)
    return st;
  ms_cli_interrupt_catch();
  if (a.seeds > 0)
    return simulate_seeds(&a, m, &cfg, &ls);
  return simulate(&a, m, &cfg, &ls);
}

int ms_cmd_simulate(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
