/* SPDX-License-Identifier: MIT */
/*
 * Charts through gnuplot; see plot.h.  The script carries its data in
 * datablocks ($d0 << EOD ... EOD), so one pipe to gnuplot's stdin is all
 * the communication there is.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plot.h"

extern char **environ;

void ms_plot_init(ms_plot *p) {
  memset(p, 0, sizeof *p);
  p->xmin = p->xmax = p->ymin = p->ymax = NAN;
}

int ms_plot_format_of(const char *path, ms_plot_format *fmt) {
  const char *dot = strrchr(path, '.');
  if (dot == NULL || strchr(dot, '/') != NULL)
    return -1;
  if (strcasecmp(dot, ".svg") == 0)
    *fmt = MS_PLOT_SVG;
  else if (strcasecmp(dot, ".png") == 0)
    *fmt = MS_PLOT_PNG;
  else
    return -1;
  return 0;
}

/*
 * Every text reaches gnuplot as a single-quoted string.  gnuplot replaces
 * `command` by that shell command's output anywhere on a line, inside
 * double-quoted strings too, but never inside single-quoted ones, where
 * the only special character is the quote itself, written twice.
 * A control character (a newline would end the command and start a new
 * one) becomes a blank.  Titles, labels and legend texts carry user input
 * (--title, service names), so nothing else may reach the script.
 */
static void quoted(FILE *f, const char *s) {
  fputc('\'', f);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '\'')
      fputc('\'', f);
    fputc(ch < 0x20 || ch == 0x7f ? ' ' : ch, f);
  }
  fputc('\'', f);
}

static void range(FILE *f, const char *axis, double lo, double hi) {
  fprintf(f, "set %srange [", axis);
  if (isnan(lo))
    fputc('*', f);
  else
    fprintf(f, "%.17g", lo);
  fputc(':', f);
  if (isnan(hi))
    fputc('*', f);
  else
    fprintf(f, "%.17g", hi);
  fputs("]\n", f);
}

static const char *color_or(const char *c, const char *dflt) {
  return c ? c : dflt;
}

void ms_plot_spread(size_t n, const double *c, const double *w, double gap,
                    double lo, double hi, double *left) {
  if (n == 0)
    return;
  /* With s[i] = left[i] - (w[0] + gap + ... + w[i-1] + gap) the texts do
   * not overlap exactly when s is non-decreasing: fit a non-decreasing s
   * to the wished-for b[i] = c[i] - w[i]/2 - offset[i] (pool adjacent
   * violators: blocks that take the mean of their members). */
  double *offset = malloc(n * sizeof *offset);
  double *mean = malloc(n * sizeof *mean);
  size_t *count = malloc(n * sizeof *count);
  if (!offset || !mean || !count) {
    for (size_t i = 0; i < n; i++) /* no memory: leave them centred */
      left[i] = c[i] - 0.5 * w[i];
    free(offset), free(mean), free(count);
    return;
  }
  size_t blocks = 0;
  double at = 0;
  for (size_t i = 0; i < n; i++) {
    offset[i] = at;
    at += w[i] + gap;
    mean[blocks] = c[i] - 0.5 * w[i] - offset[i];
    count[blocks++] = 1;
    while (blocks > 1 && mean[blocks - 2] > mean[blocks - 1]) {
      size_t k = count[blocks - 2] + count[blocks - 1];
      mean[blocks - 2] = (mean[blocks - 2] * (double)count[blocks - 2] +
                          mean[blocks - 1] * (double)count[blocks - 1]) /
                         (double)k;
      count[blocks - 2] = k;
      blocks--;
    }
  }
  /* the same bounds for every s[i] (the first text starts at lo or later,
   * the last ends at hi or before): clamping the fit keeps it optimal */
  double total = at - gap, s_hi = hi - total, s_lo = lo;
  size_t i = 0;
  for (size_t b = 0; b < blocks; b++) {
    double s_b = fmax(fmin(mean[b], s_hi), s_lo);
    for (size_t k = 0; k < count[b]; k++, i++)
      left[i] = s_b + offset[i];
  }
  free(offset), free(mean), free(count);
}

