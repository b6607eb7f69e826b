#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""List, or run against a Prometheus, every query of a Grafana dashboard.

    queries.py DASHBOARD.json --var host=web1 --var service=checkout [...]
        prints one line per panel query: panel id, refId, instant or range,
        panel title, PromQL expression (tab-separated), template variables
        substituted the way Grafana's Prometheus datasource does it;
    queries.py ... --json
        the same as JSON lines;
    queries.py ... --variables
        the dashboard's label_values() variables as Prometheus API calls
        (name, label, series selector);
    queries.py ... --check http://127.0.0.1:9090 [--minutes 60] [--require-data]
        sends every query to /api/v1/query_range over the last --minutes
        and every variable to /api/v1/label/<label>/values; fails when one
        does not parse, or (with --require-data) returns nothing.
    queries.py ... --check URL --empty REGEX
        also: every panel query whose expression matches REGEX must return
        no series at all, so that Grafana shows "no data" for what the
        service does not have (a query that makes up a value with
        `or vector(0)` fails).
    queries.py ... --check URL --require-data --optional REGEX
        also: a panel query matching REGEX must parse but may return
        nothing (a value that needs a longer run than the check's).
    queries.py ... --check URL --storm-not-green
        also: every field the dashboard colours by thresholds with a green
        step (a headroom, a margin), evaluated over the same range, must
        not be green at any point where the service's storm flag
        (collectd_metastable_storm) is 1; fails if one is, or if no field
        was checked at a storm point at all.

Substitution follows Grafana: a variable with multi or includeAll is
regex-escaped (it sits in =~ matchers) and several values become (a|b);
other variables only have backslashes and quotes escaped.  A row with
`repeat` is emitted once per value of its variable, with that single value,
as Grafana repeats it.  Give a variable several times for several values.
A $variable left unsubstituted is an error.

Standard library only, so that any test can call it.
"""

import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

VAR_REF = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)(?::\w+)?\]\]")
LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(.+?)\s*,\s*)?(\w+)\s*\)\s*$")


def regex_escape(value):
    # Grafana's prometheusSpecialRegexEscape: the value then stands inside a
    # PromQL string, so a regex backslash is written twice.
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), value)


def regular_escape(value):
    # Grafana's prometheusRegularEscape.
    return value.replace("\\", "\\\\").replace("'", "\\\\'")


def format_value(var, values):
    if var.get("multi") or var.get("includeAll"):
        escaped = [regex_escape(v) for v in values]
        return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"
    if len(values) != 1:
        raise SystemExit(f"variable {var['name']} takes one value, got {len(values)}")
    return regular_escape(values[0])


def substitute(text, variables, values, where):
    def repl(m):
        name = m.group(1) or m.group(3) or m.group(4)
        if name.startswith("__"):
            raise SystemExit(f"{where}: Grafana built-in ${name} is not supported here")
        if name not in values:
            raise SystemExit(f"{where}: no value given for ${name} (use --var {name}=...)")
        return format_value(variables.get(name, {"name": name}), values[name])

    return VAR_REF.sub(repl, text)


def panel_queries(dashboard, values):
    """Yield (panel, target, expr, title) for every query, rows repeated."""
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    # Grafana's layout: a row owns the panels after it up to the next row
    # (collapsed rows keep theirs inside).
    groups, current = [], (None, [])
    for p in dashboard.get("panels", []):
        if p.get("type") == "row":
            groups.append(current)
            current = (p, list(p.get("panels", [])))
        else:
            current[1].append(p)
    groups.append(current)

    for row, panels in groups:
        scopes = [values]
        if row is not None and row.get("repeat"):
            name = row["repeat"]
            if name not in values:
                raise SystemExit(f"row '{row.get('title')}' repeats over ${name}: give --var {name}=...")
            scopes = [{**values, name: [v]} for v in values[name]]
        for scope in scopes:
            for p in panels:
                title = p.get("title", "")
                where = f"panel {p.get('id')} '{title}'"
                for t in p.get("targets", []):
                    expr = t.get("expr")
                    if not isinstance(expr, str) or not expr.strip():
                        raise SystemExit(f"{where} {t.get('refId')}: no expression")
                    yield (p, t, substitute(expr, variables, scope, where),
                           substitute(title, variables, scope, where))


def variable_queries(dashboard, values):
    """Yield (name, label, selector or None) for every label_values variable."""
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    for v in variables.values():
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = LABEL_VALUES.match(q or "")
        if not m:
            raise SystemExit(f"variable {v['name']}: not a label_values() query: {q!r}")
        selector = m.group(1)
        if selector:
            selector = substitute(selector, variables, values, f"variable {v['name']}")
        yield v["name"], m.group(2), selector


def get_json(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        try:
            return json.load(e)
        except ValueError:
            return {"status": "error", "error": f"HTTP {e.code}"}


def check(dashboard, values, base, minutes, require_data, empty=None,
          optional=None):
    end = time.time()
    start = end - 60 * minutes
    failures = 0
    for p, t, expr, title in panel_queries(dashboard, values):
        params = urllib.parse.urlencode(
            {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "15"})
        r = get_json(f"{base}/api/v1/query_range?{params}")
        series = r.get("data", {}).get("result", []) if r.get("status") == "success" else []
        points = sum(len(s.get("values", [])) for s in series)
        must_be_empty = empty is not None and re.search(empty, expr)
        may_be_empty = optional is not None and re.search(optional, expr)
        ok = r.get("status") == "success" and \
            (series or not require_data or must_be_empty or may_be_empty) \
            and not (must_be_empty and series)
        failures += not ok
        status = "ok  " if ok else "FAIL"
        detail = f"{len(series)} series, {points} points" if r.get("status") == "success" else r.get("error")
        if must_be_empty:
            detail += " (must be none)"
        elif may_be_empty and not series:
            detail += " (may be none)"
        print(f"{status} panel {p['id']} {t['refId']} ({title}): {detail}: {expr}")
    for name, lbl, selector in variable_queries(dashboard, values):
        params = urllib.parse.urlencode(
            {"match[]": selector, "start": f"{start:.3f}", "end": f"{end:.3f}"} if selector else {})
        r = get_json(f"{base}/api/v1/label/{urllib.parse.quote(lbl)}/values?{params}")
        got = r.get("data", []) if r.get("status") == "success" else []
        want = values.get(name, [])
        missing = [w for w in want if w not in got]
        ok = r.get("status") == "success" and (got or not require_data) and not missing
        failures += not ok
        status = "ok  " if ok else "FAIL"
        print(f"{status} variable {name}: label_values({selector or ''}, {lbl}) = {got}"
              + (f", missing {missing}" if missing else ""))
    return failures


def colour_config(panel, target):
    """The color, thresholds and mappings Grafana applies to a target's
    field: the panel's defaults with the overrides that match it by name
    (its legend, or its column after an organize rename) or by refId."""
    fc = panel.get("fieldConfig", {})
    d = fc.get("defaults", {})
    cfg = {k: d.get(k) for k in ("color", "thresholds", "mappings")}
    names = {target.get("legendFormat")}
    for tr in panel.get("transformations", []):
        if tr.get("id") == "organize":
            names.add(tr.get("options", {}).get("renameByName", {}).get(f"Value #{target.get('refId')}"))
    for o in fc.get("overrides", []):
        m = o.get("matcher", {})
        if (m.get("id") == "byName" and m.get("options") in names) or \
                (m.get("id") == "byFrameRefID" and m.get("options") == target.get("refId")):
            for pr in o.get("properties", []):
                if pr.get("id") in cfg:
                    cfg[pr["id"]] = pr.get("value")
    return cfg


def threshold_colour(thresholds, value):
    colour = None
    for step in thresholds.get("steps", []):
        if step.get("value") is None or value >= step["value"]:
            colour = step.get("color")
    return colour


def range_series(base, expr, start, end, step):
    params = urllib.parse.urlencode(
        {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": str(step)})
    r = get_json(f"{base}/api/v1/query_range?{params}")
    if r.get("status") != "success":
        raise SystemExit(f"query failed: {r.get('error')}: {expr}")
    return r["data"]["result"]


def check_storm_colours(dashboard, values, base, minutes):
    """Fields coloured by thresholds with a green step must not be green
    while the service's storm flag is 1."""
    end = time.time()
    start = end - 60 * minutes
    key = lambda m: (m.get("instance"), m.get("metastable"))
    storm = {}
    for s in range_series(base, "max by (instance, metastable) (collectd_metastable_storm)", start, end, 15):
        storm[key(s["metric"])] = {float(t): float(v) for t, v in s["values"]}
    failures = checked = 0
    for p, t, expr, title in panel_queries(dashboard, values):
        cfg = colour_config(p, t)
        steps = (cfg.get("thresholds") or {}).get("steps", [])
        if (cfg.get("color") or {}).get("mode") != "thresholds" or \
                not any(st.get("color") == "green" for st in steps):
            continue
        green = []
        n = 0
        for s in range_series(base, expr, start, end, 15):
            flags = storm.get(key(s["metric"]), {})
            for ts, v in s["values"]:
                if flags.get(float(ts)) != 1:
                    continue
                n += 1
                if threshold_colour(cfg["thresholds"], float(v)) == "green":
                    green.append((key(s["metric"]), ts, v))
        checked += n
        failures += bool(green)
        field = t.get("legendFormat") if t.get("legendFormat") != "__auto" else t.get("refId")
        if green:
            print(f"FAIL panel {p['id']} {t['refId']} ({title}): green in a storm at {len(green)} of {n} points, "
                  f"e.g. {green[0]}: {expr}")
        else:
            print(f"ok   panel {p['id']} {t['refId']} ({title}, {field}): {n} points in a storm, none green")
    if checked == 0:
        print("FAIL no thresholds-coloured field was evaluated at a storm point")
        failures += 1
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dashboard")
    ap.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--variables", action="store_true")
    ap.add_argument("--check", metavar="PROMETHEUS_URL")
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--require-data", action="store_true")
    ap.add_argument("--empty", metavar="REGEX")
    ap.add_argument("--optional", metavar="REGEX")
    ap.add_argument("--storm-not-green", action="store_true")
    a = ap.parse_args()

    with open(a.dashboard, encoding="utf-8") as f:
        dashboard = json.load(f)
    values = {}
    for kv in a.var:
        name, sep, value = kv.partition("=")
        if not sep:
            ap.error(f"--var {kv}: expected NAME=VALUE")
        values.setdefault(name, []).append(value)

    if a.check:
        failures = check(dashboard, values, a.check.rstrip("/"), a.minutes, a.require_data, a.empty,
                         a.optional)
        if a.storm_not_green:
            failures += check_storm_colours(dashboard, values, a.check.rstrip("/"), a.minutes)
        if failures:
            print(f"{failures} queries failed", file=sys.stderr)
        return 1 if failures else 0
    if a.variables:
        for name, lbl, selector in variable_queries(dashboard, values):
            print(json.dumps({"name": name, "label": lbl, "match": selector}) if a.json
                  else f"{name}\t{lbl}\t{selector or ''}")
        return 0
    for p, t, expr, title in panel_queries(dashboard, values):
        instant = bool(t.get("instant")) and not t.get("range")
        if a.json:
            print(json.dumps({"panel": p["id"], "refId": t["refId"], "instant": instant,
                              "title": title, "expr": expr}))
        else:
            print(f"{p['id']}\t{t['refId']}\t{'instant' if instant else 'range'}\t{title}\t{expr}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
