#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The landscape reference set for tests/check_landscape.c, written to
tests/data/landscape.csv (doc/design.md §5, "What the landscape inherits"):

    python3 tools/gen_landscape.py > tests/data/landscape.csv

For a few dozen services, spread over pool sizes 1 ... 10^6, service
rates, timeouts, retry counts, tiers and base failures, with the erlang
model, the capacity model and the queue-limited erlang model (queue_limit
-1: none; rejections_final 0 or 1): the tipping load, the recovery load, the
effective loads at which they lie, and the equilibria (effective load x and
failure probability p of each, the number of them) at a few offered loads,
in 50-digit arithmetic at the exact doubles the file prints.

Independent of the C code, from the model's equations (doc/design.md
§1.1-1.3), one tier's A(p) = 1 + p + ... + p^r and k independent tiers
(A^k):

  erlang    q(x) = C(c, a) exp(-(c mu - x) T) below c mu, 1 at and above,
            a = x / mu; p = 1 - (1 - base)(1 - q) = base + (1 - base) q;
            x p'(x) = (1 - base) q (a d ln C/da + x T),
            a d ln C/da = (c - a) + a (1 - B) / (c - a + a B);
            ln B = c ln a - a - ln c! - ln Q(c + 1, a), Q = 1 - P with P
            from Kummer's function, ln C = ln c + ln B - ln(c - a + a B),
            as in tools/gen_erlang_wide.py;
  capacity  p = base up to C, 1 - (1 - base) C / x above; x p' = 0 below,
            (1 - base) C / x above;
  queue     M/M/c/K from its states (mmck below), the slope of p_retry by
            mpmath's numerical derivative, A of p_retry;
  lambda(x) = x / A(p(x))^k,  E(x) = x p'(x) k A'(p) / A(p),
  d ln lambda / d ln x = 1 - E.

The extrema of lambda(x) are the crossings of E = 1 (found on a grid
dense towards the kink, c mu or C, then narrowed by bracketed Illinois
steps to 10^-45 relative) and the kinks themselves where the side slopes
differ in sign.  The tipping load is the first local maximum, the
recovery load the local minimum that follows; without a maximum both are
lambda(x_cap) (doc/design.md §1.3).  The equilibria at an offered load L
are the roots of lambda(x) = L, one in each monotone piece whose range
holds L, the last below L (r + 1)^k.  Each row also has a condition
number: the relative error that one unit of relative error in lambda(x)
(or in x, which a double rounds) gives the value, at least 1.  For the
effective load x of an equilibrium it is 1 / |1 - E(x)|, since
d ln lambda / d ln x = 1 - E; for its failure probability p that times
the elasticity x p'(x) / p, with x's own rounding counted (the larger of
1 and 1 / |1 - E|); 1 for the landscape's values, which the slope of
lambda does not amplify (at a smooth extremum lambda is flat in x; at a
kink x is the kink).

