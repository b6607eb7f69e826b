# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The storm lab's building blocks, sourced by lab/storm-lab.sh.
#
# Everything runs on 127.0.0.1 with ports picked at run time, out of a
# private run directory; every process is started in its own process group
# (setsid) and recorded, and lab_stop_all ends exactly those groups.  The
# servers are pinned to one CPU and the load generator to the other, because
# httperf busy-spins a whole core.

LAB_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_TOP=$(cd "$LAB_SRC/.." && pwd)
LAB_BUILD=${LAB_BUILD:-$LAB_TOP/build}
LAB_HOST=${LAB_HOST:-storm-lab}       # collectd host name of every metric
LAB_SERVER_CPU=${LAB_SERVER_CPU:-1}   # haproxy, nginx, php-fpm
LAB_CLIENT_CPU=${LAB_CLIENT_CPU:-0}   # httperf
LAB_POOL=${LAB_POOL:-10}              # php-fpm workers (pm = static)
LAB_SERVICE_TIME=${LAB_SERVICE_TIME:-0.050} # mean of the exponential sleep, s
LAB_BACKLOG=${LAB_BACKLOG:-511}       # php-fpm listen backlog
# php-fpm's listener: tcp (127.0.0.1, a fresh port: a full accept queue
# delays a connection) or unix (a socket in the run directory: a full
# accept queue refuses it, and nginx answers 502 at once; lab/storm-unix.sh)
LAB_FPM_LISTEN=${LAB_FPM_LISTEN:-tcp}
LAB_TIMEOUT=${LAB_TIMEOUT:-1s}        # HAProxy's timeout server (per attempt)
LAB_INTERVAL=${LAB_INTERVAL:-1}       # collectd interval, s
LAB_LOAD_OVERLAP=${LAB_LOAD_OVERLAP:-0.15} # s each httperf overlaps the next

lab_log() { printf '%s lab: %s\n' "$(date +%T)" "$*" >&2; }
lab_die() {
  lab_log "error: $*"
  exit 1
}

# lab_init: make the base directory of this invocation (LAB_BASE) and
# arrange for everything started to be stopped on exit, Ctrl-C or TERM.
lab_init() {
  LAB_BASE=$(mktemp -d "${TMPDIR:-/tmp}/storm-lab.XXXXXX")
  chmod 755 "$LAB_BASE"
  : >"$LAB_BASE/pids"
  LAB_PORTS=""
  trap lab_on_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# lab_new_run NAME: a fresh run directory LAB_RUN=$LAB_BASE/NAME, readable
# by nobody, who runs the exec plugin's collector and the php-fpm and nginx
# workers; the two files they run are copied into it, since nobody may not
# read the checkout (root's home is mode 700 on Debian).  The collector is
# the HAProxy recipe's (conf/recipes/haproxy/, doc/recipes.md).
lab_new_run() {
  LAB_RUN=$LAB_BASE/$1
  mkdir -p "$LAB_RUN"
  chmod 755 "$LAB_RUN"
  install -m 644 "$LAB_SRC/work.php" "$LAB_RUN/work.php"
  install -m 755 "$LAB_TOP/conf/recipes/haproxy/haproxy-collector.sh" \
    "$LAB_RUN/haproxy-collector.sh"
  LAB_CLOCK=""
}

lab_on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  lab_stop_all
  if [ "$rc" -ne 0 ] && [ -d "$LAB_BASE" ]; then
    lab_log "stopped everything it started; run files kept in $LAB_BASE"
  fi
  exit "$rc"
}

# lab_free_port: a port nobody uses on TCP or UDP (statsd listens on
# UDP), not handed out before.
lab_free_port() {
  local port used
  used=$({ ss -Htan; ss -Huan; } | awk '{ n = split($4, a, ":"); print a[n] }')
  while :; do
    port=$((20000 + RANDOM % 30000))
    case " $LAB_PORTS " in *" $port "*) continue ;; esac
    grep -qx "$port" <<<"$used" && continue
    LAB_PORTS="$LAB_PORTS $port"
    echo "$port"
    return
  done
}

