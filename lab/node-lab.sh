#!/bin/bash
# SPDX-License-Identifier: MIT
# The node lab, issue 35's stack (c): a Node.js client library with its
# own retry policy against a bounded pool.  The client
# (lab/node/retry-client.mjs) sends Poisson arrivals through undici 6's
# RetryAgent: headersTimeout 400 ms on undici's 499 ms tick, 2 retries
# after a 503 or a timeout, 10 ms then 20 ms later.  The server
# (lab/node/pool-server.mjs) serves 8 at once, each an exponential sleep of
# mean 100 ms, queues 64 more and answers 503 at once beyond.  The client
# counts its requests, attempts and failed attempts into collectd's statsd
# plugin with the Node.js recipe's Counters (conf/recipes/node/); the
# plugin watches lab/service-node.yaml.
#
#   lab/node-lab.sh [--out DIR] [--build DIR] [--skip-install]
#                   [--runs "staircase trigger"] [--check]
#
# Runs, each with its own servers and collectd (lab/staircase.sh):
#   staircase  a load staircase up until the stack latches into a storm
#              (the measured tipping load: the step whose last 5 s
#              together had goodput under half the offered load), then
#              down: the measured recovery load is the highest step whose
#              queue shrank (the storm drains below it), and the step where
#              goodput came back is recorded beside it;
#   trigger    healthy inside the bistable band, 3 s of 10x slower
#              requests, the storm held, a drain at a low load, healthy
#              again: the plugin's storm flag against goodput, second by
#              second, the drain included.
# Each run appends a line to lab/results.csv (or $LAB_RESULTS) and writes
# DIR/NAME/summary.txt.  A run on a starved machine is "inconclusive":
# the server's sleeps took more than 5 % longer than they asked, or it
# completed under 95 % of 8 / 100 ms with a full queue.  The summary
# gives the targets against the model and the staircase of the DES
# (lab/staircase.sh); --check fails when a measured run fails its checks.
# The first run installs undici (lab/node/package-lock.json) with npm ci
# into BUILD/lab/node-modules.  6 to 8 minutes.  Every process it starts
# is stopped on exit, Ctrl-C or TERM.
set -u

LAB_SRC=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$LAB_SRC/.." && pwd)
# shellcheck source=lab/staircase.sh
. "$LAB_SRC/staircase.sh"
stairs_setup node-lab 3,36 "" "$@"

export LAB_POOL=8 LAB_SERVICE_TIME=0.100 LAB_POOL_NAME=node
# shellcheck source=lab/lib.sh
. "$LAB_SRC/lib.sh"
lab_init

STACK=node
SERVICE=node_lab
SERVICE_FILE=$LAB_SRC/service-node.yaml
PLACES=64
CAP_QUEUE=32 # of the pool's 64 places
# The staircase, req/s:seconds (lab/staircase.sh).  The model: tipping
# 72.2 req/s, recovery 43.4 (metastable solve --spec lab/service-node.yaml).
# A pool of 8 needs time to tip near its fold: the DES of this staircase
# latches at 72 to 88, hence the steps past the saturation load and the
# long last one (more steps would leave the DES too few steps down:
# simulate takes 16 changes of load).
STEPS_UP="50:15 56:15 60:20 64:20 68:20 72:20 76:20 80:20 84:20 88:40"
STEPS_DOWN="64:15 58:15 52:15 48:20 44:20 40:30 36:30 30:30 25:30"
# The trigger run.
RATE=55 HEALTHY=30 FACTOR=10 TRIGGER=3 HOLD=30 DRAIN_RATE=25 DRAIN_MAX=60 FINAL=20
NODE_DIR=$LAB_BUILD/lab/node-modules

# node_modules: undici as lab/node/package-lock.json pins it, in NODE_DIR;
# npm ci again only when the lock file changed.
node_modules() {
  mkdir -p "$NODE_DIR"
  if ! cmp -s "$LAB_SRC/node/package-lock.json" "$NODE_DIR/package-lock.json" ||
    [ ! -d "$NODE_DIR/node_modules/undici" ]; then
    cp "$LAB_SRC/node/package.json" "$LAB_SRC/node/package-lock.json" "$NODE_DIR/"
    lab_log "npm ci in $NODE_DIR"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) || {
      rm -f "$NODE_DIR/package-lock.json"
      lab_die "npm ci failed in $NODE_DIR (is the npm registry reachable?)"
    }
  fi
}

