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

static const char help[] =
    "Usage: metastable sweep [MODEL OPTIONS] --from L0 --to L1 --steps N\n"
    "                        [--format csv|json] [--plot FILE.svg|FILE.png]\n"
    "                        [--load L] [--title TEXT] [--log-y]\n"
    "\n"
    "Every equilibrium and its stability at the N + 1 offered loads\n"
    "L0, L0 + (L1 - L0)/N, ..., L1.\n"
    "\n"
    "  --from L0, --to L1  offered loads, requests/s, 0 <= L0 < L1\n"
    "  --steps N           intervals between them, 1..100000000\n"
    "  --format csv|json   csv (default): one row per equilibrium, columns\n"
    "                      offered_load,equilibria,index,effective_load,\n"
    "                      failure_probability,amplification,stable;\n"
    "                      json: one object per offered load\n"
    "  --plot FILE         draw the bifurcation diagram (effective load "
    "against\n"
    "                      offered load) into FILE, SVG or PNG by its "
    "extension,\n"
    "                      with gnuplot; the table is then written only when\n"
    "                      --format is given\n"
    "  --load L            mark L as the operating point on the plot\n"
    "  --title TEXT        the plot's title (default: the service's name)\n"
    "  --log-y             effective load on a log axis (the default when "
    "the\n"
    "                      collapsed branch exceeds 30 times capacity)\n"
    "\n";

enum {
  OPT_FROM = MS_OPT_MODEL_END,
  OPT_TO,
  OPT_STEPS,
  OPT_FORMAT,
  OPT_PLOT,
  OPT_LOAD,
  OPT_TITLE,
  OPT_LOG_Y,
};

static const struct option options[] = {
    MS_CLI_MODEL_LONG_OPTIONS,
    {"from", required_argument, NULL, OPT_FROM},
    {"to", required_argument, NULL, OPT_TO},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"load", required_argument, NULL, OPT_LOAD},
    {"title", required_argument, NULL, OPT_TITLE},
    {"log-y", no_argument, NULL, OPT_LOG_Y},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* ---- the table ------------------------------------------------------- */

static int write_table(const ms_landscape *ls, double from, double to,
                       long steps, ms_format format) {
  ms_cli_progress prog;
  ms_cli_progress_start(&prog, "sweep", (size_t)steps + 1);
  ms_json j;
  char b[4][32];
  if (format == MS_FORMAT_JSON) {
    ms_json_init(&j, stdout, 1);
    ms_json_begin_array(&j, NULL);
  } else {
    puts("offered_load,equilibria,index,effective_load,failure_probability,"
         "amplification,stable");
  }
  for (long i = 0; i <= steps; i++) {
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
                         ms_cli_fmt_double(b[0], lam), err.msg);
    }
    if (format == MS_FORMAT_JSON) {
      ms_json_begin_object(&j, NULL);
      ms_json_number(&j, "offered_load", lam);
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
      ms_cli_fmt_double(b[0], lam);
      for (int k = 0; k < n; k++)
        printf("%s,%d,%d,%s,%s,%s,%d\n", b[0], n, k,
               ms_cli_fmt_double(b[1], eq[k].effective_load),
               ms_cli_fmt_double(b[2], eq[k].failure_probability),
               ms_cli_fmt_double(b[3], eq[k].amplification), eq[k].stable);
    }
    ms_cli_progress_update(&prog, (size_t)i);
  }
  if (format == MS_FORMAT_JSON) {
    ms_json_end_array(&j);
    ms_json_finish(&j);
  }
  ms_cli_progress_end(&prog);
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