/* See plot.h: pixels of a character and of a line of the default fonts,
 * measured on the pictures, and the margins around the plot area (the
 * left one holds the y tick labels and the y label). */
#define CHAR_PX 8.0
#define LINE_PX 17.0
#define LEFT_PX 83.0
#define RIGHT_PX 32.0

static bool legend_below(const ms_plot *p) {
  return p->legend && strstr(p->legend, "below");
}

/* Lines of the bottom margin: the x tick labels and label (some 3.5), and
 * a legend below the plot (box and rows). */
static double bottom_lines(const ms_plot *p) {
  if (!legend_below(p))
    return 3.5;
  size_t entries = 0;
  for (size_t i = 0; i < p->n_bands; i++)
    entries += p->bands[i].label != NULL;
  for (size_t i = 0; i < p->n_series; i++)
    entries += p->series[i].title != NULL;
  for (size_t i = 0; i < p->n_arrows; i++)
    entries += p->arrows[i].text && p->arrows[i].text_in_legend;
  size_t cols = p->legend_columns > 0 ? (size_t)p->legend_columns : 2;
  size_t rows = (entries + cols - 1) / cols;
  return 6 + (double)(rows > 3 ? rows : 3);
}

/* Pixels right of the plot area: 4 characters, or room for the texts of
 * horizontal on_axis markers. */
static double right_px(const ms_plot *p) {
  size_t chars = 0;
  for (size_t i = 0; i < p->n_markers; i++) {
    const ms_plot_marker *m = &p->markers[i];
    if (m->vertical || !m->on_axis || !m->text)
      continue;
    size_t c = 0;
    for (const char *t = m->text; *t; t++)
      c += ((unsigned char)*t & 0xC0) != 0x80;
    chars = c > chars ? c : chars;
  }
  return chars ? CHAR_PX * ((double)chars + 2.5) : RIGHT_PX;
}

double ms_plot_char_width(const ms_plot *p) {
  double w = p->width > 0 ? p->width : 1100;
  return CHAR_PX / fmax(w - LEFT_PX - right_px(p), 100);
}

double ms_plot_line_height(const ms_plot *p) {
  /* the top margin is 6 lines */
  double h = p->height > 0 ? p->height : 720;
  return LINE_PX / fmax(h - LINE_PX * (6 + bottom_lines(p)), 100);
}

void ms_plot_text_size(const ms_plot *p, const char *text, bool rotated,
                       double *w, double *h) {
  /* CHAR_PX is DejaVu Sans's mean lower-case advance (0.563 em); its
   * capitals average 0.673 em and reach 0.77 (W): each counts 1.25, so that
   * "WARNING" beside "FAILURE" is not measured short and run together */
  double chars = 0;
  for (const char *t = text; t && *t; t++) {
    unsigned char ch = (unsigned char)*t;
    if ((ch & 0xC0) != 0x80) /* UTF-8: count lead bytes */
      chars += ch >= 'A' && ch <= 'Z' ? 1.25 : 1.0;
  }
  double cw = ms_plot_char_width(p), lh = ms_plot_line_height(p);
  double len = chars * cw; /* along the text, in widths */
  if (rotated) {
    /* a width fraction w is w * W pixels, W / H = (lh / LINE_PX) / (cw /
     * CHAR_PX) */
    double w_over_h = (lh / LINE_PX) / (cw / CHAR_PX);
    if (w)
      *w = lh / w_over_h;
    if (h)
      *h = len * w_over_h;
  } else {
    if (w)
      *w = len;
    if (h)
      *h = lh;
  }
}

static double graph_fraction(double v, double lo, double hi, bool log_axis) {
  if (isnan(lo) || isnan(hi) || !(hi > lo))
    return NAN;
  if (log_axis)
    return lo > 0 ? (v > 0 ? log(v / lo) / log(hi / lo) : -INFINITY) : NAN;
  return (v - lo) / (hi - lo);
}

