/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the collectd 5.12 daemon functions the metastable plugin
 * calls (collectd_stub.h says what each does and how it compares with the
 * daemon).  Compiled against collectd's own headers, so every signature is
 * checked against the real declarations.
 */
#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"
#include "utils_cache.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>

#include "collectd_stub.h"

/* ---- failure injection ----------------------------------------------- */

/* The calls set to fail (stub_fail_call): a name, the call of it that
 * fails (1: the next; 0: every one), the calls counted and failed. */
#define STUB_MAX_FAILS 16
typedef struct {
  char name[48];
  unsigned nth, calls;
  size_t failed;
} stub_fail;
static stub_fail fails[STUB_MAX_FAILS];
static size_t n_fails;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

void stub_fail_call(const char *name, unsigned nth) {
  pthread_mutex_lock(&fail_lock);
  size_t i = 0;
  while (i < n_fails && strcmp(fails[i].name, name) != 0)
    i++;
  if (i == n_fails && n_fails < STUB_MAX_FAILS)
    n_fails++;
  if (i < n_fails) {
    snprintf(fails[i].name, sizeof fails[i].name, "%s", name);
    fails[i].nth = nth;
    fails[i].calls = 0;
    fails[i].failed = 0;
  }
  pthread_mutex_unlock(&fail_lock);
}

void stub_fail_clear(void) {
  pthread_mutex_lock(&fail_lock);
  n_fails = 0;
  pthread_mutex_unlock(&fail_lock);
}

bool stub_fail_now(const char *name) {
  bool fail = false;
  pthread_mutex_lock(&fail_lock);
  for (size_t i = 0; i < n_fails; i++)
    if (strcmp(fails[i].name, name) == 0) {
      fails[i].calls++;
      fail = fails[i].nth == 0 || fails[i].calls == fails[i].nth;
      fails[i].failed += fail;
    }
  pthread_mutex_unlock(&fail_lock);
  return fail;
}

size_t stub_fail_count(const char *name) {
  size_t n = 0;
  pthread_mutex_lock(&fail_lock);
  for (size_t i = 0; i < n_fails; i++)
    if (strcmp(fails[i].name, name) == 0)
      n = fails[i].failed;
  pthread_mutex_unlock(&fail_lock);
  return n;
}

/* collectd's free_userdata (src/daemon/plugin.c): what 5.12 does with the
 * user data of a registration that fails. */
static void free_userdata(user_data_t const *ud) {
  if (ud != NULL && ud->data != NULL && ud->free_func != NULL)
    ud->free_func(ud->data);
}

static char stub_hostname[] = "benchhost";
char *hostname_g = stub_hostname;

/* ---- time, strings, configuration ------------------------------------- */

/* The clock: the real one, or the test's (stub_clock_set), which moves
 * only when the test moves it, or by a step per dispatched value. */
static cdtime_t fake_now, fake_per_value;
/* the read thread's CPU time under the test's clock: it moves by the step
 * per dispatched value, and the clock by the step over cpu_share (the
 * share of the wall time a busy host gives the thread: stub_cpu_share) */
static cdtime_t fake_cpu;
static double cpu_share = 1.0;
static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;

/* The plugin's read-thread CPU clock (declared in plugin/state.h, a weak
 * definition in plugin/metastable.c that this one replaces): the real one
 * (CLOCK_THREAD_CPUTIME_ID) with the real clock, the test's otherwise. */
cdtime_t ms_read_thread_cpu(void);
cdtime_t ms_read_thread_cpu(void) {
  pthread_mutex_lock(&clock_lock);
  cdtime_t now = fake_now, cpu = fake_cpu;
  pthread_mutex_unlock(&clock_lock);
  if (now != 0)
    return cpu;
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return TIMESPEC_TO_CDTIME_T(&ts);
}

void stub_cpu_share(double share) {
  pthread_mutex_lock(&clock_lock);
  cpu_share = share;
  pthread_mutex_unlock(&clock_lock);
}

