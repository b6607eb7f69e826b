#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The fluid engine's stall tolerance against the DES latch boundary.

For each service of a grid (pools 10 .. 10^4 servers of 100 ms, timeouts
2 .. 100 service times, 1 .. 4 retries, no backoff, no base failure) at an
offered load a share --band (default 0.5) of the way from the recovery to
the tipping load, it runs `metastable tolerance --format json` twice: with
the fluid engine (--engine fluid, one deterministic search; not the
default --engine auto, which picks the DES on small pools) and with the
discrete-event engine (--engine des: one search per seed, the median of
the seeds' brackets).  Each boundary is the midpoint of its final bracket (1 %
bisection, or one fluid bin); the error is fluid / DES - 1, negative when
the fluid engine latches on shorter stalls than the queue does.

The DES is the expensive half, and it does not depend on the fluid
engine: --reuse CSV takes its columns from an earlier run's file and runs
the fluid engine only (seconds), so that a change to the fluid engine is
measured against the same DES numbers.  The larger pools run at fewer
points and seeds (the DES costs about 12 c mu T requests a probe).

Output: CSV on stdout (or --out FILE), one row per service, then the
worst error of each sign on stderr.  tests/data/tolerance_grid.csv is
this tool's output with --timeout-covers wait,
tests/data/tolerance_grid_band09.csv its output with --band 0.9 and
--timeout-covers wait, tests/data/tolerance_grid_response.csv its output
with the timeout on the response (the default); doc/simulation.md quotes
them.

Usage: tools/tolerance_grid.py [--metastable build/cli/metastable]
       [--reuse tests/data/tolerance_grid.csv] [--out FILE] [--quick]
       [--jobs N] [--timeout-covers response|wait]
Seeded (the DES's seeds 1 .. N): the same build prints the same table.
The full DES grid takes about 10 minutes on two cores (--jobs 2).
"""
import argparse
import concurrent.futures
import csv
import json
import subprocess
import sys

SERVICE_TIME = 0.1  # s
# (servers, timeout in service times, retries, DES seeds)
GRID = [
    (c, k, r, 41 if c == 10 else 9 if c * k <= 2000 else 5 if c == 100 else 3)
    for c in (10, 100, 1000, 10000)
    for k in (2, 5, 20, 100)
    for r in (1, 2, 4)
    if c * k <= 20000
]
QUICK = [(10, 10, 3, 5), (40, 161, 4, 3)]
COLUMNS = [
    "servers", "timeout_service_times", "retries", "load", "tipping_load",
    "recovery_load", "fluid_tolerance", "fluid_latch", "des_tolerance",
    "des_latch", "des_lowest", "des_highest", "seeds", "error",
]


def run(metastable, args):
    out = subprocess.run([metastable, "tolerance", "--format", "json"] + args,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


COVERS = ["response"]  # --timeout-covers, set by main


def model_args(c, k, r):
    return ["--servers", str(c), "--service-time", str(SERVICE_TIME),
            "--timeout", repr(k * SERVICE_TIME), "--retries", str(r),
            "--timeout-covers", COVERS[0]]


def load_of(metastable, c, k, r, band):
    """The offered load a share band into the bistable band."""
    probe = run(metastable, model_args(c, k, r) + ["--load", "0",
                                                    "--engine", "fluid"])
    tip, rec = probe["tipping_load"], probe["recovery_load"]
    return rec + band * (tip - rec), tip, rec


def boundary(res):
    if res["verdict"] != "bounded":
        return None
    return 0.5 * (res["tolerance"] + res["latch"])


def point(metastable, c, k, r, seeds, band, old):
    load, tip, rec = load_of(metastable, c, k, r, band)
    base = model_args(c, k, r) + ["--load", repr(load)]
    # the fluid column names its engine: --engine auto, the default,
    # would run the DES on the small pools
    fl = run(metastable, base + ["--engine", "fluid"])
    row = {"servers": c, "timeout_service_times": k, "retries": r,
           "load": load, "tipping_load": tip, "recovery_load": rec,
           "fluid_tolerance": fl["tolerance"], "fluid_latch": fl["latch"]}
    if old is not None:
        for key in ("des_tolerance", "des_latch", "des_lowest",
                    "des_highest", "seeds"):
            row[key] = old[key]
    else:
        de = run(metastable, base + ["--engine", "des", "--seeds",
                                     str(seeds)])
        row.update(des_tolerance=de["tolerance"], des_latch=de["latch"],
                   des_lowest=de["lowest"], des_highest=de["highest"],
                   seeds=de["seeds"])
    f = boundary(fl)
    d = None
    if row["des_tolerance"] not in (None, "") and row["des_latch"]:
        d = 0.5 * (float(row["des_tolerance"]) + float(row["des_latch"]))
    row["error"] = f / d - 1 if f is not None and d else None
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metastable", default="build/cli/metastable")
    ap.add_argument("--reuse", help="take the DES columns from this CSV")
    ap.add_argument("--out", help="write the CSV here (default stdout)")
    ap.add_argument("--band", type=float, default=0.5)
    ap.add_argument("--quick", action="store_true",
                    help="the two services of issue 34 only")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout-covers", choices=["response", "wait"],
                    default="response",
                    help="what the timeout times (default response)")
    a = ap.parse_args()
    COVERS[0] = a.timeout_covers
    old = {}
    if a.reuse:
        with open(a.reuse, newline="") as f:
            for r in csv.DictReader(f):
                old[(int(r["servers"]), int(r["timeout_service_times"]),
                     int(r["retries"]))] = r
    grid = QUICK if a.quick else GRID
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        rows = list(ex.map(
            lambda g: point(a.metastable, *g, a.band,
                            old.get(g[:3]) if a.reuse else None), grid))
    out = open(a.out, "w", newline="") if a.out else sys.stdout
    w = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if v is None else
                        f"{v:.6g}" if isinstance(v, float) else v)
                    for k, v in row.items()})
    errs = [r["error"] for r in rows if r["error"] is not None]
    if errs:
        print(f"worst: {min(errs):+.1%} (fluid shorter), "
              f"{max(errs):+.1%} (fluid longer), over {len(errs)} services",
              file=sys.stderr)


if __name__ == "__main__":
    main()
