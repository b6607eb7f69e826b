/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the Prometheus query_range reader (service/trace.c,
 * ms_trace_from_prometheus).  The input is one response, or two split at
 * the first NUL byte (arrival_rate's and error_rate's), written to
 * temporary files as the reader takes paths.  An accepted pair becomes a
 * CSV trace that the CSV reader must read back in full, one row per
 * timestamp, times increasing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "trace.h"

static char paths[2][64];

/* Two temporary files, made once and rewritten for each input. */
static void make_files(void) {
  if (paths[0][0] != '\0')
    return;
  for (int i = 0; i < 2; i++) {
    const char *dir = getenv("TMPDIR");
    snprintf(paths[i], sizeof paths[i], "%s/ms-fuzz-prom-XXXXXX",
             dir && strlen(dir) < 32 ? dir : "/tmp");
    int fd = mkstemp(paths[i]);
    if (fd < 0)
      abort();
    close(fd);
  }
}

static void remove_files(void) {
  for (int i = 0; i < 2; i++)
    if (paths[i][0] != '\0')
      unlink(paths[i]);
}

static void write_file(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0)
    abort();
}

/* The CSV the reader wrote, read back: it must be a valid trace. */
static void read_back(char *csv, size_t len) {
  FILE *f = fmemopen(csv, len, "r");
  if (f == NULL)
    abort();
  ms_trace t;
  ms_trace_row row;
  char err[512];
  if (ms_trace_open(&t, f, "(Prometheus trace)", err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    abort();
  }
  int rc;
  while ((rc = ms_trace_next(&t, &row, err, sizeof err)) == 1)
    ;
  if (rc != 0) {
    fprintf(stderr, "%s\n", err);
    abort();
  }
  ms_trace_close(&t);
  fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  make_files();
  static int registered;
  if (!registered && atexit(remove_files) == 0)
    registered = 1;
  const uint8_t *nul = memchr(data, '\0', size);
  size_t n0 = nul ? (size_t)(nul - data) : size;
  write_file(paths[0], data, n0);
  const char *files[MS_INPUT_COUNT] = {0};
  files[MS_INPUT_ARRIVAL] = paths[0];
  if (nul) {
    write_file(paths[1], nul + 1, size - n0 - 1);
    files[MS_INPUT_ERROR] = paths[1];
  }
  char *csv = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&csv, &len);
  if (out == NULL)
    abort();
  char err[512];
  err[0] = '\0';
  int rc = ms_trace_from_prometheus(files, out, err, sizeof err);
  if (fclose(out) != 0)
    abort();
  if (rc != 0) {
    if (err[0] == '\0')
      abort();
  } else if (len > 0) {
    read_back(csv, len);
  } else {
    abort(); /* an accepted response has at least the header */
  }
  free(csv);
  return 0;
}
