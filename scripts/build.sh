#!/bin/sh
# SPDX-License-Identifier: MIT
# Configure and build in DIR (default build/) from this checkout.
#   scripts/build.sh [DIR] [configure arguments...]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
[ $# -gt 0 ] && shift
cd "$top"
[ -x configure ] || ./autogen.sh >/dev/null 2>&1 || ./autogen.sh
mkdir -p "$dir"
cd "$dir"
[ -f Makefile ] || "$top/configure" -q "$@"
make -j"$(nproc)" >/dev/null
