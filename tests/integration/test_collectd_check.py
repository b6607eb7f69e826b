#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable check --collectd and metastable init --collectd against a
real collectd 5.12.

A private collectd (tests/harness.py: loopback, a socket of its own, one
cycle a second) with its unixsock plugin is fed counters and a gauge by
PUTVAL with whole-second times, each counter at rate x time, so that the
rate collectd computes is exactly the one chosen (a reference that owes
nothing to the command); a second host sends one counter too.  Asserted:

* check: an identifier present, with collectd's own value (GETVAL through
  collectdctl) and the rate chosen; a misspelt one missing, with the
  right identifier as its did-you-mean; a glob over both hosts, with its
  two matches and the sum of their rates; an absent statsd counter with
  `missing: zero` said so; the word and the exit status, with and without
  --strict;
* init: the draft recognises the statsd group (globs over the two
  hosts), check refuses it at its first FILL_IN, and accepts it under
  --strict, every input found, once the FILL_IN are filled in;
* a server that accepts and never answers: check gives up after the
  default 5 s, exit status 1, with the reason.

Everything started is stopped; about 15 s.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.environ.get("MS_TOP_SRCDIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(
                         os.path.abspath(__file__)))))
BUILD = os.environ.get("MS_TOP_BUILDDIR", os.path.join(SRC, "build"))
sys.path.insert(0, os.path.join(SRC, "tests"))
sys.path.insert(0, os.path.join(SRC, "tests", "cli"))
import harness  # noqa: E402
from fakecollectd import FakeCollectd  # noqa: E402

METASTABLE = os.path.join(BUILD, "cli", "metastable")
TYPES_DB = os.path.join(SRC, "conf", "types.db")
H = harness.HOSTNAME
check = harness.check

# The series fed, and their rates: a counter's value at time t is rate x t.
COUNTERS = {
    "%s/statsd/derive-checkout_requests" % H: 50,
    "%s/statsd/derive-checkout_attempts" % H: 56,
    "%s/statsd/derive-checkout_retries" % H: 6,
    "web2/statsd/derive-checkout_retries": 3,
}
GAUGES = {"%s/statsd/gauge-checkout_workers" % H: 8}

SERVICE = """services:
  - name: checkout
    model: erlang
    servers: 10
    service_time: 100ms
    timeout: 1s
    retries: 1
    inputs:
      offered_rate: "%(h)s/statsd/derive-checkout_requests"
      arrival_rate: "%(h)s/statsd/derive-checkout_atempts"
      retry_rate: "*/statsd/derive-checkout_retries"
      error_rate: {source: "%(h)s/statsd/derive-checkout_errors", missing: zero}
""" % {"h": H}


class Feeder:
    """PUTVAL of every series once a second, at whole seconds."""

    def __init__(self, cd):
        self.cd = cd
        self.stop = threading.Event()
        self.errors = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        last = 0
        while not self.stop.is_set():
            t = int(time.time())
            if t > last:
                try:
                    for ident, rate in COUNTERS.items():
                        self.cd.putval(ident, rate * t, t)
                    for ident, value in GAUGES.items():
                        self.cd.putval(ident, value, t)
                except (OSError, RuntimeError) as e:
                    self.errors.append(str(e))
                last = t
            self.stop.wait(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)


def metastable(*args, cwd=None):
    return subprocess.run([METASTABLE] + list(args), capture_output=True,
                          text=True, timeout=60, cwd=cwd)


def rates_ready(cd):
    """Every counter has a rate (its second sample is in)."""
    for ident in COUNTERS:
        v = cd.getval(ident)
        if v is None or v.get("value") != v.get("value"):  # absent or NaN
            return False
    return True