cdtime_t cdtime(void) {
  pthread_mutex_lock(&clock_lock);
  cdtime_t now = fake_now;
  pthread_mutex_unlock(&clock_lock);
  if (now != 0)
    return now;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return TIMESPEC_TO_CDTIME_T(&ts);
}

void stub_clock_set(uint64_t now) {
  pthread_mutex_lock(&clock_lock);
  fake_now = now;
  if (now == 0) {
    fake_per_value = 0;
    cpu_share = 1.0;
  }
  pthread_mutex_unlock(&clock_lock);
}

void stub_clock_per_value(uint64_t step) {
  pthread_mutex_lock(&clock_lock);
  fake_per_value = step;
  pthread_mutex_unlock(&clock_lock);
}

static cdtime_t read_interval;

/* The daemon's Interval: 10 s, as in collectd's default configuration;
 * once the read callback is registered, its interval (the daemon: the
 * calling plugin's interval, else its Interval). */
cdtime_t plugin_get_interval(void) {
  return read_interval != 0 ? read_interval : TIME_T_TO_CDTIME_T_STATIC(10);
}

/* collectd's sstrncpy: strncpy (which zero-fills the rest of dest, as the
 * daemon's does), always terminated. */
char *sstrncpy(char *dest, const char *src, size_t n) {
  if (n == 0)
    return dest;
  strncpy(dest, src, n);
  dest[n - 1] = '\0';
  return dest;
}

/* collectd's sstrerror: the message of errnum, into buf. */
char *sstrerror(int errnum, char *buf, size_t buflen) {
  snprintf(buf, buflen, "%s", strerror(errnum));
  return buf;
}

/* The daemon's global options: BaseDir only (the daemon's default), for a
 * relative ServiceFile. */

const char *global_option_get(const char *option) {
  return strcasecmp(option, "BaseDir") == 0 ? "/var/lib/collectd" : NULL;
}

int cf_util_get_cdtime(const oconfig_item_t *ci, cdtime_t *ret_value) {
  if (ci->values_num != 1 || ci->values[0].type != OCONFIG_TYPE_NUMBER ||
      !(ci->values[0].value.number >= 0))
    return -1;
  *ret_value = DOUBLE_TO_CDTIME_T_STATIC(ci->values[0].value.number);
  return 0;
}

/* 5.12: -1 for a value that is not one string, or when strdup fails
 * (*ret_string unchanged). */
int cf_util_get_string(const oconfig_item_t *ci, char **ret_string) {
  if (ci->values_num != 1 || ci->values[0].type != OCONFIG_TYPE_STRING)
    return -1;
  char *s = stub_fail_now("cf_util_get_string")
                ? NULL
                : strdup(ci->values[0].value.string);
  if (s == NULL)
    return -1;
  free(*ret_string);
  *ret_string = s;
  return 0;
}

/* ---- logging ------------------------------------------------------------ */

static pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;
static stub_counters counters;
static char last_warning[1024];
static char last_message[1024];

void (*stub_on_log)(int level, const char *msg);

void plugin_log(int level, const char *format, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(msg, sizeof msg, format, ap);
  va_end(ap);
  if (stub_on_log != NULL)
    stub_on_log(level, msg);
  pthread_mutex_lock(&stub_lock);
  if (level <= LOG_ERR)
    counters.log_error++;
  else if (level == LOG_WARNING)
    counters.log_warning++;
  else
    counters.log_info++;
  if (level <= LOG_WARNING)
    memcpy(last_warning, msg, sizeof msg);
  memcpy(last_message, msg, sizeof msg);
  pthread_mutex_unlock(&stub_lock);
}

const char *stub_last_warning(void) { return last_warning; }
const char *stub_last_message(void) { return last_message; }

/* ---- registration ---------------------------------------------------------
 */

static int (*config_cb)(oconfig_item_t *);
static plugin_init_cb init_cb;
static plugin_shutdown_cb shutdown_cb;
static plugin_read_cb read_cb;
static user_data_t read_ud;

