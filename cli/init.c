/* SPDX-License-Identifier: MIT */
/*
 * metastable init: a service file drafted from the identifiers a running
 * collectd holds (LISTVAL through its unixsock plugin, cli/collectdsock.h).
 * The identifiers of the documented recipes are recognised, each group
 * becomes one service with its inputs filled in, and the parameters only
 * the user knows (servers, service time, timeout, retries) are left as
 * FILL_IN, which the service file loader refuses: `metastable check` says
 * where, until every one is filled in.
 *
 * Recognised (doc/metastable.md, init):
 *   statsd    HOST/statsd/derive-NAME_requests, _attempts, _retries,
 *             _errors, HOST/statsd/gauge-NAME_workers (doc/configuration.md)
 *   HAProxy   HOST/haproxy-BACKEND/derive-attempts, -retries,
 *             -failed_attempts (the stats socket read through collectd's
 *             exec plugin, as the storm lab does)
 *   php-fpm   HOST/phpfpm-POOL/gauge-total_processes, -listen_queue,
 *             -active_processes, derive-accepted_conn (its status page
 *             through curl_json), joined to the HAProxy backend in front
 * A group whose identifiers are on several hosts becomes globs over the
 * host ("*" /statsd/...), summed as a fleet.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectdsock.h"
#include "common.h"

static const char usage[] =
    "Usage: metastable init --collectd SOCKET [--output FILE] [--timeout T]\n"
    "\n"
    "Draft a service file from the identifiers a running collectd holds,\n"
    "read through its unixsock plugin.  Recognised: statsd counters\n"
    "NAME_requests, NAME_attempts, NAME_retries, NAME_errors and the gauge\n"
    "NAME_workers; an HAProxy backend's attempts, retries and\n"
    "failed_attempts; a php-fpm pool's status page.  Each group becomes a\n"
    "service with its inputs filled in.  The parameters only you know\n"
    "(servers, service time, timeout, retries) are left as FILL_IN:\n"
    "'metastable check' refuses the draft until each is filled in.\n";

enum { OPT_COLLECTD = MS_OPT_SHARED_END, OPT_OUTPUT, OPT_TIMEOUT };

static const ms_cli_option options[] = {
    {"--collectd", "SOCKET", OPT_COLLECTD,
     "the socket of collectd's unixsock plugin (its SocketFile); required"},
    {"--output", "FILE", OPT_OUTPUT,
     "write the draft to FILE, which must not exist yet (default: stdout)"},
    {"--timeout", "T", OPT_TIMEOUT,
     "the longest wait for collectd's answer, a duration in (0, 1h] "
     "(default 5s)"},
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

typedef struct {
  bool help;
  const char *collectd, *output;
  double timeout;
} init_args;

static int take_option(void *args, int c, const char *arg) {
  init_args *a = args;
  switch (c) {
  case OPT_COLLECTD:
    a->collectd = arg;
    return 0;
  case OPT_OUTPUT:
    a->output = arg;
    return 0;
  case OPT_TIMEOUT:
    return ms_cli_duration("--timeout", arg, 0, 3600, MS_RANGE_LO_OPEN,
                           &a->timeout);
  default:
    return -1;
  }
}

/* ---- recognising identifiers -------------------------------------------- */

/* The recipes of doc/recipes.md whose identifiers init knows. */
enum { R_STATSD, R_HAPROXY, R_NGINX, R_PHPFPM };
static const char *const recipe_words[] = {"statsd counters", "HAProxy backend",
                                           "nginx access log", "php-fpm pool"};

/* One rule: plugin (with an instance or not), type, and the type
 * instance: a suffix after the group's key (statsd) or the whole of it. */
typedef struct {
  int recipe;
  const char *plugin;
  const char *type;
  const char *tinst; /* statsd: the suffix of NAME; else the whole */
  ms_input_id input;
} rule;

/* A longer suffix before a shorter one that ends it ("_failed_attempts"
 * before "_attempts"): the first rule that matches wins.  gunicorn's
 * statsd names ("APP.gunicorn.requests") are its finished requests, not
 * the offered ones: left to doc/recipes.md. */
