/* SPDX-License-Identifier: MIT */
/* A client of collectd's unixsock plugin; see collectdsock.h. */
#define _GNU_SOURCE /* SOCK_CLOEXEC, SOCK_NONBLOCK, MSG_NOSIGNAL */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collectdsock.h"

/* ---- time ------------------------------------------------------------- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Milliseconds left until deadline, for poll: at least 0, rounded up so
 * that a wait never ends before the deadline. */
static int ms_left(double deadline) {
  double left = deadline - now();
  if (left <= 0)
    return 0;
  double ms = ceil(1e3 * left);
  return ms > 1e9 ? 1000000000 : (int)ms;
}

static void too_slow(const ms_collectd *c, const char *what, char *err,
                     size_t errlen) {
  snprintf(err, errlen,
           "%s: collectd did not answer %s within %g s (a hung or very "
           "busy collectd; --timeout sets the wait)",
           c->path, what, c->timeout);
}

/* ---- connecting ---------------------------------------------------------- */

/* Why connecting failed, with what to do. */
static void connect_error(const char *path, int e, char *err, size_t errlen) {
  switch (e) {
  case ECONNREFUSED:
    snprintf(err, errlen,
             "%s: connection refused: no collectd listens on it (collectd "
             "stopped, or the file is left from an earlier run)",
             path);
    break;
  case EACCES:
  case EPERM:
    snprintf(err, errlen,
             "%s: permission denied: the unixsock plugin's SocketGroup and "
             "SocketPerms say who may connect (run as a member of that "
             "group, or as root)",
             path);
    break;
  default:
    snprintf(err, errlen, "%s: cannot connect: %s", path, strerror(e));
  }
}

/* Whether path is a socket; else why not in err. */
static bool is_socket(const char *path, char *err, size_t errlen) {
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT)
      snprintf(err, errlen,
               "%s: no such file: is collectd running with its unixsock "
               "plugin? (LoadPlugin unixsock; the socket is the SocketFile "
               "of <Plugin unixsock>, by default /var/run/collectd-unixsock)",
               path);
    else
      connect_error(path, errno, err, errlen);
    return false;
  }
  if (!S_ISSOCK(st.st_mode)) {
    snprintf(err, errlen,
             "%s: not a socket: give the SocketFile of collectd's unixsock "
             "plugin",
             path);
    return false;
  }
  return true;
}

/* Wait for a non-blocking connect under way; 0 or an errno value. */
static int connect_wait(int fd, double deadline) {
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  int r;
  while ((r = poll(&p, 1, ms_left(deadline))) < 0 && errno == EINTR)
    ;
  if (r < 0)
    return errno;
  if (r == 0)
    return ETIMEDOUT;
  int e = 0;
  socklen_t len = sizeof e;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
    return errno;
  return e;
}

int ms_collectd_open(ms_collectd *c, const char *path, double timeout,
                     char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  c->fd = -1;
  c->path = path;
  c->timeout = timeout > 0 ? timeout : MS_COLLECTD_DEFAULT_TIMEOUT;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path) {
    snprintf(err, errlen,
             "%s: the path is longer than %zu bytes, too long for a socket "
             "(give a shorter path, a symbolic link for instance)",
             path, sizeof sa.sun_path - 1);
    return -1;
  }
  if (!is_socket(path, err, errlen))
    return -1;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    snprintf(err, errlen, "%s: socket: %s", path, strerror(errno));
    return -1;
  }
  double deadline = now() + c->timeout;
  int e = 0;
  for (;;) {
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
      break;
    e = errno;
    if (e == EINTR)
      continue;
    if (e == EINPROGRESS) {
      e = connect_wait(fd, deadline);
      break;
    }
    /* a full backlog: a busy collectd; try again until the deadline */
    if (e == EAGAIN && now() < deadline) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
      continue;
    }
    if (e == EAGAIN)
      e = ETIMEDOUT;
    break;
  }
  if (e == ETIMEDOUT) {
    close(fd);
    c->fd = -1;
    too_slow(c, "the connection", err, errlen);
    return -1;
  }
  if (e != 0) {
    close(fd);
    connect_error(path, e, err, errlen);
    return -1;
  }
  c->fd = fd;
  return 0;
}

void ms_collectd_close(ms_collectd *c) {
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  c->start = c->end = 0;
}

/* ---- lines --------------------------------------------------------------- */

