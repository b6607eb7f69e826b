#!/bin/sh
# SPDX-License-Identifier: MIT
# Lab test: issue 35's stack (b), nginx with one retry in front of
# gunicorn's 8 sync workers (lab/gunicorn-lab.sh, doc/storm-lab.md): the
# staircase and the trigger run, each held to the lab's checks
# (lab/staircase.sh, --check): the staircase latches, drains and comes
# back where the DES of the same staircase does, and the storm flag rises
# after the trigger and is down at the end.  A run on a starved machine
# is inconclusive and is not checked.  Runs as root (nginx's workers
# switch to nobody); 9 to 12 minutes.  Skipped (77) without root or the
# lab's packages, an error then with MS_REQUIRE_ALL=1 (tests/require.sh).
set -eu
src=${MS_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${MS_TOP_BUILDDIR:-$src/build}
. "$src/tests/require.sh"
# the run's lines go beside its output, not into the source tree
LAB_RESULTS=$build/lab/results.csv
export LAB_RESULTS
ms_require_root test-gunicorn-lab "nginx's workers switch to nobody"
ms_require test-gunicorn-lab bash collectd nginx gunicorn httperf curl \
  python3 taskset setsid ss gnuplot
exec "$src/lab/gunicorn-lab.sh" --skip-install --check --build "$build" \
  --out "$build/lab/test-gunicorn"
