#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages collectd-metastable needs.
#   scripts/install-deps.sh            build, run and demo
#   scripts/install-deps.sh --lab      also what the storm lab needs
#   scripts/install-deps.sh --deb      also what make deb needs (debhelper)
#   scripts/install-deps.sh --test     also what the test suite needs (the
#                                      storm lab's and --deb's included)
# fonts-dejavu-core: the plots name DejaVu Sans (and tests/cli/test_plot.py
# measures texts with its metrics).
# libprotobuf-c1 and libmicrohttpd12: collectd-core only recommends them, but
# its write_prometheus.so does not load without them.
# Runs apt-get as root, or through sudo when not root.  Installs only what
# is missing, so a second run is quick and works offline.
set -eu

pkgs="build-essential autoconf automake libtool pkg-config libgmp-dev
libyaml-dev libjansson-dev check collectd-core collectd-dev collectd-utils
gnuplot-nox fonts-dejavu-core python3 libprotobuf-c1 libmicrohttpd12"
# the storm lab (doc/storm-lab.md): its servers, its load generator, socat
# for HAProxy's stats socket, curl; collectd-core only suggests the
# libraries of its curl_json (libyajl2, libcurl3-gnutls) and nginx plugins;
# gunicorn for the gunicorn lab (lab/gunicorn-lab.sh); node and npm for the
# node lab (lab/node-lab.sh) and the tests' tools, from Debian unless there
lab="haproxy nginx-light php8.2-fpm httperf socat curl iproute2 libyajl2
libcurl3-gnutls gunicorn"
# the fuzz targets (make fuzz): clang, and libFuzzer's runtime, which clang
# only recommends (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev)
fuzz="clang libclang-rt-14-dev"
# the integration test opens the Prometheus console page in a browser
browser="chromium"
# the recipe tests (tests/integration/test_recipe_*.py, doc/recipes.md):
# gunicorn beside the lab's servers; node comes with the test's tools
recipes="gunicorn"
# the package test (tests/package/test_deb.py): make deb and lintian
deb="debhelper dpkg-dev lintian"
node=""
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
  node="nodejs npm"
if [ "${1:-}" = "--lab" ]; then
  pkgs="$pkgs $lab $node"
elif [ "${1:-}" = "--deb" ]; then
  pkgs="$pkgs $deb"
elif [ "${1:-}" = "--test" ]; then
  pkgs="$pkgs $lab prometheus prometheus-alertmanager python3 jq mandoc
  clang-format $fuzz $browser $deb $recipes $node"
fi

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
    missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "install-deps: need root or sudo to install:$missing" >&2
  exit 1
fi
echo "install-deps: installing$missing" >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends $missing >/dev/null