static int send_all(ms_collectd *c, const char *text, const char *what,
                    double deadline, char *err, size_t errlen) {
  size_t len = strlen(text), done = 0;
  while (done < len) {
    struct pollfd p = {.fd = c->fd, .events = POLLOUT};
    int r = poll(&p, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0) {
      too_slow(c, what, err, errlen);
      return -1;
    }
    ssize_t w = r < 0 ? -1 : send(c->fd, text + done, len - done, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (w < 0) {
      snprintf(err, errlen, "%s: sending %s: %s", c->path, what,
               strerror(errno));
      return -1;
    }
    done += (size_t)w;
  }
  return 0;
}

/* The next line of the answer, without its newline, in c->buf (valid until
 * the next read); 0, or -1 with err. */
static int read_line(ms_collectd *c, const char *what, double deadline,
                     char **line, char *err, size_t errlen) {
  for (;;) {
    char *nl = memchr(c->buf + c->start, '\n', c->end - c->start);
    if (nl != NULL) {
      *nl = '\0';
      if (nl > c->buf + c->start && nl[-1] == '\r')
        nl[-1] = '\0';
      *line = c->buf + c->start;
      c->start = (size_t)(nl - c->buf) + 1;
      return 0;
    }
    if (c->start > 0) {
      memmove(c->buf, c->buf + c->start, c->end - c->start);
      c->end -= c->start;
      c->start = 0;
    }
    if (c->end >= sizeof c->buf - 1) {
      snprintf(err, errlen,
               "%s: a line of the answer to %s is longer than %d bytes: not "
               "collectd's unixsock protocol",
               c->path, what, MS_COLLECTD_MAX_LINE);
      return -1;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int r = poll(&p, 1, ms_left(deadline));
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0) {
      too_slow(c, what, err, errlen);
      return -1;
    }
    ssize_t got =
        r < 0 ? -1
              : recv(c->fd, c->buf + c->end, sizeof c->buf - 1 - c->end, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (got < 0) {
      snprintf(err, errlen, "%s: reading the answer to %s: %s", c->path, what,
               strerror(errno));
      return -1;
    }
    if (got == 0) {
      snprintf(err, errlen, "%s: collectd closed the connection during %s",
               c->path, what);
      return -1;
    }
    c->end += (size_t)got;
  }
}

static void not_protocol(const ms_collectd *c, const char *what,
                         const char *line, char *err, size_t errlen) {
  snprintf(err, errlen,
           "%s: the answer to %s is not collectd's unixsock protocol: "
           "'%.200s'",
           c->path, what, line);
}

/* Send command (what names it in messages) and read its status line. */
static int command(ms_collectd *c, const char *cmd, const char *what,
                   double deadline, long *status, const char **msg, char *err,
                   size_t errlen) {
  if (c->fd < 0) {
    snprintf(err, errlen, "%s: not connected", c->path);
    return -1;
  }
  char *line;
  if (send_all(c, cmd, what, deadline, err, errlen) != 0 ||
      read_line(c, what, deadline, &line, err, errlen) != 0)
    return -1;
  if (ms_collectd_parse_status(line, status, msg) != 0) {
    not_protocol(c, what, line, err, errlen);
    return -1;
  }
  return 0;
}

/* ---- LISTVAL ------------------------------------------------------------- */

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void ms_collectd_list_free(ms_collectd_list *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->names[i]);
  free(l->names);
  l->names = NULL;
  l->n = 0;
}

bool ms_collectd_list_has(const ms_collectd_list *l, const char *name) {
  return l->n > 0 &&
         bsearch(&name, l->names, l->n, sizeof *l->names, by_name) != NULL;
}

int ms_collectd_listval(ms_collectd *c, ms_collectd_list *out, char *err,
                        size_t errlen) {
  out->names = NULL;
  out->n = 0;
  double deadline = now() + c->timeout;
  long status;
  const char *msg;
  if (command(c, "LISTVAL\n", "LISTVAL", deadline, &status, &msg, err,
              errlen) != 0)
    return -1;
  if (status < 0) {
    snprintf(err, errlen, "%s: LISTVAL failed: %s", c->path, msg);
    return -1;
  }
  if (status > MS_COLLECTD_MAX_NAMES) {
    snprintf(err, errlen,
             "%s: LISTVAL announces %ld identifiers, more than %ld", c->path,
             status, MS_COLLECTD_MAX_NAMES);
    return -1;
  }
  out->names = calloc(status > 0 ? (size_t)status : 1, sizeof *out->names);
  if (out->names == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (long i = 0; i < status; i++) {
    char *line;
    double t;
    const char *name;
    if (read_line(c, "LISTVAL", deadline, &line, err, errlen) != 0)
      goto fail;
    if (ms_collectd_parse_listval(line, &t, &name) != 0) {
      not_protocol(c, "LISTVAL", line, err, errlen);
      goto fail;
    }
    if ((out->names[out->n] = strdup(name)) == NULL) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
    out->n++;
  }
  qsort(out->names, out->n, sizeof *out->names, by_name);
  /* each name once, should an answer repeat one */
  size_t k = 0;
  for (size_t i = 0; i < out->n; i++) {
    if (k > 0 && strcmp(out->names[k - 1], out->names[i]) == 0)
      free(out->names[i]);
    else
      out->names[k++] = out->names[i];
  }
  out->n = k;
  return 0;
fail:
  ms_collectd_list_free(out);
  return -1;
}

/* ---- GETVAL -------------------------------------------------------------- */

int ms_collectd_getval(ms_collectd *c, const char *name,
                       ms_collectd_values *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  /* quoted, with " and \ escaped: collectd's option parser reads it back */
  char cmd[2 * MS_COLLECTD_MAX_LINE + 16];
  size_t w = (size_t)snprintf(cmd, sizeof cmd, "GETVAL \"");
  for (const char *p = name; *p && w + 4 < sizeof cmd; p++) {
    if (*p == '"' || *p == '\\')
      cmd[w++] = '\\';
    cmd[w++] = *p;
  }
  if (w + 3 >= sizeof cmd) {
    snprintf(err, errlen, "%s: identifier too long for GETVAL", c->path);
    return -1;
  }
  cmd[w++] = '"';
  cmd[w++] = '\n';
  cmd[w] = '\0';
  double deadline = now() + c->timeout;
  long status;
  const char *msg;
  if (command(c, cmd, "GETVAL", deadline, &status, &msg, err, errlen) != 0)
    return -1;
  if (status < 0) {
    snprintf(err, errlen, "%s", msg);
    return 0;
  }
  if (status > 1024) {
    snprintf(err, errlen, "%s: GETVAL announces %ld values", c->path, status);
    return -1;
  }
  out->n = (int)status;
  for (long i = 0; i < status; i++) {
    char *line, ds[64];
    double v;
    if (read_line(c, "GETVAL", deadline, &line, err, errlen) != 0)
      return -1;
    if (ms_collectd_parse_getval(line, ds, sizeof ds, &v) != 0) {
      not_protocol(c, "GETVAL", line, err, errlen);
      return -1;
    }
    if (i < MS_COLLECTD_MAX_DS) {
      memcpy(out->ds[i], ds, sizeof ds);
      out->value[i] = v;
    }
  }
  return 1;
}

/* ---- the protocol's lines ------------------------------------------------ */

int ms_collectd_parse_status(const char *line, long *status, const char **msg) {
  const char *p = line;
  if (*p == '-')
    p++;
  if (*p < '0' || *p > '9')
    return -1;
  errno = 0;
  char *end;
  long n = strtol(line, &end, 10);
  if (errno != 0 || (*end != ' ' && *end != '\0'))
    return -1;
  *status = n;
  *msg = *end == ' ' ? end + 1 : end;
  return 0;
}

int ms_collectd_parse_listval(const char *line, double *time,
                              const char **name) {
  if (*line < '0' || *line > '9')
    return -1;
  char *end;
  double t = strtod(line, &end);
  if (end == line || *end != ' ' || !isfinite(t) || end[1] == '\0')
    return -1;
  *time = t;
  *name = end + 1;
  return 0;
}

int ms_collectd_parse_getval(const char *line, char *ds, size_t dslen,
                             double *value) {
  const char *eq = strchr(line, '=');
  if (eq == NULL || eq == line || (size_t)(eq - line) >= dslen ||
      eq - line > 63)
    return -1;
  const char *v = eq + 1;
  while (*v == ' ')
    v++;
  char *end;
  double x;
  if (strncmp(v, "NaN", 3) == 0 || strncmp(v, "nan", 3) == 0) {
    x = NAN;
    end = (char *)v + 3;
  } else {
    /* an infinite rate is collectd's too: the caller decides */
    x = strtod(v, &end);
    if (end == v)
      return -1;
  }
  while (*end == ' ')
    end++;
  if (*end != '\0')
    return -1;
  memcpy(ds, line, (size_t)(eq - line));
  ds[eq - line] = '\0';
  *value = x;
  return 0;
}

/* ---- did you mean -------------------------------------------------------- */

#define LEV_MAX 1024

size_t ms_collectd_levenshtein(const char *a, const char *b) {
  size_t la = strnlen(a, LEV_MAX), lb = strnlen(b, LEV_MAX);
  size_t row[LEV_MAX + 1];
  /* row[j]: the distance of a[0, i) and b[0, j), one row i at a time */
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0]; /* the distance of a[0, i-1) and b[0, j-1) */
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

static bool has_glob(const char *s) { return strpbrk(s, "*?[") != NULL; }

bool ms_collectd_matches(const char *pattern, const char *name) {
  if (!has_glob(pattern))
    return strcmp(pattern, name) == 0;
  return fnmatch(pattern, name, FNM_PATHNAME) == 0;
}

/* The three parts of host/plugin[-i]/type[-i], copied into part[] (each
 * cut at LEV_MAX bytes); false when s has not exactly two slashes. */
static bool split3(const char *s, char part[3][LEV_MAX + 1]) {
  const char *p = s;
  for (int k = 0; k < 3; k++) {
    const char *slash = strchr(p, '/');
    if ((k < 2) != (slash != NULL))
      return false;
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n > LEV_MAX)
      n = LEV_MAX;
    memcpy(part[k], p, n);
    part[k][n] = '\0';
    p = slash ? slash + 1 : p;
  }
  return true;
}

/* Whether part p of a pattern accepts part q of a name. */
static bool part_matches(const char *p, const char *q) {
  return has_glob(p) ? fnmatch(p, q, 0) == 0 : strcmp(p, q) == 0;
}

/* ms_collectd_distance, with *mask the parts that differ (bit 0 the
 * host, 1 the plugin's, 2 the type's). */
static size_t distance_mask(const char *pattern, const char *name,
                            unsigned *mask) {
  char a[3][LEV_MAX + 1], b[3][LEV_MAX + 1];
  *mask = 0;
  if (!split3(pattern, a) || !split3(name, b))
    return SIZE_MAX;
  size_t d = 0;
  for (int k = 0; k < 3; k++) {
    if (part_matches(a[k], b[k]))
      continue;
    d += ms_collectd_levenshtein(a[k], b[k]);
    *mask |= 1u << k;
  }
  /* a glob part equal to the name's part as text ("[ab]" and "[ab]")
   * does not match it all the same */
  if (d == 0 && *mask != 0)
    d = 1;
  return d;
}

static int count_bits(unsigned mask) {
  return (int)(mask & 1) + (int)(mask >> 1 & 1) + (int)(mask >> 2 & 1);
}

size_t ms_collectd_distance(const char *pattern, const char *name, int *parts) {
  unsigned mask;
  size_t d = distance_mask(pattern, name, &mask);
  if (parts)
    *parts = count_bits(mask);
  return d;
}

size_t ms_collectd_suggest_limit(const char *pattern) {
  size_t n = 0;
  for (const char *p = pattern; *p; p++)
    n += *p != '/';
  return n / 5 > 2 ? n / 5 : 2;
}

#define SUGGEST_MAX 16

size_t ms_collectd_suggest(const char *pattern, char *const *names, size_t n,
                           size_t *best, size_t max) {
  size_t limit = ms_collectd_suggest_limit(pattern);
  size_t dist[SUGGEST_MAX];
  int nparts[SUGGEST_MAX];
  size_t kept = 0;
  if (max > SUGGEST_MAX)
    max = SUGGEST_MAX;
  if (max == 0)
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned mask;
    size_t d = distance_mask(pattern, names[i], &mask);
    int parts = count_bits(mask);
    if (d == 0)
      return 0;
    /* the same plugin and type on another host is near however the
     * hosts are spelt ("web1" copied from an example) */
    if (d > limit && mask != 1u)
      continue;
    /* insert by (distance, parts, name), keeping the first max */
    size_t at = kept;
    while (at > 0 &&
           (d < dist[at - 1] || (d == dist[at - 1] && parts < nparts[at - 1]) ||
            (d == dist[at - 1] && parts == nparts[at - 1] &&
             strcmp(names[i], names[best[at - 1]]) < 0)))
      at--;
    if (at >= max)
      continue;
    size_t last = kept < max ? kept : max - 1;
    for (size_t k = last; k > at; k--) {
      dist[k] = dist[k - 1];
      nparts[k] = nparts[k - 1];
      best[k] = best[k - 1];
    }
    dist[at] = d;
    nparts[at] = parts;
    best[at] = i;
    if (kept < max)
      kept++;
  }
  if (kept == 0)
    return 0;
  /* a clear winner alone: "atempts" suggests "attempts", not "errors" */
  size_t slack = dist[0] / 2 > 1 ? dist[0] / 2 : 1;
  while (kept > 1 && dist[kept - 1] > dist[0] + slack)
    kept--;
  return kept;
}

const char *ms_collectd_suggestion(const char *pattern, const char *name,
                                   char *out, size_t outlen) {
  char a[3][LEV_MAX + 1], b[3][LEV_MAX + 1];
  if (!has_glob(pattern) || !split3(pattern, a) || !split3(name, b)) {
    snprintf(out, outlen, "%s", name);
    return out;
  }
  snprintf(out, outlen, "%s/%s/%s", part_matches(a[0], b[0]) ? a[0] : b[0],
           part_matches(a[1], b[1]) ? a[1] : b[1],
           part_matches(a[2], b[2]) ? a[2] : b[2]);
  return out;
}
