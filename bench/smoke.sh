#!/bin/sh
# SPDX-License-Identifier: MIT
# Smoke test of the benchmarks (make check): every benchmark program runs
# its every code path once with --quick, and writes the rows it should.
# Nothing is timed or compared with a target: benchmarks report, they never
# fail because a machine is slow.
set -eu
build=${MS_TOP_BUILDDIR:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
csv=$tmp/bench.csv
"$build/bench/bench_model" --quick --csv "$csv" >"$tmp/model.out"
"$build/bench/bench_plugin" --quick --csv "$csv" --append >"$tmp/plugin.out"
status=0
# the simulators' benchmark: every case runs (a thousandth of the work)
if ! "$build/bench/bench_sim" --quick >"$tmp/sim.out" 2>&1; then
  echo "bench smoke: bench_sim --quick failed" >&2
  status=1
elif [ "$(grep -c ' requests/s$' "$tmp/sim.out")" -ne 5 ]; then
  echo "bench smoke: bench_sim did not report its 5 cases" >&2
  status=1
fi
for row in wait_tail wait_tail_naive analysis analysis_naive \
  landscape_build equilibria_and_state step_offered_load_changed \
  plugin_read_cycle plugin_read_cycle_names_changed plugin_vmrss_kib \
  plugin_heap_bytes; do
  if ! grep -q "^$row," "$csv"; then
    echo "bench smoke: no '$row' row in the CSV" >&2
    status=1
  fi
done
# the header and every row have the same number of columns
awk -F, 'NR == 1 { n = NF } NF < n { print "bench smoke: short row " NR ": " $0; bad = 1 }
  END { exit bad }' "$csv" >&2 || status=1
# one service dispatches every row of conf/types.db (doc/design.md §1.5)
# but drain_time, which needs a queue_length input the benchmark has not,
# servers_estimate, which needs a service without a pool_size input, and
# stall_tolerance, which is there only while the load is inside the band
# (the benchmark's one service is below its recovery load); the per-service
# rows only, not the shards' heartbeat after "# Not per service".  Two
# more, time_to_storm and storm_hazard, once the service's table is built
# (over the first cycles, within the search budget): 0 to 2 more per cycle
# on average in the quick run's two cycles; and one a cycle, the write
# probe (plugin/write_probe.h)
n_values=$(($(sed '/^# Not per service/,$d' "${MS_TOP_SRCDIR:-.}/conf/types.db" |
  grep -c '^[a-z]') - 5 + 1))
got=$(sed -n 's/^plugin_read_cycle,,,1,.*values per cycle \([0-9.]*\),.*/\1/p' "$csv")
if ! awk -v got="$got" -v n="$n_values" \
  'BEGIN { exit !(got != "" && got >= n && got <= n + 2) }'; then
  echo "bench smoke: one service dispatched ${got:-no} values per cycle, not $n_values to $((n_values + 2))" >&2
  status=1
fi
if [ $status -ne 0 ]; then
  cat "$tmp/model.out" "$tmp/plugin.out" "$tmp/sim.out" >&2
fi
exit $status
