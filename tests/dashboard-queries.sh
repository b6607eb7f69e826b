#!/bin/sh
# SPDX-License-Identifier: MIT
# Every query of the Grafana dashboard, and the alert rules, against a real
# Prometheus on loopback.  Until the plugin feeds one, the data is an hour
# of synthetic series named and labelled as write_prometheus + honor_labels
# produce them (tests/dashboard/synthetic.py), backfilled with promtool.
#   - every panel query, variables substituted as Grafana does, must parse
#     and return data through /api/v1/query_range; the host and service
#     variables must list the hosts and services;
#   - no field coloured by thresholds is green while the storm flag is 1
#     (queries.py --storm-not-green), and a dashboard showing the plain
#     tipping headroom in a storm fails that check;
#   - a service without observations or calibration inputs gets no data at
#     all from the model-vs-observed row and the observed_* queries
#     (queries.py --empty), and a panel that makes a value up fails that
#     check;
#   - conf/metastable-alerts.yml must load, evaluate without errors, and put
#     the storm alerts of the service left metastable at the end of the data
#     into pending, with the recovery load in their text.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dashboard="$top/grafana/dashboards/collectd-metastable/collectd-metastable.json"
queries="$top/tests/dashboard/queries.py"
. "$top/tests/require.sh"
ms_require dashboard-queries prometheus promtool python3 curl

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

python3 "$top/tests/dashboard/synthetic.py" --minutes 60 >"$work/metrics.om"
promtool tsdb create-blocks-from openmetrics "$work/metrics.om" "$work/data" >/dev/null

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/prometheus.yml" <<CONF
global:
  evaluation_interval: 1s
rule_files:
  - $top/conf/metastable-alerts.yml
CONF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$port" >"$work/prometheus.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$port"
i=0
until curl -sf "$url/-/ready" >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -gt 150 ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "dashboard-queries: Prometheus did not become ready on $url:" >&2
    tail -n 20 "$work/prometheus.log" >&2
    exit 1
  fi
  sleep 0.2
done

# A service with every metric, observed ones included: all queries return
# data.
python3 "$queries" "$dashboard" --check "$url" --require-data \
  --var host=web1 --var service=checkout
# Services without observations: their observed_* queries, and those of
# the model-vs-observed row (no calibration inputs, no residual), come back
# empty (Grafana shows "no data": no query may make a value up), every query
# still parses; regex-escaped names, two services at once for the fleet
# panels and the repeated rows.
python3 "$queries" "$dashboard" --check "$url" \
  --var host=web1 --var service=search \
  --empty 'observed_|service_time_|base_failure_estimate|model_failure_ratio|model_residual'
python3 "$queries" "$dashboard" --check "$url" \
  --var host=web2 --var service=db.main --var service=payments

# ... and the check notices a panel that makes up a value where the
# service has none (a service time of 0 instead of "no data").
python3 - "$dashboard" "$work/made-up.json" <<'PY3'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p.get("targets", []):
        if t["expr"].startswith("collectd_metastable_service_time_estimate{") and "+" not in t["expr"] \
                and "-" not in t["expr"] and "/" not in t["expr"]:
            t["expr"] += " or on () vector(0)"
json.dump(d, open(sys.argv[2], "w"))
PY3
if python3 "$queries" "$work/made-up.json" --check "$url" --var host=web1 --var service=search \
  --empty 'service_time_' >"$work/made-up.out" 2>&1; then
  cat "$work/made-up.out" >&2
  echo "dashboard-queries: FAIL: --empty accepts a made-up service time" >&2
  exit 1
fi
echo "ok   a made-up service time where there is none is rejected: $(grep -m1 '^FAIL' "$work/made-up.out" | cut -c1-100)"