double ms_plot_graph_x(const ms_plot *p, double x) {
  return graph_fraction(x, p->xmin, p->xmax, p->xlog);
}

double ms_plot_graph_y(const ms_plot *p, double y) {
  return graph_fraction(y, p->ymin, p->ymax, p->ylog);
}

/* The texts of on_axis markers, vertical ones above the plot and
 * horizontal ones right of it, each beside its line or moved apart from a
 * neighbour's (the markers are few: a selection sort is enough). */
static void margin_texts(const ms_plot *p, FILE *f, bool vertical) {
  size_t n = 0, idx[64];
  for (size_t i = 0; i < p->n_markers && n < 64; i++) {
    const ms_plot_marker *m = &p->markers[i];
    if (m->vertical == vertical && m->on_axis && m->text)
      idx[n++] = i;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t k = i + 1; k < n; k++)
      if (p->markers[idx[k]].at < p->markers[idx[i]].at) {
        size_t t = idx[i];
        idx[i] = idx[k];
        idx[k] = t;
      }
  double centre[64], size[64], start[64];
  bool spread = n > 0;
  for (size_t i = 0; i < n; i++) {
    const ms_plot_marker *m = &p->markers[idx[i]];
    if (vertical) {
      centre[i] = ms_plot_graph_x(p, m->at);
      ms_plot_text_size(p, m->text, false, &size[i], NULL);
    } else {
      centre[i] = ms_plot_graph_y(p, m->at);
      ms_plot_text_size(p, m->text, false, NULL, &size[i]);
    }
    spread &= isfinite(centre[i]);
  }
  if (spread && vertical)
    ms_plot_spread(n, centre, size, 0.015, -0.05, 1.03, start);
  else if (spread)
    ms_plot_spread(n, centre, size, 0.1 * ms_plot_line_height(p), -0.02, 1.02,
                   start);
  for (size_t i = 0; i < n; i++) {
    const ms_plot_marker *m = &p->markers[idx[i]];
    fprintf(f, "set label %zu ", idx[i] + 10);
    quoted(f, m->text);
    if (vertical && spread)
      fprintf(f, " at graph %.4f, graph 1 left offset 0,0.9", start[i]);
    else if (vertical)
      fprintf(f, " at first %.17g, graph 1 center offset 0,0.9", m->at);
    else if (spread)
      fprintf(f, " at graph 1, graph %.4f left offset 1,0",
              start[i] + 0.5 * size[i]);
    else
      fprintf(f, " at graph 1, first %.17g left offset 1,0", m->at);
    fprintf(f, " tc rgb '%s'\n", color_or(m->color, "#555555"));
  }
}

/* The terminal by the file's format, at the picture's size, and the house
 * style: a light frame and grid, translucent fills, six lines above the
 * plot for the title and the texts of vertical markers, and a right margin
 * wide enough for the texts of horizontal ones. */
static void script_style(const ms_plot *p, ms_plot_format fmt, FILE *f) {
  int w = p->width > 0 ? p->width : 1100, h = p->height > 0 ? p->height : 720;
  if (fmt == MS_PLOT_SVG)
    fprintf(f,
            "set terminal svg size %d,%d dynamic noenhanced "
            "font 'DejaVu Sans,13' background rgb 'white'\n",
            w, h);
  else
    fprintf(f,
            "set terminal pngcairo size %d,%d noenhanced "
            "font 'DejaVu Sans,11' background rgb 'white'\n",
            w, h);
  /* No `set output`: gnuplot draws to its standard output, which
   * ms_plot_write points at the file.  A file name in the script would be
   * read by gnuplot as a command when it starts with '|' and expanded when
   * it starts with '~'. */
  fputs("set encoding utf8\n", f);
  fputs("set border 3 lc rgb '#404040'\n"
        "set tics nomirror out\n"
        "set grid xtics ytics lc rgb '#e4e4e4' lw 1 dt 1\n"
        "set style fill transparent solid 0.22 noborder\n"
        "set style textbox opaque noborder margins 1,1\n"
        "set tmargin 6\n",
        f);
  if (right_px(p) > RIGHT_PX)
    fprintf(f, "set rmargin at screen %.4f\n", 1 - right_px(p) / w);
  else
    fputs("set rmargin 4\n", f);
}

