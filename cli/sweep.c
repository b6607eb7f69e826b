/* SPDX-License-Identifier: MIT */
/*
 * metastable sweep: every equilibrium of a service over a range of offered
 * loads (ms_equilibria), as a table, and the bifurcation diagram drawn by
 * gnuplot (cli/plot.h).
 *
 * The table samples the offered load; the picture instead follows the curve
 * lambda(x) = x / A(p(x)) itself (doc/design.md §1.3), piece by monotone piece
 * of the landscape, refined where it bends, so the folds are drawn sharp
 * whatever --steps says: increasing pieces are the stable branches (solid),
 * decreasing ones the unstable branch (dashed).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "json.h"
#include "layout.h"
#include "plot.h"
#include "report.h"

static const char usage[] =
    "Usage: metastable sweep [MODEL OPTIONS] --from L0 --to L1 --steps N\n"
    "                        [--format csv|json] [--plot FILE.svg|FILE.png]\n"
    "                        [--load L] [--title TEXT] [--log-y]\n"
    "                        [--hazard-horizon D]\n"
    "       metastable sweep [MODEL OPTIONS] --vary KNOB --from A --to B\n"
    "                        [--steps N] --load L [--format text|csv|json]\n"
    "                        [--plot FILE.svg|FILE.png] [--title TEXT]\n"
    "\n"
    "Every equilibrium and its stability at the N + 1 offered loads\n"
    "L0, L0 + (L1 - L0)/N, ..., L1: in CSV one row per equilibrium, columns\n"
    "offered_load,equilibria,index,effective_load,failure_probability,\n"
    "amplification,stable,time_to_storm,storm_hazard; in JSON one object\n"
    "per offered load.  time_to_storm is the mean time, s, until a storm\n"
    "starts by itself from a healthy pool, 1e+300 for never, and\n"
    "storm_hazard the probability of one within the horizon (a prediction\n"
    "of the model, doc/design.md 1.12); both empty (JSON null) where the\n"
    "model has no answer.\n"
    "\n"
    "With --vary, one row per value of a knob of the service instead: the\n"
    "service with that knob replaced, its tipping load, recovery load, band\n"
    "width and state at the offered load L (columns KNOB,tipping_load,\n"
    "recovery_load,band_width,state).\n";

enum {
  OPT_FROM = MS_OPT_SHARED_END,
  OPT_TO,
  OPT_STEPS,
  OPT_LOG_Y,
  OPT_VARY,
};

static const ms_cli_option options[] = {
    {"--from", "L0", OPT_FROM,
     "the first offered load, requests/s, >= 0; with --vary the knob's first "
     "value A, in its unit and within its range (see the model options)"},
    {"--to", "L1", OPT_TO,
     "the last offered load, requests/s, above L0; with --vary the knob's "
     "last value B, above A"},
    {"--steps", "N", OPT_STEPS,
     "intervals from L0 to L1, 1..100000000; with --vary: retries, servers: "
     "N + 1 values evenly spread, rounded (default: every whole number from "
     "A to B); timeout, budget: N intervals (default 10); at most 10000 "
     "rows"},
    {"--vary", "KNOB", OPT_VARY,
     "sweep a knob of the service instead of the load: retries, servers "
     "(whole numbers), timeout (a duration) or budget (the retry budget, a "
     "share, also as 10%)"},
    {"--load", "L", MS_OPT_LOAD,
     "mark L as the operating point on the plot; with --vary the offered "
     "load, requests/s, at which each row's state is given (required)"},
    {"--format", "text|csv|json", MS_OPT_FORMAT,
     "csv (default) or json; with --vary also text, the default there"},
    {"--plot", "FILE", MS_OPT_PLOT,
     "draw into FILE (.svg or .png) with gnuplot the bifurcation diagram "
     "(effective load against offered load), or with --vary the tipping and "
     "recovery loads against the knob, the band between them shaded, a line "
     "at L; the table is then written only when --format is given"},
    {"--title", "TEXT", MS_OPT_TITLE,
     "the plot's title (default: the service's name)"},
    {"--log-y", NULL, OPT_LOG_Y,
     "effective load on a log axis (the default when the collapsed branch "
     "exceeds 30 times capacity)"},
    MS_CLI_SHARED(MS_OPT_HAZARD_HORIZON),
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

/* ---- the table ------------------------------------------------------- */

