/* SPDX-License-Identifier: MIT */
/* Numbers, durations and rates as people write them (service/units.h). */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

/* Whether x is too close to 0 for the rule of units.h: not 0, and
 * smaller in magnitude than the smallest normal double. */
static bool tiny(double x) { return x != 0.0 && fabs(x) < DBL_MIN; }
#define TINY_TAIL                                                              \
  "below 2.2250738585072014e-308, the smallest double with full "              \
  "precision; write 0 or a larger number"

/* strtod over the start of text; *rest is what follows the number and its
 * trailing blanks.  0, -1 when text does not start with a finite number,
 * or MS_NUMBER_TINY when it starts with one that is not 0 but rounds to
 * a subnormal or to 0 (strtod's ERANGE with a small result, or an exact
 * subnormal such as 0x1p-1074, which strtod takes silently). */
static int leading_number(const char *text, double *out, const char **rest) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || !isfinite(v))
    return -1;
  if (tiny(v) || (errno == ERANGE && v == 0.0))
    return MS_NUMBER_TINY;
  if (errno == ERANGE)
    return -1;
  while (isspace((unsigned char)*end))
    end++;
  *out = v;
  *rest = end;
  return 0;
}

const char *ms_quoted(char *buf, size_t len, const char *text) {
  if (text == NULL)
    text = "";
  size_t n = strlen(text);
  if (n <= MS_QUOTED_WHOLE) {
    snprintf(buf, len, "'%s'", text);
    return buf;
  }
  size_t head = MS_QUOTED_HEAD, tail = MS_QUOTED_TAIL;
  while (head > 0 && ((unsigned char)text[head] & 0xC0) == 0x80)
    head--; /* not inside a UTF-8 sequence */
  while (tail < n && ((unsigned char)text[n - tail] & 0xC0) == 0x80)
    tail++;
  snprintf(buf, len, "'%.*s\u2026%s' (%zu bytes)", (int)head, text,
           text + n - tail, n);
  return buf;
}

const char *ms_number_tiny_message(char *buf, size_t len, const char *text) {
  char q[MS_QUOTED_SIZE];
  snprintf(buf, len, "%s is too close to 0: " TINY_TAIL,
           ms_quoted(q, sizeof q, text));
  return buf;
}

int ms_parse_number(const char *text, double *out) {
  const char *rest;
  double v;
  if (text == NULL)
    return -1;
  int r = leading_number(text, &v, &rest);
  if (r != 0)
    return r;
  if (*rest != '\0')
    return -1;
  *out = v;
  return 0;
}

int ms_parse_whole(const char *text, double *out) {
  double x;
  /* decimal only: strtod would read "0x2" as 2 */
  if (text == NULL || strpbrk(text, "xXpP") != NULL)
    return -1;
  int r = ms_parse_number(text, &x);
  if (r != 0)
    return r;
  if (x != floor(x))
    return -1;
  *out = x;
  return 0;
}