static const rule rules[] = {
    {R_STATSD, "statsd", "derive", "_failed_attempts", MS_INPUT_ERROR},
    {R_STATSD, "statsd", "derive", ".failed_attempts", MS_INPUT_ERROR},
    {R_STATSD, "statsd", "derive", "_requests", MS_INPUT_OFFERED},
    {R_STATSD, "statsd", "derive", "_attempts", MS_INPUT_ARRIVAL},
    {R_STATSD, "statsd", "derive", "_retries", MS_INPUT_RETRY},
    {R_STATSD, "statsd", "derive", "_errors", MS_INPUT_ERROR},
    {R_STATSD, "statsd", "gauge", "_workers", MS_INPUT_POOL},
    /* the Node.js client of doc/recipes.md: NAME.requests ... */
    {R_STATSD, "statsd", "derive", ".requests", MS_INPUT_OFFERED},
    {R_STATSD, "statsd", "derive", ".attempts", MS_INPUT_ARRIVAL},
    {R_STATSD, "statsd", "derive", ".retries", MS_INPUT_RETRY},
    {R_STATSD, "statsd", "derive", ".errors", MS_INPUT_ERROR},
    {R_HAPROXY, "haproxy", "derive", "attempts", MS_INPUT_ARRIVAL},
    {R_HAPROXY, "haproxy", "derive", "retries", MS_INPUT_RETRY},
    {R_HAPROXY, "haproxy", "derive", "failed_attempts", MS_INPUT_ERROR},
    /* nginx's access log through collectd's tail plugin, tail-INSTANCE */
    {R_NGINX, "tail", "derive", "requests", MS_INPUT_OFFERED},
    {R_NGINX, "tail", "derive", "attempts", MS_INPUT_ARRIVAL},
    {R_NGINX, "tail", "derive", "failed_attempts", MS_INPUT_ERROR},
    {R_PHPFPM, "phpfpm", "gauge", "total_processes", MS_INPUT_POOL},
    {R_PHPFPM, "phpfpm", "gauge", "listen_queue", MS_INPUT_QUEUE},
    {R_PHPFPM, "phpfpm", "gauge", "active_processes", MS_INPUT_BUSY},
    {R_PHPFPM, "phpfpm", "derive", "accepted_conn", MS_INPUT_COMPLETION},
};
#define N_RULES (sizeof rules / sizeof rules[0])

/* One identifier that a rule recognised. */
typedef struct {
  int recipe;
  char *key;        /* NAME, BACKEND or POOL */
  char *host;       /* malloc'd */
  const char *name; /* the identifier (the list's) */
  ms_input_id input;
} hit;

/* Whether the service file loader takes name as an identifier: no blank,
 * no quote, no glob character, at most 255 bytes. */
static bool usable_name(const char *name) {
  if (strlen(name) > 255)
    return false;
  for (const char *p = name; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == '"' || *p == '*' || *p == '?' ||
        *p == '[' || *p == '\\' || (unsigned char)*p == 0x7f)
      return false;
  return true;
}

/* The rule that recognises name, and the hit; false when none does. */
static bool recognise(const char *name, hit *h) {
  const char *s1 = strchr(name, '/');
  const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
  if (s2 == NULL || strchr(s2 + 1, '/') != NULL || !usable_name(name))
    return false;
  for (size_t r = 0; r < N_RULES; r++) {
    const rule *u = &rules[r];
    size_t pl = strlen(u->plugin), tl = strlen(u->type);
    const char *pi = s1 + 1 + pl, *ti = s2 + 1 + tl;
    bool statsd = u->recipe == R_STATSD;
    if (strncmp(s1 + 1, u->plugin, pl) != 0 ||
        strncmp(s2 + 1, u->type, tl) != 0 || *ti != '-')
      continue;
    /* statsd: no plugin instance; the others: one, the key */
    if (statsd ? pi != s2 : (*pi != '-' || pi + 1 >= s2))
      continue;
    const char *tinst = ti + 1;
    size_t n = strlen(tinst), sl = strlen(u->tinst);
    const char *key;
    size_t key_len;
    if (statsd) {
      if (n <= sl || strcmp(tinst + n - sl, u->tinst) != 0)
        continue;
      key = tinst;
      key_len = n - sl;
    } else {
      if (strcmp(tinst, u->tinst) != 0)
        continue;
      key = pi + 1;
      key_len = (size_t)(s2 - key);
    }
    h->recipe = u->recipe;
    h->input = u->input;
    h->name = name;
    h->key = strndup(key, key_len);
    h->host = strndup(name, (size_t)(s1 - name));
    return true;
  }
  return false;
}

