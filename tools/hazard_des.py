#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The mean time to a storm of a small pool, measured with the DES.

For each point (pool, timeout, retries, offered load) of a small grid
(100 ms servers, the timeout on the wait or with --timeout-covers
response on the response, no backoff, no base failure) it
runs `metastable simulate --engine des --seeds N --format csv` at a
constant load from an empty queue for at most --duration seconds.  A
run's first passage is its summary's first_storm_at: the start of the
first window (--sample-interval, default 10 s) whose storm flag is up
(doc/design.md §1.7).  A run that never storms is censored at the duration.

The first passage of a rare escape is close to exponential, so the mean
is the exponential maximum-likelihood estimate under type-I censoring,
the total time on test over the number of storms:

    mean = (sum of first passages + censored runs x duration) / storms

and its 95 % interval is the chi-square one of Cox (1953) for the total
time on test, 2 TTT / chi2(0.975, 2d) to 2 TTT / chi2(0.025, 2d + 2)
(d storms; the upper end takes 2d + 2 degrees of freedom, conservative
under censoring; Lawless, Statistical Models and Methods for Lifetime
Data, 2nd ed., 2003, sec. 2.2).  With no storm at all the mean is
reported empty and the lower end only is given.

Output: CSV on stdout (or --out FILE): pool, service_time, timeout,
retries, load, tipping, mean, lo, hi, seeds, censored.
tests/data/hazard_des.csv is this tool's output with --seeds 60 (about
25 minutes on two busy cores; 240 seeds at the two points marked x4),
tests/data/hazard_des_response.csv its output with --timeout-covers
response --seeds 100.  --only POOL:LOAD runs one point of the grid
(repeatable): the same seeds give the same row as a whole run.

Usage: tools/hazard_des.py [--metastable build/cli/metastable]
       [--seeds 20] [--duration 20000] [--jobs 2] [--out FILE]
       [--timeout-covers wait|response] [--only POOL:LOAD ...]
Seeded: the same build prints the same table.
"""
import argparse
import concurrent.futures
import csv
import io
import math
import re
import subprocess
import sys

# (pool, service time s, timeout s, retries, loads req/s).  A load may be
# (load, factor): that point runs factor x --seeds seeds (where most runs
# are censored and the interval is wide).
GRID = [
    (1, 0.1, 1.0, 3, [5.0, 6.0, 7.0]),
    (2, 0.1, 1.0, 3, [13.0, 15.0]),
    (5, 0.1, 1.0, 3, [(40.0, 4), 43.0, 45.0]),
    (10, 0.1, 1.0, 3, [88.0, (90.0, 4), 92.0, 94.0]),
    (8, 0.1, 0.5, 1, [62.0, 65.0, 68.0, 71.0]),
]
# The same pools with the timeout on the response (--timeout-covers
# response), at loads below their (lower) tipping loads.
GRID_RESPONSE = [
    (2, 0.1, 1.0, 3, [13.0, 15.0]),
    (5, 0.1, 1.0, 3, [42.0, 44.0]),
    (10, 0.1, 1.0, 3, [89.0, 91.0, 93.0]),
    (8, 0.1, 0.5, 1, [60.0, 63.0, 66.0]),
]


def poisson_cdf(k, m):
    """P(N <= k) for N Poisson of mean m, summed in logs."""
    if m <= 0:
        return 1.0
    total, term = 0.0, -m
    for i in range(k + 1):
        if i > 0:
            term += math.log(m) - math.log(i)
        total += math.exp(term)
    return min(total, 1.0)


def chi2_quantile_even(dof, prob):
    """Quantile of chi-square with an even dof: P(chi2 > 2x) = P(Pois(x) < dof/2)."""
    k = dof // 2
    lo, hi = 0.0, 10.0 * (k + 10)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        # P(chi2(2k) <= 2 mid) = 1 - P(Pois(mid) <= k - 1)
        if 1.0 - poisson_cdf(k - 1, mid) < prob:
            lo = mid
        else:
            hi = mid
    return lo + hi  # 2 x


def estimate(times, duration):
    """Exponential MLE under censoring at duration, with a 95 % interval."""
    storms = [t for t in times if t is not None]
    censored = len(times) - len(storms)
    ttt = sum(storms) + censored * duration
    d = len(storms)
    hi = 2 * ttt / chi2_quantile_even(2 * d + 2, 0.025) if d >= 0 else None
    if d == 0:
        return None, 2 * ttt / chi2_quantile_even(2, 0.975), None, censored
    mean = ttt / d
    lo = 2 * ttt / chi2_quantile_even(2 * d + 2, 0.975)
    hi = 2 * ttt / chi2_quantile_even(2 * d, 0.025)
    return mean, lo, hi, censored


def tipping(args, pool, service, timeout, retries):
    out = subprocess.run(
        [args.metastable, "solve", "--servers", str(pool),
         "--service-time", repr(service), "--timeout", repr(timeout),
         "--retries", str(retries), "--timeout-covers", args.timeout_covers],
        check=True, capture_output=True, text=True).stdout
    return float(re.search(r"tipping load\s+(\S+)", out).group(1))


def run_point(args, pool, service, timeout, retries, load, seeds):
    out = subprocess.run(
        [args.metastable, "simulate", "--engine", "des",
         "--servers", str(pool), "--service-time", repr(service),
         "--timeout", repr(timeout), "--retries", str(retries),
         "--timeout-covers", args.timeout_covers, "--load", repr(load),
         "--duration", repr(args.duration),
         "--sample-interval", repr(args.sample_interval),
         "--seeds", str(seeds), "--format", "csv"],
        check=True, capture_output=True, text=True).stdout
    times = []
    for row in csv.DictReader(io.StringIO(out)):
        t = row["first_storm_at"]
        times.append(float(t) if t != "" else None)
    return estimate(times, args.duration)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metastable", default="build/cli/metastable")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--duration", type=float, default=20000.0)
    ap.add_argument("--sample-interval", type=float, default=10.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout-covers", choices=["wait", "response"],
                    default="wait")
    ap.add_argument("--only", action="append", metavar="POOL:LOAD",
                    help="run this point only (repeatable)")
    ap.add_argument("--out")
    args = ap.parse_args()
    grid = GRID if args.timeout_covers == "wait" else GRID_RESPONSE
    points = []
    for c, s, t, r, loads in grid:
        for lam in loads:
            lam, factor = lam if isinstance(lam, tuple) else (lam, 1)
            points.append((c, s, t, r, lam, factor * args.seeds))
    if args.only:
        want = {(int(p.split(":")[0]), float(p.split(":")[1]))
                for p in args.only}
        points = [p for p in points if (p[0], p[4]) in want]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        futs = [ex.submit(run_point, args, *p) for p in points]
        tips = {p[:4]: tipping(args, *p[:4]) for p in points}
        rows = [f.result() for f in futs]
    out = open(args.out, "w") if args.out else sys.stdout
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["pool", "service_time", "timeout", "retries", "load",
                "tipping", "mean", "lo", "hi", "seeds", "censored"])
    fmt = lambda v: "" if v is None else "%.4g" % v
    for p, (mean, lo, hi, cens) in zip(points, rows):
        w.writerow([p[0], p[1], p[2], p[3], p[4], "%.6g" % tips[p[:4]],
                    fmt(mean), fmt(lo), fmt(hi), p[5], cens])
    if args.out:
        out.close()


if __name__ == "__main__":
    main()
