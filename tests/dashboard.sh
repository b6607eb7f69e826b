#!/bin/sh
# SPDX-License-Identifier: MIT
# The Grafana dashboard and provisioning files (grafana/) against Grafana's
# published schema: installs the pinned npm packages of tests/dashboard
# (package-lock.json) with npm ci, generates JSON schemas from @grafana/schema
# and validates the dashboard, every panel's options and field config, and
# the provisioning files (tests/dashboard/validate.mjs).  --self-test then
# checks that broken copies of the dashboard are rejected; last, a dashboard
# file with one wrong field type must make the validator exit non-zero.
#
# The packages go to tests/dashboard-node under the current (build)
# directory, or to $DASHBOARD_NODE_DIR; npm ci reruns only when the lock file
# changes.  Needs node >= 18, npm and the npm registry.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dashboard="$top/grafana/dashboards/collectd-metastable/collectd-metastable.json"
. "$top/tests/require.sh"
ms_require dashboard node npm python3

node_dir=${DASHBOARD_NODE_DIR:-$PWD/tests/dashboard-node}
mkdir -p "$node_dir"
node_dir=$(cd "$node_dir" && pwd)
cp "$top/tests/dashboard/package.json" "$top/tests/dashboard/validate.mjs" \
  "$top/tests/dashboard/tsconfig.json" "$node_dir/"
if ! cmp -s "$top/tests/dashboard/package-lock.json" "$node_dir/package-lock.json" ||
  [ ! -d "$node_dir/node_modules" ]; then
  cp "$top/tests/dashboard/package-lock.json" "$node_dir/"
  echo "dashboard: npm ci in $node_dir" >&2
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error) || {
    rm -f "$node_dir/package-lock.json"
    echo "dashboard: npm ci failed (is the npm registry reachable?)" >&2
    exit 1
  }
fi

node "$node_dir/validate.mjs" --self-test --provisioning "$top/grafana" "$dashboard"

# End to end: a panel option of the wrong type in the file itself.
broken="$node_dir/broken-dashboard.json"
python3 - "$dashboard" "$broken" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = next(p for p in d["panels"] if p["type"] == "timeseries")
p["fieldConfig"]["defaults"]["custom"]["fillOpacity"] = "15%"
json.dump(d, open(sys.argv[2], "w"))
PY
if node "$node_dir/validate.mjs" "$broken" >"$node_dir/broken.out" 2>&1; then
  echo "dashboard: FAIL: the validator accepts a dashboard with fillOpacity \"15%\"" >&2
  exit 1
fi
grep -q 'fillOpacity: must be number' "$node_dir/broken.out" || {
  echo "dashboard: FAIL: the validator rejected the broken dashboard for another reason:" >&2
  cat "$node_dir/broken.out" >&2
  exit 1
}
echo "dashboard: ok, a dashboard with fillOpacity \"15%\" is rejected: $(grep -m1 fillOpacity "$node_dir/broken.out")"
