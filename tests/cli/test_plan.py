#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable plan: every number of the plan statement against a
computation written out here (doc/design.md §1.10): Erlang C by its
recursion, the response time tail by numerical integration of the wait's
density, the thresholds by bisection over those, the loads by the
landscape of `metastable solve`."""
import math

import clitest
from clitest import SPEC, CliTest


def erlang_c(c, a):
    """Erlang C by the Erlang B recursion (Kleinrock 1975, eq. 3.40)."""
    b = 1.0
    for n in range(1, c + 1):
        b = a * b / (n + a * b)
    return c * b / (c - a * (1 - b))


def wait_tail(c, mu, x, T):
    """P(W > T) in M/M/c (Kleinrock 1975, eq. 3.41)."""
    if x >= c * mu:
        return 1.0
    return erlang_c(c, x / mu) * math.exp(-(c * mu - x) * T)


def response_tail_quad(c, mu, x, H, n=4000):
    """P(W + S > H) by Simpson's rule over the wait's density: W = 0 with
    probability 1 - C, else exponential of rate g = c mu - x; S ~ Exp(mu):
    P = (1 - C) e^(-mu H) + C [e^(-g H) + int_0^H g e^(-g w) e^(-mu (H - w)) dw]
    """
    C = erlang_c(c, x / mu)
    g = c * mu - x
    h = H / n
    f = [g * math.exp(-g * w) * math.exp(-mu * (H - w))
         for w in (i * h for i in range(n + 1))]
    integral = h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))
    return (1 - C) * math.exp(-mu * H) + C * (math.exp(-g * H) + integral)


def bisect(f, lo, hi, iters=200):
    """The x in [lo, hi] where the increasing f crosses 0."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if f(mid) >= 0:
            hi = mid
        else:
            lo = mid
    return hi


ISSUE = ("--servers", "50", "--service-time", "200ms", "--timeout", "2s", "--timeout-covers", "wait",
         "--retries", "3")