# lab_spawn NAME CPU|- COMMAND...: start COMMAND in a new session (its own
# process group), pinned to CPU unless "-", output to $LAB_RUN/NAME.log.
# Records "pid start-time name" in $LAB_BASE/pids; sets LAB_PID.
lab_spawn() {
  local name=$1 cpu=$2
  shift 2
  if [ "$cpu" = - ]; then
    setsid "$@" >"$LAB_RUN/$name.log" 2>&1 </dev/null &
  else
    setsid taskset -c "$cpu" "$@" >"$LAB_RUN/$name.log" 2>&1 </dev/null &
  fi
  LAB_PID=$!
  echo "$LAB_PID $(lab_start_time "$LAB_PID") $name" >>"$LAB_BASE/pids"
}

# lab_start_time PID: the kernel's start time of process PID (field 22 of
# /proc/PID/stat, counted after the command name, which may hold spaces).
lab_start_time() {
  sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $20 }'
}

# lab_stop PID [START_TIME]: end the process group PID leads, TERM then
# KILL.  A group is only signalled while its leader is the process we
# started (same start time) or gone: Linux never hands out a process id
# that still names a live process group, so the id cannot belong to anyone
# else then.
lab_stop() {
  local pid=$1 start=${2:-} now _
  if [ -z "$start" ]; then
    start=$(awk -v p="$pid" '$1 == p { print $2 }' "$LAB_BASE/pids")
  fi
  now=$(lab_start_time "$pid")
  [ -n "$now" ] && [ "$now" != "$start" ] && return 0
  kill -TERM -- "-$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

# lab_stop_all: stop every recorded process group, newest first.
lab_stop_all() {
  [ -n "${LAB_BASE:-}" ] && [ -f "$LAB_BASE/pids" ] || return 0
  local pid start name
  while read -r pid start name; do
    lab_stop "$pid" "$start"
  done < <(tac "$LAB_BASE/pids")
  : >"$LAB_BASE/pids"
}

# lab_poll SECONDS COMMAND...: poll COMMAND every 0.1 s until it succeeds;
# false if it never did.
lab_poll() {
  local secs=$1 _
  shift
  for _ in $(seq $((secs * 10))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

# lab_wait_for DESCRIPTION SECONDS COMMAND...: lab_poll, or stop the lab.
lab_wait_for() {
  local what=$1
  shift
  lab_poll "$@" || lab_die "$what not ready after ${1}s (logs in $LAB_RUN)"
}

# lab_start_servers RETRIES: php-fpm, nginx and HAProxy (with RETRIES L7
# retries per request) on fresh ports.  Sets LAB_PORT_FE (HAProxy's
# frontend: where the load goes), LAB_PORT_NGINX, LAB_PORT_FPM,
# LAB_PORT_FPM_STATUS, and LAB_FACTOR_FILE (the trigger: a slowdown factor).
# With LAB_FPM_LISTEN=unix php-fpm listens on LAB_FPM_SOCKET instead of
# LAB_PORT_FPM (the status page stays on TCP).
lab_start_servers() {
  local retries=$1 fpm_listen fpm_pass fpm_extra="" fpm_where
  LAB_PORT_FE=$(lab_free_port)
  LAB_PORT_NGINX=$(lab_free_port)
  LAB_PORT_FPM=$(lab_free_port)
  LAB_PORT_FPM_STATUS=$(lab_free_port)
  case $LAB_FPM_LISTEN in
  tcp)
    fpm_listen=127.0.0.1:$LAB_PORT_FPM
    fpm_pass=127.0.0.1:$LAB_PORT_FPM
    fpm_where=:$LAB_PORT_FPM
    ;;
  unix)
    # nginx's worker connects as nobody: the socket is open to everyone
    # (only the run directory, mode 755, is in its way).
    LAB_FPM_SOCKET=$LAB_RUN/php-fpm.sock
    fpm_listen=$LAB_FPM_SOCKET
    fpm_pass=unix:$LAB_FPM_SOCKET
    fpm_extra="listen.mode = 0666
"
    fpm_where="unix:$LAB_FPM_SOCKET (backlog $LAB_BACKLOG)"
    ;;
  *) lab_die "LAB_FPM_LISTEN is tcp or unix, not $LAB_FPM_LISTEN" ;;
  esac
  LAB_FACTOR_FILE=$LAB_RUN/factor
  echo 1 >"$LAB_FACTOR_FILE"
  chmod 644 "$LAB_FACTOR_FILE"
  mkdir -p "$LAB_RUN/nginx"

  # php-fpm: a static pool of LAB_POOL workers behind a TCP listener whose
  # accept queue (listen.backlog) is the service's real queue.  The status
  # page has its own listener (pm.status_listen), served outside the pool,
  # so it answers even while every worker is busy and the queue is full.
  cat >"$LAB_RUN/php-fpm.conf" <<EOF
[global]
pid = $LAB_RUN/php-fpm.pid
error_log = $LAB_RUN/php-fpm-error.log
daemonize = no

[lab]
user = nobody
group = nogroup
listen = $fpm_listen
${fpm_extra}listen.backlog = $LAB_BACKLOG
pm = static
pm.max_children = $LAB_POOL
pm.status_path = /fpm-status
pm.status_listen = 127.0.0.1:$LAB_PORT_FPM_STATUS
EOF

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
  fastcgi_temp_path $LAB_RUN/nginx/fastcgi;
  proxy_temp_path $LAB_RUN/nginx/proxy;
  uwsgi_temp_path $LAB_RUN/nginx/uwsgi;
  scgi_temp_path $LAB_RUN/nginx/scgi;
  server {
    listen 127.0.0.1:$LAB_PORT_NGINX;
    location = /work {
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME $LAB_RUN/work.php;
      fastcgi_param LAB_SERVICE_TIME $LAB_SERVICE_TIME;
      fastcgi_param LAB_FACTOR_FILE $LAB_FACTOR_FILE;
      fastcgi_pass $fpm_pass;
    }
    location = /fpm-status {
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_NAME /fpm-status;
      fastcgi_param SCRIPT_FILENAME /fpm-status;
      fastcgi_pass 127.0.0.1:$LAB_PORT_FPM_STATUS;
    }
    location = /nginx-status { stub_status; }
  }
}
EOF

  # HAProxy: one attempt may take LAB_TIMEOUT; a request is tried at most
  # 1 + RETRIES times, again after a response timeout, a failed connection or
  # an empty response (the layer-7 retries of HAProxy 2.x).
  cat >"$LAB_RUN/haproxy.cfg" <<EOF
