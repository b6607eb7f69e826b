/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: the collectd read plugin.
 *
 * Glue only (doc/design.md §3): read each service's inputs from collectd's
 * value cache (inputs.c), run the shared per-interval step
 * (service/tracker.c), dispatch the values of doc/design.md §1.5 as
 * <host>/metastable-<service>/<type>, and send a notification when a storm
 * starts, ends, or the tipping headroom falls below its warning level.
 *
 *   <Plugin metastable>
 *     ServiceFile "/etc/collectd/metastable.yaml"
 *     Host "aggregator"     # optional: host of the dispatched values
 *     Interval 10           # optional: time between cycles, seconds or
 *                           # with a unit as in the service file (500ms,
 *                           # 5m; default: the plugin's interval in
 *                           # collectd: the Interval of its <LoadPlugin>
 *                           # block, else collectd's Interval)
 *     Values "state" "storm" "tipping_headroom"   # optional: dispatch only
 *                           # these (default: all of conf/types.db)
 *     CycleBudget 0.2       # optional: share of the interval one read
 *                           # cycle may take ("20%" in quotes) in the
 *                           # read thread's CPU time, at most 1 s; a
 *                           # cycle's wall time at most 5 s or half
 *                           # the interval
 *   </Plugin>
 *
 * Nothing here may crash, block or flood the daemon: a service whose inputs
 * are missing reports nothing that interval and logs one rate-limited
 * warning (ms_complain); a cycle stops analysing services once its budget
 * is spent and takes the rest first in the next cycle (round robin); the
 * plugin logs at most LOG_LINES_PER_WINDOW lines a minute; the read
 * callback always returns 0 so the daemon never suspends it.
 */
#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>

#include "inputs.h"
#include "reload.h"
#include "sanitize.h"
#include "service.h"
#include "state.h"

#define PLUGIN_NAME "metastable"

/* A service is declared usable again (and its complaint's back-off reset)
 * only after this many good intervals in a row, so inputs that flap between
 * missing and present do not defeat the log's rate limit. */
#define USABLE_AFTER 5

/* At most this many services are named one by one in the log per cycle;
 * beyond that one summary line (itself rate-limited) says how many, so a
 * fleet-wide outage of an input does not flood the log. */
#define MAX_NAMED_PER_CYCLE 5
/* The share of the interval that stall_tolerance's searches may take per
 * read cycle (doc/outputs.md, "Stall tolerance"). */
#define TOLERANCE_BUDGET_SHARE 0.002
/* The share of the interval the time-to-storm tables' points may use a
 * cycle (run_hazard_builds), their own, spent only while a table is
 * pending: 20 ms at a 1 s interval, where a table of 30 servers x 100 ms
 * behind 1 s (43 ms, 65 points) takes three cycles; at 0.5 % it took 16
 * cycles in the stand-in and never finished in the integration test. */
#define HAZARD_BUDGET_SHARE 0.02

/* CycleBudget: the share of the interval one read cycle may spend on its
 * services (default, range), counted in the CPU time the read thread gets
 * (ms_read_thread_cpu), so that a busy host, which gives the thread less
 * of each second, does not cut the cycle short; at most
 * CYCLE_CPU_CEILING_SECONDS whatever the interval.  The wall-time cap,
 * whatever the CPU: CYCLE_WALL_CAP_SECONDS, or CYCLE_WALL_CAP_SHARE of
 * the interval when that is shorter.  collectd 5.12 joins its read threads
 * on SIGTERM before it calls any shutdown callback (plugin_shutdown_all:
 * stop_read_threads), so a cycle under way delays the daemon's exit by
 * what is left of it: the cap is what bounds that delay. */
#define CYCLE_BUDGET_DEFAULT 0.2
#define CYCLE_BUDGET_MIN 0.01
#define CYCLE_BUDGET_MAX 1.0
#define CYCLE_CPU_CEILING_SECONDS 1.0
#define CYCLE_WALL_CAP_SECONDS 5.0
#define CYCLE_WALL_CAP_SHARE 0.5
/* The searches' deadline (run_searches): at most this long after the
 * cycle began, whatever the budget. */
#define SEARCH_CEILING_SECONDS 1.0
/* Interval: at least 0.1 s, as a tighter loop would only spin a read
 * thread and flood the write queue; at most a day. */
#define INTERVAL_MIN 0.1
#define INTERVAL_MAX 86400.0
/* The share of the interval by which stall_tolerance's searches stop
 * (run_searches) when CycleBudget ends sooner: under half, where the
 * slow-cycle warning starts. */
#define SEARCH_SHARE 0.4

/* The plugin-wide bound on its log: at most LOG_LINES_PER_WINDOW lines in
 * each minute of the clock (cdtime / LOG_WINDOW_SECONDS), then one NOTICE
 * at the next minute that counts the lines left out. */
#define LOG_LINES_PER_WINDOW 30
#define LOG_WINDOW_SECONDS 60

/* Configuration is read before init.  The service file is loaded with it,
 * so that a broken file fails collectd's configuration (collectd then
 * refuses to start, as for any rejected option); init takes it over. */
static char *conf_service_file;
static char *conf_host;
static cdtime_t conf_interval;
static bool conf_values_given;
static bool conf_wanted[MS_OUT_COUNT];
static ms_service_file conf_file;
static reload_watch conf_watch; /* what was loaded, for the reload */
static bool conf_loaded;
static double conf_cycle_budget = CYCLE_BUDGET_DEFAULT;
static int conf_shard_k, conf_shard_n;     /* Shard "K/N"; 0/0: every service */
static long conf_new_series = PACING_AUTO; /* NewSeriesPerInterval */
static unsigned conf_full_every = 1;       /* FullEvery */

/*
 * Load the service file during configuration.  collectd 5.12 checks a
 * configuration only by reading it: a complex config callback that returns
 * non-zero fails cf_read, and then `collectd` and `collectd -T` exit with
 * status 1 before any init runs.  An init callback that fails only unloads
 * the plugin and leaves the daemon running.  (`collectd -t` of 5.12 exits
 * 0 without reading the file at all; collectd fixed that after 5.12.0,
 * and then it fails here too.)  A relative path is taken from BaseDir,
 * where collectd changes directory after reading its configuration.
 */
/* The durations of the file written as bare numbers that look like
 * milliseconds (ms_service_unit_warnings), said once when collectd loads
 * the file: the first MAX_NAMED_PER_CYCLE one by one, then one line that
 * counts the rest, so that a file of thousands of services does not
 * flood the log.  The values are used as read: a warning, not an error,
 * as `metastable check` has it (an error under its --strict). */
static void log_unit_warnings(const ms_service_file *f) {
  size_t said = 0, more = 0;
  for (size_t i = 0; i < f->n_services; i++) {
    ms_spec_warning w[2];
    int n = ms_service_unit_warnings(&f->services[i], w);
    for (int j = 0; j < n; j++, said++) {
      if (said >= MAX_NAMED_PER_CYCLE) {
        more++;
        continue;
      }
      WARNING(PLUGIN_NAME " plugin: service \"%s\": %s (%s:%d:%d); the "
                          "plugin uses the value as read, in seconds",
              f->services[i].name, w[j].text, f->path, w[j].line, w[j].column);
    }
  }
  if (more > 0)
    WARNING(PLUGIN_NAME " plugin: %zu more durations without a unit look "
                        "like milliseconds; `metastable check %s` lists "
                        "them all",
            more, f->path);
}

static int load_service_file(void) {
  const char *base = global_option_get("BaseDir");
  if (conf_service_file[0] != '/' && base != NULL && base[0] != '\0') {
    size_t n = strlen(base) + strlen(conf_service_file) + 2;
    char *abs = malloc(n);
    if (abs == NULL) {
      ERROR(PLUGIN_NAME " plugin: out of memory");
      return -1;
    }
    snprintf(abs, n, "%s/%s", base, conf_service_file);
    sfree(conf_service_file);
    conf_service_file = abs;
  }
  ms_service_file_free(&conf_file);
  conf_loaded = false;
  char err[1024];
  if (reload_load_first(conf_service_file, conf_shard_k, conf_shard_n,
                        &conf_file, &conf_watch, err, sizeof err) != 0) {
    ERROR(PLUGIN_NAME " plugin: %s; the service file is rejected whole, and "
                      "with it collectd's configuration: collectd does not "
                      "start until the file is fixed",
          err);
    return -1;
  }
  conf_loaded = true;
  log_unit_warnings(&conf_file);
  return 0;
}

/* What an option's values are, for messages: "several values or none",
 * "a string", "a number", "a boolean". */