Every service is computed at 50 and again at 60 digits; the script stops
if a value differs by more than 10^-30 relative.
"""
import random
import sys

import mpmath as mp

SEED = 20261203


# ---- the model -----------------------------------------------------------

def ln_erlang(c, a):
    """ln B(c, a), ln C(c, a), for 0 < a < c (tools/gen_erlang_wide.py)."""
    s = c + 1
    p = mp.exp(s * mp.log(a) - a - mp.loggamma(s + 1)) * mp.hyp1f1(
        1, s + 1, a, maxterms=10 ** 7)
    lb = c * mp.log(a) - a - mp.loggamma(c + 1) - mp.log(1 - p)
    lc = mp.log(c) + lb - mp.log(c - a + a * mp.exp(lb))
    return lb, lc


def mmck(svc, x):
    """p and p_retry of the queue-limited erlang model at x > 0, by its
    states (doc/design.md §1.9): with a = x / mu, rho = a / c,
    G = 1 / B(c, a) = sum_{j <= c} (a^j / j!) / (a^c / c!) and
    Z_n = G + rho + ... + rho^n,
      P_block = rho^K / Z_K,
      W = sum_{m < K} rho^m F(m; tau) / Z_(K-1),  tau = c mu T,
    F the Poisson cdf, each term accumulated; then
      p = P_block + (1 - P_block)(base + (1 - base) W),
      p_retry = p, or p - P_block when rejections are final."""
    c, K = svc["servers"], svc["queue"]
    mu, T = mp.mpf(svc["mu"]), mp.mpf(svc["timeout"])
    base = mp.mpf(svc["base"])
    a = x / mu
    rho = a / c
    tau = c * mu * T
    G, t = mp.mpf(1), mp.mpf(1)
    for j in range(c, 0, -1):  # t = (a^(j-1)/(j-1)!) / (a^c/c!)
        t = t * j / a
        G += t
    Z, S, rp = G, mp.mpf(0), mp.mpf(1)  # Z_(m-1), rho^m
    pois = mp.exp(-tau)
    F = pois  # F(0; tau)
    for m in range(K):
        S += rp * F
        rp *= rho
        Z += rp
        pois = pois * tau / (m + 1)
        F += pois
    # now Z = Z_K, rp = rho^K, S the numerator of W over Z_(K-1)
    Zk1 = Z - rp
    block = rp / Z
    W = S / Zk1
    fails = base + (1 - base) * W
    p = block + (1 - block) * fails
    return p, (1 - block) * fails if svc["final"] else p


def fail(svc, x):
    """p_retry(x), x p_retry'(x) (the right-hand slope at a kink) and
    p(x)."""
    base = mp.mpf(svc["base"])
    if svc.get("queue") is not None:
        if x == 0:
            return base, mp.mpf(0), base
        p, pr = mmck(svc, x)
        # the slope by mpmath's numerical derivative (its step and
        # extra working precision chosen for the working precision)
        dpr = mp.diff(lambda t: mmck(svc, t)[1], x)
        return pr, x * dpr, p
    if svc["model"] == "capacity":
        C = mp.mpf(svc["capacity"])
        if x <= C:
            return base, mp.mpf(0), base
        p = 1 - (1 - base) * C / x
        return p, (1 - base) * C / x, p
    c, mu, T = svc["servers"], mp.mpf(svc["mu"]), mp.mpf(svc["timeout"])
    cmu = c * mu
    if x >= cmu:
        return mp.mpf(1), mp.mpf(0), mp.mpf(1)
    if x == 0:
        return base, mp.mpf(0), base
    a = x / mu
    lb, lc = ln_erlang(c, a)
    B = mp.exp(lb)
    q = mp.exp(lc - (cmu - x) * T)
    xdlnq = (c - a) + a * (1 - B) / (c - a + a * B) + x * T
    p = base + (1 - base) * q
    return p, (1 - base) * q * xdlnq, p


def amp(svc, p):
    """A(p) of one tier and A'(p)."""
    r = svc["retries"]
    A = sum(p ** i for i in range(r + 1))
    dA = sum(i * p ** (i - 1) for i in range(1, r + 1))
    return A, dA


def point(svc, x):
    """lambda(x), E(x), p(x)."""
    pr, xdp, p = fail(svc, x)
    A, dA = amp(svc, pr)
    k = svc["tiers"]
    return x / A ** k, xdp * k * dA / A, p


def x_cap(svc):
    if svc["model"] == "capacity":
        return mp.mpf(svc["capacity"])
    return svc["servers"] * mp.mpf(svc["mu"])


# ---- root finding ----------------------------------------------------------

def solve(f, lo, hi):
    """A root of f in [lo, hi], f(lo) and f(hi) of opposite signs: Illinois
    steps (the secant of the bracket, the stale end's value halved when
    the same end moves twice), bisection after 100 of them, to 10^-45
    relative."""
    flo, fhi = f(lo), f(hi)
    if flo == 0:
        return lo
    if fhi == 0:
        return hi
    assert (flo < 0) != (fhi < 0), "no sign change"
    tol = mp.mpf(10) ** -45
    last = None
    for it in range(3000):
        if hi - lo <= tol * abs(hi):
            break
        if it < 100:
            x = (lo * fhi - hi * flo) / (fhi - flo)
            if not lo < x < hi:
                x = (lo + hi) / 2
        else:
            x = (lo + hi) / 2
        fx = f(x)
        if fx == 0:
            return x
        if (fx < 0) == (fhi < 0):
            hi, fhi = x, fx
            if last == "hi":
                flo /= 2
            last = "hi"
        else:
            lo, flo = x, fx
            if last == "lo":
                fhi /= 2
            last = "lo"
    return (lo + hi) / 2


