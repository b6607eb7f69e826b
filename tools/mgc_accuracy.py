#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The accuracy of the M/G/c wait tail (doc/design.md §1.1) against the DES.

For each pool, service time distribution and coefficient of variation it
runs `metastable simulate --engine des` and `metastable solve`, and prints
the Markdown tables of doc/design.md §1.1:

  * P(W > T), the share of attempts that time out, at utilisations 0.8,
    0.9 and 0.95 without retries (x = lambda): the DES's ratio of timed-out
    attempts, its batch-means standard error (windows of --window seconds
    after one window of warm-up), the model's approximation C(c, a)
    exp(-(c mu - x) 2T/(1 + cv^2)) and their ratio;
  * the retry loop (3 retries, no base failure) at half and at 80 % of the
    model's tipping load for that cv: failure ratio and attempts per
    request, DES against the model's healthy equilibrium;
  * the tipping load the measured tail implies: the largest x / A(p(x))
    over a grid of x, p(x) the DES's open-loop P(W > T) at x, against the
    model's tipping load.

Usage: tools/mgc_accuracy.py [--metastable build/cli/metastable]
       [--duration S] [--window S] [--quick] [--timeout-covers response]

With --timeout-covers response both time the whole response: the tables
are then of P(W + S > T) and its M/G/c counterpart (doc/design.md §1.1).
Everything is seeded (--seed, default 1): the same build prints the same
tables.  The full run takes about a quarter of an hour on one core;
--quick half a minute.
"""
import argparse
import json
import math
import subprocess
import sys

MU = 10.0  # service rate, 1/s: service time 100 ms
# servers, timeout: 2, 10 and 1 service times
POOLS = [(10, 0.2), (10, 1.0), (50, 0.1)]
RHOS = [0.8, 0.9, 0.95]
DISTS = [  # (distribution, cv)
    ("deterministic", 0.0),
    ("lognormal", 0.5),
    ("exponential", 1.0),
    ("lognormal", 1.0),
    ("lognormal", 2.0),
    ("hyperexponential", 2.0),
    ("lognormal", 4.0),
    ("hyperexponential", 4.0),
]
RETRIES = 3
COVERS = ["wait"]  # --timeout-covers, set by main


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def model_args(servers, timeout, cv, retries):
    return ["--servers", str(servers), "--service-rate", str(MU),
            "--timeout", str(timeout), "--retries", str(retries),
            "--service-time-cv", repr(cv), "--timeout-covers", COVERS[0]]


def des(opts, servers, timeout, dist, cv, retries, load):
    """Failure ratio and attempts per request with batch-means errors."""
    cmd = [opts.metastable, "simulate", "--engine", "des",
           "--service-dist", dist, "--seed", str(opts.seed),
           "--load", repr(load), "--duration",
           repr(opts.duration + opts.window), "--sample-interval",
           repr(opts.window), "--format", "json"]
    cmd += model_args(servers, timeout, cv, retries)
    out = run(cmd)
    series = out["series"][1:]  # the first window is the warm-up
    des.first_storm = out["summary"]["first_storm_at"]
    fail = [w["failures"] * opts.window for w in series]
    att = [w["attempts"] * opts.window for w in series]
    off = [w["offered"] * opts.window for w in series]
    p = sum(fail) / sum(att)
    amp = sum(att) / sum(off)
    n = len(series)

    def se(num, den, ratio):
        # batch means of a ratio estimator
        r = [(a - ratio * b) / (sum(den) / n) for a, b in zip(num, den)]
        return math.sqrt(sum(v * v for v in r) / (n - 1) / n)

    return p, se(fail, att, p), amp, se(att, off, amp)


def model(opts, servers, timeout, cv, retries, load):
    cmd = [opts.metastable, "solve", "--load", repr(load), "--format", "json"]
    return run(cmd + model_args(servers, timeout, cv, retries))


def fmt_p(v):
    return "0" if v == 0 else f"{v:.3g}"


def tail_table(opts):
    print("| c | T | service | cv | rho | DES P(W>T) | model | model/DES |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = {}
    for servers, timeout in POOLS:
        for dist, cv in DISTS:
            for rho in RHOS:
                x = rho * servers * MU
                p, sp, _, _ = des(opts, servers, timeout, dist, cv, 0, x)
                q = model(opts, servers, timeout, cv, 0,
                          x)["failure_probability"]
                # a ratio only where the DES's standard error is at most a
                # quarter of its estimate (timeouts come in bursts)
                ratio = f"{q / p:.2f}" if p > 0 and sp <= p / 4 else "—"
                ratios[servers, timeout, dist, cv, rho] = ratio
                print(f"| {servers} | {timeout:g} s | {dist} | {cv:g} | "
                      f"{rho:g} | {fmt_p(p)} ± {sp:.2g} | {fmt_p(q)} | "
                      f"{ratio} |")
    print()
    # the same ratios, one row per distribution
    head = " | ".join(f"c {c}, T {t * MU:g}/mu, rho {r:g}"
                      for c, t in POOLS for r in RHOS)
    print(f"| service | cv | {head} |")
    print("|---|---|" + "---|" * (len(POOLS) * len(RHOS)))
    for dist, cv in DISTS:
        cells = " | ".join(ratios[c, t, dist, cv, r]
                           for c, t in POOLS for r in RHOS)
        print(f"| {dist} | {cv:g} | {cells} |")
    sys.stdout.flush()


def loop_table(opts):
    print("| c | T | service | cv | offered (share of model tipping) | "
          "DES p | model p | DES attempts/request | model |")
    print("|---|---|---|---|---|---|---|---|---|")
    for servers, timeout in POOLS:
        for dist, cv in DISTS:
            tip = model(opts, servers, timeout, cv, RETRIES,
                        1.0)["tipping_load"]
            for share in (0.5, 0.7, 0.9):
                lam = share * tip
                p, sp, a, sa = des(opts, servers, timeout, dist, cv, RETRIES,
                                   lam)
                m = model(opts, servers, timeout, cv, RETRIES, lam)
                storm = des.first_storm
                note = "" if storm is None else f" (storm from {storm:g} s)"
                print(f"| {servers} | {timeout:g} s | {dist} | {cv:g} | "
                      f"{lam:.4g}/s ({share:.0%}){note} | {fmt_p(p)} ± {sp:.2g} | "
                      f"{fmt_p(m['failure_probability'])} | {a:.4f} ± "
                      f"{sa:.2g} | {m['amplification']:.4f} |")
    sys.stdout.flush()


def amp(p):
    return sum(p**i for i in range(RETRIES + 1))


def tipping_table(opts):
    print("| c | T | service | cv | model tipping load | from the DES's "
          "tail | difference |")
    print("|---|---|---|---|---|---|---|")
    for servers, timeout in POOLS:
        cmu = servers * MU
        for dist, cv in DISTS:
            tip = model(opts, servers, timeout, cv, RETRIES, 1.0)
            xt = tip["tipping_load"]
            # a grid around the model's fold, and the DES's own maximum
            short = argparse.Namespace(**vars(opts))
            short.duration = opts.tip_duration
            short.window = opts.tip_duration / 20

            def lam(x):
                p, _, _, _ = des(short, servers, timeout, dist, cv, 0, x)
                return x / amp(p)

            # a coarse grid over [0.5, 0.99] c mu, then a fine one around
            # its best point
            h = 0.49 * cmu / (opts.grid - 1)
            best, bx = max((lam(x), x) for x in
                           (0.5 * cmu + i * h for i in range(opts.grid)))
            lo, hi = max(0.5 * cmu, bx - h), min(0.999 * cmu, bx + h)
            for i in range(opts.grid):
                x = lo + (hi - lo) * i / (opts.grid - 1)
                best = max(best, lam(x))
            print(f"| {servers} | {timeout:g} s | {dist} | {cv:g} | "
                  f"{xt:.4g}/s | {best:.4g}/s | {best / xt - 1:+.1%} |")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metastable", default="build/cli/metastable")
    ap.add_argument("--duration", type=float, default=20000.0)
    ap.add_argument("--window", type=float, default=1000.0)
    ap.add_argument("--grid", type=int, default=25)
    ap.add_argument("--tip-duration", type=float, default=4000.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["tail", "loop", "tipping"])
    ap.add_argument("--timeout-covers", choices=["wait", "response"],
                    default="wait",
                    help="what the timeout times, in the DES and the model "
                    "(response: the P(W + S > T) of doc/design.md §1.1)")
    opts = ap.parse_args()
    COVERS[0] = opts.timeout_covers
    if opts.quick:
        opts.duration, opts.window, opts.grid = 2000.0, 100.0, 12
        opts.tip_duration = 1000.0
    for name, table in (("tail", tail_table), ("tipping", tipping_table),
                        ("loop", loop_table)):
        if opts.only in (None, name):
            table(opts)
            print()


if __name__ == "__main__":
    main()