/* Each fails as collectd 5.12 fails it (src/daemon/plugin.c,
 * configfile.c): plugin_register_complex_config with -1 (cf_register_
 * complex: malloc failed); plugin_register_init and _shutdown with ENOMEM
 * (create_register_callback: calloc failed; no user data);
 * plugin_register_complex_read with ENOMEM (calloc failed), or EINVAL when
 * a read callback of that name is registered already (plugin_insert_read),
 * and on every failure it frees the user data itself (free_userdata). */
int plugin_register_complex_config(const char *type,
                                   int (*callback)(oconfig_item_t *)) {
  (void)type;
  if (stub_fail_now("plugin_register_complex_config"))
    return -1;
  config_cb = callback;
  return 0;
}

int plugin_register_init(const char *name, plugin_init_cb callback) {
  (void)name;
  if (stub_fail_now("plugin_register_init"))
    return ENOMEM;
  init_cb = callback;
  return 0;
}

int plugin_register_shutdown(const char *name, plugin_shutdown_cb callback) {
  (void)name;
  if (stub_fail_now("plugin_register_shutdown"))
    return ENOMEM;
  shutdown_cb = callback;
  return 0;
}

static void **read_data_watch;

void stub_watch_read_data(void **where) { read_data_watch = where; }

int plugin_register_complex_read(const char *group, const char *name,
                                 plugin_read_cb callback, cdtime_t interval,
                                 user_data_t const *user_data) {
  (void)group;
  (void)name;
  if (read_data_watch != NULL)
    *read_data_watch = user_data->data;
  int status = stub_fail_now("plugin_register_complex_read") ? ENOMEM
               : read_cb != NULL                             ? EINVAL
                                                             : 0;
  if (status != 0) {
    free_userdata(user_data);
    return status;
  }
  read_cb = callback;
  read_ud = *user_data;
  read_interval = interval;
  return 0;
}

uint64_t stub_read_interval(void) { return read_interval; }

int stub_call_config(const char *service_file) {
  return stub_call_config_options(service_file, NULL);
}

/* oconfig's strings are char *: the options are copied. */
int stub_call_config_options(const char *service_file,
                             const char *const *options) {
  enum { MAX_OPTIONS = 16 };
  char keys[MAX_OPTIONS][64], texts[MAX_OPTIONS][256];
  oconfig_value_t values[MAX_OPTIONS];
  oconfig_item_t children[MAX_OPTIONS];
  char key[] = "ServiceFile", top_key[] = "Plugin";
  values[0] = (oconfig_value_t){.value.string = (char *)service_file,
                                .type = OCONFIG_TYPE_STRING};
  children[0] = (oconfig_item_t){.key = key, .values = values, .values_num = 1};
  int n = 1;
  for (; options != NULL && options[2 * (n - 1)] != NULL && n < MAX_OPTIONS;
       n++) {
    snprintf(keys[n], sizeof keys[n], "%s", options[2 * (n - 1)]);
    snprintf(texts[n], sizeof texts[n], "%s", options[2 * (n - 1) + 1]);
    char *end;
    double number = strtod(texts[n], &end);
    if (end != texts[n] && *end == '\0')
      values[n] = (oconfig_value_t){.value.number = number,
                                    .type = OCONFIG_TYPE_NUMBER};
    else
      values[n] = (oconfig_value_t){.value.string = texts[n],
                                    .type = OCONFIG_TYPE_STRING};
    children[n] =
        (oconfig_item_t){.key = keys[n], .values = &values[n], .values_num = 1};
  }
  oconfig_item_t top = {
      .key = top_key, .children = children, .children_num = n};
  return config_cb != NULL ? config_cb(&top) : -1;
}

/* ---- collectd's configuration scanner, for one line ------------------- */