# lab_sample for this stack: "epoch requests 2xx attempts completed queue"
# from the client's totals (requests, answered 200, attempts) and the
# server's (completed, its queue now): the scenario's own eyes, beside
# collectd's statsd.
lab_sample() {
  local c s
  read -r c < <(awk '{ print $1, $2, $3 }' "$LAB_RUN/client.totals" 2>/dev/null)
  read -r s < <(awk '{ print $3, $4 }' "$LAB_RUN/server.totals" 2>/dev/null)
  echo "$(date +%s.%N) ${c:-0 0 0} ${s:-0 0}"
}

# lab_load RATE SECS: the client's offered load from now on (it reads its
# rate file every 100 ms); one client runs the whole run, so there is no
# process to stop (LAB_PID empty).
lab_load() {
  echo "$1" >"$LAB_RUN/rate"
  LAB_PID=""
}

# stack_end: the load stops when the run ends.
stack_end() { echo 0 >"$LAB_RUN/rate"; }

# stack_report: when undici's headers timeouts really fired (the client's
# totals), against the range the service file gives the model.
stack_report() {
  awk '{ if ($5 > 0) printf "undici: %d headers timeouts fired %.0f ms after dispatch on average (%.0f to %.0f); the service file says 499 to 998 ms\n", $5, $6 / $5, $7, $8
         else print "undici: no headers timeout fired" }' "$LAB_RUN/client.totals"
}

# start_servers: the pool and the client, on fresh ports; the client's
# rate is 0 until the first lab_load.
start_servers() {
  LAB_PORT_FE=$(lab_free_port)
  LAB_PORT_STATSD=$(lab_free_port)
  LAB_FACTOR_FILE=$LAB_RUN/factor
  echo 1 >"$LAB_FACTOR_FILE"
  echo 0 >"$LAB_RUN/rate"
  : >"$LAB_RUN/app.log"
  node_modules
  install -m 644 "$LAB_SRC/node/pool-server.mjs" "$LAB_SRC/node/retry-client.mjs" \
    "$top/conf/recipes/node/client.mjs" "$NODE_DIR/"
  lab_spawn pool "$LAB_SERVER_CPU" node "$NODE_DIR/pool-server.mjs" "$LAB_PORT_FE" \
    "$LAB_POOL" "$PLACES" "$LAB_SERVICE_TIME" "$LAB_FACTOR_FILE" "$LAB_RUN/app.log" \
    "$LAB_RUN/server.totals" "$LAB_PORT_STATSD" "$SERVICE"
  lab_wait_for "the node pool" 20 curl -fsS -m 2 "http://127.0.0.1:$LAB_PORT_FE/"
  : >"$LAB_RUN/app.log"
  lab_spawn client "$LAB_CLIENT_CPU" node "$NODE_DIR/retry-client.mjs" \
    "http://127.0.0.1:$LAB_PORT_FE/" "$LAB_RUN/rate" "$LAB_RUN/client.totals" \
    "$LAB_PORT_STATSD" "$SERVICE"
  lab_wait_for "the client" 20 test -s "$LAB_RUN/client.totals"
  lab_log "servers up: undici RetryAgent -> node pool :$LAB_PORT_FE ($LAB_POOL slots, $PLACES places)"
}

# start_collectd: collectd with the Node.js recipe's statsd block and the
# plugin watching lab/service-node.yaml (lab_collectd_start).
start_collectd() {
  local statsd_block
  install -m 644 "$SERVICE_FILE" "$LAB_RUN/service.yaml"
  statsd_block=$(lab_recipe node collectd.conf '"8125"' "\"$LAB_PORT_STATSD\"") || exit 1
  lab_collectd_start "$statsd_block" "$LAB_RUN/service.yaml"
}

stairs_main
