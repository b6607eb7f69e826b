#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""metastable check --shards N: each service's shard is the one an
independent implementation gives (FNV-1a 64 of the name, from the FNV
definition; jump consistent hashing, from figure 1 of Lamping and Veach,
"A Fast, Minimal Memory, Consistent Hash Algorithm", 2014), written here in
Python; the services per shard and the balance are those of the
assignment; from N to N + 1 shards a service stays or moves to the new
shard, about 1/(N + 1) of them; the text form says the same as the JSON."""
import math
import os
import re

import clitest
from clitest import EXAMPLES, SRCDIR, ScratchTest

MASK = (1 << 64) - 1


def fnv1a64(data):
    """FNV-1a, 64 bits: offset basis, then per byte xor and multiply by the
    FNV prime, modulo 2^64."""
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & MASK
    return h


def jump(key, buckets):
    """The paper's figure 1: a linear congruential step per jump, the next
    candidate bucket (b + 1) * 2^31 / ((key >> 33) + 1) in doubles."""
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & MASK
        j = int(float(b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


def shard(name, n):
    return jump(fnv1a64(name.encode()), n) + 1


# Names of the kinds a fleet has: numbered, dotted, per region.
NAMES = (["svc-%d" % i for i in range(300)] +
         ["api.%s.%s" % (r, s) for r in ("eu-west-1", "us-east-1", "ap-1")
          for s in ("checkout", "cart", "search", "auth", "ledger", "mail",
                    "media", "pay")] +
         ["Z", "a", "0", "_x.y-z", "x" * 63])
FILES = [os.path.join(EXAMPLES, "services.yaml"),
         os.path.join(SRCDIR, "conf", "metastable.yaml"),
         os.path.join(SRCDIR, "demo", "services.yaml")]


def fleet_file(names):
    lines = ["services:"]
    for n in names:
        lines += ["  - name: %s" % n, "    model: capacity",
                  "    capacity: 100", "    retries: 1", "    inputs:",
                  "      offered_rate: \"h/statsd/derive-%s\"" % n,
                  "      retry_rate: \"h/statsd/derive-%s-retries\"" % n]
    return "\n".join(lines) + "\n"


class Shards(ScratchTest):
    def setUp(self):
        super().setUp()
        self.fleet = self.path("fleet.yaml")
        with open(self.fleet, "w") as f:
            f.write(fleet_file(NAMES))

    def plan(self, n, path=None):
        r = clitest.run("check", "--shards", str(n), "--format", "json",
                        path or self.fleet)
        self.assertEqual(r.code, 0, r)
        return r.json()

    def test_reference_vectors(self):
        # the Python reference itself, on published values: FNV-1a 64 of
        # "", "a", "foobar"; jump hashing's known answers
        self.assertEqual(fnv1a64(b""), 0xcbf29ce484222325)
        self.assertEqual(fnv1a64(b"a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(fnv1a64(b"foobar"), 0x85944171f73967e8)
        for key, n, b in ((1, 1, 0), (42, 57, 43), (0xDEAD10CC, 666, 361),
                          (256, 1024, 520), (MASK, 128, 92)):
            self.assertEqual(jump(key, n), b)

    def test_assignment_equals_reference(self):
        for path in [self.fleet] + FILES:
            for n in (1, 2, 3, 4, 7, 1024):
                with self.subTest(file=os.path.basename(path), n=n):
                    j = self.plan(n, path)
                    got = {s["name"]: s["shard"] for s in j["services"]}
                    self.assertEqual(
                        got, {name: shard(name, n) for name in got})
                    self.assertEqual(j["shards"]["n"], n)

    def test_balance(self):
        for n in (2, 3, 4, 8):
            with self.subTest(n=n):
                sh = self.plan(n)["shards"]
                counts = [0] * n
                for name in NAMES:
                    counts[shard(name, n) - 1] += 1
                self.assertEqual(sh["services"], counts)
                self.assertEqual(sh["min"], min(counts))
                self.assertEqual(sh["max"], max(counts))
                self.assertEqual(sh["mean"], len(NAMES) / n)
                self.assertEqual(sh["max_over_mean"],
                                 max(counts) / (len(NAMES) / n))
                # each shard binomial(len, 1/n): within 4 standard
                # deviations of the mean
                sd = math.sqrt(len(NAMES) * (1 / n) * (1 - 1 / n))
                for c in counts:
                    self.assertLess(abs(c - len(NAMES) / n), 4 * sd)

    def test_growth_moves_to_the_new_shard_only(self):
        before = {s["name"]: s["shard"] for s in self.plan(1)["services"]}
        for n in range(1, 8):
            after = {s["name"]: s["shard"]
                     for s in self.plan(n + 1)["services"]}
            moved = [s for s in NAMES if after[s] != before[s]]
            with self.subTest(n=n):
                self.assertTrue(all(after[s] == n + 1 for s in moved))
                p = 1 / (n + 1)
                sd = math.sqrt(len(NAMES) * p * (1 - p))
                self.assertLess(abs(len(moved) - len(NAMES) * p), 4 * sd)
            before = after

    def test_text_says_what_json_says(self):
        r = self.ok("check", "--shards", "3", self.fleet)
        rows = dict(re.findall(r"^(\S+)\s+(\d+)/3$", r.out, re.M))
        self.assertEqual({k: int(v) for k, v in rows.items()},
                         {name: shard(name, 3) for name in NAMES})
        per = [int(c) for _, c in
               re.findall(r"^\s+(\d)\s+(\d+)$", r.out, re.M)]
        sh = self.plan(3)["shards"]
        self.assertEqual(per, sh["services"])
        m = re.search(r"balance: min (\d+), max (\d+), mean ([\d.]+) "
                      r"services per shard; max / mean ([\d.]+)", r.out)
        self.assertIsNotNone(m, r.out)
        self.assertEqual((int(m[1]), int(m[2])), (sh["min"], sh["max"]))
        self.assertAlmostEqual(float(m[4]), sh["max_over_mean"], places=3)

    def test_bad_counts(self):
        for bad in ("0", "1025", "-1", "two", "1.5"):
            with self.subTest(n=bad):
                self.fails(2, "--shards", "check", "--shards", bad,
                           self.fleet)


if __name__ == "__main__":
    clitest.main()