static const char *option_kind(const oconfig_item_t *child) {
  if (child->values_num != 1)
    return "several values or none";
  switch (child->values[0].type) {
  case OCONFIG_TYPE_STRING:
    return "a string";
  case OCONFIG_TYPE_NUMBER:
    return "a number";
  default:
    return "a boolean";
  }
}

/*
 * The text of an option's value for the parsers of service/units.h, as a
 * service file would hold it, so that the block and the file take the
 * same units through the same code: one string ("500ms", "20%", "5m"),
 * one number (written back exactly: ms_format_double), or a number and a
 * string, which is what collectd's scanner makes of an unquoted "1.5m"
 * or "0.5s" (a number ends at the letter that follows its decimals).
 * false for anything else: no value, a boolean, more values.
 */
static bool option_text(const oconfig_item_t *child, char *buf, size_t len) {
  const oconfig_value_t *v = child->values;
  char num[32];
  if (child->values_num == 1 && v[0].type == OCONFIG_TYPE_STRING) {
    snprintf(buf, len, "%s", v[0].value.string);
  } else if (child->values_num == 1 && v[0].type == OCONFIG_TYPE_NUMBER) {
    snprintf(buf, len, "%s", ms_format_double(num, v[0].value.number));
  } else if (child->values_num == 2 && v[0].type == OCONFIG_TYPE_NUMBER &&
             v[1].type == OCONFIG_TYPE_STRING) {
    snprintf(buf, len, "%s%s", ms_format_double(num, v[0].value.number),
             v[1].value.string);
  } else {
    return false;
  }
  return true;
}

/* Interval: a duration (ms_parse_duration: 10, "10s", 500ms, 5m) from
 * INTERVAL_MIN to INTERVAL_MAX seconds; else a located error (the option,
 * what it got, the range). */
static int config_interval(const oconfig_item_t *child) {
  char text[256], why[300];
  double seconds;
  if (!option_text(child, text, sizeof text)) {
    ERROR(PLUGIN_NAME " plugin: <Plugin metastable> Interval: takes one "
                      "duration from %g s to %g s (10, 10s, 500ms, 5m), not "
                      "%s",
          INTERVAL_MIN, INTERVAL_MAX, option_kind(child));
    return -1;
  }
  if (ms_parse_duration(text, &seconds, why, sizeof why) != 0) {
    ERROR(PLUGIN_NAME " plugin: <Plugin metastable> Interval: %s; it takes "
                      "a duration from %g s to %g s (10, 10s, 500ms, 5m)",
          why, INTERVAL_MIN, INTERVAL_MAX);
    return -1;
  }
  if (!(seconds >= INTERVAL_MIN && seconds <= INTERVAL_MAX)) {
    char got[32]; /* 86400.00001, not 86400 */
    ERROR(
        PLUGIN_NAME " plugin: <Plugin metastable> Interval %s is %s s: "
                    "it must be from %g s to %g s",
        text,
        ms_format_against(got, seconds,
                          seconds < INTERVAL_MIN ? INTERVAL_MIN : INTERVAL_MAX),
        INTERVAL_MIN, INTERVAL_MAX);
    return -1;
  }
  conf_interval = DOUBLE_TO_CDTIME_T(seconds);
  return 0;
}

/* CycleBudget: a share of the interval (ms_parse_share: 0.2 or "20%") in
 * [CYCLE_BUDGET_MIN, CYCLE_BUDGET_MAX]; else a located error (the option,
 * what it got, the range).  collectd's scanner drops an unquoted '%' and
 * keeps the number before it, so a number from 1 to 100 gets a hint. */
static int config_cycle_budget(const oconfig_item_t *child) {
  char text[256];
  double share;
  bool has_text = option_text(child, text, sizeof text);
  if (!has_text || ms_parse_share(text, &share) != 0) {
    char got[300];
    if (has_text)
      snprintf(got, sizeof got, "\"%s\"", text);
    else
      snprintf(got, sizeof got, "%s", option_kind(child));
    ERROR(PLUGIN_NAME " plugin: <Plugin metastable> CycleBudget: takes one "
                      "share of the interval from %g to %g, as a number or a "
                      "percentage in quotes (CycleBudget %g, CycleBudget "
                      "\"%g%%\"), not %s",
          CYCLE_BUDGET_MIN, CYCLE_BUDGET_MAX, CYCLE_BUDGET_DEFAULT,
          100 * CYCLE_BUDGET_DEFAULT, got);
    return -1;
  }
  if (share >= CYCLE_BUDGET_MIN && share <= CYCLE_BUDGET_MAX) {
    conf_cycle_budget = share;
    return 0;
  }
  bool percent_lost = child->values_num == 1 &&
                      child->values[0].type == OCONFIG_TYPE_NUMBER &&
                      share > 1 && share <= 100 && share == floor(share);
  ERROR(PLUGIN_NAME " plugin: <Plugin metastable> CycleBudget %s: must be "
                    "a share of the interval from %g to %g (%g%% to %g%%; "
                    "default %g; in the read thread's CPU time, at most "
                    "%g s; a cycle never takes more than %g s or %g of the "
                    "interval whatever it is)%s%s%s",
        text, CYCLE_BUDGET_MIN, CYCLE_BUDGET_MAX, 100 * CYCLE_BUDGET_MIN,
        100 * CYCLE_BUDGET_MAX, CYCLE_BUDGET_DEFAULT, CYCLE_CPU_CEILING_SECONDS,
        CYCLE_WALL_CAP_SECONDS, CYCLE_WALL_CAP_SHARE,
        percent_lost ? "; for a percentage write \"" : "",
        percent_lost ? text : "",
        percent_lost ? "%\" in quotes: collectd drops an unquoted %" : "");
  return -1;
}

/* Shard "K/N": the services of shard K of N only (ms_shard_of); else a
 * located error (the option, what it got, the bound). */
static int config_shard(const oconfig_item_t *child) {
  char err[256];
  if (child->values_num != 1 || child->values[0].type != OCONFIG_TYPE_STRING) {
    ERROR(PLUGIN_NAME " plugin: <Plugin metastable> Shard: takes one string "
                      "\"K/N\", shard K of N with 1 <= K <= N <= %d (e.g. "
                      "Shard \"1/2\"), not %s",
          MS_SHARD_MAX,
          child->values_num != 1 ? "several values or none"
          : child->values[0].type == OCONFIG_TYPE_NUMBER ? "a number"
                                                         : "a boolean");
    return -1;
  }
  if (ms_shard_parse(child->values[0].value.string, &conf_shard_k,
                     &conf_shard_n, err, sizeof err) != 0) {
    ERROR(PLUGIN_NAME " plugin: <Plugin metastable> Shard %s", err);
    return -1;
  }
  return 0;
}

/* Whether the option has one value, a whole number from lo to hi (in *n),
 * bare or in quotes ("500": collectd's own options take both). */
static bool whole_number_in(const oconfig_item_t *child, double lo, double hi,
                            double *n) {
  if (child->values_num != 1)
    return false;
  if (child->values[0].type == OCONFIG_TYPE_NUMBER) {
    *n = child->values[0].value.number;
  } else if (child->values[0].type == OCONFIG_TYPE_STRING) {
    const char *text = child->values[0].value.string;
    char *end = NULL;
    errno = 0;
    *n = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 ||
        isspace((unsigned char)*text))
      return false;
  } else {
    return false;
  }
  return *n >= lo && *n <= hi && *n == floor(*n);
}

/* What an option got, for its error: "text" (quoted when it was a string),
 * or the kind of value (option_kind). */
static const char *option_got(const oconfig_item_t *child, char *buf,
                              size_t len) {
  char text[256];
  if (child->values_num == 1 && child->values[0].type == OCONFIG_TYPE_STRING)
    snprintf(buf, len, "\"%s\"", child->values[0].value.string);
  else if (option_text(child, text, sizeof text))
    snprintf(buf, len, "%s", text);
  else
    snprintf(buf, len, "%s", option_kind(child));
  return buf;
}

/* NewSeriesPerInterval "auto" | 0 | N (pacing.h). */
static int config_new_series(const oconfig_item_t *child) {
  if (child->values_num == 1 && child->values[0].type == OCONFIG_TYPE_STRING &&
      strcasecmp(child->values[0].value.string, "auto") == 0) {
    conf_new_series = PACING_AUTO;
    return 0;
  }
  double n;
  if (whole_number_in(child, 0, PACING_LIMIT_MAX, &n)) {
    conf_new_series = (long)n;
    return 0;
  }
  char got[300];
  ERROR(PLUGIN_NAME " plugin: <Plugin metastable> NewSeriesPerInterval: "
                    "takes \"auto\" (the default: as many as collectd's "
                    "write path takes, on its feedback), 0 (no limit) or a "
                    "whole number of new series per interval up to %ld, not "
                    "%s",
        PACING_LIMIT_MAX, option_got(child, got, sizeof got));
  return -1;
}