/* The title and subtitle, centred on the picture (the plot area is not,
 * when the texts right of it widen the right margin), and the axes'
 * labels. */
static void script_titles(const ms_plot *p, FILE *f) {
  if (p->title) {
    fputs("set label 2 ", f);
    quoted(f, p->title);
    fputs(" at screen 0.5, graph 1 offset 0,4.3 center font ',16'\n", f);
  }
  if (p->subtitle) {
    fputs("set label 1 ", f);
    quoted(f, p->subtitle);
    fputs(" at screen 0.5, graph 1 offset 0,2.4 center font ',11' "
          "tc rgb '#404040'\n",
          f);
  }
  if (p->xlabel) {
    fputs("set xlabel ", f);
    quoted(f, p->xlabel);
    fputc('\n', f);
  }
  if (p->ylabel) {
    fputs("set ylabel ", f);
    quoted(f, p->ylabel);
    fputc('\n', f);
  }
}

/* The ranges and scales of the axes, and the legend.  A legend below the
 * plot gets a bottom margin of its own: gnuplot leaves it no room for the
 * x label. */
static void script_axes(const ms_plot *p, FILE *f) {
  range(f, "x", p->xmin, p->xmax);
  range(f, "y", p->ymin, p->ymax);
  if (p->xlog)
    fputs("set logscale x\n", f);
  if (p->n_xtic_names > 0) {
    fputs("set xtics (", f);
    for (size_t i = 0; i < p->n_xtic_names; i++) {
      if (i > 0)
        fputs(", ", f);
      quoted(f, p->xtic_names[i]);
      fprintf(f, " %zu", i + 1);
    }
    fputs(")\n", f);
  }
  if (p->ylog)
    fputs("set logscale y\n", f);
  fputs("set key ", f);
  fputs(p->legend ? p->legend : "top left", f);
  if (legend_below(p) && p->legend_columns > 0)
    fprintf(f, " maxcols %d", p->legend_columns);
  fputs(" reverse Left box lc rgb '#909090' opaque samplen 3 spacing 1.2 "
        "width 1\n",
        f);
  if (legend_below(p))
    fprintf(f, "set bmargin %g\n", bottom_lines(p));
}

/* The bands, as rectangles across the whole height behind the data. */
static void script_bands(const ms_plot *p, FILE *f) {
  for (size_t i = 0; i < p->n_bands; i++) {
    const ms_plot_band *b = &p->bands[i];
    fprintf(f,
            "set object %zu rect from first %.17g, graph 0 to first %.17g, "
            "graph 1 behind fc rgb '%s' fs transparent solid 0.22 "
            "noborder\n",
            i + 1, b->from, b->to, color_or(b->color, "#E69F00"));
  }
}

/* Marker i, a vertical line: its text, unless it went above the plot
 * (margin_texts), beside the line or running up along it. */
static void script_vertical_marker(const ms_plot *p, size_t i, FILE *f) {
  const ms_plot_marker *m = &p->markers[i];
  const char *col = color_or(m->color, "#555555");
  double pos = m->text_pos > 0 ? m->text_pos : 0.97;
  fprintf(f,
          "set arrow %zu from first %.17g, graph 0 to first %.17g, "
          "graph 1 nohead lc rgb '%s' lw 1.3 dt (6,4) back\n",
          i + 1, m->at, m->at, col);
  if (m->text && m->along) {
    /* rotated: "right" is the top end, the offset moves across */
    fprintf(f, "set label %zu ", i + 10);
    quoted(f, m->text);
    fprintf(f,
            " at first %.17g, graph %.3f right rotate by 90 "
            "offset %s,0 tc rgb '%s' boxed back\n",
            m->at, pos, m->text_before ? "-1.3" : "1.3", col);
  } else if (m->text && !m->on_axis) {
    fprintf(f, "set label %zu ", i + 10);
    quoted(f, m->text);
    fprintf(f,
            " at first %.17g, graph %.3f %s offset %s,0 tc rgb '%s' "
            "boxed back\n",
            m->at, pos, m->text_before ? "right" : "left",
            m->text_before ? "-0.6" : "0.6", col);
  }
}

