#!/bin/sh
# SPDX-License-Identifier: MIT
# The demo: installs what it needs, builds, then
# starts a private collectd with the plugin and replays an incident through
# collectd's statsd plugin (demo/incident.csv), printing what the plugin
# says as it happens.  Each phase says what it does, and the time since
# the start (README.md, "Quick start", gives the times measured).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
start=$(date +%s)

phase() {
  echo "demo: [$(($(date +%s) - start)) s] $*" >&2
}

phase "packages: checking (scripts/install-deps.sh; apt-get installs what" \
  "is missing, which can take minutes on a bare machine)"
scripts/install-deps.sh
phase "build: scripts/build.sh build (1 to 2 minutes the first time on" \
  "2 cores)"
MS_BUILD_PROGRESS=1 scripts/build.sh build
phase "collectd: starting a private one and replaying the incident"
MS_DEMO_START=$start exec python3 demo/run.py --build build "$@"