# A storm is never shown with green headroom: every field coloured by
# thresholds with a green step (the fleet table's margin, the service's
# load margin) is evaluated at every point where the storm flag is 1
# (checkout's overloaded and metastable phases and its drain window,
# payments' storm) and must not be green.
python3 "$queries" "$dashboard" --check "$url" --storm-not-green \
  --var host=web1 --var service=checkout >"$work/storm.out" || {
  cat "$work/storm.out" >&2
  echo "dashboard-queries: FAIL: a storm shows green headroom" >&2
  exit 1
}
grep -E '^(ok|FAIL) +panel [0-9]+ [A-Z] .*in a storm' "$work/storm.out"
python3 "$queries" "$dashboard" --check "$url" --storm-not-green \
  --var host=web2 --var service=payments | grep -E 'in a storm'
# ... and the check notices a dashboard that shows the plain tipping
# headroom in a storm (as this one did up to 0.5).
python3 - "$dashboard" "$work/plain-headroom.json" <<'PY2'
import json, re, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p.get("targets", []):
        if "collectd_metastable_shed_load" in t["expr"] and "tipping_headroom" in t["expr"]:
            m = re.search(r"collectd_metastable_tipping_headroom(\{[^}]*\})?", t["expr"])
            t["expr"] = f"max by (instance, metastable) ({m.group(0)})"
json.dump(d, open(sys.argv[2], "w"))
PY2
if python3 "$queries" "$work/plain-headroom.json" --check "$url" --storm-not-green \
  --var host=web1 --var service=checkout >"$work/plain.out" 2>&1; then
  cat "$work/plain.out" >&2
  echo "dashboard-queries: FAIL: --storm-not-green accepts the plain tipping headroom in a storm" >&2
  exit 1
fi
echo "ok   the plain tipping headroom in a storm is rejected: $(grep -m1 'green in a storm' "$work/plain.out" | cut -c1-120)"

# Alert rules on the real server: evaluated without error, storm alerts for
# web2/payments pending (their for: has not elapsed), text rendered.
python3 - "$url" "$top/conf/metastable-alerts.yml" <<'PY'
import json, re, sys, time, urllib.request
url = sys.argv[1]
# every rule of the file (alerts and recording rules), each one loaded
with open(sys.argv[2]) as f:
    n_rules = len(re.findall(r"^\s*- (alert|record): ", f.read(), re.M))
def get(path):
    with urllib.request.urlopen(url + path, timeout=10) as r:
        return json.load(r)["data"]
want = {"MetastableRetryStorm", "MetastableFailure"}
for _ in range(150):
    rules = [r for g in get("/api/v1/rules")["groups"] for r in g["rules"]]
    alerts = get("/api/v1/alerts")["alerts"]
    pending = {a["labels"]["alertname"]: a for a in alerts
               if a["labels"].get("metastable") == "payments" and a["state"] == "pending"}
    evaluated = all(not r.get("lastEvaluation", "0001").startswith("0001") for r in rules)
    if want <= set(pending) and evaluated:
        break
    time.sleep(0.2)
else:
    sys.exit(f"dashboard-queries: storm alerts for payments not pending: {sorted(pending)}")
bad = [r["name"] for r in rules if r["health"] != "ok"]
if len(rules) != n_rules or bad:
    sys.exit(f"dashboard-queries: {len(rules)} rules of {n_rules} loaded, unhealthy: {bad}")
texts = [v for a in alerts for v in a["annotations"].values()]
if any("error expanding template" in t or "<no value>" in t for t in texts):
    sys.exit("dashboard-queries: an annotation template failed: " + json.dumps(alerts, indent=1))
summary = pending["MetastableFailure"]["annotations"]["summary"]
if "below the recovery load, 25.0 req/s" not in summary:
    sys.exit(f"dashboard-queries: MetastableFailure summary lacks the recovery load: {summary}")
description = pending["MetastableFailure"]["annotations"]["description"]
if "shed at least 35.0 req/s" not in description:
    sys.exit(f"dashboard-queries: MetastableFailure description lacks the load to shed: {description}")
print(f"ok   {len(rules)} rules healthy; pending for payments: {sorted(pending)}")
print(f"ok   MetastableFailure: {summary}")
PY