def grid(svc):
    """Points on each side of the kink (c mu or C) and dense towards it."""
    X = x_cap(svc)
    above = [X * (1 + mp.mpf(10) ** (s / mp.mpf(10)))
             for s in range(-120, 151)]
    if svc["model"] == "capacity":
        pts = [X / 2, X] + above
    elif svc.get("queue") is not None:  # smooth at c mu
        pts = [X * j / 16 for j in range(1, 16)]
        pts += [X * (1 - mp.mpf(10) ** (-s / mp.mpf(10)))
                for s in range(3, 121)]
        pts += [X] + above
    else:
        pts = [X * j / 16 for j in range(1, 16)]
        pts += [X * (1 - mp.mpf(10) ** (-s / mp.mpf(10)))
                for s in range(3, 161)]
        pts += [X, 2 * X]
    return sorted(set(pts))


def extrema(svc):
    """[(x, lambda, 'max'|'min')] in ascending x."""
    X = x_cap(svc)
    eps = mp.mpf(10) ** -40
    xs = grid(svc)
    slope = lambda x: point(svc, x)[1] - 1  # <= 0: lambda rises
    out = []
    prev = True  # lambda rises from 0 up to the first grid point
    for x0, x1 in zip(xs, xs[1:]):
        # the sign of E - 1 at the ends of the open interval (one-sided at
        # the kink)
        a = x0 * (1 + eps) if x0 == X else x0
        b = x1 * (1 - eps) if x1 == X else x1
        ga, gb = slope(a), slope(b)
        pieces = [(ga <= 0, x0)]
        if (ga <= 0) != (gb <= 0):  # a smooth extremum inside
            pieces.append((gb <= 0, solve(slope, a, b)))
        for up, start in pieces:
            if up != prev:
                out.append((start, point(svc, start)[0],
                            "min" if up else "max"))
            prev = up
    # a maximum and the next minimum at the same lambda to 10^-12 are one
    # flat stretch, not a fold (doc/design.md §1.3)
    i = 0
    while i + 1 < len(out):
        if (out[i][2] == "max" and out[i + 1][2] == "min" and
                out[i][1] - out[i + 1][1] <= mp.mpf(10) ** -12 * out[i][1]):
            del out[i:i + 2]
        else:
            i += 1
    return out


def landscape(svc):
    ext = extrema(svc)
    tip = next((e for e in ext if e[2] == "max"), None)
    if tip is None:
        X = x_cap(svc)
        lam = point(svc, X)[0]
        return (X, lam), (X, lam), ext
    rec = next(e for e in ext if e[2] == "min" and e[0] > tip[0])
    return (tip[0], tip[1]), (rec[0], rec[1]), ext


def equilibria(svc, ext, L):
    """[(x, p, condition of x, condition of p)] of lambda(x) = L,
    ascending."""
    breaks = [mp.mpf(0)] + [e[0] for e in ext]
    A_max = (svc["retries"] + 1) ** svc["tiers"]
    pieces = list(zip(breaks, breaks[1:])) + [(breaks[-1], L * A_max)]
    roots = []
    f = lambda x: point(svc, x)[0] - L
    for lo, hi in pieces:
        if hi <= lo:
            continue
        flo, fhi = f(lo), f(hi)
        if flo == 0 and lo > 0:
            continue  # counted as the end of the previous piece
        if (flo < 0) != (fhi < 0) or fhi == 0:
            roots.append(solve(f, lo, hi))
    out = []
    for x in roots:
        pr, xdp, p = fail(svc, x)
        if svc.get("queue") is not None:
            xdp = x * mp.diff(lambda t: mmck(svc, t)[0], x)
        _, E, _ = point(svc, x)
        cx = max(1, 1 / abs(1 - E))
        cp = max(1, abs(xdp / p) * cx) if p > 0 else mp.mpf(1)
        out.append((x, p, cx, cp))
    return out


# ---- the services -------------------------------------------------------

