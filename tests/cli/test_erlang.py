#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable erlang: the shared Erlang fixture (60-digit references,
tests/data/erlang_reference.csv) through `erlang --format json`, at the
model core's accuracy: relative error <= 1e-12 for c <= 1000 and <= 1e-10
beyond; where a value underflows a double, the relative error of its log."""
import csv
import math
import os
import re
import sys

import clitest
from clitest import FIXTURES, CliTest

DBL_MIN = sys.float_info.min


def rows():
    with open(os.path.join(FIXTURES, "erlang_reference.csv")) as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    return list(csv.DictReader(lines))


def error(got, got_ln, ref_text, ref_ln):
    """Relative error of the value, or of its log where it underflows."""
    ref = float(ref_text)
    if ref >= DBL_MIN:
        return abs(got - ref) / ref
    return abs(got_ln - ref_ln) / abs(ref_ln)


class Fixture(CliTest):
    def test_fixture(self):
        worst = {}
        n = 0
        for row in rows():
            c = int(row["servers"])
            j = self.ok("erlang", "--servers", str(c), "--offered",
                        row["offered_erlangs"], "--format", "json").json()
            self.assertEqual(j["servers"], c)
            self.assertEqual(j["offered"], float(row["offered_erlangs"]))
            # doc/design.md §5: 2e-15 for c <= 1000, 1e-14 beyond
            tol = 2e-15 if c <= 1000 else 1e-14
            for key in ("erlang_b", "erlang_c"):
                ref_ln = float(row["ln_" + key])
                e = error(j[key], j["ln_" + key], row[key], ref_ln)
                self.assertLessEqual(e, tol, "%s c=%d a=%s: %r vs %s" % (
                    key, c, row["offered_erlangs"], j[key], row[key]))
                # the log itself, always: absolute error where the value is
                # normal (that is its relative error, but the log is a
                # double too, and so is the fixture's 17-digit one: two
                # ulps of it more), relative beyond
                d = abs(j["ln_" + key] - ref_ln)
                self.assertLessEqual(d if float(row[key]) >= DBL_MIN
                                     else d / abs(ref_ln),
                                     tol + 2 * math.ulp(ref_ln))
                band = "c<=1000" if c <= 1000 else "c>1000"
                worst[band] = max(worst.get(band, 0), e)
            n += 1
        self.assertGreater(n, 190)
        print("\n%d fixture rows; worst relative error: %s" % (
            n, ", ".join("%s %.2g" % kv for kv in sorted(worst.items()))),
            file=sys.stderr)

    def test_overload(self):
        # Erlang B at A >= N against the 50-digit grid of
        # tools/gen_erlang_dense.py --overload: B has a value at any load,
        # C is 1 there (no steady state); B(10, 20) = 0.53796...
        with open(os.path.join(FIXTURES, "erlang_overload.csv")) as f:
            grid = list(csv.DictReader(
                l for l in f if l.strip() and not l.startswith("#")))
        self.assertGreater(len(grid), 400)
        worst = 0
        for row in grid[::3]:
            c = int(row["servers"])
            j = self.ok("erlang", "--servers", str(c), "--offered",
                        row["offered_erlangs"], "--format", "json").json()
            ref_ln = float(row["ln_erlang_b"])
            e = abs(math.expm1(j["ln_erlang_b"] - ref_ln))
            e = max(e, abs(j["erlang_b"] / math.exp(ref_ln) - 1))
            self.assertLessEqual(e, 2e-15 if c <= 1000 else 1e-14, row)
            self.assertEqual((j["erlang_c"], j["ln_erlang_c"]), (1, 0))
            self.assertIs(j["steady_state"], False)
            worst = max(worst, e)
        print("\noverload: worst relative error of B %.2g" % worst,
              file=sys.stderr)
        j = self.ok("erlang", "--servers", "10", "--offered", "20",
                    "--service-rate", "2", "--timeout", "1",
                    "--format", "json").json()
        self.assertAlmostEqual(j["erlang_b"], 0.5379631686320729, delta=1e-16)
        self.assertEqual((j["wait_tail"], j["ln_wait_tail"]), (1, 0))
        out = self.ok("erlang", "--servers", "10", "--offered", "10").out
        self.assertIn("erlang_c      1 (offered >= servers: the queue has "
                      "no steady state", out)
        j = self.ok("erlang", "--servers", "10", "--offered", "9.99",
                    "--format", "json").json()
        self.assertIs(j["steady_state"], True)
        self.assertLess(j["erlang_c"], 1)
        # what stays refused: no traffic, or none that is finite
        for bad in ("0", "-1", "inf", "nan"):
            self.fails(2, "--offered: '%s'" % bad, "erlang", "--servers",
                       "10", "--offered", bad)

    def test_wait_tail(self):
        # P(W > T) = C(c, a) exp(-(c mu - x) T): ln_wait_tail against the
        # fixture's ln C for a few rows, with mu = 2/s and T = 0.5 s
        for row in rows()[::17]:
            c, a = int(row["servers"]), float(row["offered_erlangs"])
            j = self.ok("erlang", "--servers", str(c), "--offered",
                        row["offered_erlangs"], "--service-rate", "2",
                        "--timeout", "0.5", "--format", "json").json()
            want = float(row["ln_erlang_c"]) - (c * 2 - a * 2) * 0.5
            self.assertLessEqual(abs(j["ln_wait_tail"] - want),
                                 1e-10 * max(1, abs(want)), row)
            self.assertEqual(j["arrival_rate"], a * 2)
            self.assertEqual(j["wait_tail"], math.exp(j["ln_wait_tail"]))

    def test_response_tail(self):
        # P(W + S > T) = e^(-mu T) + C mu (e^(-g T) - e^(-mu T)) / (mu - g),
        # g = c mu - x (Kleinrock 1975, sec. 3.4), from the fixture's C,
        # mu = 2/s, T = 0.5 s; the rows below saturation, away from g = mu
        for row in rows()[::17]:
            c, a = int(row["servers"]), float(row["offered_erlangs"])
            g = 2 * (c - a)
            if a >= c or abs(g - 2) < 0.5:
                continue
            j = self.ok("erlang", "--servers", str(c), "--offered",
                        row["offered_erlangs"], "--service-rate", "2",
                        "--timeout", "0.5", "--format", "json").json()
            C = math.exp(float(row["ln_erlang_c"]))
            want = math.exp(-1.0) + C * 2 * (math.exp(-g * 0.5) -
                                              math.exp(-1.0)) / (2 - g)
            self.assertLessEqual(abs(j["response_tail"] - want),
                                 1e-12 * want, row)

    def test_full_precision(self):
        r = self.ok("erlang", "--servers", "30", "--offered", "25",
                    "--format", "json")
        # every number is written so that it reads back as the same double:
        # at most 17 significant digits, and no fewer than needed
        for num in re.findall(r": (-?[0-9.e+-]+)", r.out):
            digits = re.sub(r"e.*", "", num).replace("-", "").replace(".", "")
            self.assertLessEqual(len(digits.lstrip("0")), 17, num)
        j = r.json()
        self.assertAlmostEqual(j["erlang_c"], 0.24989316688690646,
                               delta=1e-16)
        # B(30, 25) = 0.0526031722281406172806... (the recursion
        # 1/B_k = 1 + k/a / B_(k-1) at 40 digits): the nearest double
        self.assertEqual(repr(j["erlang_b"]), "0.052603172228140614")

    def test_underflow_text(self):
        out = self.ok("erlang", "--servers", "100000", "--offered",
                      "1000").out
        m = re.search(r"^erlang_b\s+(\d\.\d+)e(-\d+) \(below the smallest "
                      r"double; from its log\)$", out, re.M)
        self.assertIsNotNone(m, out)
        ln_b = float(re.search(r"^ln_erlang_b\s+(\S+)$", out, re.M).group(1))
        self.assertAlmostEqual(math.log10(float(m.group(1))) +
                               int(m.group(2)), ln_b / math.log(10),
                               delta=1e-6)


def ln_error(got_ln, ref_ln):
    """Relative error of a value from its log, or of the log where the
    value underflows a double (doc/design.md §5)."""
    if ref_ln >= math.log(DBL_MIN):
        return abs(math.expm1(got_ln - ref_ln))
    return abs(got_ln - ref_ln) / abs(ref_ln)


def mmck_rows():
    with open(os.path.join(FIXTURES, "mmck_reference.csv")) as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    return list(csv.DictReader(lines))


class QueueLimit(CliTest):
    """--queue-limit K: the M/M/c/K queue against the 50-digit sums over
    states of tools/gen_mmck.py (every 23rd row of the 4,346)."""

    def test_reference(self):
        worst = 0.0
        for row in mmck_rows()[::23]:
            c, K = int(row["servers"]), int(row["queue_limit"])
            mu, x = float(row["service_rate"]), float(row["arrival_rate"])
            j = self.ok("erlang", "--servers", str(c), "--offered",
                        repr(x / mu), "--queue-limit", str(K),
                        "--service-rate", row["service_rate"], "--timeout",
                        row["timeout"], "--format", "json").json()
            self.assertEqual(j["queue_limit"], K)
            tol = 1e-12 if c + K <= 10000 else 1e-10
            ref = float(row["ln_block"])
            e = ln_error(j["ln_blocking_probability"], ref)
            self.assertLessEqual(e, tol, row)
            self.assertEqual(j["blocking_probability"],
                             math.exp(j["ln_blocking_probability"]))
            if K == 0:
                self.assertEqual(j["wait_tail"], 0)
                self.assertNotIn("ln_wait_tail", j)
                continue
            e2 = ln_error(j["ln_wait_tail"], float(row["ln_wait_tail"]))
            self.assertLessEqual(e2, tol, row)
            worst = max(worst, e, e2)
        print("\nM/M/c/K rows through the command: worst relative error "
              "%.2g" % worst, file=sys.stderr)

    def test_loss_system(self):
        # K = 0 is Erlang B, here against the shared 60-digit fixture
        for row in rows()[::13]:
            j = self.ok("erlang", "--servers", row["servers"], "--offered",
                        row["offered_erlangs"], "--queue-limit", "0",
                        "--format", "json").json()
            e = ln_error(j["ln_blocking_probability"],
                         float(row["ln_erlang_b"]))
            self.assertLessEqual(e, 1e-10, row)

    def test_text_and_errors(self):
        out = self.ok("erlang", "--servers", "10", "--offered", "12",
                      "--queue-limit", "20").out
        self.assertIn("queue limit 20 (M/M/c/K)", out)
        self.assertRegex(out, r"(?m)^blocking_probability \d")
        # beyond the servers the unbounded queue has no steady state: Erlang
        # B is reported, C is 1 by convention
        out = self.ok("erlang", "--servers", "10", "--offered", "12").out
        self.assertIn("the queue has no steady state", out)
        self.fails(2, "queue-limit", "erlang", "--servers", "10",
                   "--offered", "12", "--queue-limit", "-1")


class QueueLimitModel(CliTest):
    """The model options --queue-limit, --latency-objective and
    --retry-rejections in solve."""

    BASE = ("solve", "--servers", "30", "--service-time", "100ms",
            "--timeout", "1s", "--retries", "3", "--load", "250",
            "--format", "json")

    def test_options(self):
        k = self.ok(*self.BASE, "--queue-limit", "300").json()
        # 30 servers at 10/s for 1 s: a queue of 300
        lat = self.ok(*self.BASE, "--latency-objective", "1s").json()
        self.assertEqual(k, lat)
        unbounded = self.ok(*self.BASE).json()
        self.assertNotEqual(k["recovery_load"], unbounded["recovery_load"])
        fin = self.ok(*self.BASE, "--queue-limit", "300",
                      "--no-retry-rejections").json()
        fin2 = self.ok(*self.BASE, "--queue-limit", "300",
                       "--retry-rejections", "false").json()
        self.assertEqual(fin, fin2)
        # a rejection that ends its request raises the recovery load
        self.assertGreater(fin["recovery_load"], k["recovery_load"])
        same = self.ok(*self.BASE, "--queue-limit", "300",
                       "--retry-rejections", "true").json()
        self.assertEqual(same, k)

    def test_errors(self):
        self.fails(2, "erlang model", "solve", "--capacity", "100",
                   "--retries", "1", "--queue-limit", "3", "--load", "1")
        self.fails(2, "retry-rejections", *self.BASE,
                   "--retry-rejections", "maybe")
        self.fails(2, "queue limit", *self.BASE, "--latency-objective",
                   "1e9s")


class TinyTraffic(CliTest):
    def test_tiny_offered_traffic(self):
        # ln B = c ln a - ln c! to double precision at a = 3e-308 (the sum
        # 1 + a + ... of B's denominator is 1); printed as -nane-inf once
        j = self.ok("erlang", "--servers", "10", "--offered", "3e-308",
                    "--format", "json").json()
        want = 10 * math.log(3e-308) - math.lgamma(11)
        for k in ("ln_erlang_b", "ln_erlang_c"):
            self.assertIsNotNone(j[k])
            self.assertLess(abs(j[k] - want), 1e-14 * abs(want))
        out = self.ok("erlang", "--servers", "10", "--offered",
                      "3e-308").out
        self.assertNotIn("nan", out)
        self.assertIn("e-3082", out)


if __name__ == "__main__":
    clitest.main()
