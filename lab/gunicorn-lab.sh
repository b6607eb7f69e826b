#!/bin/bash
# SPDX-License-Identifier: MIT
# The gunicorn lab, issue 35's stack (b): httperf -> nginx (one retry
# through proxy_next_upstream, 500 ms per attempt) -> gunicorn, 8 sync
# workers, each request an exponential sleep of mean 100 ms
# (lab/gunicorn-app.py); collectd reads it through the nginx recipe
# (nginx's metastable log through tail, gunicorn's accept queue) and the
# gunicorn recipe (statsd), the plugin watches lab/service-gunicorn.yaml.
#
#   lab/gunicorn-lab.sh [--out DIR] [--build DIR] [--skip-install]
#                       [--runs "staircase trigger"]
#
# Runs, each with its own servers and collectd:
#   staircase  a load staircase up until the stack latches into a storm
#              (the measured tipping load: the step whose last 5 s all
#              had goodput under half the offered load), then down: the
#              measured recovery load is the highest step whose accept
#              queue shrank (the storm drains below it), and the step
#              where goodput came back is recorded beside it (it depends
#              on how long the drain of gunicorn's 2048 places was given);
#   trigger    healthy inside the bistable band, 3 s of 10x slower
#              requests, the storm held, a drain at a low load, healthy
#              again: the plugin's storm flag against goodput, second by
#              second, the drain included.
# Each run appends a line to lab/results.csv (or $LAB_RESULTS) and writes
# DIR/NAME/summary.txt.  A run on a starved machine is "inconclusive":
# the app took more than 5 % longer than it asked for, or gunicorn
# completed under 95 % of 8 / 100 ms with a full queue.  8 to 11 minutes.
# Every process it starts is stopped on exit, Ctrl-C or TERM.
set -u

