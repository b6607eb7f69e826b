#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration test: the storm lab on a unix socket (lab/storm-unix.sh,
# doc/storm-lab.md): php-fpm's accept queue holds the places the
# configuration gives it, and in the storm HAProxy sends the attempts per
# request the queue-limited model predicts (within 15 %), and not the
# unbounded model's.  Runs as root; about 90 s.  Skipped (77) without root
# or the lab's packages.
set -eu
src=${MS_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${MS_TOP_BUILDDIR:-$src/build}
if [ "$(id -u)" -ne 0 ]; then
  echo "test-storm-unix: skipped: needs root (php-fpm switches to nobody)"
  exit 77
fi
for cmd in haproxy nginx php-fpm8.2 httperf socat curl python3 taskset setsid; do
  if ! command -v "$cmd" >/dev/null 2>&1; then
    echo "test-storm-unix: skipped: $cmd not installed (lab/install-deps.sh)"
    exit 77
  fi
done
exec "$src/lab/storm-unix.sh" --skip-install --build "$build" \
  --out "$build/lab/test-unix"
