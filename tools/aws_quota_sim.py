#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A simulation of the AWS SDK's standard retry quota, for
tests/check_policy.c (the model's A(p) against it), written to
tests/data/aws_quota.csv.

Independent of the C code: the algorithm of the AWS SDK for JavaScript v3
as @smithy/core 3.41.1 ships it (dist-es/submodules/retry/util-retry/
StandardRetryStrategy.js and retries-2026-config.js), replayed request by
request with the Python standard library:

* the bucket starts at `capacity` (INITIAL_RETRY_TOKENS, 500);
* after a failed attempt, a retry is sent when the request has attempts
  left (maxAttempts = retries + 1) and the bucket holds the cost of the
  error (refreshRetryTokenForRetry: `capacity >= cost`); the bucket then
  loses the cost, and the new token carries it;
* a success adds the token's cost when the attempt was a retry, else
  NO_RETRY_INCREMENT (recordSuccess: `getRetryCost() ?? 1`), up to the
  capacity;
* a refused retry ends the request.

Each attempt fails independently with probability p.  A failure is a
timeout with probability `timeout_share`; otherwise a throttling error with
probability `throttling_share`, else another transient error (a 5xx); the
cost is timeout_cost, throttling_cost or retry_cost accordingly.

Two schedules: `sequential`, one request at a time (a retry's cost comes
back before the next decision), and `concurrent`, 100 requests in flight
whose attempts end in random order (a retry's cost is out of the bucket
while the retry is in flight).  Each reports the mean retries per request
(attempts - 1) over 200,000 requests after 20,000 of warm-up, and its
standard error from 20 batch means.  Seeds are fixed: the file is
reproducible.

Usage: tools/aws_quota_sim.py > tests/data/aws_quota.csv
"""
import multiprocessing
import random
import sys

CAPACITY = 500.0
REFUND = 1.0
REQUESTS = 200_000
WARMUP = 20_000
BATCHES = 20
IN_FLIGHT = 100


def simulate(p, retries, costs, shares, in_flight, seed):
    """Mean retries per request and its standard error.  costs: (retry,
    timeout, throttling); shares: (timeout_share, throttling_share)."""
    retry_cost, timeout_cost, throttling_cost = costs
    w, th = shares
    rng = random.Random(seed)
    bucket = CAPACITY
    # per request in flight: [attempts made, cost of its token or None]
    flight = [[0, None] for _ in range(in_flight)]
    done = 0
    batch = REQUESTS // BATCHES
    sums = [0] * BATCHES
    while done < WARMUP + REQUESTS:
        i = rng.randrange(in_flight)
        req = flight[i]
        req[0] += 1
        end = False
        if rng.random() >= p:  # recordSuccess
            bucket = min(CAPACITY,
                         bucket + (req[1] if req[1] is not None else REFUND))
            end = True
        else:
            u = rng.random()
            cost = (timeout_cost if u < w else
                    throttling_cost if u < w + (1 - w) * th else retry_cost)
            if req[0] <= retries and bucket >= cost:
                bucket -= cost
                req[1] = cost
            else:
                end = True
        if end:
            if done >= WARMUP:
                sums[(done - WARMUP) // batch] += req[0] - 1
            done += 1
            flight[i] = [0, None]
    means = [s / batch for s in sums]
    mean = sum(means) / BATCHES
    var = sum((m - mean) ** 2 for m in means) / (BATCHES - 1)
    return mean, (var / BATCHES) ** 0.5


def row(case):
    k, (retries, costs, shares, p) = case
    seq = simulate(p, retries, costs, shares, 1, 1000 + 2 * k)
    con = simulate(p, retries, costs, shares, IN_FLIGHT, 1001 + 2 * k)
    return (retries, *costs, *shares, p, *seq, *con)


def cases():
    current, legacy = (14.0, 14.0, 5.0), (5.0, 10.0, 5.0)
    out = []
    for retries in (2, 3):
        for p in (0.1, 0.3, 0.5, 0.8):
            for th in (0.0, 0.2, 0.5, 1.0):
                out.append((retries, current, (0.0, th), p))
            out.append((retries, current, (0.5, 0.5), p))
            for w in (0.0, 0.5, 1.0):
                out.append((retries, legacy, (w, 0.0), p))
    return list(enumerate(out))


def main():
    with multiprocessing.Pool() as pool:
        rows = pool.map(row, cases())
    out = sys.stdout
    out.write("# tools/aws_quota_sim.py: the AWS SDK's retry quota (capacity "
              "500, refund 1) simulated;\n# retries per request (attempts - "
              "1), mean and standard error, one request at a time and 100 "
              "in flight\n")
    out.write("retries,retry_cost,timeout_cost,throttling_cost,timeout_share,"
              "throttling_share,p,sequential,sequential_se,concurrent,"
              "concurrent_se\n")
    for r in rows:
        out.write("%d,%g,%g,%g,%g,%g,%g,%.6f,%.6f,%.6f,%.6f\n" % r)


if __name__ == "__main__":
    main()
