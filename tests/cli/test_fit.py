#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable fit: a service simulated by the discrete-event engine with
known parameters, fitted back from the simulation's own trace: every true
value inside its printed 95 % interval; the fitted service file loads and
solves as the fit says; the same fit from Prometheus responses; the plot;
bad input located, with the exit codes of the other commands."""
import csv
import io
import json
import os
import tempfile
import xml.etree.ElementTree as ET

import clitest
from clitest import EXAMPLES, CliTest

# The truth: 10 servers, 100 ms, a 20 ms timeout (c mu T = 20), one retry,
# 0.5 % base failure; clients back off 2 to 10 s (full jitter), so that a
# retry does not land in the very congestion that failed its attempt (the
# model's p(x) is that of Poisson arrivals).  Tipping load 63.0/s,
# recovery load 50/s.  The scenario (cli/examples/fit-scenario.yaml): 20/s,
# a ramp to 48/s below the recovery load where the timeouts begin, a storm
# at 56/s started by a spike past the tipping load, a drop that ends it.
TRUTH = {"service_time": 0.1, "timeout": 0.02, "retries": 1,
         "base_failure": 0.005}
SIM = ("simulate", "--servers", "10", "--service-time", "100ms",
       "--timeout", "20ms", "--timeout-covers", "wait", "--retries", "1", "--base-failure", "0.005",
       "--backoff", "full-jitter,2,10", "--engine", "des", "--scenario",
       os.path.join(EXAMPLES, "fit-scenario.yaml"), "--format", "csv")
# Seeds 1 to 10 of this run (the fit of each): the true service time and
# retries were inside their intervals in 10 of 10, the timeout and the
# base failure in 9 of 10 each; the test runs seed 1.

# What someone guessed: every value wrong.
GUESS = """services:
  - name: api
    model: erlang
    servers: 10
    service_time: 150ms
    timeout: 300ms
    timeout_covers: wait
    retries: 3
    base_failure: 0.001
    headroom_warning: 0.2
    calibrate: [service_time]
    inputs:
