#!/bin/bash
# SPDX-License-Identifier: MIT
# Plot one storm-lab run from its CSV (lab/report.sh writes both).
#
#   lab/plot.sh [--mode storm|noretry] [--no-plugin] CSV PNG
#
# Top: what HAProxy saw (offered load, attempts = the effective load,
# goodput), what php-fpm did, and the plugin's effective load, tipping and
# recovery loads.  Middle: the plugin's state and the lab's own state
# (HAProxy's goodput against its offered load) as coloured bands.
# Bottom: php-fpm's listen queue, the service's real queue.
set -eu
mode=storm
use_plugin=1
while [ $# -gt 0 ]; do
  case $1 in
  --mode) mode=$2; shift 2 ;;
  --no-plugin) use_plugin=0; shift ;;
  *) break ;;
  esac
done
[ $# -eq 2 ] || { echo "usage: lab/plot.sh [--mode M] [--no-plugin] CSV PNG" >&2; exit 2; }
csv=$1
png=$2

# Phase starts (time and name) from the CSV, as gnuplot arrows and labels.
marks=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $(c["phase"]) != last {
    t = $(c["time_s"]); last = $(c["phase"])
    if (last == "end") { printf "tmax = %s\n", t; done = 1; exit }
    if (last == "trigger") {
      ts = t
      printf "set label \"trigger\" at %s, graph 0.5 rotate by 90 center font \",9\" tc rgb \"#b03a2e\"\n", t - 1.5
    }
    if (prev == "trigger")
      printf "set object rect from %s, graph 0 to %s, graph 1 fc rgb \"#f4c7c3\" fs solid 0.6 noborder behind\n", ts, t
    if (NR > 2) printf "set arrow from %s, graph 0 to %s, graph 1 nohead lc rgb \"#9e9e9e\" dt 3\n", t, t
    name = last; sub(/^step-/, "", name)
    if (last != "trigger")
      printf "set label \"%s\" at %s, graph 1.03 font \",9\" tc rgb \"#555555\"\n", name, t + 0.5
    prev = last
  }
  { tl = $(c["time_s"]) }
  END { if (!done) printf "tmax = %s\n", tl }' "$csv")

if [ "$mode" = storm ]; then
  title="Storm lab: httperf -> HAProxy 2.6 (retries 2, timeout 1 s) -> nginx -> php-fpm (10 workers, 50 ms)"
else
  title="Storm lab, retries off: httperf -> HAProxy 2.6 (retries 0, timeout 1 s) -> nginx -> php-fpm (10 workers, 50 ms)"
fi

if [ "$use_plugin" = 1 ]; then
  model_lines=', \
  csv using "time_s":"ms_effective_load" with lines lw 1.5 dt 2 lc rgb "#1f77b4" title "plugin: effective load (model)", \
  csv using "time_s":"ms_tipping_load" with lines lw 1.5 dt 4 lc rgb "#d62728" title "plugin: tipping load", \
  csv using "time_s":"ms_recovery_load" with lines lw 1.5 dt 4 lc rgb "#ff7f0e" title "plugin: recovery load"'
  band='plot csv using "time_s":(2):(0.5):(0.35):(storm_colour(column("ms_storm"), column("ms_recovering"))) with boxxyerror fs solid 1 noborder lc rgb variable notitle, \
  csv using "time_s":(1):(0.5):(0.35):(state_colour(column("ms_state"))) with boxxyerror fs solid 1 noborder lc rgb variable notitle, \
  NaN with boxes fs solid lc rgb "#2ca02c" title "stable, storm 0 | ≥ 90 %", \
  NaN with boxes fs solid lc rgb "#f0b400" title "vulnerable | 10–90 %", \
  NaN with boxes fs solid lc rgb "#d62728" title "metastable, storm 1 | ≤ 10 %", \
  NaN with boxes fs solid lc rgb "#7b2d8e" title "overloaded |", \
  NaN with boxes fs solid lc rgb "#ff7f0e" title "recovering |", \
  csv using "time_s":(0):(0.5):(0.35):(lab_colour(column("goodput"), column("offered"))) with boxxyerror fs solid 1 noborder lc rgb variable notitle'
  band_tics='set ytics ("plugin storm" 2, "plugin state" 1, "lab (HAProxy)" 0)'
  band_key="plugin | lab goodput/offered"
  band_range="-0.6:2.6"
else
  model_lines=""
  band='plot csv using "time_s":(0):(0.5):(0.35):(lab_colour(column("goodput"), column("offered"))) with boxxyerror fs solid 1 noborder lc rgb variable notitle, \
  NaN with boxes fs solid lc rgb "#2ca02c" title "goodput ≥ 90 %", \
  NaN with boxes fs solid lc rgb "#f0b400" title "10–90 %", \
  NaN with boxes fs solid lc rgb "#d62728" title "≤ 10 %"'
  band_tics='set ytics ("lab (HAProxy)" 0)'
  band_key="lab goodput / offered"
  band_range="-0.6:1.6"
fi

gnuplot <<EOF
csv = "$csv"
set terminal pngcairo size 1400,950 font "DejaVu Sans,10"
set output "$png"
set datafile separator ","
set datafile columnheaders
state_colour(s) = s == 0 ? 0x2ca02c : s == 1 ? 0xf0b400 : s == 2 ? 0xd62728 : s == 3 ? 0x7b2d8e : 0xdddddd
storm_colour(s, r) = s != s ? 0xdddddd : s == 1 ? (r == 1 ? 0xff7f0e : 0xd62728) : 0x2ca02c
lab_colour(g, o) = o <= 0 ? 0xdddddd : g >= 0.9 * o ? 0x2ca02c : g <= 0.1 * o ? 0xd62728 : 0xf0b400
$marks
set multiplot title "$title" font ",12"
set lmargin at screen 0.085
set rmargin at screen 0.76
set xrange [0:tmax]

# Loads
set tmargin at screen 0.90
set bmargin at screen 0.43
set ylabel "requests or attempts per second"
set format x ""
set grid ytics lc rgb "#e0e0e0"
set key at screen 0.99, screen 0.90 top right box opaque font ",9" spacing 1.1
set yrange [0:*]
plot csv using "time_s":"offered" with lines lw 2.5 lc rgb "black" title "offered load (HAProxy frontend)", \
  '' using "time_s":"attempts" with lines lw 1.5 lc rgb "#1f77b4" title "attempts (HAProxy backend)", \
  '' using "time_s":"goodput" with lines lw 2 lc rgb "#2ca02c" title "goodput (HAProxy 2xx)", \
  '' using "time_s":"fpm_throughput" with lines lw 1 lc rgb "#8c8c8c" title "php-fpm accepted/s (work done)"$model_lines

# State bands
unset object
unset arrow
unset label
set tmargin at screen 0.40
set bmargin at screen 0.27
unset grid
unset ylabel
set yrange [$band_range]
$band_tics
set key at screen 0.99, screen 0.425 top right box opaque font ",9" title "$band_key" noenhanced
$band

# Queue
set tmargin at screen 0.24
set bmargin at screen 0.07
set format x "%g"
set xlabel "time (s)"
set ylabel "php-fpm listen queue"
set ytics auto
set yrange [0:560]
set grid ytics lc rgb "#e0e0e0"
unset key
plot csv using "time_s":"fpm_queue" with filledcurves y1=0 lc rgb "#9ecae1" notitle, \
  '' using "time_s":"fpm_queue" with lines lw 1 lc rgb "#3182bd" notitle
unset multiplot
EOF
