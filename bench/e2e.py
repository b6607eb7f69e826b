#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A fleet end to end: N services in a real collectd, written by
write_prometheus and scraped once per interval (doc/performance.md,
"A fleet end to end").

    python3 bench/e2e.py [--build DIR] [--services 1000,5000]
        [--intervals 12] [--interval 10] [--plugin-config 'Values "state"']
        [--csv OUT.csv]

For each fleet size: a private collectd (tools/harness.py) with the plugin
of BUILD watching N services of constant inputs (numbers in the service
file: no input is read, so what is measured is the plugin's analysis and
collectd's write path), write_prometheus on a free loopback port, and this
script as the scraper.  Once per interval, half an interval after the read
cycle, it scrapes /metrics and counts the plugin's series (every
collectd_metastable_* sample), and the fresh ones among them (timestamp
of the last read cycle: the value written this interval), and reads the
daemon's CPU time (utime + stime) and RSS from /proc.  Prints one line per
interval and a summary per fleet: the series expected (the values one
service dispatches, counted on a fleet of 20 first), the first interval from
which every series is fresh in every later interval (the warm-up), the
mean CPU per interval after it, and the RSS at the end.
"""
import argparse
import csv
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tools"))
import harness  # noqa: E402

SERVICE = ("  - name: svc%05d\n    model: capacity\n    capacity: 100\n"
           "    retries: 2\n    base_failure: 0.01\n    inputs:\n"
           "      offered_rate: %g\n")
SAMPLE = re.compile(r"^(collectd_metastable_\S+)\s+(\S+)(?:\s+(\d+))?$")


def service_file(path, n):
    """n services alike but for their names, healthy at 50 req/s of a
    capacity of 100 (constant values: the same every interval)."""
    with open(path, "w") as f:
        f.write("services:\n")
        for i in range(n):
            f.write(SERVICE % (i, 50))


def scrape(port):
    """{series: timestamp_ms} of the plugin's samples, or None when the
    endpoint does not answer within 30 s."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                    timeout=30) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            out[m.group(1)] = int(m.group(3) or 0)
    return out


def proc_stat(pid):
    """(CPU seconds, RSS in MB) of process pid."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open("/proc/%d/status" % pid) as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024
    return cpu, rss


def values_per_service(args):
    """The values one service of service_file dispatches: counted on a
    fleet of 20, Interval 1, written by write_prometheus."""
    n = 20
    work = tempfile.mkdtemp(prefix="ms-e2e-")
    svc = os.path.join(work, "services.yaml")
    service_file(svc, n)
    port = harness.free_port()
    with harness.Collectd(work, os.path.join(args.build, "plugin", ".libs"),
                          os.path.join(SRC, "conf", "types.db"), svc,
                          prometheus_port=port, interval=1,
                          metastable_options=args.plugin_config) as cd:
        cd.start()
        time.sleep(2.5)
        series = scrape(port) or {}
    shutil.rmtree(work, ignore_errors=True)
    return len(series) // n


def run_fleet(args, n, per, writer):
    work = tempfile.mkdtemp(prefix="ms-e2e-")
    svc = os.path.join(work, "services.yaml")
    service_file(svc, n)
    port = harness.free_port()
    cd = harness.Collectd(work, os.path.join(args.build, "plugin", ".libs"),
                          os.path.join(SRC, "conf", "types.db"), svc,
                          prometheus_port=port, interval=args.interval,
                          metastable_options=args.plugin_config)
    rows = []
    expected = per * n
    with cd:
        t0 = time.time()
        cd.start(timeout=120)
        pid = cd.proc.pid
        cpu0 = 0.0  # the first interval's CPU includes the start
        # scrape half an interval after each read cycle (the first cycle
        # runs at the start)
        for k in range(1, args.intervals + 1):
            wake = t0 + (k - 0.5) * args.interval
            time.sleep(max(0.0, wake - time.time()))
            asked = time.time()
            series = scrape(port) or {}
            cpu, rss = proc_stat(pid)
            # written by the last read cycle, half an interval before
            since = (asked - args.interval) * 1000
            fresh = sum(1 for t in series.values() if t >= since)
            r = {"services": n, "interval": k, "expected": expected,
                 "series": len(series), "fresh": fresh,
                 "cpu_s": round(cpu - cpu0, 3), "rss_mb": round(rss, 1)}
            rows.append(r)
            cpu0 = cpu
            share = 100.0 * fresh / expected if expected else 0
            print("%6d services  interval %3d  series %7d  fresh %7d "
                  "(%5.1f %%)  CPU %6.2f s  RSS %7.1f MB" %
                  (n, k, len(series), fresh, share, r["cpu_s"], rss),
                  flush=True)
            if writer:
                writer.writerow(r)
    shutil.rmtree(work, ignore_errors=True)
    warm = None
    for i in range(len(rows)):
        if all(r["fresh"] >= expected for r in rows[i:]):
            warm = rows[i]["interval"]
            break
    after = [r["cpu_s"] for r in rows if warm and r["interval"] > warm]
    print("%6d services x %d values = %d series: %s; CPU after it %s; RSS "
          "at the end %.0f MB" %
          (n, per, expected,
           "every series fresh from interval %d on (%d s)" %
           (warm, (warm - 0.5) * args.interval) if warm else
           "never every series fresh",
           "%.2f s per interval" % (sum(after) / len(after)) if after
           else "-", rows[-1]["rss_mb"]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--services", default="1000")
    ap.add_argument("--intervals", type=int, default=12)
    ap.add_argument("--interval", type=float, default=10)
    ap.add_argument("--plugin-config", default="",
                    help="lines for <Plugin metastable>")
    ap.add_argument("--csv", help="also write every row to this CSV file")
    args = ap.parse_args()
    if args.plugin_config and not args.plugin_config.endswith("\n"):
        args.plugin_config += "\n"
    writer = None
    if args.csv:
        f = open(args.csv, "w", newline="")
        writer = csv.DictWriter(f, ["services", "interval", "expected",
                                    "series", "fresh", "cpu_s", "rss_mb"])
        writer.writeheader()
    per = values_per_service(args)
    for n in [int(x) for x in args.services.split(",")]:
        run_fleet(args, n, per, writer)


if __name__ == "__main__":
    main()