/* The length of the longest match at s of each of the token classes of
 * collectd 5.12's src/liboconfig/scanner.l that a value can be: FLOAT
 * [+-]?[0-9]*\.[0-9]+([eE][+-][0-9]+)?, HEX 0[xX][0-9a-fA-F]+, OCT
 * 0[0-7]+, DEC [+-]?[0-9]+ (together NUMBER), UNQUOTED [0-9A-Za-z_]+;
 * 0 for no match. */
static size_t scan_digits(const char *s, int (*is)(int)) {
  size_t n = 0;
  while (s[n] != '\0' && is((unsigned char)s[n]))
    n++;
  return n;
}

static int is_word(int c) { return isalnum(c) || c == '_'; }
static int is_oct(int c) { return c >= '0' && c <= '7'; }

static size_t scan_number(const char *s) {
  size_t sign = (s[0] == '+' || s[0] == '-') ? 1 : 0, best = 0;
  size_t dec = scan_digits(s + sign, isdigit);
  if (dec > 0)
    best = sign + dec;
  if (s[sign + dec] == '.') {
    size_t frac = scan_digits(s + sign + dec + 1, isdigit);
    if (frac > 0) {
      size_t n = sign + dec + 1 + frac;
      if ((s[n] == 'e' || s[n] == 'E') &&
          (s[n + 1] == '+' || s[n + 1] == '-')) {
        size_t e = scan_digits(s + n + 2, isdigit);
        if (e > 0)
          n += 2 + e;
      }
      best = n > best ? n : best;
    }
  }
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    size_t h = scan_digits(s + 2, isxdigit);
    if (h > 0 && 2 + h > best)
      best = 2 + h;
  }
  if (s[0] == '0') {
    size_t o = scan_digits(s + 1, is_oct);
    if (o > 0 && 1 + o > best)
      best = 1 + o;
  }
  return best;
}

/* One option line as collectd's scanner and parser make it: the key, then
 * values separated by blanks; "..." a string (a backslash keeps the next
 * byte); else the longest match of NUMBER (strtod of its text, as the
 * scanner does) or of an unquoted string, NUMBER on a tie; true, yes, on,
 * false, no, off booleans when they are the whole match; any other byte
 * dropped, as flex's default rule does (it echoes it).  So "1.5m" is the
 * number 1.5 and the string "m", and "20%" the number 20. */
#define STUB_MAX_VALUES 8
typedef struct {
  char key[64];
  char text[STUB_MAX_VALUES][256];
  oconfig_value_t values[STUB_MAX_VALUES];
  int n;
} stub_line;

static void scan_line(const char *line, stub_line *out) {
  memset(out, 0, sizeof *out);
  size_t k = scan_digits(line, is_word);
  snprintf(out->key, sizeof out->key, "%.*s", (int)k, line);
  const char *p = line + k;
  while (*p != '\0' && out->n < STUB_MAX_VALUES) {
    if (*p == ' ' || *p == '\t') {
      p++;
      continue;
    }
    char *t = out->text[out->n];
    oconfig_value_t *v = &out->values[out->n];
    if (*p == '"') {
      size_t j = 0;
      for (p++; *p != '\0' && *p != '"'; p++) {
        if (*p == '\\' && p[1] != '\0')
          p++;
        if (j + 1 < sizeof out->text[0])
          t[j++] = *p;
      }
      t[j] = '\0';
      p += *p == '"';
      *v = (oconfig_value_t){.value.string = t, .type = OCONFIG_TYPE_STRING};
      out->n++;
      continue;
    }
    size_t num = scan_number(p), word = scan_digits(p, is_word);
    if (num == 0 && word == 0) {
      p++; /* flex's default rule */
      continue;
    }
    size_t len = num >= word ? num : word;
    snprintf(t, sizeof out->text[0], "%.*s", (int)len, p);
    p += len;
    if (num >= word) {
      *v = (oconfig_value_t){.value.number = strtod(t, NULL),
                             .type = OCONFIG_TYPE_NUMBER};
    } else if (strcmp(t, "true") == 0 || strcmp(t, "yes") == 0 ||
               strcmp(t, "on") == 0 || strcmp(t, "false") == 0 ||
               strcmp(t, "no") == 0 || strcmp(t, "off") == 0) {
      *v = (oconfig_value_t){.value.boolean =
                                 t[0] == 't' || t[0] == 'y' || t[1] == 'n',
                             .type = OCONFIG_TYPE_BOOLEAN};
    } else {
      *v = (oconfig_value_t){.value.string = t, .type = OCONFIG_TYPE_STRING};
    }
    out->n++;
  }
}