/* FullEvery N (pacing.h). */
static int config_full_every(const oconfig_item_t *child) {
  double n;
  if (whole_number_in(child, 1, PACING_FULL_EVERY_MAX, &n)) {
    conf_full_every = (unsigned)n;
    return 0;
  }
  char got[300];
  ERROR(PLUGIN_NAME " plugin: <Plugin metastable> FullEvery: takes a whole "
                    "number of intervals from 1 (every value every "
                    "interval, the default) to %d: the essential values go "
                    "every interval, the others every N-th; not %s",
        PACING_FULL_EVERY_MAX, option_got(child, got, sizeof got));
  return -1;
}

/* The options of <Plugin metastable>, for the message of an unknown one. */
static const char *const option_names[] = {"ServiceFile",
                                           "Host",
                                           "Interval",
                                           "Values",
                                           "CycleBudget",
                                           "Shard",
                                           "NewSeriesPerInterval",
                                           "FullEvery"};

/* An unknown option fails the configuration, as a broken service file
 * does: a misspelt ServiceFile must not leave collectd running without
 * the plugin.  Names the nearest known option (ms_suggest, without case,
 * as collectd compares option names). */
static void config_unknown(const char *key) {
  size_t n = sizeof option_names / sizeof option_names[0];
  char known[256] = "";
  for (size_t i = 0; i < n; i++)
    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
             i ? ", " : "", option_names[i]);
  const char *near = ms_suggest(key, option_names, n, true);
  if (near != NULL)
    ERROR(PLUGIN_NAME " plugin: <Plugin metastable> unknown option \"%s\": "
                      "did you mean \"%s\"? (known: %s); collectd does not "
                      "start until it is fixed",
          key, near, known);
  else
    ERROR(PLUGIN_NAME " plugin: <Plugin metastable> unknown option \"%s\" "
                      "(known: %s); collectd does not start until it is "
                      "fixed",
          key, known);
}

/* A name of Values that is none of the plugin's types: which argument,
 * and the nearest type (ms_suggest). */
static void config_unknown_value(int j, const oconfig_value_t *v) {
  const char *names[MS_OUT_COUNT];
  for (int i = 0; i < MS_OUT_COUNT; i++)
    names[i] = ms_output_get((ms_output)i)->name;
  const char *word =
      v->type == OCONFIG_TYPE_STRING ? v->value.string : "not a string";
  const char *near = v->type == OCONFIG_TYPE_STRING
                         ? ms_suggest(word, names, MS_OUT_COUNT, false)
                         : NULL;
  ERROR(PLUGIN_NAME " plugin: Values: argument %d (%s) is not one of the "
                    "plugin's types (see its types.db)%s%s%s",
        j + 1, word, near ? "; did you mean \"" : "", near ? near : "",
        near ? "\"?" : "");
}

/* cf_util_get_string, with a line of the plugin's own when it fails:
 * collectd 5.12 says why for a value that is not one string, and nothing
 * when its strdup fails. */
static int config_string(const oconfig_item_t *child, char **out) {
  if (cf_util_get_string(child, out) == 0)
    return 0;
  ERROR(PLUGIN_NAME " plugin: %s takes one string (or memory ran out)",
        child->key);
  return -1;
}

static int ms_config(oconfig_item_t *ci) {
  bool file_given = false;
  for (int i = 0; i < ci->children_num; i++) {
    oconfig_item_t *child = ci->children + i;
    if (strcasecmp("ServiceFile", child->key) == 0) {
      if (config_string(child, &conf_service_file) != 0)
        return -1;
      file_given = true;
    } else if (strcasecmp("Host", child->key) == 0) {
      if (config_string(child, &conf_host) != 0)
        return -1;
      if (conf_host[0] == '\0' || strchr(conf_host, '/') != NULL ||
          strlen(conf_host) >= DATA_MAX_NAME_LEN) {
        ERROR(PLUGIN_NAME " plugin: Host \"%s\" cannot be the host of a "
                          "collectd identifier (empty, a '/', or too long)",
              conf_host);
        sfree(conf_host);
        return -1;
      }
    } else if (strcasecmp("Interval", child->key) == 0) {
      if (config_interval(child) != 0)
        return -1;
    } else if (strcasecmp("CycleBudget", child->key) == 0) {
      if (config_cycle_budget(child) != 0)
        return -1;
    } else if (strcasecmp("Shard", child->key) == 0) {
      if (config_shard(child) != 0)
        return -1;
    } else if (strcasecmp("NewSeriesPerInterval", child->key) == 0) {
      if (config_new_series(child) != 0)
        return -1;
    } else if (strcasecmp("FullEvery", child->key) == 0) {
      if (config_full_every(child) != 0)
        return -1;
    } else if (strcasecmp("Values", child->key) == 0) {
      conf_values_given = true;
      for (int j = 0; j < child->values_num; j++) {
        int k = child->values[j].type == OCONFIG_TYPE_STRING
                    ? ms_output_find(child->values[j].value.string)
                    : -1;
        if (k < 0) {
          config_unknown_value(j, &child->values[j]);
          return -1;
        }
        conf_wanted[k] = true;
      }
    } else {
      config_unknown(child->key);
      return -1;
    }
  }
  if (!file_given && conf_service_file == NULL) {
    ERROR(PLUGIN_NAME " plugin: <Plugin metastable> has no ServiceFile: add "
                      "ServiceFile \"/etc/collectd/metastable.yaml\" (the "
                      "path of your service file); collectd does not start "
                      "without it");
    return -1;
  }
  return file_given ? load_service_file() : 0;
}

static void state_free(void *p) {
  plugin_state *st = p;
  if (st == NULL)
    return;
  reload_stop(st); /* before anything it reads is freed */
  inputs_destroy(st->inputs);
  reload_states_free(st->services, st->n_services);
  ms_service_file_free(&st->file);
  sfree(st->path);
  sfree(st->host);
  pthread_mutex_destroy(&st->lock);
  pthread_mutex_destroy(&st->log_lock);
  sfree(st);
}

/*
 * The plugin-wide bound on the log (LOG_LINES_PER_WINDOW lines per minute
 * of the clock).  Every line of the read cycle goes through log_take; a
 * rate-limited complaint is first asked whether its back-off allows it
 * (ms_complain, log_backoff in state.h), and only then counted.
 * log_roll, at a new minute, says how many lines the last one left out.
 * The read cycle and the reload thread (reload.c) both log: the counts are
 * under st->log_lock, taken by log_take and log_roll themselves.
 */
static void log_roll_locked(plugin_state *st, cdtime_t now) {
  uint64_t window = CDTIME_T_TO_TIME_T(now) / (uint64_t)LOG_WINDOW_SECONDS;
  if (window == st->log_window)
    return;
  if (st->log_suppressed > 0)
    NOTICE(PLUGIN_NAME " plugin: %zu log line%s left out in the last "
                       "minute (at most %d a minute from this plugin); what "
                       "they said holds in the dispatched values (reporting "
                       "= 0 for a service without usable inputs)",
           st->log_suppressed, st->log_suppressed == 1 ? "" : "s",
           LOG_LINES_PER_WINDOW);
  st->log_window = window;
  st->log_lines = 0;
  st->log_suppressed = 0;
  if (st->log_outcome[0] != '\0') {
    ms_plugin_log(st->log_outcome_level,
                  "%s (said late: the bound above "
                  "had left it out)",
                  st->log_outcome);
    st->log_outcome[0] = '\0';
    st->log_lines++;
  }
}

static void log_roll(plugin_state *st, cdtime_t now) {
  pthread_mutex_lock(&st->log_lock);
  log_roll_locked(st, now);
  pthread_mutex_unlock(&st->log_lock);
}

void ms_plugin_log(int level, const char *format, ...) {
  char msg[1024], safe[2048];
  va_list ap;
  va_start(ap, format);
  vsnprintf(msg, sizeof msg, format, ap);
  va_end(ap);
  ms_sanitize(safe, sizeof safe, msg);
  plugin_log(level, "%s", safe);
}

/* Whether one more line may go out now; counts it either way. */
static bool log_take(plugin_state *st) {
  pthread_mutex_lock(&st->log_lock);
  log_roll_locked(st, cdtime());
  bool ok = st->log_lines < LOG_LINES_PER_WINDOW;
  if (ok)
    st->log_lines++;
  else
    st->log_suppressed++;
  pthread_mutex_unlock(&st->log_lock);
  return ok;
}

