#!/bin/sh
# SPDX-License-Identifier: MIT
# The demo: installs what it needs, builds, then
# starts a private collectd with the plugin and replays an incident through
# collectd's statsd plugin (demo/incident.csv), printing what the plugin
# says as it happens.  Takes about a minute.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/install-deps.sh
scripts/build.sh build
exec python3 demo/run.py --build build "$@"
