/* SPDX-License-Identifier: MIT */
/*
 * Where the texts of a chart go; see layout.h.  The offsets below mirror
 * the ones ms_plot_script gives each kind of text (cli/plot.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

void ms_layout_init(ms_layout *l, const ms_plot *p) {
  memset(l, 0, sizeof *l);
  l->p = p;
  l->weight = 1;
}

void ms_layout_free(ms_layout *l) {
  free(l->seg);
  l->seg = NULL;
  l->n_seg = l->cap = 0;
}

/* A segment in graph coordinates. */
static void add(ms_layout *l, double gx0, double gy0, double gx1, double gy1) {
  double g[5] = {gx0, gy0, gx1, gy1, l->weight};
  for (int i = 0; i < 4; i++) {
    if (isnan(g[i]))
      return;
    g[i] = fmax(fmin(g[i], 10), -10); /* off the plot: far enough */
  }
  if (l->n_seg == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 4096;
    double(*a)[5] = realloc(l->seg, cap * sizeof *a);
    if (a == NULL) {
      l->oom = true;
      return;
    }
    l->seg = a;
    l->cap = cap;
  }
  memcpy(l->seg[l->n_seg++], g, sizeof g);
}

void ms_layout_segment(ms_layout *l, double x0, double y0, double x1,
                       double y1) {
  add(l, ms_plot_graph_x(l->p, x0), ms_plot_graph_y(l->p, y0),
      ms_plot_graph_x(l->p, x1), ms_plot_graph_y(l->p, y1));
}

void ms_layout_series(ms_layout *l, const ms_plot_series *s) {
  bool points = s->style == MS_PLOT_POINTS || s->style == MS_PLOT_OPEN_POINTS;
  for (size_t k = 0; k < s->n; k++) {
    if (points)
      ms_layout_point(l, s->x[k], s->y[k]);
    else if (k > 0)
      ms_layout_segment(l, s->x[k - 1], s->y[k - 1], s->x[k], s->y[k]);
  }
}

void ms_layout_vertical(ms_layout *l, double x) {
  double w = l->weight, g = ms_plot_graph_x(l->p, x);
  l->weight = 0.25 * w;
  add(l, g, 0, g, 1);
  l->weight = w;
}

void ms_layout_horizontal(ms_layout *l, double y) {
  double g = ms_plot_graph_y(l->p, y);
  add(l, 0, g, 1, g);
}

/* A point is drawn as a disc some 12 pixels across: a cross that size. */
void ms_layout_point(ms_layout *l, double x, double y) {
  double gx = ms_plot_graph_x(l->p, x), gy = ms_plot_graph_y(l->p, y);
  double rx = 0.8 * ms_plot_char_width(l->p);
  double ry = 0.4 * ms_plot_line_height(l->p);
  add(l, gx - rx, gy, gx + rx, gy);
  add(l, gx, gy - ry, gx, gy + ry);
}

void ms_layout_box(ms_layout *l, ms_layout_rect r) {
  if (l->n_boxes < sizeof l->boxes / sizeof l->boxes[0])
    l->boxes[l->n_boxes++] = r;
}

/* Does segment g meet rectangle r?  (Liang and Barsky's clipping.) */
static bool segment_meets(const double g[4], ms_layout_rect r) {
  double t0 = 0, t1 = 1, dx = g[2] - g[0], dy = g[3] - g[1];
  double p[4] = {-dx, dx, -dy, dy};
  double q[4] = {g[0] - r.x0, r.x1 - g[0], g[1] - r.y0, r.y1 - g[1]};
  for (int i = 0; i < 4; i++) {
    if (p[i] == 0) {
      if (q[i] < 0)
        return false;
      continue;
    }
    double t = q[i] / p[i];
    if (p[i] < 0) {
      if (t > t1)
        return false;
      t0 = fmax(t0, t);
    } else {
      if (t < t0)
        return false;
      t1 = fmin(t1, t);
    }
  }
  return true;
}

double ms_layout_badness(const ms_layout *l, ms_layout_rect r) {
  double bad = 0;
  if (r.x0 < 0 || r.x1 > 1 || r.y0 < 0 || r.y1 > 1)
    bad += 1000;
  for (size_t i = 0; i < l->n_boxes; i++) {
    const ms_layout_rect *o = &l->boxes[i];
    if (r.x0 < o->x1 && o->x0 < r.x1 && r.y0 < o->y1 && o->y0 < r.y1)
      bad += 100;
  }
  for (size_t i = 0; i < l->n_seg; i++)
    if (segment_meets(l->seg[i], r))
      bad += l->seg[i][4];
  return bad;
}

/* The best of the places tried: the first that hides nothing wins. */
typedef struct {
  double bad;
  ms_layout_rect r;
  int choice;
} best_place;

static void consider(const ms_layout *l, best_place *b, ms_layout_rect r,
                     int choice) {
  if (b->bad == 0)
    return;
  double bad = ms_layout_badness(l, r);
  if (bad < b->bad)
    *b = (best_place){bad, r, choice};
}

/* plot.c writes an arrow's text 0.8 characters beside the point text_at of
 * the way along it, centred on that point's height. */
