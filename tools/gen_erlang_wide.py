#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Wide Erlang B/C and wait-tail reference set for tests/check_erlang.c,
written to tests/data/erlang_wide.csv (doc/design.md §5):

    python3 tools/gen_erlang_wide.py > tests/data/erlang_wide.csv

5,000 points drawn with a fixed seed: c log-uniform on [1, 10^7] (rounded
to an integer), and the load rho = a/c log-uniform on [10^-6, 1/2] for half
of them and 1 - rho log-uniform on [10^-12, 1/2] for the other half, so
that both the light tail and the approach to saturation are dense.  The
offered traffic a is the double nearest c rho; every reference is computed
at that exact double (mpmath converts a Python float exactly, and repr
prints the shortest decimal that reads back as the same double).

Each row also has a timeout T (a double, with (c - a) T log-uniform on
[10^-3, 30]) and ln P(W > T) = ln C - (c - a) T of the M/M/c queue with
mu = 1/s and arrival rate x = a (so that x / mu is a exactly).

Independent of the C code: ln B = c ln a - a - ln c! - ln Q(c + 1, a) with
Q = 1 - P and P(c + 1, a) from mpmath's Kummer function 1F1, and
ln C = ln c + ln B - ln(c - a + a B).  Every row is computed at 50 and
again at 70 digits, and the script stops if the two differ by more than
10^-35 relative.
"""
import math
import random
import sys

import mpmath as mp

SEED = 20261218
POINTS = 5000


def ref(c, a, T, dps):
    with mp.workdps(dps):
        A = mp.mpf(a)  # the exact value of the double
        # Q(c + 1, a) = 1 - P(c + 1, a) >= 1/2 for a < c, and P from
        # Kummer's function: P(s, a) = a^s e^-a / Gamma(s + 1)
        # 1F1(1; s + 1; a) (DLMF 8.5.1, 13.2.2), a series of positive
        # terms (mpmath's upper-tail gammainc takes minutes at some a)
        s = c + 1
        p = mp.exp(s * mp.log(A) - A - mp.loggamma(s + 1)) * mp.hyp1f1(
            1, s + 1, A, maxterms=10 ** 7)
        q = 1 - p
        lb = c * mp.log(A) - A - mp.loggamma(c + 1) - mp.log(q)
        lc = mp.log(c) + lb - mp.log(c - A + A * mp.exp(lb))
        lw = lc - (c - A) * mp.mpf(T)
        return lb, lc, lw


def points():
    rnd = random.Random(SEED)
    pts = []
    while len(pts) < POINTS:
        c = int(round(10 ** rnd.uniform(0, 7)))
        if len(pts) % 2 == 0:
            rho = 10 ** rnd.uniform(-6, math.log10(0.5))
        else:
            rho = 1 - 10 ** rnd.uniform(-12, math.log10(0.5))
        a = float(c * rho)
        if not 0 < a < c:
            continue
        T = float(10 ** rnd.uniform(-3, math.log10(30)) / (c - a))
        pts.append((c, a, T))
    return pts


def main():
    out = sys.stdout
    out.write("# Erlang B/C and ln P(W > T) (mu = 1/s, x = a) at %d points, "
              "mpmath 50-digit arithmetic at the exact double of "
              "offered_erlangs and timeout (tools/gen_erlang_wide.py, seed "
              "%d); ln_* natural logs; erlang_b, erlang_c printed even where "
              "they underflow a double\n" % (POINTS, SEED))
    out.write("servers,offered_erlangs,erlang_b,erlang_c,ln_erlang_b,"
              "ln_erlang_c,timeout,ln_wait_tail\n")
    for c, a, T in points():
        lo = ref(c, a, T, 50)
        hi = ref(c, a, T, 70)
        for x, y in zip(lo, hi):
            if abs(x - y) > mp.mpf(10) ** -35 * abs(y):
                sys.exit("c=%d a=%r: 50 and 70 digits disagree: %s %s"
                         % (c, a, x, y))
        lb, lc, lw = lo
        with mp.workdps(50):
            out.write("%d,%r,%s,%s,%s,%s,%r,%s\n" % (
                c, a, mp.nstr(mp.exp(lb), 25), mp.nstr(mp.exp(lc), 25),
                mp.nstr(lb, 25), mp.nstr(lc, 25), T, mp.nstr(lw, 25)))
    out.flush()


if __name__ == "__main__":
    main()
