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

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