int stub_call_config_lines(const char *const *lines) {
  enum { MAX_LINES = 16 };
  static stub_line scanned[MAX_LINES];
  oconfig_item_t children[MAX_LINES];
  char top_key[] = "Plugin";
  int n = 0;
  for (; lines != NULL && lines[n] != NULL && n < MAX_LINES; n++) {
    scan_line(lines[n], &scanned[n]);
    children[n] = (oconfig_item_t){.key = scanned[n].key,
                                   .values = scanned[n].values,
                                   .values_num = scanned[n].n};
  }
  oconfig_item_t top = {
      .key = top_key, .children = children, .children_num = n};
  return config_cb != NULL ? config_cb(&top) : -1;
}

int stub_call_init(void) { return init_cb != NULL ? init_cb() : -1; }
int stub_call_read(void) { return read_cb != NULL ? read_cb(&read_ud) : -1; }
int stub_call_shutdown(void) { return shutdown_cb != NULL ? shutdown_cb() : 0; }

void *stub_read_user_data(void) { return read_ud.data; }

/* As collectd 5.12: a thread that runs start_routine (the daemon also sets
 * its plugin context and names it after name; neither is checked here). */
int plugin_thread_create(pthread_t *thread, void *(*start_routine)(void *),
                         void *arg, char const *name) {
  (void)name;
  /* 5.12: ENOMEM when its record cannot be allocated, else
   * pthread_create's error; arg is never freed */
  if (stub_fail_now("plugin_thread_create"))
    return ENOMEM;
  return pthread_create(thread, NULL, start_routine, arg);
}

void stub_free_read_user_data(void) {
  if (read_ud.free_func != NULL)
    read_ud.free_func(read_ud.data);
  read_ud = (user_data_t){0};
  read_cb = NULL;
  read_interval = 0;
}

/* ---- the value cache ------------------------------------------------------
 */

typedef struct {
  char *name;
  double rate;
  uint64_t raw;       /* COUNTER: the raw value */
  unsigned n_sources; /* data sources, each at rate */
  bool counter;       /* raw is a COUNTER's */
  bool own_gauge;     /* a GAUGE whose raw value is gauge, not rate */
  double gauge;
} cache_entry;

static cache_entry *cache;
static size_t cache_n, cache_cap, cache_sorted;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const cache_entry *)a)->name, ((const cache_entry *)b)->name);
}

static cache_entry *cache_find(const char *name) {
  cache_entry key = {.name = (char *)name};
  cache_entry *e = cache_sorted == 0 ? NULL
                                     : bsearch(&key, cache, cache_sorted,
                                               sizeof *cache, cmp_entry);
  if (e != NULL)
    return e;
  for (size_t i = cache_sorted; i < cache_n; i++)
    if (strcmp(cache[i].name, name) == 0)
      return &cache[i];
  return NULL;
}

static void cache_set(const char *name, double rate, uint64_t raw,
                      unsigned n_sources, bool counter) {
  pthread_mutex_lock(&cache_lock);
  cache_entry *e = cache_find(name);
  if (e == NULL) {
    if (cache_n == cache_cap) {
      cache_cap = cache_cap ? 2 * cache_cap : 1024;
      cache = realloc(cache, cache_cap * sizeof *cache);
      if (cache == NULL)
        abort();
    }
    e = &cache[cache_n++];
    e->name = strdup(name);
  }
  e->rate = rate;
  e->raw = raw;
  e->n_sources = n_sources;
  e->counter = counter;
  e->own_gauge = false;
  pthread_mutex_unlock(&cache_lock);
}

