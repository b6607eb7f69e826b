#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test of a sharded fleet: three real collectd daemons and a
Prometheus on loopback (tests/harness.py).

* edge: statsd-fed inputs of SERVICES services, sent over collectd's
  network plugin to both aggregators with SecurityLevel Encrypt (user and
  password); it does not load the metastable plugin.
* agg1, agg2: the same service file, Shard "1/2" and "2/2"; each listens
  with SecurityLevel Encrypt and an AuthFile, and runs write_prometheus.
* Prometheus scrapes both, with the shard rules of
  conf/metastable-alerts.yml, their times scaled from minutes to seconds
  (3 min -> 3 s, the `for`s likewise) so that the test runs in seconds.

Asserted: every service appears exactly once across the shards, on the
aggregator its shard names (jump hash of FNV-1a 64, the independent Python
of tests/cli/test_shards.py), with the offered load the edge sent and the
tipping load and state `metastable solve` gives; the overloaded service is
in a storm; each shard's heartbeat counts its services; forged unsigned
packets from another socket (a value stamped an hour ahead, so that an
accepted one would stick) change no aggregator's cache, while the same
packet is taken by a listener without security (the packet is well
formed); agg2 stopped: MetastableShardDown fires for shard 2 and
MetastableShardsMissing for the fleet, while shard 1 keeps reporting.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time


SRC = os.environ.get("MS_TOP_SRCDIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(
                         os.path.abspath(__file__)))))
BUILD = os.environ.get("MS_TOP_BUILDDIR", os.path.join(SRC, "build"))
sys.path.insert(0, os.path.join(SRC, "tests"))
sys.path.insert(0, os.path.join(SRC, "tests", "cli"))
import harness  # noqa: E402
from test_shards import shard  # noqa: E402  the independent reference

PLUGIN_DIR = os.path.join(BUILD, "plugin", ".libs")
TYPES_DB = os.path.join(SRC, "conf", "types.db")
METASTABLE = os.environ.get("METASTABLE",
                            os.path.join(BUILD, "cli", "metastable"))
SERVICES = 240
STORM = "svc-7"  # offered 150 req/s against a capacity of 100
DEADLINE = 40
check = harness.check


def offered(i):
    return 150 if "svc-%d" % i == STORM else 10 + i % 40


def service_file():
    text = "services:\n"
    for i in range(SERVICES):
        text += ("  - name: svc-%d\n    model: capacity\n    capacity: 100\n"
                 "    retries: 1\n    inputs:\n"
                 "      offered_rate: \"edge/statsd/gauge-svc-%d\"\n"
                 % (i, i))
    return text


def shard_rules(path):
    """The shard rules of conf/metastable-alerts.yml (its text from "#
    Shards" to the next section), minutes made seconds: 180 s of silence
    -> 3 s, `for: 2m` -> 2s, `for: 5m` -> 5s, `for: 10m` -> 10s, the hour
    kept.  Returns how many rules."""
    with open(os.path.join(SRC, "conf", "metastable-alerts.yml")) as f:
        text = f.read()
    text = text[text.index("      # Shards (Shard"):
                text.index("      # Nothing from the plugin at all")]
    for a, b in (("> 180,", "> 3,"), ("time() - 180", "time() - 3"),
                 ("for: 2m", "for: 2s"), ("for: 5m", "for: 5s"),
                 ("for: 10m", "for: 10s")):
        text = text.replace(a, b)
    with open(path, "w") as f:
        f.write("groups:\n  - name: shards\n    rules:\n" + text)
    return text.count("      - record:") + text.count("      - alert:")


def network(listen=None, secure=True, authfile=None, servers=()):
    """collectd's network plugin: a listener on 127.0.0.1:listen, with
    SecurityLevel Encrypt and authfile when secure, else None; servers,
    ports sent to with SecurityLevel Encrypt as user "edge"."""
    body = ""
    for p in servers:
        body += ('  <Server "127.0.0.1" "%d">\n    SecurityLevel Encrypt\n'
                 '    Username "edge"\n    Password "fleet-secret"\n'
                 '  </Server>\n' % p)
    if listen is not None:
        sec = ('    SecurityLevel Encrypt\n    AuthFile "%s"\n' % authfile
               if secure else "    SecurityLevel None\n")
        body += '  <Listen "127.0.0.1" "%d">\n%s  </Listen>\n' % (listen, sec)
    return "LoadPlugin network\n<Plugin network>\n%s</Plugin>" % body


