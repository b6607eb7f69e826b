/* SPDX-License-Identifier: MIT */
/* Escaping control bytes in messages; see sanitize.h. */
#include <stdbool.h>
#include <stdio.h>

#include "sanitize.h"

/* The length (2-4) of the well-formed UTF-8 sequence of a code point
 * above U+009F that starts at s, or 0 (RFC 3629, section 4). */
static int utf8_length(const unsigned char *s) {
  unsigned c = s[0];
  int n;
  unsigned lo = 0x80, hi = 0xbf;
  if (c == 0xc2) {
    n = 2;
    lo = 0xa0; /* U+0080-U+009F are the C1 controls */
  } else if (c >= 0xc3 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0)
      lo = 0xa0; /* overlong */
    if (c == 0xed)
      hi = 0x9f; /* surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0)
      lo = 0x90;
    if (c == 0xf4)
      hi = 0x8f; /* above U+10FFFF */
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (int i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return n;
}

size_t ms_sanitize(char *out, size_t outlen, const char *in) {
  const unsigned char *s = (const unsigned char *)in;
  size_t w = 0;
  if (outlen == 0)
    return 0;
  while (*s) {
    int n = *s < 0x80 ? 1 : utf8_length(s);
    bool escape = *s < 0x20 || *s == 0x7f || n == 0;
    size_t need = escape ? 4 : (size_t)n;
    if (w + need >= outlen)
      break;
    if (escape) {
      snprintf(out + w, 5, "\\x%02x", *s);
      s++;
    } else {
      for (int i = 0; i < n; i++)
        out[w + (size_t)i] = (char)s[i];
      s += n;
    }
    w += need;
  }
  out[w] = '\0';
  return w;
}