/* A plain line under the bound (state.h). */
__attribute__((format(printf, 3, 4))) void ms_log(plugin_state *st, int level,
                                                  const char *format, ...) {
  if (!log_take(st))
    return;
  char msg[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(msg, sizeof msg, format, ap);
  va_end(ap);
  ms_plugin_log(level, "%s", msg);
}

/* A reload's outcome under the bound, kept when left out (state.h). */
__attribute__((format(printf, 3, 4))) void
ms_log_outcome(plugin_state *st, int level, const char *format, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(msg, sizeof msg, format, ap);
  va_end(ap);
  pthread_mutex_lock(&st->log_lock);
  log_roll_locked(st, cdtime());
  bool ok = st->log_lines < LOG_LINES_PER_WINDOW;
  if (ok) {
    st->log_lines++;
    st->log_outcome[0] = '\0'; /* a later outcome replaces it */
  } else {
    st->log_suppressed++;
    sstrncpy(st->log_outcome, msg, sizeof st->log_outcome);
    st->log_outcome_level = level;
  }
  pthread_mutex_unlock(&st->log_lock);
  if (ok)
    ms_plugin_log(level, "%s", msg);
}

/* Whether a line with back-off b may be said now (log_backoff, state.h):
 * takes the step of back-off when it may. */
static bool backoff_due(log_backoff *b, cdtime_t now) {
  if (b->interval > 0 && b->last + b->interval > now)
    return false;
  b->last = now;
  cdtime_t day = TIME_T_TO_CDTIME_T(86400);
  if (b->interval < plugin_get_interval())
    b->interval = plugin_get_interval();
  else
    b->interval = b->interval < day / 2 ? 2 * b->interval : day;
  return true;
}

/* FNV-1a of a reason's text without its digits: a reason whose values
 * change (a count, a value out of range) is still the same reason. */
static uint64_t reason_hash(const char *why) {
  uint64_t h = MS_FNV1A64_OFFSET;
  for (const char *c = why; *c != '\0'; c++)
    if (*c < '0' || *c > '9')
      h = ms_fnv1a64_update(h, c, 1);
  return h;
}

/* A line about a new reason is said at once: its back-off restarts.  A
 * reason among the last two is not new, so inputs that flap between two
 * problems back off as one problem does. */
static void backoff_reason(log_backoff *b, const char *why) {
  uint64_t h = reason_hash(why);
  if (h == b->why[0])
    return;
  if (h != b->why[1])
    b->last = b->interval = 0;
  b->why[1] = b->why[0];
  b->why[0] = h;
}

/* A rate-limited complaint under the plugin's bound: said when its
 * back-off allows and the minute's lines are not used up; a line the
 * bound leaves out still takes its step of back-off, so that it is not
 * tried again every cycle. */
__attribute__((format(printf, 4, 5))) static void
ms_complain(plugin_state *st, int level, log_backoff *b, const char *format,
            ...) {
  if (!backoff_due(b, cdtime()) || !log_take(st))
    return;
  char msg[512];
  va_list ap;
  va_start(ap, format);
  vsnprintf(msg, sizeof msg, format, ap);
  va_end(ap);
  ms_plugin_log(level, "%s", msg);
}

/* The end of a complaint: said once (under the bound) when it had been
 * complained of, and the back-off reset. */
__attribute__((format(printf, 4, 5))) static void
ms_release(plugin_state *st, int level, log_backoff *b, const char *format,
           ...) {
  if (b->interval == 0)
    return; /* nothing was said */
  *b = (log_backoff){0};
  if (!log_take(st))
    return;
  char msg[512];
  va_list ap;
  va_start(ap, format);
  vsnprintf(msg, sizeof msg, format, ap);
  va_end(ap);
  ms_plugin_log(level, "%s", msg);
}

/* A glob input summed without some of its matches: said at INFO,
 * rate-limited, until every match is summed again. */
static void log_glob_sums(plugin_state *st, service_state *ss,
                          const inputs_glob_sum glob[MS_INPUT_COUNT]) {
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const inputs_glob_sum *g = &glob[i];
    if (g->matched == 0)
      continue;
    if (g->summed < g->matched)
      ms_complain(st, LOG_INFO, &ss->partial,
                  PLUGIN_NAME " plugin: service \"%s\": input %s sums %zu "
                              "of the %zu identifiers matching '%s' (the "
                              "others have no rate yet, e.g. %s)",
                  ss->spec->name, ms_input_name((ms_input_id)i), g->summed,
                  g->matched, ss->spec->inputs[i].pattern, g->skipped);
    else
      ms_release(st, LOG_INFO, &ss->partial,
                 PLUGIN_NAME " plugin: service \"%s\": input %s sums all "
                             "%zu identifiers matching '%s' again",
                 ss->spec->name, ms_input_name((ms_input_id)i), g->matched,
                 ss->spec->inputs[i].pattern);
  }
}

/*
 * The outputs of one service (MS_OUTPUTS, doc/design.md §1.5) that the
 * configuration wants; observations only when observed.  One value list serves
 * them all (plugin_dispatch_values copies it): host, plugin and instance
 * are written once, then only the type and the value change; every value
 * of a read cycle carries the cycle's time.  The pacing (pacing.h) decides
 * which go this cycle: the essential values every cycle, the others in
 * full cycles only (FullEvery, with an interval of that many cycles), and
 * of the series collectd does not hold yet only those its budget admits.
 * s: the service's index in the file.
 */
static void dispatch_report(plugin_state *st, service_state *ss,
                            const char *host, const ms_report *r, size_t s,
                            cdtime_t now) {
  value_list_t vl = VALUE_LIST_INIT;
  value_t value;
  vl.values = &value;
  vl.values_len = 1;
  vl.time = now;
  sstrncpy(vl.host, host, sizeof vl.host);
  sstrncpy(vl.plugin, PLUGIN_NAME, sizeof vl.plugin);
  sstrncpy(vl.plugin_instance, ss->spec->name, sizeof vl.plugin_instance);
  bool full = pacing_service_begin(&st->pacing, &ss->pacing, s,
                                   (int)r->analysis.state, r->analysis.storm);
  /* the essential values first: the others make room for them */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < MS_OUT_COUNT; i++) {
      ms_output o = (ms_output)i;
      bool essential = pacing_essential(o);
      if (essential != (pass == 0) || !st->wanted[i] || !(full || essential) ||
          !ms_report_output(r, o, &value.gauge) ||
          !pacing_admit(&st->pacing, &ss->pacing, o))
        continue;
      sstrncpy(vl.type, ms_output_get(o)->name, sizeof vl.type);
      vl.interval = st->interval * pacing_cycles_of(&st->pacing, o);
      if (plugin_dispatch_values(&vl) == 0)
        write_probe_count(&st->probe, 1);
    }
  pacing_service_end(&ss->pacing);
}

static void dispatch_notes(const char *host, const char *service,
                           const ms_step *st) {
  for (int i = 0; i < st->n_notes; i++) {
    notification_t n = {0};
    n.severity = st->notes[i].severity == MS_NOTE_FAILURE   ? NOTIF_FAILURE
                 : st->notes[i].severity == MS_NOTE_WARNING ? NOTIF_WARNING
                                                            : NOTIF_OKAY;
    n.time = cdtime();
    sstrncpy(n.message, st->notes[i].message, sizeof n.message);
    sstrncpy(n.host, host, sizeof n.host);
    sstrncpy(n.plugin, PLUGIN_NAME, sizeof n.plugin);
    sstrncpy(n.plugin_instance, service, sizeof n.plugin_instance);
    sstrncpy(n.type, "state", sizeof n.type);
    plugin_dispatch_notification(&n);
  }
}

/* A service that reported nothing this cycle, and why. */
typedef struct {
  service_state *ss;
  char why[512];
} problem;

/* The names of a summary line: "a", "b", "c" and 7 more.  At most n_named
 * names, and no more than fit in about half of collectd's 512-byte
 * complaint, so that the reason after them is not cut off; the rest are
 * counted. */
#define SUMMARY_NAMES_BYTES 240
static void name_list(char *buf, size_t len, const char *const *names,
                      size_t n_named, size_t n_total) {
  size_t used = 0, shown = 0;
  buf[0] = '\0';
  for (; shown < n_named; shown++) {
    size_t need = strlen(names[shown]) + 4; /* ", " and quotes */
    if (shown > 0 && used + need > SUMMARY_NAMES_BYTES)
      break;
    int w = snprintf(buf + used, len - used, "%s\"%s\"", shown ? ", " : "",
                     names[shown]);
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
  }
  if (shown < n_total)
    snprintf(buf + used, len - used, " and %zu more", n_total - shown);
}