LAB_SRC=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$LAB_SRC/.." && pwd)
out=""
build=""
install=1
runs="staircase trigger"
while [ $# -gt 0 ]; do
  case $1 in
  --out) out=$2; shift 2 ;;
  --build) build=$2; shift 2 ;;
  --skip-install) install=0; shift ;;
  --runs) runs=$2; shift 2 ;;
  -h | --help) sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "gunicorn-lab: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "gunicorn-lab: run as root (the exec plugin and nginx's workers switch to nobody)" >&2; exit 2; }
if [ "$install" = 1 ]; then "$LAB_SRC/install-deps.sh"; fi
build=${build:-$top/build}
export LAB_BUILD=$build
if [ ! -f "$LAB_BUILD/plugin/.libs/metastable.so" ] || [ ! -x "$LAB_BUILD/cli/metastable" ]; then
  echo "gunicorn-lab: build first ($LAB_BUILD/plugin/.libs/metastable.so, cli/metastable)" >&2
  exit 2
fi
out=${out:-$top/build/lab/gunicorn-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
results=${LAB_RESULTS:-$LAB_SRC/results.csv}

export LAB_POOL=8 LAB_SERVICE_TIME=0.100 LAB_POOL_NAME=gunicorn
# shellcheck source=lab/lib.sh
. "$LAB_SRC/lib.sh"
lab_init

SERVICE=gunicorn_lab
TIMEOUT=500ms
RETRIES=1 # proxy_next_upstream_tries 2
STARVED=0.05 # the app took this much longer than it asked: inconclusive
SLOW_TAIL=3  # s after the trigger its slow requests may still be served
# The staircase, req/s:seconds.  Up: a step is latched when goodput stays
# under half the offered load for its last LATCHED_FOR s.  Down: a step
# drains when its accept queue shrinks faster than DRAINS per second
# (after SETTLE s); it recovers when goodput is at least 90 % of offered
# for RECOVERED_FOR s in a row, which ends the staircase.  Below the
# model's recovery load (40) the backlog drains at 80 - 2 x load per
# second: those steps are long.
STEPS_UP="50:15 56:15 60:20 64:20 68:20 72:20 76:20 80:15"
STEPS_DOWN="64:15 58:15 52:15 46:20 42:20 38:30 34:30 30:60 25:60 20:60"
LATCHED_FOR=5
RECOVERED_FOR=5
SETTLE=3
DRAINS=2
# The trigger run.
RATE=50 HEALTHY=20 FACTOR=10 TRIGGER=3 HOLD=30 DRAIN_RATE=25 DRAIN_MAX=60 FINAL=20

# lab_sample for this stack: "epoch requests 2xx attempts completed queue"
# from nginx's stub_status (requests, less this read's own), nginx's
# metastable log (2xx answers, attempts), the app's log (requests the
# workers finished) and ss (gunicorn's accept queue): the scenario's own
# eyes, beside collectd's.
lab_sample() {
  local rq ok_at finished q
  rq=$(curl -fsS -m 1 "http://127.0.0.1:$LAB_PORT_FE/nginx-status" |
    awk 'NR == 3 { print $3 }')
  ok_at=$(awk '/ status=2/ { ok++ } { sub(/^attempts=/, ""); at += $1 }
    END { print ok + 0, at + 0 }' "$LAB_RUN/metastable.log" 2>/dev/null)
  finished=$(wc -l <"$LAB_RUN/app.log" 2>/dev/null)
  q=$(ss -Hltn "sport = :$LAB_PORT_APP" | awk '{ q += $2 } END { print q + 0 }')
  echo "$(date +%s.%N) ${rq:-0} ${ok_at:-0 0} ${finished:-0} ${q:-0}"
}

# start_servers: gunicorn and nginx on fresh ports, as the recipes say.
start_servers() {
  LAB_PORT_FE=$(lab_free_port)
  LAB_PORT_APP=$(lab_free_port)
  LAB_PORT_STATSD=$(lab_free_port)
  LAB_FACTOR_FILE=$LAB_RUN/factor
  echo 1 >"$LAB_FACTOR_FILE"
  chmod 644 "$LAB_FACTOR_FILE"
  : >"$LAB_RUN/app.log"
  : >"$LAB_RUN/metastable.log"
  install -m 644 "$LAB_SRC/gunicorn-app.py" "$LAB_RUN/gunicorn_app.py"
  install -m 755 "$top/conf/recipes/nginx/accept-queue.sh" "$LAB_RUN/accept-queue.sh"
  mkdir -p "$LAB_RUN/nginx"
  lab_recipe gunicorn gunicorn.conf.py '"0.0.0.0:8000"' "\"127.0.0.1:$LAB_PORT_APP\"" \
    'workers = 4 ' 'workers = 8 ' '"127.0.0.1:8125"' "\"127.0.0.1:$LAB_PORT_STATSD\"" \
    >"$LAB_RUN/gunicorn.conf.py" || exit 1
  local site
  site=$(lab_recipe nginx nginx.conf 10.0.0.11:8000 "127.0.0.1:$LAB_PORT_APP" \
    10.0.0.12:8000 "127.0.0.1:$LAB_PORT_APP" 'listen 80;' "listen 127.0.0.1:$LAB_PORT_FE;" \
    /var/log/nginx/access.log "$LAB_RUN/access.log" \
    /var/log/nginx/metastable.log "$LAB_RUN/metastable.log" \
    'location / {' 'location = /nginx-status { stub_status; }
    location / {') || exit 1
  cat >"$LAB_RUN/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $LAB_RUN/nginx.pid;
error_log $LAB_RUN/nginx-error.log error;
worker_rlimit_nofile 16384;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $LAB_RUN/nginx/body;
  proxy_temp_path $LAB_RUN/nginx/proxy;
  fastcgi_temp_path $LAB_RUN/nginx/fastcgi;
  uwsgi_temp_path $LAB_RUN/nginx/uwsgi;
  scgi_temp_path $LAB_RUN/nginx/scgi;
  # the upstream lists gunicorn twice: nginx tries a request on at most as
  # many servers as the upstream lists, so one retry needs two entries
$site
}
EOF
  lab_spawn gunicorn "$LAB_SERVER_CPU" env LAB_SERVICE_TIME="$LAB_SERVICE_TIME" \
    LAB_FACTOR_FILE="$LAB_FACTOR_FILE" LAB_APP_LOG="$LAB_RUN/app.log" \
    gunicorn -c "$LAB_RUN/gunicorn.conf.py" --chdir "$LAB_RUN" gunicorn_app:application
  lab_spawn nginx "$LAB_SERVER_CPU" nginx -e "$LAB_RUN/nginx-error.log" \
    -p "$LAB_RUN/nginx" -c "$LAB_RUN/nginx.conf"
  lab_wait_for "gunicorn through nginx" 20 curl -fsS -m 2 "http://127.0.0.1:$LAB_PORT_FE/work"
  lab_log "servers up: nginx :$LAB_PORT_FE (tries 2, read timeout $TIMEOUT) -> gunicorn :$LAB_PORT_APP ($LAB_POOL sync workers)"
}

# start_collectd: collectd with the nginx and gunicorn recipes and the
# plugin watching lab/service-gunicorn.yaml (lab_collectd_start).
start_collectd() {
  local tail_block exec_block statsd_block
  install -m 644 "$LAB_SRC/service-gunicorn.yaml" "$LAB_RUN/service.yaml"
  tail_block=$(lab_recipe nginx collectd.conf /var/log/nginx/metastable.log "$LAB_RUN/metastable.log" |
    sed '/^LoadPlugin exec/,$d') || exit 1
  exec_block=$(lab_recipe nginx collectd.conf \
    /usr/share/collectd-metastable/recipes/nginx/accept-queue.sh "$LAB_RUN/accept-queue.sh" \
    '"app" "8000"' "\"app\" \"$LAB_PORT_APP\"" | sed -n '/^LoadPlugin exec/,$p') || exit 1
  statsd_block=$(lab_recipe gunicorn collectd.conf '"8125"' "\"$LAB_PORT_STATSD\"") || exit 1
  lab_collectd_start "$tail_block

$exec_block

$statsd_block" "$LAB_RUN/service.yaml"
}

# step_up RATE SECS: one step of the staircase up; true when it latched
# (goodput under half of offered in every second of its last LATCHED_FOR).
step_up() {
  local rate=$1 secs=$2 i bad=0
  lab_phase "up-$rate"
  lab_load "$rate" "$secs"
  for i in $(seq "$secs"); do
    lab_tick
    if awk -v g="$LAB_GOODPUT" -v o="$LAB_OFFERED" 'BEGIN { exit !(g < 0.5 * o) }'; then
      bad=$((bad + 1))
    else
      bad=0
    fi
  done
  [ "$bad" -ge "$LATCHED_FOR" ]
}

# step_down RATE SECS: one step down, ended early when it recovered (goodput
# at least 90 % of offered for RECOVERED_FOR s); true when it recovered.
# Leaves the step's httperf in LAB_PID, and in STEP_DRAIN the change of
# the accept queue per second from SETTLE s into the step to its end.
step_down() {
  local rate=$1 secs=$2 i good=0 q0=""
  lab_phase "down-$rate"
  lab_load "$rate" "$secs"
  for i in $(seq "$secs"); do
    lab_tick
    [ "$i" = "$SETTLE" ] && q0=$LAB_QUEUE
    [ -n "$q0" ] && STEP_DRAIN=$(awk -v a="$q0" -v b="$LAB_QUEUE" -v n=$((i - SETTLE)) \
      'BEGIN { printf "%.1f", (n > 0 ? (b - a) / n : 0) }')
    if awk -v g="$LAB_GOODPUT" -v o="$LAB_OFFERED" 'BEGIN { exit !(o > 0 && g >= 0.9 * o) }'; then
      good=$((good + 1))
    else
      good=0
    fi
    if [ "$good" -ge "$RECOVERED_FOR" ]; then
      lab_log "recovered at $rate req/s after ${i}s"
      return 0
    fi
  done
  return 1
}

# finish NAME TIPPING RECOVERY BACK: stop everything, judge the run, append
# its line to the results.
finish() {
  local name=$1 tip=$2 rec=$3 back=$4 end
  end=$(date +%s.%N)
  lab_phase end
  lab_ticks 2
  lab_stop_all
  read -r load1 _ </proc/loadavg
  report "$name" "$tip" "$rec" "$back" "$end"
  rm -rf "$out/$name/run"
  mv "$LAB_RUN" "$out/$name/run"
}

# report NAME TIPPING RECOVERY BACK END: the run's summary: the model's
# prediction (metastable solve), the measured loads (BACK: where goodput
# came back), the storm flag (from collectd's CSV files) against goodput <
# 90 % of offered (the lab's own reads, direct.txt) second by second, the
# app's service times, and gunicorn's completions per second while its
# accept queue held more than 100 (the capacity, 8 / 100 ms = 80 asked).
report() {
  local name=$1 tip=$2 rec=$3 back=$4 end=$5 pred ptip prec flag stretch verdict run_s cap
  mkdir -p "$out/$name"
  pred=$("$LAB_BUILD/cli/metastable" solve --servers "$LAB_POOL" \
    --service-time "$(awk -v s="$LAB_SERVICE_TIME" 'BEGIN { print s * 1000 }')ms" \
    --timeout "$TIMEOUT" --retries "$RETRIES")
  ptip=$(awk '/^tipping load/ { print $3 }' <<<"$pred")
  prec=$(awk '/^recovery load/ { print $3 }' <<<"$pred")
  # the storm flag: "epoch value" of every file collectd wrote
  cat "$LAB_RUN"/csv/"$LAB_HOST"/metastable-"$SERVICE"/storm-* 2>/dev/null |
    awk -F, 'NR > 0 && $1 ~ /^[0-9]/ { print $1, $2 }' | sort -n >"$LAB_RUN/storm.txt"
  # "disagree seconds", over the seconds before END with a flag and a load
  # "disagree seconds", over the seconds before END with a flag and a
  # load, against the second's own truth and against the truth of the 3 s
  # centred on it (goodput is counted at completion, offered at arrival:
  # a healthy second's goodput falls under 90 % by that alone)
  flag=$(awk -v end="$end" -v flags="$LAB_RUN/storm.txt" '
    BEGIN { while ((getline l < flags) > 0) { split(l, f, " "); n++; ft[n] = f[1]; fv[n] = f[2] } }
    $1 <= end { m++; t[m] = $1; o[m] = $2; g[m] = $3 }
    END {
      for (k = 1; k <= m; k++) {
        while (i < n && ft[i + 1] <= t[k]) i++
        if (i == 0 || o[k] <= 0 || fv[i] == "nan") continue
        up = fv[i] + 0 >= 0.5
        lo = k > 1 ? k - 1 : 1; hi = lo + 2 <= m ? lo + 2 : m
        so = sg = 0; for (j = lo; j <= hi; j++) { so += o[j]; sg += g[j] }
        secs++; if (up != (g[k] < 0.9 * o[k])) dis++; if (up != (sg < 0.9 * so)) dis3++
      }
      print dis + 0, secs + 0, dis3 + 0 }' "$LAB_RUN/direct.txt")
  flag3=${flag##* }
  flag=${flag% *}
  stretch=$(awk '{ a += $2; t += $3 } END { if (a > 0) printf "%.4f", t / a - 1; else print "nan" }' "$LAB_RUN/app.log")
  # the capacity: completions per second while the queue holds over 100,
  # but not during the trigger nor the SLOW_TAIL s after it, while its
  # slow requests (10 x 100 ms on average) still hold the workers
  cap=$(awk -v phases="$LAB_RUN/phases" -v tail="$SLOW_TAIL" '
    BEGIN { while ((getline l < phases) > 0) { split(l, f, " ")
              if (f[2] == "trigger") a = f[1]; else if (a && !b) b = f[1] + tail } }
    $6 > 100 && !(a && $1 > a && $1 <= b) { n++; c += $5 }
    END { if (n) printf "%.1f", c / n; else print "" }' "$LAB_RUN/direct.txt")
  run_s=$(awk -v t0="$LAB_T0" -v e="$end" 'BEGIN { printf "%d", e - t0 }')
  if awk -v s="$stretch" -v m="$STARVED" 'BEGIN { exit !(s == "nan" || s > m) }'; then
    verdict="inconclusive: the app took ${stretch} longer than it asked (limit $STARVED), load average $load1"
  elif [ -n "$cap" ] && awk -v c="$cap" -v m="$STARVED" -v k="$LAB_POOL" -v s="$LAB_SERVICE_TIME" \
    'BEGIN { exit !(c < (1 - m) * k / s) }'; then
    verdict="inconclusive: gunicorn completed $cap req/s with a full queue, under $(awk -v m="$STARVED" 'BEGIN { print 100 * (1 - m) }') % of the $LAB_POOL / $LAB_SERVICE_TIME s asked, load average $load1"
  else
    verdict="measured"
  fi
  # the staircase against the storm hazard: for each step up that ran,
  # the model's chance of a storm within the step, 1 - exp(-secs /
  # time_to_storm) at its load (metastable solve; from an empty pool,
  # doc/design.md §1.12), and the first load where it passes one half
  local steps="" half="" at_latch="" s h
  for s in $UP_RUN; do
    h=$("$LAB_BUILD/cli/metastable" solve --format json --servers "$LAB_POOL" \
      --service-time "$(awk -v s="$LAB_SERVICE_TIME" 'BEGIN { print s * 1000 }')ms" \
      --timeout "$TIMEOUT" --retries "$RETRIES" --load "${s%:*}" |
      python3 -c 'import json, math, sys
t = json.load(sys.stdin).get("time_to_storm")
print("%.3f" % (-math.expm1(-float(sys.argv[1]) / t) if t else 0))' "${s#*:}")
    steps="$steps ${s%:*}:$h"
    [ -z "$half" ] && awk -v h="$h" 'BEGIN { exit !(h >= 0.5) }' && half=${s%:*}
    [ "${s%:*}" = "$tip" ] && at_latch=$h
  done
  {
    echo "gunicorn lab, run $name ($(date -u +%FT%TZ))"
    echo "model: tipping $ptip req/s, recovery $prec req/s (metastable solve --servers $LAB_POOL --service-time $LAB_SERVICE_TIME s --timeout $TIMEOUT --retries $RETRIES)"
    echo "measured: tipping ${tip:-none} req/s, recovery (the queue drains) ${rec:-none} req/s, goodput back at ${back:-none} req/s"
    [ -n "$steps" ] && echo "model's storm hazard within each step up (load:hazard):$steps; passes 1/2 at ${half:-no step} req/s, latched at ${tip:-none}"
    echo "storm flag vs goodput < 90 % of offered: disagree ${flag% *} of ${flag#* } s (over the 3 s around each second: $flag3)"
    echo "app: took/asked - 1 = $stretch over $(wc -l <"$LAB_RUN/app.log") requests; capacity with a full queue ${cap:-unmeasured} req/s; load average (1 min) $load1"
    echo "verdict: $verdict"
  } | tee "$out/$name/summary.txt" >&2
  [ -f "$results" ] || echo "stack,run,predicted_tipping,measured_tipping,predicted_recovery,measured_recovery,goodput_back,flag_disagree_s,flag_s,run_s,load_avg,service_stretch,capacity,verdict,date,hazard_half_load,hazard_at_latch,flag_disagree_3s_s" >"$results"
  echo "gunicorn,$name,$ptip,${tip:-},$prec,${rec:-},${back:-},${flag% *},${flag#* },$run_s,$load1,$stretch,${cap:-},${verdict%%:*},$(date -u +%FT%TZ),${half:-},${at_latch:-},$flag3" >>"$results"
}

run_staircase() {
  local s tip="" rec="" back="" pid=""
  lab_new_run staircase
  start_servers
  start_collectd
  UP_RUN=""
  for s in $STEPS_UP; do
    UP_RUN="$UP_RUN $s"
    if step_up "${s%:*}" "${s#*:}"; then
      tip=${s%:*}
      lab_log "latched at $tip req/s"
      break
    fi
  done
  if [ -n "$tip" ]; then
    for s in $STEPS_DOWN; do
      [ "${s%:*}" -lt "$tip" ] || continue
      STEP_DRAIN=0
      if step_down "${s%:*}" "${s#*:}"; then
        back=${s%:*}
        pid=$LAB_PID
      fi
      if [ -z "$rec" ] && awk -v d="${STEP_DRAIN:-0}" -v m="$DRAINS" 'BEGIN { exit !(d + 0 < -m) }'; then
        rec=${s%:*}
        lab_log "the queue drains at $rec req/s ($STEP_DRAIN per s)"
      fi
      [ -n "$back" ] && break
    done
  fi
  [ -n "$pid" ] && lab_stop "$pid"
  finish staircase "$tip" "$rec" "$back"
}

run_trigger() {
  local pid back=""
  UP_RUN=""
  lab_new_run trigger
  start_servers
  start_collectd
  lab_phase healthy
  lab_load "$RATE" $((HEALTHY + TRIGGER + HOLD))
  lab_ticks "$HEALTHY"
  lab_phase trigger
  lab_trigger "$FACTOR"
  lab_ticks "$TRIGGER"
  lab_trigger 1
  lab_phase storm
  lab_ticks "$HOLD"
  step_down "$DRAIN_RATE" "$DRAIN_MAX" && back=$DRAIN_RATE
  pid=$LAB_PID
  lab_phase final
  lab_load "$RATE" $((FINAL + 2))
  lab_stop "$pid"
  lab_ticks "$FINAL"
  finish trigger "" "" "$back"
}

lab_log "reports in $out; run directories in $LAB_BASE"
for r in $runs; do
  case $r in
  staircase) run_staircase ;;
  trigger) run_trigger ;;
  *) lab_die "unknown run $r" ;;
  esac
done
rm -f "$LAB_BASE/pids"
rmdir "$LAB_BASE" 2>/dev/null
lab_log "done: summaries in $out, results in $results"
