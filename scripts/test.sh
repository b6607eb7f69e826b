#!/bin/sh
# SPDX-License-Identifier: MIT
# Every test (CONTRIBUTING.md, "Test"): installs what the tests need,
# builds, runs make check-all (the unit tier; the integration tier with a
# real collectd, Prometheus and Chromium; the storm lab; last the Debian
# package, installed into this system and purged again), then the unit
# tier again under AddressSanitizer and UndefinedBehaviorSanitizer.
# MS_REQUIRE_ALL=1: a test that lacks a tool or root fails instead of
# skipping.  make -j runs the tests side by side; the storm lab and the
# package wait for the others (lab/Makefile.inc, tests/Makefile.inc).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/install-deps.sh --test
MS_REQUIRE_ALL=1
export MS_REQUIRE_ALL
jobs=$(nproc)

echo "== build and make check-all" >&2
# --enable-werror: a new warning fails CI
scripts/build.sh build --enable-werror
make -C build -j"$jobs" check-all ||
  { tail -n 60 build/test-suite.log 2>/dev/null; exit 1; }

echo "== sanitizers: the unit tier under ASan + UBSan" >&2
scripts/build.sh build-asan --enable-werror \
  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  make -C build-asan -j"$jobs" check ||
  { tail -n 60 build-asan/test-suite.log 2>/dev/null; exit 1; }
echo "== all tests passed" >&2
