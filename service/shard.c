/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: which aggregator analyses which service
 * (service/service.h, "Sharding"; doc/fleets.md, "Sharding across
 * aggregators").
 *
 * A service goes to shard jump(FNV-1a-64(name), N) + 1 of N: the 64-bit
 * FNV-1a hash of its name's bytes (Fowler, Noll, Vo; the parameters of
 * draft-eastlake-fnv, offset basis 14695981039346656037, prime
 * 1099511628211) fed to jump consistent hashing (Lamping and Veach, "A
 * Fast, Minimal Memory, Consistent Hash Algorithm", 2014, fig. 1).  Both
 * are fixed: the assignment is part of the interface, the same on every
 * machine and in every version, so that one service file serves every
 * aggregator and `metastable check --shards N` says where each service
 * goes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

uint64_t ms_fnv1a64_update(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ULL; /* the 64-bit FNV prime, 2^40 + 2^8 + 0xb3 */
  }
  return h;
}

uint64_t ms_fnv1a64(const void *data, size_t len) {
  return ms_fnv1a64_update(MS_FNV1A64_OFFSET, data, len);
}

/* The paper's figure 1, its double arithmetic kept: each step is stored
 * in a double so that it is rounded to binary64 on every platform. */
int32_t ms_jump_hash(uint64_t key, int32_t buckets) {
  if (buckets < 1)
    return -1;
  int64_t b = -1, j = 0;
  while (j < buckets) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    double scale = (double)(1LL << 31) / (double)((key >> 33) + 1);
    double next = (double)(b + 1) * scale;
    j = (int64_t)next;
  }
  return (int32_t)b;
}

int ms_shard_of(const char *name, int n) {
  if (name == NULL || n < 1 || n > MS_SHARD_MAX)
    return 0;
  return ms_jump_hash(ms_fnv1a64(name, strlen(name)), n) + 1;
}

/* A decimal integer of at most 9 digits at *p, advanced past it; -1 when
 * there is none or it has more digits. */
static long take_int(const char **p) {
  long v = 0;
  int digits = 0;
  while (**p >= '0' && **p <= '9') {
    if (++digits > 9)
      return -1;
    v = 10 * v + (**p - '0');
    (*p)++;
  }
  return digits > 0 ? v : -1;
}

int ms_shard_parse(const char *text, int *k, int *n, char *err, size_t errlen) {
  const char *p = text != NULL ? text : "";
  long kk = take_int(&p), nn = -1;
  if (kk >= 0 && *p == '/') {
    p++;
    nn = take_int(&p);
  }
  if (kk < 0 || nn < 0 || *p != '\0') {
    snprintf(err, errlen,
             "\"%s\" is not K/N: two integers with a '/' between them, "
             "shard K of N (e.g. \"1/2\")",
             text != NULL ? text : "");
    return -1;
  }
  if (nn < 1 || nn > MS_SHARD_MAX || kk < 1 || kk > nn) {
    snprintf(err, errlen,
             "\"%s\": K and N must be 1 <= K <= N <= %d (shard K of N)", text,
             MS_SHARD_MAX);
    return -1;
  }
  *k = (int)kk;
  *n = (int)nn;
  return 0;
}

int ms_shard_balance(const int *shard, size_t n_services, int n, size_t *counts,
                     ms_shard_stats *stats) {
  if (n < 1 || n > MS_SHARD_MAX)
    return -1;
  memset(counts, 0, (size_t)n * sizeof *counts);
  for (size_t i = 0; i < n_services; i++) {
    if (shard[i] < 1 || shard[i] > n)
      return -1;
    counts[shard[i] - 1]++;
  }
  stats->min = stats->max = counts[0];
  for (int s = 1; s < n; s++) {
    if (counts[s] < stats->min)
      stats->min = counts[s];
    if (counts[s] > stats->max)
      stats->max = counts[s];
  }
  stats->mean = (double)n_services / n;
  stats->max_over_mean =
      n_services > 0 ? (double)stats->max / stats->mean : 0.0;
  return 0;
}
