#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The lab's staircase in the discrete-event simulation (lab/staircase.sh).

Runs the staircase of a lab stack through `metastable simulate --engine
des` (clients that time out and retry as the service file says, servers
that still serve what was abandoned), seed by seed, and measures it with
the lab's own rules: the tipping load is the first step up whose last
LATCHED_FOR s together had goodput under half the offered load; going down
from there (the steps below the tip), the recovery load is the highest
step whose queue shrank faster than DRAINS per second from SETTLE s into
the step, and goodput is back at the first step where it held 90 % of
offered for RECOVERED_FOR s in a row (which ends the step, as in the lab).

    des-staircase.py METASTABLE SPEC SERVICE "UP" "DOWN" SEEDS

UP and DOWN are the lab's steps, "rate:seconds ...".  Prints one line
per seed, "seed tipping recovery back" ("-" for none), then a line
"range TIP_MIN TIP_MAX REC_MIN REC_MAX BACK_MIN BACK_MAX LATCHED" over the
seeds (LATCHED: how many seeds latched).  The lab's stack is held against
this: a stack that behaves as its algorithm does measures inside the
range.
"""
import csv
import io
import subprocess
import sys

MAX_CHANGES = 16  # simulate's limit on a scenario's triggers
LATCHED_FOR = 5
RECOVERED_FOR = 5
SETTLE = 3
DRAINS = 2


def steps_of(text):
    return [(float(a), int(b)) for a, b in (s.split(":") for s in text.split())]


def simulate(metastable, spec, service, steps, seed):
    """The per-second rows of the DES over STEPS (load, seconds)."""
    dur = sum(s for _, s in steps)
    base = steps[0][0]
    args, t, prev = [], 0, base
    # every change of load holds to the end: a spike up or a drop down
    for i, (load, secs) in enumerate(steps):
        if i > 0 and load != prev:
            kind = "--spike" if load > prev else "--drop"
            args += [kind, "%d,%d,%g" % (t, dur - t + 10, abs(load - prev))]
        prev = load
        t += secs
    out = subprocess.run(
        [metastable, "simulate", "--spec", spec, "--service", service, "--engine", "des", "--load", "%g" % base,
         "--duration", str(dur), "--format", "csv", "--seed", str(seed)] + args,
        capture_output=True, text=True, check=True).stdout
    rows = {}
    for r in csv.DictReader(io.StringIO(out)):
        rows[int(float(r["time"]))] = (float(r["offered"]), float(r["goodput"]),
                                       float(r["queue_length"]))
    return rows


def windows(steps):
    t, out = 0, []
    for load, secs in steps:
        out.append((t, t + secs, load))
        t += secs
    return out


def tipping(rows, up):
    for a, b, load in windows(up):
        last = [rows.get(t) for t in range(b - LATCHED_FOR + 1, b + 1)]
        if all(x is not None for x in last) and sum(x[1] for x in last) < 0.5 * sum(
            x[0] for x in last
        ):
            return load, b
    return None, None


def recovery(rows, up_end, down):
    rec = back = None
    for a, b, load in windows(down):
        a, b = a + up_end, b + up_end
        good, q0, drain = 0, None, 0.0
        for i, t in enumerate(range(a + 1, b + 1), start=1):
            x = rows.get(t)
            if x is None:
                continue
            if i == SETTLE:
                q0 = x[2]
            if q0 is not None and i > SETTLE:
                drain = (x[2] - q0) / (i - SETTLE)
            good = good + 1 if x[0] > 0 and x[1] >= 0.9 * x[0] else 0
            if good >= RECOVERED_FOR:
                back = load
                break
        if rec is None and drain < -DRAINS:
            rec = load
        if back is not None:
            return rec, back
    return rec, back


def main():
    if len(sys.argv) != 7:
        sys.exit("usage: des-staircase.py METASTABLE SPEC SERVICE \"UP\" \"DOWN\" SEEDS")
    metastable, spec, service, up_text, down_text, seeds = sys.argv[1:7]
    up, down = steps_of(up_text), steps_of(down_text)
    found = []
    for seed in range(1, int(seeds) + 1):
        rows = simulate(metastable, spec, service, up, seed)
        tip, _ = tipping(rows, up)
        rec = back = None
        if tip is not None:
            k = next(i for i, s in enumerate(up) if s[0] == tip)
            # the steps down below the tip, as many as simulate takes
            below = [s for s in down if s[0] < tip][:MAX_CHANGES - k]
            rows = simulate(metastable, spec, service, up[:k + 1] + below, seed)
            # the second path runs the same seed: it must latch where the
            # first did, or its steps down measure a storm that was not
            if tipping(rows, up[:k + 1])[0] == tip:
                rec, back = recovery(rows, sum(s for _, s in up[:k + 1]), below)
        found.append((tip, rec, back))
        print(seed, *("-" if v is None else "%g" % v for v in (tip, rec, back)), flush=True)

    def span(i):
        v = [f[i] for f in found if f[i] is not None]
        return ("%g %g" % (min(v), max(v))) if v else "- -"
    print("range", span(0), span(1), span(2), sum(f[0] is not None for f in found))


if __name__ == "__main__":
    main()
