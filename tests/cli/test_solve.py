#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable solve: the reference numbers (doc/design.md §2) and the erlang model's
equilibria, states and JSON keys.

Every fixed point is also checked against the fixed-point equation
x = lambda * A(p(x)) evaluated here, independently of the C code."""
import math
import os
import re
import tempfile

import clitest
from clitest import SPEC, CliTest

REPORT_KEYS = {
    "offered_load", "effective_load", "self_inflicted_load", "amplification",
    "failure_probability", "utilization", "tipping_load", "recovery_load",
    "tipping_distance", "tipping_headroom", "equilibria", "state", "storm",
    "shed_load", "recovering", "reporting"}
# the storm hazard's keys (doc/design.md §1.12; tests/cli/test_hazard.py)
HAZARD_KEYS = {
    "hazard_horizon", "max_hazard", "tipping_time_to_storm",
    "tipping_storm_hazard", "fold_is_answer", "hazard_load", "hazard_note"}


def capacity_map(x, lam, base, r, C=1.0):
    """lambda * A(p(x)) for the capacity model (doc/design.md §1.1, §1.2)."""
    p = base + (1 - base) * max(0.0, (x - C) / x)
    return lam * sum(p ** i for i in range(r + 1))


def seed(load, retries=3, base=0.1):
    return ("solve", "--model", "capacity", "--capacity", "1",
            "--base-failure", str(base), "--retries", str(retries),
            "--load", str(load), "--format", "json")


class SeedNumbers(CliTest):
    def solve(self, *a, **kw):
        return self.ok(*seed(*a, **kw)).json()

    def test_fixed_points(self):
        # doc/design.md §2: 0.80 -> 0.8888; 0.90 -> 0.9999; 0.95 -> 1.72736 (47.9 %)
        for lam, want, tol in ((0.80, 0.8888, 1e-13), (0.90, 0.9999, 1e-13),
                               (0.95, 1.72736, 5e-6)):
            j = self.solve(lam)
            x = j["effective_load"]
            self.assertAlmostEqual(x, want, delta=tol)
            self.assertAlmostEqual(capacity_map(x, lam, 0.1, 3), x,
                                   delta=1e-13)
            self.assertTrue(j["certified"])
        j = self.solve(0.95)
        self.assertAlmostEqual(j["failure_probability"], 0.479, delta=5e-4)
        self.assertEqual(j["state"], "overloaded")
        self.assertEqual(j["storm"], 1)
        self.assertEqual(self.solve(0.80)["state"], "stable")

    def test_retry_counts(self):
        # lambda = 0.95, r = 0, 1, 2, 3 -> 0.95, 1.168, 1.439, 1.727
        for r, want in ((0, 0.95), (1, 1.168), (2, 1.439), (3, 1.727)):
            x = self.solve(0.95, retries=r)["effective_load"]
            self.assertAlmostEqual(x, want, delta=5e-4, msg="r=%d" % r)
            self.assertAlmostEqual(capacity_map(x, 0.95, 0.1, r), x,
                                   delta=1e-13)

    def test_loop_engages(self):
        # base 0.05, r = 2: the loop engages above 1/1.0525 = 0.95012
        j = self.solve(0.5, retries=2, base=0.05)
        self.assertAlmostEqual(j["tipping_load"], 1 / 1.0525, delta=1e-15)
        self.assertEqual(j["tipping_load"], j["recovery_load"])

    def test_json_shape(self):
        j = self.solve(0.95)
        self.assertEqual(set(j) - {"service", "certified", "model_load",
                                   "retried_rejection_share",
                                   "retrial_attempts", "time_to_storm",
                                   "retrial_tipping_load",
                                   "retrial_recovery_load",
                                   "storm_hazard"} - HAZARD_KEYS,
                         REPORT_KEYS)
        self.assertEqual(j["retried_rejection_share"], 0)
        self.assertIsNone(j["retrial_attempts"])
        self.assertIsNone(j["service"])
        self.assertEqual(len(j["equilibria"]), 1)
        eq = j["equilibria"][0]
        self.assertEqual(set(eq), {"effective_load", "failure_probability",
                                   "amplification", "stable"})
        self.assertIs(eq["stable"], True)
        self.assertAlmostEqual(j["tipping_distance"],
                               j["tipping_load"] - 0.95, delta=1e-15)
        self.assertAlmostEqual(j["self_inflicted_load"],
                               j["effective_load"] - 0.95, delta=1e-15)

    def test_text(self):
        out = self.ok(*seed(0.95)[:-2]).out
        self.assertIn("1.72736 /s", out)
        self.assertIn("state          overloaded", out)
        self.assertIn("certified by an exact enclosure", out)
        self.assertIn("storm          yes", out)


class ErlangService(CliTest):
    """checkout: 10 servers, 100 ms, timeout 200 ms, 3 retries."""

    def solve(self, *args):
        return self.ok("solve", "--spec", SPEC, "--service", "checkout",
                       "--format", "json", *args).json()

    def test_bistable(self):
        j = self.solve("--load", "60")
        self.assertEqual(j["service"], "checkout")
        # recovery at x = c mu: lambda = c mu / (r + 1) = 100 / 4 (doc/design.md §1.3)
        self.assertAlmostEqual(j["recovery_load"], 25, delta=1e-12)
        self.assertAlmostEqual(j["tipping_load"], 83.2329235, delta=1e-6)
        eqs = j["equilibria"]
        self.assertEqual([e["stable"] for e in eqs], [True, False, True])
        xs = [e["effective_load"] for e in eqs]
        self.assertEqual(xs, sorted(xs))
        # the collapsed equilibrium sits above c mu: every attempt waits
        # past the timeout, A = r + 1
        self.assertAlmostEqual(xs[2], 240, delta=1e-9)
        self.assertEqual(j["state"], "vulnerable")
        self.assertEqual(j["storm"], 0)
        self.assertAlmostEqual(j["utilization"], j["effective_load"] / 100,
                               delta=1e-15)

    def test_basins(self):
        # observed attempts above the unstable equilibrium: collapsed basin
        self.assertEqual(self.solve("--load", "60", "--observed-load",
                                    "200")["state"], "metastable")
        self.assertEqual(self.solve("--load", "60", "--observed-load",
                                    "61")["state"], "vulnerable")
        # nothing observed: the previous state decides (hysteresis), once
        # the load is inside the band beyond the noise of a 10 s count
        # (60 + 3 sqrt(6) + 0.9 < 83.2)
        self.assertEqual(self.solve("--load", "60", "--previous",
                                    "overloaded", "--interval",
                                    "10")["state"], "metastable")
        # within the noise of a 1 s count (60 + 3 sqrt(60) + 9 > 83.2) the
        # overloaded state holds, read at the tipping load
        j = self.solve("--load", "60", "--previous", "overloaded")
        self.assertEqual(j["state"], "overloaded")
        self.assertAlmostEqual(max(e["effective_load"]
                                   for e in j["equilibria"]),
                               j["effective_load"], delta=1e-9)
        self.assertEqual(self.solve("--load", "20")["state"], "stable")
        j = self.solve("--load", "100")
        self.assertEqual((j["state"], j["storm"], len(j["equilibria"])),
                         ("overloaded", 1, 1))
        self.assertLess(j["tipping_headroom"], 0)

    def test_storm_text_agrees_with_equilibria(self):
        # the storm text names only equilibria the list shows: recovering in
        # the band (observations below the unstable equilibrium, failures
        # above the healthy level) lists the collapsed one and says so;
        # below the recovery load beyond the noise none is listed
        base = ("solve", "--spec", SPEC, "--service", "checkout",
                "--previous", "metastable", "--interval", "10")
        text = self.ok(*base, "--load", "60", "--observed-load", "75",
                       "--observed-failure", "0.3").out
        j = self.solve(*base[5:], "--load", "60", "--observed-load", "75",
                       "--observed-failure", "0.3")
        self.assertEqual((j["state"], j["storm"], j["recovering"]),
                         ("vulnerable", 1, 1))
        self.assertEqual([e["stable"] for e in j["equilibria"]],
                         [True, False, True])
        self.assertIn("storm          yes (recovering: the observations are "
                      "on the healthy side of the unstable equilibrium",
                      text)
        self.assertNotIn("gone", text)
        text = self.ok(*base, "--load", "15", "--observed-load", "60").out
        j = self.solve(*base[5:], "--load", "15", "--observed-load", "60")
        self.assertEqual((j["state"], j["recovering"]), ("stable", 1))
        self.assertEqual(j["model_load"], 15)
        self.assertEqual(len(j["equilibria"]), 1)
        self.assertIn("(recovering: no collapsed equilibrium at this load",
                      text)
        self.assertNotIn("model load", text)
        # 20 req/s over 10 s is within the noise of the recovery load, 25:
        # the state keeps the band's side and the model is read at 25
        text = self.ok(*base, "--load", "20", "--observed-load", "80").out
        j = self.solve(*base[5:], "--load", "20", "--observed-load", "80")
        self.assertEqual((j["offered_load"], j["model_load"]), (20, 25))
        self.assertEqual(j["state"], "vulnerable")
        self.assertIn("model load     25 req/s, the recovery load: the "
                      "offered load is within the noise of its count", text)
        self.assertIn("Equilibria at 25 req/s", text)

    def test_overrides(self):
        # "what if we had one retry?": recovery moves to c mu / 2
        j = self.solve("--load", "30", "--retries", "1")
        self.assertAlmostEqual(j["recovery_load"], 50, delta=1e-12)
        # the same service from options alone gives the same numbers
        k = self.ok("solve", "--servers", "10", "--service-time", "0.1",
                    "--timeout", "200ms", "--timeout-covers", "wait", "--retries", "3", "--load", "60",
                    "--format", "json").json()
        j = self.solve("--load", "60")
        for key in REPORT_KEYS - {"equilibria"}:
            self.assertEqual(k[key], j[key], key)

    def test_units_written_as_people_write_them(self):
        # minutes, hours and percentages are the same numbers as seconds
        # and shares; counts refuse a percentage
        def solve(*a):
            return self.ok("solve", "--servers", "10", "--load", "60",
                           "--format", "json", *a).json()
        def bare(*a, warns):
            # bare durations are seconds; the implausible ones are warned
            # about (doc/configuration.md, "Units and bare numbers"), and
            # the answer and the exit status are those of the units
            r = clitest.run("solve", "--servers", "10", "--load", "60",
                            "--format", "json", *a)
            self.assertEqual(r.code, 0, r)
            self.assertEqual(r.err, "metastable solve: warning: %s\n" % warns,
                             r)
            return r.json()
        plain = bare("--service-time", "0.1", "--timeout", "120", "--timeout-covers", "wait",
                     "--retries", "3", "--base-failure", "0.01",
                     "--retry-budget", "0.1", "--token-ratio", "0.5",
                     warns="--timeout 120 was read as 120 s, 1,200 times the "
                     "service time; write 120ms if you meant milliseconds")
        units = solve("--service-time", "100ms", "--timeout", "2m", "--timeout-covers", "wait",
                      "--retries", "3", "--base-failure", "1%",
                      "--retry-budget", "10%", "--token-ratio", "50 %")
        self.assertEqual(plain, units)
        hours = solve("--service-time", "0.5m", "--timeout", "1.5h", "--timeout-covers", "wait",
                      "--retries", "3")
        seconds = bare("--service-time", "30", "--timeout", "5400", "--timeout-covers", "wait",
                       "--retries", "3",
                       warns="--service-time 30 was read as 30 s, 10 s or "
                       "more per request; write 30ms if you meant "
                       "milliseconds")
        self.assertEqual(hours, seconds)
        self.assertEqual(seconds, solve("--service-time", "30s", "--timeout",
                                        "5400", "--timeout-covers", "wait", "--retries", "3"))
        for opt, text, says in (
                ("--retries", "3%", "--retries: '3%' is a percentage, but "
                 "retries is a count, not a share"),
                ("--servers", "10%", "--servers: '10%' is a percentage, but "
                 "servers is a count, not a share"),
                ("--tiers", "1%", "--tiers: '1%' is a percentage"),
                ("--base-failure", "150%", "--base-failure: '150%' is out of "
                 "range: it must be in [0, 1)"),
                ("--timeout", "2min", "unknown time unit 'min' (use us, ms, "
                 "s, m or h)")):
            args = {"--servers": "10", "--service-time": "0.1",
                    "--timeout": "1", "--retries": "3"}
            args[opt] = text
            flat = [x for kv in args.items() for x in kv]
            self.fails(2, says, "solve", *flat, "--load", "5")

    def test_timeout_zero_on_the_response(self):
        # T = 0 on the response: every attempt fails at any load, so the
        # one equilibrium is not a healthy one, and the text says so
        svc = ("--servers", "10", "--service-time", "100ms", "--retries",
               "3", "--load", "5")
        j = self.ok("solve", *svc, "--timeout", "0", "--format",
                    "json").json()
        self.assertEqual(j["failure_probability"], 1.0)
        out = self.ok("solve", *svc, "--timeout", "0").out
        self.assertIn("only one equilibrium exists, and it fails most "
                      "attempts", out)
        self.assertIn("only the healthy equilibrium exists",
                      self.ok("solve", *svc, "--timeout", "1").out)

    def test_timeout_range(self):
        # a range, a granularity and a file say the same service; the
        # spread lies between its ends (doc/design.md §1.1)
        base = ("--servers", "10", "--service-time", "200ms",
                "--timeout-covers", "wait", "--retries", "3",
                "--format", "json")
        def tip(*a):
            return self.ok("solve", *base, *a).json()["tipping_load"]
        spread = tip("--timeout", "400ms..900ms")
        self.assertEqual(spread, tip("--timeout", "400ms",
                                     "--timeout-granularity", "500ms"))
        self.assertLess(tip("--timeout", "400ms"), spread)
        self.assertLess(spread, tip("--timeout", "900ms"))
        # the closed form of tools/gen_spread.py (tests/data/spread.csv,
        # service 0: 10 x 5/s, T 0.4 s, w 0.5 s, 3 retries)
        self.assertAlmostEqual(spread, 43.50473379368729, delta=1e-9)
        svc = ("services:\n  - name: api\n    model: erlang\n"
               "    servers: 10\n    service_time: 200ms\n"
               "    timeout: %s\n    timeout_covers: wait\n"
               "    retries: 3\n"
               "    inputs:\n      offered_rate: \"a/b/derive-c\"\n")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.yaml")
            for t in ("{min: 400ms, max: 900ms}", "400ms..900ms",
                      "400ms\n    timeout_granularity: 500ms"):
                with open(path, "w") as f:
                    f.write(svc % t)
                j = self.ok("solve", "--spec", path, "--format",
                            "json").json()
                self.assertEqual(j["tipping_load"], spread, t)
            with open(path, "w") as f:
                f.write(svc % "{min: 900ms, max: 400ms}")
            self.fails(1, "timeout max 0.4 s is below its min 0.9 s",
                       "solve", "--spec", path)
        self.fails(2, "not a timeout range", "solve", *base,
                   "--timeout", "400ms..soon")
        self.fails(2, "not both", "solve", *base, "--timeout", "1..2",
                   "--timeout-granularity", "1")

    def test_text(self):
        out = self.ok("solve", "--spec", SPEC, "--service", "checkout",
                      "--load", "60").out
        self.assertIn("service        checkout: erlang model: 10 servers, "
                      "service time 100 ms, timeout 200 ms on the wait, "
                      "3 retries", out)
        self.assertIn("unstable  (boundary between the basins)", out)
        self.assertIn("recovery load  25 req/s", out)
        self.assertIn("state          vulnerable", out)


def geometric(p, n):
    return sum(p ** i for i in range(n + 1))


class Policies(CliTest):
    """The named policies and layered tiers from the command line; each
    collapsed equilibrium checked against the policy's own cap, computed
    here (doc/design.md §1.2)."""
    ERL = ("--servers", "50", "--service-time", "200ms", "--timeout", "2s", "--timeout-covers", "wait")

    def solve(self, *a):
        return self.ok("solve", *self.ERL, *a, "--format", "json").json()

    def collapsed(self, j):
        return max(j["equilibria"], key=lambda e: e["effective_load"])

    def test_nested_tiers_telescope(self):
        # 4 nested tiers of 3 retries: at p = 1 as many attempts as 4
        # independent ones, (r + 1)^k = 256, so the recovery load is c mu/256
        for layering in ("nested", "independent"):
            j = self.solve("--retries", "3", "--tiers", "4", "--layering",
                           layering, "--load", "1")
            self.assertAlmostEqual(j["recovery_load"], 250 / 256, delta=1e-12)
        # at the operating point of a storm the nested chain sends fewer
        n = self.solve("--retries", "3", "--tiers", "2", "--layering",
                       "nested", "--load", "240", "--previous", "overloaded")
        i = self.solve("--retries", "3", "--tiers", "2", "--load", "240",
                       "--previous", "overloaded")
        for j, amp in ((n, lambda p: geometric(p, 15)),
                       (i, lambda p: geometric(p, 3) ** 2)):
            e = self.collapsed(j)
            self.assertAlmostEqual(e["amplification"],
                                   amp(e["failure_probability"]), delta=1e-9)

    def test_caps_at_the_collapsed_equilibrium(self):
        # Envoy: at p = 1 the retries are budget_percent of the attempts
        e = self.collapsed(self.solve("--retries", "3", "--envoy-retry-budget",
                                      "0.2:3", "--load", "240"))
        self.assertAlmostEqual(e["amplification"], 1.25, delta=1e-12)
        # Finagle: x = lambda (1 + percent) + min_per_second
        j = self.solve("--retries", "3", "--finagle-retry-budget", "0.1:5",
                       "--load", "240")
        e = self.collapsed(j)
        self.assertAlmostEqual(e["effective_load"], 240 * 1.1 + 5, delta=1e-9)
        # AWS: the bucket is empty, R = refund (1 - p)/(cost p) per request,
        # every failure a timeout: 14 tokens a retry in the SDK's current
        # costs, 10 in the older ones
        for arg, cost in (("default", 14), ("legacy", 10),
                          ("costs=legacy:timeout_cost=12", 12)):
            e = self.collapsed(self.solve("--retries", "2", "--aws-retry-quota",
                                          arg, "--load", "240"))
            p = e["failure_probability"]
            self.assertGreater(p, 0.05)
            self.assertLess(p, 1)
            self.assertAlmostEqual(e["amplification"],
                                   1 + min(p + p * p, (1 - p) / (cost * p)),
                                   delta=1e-9)

    def test_policy_option_errors(self):
        for args, code, says in (
                (("--grpc-throttling", "10"), 2,
                 "--grpc-throttling needs MAX:RATIO"),
                (("--grpc-throttling", "0:0.1"), 2,
                 "--grpc-throttling (grpc_throttling.max_tokens): '0' is out of "
                 "range: it must be in [1, 1000]"),
                (("--aws-retry-quota", "1:2:3:4:5:0.5:7"), 2,
                 "has more fields"),
                (("--aws-retry-quota", "costs=newest"), 2,
                 "'newest' is neither current nor legacy"),
                (("--aws-retry-quota", "throttle_share=0.5"), 2,
                 "no field 'throttle_share'"),
                (("--aws-retry-quota", "throttling_share=1.5"), 2,
                 "aws_retry_quota.throttling_share"),
                (("--grpc-throttling", "10:0.1", "--aws-retry-quota",
                  "default"), 2, "give one retry policy"),
                (("--envoy-retry-budget", "default", "--tiers", "2"), 2,
                 "applies to one tier"),
                (("--layering", "sideways"), 2, "'sideways' is not one of")):
            r = clitest.run("solve", *self.ERL, "--retries", "3", *args,
                            "--load", "1")
            self.assertEqual(r.code, code, r)
            self.assertIn(says, r.err)

    def test_describe(self):
        out = self.ok("solve", *self.ERL, "--retries", "4",
                      "--grpc-throttling", "10:0.1", "--load", "1").out
        self.assertIn("4 retries, gRPC throttling 10 tokens, ratio 0.1", out)
        out = self.ok("solve", *self.ERL, "--retries", "3", "--tiers", "3",
                      "--layering", "nested", "--load", "1").out
        self.assertIn("3 retries x 3 tiers, nested", out)


def mmck_block(c, K, a):
    """P_(c+K) of M/M/c/K at a erlangs, summed over the c + K + 1 states
    (Gross and Harris, ch. 2)."""
    w = [1.0]
    for n in range(1, c + K + 1):
        w.append(w[-1] * a / min(n, c))
    return w[-1] / math.fsum(w)


class RetriedRejections(CliTest):
    """retried_rejection_share: P_block / p at the operating point, the
    part of the failures the model wrongly takes as independent of the
    rejection before (doc/design.md §1.9)."""
    CASE = ("--servers", "10", "--service-time", "200ms", "--timeout",
            "10s", "--queue-limit", "20", "--retries", "4")

    def solve(self, *args):
        return self.ok("solve", *self.CASE, "--format", "json",
                       *args).json()

    def test_share(self):
        # a 10 s timeout: no attempt waits that long behind 20 places at
        # 50/s, so every failure is a rejection
        for load in ("42", "55", "70"):
            j = self.solve("--load", load)
            x = j["effective_load"]
            pb = mmck_block(10, 20, x / 5.0)
            self.assertAlmostEqual(j["failure_probability"], pb,
                                   delta=1e-12 * max(pb, 1e-300) + 1e-15)
            self.assertAlmostEqual(j["retried_rejection_share"], 1.0,
                                   delta=1e-9)
        # a 500 ms timeout: the timeouts take a part of the failures
        j = self.solve("--load", "55", "--timeout", "500ms",
                       "--timeout-covers", "wait")
        x, p = j["effective_load"], j["failure_probability"]
        want = mmck_block(10, 20, x / 5.0) / p
        self.assertAlmostEqual(j["retried_rejection_share"], want,
                               delta=1e-12)
        self.assertLess(want, 0.96)
        self.assertGreater(want, 0.9)
        r = self.ok("solve", *self.CASE, "--load", "55")
        self.assertIn("\nrejections     100 % of the failures, retried",
                      r.out)

    def test_zero(self):
        for extra in (("--no-retry-rejections",), ("--retries", "0")):
            j = self.solve("--load", "55", *extra)
            self.assertEqual(j["retried_rejection_share"], 0)
            r = self.ok("solve", *self.CASE, "--load", "55", *extra)
            self.assertNotIn("\nrejections", r.out)


class BeyondDoubles(CliTest):
    """A storm whose effective load does not fit a double: an error (exit
    1, the model's message), never inf, nan or null with exit 0."""
    HUGE = ("--capacity", "1e300", "--retries", "100", "--tiers", "10",
            "--base-failure", "0.5")

    def test_solve(self):
        for fmt in ("text", "json"):
            r = clitest.run("solve", *self.HUGE, "--load", "1e300",
                            "--format", fmt)
            self.assertEqual((r.code, r.out), (1, ""), r)
            self.assertTrue(r.err.startswith("metastable solve: model: "), r)

    def test_sweep(self):
        for fmt in ("csv", "json"):
            r = clitest.run("sweep", *self.HUGE, "--from", "0", "--to",
                            "1e300", "--steps", "2", "--format", fmt)
            self.assertEqual(r.code, 1, r)
            self.assertTrue(r.err.startswith("metastable sweep: model"), r)
            # the storm hazard is null where its model has no answer (the
            # capacity model): not a number out of range
            out = re.sub(r'"(time_to_storm|storm_hazard)": null', "", r.out)
            for word in ("inf", "nan", "null"):
                self.assertNotRegex(out, r"\b%s\b" % word, r)

    def test_erlang_still_reports_tiny_values(self):
        # what does fit, even when tiny, is reported: from its logarithm
        r = self.ok("erlang", "--servers", "10000000", "--offered",
                    "9999999.9", "--service-rate", "1", "--timeout", "1e9")
        self.assertIn("(below the smallest double; from its log)", r.out)
        self.assertNotRegex(r.out, r"\b(inf|nan)\b")


class ServiceTimeCv(CliTest):
    """--service-time-cv and service_time_cv: the M/G/c wait tail is the
    M/M/c one with the timeout 2T/(1 + cv^2) (doc/design.md §1.1)."""
    ERLANG = ("--servers", "10", "--service-time", "100ms", "--retries", "3",
              "--base-failure", "0.01", "--load", "60", "--format", "json")

    def solve(self, *a):
        # the storm hazard models exponential service only (its
        # hazard_note says so with a cv): left out of the comparisons
        j = self.ok("solve", *(self.ERLANG + a)).json()
        for k in HAZARD_KEYS | {"time_to_storm", "storm_hazard"}:
            j.pop(k)
        return j

    def test_effective_timeout(self):
        plain = self.solve("--timeout", "1", "--timeout-covers", "wait")
        self.assertEqual(self.solve("--timeout", "1", "--timeout-covers", "wait", "--service-time-cv",
                                    "1"), plain)
        # cv 2: 2 x 1 s / 5 = 0.4 s; cv 0: 2 s
        self.assertEqual(self.solve("--timeout", "1", "--timeout-covers", "wait", "--service-time-cv",
                                    "2"), self.solve("--timeout", "0.4", "--timeout-covers", "wait"))
        self.assertEqual(self.solve("--timeout", "1", "--timeout-covers", "wait", "--service-time-cv",
                                    "0"), self.solve("--timeout", "2", "--timeout-covers", "wait"))
        # a more variable service tips earlier
        self.assertLess(self.solve("--timeout", "1", "--timeout-covers", "wait", "--service-time-cv",
                                   "2")["tipping_load"],
                        plain["tipping_load"])

    def test_refused(self):
        self.fails(2, "--service-time-cv: '11' is out of range: it must be "
                   "in [0, 10]", "solve",
                   *(self.ERLANG + ("--timeout", "1", "--timeout-covers", "wait", "--service-time-cv",
                                    "11")))
        self.fails(2, "--service-time-cv applies to the erlang model",
                   "solve", "--model", "capacity", "--capacity", "100",
                   "--retries", "3", "--load", "1", "--service-time-cv", "2")

    def test_service_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.yaml")
            with open(path, "w") as f:
                f.write("services:\n  - name: api\n    model: erlang\n"
                        "    servers: 10\n    service_time: 100ms\n"
                        "    timeout: 1s\n    timeout_covers: wait\n    service_time_cv: 2\n"
                        "    retries: 3\n    base_failure: 0.01\n"
                        "    inputs:\n      offered_rate: 60\n")
            j = self.ok("solve", "--spec", path, "--load", "60",
                        "--format", "json").json()
            self.assertEqual(j["tipping_load"],
                             self.solve("--timeout", "0.4", "--timeout-covers", "wait")["tipping_load"])
            text = self.ok("solve", "--spec", path, "--load", "60").out
            self.assertIn("service time 100 ms (cv 2), timeout 1 s", text)
            with open(path, "w") as f:
                f.write("services:\n  - name: api\n    model: capacity\n"
                        "    capacity: 100\n    service_time_cv: 2\n"
                        "    retries: 3\n    inputs:\n      offered_rate: 1\n")
            self.fails(1, "key 'service_time_cv' applies to the erlang "
                       "model only", "solve", "--spec", path, "--load", "1")


class TimeoutCovers(CliTest):
    """--timeout-covers and timeout_covers (doc/design.md §1.1): the
    tipping loads of 10 servers x 100 ms, 3 retries, with the timeout on
    the wait and on the response, against the 40-digit references of
    tools/response_reference.py."""
    SVC = ("--servers", "10", "--service-time", "100ms", "--retries", "3",
           "--format", "json")

    def refs(self):
        out = {}
        path = os.path.join(clitest.SRCDIR, "tests", "data",
                            "response_reference.csv")
        with open(path) as f:
            for line in f:
                if line.startswith("tipping_"):
                    k = line.split(",")
                    out[(k[0][len("tipping_"):], float(k[4]))] = float(k[6])
        return out

    def test_tipping_loads(self):
        refs = self.refs()
        self.assertEqual(len(refs), 8)
        for (covers, T), want in sorted(refs.items()):
            j = self.ok("solve", *self.SVC, "--timeout", repr(T),
                        "--timeout-covers", covers).json()
            self.assertEqual(j["timeout_covers"], covers)
            self.assertRel(j["tipping_load"], want, 1e-12, (covers, T))

    def test_service_file(self):
        refs = self.refs()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.yaml")
            for covers in ("response", "wait", "weight"):
                with open(path, "w") as f:
                    f.write("services:\n  - name: api\n    model: erlang\n"
                            "    servers: 10\n    service_time: 100ms\n"
                            "    timeout: 200ms\n    timeout_covers: %s\n"
                            "    retries: 3\n    inputs:\n"
                            "      offered_rate: 60\n" % covers)
                if covers == "weight":
                    self.fails(1, "timeout_covers is response (the wait and "
                               "the service) or wait (the wait for a server "
                               "only), not 'weight'", "solve", "--spec",
                               path)
                    continue
                j = self.ok("solve", "--spec", path, "--format",
                            "json").json()
                self.assertRel(j["tipping_load"], refs[(covers, 0.2)], 1e-12)
                # the option overrides the file
                other = "wait" if covers == "response" else "response"
                j = self.ok("solve", "--spec", path, "--timeout-covers",
                            other, "--format", "json").json()
                self.assertRel(j["tipping_load"], refs[(other, 0.2)], 1e-12)
            with open(path, "w") as f:
                f.write("services:\n  - name: api\n    model: erlang\n"
                        "    servers: 10\n    service_time: 100ms\n"
                        "    timeout: 200ms\n    timeout_covers: wait\n    timeout_cover: wait\n"
                        "    retries: 3\n    inputs:\n"
                        "      offered_rate: 60\n")
            self.fails(1, "timeout_covers", "solve", "--spec", path)

    def test_refused(self):
        self.fails(2, "--timeout-covers", "solve", *self.SVC, "--timeout",
                   "1", "--timeout-covers", "headers")
        # the M/M/c/K response is that of exponential service: another
        # cv is refused, not computed as if it were 1
        self.fails(2, "timeout_covers response with queue_limit = 20",
                   "solve", *self.SVC, "--timeout", "1", "--queue-limit",
                   "20", "--timeout-covers", "response",
                   "--service-time-cv", "0.5")
        self.fails(2, "--timeout-covers applies to the erlang model",
                   "solve", "--model", "capacity", "--capacity", "100",
                   "--retries", "3", "--timeout-covers", "wait")


def erlang_c(c, a):
    """Erlang C by the Erlang B recursion B_k = a B_(k-1) / (k + a B_(k-1))
    (Jagerman 1974), then C = c B / (c - a (1 - B)); a < c."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return c * b / (c - a * (1 - b))


def erlang_lambda(x, c, mu, T, r):
    """lambda(x) = x / A(p(x)) of the erlang model with r retries
    (doc/design.md §1.1-1.3): p = P(W > T) = C(c, x/mu) e^(-(c mu - x) T)."""
    p = 1.0 if x >= c * mu else erlang_c(c, x / mu) * math.exp(
        -(c * mu - x) * T)
    return x / sum(p ** i for i in range(r + 1))


class Landscape(CliTest):
    """solve without --load: the landscape alone."""
    ERL = ("solve", "--servers", "50", "--service-time", "200ms",
           "--timeout", "2s", "--timeout-covers", "wait")

    def test_erlang_band(self):
        j = self.ok(*self.ERL, "--retries", "3", "--format", "json").json()
        self.assertEqual(j["timeout_covers"], "wait")
        self.assertEqual(set(j), {"service", "timeout_covers",
                                  "tipping_load", "recovery_load",
                                  "band", "band_width",
                                  "tipping_effective_load",
                                  "recovery_effective_load",
                                  "saturation_load", "retrial_tipping_load",
                                  "retrial_recovery_load"} | HAZARD_KEYS)
        # c mu = 50 x 5/s; the recovery load is c mu / (r + 1) (§1.3)
        self.assertEqual(j["saturation_load"], 250)
        self.assertRel(j["recovery_load"], 250 / 4, 1e-12)
        # the tipping load: the maximum of lambda(x) below c mu, by golden
        # section on the formula above
        lo, hi = 200.0, 250.0 - 1e-9
        g = (math.sqrt(5) - 1) / 2
        for _ in range(200):
            a, b = hi - g * (hi - lo), lo + g * (hi - lo)
            if erlang_lambda(a, 50, 5, 2, 3) < erlang_lambda(b, 50, 5, 2, 3):
                lo = a
            else:
                hi = b
        tip = erlang_lambda(lo, 50, 5, 2, 3)
        self.assertRel(j["tipping_load"], tip, 1e-9)
        self.assertRel(j["tipping_effective_load"], lo, 1e-6)
        self.assertTrue(j["band"])
        self.assertAlmostEqual(j["band_width"], tip - 62.5, delta=1e-9)
        text = self.ok(*self.ERL, "--retries", "3").out
        self.assertIn("bistable band    62.5 to %.6g req/s" % tip, text)

    def test_no_band(self):
        # no retries: lambda(x) = x rises everywhere, tipping = recovery = c mu
        j = self.ok(*self.ERL, "--retries", "0", "--format", "json").json()
        self.assertEqual((j["tipping_load"], j["recovery_load"], j["band"],
                          j["band_width"]), (250, 250, False, 0))
        self.assertIn("bistable band    none",
                      self.ok(*self.ERL, "--retries", "0").out)
        # capacity model, one tier, base 0.05, 2 retries: C / A(base)
        j = self.ok("solve", "--capacity", "1", "--base-failure", "0.05",
                    "--retries", "2", "--format", "json").json()
        self.assertRel(j["tipping_load"], 1 / 1.0525, 1e-15)
        self.assertFalse(j["band"])

    def test_load_unchanged(self):
        # --load gives the operating point as before: the report's keys
        j = self.ok(*self.ERL, "--retries", "3", "--load", "100",
                    "--format", "json").json()
        self.assertEqual(set(j) - {"service", "timeout_covers", "certified",
                                   "model_load", "retried_rejection_share",
                                   "retrial_attempts", "time_to_storm",
                                   "retrial_tipping_load",
                                   "retrial_recovery_load",
                                   "storm_hazard"} - HAZARD_KEYS,
                         REPORT_KEYS)
        self.assertEqual(j["equilibria"][0]["stable"], True)

    def test_options_need_load(self):
        for opt, val in (("--observed-load", "3"), ("--observed-failure",
                                                    "0.5"),
                         ("--previous", "stable"), ("--interval", "10"),
                         ("--queue-length", "5")):
            self.fails(2, "%s describes an operating point: give the "
                       "offered load with --load L" % opt, *self.ERL,
                       "--retries", "3", opt, val)


RETRIAL_SPEC = """services:
  - name: grpc
    model: erlang
    servers: 10
    service_time: 200ms
    timeout: 500ms
    timeout_covers: wait
    queue_limit: 20
    retries: 4
%s    inputs:
      offered_rate: 50
"""
GRPC_BACKOFF = ("    backoff: {kind: exponential, base: 10ms, cap: 50ms, "
                "multiplier: 2}\n")


class RetrialQueue(clitest.ScratchTest):
    """With the clients' backoff in the service file, solve reports the
    retrial queue's attempts per request (model/retrial.h, doc/design.md
    §1.9) next to the M/M/c/K model's; the reference is the discrete-event
    engine with the same backoff (grpc-js: 10 ms doubling to 50 ms)."""

    def spec(self, backoff=GRPC_BACKOFF, extra=""):
        path = self.path("s.yaml")
        with open(path, "w") as f:
            f.write(RETRIAL_SPEC % (backoff + extra))
        return path

    def des(self, spec, load):
        """Attempts per request of the DES after its first 50 s, and the
        standard error of the 50 s batch means."""
        j = self.ok("simulate", "--spec", spec, "--engine", "des", "--load",
                    str(load), "--duration", "1550s", "--sample-interval",
                    "50s", "--seed", "5", "--backoff",
                    "exponential,10ms,50ms,2", "--format", "json").json()
        w = [s for s in j["series"] if s["time"] > 50]
        q = [s["attempts"] / s["offered"] for s in w]
        mean = sum(q) / len(q)
        se = math.sqrt(sum((v - mean) ** 2 for v in q) / len(q)
                       / (len(q) - 1))
        return (sum(s["attempts"] for s in w) / sum(s["offered"] for s in w),
                se)

    def test_against_des(self):
        spec = self.spec()
        for load in (45, 55, 65):
            j = self.ok("solve", "--spec", spec, "--load", str(load),
                        "--format", "json").json()
            a_des, se = self.des(spec, load)
            a = j["retrial_attempts"]
            self.assertLess(abs(a / a_des - 1), 0.05 + 2 * se / a_des,
                            "%d/s: retrial %.4f, DES %.4f +- %.4f"
                            % (load, a, a_des, se))
            # the closed form is the one off: it takes each retry as
            # independent of the rejection before it
            if load > 45:
                self.assertGreater(abs(j["amplification"] / a_des - 1),
                                   abs(a / a_des - 1), "%d/s" % load)
        r = self.ok("solve", "--spec", spec, "--load", "55")
        self.assertRegex(r.out, r"\nretrial queue  [0-9.]+ attempts per "
                         r"request at 55 req/s with the clients' backoff")
        self.assertNotIn("\nrejections ", r.out)

    def test_loads(self):
        # the retrial queue's tipping and recovery loads (doc/design.md
        # §1.9), with and without --load, the same in text and JSON
        spec = self.spec()
        for covers in ("wait", "response"):
            land = self.ok("solve", "--spec", spec, "--timeout-covers",
                           covers, "--format", "json").json()
            at = self.ok("solve", "--spec", spec, "--timeout-covers", covers,
                         "--load", "40", "--format", "json").json()
            tip, rec = land["retrial_tipping_load"], land["retrial_recovery_load"]
            self.assertEqual((at["retrial_tipping_load"],
                              at["retrial_recovery_load"]), (tip, rec))
            # between c mu / (r + 1) and c mu; the recovery at most the
            # tipping load
            self.assertTrue(10 <= rec <= tip <= 50, (covers, rec, tip))
            text = self.ok("solve", "--spec", spec, "--timeout-covers",
                           covers).out
            m = re.search(r"\nretrial loads +tipping ([0-9.e+]+) req/s, "
                          r"recovery ([0-9.e+]+) req/s with the clients' "
                          r"backoff", text)
            if covers == "wait":
                # two loads within two bisection widths are one: no band
                m = re.search(r"\nretrial loads +no band: the attempts "
                              r"reach the servers' capacity at ([0-9.e+]+) "
                              r"req/s with the clients' backoff", text)
                self.assertIsNotNone(m, text)
                self.assertRel(float(m.group(1)), tip, 1e-5)
                continue
            self.assertIsNotNone(m, text)
            self.assertRel(float(m.group(1)), tip, 1e-5)
            self.assertRel(float(m.group(2)), rec, 1e-5)
        # on the wait the chain climbs smoothly to capacity, as the DES
        # does (§1.9's table): no band; on the response the retries after
        # rejections raise the recovery load above the landscape's
        self.assertGreater(rec, land["recovery_load"])
        wait = self.ok("solve", "--spec", spec, "--format", "json").json()
        self.assertLess(wait["retrial_tipping_load"]
                        - wait["retrial_recovery_load"],
                        0.01 * wait["retrial_tipping_load"])
        # no backoff: null, no line
        j = self.ok("solve", "--spec", self.spec(backoff=""), "--format",
                    "json").json()
        self.assertIsNone(j["retrial_tipping_load"])
        self.assertIsNone(j["retrial_recovery_load"])
        self.assertNotIn("retrial loads",
                         self.ok("solve", "--spec", self.spec(backoff="")).out)

    def test_simulate_takes_it(self):
        # simulate's default backoff is the service file's: the same run,
        # seed for seed, as the one given by --backoff; --backoff wins
        spec = self.spec()
        run = ("simulate", "--spec", spec, "--engine", "des", "--load", "55",
               "--duration", "200s", "--seed", "3", "--format", "json")
        got = self.ok(*run).json()
        want = self.ok(*run, "--backoff", "exponential,10ms,50ms,2").json()
        self.assertEqual(got["backoff"], "exponential, base 0.01 s, cap "
                         "0.05 s")
        self.assertEqual(got["series"], want["series"])
        none = self.ok(*run, "--backoff", "none").json()
        self.assertEqual(none["backoff"], "none")
        self.assertNotEqual(none["series"], got["series"])

    def test_no_answer(self):
        # no backoff: null, and the text says to give one
        spec = self.spec(backoff="")
        j = self.ok("solve", "--spec", spec, "--load", "55",
                    "--format", "json").json()
        self.assertIsNone(j["retrial_attempts"])
        r = self.ok("solve", "--spec", spec, "--load", "55")
        self.assertIn("(key 'backoff')", r.out)
        # without a spec, or without retried rejections: null, no line
        for args in (("--servers", "10", "--service-time", "200ms",
                      "--timeout", "500ms", "--queue-limit", "20",
                      "--retries", "4"),
                     ("--spec", self.spec(), "--no-retry-rejections"),
                     ("--spec", self.spec(), "--retries", "0")):
            j = self.ok("solve", *args, "--load", "55", "--format",
                        "json").json()
            self.assertIsNone(j["retrial_attempts"], args)
            r = self.ok("solve", *args, "--load", "55")
            self.assertNotIn("retrial queue  ", r.out)
        # a backoff without a wait: the chain refuses it, and says why
        spec = self.spec(backoff="    backoff: {kind: none}\n")
        j = self.ok("solve", "--spec", spec, "--load", "55",
                    "--format", "json").json()
        self.assertIsNone(j["retrial_attempts"])
        r = self.ok("solve", "--spec", spec, "--load", "55")
        self.assertRegex(r.out, r"\nrejections .*retried: the retrial "
                         r"queue: .*needs a backoff")
        # outside the chain's model
        spec = self.spec(extra="    service_time_cv: 2\n")
        r = self.ok("solve", "--spec", spec, "--load", "55")
        self.assertIn("the retrial queue does not model a service_time_cv",
                      r.out)


if __name__ == "__main__":
    clitest.main()