global
  maxconn 8000
  nbthread 1
  pidfile $LAB_RUN/haproxy.pid
  stats socket $LAB_RUN/haproxy.sock mode 666 level user

defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server $LAB_TIMEOUT
  timeout http-request 10s
  retries $retries
  retry-on response-timeout conn-failure empty-response

frontend fe_web
  bind 127.0.0.1:$LAB_PORT_FE
  default_backend be_app

backend be_app
  server nginx 127.0.0.1:$LAB_PORT_NGINX
EOF

  lab_spawn php-fpm "$LAB_SERVER_CPU" php-fpm8.2 -F -O -y "$LAB_RUN/php-fpm.conf"
  lab_spawn nginx "$LAB_SERVER_CPU" nginx -e "$LAB_RUN/nginx-error.log" \
    -p "$LAB_RUN/nginx" -c "$LAB_RUN/nginx.conf"
  lab_spawn haproxy "$LAB_SERVER_CPU" haproxy -db -f "$LAB_RUN/haproxy.cfg"
  lab_wait_for "the service through HAProxy" 20 \
    curl -fsS -m 2 "http://127.0.0.1:$LAB_PORT_FE/work"
  lab_wait_for "php-fpm's status page" 10 \
    curl -fsS -m 2 "http://127.0.0.1:$LAB_PORT_NGINX/fpm-status?json"
  lab_wait_for "HAProxy's stats socket" 10 \
    socat - "UNIX-CONNECT:$LAB_RUN/haproxy.sock" <<<"show info"
  lab_log "servers up: haproxy :$LAB_PORT_FE (retries $retries) -> nginx :$LAB_PORT_NGINX -> php-fpm $fpm_where ($LAB_POOL workers)"
}

# lab_trigger FACTOR: set the slowdown factor of every new request.
lab_trigger() { echo "$1" >"$LAB_FACTOR_FILE"; }

# lab_load RATE SECONDS: start httperf opening RATE connections (one
# request each) per second at a fixed interval for SECONDS, in the
# background, pinned to the client CPU.  Each step of a scenario starts a
# new httperf while the previous one is still waiting for its last
# replies, so the arrivals never pause.  Sets LAB_PID.
lab_load() {
  local rate=$1 secs=$2 n
  # Each httperf runs LAB_LOAD_OVERLAP s longer than its step: the next one
  # needs a moment to start, and a gap in the arrivals would read as a
  # lower offered load.
  n=$(awk -v r="$rate" -v s="$secs" -v o="$LAB_LOAD_OVERLAP" 'BEGIN { printf "%d", r * (s + o) + 0.5 }')
  LAB_LOAD_N=$((${LAB_LOAD_N:-0} + 1))
  lab_spawn "httperf-$LAB_LOAD_N-$rate" "$LAB_CLIENT_CPU" \
    httperf --hog --server 127.0.0.1 --port "$LAB_PORT_FE" --uri /work \
    --rate "$rate" --num-conns "$n" --timeout 10
}

