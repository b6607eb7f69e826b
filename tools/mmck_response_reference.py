#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""M/M/c/K response-time tail reference for tests/check_mmck.c, written to
tests/data/mmck_response.csv (doc/design.md §1.9):

    python3 tools/mmck_response_reference.py > tests/data/mmck_response.csv

Independent of the C code (which uses a thinning argument and sums over
Poisson counts): mpmath at 40 digits, a sum over the c + K states an
admitted arrival can find (Gross & Harris, Fundamentals of Queueing
Theory, ch. 2, M/M/c/K).  Weights w_n = a^n / n! for n <= c and
w_c rho^(n - c) above, a = x / mu, rho = a / c.  An arrival finding n < c
is served at once: P(R > T) = e^(-mu T).  One finding n = c + m waits
W ~ Gamma(m + 1, rate c mu), then its service S ~ Exp(mu):

    P(W + S > T) = P(W > T) + integral_0^T f_W(w) e^(-mu (T - w)) dw
                 = Q(m + 1, c mu T)
                   + e^(-mu T) (c / (c - 1))^(m + 1) P(m + 1, (c - 1) mu T)

(c > 1; for c = 1 the integral is e^(-mu T) (mu T)^(m + 1) / (m + 1)!),
P and Q the regularized incomplete gamma functions (mpmath.gammainc).

    P(R > T | admitted) = sum_{n < c + K} w_n P(R > T | n) / sum_{n<c+K} w_n

The doubles are printed with 17 digits so the C test reads them back
exactly; the references are those of these binary numbers.
"""
import sys

import mpmath as mp

mp.mp.dps = 40


def ref(c, K, mu, x, T):
    mu, x, T = mp.mpf(mu), mp.mpf(x), mp.mpf(T)
    a = x / mu
    rho = a / c
    below = mp.mpf(0)  # sum_{n<c} w_n / w_c
    t = mp.mpf(1)
    for n in range(c, 0, -1):
        t = t * n / a
        below += t
    num = below * mp.exp(-mu * T)
    den = below
    r = mp.mpf(1)
    for m in range(K):
        tail = mp.gammainc(m + 1, c * mu * T, mp.inf, regularized=True)
        if c == 1:
            tail += mp.exp(-mu * T) * (mu * T) ** (m + 1) / mp.factorial(m + 1)
        else:
            tail += (mp.exp(-mu * T) * (mp.mpf(c) / (c - 1)) ** (m + 1) *
                     mp.gammainc(m + 1, 0, (c - 1) * mu * T,
                                 regularized=True))
        num += r * tail
        den += r
        r *= rho
    return mp.log(num) - mp.log(den)


def rows():
    mu = 0.5  # a power of two: a = x / mu and c mu are exact doubles
    for c in [1, 2, 3, 10, 40]:
        for K in [1, 2, 5, 20, 100]:
            # and rho next to r = 1 - 1/c, where w_j's two geometric
            # sequences meet
            near = [] if c == 1 else [(1 - 1 / c) * (1 + 1e-9),
                                      (1 - 1 / c) * (1 - 1e-7)]
            for rho in [0.01, 0.3, 0.9, 0.99, 1.0, 1.01, 1.1, 2.0,
                        10.0] + near:
                x = rho * c * mu
                for tau_per in [0.1, 1.0, 3.0]:
                    T = tau_per * K / (c * mu)
                    yield c, K, mu, x, T


def fmt(v):
    return mp.nstr(v, 22, min_fixed=-mp.inf, max_fixed=mp.inf)


def main():
    print("# M/M/c/K response tail reference, mpmath 40-digit sums over "
          "states (tools/mmck_response_reference.py); natural log")
    print("servers,queue_limit,service_rate,arrival_rate,timeout,"
          "ln_response_tail")
    for c, K, mu, x, T in rows():
        print("%d,%d,%.17g,%.17g,%.17g,%s" % (c, K, mu, x, T,
                                              fmt(ref(c, K, mu, x, T))))


if __name__ == "__main__":
    sys.exit(main())
