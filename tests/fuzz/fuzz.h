/* SPDX-License-Identifier: MIT */
/*
 * The fuzz targets' one entry point (libFuzzer's): every target defines it,
 * and either libFuzzer (make fuzz) or tests/fuzz/replay_main.c (make check,
 * the ordinary compiler) calls it with one input.  A target aborts on
 * anything that must not happen (a result that is not finite, a message
 * that is empty); the sanitizers catch the rest.
 */
#ifndef METASTABLE_FUZZ_H
#define METASTABLE_FUZZ_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The model targets' decoder (fuzz_model.c, fuzz_model_fast.c): the input
 * read as a sequence of numbers; past its end every byte is 0. */
typedef struct {
  const uint8_t *p;
  size_t n;
} fuzz_bytes;

static inline uint8_t fuzz_byte(fuzz_bytes *b) {
  if (b->n == 0)
    return 0;
  b->n--;
  return *b->p++;
}

static inline uint32_t fuzz_u32(fuzz_bytes *b) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v = v << 8 | fuzz_byte(b);
  return v;
}

/* A double: raw bits (1 in 8: NaN, infinities, subnormals), or m 10^e
 * with m in [0, 1], e in [-12, 12], negated 1 in 16. */
static inline double fuzz_double(fuzz_bytes *b) {
  uint8_t mode = fuzz_byte(b);
  if (mode % 8 == 0) {
    uint64_t u = (uint64_t)fuzz_u32(b) << 32 | fuzz_u32(b);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
  }
  double m = fuzz_u32(b) / 4294967295.0;
  double v = m * pow(10.0, (int)(fuzz_byte(b) % 25) - 12);
  return mode % 16 == 1 ? -v : v;
}

/* A count: small, [0, 63] (1 in 2), or any 32-bit value, signed. */
static inline long fuzz_long(fuzz_bytes *b) {
  uint8_t mode = fuzz_byte(b);
  if (mode % 2 == 0)
    return (long)(fuzz_byte(b) % 64);
  return (long)(int32_t)fuzz_u32(b);
}

#endif
