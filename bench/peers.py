#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""SciPy's two usual forms of Erlang B and C, for bench/bench_model's table
beside the peers (doc/performance.md):

    python3 bench/peers.py POINTS OUT

POINTS has one line per point, "column,servers,offered_erlangs" (the
offered traffic a printed with 17 significant digits, so that it reads
back as the same double).  Each point is evaluated in both forms, one
scalar call per point as a user computing one service would write it:

  pmf/cdf:    B = poisson.pmf(c, a) / poisson.cdf(c, a),
              C = c B / (c - a (1 - B))
  logpmf:     ln B = poisson.logpmf(c, a) - ln gammaincc(c + 1, a),
              ln C = ln c + ln B - ln(c - a (1 - B)),  B, C = exp of them

(Erlang B is the Poisson pmf over its cdf at c, and the Poisson cdf at c
is the regularised upper incomplete gamma Q(c + 1, a); Erlang C from B as
in doc/design.md §5.)  OUT gets "form,index,a,B,C,lnB,lnC" per point
(index into POINTS, a as read, for the caller to check) and
"time,form,column,points,seconds" per column: the wall time of the loop
over that column's points in this process, start-up and imports not
counted; "vector,form,column,points,seconds" the same forms called once on
the column's arrays (numpy), for what a batch costs per point.

Exits 3 with one line on stdout when SciPy cannot be imported.
"""
import math
import sys
import time


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: peers.py POINTS OUT")
    try:
        import numpy as np
        import scipy
        from scipy.special import gammaincc
        from scipy.stats import poisson
    except ImportError as e:
        print("   SciPy is not installed for %s (%s): its rows are skipped"
              % (sys.executable, e))
        return 3

    def pmf_cdf(c, a):
        b = float(poisson.pmf(c, a) / poisson.cdf(c, a))
        cc = c * b / (c - a * (1.0 - b))
        return (b, cc, math.log(b) if b > 0 else -math.inf,
                math.log(cc) if cc > 0 else -math.inf)

    def logpmf(c, a):
        lb = float(poisson.logpmf(c, a) - np.log(gammaincc(c + 1, a)))
        b = math.exp(lb)
        lc = math.log(c) + lb - math.log(c - a * (1.0 - b))
        return b, math.exp(lc), lb, lc

    def pmf_cdf_vector(c, a):
        b = poisson.pmf(c, a) / poisson.cdf(c, a)
        return b, c * b / (c - a * (1.0 - b))

    def logpmf_vector(c, a):
        lb = poisson.logpmf(c, a) - np.log(gammaincc(c + 1, a))
        return lb, np.log(c) + lb - np.log(c - a * (1.0 - np.exp(lb)))

    points = []
    with open(sys.argv[1]) as f:
        for line in f:
            col, c, a = line.split(",")
            points.append((int(col), int(c), float(a)))
    columns = sorted({p[0] for p in points})
    forms = (("scipy_pmf_cdf", pmf_cdf, pmf_cdf_vector),
             ("scipy_logpmf_gammaincc", logpmf, logpmf_vector))
    with open(sys.argv[2], "w") as out:
        out.write("# scipy %s, numpy %s, python %s\n"
                  % (scipy.__version__, np.__version__,
                     sys.version.split()[0]))
        for name, fn, vec in forms:
            fn(10, 5.0)  # first-call costs out of the timing
            for col in columns:
                idx = [i for i, p in enumerate(points) if p[0] == col]
                res = []
                t0 = time.perf_counter()
                for i in idx:
                    res.append(fn(points[i][1], points[i][2]))
                t = time.perf_counter() - t0
                for i, r in zip(idx, res):
                    out.write("%s,%d,%r,%r,%r,%r,%r\n"
                              % ((name, i, points[i][2]) + r))
                out.write("time,%s,%d,%d,%r\n" % (name, col, len(idx), t))
                c = np.array([points[i][1] for i in idx], dtype=float)
                a = np.array([points[i][2] for i in idx])
                t0 = time.perf_counter()
                vec(c, a)
                t = time.perf_counter() - t0
                out.write("vector,%s,%d,%d,%r\n" % (name, col, len(idx), t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