static int write_table(const ms_landscape *ls, double from, double to,
                       long steps, ms_format format, double horizon) {
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "sweep", (size_t)steps + 1);
  ms_cli_interrupt_catch();
  ms_json j;
  char b[6][32];
  if (format == MS_FORMAT_JSON) {
    ms_json_init(&j, stdout, 1);
    ms_json_begin_array(&j, NULL);
  } else {
    puts("offered_load,equilibria,index,effective_load,failure_probability,"
         "amplification,stable,time_to_storm,storm_hazard");
  }
  long i;
  for (i = 0; i <= steps && !ms_cli_interrupted(); i++) {
    double lam = i == steps ? to : from + (to - from) * ((double)i / steps);
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n;
    ms_error err;
    char msg[256];
    int st = ms_equilibria(ls, lam, eq, &n, &err);
    if (st != MS_OK || ms_equilibria_finite(eq, n, lam, msg, sizeof msg)) {
      ms_cli_progress_end(&prog);
      if (format == MS_FORMAT_JSON)
        fputc('\n', stdout);
      if (st == MS_OK)
        return ms_cli_fail("model: %s", msg);
      return ms_cli_fail("model at offered load %s: %s",
                         ms_format_double(b[0], lam), err.msg);
    }
    /* the storm hazard at this load (doc/design.md §1.12) */
    ms_cli_hazard hz;
    ms_cli_hazard_at(&ls->params, lam, horizon, &hz);
    if (format == MS_FORMAT_JSON) {
      ms_json_begin_object(&j, NULL);
      ms_json_number(&j, "offered_load", lam);
      ms_json_number(&j, "time_to_storm", hz.seconds);
      ms_json_number(&j, "storm_hazard", hz.hazard);
      if (hz.ok)
        ms_json_null(&j, "hazard_note");
      else
        ms_json_string(&j, "hazard_note", hz.why);
      ms_json_begin_array(&j, "equilibria");
      for (int k = 0; k < n; k++) {
        ms_json_begin_object(&j, NULL);
        ms_json_number(&j, "effective_load", eq[k].effective_load);
        ms_json_number(&j, "failure_probability", eq[k].failure_probability);
        ms_json_number(&j, "amplification", eq[k].amplification);
        ms_json_bool(&j, "stable", eq[k].stable);
        ms_json_end_object(&j);
      }
      ms_json_end_array(&j);
      ms_json_end_object(&j);
    } else {
      ms_format_double(b[0], lam);
      if (hz.ok) {
        ms_format_double(b[4], hz.seconds);
        ms_format_double(b[5], hz.hazard);
      } else {
        b[4][0] = b[5][0] = '\0';
      }
      for (int k = 0; k < n; k++)
        printf("%s,%d,%d,%s,%s,%s,%d,%s,%s\n", b[0], n, k,
               ms_format_double(b[1], eq[k].effective_load),
               ms_format_double(b[2], eq[k].failure_probability),
               ms_format_double(b[3], eq[k].amplification), eq[k].stable, b[4],
               b[5]);
    }
    ms_cli_progress_update(&prog, (size_t)i);
  }
  if (format == MS_FORMAT_JSON) {
    ms_json_end_array(&j);
    ms_json_finish(&j);
  }
  ms_cli_progress_end(&prog);
  if (i <= steps)
    return ms_cli_interrupt_exit("%ld of %ld loads written (the rows above "
                                 "are complete)",
                                 i, steps + 1);
  return MS_EXIT_OK;
}

/* ---- the curve lambda(x) --------------------------------------------- */

typedef struct {
  double *lam, *x;
  size_t n, cap;
  int oom;
} curve;

static void push(curve *c, double lam, double x) {
  if (c->oom)
    return;
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 1024;
    double *a = realloc(c->lam, cap * sizeof *a);
    if (a)
      c->lam = a;
    double *b = a ? realloc(c->x, cap * sizeof *b) : NULL;
    if (b)
      c->x = b;
    if (!a || !b) {
      c->oom = 1;
      return;
    }
    c->cap = cap;
  }
  c->lam[c->n] = lam;
  c->x[c->n] = x;
  c->n++;
}

static double lambda_at(const ms_landscape *ls, double x) {
  double lam;
  if (ms_offered_load_at(&ls->params, x, &lam, NULL) != MS_OK)
    return NAN;
  return lam;
}

/* Add the points of (x1, x2] where the curve bends: split while the
 * midpoint's offered load is off the chord by more than tol. */
static void refine(const ms_landscape *ls, curve *c, double x1, double l1,
                   double x2, double l2, double tol, int depth) {
  double xm = 0.5 * (x1 + x2), lm = lambda_at(ls, xm);
  if (depth < 22 && xm > x1 && xm < x2 && fabs(lm - 0.5 * (l1 + l2)) > tol) {
    refine(ls, c, x1, l1, xm, lm, tol, depth + 1);
    refine(ls, c, xm, lm, x2, l2, tol, depth + 1);
  } else {
    push(c, l2, x2);
  }
}

/* The curve on [xa, xb] (both ends included). */
static void sample(const ms_landscape *ls, curve *c, double xa, double xb,
                   double tol) {
  const int grid = 256;
  double xp = xa, lp = lambda_at(ls, xa);
  push(c, lp, xp);
  for (int i = 1; i <= grid; i++) {
    double x = i == grid ? xb : xa + (xb - xa) * ((double)i / grid);
    double l = lambda_at(ls, x);
    refine(ls, c, xp, lp, x, l, tol, 0);
    xp = x;
    lp = l;
  }
}

/* ---- the picture ----------------------------------------------------- */

#define MAX_PIECES (MS_MAX_EXTREMA + 2)

/* A unit for an axis whose values reach `max`: 1, or thousands, millions,
 * billions, so that tick labels stay short numbers ("12", not "1.2e+07"). */
static double axis_unit(double max, const char **name) {
  static const char *const names[] = {"", "thousand ", "million ", "billion "};
  int k = 0;
  if (max >= 1e5)
    k = (int)floor(log10(max) / 3);
  if (k > 3)
    k = 3;
  *name = names[k];
  return pow(1e3, k);
}

/* A load for a label: 83.23, 25k, 2.5M. */
static const char *short_load(char buf[32], double v) {
  double a = fabs(v);
  if (a >= 1e9)
    snprintf(buf, 32, "%.4gG", v / 1e9);
  else if (a >= 1e6)
    snprintf(buf, 32, "%.4gM", v / 1e6);
  else if (a >= 1e4)
    snprintf(buf, 32, "%.4gk", v / 1e3);
  else
    snprintf(buf, 32, "%.4g", v);
  return buf;
}

static void scale(double *v, size_t n, double unit) {
  for (size_t i = 0; i < n; i++)
    v[i] /= unit;
}

/* Everything the picture is made of, built step by step by the functions
 * below.  The plot keeps pointers into the arrays and texts here, so they
 * live as long as the picture is drawn. */
