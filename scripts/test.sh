#!/bin/sh
# SPDX-License-Identifier: MIT
# Every test: installs what it needs, builds, runs make check (unit tests,
# command-line tests, integration tests with a real collectd and
# Prometheus), then the unit tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer, then the Debian package (installed into this
# system and purged again).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/install-deps.sh --test

echo "== build and make check" >&2
# --enable-werror: a new warning fails CI
scripts/build.sh build --enable-werror
make -C build check || { tail -n 60 build/test-suite.log 2>/dev/null; exit 1; }

echo "== sanitizers: unit tests under ASan + UBSan" >&2
scripts/build.sh build-asan --enable-werror \
  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  make -C build-asan check TESTS="\$(UNIT_TESTS)" ||
  { tail -n 60 build-asan/test-suite.log 2>/dev/null; exit 1; }

# Last, since it installs into the system: the Debian package built,
# installed with apt-get, loaded by a real collectd, removed and purged.
echo "== the Debian package: build, install, run, remove, purge" >&2
make -C build check TESTS="\$(PACKAGE_TESTS)" ||
  { tail -n 60 build/test-suite.log 2>/dev/null; exit 1; }
echo "== all tests passed" >&2
