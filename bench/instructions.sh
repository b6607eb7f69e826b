#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per call of every model benchmark case, counted by callgrind
# (valgrind): unlike times they do not move when other work shares the
# machine, so they compare builds and changes exactly.
#   bench/instructions.sh [BUILD_DIR [CSV]]      (make bench-instructions)
# BUILD_DIR holds bench/bench_model (default: the current directory); CSV,
# when given, receives case,servers,calls,instructions_per_call.
set -eu
build=${1:-.}
csv=${2:-}
if ! command -v valgrind >/dev/null 2>&1; then
  echo "instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# bench_model --instructions runs each case's calls inside bench_calls, the
# only function counted; a dump after each call of it gives one case each
if ! valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
  --toggle-collect=bench_calls --dump-after=bench_calls \
  "$build/bench/bench_model" --instructions >"$tmp/cases" 2>"$tmp/log"; then
  cat "$tmp/log" >&2
  exit 1
fi
[ -z "$csv" ] || echo "case,servers,calls,instructions_per_call" >"$csv"
printf '%-27s %9s %18s\n' case servers "instructions/call"
i=0
while IFS=, read -r name servers calls; do
  i=$((i + 1))
  ir=$(sed -n 's/^summary: //p' "$tmp/cg.$i")
  per=$((ir / calls))
  printf '%-27s %9s %18s\n' "$name" "$servers" "$per"
  [ -z "$csv" ] || echo "$name,$servers,$calls,$per" >>"$csv"
done <"$tmp/cases"
