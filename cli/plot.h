/* SPDX-License-Identifier: MIT */
/*
 * Charts for the command-line tool, drawn by gnuplot (Debian package
 * gnuplot-nox: svg and pngcairo terminals) run as a child process: this
 * module only writes a gnuplot script with the data inline and checks that
 * gnuplot produced the file.  Reusable by any sub-command: describe the
 * chart in an ms_plot (series of points, shaded vertical bands, marker
 * lines, labels) and call ms_plot_write.
 *
 * Example (a time series with an incident window shaded):
 *
 *   double t[N], load[N];  ... fill ...
 *   ms_plot_series s = {.title = "offered load", .style = MS_PLOT_SOLID,
 *                       .color = MS_PLOT_BLUE, .n = N, .x = t, .y = load};
 *   ms_plot_band b = {.from = 600, .to = 900, .label = "spike",
 *                     .color = MS_PLOT_ORANGE};
 *   ms_plot p;
 *   ms_plot_init(&p);
 *   p.title = "checkout: simulated retry storm";
 *   p.xlabel = "time (s)";
 *   p.ylabel = "load (requests/s)";
 *   p.series = &s; p.n_series = 1; p.bands = &b; p.n_bands = 1;
 *   char err[512];
 *   if (ms_plot_write(&p, "storm.svg", err, sizeof err) != 0)
 *     return ms_cli_fail("%s", err);
 *
 * Text is drawn literally (gnuplot's "noenhanced" mode): underscores and
 * carets in service names stay as they are; UTF-8 (λ, μ) is fine.  Any
 * text may come from the user: every one goes into the script as a
 * single-quoted gnuplot string (no backquote command substitution there),
 * control characters blanked, and the file name never goes into it at all.
 * The other strings of an ms_plot (colours, the legend position) are not
 * quoted: give them only constants.
 */
#ifndef METASTABLE_CLI_PLOT_H
#define METASTABLE_CLI_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A palette that stays distinguishable for the common colour-vision
 * deficiencies (Okabe and Ito, "Color Universal Design", 2008). */
#define MS_PLOT_BLUE "#0072B2"
#define MS_PLOT_ORANGE "#E69F00"
#define MS_PLOT_VERMILION "#D55E00"
#define MS_PLOT_GREEN "#009E73"
#define MS_PLOT_SKY "#56B4E9"
#define MS_PLOT_PURPLE "#CC79A7"
#define MS_PLOT_GREY "#555555"
#define MS_PLOT_BLACK "#000000" /* Okabe and Ito's eighth */

typedef enum {
  MS_PLOT_SOLID,       /* a line */
  MS_PLOT_DASHED,      /* a dashed line */
  MS_PLOT_DOTTED,      /* a dotted line */
  MS_PLOT_POINTS,      /* filled circles */
  MS_PLOT_OPEN_POINTS, /* hollow circles */
  MS_PLOT_FILLED,      /* the area between two edges shaded in the colour,
                          translucent: y holds 2n values, y[k] and
                          y[n + k] the edges at x[k] */
} ms_plot_style;

/* One series: n points (x[i], y[i]); a NaN in x or y breaks a line. */
typedef struct {
  const char *title; /* legend entry; NULL keeps it out of the legend */
  ms_plot_style style;
  const char *color; /* "#rrggbb"; NULL for gnuplot's next colour */
  double width;      /* line width or point size; 0 for the default */
  size_t n;
  const double *x, *y;
} ms_plot_series;

/* A shaded vertical band from <= x <= to, behind the data. */
typedef struct {
  double from, to;
  const char *label; /* legend entry, or NULL */
  const char *color; /* fill colour, drawn translucent */
} ms_plot_band;

/* A straight marker line across the plot, with a text beside it. */
typedef struct {
  bool vertical;     /* x = at (vertical) or y = at (horizontal) */
  double at;         /* in data coordinates */
  const char *text;  /* written beside the line, or NULL */
  const char *color; /* NULL: grey */
  bool text_before;  /* text left of a vertical line (else right);
                        below a horizontal line (else above) */
  double text_pos;   /* where along the line, 0..1 of the plot (default
                        0 is read as 0.97 for vertical, 0.98 horizontal);
                        a horizontal line's text ends there, or starts
                        there when text_pos < 0.5 */
  bool on_axis;      /* write the text outside the plot, where data never
                        hides it: above it for a vertical line, right of
                        it for a horizontal one (the right margin grows to
                        fit); texts of neighbouring lines are moved apart
                        (ms_plot_spread) so that they do not overlap, when
                        the range across them is set (not NaN) */
  bool along;        /* vertical, not on_axis: the text runs up along the
                        line (rotated 90 degrees), ending text_pos of the
                        height up (default 0.97) */
} ms_plot_marker;