def forged_packet(host, type_instance, value, when):
    """One value list in collectd's binary network protocol, unsigned and
    unencrypted: host, time (2^-30 s), interval, plugin, type, type
    instance, one GAUGE (little-endian double)."""
    def string(kind, s):
        b = s.encode() + b"\0"
        return struct.pack(">HH", kind, 4 + len(b)) + b

    def number(kind, n):
        return struct.pack(">HHQ", kind, 12, n)
    values = struct.pack(">HHH", 6, 4 + 2 + 1 + 8, 1) + b"\x01" + \
        struct.pack("<d", value)
    return (string(0, host) + number(8, int(when * 2**30)) +
            number(9, 1 << 30) + string(2, "statsd") + string(4, "gauge") +
            string(5, type_instance) + values)


def wait(cond, what, timeout=DEADLINE):
    return harness.wait(cond, what, timeout, 0.5)


def solve(load):
    r = subprocess.run([METASTABLE, "solve", "--model", "capacity",
                        "--capacity", "100", "--retries", "1", "--load",
                        str(load), "--format", "json"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def send_inputs(statsd):
    lines = ["svc-%d:%d|g" % (i, offered(i)) for i in range(SERVICES)]
    for k in range(0, len(lines), 40):  # datagrams well under 1452 bytes
        statsd.sock.sendto("\n".join(lines[k:k + 40]).encode(),
                           ("127.0.0.1", statsd.port))


def by_service(prom, typ):
    return {m["metastable"]: (m["instance"], v)
            for m, v in prom.query("collectd_metastable_%s" % typ)}


def assignment(prom):
    """Every service once, on its shard's aggregator; the assignment."""
    want = {"svc-%d" % i: "agg%d" % shard("svc-%d" % i, 2)
            for i in range(SERVICES)}
    wait(lambda: len(prom.query("collectd_metastable_offered_load")) >=
         SERVICES, "every service in Prometheus")
    rows = prom.query("collectd_metastable_offered_load")
    names = [m["metastable"] for m, _ in rows]
    check(len(names) == SERVICES and len(set(names)) == SERVICES,
          "each of the %d services appears exactly once across the shards "
          "(%d series, %d names)" % (SERVICES, len(names), len(set(names))))
    got = {m["metastable"]: m["instance"] for m, _ in rows}
    check(got == want, "each on the aggregator of its shard, jump(FNV-1a "
          "64(name), 2) + 1 (%d on agg1, %d on agg2)"
          % (list(want.values()).count("agg1"),
             list(want.values()).count("agg2")))
    return want


STATES = {"stable": 0, "vulnerable": 1, "metastable": 2, "overloaded": 3}


def values_are_solves(prom):
    """Offered load as sent; tipping load, state and storm as solve."""
    got = {t: by_service(prom, t) for t in
           ("offered_load", "tipping_load", "state", "storm")}
    refs, bad = {}, []
    for i in range(SERVICES):
        name, x = "svc-%d" % i, offered(i)
        ref = refs.setdefault(x, solve(x))
        have = tuple(got[t].get(name, (None, None))[1] for t in got)
        want = (x, ref["tipping_load"], STATES[ref["state"]], ref["storm"])
        if have != want:
            bad.append((name, have, want))
    check(not bad, "offered load, tipping load, state and storm of every "
          "service are the edge's and metastable solve's (%d differ: %s)"
          % (len(bad), bad[:3]))
    check(got["storm"].get(STORM, (0, 0))[1] == 1 and
          got["state"].get(STORM, (0, 0))[1] == 3,
          "the overloaded service %s is in a storm (state 3, storm 1)"
          % STORM)


def heartbeats(prom, want):
    beats = {m["type"]: (m["instance"], v) for m, v in
             prom.query("collectd_metastable_shard_services")}
    counts = {m["type"]: v for m, v in
              prom.query("collectd_metastable_shard_count")}
    n1 = list(want.values()).count("agg1")
    check(beats == {"1": ("agg1", n1), "2": ("agg2", SERVICES - n1)},
          "each shard's heartbeat counts its services: %s" % beats)
    check(counts == {"1": 2, "2": 2}, "shard_count is 2 on both: %s"
          % counts)


def forged(edge, aggs, ports, control_port):
    """Unsigned packets with a value an hour ahead: refused by the
    aggregators (their caches keep the edge's values), taken by the
    control listener without security."""
    victims = ["svc-1", "svc-2", "svc-3", "svc-4"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _ in range(3):
            for name in victims:
                pkt = forged_packet("edge", name, 999.0, time.time() + 3600)
                for p in ports:
                    s.sendto(pkt, ("127.0.0.1", p))
            time.sleep(1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(forged_packet("stranger", "probe", 999.0, time.time()),
                 ("127.0.0.1", control_port))
    time.sleep(2)
    probe = edge.getval("stranger/statsd/gauge-probe")
    check(probe == {"value": 999.0}, "the same packet unsigned is taken by a "
          "listener without security (%s)" % probe)
    seen = {}
    for a in aggs:
        for name in victims:
            v = a.getval("edge/statsd/gauge-%s" % name)
            seen[(a.workdir[-4:], name)] = v and v.get("value")
    want = {k: offered(int(k[1][4:])) for k in seen}
    check(seen == want, "forged unsigned packets change no aggregator's "
          "values (%s)" % sorted(set(seen.values())))
    check(all("Unencrypted packet or part has been ignored" in a.log()
              for a in aggs), "each aggregator logs the unencrypted packets "
          "as ignored")


def shard_down(prom, agg2):
    agg2.stop()
    t0 = time.time()

    def firing():
        alerts = prom.api("alerts")["data"]["alerts"]
        names = {(a["labels"]["alertname"], a["labels"].get("shard"))
                 for a in alerts if a["state"] == "firing"}
        return names if ("MetastableShardDown", "2") in names else None
    names = wait(firing, "MetastableShardDown fires for shard 2")
    if names:
        check(("MetastableShardDown", "1") not in names,
              "MetastableShardDown fires for shard 2 only, %.0f s after "
              "agg2 stopped" % (time.time() - t0))
        # each shard had one aggregator all along
        check(not any(n == "MetastableShardTwice" for n, _ in names),
              "MetastableShardTwice silent (%s)" % sorted(
                  n for n, _ in names))
    if wait(lambda: firing() and ("MetastableShardsMissing", None) in
            firing(), "MetastableShardsMissing fires"):
        check(True, "MetastableShardsMissing fires, %.0f s after agg2 "
              "stopped" % (time.time() - t0))
    age = prom.query("time() - timestamp(collectd_metastable_shard_services"
                     "{type=\"1\"})")
    check(bool(age) and age[0][1] < 3,
          "shard 1 keeps reporting (heartbeat %.1f s old)"
          % (age[0][1] if age else -1))


def run(work):
    path = os.path.join(work, "services.yaml")
    with open(path, "w") as f:
        f.write(service_file())
    authfile = os.path.join(work, "auth")
    with open(authfile, "w") as f:
        f.write("edge: fleet-secret\n")
    net = [harness.free_port(socket.SOCK_DGRAM) for _ in range(3)]
    prom_ports = [harness.free_port(), harness.free_port()]
    aggs = []
    for k in (1, 2):
        d = os.path.join(work, "agg%d" % k)
        os.mkdir(d)
        aggs.append(harness.Collectd(
            d, PLUGIN_DIR, TYPES_DB, path, prometheus_port=prom_ports[k - 1],
            extra_config=network(net[k - 1], True, authfile),
            hostname="agg%d" % k, metastable_options='  Shard "%d/2"\n' % k))
    d = os.path.join(work, "edge")
    os.mkdir(d)
    statsd_port = harness.free_port(socket.SOCK_DGRAM)
    edge = harness.Collectd(
        d, PLUGIN_DIR, TYPES_DB, None, statsd_port=statsd_port,
        extra_config=network(net[2], False, servers=net[:2]),
        hostname="edge")
    rules = os.path.join(work, "shard-rules.yml")
    check(shard_rules(rules) == 4, "the shard rules of "
          "conf/metastable-alerts.yml: one record, three alerts")
    prom = harness.Prometheus(work, prom_ports, rule_files=[rules])
    statsd = harness.Statsd(statsd_port)
    with aggs[0], aggs[1], edge, prom:
        for a in aggs:
            a.start()
        edge.start()
        prom.start()
        for a, k in zip(aggs, (1, 2)):
            check("of shard %d/2" % k in a.log(),
                  "agg%d says it watches shard %d/2" % (k, k))
        t0 = time.time()
        send_inputs(statsd)
        want = assignment(prom)
        print("every service in Prometheus %.1f s after the inputs"
              % (time.time() - t0))
        values_are_solves(prom)
        heartbeats(prom, want)
        forged(edge, aggs, net[:2], net[2])
        shard_down(prom, aggs[1])
    statsd.close()


def main():
    harness.require("collectd", "collectdctl", "prometheus")
    work = tempfile.mkdtemp(prefix="metastable-fleet-")
    print("work directory:", work)
    t0 = time.time()
    run(work)
    print("fleet test: %.1f s" % (time.time() - t0))
    if not harness.FAILURES:
        shutil.rmtree(work)
    harness.finish(work)


if __name__ == "__main__":
    main()