/* Marker i, a horizontal line: its text, unless it went right of the plot
 * (margin_texts), above or below the line, starting or ending at
 * text_pos. */
static void script_horizontal_marker(const ms_plot *p, size_t i, FILE *f) {
  const ms_plot_marker *m = &p->markers[i];
  const char *col = color_or(m->color, "#555555");
  double pos = m->text_pos > 0 ? m->text_pos : 0.98;
  bool left = pos < 0.5; /* text starts at pos, else ends there */
  fprintf(f,
          "set arrow %zu from graph 0, first %.17g to graph 1, first "
          "%.17g nohead lc rgb '%s' lw 1.3 dt (6,4) back\n",
          i + 1, m->at, m->at, col);
  if (m->text && !m->on_axis) {
    fprintf(f, "set label %zu ", i + 10);
    quoted(f, m->text);
    fprintf(f,
            " at graph %.3f, first %.17g %s offset 0,%s tc rgb '%s' "
            "boxed back\n",
            pos, m->at, left ? "left" : "right",
            m->text_before ? "-0.8" : "0.8", col);
  }
}

/* The arrows, numbered after the markers' lines (gnuplot's arrows are one
 * numbered set), each with its text beside its middle unless the text went
 * into the legend; on a log axis the middle is the geometric one. */
static void script_arrows(const ms_plot *p, FILE *f) {
  for (size_t i = 0; i < p->n_arrows; i++) {
    const ms_plot_arrow *a = &p->arrows[i];
    const char *col = color_or(a->color, "#000000");
    fprintf(f,
            "set arrow %zu from first %.17g, first %.17g to first %.17g, "
            "first %.17g head size screen 0.012,25 filled lc rgb '%s' lw 2 "
            "front\n",
            p->n_markers + i + 1, a->x1, a->y1, a->x2, a->y2, col);
    if (a->text && !a->text_in_legend) {
      fprintf(f, "set label %zu ", p->n_markers + i + 10);
      quoted(f, a->text);
      double t = a->text_at > 0 ? a->text_at : 0.5;
      double ym = p->ylog && a->y1 > 0 && a->y2 > 0
                      ? a->y1 * pow(a->y2 / a->y1, t)
                      : a->y1 + t * (a->y2 - a->y1);
      fprintf(f,
              " at first %.17g, first %.17g %s offset %s,0 tc rgb '%s' "
              "boxed back\n",
              a->x1 + t * (a->x2 - a->x1), ym,
              a->text_before ? "right" : "left",
              a->text_before ? "-0.8" : "0.8", col);
    }
  }
}

/* Each series as a datablock $d<i>.  A point gnuplot cannot draw (not
 * finite, or not positive on a log axis) becomes a blank line, which
 * breaks the line there, and a series with no point at all gets a NaN:
 * gnuplot refuses an empty datablock. */
