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
 *     Interval 10           # optional: seconds between cycles (default:
 *                           # the plugin's interval in collectd: the
 *                           # Interval of its <LoadPlugin> block, else
 *                           # collectd's Interval)
 *     Values "state" "storm" "tipping_headroom"   # optional: dispatch only
 *                           # these (default: all of conf/types.db)
 *   </Plugin>
 *
 * Nothing here may crash, block or flood the daemon: a service whose inputs
 * are missing reports nothing that interval and logs one rate-limited
 * warning (c_complain); the read callback always returns 0 so the daemon
 * never suspends it.
 */
#include "collectd.h"

#include "plugin.h"
#include "utils/common/common.h"
#include "utils_complain.h"

#include <math.h>
#include <pthread.h>

#include "inputs.h"
#include "reload.h"
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
  if (reload_load_first(conf_service_file, &conf_file, &conf_watch, err,
                        sizeof err) != 0) {
    ERROR(PLUGIN_NAME " plugin: %s; the service file is rejected whole, and "
                      "with it collectd's configuration: collectd does not "
                      "start until the file is fixed",
          err);
    return -1;
  }
  conf_loaded = true;
  return 0;
}

static int ms_config(oconfig_item_t *ci) {
  bool file_given = false;
  for (int i = 0; i < ci->children_num; i++) {
    oconfig_item_t *child = ci->children + i;
    if (strcasecmp("ServiceFile", child->key) == 0) {
      if (cf_util_get_string(child, &conf_service_file) != 0)
        return -1;
      file_given = true;
    } else if (strcasecmp("Host", child->key) == 0) {
      if (cf_util_get_string(child, &conf_host) != 0)
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
      /* at least 0.1 s: a tighter loop would only spin a read thread and
       * flood the write queue; at most a day */
      double seconds =
          child->values_num == 1 && child->values[0].type == OCONFIG_TYPE_NUMBER
              ? child->values[0].value.number
              : NAN;
      if (!(seconds >= 0.1 && seconds <= 86400.0) ||
          cf_util_get_cdtime(child, &conf_interval) != 0) {
        ERROR(PLUGIN_NAME " plugin: Interval must be a number of seconds "
                          "from 0.1 to 86400");
        return -1;
      }
    } else if (strcasecmp("Values", child->key) == 0) {
      conf_values_given = true;
      for (int j = 0; j < child->values_num; j++) {
        int k = child->values[j].type == OCONFIG_TYPE_STRING
                    ? ms_output_find(child->values[j].value.string)
                    : -1;
        if (k < 0) {
          ERROR(PLUGIN_NAME " plugin: Values: argument %d (%s) is not one of "
                            "the plugin's types (see its types.db)",
                j + 1,
                child->values[j].type == OCONFIG_TYPE_STRING
                    ? child->values[j].value.string
                    : "not a string");
          return -1;
        }
        conf_wanted[k] = true;
      }
    } else {
      WARNING(PLUGIN_NAME " plugin: unknown option \"%s\" ignored "
                          "(known: ServiceFile, Host, Interval, Values)",
              child->key);
    }
  }
  return file_given ? load_service_file() : 0;
}

static void state_free(void *p) {
  plugin_state *st = p;
  if (st == NULL)
    return;
  inputs_destroy(st->inputs);
  sfree(st->services);
  ms_service_file_free(&st->file);
  sfree(st->path);
  sfree(st->host);
  pthread_mutex_destroy(&st->lock);
  sfree(st);
}

/* A glob input summed without some of its matches: said at INFO,
 * rate-limited, until every match is summed again. */
