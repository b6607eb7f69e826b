#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable simulate: every figure of the summary recomputed here from the
series the same run prints (a storm ends when goodput returns, the triggers
end with the last of any kind, amplification is attempts per request and at
most r + 1, tiny shares never printed as "3.2e-43 %"), and --seeds: the
latch probability against runs of the single seeds, its interval against
the Wilson formula written out here, the recovery times' quartiles."""
import csv
import io
import math
import re

import clitest
from clitest import EXAMPLES, CliTest

# 10 servers, 100 ms, timeout 1 s, 3 retries, 1 % base failure: tipping load
# 93.66/s, recovery load 25/s, capacity 100/s.
SVC = ("--servers", "10", "--service-time", "100ms", "--timeout", "1", "--timeout-covers", "wait",
       "--retries", "3", "--base-failure", "0.01")
STORM = ("--engine", "des", "--scenario", EXAMPLES + "/storm.yaml")
# goodput has returned in a window whose failure ratio is at most this
# (MS_SIM_GOODPUT_SHARE): most attempts succeed
GOODPUT_SHARE = 0.5


def trigger_end(args):
    """The end of the last trigger of a command line, whatever its kind."""
    end = 0.0
    for i, a in enumerate(args):
        if a in ("--spike", "--drop", "--stall"):
            s, h = (float(v) for v in args[i + 1].split(",")[:2])
            end = max(end, s + h)
        elif a == "--ramp":
            s, r, h, f = (float(v) for v in args[i + 1].split(",")[:4])
            end = max(end, s + r + h + f)
    return end


def windows(series):
    """(start, width, window) of each window, from the ends."""
    prev = 0.0
    for w in series:
        yield prev, w["time"] - prev, w
        prev = w["time"]


def storm_from_series(series):
    """(recovered, storm_ended_at, verdict_ended_at, draining) from the
    windows: a storm runs from a window the plugin judges in storm until
    the first window, after it, whose failure ratio is at most
    GOODPUT_SHARE; the verdict left it at the start of the first window
    after its last storm window."""
    in_storm, ended, verdict_ended, draining = False, None, None, 0.0
    for start, width, w in windows(series):
        if w["storm"]:
            in_storm, ended, verdict_ended = True, None, None
            continue
        if in_storm and verdict_ended is None:
            verdict_ended = start
        if in_storm and w["failure_ratio"] > GOODPUT_SHARE:
            draining += width
            continue
        if in_storm:
            ended = start
        in_storm = False
    return not in_storm, ended, verdict_ended, draining


