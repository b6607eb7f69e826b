#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable replay: a scripted incident through the plugin's per-interval
step (ms_tracker_step), as CSV, as JSON and from Prometheus query_range
responses; the post-mortem picture (--plot) against the CSV; and bad traces
rejected with file:line:column."""
import csv
import io
import json
import os
import re
import resource
import stat
import subprocess
import sys
import tempfile
import unittest

import clitest
from clitest import EXAMPLES, SPEC, CliTest

INCIDENT = os.path.join(EXAMPLES, "incident.csv")
CHECKOUT = ("replay", "--spec", SPEC, "--service", "checkout")

# checkout: tipping 83.23, recovery 25 req/s.  Healthy at 60 (in the band),
# a spike to 100 (above tipping), back to 60 with the retries still high
# (metastable: the trigger is gone, the storm is not), a row without
# retry_rate, then 15 (below recovery beyond the noise of a 10 s count:
# stable) with the retries still three times the requests: the storm goes
# on (recovering) until the observations are healthy (doc/design.md §1.4,
# §1.7).  The OKAY waits for the third interval
# without a storm (clear_after's default).
STATES = ["vulnerable", "vulnerable", "overloaded", "overloaded",
          "metastable", None, "metastable", "stable", "stable", "stable",
          "stable"]


# The gunicorn lab's service (8 x 100 ms, 500 ms on the response, one
# retry: recovery load 40 req/s, tipping 68.7).  Its trigger run: the load
# starts at 30 req/s, below the recovery load, so the state starts stable;
# it comes up to 50, inside the band but within the noise of one-second
# counts, so the state holds stable; then every attempt fails, two attempts
# per request.  A collapsed equilibrium exists at 50 req/s: the failures
# decide the flag (doc/design.md §1.7).
GUNICORN = """services:
  - name: g
    model: erlang
    servers: 8
    service_time: 100ms
    timeout: 500ms
    retries: 1
    inputs:
      offered_rate: "h/t/derive-requests"
      arrival_rate: "h/t/derive-attempts"
      error_rate: "h/t/derive-failed_attempts"
