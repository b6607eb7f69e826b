#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A calibration input that goes NaN in a storm, inside a real collectd.

A private collectd (Debian's collectd-core) runs in the foreground on
loopback with the built plugin, statsd, unixsock and csv
(tests/harness.py), one read cycle a second.  Two services read the same
statsd counters: `blinded` also reads a statsd timer as its `latency`
and learns its service time from it (calibrate: [service_time]);
`control` is the same service without the timer.  The timer measures
successful requests only, as an nginx upstream time does: when nothing
succeeds it gets no sample, and collectd's statsd plugin dispatches its
average as NaN (statsd.c: a timer without events in an interval is NaN).

The story (issue 33): healthy at 50 req/s, then a storm at 60 req/s in
which every attempt fails (180 attempts/s: the first attempt and two
retries), then healthy again.  Asserted: `control` flags the storm (the
reference: the same collectd, the same counters, no calibration input);
`blinded` reports in every cycle `control` reports, with the same storm
flag and state cycle by cycle, sends the FAILURE too, and logs the
latency's problem as a calibration NOTICE, never as a service that
reports nothing.  Everything started is stopped.
"""
import glob
import os
import sys
import tempfile
import threading
import time

SRC = os.environ.get("MS_TOP_SRCDIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(
                         os.path.abspath(__file__)))))
BUILD = os.environ.get("MS_TOP_BUILDDIR", os.path.join(SRC, "build"))
sys.path.insert(0, os.path.join(SRC, "tests"))
import harness  # noqa: E402

PLUGIN_DIR = os.path.join(BUILD, "plugin", ".libs")
TYPES_DB = os.path.join(SRC, "conf", "types.db")
check = harness.check

# 10 servers of 100 ms, timeout 1 s, 2 retries: tipping load 94.6 req/s,
# recovery load 33.3 req/s (metastable solve); 50 and 60 req/s are in the
# bistable band, healthy unless the attempts fail.
MODEL = """\
    model: erlang
    servers: 10
    service_time: 100ms
    timeout: 1s
    retries: 2
"""
COUNTERS = """\
      offered_rate: "mshost/statsd/derive-cs_requests"
      arrival_rate: "mshost/statsd/derive-cs_attempts"
      error_rate: {source: "mshost/statsd/derive-cs_errors", missing: zero}
"""
LATENCY = "mshost/statsd/latency-cs_latency-average"
SERVICES = ("services:\n"
            "  - name: blinded\n" + MODEL +
            "    calibrate: [service_time]\n"
            "    inputs:\n" + COUNTERS +
            '      latency: "%s"\n' % LATENCY +
            "  - name: control\n" + MODEL +
            "    inputs:\n" + COUNTERS)

HEALTHY = (50.0, 50.0, 0.0)   # requests, attempts, failed attempts per s
STORM = (60.0, 180.0, 180.0)  # nothing succeeds: no latency sample


class Sender(threading.Thread):
    """statsd at 10 Hz: the counters at self.rates, and the timer (100 ms,
    the service time of the file, so that what is learned leaves the
    model as it is) only while some attempt succeeds."""

    def __init__(self, statsd):
        super().__init__(daemon=True)
        self.statsd = statsd
        self.rates = HEALTHY
        self.stop = threading.Event()
        self.error = None

    def run(self):
        t0 = time.time()
        k = 0
        try:
            while not self.stop.is_set():
                req, att, err = self.rates
                self.statsd.count("cs_requests", req / 10)
                self.statsd.count("cs_attempts", att / 10)
                if err > 0:
                    self.statsd.count("cs_errors", err / 10)
                if att > err:
                    self.statsd.timer("cs_latency", 100)
                k += 1
                delay = t0 + k * 0.1 - time.time()
                if delay > 0:
                    time.sleep(delay)
        except Exception as e:  # reported by the main thread
            self.error = e


def series(work, service, typ):
    """{time: value} the csv plugin wrote for one value of a service."""
    out = {}
    pattern = os.path.join(work, "csv", harness.HOSTNAME,
                           "metastable-" + service, typ + "-*")
    for name in glob.glob(pattern):
        with open(name) as f:
            for line in f:
                t, _, v = line.strip().partition(",")
                try:
                    out[float(t)] = float(v)
                except ValueError:
                    pass  # the header, or a line being written
    return out


def scenario(cd, sender, work):
    harness.wait(lambda: cd.value("control", "storm") == 0 and
                 cd.value("blinded", "storm") == 0,
                 "both services report, healthy", 30)
    # a few healthy cycles with latency samples, then the storm
    time.sleep(5)
    check(cd.getval(LATENCY) is not None,
          "collectd holds the timer's average %s" % LATENCY)
    storm_start = time.time()
    sender.rates = STORM
    harness.wait(lambda: cd.value("control", "storm") == 1,
                 "control flags the storm", 20)
    time.sleep(10)  # ten cycles of the storm, the timer NaN throughout
    v = cd.getval(LATENCY)
    check(v is not None and v.get("value") != v.get("value"),
          "in the storm the timer's average is NaN in collectd (%s)" % v)
    check(cd.value("blinded", "reporting") == 1,
          "blinded still reports in the storm")
    check(cd.value("blinded", "storm") == 1,
          "blinded flags the storm while its latency is NaN")
    sender.rates = HEALTHY
    harness.wait(lambda: cd.value("control", "storm") == 0 and
                 cd.value("blinded", "storm") == 0,
                 "the storm ends for both", 30)
    time.sleep(2)
    sender.stop.set()
    time.sleep(1.5)  # the csv plugin writes the last cycle

    # cycle by cycle: blinded reports whenever control does, with its
    # storm flag and state
    rep = {s: series(work, s, "reporting") for s in ("blinded", "control")}
    storm = {s: series(work, s, "storm") for s in ("blinded", "control")}
    state = {s: series(work, s, "state") for s in ("blinded", "control")}
    cycles = sorted(t for t, v in rep["control"].items() if v == 1)
    in_storm = [t for t in cycles if storm["control"].get(t) == 1]
    check(len(in_storm) >= 8, "control flagged %d cycles of storm"
          % len(in_storm))
    silent = [t for t in cycles if rep["blinded"].get(t) != 1]
    check(not silent, "blinded reports in every one of control's %d "
          "cycles (silent in %d: %s)" % (len(cycles), len(silent),
                                          silent[:5]))
    differ = [(t, storm["blinded"].get(t), storm["control"].get(t))
              for t in cycles
              if storm["blinded"].get(t) != storm["control"].get(t) or
              state["blinded"].get(t) != state["control"].get(t)]
    check(not differ, "blinded's storm flag and state are control's in "
          "every cycle (%d differ: %s)" % (len(differ), differ[:5]))
    check(all(t >= storm_start - 1.5 for t in in_storm),
          "the storm cycles are those after the storm began")

    notes = cd.notifications()
    for svc in ("control", "blinded"):
        failures = [m for sev, inst, m in notes
                    if inst == svc and sev == "FAILURE"]
        check(len(failures) == 1 and "retry storm" in failures[0],
              "%s: one FAILURE notification (%s)" % (svc, failures))
    log = cd.log()
    check('service "blinded": calibration: input latency: '
          "'%s'" % LATENCY in log,
          "the latency's NaN is a calibration NOTICE naming the input")
    check(not [l for l in log.splitlines() if 'service "blinded"' in l and
               "nothing reported until" in l and "latency" in l],
          "the latency never silences blinded")


def main():
    harness.require("collectd", "collectdctl")
    work = tempfile.mkdtemp(prefix="metastable-nan-")
    print("work directory:", work)
    svc = os.path.join(work, "services.yaml")
    with open(svc, "w") as f:
        f.write(SERVICES)
    statsd_port = harness.free_port(harness.socket.SOCK_DGRAM)
    cd = harness.Collectd(work, PLUGIN_DIR, TYPES_DB, svc,
                          statsd_port=statsd_port)
    statsd = harness.Statsd(statsd_port)
    sender = Sender(statsd)
    with cd:
        cd.start()
        sender.start()
        try:
            scenario(cd, sender, work)
        finally:
            sender.stop.set()
            sender.join(5)
            statsd.close()
        check(sender.error is None, "sender ran without error (%s)" %
              sender.error)
        check(cd.running(), "collectd still running at the end")
    check(not cd.running(), "collectd stopped")
    harness.finish(work)


if __name__ == "__main__":
    main()
