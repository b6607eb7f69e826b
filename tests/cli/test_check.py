#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable check: a service file validated as the plugin loads it; the
tipping and recovery loads it prints are the ones `metastable solve` gives
for the same service (the independent reference here); located errors;
every warning both triggered and not."""
import math
import os
import re
import tempfile

import clitest
from clitest import DATA, SPEC, ScratchTest

BASE = {
    "name": "svc", "model": "erlang", "servers": "10",
    "service_time": "100ms", "timeout": "1s", "retries": "3",
}
COLLECTD = {"offered_rate": "web1/statsd/derive-requests",
            "retry_rate": "web1/statsd/derive-retries"}


def service_file(keys=None, inputs=None, drop=()):
    """A one-service file: BASE with keys changed, the inputs given."""
    k = dict(BASE)
    k.update(keys or {})
    lines = ["services:", "  - name: %s" % k.pop("name")]
    lines += ["    %s: %s" % (a, b) for a, b in k.items() if a not in drop]
    lines.append("    inputs:")
    for a, b in (COLLECTD if inputs is None else inputs).items():
        lines.append("      %s: %s" % (a, b))
    return "\n".join(lines) + "\n"


class Check(ScratchTest):
    def write(self, text, name="s.yaml"):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def check(self, *args):
        return clitest.run("check", *args)

    def warnings(self, r):
        return [l for l in r.err.splitlines() if ": warning: " in l]

    def test_loads_equal_solve(self):
        r = self.check("--format", "json", SPEC)
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertEqual([s["name"] for s in j["services"]],
                         ["checkout", "unit-capacity", "pool"])
        for s in j["services"]:
            with self.subTest(service=s["name"]):
                extra = ("--servers", "1") if s["name"] == "pool" else ()
                ref = self.ok("solve", "--spec", SPEC, "--service", s["name"],
                              *extra, "--load", "1", "--format",
                              "json").json()
                self.assertEqual(s["tipping_load"], ref["tipping_load"])
                self.assertEqual(s["recovery_load"], ref["recovery_load"])
        checkout, cap, pool = j["services"]
        self.assertAlmostEqual(checkout["tipping_load"], 83.2329, delta=1e-4)
        self.assertEqual(checkout["recovery_load"], 25)  # c mu / (r + 1)
        self.assertTrue(checkout["band"])
        self.assertEqual(checkout["parameters"]["servers"], 10)
        self.assertEqual(checkout["storm_flag"], "observations")
        self.assertEqual(checkout["observed_attempts_from"],
                         "offered_rate + retry_rate")
        self.assertFalse(cap["band"])
        self.assertEqual(cap["tipping_load"], 1000 / 1111)  # C / A(base)
        self.assertEqual(cap["observed_failure_from"],
                         "error_rate / arrival_rate")
        self.assertEqual(pool["servers_from"], "pool_size")
        self.assertIsNone(pool["parameters"]["servers"])
        self.assertNotIn("service_time_cv", checkout["parameters"])
        self.assertEqual(pool["loads_at_servers"], 1)
        self.assertEqual(pool["recovery_load"], 2.5)  # 1 x 10 / 4
        self.assertEqual(pool["storm_flag"], "model")
        # the pool service has no observation: its one warning
        self.assertEqual([w["service"] for w in j["warnings"]], ["pool"])
        self.assertEqual(self.warnings(r), [
            "%s:30:5: warning: %s" % (SPEC, j["warnings"][0]["message"])])

    def test_service_time_cv(self):
        """A service's service_time_cv is among its parameters."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.yaml")
            with open(path, "w") as f:
                f.write("services:\n  - name: api\n    model: erlang\n"
                        "    servers: 10\n    service_time: 100ms\n"
                        "    timeout: 1s\n    timeout_covers: wait\n    service_time_cv: 2\n"
                        "    retries: 3\n    inputs:\n"
                        "      offered_rate: 60\n")
            r = self.check(path, "--format", "json")
            self.assertEqual(r.code, 0, r)
            (svc,) = r.json()["services"]
            self.assertEqual(svc["parameters"]["service_time_cv"], 2)
            self.assertIn("(cv 2)", svc["summary"])

    def test_text(self):
        r = self.check(SPEC)
        self.assertEqual(r.code, 0, r)
        # the pool service's warning: valid, and the word says why not clean
        self.assertTrue(r.out.startswith("%s: 3 services, valid, 1 warning\n"
                                         % SPEC))
        self.assertIn("checkout (line 6): erlang model: 10 servers, service "
                      "time 100 ms, timeout 200 ms on the wait, 3 retries\n"
                      "  tipping load   83.2329 req/s\n"
                      "  recovery load  25 req/s\n", r.out)
        self.assertIn("  tipping load   0.90009 req/s (no hysteresis band)",
                      r.out)
        self.assertIn("  servers        from pool_size: the loads depend on "
                      "the pool size; here at 1\n"
                      "  tipping load   4.45025 req/s\n", r.out)
        self.assertIn("  storm flag     from the model alone", r.out)

    def test_calibration(self):
        """What calibrate: learns and its settings, as the file says."""
        inputs = dict(COLLECTD, busy_servers="h/phpfpm-www/gauge-active",
                      completion_rate="h/phpfpm-www/derive-accepted",
                      arrival_rate="h/p/derive-attempts",
                      error_rate="h/p/derive-errors")
        path = self.write(service_file(
            {"calibrate": "[base_failure, service_time]",
             "calibration_time": "600s", "calibration_intervals": "20",
             "calibration_threshold": "0.05"}, inputs))
        r = self.check("--format", "json", path)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.json()["services"][0]["calibrate"],
                         ["service_time", "base_failure"])
        r = self.check(path)
        self.assertIn("calibration    learns service_time (busy_servers / "
                      "completion_rate), base_failure; time constant 600 s, "
                      "in use after 20 samples, landscape rebuilt past 5 %",
                      r.out)
        # without calibrate: the estimate is reported, the model unchanged
        path = self.write(service_file(None, inputs))
        r = self.check(path)
        self.assertIn("calibration    none: service_time_estimate reported",
                      r.out)
        self.assertEqual(self.check("--format", "json", path).json()
                         ["services"][0]["calibrate"], [])
        # a located error when the inputs cannot give what is learned
        path = self.write(service_file({"calibrate": "[service_time]"}))
        r = self.check(path)
        self.assertEqual(r.code, 1, r)
        self.assertRegex(r.err, r"s\.yaml:\d+:\d+: calibrate: service_time "
                         r"needs the inputs busy_servers and completion_rate")

    def test_pool_with_servers(self):
        p = self.write(service_file(inputs=dict(COLLECTD,
                                                pool_size="web1/pool/gauge")))
        j = self.check("--format", "json", p).json()["services"][0]
        ref = self.ok("solve", "--spec", p, "--load", "1", "--format",
                      "json").json()
        self.assertEqual(j["loads_at_servers"], 10)
        self.assertEqual(j["tipping_load"], ref["tipping_load"])
        self.assertEqual(j["recovery_load"], 25)

    def test_errors(self):
        self.fails(1, "bad.yaml:4:14: servers = -3 is outside [1, 10000000] "
                   "(key 'servers')", "check", os.path.join(DATA, "bad.yaml"))
        self.fails(1, "no-such.yaml: cannot open: No such file or directory",
                   "check", "no-such.yaml")
        p = self.write(service_file({"timeout": "1e17"}))
        self.fails(1, "s.yaml:2:5: service 'svc': timeout = 1e+17 s: timeout "
                   "x servers x service rate = 1e+19 must be at most 1e+15",
                   "check", p)
        self.fails(2, "give the service file: FILE", "check")
        self.fails(2, "unexpected argument 'b.yaml'", "check", "a.yaml",
                   "b.yaml")
        self.fails(2, "--format: 'csv' is not one of: text, json", "check",
                   "--format", "csv", SPEC)

    def assertWarns(self, text, pattern, present=True, *args):
        p = self.write(text)
        r = self.check(*args, p)
        self.assertEqual(r.code, 0, r)
        hits = [w for w in self.warnings(r) if re.search(pattern, w)]
        if present:
            self.assertEqual(len(hits), 1, r)
            self.assertTrue(hits[0].startswith(p + ":"), r)
        else:
            self.assertEqual(hits, [], r)
        return r

    def test_clean_file(self):
        r = self.assertWarns(service_file(), "warning", False)
        self.assertEqual(r.err, "")
        self.assertTrue(r.out.startswith(": 1 service, valid\n", len(
            self.path("s.yaml"))), r)
        r = self.check("--strict", self.write(service_file()))
        self.assertEqual(r.code, 0, r)
        self.assertIn(": 1 service, valid\n", r.out)
        j = self.check("--strict", "--format", "json",
                       self.write(service_file())).json()
        self.assertEqual((j["valid"], j["strict"], j["warnings"]),
                         (True, True, []))

    def test_service_time_over_timeout(self):
        pat = r":2:5: warning: service 'svc': the service time 1 s is " \
              r"longer than the timeout 0.5 s"
        self.assertWarns(service_file({"service_time": "1s",
                                       "timeout": "500ms",
                                       "timeout_covers": "wait"}), pat)
        # on the response: the share failing on an idle pool, e^(-mu T) =
        # e^-2 at two service times (13.5 %); none at three (5.0 %)
        pat = r":2:5: warning: service 'svc': the timeout 0.2 s is 2 " \
              r"service times: it times the whole response " \
              r"\(timeout_covers: response\), so 13.5 % of attempts fail " \
              r"even on an idle pool"
        self.assertWarns(service_file({"service_time": "100ms",
                                       "timeout": "200ms"}), pat)
        self.assertWarns(service_file({"service_time": "100ms",
                                       "timeout": "300ms"}), "idle", False)
        # a range: e^(-mu T) averaged over [T1, T2], (e^(-mu T1) -
        # e^(-mu T2)) / (mu (T2 - T1)): 74.6 % over 10 to 50 ms
        want = (math.exp(-0.1) - math.exp(-0.5)) / (10 * 0.04)
        self.assertWarns(service_file({"service_time": "100ms",
                                       "timeout": "10ms..50ms"}),
                         r"the timeout 0.01 s to 0.05 s is 0.1 service "
                         r"times or more: .* so %.3g %% of attempts fail "
                         r"even on an idle pool" % (100 * want))
        self.assertWarns(service_file({"service_time": "1s",
                                       "timeout": "1s",
                                       "timeout_covers": "wait"}),
                         "service time", False)

    def test_wait_tail_underflows(self):
        # c mu T = 10 x 10 x T: warned from 1e12 on, refused above 1e15
        pat = (r"timeout x servers x service rate = 1e\+12: the wait tail "
               r"P\(W > T\) underflows to 0 below 99\.99999993 %")
        self.assertWarns(service_file({"timeout": "1e10"}), pat)
        self.assertWarns(service_file({"timeout": "1e13"}),
                         r"service rate = 1e\+15: the wait tail")
        self.assertWarns(service_file({"timeout": "9.9e9"}), "wait tail",
                         False)
        # the percentage is 1 - 744.44 / (c mu T), the smallest double's log
        r = self.check("--format", "json",
                       self.write(service_file({"timeout": "1e10"})))
        msg = r.json()["warnings"][0]["message"]
        want = 100 * (1 - 744.44007192138126 / 1e12)
        self.assertIn("%.10g %%" % want, msg)

    def test_retried_rejections(self):
        # a retry right after a rejection is not independent of it
        # (doc/design.md §1.9): warned whenever rejections are retried
        pat = (r":2:5: warning: service 'svc': rejected attempts are "
               r"retried: .* metastable simulate --engine des")
        self.assertWarns(service_file({"queue_limit": "20"}), pat)
        self.assertWarns(service_file({"queue_limit": "20",
                                       "retry_rejections": "true"}), pat)
        self.assertWarns(service_file({"queue_limit": "20",
                                       "retry_rejections": "false"}),
                         "rejected attempts", False)
        self.assertWarns(service_file({"queue_limit": "20",
                                       "retries": "0"}),
                         "rejected attempts", False)
        self.assertWarns(service_file(), "rejected attempts", False)
        # with the clients' backoff solve reports the retrial queue: quiet
        self.assertWarns(service_file({
            "queue_limit": "20",
            "backoff": "{kind: exponential, base: 10ms, cap: 50ms}"}),
            "rejected attempts", False)
        # ... a timeout range too (the retrial queue averages over it)
        self.assertWarns(service_file({
            "queue_limit": "20", "timeout": "400ms..900ms",
            "backoff": "{kind: exponential, base: 10ms, cap: 50ms}"}),
            "rejected attempts", False)
        # ... unless the retrial queue does not model the service (the
        # reason is solve's): a service_time_cv here
        self.assertWarns(service_file({
            "queue_limit": "20", "service_time_cv": "2",
            "timeout_covers": "wait",
            "backoff": "{kind: exponential, base: 10ms, cap: 50ms}"}),
            r"rejected attempts are retried with a backoff, but the retrial "
            r"queue that solve reports for them does not model a "
            r"service_time_cv")

    def test_pool_refused_above(self):
        # mu T = 10 x 1e12: a pool above 100 servers breaks the rule
        text = service_file({"timeout": "1e12"}, drop=("servers",),
                            inputs=dict(COLLECTD, pool_size="w/p/gauge"))
        self.assertWarns(text, r"a pool_size above 100 servers gives no "
                         r"verdict")
        self.assertWarns(service_file(inputs=dict(COLLECTD,
                                                  pool_size="w/p/gauge")),
                         "pool_size above", False)

    def test_no_observation(self):
        pat = "its inputs give no observation, so the storm flag comes " \
              "from the model alone"
        self.assertWarns(service_file(inputs={
            "offered_rate": COLLECTD["offered_rate"]}), pat)
        self.assertWarns(service_file(), pat, False)
        self.assertWarns(service_file(inputs={
            "arrival_rate": "w/s/derive-attempts",
            "error_rate": "w/s/derive-errors"}), "storm flag", False)
        # constants observe nothing
        self.assertWarns(service_file(inputs={
            "offered_rate": COLLECTD["offered_rate"], "retry_rate": "2"}),
            "its observations come from constants only")

    def test_offered_from_constants(self):
        pat = r":9:21: warning: service 'svc': the offered load " \
              r"\(offered_rate\) comes only from constants"
        self.assertWarns(service_file(inputs={
            "offered_rate": "5", "retry_rate": COLLECTD["retry_rate"]}), pat)
        self.assertWarns(service_file(), "only from constants", False)
        self.assertWarns(service_file(inputs={
            "arrival_rate": "50", "retry_rate": "w/s/derive-retries"}),
            "only from constants", False)

    def test_error_rate_unused(self):
        self.assertWarns(service_file(inputs=dict(
            COLLECTD, error_rate="w/s/derive-errors")),
            "error_rate is not used without arrival_rate")

    def test_bare_duration(self):
        # the rule of doc/configuration.md, "Units and bare numbers"; its
        # edges are tests/check_service.c's
        pat = (r":6:14: warning: service 'svc': timeout: 500 was read as "
               r"500 s, 5,000 times the service time; write 500ms if you "
               r"meant milliseconds$")
        text = service_file({"timeout": "500"})
        self.assertWarns(text, pat)
        self.assertWarns(service_file({"timeout": "500s"}), "was read as",
                         False)
        self.assertWarns(service_file({"timeout": "1"}), "was read as",
                         False)
        self.assertWarns(service_file({"service_time": "100",
                                       "timeout": "500ms"}),
                         r":5:19: warning: service 'svc': service_time: 100 "
                         r"was read as 100 s, 200 times the timeout; write "
                         r"100ms if you meant milliseconds$")
        # a warning: exit 0, or 1 under --strict
        p = self.write(text)
        self.assertEqual(self.check("--strict", p).code, 1)
        j = self.check("--format", "json", p).json()
        self.assertEqual([w["message"] for w in j["warnings"]
                          if "was read as" in w["message"]],
                         ["service 'svc': timeout: 500 was read as 500 s, "
                          "5,000 times the service time; write 500ms if you "
                          "meant milliseconds"])

    def test_strict(self):
        """The word matches the exit status: "valid, N warnings" with 0;
        under --strict "not valid" with 1; text and JSON, with and
        without --shards."""
        p = self.write(service_file({"timeout": "1e10s"}))
        r = self.check("--strict", p)
        self.assertEqual(r.code, 1, r)
        self.assertEqual(len(self.warnings(r)), 1, r)
        self.assertIn("tipping load", r.out)
        self.assertTrue(r.out.startswith(
            "%s: 1 service, not valid, 1 warning (--strict)\n" % p), r)
        r = self.check(p)
        self.assertEqual(r.code, 0, r)
        self.assertTrue(r.out.startswith(
            "%s: 1 service, valid, 1 warning\n" % p), r)
        # two warnings: the count is the warnings printed
        p2 = self.write(service_file({"timeout": "1e10s"}, inputs={
            "offered_rate": COLLECTD["offered_rate"]}), "two.yaml")
        r = self.check(p2)
        self.assertEqual(len(self.warnings(r)), 2, r)
        self.assertIn(": 1 service, valid, 2 warnings\n", r.out)
        r = self.check("--strict", "--shards", "2", p2)
        self.assertEqual(r.code, 1, r)
        self.assertIn(": 1 service, not valid, 2 warnings (--strict)\n",
                      r.out)
        for strict, code in ((False, 0), (True, 1)):
            args = ["--format", "json"] + (["--strict"] if strict else [])
            r = self.check(*args, p)
            self.assertEqual(r.code, code, r)
            j = r.json()
            self.assertEqual((j["valid"], j["strict"]), (not strict, strict))
            self.assertEqual(len(j["warnings"]), 1)


if __name__ == "__main__":
    clitest.main()