class Plan(CliTest):
    def plan(self, *args):
        return self.ok("plan", *args, "--format", "json").json()

    def tipping(self, *args):
        return self.ok("solve", *args, "--load", "1",
                       "--format", "json").json()

    def test_queue_bound_by_hand(self):
        # 200 servers x 10/s = 2,000 req/s; x 0.2 s = 400 waiting places
        j = self.plan("--servers", "200", "--service-time", "100ms",
                      "--timeout", "1s", "--timeout-covers", "wait", "--retries", "3",
                      "--latency-objective", "200ms")
        self.assertEqual(j["capacity"], 2000)
        self.assertEqual(j["queue_bound"], 400)
        self.assertEqual(j["latency_objective"], 0.2)
        # the default latency objective is the timeout: 2,000 x 1 s
        j = self.plan("--servers", "200", "--service-time", "100ms",
                      "--timeout", "1s", "--timeout-covers", "wait", "--retries", "3")
        self.assertEqual(j["queue_bound"], 2000)

    def test_latency_objective_sets_no_queue(self):
        # here --latency-objective is the plan's, not the model's queue:
        # the tipping load is the unbounded queue's
        j = self.plan(*ISSUE, "--latency-objective", "0.5s")
        s = self.tipping(*ISSUE)
        self.assertEqual(j["tipping_load"], s["tipping_load"])

    def test_inflight_capacity(self):
        # 50 slots held 2 s each: 25 req/s, 1 / (mu T) = 0.2 s / 2 s = 0.1
        j = self.plan(*ISSUE)
        self.assertAlmostEqual(j["inflight_capacity"], 25, places=12)
        self.assertAlmostEqual(j["inflight_ratio"], 0.1, places=12)

    def test_loads_match_solve(self):
        for args in (ISSUE, ("--spec", SPEC, "--service", "checkout"),
                     ("--spec", SPEC, "--service", "unit-capacity")):
            j, s = self.plan(*args), self.tipping(*args)
            self.assertEqual(j["tipping_load"], s["tipping_load"], args)
            self.assertEqual(j["recovery_load"], s["recovery_load"], args)
            self.assertAlmostEqual(
                j["band_width"], s["tipping_load"] - s["recovery_load"],
                delta=1e-12 * s["tipping_load"])

    def test_response_tail_against_quadrature(self):
        # the health check's threshold x_H: where P(W + S > H) computed by
        # quadrature here crosses the tolerance (base failure 0)
        c, mu, H, F = 50, 5.0, 1.0, 0.01
        j = self.plan(*ISSUE, "--health-check-timeout", "1s")
        want = bisect(lambda x: response_tail_quad(c, mu, x, H) - F,
                      0.0, c * mu - 1e-9, iters=80)
        self.assertAlmostEqual(j["health_check_effective_load"], want,
                               delta=1e-7 * want)
        # the offered load at which the healthy equilibrium sends x_H:
        # x / A(p(x)), p = P(W > T), three retries
        x = j["health_check_effective_load"]
        p = wait_tail(c, mu, x, 2.0)
        lam = x / sum(p ** i for i in range(4))
        self.assertAlmostEqual(j["health_check_load"], lam, delta=1e-9 * lam)
        self.assertLess(j["health_check_load"], j["tipping_load"])

    def test_health_check_with_base_failure_and_tolerance(self):
        # with a base failure b the probe fails with 1 - (1-b)(1-tail)
        c, mu, H, F, b = 10, 10.0, 0.6, 0.05, 0.02
        j = self.plan("--servers", "10", "--service-time", "100ms",
                      "--timeout", "200ms", "--timeout-covers", "wait", "--retries", "1",
                      "--base-failure", "0.02", "--health-check-timeout",
                      "600ms", "--health-check-tolerance", "5%")
        want = bisect(lambda x: 1 - (1 - b) * (1 - response_tail_quad(
            c, mu, x, H)) - F, 0.0, c * mu - 1e-9, iters=80)
        self.assertAlmostEqual(j["health_check_effective_load"], want,
                               delta=1e-7 * want)

    def test_health_check_idle_and_beyond_tipping(self):
        # checkout: mu = 10/s, H = 0.2 s: e^(-2) = 13.5 % of idle responses
        # are slower than H, above 1 %: removal at any load
        j = self.plan("--spec", SPEC, "--service", "checkout")
        self.assertGreater(math.exp(-2), 0.01)
        self.assertEqual(j["health_check_effective_load"], 0)
        # H = 1 s: the threshold lies beyond the tipping point's effective
        # load, so no healthy offered load reaches it (null)
        j = self.plan("--spec", SPEC, "--service", "checkout",
                      "--health-check-timeout", "1s")
        want = bisect(lambda x: response_tail_quad(10, 10.0, x, 1.0) - 0.01,
                      0.0, 100 - 1e-9, iters=80)
        self.assertAlmostEqual(j["health_check_effective_load"], want,
                               delta=1e-7 * want)
        self.assertIsNone(j["health_check_load"])

    def test_idle_response(self):
        # the timeout on the response: an idle pool fails e^(-mu T) =
        # e^-2 of its attempts; the amplification there is A(e^-2) and
        # retries begin where P(W + S > T) passes 1 - (1 - e^-2)(1 - 1 %)
        j = self.plan("--servers", "10", "--service-time", "100ms",
                      "--timeout", "200ms", "--retries", "3")
        p0 = math.exp(-2.0)
        self.assertAlmostEqual(j["idle_failure"], p0, delta=1e-15)
        self.assertAlmostEqual(j["retry_amplification"],
                               sum(p0 ** i for i in range(4)), delta=1e-14)
        target = 1 - (1 - p0) * 0.99
        x = bisect(lambda x: response_tail_quad(10, 10.0, x, 0.2) - target,
                   0.0, 100 - 1e-9, iters=80)
        self.assertAlmostEqual(j["retry_onset_effective_load"], x,
                               delta=1e-6 * x)

    def test_retry_onset(self):
        # checkout: the x with P(W > T) = 1 %, below the tipping point
        j = self.plan("--spec", SPEC, "--service", "checkout")
        x = bisect(lambda x: wait_tail(10, 10.0, x, 0.2) - 0.01, 0.0,
                   100 - 1e-12)
        self.assertAlmostEqual(j["retry_onset_effective_load"], x,
                               delta=1e-9 * x)
        lam = x / sum(0.01 ** i for i in range(4))
        self.assertAlmostEqual(j["retry_onset_load"], lam, delta=1e-9 * lam)
        self.assertLess(j["retry_onset_load"], j["tipping_load"])
        # the issue's service tips where fewer than 1 % fail: no onset on
        # the healthy branch (null)
        j = self.plan(*ISSUE)
        self.assertIsNone(j["retry_onset_load"])
        # the capacity model: 1 - (1 - b) C / x = 1 - (1 - b) 0.99 at
        # x = C / 0.99
        j = self.plan("--spec", SPEC, "--service", "unit-capacity")
        self.assertAlmostEqual(j["retry_onset_effective_load"], 1 / 0.99,
                               delta=1e-12)

    def test_amplification(self):
        # base 10 %, 3 retries: 1 + 0.1 + 0.01 + 0.001
        j = self.plan("--spec", SPEC, "--service", "unit-capacity")
        self.assertAlmostEqual(j["retry_amplification"], 1.111, places=13)
        # 4 tiers of 3 retries: (3 + 1)^4 = 256; a 10 % budget caps a full
        # storm at (1 / 0.9)^4
        j = self.plan(*ISSUE, "--tiers", "4")
        self.assertEqual(j["worst_case_amplification"], 256)
        self.assertEqual(j["storm_amplification"], 256)
        j = self.plan(*ISSUE, "--tiers", "4", "--retry-budget", "0.1")
        self.assertEqual(j["worst_case_amplification"], 256)
        self.assertAlmostEqual(j["storm_amplification"], (1 / 0.9) ** 4,
                               places=12)

    def test_text(self):
        r = self.ok("plan", *ISSUE, "--health-check-timeout", "1s",
                    "--latency-objective", "0.5s")
        self.assertIn("250 req/s x 0.5 s = 125 requests waiting", r.out)
        self.assertIn("50 slots / 2 s = 25 requests/s, 0.1 of the normal",
                      r.out)

    def test_usage(self):
        self.fails(2, "--health-check-tolerance", "plan", *ISSUE,
                   "--health-check-tolerance", "1")
        self.fails(2, "--latency-objective", "plan", *ISSUE,
                   "--latency-objective", "0")
        self.fails(2, "--format", "plan", *ISSUE, "--format", "csv")


if __name__ == "__main__":
    clitest.main()