static void script_data(const ms_plot *p, FILE *f) {
  for (size_t i = 0; i < p->n_series; i++) {
    const ms_plot_series *s = &p->series[i];
    fprintf(f, "$d%zu << EOD\n", i);
    size_t written = 0;
    bool filled = s->style == MS_PLOT_FILLED;
    for (size_t k = 0; k < s->n; k++) {
      double y2 = filled ? s->y[s->n + k] : 0;
      if (!isfinite(s->x[k]) || !isfinite(s->y[k]) || !isfinite(y2) ||
          (p->xlog && s->x[k] <= 0) ||
          (p->ylog && (s->y[k] <= 0 || (filled && y2 <= 0)))) {
        fputc('\n', f);
        continue;
      }
      if (filled)
        fprintf(f, "%.12g %.12g %.12g\n", s->x[k], s->y[k], y2);
      else
        fprintf(f, "%.12g %.12g\n", s->x[k], s->y[k]);
      written++;
    }
    if (written == 0)
      fputs(filled ? "NaN NaN NaN\n" : "NaN NaN\n", f);
    fputs("EOD\n", f);
  }
}

/* How one series is drawn: its style with its width (or the style's
 * default), its colour and its legend entry. */
static void script_series_style(const ms_plot_series *s, FILE *f) {
  double wdt = s->width > 0 ? s->width : 0;
  switch (s->style) {
  case MS_PLOT_SOLID:
    fprintf(f, "with lines lw %.2f dt 1", wdt ? wdt : 2.5);
    break;
  case MS_PLOT_DASHED:
    fprintf(f, "with lines lw %.2f dt (10,6)", wdt ? wdt : 2.5);
    break;
  case MS_PLOT_DOTTED:
    fprintf(f, "with lines lw %.2f dt (2,4)", wdt ? wdt : 2.0);
    break;
  case MS_PLOT_POINTS:
    fprintf(f, "with points pt 7 ps %.2f", wdt ? wdt : 1.6);
    break;
  case MS_PLOT_OPEN_POINTS:
    fprintf(f, "with points pt 6 ps %.2f lw 2", wdt ? wdt : 1.6);
    break;
  case MS_PLOT_FILLED:
    fputs("with filledcurves fs transparent solid 0.3 noborder", f);
    break;
  }
  if (s->color)
    fprintf(f, " lc rgb '%s'", s->color);
  if (s->title) {
    fputs(" title ", f);
    quoted(f, s->title);
  } else {
    fputs(" notitle", f);
  }
}

/* The plot command: the legend entries of the bands and of the arrows
 * whose texts went there are keyentries (they draw nothing), around the
 * series themselves.  With nothing to plot, gnuplot still needs an
 * item. */
static void script_plot(const ms_plot *p, FILE *f) {
  fputs("plot ", f);
  int items = 0;
  for (size_t i = 0; i < p->n_bands; i++) {
    if (!p->bands[i].label)
      continue;
    fprintf(f,
            "%skeyentry with boxes fc rgb '%s' fs transparent solid 0.3 "
            "noborder title ",
            items++ ? ", \\\n     " : "",
            color_or(p->bands[i].color, "#E69F00"));
    quoted(f, p->bands[i].label);
  }
  for (size_t i = 0; i < p->n_series; i++) {
    fprintf(f, "%s$d%zu using 1:2%s ", items++ ? ", \\\n     " : "", i,
            p->series[i].style == MS_PLOT_FILLED ? ":3" : "");
    script_series_style(&p->series[i], f);
  }
  for (size_t i = 0; i < p->n_arrows; i++) {
    const ms_plot_arrow *a = &p->arrows[i];
    if (!a->text || !a->text_in_legend)
      continue;
    fprintf(f, "%skeyentry with vectors head filled lc rgb '%s' lw 2 title ",
            items++ ? ", \\\n     " : "", color_or(a->color, "#000000"));
    quoted(f, a->text);
  }
  if (items == 0)
    fputs("NaN notitle", f);
  fputc('\n', f);
}

int ms_plot_script(const ms_plot *p, const char *path, FILE *f) {
  ms_plot_format fmt;
  if (ms_plot_format_of(path, &fmt) != 0)
    return -1;
  script_style(p, fmt, f);
  script_titles(p, f);
  script_axes(p, f);
  script_bands(p, f);
  margin_texts(p, f, true);
  margin_texts(p, f, false);
  for (size_t i = 0; i < p->n_markers; i++) {
    if (p->markers[i].vertical)
      script_vertical_marker(p, i, f);
    else
      script_horizontal_marker(p, i, f);
  }
  script_arrows(p, f);
  script_data(p, f);
  script_plot(p, f);
  return 0;
}

