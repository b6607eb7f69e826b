#!/bin/bash
# SPDX-License-Identifier: MIT
# The storm lab: a real retry storm out of stock Debian software, watched by
# collectd and the metastable plugin (doc/storm-lab.md).
#
#   lab/storm-lab.sh [--out DIR] [--build DIR] [--no-plugin] [--skip-install]
#
# Two runs, each with its own servers, collectd and report:
#   storm    HAProxy retries 2: healthy at 150 req/s, 20 s at 185 req/s
#            (just under the tipping load), 150 again with a 10x slowdown for 3 s,
#            the slowdown removed, a descending staircase until the lab
#            recovers, then 150 req/s again;
#   noretry  HAProxy retries 0: the same trigger at the same load.
# Each run's CSV, plot and verdicts go to DIR (default build/lab/<time>);
# the exit status is 0 only when every check of lab/report.sh passed.
# Takes about eight minutes.  Every process it starts is stopped on exit,
# Ctrl-C or TERM.
set -u

LAB_SRC=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$LAB_SRC/.." && pwd)
out=""
build=""
use_plugin=1
install=1
while [ $# -gt 0 ]; do
  case $1 in
  --out) out=$2; shift 2 ;;
  --build) build=$2; shift 2 ;;
  --no-plugin) use_plugin=0; shift ;;
  --skip-install) install=0; shift ;;
  -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "storm-lab: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "storm-lab: run as root (php-fpm and the exec plugin switch to nobody)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || echo "storm-lab: warning: one CPU only; httperf and the servers will compete" >&2

if [ "$install" = 1 ]; then
  "$LAB_SRC/install-deps.sh"
fi
if [ -z "$build" ]; then
  build=$top/build
  if [ "$use_plugin" = 1 ]; then "$top/scripts/build.sh" build; fi
fi
export LAB_BUILD=$build
if [ "$use_plugin" = 1 ] && [ ! -f "$LAB_BUILD/plugin/.libs/metastable.so" ]; then
  echo "storm-lab: $LAB_BUILD/plugin/.libs/metastable.so not found (build first, or --no-plugin)" >&2
  exit 2
fi
out=${out:-$top/build/lab/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# shellcheck source=lab/lib.sh
. "$LAB_SRC/lib.sh"
lab_init

# The scenario, in seconds and requests per second.
RATE=150          # the healthy load, inside the model's bistable band
HEALTHY=30        # healthy phase before the trigger
NEAR=185          # then just under the model's tipping load (193.8)...
NEAR_FOR=20       # ...for this long: healthy, and the plugin must agree
FACTOR=10         # the trigger: every request 10 times slower...
TRIGGER=3         # ...for 3 s
HOLD=25           # the original load after the trigger is gone
STEPS_ABOVE="100:15 80:15 72:30" # staircase steps above the recovery load
# Below the recovery load, the backlog drains slowly (at the rate by which
# the attempts fall short of the capacity), so these steps are long: each
# ends early once the lab has recovered.
STEPS_BELOW="64:120 62:120 60:60 58:60"
RECOVERED_FOR=5   # seconds of goodput >= 90 % of offered that mean recovered
AFTER_RECOVERY=10 # seconds more at the load that recovered
FINAL=30          # the original load again
NORETRY_AFTER=30  # retries off: seconds watched after the trigger

# service_file RETRIES: lab/service.yaml with HAProxy's retry count.
service_file() {
  sed -E "s/^( *retries:).*/\1 $1/" "$LAB_SRC/service.yaml" >"$LAB_RUN/service.yaml"
  echo "$LAB_RUN/service.yaml"
}

# start_run NAME RETRIES: servers and collectd for one run.
start_run() {
  lab_new_run "$1"
  lab_start_servers "$2"
  if [ "$use_plugin" = 1 ]; then
    lab_start_collectd "$(service_file "$2")"
  else
    lab_start_collectd
  fi
}

# finish_run NAME MODE: stop the load and collectd, then report.  The
# noretry run's report gets the capacity the storm run measured (its own
# queue never fills): the truth for the learned service time.
finish_run() {
  local name=$1 mode=$2 status=0 capacity
  lab_phase end
  lab_ticks 2 # collectd's last reads
  lab_stop_all
  local flags=(--mode "$mode")
  [ "$use_plugin" = 1 ] || flags+=(--no-plugin)
  capacity=$(sed -n 's/^INFO  capacity: php-fpm served \([0-9.]*\) req\/s.*/\1/p' "$out/storm/summary.txt" 2>/dev/null)
  [ "$mode" = noretry ] && [ -n "$capacity" ] && flags+=(--capacity "$capacity")
  "$LAB_SRC/report.sh" "${flags[@]}" "$LAB_RUN" "$out/$name" || status=1
  # Keep the run's configurations, logs and collectd's CSV files with the
  # report.
  rm -f "$LAB_RUN"/*.sock
  rm -rf "$out/$name/run"
  mv "$LAB_RUN" "$out/$name/run"
  return "$status"
}

# collectd_view: what collectd holds now (collectdctl through unixsock):
# the plugin's inputs and its verdict, for the log.
collectd_view() {
  local id line=""
  for id in haproxy-fe_web/derive-requests haproxy-be_app/derive-attempts \
    haproxy-be_app/derive-retries haproxy-be_app/derive-failed_attempts \
    phpfpm-lab/gauge-total_processes metastable-storm_lab/state \
    metastable-storm_lab/storm metastable-storm_lab/effective_load \
    metastable-storm_lab_learned/service_time_estimate \
    metastable-storm_lab_learned/calibrated; do
    line="$line ${id##*/}=$(lab_getval "$id" | awk '{ printf "%.4g", $1 }')"
  done
  lab_log "collectd holds:$line"
}