typedef struct {
  const ms_landscape *ls;
  double from, to; /* the offered loads on the x axis */
  double load;     /* --load, or NaN */
  /* the curve, piece by monotone piece, between the cuts */
  double cut[MAX_PIECES + 1];
  int n_pieces;
  curve pieces[MAX_PIECES];
  double ymax; /* largest effective load drawn, attempts/s */
  /* axis units: thousands, millions, ... */
  double xu, yu;
  const char *xu_name, *yu_name;
  double cap_y; /* capacity in y axis units */
  ms_plot p;
  ms_layout sc; /* what the texts must not hide */
  ms_plot_series series[MAX_PIECES + 2];
  size_t ns;
  /* the equilibria at --load: stable ones, then the unstable ones */
  double op_lam[MS_MAX_EQUILIBRIA], op_x[MS_MAX_EQUILIBRIA];
  double un_lam[MS_MAX_EQUILIBRIA], un_x[MS_MAX_EQUILIBRIA];
  char op_title[96];
  bool has_band;
  ms_plot_band band;
  char band_label[96], tip_text[96], rec_text[96], cap_text[96], op_text[64];
  ms_plot_marker markers[4];
  size_t nm;
  ms_plot_arrow arrows[2];
  size_t na;
  char tip_arrow[64], rec_arrow[64];
  char title[160], subtitle[400], xlabel[128], ylabel[128];
} picture;

/* The pieces of the curve: between breakpoints, then from the last one
 * until lambda passes `to`.  Without a fold the one piece is split at
 * capacity, to show where the loop engages. */
static void cut_pieces(picture *pc) {
  const ms_landscape *ls = pc->ls;
  double to = pc->to;
  double A1;
  ms_amplification_at(&ls->params, 1.0, to, &A1, NULL);
  double x_end = fmax(ls->break_x[ls->n_breaks - 1], to);
  while (lambda_at(ls, x_end) < to * 1.02 && x_end < 4 * to * A1 + 1)
    x_end *= 1.25;
  int n_cut = 0;
  for (int i = 0; i < ls->n_breaks; i++)
    pc->cut[n_cut++] = ls->break_x[i];
  if (!ls->has_fold && ls->saturation_load > pc->cut[n_cut - 1] &&
      ls->saturation_load < x_end)
    pc->cut[n_cut++] = ls->saturation_load;
  pc->cut[n_cut++] = x_end;
  pc->n_pieces = n_cut - 1;
}

/* Sample every piece, and find the largest effective load within the
 * offered loads shown: it sets the y axis.  Returns 0, or MS_EXIT_RUNTIME
 * when memory ran out. */
static int sample_pieces(picture *pc) {
  double tol = 5e-4 * (pc->to - pc->from);
  pc->ymax = pc->ls->saturation_load;
  for (int i = 0; i < pc->n_pieces; i++) {
    curve *c = &pc->pieces[i];
    sample(pc->ls, c, pc->cut[i], pc->cut[i + 1], tol);
    if (c->oom)
      return ms_cli_fail("out of memory drawing the curve");
    for (size_t k = 0; k < c->n; k++)
      if (c->lam[k] >= pc->from && c->lam[k] <= pc->to)
        pc->ymax = fmax(pc->ymax, c->x[k]);
  }
  return MS_EXIT_OK;
}

/* The axes, and the curve in their units.  When the collapsed branch
 * towers over capacity (layered retries amplify up to (r + 1)^k), a linear
 * axis flattens the healthy branch and the fold into the floor: a log
 * axis then.  The legend goes below the plot, in two columns: inside, it
 * would hide some branch. */
static void set_frame(picture *pc, bool log_y) {
  const ms_landscape *ls = pc->ls;
  bool ylog = log_y || pc->ymax > 30 * ls->saturation_load;
  pc->xu = axis_unit(pc->to, &pc->xu_name);
  pc->yu = ylog ? 1 : axis_unit(pc->ymax * 1.08, &pc->yu_name);
  if (ylog)
    pc->yu_name = "";
  for (int i = 0; i < pc->n_pieces; i++) {
    scale(pc->pieces[i].lam, pc->pieces[i].n, pc->xu);
    scale(pc->pieces[i].x, pc->pieces[i].n, pc->yu);
  }
  ms_plot *p = &pc->p;
  p->xmin = pc->from / pc->xu;
  p->xmax = pc->to / pc->xu;
  if (ylog) {
    p->ylog = true;
    p->ymin = 0.02 * ls->saturation_load;
    p->ymax = pc->ymax * 1.5;
  } else {
    p->ymin = 0;
    p->ymax = pc->ymax * 1.08 / pc->yu;
  }
  p->legend = "outside below center horizontal";
  p->legend_columns = 2;
  p->height = 800;
}

/* One series per piece, styled by its kind: the healthy branch (the first
 * piece, or one below capacity), the collapsed one (the last, or one above
 * capacity), the unstable boundary between the basins (a falling piece).
 * A piece too small to see (a fold narrower than a pixel, a rounding
 * artefact at a kink) is left out, and so is its legend entry; a kind is
 * named in the legend once. */
static void add_branches(picture *pc) {
  static const char *const titles[3] = {
      "stable: healthy branch", "stable: collapsed branch (retry storm)",
      "unstable: boundary between the basins"};
  static const char *const colors[3] = {MS_PLOT_BLUE, MS_PLOT_VERMILION,
                                        MS_PLOT_GREY};
  bool titled[3] = {false, false, false};
  for (int i = 0; i < pc->n_pieces; i++) {
    curve *c = &pc->pieces[i];
    double gx0 = INFINITY, gx1 = -INFINITY, gy0 = INFINITY, gy1 = -INFINITY;
    for (size_t k = 0; k < c->n; k++) {
      double gx = ms_plot_graph_x(&pc->p, c->lam[k]),
             gy = ms_plot_graph_y(&pc->p, c->x[k]);
      gx0 = fmin(gx0, gx), gx1 = fmax(gx1, gx);
      gy0 = fmin(gy0, gy), gy1 = fmax(gy1, gy);
    }
    if (!(c->n > 1 && (gx1 - gx0 > 2e-3 || gy1 - gy0 > 2e-3)))
      continue;
    for (size_t k = 1; k < c->n; k++)
      ms_layout_segment(&pc->sc, c->lam[k - 1], c->x[k - 1], c->lam[k],
                        c->x[k]);
    bool rising = c->lam[c->n - 1] > c->lam[0];
    /* 0 healthy, 1 collapsed, 2 unstable */
    int kind = !rising ? 2 : i == 0 ? 0 : i == pc->n_pieces - 1 ? 1 : 0;
    pc->series[pc->ns++] = (ms_plot_series){
        .title = titled[kind] ? NULL : titles[kind],
        .style = rising ? MS_PLOT_SOLID : MS_PLOT_DASHED,
        .color = colors[kind],
        .width = rising ? 3 : 2.5,
        .n = c->n,
        .x = c->lam,
        .y = c->x,
    };
    titled[kind] = true;
  }
}