/* Whether this cycle's problems go in the summary line: from a cycle with
 * more than MAX_NAMED_PER_CYCLE until USABLE_AFTER cycles in a row with at
 * most that many, so that a count that flaps around the threshold does not
 * alternate the summary and its release every cycle. */
static bool in_summary_mode(plugin_state *st, size_t n_bad) {
  if (n_bad > MAX_NAMED_PER_CYCLE) {
    st->summary_mode = true;
    st->few_streak = 0;
  } else if (st->summary_mode && ++st->few_streak >= USABLE_AFTER) {
    st->summary_mode = false;
    st->few_streak = 0;
  }
  return st->summary_mode;
}

/*
 * Tell the operator which services report nothing, without flooding: when
 * few services have problems each is named through its own rate-limited
 * complaint (ms_complain); when many do, one summary line, rate-limited too,
 * that names the first few of them and counts the others (in_summary_mode
 * says which).  Recoveries likewise: one line per service when few, else
 * one line.
 */
static void log_problems(plugin_state *st, const problem *named, size_t n_bad,
                         size_t n_back, const char *const *back) {
  if (!in_summary_mode(st, n_bad)) {
    for (size_t i = 0; i < n_bad; i++) {
      service_state *ss = named[i].ss;
      backoff_reason(&ss->complaint, named[i].why);
      ms_complain(st, LOG_WARNING, &ss->complaint,
                  PLUGIN_NAME " plugin: service \"%s\": %s; nothing reported "
                              "until it is usable",
                  ss->spec->name, named[i].why);
    }
    if (n_bad == 0)
      ms_release(st, LOG_INFO, &st->many_bad,
                 PLUGIN_NAME " plugin: every service has usable inputs again");
    else
      ms_release(st, LOG_INFO, &st->many_bad,
                 PLUGIN_NAME " plugin: only %zu service%s without usable "
                             "inputs now, named one by one",
                 n_bad, n_bad == 1 ? "" : "s");
  } else if (n_bad > 0) {
    size_t n_named = n_bad < MAX_NAMED_PER_CYCLE ? n_bad : MAX_NAMED_PER_CYCLE;
    const char *names[MAX_NAMED_PER_CYCLE];
    for (size_t i = 0; i < n_named; i++)
      names[i] = named[i].ss->spec->name;
    char list[SUMMARY_NAMES_BYTES + 64];
    name_list(list, sizeof list, names, n_named, n_bad);
    ms_complain(st, LOG_WARNING, &st->many_bad,
                PLUGIN_NAME " plugin: %zu of %zu services have no usable "
                            "inputs and report nothing: %s (\"%s\": %s)",
                n_bad, st->n_services, list, names[0], named[0].why);
  }
  if (n_back == 0)
    return;
  if (n_back > MAX_NAMED_PER_CYCLE) {
    char list[SUMMARY_NAMES_BYTES + 64];
    name_list(list, sizeof list, back, MAX_NAMED_PER_CYCLE, n_back);
    ms_log(st, LOG_INFO,
           PLUGIN_NAME " plugin: %zu services have usable inputs again: %s",
           n_back, list);
  }
  for (size_t s = 0; s < st->n_services; s++) {
    service_state *ss = st->services[s];
    if (!ss->just_back)
      continue;
    ss->just_back = false;
    if (n_back > MAX_NAMED_PER_CYCLE)
      ss->complaint = (log_backoff){0}; /* released silently */
    else
      ms_release(st, LOG_INFO, &ss->complaint,
                 PLUGIN_NAME " plugin: service \"%s\": inputs usable again "
                             "(%d intervals in a row)",
                 ss->spec->name, USABLE_AFTER);
  }
}

/* Calibration's log lines (doc/design.md §1.8): a learned value taken into
 * use, at most three times in a service's life; an input that gave no
 * sample, rate-limited per service, and named only while few services
 * have one (ms_read then logs one line for all). */
static void log_calibration(plugin_state *st, service_state *ss,
                            const ms_step *step, size_t *n_calibration) {
  if (step->info[0] != '\0')
    ms_log(st, LOG_INFO, PLUGIN_NAME " plugin: service \"%s\": %s",
           ss->spec->name, step->info);
  const char *why = step->inference.calibration_problem;
  if (why[0] == '\0') {
    ms_release(st, LOG_INFO, &ss->calibration,
               PLUGIN_NAME " plugin: service \"%s\": calibration inputs "
                           "usable again",
               ss->spec->name);
    return;
  }
  if (++*n_calibration <= MAX_NAMED_PER_CYCLE)
    ms_complain(st, LOG_NOTICE, &ss->calibration,
                PLUGIN_NAME " plugin: service \"%s\": calibration: %s",
                ss->spec->name, why);
}

/* What one read cycle gathers while it goes through the services: the
 * services without usable inputs (the first few with their reasons), those
 * usable again, the calibration inputs without a sample, and
 * stall_tolerance's share of the time. */
typedef struct {
  const char *host;
  cdtime_t started;
  problem named[MAX_NAMED_PER_CYCLE];
  size_t n_bad, n_back, n_calibration;
  const char *back[MAX_NAMED_PER_CYCLE];
  cdtime_t search_spent, search_budget;
  cdtime_t search_end;   /* a search under way stops here (search_stop) */
  cdtime_t hazard_began; /* when the table build under way began */
  /* the tables' own budget and what they spent (run_hazard_builds) */
  cdtime_t hazard_spent, hazard_budget;
  /* CycleBudget: the read thread's CPU time at the start and the budget;
   * the wall-time cap (cycle_spent) */
  cdtime_t cpu_started, cpu_budget, wall_end;
  /* what the services took (read_services; the CPU only when some were
   * deferred) */
  cdtime_t services_wall, services_cpu;
} cycle;

/* The read thread's CPU time, in cdtime_t units (CLOCK_THREAD_CPUTIME_ID;
 * 0 when the clock fails).  Weak, so that the plugin's tests, against
 * collectd's stand-in (tests/collectd_stub.c), can give the read thread a
 * share of a busy host's CPU. */
__attribute__((weak)) cdtime_t ms_read_thread_cpu(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return TIMESPEC_TO_CDTIME_T(&ts);
}

/* Whether the cycle has spent its budget: CycleBudget of the read thread's
 * CPU time since the cycle began, or its wall-time cap.  A thread's CPU
 * time never runs ahead of the wall clock, so the CPU clock is read only
 * once the wall time has passed the budget: on a quiet host a check is one
 * cdtime(). */
static bool cycle_spent(const cycle *cy) {
  cdtime_t now = cdtime();
  if (now >= cy->wall_end)
    return true;
  if (now > cy->started && now - cy->started < cy->cpu_budget)
    return false;
  cdtime_t cpu = ms_read_thread_cpu();
  return cpu > cy->cpu_started && cpu - cy->cpu_started >= cy->cpu_budget;
}

/* The stop of safe_retries' builds (ms_tracker_safe_build), asked before
 * each landscape build: once the cycle's budget is spent (cycle_spent). */
static int safe_stop(void *ctx) { return cycle_spent(ctx); }

/* The tracker's tolerance_stop: a stall-tolerance search ends once the
 * cycle reaches its search_end, so that it never holds the cycle (and with
 * it collectd's shutdown, which waits for the cycle) past
 * SEARCH_CEILING_SECONDS; the service then answers from what it remembers
 * and searches again MS_TOLERANCE_SEARCH_GAP intervals later. */
static int search_stop(void *ctx) {
  const cycle *cy = ctx;
  return cdtime() >= cy->search_end;
}

/* The stop of a time-to-storm table's build (ms_tracker_hazard_build),
 * asked after each point and within a point every MS_HAZARD_WALK_STRIDE
 * states: at search_end, or once the cycle's searches have spent their
 * budget (this build counted from hazard_began).  A point stopped part way
 * keeps its work and goes on in the next cycle, so a pool whose one point
 * takes a second (2e5 states) costs each cycle the budget, not a second. */
static int hazard_stop(void *ctx) {
  const cycle *cy = ctx;
  cdtime_t now = cdtime();
  return now >= cy->search_end ||
         cy->hazard_spent + (now - cy->hazard_began) >= cy->hazard_budget;
}

/* One service's interval: read its inputs, step its tracker, dispatch its
 * values and notifications, note what the log should say. */