# lab_sample: "epoch requests 2xx attempts fpm_accepted fpm_queue", straight
# from HAProxy's stats socket and php-fpm's status page: the scenario's own
# eyes, independent of collectd (which reads the same sources).
lab_sample() {
  local hs fs
  hs=$(socat -t 2 - "UNIX-CONNECT:$LAB_RUN/haproxy.sock" <<<"show stat" |
    awk -F, 'NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) c[$i] = i; next }
      $1 == "fe_web" && $2 == "FRONTEND" { rq = $(c["req_tot"]); ok = $(c["hrsp_2xx"]) }
      $1 == "be_app" && $2 != "BACKEND" && $2 != "FRONTEND" { at += $(c["stot"]) }
      END { print rq + 0, ok + 0, at + 0 }')
  fs=$(curl -fsS -m 1 "http://127.0.0.1:$LAB_PORT_NGINX/fpm-status?json" |
    sed -E 's/.*"accepted conn":([0-9]+).*"listen queue":([0-9]+).*/\1 \2/')
  case $fs in *[!0-9\ ]* | "") fs="0 0" ;; esac
  echo "$(date +%s.%N) $hs $fs"
}

# lab_sleep_until EPOCH: sleep until the wall clock reads EPOCH (fractional).
lab_sleep_until() {
  sleep "$(awk -v t="$1" -v now="$(date +%s.%N)" \
    'BEGIN { d = t - now; printf "%.3f", (d > 0 ? d : 0) }')"
}

# lab_phase NAME: a new phase of the scenario starts now; recorded with
# the time in $LAB_RUN/phases (the report cuts the time series there).
lab_phase() {
  LAB_PHASE=$1
  if [ -z "${LAB_CLOCK:-}" ]; then
    LAB_CLOCK=$(date +%s.%N)
    LAB_T0=$LAB_CLOCK
    LAB_LAST=$(lab_sample)
  fi
  echo "$LAB_CLOCK $1" >>"$LAB_RUN/phases"
  lab_log "phase $1"
}

# lab_tick: wait for the next second of the scenario clock (which never
# drifts), sample (lab_sample: a stack's script may define its own), and
# set LAB_OFFERED, LAB_GOODPUT, LAB_ATTEMPTS (per second, HAProxy), LAB_FPM
# (the pool's completions per second) and LAB_QUEUE (php-fpm's listen
# queue); log a line, the pool named LAB_POOL_NAME (default php-fpm).
lab_tick() {
  local cur
  LAB_CLOCK=$(awk -v t="$LAB_CLOCK" 'BEGIN { printf "%.3f", t + 1 }')
  lab_sleep_until "$LAB_CLOCK"
  cur=$(lab_sample)
  read -r LAB_OFFERED LAB_GOODPUT LAB_ATTEMPTS LAB_FPM LAB_QUEUE < <(
    awk -v p="$LAB_LAST" -v c="$cur" 'BEGIN {
      split(p, a, " "); split(c, b, " "); dt = b[1] - a[1]
      printf "%.1f %.1f %.1f %.1f %d\n", (b[2] - a[2]) / dt, (b[3] - a[3]) / dt,
        (b[4] - a[4]) / dt, (b[5] - a[5]) / dt, b[6] }')
  LAB_LAST=$cur
  echo "$LAB_CLOCK $LAB_OFFERED $LAB_GOODPUT $LAB_ATTEMPTS $LAB_FPM $LAB_QUEUE" >>"$LAB_RUN/direct.txt"
  printf '%s lab: %5ds %-10s offered %5.1f  goodput %5.1f  attempts %5.1f  %s %5.1f/s  queue %3d\n' \
    "$(date +%T)" "$(awk -v a="$LAB_CLOCK" -v b="$LAB_T0" 'BEGIN { printf "%d", a - b }')" \
    "$LAB_PHASE" "$LAB_OFFERED" "$LAB_GOODPUT" "$LAB_ATTEMPTS" "${LAB_POOL_NAME:-php-fpm}" "$LAB_FPM" "$LAB_QUEUE" >&2
}

