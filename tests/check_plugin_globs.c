/* SPDX-License-Identifier: MIT */
/*
 * The plugin's glob inputs (plugin/metastable.c and plugin/inputs.c, run
 * through the read callback against the collectd stand-in of
 * tests/collectd_stub.c): every service's summed attempt rate equals the
 * sum over exactly the identifiers fnmatch(3) accepts, for patterns matched
 * through the component index and for those matched against every name,
 * before and after collectd's identifier list changes.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectd.h"

#include "plugin.h"

#include "collectd_stub.h"

void module_register(void);

static int failures;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "check_plugin_globs: " __VA_ARGS__);                     \
      fputc('\n', stderr);                                                     \
      failures++;                                                              \
    }                                                                          \
  } while (0)

/* the identifiers in the cache, each with a distinct power-of-two-free
 * rate so that every subset sums differently */
static const char *const base_names[] = {
    "web1/statsd/derive-checkout_attempts",
    "web2/statsd/derive-checkout_attempts",
    "web10/statsd/derive-checkout_attempts",
    "db1/statsd/derive-checkout_attempts",
    "web1/statsd/derive-checkout_attempts2",
    "web1/statsd-eu/derive-checkout_attempts",
    "web1/statsd/derive-search_attempts",
    "web2/statsd/derive-search_attempts",
    "h1/pool-a/gauge-size",
    "h1/pool-b/gauge-size",
    "h2/pool-a/gauge-size",
    "h1/pool-a/gauge-sizes",
    "a/b/c/d",
    "a/b",
    "x.y/cpu-0/percent-idle",
    "x.y/cpu-1/percent-idle",
    "x.z/cpu-0/percent-user",
};
#define N_BASE (sizeof base_names / sizeof base_names[0])

static const char *const patterns[] = {
    "web*/statsd/derive-checkout_attempts",  /* anchor: type */
    "web?/statsd/derive-checkout_attempts",  /* anchor: type */
    "*/statsd/derive-*_attempts",            /* anchor: plugin */
    "h1/*/gauge-size",                       /* anchor: type */
    "h1/pool-?/*",                           /* anchor: host */
    "*/cpu-*/percent-idle",                  /* anchor: type */
    "x.*/cpu-*/*",                           /* no anchor */
    "[wd]*/statsd/derive-checkout_attempts", /* brackets: every name */
    "web1/statsd/derive-checkout_attempts",  /* a literal (identifier) */
    "*/*/*",                                 /* everything with 3 parts */
};
#define N_PAT (sizeof patterns / sizeof patterns[0])

static double rate_of(size_t i) { return 1.0 + 0.001 * (double)(i * i + 7); }

/* expected sums, the plugin's observed_effective_load per service */
static double got[N_PAT];
static int got_n[N_PAT];

static void on_value(const value_list_t *vl) {
  if (strcmp(vl->type, "observed_effective_load") != 0)
    return;
  int k = atoi(vl->plugin_instance + 1); /* "g<k>" */
  if (k >= 0 && k < (int)N_PAT) {
    got[k] = vl->values[0].gauge;
    got_n[k]++;
  }
}

static void check_cycle(const char *const *names, size_t n, const char *when) {
  memset(got, 0, sizeof got);
  memset(got_n, 0, sizeof got_n);
  CHECK(stub_call_read() == 0, "read callback failed");
  for (size_t k = 0; k < N_PAT; k++) {
    double want = 0;
    int matches = 0;
    for (size_t i = 0; i < n; i++)
      if (fnmatch(patterns[k], names[i], FNM_PATHNAME) == 0) {
        want += rate_of(i);
        matches++;
      }
    if (matches == 0) {
      CHECK(got_n[k] == 0, "%s: '%s' matches nothing but was reported", when,
            patterns[k]);
      continue;
    }
    CHECK(got_n[k] == 1, "%s: '%s' reported %d times", when, patterns[k],
          got_n[k]);
    CHECK(fabs(got[k] - want) <= 1e-12 * want,
          "%s: '%s' sums %.17g, fnmatch over every name gives %.17g (%d "
          "matches)",
          when, patterns[k], got[k], want, matches);
  }
}

int main(void) {
  char path[] = "/tmp/ms-check-globs-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return 2;
  FILE *y = fdopen(fd, "w");
  fprintf(y, "services:\n");
  for (size_t k = 0; k < N_PAT; k++)
    fprintf(y,
            "  - name: g%zu\n    model: erlang\n    servers: 100\n"
            "    service_time: 100ms\n    timeout: 1s\n    retries: 2\n"
            "    inputs:\n      offered_rate: 1\n"
            "      arrival_rate: \"%s\"\n",
            k, patterns[k]);
  fclose(y);

  const char *names[N_BASE + 2];
  size_t n = N_BASE;
  for (size_t i = 0; i < N_BASE; i++) {
    names[i] = base_names[i];
    stub_cache_set(names[i], rate_of(i));
  }
  stub_cache_commit();
  stub_on_value = on_value;
  module_register();
  if (stub_call_config(path) != 0 || stub_call_init() != 0) {
    fprintf(stderr, "check_plugin_globs: the plugin did not start: %s\n",
            stub_last_warning());
    unlink(path);
    return 1;
  }
  /* no Interval option: the read callback runs at the plugin's interval
   * in collectd (the stand-in's: 10 s) */
  CHECK(stub_read_interval() == TIME_T_TO_CDTIME_T_STATIC(10),
        "read callback registered every %.3f s, not collectd's 10 s",
        CDTIME_T_TO_DOUBLE(stub_read_interval()));
  check_cycle(names, n, "first cycle");
  check_cycle(names, n, "unchanged list");
  /* a host appears: every glob is matched again */
  names[n] = "web3/statsd/derive-checkout_attempts";
  stub_cache_set(names[n], rate_of(n));
  n++;
  stub_cache_commit();
  check_cycle(names, n, "after web3 appeared");
  /* a host goes away */
  stub_cache_remove("web2/statsd/derive-checkout_attempts");
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], "web2/statsd/derive-checkout_attempts") == 0) {
      /* keep indices (and rates) of the others: blank this one */
      names[i] = "";
    }
  check_cycle(names, n, "after web2 went away");

  stub_free_read_user_data();
  stub_call_shutdown();
  stub_cache_clear();
  unlink(path);
  if (failures == 0)
    printf("check_plugin_globs: %zu patterns agree with fnmatch over every "
           "identifier, across identifier list changes\n",
           N_PAT);
  return failures != 0;
}