static int by_group(const void *a, const void *b) {
  const hit *x = a, *y = b;
  if (x->recipe != y->recipe)
    return x->recipe - y->recipe;
  int c = strcmp(x->key, y->key);
  if (c == 0)
    c = strcmp(x->host, y->host);
  return c != 0 ? c : (int)x->input - (int)y->input;
}

/* ---- groups -------------------------------------------------------------- */

typedef struct {
  int recipe;
  const char *key;
  const char *host; /* the first host */
  size_t n_hosts;   /* hosts that have some identifier of the group */
  const char *ident[MS_INPUT_COUNT]; /* the first host's, or another's */
  bool service;                      /* enough for a verdict */
  int pool;      /* a php-fpm group joined to it (HAProxy), or -1 */
  bool joined;   /* a php-fpm group joined to a service */
  char name[64]; /* the service's name */
} group;

/* Groups of hits[0 .. n-1] (sorted by by_group) into out (n of them at
 * most); returns how many. */
static size_t make_groups(const hit *hits, size_t n, group *out) {
  size_t g = 0;
  for (size_t i = 0; i < n;) {
    group *gr = &out[g++];
    memset(gr, 0, sizeof *gr);
    gr->recipe = hits[i].recipe;
    gr->key = hits[i].key;
    gr->host = hits[i].host;
    gr->pool = -1;
    size_t j = i;
    for (; j < n && hits[j].recipe == gr->recipe &&
           strcmp(hits[j].key, gr->key) == 0;
         j++) {
      if (j == i || strcmp(hits[j].host, hits[j - 1].host) != 0)
        gr->n_hosts++;
      if (gr->ident[hits[j].input] == NULL)
        gr->ident[hits[j].input] = hits[j].name;
    }
    const char *const *id = gr->ident;
    gr->service =
        gr->recipe != R_PHPFPM &&
        (id[MS_INPUT_OFFERED] != NULL ||
         (id[MS_INPUT_ARRIVAL] != NULL &&
          (id[MS_INPUT_RETRY] != NULL || id[MS_INPUT_ERROR] != NULL)));
    i = j;
  }
  return g;
}

/* Join each php-fpm pool to the HAProxy backend in front of it: both on
 * one host, and either the only two there or the backend's name holds
 * the pool's ("be_shop" and "shop"). */
static void join_pools(group *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (g[i].recipe != R_HAPROXY || !g[i].service || g[i].n_hosts != 1)
      continue;
    size_t backends = 0, pools = 0;
    int only = -1, named = -1;
    for (size_t k = 0; k < n; k++) {
      if (g[k].n_hosts != 1 || strcmp(g[k].host, g[i].host) != 0)
        continue;
      backends += g[k].recipe == R_HAPROXY && g[k].service;
      if (g[k].recipe == R_PHPFPM && !g[k].joined) {
        pools++;
        only = (int)k;
        if (strstr(g[i].key, g[k].key) != NULL)
          named = (int)k;
      }
    }
    int pick = named >= 0 ? named : (backends == 1 && pools == 1 ? only : -1);
    if (pick >= 0) {
      g[i].pool = pick;
      g[pick].joined = true;
    }
  }
}

/* A service name the loader takes ([A-Za-z0-9_.-]{1,63}), unique among
 * g[0 .. i-1]. */
static void name_service(group *g, size_t i) {
  char base[48];
  size_t w = 0;
  for (const char *p = g[i].key; *p && w < sizeof base - 1; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    base[w++] = ok ? c : '_';
  }
  base[w] = '\0';
  if (w == 0)
    snprintf(base, sizeof base, "service");
  snprintf(g[i].name, sizeof g[i].name, "%s", base);
  for (int n = 2;; n++) {
    bool taken = false;
    for (size_t k = 0; k < i; k++)
      taken |= g[k].service && strcmp(g[k].name, g[i].name) == 0;
    if (!taken)
      return;
    snprintf(g[i].name, sizeof g[i].name, "%s-%d", base, n);
  }
}

/* ---- the draft ----------------------------------------------------------- */

/* An identifier as a YAML double-quoted scalar; a group on several hosts
 * as a glob over the host. */
