#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A fleet end to end: N services in a real collectd, written by one of
collectd's write plugins, read back once per interval (doc/fleets.md).

    python3 bench/e2e.py [--build DIR] [--services 1000,5000]
        [--intervals 12] [--interval 10] [--shards N]
        [--writer prometheus|graphite|http|network]
        [--plugin-config 'Values "state"'] [--contend N] [--csv OUT.csv]

For each fleet size: a private collectd (tests/harness.py) with the plugin
of BUILD watching N services of constant inputs (numbers in the service
file: no input is read, so what is measured is the plugin's analysis and
collectd's write path), and this script as the reader of what collectd
writes:

  prometheus  write_prometheus on a free loopback port, scraped once per
              interval (what Prometheus would see);
  graphite    write_graphite over TCP to a plain-text sink here;
  http        write_http (Format "Command") POSTing to an HTTP sink here;
  network     the network plugin (UDP, collectd's binary protocol) to a
              sink here that decodes its value parts.

Once per interval, half an interval after the read cycle, it counts the
plugin's series (every value of plugin "metastable" but the shard
heartbeat and the write probe) and the fresh ones among them (time of the last read cycle:
the value written this interval), and reads each daemon's CPU time
(utime + stime) and RSS from /proc.  With --shards N it runs N such
daemons at once on the same service file, daemon K with Shard "K/N", and
adds their series up (each on its own write_prometheus port or to the
same sink).  Prints one line per interval and a summary per fleet: the
series expected (the values one service dispatches, counted on a fleet of
20 first), the first interval from which every series is fresh in every
later interval (the warm-up), the mean CPU per interval after it, and the
RSS at the end.  The sinks run in this process: on a small machine they
take CPU from collectd.

--contend N runs N busy loops (at collectd's priority) beside the daemons
for the whole run, as other jobs on a busy monitoring host; each line
then also gives the 1-minute load average.
"""
import argparse
import csv
import http.server
import os
import re
import shutil
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests"))
import harness  # noqa: E402

SERVICE = ("  - name: svc%05d\n    model: capacity\n    capacity: 100\n"
           "    retries: 2\n    base_failure: 0.01\n    inputs:\n"
           "      offered_rate: %g\n")
SAMPLE = re.compile(r"^(collectd_metastable_\S+)\s+(\S+)(?:\s+(\d+))?$")
WRITERS = ("prometheus", "graphite", "http", "network")
# the plugin's values that are no service's: the shard heartbeat and the
# write probe (doc/outputs.md)
NOT_PER_SERVICE = ("metastable-shard", "metastable-write")


def service_file(path, n):
    """n services alike but for their names, healthy at 50 req/s of a
    capacity of 100 (constant values: the same every interval)."""
    with open(path, "w") as f:
        f.write("services:\n")
        for i in range(n):
            f.write(SERVICE % (i, 50))


def scrape(port):
    """{series: time in s} of the plugin's samples but the shard
    heartbeat and the write probe, or None when the endpoint does not
    answer within 30 s."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                    timeout=30) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and not re.search(r'metastable="(shard|write)"', m.group(1)):
            out[m.group(1)] = int(m.group(3) or 0) / 1000.0
    return out


class Sink:
    """What a write plugin sent: {identifier: latest time in s} of the
    plugin's values (plugin "metastable", not its shard heartbeat nor its
    write probe), filled
    by a server thread; snapshot() copies it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latest = {}
        self.received = 0

    def note(self, ident, when):
        with self.lock:
            self.received += 1
            if when > self.latest.get(ident, 0):
                self.latest[ident] = when

    def snapshot(self):
        with self.lock:
            return dict(self.latest)

    def serve(self, server):
        """Serve server (a socketserver on 127.0.0.1, port 0) in a thread."""
        self.server = server
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def load_flushed(plugin):
    """LoadPlugin of a writer that buffers, flushed every second: it sends
    the last, partly filled buffer of a cycle at the next flush, not when
    it is full."""
    return "<LoadPlugin %s>\n  FlushInterval 1\n</LoadPlugin>\n" % plugin


class GraphiteSink(Sink):
    """write_graphite's plain text over TCP: "path value time" lines, the
    path host.plugin-instance.type-instance (EscapeCharacter "_")."""

    def __init__(self):
        super().__init__()
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                for line in self.rfile:
                    parts = line.split()
                    if len(parts) != 3:
                        continue
                    path = parts[0].decode(errors="replace")
                    segs = path.split(".")
                    if len(segs) < 3 or not segs[1].startswith("metastable-"):
                        continue
                    if segs[1] in NOT_PER_SERVICE:
                        continue
                    sink.note(path, float(parts[2]))

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.serve(Server(("127.0.0.1", 0), Handler))

    def config(self):
        return (load_flushed("write_graphite") + "<Plugin write_graphite>\n"
                '  <Node "sink">\n    Host "127.0.0.1"\n    Port "%d"\n'
                '    Protocol "tcp"\n  </Node>\n</Plugin>\n' % self.port)

PUTVAL = re.compile(rb'^PUTVAL "?([^" ]+)"? (?:\S+=\S+ )*([0-9.]+):')


class HttpSink(Sink):
    """write_http's Format "Command": POSTed bodies of lines
    PUTVAL "host/plugin-instance/type-instance" interval=I time:value."""

    def __init__(self):
        super().__init__()
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                for line in body.splitlines():
                    m = PUTVAL.match(line)
                    if not m:
                        continue
                    ident = m.group(1).decode(errors="replace")
                    plugin = ident.split("/")[1] if "/" in ident else ""
                    if plugin.startswith("metastable-") and \
                            plugin not in NOT_PER_SERVICE:
                        sink.note(ident, float(m.group(2)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self.serve(server)

    def config(self):
        return (load_flushed("write_http") + "<Plugin write_http>\n"
                '  <Node "sink">\n    URL "http://127.0.0.1:%d/"\n'
                '    Format "Command"\n  </Node>\n</Plugin>\n' % self.port)

class NetworkSink(Sink):
    """collectd's binary protocol over UDP (collectd's network plugin):
    parts of type (u16), length (u16, with the header), body; host,
    plugin, type and their instances are NUL-ended strings that carry
    over to the next value part of the packet; times are u64 in units of
    2^-30 s (TIME_HR) or s (TIME); a VALUES part is u16 n, n type bytes and
    n 8-byte values."""

    STRINGS = {0x0000: "host", 0x0002: "plugin", 0x0003: "plugin_instance",
               0x0004: "type", 0x0005: "type_instance"}

    def __init__(self):
        super().__init__()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.packets = 0
        self.running = True
        self.thread = threading.Thread(target=self.receive, daemon=True)
        self.thread.start()

    def receive(self):
        while self.running:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            self.packets += 1
            self.parse(data)

    def parse(self, data):
        cur = {"host": "", "plugin": "", "plugin_instance": "", "type": "",
               "type_instance": ""}
        when = 0.0
        i = 0
        while i + 4 <= len(data):
            kind, length = struct.unpack_from("!HH", data, i)
            if length < 4 or i + length > len(data):
                return
            body = data[i + 4:i + length]
            if kind in self.STRINGS:
                cur[self.STRINGS[kind]] = body.rstrip(b"\0").decode(
                    errors="replace")
            elif kind == 0x0008:
                when = struct.unpack("!Q", body)[0] / 2.0 ** 30
            elif kind == 0x0001:
                when = float(struct.unpack("!Q", body)[0])
            elif kind == 0x0006:
                if cur["plugin"] == "metastable" and \
                        cur["plugin_instance"] not in ("shard", "write"):
                    self.note("%s/%s/%s/%s" % (cur["host"],
                                               cur["plugin_instance"],
                                            cur["type"],
                                            cur["type_instance"]), when)
            i += length

    def config(self):
        return (load_flushed("network") + '<Plugin network>\n  Server "127.0.0.1" "%d"\n</Plugin>\n'
                % self.port)

    def stop(self):
        self.running = False
        self.thread.join()
        self.sock.close()


SINKS = {"graphite": GraphiteSink, "http": HttpSink, "network": NetworkSink}


def contend(n):
    """n busy loops, each a process of its own at the default priority:
    other work on the host, taking a core each while it runs."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             start_new_session=True) for _ in range(n)]


def stop_all(procs):
    for p in procs:
        p.kill()
        p.wait()


def proc_stat(pid):
    """(CPU seconds, RSS in MB) of process pid."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open("/proc/%d/status" % pid) as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024
    return cpu, rss


class Fleet:
    """shards daemons (1: no Shard option) on one service file of n
    services, writing through writer; read() gives {series: time}."""

    def __init__(self, args, n, shards, writer, interval):
        self.work = tempfile.mkdtemp(prefix="ms-e2e-")
        self.n = n
        self.keep_logs = args.keep_logs
        svc = os.path.join(self.work, "services.yaml")
        service_file(svc, n)
        self.sink = SINKS[writer]() if writer != "prometheus" else None
        self.daemons = []
        self.ports = []
        for k in range(1, shards + 1):
            work = os.path.join(self.work, "shard%d" % k)
            os.mkdir(work)
            opts = args.plugin_config
            if shards > 1:
                opts += 'Shard "%d/%d"\n' % (k, shards)
            port = harness.free_port() if self.sink is None else None
            self.ports.append(port)
            self.daemons.append(harness.Collectd(
                work, os.path.join(args.build, "plugin", ".libs"),
                os.path.join(SRC, "conf", "types.db"), svc,
                prometheus_port=port, interval=interval,
                metastable_options=opts, csv=False,
                extra_config=self.sink.config() if self.sink else "",
                hostname="aggregator%d" % k))

    def start(self):
        for d in self.daemons:
            d.start(timeout=120)

    def read(self):
        if self.sink:
            return self.sink.snapshot()
        out = {}
        for port in self.ports:
            out.update(scrape(port) or {})
        return out

    def stop(self):
        for d in self.daemons:
            d.stop()
        if self.sink:
            self.sink.stop()
        if self.keep_logs:
            for k, d in enumerate(self.daemons, 1):
                shutil.copy(d.logpath, os.path.join(
                    self.keep_logs, "n%d-s%d-k%d.log" %
                    (self.n, len(self.daemons), k)))
        shutil.rmtree(self.work, ignore_errors=True)


def values_per_service(args):
    """The values one service of service_file dispatches: counted on a
    fleet of 20, Interval 1, through the same writer, one daemon."""
    n = 20
    fleet = Fleet(args, n, 1, args.writer, 1)
    try:
        fleet.start()
        time.sleep(3.5)
        series = fleet.read()
    finally:
        fleet.stop()
    return len(series) // n


def run_fleet(args, n, per, out):
    fleet = Fleet(args, n, args.shards, args.writer, args.interval)
    rows = []
    expected = per * n
    try:
        t0 = time.time()
        fleet.start()
        pids = [d.proc.pid for d in fleet.daemons]
        cpu0 = [0.0] * len(pids)  # the first interval's includes the start
        # read half an interval after each read cycle (the first cycle
        # runs at the start)
        for k in range(1, args.intervals + 1):
            wake = t0 + (k - 0.5) * args.interval
            time.sleep(max(0.0, wake - time.time()))
            asked = time.time()
            series = fleet.read()
            stats = [proc_stat(p) for p in pids]
            # written by the last read cycle, half an interval before
            since = asked - args.interval
            fresh = sum(1 for t in series.values() if t >= since)
            cpus = [round(c - c0, 3) for (c, _), c0 in zip(stats, cpu0)]
            r = {"services": n, "shards": args.shards,
                 "writer": args.writer, "interval": k,
                 "expected": expected, "series": len(series),
                 "fresh": fresh, "cpu_s": round(sum(cpus), 3),
                 "cpu_max_s": max(cpus),
                 "rss_mb": round(max(rss for _, rss in stats), 1),
                 "contend": args.contend,
                 "load1": round(os.getloadavg()[0], 2)}
            rows.append(r)
            cpu0 = [c for c, _ in stats]
            share = 100.0 * fresh / expected if expected else 0
            print("%6d services  interval %3d  series %7d  fresh %7d "
                  "(%5.1f %%)  CPU %6.2f s%s  RSS %7.1f MB  load %.1f" %
                  (n, k, len(series), fresh, share, r["cpu_s"],
                   " (%s)" % " + ".join("%.2f" % c for c in cpus)
                   if len(cpus) > 1 else "", r["rss_mb"], r["load1"]),
                  flush=True)
            if out:
                out.writerow(r)
    finally:
        fleet.stop()
    warm = None
    for i in range(len(rows)):
        if all(r["fresh"] >= expected for r in rows[i:]):
            warm = rows[i]["interval"]
            break
    after = [r["cpu_s"] for r in rows if warm and r["interval"] > warm]
    print("%6d services x %d values = %d series, %s, %s%s: %s; CPU after it "
          "%s; RSS at the end %.0f MB%s" %
          (n, per, expected, args.writer,
           "%d shards" % args.shards if args.shards > 1 else "one daemon",
           ", %d busy loops" % args.contend if args.contend else "",
           "every series fresh from interval %d on (%g s)" %
           (warm, (warm - 0.5) * args.interval) if warm else
           "never every series fresh",
           "%.2f s per interval" % (sum(after) / len(after)) if after
           else "-", rows[-1]["rss_mb"],
           " (the largest daemon)" if args.shards > 1 else ""), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--services", default="1000")
    ap.add_argument("--intervals", type=int, default=12)
    ap.add_argument("--interval", type=float, default=10)
    ap.add_argument("--shards", type=int, default=1,
                    help="aggregators, each with Shard K/N (default 1: "
                    "one, no Shard)")
    ap.add_argument("--writer", choices=WRITERS, default="prometheus")
    ap.add_argument("--plugin-config", default="",
                    help="lines for <Plugin metastable>")
    ap.add_argument("--contend", type=int, default=0, metavar="N",
                    help="N busy loops beside collectd for the whole run "
                    "(default 0)")
    ap.add_argument("--csv", help="also write every row to this CSV file")
    ap.add_argument("--keep-logs", metavar="DIR",
                    help="copy each daemon's collectd log into DIR, as "
                    "nN-sS-kK.log (N services, S daemons, daemon K)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.services.split(",") if x.strip().isdigit()]
    if len(sizes) != len(args.services.split(",")) or min(sizes) < 1:
        ap.error("--services: fleet sizes of 1 or more, comma-separated")
    if args.shards < 1 or args.shards > 1024:
        ap.error("--shards: 1 to 1024 (Shard \"K/N\" takes N up to 1024)")
    if args.contend < 0 or args.contend > 64:
        ap.error("--contend: 0 to 64 busy loops")
    if args.intervals < 1:
        ap.error("--intervals: 1 or more")
    if args.interval <= 0:
        ap.error("--interval: seconds, more than 0")
    if args.writer != "prometheus" and args.interval < 5:
        # flushed every second (load_flushed), read half an interval after
        # the cycle: a shorter interval reads before the last flush
        ap.error("--writer %s: --interval 5 or more (the writer's last "
                 "buffer of a cycle goes at its flush, every second)"
                 % args.writer)
    if args.keep_logs and not os.path.isdir(args.keep_logs):
        ap.error("--keep-logs: %s is not a directory" % args.keep_logs)
    if args.plugin_config and not args.plugin_config.endswith("\n"):
        args.plugin_config += "\n"
    writer = None
    if args.csv:
        f = open(args.csv, "w", newline="")
        writer = csv.DictWriter(f, ["services", "shards", "writer",
                                    "interval", "expected", "series",
                                    "fresh", "cpu_s", "cpu_max_s",
                                    "rss_mb", "contend", "load1"])
        writer.writeheader()
    per = values_per_service(args)
    busy = contend(args.contend)
    try:
        for n in sizes:
            run_fleet(args, n, per, writer)
    finally:
        stop_all(busy)


if __name__ == "__main__":
    main()
