#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration test: the storm lab (doc/storm-lab.md) against the plugin built
# in this tree.  A real retry storm on HAProxy, nginx and php-fpm, read by
# a real collectd; passes when every check of lab/report.sh holds.  Runs
# as root (php-fpm and collectd's exec plugin switch to nobody); takes five
# to nine minutes.  Skipped (77) without root or the lab's packages, an
# error then with MS_REQUIRE_ALL=1 (tests/require.sh).
set -eu
src=${MS_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${MS_TOP_BUILDDIR:-$src/build}
. "$src/tests/require.sh"
ms_require_root test-storm-lab "php-fpm and collectd's exec plugin switch to nobody"
ms_require test-storm-lab bash collectd haproxy nginx php-fpm8.2 httperf \
  socat curl taskset setsid gnuplot
exec "$src/lab/storm-lab.sh" --skip-install --build "$build" \
  --out "$build/lab/test"