static void read_service(plugin_state *st, size_t s, cycle *cy) {
  service_state *ss = st->services[s];
  ms_inputs in;
  inputs_glob_sum glob[MS_INPUT_COUNT];
  ms_step step;
  char why[512];
  bool ok = inputs_read_service(st->inputs, s, &in, glob, why, sizeof why) ==
            INPUT_OK;
  log_glob_sums(st, ss, glob);
  in.interval = CDTIME_T_TO_DOUBLE(st->interval);
  if (ok) {
    /* why: "" or an input the verdict went without, which the service
     * layer also names (the same input: the first one of the service's
     * left out); this reason names the identifier */
    char left_out[sizeof step.inference.calibration_problem];
    sstrncpy(left_out, why, sizeof left_out);
    /* the tracker defers its stall_tolerance search (reload_service_init)
     * to run_searches */
    ms_tracker_step(&ss->tracker, ss->spec, &in, &step);
    ok = step.ok;
    if (!ok)
      sstrncpy(why, step.problem, sizeof why);
    else if (left_out[0] != '\0')
      memcpy(step.inference.calibration_problem, left_out, sizeof left_out);
  }
  if (!ok) {
    if (cy->n_bad < MAX_NAMED_PER_CYCLE) {
      cy->named[cy->n_bad].ss = ss;
      sstrncpy(cy->named[cy->n_bad].why, why, sizeof cy->named[cy->n_bad].why);
    }
    cy->n_bad++;
    ss->in_trouble = true;
    ss->ok_streak = 0;
    /* the heartbeat, alone: a zeroed report has reporting = 0 and no
     * other value (doc/outputs.md) */
    static const ms_report none;
    dispatch_report(st, ss, cy->host, &none, s, cy->started);
    return;
  }
  if (ss->in_trouble && ++ss->ok_streak >= USABLE_AFTER) {
    ss->in_trouble = false;
    ss->ok_streak = 0;
    ss->just_back = true;
    if (cy->n_back < MAX_NAMED_PER_CYCLE)
      cy->back[cy->n_back] = ss->spec->name;
    cy->n_back++;
  }
  dispatch_report(st, ss, cy->host, &step.report, s, cy->started);
  dispatch_notes(cy->host, ss->spec->name, &step);
  log_calibration(st, ss, &step, &cy->n_calibration);
}

/* The stall-tolerance searches the cycle's steps left pending, after
 * every service of the cycle has dispatched, round robin from where the
 * last cycle's searches stopped: they start while the cycle's searches
 * have spent less than TOLERANCE_BUDGET_SHARE of the interval (at least
 * one a cycle) and before search_end, and one under way at search_end
 * stops there (search_stop; nothing remembered, searched again later).
 * So the searches use the time the services leave, never delay a
 * service's values, and never hold the cycle past search_end.  A service
 * whose search is still pending from a cycle before keeps it. */
static void run_searches(plugin_state *st, cycle *cy) {
  size_t n = st->n_services;
  size_t s = st->next_search < n ? st->next_search : 0;
  for (size_t k = 0; k < n; k++, s = (s + 1) % n) {
    ms_tracker *t = &st->services[s]->tracker;
    if (!t->tolerance_pending)
      continue;
    cdtime_t t0 = cdtime();
    if (t0 >= cy->search_end ||
        (cy->search_spent > 0 && cy->search_spent >= cy->search_budget))
      break;
    t->tolerance_stop = search_stop;
    t->tolerance_stop_ctx = cy;
    ms_tracker_tolerance_search(t);
    t->tolerance_stop = NULL;
    t->tolerance_stop_ctx = NULL;
    cdtime_t t1 = cdtime();
    cy->search_spent += t1 > t0 ? t1 - t0 : 1;
  }
  st->next_search = s;
}

/* The landscapes of safe_retries' first bisections the cycle's steps left
 * pending (a new or rebuilt landscape: about 7 builds, 0.05-0.5 ms each),
 * after every service of the cycle has dispatched, round robin from where
 * the last cycle's stopped, in what is left of CycleBudget (safe_stop,
 * between builds; the builds done are kept), and one service's whole
 * bisection a cycle at least.  So a first cycle, or a fleet's
 * calibrations, costs the services what a steady cycle does, and
 * safe_retries follows within a few cycles (doc/outputs.md, "Safe
 * retries"). */
static void run_safe_builds(plugin_state *st, cycle *cy) {
  size_t n = st->n_services, done = 0;
  size_t s = st->next_safe < n ? st->next_safe : 0;
  for (size_t k = 0; k < n; k++, s = (s + 1) % n) {
    ms_tracker *t = &st->services[s]->tracker;
    if (!t->safe_pending)
      continue;
    if (done > 0 && cycle_spent(cy))
      break;
    ms_tracker_safe_build(t, done > 0 ? safe_stop : NULL, cy);
    if (t->safe_pending)
      break; /* stopped part way: this service goes on next cycle */
    done++;
  }
  st->next_safe = s;
}

/* The time-to-storm tables' points the cycle's steps left pending, after
 * the searches, round robin from where the last cycle's builds stopped,
 * on a budget of their own (HAZARD_BUDGET_SHARE of the interval), so that
 * searches pending every cycle cannot starve them.  A build stops at that
 * budget or at search_end (hazard_stop), between its points or within one
 * every MS_HAZARD_WALK_STRIDE states, and goes on in the next cycle with
 * its work kept; never past search_end. */
static void run_hazard_builds(plugin_state *st, cycle *cy) {
  size_t n = st->n_services;
  size_t s = st->next_hazard < n ? st->next_hazard : 0;
  for (size_t k = 0; k < n; k++, s = (s + 1) % n) {
    ms_tracker *t = &st->services[s]->tracker;
    if (!t->hazard_pending)
      continue;
    cdtime_t t0 = cdtime();
    if (t0 >= cy->search_end || cy->hazard_spent >= cy->hazard_budget)
      break;
    cy->hazard_began = t0;
    ms_tracker_hazard_build(t, hazard_stop, cy);
    cdtime_t t1 = cdtime();
    cy->hazard_spent += t1 > t0 ? t1 - t0 : 1;
  }
  st->next_hazard = s;
}

/* The read thread's CPU time one cycle may spend on its services:
 * CycleBudget of the interval, at most CYCLE_CPU_CEILING_SECONDS. */
static cdtime_t cycle_budget(const plugin_state *st) {
  return DOUBLE_TO_CDTIME_T(
      fmin(st->budget_share * CDTIME_T_TO_DOUBLE(st->interval),
           CYCLE_CPU_CEILING_SECONDS));
}

/* The wall time after which a cycle stops whatever its CPU time:
 * CYCLE_WALL_CAP_SECONDS, or CYCLE_WALL_CAP_SHARE of the interval. */
static cdtime_t cycle_wall_cap(const plugin_state *st) {
  return DOUBLE_TO_CDTIME_T(
      fmin(CYCLE_WALL_CAP_SECONDS,
           CYCLE_WALL_CAP_SHARE * CDTIME_T_TO_DOUBLE(st->interval)));
}

/* The services of one cycle, round robin: from the first service the last
 * cycle did not analyse, until all are done or the budget is spent
 * (cycle_spent: CycleBudget of the read thread's CPU time, or the wall
 * cap; read between services, so the first is always analysed, and a
 * single service slower than the budget still is).  stall_tolerance's
 * searches come after the services (run_searches), with their own
 * budget.  The next cycle starts
 * with the first one left, so with k services per cycle every service is
 * analysed within ceil(n / k) cycles.  A service left out dispatches
 * nothing this cycle (doc/configuration.md, CycleBudget).  Returns how
 * many were left out. */
static size_t read_services(plugin_state *st, cycle *cy) {
  size_t n = st->n_services, done = 0;
  size_t s = st->next < n ? st->next : 0;
  for (; done < n; done++, s = (s + 1) % n) {
    if (done > 0 && cycle_spent(cy))
      break;
    read_service(st, s, cy);
  }
  st->next = s; /* all done: s is back where the cycle started */
  cdtime_t now = cdtime();
  cy->services_wall = now > cy->started ? now - cy->started : 0;
  if (done < n) {
    cdtime_t cpu = ms_read_thread_cpu();
    cy->services_cpu = cpu > cy->cpu_started ? cpu - cy->cpu_started : 0;
  }
  return n - done;
}