/* The operating point: every equilibrium at --load, filled when stable,
 * hollow when not.  An unstable one that coincides with a stable one (at a
 * fold or a kink) is the same point, drawn once. */
static void add_operating_point(picture *pc) {
  double load = pc->load, xu = pc->xu, yu = pc->yu;
  ms_equilibrium eq[MS_MAX_EQUILIBRIA];
  int n = 0;
  size_t n_op = 0, n_un = 0;
  char b1[32];
  if (ms_equilibria(pc->ls, load, eq, &n, NULL) != MS_OK)
    n = 0;
  for (int k = 0; k < n; k++)
    if (eq[k].stable) {
      pc->op_lam[n_op] = load / xu;
      pc->op_x[n_op++] = eq[k].effective_load / yu;
    }
  for (int k = 0; k < n; k++) {
    bool same = false;
    for (size_t j = 0; j < n_op; j++)
      same |= fabs(ms_plot_graph_y(&pc->p, eq[k].effective_load / yu) -
                   ms_plot_graph_y(&pc->p, pc->op_x[j])) < 1e-3;
    if (!eq[k].stable && !same) {
      pc->un_lam[n_un] = load / xu;
      pc->un_x[n_un++] = eq[k].effective_load / yu;
    }
  }
  for (size_t j = 0; j < n_op; j++)
    ms_layout_point(&pc->sc, pc->op_lam[j], pc->op_x[j]);
  for (size_t j = 0; j < n_un; j++)
    ms_layout_point(&pc->sc, pc->un_lam[j], pc->un_x[j]);
  snprintf(pc->op_title, sizeof pc->op_title, "equilibria at the load %s req/s",
           short_load(b1, load));
  if (n_op)
    pc->series[pc->ns++] = (ms_plot_series){.title = pc->op_title,
                                            .style = MS_PLOT_POINTS,
                                            .color = "#000000",
                                            .width = 1.8,
                                            .n = n_op,
                                            .x = pc->op_lam,
                                            .y = pc->op_x};
  if (n_un)
    pc->series[pc->ns++] = (ms_plot_series){.title = "unstable one there",
                                            .style = MS_PLOT_OPEN_POINTS,
                                            .color = "#000000",
                                            .width = 1.8,
                                            .n = n_un,
                                            .x = pc->un_lam,
                                            .y = pc->un_x};
}

/* A vertical line at an offered load, its text above the plot where no
 * data can hide it. */
static void add_load_line(picture *pc, double at, const char *text) {
  pc->markers[pc->nm++] = (ms_plot_marker){.vertical = true,
                                           .at = at / pc->xu,
                                           .text = text,
                                           .color = "#8a5a00",
                                           .on_axis = true};
}

/* The band, with the tipping and recovery loads as vertical lines (their
 * texts moved apart when the band is narrow), and the lines the texts
 * placed later must not hide: those loads, --load and capacity.  A band
 * of zero width (no fold, or one that rounding alone opened) is one line:
 * the storm starts and ends at the same load. */
static void add_band(picture *pc) {
  const ms_landscape *ls = pc->ls;
  char b1[32];
  pc->has_band = ls->has_fold &&
                 ls->tipping_load - ls->recovery_load > 1e-9 * ls->tipping_load;
  if (pc->has_band) {
    snprintf(pc->band_label, sizeof pc->band_label,
             "hysteresis band (bistable)");
    pc->band = (ms_plot_band){.from = ls->recovery_load / pc->xu,
                              .to = ls->tipping_load / pc->xu,
                              .label = pc->band_label,
                              .color = MS_PLOT_ORANGE};
    snprintf(pc->tip_text, sizeof pc->tip_text, "tipping %s req/s",
             short_load(b1, ls->tipping_load));
    snprintf(pc->rec_text, sizeof pc->rec_text, "recovery %s req/s",
             short_load(b1, ls->recovery_load));
    add_load_line(pc, ls->tipping_load, pc->tip_text);
    add_load_line(pc, ls->recovery_load, pc->rec_text);
    ms_layout_vertical(&pc->sc, ls->recovery_load / pc->xu);
  } else {
    snprintf(pc->tip_text, sizeof pc->tip_text,
             "tipping = recovery %s req/s (no hysteresis band)",
             short_load(b1, ls->tipping_load));
    add_load_line(pc, ls->tipping_load, pc->tip_text);
  }
  ms_layout_vertical(&pc->sc, ls->tipping_load / pc->xu);
  if (!isnan(pc->load))
    ms_layout_vertical(&pc->sc, pc->load / pc->xu);
  pc->cap_y = ls->saturation_load / pc->yu;
  ms_layout_horizontal(&pc->sc, pc->cap_y);
}

/* The hysteresis loop, as arrows where the service jumps: past the
 * tipping load to the collapsed branch, and back to the healthy one only
 * at the recovery load. */