class SummaryFromSeries(CliTest):
    def run_json(self, *args):
        return self.ok("simulate", *SVC, *args, "--format", "json").json()

    def check_summary(self, args, r=3, ends=None, most=None):
        """Each summary figure against the same run's series; ends: the
        triggers' end when a scenario file holds them; most: the policy's
        largest amplification when below r + 1."""
        j = self.run_json(*args)
        s, series = j["summary"], j["series"]
        # the series is the CSV's: every column of every window the same
        # number, so what holds of one holds of the other
        out = self.ok("simulate", *SVC, *args, "--format", "csv").out
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(rows), len(series))
        for w, row in zip(series, rows):
            for key, v in w.items():
                if key == "state":
                    self.assertEqual(row[key], v)
                elif v is None:
                    self.assertEqual(row[key], "")
                else:
                    self.assertEqual(float(row[key]), v, key)
        recovered, ended, verdict_ended, draining = storm_from_series(series)
        self.assertEqual(s["recovered"], recovered, args)
        self.assertEqual(s["storm_ended_at"], ended, args)
        self.assertEqual(s["verdict_ended_at"], verdict_ended, args)
        self.assertAlmostEqual(s["failing_out_of_storm"], draining, 9)
        if ended is not None:
            # goodput is back in the window that starts there and was not
            # in the one before it
            after = [w for w in series if w["time"] > ended][0]
            before = [w for w in series if w["time"] <= ended][-1]
            self.assertLessEqual(after["failure_ratio"], GOODPUT_SHARE)
            self.assertTrue(before["storm"]
                            or before["failure_ratio"] > GOODPUT_SHARE)
        # settled at the healthy equilibrium only once goodput is back
        if s["settled"] == "healthy" and s["first_storm_at"] is not None:
            self.assertGreaterEqual(s["settled_at"], ended)
        # the triggers' end is the last trigger's, whatever its kind
        self.assertEqual(s["trigger_end"],
                         trigger_end(list(args)) if ends is None else ends)
        # storm time by the verdict, and after the triggers
        widths = [d for _, d, _ in windows(series)]
        self.assertAlmostEqual(
            s["storm_time"],
            sum(d for w, d in zip(series, widths) if w["storm"]), 9)
        self.assertAlmostEqual(
            s["storm_after_trigger"],
            sum(max(0.0, min(d, w["time"] - s["trigger_end"]))
                for w, d in zip(series, widths) if w["storm"]), 9)
        # amplification: attempts / first attempts over the run, at most
        # r + 1 (each request sends at most r + 1 attempts)
        attempts = sum(w["attempts"] * d for w, d in zip(series, widths))
        first = sum(w["offered"] * d for w, d in zip(series, widths))
        self.assertRel(s["amplification"], attempts / first, 1e-9)
        self.assertRel(s["attempts"], attempts, 1e-9)
        self.assertRel(s["requests"], first, 1e-9)
        self.assertLessEqual(s["amplification"], r + 1)
        if most is not None:
            self.assertLessEqual(s["amplification"], most * (1 + 1e-12))
        self.assertGreaterEqual(s["amplification"], 1)
        # each window's storm flag and state: the plugin's verdict on the
        # window's observations
        model = [v for i, a in enumerate(args) if a == "--retry-budget"
                 for v in args[i:i + 2]]
        self.assertPluginVerdicts(SVC + tuple(model), series, "des" in args)
        return j

    def test_storm_of_the_example(self):
        # the storm of doc/simulation.md: the load drops below the recovery
        # load at 60 s, where the state turns stable, but the queue left
        # behind still fails most attempts; the plugin's storm flag, which
        # follows the failures, stays up until goodput returns, and the
        # summary's storm ends with it
        # cli/examples/storm.yaml: a spike 20 s + 10 s, a drop 60 s + 150 s
        j = self.check_summary(STORM, ends=60 + 150)
        s, series = j["summary"], j["series"]
        self.assertGreater(s["storm_ended_at"], 120)
        self.assertEqual(s["verdict_ended_at"], s["storm_ended_at"])
        self.assertEqual(s["failing_out_of_storm"], 0)
        # the drop lasts until 210 s: the triggers end there, not at 30 s
        self.assertEqual(s["trigger_end"], 210)
        # every window from the drop to goodput's return is in storm, with
        # most of its attempts failing, and judged stable once its offered
        # load is below the recovery load beyond the noise of its count
        # (doc/design.md §1.4: l + 3 sqrt(l / tau) + 9 / tau < 25 req/s);
        # until then the metastable state holds
        below, held = False, 0
        for w in series:
            if 62 <= w["time"] <= s["storm_ended_at"]:
                tau = 2.0  # the scenario's sample_interval
                l = w["offered"]
                below = below or l + 3 * (l / tau) ** 0.5 + 9 / tau < 25
                held += not below
                self.assertEqual((w["state"], w["storm"]),
                                 ("stable" if below else "metastable", 1), w)
                self.assertGreater(w["failure_ratio"], GOODPUT_SHARE, w)
        # a drop to 10 req/s is clear within a window or two
        self.assertLessEqual(held, 2)
        # the flag is the plugin's verdict on each window's observations
        self.assertPluginVerdicts(SVC, series, counted=True)
        # the window ratio that the summary once called amplification
        # exceeds r + 1 after the drop (retries of the 60/s requests over
        # the first attempts of 10/s); the summary's per request does not
        self.assertGreater(max(w["amplification"] for w in j["series"]), 4)

    def test_text_agrees(self):
        out = self.ok("simulate", *SVC, *STORM).out
        j = self.run_json(*STORM)["summary"]
        self.assertIn("storm ended at %g s, when goodput returned"
                      % j["storm_ended_at"], out)
        self.assertNotIn("the plugin's verdict left the storm", out)
        self.assertIn("the triggers end at 210 s", out)
        self.assertIn("amplification: %.4g attempts per request"
                      % j["amplification"], out)

    def test_cases(self):
        for args in (
                # latches: the storm outlasts the spike
                ("--load", "60", "--spike", "20,20,60", "--duration", "120"),
                ("--engine", "des", "--load", "60", "--spike", "20,20,60",
                 "--duration", "120"),
                # a spike then a drop below the recovery load, fluid
                ("--load", "60", "--spike", "20,10,60", "--drop",
                 "60,150,50", "--duration", "300", "--sample-interval", "2"),
                # a drop that ends late, the spike first
                ("--engine", "des", "--load", "60", "--spike", "10,3,60",
                 "--drop", "50,100,20", "--duration", "200"),
                # a stall that recovers and a ramp
                ("--engine", "des", "--load", "60", "--stall", "20,1,0",
                 "--duration", "100"),
                ("--load", "20", "--ramp", "10,60,30,60,90"),
                # a retry budget after a spike (bursts every window)
                ("--load", "90", "--spike", "20,10,20", "--retry-budget",
                 "0.2", "--duration", "200")):
            with self.subTest(args=args):
                self.check_summary(args)
        # a budget of b keeps the retries of every window of its length
        # within b / (1 - b) of the first attempts, so over the run (no
        # allowance saved before it) a request sends at most 1 / (1 - b)
        # attempts; both engines, a spike that makes every attempt fail
        for engine in ("fluid", "des"):
            with self.subTest(engine=engine):
                j = self.check_summary(
                    ("--engine", engine, "--load", "90", "--spike",
                     "20,30,60", "--retry-budget", "0.2", "--duration",
                     "200"), most=1 / (1 - 0.2))
                self.assertGreater(j["summary"]["amplification"], 1.05)

    def test_tiny_shares(self):
        # a healthy fluid run at 20/s without base failure: the failure
        # ratio of its last window is of the order of 1e-40, printed as
        # a share in scientific notation or 0, never "...e-40 %"
        out = self.ok("simulate", "--servers", "10", "--service-time",
                      "100ms", "--timeout", "1", "--timeout-covers", "wait", "--retries", "3", "--load",
                      "20", "--spike", "20,10,60", "--duration",
                      "100").out
        j = self.ok("simulate", "--servers", "10", "--service-time",
                    "100ms", "--timeout", "1", "--timeout-covers", "wait", "--retries", "3", "--load",
                    "20", "--spike", "20,10,60", "--duration", "100",
                    "--format", "json").json()["summary"]
        self.assertLess(j["final_failure_ratio"], 1e-30)
        self.assertNotRegex(out, r"e-\d+ %")
        m = re.search(r"failure ratio (\S+),", out)
        self.assertRel(float(m.group(1)), j["final_failure_ratio"], 0.01)
        # every share of the text: the base failure, the budget, the settle
        # band, tiny or not; a DES run where nothing fails prints 0
        out = self.ok("simulate", "--servers", "10", "--service-time",
                      "100ms", "--timeout", "1", "--timeout-covers", "wait", "--retries", "3",
                      "--base-failure", "3.2e-45", "--retry-budget", "2e-9",
                      "--settle-tolerance", "1e-9", "--load", "20",
                      "--duration", "20").out
        self.assertNotRegex(out, r"e-\d+ %")
        self.assertIn("base failure 3.2e-45,", out)
        self.assertIn("retry budget 2e-09", out)
        self.assertIn("(within 1e-09)", out)
        out = self.ok("simulate", "--servers", "10", "--service-time",
                      "100ms", "--timeout", "1", "--timeout-covers", "wait", "--retries", "3",
                      "--base-failure", "0.00025", "--load", "20",
                      "--duration", "20", "--engine", "des").out
        self.assertIn("base failure 0.025 %,", out)
        self.assertIn("failure ratio 0,", out)


