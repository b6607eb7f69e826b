#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The model residual and the misfit WARNING (doc/design.md §1.8, "The
residual") against the discrete-event simulation: the M/M/c queue with
clients that time out and retry, run for 50 minutes at 1-second
intervals, then replayed through the plugin's per-interval logic
(`metastable replay`).

- Near the knee, on a service whose file is exactly the simulated one,
  the residual stays within noise and no misfit WARNING goes out.  (The
  residual of one interval, the failures of its second against p at its
  own noisy attempt rate, had a standard deviation of 18 to 21 here and
  gave 4 to 7 false WARNINGs in 50 minutes.)
- Where 2 % of the attempts fail whatever the load (a base failure the
  file does not know), at about 40 attempts a second: one failure a
  second is no evidence in one interval (its residual about 1.6, the old
  rule never fires); the window's finds it within two minutes.
- Where the simulated service times vary three times as much as the
  file's exponential ones (cv 3), attempts fail in bursts the model says
  cannot happen: the WARNING goes out."""
import csv
import io
import math
import os
import statistics
import tempfile

import clitest
from clitest import CliTest

# 10 servers at 50 ms, timeout 1 s, 2 retries: the storm lab's service
# (tipping load 193.8 req/s, saturation 200 attempts/s)
KNEE = {"servers": "10", "service_time": "50ms", "timeout": "1s",
        "timeout_covers": "wait", "retries": "2"}
# 8 servers at 100 ms, timeout 500 ms, 1 retry (tipping 71.4 req/s)
HEAVY = {"servers": "8", "service_time": "100ms", "timeout": "500ms",
         "timeout_covers": "wait", "retries": "1"}
INPUTS = ("offered_rate", "arrival_rate", "retry_rate", "error_rate")


def anscombe(q, p, n):
    """The signed likelihood-ratio residual of q failed over n attempts
    against p, with half a count added (F. J. Anscombe, Biometrika 43,
    1956)."""
    qq, pp = (q * n + 0.5) / (n + 1), (p * n + 0.5) / (n + 1)
    d = qq * math.log(qq / pp) + (1 - qq) * math.log((1 - qq) / (1 - pp))
    r = math.sqrt(max(2 * (n + 1) * d, 0))
    return r if qq > pp else -r


def model_args(params):
    out = []
    for k, v in params.items():
        out += ["--" + k.replace("_", "-"), v]
    return out


class Misfit(CliTest):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def replay(self, params, trace):
        path = os.path.join(self.dir.name, "s.yaml")
        with open(path, "w") as f:
            f.write("services:\n  - name: sim\n    model: erlang\n")
            for k, v in params.items():
                f.write("    %s: %s\n" % (k, v))
            f.write("    inputs:\n")
            for i in INPUTS:
                f.write("      %s: h/sim/gauge-%s\n" % (i, i))
        # (the simulation's other columns are read past, with a warning)
        r = clitest.run("replay", "--spec", path, "--service", "sim", "-",
                        "--format", "json", stdin=trace)
        self.assertEqual(r.code, 0, r)
        return r.json()

    def des(self, params, load, seed, *extra):
        return self.ok("simulate", *model_args(params), "--engine", "des",
                       "--load", str(load), "--duration", "3000", "--seed",
                       str(seed), "--format", "csv", *extra).out

    @staticmethod
    def misfits(rows):
        return [n["message"] for r in rows for n in r.get("notifications", [])
                if "does not fit" in n["message"]]

    def test_near_the_knee(self):
        for load in (185, 190):
            for seed in (3, 4):
                with self.subTest(load=load, seed=seed):
                    rows = self.replay(KNEE, self.des(KNEE, load, seed))
                    calm = [r["model_residual"] for r in rows
                            if "model_residual" in r and r["storm"] == 0]
                    self.assertGreater(len(calm), 2900)
                    sd = statistics.pstdev(calm)
                    worst = max(abs(z) for z in calm)
                    print("knee %d req/s seed %d: residual mean %+.2f sd %.2f "
                          "max |z| %.2f, %d misfit warnings"
                          % (load, seed, statistics.mean(calm), sd, worst,
                             len(self.misfits(rows))))
                    self.assertLess(worst, 3.5)
                    self.assertLess(sd, 1.0)
                    self.assertEqual(self.misfits(rows), [])

    def old_rule(self, rows):
        """The old misfit rule on one interval's residual: |r| > 4 in 5
        intervals in a row outside storms."""
        streak, fired = 0, False
        for r in rows:
            if r.get("storm") or "model_failure_ratio" not in r:
                continue
            one = anscombe(r.get("observed_failure", 0),
                           r["model_failure_ratio"], r["observed_attempts"])
            streak = streak + 1 if abs(one) > 4 else 0
            fired = fired or streak >= 5
        return fired

    def test_power_at_one_second(self):
        # 2 % of the attempts fail whatever the load (a base failure the
        # file does not know): about one failure a second at 40 attempts
        # a second, where the file's model predicts none
        trace = self.des(HEAVY, 40, 3, "--base-failure", "0.02")
        sim = list(csv.DictReader(io.StringIO(trace)))
        attempts = sum(float(r["attempts"]) for r in sim)
        failures = sum(float(r["failures"]) for r in sim)
        self.assertAlmostEqual(failures / attempts, 0.02, delta=0.003)
        rows = self.replay(HEAVY, trace)
        notes = [(i, m) for i, r in enumerate(rows)
                 for m in [n["message"] for n in r.get("notifications", [])]
                 if "does not fit" in m]
        z = [r["model_residual"] for r in rows if "model_residual" in r]
        one = [anscombe(r.get("observed_failure", 0), r["model_failure_ratio"],
                        r["observed_attempts"])
               for r in rows if "model_failure_ratio" in r]
        print("base failure 2 %% at 40 req/s, 1-s intervals: one interval's "
              "residual median %+.2f (the old rule fires: %s); the window's "
              "median %+.1f; first misfit warning at %s s: %s"
              % (statistics.median(one), self.old_rule(rows),
                 statistics.median(z), notes[0][0] + 1 if notes else "-",
                 notes[0][1] if notes else "-"))
        self.assertFalse(self.old_rule(rows))  # blind, one at a time
        self.assertGreater(statistics.median(z), 4)
        self.assertTrue(notes)
        self.assertLess(notes[0][0], 120)  # within two minutes
        self.assertIn("observed failures", notes[0][1])

    def test_heavy_tail(self):
        # service times three times as variable as the file's exponential
        # ones (cv 3): attempts fail in bursts where the model says none
        # can; the window finds it
        trace = self.des(HEAVY, 40, 3, "--service-time-cv", "3",
                         "--service-dist", "hyperexponential")
        rows = self.replay(HEAVY, trace)
        notes = [i for i, r in enumerate(rows)
                 for m in [n["message"] for n in r.get("notifications", [])]
                 if "does not fit" in m]
        z = [r["model_residual"] for r in rows if "model_residual" in r]
        print("cv 3 at 40 req/s: the window's max %+.1f; first misfit "
              "warning at %s s" % (max(z), notes[0] + 1 if notes else "-"))
        self.assertGreater(max(z), 10)
        self.assertTrue(notes)


if __name__ == "__main__":
    clitest.main()
