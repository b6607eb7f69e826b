#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""M/M/c/K wait and response tails at large K and c mu T, a reference for
tests/check_mmck.c, written to tests/data/mmck_large.csv (doc/design.md
§1.9):

    python3 tools/mmck_large_reference.py > tests/data/mmck_large.csv

Independent of the C code (which exchanges the sums, uses closed forms
with Poisson cdfs and sums over Poisson counts near their mode): Python's
decimal at 34 digits (mpmath for P(N' > K - 1) and one pmf), a sum over
all c + K states an admitted arrival can find (Gross & Harris,
Fundamentals of Queueing Theory, ch. 2, M/M/c/K), with the per-state
tails by recurrences.  Weights w_n = a^n / n! for n <= c and
w_c rho^m above (m = n - c), a = x / mu, rho = a / c, tau = c mu T,
N ~ Poisson(tau), N' ~ Poisson((c - 1) mu T):

    P(W > T | m) = P(N <= m)                      (forward, all positive)
    P(W + S > T | m) = P(N <= m) + e^(-mu T) (c / (c - 1))^(m + 1) P(N' > m)

the second as tools/mmck_response_reference.py (the wait's Gamma density
integrated against the service's exponential tail), P(N' > m) summed
backwards from P(N' > K - 1) (mpmath.gammainc) so that it keeps its
digits.  c > 1.  An arrival finding n < c is served at once: P(R > T) =
e^(-mu T), P(W > T) = 0.  About 10 decimal operations a state: the file
takes about 4 minutes (K = 10^6: 20 s a row).

The doubles are printed with 17 digits so the C test reads them back
exactly; the references are those of these binary numbers.
"""
import sys

from decimal import Decimal, getcontext

import mpmath as mp

mp.mp.dps = 40
getcontext().prec = 34
getcontext().Emax = 10**15
getcontext().Emin = -10**15


def D(v):
    """An mpmath number as a Decimal, to 40 digits."""
    return Decimal(mp.nstr(v, 40))


def ref(c, K, mu, x, T):
    """ln P(W > T | admitted), ln P(W + S > T | admitted); c > 1."""
    # the exact binary values, not their shortest decimal form
    mu, x, T = Decimal(mu), Decimal(x), Decimal(T)
    a = x / mu
    rho = a / c
    tau = c * mu * T
    ytau = (c - 1) * mu * T
    below = Decimal(0)  # sum_{n<c} w_n / w_c
    t = Decimal(1)
    for n in range(c, 0, -1):
        t = t * n / a
        below += t
    # forward: sum_m rho^m P(N <= m) and the weights
    pm = (-tau).exp()
    F = Decimal(0)
    r = Decimal(1)
    wait = Decimal(0)
    den = below
    for m in range(K):
        F += pm
        wait += r * F
        den += r
        r *= rho
        pm = pm * tau / (m + 1)
    # backward: sum_m rho^m e^(-mu T) (c / (c - 1))^(m + 1) P(N' > m)
    yt = mp.mpf(str(ytau))
    up = D(mp.gammainc(K, 0, yt, regularized=True))  # P(N' > K - 1)
    pk = D(mp.exp(-yt + (K - 1) * mp.log(yt) - mp.loggamma(K)))
    cc = Decimal(c) / (c - 1)
    g = rho ** (K - 1) * cc ** K  # at m = K - 1
    q = rho * cc  # g(m + 1) / g(m)
    extra = Decimal(0)
    for m in range(K - 1, -1, -1):
        extra += g * up
        up += pk  # P(N' > m - 1) = P(N' > m) + pmf(m)
        pk = pk * m / ytau
        g = g / q
    ln_wait = wait.ln() - den.ln()
    resp = (below + extra) * (-mu * T).exp() + wait
    ln_resp = resp.ln() - den.ln()
    return mp.mpf(str(ln_wait)), mp.mpf(str(ln_resp))


def rows():
    mu = 0.5  # a power of two: a = x / mu and c mu are exact doubles
    for c, K, tau in [(10, 100000, 1e4), (1000, 100000, 1e4),
                      (10, 100000, 1e5), (1000, 100000, 1e5),
                      (10, 100000, 3e5), (100, 1000000, 1e6),
                      (10000, 100000, 1e4)]:
        r = 1 - 1 / c
        # below, at and above c mu, and next to r = 1 - 1/c, where the
        # response's two geometric sequences meet
        rhos = [0.5, 0.9, r * (1 - 1e-6), r * (1 + 1e-6), 0.99999, 1.0,
                1.00001, 1.001, 1.1]
        if K > 100000:
            rhos = [0.9, r * (1 + 1e-6), 0.99999, 1.0, 1.001]
        if c == 10000:  # K far above tau, rho just above 1
            rhos = [r * (1 + 1e-6), 1.000001, 1.00001, 1.001]
        for rho in rhos:
            yield c, K, mu, rho * c * mu, tau / (c * mu)


def fmt(v):
    return mp.nstr(v, 22, min_fixed=-mp.inf, max_fixed=mp.inf)


def main():
    print("# M/M/c/K wait and response tails at large K and c mu T, decimal "
          "34-digit sums over states (tools/mmck_large_reference.py); "
          "natural log")
    print("servers,queue_limit,service_rate,arrival_rate,timeout,"
          "ln_wait_tail,ln_response_tail")
    for c, K, mu, x, T in rows():
        w, s = ref(c, K, mu, x, T)
        print("%d,%d,%.17g,%.17g,%.17g,%s,%s" % (c, K, mu, x, T, fmt(w),
                                                 fmt(s)))
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
