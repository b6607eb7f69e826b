#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test of the service file's reload inside a real collectd.

A private collectd (Debian's collectd-core) runs in the foreground on
loopback with the built plugin, unixsock and csv (tests/harness.py), one
read cycle a second.  The services' inputs are numbers in the file, so
every service reports every cycle with offered_load equal to its file's
offered_rate; the csv plugin's files say which services reported when.

Asserted, while collectd runs: a service added to the file reports its
value within two read cycles of the write; a broken file is refused with
its file:line:column error in collectd's log, once, while the old
services go on reporting; a removed service stops; a deleted file is
warned about once and, written again, is loaded.  Deadlines are generous
(a loaded machine delays cycles); what is counted is read cycles.
Everything started is stopped.
"""
import os
import shutil
import sys
import tempfile
import time

SRC = os.environ.get("MS_TOP_SRCDIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(
                         os.path.abspath(__file__)))))
BUILD = os.environ.get("MS_TOP_BUILDDIR", os.path.join(SRC, "build"))
sys.path.insert(0, os.path.join(SRC, "tests"))
import harness  # noqa: E402

PLUGIN_DIR = os.path.join(BUILD, "plugin", ".libs")
TYPES_DB = os.path.join(SRC, "conf", "types.db")
DEADLINE = 60  # s: for anything that takes a cycle or two
check = harness.check


def services(**rates):
    """A service file: capacity services named by the keywords, each with
    its offered_rate."""
    text = "services:\n"
    for name, rate in sorted(rates.items()):
        text += ("  - name: %s\n    model: capacity\n    capacity: 100\n"
                 "    retries: 1\n    inputs:\n      offered_rate: %g\n"
                 % (name, rate))
    return text


# line 5, column 15: a negative capacity
BROKEN = ("services:\n  - name: a\n    model: capacity\n    retries: 1\n"
          "    capacity: -5\n")


def wait(cond, what, timeout=DEADLINE):
    return harness.wait(cond, what, timeout, 0.2)


def cycles_after(work, service, t, n):
    """Wait until service has n samples later than t; their times."""
    def enough():
        later = [s for s, _ in harness.samples(work, service) if s > t]
        return later if len(later) >= n else None
    return wait(enough, "%s reports %d more times after %.1f" %
                (service, n, t)) or []


def last_time(work, service):
    s = harness.samples(work, service)
    return s[-1][0] if s else 0.0


def scenario(cd, work, path):
    cycles_after(work, "a", 0, 2)
    cycles_after(work, "b", 0, 2)
    check(harness.samples(work, "a")[-1][1] == 10 and harness.samples(work, "b")[-1][1] == 20,
          "a and b report their offered rates (10, 20)")

    # a service added
    # a cycle is stamped with its start, just after its look at the file:
    # the first cycle stamped after the write may have looked just before
    # it, the second cannot have
    t_write = time.time()
    harness.put(path, services(a=10, b=20, c=30))
    c = cycles_after(work, "c", 0, 1)
    if c:
        between = [s for s, _ in harness.samples(work, "a") if t_write < s < c[0]]
        check(len(between) <= 1, "the added service c reports within two "
              "read cycles of the write (%d cycle(s) without it)"
              % len(between))
        check(harness.samples(work, "c")[0][1] == 30,
              "c reports its offered rate, 30")
    check("service file %s reloaded: 3 services (1 added, 0 removed, 2 kept "
          "with their state)" % path in cd.log(),
          "one INFO line counts the services added, removed and kept")

    # a broken file: refused, located, said once; the old services go on
    harness.put(path, BROKEN)
    says = "%s:5:15: '-5' is negative" % path
    wait(lambda: says in cd.log(), "the broken file's error is logged")
    check("the service file is not reloaded: the 3 services in use keep "
          "running" in cd.log(), "the error says the services go on")
    t_err = last_time(work, "a")
    for name in ("a", "b", "c"):
        cycles_after(work, name, t_err, 3)
    check(cd.log().count(says) == 1,
          "the error is logged once, not every cycle (%d times)"
          % cd.log().count(says))

    # a service removed
    harness.put(path, services(a=10, c=30))
    wait(lambda: "(0 added, 1 removed, 2 kept" in cd.log(),
         "the file without b is loaded")
    cycles_after(work, "a", last_time(work, "a"), 1)  # in flight: written
    n_b = len(harness.samples(work, "b"))
    cycles_after(work, "a", last_time(work, "a"), 3)
    check(len(harness.samples(work, "b")) == n_b, "the removed service b stops")

    # deleted, then written again
    os.unlink(path)
    gone = "service file %s was deleted" % path
    wait(lambda: gone in cd.log(), "the deleted file is warned about")
    cycles_after(work, "a", last_time(work, "a"), 3)
    check(cd.log().count(gone) == 1, "warned once (%d times)"
          % cd.log().count(gone))
    harness.put(path, services(a=10, c=30, d=40))
    d = cycles_after(work, "d", 0, 1)
    check(bool(d) and harness.samples(work, "d")[0][1] == 40,
          "the file written again is loaded: d reports 40")
    check(cd.running(), "collectd still running")


def main():
    harness.require("collectd", "collectdctl")
    work = tempfile.mkdtemp(prefix="metastable-reload-")
    print("work directory:", work)
    path = os.path.join(work, "services.yaml")
    harness.put(path, services(a=10, b=20))
    cd = harness.Collectd(work, PLUGIN_DIR, TYPES_DB, path)
    with cd:
        cd.start()
        scenario(cd, work, path)
    check(not cd.running(), "collectd stopped")
    if not harness.FAILURES:
        shutil.rmtree(work)
    harness.finish(work)


if __name__ == "__main__":
    main()
