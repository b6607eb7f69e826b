#!/bin/sh
# SPDX-License-Identifier: MIT
# Configure and build in DIR (default build/) from this checkout.
#   scripts/build.sh [DIR] [configure arguments...]
# The first time, configure runs with the arguments given.  Later, with
# arguments that differ from those DIR was configured with
# (`config.status --config`), configure runs again with the new ones;
# with no arguments DIR keeps its configuration.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
[ $# -gt 0 ] && shift
cd "$top"
[ -x configure ] || ./autogen.sh >/dev/null 2>&1 || ./autogen.sh
mkdir -p "$dir"
cd "$dir"

# The arguments configure was last run with here, one a line
# (config.status prints them quoted for the shell).
configured_args() {
  (eval "set -- $(./config.status --config)" && printf '%s\n' "$@")
}

if [ ! -f Makefile ] || [ ! -x config.status ]; then
  "$top/configure" -q "$@"
elif [ $# -gt 0 ] && [ "$(configured_args)" != "$(printf '%s\n' "$@")" ]; then
  echo "build.sh: $dir was configured with: $(./config.status --config)" >&2
  echo "build.sh: configuring it again with: $*" >&2
  "$top/configure" -q "$@"
fi
make -j"$(nproc)" >/dev/null
