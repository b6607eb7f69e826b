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
#                       [--runs "staircase trigger"] [--check]
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
# completed under 95 % of 8 / 100 ms with a full queue.  The summary
# gives the targets against the model and the staircase of the DES
# (lab/staircase.sh); --check fails when a measured run fails its checks.
# 9 to 12 minutes.  Every process it starts is stopped on exit, Ctrl-C or
# TERM.
set -u

LAB_SRC=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$LAB_SRC/.." && pwd)
# shellcheck source=lab/staircase.sh
. "$LAB_SRC/staircase.sh"
stairs_setup gunicorn-lab 3,32 "the exec plugin and nginx's workers switch to nobody" "$@"

export LAB_POOL=8 LAB_SERVICE_TIME=0.100 LAB_POOL_NAME=gunicorn
# shellcheck source=lab/lib.sh
. "$LAB_SRC/lib.sh"
lab_init

STACK=gunicorn
SERVICE=gunicorn_lab
SERVICE_FILE=$LAB_SRC/service-gunicorn.yaml
CAP_QUEUE=100 # of gunicorn's 2048 places
TIMEOUT=500ms # proxy_read_timeout, as lab/service-gunicorn.yaml says
# The staircase, req/s:seconds.  Up: a step is latched when goodput is
# under half the offered load over its last LATCHED_FOR s together.  Down: a step
# drains when its accept queue shrinks faster than DRAINS per second
# (after SETTLE s); it recovers when goodput is at least 90 % of offered
# for RECOVERED_FOR s in a row, which ends the staircase.  Below the
# model's recovery load (40) the backlog drains at 80 - 2 x load per
# second: those steps are long.
STEPS_UP="50:15 56:15 60:20 64:20 68:20 72:20 76:20 80:15"
STEPS_DOWN="64:15 58:15 52:15 46:20 42:20 38:30 34:30 30:60 25:60 20:60"
# The trigger run.
RATE=50 HEALTHY=30 FACTOR=10 TRIGGER=3 HOLD=30 DRAIN_RATE=25 DRAIN_MAX=60 FINAL=20

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

stairs_main
