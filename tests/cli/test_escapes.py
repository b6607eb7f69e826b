#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable escapes: each escape's tipping and recovery loads against
`metastable solve` on the equivalently modified service (a queue limit, a
retry budget), the damped service against a dense scan of its lambda(x)
written out here, and the costs against the formulas of doc/design.md
§1.11 evaluated here (M/M/c/K blocking by a sum over the states); the
stall column against `metastable tolerance` and `simulate` runs with and
without the jittered backoff."""
import math
import os
import tempfile

import clitest
from clitest import SPEC, CliTest

CHECKOUT = ("--spec", SPEC, "--service", "checkout")


def erlang_c(c, a):
    b = 1.0
    for n in range(1, c + 1):
        b = a * b / (n + a * b)
    return c * b / (c - a * (1 - b))


def wait_tail(c, mu, x, T):
    if x >= c * mu:
        return 1.0
    return erlang_c(c, x / mu) * math.exp(-(c * mu - x) * T)


def amp(p, r):
    return sum(p ** i for i in range(r + 1))


def mmck_block(c, K, a):
    """P_(c+K) of M/M/c/K by the sum over its states (Gross and Harris,
    ch. 2)."""
    w = [1.0]
    for n in range(1, c + K + 1):
        w.append(w[-1] * a / min(n, c))
    return w[-1] / sum(w)


def damp_fold(c, mu, T, r, base=0.0):
    """Tipping and recovery loads of lambda(x) = x / A(p(x) / 2): the
    largest lambda on a dense grid below the first fall, then the smallest
    after it, each refined by a finer grid around the best point."""
    cmu = c * mu

    def lam(x):
        p = 1 - (1 - base) * (1 - wait_tail(c, mu, x, T))
        return x / amp(p / 2, r)

    def best(lo, hi, sign, n=2000, rounds=4):
        for _ in range(rounds):
            xs = [lo + (hi - lo) * i / n for i in range(n + 1)]
            i = max(range(n + 1), key=lambda i: sign * lam(xs[i]))
            lo, hi = xs[max(i - 1, 0)], xs[min(i + 1, n)]
        return lam(0.5 * (lo + hi))

    xs = [cmu * i / 20000 for i in range(1, 20001)]
    ys = [lam(x) for x in xs]
    i = next(i for i in range(1, len(ys) - 1) if ys[i] > ys[i + 1])
    tip = best(xs[i - 1], xs[i + 1], 1)
    rec = min(ys[i:] + [lam(cmu)])
    return tip, rec


class Escapes(CliTest):
    def escapes(self, *args):
        j = self.ok("escapes", *args, "--format", "json").json()
        return {e["escape"]: e for e in j["escapes"]}, j

    def solve(self, *args, load=1):
        return self.ok("solve", *args, "--load", str(load),
                       "--format", "json").json()

    def test_against_solve(self):
        # checkout: c mu = 100/s; bound 0.1 s -> K = 10, discard K = c mu T
        # = 20; budget 10 %
        e, j = self.escapes(*CHECKOUT, "--latency-objective", "100ms")
        self.assertEqual(e["bound"]["queue_limit"], 10)
        self.assertEqual(e["discard"]["queue_limit"], 20)
        for name, extra in (("none", ()), ("randomize", ()),
                            ("bound", ("--queue-limit", "10")),
                            ("discard", ("--queue-limit", "20")),
                            ("budget", ("--retry-budget", "0.1"))):
            s = self.solve(*CHECKOUT, *extra)
            self.assertEqual(e[name]["tipping_load"], s["tipping_load"], name)
            self.assertEqual(e[name]["recovery_load"], s["recovery_load"],
                             name)
            self.assertAlmostEqual(
                e[name]["band_width"], s["tipping_load"] - s["recovery_load"],
                delta=1e-12 * s["tipping_load"])
        # the budget raises the recovery load, keeps the tipping load
        self.assertEqual(e["budget"]["tipping_load"],
                         e["none"]["tipping_load"])
        self.assertGreater(e["budget"]["recovery_load"],
                           e["none"]["recovery_load"])

    def test_damp_against_scan(self):
        e, _ = self.escapes(*CHECKOUT)
        tip, rec = damp_fold(10, 10.0, 0.2, 3)
        self.assertAlmostEqual(e["damp"]["tipping_load"], tip,
                               delta=1e-7 * tip)
        self.assertAlmostEqual(e["damp"]["recovery_load"], rec,
                               delta=1e-9 * rec)
        # at c mu every attempt fails: c mu / A(1/2) = 100 / 1.875
        self.assertAlmostEqual(e["damp"]["recovery_load"], 100 / 1.875,
                               delta=1e-9)

    def test_damp_with_base_failure(self):
        args = ("--servers", "30", "--service-time", "100ms", "--timeout",
                "1s", "--timeout-covers", "wait", "--retries", "3", "--base-failure", "0.02")
        e, _ = self.escapes(*args)
        tip, rec = damp_fold(30, 10.0, 1.0, 3, base=0.02)
        self.assertAlmostEqual(e["damp"]["tipping_load"], tip,
                               delta=1e-7 * tip)
        self.assertAlmostEqual(e["damp"]["recovery_load"], rec,
                               delta=1e-9 * rec)

    def test_rejected_share(self):
        # the bound's P_block at the healthy equilibrium of the normal load
        e, j = self.escapes(*CHECKOUT, "--latency-objective", "100ms",
                            "--load", "50")
        s = self.solve(*CHECKOUT, "--queue-limit", "10", load=50)
        want = mmck_block(10, 10, s["effective_load"] / 10.0)
        self.assertAlmostEqual(e["bound"]["rejected_share"], want,
                               delta=1e-9 * want)
        s = self.solve(*CHECKOUT, "--queue-limit", "20", load=50)
        want = mmck_block(10, 20, s["effective_load"] / 10.0)
        self.assertAlmostEqual(e["discard"]["rejected_share"], want,
                               delta=1e-9 * want)
        for name in ("none", "budget", "randomize", "damp"):
            self.assertEqual(e[name]["rejected_share"], 0, name)

    def test_default_load_is_half_tipping(self):
        _, j = self.escapes(*CHECKOUT)
        s = self.solve(*CHECKOUT)
        self.assertEqual(j["normal_load"], 0.5 * s["tipping_load"])
        self.assertEqual(j["latency_objective"], 0.2)

    def test_denied_retries(self):
        # base 15 %, 3 retries: A = 1.174125 > 1/0.9, the budget's cap: it
        # denies 1 - (1/0.9 - 1) / (A - 1); damp sends A(p/2) - 1
        args = ("--servers", "30", "--service-time", "100ms", "--timeout",
                "1s", "--timeout-covers", "wait", "--retries", "3", "--base-failure", "0.15")
        e, _ = self.escapes(*args)
        a = amp(0.15, 3)
        self.assertAlmostEqual(e["budget"]["denied_retry_share"],
                               1 - (1 / 0.9 - 1) / (a - 1), places=12)
        self.assertAlmostEqual(e["damp"]["denied_retry_share"],
                               1 - (amp(0.075, 3) - 1) / (a - 1), places=12)
        # base 0: the budget's cap never binds; damp halves the first retry
        e, _ = self.escapes(*CHECKOUT)
        self.assertEqual(e["budget"]["denied_retry_share"], 0)
        self.assertAlmostEqual(e["damp"]["denied_retry_share"], 0.5,
                               places=8)

    def test_randomize_latency(self):
        # full jitter over T: T/2 per retry, A - 1 retries per request
        e, j = self.escapes(*CHECKOUT, "--load", "80")
        s = self.solve(*CHECKOUT, load=80)
        want = (s["amplification"] - 1) * 0.1
        self.assertAlmostEqual(e["randomize"]["added_latency"], want,
                               delta=1e-9 * want)
        self.assertGreater(want, 1e-4)

    def sim_latches(self, load, hold, *extra):
        """An independent fluid run of checkout: a full stall of `hold` s
        from 3 s, 300 s after it; True when its last window is collapsed."""
        j = self.ok("simulate", *CHECKOUT, "--load", repr(load), "--stall",
                    "3,%r,0" % hold, "--duration", repr(3 + hold + 300),
                    *extra, "--format", "json").json()
        # latched as the tolerance decides it: the model's collapsed
        # basin at the end, not the storm flag, which also stays up while
        # a queue drains in the healthy basin (model/tolerance.c)
        return j["summary"]["final_state"] in ("metastable", "overloaded")

    def test_stall_tolerance_column(self):
        load = 41.6165
        e, _ = self.escapes(*CHECKOUT, "--load", repr(load))
        # the service as given: what `metastable tolerance` finds with the
        # fluid engine, which escapes runs (auto picks the DES here)
        t = self.ok("tolerance", *CHECKOUT, "--load", repr(load),
                    "--engine", "fluid", "--format", "json").json()
        self.assertEqual(t["verdict"], "bounded")
        self.assertEqual(e["none"]["stall_tolerance"], t["tolerance"])
        self.assertEqual(e["none"]["stall_tolerance_kind"], "bounded")
        # an escape whose recovery load is above the normal load survives
        # any stall: no collapsed equilibrium to latch into
        for name in ("bound", "budget", "discard"):
            self.assertGreater(e[name]["recovery_load"], load)
            self.assertIsNone(e[name]["stall_tolerance"])
            self.assertEqual(e[name]["stall_tolerance_kind"], "unbounded")
        # damp: the fluid engine does not model it
        self.assertIsNone(e["damp"]["stall_tolerance"])
        self.assertIsNone(e["damp"]["stall_tolerance_kind"])
        # randomize: the equilibria stay, the stall tolerance moves; checked
        # by simulate runs with the same full-jitter backoff over T
        r = e["randomize"]["stall_tolerance"]
        self.assertGreater(r, 1.1 * t["latch"])
        jitter = ("--backoff", "full-jitter,0.2,0.2,1")
        self.assertTrue(self.sim_latches(load, t["latch"]))
        self.assertFalse(self.sim_latches(load, t["latch"], *jitter))
        self.assertFalse(self.sim_latches(load, r, *jitter))
        self.assertTrue(self.sim_latches(load, 1.1 * r, *jitter))
        out = self.ok("escapes", *CHECKOUT, "--load", repr(load)).out
        self.assertIn("any", out)
        self.assertIn("the fluid engine does not damp clients", out)

    def test_plot(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "escapes.svg")
            self.ok("escapes", *CHECKOUT, "--plot", path)
            svg = open(path).read()
            for name in ("none", "bound", "budget", "randomize", "discard",
                         "damp", "normal load"):
                self.assertIn(name, svg)
            # the escapes name the x axis's ticks, as SVG texts alone
            for name in ("none", "bound", "budget", "randomize", "discard",
                         "damp"):
                self.assertRegex(svg, r">\s*%s\s*</text>" % name)
            # each legend entry gives the band and the stall tolerance
            e, _ = self.escapes(*CHECKOUT)
            self.assertIn("none: %.4g to %.4g req/s, stall %.5g s" % (
                e["none"]["recovery_load"], e["none"]["tipping_load"],
                e["none"]["stall_tolerance"]), svg)

    def test_unmodelled_row(self):
        # Envoy's budget needs the unbounded queue's hold time: the bound
        # and discard rows are n/a with the model's reason, the rest stand
        args = ("--servers", "30", "--service-time", "100ms", "--timeout",
                "1s", "--timeout-covers", "wait", "--retries", "3", "--envoy-retry-budget", "default")
        e, _ = self.escapes(*args)
        for name in ("bound", "discard"):
            self.assertIsNone(e[name]["tipping_load"])
            self.assertIn("not modelled", e[name]["note"])
        s = self.solve(*args)
        self.assertEqual(e["none"]["tipping_load"], s["tipping_load"])
        self.assertIsNone(e["none"]["note"])

    def test_usage(self):
        self.fails(2, "erlang model", "escapes", "--spec", SPEC,
                   "--service", "unit-capacity")
        self.fails(2, "--plot", "escapes", *CHECKOUT, "--plot", "x.pdf")
        self.fails(2, "--latency-objective", "escapes", *CHECKOUT,
                   "--latency-objective", "0")


if __name__ == "__main__":
    clitest.main()
