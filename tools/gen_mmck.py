#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""M/M/c/K reference values for tests/check_mmck.c, written to
tests/data/mmck_reference.csv.

Independent of the C code: mpmath at 50 digits, straightforward sums over
the c + K + 1 states (Gross & Harris, Fundamentals of Queueing Theory,
ch. 2, M/M/c/K).  With a = x / mu and rho = a / c the unnormalised
stationary weights are w_n = a^n / n! for n <= c and w_c rho^(n - c) for
c < n <= c + K; the blocking probability is w_{c+K} / sum w, and an admitted
arrival that finds n >= c waits longer than T with probability
Q(n - c + 1, c mu T) = P(Poisson(c mu T) <= n - c), summed by its upward
recurrence Q(m + 1) = Q(m) + e^-tau tau^m / m!:

    P(W > T | admitted) = sum_{n=c}^{c+K-1} w_n Q(n - c + 1, tau)
                          / sum_{n<c+K} w_n.

The double inputs (service rate, arrival rate, timeout) are written with 17
significant digits so that the C test reads back the same doubles; the
reference values are those of these exact binary numbers.
Usage: tools/gen_mmck.py > tests/data/mmck_reference.csv
"""
import multiprocessing
import sys

import mpmath as mp

mp.mp.dps = 50


def ref(c, K, mu, x, T):
    mu, x, T = mp.mpf(mu), mp.mpf(x), mp.mpf(T)
    a = x / mu
    rho = a / c
    tau = c * mu * T
    # weights relative to w_c, so that nothing leaves the exponent range
    below = mp.mpf(0)  # sum_{n<c} w_n / w_c
    t = mp.mpf(1)
    for n in range(c, 0, -1):  # w_{n-1} / w_n = n / a
        t = t * n / a
        below += t
    top = rho ** K
    waiting = mp.mpf(0)  # sum_{m<K} rho^m
    wait_num = mp.mpf(0)  # sum_{m<K} rho^m Q(m + 1, tau)
    pois = mp.exp(-tau)
    q = mp.mpf(1) if tau == 0 else pois
    r = mp.mpf(1)
    for m in range(K):
        waiting += r
        wait_num += r * q
        r *= rho
        if tau != 0:
            pois = pois * tau / (m + 1)
            q += pois
    admitted = below + waiting
    ln_block = mp.log(top) - mp.log(admitted + top)
    ln_wait = mp.log(wait_num) - mp.log(admitted) if K > 0 else None
    return ln_block, ln_wait


def rows():
    out = []
    mu = 0.5  # a power of two: a = x / mu and c mu are exact doubles
    big_rho = (0.9, 0.999, 1.0, 1.001, 1.1, 2.0)
    for c in [1, 2, 3, 7, 10, 39, 40, 41, 100, 1000, 10000, 100000]:
        for K in [0, 1, 2, 5, 20, 100, 1000, 10000, 100000, 1000000]:
            n = c + K
            if n > 1100000 or (c >= 10000 and K >= 10000) or \
                    (K == 1000000 and c > 10) or (K == 100000 and c > 100):
                continue
            for rho in [0.01, 0.3, 0.7, 0.9, 0.99, 0.999, 1.0, 1.001, 1.01,
                        1.1, 1.5, 2.0, 10.0, 100.0]:
                if n > 2000 and rho not in big_rho:
                    continue
                if n > 200000 and rho not in (0.999, 1.001, 2.0):
                    continue
                x = rho * c * mu
                for tau_per in [0.0, 0.1, 1.0, 3.0]:
                    # c mu T, the completions in one timeout, against K
                    if n > 2000 and tau_per not in (0.1, 1.0):
                        continue
                    T = tau_per * max(K, 1) / (c * mu)
                    out.append((c, K, mu, x, T))
    return out


def fmt(v):
    return mp.nstr(v, 22, min_fixed=-mp.inf, max_fixed=mp.inf)


def row_text(row):
    c, K, mu, x, T = row
    lb, lw = ref(c, K, mu, x, T)
    return "%d,%d,%.17g,%.17g,%.17g,%s,%s" % (
        c, K, mu, x, T, fmt(lb), "" if lw is None else fmt(lw))


def main():
    print("# M/M/c/K reference, mpmath 50-digit sums over states "
          "(tools/gen_mmck.py); ln_* natural logs, ln_wait_tail empty for K = 0")
    print("servers,queue_limit,service_rate,arrival_rate,timeout,"
          "ln_block,ln_wait_tail")
    with multiprocessing.Pool() as pool:
        for line in pool.imap(row_text, rows(), chunksize=4):
            print(line)

if __name__ == "__main__":
    main()
