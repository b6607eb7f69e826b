/* SPDX-License-Identifier: MIT */
/*
 * Where the texts of a chart go: a small placer for the labels of an
 * ms_plot (cli/plot.h) that keeps them off the data.  Describe what a text
 * must not hide (the data's lines, marker lines, points, texts placed
 * earlier, the legend's box), then ask for a place for each text in turn:
 * the placer tries a handful of candidate places in order of preference
 * and takes the first that hides nothing, or else the least bad.
 *
 * Sizes are estimates (ms_plot_text_size): the placer leaves some slack
 * around every text.  It needs the plot's ranges (xmin..ymax not NaN).
 *
 * Example (a horizontal marker's text, clear of one series):
 *
 *   ms_layout l;
 *   ms_layout_init(&l, &p);              // p: ranges and size set
 *   ms_layout_series(&l, &series[0]);
 *   ms_layout_horizontal_text(&l, &marker);  // sets text_pos, text_before
 *   ms_layout_free(&l);
 */
#ifndef METASTABLE_CLI_LAYOUT_H
#define METASTABLE_CLI_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "plot.h"

/* A rectangle in graph coordinates: 0..1 across and up the plot area. */
typedef struct {
  double x0, y0, x1, y1;
} ms_layout_rect;

typedef struct {
  const ms_plot *p; /* the frame: ranges and size */
  double (*seg)[5]; /* obstacles: x0, y0, x1, y1 (graph), weight */
  size_t n_seg, cap;
  double weight;            /* of the segments added next (1) */
  ms_layout_rect boxes[16]; /* texts placed, the legend */
  size_t n_boxes;
  bool oom; /* an obstacle was lost for want of memory */
} ms_layout;

void ms_layout_init(ms_layout *l, const ms_plot *p);
void ms_layout_free(ms_layout *l);

/* Obstacles, in data coordinates.  A segment weighs l->weight (how bad it
 * is to hide it: 1 for a piece of data; ms_layout_vertical's lines weigh a
 * quarter, as a text across a thin marker line still reads). */
void ms_layout_segment(ms_layout *l, double x0, double y0, double x1,
                       double y1);
void ms_layout_series(ms_layout *l, const ms_plot_series *s);
void ms_layout_vertical(ms_layout *l, double x);
void ms_layout_horizontal(ms_layout *l, double y);
void ms_layout_point(ms_layout *l, double x, double y);
/* A box in graph coordinates that no text may overlap (a legend). */
void ms_layout_box(ms_layout *l, ms_layout_rect r);

/* How bad a place is for a text: 1000 when it leaves the plot area, 100
 * for each box it overlaps, plus the weight of every obstacle it hides. */
double ms_layout_badness(const ms_layout *l, ms_layout_rect r);

/*
 * Place a text, which then becomes a box for the texts placed after it.
 * Each returns the badness of the place taken (0: it hides nothing).
 *   arrow_text       beside the arrow, on the side a->text_before asks for
 *                    first, at its middle or nearer an end (sets
 *                    text_before, text_at); when the best place is worse
 *                    than `accept`, nothing is placed and a is unchanged
 *   horizontal_text  along a horizontal marker, above or below it (the
 *                    side m->text_before asks for first), at its right
 *                    end, its left end, or between (sets text_pos,
 *                    text_before)
 *   along_text       along a vertical marker (m->along), beside it,
 *                    hanging from the top, or lower (sets text_pos,
 *                    text_before)
 */
double ms_layout_arrow_text(ms_layout *l, ms_plot_arrow *a, double accept);
double ms_layout_horizontal_text(ms_layout *l, ms_plot_marker *m);
double ms_layout_along_text(ms_layout *l, ms_plot_marker *m);

/* The box a legend inside the plot at its top right corner ("top right")
 * takes: its entries as ms_plot_script writes them. */
ms_layout_rect ms_layout_legend_top_right(const ms_plot *p);

#endif
