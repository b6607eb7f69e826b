#!/bin/sh
# SPDX-License-Identifier: MIT
# The plugin links only what it calls (doc/design.md §3): metastable.so
# needs no libgmp, and holds none of what only the command and the tests
# call (the exact arithmetic, the capacity plan, the discrete-event
# engine, scenario files, traces, the estimation).  It does hold the
# per-interval model it runs, which shows the check can see symbols.
set -eu
top=${MS_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top/tests/require.sh"
ms_require plugin_links readelf nm
so=${MS_TOP_BUILDDIR:-.}/plugin/.libs/metastable.so
[ -f "$so" ] || { echo "plugin_links: no $so (build first)"; exit 1; }
fail=0
if readelf -d "$so" | grep NEEDED | grep -q libgmp; then
  echo "FAIL: metastable.so needs libgmp"
  fail=1
fi
# local symbols too (nm without -D): the libraries are linked in whole
syms=$(nm "$so")
for f in ms_exact_map ms_analysis_certify ms_response_tail ms_sim_des \
  ms_sim_run ms_scenario_file_load ms_trace_open ms_fit_run; do
  if printf '%s\n' "$syms" | grep -q " $f\$"; then
    echo "FAIL: metastable.so holds $f"
    fail=1
  fi
done
for f in ms_analyze ms_landscape_build ms_trigger_tolerance ms_tracker_step; do
  printf '%s\n' "$syms" | grep -q " $f\$" ||
    { echo "FAIL: metastable.so lacks $f: the check sees nothing"; fail=1; }
done
[ $fail = 0 ] && echo "PASS: metastable.so links only the per-interval code"
exit $fail
