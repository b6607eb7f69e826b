/* SPDX-License-Identifier: MIT */
/*
 * metastable erlang: the Erlang B and C calculator, and the M/M/c wait tail
 * P(W > T), with natural logs that stay finite where the values underflow a
 * double (model/erlang.c: Loader's pmf, Temme's expansion).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "json.h"

static const char usage[] =
    "Usage: metastable erlang --servers N --offered A\n"
    "                         [--service-rate MU | --service-time S "
    "--timeout T]\n"
    "                         [--queue-limit K] [--format text|json]\n"
    "\n"
    "Erlang B (M/M/c/c blocking), Erlang C (M/M/c probability of waiting) "
    "and\n"
    "their natural logs; with a service rate and a timeout also P(W > T), "
    "the\n"
    "probability that an arrival waits longer than T, and P(W + S > T), "
    "that\n"
    "its response (wait and exponential service) does.  At A >= N the "
    "loss\n"
    "system still has its B; the queue has no steady state, and C and the\n"
    "tails are 1 (every arrival waits, ever longer).  With --queue-limit K,\n"
    "the M/M/c/K queue at any A > 0: the share of arrivals rejected\n"
    "(blocking_probability) and the tails of the admitted ones.\n";

enum {
  OPT_OFFERED = MS_OPT_SHARED_END,
};

/* The model's options where they mean the same (their ranges too). */
static const ms_cli_option options[] = {
    MS_CLI_SHARED(MS_OPT_SERVERS),
    {"--offered", "A", OPT_OFFERED,
     "offered traffic in erlangs (arrival rate / service rate of one "
     "server), A > 0"},
    MS_CLI_SHARED(MS_OPT_SERVICE_RATE),
    MS_CLI_SHARED(MS_OPT_SERVICE_TIME),
    MS_CLI_SHARED(MS_OPT_TIMEOUT),
    MS_CLI_SHARED(MS_OPT_QUEUE_LIMIT),
    {"--format", "text|json", MS_OPT_FORMAT,
     "JSON keys: erlang_b, erlang_c, ln_erlang_b, ln_erlang_c, steady_state "
     "(A < N) (with --queue-limit: blocking_probability, "
     "ln_blocking_probability), and wait_tail, ln_wait_tail, response_tail, "
     "ln_response_tail; every number to "
     "full double precision"},
    MS_CLI_END,
};

static const ms_cli_syntax syntax = {usage, options};

/* A probability for people, also where it underflows (from its log), and
 * then its natural log on the next line. */
static void print_probability(const char *name, double v, double ln_v) {
  char a[32], ln_name[32];
  if (v > 0) {
    printf("%-13s %s\n", name, ms_format_double(a, v));
  } else {
    double l10 = ln_v / log(10.0);
    double e = floor(l10);
    printf("%-13s %.6fe%.0f (below the smallest double; from its log)\n", name,
           pow(10.0, l10 - e), e);
  }
  snprintf(ln_name, sizeof ln_name, "ln_%s", name);
  printf("%-13s %s\n", ln_name, ms_format_double(a, ln_v));
}

/* What the command line asks for.  A NaN service rate or timeout is one
 * not given: the wait tail needs both. */
typedef struct {
  long servers; /* 0 until given */
  double offered, mu, timeout;
  ms_cli_shared sh; /* --format */
  long queue_limit; /* -1 until given: M/M/c/K with K waiting places */
  bool help;        /* --help: print it and do nothing else */
} erlang_args;

/* One option of the command (ms_cli_take). */
static int take_option(void *args, int c, const char *arg) {
  erlang_args *a = args;
  int r = 0;
  switch (c) {
  case MS_OPT_SERVERS: {
    double v;
    r = ms_cli_param("--servers", arg, MS_PARAM_SERVERS, &v);
    a->servers = (long)v;
    break;
  }
  case OPT_OFFERED:
    r = ms_cli_real("--offered", arg, 0, INFINITY, MS_RANGE_LO_OPEN,
                    &a->offered);
    break;
  case MS_OPT_SERVICE_RATE:
    if (!isnan(a->mu))
      return ms_cli_usage("give --service-rate or --service-time, not "
                          "both");
    r = ms_cli_param("--service-rate", arg, MS_PARAM_SERVICE_RATE, &a->mu);
    break;
  case MS_OPT_SERVICE_TIME: {
    if (!isnan(a->mu))
      return ms_cli_usage("give --service-rate or --service-time, not "
                          "both");
    double t;
    r = ms_cli_param("--service-time", arg, MS_PARAM_SERVICE_TIME, &t);
    a->mu = 1.0 / t;
    break;
  }
  case MS_OPT_TIMEOUT:
    r = ms_cli_param("--timeout", arg, MS_PARAM_TIMEOUT, &a->timeout);
    break;
  case MS_OPT_QUEUE_LIMIT: {
    double v;
    r = ms_cli_param("--queue-limit", arg, MS_PARAM_QUEUE_LIMIT, &v);
    a->queue_limit = (long)v;
    break;
  }
  default:
    return ms_cli_shared_option(&a->sh, c, arg);
  }
  return r;
}

