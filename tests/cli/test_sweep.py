#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable sweep: the number of equilibria changes exactly at the tipping
and recovery loads (one ulp either side), the table's shape, and the
bifurcation plot (a valid SVG and PNG of sensible size)."""
import csv
import io
import math
import os
import struct
import tempfile
import xml.etree.ElementTree as ET

import clitest
from clitest import SPEC, CliTest, ScratchTest

CHECKOUT = ("--spec", SPEC, "--service", "checkout")
TIERS = ("--capacity", "100", "--retries", "3", "--tiers", "3")


def r17(x):
    return "%.17g" % x


class Counts(CliTest):
    def loads(self, *model):
        j = self.ok("solve", *model, "--load", "1", "--format",
                    "json").json()
        return j["tipping_load"], j["recovery_load"]

    def counts_around(self, model, at):
        """Counts one ulp below, at, and one ulp above `at`."""
        lo, hi = math.nextafter(at, 0), math.nextafter(at, math.inf)
        rows = self.ok("sweep", *model, "--from", r17(lo), "--to", r17(hi),
                       "--steps", "2", "--format", "json").json()
        self.assertEqual([r["offered_load"] for r in rows], [lo, at, hi])
        return [len(r["equilibria"]) for r in rows]

    def test_vary_timeout_range(self):
        # a range keeps its width along --vary timeout: MIN..MAX and
        # MIN with --timeout-granularity are the same service, row by row
        svc = ("sweep", "--servers", "10", "--service-time", "100ms",
               "--retries", "3", "--vary", "timeout", "--from", "0.4",
               "--to", "0.8", "--steps", "2", "--load", "50", "--format",
               "json")
        a = self.ok(*svc, "--timeout", "400ms..900ms").json()
        b = self.ok(*svc, "--timeout", "400ms", "--timeout-granularity",
                    "500ms").json()
        self.assertEqual(a, b)
        fixed = self.ok(*svc, "--timeout", "400ms").json()
        self.assertNotEqual(a, fixed)

    def test_fold_exact(self):
        for model in (CHECKOUT, TIERS):
            tip, rec = self.loads(*model)
            self.assertLess(rec, tip)
            # above the tipping load the healthy pair disappears; at it the
            # double root is reported once (doc/design.md §1.3, ms_equilibria)
            self.assertEqual(self.counts_around(model, tip), [3, 2, 1])
            self.assertEqual(self.counts_around(model, rec), [1, 2, 3])

    def test_table(self):
        tip, rec = self.loads(*CHECKOUT)
        out = self.ok("sweep", *CHECKOUT, "--from", "0", "--to", "120",
                      "--steps", "1200").out
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(list(rows[0]), [
            "offered_load", "equilibria", "index", "effective_load",
            "failure_probability", "amplification", "stable",
            "time_to_storm", "storm_hazard"])
        by_load = {}
        for r in rows:
            by_load.setdefault(float(r["offered_load"]), []).append(r)
        loads = sorted(by_load)
        self.assertEqual(len(loads), 1201)
        self.assertEqual((loads[0], loads[-1]), (0.0, 120.0))
        for lam in loads:
            eqs = by_load[lam]
            n = len(eqs)
            self.assertTrue(all(int(e["equilibria"]) == n for e in eqs))
            self.assertEqual([int(e["index"]) for e in eqs], list(range(n)))
            want = 3 if rec < lam < tip else 2 if lam in (rec, tip) else 1
            self.assertEqual(n, want, lam)
            xs = [float(e["effective_load"]) for e in eqs]
            self.assertEqual(xs, sorted(xs))
            if n == 3:
                self.assertEqual([e["stable"] for e in eqs], ["1", "0", "1"])
            if n == 2:  # the tangency at the recovery load, then the high
                self.assertEqual([e["stable"] for e in eqs], ["1", "0"])
            for e in eqs:
                # each row is an equilibrium: x = lambda * A
                self.assertAlmostEqual(float(e["effective_load"]),
                                       lam * float(e["amplification"]),
                                       delta=1e-9 * max(1, lam))
        # the count changes only in the steps that hold tip or rec
        for a, b in zip(loads, loads[1:]):
            if len(by_load[a]) != len(by_load[b]):
                self.assertTrue(a <= tip <= b or a <= rec <= b, (a, b))

    def test_capacity_seed(self):
        out = self.ok("sweep", "--capacity", "1", "--base-failure", "0.1",
                      "--retries", "3", "--from", "0.8", "--to", "1",
                      "--steps", "4", "--format", "json").json()
        self.assertEqual([len(r["equilibria"]) for r in out], [1] * 5)
        self.assertEqual(out[0]["equilibria"][0]["effective_load"], 0.8888)
        self.assertAlmostEqual(out[3]["equilibria"][0]["effective_load"],
                               1.72736, delta=5e-6)

    def test_many_rows(self):
        # 100,000 steps: every load is written, quickly (not timed here)
        r = self.ok("sweep", *CHECKOUT, "--from", "0", "--to", "120",
                    "--steps", "100000")
        lines = r.out.count("\n")
        self.assertGreater(lines, 100001)


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


class Plot(ScratchTest):
    def test_svg(self):
        f = self.path("fold.svg")
        r = self.ok("sweep", *CHECKOUT, "--from", "0", "--to", "120",
                    "--steps", "100", "--plot", f, "--load", "60")
        self.assertEqual(r.out, "")  # the plot only: no --format given
        size = os.path.getsize(f)
        self.assertTrue(10_000 < size < 5_000_000, size)
        root = ET.parse(f).getroot()
        self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg")
        self.assertEqual(root.get("viewBox"), "0 0 1100 800")
        text = " ".join(t.strip() for t in root.itertext() if t.strip())
        for want in ("Retry-storm bifurcation diagram: checkout",
                     "offered load λ (requests/s, first attempts)",
                     "effective load x (attempts/s, retries included)",
                     "hysteresis band (bistable)",
                     "stable: healthy branch",
                     "unstable: boundary between the basins",
                     "stable: collapsed branch (retry storm)",
                     "capacity c·μ = 100 attempts/s",
                     "equilibria at the load 60 req/s",
                     "tipping 83.23 req/s", "recovery 25 req/s",
                     "load 60 req/s",
                     "above 83.23 req/s: retry storm",
                     "below 25 req/s: storm ends"):
            self.assertIn(want, text)
        # the unstable branch is dashed: a stroke-dasharray on a path
        with open(f, encoding="utf-8") as fh:
            svg = fh.read()
        self.assertIn("stroke-dasharray", svg)

    def test_units(self):
        # ten million servers: the axes count millions, the labels say so
        f = self.path("big.svg")
        self.ok("sweep", "--servers", "10000000", "--service-time", "1s",
                "--timeout", "0.5", "--timeout-covers", "wait", "--retries", "3", "--from", "0", "--to",
                "12e6", "--steps", "1", "--plot", f, "--load", "8e6")
        text = " ".join(t.strip() for t in ET.parse(f).getroot().itertext())
        for want in ("offered load λ (million requests/s, first attempts)",
                     "effective load x (million attempts/s, retries "
                     "included)", "recovery 2.5M req/s",
                     "tipping 10M req/s", "load 8M req/s",
                     "erlang model: 10M servers, service time 1 s",
                     "capacity c·μ = 10M attempts/s",
                     "equilibria at the load 8M req/s"):
            self.assertIn(want, text)

    def test_png_and_table(self):
        f = self.path("fold.png")
        r = self.ok("sweep", *TIERS, "--from", "0", "--to", "150",
                    "--steps", "3", "--plot", f, "--format", "csv")
        self.assertEqual(r.out.count("\n"), 1 + 1 + 3 + 3 + 1)
        with open(f, "rb") as fh:
            data = fh.read()
        self.assertEqual(png_size(data), (1100, 800))
        self.assertTrue(20_000 < len(data) < 5_000_000, len(data))

    def test_no_gnuplot(self):
        f = self.path("x.png")
        self.fails(1, "install the Debian package gnuplot-nox", "sweep",
                   *CHECKOUT, "--from", "0", "--to", "120", "--steps", "1",
                   "--plot", f, env={"METASTABLE_GNUPLOT": "no-such-gnuplot"})

    def test_unwritable(self):
        f = self.path("missing/dir/x.svg")
        self.fails(1, "missing/dir/x.svg: cannot write: No such file or "
                   "directory", "sweep", *CHECKOUT, "--from", "0", "--to",
                   "120", "--steps", "1", "--plot", f)

    def test_bad_extension(self):
        self.fails(2, "--plot: 'x.pdf' must end in .svg or .png", "sweep",
                   *CHECKOUT, "--from", "0", "--to", "1", "--steps", "1",
                   "--plot", "x.pdf")


class Vary(CliTest):
    """sweep --vary: each row is the service `metastable solve` sees with
    that model option given, and its state at --load follows from the
    row's own tipping and recovery loads."""

    LOAD = 60.0

    def solve(self, opt, value):
        j = self.ok("solve", *CHECKOUT, "--" + opt, value, "--format",
                    "json").json()
        return j["tipping_load"], j["recovery_load"]

    def vary(self, knob, *args, fmt="json"):
        return self.ok("sweep", *CHECKOUT, "--vary", knob, *args, "--load",
                       r17(self.LOAD), "--format", fmt)

    def check_rows(self, rows, key, opt):
        self.assertTrue(rows)
        for row in rows:
            self.assertEqual(list(row), [key, "tipping_load", "recovery_load",
                                         "band_width", "state"])
            tip, rec = self.solve(opt, r17(row[key]))
            self.assertEqual((row["tipping_load"], row["recovery_load"]),
                             (tip, rec), row)
            self.assertEqual(row["band_width"], tip - rec)
            # the state at --load from the row's own loads, a cold start
            # being healthy (doc/design.md §1.4)
            lam = self.LOAD
            want = ("stable" if lam < rec else "overloaded" if lam > tip
                    else "vulnerable")
            if rec < tip and lam in (rec, tip):
                want = row["state"]  # a boundary: not asserted
            self.assertEqual(row["state"], want, row)

    def test_retries(self):
        rows = self.vary("retries", "--from", "0", "--to", "6").json()
        self.assertEqual([r["retries"] for r in rows], list(range(7)))
        self.check_rows(rows, "retries", "retries")
        # checkout: 10 servers of 10/s.  On the collapsed branch every
        # attempt times out, x = (r + 1) lambda, which meets capacity
        # c mu = 100 at lambda_rec = c mu / (r + 1)
        for r in rows:
            self.assertAlmostEqual(r["recovery_load"],
                                   100 / (r["retries"] + 1), delta=1e-9)

    def test_servers(self):
        rows = self.vary("servers", "--from", "2", "--to", "40",
                         "--steps", "5").json()
        # N + 1 = 6 values evenly spread from 2 to 40, rounded
        want = [round(2 + 38 * i / 5) for i in range(6)]
        self.assertEqual([r["servers"] for r in rows], want)
        self.check_rows(rows, "servers", "servers")
        for r in rows:  # lambda_rec = c mu / (r + 1), 3 retries, mu = 10/s
            self.assertAlmostEqual(r["recovery_load"],
                                   r["servers"] * 10 / 4, delta=1e-9)
        # capacity moves the cliff, it does not remove it: both loads grow
        # with the pool and the band stays open
        for a, b in zip(rows, rows[1:]):
            self.assertGreater(b["tipping_load"], a["tipping_load"])
            self.assertGreater(b["recovery_load"], a["recovery_load"])
        self.assertTrue(all(r["band_width"] > 0 for r in rows))
        states = {r["state"] for r in rows}
        self.assertIn("overloaded", states)  # 2 servers at 60 req/s
        self.assertIn("stable", states)      # 40 servers

    def test_timeout(self):
        rows = self.vary("timeout", "--from", "50ms", "--to", "2s",
                         "--steps", "4").json()
        want = [0.05 + (2 - 0.05) * i / 4 for i in range(4)] + [2]
        self.assertEqual(len(rows), 5)
        for r, w in zip(rows, want):
            self.assertAlmostEqual(r["timeout"], w, delta=1e-15)
        self.check_rows(rows, "timeout", "timeout")

    def test_budget(self):
        rows = self.vary("budget", "--from", "0", "--to", "50%").json()
        self.assertEqual(len(rows), 11)  # 10 intervals by default
        for i, r in enumerate(rows):
            self.assertAlmostEqual(r["retry_budget"], 0.05 * i, delta=1e-15)
        self.check_rows(rows, "retry_budget", "retry-budget")

    def test_csv_and_text(self):
        js = self.vary("retries", "--from", "1", "--to", "4").json()
        out = self.vary("retries", "--from", "1", "--to", "4",
                        fmt="csv").out
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(len(rows), len(js))
        for c, j in zip(rows, js):
            for k in ("retries", "tipping_load", "recovery_load",
                      "band_width"):
                self.assertEqual(float(c[k]), j[k])
            self.assertEqual(c["state"], j["state"])
        text = self.ok("sweep", *CHECKOUT, "--vary", "retries", "--from",
                       "1", "--to", "4", "--load", "60").out.splitlines()
        self.assertEqual(len(text), 1 + len(js))
        for line, j in zip(text[1:], js):
            f = line.split()
            self.assertEqual(int(f[0]), j["retries"])
            self.assertAlmostEqual(float(f[1]), j["tipping_load"],
                                   delta=1e-5 * j["tipping_load"])
            self.assertAlmostEqual(float(f[2]), j["recovery_load"],
                                   delta=1e-5 * j["recovery_load"])
            self.assertEqual(f[4], j["state"])

    def test_plot(self):
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, "v.png")
            r = self.ok("sweep", *CHECKOUT, "--vary", "servers", "--from",
                        "1", "--to", "40", "--load", "60", "--plot", png)
            self.assertEqual(r.out, "")  # the plot only
            with open(png, "rb") as fh:
                data = fh.read()
            self.assertEqual(png_size(data), (1100, 720))
            self.assertTrue(20_000 < len(data) < 5_000_000, len(data))
            svg = os.path.join(d, "v.svg")
            self.ok("sweep", *CHECKOUT, "--vary", "timeout", "--from",
                    "10ms", "--to", "500ms", "--load", "60", "--plot", svg)
            text = " ".join(t.strip() for t in ET.parse(svg).getroot()
                            .itertext() if t.strip())
            for want in ("Tipping and recovery loads against timeout: "
                         "checkout", "client timeout (ms)",
                         "offered load λ (requests/s)",
                         "tipping load: above it a retry storm starts",
                         "recovery load: below it a storm ends",
                         "load 60 req/s"):
                self.assertIn(want, text)
            with open(svg, encoding="utf-8") as fh:
                self.assertIn("fill-opacity", fh.read())  # the band

    def test_errors(self):
        base = ("sweep", *CHECKOUT, "--load", "60", "--vary")
        self.fails(2, "--log-y is for the sweep over the offered load: not "
                   "with --vary", *base, "retries", "--from", "1", "--to",
                   "3", "--log-y")
        # the ranges are the model options' own (MS_PARAMS): servers >= 1,
        # a budget below 1, retries at most MS_MAX_RETRIES = 10000
        self.fails(2, "--from: '0' is out of range", *base, "servers",
                   "--from", "0", "--to", "4")
        self.fails(2, "--to: '100%' is out of range", *base, "budget",
                   "--from", "0", "--to", "100%")
        self.fails(2, "--to: '10001' is out of range", *base, "retries",
                   "--from", "0", "--to", "10001")
        self.fails(2, "--from 3 must be below --to 1", *base, "retries",
                   "--from", "3", "--to", "1")
        self.fails(2, "--vary: give the offered load", "sweep", *CHECKOUT,
                   "--vary", "retries", "--from", "1", "--to", "3")
        self.fails(2, "--vary", "sweep", *CHECKOUT, "--vary", "tiers",
                   "--from", "1", "--to", "3", "--load", "1")
        self.fails(2, "--format text is for --vary", "sweep", *CHECKOUT,
                   "--from", "0", "--to", "1", "--steps", "1", "--format",
                   "text")


if __name__ == "__main__":
    clitest.main()