int ms_parse_duration(const char *text, double *seconds, char *errbuf,
                      size_t errlen) {
  char q[MS_QUOTED_SIZE];
  /* "m" is minutes and "ms" milliseconds: the units are whole words
   * compared in full, never prefixes.  Sub-second units divide by a whole
   * number (correctly rounded: "100ms" and "100000us" are exactly the
   * double 0.1), where multiplying by 1e-3 or 1e-6, which no double
   * holds exactly, can land one unit in the last place off (100000 x
   * 1e-6 < 0.1), and a range's edge would then refuse its own value. */
  static const struct {
    const char *name;
    double scale, divisor;
  } units[] = {{"", 1.0, 1.0},    {"s", 1.0, 1.0},         {"ms", 1.0, 1e3},
               {"us", 1.0, 1e6},  {"\xc2\xb5s", 1.0, 1e6}, {"m", 60.0, 1.0},
               {"h", 3600.0, 1.0}};
  double v;
  const char *unit;
  int r = text == NULL ? -1 : leading_number(text, &v, &unit);
  if (r == MS_NUMBER_TINY) {
    ms_number_tiny_message(errbuf, errlen, text);
    return -1;
  }
  if (r != 0 || v < 0) {
    snprintf(errbuf, errlen,
             "%s is not a duration (seconds, or a number with us, ms, s, "
             "m or h)",
             ms_quoted(q, sizeof q, text));
    return -1;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(unit, units[i].name) == 0) {
      double x = v * units[i].scale / units[i].divisor;
      if (!isfinite(x))
        break;
      if (tiny(x)) { /* "1e-306us" */
        snprintf(errbuf, errlen, "%s is %.3g s, too close to 0: " TINY_TAIL,
                 ms_quoted(q, sizeof q, text), x);
        return -1;
      }
      *seconds = x;
      return 0;
    }
  if (unit[0] == '\0' || strcmp(unit, "m") == 0 || strcmp(unit, "h") == 0) {
    snprintf(errbuf, errlen, "%s is not a duration: too long",
             ms_quoted(q, sizeof q, text));
    return -1;
  }
  char qu[MS_QUOTED_SIZE];
  snprintf(errbuf, errlen, "%s: unknown time unit %s (use us, ms, s, m or h)",
           ms_quoted(q, sizeof q, text), ms_quoted(qu, sizeof qu, unit));
  return -1;
}

int ms_timeout_from_range(double lo, double hi, double *timeout, double *spread,
                          char *why, size_t len) {
  ms_error e;
  if (ms_param_check(MS_PARAM_TIMEOUT, lo, &e) != MS_OK ||
      ms_param_check(MS_PARAM_TIMEOUT, hi, &e) != MS_OK) {
    snprintf(why, len, "%s", e.msg);
    return -1;
  }
  if (!(hi >= lo)) {
    char h[32], l[32];
    snprintf(why, len,
             "timeout max %s s is below its min %s s: a range is "
             "{min: shortest, max: longest}",
             ms_format_against(h, hi, lo), ms_format_against(l, lo, hi));
    return -1;
  }
  *timeout = lo;
  *spread = hi - lo;
  return 0;
}

int ms_parse_timeout_range(const char *text, double *timeout, double *spread,
                           char *why, size_t len) {
  char q[MS_QUOTED_SIZE];
  const char *dots = text ? strstr(text, "..") : NULL;
  double lo, hi;
  if (dots == NULL) {
    if (ms_parse_duration(text, &lo, why, len) != 0)
      return -1;
    return ms_timeout_from_range(lo, lo, timeout, spread, why, len);
  }
  char first[64];
  size_t n = (size_t)(dots - text);
  if (n >= sizeof first) {
    snprintf(why, len, "%s is not a timeout range (MIN..MAX, 500ms..1.1s)",
             ms_quoted(q, sizeof q, text));
    return -1;
  }
  memcpy(first, text, n);
  first[n] = '\0';
  if (ms_parse_duration(first, &lo, why, len) != 0 ||
      ms_parse_duration(dots + 2, &hi, why, len) != 0) {
    char inner[200];
    snprintf(inner, sizeof inner, "%s", why);
    snprintf(why, len, "%s is not a timeout range (MIN..MAX, 500ms..1.1s): %s",
             ms_quoted(q, sizeof q, text), inner);
    return -1;
  }
  return ms_timeout_from_range(lo, hi, timeout, spread, why, len);
}

int ms_parse_share(const char *text, double *share) {
  double v;
  const char *rest;
  if (text == NULL)
    return -1;
  int r = leading_number(text, &v, &rest);
  if (r != 0)
    return r;
  if (*rest == '%' && rest[1] == '\0')
    v /= 100.0;
  else if (*rest != '\0')
    return -1;
  if (tiny(v)) /* "1e-307%" */
    return MS_NUMBER_TINY;
  *share = v;
  return 0;
}

/* Whether text is a number written as a percentage ("10%", "2.5 %"). */
static bool is_percentage(const char *text) {
  double v;
  const char *rest;
  return text != NULL && leading_number(text, &v, &rest) == 0 &&
         strcmp(rest, "%") == 0;
}