def check_file(cd, work):
    path = os.path.join(work, "services.yaml")
    with open(path, "w") as f:
        f.write(SERVICE)
    r = metastable("check", "--collectd", cd.socket, "--format", "json", path)
    check(r.returncode == 0, "check --collectd exits 0 with warnings (%d: %s)"
          % (r.returncode, r.stderr.strip()[:300]))
    try:
        j = json.loads(r.stdout)
    except ValueError:
        check(False, "check --collectd writes JSON: %r" % r.stdout[:300])
        return
    probe = j["services"][0]["collectd"]["inputs"]
    ref = cd.getval("%s/statsd/derive-checkout_requests" % H)
    got = probe["offered_rate"]["value"]
    check(probe["offered_rate"]["found"] and got == 50 and ref is not None
          and ref["value"] == 50,
          "offered_rate found with collectd's value (%r; collectdctl %r; "
          "fed at 50/s)" % (got, ref))
    check(not probe["arrival_rate"]["found"] and
          probe["arrival_rate"]["suggestions"] ==
          ["%s/statsd/derive-checkout_attempts" % H],
          "the misspelt arrival_rate is missing, did you mean the right one "
          "(%r)" % probe["arrival_rate"]["suggestions"])
    glob = probe["retry_rate"]
    check(sorted(m["identifier"] for m in glob["matches"]) ==
          sorted(n for n in COUNTERS if n.endswith("checkout_retries")) and
          glob["value"] == 6 + 3,
          "the glob matches both hosts' retries and sums their rates "
          "(%r, %r; fed at 6/s and 3/s)"
          % ([m["identifier"] for m in glob["matches"]], glob["value"]))
    messages = [w["message"] for w in j["warnings"]]
    check(len(messages) == 2 and
          any("(read as 0 until it appears: missing: zero)" in m
              for m in messages),
          "two warnings, the absent error counter read as 0 (%r)" % messages)
    r = metastable("check", "--collectd", cd.socket, path)
    check(r.stdout.startswith("%s: 1 service, valid, 2 warnings\n" % path),
          "text: the word says valid, 2 warnings (%r)"
          % r.stdout.split("\n")[0])
    r = metastable("check", "--collectd", cd.socket, "--strict", path)
    check(r.returncode == 1 and r.stdout.startswith(
        "%s: 1 service, not valid, 2 warnings (--strict)\n" % path),
        "--strict: not valid, exit status 1 (%d)" % r.returncode)


def init_draft(cd, work):
    r = metastable("init", "--collectd", cd.socket)
    check(r.returncode == 0, "init exits 0 (%s)" % r.stderr.strip()[:300])
    draft = r.stdout
    want = ['offered_rate: "*/statsd/derive-checkout_requests"',
            'arrival_rate: "*/statsd/derive-checkout_attempts"',
            'retry_rate: "*/statsd/derive-checkout_retries"',
            'pool_size: "*/statsd/gauge-checkout_workers"']
    check("  - name: checkout\n" in draft and all(w in draft for w in want),
          "init drafts the service checkout with globs over both hosts")
    path = os.path.join(work, "draft.yaml")
    with open(path, "w") as f:
        f.write(draft)
    first = next((i for i, l in enumerate(draft.split("\n"), 1)
                  if ": FILL_IN" in l), 0)
    r = metastable("check", path)
    check(r.returncode == 1 and "draft.yaml:%d:" % first in r.stderr and
          "'FILL_IN'" in r.stderr,
          "check refuses the draft at its first FILL_IN, line %d (%s)"
          % (first, r.stderr.strip()))
    for key, value in (("service_time", "100ms"), ("timeout", "1s"),
                       ("retries", "1"), ("servers", "10")):
        draft = draft.replace("%s: FILL_IN" % key, "%s: %s" % (key, value))
    with open(path, "w") as f:
        f.write(draft)
    r = metastable("check", "--collectd", cd.socket, "--strict", "--format",
                   "json", path)
    ok = r.returncode == 0
    if ok:
        j = json.loads(r.stdout)
        ok = j["valid"] and j["collectd"]["inputs_missing"] == 0 and \
            j["collectd"]["inputs_found"] == 4
    check(ok, "check --strict accepts the filled draft, every input found "
          "(%d: %s)" % (r.returncode, r.stderr.strip()[:300]))


def hung(work):
    sock = os.path.join(work, "hung.sock")
    path = os.path.join(work, "services.yaml")
    with FakeCollectd(sock, mode="hang"):
        t0 = time.monotonic()
        r = metastable("check", "--collectd", sock, path)
        took = time.monotonic() - t0
    check(r.returncode == 1 and "did not answer LISTVAL within 5 s" in
          r.stderr and 5 <= took < 10,
          "a server that never answers: check gives up after %.2f s, exit "
          "%d (%s)" % (took, r.returncode, r.stderr.strip()))


def main():
    harness.require("collectd", "collectdctl")
    if not os.access(METASTABLE, os.X_OK):
        harness.skip("%s not built" % METASTABLE)
    work = tempfile.mkdtemp(prefix="metastable-collectd-check-")
    print("work directory:", work)
    cd = harness.Collectd(work, None, TYPES_DB, None)
    with cd:
        cd.start()
        with Feeder(cd) as feed:
            harness.wait(lambda: rates_ready(cd), "every counter has a rate",
                         30)
            check_file(cd, work)
            init_draft(cd, work)
            check(feed.errors == [], "every PUTVAL accepted (%r)"
                  % feed.errors[:3])
    hung(work)
    if not harness.FAILURES:
        shutil.rmtree(work)
    harness.finish(work)


if __name__ == "__main__":
    main()