/* An arrow from (x1, y1) to (x2, y2) in data coordinates, head at the
 * end, with an optional text beside its middle. */
typedef struct {
  double x1, y1, x2, y2;
  const char *text;    /* or NULL */
  const char *color;   /* NULL: black */
  bool text_before;    /* text left of the arrow (else right) */
  double text_at;      /* where along the arrow the text's middle is, 0
                          (start) to 1 (head); 0 is read as 0.5 */
  bool text_in_legend; /* the text goes into the legend, beside a sample
                          of the arrow, instead of beside the arrow (for
                          when no place there hides nothing) */
} ms_plot_arrow;

typedef enum { MS_PLOT_SVG, MS_PLOT_PNG } ms_plot_format;

typedef struct {
  const char *title;    /* top line, larger */
  const char *subtitle; /* second line, or NULL */
  const char *xlabel, *ylabel;
  double xmin, xmax, ymin, ymax; /* NaN: gnuplot chooses */
  bool xlog, ylog;
  int width, height;  /* pixels; 0 for 1100 x 720 */
  const char *legend; /* gnuplot key position ("top left", the default) */
  int legend_columns; /* with a legend "below": its entries in this many
                         columns, the bottom margin grown to fit them */
  const ms_plot_series *series;
  size_t n_series;
  const ms_plot_band *bands;
  size_t n_bands;
  const ms_plot_marker *markers;
  size_t n_markers;
  const ms_plot_arrow *arrows;
  size_t n_arrows;
  /* Names for the x axis's ticks instead of numbers: xtic_names[i] at
   * x = i + 1, for a chart of categories (escapes: "none", "bound", ...). */
  const char *const *xtic_names;
  size_t n_xtic_names;
} ms_plot;

/*
 * ms_plot_spread: lay out n texts on one line so that none overlaps
 * another.  Text i is w[i] wide and would like its centre at c[i]; the c[i]
 * are in increasing order.  Writes left[i], where text i starts, such that
 * left[i + 1] >= left[i] + w[i] + gap, the order is kept, and the texts
 * move as little as possible (least squares of the moves: isotonic
 * regression by pool-adjacent-violators, then clamped), staying within
 * [lo, hi] when they fit (when they do not, they start at lo).  Any unit
 * (the plot uses fractions of its width).  n may be 0.
 */
void ms_plot_spread(size_t n, const double *c, const double *w, double gap,
                    double lo, double hi, double *left);

/*
 * The size of a one-line text in the default font, as fractions of the
 * plot area's width (*w, across) and height (*h, up), as drawn: rotated
 * by 90 degrees when `rotated`.  For laying texts out where they hide
 * nothing; an estimate from the pictures gnuplot draws (DejaVu Sans, svg
 * at 13 and pngcairo at 11: some 8 pixels a character, 17 a line; the
 * area is the picture less its margins).  Either pointer may be NULL.
 */
void ms_plot_text_size(const ms_plot *p, const char *text, bool rotated,
                       double *w, double *h);

/* The sizes behind ms_plot_text_size: one character's width and one
 * line's height, as fractions of the plot area's width and height. */
double ms_plot_char_width(const ms_plot *p);
double ms_plot_line_height(const ms_plot *p);

/* Where a data coordinate lies across (x) or up (y) the plot area: 0 at
 * the left or bottom, 1 at the right or top (outside the area below 0 or
 * above 1; -INFINITY for v <= 0 on a log axis); NaN when that range is
 * automatic (NaN bounds). */
double ms_plot_graph_x(const ms_plot *p, double x);
double ms_plot_graph_y(const ms_plot *p, double y);

/* Everything empty, ranges automatic. */
void ms_plot_init(ms_plot *p);

/* The format the file name asks for (.svg or .png, any case): 0, or -1
 * when the extension is neither. */
int ms_plot_format_of(const char *path, ms_plot_format *fmt);

/* Write the gnuplot script that draws p to out.  The script draws to
 * gnuplot's standard output, in the format of path's extension (the path
 * itself is not in the script).  Returns 0, or -1 for an unknown
 * extension. */
int ms_plot_script(const ms_plot *p, const char *path, FILE *out);

/*
 * ms_plot_write: draw p into path with gnuplot.  The program is "gnuplot"
 * from PATH, or $METASTABLE_GNUPLOT when set; its standard output is the
 * file, opened (created or truncated) here.  gnuplot's messages go to
 * stderr; nothing goes to stdout.  On failure a plain file at path is
 * removed rather than left half drawn.
 * Returns 0, or -1 with err saying what went wrong: an unknown extension,
 * a file that cannot be written (path and reason), gnuplot missing ("install
 * the Debian package gnuplot-nox"), gnuplot failing, or an empty result.
 */
int ms_plot_write(const ms_plot *p, const char *path, char *err, size_t errlen);

#endif