static void add_arrows(picture *pc) {
  const ms_landscape *ls = pc->ls;
  double xu = pc->xu, yu = pc->yu;
  char b1[32], b2[32];
  snprintf(pc->tip_arrow, sizeof pc->tip_arrow, "above %s req/s: retry storm",
           short_load(b1, ls->tipping_load));
  snprintf(pc->rec_arrow, sizeof pc->rec_arrow, "below %s req/s: storm ends",
           short_load(b2, ls->recovery_load));
  if (pc->has_band) {
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n;
    if (ms_equilibria(ls, ls->tipping_load, eq, &n, NULL) == MS_OK && n > 1)
      pc->arrows[pc->na++] =
          (ms_plot_arrow){.x1 = ls->tipping_load / xu,
                          .y1 = ls->tipping_effective_load / yu,
                          .x2 = ls->tipping_load / xu,
                          .y2 = eq[n - 1].effective_load / yu,
                          .text = pc->tip_arrow,
                          .color = MS_PLOT_VERMILION};
    if (ms_equilibria(ls, ls->recovery_load, eq, &n, NULL) == MS_OK && n > 1)
      pc->arrows[pc->na++] =
          (ms_plot_arrow){.x1 = ls->recovery_load / xu,
                          .y1 = ls->recovery_effective_load / yu,
                          .x2 = ls->recovery_load / xu,
                          .y2 = eq[0].effective_load / yu,
                          .text = pc->rec_arrow,
                          .color = MS_PLOT_BLUE,
                          .text_before = true};
  }
  for (size_t i = 0; i < pc->na; i++)
    ms_layout_segment(&pc->sc, pc->arrows[i].x1, pc->arrows[i].y1,
                      pc->arrows[i].x2, pc->arrows[i].y2);
}

/* The texts placed last, off everything drawn before: the arrows' beside
 * them (the storm's to the right of the tipping load and the recovery's to
 * the left of the recovery load, where they point away from the band), or
 * in the legend when that would hide a branch; then capacity's along its
 * line, then the operating point's along its line. */
static void place_texts(picture *pc) {
  char b1[32];
  for (size_t i = 0; i < pc->na; i++)
    pc->arrows[i].text_in_legend =
        ms_layout_arrow_text(&pc->sc, &pc->arrows[i], 0.9) > 0.9;
  snprintf(pc->cap_text, sizeof pc->cap_text, "capacity %s = %s attempts/s",
           pc->ls->params.model.kind == MS_MODEL_ERLANG ? "c·μ" : "C",
           short_load(b1, pc->ls->saturation_load));
  pc->markers[pc->nm] = (ms_plot_marker){.vertical = false,
                                         .at = pc->cap_y,
                                         .text = pc->cap_text,
                                         .color = MS_PLOT_GREEN};
  ms_layout_horizontal_text(&pc->sc, &pc->markers[pc->nm++]);
  if (!isnan(pc->load)) {
    snprintf(pc->op_text, sizeof pc->op_text, "load %s req/s",
             short_load(b1, pc->load));
    pc->markers[pc->nm] = (ms_plot_marker){.vertical = true,
                                           .at = pc->load / pc->xu,
                                           .text = pc->op_text,
                                           .color = "#000000",
                                           .along = true,
                                           .text_before = true};
    ms_layout_along_text(&pc->sc, &pc->markers[pc->nm++]);
  }
}

/* The title (--title, else one naming the service), the model in one line
 * below it, the axes' labels in their units; then the picture is handed to
 * gnuplot.  Returns 0, or MS_EXIT_RUNTIME with gnuplot's complaint. */
static int write_picture(picture *pc, const ms_cli_model *m,
                         const char *title_opt, const char *path) {
  if (title_opt)
    snprintf(pc->title, sizeof pc->title, "%s", title_opt);
  else if (m->name[0])
    snprintf(pc->title, sizeof pc->title, "Retry-storm bifurcation diagram: %s",
             m->name);
  else
    snprintf(pc->title, sizeof pc->title, "Retry-storm bifurcation diagram");
  snprintf(pc->subtitle, sizeof pc->subtitle, "%s", m->summary);
  snprintf(pc->xlabel, sizeof pc->xlabel,
           "offered load λ (%srequests/s, first attempts)", pc->xu_name);
  snprintf(pc->ylabel, sizeof pc->ylabel,
           "effective load x (%sattempts/s, retries included)", pc->yu_name);

  ms_plot *p = &pc->p;
  p->title = pc->title;
  p->subtitle = pc->subtitle;
  p->xlabel = pc->xlabel;
  p->ylabel = pc->ylabel;
  p->series = pc->series;
  p->n_series = pc->ns;
  p->bands = pc->has_band ? &pc->band : NULL;
  p->n_bands = pc->has_band ? 1 : 0;
  p->markers = pc->markers;
  p->n_markers = pc->nm;
  p->arrows = pc->arrows;
  p->n_arrows = pc->na;
  char err[600];
  if (ms_plot_write(p, path, err, sizeof err) != 0)
    return ms_cli_fail("%s", err);
  return MS_EXIT_OK;
}

/* The bifurcation diagram into path.  The order of the steps matters: each
 * text is placed off what was drawn before it. */
static int draw(const ms_cli_model *m, const ms_landscape *ls, double from,
                double to, double load, const char *title_opt, bool log_y,
                const char *path) {
  picture pc;
  memset(&pc, 0, sizeof pc);
  pc.ls = ls;
  pc.from = from;
  pc.to = to;
  pc.load = load;
  cut_pieces(&pc);
  ms_plot_init(&pc.p);
  ms_layout_init(&pc.sc, &pc.p);
  int rc = sample_pieces(&pc);
  if (rc == MS_EXIT_OK) {
    set_frame(&pc, log_y);
    add_branches(&pc);
    if (!isnan(load))
      add_operating_point(&pc);
    add_band(&pc);
    add_arrows(&pc);
    place_texts(&pc);
    if (pc.sc.oom)
      rc = ms_cli_fail("out of memory drawing the curve");
  }
  if (rc == MS_EXIT_OK)
    rc = write_picture(&pc, m, title_opt, path);
  ms_layout_free(&pc.sc);
  for (int i = 0; i < pc.n_pieces; i++)
    free(pc.pieces[i].lam), free(pc.pieces[i].x);
  return rc;
}

/* ---- the command ----------------------------------------------------- */

