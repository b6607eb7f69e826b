#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Dense Erlang B/C reference grid for tests/check_erlang.c, written to
tests/data/erlang_dense.csv; with --overload, Erlang B at a >= c (the
overloaded loss system) for tests/data/erlang_overload.csv.

The grid covers what the shared fixture only samples: the switch between the
series and Temme's expansion (c from 40 to 1000, a/c around 0.6), and the
approach to saturation (a/c -> 1) for c from 10^4 to 10^7, where ln pmf through
lgamma loses digits.  Offered traffic is a double; it is written with 17
significant digits so that the C test reads back the same double.

Independent of the C code: mpmath at 50 digits, ln B = c ln a - a - ln c!
- ln Q(c + 1, a) with mpmath's own regularized incomplete gamma, and
ln C = ln c + ln B - ln(c - a + a B).
"""
import math
import random
import sys

import mpmath as mp

mp.mp.dps = 50


def ref(c, a):
    A = mp.mpf(a)  # exact value of the double
    q = mp.gammainc(c + 1, A, mp.inf, regularized=True)
    lb = c * mp.log(A) - A - mp.loggamma(c + 1) - mp.log(q)
    lc = mp.log(c) + lb - mp.log(c - A + A * mp.exp(lb))
    return lb, lc


def points():
    pts = set()
    for c in [40, 41, 45, 50, 60, 75, 100, 150, 200, 300, 500, 700, 1000]:
        for rho in [0.3, 0.55, 0.59, 0.6, 0.6001, 0.61, 0.65, 0.7, 0.8, 0.9,
                    0.95, 0.99, 0.999, 0.99999]:
            pts.add((c, float(rho * (c + 1)) if rho * (c + 1) < c else rho * c))
        for k in [0.01, 0.1, 0.5, 1, 2, 5]:
            a = c - k * math.sqrt(c)
            if a > 0:
                pts.add((c, a))
    rnd = random.Random(20261129)
    cs = [int(round(10 ** (4 + 3 * i / 24))) for i in range(25)]
    cs += [rnd.randint(10 ** 4, 10 ** 6) for _ in range(15)]
    cs += [3 * 10 ** 6, 10 ** 7]
    for c in cs:
        for i in range(17):
            gap = 10 ** (-8 + 7.3 * i / 16)  # 1 - rho from 1e-8 to 0.2
            pts.add((c, c * (1 - gap)))
        for k in [0.01, 0.1, 0.5, 1, 2, 5, 10]:
            pts.add((c, c - k * math.sqrt(c)))
        pts.add((c, 0.61 * (c + 1)))
    return sorted(p for p in pts if 0 < p[1] < p[0])


def overload_points():
    """a >= c: from saturation (a = c, and within a few sqrt(c) of it,
    where the sum of ms_erlang_ln_b is longest) to a million times c."""
    pts = {(10, 20.0)}
    cs = [1, 2, 3, 5, 7, 10, 20, 39, 40, 41, 50, 100, 300, 1000, 3162, 10 ** 4,
          10 ** 5, 10 ** 6, 10 ** 7]
    for c in cs:
        for r in [1, 1 + 1e-12, 1 + 1e-6, 1.001, 1.01, 1.1, 1.3, 1.5, 1 / 0.6,
                  2, 3, 10, 100, 1e4, 1e6]:
            pts.add((c, c * r))
        for k in [0.1, 0.5, 1, 2, 3, 5, 10]:
            pts.add((c, c + k * math.sqrt(c)))
        pts.add((c, c + 0.5))
    return sorted(p for p in pts if p[1] >= p[0])


def main():
    out = sys.stdout
    overload = sys.argv[1:] == ["--overload"]
    if overload:
        # ln Q(c + 1, a) is the same formula; C is 1 by convention
        out.write("# Erlang B at a >= c, mpmath 50-digit arithmetic "
                  "(tools/gen_erlang_dense.py --overload); ln_* natural "
                  "logs; ln_erlang_c is 0, C = 1 by convention\n")
    else:
        out.write("# Erlang B/C reference grid, mpmath 50-digit arithmetic "
                  "(tools/gen_erlang_dense.py); ln_* natural logs\n")
    out.write("servers,offered_erlangs,ln_erlang_b,ln_erlang_c\n")
    for c, a in overload_points() if overload else points():
        lb, lc = ref(c, a)
        if overload:
            lc = mp.mpf(0)
        out.write("%d,%s,%s,%s\n" % (c, repr(float(a)), mp.nstr(lb, 22),
                                     mp.nstr(lc, 22)))
        out.flush()


if __name__ == "__main__":
    main()
