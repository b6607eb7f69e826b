#!/bin/sh
# SPDX-License-Identifier: MIT
# collectd exec plugin program: HAProxy's own counters, read from its stats
# socket every interval, printed as PUTVAL lines (doc/recipes.md,
# "HAProxy"; the storm lab runs it too).
#
#   Exec "nobody:haproxy" "haproxy-collector.sh" SOCKET FRONTEND BACKEND
#
# The user needs read and write access to SOCKET (a socket of level user
# is enough) and socat.  Every request of FRONTEND is taken to go to
# BACKEND.
#
# Identifiers (host from collectd; DERIVE values become rates in collectd):
#   haproxy-FRONTEND/derive-requests        HTTP requests received (req_tot):
#                                           the offered load
#   haproxy-FRONTEND/derive-responses_2xx   successful replies: the goodput
#   haproxy-FRONTEND/derive-responses_5xx   failed replies seen by clients
#   haproxy-BACKEND/derive-attempts         attempts sent to the servers,
#                                           retries included (sum of the
#                                           servers' stot)
#   haproxy-BACKEND/derive-retries          attempts - requests
#   haproxy-BACKEND/derive-failed_attempts  attempts that ended without a
#                                           2xx: stot - scur - hrsp_2xx
#   haproxy-BACKEND/gauge-attempts_in_flight  sum of the servers' scur
#
# Retries are not read from HAProxy's wretr: HAProxy 2.6 counts each
# layer-7 retry twice there.  Differences of counters can step back by one
# for a moment (two counters are not updated in the same instant); a
# DERIVE that decreases reads as "no value" in collectd, so the derived
# counters are held at their highest value so far.
set -u
sock=$1
fe=$2
be=$3
host=${COLLECTD_HOSTNAME:-localhost}
interval=${COLLECTD_INTERVAL:-1}
interval=${interval%%.*}
[ "$interval" -ge 1 ] 2>/dev/null || interval=1

retries_max=0
failed_max=0
while :; do
  # The time of the reading goes with the values: collectd computes rates
  # from it, so a late line (a busy machine) does not bend the rates.
  now=$(date +%s.%N | cut -c1-14)
  # One line: req_tot hrsp_2xx hrsp_5xx stot scur hrsp_2xx(servers)
  line=$(echo "show stat" | socat -t 2 - "UNIX-CONNECT:$sock" 2>/dev/null |
    awk -F, -v fe="$fe" -v be="$be" '
      NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) c[$i] = i; next }
      $1 == fe && $2 == "FRONTEND" {
        req = $(c["req_tot"]); ok = $(c["hrsp_2xx"]); bad = $(c["hrsp_5xx"]); f = 1 }
      $1 == be && $2 != "BACKEND" && $2 != "FRONTEND" {
        at += $(c["stot"]); cur += $(c["scur"]); sok += $(c["hrsp_2xx"]); b = 1 }
      END { if (f && b) print req, ok, bad, at, cur, sok }')
  if [ -n "$line" ]; then
    # shellcheck disable=SC2086
    set -- $line
    retries=$(($4 - $1))
    failed=$(($4 - $5 - $6))
    [ "$retries" -gt "$retries_max" ] && retries_max=$retries
    [ "$failed" -gt "$failed_max" ] && failed_max=$failed
    printf 'PUTVAL "%s/haproxy-%s/derive-requests" interval=%s %s:%s\n' "$host" "$fe" "$interval" "$now" "$1"
    printf 'PUTVAL "%s/haproxy-%s/derive-responses_2xx" interval=%s %s:%s\n' "$host" "$fe" "$interval" "$now" "$2"
    printf 'PUTVAL "%s/haproxy-%s/derive-responses_5xx" interval=%s %s:%s\n' "$host" "$fe" "$interval" "$now" "$3"
    printf 'PUTVAL "%s/haproxy-%s/derive-attempts" interval=%s %s:%s\n' "$host" "$be" "$interval" "$now" "$4"
    printf 'PUTVAL "%s/haproxy-%s/derive-retries" interval=%s %s:%s\n' "$host" "$be" "$interval" "$now" "$retries_max"
    printf 'PUTVAL "%s/haproxy-%s/derive-failed_attempts" interval=%s %s:%s\n' "$host" "$be" "$interval" "$now" "$failed_max"
    printf 'PUTVAL "%s/haproxy-%s/gauge-attempts_in_flight" interval=%s %s:%s\n' "$host" "$be" "$interval" "$now" "$5"
  else
    echo "haproxy-collector: no stats for $fe/$be from $sock" >&2
  fi
  # Sleep to the next multiple of the interval, so samples do not drift.
  sleep "$(date +%s.%N | awk -v i="$interval" '{ printf "%.3f", i - $1 % i }')"
done