/* What the command line asks for. */
typedef struct {
  double from, to;  /* NaN until given */
  long steps;       /* 0 until given */
  ms_cli_shared sh; /* --load, --format (without it, --plot draws only),
                       --plot, --title */
  bool log_y;
  int vary;                      /* index into knobs, or -1: over the load */
  const char *from_arg, *to_arg; /* --from, --to as given */
  bool help;                     /* --help: print it and do nothing else */
} sweep_args;

/* ---- --vary: one row per value of a knob ------------------------------ */

/* The knobs --vary takes: the model option that sets each (so a row is
 * exactly the service `metastable solve` sees with that option given) and
 * the parameter whose MS_PARAMS range --from and --to must be in. */
typedef struct {
  const char *name; /* --vary NAME */
  int opt;          /* the model option */
  ms_param param;
} vary_knob;

static const vary_knob knobs[] = {
    {"retries", MS_OPT_RETRIES, MS_PARAM_RETRIES},
    {"servers", MS_OPT_SERVERS, MS_PARAM_SERVERS},
    {"timeout", MS_OPT_TIMEOUT, MS_PARAM_TIMEOUT},
    {"budget", MS_OPT_RETRY_BUDGET, MS_PARAM_RETRY_BUDGET},
};
static const char *const knob_names[] = {"retries", "servers", "timeout",
                                         "budget", NULL};

#define MAX_VARY_ROWS 10000

/* The options of a sweep with --vary: --from and --to in the knob's unit
 * and range (ms_cli_param over MS_PARAMS), --load, no option of the sweep
 * over the load.  Returns 0 or MS_EXIT_USAGE. */
static int check_vary_args(sweep_args *a) {
  const vary_knob *k = &knobs[a->vary];
  if (a->log_y)
    return ms_cli_usage("--log-y is for the sweep over the offered load: "
                        "not with --vary");
  if (!a->from_arg || !a->to_arg)
    return ms_cli_usage("--vary %s: give its range with --from A --to B",
                        k->name);
  if (ms_cli_param("--from", a->from_arg, k->param, &a->from) ||
      ms_cli_param("--to", a->to_arg, k->param, &a->to))
    return MS_EXIT_USAGE;
  if (!(a->from < a->to))
    return ms_cli_usage("--from %g must be below --to %g", a->from, a->to);
  if (isnan(a->sh.load))
    return ms_cli_usage("--vary: give the offered load at which each row's "
                        "state is given with --load L (requests/s)");
  bool whole = ms_param_get(k->param)->whole;
  if (a->steps == 0 && whole && a->to - a->from > MAX_VARY_ROWS - 1)
    return ms_cli_usage("--vary %s: %g to %g is more than %d values: give "
                        "--steps N",
                        k->name, a->from, a->to, MAX_VARY_ROWS);
  if (a->steps > MAX_VARY_ROWS - 1)
    return ms_cli_usage("--steps: with --vary at most %d, not %ld",
                        MAX_VARY_ROWS - 1, a->steps);
  if (!a->sh.has_format)
    a->sh.format = MS_FORMAT_TEXT;
  return 0;
}

/* The values of the knob, in increasing order, into v (room for
 * MAX_VARY_ROWS); returns their count.  Whole knobs: every whole number
 * from A to B, or N + 1 evenly spread and rounded, each once. */
static size_t vary_values(const sweep_args *a, double *v) {
  bool whole = ms_param_get(knobs[a->vary].param)->whole;
  long steps = a->steps ? a->steps : whole ? (long)(a->to - a->from) : 10;
  size_t n = 0;
  for (long i = 0; i <= steps; i++) {
    double x =
        i == steps ? a->to : a->from + (a->to - a->from) * ((double)i / steps);
    if (whole)
      x = round(x);
    if (n == 0 || x > v[n - 1])
      v[n++] = x;
  }
  return n;
}

/* One row: the knob's value, the service's loads, its state at --load. */
typedef struct {
  double value, tipping, recovery, band;
  ms_state state;
} vary_row;

/* The row for value v: base (the model options as parsed, not resolved)
 * with the knob's option given as v, resolved and solved.  Returns 0 or
 * the exit code of the message printed. */
static int vary_row_at(const ms_cli_model *base, const vary_knob *k, double v,
                       double load, vary_row *row) {
  ms_cli_model mv = *base;
  char text[32], opt[40];
  snprintf(text, sizeof text, "%.17g", v);
  snprintf(opt, sizeof opt, "--%s", k->name);
  /* a timeout range keeps its width: the row's value is its shortest
   * timeout, as --timeout-granularity's rows and recommend take it */
  double width = mv.timeout_spread;
  int r = ms_cli_model_option(&mv, k->opt, text);
  if (k->opt == MS_OPT_TIMEOUT)
    mv.timeout_spread = width;
  if (r == 0)
    r = ms_cli_model_resolve(&mv, true);
  if (r != 0) {
    ms_cli_model_free(&mv);
    return r;
  }
  ms_landscape ls;
  ms_error err;
  ms_report rep;
  ms_observation obs = {.offered_load = load};
  int st = ms_landscape_build(&mv.params, &ls, &err);
  if (st == MS_OK)
    st = ms_analyze(&ls, &obs, &rep.analysis, &err);
  ms_cli_model_free(&mv);
  if (st != MS_OK)
    return ms_cli_fail("model with --vary %s %s: %s", k->name, text, err.msg);
  *row = (vary_row){.value = v,
                    .tipping = ls.tipping_load,
                    .recovery = ls.recovery_load,
                    .band = ls.tipping_load - ls.recovery_load,
                    .state = rep.analysis.state};
  if (!isfinite(row->tipping) || !isfinite(row->recovery))
    return ms_cli_fail("model with --vary %s %s: the tipping load is beyond "
                       "the range of a double",
                       k->name, text);
  return 0;
}