static int draw(const ms_cli_model *m, const ms_landscape *ls, double from,
                double to, double load, const char *title_opt, bool log_y,
                const char *path) {
  /* The pieces of the curve: between breakpoints, then from the last one
   * until lambda passes `to`.  Without a fold the one piece is split at
   * capacity, to show where the loop engages. */
  double A1;
  ms_amplification(&ls->params.policy, 1.0, &A1, NULL);
  double x_end = fmax(ls->break_x[ls->n_breaks - 1], to);
  while (lambda_at(ls, x_end) < to * 1.02 && x_end < 4 * to * A1 + 1)
    x_end *= 1.25;
  double cut[MAX_PIECES + 1];
  int n_cut = 0;
  for (int i = 0; i < ls->n_breaks; i++)
    cut[n_cut++] = ls->break_x[i];
  if (!ls->has_fold && ls->saturation_load > cut[n_cut - 1] &&
      ls->saturation_load < x_end)
    cut[n_cut++] = ls->saturation_load;
  cut[n_cut++] = x_end;
  int n_pieces = n_cut - 1;

  curve pieces[MAX_PIECES];
  memset(pieces, 0, sizeof pieces);
  ms_plot p;
  ms_plot_init(&p);
  ms_layout sc;
  ms_layout_init(&sc, &p);
  double tol = 5e-4 * (to - from);
  double ymax = ls->saturation_load;
  int rc = MS_EXIT_OK;
  for (int i = 0; i < n_pieces; i++) {
    sample(ls, &pieces[i], cut[i], cut[i + 1], tol);
    if (pieces[i].oom) {
      rc = ms_cli_fail("out of memory drawing the curve");
      goto out;
    }
    for (size_t k = 0; k < pieces[i].n; k++)
      if (pieces[i].lam[k] >= from && pieces[i].lam[k] <= to)
        ymax = fmax(ymax, pieces[i].x[k]);
  }
  /* When the collapsed branch towers over capacity (layered retries
   * amplify up to (r + 1)^k), a linear axis flattens the healthy branch
   * and the fold into the floor: use a log axis then. */
  bool ylog = log_y || ymax > 30 * ls->saturation_load;

  /* Everything is drawn in axis units (thousands, millions, ...). */
  const char *xu_name, *yu_name;
  double xu = axis_unit(to, &xu_name);
  double yu = ylog ? 1 : axis_unit(ymax * 1.08, &yu_name);
  if (ylog)
    yu_name = "";
  for (int i = 0; i < n_pieces; i++) {
    scale(pieces[i].lam, pieces[i].n, xu);
    scale(pieces[i].x, pieces[i].n, yu);
  }

  /* The plot's frame, in axis units. */
  p.xmin = from / xu;
  p.xmax = to / xu;
  if (ylog) {
    p.ylog = true;
    p.ymin = 0.02 * ls->saturation_load;
    p.ymax = ymax * 1.5;
  } else {
    p.ymin = 0;
    p.ymax = ymax * 1.08 / yu;
  }
  /* below the plot, in two columns: inside, it would hide some branch */
  p.legend = "outside below center horizontal";
  p.legend_columns = 2;
  p.height = 800;

  /* Series: one per piece, styled by its kind.  A piece too small to see
   * (a fold narrower than a pixel, a rounding artefact at a kink) is left
   * out, and so is its legend entry. */
  ms_plot_series series[MAX_PIECES + 2];
  size_t ns = 0;
  bool titled[3] = {false, false, false};
  for (int i = 0; i < n_pieces; i++) {
    curve *c = &pieces[i];
    double gx0 = INFINITY, gx1 = -INFINITY, gy0 = INFINITY, gy1 = -INFINITY;
    for (size_t k = 0; k < c->n; k++) {
      double gx = ms_plot_graph_x(&p, c->lam[k]),
             gy = ms_plot_graph_y(&p, c->x[k]);
      gx0 = fmin(gx0, gx), gx1 = fmax(gx1, gx);
      gy0 = fmin(gy0, gy), gy1 = fmax(gy1, gy);
    }
    if (!(c->n > 1 && (gx1 - gx0 > 2e-3 || gy1 - gy0 > 2e-3)))
      continue;
    for (size_t k = 1; k < c->n; k++)
      ms_layout_segment(&sc, c->lam[k - 1], c->x[k - 1], c->lam[k], c->x[k]);
    bool rising = c->lam[c->n - 1] > c->lam[0];
    /* 0 healthy (first piece, or below capacity), 1 collapsed (last, or
     * above capacity), 2 unstable */
    int kind = !rising ? 2 : i == 0 ? 0 : i == n_pieces - 1 ? 1 : 0;
    static const char *const titles[3] = {
        "stable: healthy branch", "stable: collapsed branch (retry storm)",
        "unstable: boundary between the basins"};
    static const char *const colors[3] = {MS_PLOT_BLUE, MS_PLOT_VERMILION,
                                          MS_PLOT_GREY};
    series[ns++] = (ms_plot_series){
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

  /* The operating point: every equilibrium at --load (an unstable one
   * that coincides with a stable one, at a fold or a kink, is the same
   * point). */
  double op_lam[MS_MAX_EQUILIBRIA], op_x[MS_MAX_EQUILIBRIA];
  double un_lam[MS_MAX_EQUILIBRIA], un_x[MS_MAX_EQUILIBRIA];
  size_t n_op = 0, n_un = 0;
  char op_title[96], b1[32], b2[32];
  if (!isnan(load)) {
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n = 0;
    if (ms_equilibria(ls, load, eq, &n, NULL) != MS_OK)
      n = 0;
    for (int k = 0; k < n; k++)
      if (eq[k].stable) {
        op_lam[n_op] = load / xu;
        op_x[n_op++] = eq[k].effective_load / yu;
      }
    for (int k = 0; k < n; k++) {
      bool same = false;
      for (size_t j = 0; j < n_op; j++)
        same |= fabs(ms_plot_graph_y(&p, eq[k].effective_load / yu) -
                     ms_plot_graph_y(&p, op_x[j])) < 1e-3;
      if (!eq[k].stable && !same) {
        un_lam[n_un] = load / xu;
        un_x[n_un++] = eq[k].effective_load / yu;
      }
    }
    for (size_t j = 0; j < n_op; j++)
      ms_layout_point(&sc, op_lam[j], op_x[j]);
    for (size_t j = 0; j < n_un; j++)
      ms_layout_point(&sc, un_lam[j], un_x[j]);
    snprintf(op_title, sizeof op_title, "equilibria at the load %s req/s",
             short_load(b1, load));
    if (n_op)
      series[ns++] = (ms_plot_series){.title = op_title,
                                      .style = MS_PLOT_POINTS,
                                      .color = "#000000",
                                      .width = 1.8,
                                      .n = n_op,
                                      .x = op_lam,
                                      .y = op_x};
    if (n_un)
      series[ns++] = (ms_plot_series){.title = "unstable one there",
                                      .style = MS_PLOT_OPEN_POINTS,
                                      .color = "#000000",
                                      .width = 1.8,
                                      .n = n_un,
                                      .x = un_lam,
                                      .y = un_x};
  }

  /* The band, with the tipping and recovery loads written above the plot
   * where no data can hide them (moved apart when the band is narrow), and
   * capacity.  A band of zero width (no fold, or one that rounding alone
   * opened) is one line: the storm starts and ends at the same load. */
  ms_plot_band band;
  char band_label[96], tip_text[96], rec_text[96], cap_text[96], op_text[64];
  ms_plot_marker markers[4];
  size_t nm = 0;
  bool has_band = ls->has_fold && ls->tipping_load - ls->recovery_load >
                                      1e-9 * ls->tipping_load;
  if (has_band) {
    snprintf(band_label, sizeof band_label, "hysteresis band (bistable)");
    band = (ms_plot_band){.from = ls->recovery_load / xu,
                          .to = ls->tipping_load / xu,
                          .label = band_label,
                          .color = MS_PLOT_ORANGE};
    snprintf(tip_text, sizeof tip_text, "tipping %s req/s",
             short_load(b1, ls->tipping_load));
    snprintf(rec_text, sizeof rec_text, "recovery %s req/s",
             short_load(b1, ls->recovery_load));
    markers[nm++] = (ms_plot_marker){.vertical = true,
                                     .at = ls->tipping_load / xu,
                                     .text = tip_text,
                                     .color = "#8a5a00",
                                     .on_axis = true};
    markers[nm++] = (ms_plot_marker){.vertical = true,
                                     .at = ls->recovery_load / xu,
                                     .text = rec_text,
                                     .color = "#8a5a00",
                                     .on_axis = true};
    ms_layout_vertical(&sc, ls->recovery_load / xu);
  } else {
    snprintf(tip_text, sizeof tip_text,
             "tipping = recovery %s req/s (no hysteresis band)",
             short_load(b1, ls->tipping_load));
    markers[nm++] = (ms_plot_marker){.vertical = true,
                                     .at = ls->tipping_load / xu,
                                     .text = tip_text,
                                     .color = "#8a5a00",
                                     .on_axis = true};
  }
  ms_layout_vertical(&sc, ls->tipping_load / xu);
  if (!isnan(load))
    ms_layout_vertical(&sc, load / xu);
  double cap_y = ls->saturation_load / yu;
  ms_layout_horizontal(&sc, cap_y);

  /* The hysteresis loop: past the tipping load the service jumps to the
   * collapsed branch, and it comes back only at the recovery load. */
  ms_plot_arrow arrows[2];
  size_t na = 0;
  char tip_arrow[64], rec_arrow[64];
  snprintf(tip_arrow, sizeof tip_arrow, "above %s req/s: retry storm",
           short_load(b1, ls->tipping_load));
  snprintf(rec_arrow, sizeof rec_arrow, "below %s req/s: storm ends",
           short_load(b2, ls->recovery_load));
  if (has_band) {
    ms_equilibrium eq[MS_MAX_EQUILIBRIA];
    int n;
    if (ms_equilibria(ls, ls->tipping_load, eq, &n, NULL) == MS_OK && n > 1)
      arrows[na++] = (ms_plot_arrow){.x1 = ls->tipping_load / xu,
                                     .y1 = ls->tipping_effective_load / yu,
                                     .x2 = ls->tipping_load / xu,
                                     .y2 = eq[n - 1].effective_load / yu,
                                     .text = tip_arrow,
                                     .color = MS_PLOT_VERMILION};
    if (ms_equilibria(ls, ls->recovery_load, eq, &n, NULL) == MS_OK && n > 1)
      arrows[na++] = (ms_plot_arrow){.x1 = ls->recovery_load / xu,
                                     .y1 = ls->recovery_effective_load / yu,
                                     .x2 = ls->recovery_load / xu,
                                     .y2 = eq[0].effective_load / yu,
                                     .text = rec_arrow,
                                     .color = MS_PLOT_BLUE,
                                     .text_before = true};
  }
  for (size_t i = 0; i < na; i++)
    ms_layout_segment(&sc, arrows[i].x1, arrows[i].y1, arrows[i].x2,
                      arrows[i].y2);
  /* Their texts beside them (the storm's to the right of the tipping load
   * and the recovery's to the left of the recovery load, where they point
   * away from the band, when that hides nothing), then capacity's along
   * its line, then the operating point's along its line. */
  for (size_t i = 0; i < na; i++) /* hiding a branch: in the legend */
    arrows[i].text_in_legend = ms_layout_arrow_text(&sc, &arrows[i], 0.9) > 0.9;
  snprintf(cap_text, sizeof cap_text, "capacity %s = %s attempts/s",
           ls->params.model.kind == MS_MODEL_ERLANG ? "c·μ" : "C",
           short_load(b1, ls->saturation_load));
  markers[nm] = (ms_plot_marker){
      .vertical = false, .at = cap_y, .text = cap_text, .color = MS_PLOT_GREEN};
  ms_layout_horizontal_text(&sc, &markers[nm++]);
  if (!isnan(load)) {
    snprintf(op_text, sizeof op_text, "load %s req/s", short_load(b1, load));
    markers[nm] = (ms_plot_marker){.vertical = true,
                                   .at = load / xu,
                                   .text = op_text,
                                   .color = "#000000",
                                   .along = true,
                                   .text_before = true};
    ms_layout_along_text(&sc, &markers[nm++]);
  }
  if (sc.oom) {
    rc = ms_cli_fail("out of memory drawing the curve");
    goto out;
  }

  char title[160], subtitle[400], xlabel[128], ylabel[128];
  if (title_opt)
    snprintf(title, sizeof title, "%s", title_opt);
  else if (m->name[0])
    snprintf(title, sizeof title, "Retry-storm bifurcation diagram: %s",
             m->name);
  else
    snprintf(title, sizeof title, "Retry-storm bifurcation diagram");
  snprintf(subtitle, sizeof subtitle, "%s", m->summary);
  snprintf(xlabel, sizeof xlabel,
           "offered load λ (%srequests/s, first attempts)", xu_name);
  snprintf(ylabel, sizeof ylabel,
           "effective load x (%sattempts/s, retries included)", yu_name);

  p.title = title;
  p.subtitle = subtitle;
  p.xlabel = xlabel;
  p.ylabel = ylabel;
  p.series = series;
  p.n_series = ns;
  p.bands = has_band ? &band : NULL;
  p.n_bands = has_band ? 1 : 0;
  p.markers = markers;
  p.n_markers = nm;
  p.arrows = arrows;
  p.n_arrows = na;
  char err[600];
  if (ms_plot_write(&p, path, err, sizeof err) != 0)
    rc = ms_cli_fail("%s", err);
out:
  ms_layout_free(&sc);
  for (int i = 0; i < n_pieces; i++)
    free(pieces[i].lam), free(pieces[i].x);
  return rc;
}

/* ---- the command ----------------------------------------------------- */

static int run(ms_cli_model *m, int argc, char **argv) {
  double from = NAN, to = NAN, load = NAN;
  long steps = 0;
  int r, c;
  ms_format format = MS_FORMAT_CSV;
  bool has_format = false;
  const char *plot = NULL, *title = NULL;
  bool log_y = false;
  static const ms_format formats[] = {MS_FORMAT_CSV, MS_FORMAT_JSON};
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    r = ms_cli_model_option(m, c, optarg);
    if (r > 0)
      return r;
    if (r == 0)
      continue;
    r = 0;
    switch (c) {
    case OPT_FROM:
      r = ms_cli_param("--from", optarg, MS_PARAM_OFFERED_LOAD, &from);
      break;
    case OPT_TO:
      r = ms_cli_rate("--to", optarg, 0, MS_MAX_RATE, MS_RANGE_LO_OPEN, &to);
      break;
    case OPT_STEPS:
      r = ms_cli_long("--steps", optarg, 1, 100000000, &steps);
      break;
    case OPT_FORMAT:
      r = ms_cli_format(optarg, formats, sizeof formats / sizeof formats[0],
                        &format);
      has_format = true;
      break;
    case OPT_PLOT: {
      ms_plot_format f;
      if (ms_plot_format_of(optarg, &f) != 0)
        return ms_cli_usage("--plot: '%s' must end in .svg or .png", optarg);
      plot = optarg;
      break;
    }
    case OPT_LOAD:
      r = ms_cli_param("--load", optarg, MS_PARAM_OFFERED_LOAD, &load);
      break;
    case OPT_TITLE:
      title = optarg;
      break;
    case OPT_LOG_Y:
      log_y = true;
      break;
    case 'h':
      return ms_cli_help_model(help);
    default:
      return ms_cli_bad_option(c, argv, options);
    }
    if (r)
      return r;
  }
  if (optind < argc)
    return ms_cli_usage("unexpected argument '%s'", argv[optind]);
  if (isnan(from) || isnan(to))
    return ms_cli_usage("give the range of offered loads with --from L0 "
                        "--to L1 (requests/s)");
  if (!(from < to))
    return ms_cli_usage("--from %g must be below --to %g", from, to);
  if (steps == 0)
    return ms_cli_usage("give the number of steps with --steps N");
  if ((!isnan(load) || title || log_y) && !plot)
    return ms_cli_usage("%s is for the plot: give --plot FILE too",
                        !isnan(load) ? "--load"
                        : title      ? "--title"
                                     : "--log-y");
  if ((r = ms_cli_model_resolve(m, true)) != 0)
    return r;

  ms_landscape ls;
  ms_error err;
  if (ms_landscape_build(&m->params, &ls, &err) != MS_OK)
    return ms_cli_fail("model: %s", err.msg);
  if (has_format || !plot) {
    r = write_table(&ls, from, to, steps, format);
    if (r)
      return r;
    r = ms_cli_finish_output(MS_EXIT_OK);
    if (r)
      return r;
  }
  if (plot) {
    /* the loads written on the plot */
    double v[] = {ls.tipping_load, ls.recovery_load, ls.saturation_load};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
      if (!isfinite(v[i]))
        return ms_cli_fail("model: the %s is beyond the range of a double",
                           i == 0   ? "tipping load"
                           : i == 1 ? "recovery load"
                                    : "capacity");
    return draw(m, &ls, from, to, load, title, log_y, plot);
  }
  return MS_EXIT_OK;
}

int ms_cmd_sweep(int argc, char **argv) {
  ms_cli_model m;
  ms_cli_model_init(&m);
  int rc = run(&m, argc, argv);
  ms_cli_model_free(&m);
  return rc;
}