/*
 * The shard's heartbeat (doc/outputs.md, "Shards"), with Shard "K/N" only:
 * every cycle <host>/metastable-shard/shard_services-K, the services this
 * aggregator analyses (its shard's share of the service file, 0 for an
 * empty shard), and <host>/metastable-shard/shard_count-K, N; both GAUGEs
 * of conf/types.db, at the cycle's time, whatever Values says.  The plugin
 * instance "shard" is there for write_prometheus: without one, collectd
 * 5.12's write_prometheus names the type instance's label after the plugin
 * (metastable="K"); with it the label is type="K".  Those two types are no
 * service's output, so a service called "shard" is not taken for them.
 */
static void dispatch_shard(plugin_state *st, const char *host, cdtime_t now) {
  if (st->shard_n == 0)
    return;
  value_t value;
  value_list_t vl = VALUE_LIST_INIT;
  vl.values = &value;
  vl.values_len = 1;
  vl.time = now;
  sstrncpy(vl.host, host, sizeof vl.host);
  sstrncpy(vl.plugin, PLUGIN_NAME, sizeof vl.plugin);
  sstrncpy(vl.plugin_instance, "shard", sizeof vl.plugin_instance);
  snprintf(vl.type_instance, sizeof vl.type_instance, "%d", st->shard_k);
  sstrncpy(vl.type, "shard_services", sizeof vl.type);
  value.gauge = (gauge_t)st->n_services;
  if (plugin_dispatch_values(&vl) == 0)
    write_probe_count(&st->probe, 1);
  sstrncpy(vl.type, "shard_count", sizeof vl.type);
  value.gauge = (gauge_t)st->shard_n;
  if (plugin_dispatch_values(&vl) == 0)
    write_probe_count(&st->probe, 1);
}

/* One rate-limited warning while services are left out of their cycle,
 * with what to do; released once a cycle analyses them all again. */
static void log_deferred(plugin_state *st, size_t deferred, const cycle *cy) {
  if (deferred == 0) {
    ms_release(st, LOG_INFO, &st->deferred,
               PLUGIN_NAME " plugin: every service is analysed in every "
                           "read cycle again");
    return;
  }
  size_t done = st->n_services - deferred;
  double cpu = CDTIME_T_TO_DOUBLE(cy->services_cpu);
  double wall = CDTIME_T_TO_DOUBLE(cy->services_wall);
  /* which end stopped it: the wall cap on a host that gave the read
   * thread too little CPU, else CycleBudget */
  bool capped = cy->started + cy->services_wall >= cy->wall_end;
  char why[256];
  if (capped)
    snprintf(why, sizeof why,
             "the cycle reached its wall-time cap of %.3g s (%g s or %g of "
             "the interval) on %zu, with %.0f ms of CPU of its budget of "
             "%.0f ms: the host gave the read thread %.0f%% of a core",
             CDTIME_T_TO_DOUBLE(cy->wall_end - cy->started),
             CYCLE_WALL_CAP_SECONDS, CYCLE_WALL_CAP_SHARE, done, 1e3 * cpu,
             1e3 * CDTIME_T_TO_DOUBLE(cy->cpu_budget),
             wall > 0 ? 100 * cpu / wall : 0.0);
  else
    snprintf(why, sizeof why,
             "the cycle spent its budget of %.0f ms of CPU (CycleBudget %g "
             "of the %.3g s interval, at most %g s) on %zu, in %.0f ms",
             1e3 * CDTIME_T_TO_DOUBLE(cy->cpu_budget), st->budget_share,
             CDTIME_T_TO_DOUBLE(st->interval), CYCLE_CPU_CEILING_SECONDS, done,
             1e3 * wall);
  ms_complain(st, LOG_WARNING, &st->deferred,
              PLUGIN_NAME " plugin: %zu of %zu services deferred to the next "
                          "read cycle: %s; every service is still analysed "
                          "once in every %zu cycles, and dispatches nothing "
                          "in the others; raise CycleBudget, lengthen the "
                          "Interval, or split the service file (fewer heavy "
                          "services: many retries, tiers)%s",
              deferred, st->n_services, why, (st->n_services + done - 1) / done,
              capped ? ", or give collectd more of the host" : "");
}

/* The cost of a cycle, so an operator can see what the plugin takes from
 * the daemon: once at start, and whenever it exceeds half the interval. */
static void log_cycle_cost(plugin_state *st, const cycle *cy, cdtime_t took) {
  cdtime_t interval = st->interval;
  if (st->cycles++ == 0) {
    cdtime_t cpu = ms_read_thread_cpu();
    ms_log(st, LOG_INFO,
           PLUGIN_NAME " plugin: first read cycle of %zu service%s took %.3f "
                       "ms (%.3f ms of the read thread's CPU)",
           st->n_services, st->n_services == 1 ? "" : "s",
           1e3 * CDTIME_T_TO_DOUBLE(took),
           1e3 * CDTIME_T_TO_DOUBLE(
                     cpu > cy->cpu_started ? cpu - cy->cpu_started : 0));
  }
  if (took > interval / 2)
    ms_complain(st, LOG_WARNING, &st->slow_cycle,
                PLUGIN_NAME " plugin: a read cycle of %zu services took %.1f "
                            "ms, more than half the %.1f s interval",
                st->n_services, 1e3 * CDTIME_T_TO_DOUBLE(took),
                CDTIME_T_TO_DOUBLE(interval));
  else
    ms_release(st, LOG_INFO, &st->slow_cycle,
               PLUGIN_NAME " plugin: read cycles are back under half the "
                           "interval");
}

/* What the pacing of new series will do, once at init. */
static void log_pacing_setup(const plugin_state *st) {
  const pacing *p = &st->pacing;
  char every[128] = "";
  if (p->full_every > 1)
    snprintf(every, sizeof every,
             "; FullEvery %u: the essential values every interval, the "
             "others every %u intervals",
             p->full_every, p->full_every);
  if (p->limit == PACING_AUTO)
    INFO(PLUGIN_NAME " plugin: new series for collectd's write path: as "
                     "many per interval as write_prometheus creates in "
                     "%.3g s (a new series among 10,000 of a type costs it "
                     "about %.2g ms here)%s",
         p->budget, 1e3 * pacing_cost(p, 10000), every);
  else if (p->limit > 0)
    INFO(PLUGIN_NAME " plugin: new series for collectd's write path: at "
                     "most %ld per interval%s",
         p->limit, every);
  else if (p->full_every > 1)
    INFO(PLUGIN_NAME " plugin: new series: no limit%s", every);
}

/* One rate-limited warning while cycles shed (the write path had not
 * written the last cycle's values when this one began), one line when
 * they stop; one NOTICE when the write probe is lost. */
static void log_write_path(plugin_state *st) {
  const pacing *p = &st->pacing;
  if (p->shed)
    ms_complain(st, LOG_WARNING, &st->shedding,
                PLUGIN_NAME " plugin: collectd's write path had not written "
                            "the values of the last read cycle when this one "
                            "began, %.3g s after it: this cycle only the "
                            "essential values go (%zu others held back), so "
                            "that the write queue drains and the values the "
                            "alerts read stay fresh; a busy host, a slow "
                            "write plugin, more services than it takes, or a "
                            "filter chain that drops the probe "
                            "(doc/fleets.md)",
                p->write_done * CDTIME_T_TO_DOUBLE(st->interval),
                p->shed_values);
  else if (!isnan(p->write_done))
    ms_release(st, LOG_INFO, &st->shedding,
               PLUGIN_NAME " plugin: collectd's write path keeps up again: "
                           "it wrote the last read cycle's values %.3g s "
                           "after it began",
               p->write_done * CDTIME_T_TO_DOUBLE(st->interval));
  if (st->probe.lost && !st->probe_lost_said) {
    st->probe_lost_said = true;
    ms_log(st, LOG_NOTICE,
           PLUGIN_NAME " plugin: the write probe (%s) is in collectd's cache "
                       "but has not reached the plugin's write callback in "
                       "%d read cycles (a filter chain that sends values to "
                       "named write plugins only?): %s, and no cycle sheds",
           WRITE_PROBE_TYPE, WRITE_PROBE_LOST_AFTER,
           st->pacing.limit == PACING_AUTO
               ? "new series are paced by the model alone"
               : "the write path's feedback is not used");
  } else if (!st->probe.lost && st->probe_lost_said) {
    st->probe_lost_said = false;
    ms_log(st, LOG_INFO,
           PLUGIN_NAME " plugin: the write probe comes through again: new "
                       "series are paced on the write path's feedback");
  }
}

/* One rate-limited line while new series wait for a later cycle, and one
 * when none does any more. */