/* The rows as a text table, CSV or JSON. */
static void write_vary_table(const sweep_args *a, const vary_row *rows,
                             size_t n) {
  const char *key = ms_param_get(knobs[a->vary].param)->key;
  char b[6][32];
  if (a->sh.format == MS_FORMAT_JSON) {
    ms_json j;
    ms_json_init(&j, stdout, 1);
    ms_json_begin_array(&j, NULL);
    for (size_t i = 0; i < n; i++) {
      ms_json_begin_object(&j, NULL);
      ms_json_number(&j, key, rows[i].value);
      ms_json_number(&j, "tipping_load", rows[i].tipping);
      ms_json_number(&j, "recovery_load", rows[i].recovery);
      ms_json_number(&j, "band_width", rows[i].band);
      ms_json_string(&j, "state", ms_state_name(rows[i].state));
      ms_json_end_object(&j);
    }
    ms_json_end_array(&j);
    ms_json_finish(&j);
  } else if (a->sh.format == MS_FORMAT_CSV) {
    printf("%s,tipping_load,recovery_load,band_width,state\n", key);
    for (size_t i = 0; i < n; i++)
      printf("%s,%s,%s,%s,%s\n", ms_format_double(b[0], rows[i].value),
             ms_format_double(b[1], rows[i].tipping),
             ms_format_double(b[2], rows[i].recovery),
             ms_format_double(b[3], rows[i].band),
             ms_state_name(rows[i].state));
  } else {
    printf("%-14s %14s %14s %14s  state at %g req/s\n", key, "tipping req/s",
           "recovery req/s", "band req/s", a->sh.load);
    for (size_t i = 0; i < n; i++)
      printf("%-14.6g %14.6g %14.6g %14.6g  %s\n", rows[i].value,
             rows[i].tipping, rows[i].recovery, rows[i].band,
             ms_state_name(rows[i].state));
  }
}

/* The picture: tipping and recovery loads against the knob, the band
 * between them shaded, a line at --load.  Timeouts below a second are
 * drawn in ms, budgets in percent. */
static int draw_vary(const ms_cli_model *m, const sweep_args *a,
                     const vary_row *rows, size_t n) {
  const vary_knob *k = &knobs[a->vary];
  double xs = 1, ymax = a->sh.load;
  const char *xname = k->name;
  if (k->param == MS_PARAM_TIMEOUT && a->to < 1)
    xs = 1e3, xname = "client timeout (ms)";
  else if (k->param == MS_PARAM_TIMEOUT)
    xname = "client timeout (s)";
  else if (k->param == MS_PARAM_RETRY_BUDGET)
    xs = 100, xname = "retry budget (% of requests)";
  else if (k->param == MS_PARAM_SERVERS)
    xname = "servers";
  else
    xname = "retries per request";
  double *x = malloc(3 * n * sizeof *x);
  if (!x)
    return ms_cli_fail("out of memory drawing the plot");
  double *tip = x + n, *rec = x + 2 * n;
  for (size_t i = 0; i < n; i++) {
    x[i] = rows[i].value * xs;
    tip[i] = rows[i].tipping;
    rec[i] = rows[i].recovery;
    ymax = fmax(ymax, tip[i]);
  }
  const char *yu_name;
  double yu = axis_unit(ymax * 1.1, &yu_name);
  for (size_t i = 0; i < n; i++)
    tip[i] /= yu, rec[i] /= yu;
  bool whole = ms_param_get(k->param)->whole;
  ms_plot_series s[5] = {
      {.title = "hysteresis band: a storm, once started, persists",
       .style = MS_PLOT_FILLED,
       .color = MS_PLOT_ORANGE,
       .n = n,
       .x = x,
       .y = tip}, /* tip then rec: the two edges */
      {.title = "tipping load: above it a retry storm starts",
       .style = MS_PLOT_SOLID,
       .color = MS_PLOT_VERMILION,
       .width = 3,
       .n = n,
       .x = x,
       .y = tip},
      {.title = "recovery load: below it a storm ends",
       .style = MS_PLOT_SOLID,
       .color = MS_PLOT_BLUE,
       .width = 3,
       .n = n,
       .x = x,
       .y = rec},
      {.style = MS_PLOT_POINTS,
       .color = MS_PLOT_VERMILION,
       .width = 1.2,
       .n = n,
       .x = x,
       .y = tip},
      {.style = MS_PLOT_POINTS,
       .color = MS_PLOT_BLUE,
       .width = 1.2,
       .n = n,
       .x = x,
       .y = rec},
  };
  /* points mark the rows when there are few enough to tell apart */
  size_t ns = whole && n <= 40 ? 5 : 3;
  char load_text[64], b1[32], title[160], xlabel[128], ylabel[128];
  snprintf(load_text, sizeof load_text, "load %s req/s",
           short_load(b1, a->sh.load));
  ms_plot_marker mk = {.vertical = false,
                       .at = a->sh.load / yu,
                       .text = load_text,
                       .color = "#000000",
                       .text_pos = 0.02};
  if (a->sh.title)
    snprintf(title, sizeof title, "%s", a->sh.title);
  else
    snprintf(title, sizeof title, "Tipping and recovery loads against %s%s%s",
             k->name, m->name[0] ? ": " : "", m->name);
  snprintf(xlabel, sizeof xlabel, "%s", xname);
  snprintf(ylabel, sizeof ylabel, "offered load λ (%srequests/s)", yu_name);
  ms_plot p;
  ms_plot_init(&p);
  p.title = title;
  p.subtitle = m->summary;
  p.xlabel = xlabel;
  p.ylabel = ylabel;
  p.xmin = x[0];
  p.xmax = x[n - 1];
  p.ymin = 0;
  p.ymax = ymax * 1.1 / yu;
  p.legend = "outside below center horizontal";
  p.legend_columns = 2;
  p.series = s;
  p.n_series = ns;
  p.markers = &mk;
  p.n_markers = 1;
  char err[600];
  int rc = MS_EXIT_OK;
  if (ms_plot_write(&p, a->sh.plot, err, sizeof err) != 0)
    rc = ms_cli_fail("%s", err);
  free(x);
  return rc;
}

