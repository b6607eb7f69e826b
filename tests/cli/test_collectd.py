#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable check --collectd and metastable init --collectd against a
stand-in for collectd's unixsock plugin (fakecollectd.py, which answers
as collectd 5.12 does; tests/integration/test_collectd_check.py runs the
same against collectd itself).

check: each input found with the value the stand-in holds (a glob's sum
computed here from the values given, with its scale); each missing one a
warning at its line and column, whose did-you-mean is the one an
independent implementation of the documented ranking gives (Levenshtein
by its recursive definition, part by part); the word and the exit status
agree, with and without --strict; the socket's errors and a hung server
(the timeout fires).  init: the recognised groups become services whose
inputs are the identifiers given; check refuses the draft at its first
FILL_IN, and accepts it, with every input found, once they are filled.
"""
import fnmatch
import functools
import os
import re
import socket
import sys
import time

import clitest
from clitest import SRCDIR, ScratchTest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakecollectd import FakeCollectd  # noqa: E402

GUIDE = os.path.join(SRCDIR, "doc/metastable.md")

NAN = float("nan")
VALUES = {
    "web1/statsd/derive-checkout_requests": {"value": 12.5},
    "web1/statsd/derive-checkout_attempts": {"value": 15.0},
    "web1/statsd/derive-checkout_retries": {"value": 2.5},
    "web1/statsd/derive-checkout_errors": {"value": 0.75},
    "h1/statsd/derive-fleet_retries": {"value": 1.25},
    "h2/statsd/derive-fleet_retries": {"value": 2.0},
    "h3/statsd/derive-fleet_retries": {"value": NAN},
    "web1/interface-eth0/if_octets": {"rx": 10.0, "tx": 20.0},
    "web1/cpu-0/cpu-idle": {"value": 98.0},
}

HEAD = ("services:\n  - name: svc\n    model: erlang\n    servers: 10\n"
        "    service_time: 100ms\n    timeout: 1s\n    retries: 3\n"
        "    inputs:\n")


@functools.lru_cache(maxsize=None)
def lev(a, b):
    """Levenshtein's distance by its recursive definition."""
    if not a or not b:
        return len(a) + len(b)
    return min(lev(a[:-1], b) + 1, lev(a, b[:-1]) + 1,
               lev(a[:-1], b[:-1]) + (a[-1] != b[-1]))


def part_ok(p, q):
    if any(c in p for c in "*?["):
        return fnmatch.fnmatchcase(q, p)
    return p == q


def distance(pattern, name):
    """(distance, the indexes of the parts that differ), or None:
    doc/metastable.md, check."""
    p, q = pattern.split("/"), name.split("/")
    if len(p) != 3 or len(q) != 3:
        return None
    d, parts = 0, []
    for k, (a, b) in enumerate(zip(p, q)):
        if not part_ok(a, b):
            d += lev(a, b)
            parts.append(k)
    return (max(d, 1) if parts else 0), parts