/* Take the options in the order given, stopping at the first bad one (or
 * at --help), so that the message names the option the user got wrong
 * first.  Returns 0 or the exit code of the message printed. */
static int parse_options(erlang_args *a, int argc, char **argv) {
  return ms_cli_parse(argc, argv, &syntax, NULL, take_option, a, &a->help,
                      NULL);
}

/* The options that only make sense together: the servers and the traffic
 * always, and the service rate with the timeout.  Returns 0 or
 * MS_EXIT_USAGE. */
static int check_args(const erlang_args *a) {
  if (a->servers == 0)
    return ms_cli_usage("give the number of servers with --servers N");
  if (isnan(a->offered))
    return ms_cli_usage("give the offered traffic with --offered A "
                        "(erlangs)");
  if (isnan(a->mu) != isnan(a->timeout))
    return ms_cli_usage("P(W > T) needs both %s",
                        isnan(a->mu) ? "--service-rate (or --service-time)"
                                     : "--timeout");
  return 0;
}

/* JSON for programs: every number to full precision, the wait tail's keys
 * only when it was asked for. */
static void write_json(const erlang_args *a, const ms_erlang_values *v,
                       bool tail, double ln_tail, double ln_resp) {
  ms_json j;
  ms_json_init(&j, stdout, 1);
  ms_json_begin_object(&j, NULL);
  ms_json_int(&j, "servers", a->servers);
  ms_json_number(&j, "offered", a->offered);
  ms_json_number(&j, "erlang_b", v->erlang_b);
  ms_json_number(&j, "erlang_c", v->erlang_c);
  ms_json_number(&j, "ln_erlang_b", v->ln_erlang_b);
  ms_json_number(&j, "ln_erlang_c", v->ln_erlang_c);
  ms_json_bool(&j, "steady_state", v->steady_state);
  if (tail) {
    ms_json_number(&j, "service_rate", a->mu);
    ms_json_number(&j, "timeout", a->timeout);
    ms_json_number(&j, "arrival_rate", a->offered * a->mu);
    ms_json_number(&j, "wait_tail", exp(ln_tail));
    ms_json_number(&j, "ln_wait_tail", ln_tail);
    ms_json_number(&j, "response_tail", exp(ln_resp));
    ms_json_number(&j, "ln_response_tail", ln_resp);
  }
  ms_json_end_object(&j);
  ms_json_finish(&j);
}

/* Text for people: one value a line, with the utilization beside the
 * traffic and the probabilities that underflow written from their logs. */
static void write_text(const erlang_args *a, const ms_erlang_values *v,
                       bool tail, double ln_tail, double ln_resp) {
  char b1[32], b2[32], b3[32];
  printf("%-13s %ld\n", "servers", a->servers);
  printf("%-13s %s erlangs (utilization %.4g %%)\n", "offered",
         ms_format_double(b1, a->offered),
         100 * a->offered / (double)a->servers);
  print_probability("erlang_b", v->erlang_b, v->ln_erlang_b);
  if (v->steady_state)
    print_probability("erlang_c", v->erlang_c, v->ln_erlang_c);
  else
    printf("%-13s 1 (offered >= servers: the queue has no steady state, "
           "every arrival waits)\n%-13s 0\n",
           "erlang_c", "ln_erlang_c");
  if (tail) {
    printf("%-13s service rate %s/s per server, arrival rate %s/s, "
           "timeout %s s\n",
           "queue", ms_format_double(b1, a->mu),
           ms_format_double(b2, a->offered * a->mu),
           ms_format_double(b3, a->timeout));
    print_probability("wait_tail", exp(ln_tail), ln_tail);
    print_probability("response_tail", exp(ln_resp), ln_resp);
  }
}

/* The M/M/c/K queue (--queue-limit): its blocking probability and, with a
 * service rate and a timeout, the wait tail of the admitted arrivals. */
