#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what the storm lab needs on Debian 12, besides what
# scripts/install-deps.sh installs for the build: the servers (HAProxy 2.6,
# nginx-light, php8.2-fpm), the load generator (httperf), socat for
# HAProxy's stats socket, curl, libyajl2 (collectd's curl_json plugin) and
# gnuplot.  Their Debian services are not started: the lab starts its own.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"

pkgs="haproxy nginx-light php8.2-fpm httperf socat curl libyajl2
collectd-core gnuplot-nox"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
    missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "lab/install-deps: need root to install:$missing" >&2
  exit 1
fi
echo "lab/install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
