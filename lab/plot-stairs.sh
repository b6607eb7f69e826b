#!/bin/bash
# SPDX-License-Identifier: MIT
# Plot one run of the gunicorn or node lab (lab/staircase.sh) from the
# files its run directory keeps.
#
#   lab/plot-stairs.sh RUN_DIR TITLE TIPPING RECOVERY PNG
#
# Top: the lab's own reads, second by second (direct.txt): offered load,
# attempts and goodput, with the model's tipping and recovery loads, and
# the plugin's storm flag as a shaded band (storm.txt).  Bottom: the
# pool's queue.  Phases (the steps, the trigger) are marked on top.
set -eu
[ $# -eq 5 ] || { echo "usage: lab/plot-stairs.sh RUN_DIR TITLE TIPPING RECOVERY PNG" >&2; exit 2; }
run=$1 title=$2 tip=$3 rec=$4 png=$5
t0=$(head -n 1 "$run/phases" | cut -d' ' -f1)
data=$(mktemp)
flags=$(mktemp)
trap 'rm -f "$data" "$flags"' EXIT
awk -v t0="$t0" '{ printf "%.1f %s %s %s %s\n", $1 - t0, $2, $3, $4, $6 }' "$run/direct.txt" >"$data"
awk -v t0="$t0" '$2 != "nan" { printf "%.1f %s\n", $1 - t0, ($2 + 0 >= 0.5) ? 1 : 0 }' "$run/storm.txt" >"$flags"
ymax=$(awk '{ for (i = 2; i <= 4; i++) if ($i > m) m = $i } END { printf "%d", m * 1.1 + 10 }' "$data")
# the phases as dotted lines, every other one named (the steps are short)
marks=$(awk -v t0="$t0" '{ t = $1 - t0; n++
    if (n > 1) printf "set arrow from %.1f, graph 0 to %.1f, graph 1 nohead lc rgb \"#9e9e9e\" dt 3\n", t, t
    if ($2 != "end" && (n % 2 == 1 || $2 == "trigger"))
      printf "set label \"%s\" at %.1f, graph 1.04 font \",8\" tc rgb \"#555555\"\n", $2, t + 0.5 }' "$run/phases")
gnuplot <<EOF
set terminal pngcairo size 1200,700 font "DejaVu Sans,10"
set output "$png"
set multiplot title "$title" font ",12"
set lmargin 10
set tmargin 3
set rmargin 4
set key top left opaque
set grid lc rgb "#e0e0e0"
set xrange [0:*]
set size 1,0.66
set origin 0,0.32
set ylabel "per second"
set yrange [0:$ymax]
$marks
plot "$flags" using 1:(\$2 > 0 ? $ymax : 1/0) with impulses lc rgb "#fde2c4" lw 6 title "plugin: storm flag", \
  "$data" using 1:2 with lines lc rgb "#1f77b4" lw 1.5 title "offered load", \
  "$data" using 1:4 with lines lc rgb "#d62728" lw 1 title "attempts", \
  "$data" using 1:3 with lines lc rgb "#2ca02c" lw 1.5 title "goodput", \
  $tip with lines lc rgb "#ff7f0e" dt 2 lw 1.5 title "model: tipping load", \
  $rec with lines lc rgb "#9467bd" dt 2 lw 1.5 title "model: recovery load"
unset arrow
unset label
set size 1,0.3
set origin 0,0
set ylabel "queue"
set yrange [0:*]
set xlabel "s"
plot "$data" using 1:5 with lines lc rgb "#555555" lw 1.5 title "the pool's queue"
unset multiplot
EOF