static int run_queue_limited(const erlang_args *a) {
  ms_error err;
  double ln_block, ln_tail = 0, ln_resp = 0;
  if (ms_mmck_ln_block(a->servers, a->queue_limit, a->offered, &ln_block,
                       &err) != MS_OK)
    return ms_cli_fail("%s", err.msg);
  bool tail = !isnan(a->mu);
  if (tail && ms_mmck_ln_wait_tail(a->servers, a->queue_limit, a->mu,
                                   a->offered * a->mu, a->timeout, &ln_tail,
                                   &err) != MS_OK)
    return ms_cli_fail("%s", err.msg);
  if (tail && ms_mmck_ln_response_tail(a->servers, a->queue_limit, a->mu,
                                       a->offered * a->mu, a->timeout, &ln_resp,
                                       &err) != MS_OK)
    return ms_cli_fail("%s", err.msg);
  /* K = 0: no admitted arrival waits, the tail is 0 */
  double wait = a->queue_limit > 0 ? exp(ln_tail) : 0.0;
  if (a->sh.format == MS_FORMAT_JSON) {
    ms_json j;
    ms_json_init(&j, stdout, 1);
    ms_json_begin_object(&j, NULL);
    ms_json_int(&j, "servers", a->servers);
    ms_json_int(&j, "queue_limit", a->queue_limit);
    ms_json_number(&j, "offered", a->offered);
    ms_json_number(&j, "blocking_probability", exp(ln_block));
    ms_json_number(&j, "ln_blocking_probability", ln_block);
    if (tail) {
      ms_json_number(&j, "service_rate", a->mu);
      ms_json_number(&j, "timeout", a->timeout);
      ms_json_number(&j, "arrival_rate", a->offered * a->mu);
      ms_json_number(&j, "wait_tail", wait);
      if (a->queue_limit > 0)
        ms_json_number(&j, "ln_wait_tail", ln_tail);
      ms_json_number(&j, "response_tail", exp(ln_resp));
      ms_json_number(&j, "ln_response_tail", ln_resp);
    }
    ms_json_end_object(&j);
    ms_json_finish(&j);
    return ms_cli_finish_output(MS_EXIT_OK);
  }
  char b1[32], b2[32], b3[32];
  printf("%-13s %ld, queue limit %ld (M/M/c/K)\n", "servers", a->servers,
         a->queue_limit);
  printf("%-13s %s erlangs (utilization %.4g %%)\n", "offered",
         ms_format_double(b1, a->offered),
         100 * a->offered / (double)a->servers);
  print_probability("blocking_probability", exp(ln_block), ln_block);
  if (tail) {
    printf("%-13s service rate %s/s per server, arrival rate %s/s, "
           "timeout %s s\n",
           "queue", ms_format_double(b1, a->mu),
           ms_format_double(b2, a->offered * a->mu),
           ms_format_double(b3, a->timeout));
    if (a->queue_limit > 0)
      print_probability("wait_tail", wait, ln_tail);
    else
      printf("%-13s 0 (no waiting places)\n", "wait_tail");
    print_probability("response_tail", exp(ln_resp), ln_resp);
  }
  return ms_cli_finish_output(MS_EXIT_OK);
}

static int run(erlang_args *a, int argc, char **argv) {
  int r = parse_options(a, argc, argv);
  if (r != 0 || a->help)
    return r;
  if ((r = check_args(a)) != 0)
    return r;
  if (a->queue_limit >= 0)
    return run_queue_limited(a);

  ms_erlang_values v;
  ms_error err;
  if (ms_erlang(a->servers, a->offered, &v, &err) != MS_OK)
    return ms_cli_fail("%s", err.msg);
  bool tail = !isnan(a->mu);
  double ln_tail = 0, ln_resp = 0;
  if (tail && ms_ln_wait_tail(a->servers, a->mu, a->offered * a->mu, a->timeout,
                              &ln_tail, &err) != MS_OK)
    return ms_cli_fail("%s", err.msg);
  if (tail && v.steady_state &&
      ms_ln_response_tail(a->servers, a->mu, a->offered * a->mu, a->timeout,
                          1.0, &ln_resp, &err) != MS_OK)
    return ms_cli_fail("%s", err.msg);
  if (a->sh.format == MS_FORMAT_JSON)
    write_json(a, &v, tail, ln_tail, ln_resp);
  else
    write_text(a, &v, tail, ln_tail, ln_resp);
  return ms_cli_finish_output(MS_EXIT_OK);
}

int ms_cmd_erlang(int argc, char **argv) {
  erlang_args a = {.servers = 0,
                   .offered = NAN,
                   .mu = NAN,
                   .timeout = NAN,
                   .queue_limit = -1};
  ms_cli_shared_init(&a.sh, MS_FORMAT_TEXT, MS_FORMATS_TEXT_JSON);
  return run(&a, argc, argv);
}
