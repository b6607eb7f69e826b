/* SPDX-License-Identifier: MIT */
/*
 * metastable tolerance: the longest full stall (or, with --spike-size, the
 * longest spike) the service survives at an offered load without latching
 * into a storm, by bisection on the trigger's length with the DES where its
 * search fits a budget and the fluid engine elsewhere (--engine auto:
 * ms_tolerance_pick; ms_tolerance_run, model/tolerance.h), and the trigger
 * map of Huang et al., OSDI 2022 (trigger size x duration -> recovers or
 * latches) as a picture.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "json.h"
#include "plot.h"
#include "sim.h"

static const char usage[] =
    "Usage: metastable tolerance [MODEL OPTIONS] --load L [--spike-size S]\n"
    "                            [--precision R] [--max-duration D]\n"
    "                            [--engine auto|fluid|des] [--seeds N]\n"
    "                            [--seed S] [--map FILE] [--title TEXT]\n"
    "                            [--format text|json]\n"
    "\n"
    "The longest full stall of the service (all servers gone, the clients\n"
    "still sending and retrying) that it survives at offered load L without\n"
    "latching into a retry storm; with --spike-size, the longest spike of S\n"
    "more requests/s.  Each probe is one run of a simulation (erlang\n"
    "model, one tier); a probe latches when the run is still in a storm a\n"
    "horizon of 20 loop turns and three drain times after the trigger\n"
    "ended.  Below the recovery load any stall is survived; above the\n"
    "tipping load none is.  The discrete-event simulation searches each of\n"
    "N seeds and answers their median, with the lowest and the highest\n"
    "seed's boundary; the fluid one searches once, deterministic.  By\n"
    "default (--engine auto) the discrete-event one runs when its search\n"
    "fits a budget of a few seconds (small pools, where the fluid one can\n"
    "be more than 5 % off), the fluid one otherwise and for --map; the\n"
    "output says which and why.\n";

enum {
  OPT_SPIKE_SIZE = MS_OPT_SHARED_END,
  OPT_PRECISION,
  OPT_MAX_DURATION,
  OPT_MAP,
  OPT_ENGINE,
  OPT_SEEDS,
  OPT_SEED,
};

/* A macro's value as a string literal, for the help of --engine. */
#define STR_(x) #x
#define STR(x) STR_(x)

