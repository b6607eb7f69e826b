/* SPDX-License-Identifier: MIT */
/*
 * A client of collectd's unixsock plugin, for `metastable check
 * --collectd` and `metastable init --collectd`: LISTVAL and GETVAL of its
 * text protocol (collectd-unixsock(5)), and the did-you-mean of an
 * identifier among the ones collectd holds.
 *
 * The protocol: one command a line; each answer is a status line "N
 * message", N >= 0 the count of lines that follow, N < 0 a failure
 * ("-1 No such value.").  LISTVAL answers "TIME IDENTIFIER" lines (TIME
 * in epoch seconds, "1796570491.057"), GETVAL "NAME=VALUE" lines, one per
 * data source, a rate for counters, "NaN" when there is none yet.
 *
 * Every wait on the socket is bounded: each answer must be complete
 * within the connection's timeout, so a collectd that accepts and never
 * answers cannot hang the command.  Only the command uses this: the
 * plugin reads collectd's cache directly.
 */
#ifndef METASTABLE_CLI_COLLECTDSOCK_H
#define METASTABLE_CLI_COLLECTDSOCK_H

#include <stdbool.h>
#include <stddef.h>

/* The longest line of an answer, bytes without the newline: a collectd
 * identifier is at most 5 x 128 bytes (DATA_MAX_NAME_LEN), with its
 * time. */
#define MS_COLLECTD_MAX_LINE 4095
/* The most identifiers a LISTVAL may announce (a fleet aggregator holds
 * some 10^5). */
#define MS_COLLECTD_MAX_NAMES 10000000L
/* The most data sources a GETVAL answer may hold (collectd's types have
 * at most a few; the plugin reads types with one). */
#define MS_COLLECTD_MAX_DS 16
/* The default of --timeout: s to wait for each answer. */
#define MS_COLLECTD_DEFAULT_TIMEOUT 5.0

/* A connection.  Fields are private but for path and timeout. */
typedef struct {
  int fd;           /* -1 when closed */
  double timeout;   /* s: the longest wait for one answer, > 0 */
  const char *path; /* the socket, for messages */
  char buf[MS_COLLECTD_MAX_LINE + 2];
  size_t start, end; /* buf[start, end): read and not yet taken */
} ms_collectd;

/*
 * ms_collectd_open: connect to the unixsock plugin's socket at path,
 * waiting at most timeout seconds (> 0).  Returns 0, or -1 with err
 * saying what is wrong and what to do: no such file, not a socket,
 * permission denied, connection refused (no collectd listens), a path
 * too long for a socket, the timeout.  *c is then closed.
 */
int ms_collectd_open(ms_collectd *c, const char *path, double timeout,
                     char *err, size_t errlen);

/* Close the connection (a closed or never opened one too). */
void ms_collectd_close(ms_collectd *c);

/* The identifiers collectd holds: sorted by strcmp, each once. */
typedef struct {
  char **names;
  size_t n;
} ms_collectd_list;

/*
 * ms_collectd_listval: LISTVAL into *out (sorted).  Returns 0, or -1 with
 * err: the timeout, the connection closed, an answer that is not the
 * protocol's (the line quoted), out of memory.  *out is empty then.
 */
int ms_collectd_listval(ms_collectd *c, ms_collectd_list *out, char *err,
                        size_t errlen);

void ms_collectd_list_free(ms_collectd_list *l);

/* Whether name is in l (binary search). */
bool ms_collectd_list_has(const ms_collectd_list *l, const char *name);

/* One GETVAL answer: the value of each data source.  A value is NaN when
 * collectd has no rate yet (the first sample of a counter). */
typedef struct {
  int n;
  char ds[MS_COLLECTD_MAX_DS][64];
  double value[MS_COLLECTD_MAX_DS];
} ms_collectd_values;

/*
 * ms_collectd_getval: GETVAL name (quoted, so any identifier LISTVAL gave
 * works).  Returns 1 with *out filled; 0 when collectd answers a failure
 * ("No such value."; err holds its message); -1 with err for the timeout,
 * the connection closed, or an answer that is not the protocol's.
 */
int ms_collectd_getval(ms_collectd *c, const char *name,
                       ms_collectd_values *out, char *err, size_t errlen);

/* ---- the protocol's lines, pure ---------------------------------------- */

/* A status line "N message": 0 with *status = N and *msg the message (""
 * when absent); -1 when the line is not one. */
int ms_collectd_parse_status(const char *line, long *status, const char **msg);

/* A LISTVAL line "TIME IDENTIFIER" (TIME a finite number >= 0): 0 with
 * *time and *name (the rest of the line, non-empty); -1 otherwise. */
int ms_collectd_parse_listval(const char *line, double *time,
                              const char **name);

/* A GETVAL line "NAME=VALUE" (NAME 1 to 63 bytes, VALUE a number, "inf"
 * or "NaN", blanks around it allowed): 0 with ds (dslen >= 64) and *value; -1
 * otherwise. */
int ms_collectd_parse_getval(const char *line, char *ds, size_t dslen,
                             double *value);

/* ---- did you mean -------------------------------------------------------- */

/* Levenshtein distance between a and b, bytes (insertions, deletions and
 * substitutions count 1; Levenshtein 1966).  Strings longer than 1024
 * bytes are compared on their first 1024. */
size_t ms_collectd_levenshtein(const char *a, const char *b);

/* Whether name matches pattern as the plugin matches a glob input:
 * fnmatch(3) with FNM_PATHNAME (a * stays within one part); an identifier
 * without glob characters matches only itself. */
bool ms_collectd_matches(const char *pattern, const char *name);

/*
 * ms_collectd_distance: how far identifier name is from what pattern (an
 * identifier or a glob host/plugin[-i]/type[-i]) asks for, part by part:
 * the sum over host, plugin-instance and type-instance of the Levenshtein
 * distance of the two parts, where a part of the pattern with glob
 * characters that matches the name's part (fnmatch) counts 0.  0 when
 * name matches pattern; SIZE_MAX when either is not three parts.  *parts
 * (may be NULL) gets how many parts differ.
 */
size_t ms_collectd_distance(const char *pattern, const char *name, int *parts);

/* The farthest a suggestion may be: a fifth of the pattern's length
 * without its slashes, and at least 2. */
size_t ms_collectd_suggest_limit(const char *pattern);

/*
 * ms_collectd_suggest: the names closest to pattern, for "did you mean":
 * the indexes into names[0 .. n-1] of at most max of them, nearest first
 * (by distance, then fewer differing parts, then strcmp).  A name is near
 * when its distance is 1 to ms_collectd_suggest_limit(pattern), or when
 * it differs in the host alone (the same plugin and type elsewhere); of
 * those, none farther than the nearest one's distance d plus max(1,
 * d / 2), so that a clear winner comes alone.  Returns how many were
 * written to best; 0 when pattern matches a name or nothing is near.
 */
size_t ms_collectd_suggest(const char *pattern, char *const *names, size_t n,
                           size_t *best, size_t max);

/* What to suggest for pattern from the name it is near: name itself for
 * an identifier; for a glob, the pattern with each part that does not
 * match the name's replaced by the name's part ("*" kept where it
 * matched).  Into out (outlen bytes), returned. */
const char *ms_collectd_suggestion(const char *pattern, const char *name,
                                   char *out, size_t outlen);

#endif
