#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: a real collectd exits promptly on SIGTERM whatever the
plugin's read cycle is doing.

collectd 5.12 joins its read threads before it calls any shutdown callback,
so its exit waits for the cycle under way: the cycle's bounds
(doc/configuration.md) are what bound the exit.  CycleBudget counts the
read thread's CPU time, at most 1 s; the cycle's wall time is capped at 5 s
or half the interval, which a busy host reaches before the CPU budget.
The service file is the heaviest found (doc/performance.md, "The worst
allowed service"): 200 erlang services of 10^7 servers, 100 ms service
time, 1 s timeout, 1 % base failure, 10,000 retries, offered 2*10^4 req/s,
inside the bistable band, where every service wants a stall-tolerance
search of most of a second.  Numbers of the file are the inputs (no statsd).

Asserted, with Interval 10 (budget 1 s of CPU, wall cap 5 s) and Interval 1
(0.2 s of CPU, searches to 0.4 s, wall cap 0.5 s): SIGTERM at moments
inside the first and the second cycle, and the daemon is gone within the
wall-time bound plus a margin for its own exit (0.25 s), and, when the
machine gave the read thread the CPU (the first cycle's wall time within
1.5 times its CPU time), within the CPU bound plus that margin; the
plugin's first cycle takes no more CPU than the bound plus one service's
analysis (50 ms); no cycle takes more than half the interval; collectd
never says the read function outlasted its interval.  Before the searches were deferred to the end of the cycle and
stopped at its deadline, the first cycle took 1.28 s at Interval 10.
"""
import os
import re
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
N_SERVICES = 200
EXIT_MARGIN = 0.25  # s: collectd's own exit after the cycle
STEP_MARGIN = 0.05  # s: the service under way when the budget runs out
check = harness.check


def service_file(path):
    with open(path, "w") as f:
        f.write("services:\n")
        for i in range(N_SERVICES):
            f.write("  - name: heavy%d\n    model: erlang\n"
                    "    servers: 10000000\n    service_time: 100ms\n"
                    "    timeout: 1s\n    base_failure: 0.01\n"
                    "    retries: 10000\n    inputs:\n"
                    "      offered_rate: 20000\n" % i)


def bound(interval):
    """The cycle's bound in the read thread's CPU time, s
    (plugin/metastable.c): CycleBudget 0.2 of the interval, searches to 0.4
    of it, at most 1 s."""
    return min(1.0, max(0.2 * interval, 0.4 * interval))


def wall_cap(interval):
    """The cycle's wall-time cap, s: 5 s or half the interval, and the
    searches' deadline when later (at most 1 s)."""
    return max(min(5.0, 0.5 * interval), bound(interval))


def run(work, interval, wait):
    d = tempfile.mkdtemp(prefix="run-", dir=work)
    svc = os.path.join(d, "services.yaml")
    service_file(svc)
    cd = harness.Collectd(d, PLUGIN_DIR, TYPES_DB, svc, interval=interval)
    with cd:
        cd.start()
        time.sleep(wait)
        took = cd.terminate_timed()
    limit = wall_cap(interval) + STEP_MARGIN + EXIT_MARGIN
    check(took <= limit, "Interval %g, SIGTERM %.1f s after the start: exit "
          "took %.3f s (at most %.2f s)" % (interval, wait, took, limit))
    log = cd.log()
    m = re.search(r"first read cycle of (\d+) services took ([0-9.]+) ms "
                  r"\(([0-9.]+) ms of the read thread's CPU\)", log)
    if m:
        cycle, cpu = float(m.group(2)) / 1e3, float(m.group(3)) / 1e3
        print("Interval %g, SIGTERM %.1f s after the start: first cycle "
              "%.3f s (%.3f s of CPU), exit %.3f s" %
              (interval, wait, cycle, cpu, took))
        check(cpu <= bound(interval) + STEP_MARGIN,
              "Interval %g: the first cycle took %.3f s of CPU (at most "
              "%.2f s)" % (interval, cpu, bound(interval) + STEP_MARGIN))
        check(cycle <= wall_cap(interval) + STEP_MARGIN,
              "Interval %g: the first cycle took %.3f s (at most %.2f s)" %
              (interval, cycle, wall_cap(interval) + STEP_MARGIN))
        if cycle <= 1.5 * cpu:
            limit = bound(interval) + STEP_MARGIN + EXIT_MARGIN
            check(took <= limit, "Interval %g, SIGTERM %.1f s after the "
                  "start, the read thread on the CPU: exit took %.3f s (at "
                  "most %.2f s)" % (interval, wait, took, limit))
    else:
        # a SIGTERM inside the first cycle may come before its log line
        check(wait < bound(interval),
              "Interval %g: the first cycle logged its cost" % interval)
    check("more than half the" not in log,
          "Interval %g: no cycle took more than half the interval" %
          interval)
    check("above its read interval" not in log,
          "Interval %g: collectd never says the read outlasted its "
          "interval" % interval)


def main():
    harness.require("collectd")
    work = tempfile.mkdtemp(prefix="metastable-shutdown-")
    print("work directory:", work)
    for interval, wait in ((10, 0.3), (10, 0.9), (10, 10.4), (1, 0.3),
                           (1, 2.3)):
        run(work, interval, wait)
    harness.finish(work)


if __name__ == "__main__":
    main()
