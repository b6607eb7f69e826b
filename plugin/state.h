/* SPDX-License-Identifier: MIT */
/*
 * collectd-metastable: the plugin's state, shared by the read callback
 * (plugin/metastable.c) and the service file's reload (plugin/reload.c).
 * Glue only (doc/design.md §3); collectd's headers come first.
 */
#ifndef MS_PLUGIN_STATE_H
#define MS_PLUGIN_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "inputs.h"
#include "pacing.h"
#include "service.h"
#include "write_probe.h"

/*
 * ms_plugin_log: collectd's plugin_log with control bytes escaped as the
 * command escapes them (service/sanitize.h): the formatted line is passed
 * through ms_sanitize, so that an identifier or a key of the service file
 * with ESC ] 0; ... BEL cannot reach collectd's log raw.  Every line the
 * plugin writes goes through it: ERROR, WARNING, NOTICE and INFO are
 * redefined here, and ms_log and its kin call it.  A line is cut at 1023
 * bytes, then at 2047 once escaped.
 */
void ms_plugin_log(int level, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* The read thread's CPU time, cdtime_t units (plugin/metastable.c;
 * CycleBudget counts it). */
cdtime_t ms_read_thread_cpu(void);

#undef ERROR
#undef WARNING
#undef NOTICE
#undef INFO
#define ERROR(...) ms_plugin_log(LOG_ERR, __VA_ARGS__)
#define WARNING(...) ms_plugin_log(LOG_WARNING, __VA_ARGS__)
#define NOTICE(...) ms_plugin_log(LOG_NOTICE, __VA_ARGS__)
#define INFO(...) ms_plugin_log(LOG_INFO, __VA_ARGS__)

/* The back-off of one rate-limited log line (metastable.c: ms_complain):
 * said at most once per `interval`, which starts at the plugin's interval
 * and doubles at each line, up to a day, as collectd's utils_complain.c
 * does; ms_release says the condition is over and resets it; a line
 * about a new reason restarts it (backoff_reason).  Zeroed: nothing said
 * yet. */
typedef struct {
  cdtime_t last;     /* when it was last said */
  cdtime_t interval; /* quiet until last + interval; 0 after a release */
  uint64_t why[2];   /* the last two reasons (backoff_reason), newest first */
} log_backoff;

typedef struct {
  const ms_service_spec *spec;
  ms_tracker tracker;
  log_backoff complaint;
  log_backoff partial;     /* a glob summed without some of its matches */
  log_backoff calibration; /* a calibration input gave no sample */
  bool in_trouble;         /* complained about, not yet declared usable */
  bool just_back;          /* declared usable again this cycle */
  unsigned ok_streak;      /* usable intervals in a row while in trouble */
  pacing_service pacing;   /* its series in collectd's write path */
} service_state;

/* What the reload (plugin/reload.c) remembers of the service file. */
typedef struct {
  bool started; /* the file loaded with the configuration is known */
  dev_t dev;    /* stat(2) of the file last looked at */
  ino_t ino;
  off_t size;
  struct timespec mtime;
  uint64_t running;     /* hash of the contents in use */
  bool has_rejected;    /* a content was refused and logged */
  uint64_t rejected;    /* its hash (or its read error's) */
  bool missing;         /* the file is gone; warned once */
  size_t outside_shard; /* services of the file in use left out: other
                           shards' */
} reload_watch;

/* The reload thread (plugin/reload.c): what it and the read cycle share,
 * under mu.  A look at the file runs when a read cycle asks for it (kicked)
 * and no complete set waits to be swapped in (pending). */
struct reload_set; /* reload.c */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a kick, the stop, the end of a look */
  pthread_t thread;  /* valid while running */
  bool running;      /* started and not yet joined */
  atomic_bool stop;  /* shutdown: the thread ends, a parse is cancelled */
  bool kicked;       /* a read cycle asked for a look */
  bool busy;         /* a look under way */
  struct reload_set *pending; /* complete, not yet swapped in */
  struct reload_set *retired; /* swapped out, for the thread to free */
} reload_thread;

typedef struct {
  pthread_mutex_t lock;
  pthread_mutex_t log_lock; /* log_window, log_lines, log_suppressed: the
                               read cycle's and the reload thread's lines */
  char *path;
  char *host; /* NULL: collectd's Hostname */
  ms_service_file file;
  service_state **services; /* services[i] of file.services[i]; each its
                               own allocation, so that a reload moves a
                               kept one and never copies it (2.8 KB) */
  size_t n_services;
  inputs_t *inputs;             /* globs matched, COUNTER values seen */
  bool wanted[MS_OUT_COUNT];    /* outputs to dispatch */
  cdtime_t interval;            /* between read cycles */
  unsigned long cycles;         /* read cycles run */
  log_backoff slow_cycle;       /* a cycle took more than half the interval */
  log_backoff many_bad;         /* many services without usable inputs */
  log_backoff many_calibration; /* many calibration inputs unusable */
  bool summary_mode;            /* many_bad's summary in use */
  unsigned few_streak;          /* cycles with few bad, in summary mode */
  double budget_share;          /* CycleBudget */
  int shard_k, shard_n;         /* Shard "K/N" (0/0: every service) */
  size_t next;                  /* first service of the next cycle */
  size_t next_search;           /* first service run_searches tries */
  size_t next_hazard;           /* first service run_hazard_builds tries */
  size_t next_safe;             /* first service run_safe_builds tries */
  log_backoff deferred;         /* services carried to the next cycle */
  uint64_t log_window;          /* the minute the counts below are of */
  unsigned log_lines;           /* lines logged in it */
  size_t log_suppressed;        /* lines left out in it */
  char log_outcome[1024];       /* the last reload outcome the bound left
                                   out ("" when none): said when the next
                                   minute starts (ms_log_outcome) */
  int log_outcome_level;
  reload_watch reload;    /* the service file, watched for changes:
                             the reload thread's own once it runs */
  reload_thread reloader; /* the thread that reads and builds a new
                             file's services (reload.h) */
  pacing pacing;          /* new series, FullEvery (pacing.h) */
  log_backoff warming;    /* new series held back */
  write_probe probe;      /* the write path's feedback (write_probe.h) */
  log_backoff shedding;   /* cycles with the essential values only */
  bool probe_lost_said;   /* the probe's loss is logged */
} plugin_state;

/*
 * ms_log: one line at level (LOG_ERR .. LOG_INFO) under the plugin-wide
 * bound of metastable.c (at most 30 lines a minute of the clock, then one
 * NOTICE counting those left out).  Thread-safe (st->log_lock): the read
 * cycle and the reload thread both log through it.  The line is cut at
 * 1023 bytes.
 */
__attribute__((format(printf, 3, 4))) void ms_log(plugin_state *st, int level,
                                                  const char *format, ...);

/*
 * ms_log_outcome: a line that says what became of the service file (a
 * reload, a refusal, the file gone), under the same bound as ms_log; when
 * the bound leaves it out it is kept, replacing an older one, and said
 * first when the next minute starts, so that the last outcome always
 * reaches the log (a refusal once left out was never said: a content is
 * refused once).  Thread-safe, as ms_log.
 */
__attribute__((format(printf, 3, 4))) void
ms_log_outcome(plugin_state *st, int level, const char *format, ...);

#endif