bool ms_param_is_share(ms_param id) {
  const ms_param_info *p = ms_param_get(id);
  return p != NULL && p->unit[0] == '\0' && !p->whole &&
         (p->hi <= 1.0 || (p->bounds & MS_BOUND_SHARE));
}

int ms_parse_rate(const char *text, double *per_second, char *errbuf,
                  size_t errlen) {
  char q[MS_QUOTED_SIZE];
  double v;
  const char *unit;
  if (text != NULL && leading_number(text, &v, &unit) == MS_NUMBER_TINY) {
    ms_number_tiny_message(errbuf, errlen, text);
    return -1;
  }
  if (text != NULL && leading_number(text, &v, &unit) == 0 && v < 0 &&
      (*unit == '\0' || strcmp(unit, "/s") == 0)) {
    snprintf(errbuf, errlen, "%s is negative: a rate is >= 0 per second",
             ms_quoted(q, sizeof q, text));
    return -1;
  }
  if (text == NULL || leading_number(text, &v, &unit) != 0 ||
      (*unit != '\0' && strcmp(unit, "/s") != 0)) {
    snprintf(errbuf, errlen,
             "%s is not a rate (a number per second, "
             "optionally written with /s)",
             ms_quoted(q, sizeof q, text));
    return -1;
  }
  *per_second = v;
  return 0;
}

ms_parse_result ms_parse_param(ms_param id, const char *text, double *out,
                               char *why, size_t len) {
  const ms_param_info *p = ms_param_get(id);
  double x;
  if (len > 0)
    why[0] = '\0';
  if (p == NULL || text == NULL)
    return MS_PARSE_NOT_NUMBER;
  if (is_percentage(text) && !ms_param_is_share(id)) {
    char q[MS_QUOTED_SIZE];
    snprintf(why, len, "%s is a percentage, but %s is %s",
             ms_quoted(q, sizeof q, text), p->key,
             p->whole ? "a count, not a share" : "not a share");
    return MS_PARSE_NOT_UNIT;
  }
  int r = 0;
  if (ms_param_is_share(id)) {
    if ((r = ms_parse_share(text, &x)) == -1)
      return MS_PARSE_NOT_NUMBER;
  } else if (p->whole) {
    if ((r = ms_parse_whole(text, &x)) == -1)
      return MS_PARSE_NOT_WHOLE;
  } else if (strcmp(p->unit, "s") == 0) {
    if (ms_parse_duration(text, &x, why, len) != 0)
      return MS_PARSE_NOT_UNIT;
  } else if (p->unit[0] != '\0') {
    if (ms_parse_rate(text, &x, why, len) != 0)
      return MS_PARSE_NOT_UNIT;
  } else if ((r = ms_parse_number(text, &x)) == -1) {
    return MS_PARSE_NOT_NUMBER;
  }
  if (r == MS_NUMBER_TINY) {
    ms_number_tiny_message(why, len, text);
    return MS_PARSE_NOT_UNIT;
  }
  *out = x;
  return MS_PARSE_OK;
}

