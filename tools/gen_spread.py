#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The spread-timeout reference set for tests/check_landscape.c, written to
tests/data/spread.csv (doc/design.md §1.1, "A timeout that fires late"):

    python3 tools/gen_spread.py > tests/data/spread.csv

Each attempt's timeout is uniform on [T, T + w].  For the M/M/c wait tail
the average over T has a closed form, which is what this script computes
(the C code integrates the fixed-T tail numerically, so the two are
independent).  With u = c mu - x > 0, z = u w, a = x / mu:

    qbar(x) = (1/w) integral_T^(T+w) C(c, a) e^(-u t) dt
            = C(c, a) e^(-u T) (1 - e^(-z)) / z
    x qbar'(x) = qbar (a d ln C/da + x T + x w g(z)),
                 g(z) = 1/z - 1/(e^z - 1)   (in (0, 1/2]; 1/2 at z -> 0)
    p = base + (1 - base) qbar,  x p' = (1 - base) x qbar'

(d/dx of ln qbar: -d(uT)/dx = T; d ln((1 - e^-z)/z)/dz = 1/(e^z - 1) - 1/z
and dz/dx = -w).  ln C and a d ln C / da are the ones of
tools/gen_landscape.py (Kummer's function; Jagerman 1974).  The tipping
load of r retries at one tier, A(p) = 1 + p + ... + p^r, is the first local
maximum of lambda(x) = x / A(p(x)), the first crossing of
E(x) = x p'(x) A'(p) / A(p) = 1, found on a grid and narrowed by
bisection to 10^-40 relative.

Columns: service, servers, service_rate, timeout (T, the shortest),
spread (w), base_failure, retries, quantity (failure_probability,
slope (x p'), tipping_load, tipping_effective_load), effective_load
(0 for the landscape's), value.  Computed at 50 digits and again at 60;
the script stops if a value differs by more than 10^-30 relative.
"""
import random
import sys

import mpmath as mp

SEED = 20261206


def ln_erlang(c, a):
    """ln B(c, a), ln C(c, a), for 0 < a < c."""
    s = c + 1
    p = mp.exp(s * mp.log(a) - a - mp.loggamma(s + 1)) * mp.hyp1f1(
        1, s + 1, a, maxterms=10 ** 7)
    lb = c * mp.log(a) - a - mp.loggamma(c + 1) - mp.log(1 - p)
    lc = mp.log(c) + lb - mp.log(c - a + a * mp.exp(lb))
    return lb, lc


def fail(svc, x):
    """p(x) and x p'(x) with the timeout uniform on [T, T + w]."""
    c, mu = svc["servers"], mp.mpf(svc["mu"])
    T, w, base = mp.mpf(svc["timeout"]), mp.mpf(svc["spread"]), mp.mpf(
        svc["base"])
    cmu = c * mu
    if x >= cmu:
        return mp.mpf(1), mp.mpf(0)
    if x == 0:
        return base, mp.mpf(0)
    a = x / mu
    lb, lc = ln_erlang(c, a)
    B = mp.exp(lb)
    adlnc = (c - a) + a * (1 - B) / (c - a + a * B)
    u = cmu - x
    z = u * w
    if z == 0:
        avg, g = mp.mpf(1), mp.mpf(1) / 2
    else:
        avg = -mp.expm1(-z) / z
        g = 1 / z - 1 / mp.expm1(z)
    q = mp.exp(lc - u * T) * avg
    xdq = q * (adlnc + x * T + x * w * g)
    return base + (1 - base) * q, (1 - base) * xdq


def elasticity(svc, x):
    p, xdp = fail(svc, x)
    r = svc["retries"]
    A = sum(p ** i for i in range(r + 1))
    dA = sum(i * p ** (i - 1) for i in range(1, r + 1))
    return xdp * dA / A, p, A


def tipping(svc):
    cmu = svc["servers"] * mp.mpf(svc["mu"])
    n = 4000
    prev = None
    for i in range(1, n):
        x = cmu * i / n
        e = elasticity(svc, x)[0] - 1
        if prev is not None and prev[1] < 0 <= e:
            lo, hi = prev[0], x
            for _ in range(200):
                mid = (lo + hi) / 2
                if elasticity(svc, mid)[0] - 1 < 0:
                    lo = mid
                else:
                    hi = mid
                if hi - lo < mp.mpf(10) ** -45 * hi:
                    break
            x = (lo + hi) / 2
            _, p, A = elasticity(svc, x)
            return x / A, x
        prev = (x, e)
    return None


def services():
    rng = random.Random(SEED)
    out = []
    # the undici-like pool of doc/configuration.md, and spreads around it
    fixed = [(10, 5.0, 0.4, 0.5, 0.0, 3), (10, 5.0, 0.499, 0.499, 0.0, 3),
             (10, 10.0, 0.2, 0.0, 0.0, 3), (10, 10.0, 0.2, 1e-9, 0.0, 3),
             (50, 10.0, 0.1, 0.2, 0.0, 2), (1, 2.0, 0.5, 2.0, 0.01, 4),
             (1000, 1.0, 1.0, 0.5, 0.0, 1), (10, 10.0, 0.0, 0.3, 0.0, 3)]
    for c, mu, T, w, base, r in fixed:
        out.append(dict(servers=c, mu=mu, timeout=T, spread=w, base=base,
                        retries=r))
    for _ in range(10):
        c = rng.choice([1, 2, 5, 10, 30, 100, 1000])
        mu = float("%.6g" % (10 ** rng.uniform(-1, 2)))
        T = float("%.6g" % (rng.uniform(0.5, 20) / mu))
        w = float("%.6g" % (T * rng.choice([0.01, 0.3, 1.0, 5.0])))
        out.append(dict(servers=c, mu=mu, timeout=T, spread=w,
                        base=rng.choice([0.0, 0.0, 0.001]),
                        retries=rng.choice([1, 2, 3, 4])))
    return out


def rows(dps):
    mp.mp.dps = dps
    res = []
    for i, s in enumerate(services()):
        cmu = s["servers"] * s["mu"]
        for rho in (0.3, 0.7, 0.9, 0.99, 0.999):
            x = float(repr(cmu * rho))  # the exact double printed
            p, xdp = fail(s, mp.mpf(x))
            res.append((i, s, "failure_probability", x, p))
            res.append((i, s, "slope", x, xdp))
        t = tipping(s)
        if t is not None:
            res.append((i, s, "tipping_load", 0.0, t[0]))
            res.append((i, s, "tipping_effective_load", 0.0, t[1]))
    return res


def main():
    a, b = rows(50), rows(60)
    for ra, rb in zip(a, b):
        if abs(ra[4] - rb[4]) > mp.mpf(10) ** -30 * abs(rb[4]):
            sys.exit("precision: %r" % (ra,))
    print("# Spread timeouts, uniform on [timeout, timeout + spread], "
          "M/M/c wait tail in closed form, mpmath 50 digits at the exact "
          "doubles printed (tools/gen_spread.py, seed %d; 60 digits checked "
          "to agree)" % SEED)
    print("service,servers,service_rate,timeout,spread,base_failure,retries,"
          "quantity,effective_load,value")
    mp.mp.dps = 50
    for i, s, q, x, v in a:
        print("%d,%d,%r,%r,%r,%r,%d,%s,%r,%s" % (
            i, s["servers"], s["mu"], s["timeout"], s["spread"], s["base"],
            s["retries"], q, x, mp.nstr(v, 25, min_fixed=-mp.inf,
                                         max_fixed=mp.inf)))


if __name__ == "__main__":
    main()
