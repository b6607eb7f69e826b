/* SPDX-License-Identifier: MIT */
/*
 * Speed of the simulation engines, reported, never judged (STYLE: no timed
 * tests).  Run: build/bench/bench_sim [--quick]; `make bench` runs it, and
 * bench/smoke.sh runs it with --quick (a thousandth of the work) so that it
 * does not rot.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim.h"

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 1, or 1e-3 with --quick: the share of the full work done */
static double scale = 1.0;
static int failures;

static void bench(const char *what, ms_sim_engine e, ms_sim_config *c) {
  ms_sim_summary sum;
  ms_error err;
  char label[64];
  snprintf(label, sizeof label, "%s%s", what, scale < 1 ? " (x 1/1000)" : "");
  what = label;
  double t0 = cpu_seconds();
  if (ms_sim_run(e, c, NULL, NULL, &sum, &err) != MS_OK) {
    printf("%s: %s\n", what, err.msg);
    failures++;
    return;
  }
  double dt = cpu_seconds() - t0;
  printf("%-44s %10.0f requests %10.0f attempts %10.0f %s in %6.3f s "
         "CPU: %.3g requests/s\n",
         what, sum.requests, sum.attempts, sum.events,
         e == MS_ENGINE_DES ? "events" : "bins  ", dt, sum.requests / dt);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--quick") == 0) {
    scale = 1e-3;
  } else if (argc != 1) {
    fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
    return 2;
  }
  ms_service_params s;
  ms_failure_model_erlang(&s.model, 10, 10.0, 1.0);
  s.model.base_failure = 0.01;
  ms_retry_policy_fixed(&s.policy, 3);
  ms_sim_config c;
  ms_sim_config_init(&c, &s);

  /* 10^6 requests, healthy: 60/s for 16,667 s */
  c.scenario.offered_load = 60.0;
  c.scenario.duration = scale * 1e6 / 60.0;
  bench("DES, healthy, 10^6 requests", MS_ENGINE_DES, &c);
  /* 10^6 requests in a storm: every request makes 4 attempts */
  ms_trigger *t = &c.scenario.triggers[c.scenario.n_triggers++];
  memset(t, 0, sizeof *t);
  t->kind = MS_TRIGGER_LOAD;
  t->load = 60.0;
  t->start = 10.0;
  t->hold = 20.0;
  bench("DES, storm, 10^6 requests", MS_ENGINE_DES, &c);
  /* a large pool: 1000 servers, 6000 requests/s */
  ms_failure_model_erlang(&c.service.model, 1000, 10.0, 1.0);
  c.scenario.n_triggers = 0;
  c.scenario.offered_load = 6000.0;
  c.scenario.duration = scale * 1e6 / 6000.0;
  bench("DES, 1000 servers, 10^6 requests", MS_ENGINE_DES, &c);

  ms_sim_config_init(&c, &s);
  c.scenario.offered_load = 60.0;
  c.scenario.duration = scale * 3600.0;
  c.backoff = (ms_backoff){MS_BACKOFF_DECORRELATED, 0.1, 10.0, 0};
  bench("fluid memoryless, 1 h, decorrelated jitter", MS_ENGINE_FLUID, &c);
  c.queue_memory = true;
  bench("fluid queue memory, 1 h, decorrelated jitter", MS_ENGINE_FLUID, &c);
  return failures != 0;
}