static void log_glob_sums(service_state *ss,
                          const inputs_glob_sum glob[MS_INPUT_COUNT]) {
  for (int i = 0; i < MS_INPUT_COUNT; i++) {
    const inputs_glob_sum *g = &glob[i];
    if (g->matched == 0)
      continue;
    if (g->summed < g->matched)
      c_complain(LOG_INFO, &ss->partial,
                 PLUGIN_NAME " plugin: service \"%s\": input %s sums %zu "
                             "of the %zu identifiers matching '%s' (the "
                             "others have no rate yet, e.g. %s)",
                 ss->spec->name, ms_input_name((ms_input_id)i), g->summed,
                 g->matched, ss->spec->inputs[i].pattern, g->skipped);
    else
      c_release(LOG_INFO, &ss->partial,
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
 * of a read cycle carries the cycle's time.
 */
static void dispatch_report(const char *host, const char *service,
                            const ms_report *r, const bool *wanted,
                            cdtime_t now) {
  value_list_t vl = VALUE_LIST_INIT;
  value_t value;
  vl.values = &value;
  vl.values_len = 1;
  vl.time = now;
  sstrncpy(vl.host, host, sizeof vl.host);
  sstrncpy(vl.plugin, PLUGIN_NAME, sizeof vl.plugin);
  sstrncpy(vl.plugin_instance, service, sizeof vl.plugin_instance);
  for (int i = 0; i < MS_OUT_COUNT; i++) {
    if (!wanted[i] || !ms_report_output(r, (ms_output)i, &value.gauge))
      continue;
    sstrncpy(vl.type, ms_output_get((ms_output)i)->name, sizeof vl.type);
    plugin_dispatch_values(&vl);
  }
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

/*
 * Tell the operator which services report nothing, without flooding: when
 * few services have problems each is named through its own rate-limited
 * complaint (c_complain); when many do, one summary line, rate-limited too,
 * that names the first few of them and counts the others.  Recoveries
 * likewise: one line per service when few, else one line.
 */
static void log_problems(plugin_state *st, const problem *named, size_t n_bad,
                         size_t n_back, const char *const *back) {
  if (n_bad <= MAX_NAMED_PER_CYCLE) {
    for (size_t i = 0; i < n_bad; i++)
      c_complain(LOG_WARNING, &named[i].ss->complaint,
                 PLUGIN_NAME " plugin: service \"%s\": %s; nothing reported "
                             "until it is usable",
                 named[i].ss->spec->name, named[i].why);
    if (n_bad == 0)
      c_release(LOG_INFO, &st->many_bad,
                PLUGIN_NAME " plugin: every service has usable inputs again");
    else
      c_release(LOG_INFO, &st->many_bad,
                PLUGIN_NAME " plugin: only %zu service%s without usable "
                            "inputs now, named one by one",
                n_bad, n_bad == 1 ? "" : "s");
  } else {
    const char *names[MAX_NAMED_PER_CYCLE];
    for (size_t i = 0; i < MAX_NAMED_PER_CYCLE; i++)
      names[i] = named[i].ss->spec->name;
    char list[SUMMARY_NAMES_BYTES + 64];
    name_list(list, sizeof list, names, MAX_NAMED_PER_CYCLE, n_bad);
    c_complain(LOG_WARNING, &st->many_bad,
               PLUGIN_NAME " plugin: %zu of %zu services have no usable "
                           "inputs and report nothing: %s (\"%s\": %s)",
               n_bad, st->n_services, list, names[0], named[0].why);
  }
  if (n_back == 0)
    return;
  if (n_back > MAX_NAMED_PER_CYCLE) {
    char list[SUMMARY_NAMES_BYTES + 64];
    name_list(list, sizeof list, back, MAX_NAMED_PER_CYCLE, n_back);
    INFO(PLUGIN_NAME " plugin: %zu services have usable inputs again: %s",
         n_back, list);
  }
  for (size_t s = 0; s < st->n_services; s++) {
    service_state *ss = &st->services[s];
    if (!ss->just_back)
      continue;
    ss->just_back = false;
    if (n_back > MAX_NAMED_PER_CYCLE)
      C_COMPLAIN_INIT(&ss->complaint); /* released silently */
    else
      c_release(LOG_INFO, &ss->complaint,
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
    INFO(PLUGIN_NAME " plugin: service \"%s\": %s", ss->spec->name, step->info);
  const char *why = step->inference.calibration_problem;
  if (why[0] == '\0') {
    c_release(LOG_INFO, &ss->calibration,
              PLUGIN_NAME " plugin: service \"%s\": calibration inputs "
                          "usable again",
              ss->spec->name);
    return;
  }
  if (++*n_calibration <= MAX_NAMED_PER_CYCLE)
    c_complain(LOG_NOTICE, &ss->calibration,
               PLUGIN_NAME " plugin: service \"%s\": calibration: %s",
               ss->spec->name, why);
  (void)st;
}

static int ms_read(user_data_t *ud) {
  plugin_state *st = ud->data;
  pthread_mutex_lock(&st->lock);
  reload_service_file(st); /* a changed service file (reload.c) */
  cdtime_t started = cdtime();
  inputs_refresh(st->inputs);
  const char *host = st->host != NULL ? st->host : hostname_g;
  /* Count the services without usable inputs, keeping the first few
   * reasons, so the log names them one by one only when they are few. */
  problem named[MAX_NAMED_PER_CYCLE];
  size_t n_bad = 0, n_back = 0, n_calibration = 0;
  const char *back[MAX_NAMED_PER_CYCLE];
  /* stall_tolerance's searches (about 6 ms each) share a budget of
   * TOLERANCE_BUDGET_SHARE of the interval per cycle, at least one: the
   * services past it take the nearest value they remember, and search in
   * a later cycle (each waits MS_TOLERANCE_SEARCH_GAP intervals after its
   * own search, so the others get their turn). */
  cdtime_t search_spent = 0;
  cdtime_t search_budget = DOUBLE_TO_CDTIME_T(TOLERANCE_BUDGET_SHARE *
                                              CDTIME_T_TO_DOUBLE(st->interval));
  for (size_t s = 0; s < st->n_services; s++) {
    service_state *ss = &st->services[s];
    ms_inputs in;
    inputs_glob_sum glob[MS_INPUT_COUNT];
    ms_step step;
    char why[512];
    bool ok = inputs_read_service(st->inputs, s, &in, glob, why, sizeof why) ==
              INPUT_OK;
    log_glob_sums(ss, glob);
    in.interval = CDTIME_T_TO_DOUBLE(st->interval);
    if (ok) {
      unsigned long searches = ss->tracker.tolerance_searches;
      cdtime_t t0 = cdtime();
      ss->tracker.tolerance_hold =
          search_spent >= search_budget && search_spent > 0;
      ms_tracker_step(&ss->tracker, ss->spec, &in, &step);
      if (ss->tracker.tolerance_searches != searches)
        search_spent += cdtime() - t0;
      ok = step.ok;
      if (!ok)
        sstrncpy(why, step.problem, sizeof why);
    }
    if (!ok) {
      if (n_bad < MAX_NAMED_PER_CYCLE) {
        named[n_bad].ss = ss;
        sstrncpy(named[n_bad].why, why, sizeof named[n_bad].why);
      }
      n_bad++;
      ss->in_trouble = true;
      ss->ok_streak = 0;
      /* the heartbeat, alone: a zeroed report has reporting = 0 and no
       * other value (doc/outputs.md) */
      static const ms_report none;
      dispatch_report(host, ss->spec->name, &none, st->wanted, started);
      continue;
    }
    if (ss->in_trouble && ++ss->ok_streak >= USABLE_AFTER) {
      ss->in_trouble = false;
      ss->ok_streak = 0;
      ss->just_back = true;
      if (n_back < MAX_NAMED_PER_CYCLE)
        back[n_back] = ss->spec->name;
      n_back++;
    }
    dispatch_report(host, ss->spec->name, &step.report, st->wanted, started);
    dispatch_notes(host, ss->spec->name, &step);
    log_calibration(st, ss, &step, &n_calibration);
  }
  log_problems(st, named, n_bad, n_back, back);
  if (n_calibration > MAX_NAMED_PER_CYCLE)
    c_complain(LOG_NOTICE, &st->many_calibration,
               PLUGIN_NAME " plugin: %zu services have calibration inputs "
                           "that gave no sample this interval",
               n_calibration);
  else
    c_release(LOG_INFO, &st->many_calibration,
              PLUGIN_NAME " plugin: calibration inputs usable again");
  /* The cost of a cycle, so an operator can see what the plugin takes from
   * the daemon: once at start, and whenever it exceeds half the interval. */
  cdtime_t took = cdtime() - started;
  cdtime_t interval = st->interval;
  if (st->cycles++ == 0)
    INFO(PLUGIN_NAME " plugin: first read cycle of %zu service%s took %.3f "
                     "ms",
         st->n_services, st->n_services == 1 ? "" : "s",
         1e3 * CDTIME_T_TO_DOUBLE(took));
  if (took > interval / 2)
    c_complain(LOG_WARNING, &st->slow_cycle,
               PLUGIN_NAME " plugin: a read cycle of %zu services took %.1f "
                           "ms, more than half the %.1f s interval",
               st->n_services, 1e3 * CDTIME_T_TO_DOUBLE(took),
               CDTIME_T_TO_DOUBLE(interval));
  else
    c_release(LOG_INFO, &st->slow_cycle,
              PLUGIN_NAME " plugin: read cycles are back under half the "
                          "interval");
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
  C_COMPLAIN_INIT(&st->slow_cycle);
  C_COMPLAIN_INIT(&st->many_bad);
  C_COMPLAIN_INIT(&st->many_calibration);
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
  st->services = calloc(st->n_services, sizeof *st->services);
  if (st->services == NULL) {
    ERROR(PLUGIN_NAME " plugin: out of memory for %zu services",
          st->n_services);
    state_free(st);
    return -1;
  }
  for (size_t i = 0; i < st->n_services; i++)
    reload_service_init(&st->services[i], &st->file.services[i]);
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
  /* collectd's write threads take some thousands of values per second:
   * say what this configuration asks of them. */
  INFO(PLUGIN_NAME " plugin %s: watching %zu service%s from %s; up to %zu "
                   "values per service every %.3g s (%.0f values/s)",
       ms_version(), st->n_services, st->n_services == 1 ? "" : "s", st->path,
       per_service, CDTIME_T_TO_DOUBLE(st->interval),
       (double)(st->n_services * per_service) /
           CDTIME_T_TO_DOUBLE(st->interval));
  user_data_t ud = {.data = st, .free_func = state_free};
  if (plugin_register_complex_read(NULL, PLUGIN_NAME, ms_read, st->interval,
                                   &ud) != 0) {
    ERROR(PLUGIN_NAME " plugin: cannot register the read callback");
    state_free(st);
    return -1;
  }
  return 0;
}

static int ms_shutdown(void) {
  sfree(conf_service_file);
  sfree(conf_host);
  ms_service_file_free(&conf_file);
  conf_loaded = false;
  return 0;
}

void module_register(void) {
  plugin_register_complex_config(PLUGIN_NAME, ms_config);
  plugin_register_init(PLUGIN_NAME, ms_init);
  plugin_register_shutdown(PLUGIN_NAME, ms_shutdown);
}