static void log_pacing(plugin_state *st) {
  const pacing *p = &st->pacing;
  if (p->held > 0)
    ms_complain(st, LOG_INFO, &st->warming,
                PLUGIN_NAME " plugin: introducing new series to collectd's "
                            "write path gradually (NewSeriesPerInterval): "
                            "%zu this interval, %zu wait (%zu of them "
                            "essential, which go first), %zu in it so far",
                p->admitted, p->held, p->held_essential, p->total);
  else
    ms_release(st, LOG_INFO, &st->warming,
               PLUGIN_NAME " plugin: every series is in collectd's write "
                           "path: %zu series",
               p->total);
}

static int ms_read(user_data_t *ud) {
  plugin_state *st = ud->data;
  pthread_mutex_lock(&st->lock);
  reload_swap(st); /* a new service file the reload thread built */
  cycle cy = {.started = cdtime()};
  pacing_cycle_start(&st->pacing);
  pacing_observe(&st->pacing,
                 write_probe_observe(&st->probe, cy.started, st->interval));
  for (size_t i = 0; i < st->n_services; i++)
    pacing_count(&st->pacing, &st->services[i]->pacing);
  inputs_refresh(st->inputs);
  cy.host = st->host != NULL ? st->host : hostname_g;
  cy.search_budget = DOUBLE_TO_CDTIME_T(TOLERANCE_BUDGET_SHARE *
                                        CDTIME_T_TO_DOUBLE(st->interval));
  cy.hazard_budget = DOUBLE_TO_CDTIME_T(HAZARD_BUDGET_SHARE *
                                        CDTIME_T_TO_DOUBLE(st->interval));
  cy.cpu_started = ms_read_thread_cpu();
  cy.cpu_budget = cycle_budget(st);
  cy.wall_end = cy.started + cycle_wall_cap(st);
  /* searches stop at the budget, or at SEARCH_SHARE of the interval when
   * that is later, never past SEARCH_CEILING_SECONDS */
  cdtime_t share =
      cy.cpu_budget > DOUBLE_TO_CDTIME_T(SEARCH_SHARE *
                                         CDTIME_T_TO_DOUBLE(st->interval))
          ? cy.cpu_budget
          : DOUBLE_TO_CDTIME_T(SEARCH_SHARE * CDTIME_T_TO_DOUBLE(st->interval));
  cdtime_t ceiling = DOUBLE_TO_CDTIME_T(SEARCH_CEILING_SECONDS);
  cy.search_end = cy.started + (share < ceiling ? share : ceiling);
  size_t deferred = read_services(st, &cy);
  dispatch_shard(st, cy.host, cy.started);
  write_probe_dispatch(&st->probe, cy.host, st->shard_k, cy.started);
  run_safe_builds(st, &cy);
  run_searches(st, &cy);
  run_hazard_builds(st, &cy);
  log_pacing(st);
  log_write_path(st);
  log_problems(st, cy.named, cy.n_bad, cy.n_back, cy.back);
  if (cy.n_calibration > MAX_NAMED_PER_CYCLE)
    ms_complain(st, LOG_NOTICE, &st->many_calibration,
                PLUGIN_NAME " plugin: %zu services have calibration inputs "
                            "that gave no sample this interval",
                cy.n_calibration);
  else
    ms_release(st, LOG_INFO, &st->many_calibration,
               PLUGIN_NAME " plugin: calibration inputs usable again");
  log_deferred(st, deferred, &cy);
  cdtime_t now = cdtime();
  log_cycle_cost(st, &cy, now > cy.started ? now - cy.started : 0);
  log_roll(st, now);
  reload_kick(st); /* the reload thread looks at the file now */
  pthread_mutex_unlock(&st->lock);
  return 0; /* a non-zero return would make collectd suspend the plugin */
}

static int ms_init(void) {
  if (conf_service_file == NULL) {
    ERROR(PLUGIN_NAME " plugin: no ServiceFile configured: add ServiceFile "
                      "\"/etc/collectd/metastable.yaml\" to <Plugin "
                      "metastable>");
    return -1;
  }
  plugin_state *st = calloc(1, sizeof *st);
  if (st == NULL) {
    ERROR(PLUGIN_NAME " plugin: out of memory");
    return -1;
  }
  pthread_mutex_init(&st->lock, NULL);
  pthread_mutex_init(&st->log_lock, NULL);
  st->slow_cycle = (log_backoff){0};
  st->many_bad = (log_backoff){0};
  st->many_calibration = (log_backoff){0};
  st->deferred = (log_backoff){0};
  st->budget_share = conf_cycle_budget;
  st->shard_k = conf_shard_k;
  st->shard_n = conf_shard_n;
  st->path = conf_service_file;
  st->host = conf_host;
  conf_service_file = conf_host = NULL;
  if (!conf_loaded) { /* said when it failed; collectd stopped there */
    state_free(st);
    return -1;
  }
  st->file = conf_file; /* loaded with the configuration */
  st->reload = conf_watch;
  memset(&conf_file, 0, sizeof conf_file);
  conf_loaded = false;
  st->n_services = st->file.n_services;
  st->services = reload_states_create(&st->file);
  if (st->services == NULL) {
    ERROR(PLUGIN_NAME " plugin: out of memory for %zu services",
          st->n_services);
    state_free(st);
    return -1;
  }
  st->inputs = inputs_create(st->file.services, st->n_services);
  if (st->inputs == NULL) {
    ERROR(PLUGIN_NAME " plugin: out of memory for %zu services",
          st->n_services);
    state_free(st);
    return -1;
  }
  size_t per_service = 0;
  for (int i = 0; i < MS_OUT_COUNT; i++) {
    st->wanted[i] = !conf_values_given || conf_wanted[i];
    per_service += st->wanted[i];
  }
  /* in init, collectd's context holds the plugin's interval */
  st->interval = conf_interval ? conf_interval : plugin_get_interval();
  /* collectd forgets a value after Timeout intervals (default 2) */
  const char *timeout = global_option_get("Timeout");
  long lives = timeout != NULL ? strtol(timeout, NULL, 10) : 2;
  pacing_init(&st->pacing, conf_new_series, conf_full_every,
              lives >= 1 ? (unsigned)lives : 2,
              CDTIME_T_TO_DOUBLE(st->interval), st->wanted);
  st->warming = (log_backoff){0};
  log_pacing_setup(st);
  /* collectd's write threads take some thousands of values per second:
   * say what this configuration asks of them. */
  char shard[96] = "";
  if (st->shard_n > 0)
    snprintf(shard, sizeof shard, " of shard %d/%d (%zu in other shards)",
             st->shard_k, st->shard_n, st->reload.outside_shard);
  INFO(PLUGIN_NAME " plugin %s: watching %zu service%s%s from %s; up to %zu "
                   "values per service every %.3g s (%.0f values/s)",
       ms_version(), st->n_services, st->n_services == 1 ? "" : "s", shard,
       st->path, per_service, CDTIME_T_TO_DOUBLE(st->interval),
       (double)(st->n_services * per_service) /
           CDTIME_T_TO_DOUBLE(st->interval));
  if (reload_start(st) != 0) {
    ERROR(PLUGIN_NAME " plugin: cannot start the reload thread");
    state_free(st);
    return -1;
  }
  if (write_probe_register(&st->probe, st->host != NULL ? st->host : hostname_g,
                           st->shard_k) != 0)
    WARNING(PLUGIN_NAME " plugin: cannot register the write probe's "
                        "callback: new series are paced by the model alone");
  user_data_t ud = {.data = st, .free_func = state_free};
  if (plugin_register_complex_read(NULL, PLUGIN_NAME, ms_read, st->interval,
                                   &ud) != 0) {
    /* collectd 5.12 has freed st already (src/daemon/plugin.c,
     * plugin_register_complex_read: free_userdata on every failure) */
    ERROR(PLUGIN_NAME " plugin: cannot register the read callback");
    return -1;
  }
  return 0;
}

static int ms_shutdown(void) {
  write_probe_unregister();
  sfree(conf_service_file);
  sfree(conf_host);
  ms_service_file_free(&conf_file);
  conf_loaded = false;
  conf_cycle_budget = CYCLE_BUDGET_DEFAULT; /* the options' defaults again */
  conf_shard_k = conf_shard_n = 0;
  conf_new_series = PACING_AUTO;
  conf_full_every = 1;
  conf_interval = 0;
  conf_values_given = false;
  memset(conf_wanted, 0, sizeof conf_wanted);
  return 0;
}

void module_register(void) {
  plugin_register_complex_config(PLUGIN_NAME, ms_config);
  plugin_register_init(PLUGIN_NAME, ms_init);
  plugin_register_shutdown(PLUGIN_NAME, ms_shutdown);
}
