/* SPDX-License-Identifier: MIT */
/*
 * The replay driver: runs a fuzz target (tests/fuzz/fuzz_*.c) over every
 * file of its corpus with the ordinary compiler, so that make check holds
 * every input ever found to crash (and the seeds) to the fixed code without
 * libFuzzer.  Usage: replay_NAME [FILE|DIR]...; without arguments it reads
 * the directory given at build time (FUZZ_CORPUS, tests/fuzz/corpus/NAME).
 * A target that crashes on an input aborts, and make check reports the
 * failure; the input being run is printed first, so the log names it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#ifndef FUZZ_CORPUS
#error "FUZZ_CORPUS: the corpus directory of the target"
#endif

/* Run the target on one file; 0, or -1 when it cannot be read. */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, n = 0;
  unsigned char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      unsigned char *nb = realloc(buf, cap *= 2);
      if (nb == NULL)
        free(buf);
      buf = nb;
    }
  }
  int bad = ferror(f) || buf == NULL;
  fclose(f);
  if (bad) {
    fprintf(stderr, "replay: %s: cannot read\n", path);
    free(buf);
    return -1;
  }
  printf("replay: %s (%zu bytes)\n", path, n);
  fflush(stdout);
  /* an exact-size copy, so that the sanitizers see a read past the end */
  unsigned char *in = malloc(n ? n : 1);
  if (in == NULL) {
    free(buf);
    return -1;
  }
  memcpy(in, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(in, n);
  free(in);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order; the count run, or -1. */
static int run_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *nn);
      if (nn == NULL)
        abort();
      names = nn;
    }
    names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
    if (names[n] == NULL)
      abort();
    sprintf(names[n], "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  int count = 0, rc = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      if (run_file(names[i]) != 0)
        rc = -1;
      count++;
    }
    free(names[i]);
  }
  free(names);
  return rc != 0 ? -1 : count;
}

static int run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode))
    return run_dir(path);
  return run_file(path) == 0 ? 1 : -1;
}

int main(int argc, char **argv) {
  int total = 0;
  if (argc < 2) {
    total = run_path(FUZZ_CORPUS);
    if (total <= 0) {
      fprintf(stderr, "replay: %s: no inputs run\n", FUZZ_CORPUS);
      return 1;
    }
  }
  for (int i = 1; i < argc; i++) {
    int k = run_path(argv[i]);
    if (k < 0)
      return 1;
    total += k;
  }
  printf("replay: %d inputs, no crash\n", total);
  return 0;
}