/* The sweep over a knob: m holds the model options as parsed. */
static int run_vary(ms_cli_model *m, const sweep_args *a) {
  const vary_knob *k = &knobs[a->vary];
  ms_cli_model base = *m; /* parsed, not resolved: copied per row */
  int r = ms_cli_model_resolve(m, true); /* the service as given */
  if (r != 0)
    return r;
  double *v = malloc(MAX_VARY_ROWS * sizeof *v);
  vary_row *rows = malloc(MAX_VARY_ROWS * sizeof *rows);
  if (!v || !rows) {
    free(v), free(rows);
    return ms_cli_fail("out of memory");
  }
  size_t n = vary_values(a, v);
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "sweep", n);
  ms_cli_interrupt_catch();
  for (size_t i = 0; i < n && r == 0; i++) {
    if (ms_cli_interrupted()) {
      ms_cli_progress_end(&prog);
      r = ms_cli_interrupt_exit("%zu of %zu values computed; nothing "
                                "written",
                                i, n);
      break;
    }
    r = vary_row_at(&base, k, v[i], a->sh.load, &rows[i]);
    ms_cli_progress_update(&prog, i + 1);
  }
  ms_cli_progress_end(&prog);
  if (r == 0 && (a->sh.has_format || !a->sh.plot)) {
    write_vary_table(a, rows, n);
    r = ms_cli_finish_output(MS_EXIT_OK);
  }
  if (r == 0 && a->sh.plot)
    r = draw_vary(m, a, rows, n);
  free(v), free(rows);
  return r;
}

/* One option of the command (ms_cli_take). */
static int take_option(void *args, int c, const char *arg) {
  sweep_args *a = args;
  switch (c) {
  case OPT_FROM: /* parsed once --vary is known (check_args) */
    a->from_arg = arg;
    return 0;
  case OPT_TO:
    a->to_arg = arg;
    return 0;
  case OPT_VARY:
    return ms_cli_choice("--vary", arg, knob_names, &a->vary);
  case OPT_STEPS:
    return ms_cli_long("--steps", arg, 1, 100000000, &a->steps);
  case OPT_LOG_Y:
    a->log_y = true;
    return 0;
  default:
    return ms_cli_shared_option(&a->sh, c, arg);
  }
}

/* Take the options in the order given, stopping at the first bad one (or
 * at --help), so that the message names the option the user got wrong
 * first.  Returns 0 or the exit code of the message printed. */
static int parse_options(sweep_args *a, ms_cli_model *m, int argc,
                         char **argv) {
  return ms_cli_parse(argc, argv, &syntax, m, take_option, a, &a->help, NULL);
}

/* The options that only make sense together: a range with its steps, and
 * the plot's options with a plot.  Returns 0 or MS_EXIT_USAGE. */
static int check_args(sweep_args *a) {
  if (a->vary >= 0)
    return check_vary_args(a);
  if (a->from_arg &&
      ms_cli_param("--from", a->from_arg, MS_PARAM_OFFERED_LOAD, &a->from))
    return MS_EXIT_USAGE;
  if (a->to_arg &&
      ms_cli_rate("--to", a->to_arg, 0, MS_MAX_RATE, MS_RANGE_LO_OPEN, &a->to))
    return MS_EXIT_USAGE;
  if (a->sh.has_format && a->sh.format == MS_FORMAT_TEXT)
    return ms_cli_usage("--format text is for --vary: the sweep over the "
                        "offered load writes csv or json");
  if (isnan(a->from) || isnan(a->to))
    return ms_cli_usage("give the range of offered loads with --from L0 "
                        "--to L1 (requests/s)");
  if (!(a->from < a->to))
    return ms_cli_usage("--from %g must be below --to %g", a->from, a->to);
  if (a->steps == 0)
    return ms_cli_usage("give the number of steps with --steps N");
  if ((!isnan(a->sh.load) || a->sh.title || a->log_y) && !a->sh.plot)
    return ms_cli_usage("%s is for the plot: give --plot FILE too",
                        !isnan(a->sh.load) ? "--load"
                        : a->sh.title      ? "--title"
                                           : "--log-y");
  return 0;
}

/* The loads written on the plot must be numbers.  Returns 0 or
 * MS_EXIT_RUNTIME naming the first that is not. */
static int check_drawable(const ms_landscape *ls) {
  double v[] = {ls->tipping_load, ls->recovery_load, ls->saturation_load};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (!isfinite(v[i]))
      return ms_cli_fail("model: the %s is beyond the range of a double",
                         i == 0   ? "tipping load"
                         : i == 1 ? "recovery load"
                                  : "capacity");
  return 0;
}

static int run(ms_cli_model *m, int argc, char **argv) {
  sweep_args a = {.from = NAN, .to = NAN, .steps = 0, .vary = -1};
  ms_cli_shared_init(&a.sh, MS_FORMAT_CSV, MS_FORMATS_ALL);
  int r = parse_options(&a, m, argc, argv);
  if (r != 0 || a.help)
    return r;
  if ((r = check_args(&a)) != 0)
    return r;
  if (a.vary >= 0)
    return run_vary(m, &a);
  ms_landscape ls;
  if ((r = ms_cli_model_landscape(m, &ls)) != 0)
    return r;
  if (a.sh.has_format || !a.sh.plot) {
    r = write_table(&ls, a.from, a.to, a.steps, a.sh.format,
                    a.sh.hazard_horizon);
    if (r)
      return r;
    r = ms_cli_finish_output(MS_EXIT_OK);
    if (r)
      return r;
  }
  if (!a.sh.plot)
    return MS_EXIT_OK;
  if ((r = check_drawable(&ls)) != 0)
    return r;
  return draw(m, &ls, a.from, a.to, a.sh.load, a.sh.title, a.log_y, a.sh.plot);
}

int ms_cmd_sweep(int argc, char **argv) {
  return ms_cli_with_model(run, argc, argv);
}