/* Powers of ten a double holds exactly: 10^0 .. 10^22. */
static const double exact_p10[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Whether the decimal (-1)^neg * m * 10^e reads back (strtod) as exactly
 * x.  Clinger's fast path (W. D. Clinger, "How to read floating point
 * numbers accurately", PLDI 1990, §5): when m <= 2^53 and |e| <= 22 both
 * m and 10^|e| are doubles, and one multiplication or division, rounded
 * to nearest, is the correctly rounded value strtod returns.  Elsewhere,
 * or where the arithmetic may be wider than double (FLT_EVAL_METHOD),
 * text is read back with strtod. */
static bool reads_back(const char *text, bool neg, unsigned long long m, int e,
                       double x) {
#if FLT_EVAL_METHOD == 0
  while (m != 0 && m % 10 == 0 && e < 0)
    m /= 10, e++;
  /* m = 2^k m' rounds as m' scaled by 2^k, exactly (no overflow here) */
  double two_k = 1.0;
  while (m > (1ULL << 53) && m % 2 == 0)
    m /= 2, two_k *= 2;
  if (m <= (1ULL << 53) && e >= -22 && e <= 22) {
    double y = e >= 0 ? (double)m * exact_p10[e] : (double)m / exact_p10[-e];
    return (neg ? -y : y) * two_k == x;
  }
#else
  (void)neg, (void)m, (void)e;
#endif
  return strtod(text, NULL) == x;
}

/* A decimal rounded to p significant digits: d[0].d[1]..d[p-1] * 10^x10,
 * d as the p digits of m. */
typedef struct {
  unsigned long long m;
  int x10;
} rounded;

/* The integer i + f (i of 17 digits, f in [0, 1)) rounded to a multiple
 * of ten = 1, 10 or 100, to nearest, a tie to even, as the decimal of
 * 17 - log10(ten) digits of exponent x10 (carried on 9.99..9 -> 10). */
static inline rounded round_off(unsigned long long i, double f,
                                unsigned long long ten, int x10) {
  unsigned long long q = i / ten, r = i % ten;
  /* the dropped part (r + f) against ten / 2, doubled */
  long long k = 2 * (long long)r - (long long)ten;
  double t = 2 * f;
  int c = k >= 1 ? 1 : k == 0 ? (t > 0) : k == -1 ? (t > 1) - (t < 1) : -1;
  q += c > 0 || (c == 0 && (q & 1));
  if (q == 100000000000000000ULL / ten) /* 9.99..9 rounded up */
    q /= 10, x10++;
  return (rounded){q, x10};
}

/* The exact decimal expansion of ax > 0 rounded to 15, 16 and 17
 * significant digits (out[0], out[1], out[2]), to nearest and a tie to
 * even as glibc's printf rounds, without printf: when 1e16 <= ax 10^j <
 * 1e17 for a j in 0..22, ax 10^j is exactly hi + lo (hi = ax 10^j
 * rounded, lo = fma(ax, 10^j, -hi): the error of a product is a double,
 * J.-M. Muller et al., Handbook of Floating-Point Arithmetic, 2nd ed.,
 * §4.4.1), an integer of 17 digits and a fraction, rounded here in
 * integers.  Returns false (out unset) outside that range (about
 * 1e-6 <= ax < 1e17) or where the arithmetic may be wider than double. */
static bool exact_digits(double ax, rounded out[3]) {
#if FLT_EVAL_METHOD == 0
  if (!(ax >= 1e-6 && ax < 1e17))
    return false;
  /* ax = f 2^e2 with f in [0.5, 1): floor(log10(ax)) is e10 or e10 + 1 */
  int e2;
  frexp(ax, &e2);
  int e10 = (int)floor((e2 - 1) * 0.30102999566398120);
  int j = 16 - e10;
  if (j > 22)
    return false;
  double hi = ax * exact_p10[j];
  if (hi >= 1e17) { /* e10 + 1 */
    if (--j < 0)
      return false;
    hi = ax * exact_p10[j];
  }
  double lo = fma(ax, exact_p10[j], -hi);
  if (!(hi >= 1e16 && hi < 1e17) || (hi == 1e16 && lo < 0))
    return false; /* ax 10^j is just below 1e16: rare, printf */
  double whole = floor(lo);
  double f = lo - whole; /* in [0, 1), exact */
  /* ax 10^j = i + f */
  unsigned long long i =
      (unsigned long long)hi + (unsigned long long)(long long)whole;
  out[2] = round_off(i, f, 1, 16 - j);
  out[1] = round_off(i, f, 10, 16 - j);
  out[0] = round_off(i, f, 100, 16 - j);
  return true;
#else
  (void)ax, (void)out;
  return false;
#endif
}

/* The text printf's %.{p}g writes for the decimal (-1)^neg d[0].d[1]..
 * d[p-1] * 10^x10 (ISO C 7.21.6.1, "g" without "#": style e when x10 <
 * -4 or x10 >= p, else style f with p - 1 - x10 decimals; trailing zeros
 * of the fraction and a bare point removed; an exponent of at least two
 * digits).  d holds p digits '0'..'9' (all '0' only for a zero, with
 * x10 0).  buf holds at least 32 bytes. */
static void g_style(char *buf, bool neg, const char *d, int p, int x10) {
  int n = p; /* the digits up to the last non-zero one */
  while (n > 1 && d[n - 1] == '0')
    n--;
  char *o = buf;
  if (neg)
    *o++ = '-';
  if (x10 < -4 || x10 >= p) {
    *o++ = d[0];
    if (n > 1) {
      *o++ = '.';
      memcpy(o, d + 1, (size_t)(n - 1));
      o += n - 1;
    }
    *o++ = 'e';
    *o++ = x10 < 0 ? '-' : '+';
    int a = x10 < 0 ? -x10 : x10;
    if (a >= 100)
      *o++ = (char)('0' + a / 100);
    *o++ = (char)('0' + a / 10 % 10);
    *o++ = (char)('0' + a % 10);
  } else if (x10 >= 0) {
    memcpy(o, d, (size_t)(x10 + 1)); /* the whole part: x10 + 1 <= p */
    o += x10 + 1;
    if (n > x10 + 1) {
      *o++ = '.';
      memcpy(o, d + x10 + 1, (size_t)(n - x10 - 1));
      o += n - x10 - 1;
    }
  } else { /* 0.000ddd */
    *o++ = '0';
    *o++ = '.';
    for (int k = 0; k < -x10 - 1; k++)
      *o++ = '0';
    memcpy(o, d, (size_t)n);
    o += n;
  }
  *o = '\0';
}

/* The p decimal digits of m (< 10^p) into d, leading zeros included. */
static void digits_of(char *d, unsigned long long m, int p) {
  for (int k = p - 1; k >= 0; k--, m /= 10)
    d[k] = (char)('0' + m % 10);
}

/*
 * The shortest of %.15g, %.16g and %.17g that reads back as x, as those
 * three printf calls and two strtod calls would find it, cheaper:
 *
 * - From about 1e-6 to 1e17 (most numbers the command writes) the
 *   digits come from exact_digits, without printf.
 * - Elsewhere one conversion, %.16e, gives the 17 digits of %.17g,
 *   correctly rounded by glibc; 16 and 15 digits are rounded from them.
 *   Rounding a rounded number again is exact unless the dropped digits
 *   are "5" (16) or "50" (15): the 17-digit value is within half a unit
 *   of its 17th digit of x, so the dropped part of x is then within 0.05
 *   (0.005) of half a unit and may lie on either side of it, or be a tie
 *   printf breaks to even.  Those cases ask printf itself.
 *
 * The read-back test is reads_back's.  tests/check_cli.c holds the text
 * equal to the three printf calls' over a million doubles.
 */
const char *ms_format_double(char buf[32], double x) {
  if (isnan(x))
    return strcpy(buf, "nan");
  if (isinf(x))
    return strcpy(buf, x > 0 ? "inf" : "-inf");
  bool neg = signbit(x) != 0;
  rounded ex[3];
  bool exact = exact_digits(fabs(x), ex);
  char d[17];
  if (exact) {
    for (int p = 15; p <= 16; p++) {
      digits_of(d, ex[p - 15].m, p);
      g_style(buf, neg, d, p, ex[p - 15].x10);
      if (reads_back(buf, neg, ex[p - 15].m, ex[p - 15].x10 - (p - 1), x))
        return buf;
    }
    digits_of(d, ex[2].m, 17);
    g_style(buf, neg, d, 17, ex[2].x10);
    return buf;
  }
  char e17[40]; /* "-d.dddddddddddddddde-308" */
  snprintf(e17, sizeof e17, "%.16e", x);
  const char *s = e17 + (e17[0] == '-');
  char d17[17];
  d17[0] = s[0];
  memcpy(d17 + 1, s + 2, 16);
  int x17 = atoi(s + 19); /* after "d.dddddddddddddddde" */
  for (int p = 15; p <= 16; p++) {
    const char *drop = d17 + p;
    int cmp = p == 16 ? (drop[0] > '5') - (drop[0] < '5')
                      : (drop[0] != '5' ? (drop[0] > '5') - (drop[0] < '5')
                                        : drop[1] != '0');
    if (cmp == 0) { /* near a tie: printf rounds x itself */
      snprintf(buf, 32, "%.*g", p, x);
      if (strtod(buf, NULL) == x)
        return buf;
      continue;
    }
    memcpy(d, d17, (size_t)p);
    int x10 = x17;
    if (cmp > 0) { /* round up, carrying */
      int k = p - 1;
      while (k >= 0 && d[k] == '9')
        d[k--] = '0';
      if (k >= 0) {
        d[k]++;
      } else { /* 9.99..9 -> 10.0..0 */
        d[0] = '1';
        x10++;
      }
    }
    unsigned long long m = 0;
    for (int k = 0; k < p; k++)
      m = m * 10 + (unsigned long long)(d[k] - '0');
    g_style(buf, neg, d, p, x10);
    if (reads_back(buf, neg, m, x10 - (p - 1), x))
      return buf;
  }
  g_style(buf, neg, d17, 17, x17);
  return buf;
}

const char *ms_format_share(char *buf, size_t len, double x, int digits) {
  if (x == 0)
    snprintf(buf, len, "0");
  else if (100 * fabs(x) >= 1e-3)
    snprintf(buf, len, "%.*g %%", digits, 100 * x);
  else
    snprintf(buf, len, "%.*g", digits, x); /* below 1e-5: %g's exponent */
  return buf;
}

/* A ratio for people: "4", "1.5", "5,000", "1,234,567"; beyond a
 * billion "2.5e+12". */
static void fmt_ratio(char *buf, size_t len, double r) {
  if (r < 10 || r >= 1e9) {
    snprintf(buf, len, "%.3g", r);
    return;
  }
  char digits[16];
  snprintf(digits, sizeof digits, "%.0f", r);
  size_t n = strlen(digits), j = 0;
  for (size_t i = 0; i < n && j + 2 < len; i++) {
    if (i > 0 && (n - i) % 3 == 0)
      buf[j++] = ',';
    buf[j++] = digits[i];
  }
  buf[j] = '\0';
}

bool ms_bare_duration_warning(ms_param id, const char *key, const char *sep,
                              double service_time, double timeout, char *buf,
                              size_t len) {
  char num[32], ratio[32];
  if (len > 0)
    buf[0] = '\0';
  if (!(service_time > 0) || !isfinite(service_time) || !(timeout >= 0) ||
      !isfinite(timeout))
    return false;
  if (id == MS_PARAM_TIMEOUT) {
    if (!(timeout > MS_BARE_TIMEOUT_RATIO * service_time))
      return false;
    ms_format_double(num, timeout);
    fmt_ratio(ratio, sizeof ratio, timeout / service_time);
    snprintf(buf, len,
             "%s%s%s was read as %s s, %s times the service time; write "
             "%sms if you meant milliseconds",
             key, sep, num, num, ratio, num);
    return true;
  }
  if (id != MS_PARAM_SERVICE_TIME)
    return false;
  ms_format_double(num, service_time);
  if (timeout > 0 && service_time > timeout) {
    fmt_ratio(ratio, sizeof ratio, service_time / timeout);
    snprintf(buf, len,
             "%s%s%s was read as %s s, %s times the timeout; write %sms if "
             "you meant milliseconds",
             key, sep, num, num, ratio, num);
    return true;
  }
  if (service_time >= MS_BARE_SERVICE_TIME_MAX) {
    snprintf(buf, len,
             "%s%s%s was read as %s s, %g s or more per request; write %sms "
             "if you meant milliseconds",
             key, sep, num, num, MS_BARE_SERVICE_TIME_MAX, num);
    return true;
  }
  return false;
}