void stub_cache_set_gauge(const char *name, double rate, double raw) {
  cache_set(name, rate, 0, 1, false);
  pthread_mutex_lock(&cache_lock);
  cache_entry *e = cache_find(name);
  e->own_gauge = true;
  e->gauge = raw;
  pthread_mutex_unlock(&cache_lock);
}

void stub_cache_set(const char *name, double rate) {
  cache_set(name, rate, 0, 1, false);
}

void stub_cache_set_sources(const char *name, double rate, size_t n_sources) {
  cache_set(name, rate, 0, (unsigned)n_sources, false);
}

void stub_cache_set_counter(const char *name, double rate, uint64_t raw) {
  cache_set(name, rate, raw, 1, true);
}

void stub_cache_commit(void) {
  pthread_mutex_lock(&cache_lock);
  qsort(cache, cache_n, sizeof *cache, cmp_entry);
  cache_sorted = cache_n;
  pthread_mutex_unlock(&cache_lock);
}

void stub_cache_remove(const char *name) {
  pthread_mutex_lock(&cache_lock);
  cache_entry *e = cache_find(name);
  if (e != NULL) {
    free(e->name);
    size_t i = (size_t)(e - cache);
    memmove(e, e + 1, (cache_n - i - 1) * sizeof *cache);
    cache_n--;
    if (i < cache_sorted)
      cache_sorted--;
  }
  pthread_mutex_unlock(&cache_lock);
}

size_t stub_cache_size(void) { return cache_n; }

void stub_cache_clear(void) {
  for (size_t i = 0; i < cache_n; i++)
    free(cache[i].name);
  free(cache);
  cache = NULL;
  cache_n = cache_cap = cache_sorted = 0;
}

/* uc_get_rate_by_name and uc_get_value_by_name fail as 5.12's do when
 * malloc fails (or the value is missing): -1, the outputs untouched. */
int uc_get_rate_by_name(const char *name, gauge_t **ret_values,
                        size_t *ret_values_num) {
  pthread_mutex_lock(&cache_lock);
  counters.lookups++;
  cache_entry *e =
      stub_fail_now("uc_get_rate_by_name") ? NULL : cache_find(name);
  int status = -1;
  if (e != NULL) {
    *ret_values = malloc(e->n_sources * sizeof **ret_values);
    if (*ret_values != NULL) {
      for (unsigned i = 0; i < e->n_sources; i++)
        (*ret_values)[i] = e->rate;
      *ret_values_num = e->n_sources;
      status = 0;
    }
  }
  pthread_mutex_unlock(&cache_lock);
  return status;
}

/* Raw values: a COUNTER's raw counter; a gauge's value is its rate. */
int uc_get_value_by_name(const char *name, value_t **ret_values,
                         size_t *ret_values_num) {
  pthread_mutex_lock(&cache_lock);
  counters.lookups++;
  cache_entry *e =
      stub_fail_now("uc_get_value_by_name") ? NULL : cache_find(name);
  int status = -1;
  if (e != NULL) {
    *ret_values = malloc(e->n_sources * sizeof **ret_values);
    if (*ret_values != NULL) {
      for (unsigned i = 0; i < e->n_sources; i++) {
        if (e->counter)
          (*ret_values)[i].counter = e->raw;
        else
          (*ret_values)[i].gauge = e->own_gauge ? e->gauge : e->rate;
      }
      *ret_values_num = e->n_sources;
      status = 0;
    }
  }
  pthread_mutex_unlock(&cache_lock);
  return status;
}

/* Every type of the stand-in has one GAUGE data source, but "counter" (one
 * COUNTER, as in collectd's types.db). */