def wilson(k, n, z=1.959963984540054):
    """E. B. Wilson, JASA 1927: the score interval, written out."""
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def type7(xs, q):
    """Hyndman and Fan's type 7 quantile (R's default, numpy's linear)."""
    xs = sorted(xs)
    h = (len(xs) - 1) * q
    i = math.floor(h)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (h - i) * (xs[i + 1] - xs[i])


class Seeds(CliTest):
    def seeds(self, *args):
        return self.ok("simulate", *SVC, *args, "--format", "json").json()

    def test_wilson_formula(self):
        # the interval the command prints for k of n against the formula;
        # an independent check at one point: k = 5 of n = 20 at 95 %,
        # centre (0.25 + 1.9208/20) / 1.19207 = 0.29029, half 0.19141
        lo, hi = wilson(5, 20)
        self.assertAlmostEqual(lo, 0.11186, 4)
        self.assertAlmostEqual(hi, 0.46870, 4)

    def test_sure_latch_and_sure_recovery(self):
        # a 40 s spike over capacity in the band latches in every run: 1;
        # and the interval [lo, 1] with lo from the formula at k = n
        j = self.seeds("--load", "60", "--spike", "10,40,60", "--duration",
                       "100", "--seeds", "8")
        self.assertEqual(j["runs"], 8)
        self.assertEqual(j["latched"], 8)
        self.assertEqual(j["latch_probability"], 1)
        self.assertAlmostEqual(j["latch_low"], wilson(8, 8)[0], 12)
        self.assertEqual(j["latch_high"], 1)
        self.assertEqual(j["recovery_time"]["runs"], 0)
        self.assertIsNone(j["recovery_time"]["median"])
        # below the recovery load no collapsed equilibrium exists: every
        # run recovers, 0, and [0, hi]
        j = self.seeds("--load", "20", "--spike", "10,5,100", "--duration",
                       "100", "--seeds", "8")
        self.assertEqual(j["latched"], 0)
        self.assertEqual(j["latch_probability"], 0)
        self.assertEqual(j["latch_low"], 0)
        self.assertAlmostEqual(j["latch_high"], wilson(0, 8)[1], 12)

    def test_between_matches_single_runs(self):
        # a 6 s spike: about half the runs latch, and some of the others
        # have a storm they recover from (a 5 s spike leaves those without
        # any failing beyond the healthy level: never in a storm); the
        # batch must say what the single runs with the same seeds say
        args = ("--load", "60", "--spike", "20,6,60", "--duration", "120")
        n, first = 12, 7
        j = self.seeds(*args, "--seeds", str(n), "--seed", str(first))
        latched, times = 0, []
        for i, run in enumerate(j["runs_detail"]):
            seed = first + i
            self.assertEqual(run["seed"], seed)
            one = self.ok("simulate", *SVC, *args, "--engine", "des",
                          "--seed", str(seed), "--format",
                          "json").json()["summary"]
            self.assertEqual(run["recovered"], one["recovered"], seed)
            self.assertEqual(run["storm_ended_at"], one["storm_ended_at"])
            latched += not one["recovered"]
            if one["recovered"] and one["first_storm_at"] is not None:
                times.append(max(0.0, one["storm_ended_at"]
                                 - one["trigger_end"]))
        self.assertEqual(j["latched"], latched)
        self.assertTrue(0 < latched < n, latched)  # neither sure case
        self.assertEqual(j["latch_probability"], latched / n)
        lo, hi = wilson(latched, n)
        self.assertAlmostEqual(j["latch_low"], lo, 12)
        self.assertAlmostEqual(j["latch_high"], hi, 12)
        rt = j["recovery_time"]
        self.assertEqual(rt["runs"], len(times))
        self.assertEqual(rt["min"], min(times))
        self.assertEqual(rt["max"], max(times))
        for key, q in (("q1", 0.25), ("median", 0.5), ("q3", 0.75)):
            self.assertAlmostEqual(rt[key], type7(times, q), 12)
        # the text says the same
        out = self.ok("simulate", *SVC, *args, "--seeds", str(n), "--seed",
                      str(first)).out
        self.assertIn("%d of %d runs still in a storm" % (latched, n), out)
        self.assertIn("[%.4g, %.4g] (Wilson score)" % (lo, hi), out)
        # and the CSV, one row per run
        out = self.ok("simulate", *SVC, *args, "--seeds", str(n), "--seed",
                      str(first), "--format", "csv").out
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(rows), n)
        self.assertEqual(sum(r["recovered"] == "0" for r in rows), latched)

    def test_usage(self):
        self.fails(2, "--seeds", "simulate", *SVC, "--load", "60",
                   "--seeds", "0")
        self.fails(2, "--seeds", "simulate", *SVC, "--load", "60",
                   "--seeds", "3", "--engine", "fluid")
        self.fails(2, "--plot", "simulate", *SVC, "--load", "60",
                   "--seeds", "3", "--plot", "x.svg")


if __name__ == "__main__":
    clitest.main()