def suggestions(pattern, names, k=3):
    """The documented ranking: at most k, at a distance of at most a
    fifth of the pattern's letters (at least 2) or differing in the host
    alone, nearest first, then fewer parts, then by name; none past the
    nearest's distance d plus max(1, d // 2); a glob keeps the parts that
    matched."""
    limit = max(2, len(pattern.replace("/", "")) // 5)
    near = []
    for n in names:
        r = distance(pattern, n)
        if r is None:
            continue
        if r[0] == 0:
            return []
        if r[0] <= limit or r[1] == [0]:
            near.append((r[0], len(r[1]), n))
    near = sorted(near)[:k]
    if near:
        top = near[0][0]
        near = [x for x in near if x[0] <= top + max(1, top // 2)]
    out = []
    for _, _, n in near:
        if any(c in pattern for c in "*?["):
            n = "/".join(a if part_ok(a, b) else b
                         for a, b in zip(pattern.split("/"), n.split("/")))
        if n not in out:
            out.append(n)
    return out


class Collectd(ScratchTest):
    def serve(self, values=VALUES, mode="serve"):
        fake = FakeCollectd(self.path("collectd.sock"), values, mode)
        self.addCleanup(fake.stop)
        return fake

    def spec(self, inputs):
        path = self.path("s.yaml")
        with open(path, "w") as f:
            f.write(HEAD + "".join(
                "      %s: %s\n" % (k, v if v.startswith("{") else '"%s"' % v)
                for k, v in inputs.items()))
        return path

    def check(self, *args):
        return clitest.run("check", "--collectd", self.path("collectd.sock"),
                           *args)


class CheckFound(Collectd):
    INPUTS = {
        "offered_rate": "web1/statsd/derive-checkout_requests",
        "arrival_rate": "web1/statsd/derive-checkout_attempts",
        "retry_rate": '{source: "*/statsd/derive-fleet_retries", scale: 4}',
    }

    def test_values(self):
        self.serve()
        r = self.check("--format", "json", "--strict",
                       self.spec(self.INPUTS))
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err, "")
        j = r.json()
        self.assertTrue(j["valid"])
        self.assertEqual(j["collectd"]["identifiers"], len(VALUES))
        self.assertEqual(j["collectd"]["inputs_found"], 3)
        self.assertEqual(j["collectd"]["inputs_missing"], 0)
        probe = j["services"][0]["collectd"]["inputs"]
        self.assertEqual(probe["offered_rate"]["value"], 12.5)
        self.assertEqual(probe["offered_rate"]["matches"], [
            {"identifier": "web1/statsd/derive-checkout_requests",
             "data_sources": 1, "value": 12.5}])
        # the glob: every match, the sum of those with a rate, scaled
        glob = probe["retry_rate"]
        fleet = sorted(n for n in VALUES if n.endswith("fleet_retries"))
        self.assertEqual([m["identifier"] for m in glob["matches"]], fleet)
        self.assertIsNone(glob["matches"][2]["value"])  # NaN: no rate yet
        self.assertEqual(glob["with_rate"], 2)
        self.assertEqual(glob["scale"], 4)
        self.assertEqual(glob["value"], 4 * (1.25 + 2.0))
        self.assertEqual(glob["suggestions"], [])

    def test_text(self):
        self.serve()
        r = self.check(self.spec(self.INPUTS))
        self.assertEqual(r.code, 0, r)
        self.assertIn(": 1 service, valid\ncollectd at %s: %d identifiers; "
                      "3 of 3 inputs found\n"
                      % (self.path("collectd.sock"), len(VALUES)), r.out)
        self.assertIn(
            "  in collectd    arrival_rate    "
            "web1/statsd/derive-checkout_attempts = 15\n"
            "                 offered_rate    "
            "web1/statsd/derive-checkout_requests = 12.5\n"
            "                 retry_rate      */statsd/derive-fleet_retries: "
            "3 matches, sum 3.25 of the 2 with a rate (x 4 = 13, as the "
            "plugin reads it)\n"
            "                                   h1/statsd/derive-fleet_retries"
            " = 1.25\n", r.out)
        self.assertIn("h3/statsd/derive-fleet_retries = no rate yet", r.out)

    def test_two_data_sources(self):
        self.serve()
        r = self.check("--format", "json", self.spec(dict(
            self.INPUTS, queue_length="web1/interface-eth0/if_octets")))
        self.assertEqual(r.code, 0, r)
        (w,) = r.json()["warnings"]
        self.assertEqual((w["line"], w["column"]), (12, 21))
        self.assertIn("'web1/interface-eth0/if_octets' has 2 data sources; "
                      "the plugin reads a type with one", w["message"])


class CheckMissing(Collectd):
    def test_misspelt(self):
        self.serve()
        inputs = {
            "offered_rate": "web1/statsd/derive-checkout_requets",
            "arrival_rate": "web2/statsd/derive-checkout_attempts",
            "retry_rate": "*/statsd/derive-fleet_retrys",
            "error_rate": "web1/statsd/derive-payment_errors",
        }
        path = self.spec(inputs)
        r = self.check("--format", "json", path)
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertTrue(j["valid"])
        self.assertEqual(j["collectd"]["inputs_missing"], 4)
        probe = j["services"][0]["collectd"]["inputs"]
        for key, pattern in inputs.items():
            with self.subTest(input=key):
                self.assertFalse(probe[key]["found"])
                self.assertEqual(probe[key]["suggestions"],
                                 suggestions(pattern, list(VALUES)))
        # the ranking's answers, spelt out
        self.assertEqual(probe["offered_rate"]["suggestions"],
                         ["web1/statsd/derive-checkout_requests"])
        self.assertEqual(probe["arrival_rate"]["suggestions"],
                         ["web1/statsd/derive-checkout_attempts"])
        self.assertEqual(probe["retry_rate"]["suggestions"],
                         ["*/statsd/derive-fleet_retries"])
        # one warning per input, at its place; a statsd counter with no
        # name near it may just not have counted yet
        ws = {w["line"]: w for w in j["warnings"]}
        self.assertEqual(sorted(ws), [9, 10, 11, 12])
        self.assertEqual(ws[11]["column"], 19)
        self.assertIn("input offered_rate 'web1/statsd/derive-checkout_"
                      "requets' is not in collectd's cache; did you mean "
                      "'web1/statsd/derive-checkout_requests'?",
                      ws[9]["message"])
        self.assertIn("no identifier in collectd's cache matches the glob "
                      "'*/statsd/derive-fleet_retrys'; did you mean "
                      "'*/statsd/derive-fleet_retries'?", ws[11]["message"])
        self.assertIn("(a statsd counter appears at its first event; missing:"
                      " zero reads it as 0 until then)", ws[12]["message"])
        # text: the word, the warnings on stderr, the exit status
        r = self.check(path)
        self.assertEqual(r.code, 0, r)
        self.assertIn(": 1 service, valid, 4 warnings\n", r.out)
        self.assertIn("offered_rate    web1/statsd/derive-checkout_requets: "
                      "not found; did you mean "
                      "web1/statsd/derive-checkout_requests?\n", r.out)
        self.assertEqual(len([l for l in r.err.splitlines()
                              if l.startswith(path + ":")
                              and ": warning: " in l]), 4)
        r = self.check("--strict", path)
        self.assertEqual(r.code, 1, r)
        self.assertIn(": 1 service, not valid, 4 warnings (--strict)\n",
                      r.out)
        j = self.check("--strict", "--format", "json", path).json()
        self.assertFalse(j["valid"])
        self.assertTrue(j["strict"])

    def test_missing_zero(self):
        self.serve()
        r = self.check("--format", "json", self.spec({
            "offered_rate": "web1/statsd/derive-checkout_requests",
            "retry_rate": "{source: web1/statsd/derive-x_retries, "
                          "missing: zero}"}))
        (w,) = r.json()["warnings"]
        self.assertTrue(w["message"].endswith(
            "(read as 0 until it appears: missing: zero)"), w)

    def test_ranking(self):
        """The suggestions for many misspellings over a larger cache equal
        the reference ranking's."""
        names = ["h%d/statsd/derive-svc%d_%s" % (h, s, kind)
                 for h in range(3) for s in range(12)
                 for kind in ("requests", "attempts", "retries", "errors")]
        names += ["h%d/phpfpm-pool%d/gauge-active_processes" % (h, p)
                  for h in range(3) for p in range(4)]
        values = {n: {"value": 1.0} for n in names}
        self.serve(values)
        wrong = ["h1/statsd/derive-svc3_requets", "h7/statsd/derive-svc3_errors",
                 "h1/statsd/derive-svc13_retries", "*/statsd/derive-svc1_atempts",
                 "h2/phpfpm-pool9/gauge-active_processes",
                 "h0/statsd/gauge-svc2_requests", "h0/phpfpm/gauge-idle",
                 "h1/statd/derive-svc10_errors"]
        keys = ["offered_rate", "arrival_rate", "retry_rate", "error_rate",
                "pool_size", "queue_length", "busy_servers",
                "completion_rate"]
        r = self.check("--format", "json", self.spec(dict(zip(keys, wrong))))
        self.assertEqual(r.code, 0, r)
        probe = r.json()["services"][0]["collectd"]["inputs"]
        for key, pattern in zip(keys, wrong):
            with self.subTest(pattern=pattern):
                self.assertEqual(probe[key]["suggestions"],
                                 suggestions(pattern, names))
        self.assertEqual(probe["queue_length"]["suggestions"][0],
                         "h0/statsd/derive-svc2_requests")
        self.assertEqual(probe["busy_servers"]["suggestions"], [])


class CheckErrors(Collectd):
    def test_socket_errors(self):
        spec = self.spec({"offered_rate": "h/p/gauge"})
        sock = self.path("collectd.sock")
        r = self.check(spec)
        self.assertEqual((r.code, r.out), (1, ""), r)
        self.assertIn("%s: no such file: is collectd running with its "
                      "unixsock plugin?" % sock, r.err)
        with open(sock, "w"):
            pass
        self.fails(1, "%s: not a socket" % sock, "check", "--collectd", sock,
                   spec)
        os.unlink(sock)
        # a socket file nobody listens on: what a stopped collectd leaves
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(sock)
        s.close()
        self.fails(1, "%s: connection refused: no collectd listens on it"
                   % sock, "check", "--collectd", sock, spec)
        os.unlink(sock)

    def test_hung(self):
        """A server that accepts and never answers: the timeout fires."""
        fake = self.serve(mode="hang")
        spec = self.spec({"offered_rate": "h/p/gauge"})
        t0 = time.monotonic()
        r = self.check("--timeout", "300ms", spec)
        took = time.monotonic() - t0
        self.assertEqual((r.code, r.out), (1, ""), r)
        self.assertIn("collectd did not answer LISTVAL within 0.3 s", r.err)
        self.assertGreaterEqual(took, 0.3)
        self.assertLess(took, 3)
        self.assertEqual(fake.commands, ["LISTVAL"])
        r = clitest.run("init", "--collectd", self.path("collectd.sock"),
                        "--timeout", "0.2")
        self.assertEqual(r.code, 1, r)
        self.assertIn("did not answer LISTVAL within 0.2 s", r.err)

    def test_not_collectd(self):
        self.serve(mode="garbage")
        self.fails(1, "the answer to LISTVAL is not collectd's unixsock "
                   "protocol: 'hello, this is not collectd'", "check",
                   "--collectd", self.path("collectd.sock"),
                   self.spec({"offered_rate": "h/p/gauge"}))

    def test_usage(self):
        spec = self.spec({"offered_rate": "h/p/gauge"})
        self.fails(2, "--timeout is the wait for collectd: it goes with "
                   "--collectd SOCKET", "check", "--timeout", "1s", spec)
        self.fails(2, "--collectd and --shards: one at a time", "check",
                   "--collectd", "x", "--shards", "2", spec)
        self.fails(2, "--timeout: '0' is", "check", "--collectd", "x",
                   "--timeout", "0", spec)
        self.fails(2, "give the socket of collectd's unixsock plugin: "
                   "--collectd SOCKET", "init")


# What init recognises, with identifiers that are not a service.
STACK = {
    # statsd counters of one host
    "web1/statsd/derive-checkout_requests": {"value": 10.0},
    "web1/statsd/derive-checkout_attempts": {"value": 12.0},
    "web1/statsd/gauge-checkout_workers": {"value": 8.0},
    # the same counters on two hosts: a fleet
    "h1/statsd/derive-api_attempts": {"value": 5.0},
    "h1/statsd/derive-api_errors": {"value": 1.0},
    "h2/statsd/derive-api_attempts": {"value": 6.0},
    "h2/statsd/derive-api_errors": {"value": 2.0},
    # errors alone: no service
    "web1/statsd/derive-lonely_errors": {"value": 1.0},
    # HAProxy and the php-fpm pool behind it
    "lb/haproxy-be_app/derive-attempts": {"value": 30.0},
    "lb/haproxy-be_app/derive-retries": {"value": 3.0},
    "lb/haproxy-be_app/derive-failed_attempts": {"value": 4.0},
    "lb/haproxy-fe_web/derive-requests": {"value": 27.0},
    "lb/phpfpm-app/gauge-total_processes": {"value": 10.0},
    "lb/phpfpm-app/gauge-listen_queue": {"value": 0.0},
    "lb/phpfpm-app/gauge-active_processes": {"value": 3.0},
    "lb/phpfpm-app/derive-accepted_conn": {"value": 26.0},
    # nothing of ours
    "web1/cpu-0/cpu-idle": {"value": 98.0},
}

FILLED = {"servers": "10", "service_time": "100ms", "timeout": "1s",
          "retries": "2"}


def fill(draft):
    for key, value in FILLED.items():
        draft = draft.replace("%s: FILL_IN" % key, "%s: %s" % (key, value))
    return draft


class Init(Collectd):
    def draft(self):
        return clitest.run("init", "--collectd", self.path("collectd.sock"))

    def test_draft(self):
        self.serve(STACK)
        r = self.draft()
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err, "")
        draft = r.out
        self.assertIn("from the %d identifiers\n" % len(STACK), draft)
        self.assertIn("# Left out: statsd counters lonely on web1: ", draft)
        path = self.path("draft.yaml")
        with open(path, "w") as f:
            f.write(draft)
        # refused at its first FILL_IN, until every one is filled in
        first = next(i for i, l in enumerate(draft.splitlines(), 1)
                     if ": FILL_IN" in l)
        r = clitest.run("check", path)
        self.assertEqual((r.code, r.out), (1, ""), r)
        self.assertRegex(r.err, r"draft\.yaml:%d:\d+: .*'FILL_IN'" % first)
        with open(path, "w") as f:
            f.write(fill(draft))
        r = self.check("--strict", "--format", "json", path)
        self.assertEqual(r.code, 0, r)
        j = r.json()
        self.assertEqual(j["collectd"]["inputs_missing"], 0)
        got = {s["name"]: {k: v["value"] for k, v in s["inputs"].items()}
               for s in j["services"]}
        self.assertEqual(got, {
            "checkout": {
                "offered_rate": "web1/statsd/derive-checkout_requests",
                "arrival_rate": "web1/statsd/derive-checkout_attempts",
                "pool_size": "web1/statsd/gauge-checkout_workers"},
            "api": {"arrival_rate": "*/statsd/derive-api_attempts",
                    "error_rate": "*/statsd/derive-api_errors"},
            "be_app": {
                "arrival_rate": "lb/haproxy-be_app/derive-attempts",
                "retry_rate": "lb/haproxy-be_app/derive-retries",
                "error_rate": "lb/haproxy-be_app/derive-failed_attempts",
                "pool_size": "lb/phpfpm-app/gauge-total_processes",
                "queue_length": "lb/phpfpm-app/gauge-listen_queue",
                "busy_servers": "lb/phpfpm-app/gauge-active_processes",
                "completion_rate": "lb/phpfpm-app/derive-accepted_conn"}})
        # the values the fleet's globs read: the sum over both hosts
        api = next(s for s in j["services"] if s["name"] == "api")
        self.assertEqual(api["collectd"]["inputs"]["error_rate"]["value"],
                         3.0)
        # servers come from pool_size where there is one, else FILL_IN
        servers = {s["name"]: s["servers_from"] for s in j["services"]}
        self.assertEqual(servers, {"checkout": "pool_size", "api": "file",
                                   "be_app": "pool_size"})

    def test_recipes(self):
        """The verdict inputs of doc/recipes.md's nginx and Node.js
        services (conf/recipes/*/service.yaml, the recipes' one source)
        come back from init as those recipes write them."""
        want, stack = {}, {}
        for recipe in ("nginx", "node"):
            with open(os.path.join(SRCDIR, "conf", "recipes", recipe,
                                   "service.yaml")) as f:
                text = f.read()
            inputs = {}
            for name, ident in re.findall(
                    r'^\s+(offered_rate|arrival_rate|error_rate|retry_rate):'
                    r'\s*(?:\{source:\s*)?"([^"]+)"', text, re.M):
                inputs[name] = ident
                hosts = ("h1", "h2") if ident.startswith("*/") else ("",)
                for h in hosts:
                    stack[h + ident[1:] if h else ident] = {"value": 1.0}
            want[recipe] = inputs
        self.serve(stack)
        draft = self.draft().out
        path = self.path("recipes.yaml")
        with open(path, "w") as f:
            f.write(fill(draft))
        r = self.check("--strict", "--format", "json", path)
        self.assertEqual(r.code, 0, r)
        got = sorted(sorted(s["inputs"][k]["value"] for k in s["inputs"])
                     for s in r.json()["services"])
        self.assertEqual(got, sorted(sorted(v.values())
                                     for v in want.values()))

    def test_output(self):
        self.serve(STACK)
        out = self.path("new.yaml")
        args = ("init", "--collectd", self.path("collectd.sock"),
                "--output", out)
        r = self.ok(*args)
        self.assertEqual(r.out, "%s: 3 services drafted (api, checkout, "
                         "be_app) from %d identifiers; fill in every FILL_IN,"
                         " then: metastable check --collectd %s %s\n"
                         % (out, len(STACK), self.path("collectd.sock"), out))
        with open(out) as f:
            self.assertEqual(f.read(), self.draft().out)
        self.fails(1, "%s: File exists (not overwritten" % out, *args)

    def test_nothing_recognised(self):
        self.serve({"web1/cpu-0/cpu-idle": {"value": 98.0}})
        r = self.draft()
        self.assertEqual((r.code, r.out), (1, ""), r)
        self.assertIn("none of collectd's 1 identifiers is one init "
                      "recognises", r.err)

    def test_names_unique(self):
        """A statsd group and an HAProxy backend of one name: two services
        of two names."""
        self.serve({"h/statsd/derive-be_x_requests": {"value": 1.0},
                    "h/haproxy-be_x/derive-attempts": {"value": 1.0},
                    "h/haproxy-be_x/derive-retries": {"value": 1.0}})
        draft = self.draft().out
        self.assertIn("  - name: be_x\n", draft)
        self.assertIn("  - name: be_x-2\n", draft)
        path = self.path("d.yaml")
        with open(path, "w") as f:
            f.write(fill(draft))
        j = clitest.run("check", "--format", "json", path).json()
        self.assertEqual(len(j["services"]), 2)


# The examples of doc/metastable.md: what the stand-in holds for each.
SOCK = "/var/run/collectd-unixsock"
DOC_CHECK = {
    "db1/statsd/derive-pricing_attempts": {"value": 212.5},
    "db1/statsd/derive-pricing_retries": {"value": 4.5},
    "db2/statsd/derive-pricing_retries": {"value": 3.25},
    "db1/statsd/derive-pricing_error": {"value": 1.75},
    "db1/statsd/gauge-pricing_workers": {"value": 30.0},
    "lb1/haproxy-checkout/derive-requests": {"value": 640.0},
    "lb1/haproxy-checkout/derive-attempts": {"value": 652.5},
    "db1/cpu-0/cpu-idle": {"value": 97.0},
}
DOC_INIT = {
    "web1/statsd/derive-checkout_requests": {"value": 40.0},
    "web1/statsd/derive-checkout_attempts": {"value": 42.0},
    "web1/statsd/derive-checkout_retries": {"value": 2.0},
    "lb1/haproxy-be_shop/derive-attempts": {"value": 120.0},
    "lb1/haproxy-be_shop/derive-retries": {"value": 1.0},
    "lb1/haproxy-be_shop/derive-failed_attempts": {"value": 1.5},
    "lb1/haproxy-fe_www/derive-requests": {"value": 119.0},
    "lb1/phpfpm-shop/gauge-total_processes": {"value": 20.0},
    "lb1/phpfpm-shop/gauge-listen_queue": {"value": 0.0},
    "lb1/phpfpm-shop/gauge-active_processes": {"value": 6.0},
    "lb1/phpfpm-shop/derive-accepted_conn": {"value": 118.0},
    "web1/cpu-0/cpu-idle": {"value": 97.0},
}


def doc_block(first):
    """The indented block of doc/metastable.md that starts with the line
    first: the lines after it (blank ones inside included)."""
    with open(GUIDE) as f:
        lines = f.read().split("\n")
    i = lines.index("    " + first)
    out = []
    for line in lines[i + 1:]:
        if line and not line.startswith("    "):
            break
        out.append(line[4:])
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


class DocExamples(Collectd):
    def run_doc(self, command, values, cwd=SRCDIR):
        """command as the document writes it, against the stand-in holding
        values; its stdout and stderr as a terminal shows them."""
        self.serve(values)
        sock = self.path("collectd.sock")
        args = [sock if a == SOCK else a for a in command.split()[1:]]
        r = clitest.run(*args, cwd=cwd)
        return r, (r.out + r.err).replace(sock, SOCK)

    def test_check(self):
        cmd = "metastable check --collectd %s conf/metastable.yaml" % SOCK
        r, shown = self.run_doc(cmd, DOC_CHECK)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(shown, doc_block(cmd))

    def test_init(self):
        cmd = "metastable init --collectd %s" % SOCK
        r, shown = self.run_doc(cmd, DOC_INIT)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(shown, doc_block(cmd))
        # the refusal the document quotes, then the draft filled in
        draft = r.out
        with open(self.path("draft.yaml"), "w") as f:
            f.write(draft)
        r = clitest.run("check", "draft.yaml", cwd=self.dir.name)
        self.assertEqual(r.code, 1, r)
        with open(GUIDE) as f:
            self.assertIn("\n    %s\n" % r.err.strip(), f.read())
        with open(self.path("draft.yaml"), "w") as f:
            f.write(fill(draft))
        r = self.check("--strict", self.path("draft.yaml"))
        self.assertEqual(r.code, 0, r)
        self.assertIn("draft.yaml: 2 services, valid\n", r.out)


if __name__ == "__main__":
    clitest.main()