%s"""
INPUTS = ["offered_rate", "arrival_rate", "retry_rate", "error_rate",
          "queue_length", "pool_size", "busy_servers", "completion_rate",
          "latency"]


def inputs_yaml(names):
    return "".join('      %s: "web1/api/gauge-%s"\n' % (n, n)
                   for n in names)


class Fit(CliTest):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = os.path.join(cls.tmp.name, "sim.csv")
        r = clitest.run(*SIM)
        assert r.code == 0, r
        with open(cls.trace, "w") as f:
            f.write(r.out)
        cls.spec = cls.write_file("guess.yaml", GUESS % inputs_yaml(INPUTS))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def write_file(cls, name, text):
        p = os.path.join(cls.tmp.name, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def fit(self, *args):
        return self.ok("fit", "--spec", self.spec, *args, "--format",
                       "json").json()

    def solve(self, p, *extra):
        # durations with their unit: a fitted service time longer than
        # the timeout, written bare, would be warned about
        return self.ok("solve", "--servers", "10", "--service-time",
                       repr(p["service_time"]) + "s", "--timeout",
                       repr(p["timeout"]) + "s", "--timeout-covers", "wait", "--retries", str(p["retries"]),
                       "--base-failure", repr(p["base_failure"]), *extra,
                       "--load", "1", "--format", "json").json()

    def test_recovers_the_simulated_service(self):
        j = self.fit(self.trace)
        params = j["parameters"]
        for name, truth in TRUTH.items():
            with self.subTest(name=name):
                p = params[name]
                self.assertTrue(p["fitted"] and p["identified"], p)
                self.assertLessEqual(p["low"], truth, p)
                self.assertGreaterEqual(p["high"], truth, p)
                self.assertLessEqual(p["low"], p["value"])
                self.assertLessEqual(p["value"], p["high"])
        # informative intervals, not everything
        st = params["service_time"]
        self.assertLess(st["high"] - st["low"], 0.05 * st["value"])
        # the service time's interval is +-1.96 standard errors
        self.assertAlmostEqual(st["high"] - st["value"],
                               1.959963984540054 * st["standard_error"],
                               delta=1e-12)
        self.assertLess(params["timeout"]["high"], 3 * TRUTH["timeout"])
        self.assertGreater(params["timeout"]["low"], TRUTH["timeout"] / 3)
        self.assertLess(params["base_failure"]["high"], 0.02)
        self.assertEqual(params["retries"]["value"], 1)
        self.assertEqual((params["retries"]["low"],
                          params["retries"]["high"]), (1, 1))
        # the configured values as the file has them
        self.assertEqual([params[k]["configured"] for k in TRUTH],
                         [0.15, 0.3, 3, 0.001])
        # the intervals: a storm and its drain are in the trace
        self.assertEqual(j["rows"], 180)
        self.assertGreater(j["storm"], 5)
        self.assertGreater(j["draining"], 0)
        self.assertGreater(j["low_load"], 50)
        # the fitted model explains the failures, the configured one less
        res = j["residual"]
        self.assertLess(res["rms_fitted"], 1.5)
        self.assertLess(res["deviance_fitted"], res["deviance_configured"])
        # the loads are those of the services solved on their own
        fitted = {k: params[k]["value"] for k in TRUTH}
        configured = {k: params[k]["configured"] for k in TRUTH}
        for which, p in (("fitted", fitted), ("configured", configured)):
            s = self.solve(p)
            self.assertAlmostEqual(j["tipping_load"][which],
                                   s["tipping_load"],
                                   delta=1e-9 * s["tipping_load"])
            self.assertAlmostEqual(j["recovery_load"][which],
                                   s["recovery_load"],
                                   delta=1e-9 * s["recovery_load"])
        # and near the truth's: within the loads of the interval's ends
        truth = self.solve(TRUTH)
        self.assertLess(abs(j["tipping_load"]["fitted"] -
                            truth["tipping_load"]),
                        0.05 * truth["tipping_load"])

    def test_timeout_on_the_response(self):
        # the truth times the whole response (the default): 300 ms, 5 %
        # of attempts failing on an idle pool; the fit must read its
        # timeout through that model, not the wait tail's
        sim = [a for a in SIM if a not in ("--timeout-covers", "wait")]
        sim[sim.index("20ms")] = "300ms"
        trace = self.write_file("resp.csv", self.ok(*sim).out)
        spec = self.write_file("resp.yaml", GUESS.replace(
            "    timeout_covers: wait\n", "") % inputs_yaml(INPUTS))
        j = self.ok("fit", "--spec", spec, trace, "--format",
                    "json").json()
        t = j["parameters"]["timeout"]
        self.assertLessEqual(t["low"], 0.3, t)
        self.assertLess(abs(t["value"] - 0.3), 0.1 * 0.3, t)
        self.assertLess(j["residual"]["rms_fitted"], 1.5)

    def test_text(self):
        out = self.ok("fit", "--spec", self.spec, self.trace).out
        j = self.fit(self.trace)
        lines = {l.split()[0]: l for l in out.splitlines() if l.strip()}
        self.assertIn("erlang model: 10 servers, service time 150 ms, "
                      "timeout 300 ms", lines["service"])
        self.assertIn("180 rows", lines["trace"])
        for name, unit, scale in (("service_time", "ms", 1e3),
                                  ("timeout", "ms", 1e3),
                                  ("base_failure", "%", 100)):
            p = j["parameters"][name]
            want = "[%.4g %s, %.4g %s]" % (scale * p["low"], unit,
                                           scale * p["high"], unit)
            self.assertIn(want, lines[name])
            self.assertIn("%.4g %s" % (scale * p["value"], unit),
                          lines[name])
        self.assertRegex(lines["retries"], r"^retries +1 +\[1, 1\] +3 ")
        self.assertIn("tipping load", out)
        self.assertIn("RMS z", lines["residual"])

    def test_write_spec_loads(self):
        out = os.path.join(self.tmp.name, "fitted.yaml")
        j = self.ok("fit", "--spec", self.spec, self.trace, "--write-spec",
                    out, "--format", "json").json()
        # it loads; its one warning is the truth's own: a timeout (on the
        # wait for a server) shorter than the service time
        r = clitest.run("check", out, "--format", "json")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err.count("warning"), 1, r)
        self.assertIn("is longer than the timeout", r.err)
        check = r.json()
        (svc,) = check["services"]
        self.assertEqual(svc["name"], "api")
        # the fitted values, read back from the file, solve to the fit's
        # loads; the inputs and settings are the original file's
        self.assertAlmostEqual(svc["tipping_load"],
                               j["tipping_load"]["fitted"], delta=1e-9)
        self.assertAlmostEqual(svc["recovery_load"],
                               j["recovery_load"]["fitted"], delta=1e-9)
        orig = clitest.run("check", self.spec, "--format",
                           "json").json()["services"][0]
        self.assertEqual(svc["inputs"], orig["inputs"])
        solved = self.ok("solve", "--spec", out, "--load", "40", "--format",
                         "json").json()
        self.assertEqual(solved["tipping_load"], svc["tipping_load"])
        with open(out) as f:
            text = f.read()
        self.assertIn("retries: 1\n", text)
        self.assertIn("headroom_warning: 0.2\n", text)
        self.assertIn("calibrate: [service_time]\n", text)
        self.assertIn('busy_servers: "web1/api/gauge-busy_servers"', text)

    def test_storm_without_timeout_information(self):
        # The storm of doc/simulation.md (10 servers, 100 ms, a 1 s
        # timeout, 3 retries, 1 % base failure, no backoff): nothing fails
        # from the timeout outside the storm, so the trace bounds it only
        # from below, and the configured one is kept; the storm still
        # says 3 retries.
        r = clitest.run("simulate", "--servers", "10", "--service-time",
                        "100ms", "--timeout", "1", "--timeout-covers", "wait", "--retries", "3",
                        "--base-failure", "0.01", "--engine", "des",
                        "--scenario", os.path.join(EXAMPLES, "storm.yaml"),
                        "--format", "csv")
        self.assertEqual(r.code, 0, r)
        trace = self.write_file("storm.csv", r.out)
        out = os.path.join(self.tmp.name, "storm-fitted.yaml")
        j = self.ok("fit", "--spec", self.spec, trace, "--write-spec", out,
                    "--format", "json").json()
        t = j["parameters"]["timeout"]
        self.assertFalse(t["identified"])
        self.assertIsNone(t["high"])  # no upper bound
        self.assertLess(t["low"], 1.0)
        self.assertEqual(t["note"], "the configured value is kept")
        self.assertNotIn("note", j["parameters"]["retries"])
        r = j["parameters"]["retries"]
        self.assertTrue(r["identified"])
        self.assertLessEqual(r["low"], 3)
        self.assertGreaterEqual(r["high"], 3)
        s = j["parameters"]["service_time"]
        self.assertLessEqual(s["low"], 0.1)
        self.assertGreaterEqual(s["high"], 0.1)
        b = j["parameters"]["base_failure"]
        self.assertLessEqual(b["low"], 0.01)
        self.assertGreaterEqual(b["high"], 0.01)
        with open(out) as f:
            self.assertIn("timeout: 0.3s\n", f.read())
        self.assertEqual(clitest.run("check", out).code, 0)

    def test_prometheus(self):
        # the same trace as query_range responses, one per input: the same
        # fit as from the CSV of those columns
        names = ["offered_rate", "arrival_rate", "error_rate",
                 "busy_servers", "completion_rate"]
        spec = self.write_file("five.yaml", GUESS % inputs_yaml(names))
        with open(self.trace) as f:
            rows = list(csv.DictReader(f))
        t0 = 1714564800
        args = []
        for n in names:
            values = [[t0 + float(r["time"]), r[n]] for r in rows]
            p = self.write_file(n + ".json", json.dumps(
                {"status": "success", "data": {"resultType": "matrix",
                 "result": [{"metric": {}, "values": values}]}}))
            args += ["--prometheus-json", "%s=%s" % (n, p)]
        sub = self.write_file("five.csv", "time," + ",".join(names) + "\n" +
                              "".join("%s,%s\n" % (t0 + float(r["time"]),
                                                   ",".join(r[n] for n in
                                                            names))
                                      for r in rows))
        a = self.ok("fit", "--spec", spec, *args, "--format", "json").json()
        b = self.ok("fit", "--spec", spec, sub, "--format", "json").json()
        self.assertEqual(a["parameters"], b["parameters"])
        self.assertEqual(a["trace"], "(Prometheus trace)")

    def test_plot(self):
        svg = os.path.join(self.tmp.name, "fit.svg")
        r = self.ok("fit", "--spec", self.spec, self.trace, "--plot", svg)
        self.assertEqual(r.out, "")  # the plot only, without --format
        root = ET.parse(svg).getroot()
        text = " ".join(t.strip() for t in root.itertext() if t.strip())
        for want in ("api: failure ratio against attempt rate", "observed",
                     "fitted model p(x)", "configured model p(x)",
                     "left out: a backlog draining or filling",
                     "attempts per second reaching the service",
                     "configured: 150 ms, 300 ms, 0.1 %, 3 retries"):
            self.assertIn(want, text)

    def test_errors(self):
        t = self.write_file
        no_busy = t("no-busy.csv", "time,offered_rate,arrival_rate,"
                    "error_rate\n1,5,5,0\n2,5,5,0\n")
        spec = self.spec
        cases = [
            ((spec, no_busy), 1,
             no_busy + ":1:1: no column 'retry_rate': service 'api' reads "
             "that input"),
            ((spec, t("empty.csv", "")), 1,
             "empty.csv:1:1: the trace is empty"),
            ((spec, t("header.csv", "time," + ",".join(INPUTS) + "\n")), 1,
             "header.csv: the trace has a header but no rows: nothing to "
             "fit"),
            ((spec, t("bad.csv", "time," + ",".join(INPUTS) + "\n1" +
                      ",1" * 8 + ",x\n")), 1,
             "bad.csv:2:19: latency: 'x' is not a number"),
            ((spec, "no-such.csv"), 1,
             "no-such.csv: cannot open: No such file or directory"),
        ]
        for (s, trace), code, msg in cases:
            with self.subTest(msg=msg):
                r = self.fails(code, msg, "fit", "--spec", s, trace)
                self.assertTrue(r.err.startswith("metastable fit: "), r)
        self.fails(2, "has no service 'nope' (it has: api)", "fit", "--spec",
                   spec, "--service", "nope", self.trace)
        self.fails(2, "give the service file with --spec FILE", "fit",
                   self.trace)
        self.fails(2, "give the trace: TRACE.csv", "fit", "--spec", spec)
        self.fails(2, "--format: 'csv' is not one of: text, json", "fit",
                   "--spec", spec, self.trace, "--format", "csv")
        self.fails(2, "--plot: 'x.pdf' must end in .svg or .png", "fit",
                   "--spec", spec, self.trace, "--plot", "x.pdf")
        # nothing to fit: no attempts and failures, no busy servers
        lone = t("lone.yaml", "services:\n  - name: lone\n    model: erlang\n"
                 "    servers: 2\n    service_time: 1\n    timeout: 1\n    timeout_covers: wait\n"
                 "    retries: 1\n    inputs:\n      offered_rate: a/b/c\n")
        self.fails(1, "nothing to fit", "fit", "--spec", lone,
                   t("lone.csv", "time,offered_rate\n1,1\n2,1\n"))

    def test_help(self):
        out = self.ok("fit", "--help").out
        for opt in ("--spec FILE", "--write-spec OUT.yaml",
                    "--plot OUT.svg|png", "--format text|json",
                    "--prometheus-json", "--model erlang|capacity"):
            self.assertIn(opt, out)


if __name__ == "__main__":
    clitest.main()
