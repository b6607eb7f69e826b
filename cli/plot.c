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

/* A gnuplot double-quoted string: backslash and quote escaped, control
 * characters replaced by blanks.  (Macro substitution with @ does not
 * happen inside quotes.) */
static void quoted(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
  }
  fputc('"', f);
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

int ms_plot_script(const ms_plot *p, const char *path, FILE *f) {
  ms_plot_format fmt;
  if (ms_plot_format_of(path, &fmt) != 0)
    return -1;
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
  fputs("set encoding utf8\nset output ", f);
  quoted(f, path);
  fputc('\n', f);
  fputs("set border 3 lc rgb '#404040'\n"
        "set tics nomirror out\n"
        "set grid xtics ytics lc rgb '#e4e4e4' lw 1 dt 1\n"
        "set style fill transparent solid 0.22 noborder\n"
        "set style textbox opaque noborder margins 1,1\n"
        "set tmargin 6\nset rmargin 4\n",
        f);
  if (p->title) {
    /* gnuplot puts the title above the top axis's labels when there are
     * any (on_axis markers); without them it sits lower, on the subtitle,
     * unless lifted */
    bool top_labels = false;
    for (size_t i = 0; i < p->n_markers; i++)
      top_labels |= p->markers[i].vertical && p->markers[i].on_axis &&
                    p->markers[i].text != NULL;
    fputs("set title ", f);
    quoted(f, p->title);
    fprintf(f, " font ',16' offset 0,%s\n", top_labels ? "1.0" : "2.3");
  }
  if (p->subtitle) {
    fputs("set label 1 ", f);
    quoted(f, p->subtitle);
    fputs(" at graph 0.5, graph 1 offset 0,2.4 center font ',11' "
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
  range(f, "x", p->xmin, p->xmax);
  range(f, "y", p->ymin, p->ymax);
  if (p->xlog)
    fputs("set logscale x\n", f);
  if (p->ylog)
    fputs("set logscale y\n", f);
  fputs("set key ", f);
  fputs(p->legend ? p->legend : "top left", f);
  fputs(" reverse Left box lc rgb '#909090' opaque samplen 3 spacing 1.2 "
        "width 1\n",
        f);
  /* a legend below the plot: gnuplot leaves it no room for the x label */
  if (p->legend && strstr(p->legend, "below"))
    fputs("set bmargin 9\n", f);

  for (size_t i = 0; i < p->n_bands; i++) {
    const ms_plot_band *b = &p->bands[i];
    fprintf(f,
            "set object %zu rect from first %.17g, graph 0 to first %.17g, "
            "graph 1 behind fc rgb '%s' fs transparent solid 0.22 "
            "noborder\n",
            i + 1, b->from, b->to, color_or(b->color, "#E69F00"));
  }
  /* texts of vertical markers on the top axis */
  int axis_labels = 0;
  for (size_t i = 0; i < p->n_markers; i++) {
    const ms_plot_marker *m = &p->markers[i];
    if (!(m->vertical && m->on_axis && m->text))
      continue;
    fputs(axis_labels++ ? ", " : "set link x2\nset x2tics out scale 0.5 (", f);
    quoted(f, m->text);
    fprintf(f, " %.17g", m->at);
  }
  if (axis_labels)
    fputs(") tc rgb '#8a5a00'\n", f);

  for (size_t i = 0; i < p->n_markers; i++) {
    const ms_plot_marker *m = &p->markers[i];
    const char *col = color_or(m->color, "#555555");
    if (m->vertical) {
      double pos = m->text_pos > 0 ? m->text_pos : 0.97;
      fprintf(f,
              "set arrow %zu from first %.17g, graph 0 to first %.17g, "
              "graph 1 nohead lc rgb '%s' lw 1.3 dt (6,4) back\n",
              i + 1, m->at, m->at, col);
      if (m->text && !m->on_axis) {
        fprintf(f, "set label %zu ", i + 10);
        quoted(f, m->text);
        fprintf(f,
                " at first %.17g, graph %.3f %s offset %s,0 tc rgb '%s' "
                "boxed back\n",
                m->at, pos, m->text_before ? "right" : "left",
                m->text_before ? "-0.6" : "0.6", col);
      }
    } else {
      double pos = m->text_pos > 0 ? m->text_pos : 0.98;
      bool left = pos < 0.5; /* text starts at pos, else ends there */
      fprintf(f,
              "set arrow %zu from graph 0, first %.17g to graph 1, first "
              "%.17g nohead lc rgb '%s' lw 1.3 dt (6,4) back\n",
              i + 1, m->at, m->at, col);
      if (m->text) {
        fprintf(f, "set label %zu ", i + 10);
        quoted(f, m->text);
        fprintf(f,
                " at graph %.3f, first %.17g %s offset 0,%s tc rgb '%s' "
                "boxed back\n",
                pos, m->at, left ? "left" : "right",
                m->text_before ? "-0.8" : "0.8", col);
      }
    }
  }

  for (size_t i = 0; i < p->n_arrows; i++) {
    const ms_plot_arrow *a = &p->arrows[i];
    const char *col = color_or(a->color, "#000000");
    fprintf(f,
            "set arrow %zu from first %.17g, first %.17g to first %.17g, "
            "first %.17g head size screen 0.012,25 filled lc rgb '%s' lw 2 "
            "front\n",
            p->n_markers + i + 1, a->x1, a->y1, a->x2, a->y2, col);
    if (a->text) {
      fprintf(f, "set label %zu ", p->n_markers + i + 10);
      quoted(f, a->text);
      double ym = p->ylog && a->y1 > 0 && a->y2 > 0 ? sqrt(a->y1 * a->y2)
                                                    : 0.5 * (a->y1 + a->y2);
      fprintf(f,
              " at first %.17g, first %.17g %s offset %s,0 tc rgb '%s' "
              "boxed back\n",
              0.5 * (a->x1 + a->x2), ym, a->text_before ? "right" : "left",
              a->text_before ? "-0.8" : "0.8", col);
    }
  }

  for (size_t i = 0; i < p->n_series; i++) {
    const ms_plot_series *s = &p->series[i];
    fprintf(f, "$d%zu << EOD\n", i);
    size_t written = 0;
    for (size_t k = 0; k < s->n; k++) {
      if (!isfinite(s->x[k]) || !isfinite(s->y[k]) ||
          (p->xlog && s->x[k] <= 0) || (p->ylog && s->y[k] <= 0)) {
        fputc('\n', f); /* a blank line breaks the line */
        continue;
      }
      fprintf(f, "%.12g %.12g\n", s->x[k], s->y[k]);
      written++;
    }
    if (written == 0)
      fputs("NaN NaN\n", f); /* gnuplot refuses an empty datablock */
    fputs("EOD\n", f);
  }

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
    const ms_plot_series *s = &p->series[i];
    fprintf(f, "%s$d%zu using 1:2 ", items++ ? ", \\\n     " : "", i);
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
  if (items == 0)
    fputs("NaN notitle", f);
  fputs("\nunset output\n", f);
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

int ms_plot_write(const ms_plot *p, const char *path, char *err,
                  size_t errlen) {
  ms_plot_format fmt;
  if (ms_plot_format_of(path, &fmt) != 0) {
    snprintf(err, errlen, "%s: the plot's file name must end in .svg or .png",
             path);
    return -1;
  }
  /* Check that the file can be written before starting gnuplot, for a
   * clear message (gnuplot would draw to its stdout instead). */
  FILE *probe = fopen(path, "w");
  if (probe == NULL) {
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return -1;
  }
  fclose(probe);

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
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  /* gnuplot's stdout is not ours: our stdout carries only results */
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY,
                                   0);
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
  struct stat st;
  if (stat(path, &st) != 0 || st.st_size == 0) {
    snprintf(err, errlen, "gnuplot produced no image in %s", path);
    return -1;
  }
  return 0;
}