static void write_source(FILE *f, const char *ident, bool fleet) {
  if (fleet)
    ident = strchr(ident, '/');
  fprintf(f, "\"%s%s\"", fleet ? "*" : "", ident);
}

/* What to fill in for each parameter, by recipe: where the value is
 * found in the software's own settings. */
typedef struct {
  const char *servers, *timeout, *retries, *pool;
} hints;

static const hints recipe_hints[] = {
    [R_STATSD] = {"workers serving it (threads, processes)",
                  "the client gives up on an attempt after, e.g. 1s",
                  "the client's retries per request, e.g. 2",
                  "the NAME_workers gauge"},
    [R_HAPROXY] = {"the backend's servers' maxconn, summed",
                   "HAProxy's timeout server, e.g. 1s",
                   "HAProxy's retries, e.g. 2", "php-fpm's total processes"},
    [R_NGINX] = {"the upstream's workers, summed (gunicorn: --workers x "
                 "servers)",
                 "nginx's proxy_read_timeout, e.g. 500ms",
                 "nginx's proxy_next_upstream_tries - 1, e.g. 1",
                 "the workers"},
};

static void write_service(FILE *f, const group *g, const group *all) {
  const group *pool = g->pool >= 0 ? &all[g->pool] : NULL;
  const hints *h = &recipe_hints[g->recipe];
  bool fleet = g->n_hosts > 1;
  fprintf(f, "\n  # %s %s", recipe_words[g->recipe], g->key);
  if (fleet)
    fprintf(f, " on %zu hosts: globs summed over them", g->n_hosts);
  else
    fprintf(f, " on %s", g->host);
  if (pool)
    fprintf(f, ", php-fpm pool %s behind it", pool->key);
  fprintf(f, "\n  - name: %s\n", g->name);
  fprintf(f, "    model: erlang          # or capacity, with capacity: C "
             "(req/s) in place\n"
             "                           # of servers, service_time and "
             "timeout\n");
  bool pool_input =
      g->ident[MS_INPUT_POOL] || (pool && pool->ident[MS_INPUT_POOL] != NULL);
  if (pool_input)
    fprintf(f, "    # servers: from pool_size below (%s)\n", h->pool);
  else
    fprintf(f, "    servers: FILL_IN       # %s\n", h->servers);
  fprintf(f,
          "    service_time: FILL_IN  # mean time a worker spends on a "
          "request, e.g. 100ms\n"
          "    timeout: FILL_IN       # %s\n"
          "    retries: FILL_IN       # %s\n"
          "    inputs:\n",
          h->timeout, h->retries);
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const char *ident = g->ident[i];
    bool from_pool = false;
    if (ident == NULL && pool != NULL && pool->ident[i] != NULL) {
      ident = pool->ident[i];
      from_pool = true;
    }
    if (ident == NULL)
      continue;
    fprintf(f, "      %s: ", ms_input_name((ms_input_id)i));
    write_source(f, ident, fleet && !from_pool);
    fprintf(f, "\n");
  }
}

/* Writes the draft; returns how many services it has. */
static size_t write_draft(FILE *f, const char *socket, size_t n_names, group *g,
                          size_t n) {
  size_t services = 0;
  for (size_t i = 0; i < n; i++)
    services += g[i].service;
  fprintf(f,
          "# A service file drafted by metastable init from the %zu "
          "identifiers\n"
          "# of the collectd at %s: %zu service%s recognised.\n"
          "# Fill in every FILL_IN (metastable check refuses the file until "
          "then),\n"
          "# review the inputs, then look them up in collectd:\n"
          "#   metastable check --collectd %s FILE\n"
          "# Every key is described in collectd-metastable(5).\n",
          n_names, socket, services, services == 1 ? "" : "s", socket);
  for (size_t i = 0; i < n; i++)
    if (!g[i].service && !g[i].joined)
      fprintf(f, "# Left out: %s %s on %s%s: %s.\n", recipe_words[g[i].recipe],
              g[i].key, g[i].n_hosts > 1 ? "several hosts, " : "", g[i].host,
              g[i].recipe == R_PHPFPM
                  ? "no request counts; add its inputs to the service in "
                    "front of it"
                  : "a service needs requests, or attempts with retries or "
                    "errors");
  fprintf(f, "services:\n");
  for (size_t i = 0; i < n; i++)
    if (g[i].service)
      write_service(f, &g[i], g);
  return services;
}