"""


class StormInTheBand(clitest.ScratchTest):
    def replay(self, rows):
        spec = self.path("g.yaml")
        with open(spec, "w") as f:
            f.write(GUNICORN)
        text = "time,offered_rate,arrival_rate,error_rate\n" + "".join(
            "%d,%s,%s,%s\n" % r for r in rows)
        return self.ok("replay", "--spec", spec, "-", "--format", "json",
                       stdin=text).json()

    def test_held_stable_state_does_not_hide_a_storm(self):
        rows = [(t, 30, 30, 0) for t in range(1, 11)]
        rows += [(t, 50, 50, 0) for t in range(11, 21)]
        rows += [(t, 50, 100, 100) for t in range(21, 41)]
        rep = self.replay(rows)
        self.assertEqual(rep[19]["state"], "stable")  # held by hysteresis
        self.assertEqual(rep[18]["storm"], 0)
        # every attempt failing at 50 req/s: a storm, from its first
        # second or the next
        self.assertTrue(all(r["storm"] == 1 for r in rep[21:40]),
                        [r["storm"] for r in rep[20:40]])

    def test_below_the_recovery_load_no_storm_starts(self):
        # the same failures at 30 req/s, below the recovery load of 40:
        # no collapsed equilibrium there, so no storm starts
        rows = [(t, 30, 30, 0) for t in range(1, 11)]
        rows += [(t, 30, 60, 60) for t in range(11, 31)]
        rep = self.replay(rows)
        self.assertTrue(all(r["storm"] == 0 for r in rep),
                        [r["storm"] for r in rep])


class Incident(CliTest):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        p = os.path.join(self.dir.name, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def check_csv(self, out):
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual([r["state"] or None for r in rows], STATES)
        self.assertEqual([r["storm"] for r in rows],
                         ["0", "0", "1", "1", "1", "", "1", "1", "0", "0",
                          "0"])
        self.assertEqual([r["recovering"] for r in rows],
                         ["0", "0", "0", "0", "0", "", "0", "1", "0", "0",
                          "0"])
        # shed load: offered - recovery load in the storm, else 0
        self.assertEqual([r["shed_load"] for r in rows],
                         ["0", "0", "75", "75", "35", "", "35", "0", "0", "0",
                          "0"])
        notes = [r["notifications"] for r in rows]
        self.assertTrue(notes[2].startswith(
            "FAILURE: retry storm (overloaded, 350 attempts/s observed): "
            "offered 100 req/s"), notes[2])
        self.assertIn("shed 75 req/s", notes[2])
        self.assertIn("recovery load 25 req/s", notes[2])
        # the headroom WARNING says less than the FAILURE beside it
        self.assertNotIn("WARNING", notes[2])
        self.assertTrue(notes[10].startswith(
            "OKAY: retry storm over: healthy for 3 intervals (stable"),
            notes[10])
        self.assertEqual([i for i, n in enumerate(notes) if n], [2, 10])
        all_notes = " | ".join(notes)
        self.assertEqual(all_notes.count("FAILURE:"), 1)
        self.assertEqual(all_notes.count("OKAY:"), 1)
        self.assertIn("retry_rate", rows[5]["problem"])
        self.assertEqual(rows[5]["offered_load"], "")
        # no verdict: the plugin would dispatch reporting 0 alone
        self.assertEqual([r["reporting"] for r in rows],
                         ["1"] * 5 + ["0"] + ["1"] * 5)
        # inference: offered_rate as given; observed attempts = offered +
        # retries; the metastable rows run at the collapsed equilibrium
        self.assertEqual(float(rows[4]["observed_attempts"]), 240)
        self.assertAlmostEqual(float(rows[4]["effective_load"]), 240,
                               delta=1e-9)
        self.assertAlmostEqual(float(rows[4]["self_inflicted_load"]), 180,
                               delta=1e-9)
        self.assertEqual(rows[0]["unix_time"], "1714564800")
        self.assertEqual(rows[0]["servers"], "10")
        self.assertAlmostEqual(float(rows[0]["tipping_load"]), 83.2329235,
                               delta=1e-6)
        self.assertEqual(float(rows[0]["recovery_load"]), 25)
        return rows

    def test_csv(self):
        self.check_csv(self.ok(*CHECKOUT, INCIDENT).out)

    def test_json(self):
        rows = self.ok(*CHECKOUT, INCIDENT, "--format", "json").json()
        self.assertEqual([r.get("state") for r in rows], STATES)
        self.assertEqual(rows[5]["ok"], False)
        self.assertEqual(rows[5]["input"], "retry_rate")
        self.assertEqual(rows[5]["reporting"], 0)
        self.assertEqual([n["severity"] for n in rows[2]["notifications"]],
                         ["FAILURE"])
        self.assertEqual([n["severity"] for n in rows[10]["notifications"]],
                         ["OKAY"])
        self.assertEqual(rows[7]["recovering"], 1)
        self.assertEqual(rows[7]["reporting"], 1)
        self.assertEqual(rows[0]["time"], "2024-05-01T12:00:00Z")
        self.assertEqual(rows[0]["equilibria"], 3)

    def test_stdin_and_unix_time(self):
        with open(INCIDENT) as f:
            lines = f.read().splitlines()
        # the same trace with Unix seconds and CRLF line ends
        unix = [l for l in lines if not l.startswith("#")]
        for i in range(1, len(unix)):
            unix[i] = str(1714564800 + 10 * (i - 1)) + unix[i][20:]
        r = self.ok(*CHECKOUT, "-", stdin="\r\n".join(unix) + "\r\n")
        self.check_csv(r.out)

    def test_prometheus(self):
        def response(values):
            return json.dumps({"status": "success", "data": {
                "resultType": "matrix", "result": [{
                    "metric": {"job": "checkout"},
                    "values": [[t, v] for t, v in values]}]}})
        t0 = 1714564800
        offered = [60, 60, 100, 100, 60, 60, 60, 15, 15, 15, 15]
        retries = [0.5, 0.4, 250, 280, 180, None, 175, 45, 0, 0, 0]
        a = self.write("offered.json", response(
            [(t0 + 10 * i, str(v)) for i, v in enumerate(offered)]))
        b = self.write("retries.json", response(
            [(t0 + 10 * i, str(v)) for i, v in enumerate(retries)
             if v is not None]))
        saved = os.path.join(self.dir.name, "trace.csv")
        r = self.ok(*CHECKOUT, "--prometheus-json", "offered_rate=" + a,
                    "--prometheus-json", "retry_rate=" + b,
                    "--write-trace", saved)
        self.check_csv(r.out)
        with open(saved) as f:
            trace = f.read().splitlines()
        self.assertEqual(trace[0], "time,offered_rate,retry_rate")
        self.assertEqual(trace[1], "1714564800,60,0.5")
        self.assertEqual(trace[6], "1714564850,60,")
        # several series: the query must be summed
        c = self.write("two.json", json.dumps({"status": "success", "data": {
            "resultType": "matrix", "result": [
                {"metric": {}, "values": [[t0, "1"]]},
                {"metric": {}, "values": [[t0, "2"]]}]}}))
        self.fails(1, "two.json: data.result: the query returned 2 series; "
                   "it must return one (wrap it in sum(...)", *CHECKOUT,
                   "--prometheus-json", "offered_rate=" + c,
                   "--prometheus-json", "retry_rate=" + b)
        d = self.write("bad.json", '{"status": "success",\n "data": [}')
        self.fails(1, "bad.json:2:", *CHECKOUT, "--prometheus-json",
                   "offered_rate=" + d)
        self.fails(2, "--prometheus-json: 'offerd=x' must be INPUT=FILE",
                   *CHECKOUT, "--prometheus-json", "offerd=x")

    def test_pool_size(self):
        # servers from a pool_size column; the landscape follows the pool
        p = self.write("pool.csv", "time,offered_rate,pool_size\n"
                       "1,60,10\n2,60,20\n3,60,\n4,60,10.4\n")
        rows = list(csv.DictReader(io.StringIO(self.ok(
            "replay", "--spec", SPEC, "--service", "pool", p).out)))
        self.assertEqual([r["servers"] for r in rows], ["10", "20", "", "10"])
        self.assertEqual(float(rows[0]["recovery_load"]), 25)
        self.assertEqual(float(rows[1]["recovery_load"]), 50)
        self.assertIn("pool_size", rows[2]["problem"])
        # --servers overrides the input: the column is then not used
        r = clitest.run("replay", "--spec", SPEC, "--service", "pool",
                        "--servers", "40", p)
        self.assertEqual(r.code, 0, r)
        self.assertIn("column 'pool_size' is not used", r.err)
        rows = list(csv.DictReader(io.StringIO(r.out)))
        self.assertEqual({r["servers"] for r in rows}, {"40"})

    def test_calibration_from_a_simulated_trace(self):
        # a DES run (10 servers, 100 ms, timeout 1 s, 3 retries: the storm
        # of doc/simulation.md) replayed by a service file that has the
        # service time wrong (150 ms) and learns it from busy_servers and
        # completion_rate: the CSV of simulate is the trace as it is
        trace = self.write("storm.csv", self.ok(
            "simulate", "--servers", "10", "--service-time", "100ms",
            "--timeout", "1", "--timeout-covers", "wait", "--retries", "3", "--base-failure", "0.01",
            "--engine", "des", "--scenario",
            os.path.join(EXAMPLES, "storm.yaml"), "--format", "csv").out)
        inputs = ["offered_rate", "arrival_rate", "retry_rate", "error_rate",
                  "queue_length", "pool_size", "busy_servers",
                  "completion_rate", "latency"]
        spec = self.write("wrong.yaml", "services:\n  - name: svc\n"
                          "    model: erlang\n    servers: 10\n"
                          "    service_time: 150ms\n    timeout: 1s\n    timeout_covers: wait\n"
                          "    retries: 3\n    base_failure: 0.01\n"
                          "    calibrate: [service_time]\n    inputs:\n" +
                          "".join("      %s: h/p/gauge-%s\n" % (i, i)
                                  for i in inputs))
        rows = list(csv.DictReader(io.StringIO(self.ok(
            "replay", "--spec", spec, trace).out)))
        self.assertEqual(len(rows), 150)

        def tipping(service_time):
            return self.ok("solve", "--servers", "10", "--service-time",
                           repr(service_time), "--timeout", "1", "--timeout-covers", "wait",
                           "--retries", "3", "--base-failure", "0.01",
                           "--load", "60", "--format",
                           "json").json()["tipping_load"]
        configured = tipping(0.15)
        self.assertAlmostEqual(float(rows[0]["tipping_load"]), configured,
                               delta=1e-9 * configured)
        # the first window offers 62.5/s, past the configured tipping load
        self.assertEqual(rows[0]["state"], "overloaded")
        last = rows[-1]
        m = float(last["service_time_estimate"])
        se = float(last["service_time_error"])
        # the truth within three of its standard errors, which is small
        self.assertLess(abs(m - 0.1), 3 * se, (m, se))
        self.assertLess(se, 0.005)
        self.assertAlmostEqual(float(last["service_time_ratio"]), m / 0.15,
                               delta=1e-9)
        self.assertEqual(last["calibrated"], "1")
        # the learned value went into use once, and said so
        info = [(i, r["info"]) for i, r in enumerate(rows) if r["info"]]
        self.assertEqual(len(info), 1, info)
        i, text = info[0]
        self.assertGreaterEqual(i, 9)  # calibration_intervals: 10 samples
        self.assertIn("learned service time", text)
        self.assertIn("(configured 150 ms)", text)
        self.assertIn("tipping load 61.139 -> ", text)
        # the landscape moved with it: the tipping load is the one of the
        # learned service time (within its error and the 1 % threshold
        # that keeps a landscape), far from the configured one
        tip = float(last["tipping_load"])
        self.assertLess(tip, tipping((m - 3 * se) / 1.011))
        self.assertGreater(tip, tipping((m + 3 * se) * 1.011))
        self.assertGreater(tip, 1.4 * configured)
        # back at 60/s after the storm: healthy in the bistable band, where
        # the configured service (capacity 66.7/s) was overloaded
        self.assertEqual(last["state"], "vulnerable")
        self.assertLess(abs(float(last["model_residual"])), 4)

    def test_bad_rows(self):
        cases = [
            ("time,offered_rate,retry_rate\n1,60,0.5\n2,60,abc\n",
             ":3:6: retry_rate: 'abc' is not a number"),
            ("time,offered_rate,retry_rate\n1,60\n",
             ":2:5: 2 cells, but the header has 3"),
            ("time,offered_rate,retry_rate\n1,60,1,7\n",
             ":2:8: 4 cells, but the header has 3"),
            ("time,offered_rate,retry_rate\nnoon,60,1\n",
             ":2:1: time: 'noon' is not a time"),
            ("time,offered_rate,retry_rate\n2024-02-30T00:00:00Z,60,1\n",
             ":2:1: time: '2024-02-30T00:00:00Z' is not a time"),
            ("time,offered_rate,retry_rate\n5,60,1\n5,60,1\n",
             ":3:1: time: '5' is not after the previous row's"),
            ("time,offered_rate,retry_count\n",
             ":1:19: unknown column 'retry_count' (known: time, "
             "arrival_rate, offered_rate, retry_rate, error_rate, pool_size, "
             "queue_length, busy_servers, completion_rate, latency, and the "
             "other columns of metastable simulate)"),
            ("time,offered_rate,offered_rate\n",
             ":1:19: column 'offered_rate' given twice"),
            ("offered_rate,retry_rate\n", ":1:1: the header has no 'time'"),
            ("time,offered_rate\n1,60\n",
             ":1:1: no column 'retry_rate': service 'checkout' reads that "
             "input (from web1/statsd/derive-checkout_retries)"),
            ("", ":1:1: the trace is empty"),
            ('time,offered_rate,retry_rate\n1,"60,1\n',
             ":2:3: a quoted cell is not closed on its line"),
            # times a metrics system cannot have recorded
            ("time,offered_rate,retry_rate\n-1,60,1\n",
             ":2:1: time: '-1' is outside 1970-01-01T00:00:00Z to "
             "9999-12-31T23:59:59Z"),
            ("time,offered_rate,retry_rate\n1,60,1\n1e300,60,1\n",
             ":3:1: time: '1e300' is outside 1970-01-01T00:00:00Z"),
            ("time,offered_rate,retry_rate\n253402300800,60,1\n",
             ":2:1: time: '253402300800' is outside"),
            ("time,offered_rate,retry_rate\n1969-12-31T23:59:59Z,60,1\n",
             ":2:1: time: '1969-12-31T23:59:59Z' is outside"),
        ]
        for text, msg in cases:
            p = self.write("bad.csv", text)
            self.fails(1, p + msg, *CHECKOUT, p)

    def test_time_range_ends(self):
        p = self.write("ends.csv", "time,offered_rate,retry_rate\n"
                       "0,60,1\n9999-12-31T23:59:59Z,60,1\n")
        rows = list(csv.DictReader(io.StringIO(self.ok(*CHECKOUT, p).out)))
        self.assertEqual([r["unix_time"] for r in rows],
                         ["0", "253402300799"])

    def test_model_beyond_doubles(self):
        # a service and a load whose storm is beyond the range of a double:
        # the model refuses the row, which reports the problem as the
        # plugin would (nothing made up), never an inf
        spec = self.write("huge.yaml", "services:\n  - name: huge\n"
                          "    model: capacity\n    capacity: 1e300\n"
                          "    retries: 100\n    tiers: 10\n"
                          "    base_failure: 0.5\n"
                          "    inputs: {offered_rate: h/p/gauge-o}\n")
        p = self.write("huge.csv", "time,offered_rate\n1,1e300\n")
        for fmt in ("csv", "json"):
            r = clitest.run("replay", "--spec", spec, "--format", fmt, p)
            self.assertEqual(r.code, 0, r)
            self.assertIn("too large for this service", r.out)
            for word in ("inf", "nan"):
                self.assertNotRegex(r.out, r"\b%s\b" % word, r)

    def test_quoted_and_comments(self):
        p = self.write("q.csv", '# exported\n"time","offered_rate",'
                       '"retry_rate"\n\n"2024-05-01 14:00:00+02:00",'
                       '" 60 ",0.5\n')
        rows = list(csv.DictReader(io.StringIO(self.ok(*CHECKOUT, p).out)))
        self.assertEqual(rows[0]["unix_time"], "1714564800")
        self.assertEqual(rows[0]["state"], "vulnerable")


class TextTable(CliTest):
    """--format text: each row of the table against the CSV row of the
    same trace, parsed independently: the loads to the table's 0.1, the
    headroom in per cent (or, in a storm, the load to shed), the verdict
    built from state, storm and recovering, the state-change mark where the
    verdict differs from the row before, the notifications under their
    row."""

    def compare(self, args, trace):
        rows = list(csv.DictReader(io.StringIO(self.ok(*args, trace).out)))
        text = self.ok(*args, trace, "--format", "text").out.splitlines()
        body = [l for l in text[2:] if not l.lstrip().startswith("model:")
                and not l.lstrip().startswith(">>>")]
        notes = []
        for l in text[2:]:
            if l.lstrip().startswith(">>>"):
                notes.append(l.split(">>> ", 1)[1])
        self.assertEqual(len(body), len(rows))
        last = ""
        for line, r in zip(body, rows):
            self.assertTrue(line.startswith(r["time"]), (line, r))
            if r["state"] == "":
                self.assertIn("(no verdict: %s)" % r["problem"], line)
                continue
            f = line[24:].split()
            self.assertAlmostEqual(float(f[0]), float(r["offered_load"]),
                                   delta=0.05 + 1e-9)
            # the attempts observed, a dash where the row has none
            if r["observed_attempts"] == "":
                self.assertEqual(f[1], "-")
            else:
                self.assertAlmostEqual(float(f[1]),
                                       float(r["observed_attempts"]),
                                       delta=0.05 + 1e-9)
            self.assertAlmostEqual(float(f[2]), float(r["effective_load"]),
                                   delta=0.05 + 1e-9)
            self.assertAlmostEqual(float(f[3]),
                                   float(r["self_inflicted_load"]),
                                   delta=0.05 + 1e-9)
            storm = r["storm"] == "1"
            if storm:
                self.assertEqual(f[4], "shed")
                self.assertAlmostEqual(float(f[5]), float(r["shed_load"]),
                                       delta=0.5 + 1e-9)
                rest = " ".join(f[6:])
            else:
                self.assertAlmostEqual(float(f[4].rstrip("%")),
                                       100 * float(r["tipping_headroom"]),
                                       delta=0.05 + 1e-9)
                rest = " ".join(f[5:])
            verdict = r["state"] + ((" STORM (recovering)"
                                     if r["recovering"] == "1" else " STORM")
                                    if storm else "")
            changed = verdict != last
            self.assertEqual(rest, verdict + ("  <- state change".replace(
                "  ", " ") if changed else ""))
            last = verdict
        want = [n for r in rows if r["notifications"]
                for n in r["notifications"].split(" | ")]
        self.assertEqual(notes, want)
        return rows, text

    def test_incident(self):
        rows, text = self.compare(CHECKOUT, INCIDENT)
        self.assertIn("model: tipping load 83.2 req/s, recovery load 25.0 "
                      "req/s", text[2])

    def test_storm_lab(self):
        # the storm lab's real run (doc/storm-lab.csv), its HAProxy and
        # php-fpm columns renamed to the inputs of lab/service.yaml
        top = os.path.dirname(os.path.dirname(EXAMPLES))
        names = {"epoch": "time", "offered": "offered_rate",
                 "attempts": "arrival_rate", "retries": "retry_rate",
                 "failed_attempts": "error_rate", "pool_size": "pool_size",
                 "fpm_queue": "queue_length"}
        with open(os.path.join(top, "doc", "storm-lab.csv")) as f:
            lab = list(csv.DictReader(f))
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "lab.csv")
            with open(p, "w") as f:
                f.write(",".join(names.values()) + "\n")
                for r in lab:
                    f.write(",".join(r[k] for k in names) + "\n")
            rows, text = self.compare(
                ("replay", "--spec", os.path.join(top, "lab", "service.yaml"),
                 "--service", "storm_lab"), p)
        self.assertIn("metastable", [r["state"] for r in rows])


def lab_trace(d):
    """The storm lab's real run (doc/storm-lab.csv), its HAProxy and
    php-fpm columns renamed to the inputs of lab/service.yaml, into d."""
    top = os.path.dirname(os.path.dirname(EXAMPLES))
    names = {"epoch": "time", "offered": "offered_rate",
             "attempts": "arrival_rate", "retries": "retry_rate",
             "failed_attempts": "error_rate", "pool_size": "pool_size",
             "fpm_queue": "queue_length"}
    with open(os.path.join(top, "doc", "storm-lab.csv")) as f:
        lab = list(csv.DictReader(f))
    p = os.path.join(d, "lab.csv")
    with open(p, "w") as f:
        f.write(",".join(names.values()) + "\n")
        for r in lab:
            f.write(",".join(r[k] for k in names) + "\n")
    return p, ("replay", "--spec", os.path.join(top, "lab", "service.yaml"),
               "--service", "storm_lab")


def runs(flags):
    """The runs of true values in flags, as (first, last) indices."""
    out, i = [], 0
    while i < len(flags):
        if not flags[i]:
            i += 1
            continue
        k = i
        while k + 1 < len(flags) and flags[k + 1]:
            k += 1
        out.append((i, k))
        i = k + 1
    return out


# The values of a row that make its verdict (doc/outputs.md), and what the
# row says when it has none.
VERDICT_COLUMNS = ("reporting", "state", "storm", "recovering",
                   "offered_load", "effective_load", "self_inflicted_load",
                   "shed_load", "tipping_load", "recovery_load", "equilibria",
                   "servers", "observed_attempts", "observed_failure",
                   "notifications", "problem")
LAB_MODEL = ("    model: erlang\n    servers: 10\n    service_time: 50ms\n"
             "    timeout: 1s\n    timeout_covers: wait\n    retries: 2\n")
LAB_INPUTS = "".join("      %s: h/p/gauge-%s\n" % (i, i) for i in (
    "offered_rate", "arrival_rate", "retry_rate", "error_rate", "pool_size"))


class LeftOut(CliTest):
    """Inputs the verdict can go without (doc/configuration.md, "What the
    verdict needs"), through the storm lab's real run: a latency column
    that is empty or NaN while nothing succeeds gives the verdicts of the
    run without the column, its reason in calibration_problem; a
    queue_length beside the attempts, gone for some rows, costs those rows
    their drain_time only."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def spec(self, extra_keys="", extra_inputs=""):
        p = os.path.join(self.d, "spec.yaml")
        with open(p, "w") as f:
            f.write("services:\n  - name: lab\n" + LAB_MODEL + extra_keys +
                    "    inputs:\n" + LAB_INPUTS + extra_inputs)
        return p

    def replay(self, spec, rows, columns):
        p = os.path.join(self.d, "trace.csv")
        with open(p, "w") as f:
            f.write(",".join(columns) + "\n")
            for r in rows:
                f.write(",".join(r.get(c, "") for c in columns) + "\n")
        return list(csv.DictReader(io.StringIO(self.ok(
            "replay", "--spec", spec, p).out)))

    def lab_rows(self):
        trace, _ = lab_trace(self.d)
        with open(trace) as f:
            return list(csv.DictReader(f))

    def test_latency_nan_in_a_storm(self):
        lab = self.lab_rows()
        cols = list(lab[0])
        cols.remove("queue_length")
        base = self.replay(self.spec(), lab, cols)
        storm = [i for i, r in enumerate(base) if r["storm"] == "1"]
        self.assertGreater(len(storm), 20)
        # the configured service time while requests succeed (so that what
        # is learned is what the file says, and the landscape stays), none
        # in the storm: empty and NaN cells in turn
        for i, r in enumerate(lab):
            r["latency"] = ("" if storm.index(i) % 2 else "NaN") \
                if i in storm else "0.05"
        spec = self.spec("    calibrate: [service_time]\n",
                         "      latency: h/p/gauge-latency\n")
        got = self.replay(spec, lab, cols + ["latency"])
        self.assertEqual(len(got), len(base))
        for i, (a, b) in enumerate(zip(got, base)):
            for c in VERDICT_COLUMNS:
                self.assertEqual(a[c], b[c], "row %d, %s" % (i, c))
        for i in storm:
            self.assertEqual(got[i]["reporting"], "1")
            self.assertIn("input latency", got[i]["calibration_problem"])
        self.assertEqual(
            {got[i]["calibration_problem"] for i in storm},
            {"input latency has no value this interval",
             "input latency is not a number (no value, or no rate, this "
             "interval)"})
        # it learned, and the landscape did not move
        self.assertEqual(got[-1]["calibrated"], "1")
        self.assertEqual(float(got[-1]["service_time_estimate"]), 0.05)

    def test_queue_length_gone(self):
        lab = self.lab_rows()
        cols = list(lab[0])
        spec = self.spec(extra_inputs="      queue_length: h/p/gauge-q\n")
        base = self.replay(spec, lab, cols)
        # gone in every third row of the storm: the row reports, without a
        # drain_time, and says why
        storm = [i for i, r in enumerate(base) if r["storm"] == "1"]
        gone = storm[::3]
        for i in gone:
            lab[i]["queue_length"] = ""
        got = self.replay(spec, lab, cols)
        for i in gone:
            self.assertEqual(got[i]["reporting"], "1", i)
            self.assertEqual(got[i]["drain_time"], "")
            self.assertEqual(got[i]["calibration_problem"],
                             "input queue_length has no value this interval")
        # the other rows as before
        for i, (a, b) in enumerate(zip(got, base)):
            if i not in gone:
                self.assertEqual(a["drain_time"], b["drain_time"], i)


PURPLE, GREEN, GREY = "#CC79A7", "#009E73", "#555555"


@unittest.skipUnless(clitest.have("gnuplot"), "gnuplot is not installed")
class Plot(CliTest):
    """--plot: the picture's data (the gnuplot script, saved by a wrapper
    given as $METASTABLE_GNUPLOT) against the replay's CSV and, for the
    scripted incident, against the spans derived by hand from STATES."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name
        self.gp = os.path.join(self.d, "script.gp")
        self.wrapper = os.path.join(self.d, "gnuplot-wrapper")
        with open(self.wrapper, "w") as f:
            f.write('#!/bin/sh\ncat > "%s" && exec gnuplot "$@" < "%s"\n'
                    % (self.gp, self.gp))
        os.chmod(self.wrapper, stat.S_IRWXU)

    def tearDown(self):
        self.dir.cleanup()

    def draw(self, args, trace, name):
        """Replay with --plot name (in the temporary directory); returns
        the CSV rows, the script's datablocks, its bands (colour, from, to)
        and its vertical markers (x)."""
        out = os.path.join(self.d, name)
        plain = self.ok(*args, trace).out
        r = self.ok(*args, trace, "--plot", out,
                    env={"METASTABLE_GNUPLOT": self.wrapper})
        self.assertEqual(r.out, plain)  # stdout as without --plot
        with open(out, "rb") as f:
            head = f.read(8)
        if name.endswith(".png"):
            self.assertEqual(head, b"\x89PNG\r\n\x1a\n")
        else:
            self.assertTrue(head.startswith(b"<?xml"), head)
        with open(self.gp) as f:
            script = f.read()
        blocks = {}
        for m in re.finditer(r"^\$d(\d+) << EOD\n(.*?)^EOD$", script,
                             re.S | re.M):
            blocks[int(m.group(1))] = [
                tuple(map(float, l.split())) if l.strip() else None
                for l in m.group(2).splitlines()]
        bands = [(m.group(3), float(m.group(1)), float(m.group(2)))
                 for m in re.finditer(
                     r"rect from first (\S+), graph 0 to first (\S+), "
                     r"graph 1 behind fc rgb '(#\w+)'", script)]
        marks = [float(m.group(1)) for m in re.finditer(
            r"set arrow \d+ from first (\S+), graph 0 to first \S+, graph 1 "
            r"nohead", script)]
        return list(csv.DictReader(io.StringIO(plain))), blocks, bands, marks

    def check(self, rows, blocks, bands, marks):
        """Every series point, band and marker from the CSV's rows: the
        time in seconds since the first row."""
        t = [float(r["unix_time"]) - float(rows[0]["unix_time"])
             for r in rows]
        ok = [r["state"] != "" for r in rows]
        # the attempts observed (when any row has them), the model's
        # effective, the offered, the tipping and the recovery load: a step
        # across each row's interval (from the row before's time), a break
        # at rows without a verdict or, for the attempts, without a value
        cols = ["effective_load", "offered_load", "tipping_load",
                "recovery_load"]
        if any(r["observed_attempts"] != "" for r in rows):
            cols.insert(0, "observed_attempts")
        self.assertEqual(len(blocks), len(cols))
        for b, col in enumerate(cols):
            want = []
            for i, r in enumerate(rows):
                if not ok[i] or r[col] == "":
                    want.append(None)
                    continue
                v = float(r[col])
                want += [(t[i - 1] if i else 0.0, v), (t[i], v)]
            self.assertEqual(len(blocks[b]), len(want))
            for p, w in zip(blocks[b], want):
                if w is None:
                    self.assertIsNone(p)
                else:
                    self.assertAlmostEqual(p[0], w[0], delta=1e-6)
                    self.assertRel(p[1], w[1], 1e-9)

        def spans(flags):
            return [(t[i - 1] if i else 0.0, t[k]) for i, k in runs(flags)]
        storm = [r["storm"] == "1" and r["recovering"] != "1" for r in rows]
        rec = [r["storm"] == "1" and r["recovering"] == "1" for r in rows]
        gaps = [s for s in spans([not k for k in ok]) if s[1] > s[0]]
        for colour, want in ((PURPLE, spans(storm)), (GREEN, spans(rec)),
                             (GREY, gaps)):
            got = [(a, b) for c, a, b in bands if c == colour]
            self.assertEqual(len(got), len(want), colour)
            for g, w in zip(got, want):
                self.assertAlmostEqual(g[0], w[0], delta=1e-6)
                self.assertAlmostEqual(g[1], w[1], delta=1e-6)
        self.assertEqual(len(bands), len(spans(storm)) + len(spans(rec)) +
                         len(gaps))
        noted = [ti for ti, r in zip(t, rows) if r["notifications"]]
        self.assertEqual(len(marks), len(noted))
        for g, w in zip(marks, noted):
            self.assertAlmostEqual(g, w, delta=1e-6)
        return t

    def test_incident(self):
        rows, blocks, bands, marks = self.draw(CHECKOUT, INCIDENT, "i.svg")
        self.check(rows, blocks, bands, marks)
        # by hand, from STATES and the rows 10 s apart: storm in rows 2-4
        # (10..40 s) and 6 (50..60 s), recovering in row 7 (60..70 s), row
        # 5 without a verdict (40..50 s); FAILURE at row 2, OKAY at row 10
        self.assertEqual(sorted((c, a, b) for c, a, b in bands),
                         sorted([(PURPLE, 10, 40), (PURPLE, 50, 60),
                                 (GREEN, 60, 70), (GREY, 40, 50)]))
        self.assertEqual(marks, [20, 100])
        # the model's loads: tipping 83.23, recovery 25 req/s throughout
        # (blocks 3 and 4: the trace observes the attempts, block 0)
        self.assertTrue(all(abs(p[1] - 83.233) < 5e-3
                            for p in blocks[3] if p))
        self.assertTrue(all(p[1] == 25 for p in blocks[4] if p))

    def test_band_steps(self):
        # the pool grows from 10 to 20 servers at t = 1 s, a row without
        # pool_size at 2 s, back to 10 at 3 s: the recovery load (25 req/s
        # for 10 servers, test_pool_size) steps to 50 across the second
        # row's interval (0..1 s), breaks, and is 25 again across 2..3 s
        p = os.path.join(self.d, "pool.csv")
        with open(p, "w") as f:
            f.write("time,offered_rate,pool_size\n"
                    "1,60,10\n2,60,20\n3,60,\n4,60,10.4\n")
        rows, blocks, bands, marks = self.draw(
            ("replay", "--spec", SPEC, "--service", "pool"), p, "pool.svg")
        self.check(rows, blocks, bands, marks)
        self.assertEqual(blocks[3], [(0, 25), (0, 25), (0, 50), (1, 50),
                                     None, (2, 25), (3, 25)])
        self.assertEqual(bands, [(GREY, 1, 2)])

    def test_storm_lab(self):
        trace, args = lab_trace(self.d)
        rows, blocks, bands, marks = self.draw(args, trace, "lab.png")
        self.check(rows, blocks, bands, marks)
        self.assertGreaterEqual(len([b for b in bands if b[0] == PURPLE]), 1)

    def test_bad_path(self):
        plain = self.ok(*CHECKOUT, INCIDENT).out
        # a wrong extension: a usage error, before any row is written
        self.fails(2, "--plot: '%s/x.jpg' must end in .svg or .png" % self.d,
                   *CHECKOUT, INCIDENT, "--plot", self.d + "/x.jpg")
        # a directory that does not exist: exit 1 naming the file, after
        # every row was written
        bad = os.path.join(self.d, "missing", "x.png")
        r = clitest.run(*CHECKOUT, INCIDENT, "--plot", bad)
        self.assertEqual(r.code, 1, r)
        self.assertIn("--plot: %s: cannot write: No such file or directory"
                      % bad, r.err)
        self.assertEqual(r.out, plain)
        self.assertFalse(os.path.exists(bad))
        for fmt in ("text", "json"):
            want = self.ok(*CHECKOUT, INCIDENT, "--format", fmt).out
            r = clitest.run(*CHECKOUT, INCIDENT, "--format", fmt, "--plot",
                            bad)
            self.assertEqual((r.code, r.out), (1, want), r)


class Streaming(clitest.ScratchTest):
    """A trace in a regular file is read twice, checked whole and then row
    by row (cli/source.h, ms_trace_stream); from a pipe it is read whole.
    The rows written are the same bytes either way, and a file's rows are
    not kept: under a limit of its data memory (RLIMIT_DATA, the kernel's
    count) that the 11-row incident needs plus 1 MiB, 60,000 rows replay
    from a file and run out of memory from a pipe (they take 10 MB)."""

    ROWS = 60000
    CAPACITY = ("replay", "--spec", SPEC, "--service", "unit-capacity")

    def trace(self):
        p = self.path("long.csv")
        with open(p, "w") as f:
            f.write("time,arrival_rate,error_rate\n")
            for i in range(self.ROWS):
                a = 0.3 + 0.3 * ((i * 7919) % 1000) / 1000
                f.write("%d,%.4f,%.5f\n" % (1714564800 + 10 * i, a,
                                            a * 0.1 * ((i * 104729) % 997)
                                            / 997))
        return p

    def limited(self, mib, args, stdin_path=None, pipe=False):
        """metastable args with its data memory limited to mib MiB (None:
        not limited), stdin the file stdin_path or a pipe from it."""
        def limit():
            if mib is not None:
                n = mib << 20
                resource.setrlimit(resource.RLIMIT_DATA, (n, n))
        f = open(stdin_path, "rb") if stdin_path else None
        try:
            data = f.read() if pipe else None
            return subprocess.run(
                [clitest.METASTABLE, *args], input=data,
                stdin=None if pipe else f or subprocess.DEVNULL,
                capture_output=True, preexec_fn=limit, timeout=300)
        finally:
            if f:
                f.close()

    def test_same_rows_less_memory(self):
        p = self.trace()
        by_file = self.limited(None, [*self.CAPACITY, p])
        by_stdin = self.limited(None, [*self.CAPACITY, "-"], stdin_path=p)
        by_pipe = self.limited(None, [*self.CAPACITY, "-"], stdin_path=p,
                               pipe=True)
        self.assertEqual(by_file.stdout.count(b"\n"), self.ROWS + 1)
        self.assertEqual(by_file.stdout, by_pipe.stdout)
        self.assertEqual(by_stdin.stdout, by_pipe.stdout)
        # the data memory the incident needs, plus 1 MiB
        sizes = [*range(1, 17), 24, 32, 48, 64, 96, 128, 192, 256]
        mib = next((m for m in sizes if self.limited(
            m, [*CHECKOUT, INCIDENT]).returncode == 0), None)
        if mib is None:  # a sanitizer's build maps terabytes
            sys.stderr.write("replay does not run in 256 MiB of data (a "
                             "sanitizer?): its memory is not checked\n")
            return
        mib += 1
        r = self.limited(mib, [*self.CAPACITY, p])
        self.assertEqual((r.returncode, r.stdout), (0, by_pipe.stdout), mib)
        r = self.limited(mib, [*self.CAPACITY, "-"], stdin_path=p)
        self.assertEqual((r.returncode, r.stdout), (0, by_pipe.stdout), mib)
        r = self.limited(mib, [*self.CAPACITY, "-"], stdin_path=p,
                         pipe=True)
        self.assertEqual(r.returncode, 1, mib)
        self.assertIn(b"out of memory", r.stderr)

    def test_text_and_json(self):
        with open(INCIDENT) as f:
            text = f.read()
        for fmt in ("text", "json"):
            by_file = self.ok(*CHECKOUT, INCIDENT, "--format", fmt).out
            by_pipe = self.ok(*CHECKOUT, "-", "--format", fmt,
                              stdin=text).out
            self.assertEqual(by_file, by_pipe)


if __name__ == "__main__":
    clitest.main()
