#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration test: the storm lab on a unix socket (lab/storm-unix.sh,
# doc/storm-lab.md): php-fpm's accept queue holds the places the
# configuration gives it, and in the storm HAProxy sends the attempts per
# request the queue-limited model predicts (within 15 %), and not the
# unbounded model's.  Runs as root; about 90 s.  Skipped (77) without root
# or the lab's packages, an error then with MS_REQUIRE_ALL=1
# (tests/require.sh).
set -eu
src=${MS_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${MS_TOP_BUILDDIR:-$src/build}
. "$src/tests/require.sh"
ms_require_root test-storm-unix "php-fpm switches to nobody"
ms_require test-storm-unix collectd haproxy nginx php-fpm8.2 httperf socat \
  curl python3 taskset setsid
exec "$src/lab/storm-unix.sh" --skip-install --build "$build" \
  --out "$build/lab/test-unix"
