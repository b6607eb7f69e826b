#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The response-time tail reference set for tests/check_response.c,
written to tests/data/response_reference.csv (doc/design.md §1.1):

    python3 tools/response_reference.py > tests/data/response_reference.csv

In 40-digit arithmetic (mpmath) at the exact doubles the file prints,
independent of the C code:

  wait      ln P(W > T) = ln C(c, a) - (c mu - x) T, a = x / mu, at loads
            1 - 1e-6 .. 1 - 1e-12 of c mu where c mu is not a double
            (the cancellation of issue 34, item 6); x given as a double
  erlangs   the same, a given (x = a mu exactly)
  response  ln P(W + S > T) of M/M/c: W is 0 with probability 1 - C and
            exponential of rate gamma = c mu - x else, S exponential of
            rate mu (Kleinrock 1975, sec. 3.4), from the closed form
            e^(-mu T) + C mu (e^(-gamma T) - e^(-mu T)) / (mu - gamma);
            its slope x d ln q / dx by mpmath's numerical derivative
  fitted    the service_time_cv counterpart, by quadrature of
            P(S > T) + C integral_0^T f_S(s) e^(-g (T - s)) ds with
            g = 2 gamma / (1 + cv^2) (Allen-Cunneen) and f_S the fitted
            density: a shift (1 - cv)/mu plus an exponential of mean
            cv/mu (cv < 1), the balanced-means two-phase hyperexponential
            (cv > 1): a check of the closed form's algebra, not of the
            approximation (tools/response_accuracy.py measures that)
  tipping   the tipping load of 10 servers x 100 ms, 3 retries, no base
            failure, with the timeout on the wait and on the response at
            T = 2, 3, 5, 10 service times: the first local maximum of
            lambda(x) = x / A(p(x)), A = 1 + p + p^2 + p^3, found where
            d ln lambda / d ln x = 1 - x p' A'(p) / A(p) changes sign

C(c, a) from Erlang B's definition summed term by term (c <= 2000).
"""
import sys

import mpmath as mp

mp.mp.dps = 40


def ln_c(c, a):
    """ln C(c, a) for 0 < a < c, from B's definition."""
    c = int(c)
    terms = [mp.mpf(1)]
    for k in range(1, c + 1):
        terms.append(terms[-1] * a / k)
    b = terms[-1] / mp.fsum(terms)
    return mp.log(c * b / (c - a * (1 - b)))


def ln_wait(c, mu, x, T, a=None):
    c, mu, x, T = mp.mpf(c), mp.mpf(mu), mp.mpf(x), mp.mpf(T)
    if a is None:
        a = x / mu
    else:
        a = mp.mpf(a)
        x = a * mu
    if x >= c * mu:
        return mp.mpf(0)
    return ln_c(c, a) - (c * mu - x) * T


def response(c, mu, x, T):
    c, mu, x, T = mp.mpf(c), mp.mpf(mu), mp.mpf(x), mp.mpf(T)
    if x >= c * mu:
        return mp.mpf(1)
    em = mp.exp(-mu * T)
    if x == 0:
        return em
    C = mp.exp(ln_c(c, x / mu))
    g = c * mu - x
    if g == mu:
        part = mu * T * em
    else:
        part = mu * (mp.exp(-g * T) - em) / (mu - g)
    return em + C * part


def fitted(c, mu, x, T, cv):
    c, mu, x, T, cv = (mp.mpf(v) for v in (c, mu, x, T, cv))
    C = mp.exp(ln_c(c, x / mu)) if x > 0 else mp.mpf(0)
    g = 2 * (c * mu - x) / (1 + cv * cv)
    if cv == 0:
        Tr = T - 1 / mu
        return mp.mpf(1) if Tr < 0 else C * mp.exp(-g * Tr)
    if cv < 1:
        D = (1 - cv) / mu
        r = mu / cv
        comps = [(mp.mpf(1), r)]
    else:
        s = mp.sqrt((cv * cv - 1) / (cv * cv + 1))
        p1 = (1 + s) / 2
        comps = [(p1, 2 * p1 * mu), (1 - p1, 2 * (1 - p1) * mu)]
        D = mp.mpf(0)
    Tr = T - D
    if Tr <= 0:
        return mp.mpf(1)
    tail = mp.fsum(w * mp.exp(-r * Tr) for w, r in comps)
    integral = mp.quad(
        lambda s: mp.fsum(w * r * mp.exp(-r * s) for w, r in comps)
        * mp.exp(-g * (Tr - s)), [0, Tr / 2, Tr])
    return tail + C * integral


def amp(p, r):
    return mp.fsum(p ** i for i in range(r + 1))


def damp(p, r):
    return mp.fsum(i * p ** (i - 1) for i in range(1, r + 1))