const data_set_t *plugin_get_ds(const char *name) {
  if (stub_fail_now("plugin_get_ds"))
    return NULL; /* 5.12: no such type in types.db */
  static data_source_t gauge_source = {"value", DS_TYPE_GAUGE, NAN, NAN};
  static data_set_t gauge = {"gauge", 1, &gauge_source};
  static data_source_t counter_source = {"value", DS_TYPE_COUNTER, 0, NAN};
  static data_set_t counter = {"counter", 1, &counter_source};
  static data_source_t derive_source = {"value", DS_TYPE_DERIVE, 0, NAN};
  static data_set_t derive = {"derive", 1, &derive_source};
  static data_source_t percent_source = {"value", DS_TYPE_GAUGE, 0, 100.1};
  static data_set_t percent = {"percent", 1, &percent_source};
  if (strcmp(name, "derive") == 0)
    return &derive;
  if (strcmp(name, "percent") == 0)
    return &percent;
  return strcmp(name, "counter") == 0 ? &counter : &gauge;
}

/* As 5.12's: an empty cache returns 0 and leaves the outputs untouched; a
 * failure (calloc) returns ENOMEM, the outputs untouched. */
int uc_get_names(char ***ret_names, cdtime_t **ret_times, size_t *ret_number) {
  if (stub_fail_now("uc_get_names"))
    return ENOMEM;
  pthread_mutex_lock(&cache_lock);
  size_t n = cache_n;
  if (n == 0) {
    pthread_mutex_unlock(&cache_lock);
    return 0;
  }
  char **names = calloc(n, sizeof *names);
  cdtime_t *times = calloc(n, sizeof *times);
  if (names == NULL || times == NULL) {
    free(names);
    free(times);
    pthread_mutex_unlock(&cache_lock);
    return ENOMEM;
  }
  cdtime_t now = cdtime();
  for (size_t i = 0; i < n; i++) {
    names[i] = strdup(cache[i].name);
    times[i] = now;
    if (names[i] == NULL) { /* 5.12: -1, what was copied freed */
      pthread_mutex_unlock(&cache_lock);
      for (size_t j = 0; j < i; j++)
        free(names[j]);
      free(names);
      free(times);
      return -1;
    }
  }
  pthread_mutex_unlock(&cache_lock);
  *ret_names = names;
  *ret_times = times;
  *ret_number = n;
  return 0;
}

/* ---- dispatch -------------------------------------------------------------
 */

/* The daemon's write queue: a value list is cloned (value_list_t and its
 * values, as plugin_value_list_clone does) and appended under a mutex; the
 * write threads take it from there.  Here the clone is checked and freed at
 * once, as if a write thread had been waiting: the heap then behaves as in
 * a daemon whose write threads keep up. */
void (*stub_on_value)(const struct value_list_s *vl);

/* ---- the write path ------------------------------------------------- */

/* The write callback (the plugin registers one, its write probe's), and
 * the queue of value lists while the test holds the write path. */
static plugin_write_cb write_cb;
static user_data_t write_ud;
static bool write_hold;
static value_list_t **write_queue;
static size_t write_head, write_len, write_cap;

/* 5.12's plugin_register_write fails with ENOMEM when its calloc does;
 * registering a name again replaces the callback (5.12 warns and
 * overwrites). */
int plugin_register_write(const char *name, plugin_write_cb callback,
                          user_data_t const *user_data) {
  (void)name;
  if (stub_fail_now("plugin_register_write"))
    return ENOMEM;
  write_cb = callback;
  write_ud = user_data != NULL ? *user_data : (user_data_t){0};
  return 0;
}

int plugin_unregister_write(const char *name) {
  (void)name;
  if (write_cb == NULL)
    return -1;
  write_cb = NULL;
  return 0;
}

/* What a write thread does with one value list: the write callback, at the
 * clock's time then; the clone freed. */
static void write_one(value_list_t *q) {
  if (write_cb != NULL)
    write_cb(plugin_get_ds(q->type), q, &write_ud);
  free(q->values);
  free(q);
}

void stub_write_hold(bool hold) { write_hold = hold; }

size_t stub_write_queued(void) { return write_len - write_head; }

