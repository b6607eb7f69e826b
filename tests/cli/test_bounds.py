#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The limits of `metastable` (doc/metastable.1, LIMITS): traces,
Prometheus responses, the simulators' memory, the lab's time budget,
Ctrl-C, and control bytes in messages.

Where the bound is the feature (a stream refused at once, a run refused
before it allocates) the tests assert a generous time bound; the numbers
of the limits come from service/trace.h and model/sim.h."""
import json
import os
import re
import signal
import subprocess
import time
from fractions import Fraction as F

import clitest
from clitest import ScratchTest, SPEC, METASTABLE

CHECKOUT = ("replay", "--spec", SPEC, "--service", "checkout")
HEADER = "time,offered_rate,retry_rate\n"
SLOW_DES = ("simulate", "--engine", "des", "--servers", "10",
            "--service-time", "0.1", "--timeout", "1", "--retries", "3",
            "--load", "90")


def response(values):
    return json.dumps({"status": "success", "data": {
        "resultType": "matrix", "result": [{
            "metric": {}, "values": values}]}}, ensure_ascii=False)


class Bounds(ScratchTest):
    def write(self, name, text, mode="w"):
        p = self.path(name)
        with open(p, mode) as f:
            f.write(text)
        return p

    def timed(self, *args):
        t0 = time.monotonic()
        r = clitest.run(*args)
        return r, time.monotonic() - t0

    # ---- traces ----------------------------------------------------------

    def test_long_line(self):
        p = self.write("long.csv", HEADER + "1," + "1" * 5000 + ",0\n")
        self.fails(1, "long.csv:2:4097: the line is longer than 4096 bytes, "
                   "the limit", *CHECKOUT, p)
        # 4096 bytes exactly is a line (and a bad number, not a long line)
        p = self.write("edge.csv", HEADER + "1," + "1" * 4092 + ",0\n")
        r = clitest.run(*CHECKOUT, p)
        self.assertNotIn("longer than", r.err, r)

    def test_dev_zero(self):
        r, took = self.timed(*CHECKOUT, "/dev/zero")
        self.assertEqual(r.code, 1, r)
        self.assertIn("/dev/zero:1:1: a NUL byte: the file is not a text "
                      "(CSV) trace", r.err)
        self.assertLess(took, 5.0)

    def test_too_many_rows(self):
        p = self.path("rows.csv")
        with open(p, "w") as f:
            f.write(HEADER)
            f.write("".join("%d,60,0.5\n" % (i + 1)
                            for i in range(1000001)))
        # header on line 1, rows on lines 2 .. 1000001; the extra one:
        self.fails(1, "rows.csv:1000002:1: more than 1000000 rows, the "
                   "limit: cut the trace", *CHECKOUT, p)

    def test_file_size(self):
        p = self.path("huge.csv")
        with open(p, "w") as f:
            f.truncate(257 << 20)  # sparse: nothing written
        r, took = self.timed(*CHECKOUT, p)
        self.assertEqual(r.code, 1, r)
        self.assertIn("huge.csv: 257 MiB, more than the limit of 256 MiB",
                      r.err)
        self.assertLess(took, 5.0)
        # one byte over: the size with the digits that keep it above the
        # limit (it was "256 MiB, more than the limit of 256 MiB")
        with open(p, "w") as f:
            f.truncate((256 << 20) + 1)
        r = self.timed(*CHECKOUT, p)[0]
        self.assertEqual(r.code, 1, r)
        mib = ((256 << 20) + 1) / 1048576
        self.assertEqual(float("%.8g" % mib), 256)  # 8 digits: the limit
        shown = "%.9g" % mib                         # 9: above it
        self.assertGreater(float(shown), 256)
        self.assertIn("huge.csv: %s MiB, more than the limit of 256 MiB"
                      % shown, r.err)

    def test_stream_size(self):
        # through stdin the size is counted as it is read: 257 MiB of
        # comment lines of 4001 bytes, refused at the line that passes
        proc = subprocess.Popen([METASTABLE] + list(CHECKOUT) + ["-"],
                                stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        line = b"#" + b"x" * 4000 + b"\n"
        chunk = line * 256
        try:
            proc.stdin.write(HEADER.encode())
            for _ in range((257 << 20) // len(chunk) + 1):
                proc.stdin.write(chunk)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        err = proc.stderr.read().decode()
        proc.wait(timeout=60)
        self.assertEqual(proc.returncode, 1, err)
        # 256 MiB = 29 header bytes + k lines of 4001 + the rest of line k+1
        k = ((256 << 20) - len(HEADER)) // len(line)
        self.assertIn("(stdin):%d:" % (k + 2), err)
        self.assertIn("the trace is longer than 256 MiB, the limit", err)

    # ---- service files ---------------------------------------------------

    def test_service_file_size(self):
        p = self.path("huge.yaml")
        with open(p, "w") as f:
            f.truncate((64 << 20) + 1)  # sparse: nothing written
        self.fails(1, "huge.yaml: larger than 67108864 bytes", "check", p)

    def test_service_file_services(self):
        # 100,001 items: refused at the last, "services: [" is 11 bytes
        # and each item before it 3 ("a, "); the whole file 300 kB
        p = self.write("many.yaml", "services: [" + "a, " * 100000 + "a]\n")
        r, took = self.timed("check", p)
        self.assertEqual(r.code, 1, r)
        self.assertIn("many.yaml:1:%d: more than 100000 services: the limit "
                      "of a file is 100000" % (11 + 3 * 100000 + 1), r.err)
        self.assertLess(took, 5.0)

    def test_service_alias(self):
        p = self.write("alias.yaml", "services:\n"
                       "  - &web {name: web, model: capacity, capacity: 9,\n"
                       "      retries: 1, inputs: {offered_rate: 1}}\n"
                       + "  - *web\n" * 10000)
        self.fails(1, "alias.yaml:4:5: a service cannot be an alias (*web)",
                   "check", p)

    # ---- Prometheus ------------------------------------------------------

    def test_prometheus_samples(self):
        n = 1000001
        p = self.write("big.json", response(
            [[1714564800 + i, "1"] for i in range(n)]))
        r, took = self.timed(*CHECKOUT, "--prometheus-json",
                             "offered_rate=" + p)
        self.assertEqual(r.code, 1, r)
        self.assertRegex(r.err, r"big\.json:1:\d+: data\.result\[0\]\."
                         r"values\[1000000\] \(sample 1000001 of the "
                         r"responses\): more than 1000000 samples in all")
        self.assertNotIn("Prometheus trace", r.err)
        self.assertLess(took, 10.0)

    def test_prometheus_size(self):
        p = self.path("huge.json")
        with open(p, "w") as f:
            f.truncate(65 << 20)
        self.fails(1, "huge.json: more than 64 MiB, the limit for a "
                   "Prometheus response", *CHECKOUT, "--prometheus-json",
                   "offered_rate=" + p)

    def test_prometheus_paths(self):
        vals = [[1714564800 + i, "1"] for i in range(20)]
        vals[17] = [1714564817, "\x1b[2J"]
        a = self.write("junk.json", response(vals))
        r = self.fails(1, "junk.json: data.result[0].values[17] (sample 18): "
                       "not [unix_time, \"number\"]", *CHECKOUT,
                       "--prometheus-json", "offered_rate=" + a)
        vals[17] = [1714564817, "1" * 100]  # would make a long CSV line
        b = self.write("long.json", response(vals))
        self.fails(1, "long.json: data.result[0].values[17] (sample 18)",
                   *CHECKOUT, "--prometheus-json", "offered_rate=" + b)
        vals[17] = [1714564816, "1"]
        c = self.write("order.json", response(vals))
        self.fails(1, "order.json: data.result[0].values[17] (sample 18): "
                   "the timestamp is not after", *CHECKOUT,
                   "--prometheus-json", "offered_rate=" + c)
        # a missing input names the option, not the merged CSV
        ok = self.write("ok.json", response(vals[:10]))
        r = self.fails(1, "no --prometheus-json offered_rate=FILE", *CHECKOUT,
                       "--prometheus-json", "retry_rate=" + ok)
        self.assertNotIn("(Prometheus trace)", r.err)

    # ---- the simulators --------------------------------------------------

    def test_des_memory(self):
        r, took = self.timed("simulate", "--engine", "des", "--load", "1e12",
                             "--duration", "604800", "--servers", "10",
                             "--service-time", "0.1", "--timeout", "1",
                             "--retries", "3")
        self.assertEqual(r.code, 2, r)
        self.assertEqual(r.out, "")
        # 16 MiB + 2 (30 x N_r + 24 x N_e) + 48 N_q: N_r capped at 2^31,
        # N_q = 4e12; the timeout on the response (the default) adds 8
        # bytes a request (its deadline) and an event per server (N_e 20)
        m = re.search(r"would need about (\d+) MiB \(des engine\), above the "
                      r"limit of 1024 MiB: the attempts in flight grow as "
                      r"load x \(1 \+ retries\) x timeout: lower --load",
                      r.err)
        self.assertIsNotNone(m, r)
        want = (16 * 2**20 + 2 * (30 * 2**31 + 24 * 20) + 48 * 4e12) / 2**20
        self.assertLess(abs(int(m.group(1)) - want), 1.0)
        self.assertLess(took, 5.0)
        # a storm that fits runs
        self.ok("simulate", "--engine", "des", "--load", "1000",
                "--duration", "5", "--servers", "10", "--service-time",
                "0.1", "--timeout", "1", "--retries", "3")

    def test_fluid_memory(self):
        # 2000 retries x (1 s + 10 s) / 0.1 ms bins: 1.76 GB of schedule,
        # which the engine's own cap (4.2e8 cells) would have allocated
        r, took = self.timed("simulate", "--servers", "10", "--service-time",
                             "0.1", "--timeout", "1", "--retries", "2000",
                             "--load", "50", "--dt", "0.0001",
                             "--backoff", "exponential,1,10")
        self.assertEqual(r.code, 2, r)
        self.assertIn("(fluid engine), above the limit of 1024 MiB: the "
                      "retry schedule grows as retries x (timeout + backoff "
                      "cap) / dt: raise --dt", r.err)
        self.assertLess(took, 5.0)

    def test_kept_windows(self):
        # JSON keeps every window: a week of 1 ms windows does not fit
        r = clitest.run("simulate", "--servers", "10", "--service-time",
                        "0.1", "--timeout", "1", "--retries", "3", "--load",
                        "50", "--duration", "604800", "--sample-interval",
                        "0.01", "--format", "json")
        self.assertEqual(r.code, 2, r)
        self.assertIn("with the windows kept", r.err)
        self.assertIn("--format csv without --plot", r.err)

    # ---- lab -------------------------------------------------------------

    def test_lab_budget(self):
        r, took = self.timed("lab", "--load", "0.95", "--base-failure",
                             "0.1", "--retries", "3", "--bits", "10000",
                             "--max-seconds", "0.001")
        self.assertEqual(r.code, 0, r)
        m = re.search(r"Bisection out of time \(--max-seconds\) after "
                      r"[\d.]+ s: the bracket reached is\n2\^-(\d+) of its "
                      r"lower end, of the 2\^-10000 asked \(--bits\)\.  To "
                      r"go further: a larger\n--max-seconds", r.out)
        self.assertIsNotNone(m, r)
        bits = int(m.group(1))
        self.assertLess(bits, 10000)
        # the bracket is one: F - L changes sign on it (exact fractions)
        lo = F(re.search(r"^  lo = (\d+/\d+)$", r.out, re.M).group(1))
        hi = F(re.search(r"^  hi = (\d+/\d+)$", r.out, re.M).group(1))

        def fmap(L, lam=F(19, 20), base=F(1, 10), rr=3):
            p = base + (1 - base) * max(F(0), (L - 1) / L)
            return lam * sum(p ** i for i in range(rr + 1))
        self.assertGreaterEqual(fmap(lo), lo)
        self.assertLessEqual(fmap(hi), hi)
        self.assertLessEqual(hi - lo, lo / 2 ** bits)
        self.assertLess(took, 30.0)
        self.fails(2, "--max-seconds: '0' is out of range", "lab", "--load",
                   "1", "--base-failure", "0", "--retries", "1",
                   "--max-seconds", "0")

    # ---- Ctrl-C ----------------------------------------------------------

    def interrupt(self, *args, after=1.0):
        proc = subprocess.Popen([METASTABLE] + list(args),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(after)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        return proc.returncode, out, err

    def test_sigint_seeds(self):
        code, out, err = self.interrupt(*SLOW_DES, "--duration", "600000",
                                        "--seeds", "1000")
        self.assertEqual(code, 130, err)
        self.assertEqual(out, "")
        self.assertRegex(err, r"metastable simulate: interrupted: 0 of 1000 "
                         r"runs completed \(seed 1 stopped\)")

    def test_sigint_run(self):
        code, out, err = self.interrupt(*SLOW_DES, "--duration", "600000")
        self.assertEqual(code, 130, err)
        m = re.search(r"metastable simulate: interrupted: simulated (\S+) of "
                      r"600000 s; no summary written", err)
        self.assertIsNotNone(m, err)
        self.assertGreater(float(m.group(1)), 0)
        self.assertLess(float(m.group(1)), 600000)

    def test_sigint_csv(self):
        # the CSV rows written before Ctrl-C are whole windows
        code, out, err = self.interrupt(*SLOW_DES, "--duration", "600000",
                                        "--format", "csv")
        self.assertEqual(code, 130, err)
        self.assertIn("(the CSV rows written are those windows)", err)
        rows = out.splitlines()
        self.assertGreater(len(rows), 2)
        n = len(rows[0].split(","))
        self.assertTrue(all(len(r.split(",")) == n for r in rows))

    def test_sigint_lab(self):
        # the whole bisection takes about 1 s on the project's machine (0.97
        # s on 2026-12-07): Ctrl-C at 0.3 s, well inside it
        code, out, err = self.interrupt(
            "lab", "--load", "0.95", "--base-failure", "0.1", "--retries",
            "3", "--bits", "10000", after=0.3)
        self.assertEqual(code, 130, err)
        self.assertIn("Bisection interrupted (Ctrl-C)", out)
        self.assertIn("metastable lab: interrupted: the bracket reached is "
                      "printed above", err)

    def interrupt_timed(self, *args):
        """Ctrl-C 1 s in: (exit code, stdout, stderr, seconds to exit)."""
        proc = subprocess.Popen([METASTABLE] + list(args),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        return proc.returncode, out, err, time.monotonic() - t0

    def test_sigint_tolerance(self):
        # the heaviest service found (doc/performance.md): its search takes
        # seconds, its long probes most of a second; Ctrl-C ends it at the
        # next window, with the bracket reached, within a second
        code, out, err, took = self.interrupt_timed(
            "tolerance", "--model", "erlang", "--servers", "10000000",
            "--service-time", "100ms", "--timeout", "1s", "--base-failure",
            "0.01", "--retries", "10000", "--load", "20200")
        self.assertEqual(code, 130, err)
        self.assertEqual(out, "")
        self.assertRegex(err, r"metastable tolerance: interrupted: \d+ probes "
                         r"done, the stall (survived \S+ s|not bracketed)")
        self.assertIn("nothing written", err)
        # the whole search takes several seconds on this service
        self.assertLess(took, 5.0)

    def test_sigint_recommend_hazard(self):
        # the answers under the hazard target walk the chain many times:
        # 10^4 servers on the response took 12 s, and Ctrl-C 1 s in was
        # ignored (exit 0, a new-user trial of issue 36); now it stops
        code, out, err, took = self.interrupt_timed(
            "recommend", "--servers", "10000", "--service-time", "100ms",
            "--timeout", "1s", "--retries", "3", "--load", "90000")
        self.assertEqual(code, 130, err)
        self.assertEqual(out, "")
        self.assertRegex(err, r"metastable recommend: interrupted: .*nothing "
                         r"written")
        self.assertLess(took, 5.0)

    # ---- control bytes ---------------------------------------------------

    def test_control_bytes(self):
        p = self.write("ctl.csv", HEADER + "1,\x1b[31mred\x07,0\n")
        r = self.fails(1, "ctl.csv:2:3: offered_rate: '\\x1b[31mred\\x07' is "
                       "not a number", *CHECKOUT, p)
        self.assertNotIn("\x1b", r.err)
        self.assertNotIn("\x07", r.err)
        # in a file name and an option value too; UTF-8 text is kept
        r = clitest.run("simulate", "--load", "\x1b]0;x\x07é")
        self.assertEqual(r.code, 2, r)
        self.assertIn("\\x1b]0;x\\x07é", r.err)
        self.assertNotIn("\x1b", r.err)
        r = clitest.run(*CHECKOUT, self.path("no\x1bsuch.csv"))
        self.assertIn("no\\x1bsuch.csv: cannot open", r.err)


if __name__ == "__main__":
    clitest.main()
