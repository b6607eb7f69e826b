#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable simulate: where runs settle against `solve`'s equilibria (an
independent path through the model library), a short trigger recovers and a
long one latches, the CSV and JSON shapes, scenario files, reproducible DES
seeds, the plot, and usage errors."""
import csv
import io
import math
import os
import re
import tempfile
import xml.etree.ElementTree as ET

import clitest
from clitest import EXAMPLES, CliTest

# 10 servers, 100 ms, timeout 1 s, 3 retries, 1 % base failure: tipping load
# 93.66/s, recovery load 25/s (tests/check_sim.c uses the same service).
SVC = ("--servers", "10", "--service-time", "100ms", "--timeout", "1", "--timeout-covers", "wait",
       "--retries", "3", "--base-failure", "0.01")
HEADER = ["time", "offered", "attempts", "retries", "failures", "goodput",
          "given_up", "refused", "backlog", "servers", "failure_ratio",
          "amplification", "state", "storm", "tipping_load", "recovery_load",
          "healthy_load", "collapsed_load"]
# the same window as a trace (replay and fit read it): the inputs' names
TRACE = ["offered_rate", "arrival_rate", "retry_rate", "error_rate",
         "queue_length", "pool_size"]
SERVED = ["busy_servers", "completion_rate", "latency"]
STATES = {"stable": 0, "vulnerable": 0, "metastable": 1, "overloaded": 1}


class Simulate(CliTest):
    def equilibria(self, load, *svc):
        j = self.ok("solve", *(svc or SVC), "--load", str(load), "--format",
                    "json").json()
        xs = [e["effective_load"] for e in j["equilibria"] if e["stable"]]
        return xs[0], xs[-1], j

    def sim(self, *args):
        return self.ok("simulate", *SVC, *args, "--format", "json").json()

    def test_landscape_matches_solve(self):
        _, _, solved = self.equilibria(60)
        j = self.sim("--load", "60", "--duration", "20")
        self.assertEqual(j["tipping_load"], solved["tipping_load"])
        self.assertEqual(j["recovery_load"], solved["recovery_load"])

    def test_short_spike_recovers_long_latches(self):
        healthy, collapsed, _ = self.equilibria(60)
        for engine in ("fluid", "des"):
            short = self.sim("--engine", engine, "--load", "60", "--spike",
                             "10,1,60", "--duration", "200",
                             "--sample-interval", "5")["summary"]
            self.assertTrue(short["recovered"], (engine, short))
            self.assertEqual(short["final_state"], "vulnerable")
            longer = self.sim("--engine", engine, "--load", "60", "--spike",
                              "10,20,60", "--duration", "200",
                              "--sample-interval", "5")
            s = longer["summary"]
            self.assertFalse(s["recovered"], (engine, s))
            self.assertEqual(s["final_state"], "metastable")
            self.assertEqual(s["storm_after_trigger"], 200 - 30)
            # the storm sits at the collapsed equilibrium, r + 1 = 4
            # attempts per request: fluid within 1 % (its queue's p tends
            # to 1), DES within 5 standard deviations of a Poisson count
            last = longer["series"][-1]
            tol = 0.01 if engine == "fluid" else 5 * math.sqrt(
                4 * collapsed / 5) / collapsed
            self.assertRel(last["attempts"], collapsed, tol, (engine, last))
        # the fluid run without a trigger sits on the healthy equilibrium
        s = self.sim("--load", "60", "--duration", "60")["summary"]
        self.assertRel(s["final_attempts"], healthy, 1e-9)
        self.assertEqual(s["settled"], "healthy")

    def test_backoff_multiplier(self):
        # v_k = min(C, B M^(k-1)): M = 2 is the default; M = 1 waits B
        # every time, as constant,B does; both engines
        run = ("--load", "60", "--spike", "10,20,60", "--duration", "120",
               "--sample-interval", "5")
        for engine in ("fluid", "des"):
            def series(backoff):
                j = self.sim("--engine", engine, *run, "--backoff", backoff)
                return j["series"], j["summary"]
            self.assertEqual(series("exponential,100ms,5s,2"),
                             series("exponential,100ms,5s"))
            self.assertEqual(series("full-jitter,0.5,100,1"),
                             series("full-jitter,0.5,0.5"))
            self.assertEqual(series("exponential,0.5,1m,1")[0],
                             series("constant,0.5")[0])
            # a steeper growth spreads the retries further: different path
            self.assertNotEqual(series("exponential,100ms,5s,3")[0],
                                series("exponential,100ms,5s")[0])
        out = self.ok("simulate", *SVC, "--load", "60", "--duration", "10",
                      "--backoff", "equal-jitter,100ms,2m,1.5").out
        self.assertIn("backoff:   equal-jitter, base 0.1 s, cap 120 s, "
                      "multiplier 1.5\n", out)

    def test_seed000_capacity_model(self):
        # doc/design.md §2: lambda 0.95, C 1, base 0.1, r 3 settles at 1.72736
        j = self.ok("simulate", "--capacity", "1", "--base-failure", "0.1",
                    "--retries", "3", "--load", "0.95", "--duration", "200",
                    "--format", "json").json()
        self.assertAlmostEqual(j["summary"]["final_attempts"], 1.72736,
                               delta=5e-6)
        self.assertFalse(j["queue_memory"])  # the capacity model has none

    def test_csv(self):
        out = self.ok("simulate", *SVC, "--load", "60", "--spike",
                      "10,20,60", "--drop", "60,180,50", "--duration", "300",
                      "--sample-interval", "2", "--format", "csv").out
        rows = list(csv.DictReader(io.StringIO(out)))
        # the fluid engine measures no busy servers: no such columns
        self.assertEqual(list(rows[0]), HEADER + TRACE)
        self.assertEqual(len(rows), 150)
        for r in rows:
            for mine, trace in (("offered", "offered_rate"),
                                ("attempts", "arrival_rate"),
                                ("retries", "retry_rate"),
                                ("failures", "error_rate"),
                                ("backlog", "queue_length"),
                                ("servers", "pool_size")):
                self.assertEqual(r[mine], r[trace])
        self.assertEqual([float(r["time"]) for r in rows],
                         [2.0 * (i + 1) for i in range(150)])
        for r in rows:
            a, o = float(r["attempts"]), float(r["offered"])
            self.assertAlmostEqual(a, o + float(r["retries"]),
                                   delta=1e-9 * a)
        # the storm flag is the plugin's verdict on the window's
        # observations, not the state's: it follows the failures.  The
        # healthy run fails at the base, 1 %; the top of the healthy
        # branch (the fold at the tipping load) fails at about 2 %.  Every
        # window is clearly on one side, and the flag is up exactly while
        # more than 2 % fail (with the queue past c mu T = 100, or not)
        for r in rows:
            p = float(r["failure_ratio"])
            self.assertFalse(0.0101 < p <= 0.02, r)
            self.assertEqual(int(r["storm"]), int(p > 0.02), r)
        self.assertPluginVerdicts(SVC, rows, counted=False)
        by_time = {float(r["time"]): r for r in rows}
        # the trigger tips it; the storm outlives it; the drop below the
        # recovery load (10/s < 25/s) ends it once the queue has drained
        # (about 9,800 attempts at c mu - 4 x 10/s = 60/s: 165 s; the DES
        # too is back in the storm after a drop of 150 s):
        # the state is stable from the drop on, the flag stays up while
        # the queue fails nearly every attempt
        self.assertEqual(by_time[20]["state"], "overloaded")
        self.assertEqual(by_time[50]["state"], "metastable")
        self.assertEqual(by_time[100]["state"], "stable")
        self.assertEqual(by_time[100]["storm"], "1")
        self.assertGreater(float(by_time[100]["backlog"]), 1000)
        self.assertEqual(float(by_time[100]["goodput"]) > 1, False)
        self.assertEqual(by_time[300]["state"], "vulnerable")
        self.assertEqual(by_time[300]["storm"], "0")
        self.assertLess(float(by_time[300]["failure_ratio"]), 0.02)
        # and down at the first window after the drop's end that fails at
        # the base again: the queue has drained
        back = min(t for t, r in by_time.items()
                   if t > 60 and float(r["failure_ratio"]) <= 0.0101)
        self.assertTrue(all(by_time[t]["storm"] == "1"
                            for t in by_time if 12 <= t < back))
        self.assertTrue(all(by_time[t]["storm"] == "0"
                            for t in by_time if t >= back))

    def test_des_measures_the_servers(self):
        # healthy at 60/s: the DES's busy servers, completions and service
        # times against the service time given (100 ms) and the model's
        # healthy equilibrium (solve), by their own scatter
        healthy, _, _ = self.equilibria(60)
        out = self.ok("simulate", *SVC, "--engine", "des", "--load", "60",
                      "--duration", "600", "--sample-interval", "5",
                      "--format", "csv").out
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(list(rows[0]), HEADER + TRACE + SERVED)
        rows = rows[4:]  # the first windows start from an empty system
        busy = [float(r["busy_servers"]) for r in rows]
        done = [float(r["completion_rate"]) for r in rows]
        lat = [float(r["latency"]) for r in rows]
        n = len(rows)

        def mean_se(xs, ws):
            w = sum(ws)
            m = sum(x * v for x, v in zip(xs, ws)) / w
            se = math.sqrt(sum((v * (x - m)) ** 2 for x, v in zip(xs, ws))
                           * n / (n - 1)) / w
            return m, se
        # the utilisation law (Denning and Buzen 1978): busy = completions
        # x service time, window by window
        s, se = mean_se([b / d for b, d in zip(busy, done)], done)
        self.assertLess(se, 0.003)
        self.assertLess(abs(s - 0.1), 4 * se, (s, se))
        m, se = mean_se(lat, done)
        self.assertLess(abs(m - 0.1), 4 * se, (m, se))
        # busy servers: the healthy attempt rate times the service time;
        # completions: the attempt rate
        m, se = mean_se(busy, [1] * n)
        self.assertLess(abs(m - healthy * 0.1), 4 * se, (m, se, healthy))
        m, se = mean_se(done, [1] * n)
        self.assertLess(abs(m - healthy), 4 * se, (m, se, healthy))
        self.assertTrue(all(0 <= b <= 10 for b in busy))
        # JSON: the same numbers; the fluid engine has none
        j = self.sim("--engine", "des", "--load", "60", "--duration", "20")
        self.assertIn("busy_servers", j["series"][-1])
        j = self.sim("--load", "60", "--duration", "20")
        self.assertNotIn("busy_servers", j["series"][-1])

    def test_scenario_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.yaml")
            with open(path, "w") as f:
                f.write("duration: 100s\noffered_load: 60/s\n"
                        "sample_interval: 5s\nseed: 3\n"
                        "backoff: {kind: full-jitter, base: 100ms, cap: 2s}\n"
                        "triggers:\n"
                        "  - {kind: stall, start: 10s, hold: 3s, servers: 0}\n")
            j = self.sim("--scenario", path, "--engine", "des")
            self.assertEqual(j["seed"], 3)
            self.assertEqual(j["backoff"],
                             "full-jitter, base 0.1 s, cap 2 s")
            self.assertEqual(len(j["series"]), 20)
            stall = j["series"][2]  # [10, 15): the pool is back at 13 s
            self.assertEqual(stall["servers"], 10)
            # a 3-second stall of every server latches (tests/check_sim.c)
            self.assertFalse(j["summary"]["recovered"])
            # the command line overrides the file
            j = self.sim("--scenario", path, "--load", "20")
            self.assertTrue(j["summary"]["recovered"])
            self.assertEqual(j["offered_load"], 20)
            # a trigger of the file after the run's end, by the file's
            # duration or by --duration
            late = os.path.join(d, "late.yaml")
            with open(late, "w") as f:
                f.write("duration: 100s\noffered_load: 60/s\ntriggers:\n"
                        "  - {kind: stall, start: 150s, hold: 3s, "
                        "servers: 0}\n")
            self.fails(1, "late.yaml: trigger 1 starts at 150 s, not before "
                       "the end of the run (the duration of %s, 100 s)"
                       % late, "simulate", *SVC, "--scenario", late)
            self.fails(2, "late.yaml: trigger 1 starts at 150 s, not before "
                       "the end of the run (--duration 120 s)", "simulate",
                       *SVC, "--scenario", late, "--duration", "120")
            self.assertEqual(len(self.sim("--scenario", late, "--duration",
                                          "151")["series"]), 151)
            with open(path, "a") as f:
                f.write("  - {kind: spike, start: 1s}\n")
            self.fails(1, "s.yaml:8:5: trigger 2: a spike needs the load",
                       "simulate", *SVC, "--scenario", path)

    def test_example_scenario(self):
        j = self.sim("--scenario", os.path.join(EXAMPLES, "storm.yaml"),
                     "--engine", "des")
        s = j["summary"]
        self.assertTrue(s["recovered"])
        # the storm outlasts the spike (20 s + 10 s) and ends during the
        # drop (60 s + 150 s), the last trigger
        self.assertEqual(s["trigger_end"], 210)
        self.assertGreater(s["storm_ended_at"], 30)
        self.assertLess(s["storm_ended_at"], 210)
        self.assertEqual(s["settled"], "healthy")

    def test_des_seeds(self):
        args = ("simulate", *SVC, "--engine", "des", "--load", "60",
                "--duration", "500", "--format", "csv")
        a = self.ok(*args, "--seed", "7").out
        self.assertEqual(a, self.ok(*args, "--seed", "7").out)
        b = self.ok(*args, "--seed", "8").out
        self.assertNotEqual(a, b)
        for out in (a, b):
            rows = list(csv.DictReader(io.StringIO(out)))
            n = sum(float(r["offered"]) for r in rows)  # 1-s windows
            # a Poisson count: mean 30000, sd 173
            self.assertLess(abs(n - 30000), 5 * math.sqrt(30000))

    def test_text(self):
        out = self.ok("simulate", *SVC, "--load", "60", "--spike",
                      "10,20,60", "--duration", "100").out
        self.assertIn("tipping load 93.6623/s, recovery load 25/s", out)
        self.assertIn("trigger: spike +60/s from 10 s for 20 s", out)
        self.assertIn("outcome:   STORM at the end of the run (metastable): "
                      "it outlasted the triggers, which ended at 30 s", out)
        self.assertNotIn("draining:", out)
        args = ("--scenario", os.path.join(EXAMPLES, "storm.yaml"),
                "--engine", "des")
        out = self.ok("simulate", *SVC, *args).out
        series = self.sim(*args)["series"]
        # below the recovery load the plugin calls it stable while the
        # queue left by the storm drains and attempts still fail; its
        # storm flag stays up through the drain, and the storm ends when
        # goodput returns: the start of the first window after the last
        # storm window, during the drop that ends the triggers at 210 s
        last = max(i for i, w in enumerate(series) if w["storm"])
        end = series[last]["time"]
        self.assertLess(end, 210)
        self.assertLessEqual(series[last + 1]["failure_ratio"], 0.5)
        self.assertTrue(all(w["failure_ratio"] > 0.5
                            for w in series[last - 40:last + 1]))
        self.assertIn("outcome:   storm ended at %g s, when goodput "
                      "returned, before the triggers ended at 210 s" % end,
                      out)
        # no window out of storm with most attempts failing: nothing
        # drained after the verdict left the storm
        self.assertFalse(any(not w["storm"] and w["failure_ratio"] > 0.5
                             for w in series))
        self.assertNotIn("draining:", out)
        self.assertIn("settled:   at the healthy equilibrium (within "
                      "36.5 %%) since %g s" % end, out)

    def test_flag_ends_after_the_drain(self):
        # a fluid run's rates are expectations: a healthy window fails at
        # the model's p(x) up to rounding (1e-13 relative), or at 1e-32
        # where the model's tail is 0.  Neither is a failure beyond the
        # healthy level: once the queue a spike left has drained the flag
        # goes down, where the failure ratio is back at the healthy
        # equilibrium's (solve), and stays down
        svc = ("--servers", "10", "--service-time", "100ms", "--timeout",
               "1", "--timeout-covers", "wait", "--retries", "0")
        for load, base in ((33, "0"), (85, "0"), (71, "0.003")):
            with self.subTest(load=load, base=base):
                j = self.ok("simulate", *svc, "--base-failure", base,
                            "--load", str(load), "--spike", "10,20,80",
                            "--duration", "200", "--format", "json").json()
                p = self.ok("solve", *svc, "--base-failure", base, "--load",
                            str(load), "--format",
                            "json").json()["failure_probability"]
                series = j["series"]
                self.assertTrue(j["summary"]["recovered"])
                self.assertIsNotNone(j["summary"]["storm_ended_at"])
                last = max(i for i, w in enumerate(series) if w["storm"])
                # after it no window fails a millionth of an attempt per
                # second more than the healthy equilibrium; the last one
                # is at it to 1e-9
                for w in series[last + 1:]:
                    self.assertLess(
                        abs(w["failure_ratio"] - p) * w["attempts"], 1e-6,
                        w)
                end = series[-1]["failure_ratio"]
                self.assertLessEqual(abs(end - p), 1e-9 * p + 1e-30)
                # the last window in storm still failed beyond it
                w = series[last]
                self.assertGreater(w["failure_ratio"], p, w)

    def test_singular(self):
        # without retries every request sends one attempt: "1 attempt"
        out = self.ok("simulate", "--servers", "10", "--service-time",
                      "100ms", "--timeout", "1", "--timeout-covers", "wait", "--retries", "0", "--load",
                      "20", "--duration", "10").out
        self.assertIn("amplification: 1 attempt per request over the run "
                      "(at most r + 1 = 1)", out)
        out = self.ok("simulate", *SVC, "--load", "60", "--spike",
                      "10,20,60", "--duration", "100").out
        self.assertRegex(out, r"amplification: [0-9.]+ attempts per request")
        # one run of --seeds recovered: "1 run"
        out = self.ok("simulate", *SVC, "--load", "60", "--spike",
                      "10,40,60", "--duration", "100", "--seeds", "1").out
        self.assertIn("recovered: 0 runs", out)
        out = self.ok("simulate", *SVC, "--load", "20", "--spike",
                      "10,5,100", "--duration", "100", "--seeds", "1").out
        self.assertIn("recovered: 1 run (", out)

    def test_plot(self):
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "storm.svg")
            r = self.ok("simulate", *SVC, "--load", "60", "--spike",
                        "10,20,60", "--drop", "60,150,50", "--duration",
                        "240", "--plot", f)
            self.assertEqual(r.out, "")
            root = ET.parse(f).getroot()
            text = " ".join(t.strip() for t in root.itertext() if t.strip())
            for want in ("tipping load 93.66 req/s",
                         "recovery load 25 req/s", "capacity 100 attempts/s",
                         "offered load (first attempts)",
                         "attempts (retries included)",
                         "storm (the plugin's verdict)", "trigger"):
                self.assertIn(want, text)
            # the legend lies below the plot area, under the x label, so
            # it hides no curve: each text's y from its translate()
            with open(f) as fh:
                svg = fh.read()
            y = {t: float(v) for v, t in re.findall(
                r'translate\([\d.]+,([\d.]+)\)[^>]*>\s*<text>([^<]*)</text>',
                svg)}
            for entry in ("trigger", "storm (the plugin's verdict)",
                          "offered load (first attempts)",
                          "attempts (retries included)",
                          "goodput (successful attempts)"):
                self.assertGreater(y[entry], y["time (s)"], entry)

    def test_usage(self):
        for args, code, words in [
            (("--load", "60", "--engine", "monte-carlo"), 2,
             "--engine: 'monte-carlo' is not one of: fluid, des"),
            (("--load", "60", "--spike", "10,20"), 2,
             "--spike: '10,20' is not START,HOLD,LOAD"),
            (("--load", "60", "--spike", "10,20,x"), 2,
             "--spike LOAD: 'x' is not a rate"),
            (("--load", "60", "--stall", "1,2,3.5"), 2, "--stall SERVERS"),
            (("--load", "60", "--backoff", "exponential,1s"), 2,
             "--backoff: exponential takes a base, a cap and optionally a "
             "multiplier (KIND,BASE,CAP[,MULT])"),
            (("--load", "60", "--backoff", "exponential,1s,2s,0.5"), 2,
             "--backoff MULT: '0.5' is out of range: it must be in "
             "[1, 1000]"),
            (("--load", "60", "--backoff", "decorrelated-jitter,1s,2s,3"), 2,
             "--backoff: decorrelated-jitter takes a base and a cap "
             "(KIND,BASE,CAP)"),
            (("--load", "60", "--backoff", "full-jitter,1s,2s,3,4"), 2,
             "--backoff: full-jitter takes a base, a cap and optionally a "
             "multiplier"),
            (("--load", "60", "--backoff", "bounce"), 2,
             "backoff 'bounce' is not one of"),
            (("--load", "60", "--tiers", "2"), 2, "one retrying tier"),
            (("--load", "60", "--dt", "0.3"), 2,
             "dt = 0.3 s must divide the sample interval"),
            (("--load", "60", "--memoryless", "--engine", "des"), 2,
             "--memoryless applies to the fluid engine only"),
            ((), 2, "give the baseline offered load"),
            (("--load", "60", "--scenario", "/no/such.yaml"), 1,
             "/no/such.yaml: cannot open"),
            (("--load", "60", "--plot", "x.pdf"), 2,
             "--plot: 'x.pdf' must end in .svg or .png"),
            # a trigger that starts when the run is over would never act
            (("--load", "60", "--spike", "400,10,60"), 2,
             "--spike 400,10,60: START 400 s is not before the end of the "
             "run (the default --duration of 300 s)"),
            (("--load", "60", "--duration", "50", "--spike", "10,5,60",
              "--drop", "50,1,10"), 2,
             "--drop 50,1,10: START 50 s is not before the end of the run "
             "(--duration 50 s)"),
            # the fluid engine is deterministic: a seed would change nothing
            (("--load", "60", "--seed", "3"), 2,
             "--seed 3 applies to the discrete-event engine only"),
            (("--load", "60", "--seed", "3", "--engine", "fluid"), 2,
             "--seed 3 applies to the discrete-event engine only"),
        ]:
            self.fails(code, words, "simulate", *SVC, *args)
        self.fails(2, "--engine des simulates an M/M/c queue", "simulate",
                   "--capacity", "1", "--retries", "3", "--load", "1",
                   "--engine", "des")

    def test_help(self):
        out = self.ok("simulate", "--help").out
        for opt in ("--engine fluid|des", "--memoryless", "--spike S,H,L",
                    "--stall S,H,N", "--backoff", "--scenario FILE",
                    "--model erlang|capacity"):
            self.assertIn(opt, out)


class GeneralService(CliTest):
    """--service-dist: the DES's service times, with the model's
    --service-time-cv (doc/simulation.md)."""
    POOL = ("simulate", "--engine", "des", "--servers", "10",
            "--service-time", "100ms", "--timeout", "0.2", "--timeout-covers", "wait", "--retries", "0",
            "--load", "90", "--duration", "400", "--sample-interval", "100",
            "--format", "json")

    def test_runs(self):
        j = self.ok(*(self.POOL + ("--service-time-cv", "2",
                                   "--service-dist", "hyperexponential"))
                    ).json()
        self.assertEqual(j["service_dist"], "hyperexponential")
        fails = sum(w["failures"] for w in j["series"])
        attempts = sum(w["attempts"] for w in j["series"])
        # the M/M/c tail at rho 0.9 is 0.09, the H2 queue's about 0.26
        self.assertGreater(fails / attempts, 0.15)
        text = self.ok(*(self.POOL[:-2] + ("--service-time-cv", "0"))).out
        self.assertIn("engine:    discrete-event (M/G/c, deterministic "
                      "service, cv 0), seed 1", text)
        # exponential service is the M/M/c engine, the same run as ever
        plain = self.ok(*self.POOL).json()
        self.assertNotIn("service_dist", plain)
        self.assertEqual(self.ok(*(self.POOL + ("--service-dist",
                                                "exponential"))).json(),
                         plain)

    def test_usage(self):
        self.fails(2, "deterministic service times have cv 0",
                   *(self.POOL + ("--service-time-cv", "2",
                                  "--service-dist", "deterministic")))
        self.fails(2, "--service-dist applies to the discrete-event engine",
                   "simulate", "--servers", "10", "--service-time", "100ms",
                   "--timeout", "1", "--timeout-covers", "wait", "--retries", "3", "--load", "10",
                   "--service-dist", "lognormal")
        self.fails(2, "--service-dist", *(self.POOL + ("--service-dist",
                                                       "pareto")))


if __name__ == "__main__":
    clitest.main()
