#!/bin/sh
# SPDX-License-Identifier: MIT
# collectd exec plugin program: the accept queue of listening sockets, the
# connections the kernel has accepted that no worker has taken yet, read
# with ss(8) every interval and printed as PUTVAL lines.
#
#   Exec "nobody" "accept-queue.sh" NAME ADDRESS...
#
# ADDRESS: a TCP port (8000) or the path of a unix socket; the queues of
# all of them are summed (one pool behind several listeners).
# Identifier (host from collectd):
#   listen-NAME/gauge-accept_queue   connections waiting for a worker
# Nothing is printed while none of the addresses is listening (the value
# is unknown then, not 0); one line on standard error says so.
set -u
if [ $# -lt 2 ]; then
  echo "usage: accept-queue.sh NAME ADDRESS..." >&2
  exit 2
fi
name=$1
shift
host=${COLLECTD_HOSTNAME:-localhost}
interval=${COLLECTD_INTERVAL:-1}
interval=${interval%%.*}
[ "$interval" -ge 1 ] 2>/dev/null || interval=1

# queue ADDRESS: "listeners queued" of one address.
queue() {
  case $1 in
  /*) ss -Hlx src "$1" 2>/dev/null | awk '{ n++; q += $3 } END { print n + 0, q + 0 }' ;;
  *) ss -Hltn "sport = :${1##*:}" 2>/dev/null | awk '{ n++; q += $2 } END { print n + 0, q + 0 }' ;;
  esac
}

while :; do
  now=$(date +%s.%N | cut -c1-14)
  listeners=0
  total=0
  for a in "$@"; do
    r=$(queue "$a")
    listeners=$((listeners + ${r% *}))
    total=$((total + ${r#* }))
  done
  if [ "$listeners" -gt 0 ]; then
    printf 'PUTVAL "%s/listen-%s/gauge-accept_queue" interval=%s %s:%s\n' "$host" "$name" "$interval" "$now" "$total"
  else
    echo "accept-queue: nothing listens on $*" >&2
  fi
  sleep "$(date +%s.%N | awk -v i="$interval" '{ printf "%.3f", i - $1 % i }')"
done