# lab_ticks N: N ticks.
lab_ticks() {
  local _
  for _ in $(seq "$1"); do lab_tick; done
}

# lab_recipe STACK FILE [OLD NEW]...: the text of conf/recipes/STACK/FILE
# (doc/recipes.md), each OLD text replaced by NEW; a text the recipe no
# longer holds stops the lab.
lab_recipe() {
  local file=$LAB_TOP/conf/recipes/$1/$2 text
  shift 2
  text=$(cat "$file") || lab_die "cannot read $file"
  while [ $# -ge 2 ]; do
    case $text in *"$1"*) ;; *) lab_die "$file no longer holds '$1'" ;; esac
    text=${text//"$1"/"$2"}
    shift 2
  done
  printf '%s\n' "$text"
}

# lab_collectd_start BLOCKS [SERVICE_FILE]: a private collectd reading the
# stack through BLOCKS (collectd.conf text: its plugins, as its recipes
# say), with logfile keeping the log and the notifications, csv keeping
# every value (rates for counters) under $LAB_RUN/csv and unixsock
# answering collectdctl; with SERVICE_FILE, the metastable plugin from
# $LAB_BUILD watches the service.  The file is checked (collectd -t)
# before collectd starts.
lab_collectd_start() {
  local blocks=$1 service=${2:-} plugin=""
  mkdir -p "$LAB_RUN/csv"
  if [ -n "$service" ]; then
    plugin="PluginDir \"$LAB_BUILD/plugin/.libs\"
LoadPlugin metastable
<Plugin metastable>
  ServiceFile \"$service\"
</Plugin>"
  fi
  cat >"$LAB_RUN/collectd.conf" <<EOC
Hostname "$LAB_HOST"
FQDNLookup false
BaseDir "$LAB_RUN"
PIDFile "$LAB_RUN/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db" "$LAB_TOP/conf/types.db"
Interval $LAB_INTERVAL
AutoLoadPlugin false

LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "$LAB_RUN/collectd.log"
  Timestamp true
  PrintSeverity true
</Plugin>

$blocks

LoadPlugin csv
<Plugin csv>
  DataDir "$LAB_RUN/csv"
  StoreRates true
</Plugin>

LoadPlugin unixsock
<Plugin unixsock>
  SocketFile "$LAB_RUN/collectd.sock"
  SocketGroup "root"
</Plugin>

$plugin
EOC
  collectd -t -C "$LAB_RUN/collectd.conf" >"$LAB_RUN/collectd-check.log" 2>&1 ||
    lab_die "collectd rejects $LAB_RUN/collectd.conf: $(cat "$LAB_RUN/collectd-check.log")"
  lab_spawn collectd - collectd -f -C "$LAB_RUN/collectd.conf"
  if ! lab_poll 10 test -S "$LAB_RUN/collectd.sock"; then
    tail -n 20 "$LAB_RUN/collectd.log" >&2
    lab_die "collectd did not start"
  fi
  lab_log "collectd up (interval ${LAB_INTERVAL}s), values in $LAB_RUN/csv"
}

# lab_start_collectd [SERVICE_FILE]: lab_collectd_start for the HAProxy
# stack: exec and curl_json as the HAProxy and php-fpm recipes say
# (conf/recipes/), nginx (stub_status).
lab_start_collectd() {
  local exec_block curl_json_block
  exec_block=$(lab_recipe haproxy collectd.conf \
    /usr/share/collectd-metastable/recipes/haproxy/haproxy-collector.sh \
    "$LAB_RUN/haproxy-collector.sh" /run/haproxy/stats.sock "$LAB_RUN/haproxy.sock") ||
    exit 1
  curl_json_block=$(lab_recipe php-fpm collectd.conf http://127.0.0.1/fpm-status \
    "http://127.0.0.1:$LAB_PORT_NGINX/fpm-status" 'Instance "www"' 'Instance "lab"') ||
    exit 1
  lab_collectd_start "$exec_block

$curl_json_block

LoadPlugin nginx
<Plugin nginx>
  URL \"http://127.0.0.1:$LAB_PORT_NGINX/nginx-status\"
  Timeout 900
</Plugin>" "${1:-}"
}

# lab_getval IDENTIFIER: the value collectd holds now (a rate for counters).
lab_getval() {
  collectdctl -s "$LAB_RUN/collectd.sock" getval "$LAB_HOST/$1" 2>/dev/null |
    sed -n 's/^value=//p'
}
