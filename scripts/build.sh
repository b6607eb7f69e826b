#!/bin/sh
# SPDX-License-Identifier: MIT
# Configure and build in DIR (default build/) from this checkout.
#   scripts/build.sh [DIR] [configure arguments...]
# The first time, configure runs with the arguments given.  Later, with
# arguments that differ from those DIR was configured with
# (`config.status --config`), configure runs again with the new ones;
# with no arguments DIR keeps its configuration.
# MS_BUILD_PROGRESS=1 (scripts/demo.sh sets it): a line on stderr for
# each phase, and the compile steps counted as they go, with the time.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
[ $# -gt 0 ] && shift
progress=${MS_BUILD_PROGRESS:-0}
start=$(date +%s)

say() {
  if [ "$progress" = 1 ]; then
    echo "build.sh: $*" >&2
  fi
}

cd "$top"
if [ ! -x configure ]; then
  say "generating configure (autogen.sh, once per checkout)"
  ./autogen.sh >/dev/null 2>&1 || ./autogen.sh
fi
mkdir -p "$dir"
cd "$dir"

# The arguments configure was last run with here, one a line
# (config.status prints them quoted for the shell).
configured_args() {
  (eval "set -- $(./config.status --config)" && printf '%s\n' "$@")
}

if [ ! -f Makefile ] || [ ! -x config.status ]; then
  say "configuring $dir (configure, once per build directory)"
  "$top/configure" -q "$@"
elif [ $# -gt 0 ] && [ "$(configured_args)" != "$(printf '%s\n' "$@")" ]; then
  echo "build.sh: $dir was configured with: $(./config.status --config)" >&2
  echo "build.sh: configuring it again with: $*" >&2
  "$top/configure" -q "$@"
fi

if [ "$progress" != 1 ]; then
  make -j"$(nproc)" >/dev/null
  exit 0
fi

# The steps make will run (automake's silent rules echo one line each:
# CC, CCLD, GEN), counted as make writes them, once a second.
total=$(make -n 2>/dev/null | grep -c 'echo "  [A-Z]') || total=0
if [ "$total" = 0 ]; then
  say "$dir is up to date"
  make -j"$(nproc)" >/dev/null
  exit 0
fi
say "compiling in $dir: $total steps with $(nproc) jobs"
log=$(mktemp)
make -j"$(nproc)" >"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' INT TERM
last=0
while kill -0 $pid 2>/dev/null; do
  sleep 1
  n=$(grep -c '^  [A-Z]' "$log") || n=0
  t=$(($(date +%s) - start))
  if [ -t 2 ]; then
    printf '\rbuild.sh: compiling: %d of %d steps, %d s ' "$n" "$total" \
      "$t" >&2
  elif [ $((t - last)) -ge 10 ]; then
    echo "build.sh: compiling: $n of $total steps, $t s" >&2
    last=$t
  fi
done
status=0
wait $pid || status=$?
rm -f "$log"
[ -t 2 ] && echo >&2
[ $status = 0 ] || exit $status
say "built $dir in $(($(date +%s) - start)) s"