size_t stub_write_drain(bool (*take)(const struct value_list_s *vl, void *ctx),
                        void *ctx) {
  size_t n = 0;
  while (write_head < write_len && take(write_queue[write_head], ctx)) {
    write_one(write_queue[write_head++]);
    n++;
  }
  if (write_head == write_len)
    write_head = write_len = 0;
  return n;
}

void stub_write_clear(void) {
  for (size_t i = write_head; i < write_len; i++) {
    free(write_queue[i]->values);
    free(write_queue[i]);
  }
  free(write_queue);
  write_queue = NULL;
  write_head = write_len = write_cap = 0;
  write_hold = false;
}

/* A failure is 5.12's plugin_write_enqueue out of memory: ENOMEM, the value
 * not queued (nor counted, nor passed to stub_on_value). */
int plugin_dispatch_values(value_list_t const *vl) {
  if (stub_fail_now("plugin_dispatch_values"))
    return ENOMEM;
  if (stub_on_value != NULL)
    stub_on_value(vl);
  pthread_mutex_lock(&clock_lock);
  if (fake_now != 0) {
    fake_cpu += fake_per_value;
    fake_now += (cdtime_t)((double)fake_per_value / cpu_share);
  }
  pthread_mutex_unlock(&clock_lock);
  value_list_t *q = malloc(sizeof *q);
  if (q == NULL)
    return ENOMEM;
  *q = *vl;
  q->values = malloc(vl->values_len * sizeof *vl->values);
  if (q->values == NULL) {
    free(q);
    return ENOMEM;
  }
  memcpy(q->values, vl->values, vl->values_len * sizeof *vl->values);
  if (q->time == 0)
    q->time = cdtime();
  if (q->interval == 0)
    q->interval = plugin_get_interval();
  pthread_mutex_lock(&stub_lock);
  counters.values++;
  double v = q->values[0].gauge;
  if (isfinite(v))
    counters.value_sum += v;
  else
    counters.non_finite++;
  pthread_mutex_unlock(&stub_lock);
  if (!write_hold) {
    write_one(q);
    return 0;
  }
  if (write_len == write_cap) {
    size_t cap = write_cap ? 2 * write_cap : 1024;
    value_list_t **grown = realloc(write_queue, cap * sizeof *grown);
    if (grown == NULL) {
      write_one(q);
      return 0;
    }
    write_queue = grown;
    write_cap = cap;
  }
  write_queue[write_len++] = q;
  return 0;
}

/* A failure is 5.12's return without any notification plugin: -1, nothing
 * delivered (nor counted). */
int plugin_dispatch_notification(const notification_t *n) {
  if (stub_fail_now("plugin_dispatch_notification"))
    return -1;
  pthread_mutex_lock(&stub_lock);
  counters.notifications++;
  counters.notifications_failure += n->severity == NOTIF_FAILURE;
  counters.notifications_warning += n->severity == NOTIF_WARNING;
  counters.notifications_okay += n->severity == NOTIF_OKAY;
  pthread_mutex_unlock(&stub_lock);
  return 0;
}

void stub_counters_get(stub_counters *out) {
  pthread_mutex_lock(&stub_lock);
  *out = counters;
  pthread_mutex_unlock(&stub_lock);
}

void stub_counters_reset(void) {
  pthread_mutex_lock(&stub_lock);
  counters = (stub_counters){0};
  last_warning[0] = last_message[0] = '\0';
  pthread_mutex_unlock(&stub_lock);
}

/* doc/fleets.md: the essential values */
static const char *const ESSENTIAL_TYPES[] = {"storm",
                                              "state",
                                              "reporting",
                                              "observed_failure_ratio",
                                              "tipping_headroom",
                                              "offered_load",
                                              "shed_load",
                                              "recovering"};

bool stub_essential_type(const char *type) {
  for (size_t i = 0; i < sizeof ESSENTIAL_TYPES / sizeof ESSENTIAL_TYPES[0];
       i++)
    if (strcmp(type, ESSENTIAL_TYPES[i]) == 0)
      return true;
  return false;
}