run_storm() {
  local s rate secs pid recovered=0 good
  start_run storm 2
  lab_phase healthy
  lab_load "$RATE" "$HEALTHY"
  lab_ticks "$HEALTHY"
  collectd_view
  lab_phase near
  lab_load "$NEAR" "$NEAR_FOR"
  lab_ticks "$NEAR_FOR"
  lab_load "$RATE" $((TRIGGER + HOLD))
  lab_phase trigger
  lab_trigger "$FACTOR"
  lab_ticks "$TRIGGER"
  lab_trigger 1
  lab_phase storm
  lab_ticks "$HOLD"
  collectd_view
  for s in $STEPS_ABOVE; do
    rate=${s%:*} secs=${s#*:}
    lab_phase "step-$rate"
    lab_load "$rate" "$secs"
    lab_ticks "$secs"
  done
  for s in $STEPS_BELOW; do
    rate=${s%:*} secs=${s#*:}
    lab_phase "step-$rate"
    lab_load "$rate" "$secs"
    pid=$LAB_PID
    good=0
    for secs in $(seq "$secs"); do
      lab_tick
      if awk -v g="$LAB_GOODPUT" -v o="$LAB_OFFERED" 'BEGIN { exit !(o > 0 && g >= 0.9 * o) }'; then
        good=$((good + 1))
      else
        good=0
      fi
      if [ "$good" -ge "$RECOVERED_FOR" ]; then
        recovered=1
        lab_log "recovered at step $rate req/s after ${secs}s"
        lab_ticks "$AFTER_RECOVERY"
        break
      fi
    done
    [ "$recovered" = 1 ] && break
  done
  [ "$recovered" = 1 ] || lab_log "no recovery down to the last step"
  lab_phase final
  lab_load "$RATE" $((FINAL + 5))
  # The step that recovered had load planned for longer: end it now (its
  # few requests still in flight are healthy ones).
  lab_stop "$pid"
  lab_ticks "$FINAL"
  finish_run storm storm
}

run_noretry() {
  start_run noretry 0
  lab_phase healthy
  lab_load "$RATE" $((HEALTHY + TRIGGER + NORETRY_AFTER + 5))
  lab_ticks "$HEALTHY"
  lab_phase trigger
  collectd_view
  lab_trigger "$FACTOR"
  lab_ticks "$TRIGGER"
  lab_trigger 1
  lab_phase after
  lab_ticks "$NORETRY_AFTER"
  finish_run noretry noretry
}

lab_log "reports in $out; run directories in $LAB_BASE"
status=0
run_storm || status=1
run_noretry || status=1
cat "$out/storm/summary.txt" "$out/noretry/summary.txt" >"$out/summary.txt" 2>/dev/null
rm -f "$LAB_BASE/pids"
rmdir "$LAB_BASE" 2>/dev/null
echo
cat "$out/summary.txt"
if [ "$status" = 0 ]; then
  lab_log "PASS: every check held (plots: $out/storm/storm-lab.png, $out/noretry/storm-lab.png)"
else
  lab_log "FAIL: see $out/summary.txt"
fi
exit "$status"
