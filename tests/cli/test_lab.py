#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable lab: the exact lab (doc/design.md §1.6, §2).

The iterates and the bracket are checked with Python's exact fractions,
independently of GMP: the map is re-evaluated here on the printed ends."""
import re
from fractions import Fraction as F

import clitest
from clitest import CliTest

SEED = ("lab", "--load", "0.95", "--base-failure", "0.1", "--retries", "3")


def fmap(L, lam=F(19, 20), base=F(1, 10), r=3, C=F(1)):
    p = base + (1 - base) * max(F(0), (L - C) / L)
    return lam * sum(p ** i for i in range(r + 1))


def parse(out):
    rows = {}
    for m in re.finditer(r"^\s+(\d+)  (\S+)\s+(\d+)\s+(\d+)$", out, re.M):
        rows[int(m.group(1))] = (m.group(2), int(m.group(3)),
                                 int(m.group(4)))
    lo = F(re.search(r"^  lo = (\d+/\d+)$", out, re.M).group(1))
    hi = F(re.search(r"^  hi = (\d+/\d+)$", out, re.M).group(1))
    return rows, lo, hi


class Lab(CliTest):
    def test_iteration(self):
        out = self.ok(*SEED).out
        rows, _, _ = parse(out)
        # 0.95 -> 1.05545 -> 1.11356... -> 1.17384... -> 1.23538...
        self.assertEqual(rows[0][0], "0.95")
        self.assertEqual(rows[1][0], "1.05545")  # 21109/20000, exact
        for step, want in ((2, 1.11356), (3, 1.17384), (4, 1.23538)):
            text = rows[step][0]
            self.assertTrue(text.endswith("..."), text)
            self.assertAlmostEqual(float(text[:-3]), want, delta=5e-6)
        # denominators: 5, 13, 39, 119, 358 digits
        self.assertEqual([rows[s][2] for s in range(1, 6)],
                         [5, 13, 39, 119, 358])
        # the decimals are the exact iterates, truncated
        L = F(19, 20)
        for step in range(7):
            text = rows[step][0].rstrip(".")
            self.assertEqual(F(text), F(int(L * 10 ** 12), 10 ** 12)
                             if rows[step][0].endswith("...") else L)
            self.assertEqual(rows[step][2], len(str(L.denominator)))
            L = fmap(L)
        # "by the seventh iterate ... over three thousand digits": a stop line
        m = re.search(r"^\s+7  stopped: this iterate's denominator has (\d+) "
                      r"digits, past the limit of 3000$", out, re.M)
        self.assertIsNotNone(m, out)
        self.assertEqual(int(m.group(1)), len(str(L.denominator)))
        self.assertNotIn(8, rows)

    def test_enclosure(self):
        out = self.ok(*SEED).out
        _, lo, hi = parse(out)
        # a bracket of the root: F - L >= 0 at lo, <= 0 at hi, width 2^-60 lo
        self.assertLessEqual(lo, hi)
        self.assertGreaterEqual(fmap(lo), lo)
        self.assertLessEqual(fmap(hi), hi)
        self.assertLessEqual((hi - lo) * 2 ** 60, lo)
        self.assertAlmostEqual(float(lo), 1.72736, delta=5e-6)
        # the decimals printed are the fractions, and the agreement count
        # is the number of shared decimal places
        places = 0
        while int(lo * 10 ** (places + 1)) == int(hi * 10 ** (places + 1)):
            places += 1
        m = re.search(r"the ends agree to (\d+) decimal places: (\S+)\.\.\.",
                      out)
        self.assertEqual(int(m.group(1)), places)
        self.assertEqual(F(m.group(2)), F(int(lo * 10 ** places),
                                          10 ** places))
        # "47.9 % failure"
        self.assertIn("failure probability  0.479 (47.9 %)", out)
        self.assertIn("C / A(base) = 0.9000900090... req/s (1000/1111)", out)

    def test_exact_input(self):
        # 0.95 is read as 19/20, so both spellings give the same lab
        a = self.ok(*SEED).out
        b = self.ok("lab", "--load", "19/20", "--base-failure", "1/10",
                    "--retries", "3").out
        self.assertEqual(a, b)

    def test_coarse_bracket(self):
        # a wider bracket: the ends share fewer places (the seed's readout
        # printed 1.72736 twice)
        out = self.ok(*SEED, "--bits", "21").out
        _, lo, hi = parse(out)
        self.assertLessEqual((hi - lo) * 2 ** 21, lo)
        self.assertGreaterEqual(fmap(lo), lo)
        self.assertLessEqual(fmap(hi), hi)
        self.assertEqual(round(float(lo), 5), 1.72736)
        self.assertEqual(round(float(hi), 5), 1.72736)
        self.assertIn("agree to 4 decimal places: 1.7273...", out)

    def test_limits(self):
        out = self.ok(*SEED, "--iterations", "3").out
        self.assertIn("stopped after 3 iterates (--iterations)", out)
        out = self.ok(*SEED, "--digit-limit", "100").out
        self.assertRegex(out, r"\n\s+4  stopped: this iterate's denominator "
                              r"has 119 digits, past the limit of 100\n")

    def test_no_retries(self):
        # "turn the retries off and the load returns to 0.95"
        out = self.ok("lab", "--load", "0.95", "--base-failure", "0.1",
                      "--retries", "0").out
        self.assertIn("the ends are equal: the fixed point is exactly 0.95",
                      out)

    def test_beyond_doubles(self):
        # the fixed point is about 1.1e310: exact here, and shown as such
        # with a note, not as inf
        out = self.ok("lab", "--load", "1e290", "--base-failure", "0.1",
                      "--retries", "100", "--tiers", "10").out
        self.assertNotRegex(out, r"\b(inf|nan)\b")
        self.assertIn("effective load       1.10462e+310* req/s = "
                      "1.105e+312* % of capacity: a retry storm", out)
        self.assertIn("amplification        1.10462e+20 attempts per "
                      "request", out)
        self.assertIn("* beyond the range of a double (about 2.2e-308 to "
                      "1.8e+308)", out)
        # and nothing of the kind when everything fits
        out = self.ok("lab", "--load", "0.95", "--base-failure", "0.1",
                      "--retries", "3").out
        self.assertNotIn("beyond the range", out)


if __name__ == "__main__":
    clitest.main()