def tipping(c, mu, T, r, covers):
    cmu = mp.mpf(c) * mu

    def q(x):
        if covers == "wait":
            return mp.exp(ln_wait(c, mu, x, T))
        return response(c, mu, x, T)

    def one_minus_e(x):
        p = q(x)
        xdp = x * mp.diff(q, x)
        return 1 - xdp * damp(p, r) / amp(p, r)

    # the first sign change of 1 - E from + to -, on a grid dense towards
    # c mu, then bisection to 1e-30
    prev_x, prev = None, None
    n = 4000
    for i in range(1, n):
        x = cmu * mp.mpf(i) / n
        v = one_minus_e(x)
        if prev is not None and prev > 0 and v <= 0:
            lo, hi = prev_x, x
            for _ in range(110):
                mid = (lo + hi) / 2
                if one_minus_e(mid) > 0:
                    lo = mid
                else:
                    hi = mid
            x = (lo + hi) / 2
            return x / amp(q(x), r)
        prev_x, prev = x, v
    return cmu / amp(1, r)  # no fold: lambda(c mu)


def main():
    out = sys.stdout
    out.write("# The M/M/c wait and response tails and tipping loads, mpmath "
              "40 digits at the exact doubles printed "
              "(tools/response_reference.py): kind, servers, service_rate, "
              "x (or a for erlangs), timeout, cv, value (ln P; the tipping "
              "load in req/s, x its retries), slope (x d ln q / dx, or 0)\n")
    out.write("kind,servers,service_rate,x,timeout,cv,value,slope\n")
    # item 6: c mu not a double, loads 1 - 1e-6 .. 1 - 1e-12
    for c, st in ((7, 0.3), (10, 0.07), (1, 0.3)):
        mu = 1.0 / st
        cmu = float(mp.mpf(c) * mu)
        for e in range(6, 13):
            x = float(mp.mpf(c) * mu * (1 - mp.mpf(10) ** -e))
            for T in (0.5, 20.0):
                out.write("wait,%d,%r,%r,%r,1,%s,0\n" % (
                    c, mu, x, T, mp.nstr(ln_wait(c, mu, x, T), 30)))
            a = float(c * (1 - mp.mpf(10) ** -e))
            out.write("erlangs,%d,%r,%r,%r,1,%s,0\n" % (
                c, mu, a, 20.0, mp.nstr(ln_wait(c, mu, 0, 20.0, a=a), 30)))
        del cmu
    # the response tail: pools, loads (gamma near mu too), timeouts
    cases = []
    for c, mu in ((1, 10.0), (2, 3.0), (10, 10.0), (50, 5.0), (1000, 1.0)):
        cmu = c * mu
        loads = [0.0, 0.1, 0.5, 0.9, 0.99, 0.999999,
                 (c - 1) / c if c > 1 else 0.3,   # gamma = mu
                 (c - 1) / c * (1 + 1e-9) if c > 1 else 0.7]
        for rho in loads:
            x = float(mp.mpf(cmu) * rho)
            for T in (0.0, 0.05, 0.2, 1.0, 30.0, 2000.0):
                if c * mu * T > 1e15:
                    continue
                cases.append((c, mu, x, T))
    for c, mu, x, T in cases:
        v = response(c, mu, x, T)
        lv = mp.log(v) if v > 0 else mp.mpf("-inf")
        if x > 0:
            # 80 digits and a step of 1e-25 x: the closed form cancels
            # near gamma = mu, and mpmath's default step there too
            with mp.workdps(80):
                xm = mp.mpf(x)
                sl = x * mp.diff(lambda y: mp.log(response(c, mu, y, T)),
                                 xm, h=xm * mp.mpf(10) ** -25)
        else:
            sl = mp.mpf(0)
        out.write("response,%d,%r,%r,%r,1,%s,%s\n" % (
            c, mu, x, T, mp.nstr(lv, 30), mp.nstr(sl, 20)))
    for c, mu in ((1, 10.0), (10, 10.0), (50, 5.0)):
        for rho in (0.3, 0.9, 0.99):
            x = float(mp.mpf(c * mu) * rho)
            for T in (0.05, 0.2, 1.0):
                for cv in (0.0, 0.5, 0.9, 1.5, 3.0):
                    v = fitted(c, mu, x, T, cv)
                    out.write("fitted,%d,%r,%r,%r,%r,%s,0\n" % (
                        c, mu, x, T, cv, mp.nstr(mp.log(v), 25)))
    for T in (0.2, 0.3, 0.5, 1.0):
        for covers in ("wait", "response"):
            v = tipping(10, 10.0, T, 3, covers)
            out.write("tipping_%s,10,10.0,3,%r,1,%s,0\n" % (
                covers, T, mp.nstr(v, 25)))


if __name__ == "__main__":
    main()
