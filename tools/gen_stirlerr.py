#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print stirlerr(n) = ln n! - (n + 1/2) ln n + n - ln(2 pi)/2 for n = 0..30
to 20 significant digits (mpmath, 40-digit arithmetic): the table in
model/erlang.c."""
import mpmath as mp

mp.mp.dps = 40
for n in range(31):
    if n == 0:
        print("0.0,")
        continue
    v = mp.loggamma(n + 1) - (n + mp.mpf(1) / 2) * mp.log(n) + n - mp.log(2 * mp.pi) / 2
    print(mp.nstr(v, 20) + ",")