static const ms_cli_option options[] = {
    MS_CLI_SHARED(MS_OPT_LOAD),
    {"--spike-size", "S", OPT_SPIKE_SIZE,
     "a spike of S requests/s more instead of a stall"},
    {"--precision", "R", OPT_PRECISION,
     "bisection: stop when the bracket is within R of its upper end (or one "
     "bin), (0, 0.5] (default 0.01)"},
    {"--max-duration", "D", OPT_MAX_DURATION,
     "the longest trigger searched, s, (0, 86400] (default 3600)"},
    {"--engine", "auto|fluid|des", OPT_ENGINE,
     "auto (default): des when its search's estimated cost (seeds x "
     "probes x requests a probe) is at most " STR(
         MS_TOLERANCE_AUTO_BUDGET) " requests, a few seconds, "
                                   "else fluid; fluid with --map; "
                                   "fluid: the fluid simulation, "
                                   "deterministic, milliseconds; "
                                   "des: the discrete-event simulation, once "
                                   "per seed, the median "
                                   "boundary and its spread (seconds to "
                                   "minutes)"},
    {"--seeds", "N", OPT_SEEDS,
     "auto, des: seeds searched, --seed, --seed + 1, ... (1..1000, "
     "default " STR(MS_TOLERANCE_AUTO_SEEDS) " under auto, 5 with des)"},
    {"--seed", "S", OPT_SEED, "auto, des: the first seed, 0..2^53 (default 1)"},
    {"--map", "FILE", OPT_MAP,
     "draw the trigger map into FILE (.svg or .png) with gnuplot: trigger "
     "size (servers lost, or spike size) against its duration, each probe "
     "marked recovers or latches, and the boundary; many simulations "
     "(progress on a terminal)"},
    MS_CLI_SHARED(MS_OPT_TITLE),
    MS_CLI_SHARED(MS_OPT_FORMAT),
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

typedef struct {
  ms_cli_shared sh; /* --load, --title (the map's), --format */
  double spike, precision, max_duration;
  bool has_spike;
  ms_sim_engine engine;
  bool auto_engine; /* --engine auto (the default) */
  long seeds, seed;
  bool has_seed;
  const char *map;
  bool help;
} tolerance_args;

static int take_option(void *args, int c, const char *arg) {
  tolerance_args *a = args;
  switch (c) {
  case OPT_SPIKE_SIZE:
    a->has_spike = true;
    return ms_cli_rate("--spike-size", arg, 0, MS_SIM_MAX_RATE,
                       MS_RANGE_LO_OPEN, &a->spike);
  case OPT_PRECISION:
    return ms_cli_real("--precision", arg, 0, 0.5, MS_RANGE_LO_OPEN,
                       &a->precision);
  case OPT_MAX_DURATION:
    return ms_cli_duration("--max-duration", arg, 0, 86400, MS_RANGE_LO_OPEN,
                           &a->max_duration);
  case OPT_ENGINE: {
    static const char *const engines[] = {"auto", "fluid", "des", NULL};
    int k, st = ms_cli_choice("--engine", arg, engines, &k);
    if (st == 0) {
      a->auto_engine = k == 0;
      a->engine = k == 2 ? MS_ENGINE_DES : MS_ENGINE_FLUID;
    }
    return st;
  }
  case OPT_SEEDS:
    return ms_cli_long("--seeds", arg, 1, MS_TOLERANCE_MAX_SEEDS, &a->seeds);
  case OPT_SEED:
    a->has_seed = true;
    return ms_cli_long("--seed", arg, 0, 9007199254740992L, &a->seed);
  case OPT_MAP: {
    ms_plot_format f;
    if (ms_plot_format_of(arg, &f) != 0)
      return ms_cli_usage("--map: '%s' must end in .svg or .png", arg);
    a->map = arg;
    return 0;
  }
  default:
    return ms_cli_shared_option(&a->sh, c, arg);
  }
}

/* "a full stall" or "a spike of +S/s", into buf. */
/* ms_tolerance_query.stop for the command: Ctrl-C. */
static int stop_on_interrupt(void *ctx) {
  (void)ctx;
  return ms_cli_interrupted();
}

/* The bracket an interrupted search reached, for its message. */
static const char *bracket_text(const ms_tolerance *t, char *buf, size_t n) {
  if (t->latch > 0)
    snprintf(buf, n, "survived %.3g s, latched at %.3g s", t->tolerance,
             t->latch);
  else if (t->tolerance > 0)
    snprintf(buf, n, "survived %.3g s, none latched yet", t->tolerance);
  else
    snprintf(buf, n, "not bracketed yet");
  return buf;
}

static const char *trigger_text(const ms_tolerance_query *q, char *buf,
                                size_t len) {
  if (q->kind == MS_TRIGGER_SERVERS)
    snprintf(buf, len, "a full stall (0 servers)");
  else
    snprintf(buf, len, "a spike of +%.6g/s", q->spike_load);
  return buf;
}

/* Which engine ran and why, into buf: the text's "engine:" line and the
 * JSON's engine_reason.  p is --engine auto's pick, or NULL when the
 * engine was asked for. */
static const char *engine_reason(const tolerance_args *a, const ms_cli_model *m,
                                 const ms_tolerance_pick_result *p,
                                 const ms_tolerance_query *q, char *buf,
                                 size_t n) {
  int seeds = q->seeds > 0 ? q->seeds : 5;
  if (p == NULL && a->auto_engine) {
    snprintf(buf, n, "fluid (auto): --map draws with the fluid engine");
    return buf;
  }
  if (p == NULL) {
    if (q->engine == MS_ENGINE_DES)
      snprintf(buf, n, "des, %d seeds, as --engine des asks", seeds);
    else
      snprintf(buf, n, "fluid, as --engine fluid asks");
    return buf;
  }
  const ms_tolerance_cost *k = &p->cost;
  switch (p->reason) {
  case MS_TOLERANCE_PICK_BUDGET:
    snprintf(buf, n,
             "des, %d seeds (auto): the search's estimated %.2g requests "
             "(%d seeds x %d probes x %.2g) fit the budget of %.2g; the "
             "fluid engine can be more than 5 %% off on small pools",
             seeds, k->requests, k->seeds, k->probes, k->per_probe, p->budget);
    break;
  case MS_TOLERANCE_PICK_OVER_BUDGET:
    snprintf(buf, n,
             "fluid (auto): the discrete-event search's estimated %.2g "
             "requests (%d seeds x %d probes x %.2g) are over the budget "
             "of %.2g; --engine des runs it",
             k->requests, k->seeds, k->probes, k->per_probe, p->budget);
    break;
  case MS_TOLERANCE_PICK_NO_SEARCH:
    snprintf(buf, n,
             "fluid (auto): the landscape answers without a search (a "
             "fluid run checks an unbounded answer)");
    break;
  case MS_TOLERANCE_PICK_FLUID_REFUSES: {
    ms_error e;
    ms_sim_fluid_supports(&m->params.model, &e);
    snprintf(buf, n, "des, %d seeds (auto), the only engine here: %s", seeds,
             e.msg);
    break;
  }
  }
  return buf;
}

static void write_text(const ms_cli_model *m, double load,
                       const ms_tolerance_query *q, const ms_tolerance *t,
                       const char *reason) {
  char trig[64];
  trigger_text(q, trig, sizeof trig);
  const char *what = q->kind == MS_TRIGGER_SERVERS ? "stall" : "spike";
  printf("service:   %s\n", m->label);
  printf("landscape: tipping load %.6g/s, recovery load %.6g/s\n",
         t->tipping_load, t->recovery_load);
  printf("load:      %.6g/s\n", load);
  printf("trigger:   %s\n", trig);
  printf("engine:    %s\n", reason);
  switch (t->kind) {
  case MS_TOLERANCE_BOUNDED:
    printf("tolerance: %.3g s: the service survives %s of up to %.3g s at "
           "this load; one of %.3g s latches into a storm%s\n",
           t->tolerance, trig, t->tolerance, t->latch,
           t->engine == MS_ENGINE_DES ? " (medians over the seeds)" : "");
    if (t->engine == MS_ENGINE_DES)
      printf("seeds:     %d: boundaries from %.3g s to %.3g s (each seed's "
             "bracket midpoint)%s\n",
             t->seeds, t->lowest, t->highest,
             t->latched_untriggered > 0 ? " (some latched with no stall)" : "");
    break;
  case MS_TOLERANCE_UNBOUNDED:
    printf("tolerance: any: %s\n",
           load < t->recovery_load
               ? "below the recovery load no collapsed equilibrium exists, "
                 "every storm ends once the trigger is over and the backlog "
                 "has drained"
               : "the spike stays under the tipping load");
    if (t->verified)
      printf("checked:   a %s of %.3g s recovered\n", what, t->checked);
    else
      printf("checked:   no (the run that drains the longest %s would "
             "exceed a day)\n",
             what);
    break;
  case MS_TOLERANCE_BEYOND:
    printf("tolerance: at least %.6g s: no %s up to --max-duration latched\n",
           t->tolerance, what);
    break;
  case MS_TOLERANCE_OVERLOADED:
    printf("tolerance: 0 s: above the tipping load the service latches "
           "without any trigger (overloaded)\n");
    break;
  }
  if (t->engine == MS_ENGINE_DES)
    printf("search:    %d discrete-event run%s, each with the trigger at "
           "%.3g s and %.3g s after it",
           t->probes, t->probes == 1 ? "" : "s", t->lead_in, t->horizon);
  else
    printf("search:    %d fluid run%s (queue memory, bins of %.3g s), each "
           "with the trigger at %.3g s and %.3g s after it",
           t->probes, t->probes == 1 ? "" : "s", t->dt, t->lead_in, t->horizon);
  if (t->kind == MS_TOLERANCE_BOUNDED)
    printf("; bisection to %.3g s", t->resolution);
  printf("\n");
  if (t->kind == MS_TOLERANCE_BOUNDED && t->engine == MS_ENGINE_FLUID)
    printf("model:     the fluid model, deterministic: within 4 %% of the "
           "discrete-event median half-way into the band on the pools where "
           "auto takes it (up to 9 %% on small ones), too long near the "
           "tipping load, where real runs tip by chance (doc/simulation.md); "
           "--engine des gives the median and the spread\n");
}

static void json_or_null(ms_json *j, const char *key, bool has, double v) {
  if (has)
    ms_json_number(j, key, v);
  else
    ms_json_null(j, key);
}

static void write_json(const ms_cli_model *m, double load,
                       const ms_tolerance_query *q, const ms_tolerance *t,
                       const char *reason) {
  ms_json j;
  ms_cli_json_begin(&j, 1, m);
  ms_json_number(&j, "offered_load", load);
  ms_json_string(&j, "trigger",
                 q->kind == MS_TRIGGER_SERVERS ? "stall" : "spike");
  json_or_null(&j, "spike_size", q->kind == MS_TRIGGER_LOAD, q->spike_load);
  ms_json_number(&j, "tipping_load", t->tipping_load);
  ms_json_number(&j, "recovery_load", t->recovery_load);
  ms_json_string(&j, "verdict", ms_tolerance_kind_name(t->kind));
  bool bounded =
      t->kind == MS_TOLERANCE_BOUNDED || t->kind == MS_TOLERANCE_OVERLOADED;
  json_or_null(&j, "tolerance", bounded, t->tolerance);
  ms_json_bool(&j, "unbounded", t->kind == MS_TOLERANCE_UNBOUNDED);
  json_or_null(&j, "at_least", t->kind == MS_TOLERANCE_BEYOND, t->tolerance);
  json_or_null(&j, "latch", t->kind == MS_TOLERANCE_BOUNDED, t->latch);
  json_or_null(&j, "resolution", t->kind == MS_TOLERANCE_BOUNDED,
               t->resolution);
  ms_json_bool(&j, "verified", t->verified);
  ms_json_bool(&j, "monotone", t->monotone);
  ms_json_int(&j, "probes", t->probes);
  ms_json_number(&j, "lead_in", t->lead_in);
  ms_json_number(&j, "horizon", t->horizon);
  ms_json_number(&j, "dt", t->dt);
  ms_json_string(&j, "engine", ms_sim_engine_name(t->engine));
  ms_json_string(&j, "engine_reason", reason);
  bool des = t->engine == MS_ENGINE_DES && t->seeds > 0;
  json_or_null(&j, "seeds", des, (double)t->seeds);
  json_or_null(&j, "lowest", des, t->lowest);
  json_or_null(&j, "highest", des, t->highest);
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

/* ---- the trigger map ---------------------------------------------------- */

#define MAP_SIZES 8
#define MAP_DURATIONS 14

/* The trigger of map row i: servers lost i + 1 of up to MAP_SIZES evenly
 * spaced counts (a stall), or (i + 1) / 4 of the spike size. */
static void map_row(const ms_cli_model *m, const ms_tolerance_query *full,
                    int i, int rows, ms_tolerance_query *q, double *size) {
  *q = *full;
  if (full->kind == MS_TRIGGER_SERVERS) {
    long c = m->params.model.servers;
    long lost = (long)llround((double)c * (i + 1) / rows);
    if (lost < 1)
      lost = 1;
    q->servers = c - lost;
    *size = (double)lost;
  } else {
    q->spike_load = full->spike_load * (i + 1) / 4.0;
    *size = q->spike_load;
  }
}

/* A map probe that failed, or that Ctrl-C stopped (the query's stop hook,
 * kept from the search's): the message and exit status of each. */
static int map_failed(ms_cli_progress *prog, size_t done, size_t total,
                      const ms_error *err) {
  ms_cli_progress_end(prog);
  if (ms_cli_interrupted())
    return ms_cli_interrupt_exit("trigger map: %zu of %zu probes done; "
                                 "nothing written",
                                 done, total);
  return ms_cli_fail("trigger map: %s", err->msg);
}

/* Map rows: at most MAP_SIZES, one per server lost for a small pool. */
static int map_rows(const ms_cli_model *m, const ms_tolerance_query *q) {
  if (q->kind == MS_TRIGGER_LOAD)
    return MAP_SIZES;
  long c = m->params.model.servers;
  return c < MAP_SIZES ? (int)c : MAP_SIZES;
}

/* The map's probes: recovering and latching points, and the boundary
 * (the bisection's midpoint) of every row. */
typedef struct {
  double rx[MAP_SIZES * MAP_DURATIONS], ry[MAP_SIZES * MAP_DURATIONS];
  double lx[MAP_SIZES * MAP_DURATIONS], ly[MAP_SIZES * MAP_DURATIONS];
  double bx[MAP_SIZES], by[MAP_SIZES];
  size_t nr, nl, nb;
  int violations; /* recovered after a shorter trigger of its row latched */
  double dlo, dhi;
} map_points;

static int map_probe(const ms_cli_model *m, const ms_sim_config *cfg,
                     const ms_tolerance_query *full, const ms_tolerance *t,
                     map_points *mp) {
  int rows = map_rows(m, full);
  /* durations log-spaced over two decades around the full trigger's
   * tolerance, or around one turn of the loop when it has none */
  double mid =
      t->kind == MS_TOLERANCE_BOUNDED ? t->tolerance : t->lead_in / 5.0;
  if (!(mid > 0))
    mid = t->lead_in / 5.0;
  double dlo = mid / 10.0, dhi = mid * 10.0;
  mp->dlo = dlo;
  mp->dhi = dhi;
  ms_cli_progress prog;
  size_t total = (size_t)rows * (MAP_DURATIONS + 1), done = 0;
  ms_cli_progress_start(&prog, "trigger map", total);
  ms_error err;
  for (int i = 0; i < rows; i++) {
    if (ms_cli_interrupted()) {
      ms_cli_progress_end(&prog);
      return ms_cli_interrupt_exit("trigger map: %zu of %zu probes done; "
                                   "nothing written",
                                   done, total);
    }
    ms_tolerance_query q;
    double size;
    map_row(m, full, i, rows, &q, &size);
    q.max_hold = fmin(dhi, 86400.0);
    q.check_monotone = false;
    ms_tolerance ti;
    if (ms_trigger_tolerance(cfg, &q, &ti, &err) != MS_OK)
      return map_failed(&prog, done, total, &err);
    if (ti.kind == MS_TOLERANCE_BOUNDED || ti.kind == MS_TOLERANCE_OVERLOADED) {
      mp->bx[mp->nb] =
          fmax(ti.kind == MS_TOLERANCE_BOUNDED ? 0.5 * (ti.tolerance + ti.latch)
                                               : dlo,
               dlo);
      mp->by[mp->nb++] = size;
    }
    ms_cli_progress_update(&prog, ++done);
    bool latched_before = false;
    for (int k = 0; k < MAP_DURATIONS; k++) {
      double d = dlo * pow(dhi / dlo, (double)k / (MAP_DURATIONS - 1));
      bool latched;
      if (ms_tolerance_probe(cfg, &q, d, &latched, NULL, &err) != MS_OK)
        return map_failed(&prog, done, total, &err);
      if (latched_before && !latched)
        mp->violations++;
      latched_before = latched_before || latched;
      if (latched) {
        mp->lx[mp->nl] = d;
        mp->ly[mp->nl++] = size;
      } else {
        mp->rx[mp->nr] = d;
        mp->ry[mp->nr++] = size;
      }
      ms_cli_progress_update(&prog, ++done);
    }
  }
  ms_cli_progress_end(&prog);
  return 0;
}

static int draw_map(const ms_cli_model *m, const ms_sim_config *cfg,
                    const ms_tolerance_query *full, const ms_tolerance *t,
                    const tolerance_args *a) {
  static map_points mp;
  memset(&mp, 0, sizeof mp);
  int r = map_probe(m, cfg, full, t, &mp);
  if (r != 0)
    return r;
  double dlo = mp.dlo, dhi = mp.dhi;
  int violations = mp.violations;
  size_t nr = mp.nr, nl = mp.nl, nb = mp.nb;
  double *rx = mp.rx, *ry = mp.ry, *lx = mp.lx, *ly = mp.ly, *bx = mp.bx,
         *by = mp.by;
  if (violations > 0)
    fprintf(stderr,
            "metastable: trigger map: %d probes recovered after a shorter "
            "trigger of the same size latched\n",
            violations);
  ms_plot_series s[3] = {
      {.title = "recovers",
       .style = MS_PLOT_OPEN_POINTS,
       .color = MS_PLOT_GREEN,
       .width = 1.5,
       .n = nr,
       .x = rx,
       .y = ry},
      {.title = "latches into a storm",
       .style = MS_PLOT_POINTS,
       .color = MS_PLOT_VERMILION,
       .width = 1.5,
       .n = nl,
       .x = lx,
       .y = ly},
      {.title = "boundary (bisection)",
       .style = MS_PLOT_SOLID,
       .color = MS_PLOT_BLUE,
       .width = 2,
       .n = nb,
       .x = bx,
       .y = by},
  };
  char sub[600], title[160];
  snprintf(sub, sizeof sub,
           "%s; offered load %.6g/s (tipping %.6g/s, "
           "recovery %.6g/s)",
           m->summary, a->sh.load, t->tipping_load, t->recovery_load);
  snprintf(title, sizeof title,
           "%s%strigger map: which %s outlasts its "
           "trigger",
           m->name[0] ? m->name : "", m->name[0] ? ": " : "",
           full->kind == MS_TRIGGER_SERVERS ? "stall" : "spike");
  ms_plot p;
  ms_plot_init(&p);
  p.title = a->sh.title ? a->sh.title : title;
  p.subtitle = sub;
  p.xlabel = "trigger duration (s)";
  p.ylabel = full->kind == MS_TRIGGER_SERVERS ? "servers lost during the stall"
                                              : "spike size (requests/s added)";
  p.xlog = true;
  p.xmin = dlo / 1.3;
  p.xmax = dhi * 1.3;
  p.ymin = 0;
  p.legend = "below";
  p.legend_columns = 3;
  p.series = s;
  p.n_series = 3;
  /* a spike whose peak stays under the tipping load never latches */
  char mtext[96];
  snprintf(mtext, sizeof mtext, "peak at the tipping load (+%.4g/s)",
           t->tipping_load - a->sh.load);
  ms_plot_marker mk = {.vertical = false,
                       .at = t->tipping_load - a->sh.load,
                       .text = mtext,
                       .color = MS_PLOT_GREY};
  if (full->kind == MS_TRIGGER_LOAD && mk.at > 0) {
    p.markers = &mk;
    p.n_markers = 1;
  }
  char perr[512];
  if (ms_plot_write(&p, a->map, perr, sizeof perr) != 0)
    return ms_cli_fail("%s", perr);
  return 0;
}

static int run(ms_cli_model *m, int argc, char **argv) {
  tolerance_args a = {0};
  ms_cli_shared_init(&a.sh, MS_FORMAT_TEXT, MS_FORMATS_TEXT_JSON);
  a.auto_engine = true;
  int r = ms_cli_parse(argc, argv, &syntax, m, take_option, &a, &a.help, NULL);
  if (r != 0 || a.help)
    return r;
  if (isnan(a.sh.load))
    return ms_cli_usage("give the offered load with --load L (requests/s)");
  if ((r = ms_cli_model_resolve(m, true)) != 0)
    return r;
  if (m->params.model.kind != MS_MODEL_ERLANG)
    return ms_cli_usage("tolerance needs the erlang model (--servers, "
                        "--service-time, --timeout): the simulation carries "
                        "its queue");
  if (m->params.policy.tiers != 1)
    return ms_cli_usage("--tiers: tolerance simulates one retrying tier, "
                        "not %d",
                        m->params.policy.tiers);
  ms_sim_config cfg;
  ms_sim_config_init(&cfg, &m->params);
  /* the DES's service times: the one distribution a cv of 1 or 0 names,
   * else lognormal (any cv > 0), as simulate picks them */
  const ms_failure_model *fm = &m->params.model;
  double cv = fm->has_service_time_cv ? fm->service_time_cv : 1.0;
  cfg.service_dist = cv == 1.0   ? MS_SERVICE_EXPONENTIAL
                     : cv == 0.0 ? MS_SERVICE_DETERMINISTIC
                                 : MS_SERVICE_LOGNORMAL;
  cfg.scenario.offered_load = a.sh.load;
  ms_tolerance_query q = {
      .kind = a.has_spike ? MS_TRIGGER_LOAD : MS_TRIGGER_SERVERS,
      .servers = 0,
      .spike_load = a.spike,
      .rel_tol = a.precision,
      .max_hold = a.max_duration,
      .check_monotone = a.engine == MS_ENGINE_FLUID,
      .engine = a.engine,
      .seeds = (int)a.seeds,
  };
  if (a.has_seed)
    cfg.seed = (uint64_t)a.seed;
  if (!a.auto_engine && a.engine == MS_ENGINE_DES && a.map != NULL)
    return ms_cli_usage("--map draws with the fluid engine: leave out "
                        "--engine des");
  if (!a.auto_engine && a.engine != MS_ENGINE_DES &&
      (a.seeds != 0 || a.has_seed))
    return ms_cli_usage("--seeds and --seed are for --engine des or auto");
  ms_tolerance t = {0};
  ms_error err;
  /* --engine auto: the DES where its search fits the budget, the fluid
   * engine elsewhere and for the map */
  ms_tolerance_pick_result pick;
  bool picked = a.auto_engine && a.map == NULL;
  if (picked) {
    if (q.seeds == 0)
      q.seeds = MS_TOLERANCE_AUTO_SEEDS;
    if (ms_tolerance_pick(&cfg, &q, &pick, &err) != MS_OK)
      return ms_cli_fail("tolerance: %s", err.msg);
    q.engine = pick.engine;
    q.check_monotone = q.engine == MS_ENGINE_FLUID;
  }
  if (q.engine != MS_ENGINE_DES)
    q.seeds = 0;
  char reason[512];
  engine_reason(&a, m, picked ? &pick : NULL, &q, reason, sizeof reason);
  /* Ctrl-C ends the search at the next window of the probe under way */
  ms_cli_interrupt_catch();
  q.stop = stop_on_interrupt;
  if (ms_tolerance_run(&cfg, &q, &t, &err) != MS_OK) {
    if (t.stopped)
      return ms_cli_interrupt_exit(
          "%d probes done, the stall %s; nothing written", t.probes,
          bracket_text(&t, (char[96]){0}, 96));
    return ms_cli_fail("tolerance: %s", err.msg);
  }
  if (a.map != NULL && (r = draw_map(m, &cfg, &q, &t, &a)) != 0)
    return r;
  if (!t.monotone)
    fprintf(stderr, "metastable: tolerance: the outcome is not monotone in "
                    "the trigger's length (half the tolerance latched, or "
                    "twice the latching length recovered)\n");
  if (a.sh.format == MS_FORMAT_JSON)
    write_json(m, a.sh.load, &q, &t, reason);
  else
    write_text(m, a.sh.load, &q, &t, reason);
  return ms_cli_finish_output(MS_EXIT_OK);
}

int ms_cmd_tolerance(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
