#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A state that changes on evidence (doc/design.md §1.4): the state
changes counted over the storm lab's real run, replayed as
doc/storm-lab.md replays it, and over an hour of the discrete-event
simulation of a small pool held at each boundary.  The rule is checked
window by window against the Poisson bound of doc/design.md §1.7,
computed here."""
import csv
import io
import math
import os
import tempfile
import unittest

from clitest import EXAMPLES, CliTest

TOP = os.path.dirname(os.path.dirname(EXAMPLES))
Z = 3.0  # MS_EVIDENCE_Z
SIDE = {"stable": 0, "vulnerable": 1, "metastable": 1, "overloaded": 2}


def beyond(obs, ref, tau):
    """ms_beyond_noise: obs exceeds ref beyond the noise of a count of
    ref over tau seconds (doc/design.md §1.7)."""
    return obs > ref + Z * math.sqrt(ref / tau) + Z * Z / tau


def side_after(before, load, rec, tip, tau):
    """The side of the boundaries (0 below the recovery load, 1 the band,
    2 above the tipping load) after side `before` at offered load `load`,
    as doc/design.md §1.4 states the rule."""
    if before != 2 and beyond(load, tip, tau):
        return 2
    if before != 0 and beyond(rec, load, tau):
        return 0
    if before == 0 and beyond(load, rec, tau):
        return 1
    if before == 2 and beyond(tip, load, tau):
        return 1
    return before


def plain_side(load, rec, tip):
    """The side without hysteresis, as the state was before."""
    return 2 if load > tip else 0 if load < rec else 1


def changes(seq):
    return sum(1 for a, b in zip(seq, seq[1:]) if a != b)


class StormLab(CliTest):
    """doc/storm-lab.csv, a real run of the storm lab, its HAProxy and
    php-fpm columns renamed to the inputs of lab/service.yaml, replayed."""

    @classmethod
    def setUpClass(cls):
        names = {"epoch": "time", "offered": "offered_rate",
                 "attempts": "arrival_rate", "retries": "retry_rate",
                 "failed_attempts": "error_rate", "pool_size": "pool_size",
                 "fpm_queue": "queue_length"}
        with open(os.path.join(TOP, "doc", "storm-lab.csv")) as f:
            cls.lab = list(csv.DictReader(f))
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "lab.csv")
            with open(p, "w") as f:
                f.write(",".join(names.values()) + "\n")
                for r in cls.lab:
                    f.write(",".join(r[k] for k in names) + "\n")
            out = CliTest().ok("replay", "--spec",
                               os.path.join(TOP, "lab", "service.yaml"),
                               "--service", "storm_lab", p).out
        cls.rows = list(csv.DictReader(io.StringIO(out)))

    def phase_start(self, name):
        return next(i for i, r in enumerate(self.lab) if r["phase"] == name)

    def recovered(self):
        """The first row from which goodput is at least 90 % of the
        offered load for 5 s (lab/report.sh, RECOVERED and RECOVERED_FOR)."""
        k = 0
        for i in range(self.phase_start("storm"), len(self.lab)):
            r = self.lab[i]
            if r["offered"] and float(r["offered"]) > 0 and \
                    float(r["goodput"] or 0) >= 0.9 * float(r["offered"]):
                k += 1
                if k == 5:
                    return i - 4
            else:
                k = 0
        self.fail("the lab never recovered")

    def test_one_change_in_one_out(self):
        rows = [r for r in self.rows if r["state"]]
        states = [r["state"] for r in rows]
        storms = [r["storm"] for r in rows]
        at = [i for i, r in enumerate(self.rows) if r["state"]]
        moves = [(at[k], states[k - 1], states[k])
                 for k in range(1, len(states)) if states[k] != states[k - 1]]
        trigger, back = self.phase_start("trigger"), self.recovered()
        # into the storm within 5 s of the trigger (the lab's FEW), out of
        # it within 5 s of goodput's return; nothing else in the run: not
        # the 209 req/s second at the trigger, not the drain at 64 req/s
        # (within the noise of the recovery load, 66.7 req/s, counted over
        # a second), not the return to 150 req/s
        self.assertEqual(len(moves), 2, moves)
        (t_in, a, b), (t_out, c, d) = moves
        self.assertEqual((a, b), ("vulnerable", "metastable"))
        self.assertLessEqual(t_in - trigger, 5)
        self.assertEqual(c, "metastable")
        self.assertIn(d, ("vulnerable", "stable"))
        self.assertLessEqual(abs(t_out - back), 5)
        # the storm flag: up once, down once, after goodput returned
        self.assertEqual(changes(storms), 2)
        up = at[storms.index("1")]
        down = at[len(storms) - storms[::-1].index("1")]
        self.assertEqual(up, t_in)
        self.assertLessEqual(0, down - back)
        self.assertLessEqual(down - back, 5)
        # shed_load: positive from the storm's start while the load is
        # above the recovery load, then 0; it does not come back
        shed = [float(r["shed_load"]) > 0 for r in rows]
        self.assertEqual(changes(shed), 2)
        # the state held where the offered load was within the noise of a
        # boundary, and moved where it was beyond it
        self.assertRule(self.rows)

    def assertRule(self, rows):
        """Each row's side of the boundaries from the previous row's and
        its offered load, by the rule of doc/design.md §1.4 (the interval:
        the time between rows)."""
        prev = None
        for r in rows:
            if not r["state"]:
                continue
            side = SIDE[r["state"]]
            if prev is not None:
                tau = float(r["unix_time"]) - float(prev["unix_time"])
                want = side_after(SIDE[prev["state"]],
                                  float(r["offered_load"]),
                                  float(r["recovery_load"]),
                                  float(r["tipping_load"]), tau)
                self.assertEqual(side, want, (prev, r))
            prev = r

    def disagreement(self, flag):
        """Seconds the storm flag disagrees with the lab's truth (users
        failing: goodput under 90 % of the offered load), as lab/report.sh
        counts them."""
        n = bad = 0
        for lab, f in zip(self.lab, flag):
            if lab["phase"] == "end" or f == "" or not lab["offered"] or \
                    float(lab["offered"]) <= 0:
                continue
            truth = float(lab["goodput"] or 0) < 0.9 * float(lab["offered"])
            n += 1
            bad += (f == "1") != truth
        return bad, n

    def test_storm_flag_no_worse(self):
        # the replay's flag against the flag the plugin recorded in the
        # run, before the state changed on evidence (ms_storm)
        after, n = self.disagreement([r["storm"] for r in self.rows])
        before, m = self.disagreement([r["ms_storm"] for r in self.lab])
        self.assertGreater(n, 200)
        self.assertLessEqual(after / n, before / m)
        self.assertLessEqual(after, 0.05 * n)  # lab/report.sh, DISAGREE


class Simulated(CliTest):
    """An hour of the discrete-event simulation, 1 s windows, of the fresh
    user's gunicorn: 8 workers of 100 ms behind a 500 ms timeout and one
    retry (recovery 40 req/s, tipping 71.43 req/s), held at the recovery
    load, in a storm near the tipping load, and in a storm just above the
    recovery load.  Before, the state was the load's side bare: it changed
    with the noise of every count; now only beyond it."""

    SVC = ("--engine", "des", "--servers", "8", "--service-time", "0.1",
           "--timeout", "0.5", "--timeout-covers", "wait", "--retries", "1", "--duration", "3600",
           "--sample-interval", "1", "--format", "csv")

    def run_at(self, load, *trigger):
        out = self.ok("simulate", *self.SVC, "--load", str(load),
                      *trigger).out
        return list(csv.DictReader(io.StringIO(out)))

    def check(self, load, storm_changes, *trigger, bare=1000):
        rows = self.run_at(load, *trigger)
        self.assertEqual(len(rows), 3600)
        rec = float(rows[0]["recovery_load"])
        tip = float(rows[0]["tipping_load"])
        self.assertAlmostEqual(rec, 40, delta=1e-9)
        self.assertAlmostEqual(tip, 71.43, delta=0.01)
        plain = [plain_side(float(r["offered"]), rec, tip) for r in rows]
        states = [r["state"] for r in rows]
        # before: the bare side flips with the noise, about every other
        # window; after: at most one change in the hour
        self.assertGreater(changes(plain), bare)
        self.assertLessEqual(changes(states), 1)
        self.assertEqual(changes([r["storm"] for r in rows]), storm_changes)
        # each window's side by the rule, from the window before
        for prev, r in zip(rows, rows[1:]):
            want = side_after(SIDE[prev["state"]], float(r["offered"]), rec,
                              tip, 1.0)
            self.assertEqual(SIDE[r["state"]], want, (prev, r))
        return rows

    def test_at_the_recovery_load(self):
        self.check(40, 0)

    def test_storm_near_the_tipping_load(self):
        self.check(68, 1)

    def test_storm_near_the_recovery_load(self):
        # the fresh user's symptom: a storm (a spike to 85 req/s for 10 s
        # latches it) at 45 req/s, just above the recovery load; the state
        # flapped among metastable, stable and vulnerable, both recovering,
        # while the storm flag held (1,330 changes in the hour before).
        # Now every window of the storm is metastable.
        rows = self.check(45, 1, "--spike", "60,10,40", bare=500)
        storm = [r["state"] for r in rows if r["storm"] == "1"]
        self.assertGreater(len(storm), 3000)
        self.assertEqual(set(storm), {"metastable"})


if __name__ == "__main__":
    unittest.main()
