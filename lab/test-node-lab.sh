#!/bin/sh
# SPDX-License-Identifier: MIT
# Lab test: issue 35's stack (c), undici's RetryAgent against a bounded
# node pool (lab/node-lab.sh, doc/storm-lab.md): the staircase and the
# trigger run, each held to the lab's checks (lab/staircase.sh, --check):
# the staircase latches, drains and comes back where the DES of the same
# staircase does, and the storm flag rises after the trigger and is down
# at the end.  A run on a starved machine is inconclusive and is not
# checked.  The first run installs undici with npm ci (the npm registry).
# 6 to 8 minutes.  Skipped (77) without node, npm or collectd, an error
# then with MS_REQUIRE_ALL=1 (tests/require.sh).
set -eu
src=${MS_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${MS_TOP_BUILDDIR:-$src/build}
. "$src/tests/require.sh"
# the run's lines go beside its output, not into the source tree
LAB_RESULTS=$build/lab/results.csv
export LAB_RESULTS
ms_require test-node-lab bash collectd node npm curl python3 taskset setsid ss \
  gnuplot
exec "$src/lab/node-lab.sh" --skip-install --check --build "$build" \
  --out "$build/lab/test-node"