def services():
    rnd = random.Random(SEED)
    out = []
    # erlang: pool sizes log-uniform over 1 ... 10^6, the rest drawn from
    # the ranges services have (mean service time 1 ms ... 1 s, a timeout
    # of 0.5 ... 50 mean service times, 1 ... 10 retries, 1 ... 3 tiers,
    # base failure 0, 0.1 % ... 5 %)
    for i in range(28):
        c = max(1, int(round(10 ** (6 * i / 27 + rnd.uniform(-0.1, 0.1)))))
        c = min(c, 10 ** 6)
        mu = float(10 ** rnd.uniform(0, 3))
        T = float(10 ** rnd.uniform(-0.3, 1.7) / mu)
        r = rnd.choice([1, 2, 3, 3, 5, 10])
        k = rnd.choice([1, 1, 1, 2, 3])
        base = rnd.choice([0.0, 0.0, float(10 ** rnd.uniform(-3, -1.3))])
        out.append({"model": "erlang", "servers": c, "mu": mu, "timeout": T,
                    "capacity": 0.0, "base": base, "retries": r,
                    "tiers": k})
    for i in range(8):
        C = float(10 ** rnd.uniform(0, 6))
        r = rnd.choice([1, 2, 3, 5, 10])
        k = [1, 2, 2, 3, 3, 4, 2, 3][i]
        base = rnd.choice([0.0, float(10 ** rnd.uniform(-3, -1.3))])
        out.append({"model": "capacity", "servers": 0, "mu": 0.0,
                    "timeout": 0.0, "capacity": C, "base": base,
                    "retries": r, "tiers": k})
    # the queue-limited erlang model (doc/design.md §1.9): its example
    # (30 servers, 300 places), rejections retried and final, and a few
    # more
    for c, mu, T, K, r, k, base, final in (
            (30, 10.0, 1.0, 300, 3, 1, 0.0, False),
            (30, 10.0, 1.0, 300, 3, 1, 0.0, True),
            (4, 10.0, 0.1, 3, 2, 1, 0.0, False),
            (1, 2.0, 1.0, 10, 3, 2, 0.0, False),
            (200, 5.0, 2.0, 50, 3, 1, 0.01, True),
            (1000, 100.0, 0.05, 2000, 5, 1, 0.0, False)):
        out.append({"model": "erlang", "servers": c, "mu": mu, "timeout": T,
                    "capacity": 0.0, "base": base, "retries": r, "tiers": k,
                    "queue": K, "final": final})
    return out


def loads(tip, rec):
    """Offered loads: below the band, inside it, above it (doubles)."""
    if tip > rec:
        fr = [rec / 2, rec + (tip - rec) / 4, (rec + tip) / 2,
              rec + (tip - rec) * 9 / 10, 2 * tip]
    else:
        fr = [tip / 2, tip * 9 / 10, 2 * tip]
    return [float(v) for v in fr]


def rows(svc):
    tip, rec, ext = landscape(svc)
    out = [("tipping_load", 0.0, 0, tip[1], 1),
           ("tipping_effective_load", 0.0, 0, tip[0], 1),
           ("recovery_load", 0.0, 0, rec[1], 1),
           ("recovery_effective_load", 0.0, 0, rec[0], 1)]
    for L in loads(tip[1], rec[1]):
        eq = equilibria(svc, ext, mp.mpf(L))
        out.append(("equilibria", L, 0, mp.mpf(len(eq)), 1))
        for i, (x, p, cx, cp) in enumerate(eq):
            out.append(("effective_load", L, i, x, cx))
            out.append(("failure_probability", L, i, p, cp))
    return out


def main():
    out = sys.stdout
    out.write("# Landscapes at %d services, mpmath 50-digit arithmetic at "
              "the exact doubles printed (tools/gen_landscape.py, seed %d; "
              "60 digits checked to agree): quantity of the service at "
              "offered_load (0: of the landscape), index-th equilibrium; "
              "condition: relative error of the value per relative error of "
              "lambda(x) or x (at least 1)\n"
              % (len(services()), SEED))
    out.write("service,model,servers,service_rate,timeout,capacity,"
              "base_failure,retries,tiers,queue_limit,rejections_final,"
              "quantity,offered_load,index,value,condition\n")
    for n, svc in enumerate(services()):
        with mp.workdps(50):
            lo = rows(svc)
        with mp.workdps(60):
            hi = rows(svc)
        for a, b in zip(lo, hi):
            if a[:3] != b[:3] or abs(a[3] - b[3]) > mp.mpf(10) ** -30 * abs(
                    b[3]):
                sys.exit("service %d: %s: 50 and 60 digits disagree: %s %s"
                         % (n, a[0], a[3], b[3]))
        assert len(lo) == len(hi)
        for q, L, i, v, cond in lo:
            out.write("%d,%s,%d,%r,%r,%r,%r,%d,%d,%d,%d,%s,%r,%d,%s,%s\n" % (
                n, svc["model"], svc["servers"], svc["mu"], svc["timeout"],
                svc["capacity"], svc["base"], svc["retries"], svc["tiers"],
                svc.get("queue", -1), svc.get("final", False), q, L, i,
                mp.nstr(v, 25), mp.nstr(cond, 3)))
        out.flush()


if __name__ == "__main__":
    main()
