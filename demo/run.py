#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""collectd-metastable demo: a private collectd with the plugin, fed an
incident through its statsd plugin over loopback UDP, printing what the
plugin says as it happens.

    demo/run.py [--build DIR] [--speed X]
"""
import argparse
import csv
import os
import shutil
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests"))
import harness  # noqa: E402

STATE = {0: "stable", 1: "vulnerable", 2: "metastable", 3: "overloaded"}


def read_incident(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(line for line in f
                                if not line.startswith("#")):
            rows.append((float(r["start_s"]), float(r["end_s"]),
                         float(r["requests_per_s"]),
                         float(r["attempts_per_s"]), r["phase"]))
    return rows


def feed(statsd, rows, speed, stop):
    """Send the counters at 10 Hz so collectd sees the incident's rates."""
    t0 = time.time()
    tick = 0.1
    k = 0
    while not stop.is_set():
        t = (time.time() - t0) * speed
        row = next((r for r in rows if r[0] <= t < r[1]), None)
        if row is None:
            break
        statsd.count("checkout_requests", row[2] * tick)
        statsd.count("checkout_attempts", row[3] * tick)
        k += 1
        delay = t0 + k * tick / speed - time.time()
        if delay > 0:
            time.sleep(delay)


def phase(start, text):
    """One line for a phase of the demo, with the seconds since start."""
    print("demo: [%.0f s] %s" % (time.time() - start, text), flush=True)


def main():
    # scripts/demo.sh passes its own start, so that the times count the
    # packages and the build too
    start = float(os.environ.get("MS_DEMO_START") or time.time())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(TOP, "build"),
                    help="build directory with plugin/.libs/metastable.so")
    ap.add_argument("--incident", default=os.path.join(TOP, "demo",
                                                       "incident.csv"))
    ap.add_argument("--services", default=os.path.join(TOP, "demo",
                                                       "services.yaml"))
    ap.add_argument("--speed", type=float, default=1.0,
                    help="replay speed (the plugin reads once a second)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the private collectd's directory (config, "
                    "log)")
    args = ap.parse_args()
    plugin_dir = os.path.join(args.build, "plugin", ".libs")
    if not os.path.exists(os.path.join(plugin_dir, "metastable.so")):
        sys.exit("demo: %s/metastable.so not found: build first "
                 "(scripts/build.sh)" % plugin_dir)
    rows = read_incident(args.incident)
    work = tempfile.mkdtemp(prefix="metastable-demo-")
    port = harness.free_port(harness.socket.SOCK_DGRAM)
    cd = harness.Collectd(work, plugin_dir,
                          os.path.join(TOP, "conf", "types.db"),
                          args.services, statsd_port=port)
    print("collectd-metastable demo: private collectd (statsd on "
          "127.0.0.1:%d/udp), files in %s" % (port, work))
    print("service 'checkout': erlang model, 30 servers x 100 ms, "
          "timeout 1 s, 1 retry")
    stop = threading.Event()
    statsd = harness.Statsd(port)
    with cd:
        t_start = time.time()
        cd.start()
        phase(start, "collectd: started in %.1f s" % (time.time() - t_start))
        length = max(r[1] for r in rows)
        phase(start, "replay: the incident's %.0f s at %gx speed, a row a "
              "second as the plugin reads it (about %.0f s)"
              % (length, args.speed, length / args.speed + 2))
        feeder = threading.Thread(target=feed,
                                  args=(statsd, rows, args.speed, stop))
        t0 = time.time()
        feeder.start()
        shown_model = False
        last = None
        # observed: the attempts collectd saw; model: the attempts at the
        # model's equilibrium of the basin the verdict puts the service in
        print("%5s  %-38s %8s %9s %9s %9s %9s  %s" % (
            "t", "phase (the second the plugin read)", "offered",
            "observed", "model", "self-inf", "headroom", "plugin's verdict"))
        print("%5s  %-38s %8s %9s %9s %9s %9s" % (
            "", "", "req/s", "att./s", "att./s", "att./s", "or shed"))
        k = 0
        try:
            while feeder.is_alive() or time.time() - t0 < 2:
                k += 1
                # one row a second on the wall clock, however long the
                # queries take
                delay = t0 + k / args.speed - time.time()
                if delay > 0:
                    time.sleep(delay)
                t = (time.time() - t0) * args.speed
                # the plugin reports on the second before its read
                seen = max(t - 1.0, 0.0)
                row = next((r for r in rows if r[0] <= seen < r[1]),
                           rows[-1])
                for line in cd.new_log_lines():
                    if "Notification:" in line and "metastable" in line:
                        n = cd.notifications(line)
                        if n:
                            print("       >>> %s: %s" % (n[0][0], n[0][2]))
                    elif "metastable plugin" in line and \
                            "[warning]" in line and t > 3:
                        print("       ... " + line.split("] ", 2)[-1])
                vals = {k: cd.value("checkout", k) for k in (
                    "offered_load", "observed_effective_load",
                    "effective_load", "self_inflicted_load",
                    "tipping_headroom", "state", "storm", "tipping_load",
                    "recovery_load", "shed_load", "recovering")}
                if vals["state"] is None:
                    print("%4.0fs  %-38s (waiting for the first rates)" %
                          (t, row[4][:38]))
                    continue
                if not shown_model:
                    print("       model: tipping load %.1f req/s, recovery "
                          "load %.1f req/s" % (vals["tipping_load"],
                                               vals["recovery_load"]))
                    shown_model = True
                state = STATE.get(int(vals["state"]), "?")
                mark = (" STORM (recovering)" if vals["recovering"] else
                        " STORM") if vals["storm"] else ""
                changed = "" if state == last else "  <- state change"
                last = state
                if vals["storm"]:
                    # in a storm the headroom to the tipping point does not
                    # matter: what must go is the load above the recovery load
                    room = "shed %.0f" % vals["shed_load"]
                else:
                    room = "%.1f%%" % (100 * vals["tipping_headroom"])
                seen_att = vals["observed_effective_load"]
                print("%4.0fs  %-38s %8.1f %9s %9.1f %9.1f %9s  %s%s%s" % (
                    t, row[4][:38], vals["offered_load"],
                    "-" if seen_att is None else "%.1f" % seen_att,
                    vals["effective_load"], vals["self_inflicted_load"],
                    room, state, mark, changed))
        finally:
            stop.set()
            feeder.join()
            statsd.close()
    notes = cd.notifications()
    print("notifications sent: %s" % (", ".join(
        "%s" % n[0] for n in notes) or "none"))
    if args.keep:
        print("collectd stopped; its configuration and log are in %s" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
        print("collectd stopped (--keep keeps its configuration and log)")
    phase(start, "done")


if __name__ == "__main__":
    main()