/* ---- the command --------------------------------------------------------- */

/* The names of the services drafted, "a, b, c", into buf. */
static void service_names(const group *g, size_t n, char *buf, size_t len) {
  size_t w = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && w < len; i++)
    if (g[i].service)
      w += (size_t)snprintf(buf + w, len - w, "%s%s", w ? ", " : "", g[i].name);
}

/* Write the draft to a->output (a new file) or stdout. */
static int emit(const init_args *a, size_t n_names, group *g, size_t n) {
  if (a->output == NULL) {
    write_draft(stdout, a->collectd, n_names, g, n);
    return ms_cli_finish_output(MS_EXIT_OK);
  }
  int fd = open(a->output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return ms_cli_fail("%s: %s%s", a->output, strerror(errno),
                       errno == EEXIST ? " (not overwritten: remove it, or "
                                         "give another --output)"
                                       : "");
  FILE *f = fdopen(fd, "w");
  if (f == NULL) {
    close(fd);
    return ms_cli_fail("%s: %s", a->output, strerror(errno));
  }
  size_t services = write_draft(f, a->collectd, n_names, g, n);
  if (fclose(f) != 0)
    return ms_cli_fail("%s: %s", a->output, strerror(errno));
  char names[512];
  service_names(g, n, names, sizeof names);
  printf("%s: %zu service%s drafted (%s) from %zu identifiers; fill in "
         "every FILL_IN, then: metastable check --collectd %s %s\n",
         a->output, services, services == 1 ? "" : "s", names, n_names,
         a->collectd, a->output);
  return ms_cli_finish_output(MS_EXIT_OK);
}

/* Recognise the identifiers of l into hits and groups, then write. */
static int draft(const init_args *a, const ms_collectd_list *l, hit *hits) {
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++)
    if (recognise(l->names[i], &hits[n])) {
      if (hits[n].key == NULL || hits[n].host == NULL) {
        free(hits[n].key);
        free(hits[n].host);
        return ms_cli_fail("out of memory");
      }
      n++;
    }
  qsort(hits, n, sizeof *hits, by_group);
  group *g = calloc(n ? n : 1, sizeof *g);
  if (g == NULL)
    return ms_cli_fail("out of memory");
  size_t ng = make_groups(hits, n, g);
  join_pools(g, ng);
  size_t services = 0;
  for (size_t i = 0; i < ng; i++)
    if (g[i].service) {
      name_service(g, i);
      services++;
    }
  int rc;
  if (services == 0)
    rc = ms_cli_fail(
        "%s: none of collectd's %zu identifiers is one init recognises "
        "(statsd derive-NAME_requests, _attempts, _retries, _errors; "
        "haproxy-BACKEND/derive-attempts, -retries, -failed_attempts): "
        "write the service file by hand (collectd-metastable(5))",
        a->collectd, l->n);
  else
    rc = emit(a, l->n, g, ng);
  free(g);
  for (size_t i = 0; i < n; i++) {
    free(hits[i].key);
    free(hits[i].host);
  }
  return rc;
}

int ms_cmd_init(int argc, char **argv) {
  init_args a = {0};
  int r =
      ms_cli_parse(argc, argv, &syntax, NULL, take_option, &a, &a.help, NULL);
  if (r != 0 || a.help)
    return r;
  if (a.collectd == NULL)
    return ms_cli_usage("give the socket of collectd's unixsock plugin: "
                        "--collectd SOCKET");
  ms_collectd c;
  ms_collectd_list l = {0};
  char err[1024];
  if (ms_collectd_open(&c, a.collectd, a.timeout, err, sizeof err) != 0)
    return ms_cli_fail("%s", err);
  if (ms_collectd_listval(&c, &l, err, sizeof err) != 0) {
    ms_collectd_close(&c);
    return ms_cli_fail("%s", err);
  }
  ms_collectd_close(&c);
  hit *hits = calloc(l.n ? l.n : 1, sizeof *hits);
  int rc = hits ? draft(&a, &l, hits) : ms_cli_fail("out of memory");
  free(hits);
  ms_collectd_list_free(&l);
  return rc;
}