/* Write all of buf to fd; 0 or -1 (errno set). */
static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Run gnuplot on the script of p, its standard output going to out. */
static int run_gnuplot(const ms_plot *p, const char *path, int out, char *err,
                       size_t errlen) {
  char *script = NULL;
  size_t script_len = 0;
  FILE *mem = open_memstream(&script, &script_len);
  if (mem == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  ms_plot_script(p, path, mem);
  if (fclose(mem) != 0) {
    free(script);
    snprintf(err, errlen, "out of memory");
    return -1;
  }

  const char *prog = getenv("METASTABLE_GNUPLOT");
  if (prog == NULL || *prog == '\0')
    prog = "gnuplot";
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(err, errlen, "cannot start gnuplot: pipe: %s", strerror(errno));
    free(script);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  char *argv[] = {(char *)prog, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, prog, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[0]);
  if (rc != 0) {
    close(fds[1]);
    free(script);
    if (rc == ENOENT)
      snprintf(err, errlen,
               "cannot draw %s: gnuplot not found (looked for '%s' in PATH): "
               "install the Debian package gnuplot-nox",
               path, prog);
    else if (rc == EACCES && strchr(prog, '/') == NULL)
      /* posix_spawnp says EACCES, not ENOENT, when a directory of PATH
       * cannot be searched (a root-only one in a PATH that sudo or su
       * kept) and the program is found nowhere else */
      snprintf(err, errlen,
               "cannot draw %s: '%s' could not be started from PATH "
               "(permission denied: a directory of PATH is not searchable, "
               "or the program is not executable); if it is missing, "
               "install the Debian package gnuplot-nox",
               path, prog);
    else
      snprintf(err, errlen, "cannot start %s: %s", prog, strerror(rc));
    return -1;
  }
  /* gnuplot may exit early on an error: a write must not kill us */
  struct sigaction ign = {.sa_handler = SIG_IGN}, old;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &old);
  int werr = write_all(fds[1], script, script_len) != 0 ? errno : 0;
  close(fds[1]);
  sigaction(SIGPIPE, &old, NULL);
  free(script);
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      snprintf(err, errlen, "waiting for gnuplot: %s", strerror(errno));
      return -1;
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFEXITED(status))
      snprintf(err, errlen,
               "gnuplot failed (exit status %d) drawing %s: its messages are "
               "above",
               WEXITSTATUS(status), path);
    else
      snprintf(err, errlen, "gnuplot was killed by signal %d drawing %s",
               WTERMSIG(status), path);
    return -1;
  }
  if (werr) {
    snprintf(err, errlen, "writing to gnuplot: %s", strerror(werr));
    return -1;
  }
  return 0;
}

int ms_plot_write(const ms_plot *p, const char *path, char *err,
                  size_t errlen) {
  ms_plot_format fmt;
  if (ms_plot_format_of(path, &fmt) != 0) {
    snprintf(err, errlen, "%s: the plot's file name must end in .svg or .png",
             path);
    return -1;
  }
  /* gnuplot's standard output is the file: opened here, so that the file
   * name never reaches gnuplot, and a file that cannot be written gets a
   * clear message before gnuplot starts. */
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (out < 0) {
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return -1;
  }

  int rc = run_gnuplot(p, path, out, err, errlen);
  struct stat st;
  if (rc == 0 &&
      (fstat(out, &st) != 0 || (S_ISREG(st.st_mode) && st.st_size == 0))) {
    snprintf(err, errlen, "gnuplot produced no image in %s", path);
    rc = -1;
  }
  if (close(out) != 0 && rc == 0) {
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    rc = -1;
  }
  /* no half-drawn or empty image left behind (only a plain file: the
   * path may be a device) */
  if (rc != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
    unlink(path);
  return rc;
}
