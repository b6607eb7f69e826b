/* SPDX-License-Identifier: MIT */
/* "Did you mean": the nearest known name (service/suggest.h). */
#include <string.h>

#include "suggest.h"

static unsigned char fold(unsigned char c, bool nocase) {
  return nocase && c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static size_t min3(size_t a, size_t b, size_t c) {
  size_t m = a < b ? a : b;
  return m < c ? m : c;
}

size_t ms_edit_distance(const char *a, const char *b, bool nocase) {
  a = a ? a : "";
  b = b ? b : "";
  size_t n = strlen(a), m = strlen(b);
  if (n > MS_EDIT_MAX_LEN || m > MS_EDIT_MAX_LEN)
    return MS_EDIT_FAR;
  /* Three rows of the dynamic programme (Wagner and Fischer 1974): the
   * row before the previous one is what a transposition reaches back to.
   * Distances fit in 16 bits: a name has at most MS_EDIT_MAX_LEN bytes. */
  unsigned short rows[3][MS_EDIT_MAX_LEN + 1];
  unsigned short *before = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= m; j++)
    prev[j] = (unsigned short)j;
  for (size_t i = 1; i <= n; i++) {
    unsigned char ca = fold((unsigned char)a[i - 1], nocase);
    cur[0] = (unsigned short)i;
    for (size_t j = 1; j <= m; j++) {
      unsigned char cb = fold((unsigned char)b[j - 1], nocase);
      size_t d = min3((size_t)prev[j] + 1, (size_t)cur[j - 1] + 1,
                      (size_t)prev[j - 1] + (ca != cb));
      if (i > 1 && j > 1 && ca == fold((unsigned char)b[j - 2], nocase) &&
          fold((unsigned char)a[i - 2], nocase) == cb &&
          (size_t)before[j - 2] + 1 < d)
        d = (size_t)before[j - 2] + 1;
      cur[j] = (unsigned short)d;
    }
    unsigned short *t = before;
    before = prev;
    prev = cur;
    cur = t;
  }
  return prev[m];
}

const char *ms_suggest(const char *word, const char *const *candidates,
                       size_t n, bool nocase) {
  if (word == NULL || word[0] == '\0' || candidates == NULL)
    return NULL;
  size_t len = strlen(word);
  size_t best_d = len / 3 > 1 ? len / 3 : 1;
  const char *best = NULL;
  for (size_t i = 0; i < n; i++) {
    if (candidates[i] == NULL || strcmp(candidates[i], word) == 0)
      continue;
    size_t d = ms_edit_distance(word, candidates[i], nocase);
    if (d <= best_d && (best == NULL || d < best_d)) {
      best = candidates[i];
      best_d = d;
    }
  }
  return best;
}