double ms_layout_arrow_text(ms_layout *l, ms_plot_arrow *a, double accept) {
  static const double along[] = {0.5, 0.35, 0.65, 0.2, 0.8};
  const ms_plot *p = l->p;
  double w, h, cw = ms_plot_char_width(p);
  ms_plot_text_size(p, a->text, false, &w, &h);
  double gx1 = ms_plot_graph_x(p, a->x1), gx2 = ms_plot_graph_x(p, a->x2);
  double gy1 = ms_plot_graph_y(p, a->y1), gy2 = ms_plot_graph_y(p, a->y2);
  best_place b = {INFINITY, {0, 0, 0, 0}, 0};
  for (int side = 0; side < 2; side++) {
    bool before = side == 0 ? a->text_before : !a->text_before;
    for (int k = 0; k < 5; k++) {
      double t = along[k], x = gx1 + t * (gx2 - gx1);
      double y = gy1 + t * (gy2 - gy1);
      double x0 = before ? x - 0.8 * cw - w - 0.5 * cw : x + 0.4 * cw;
      consider(l, &b,
               (ms_layout_rect){x0, y - 0.6 * h, x0 + w + cw, y + 0.6 * h},
               side * 10 + k);
    }
  }
  if (b.bad > accept)
    return b.bad;
  a->text_before = b.choice / 10 == 0 ? a->text_before : !a->text_before;
  a->text_at = along[b.choice % 10];
  ms_layout_box(l, b.r);
  return b.bad;
}

/* plot.c writes a horizontal marker's text 0.8 lines above or below it,
 * ending at text_pos, or starting there when text_pos < 0.5. */
double ms_layout_horizontal_text(ms_layout *l, ms_plot_marker *m) {
  static const double pos[] = {0.98, 0.02, 0.5, 0.25, 0.75, 0.1, 0.9, 0.4, 0.6};
  const ms_plot *p = l->p;
  double w, h, cw = ms_plot_char_width(p);
  ms_plot_text_size(p, m->text, false, &w, &h);
  double y = ms_plot_graph_y(p, m->at);
  best_place b = {INFINITY, {0, 0, 0, 0}, 0};
  for (int k = 0; k < 9; k++)
    for (int side = 0; side < 2; side++) {
      bool below = side == 0 ? m->text_before : !m->text_before;
      double x0 = pos[k] < 0.5 ? pos[k] : pos[k] - w;
      double yc = below ? y - 0.8 * h : y + 0.8 * h;
      consider(l, &b,
               (ms_layout_rect){x0 - 0.5 * cw, yc - 0.55 * h, x0 + w + 0.5 * cw,
                                yc + 0.55 * h},
               2 * k + side);
    }
  m->text_pos = pos[b.choice / 2];
  m->text_before = b.choice % 2 == 0 ? m->text_before : !m->text_before;
  ms_layout_box(l, b.r);
  return b.bad;
}

/* plot.c writes a text along a vertical marker 1.3 characters beside it,
 * rotated, its top end at text_pos. */
double ms_layout_along_text(ms_layout *l, ms_plot_marker *m) {
  static const double top[] = {0.97, 0.75, 0.55, 0};
  const ms_plot *p = l->p;
  double w, h, cw = ms_plot_char_width(p);
  ms_plot_text_size(p, m->text, true, &w, &h);
  double x = ms_plot_graph_x(p, m->at);
  best_place b = {INFINITY, {0, 0, 0, 0}, 0};
  for (int side = 0; side < 2; side++) {
    bool before = side == 0 ? m->text_before : !m->text_before;
    double xc = before ? x - 1.3 * cw : x + 1.3 * cw;
    for (int k = 0; k < 4; k++) {
      double y1 = top[k] > 0 ? top[k] : 0.03 + h; /* 0: from the bottom */
      consider(
          l, &b,
          (ms_layout_rect){xc - 0.55 * w, y1 - h - 0.5 * cw, xc + 0.55 * w, y1},
          side * 10 + k);
    }
  }
  m->text_before = b.choice / 10 == 0 ? m->text_before : !m->text_before;
  m->text_pos = b.r.y1;
  ms_layout_box(l, b.r);
  return b.bad;
}

ms_layout_rect ms_layout_legend_top_right(const ms_plot *p) {
  size_t entries = 0, chars = 0;
  const char *texts[64];
  size_t n = 0;
  for (size_t i = 0; i < p->n_bands && n < 64; i++)
    if (p->bands[i].label)
      texts[n++] = p->bands[i].label;
  for (size_t i = 0; i < p->n_series && n < 64; i++)
    if (p->series[i].title)
      texts[n++] = p->series[i].title;
  for (size_t i = 0; i < p->n_arrows && n < 64; i++)
    if (p->arrows[i].text && p->arrows[i].text_in_legend)
      texts[n++] = p->arrows[i].text;
  for (size_t i = 0; i < n; i++) {
    double w;
    ms_plot_text_size(p, texts[i], false, &w, NULL);
    size_t c = (size_t)lround(w / ms_plot_char_width(p));
    chars = c > chars ? c : chars;
    entries++;
  }
  /* the sample (samplen 3), spacing 1.2, the box's padding */
  double w = ((double)chars + 12) * ms_plot_char_width(p);
  double h = (1.2 * (double)entries + 0.8) * ms_plot_line_height(p);
  return (ms_layout_rect){1 - w, 1 - h, 1, 1};
}
