/* SPDX-License-Identifier: MIT */
/*
 * metastable: the retry-feedback model of collectd-metastable on the command
 * line.  This file only dispatches: one sub-command per file, listed in the
 * table below (see common.h for how to add one).
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "ms_config.h"

static const ms_cli_command commands[] = {
    {"solve", ms_cmd_solve,
     "tipping and recovery loads; the equilibria and state at a load"},
    {"erlang", ms_cmd_erlang,
     "Erlang B, Erlang C and the M/M/c wait tail, with their logs"},
    {"sweep", ms_cmd_sweep,
     "the equilibria over a range of loads or a knob; bifurcation plot"},
    {"lab", ms_cmd_lab,
     "the capacity model in exact arithmetic: iterates, the fixed point"},
    {"replay", ms_cmd_replay,
     "run a metrics trace through the plugin's per-interval logic"},
    {"simulate", ms_cmd_simulate,
     "the path of a retry storm: fluid or discrete-event simulation"},
    {"check", ms_cmd_check,
     "validate a service file as the plugin does; its services' loads"},
    {"init", ms_cmd_init,
     "draft a service file from the identifiers a running collectd holds"},
    {"fit", ms_cmd_fit,
     "estimate a service's parameters from a trace, with 95 % intervals"},
    {"plan", ms_cmd_plan,
     "a capacity plan in units: amplification, loads, bounds, health"},
    {"escapes", ms_cmd_escapes,
     "the escapes from the retry loop compared: bands, costs"},
    {"tolerance", ms_cmd_tolerance,
     "the longest stall or spike survived at a load; the trigger map"},
    {"recommend", ms_cmd_recommend,
     "safe retries, budget, servers and timeout at a peak load"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static int top_help(void) {
  printf("Usage: metastable COMMAND [OPTIONS]\n"
         "\n"
         "The retry-feedback model of collectd-metastable without collectd:\n"
         "capacity planning (\"what if we add a retry?\") and post-mortems\n"
         "(\"how close were we?\").\n"
         "\n"
         "Commands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++)
    printf("  %-10s %s\n", commands[i].name, commands[i].summary);
  printf("\n"
         "'metastable COMMAND --help' shows a command's options; 'man "
         "metastable'\n"
         "has them all.  Exit status: 0 success, 1 runtime error (a file, "
         "an input\n"
         "row, the model), 2 usage error, 130 interrupted (Ctrl-C).\n");
  return ms_cli_finish_output(MS_EXIT_OK);
}

static const ms_cli_command *find(const char *name) {
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return ms_cli_usage("no command given");
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
    return top_help();
  if (strcmp(name, "--version") == 0) {
    printf("metastable (%s) %s\n", PACKAGE_NAME, ms_version());
    return ms_cli_finish_output(MS_EXIT_OK);
  }
  if (strcmp(name, "help") == 0) {
    if (argc < 3)
      return top_help();
    const ms_cli_command *c = find(argv[2]);
    if (c == NULL)
      return ms_cli_usage("help: unknown command '%s'", argv[2]);
    ms_cli_set_command(c->name);
    static char help_option[] = "--help";
    char *args[] = {argv[2], help_option, NULL};
    return c->main(2, args);
  }
  const ms_cli_command *c = find(name);
  if (c == NULL)
    return ms_cli_usage("unknown command '%s'", name);
  ms_cli_set_command(c->name);
  return c->main(argc - 1, argv + 1);
}
