// SPDX-License-Identifier: MIT
// The node lab's client (lab/node-lab.sh, doc/storm-lab.md): Poisson
// arrivals through undici's RetryAgent, the retry policy as undici ships
// it, counted into collectd's statsd with the Node.js recipe's Counters
// (conf/recipes/node/client.mjs, copied beside this file).
//
//   node retry-client.mjs URL RATE_FILE TOTALS STATSD_PORT PREFIX
//
// The offered load is the number in RATE_FILE (requests/s; 0 pauses),
// read every 100 ms.  The policy (lab/service-node.yaml says the same to
// the model): an attempt fails on a 503 or when its response headers take
// longer than headersTimeout (undici's fast timer: it fires on a 499 ms
// tick, lab/service-node.yaml); it is retried up to maxRetries times,
// after minTimeout, then timeoutFactor times longer each retry.  TOTALS
// is rewritten every 100 ms: "requests ok attempts failed_attempts
// timeouts sum_ms min_ms max_ms", counts since the start (ok: requests
// answered 200, the goodput) and the headers timeouts that fired, timed
// from the attempt's dispatch: when undici's timer really fires.
// Needs undici (lab/node/package.json).
import fs from "node:fs";
import { Agent, DecoratorHandler, RetryAgent, request } from "undici";
import { Counters } from "./client.mjs";

export const POLICY = {
  headersTimeout: 400, // ms, per attempt
  maxRetries: 2,
  minTimeout: 10, // ms before the first retry
  timeoutFactor: 2,
  maxTimeout: 30000,
  statusCodes: [503],
  errorCodes: ["UND_ERR_HEADERS_TIMEOUT", "ECONNRESET", "ECONNREFUSED", "EPIPE", "UND_ERR_SOCKET"],
};

const [url, rateFile, totalsFile, statsdPort, prefix] = process.argv.slice(2);
if (!prefix) {
  console.error("usage: retry-client.mjs URL RATE_FILE TOTALS STATSD_PORT PREFIX");
  process.exit(2);
}
const counters = new Counters({ prefix, port: Number(statsdPort) });
const totals = { requests: 0, ok: 0, attempts: 0, failed: 0 };
// the headers timeouts that fired: how many, and their times from the
// attempt's dispatch, ms (sum, shortest, longest)
const fired = { n: 0, sum: 0, min: Infinity, max: 0 };

// One attempt's handler: counts the attempt, and counts it failed once on
// a 5xx or an error (a retried 503 is aborted, so it ends in onError too).
class CountedAttempt extends DecoratorHandler {
  constructor(handler) {
    super(handler);
    this.failed = false;
    this.t0 = performance.now();
    totals.attempts++;
    counters.inc("attempts");
  }

  fail() {
    if (this.failed) return;
    this.failed = true;
    totals.failed++;
    counters.inc("failed_attempts");
  }

  onHeaders(statusCode, ...rest) {
    if (statusCode >= 500) this.fail();
    return super.onHeaders(statusCode, ...rest);
  }

  onError(err) {
    if (err?.code === "UND_ERR_HEADERS_TIMEOUT") {
      const ms = performance.now() - this.t0;
      fired.n++;
      fired.sum += ms;
      fired.min = Math.min(fired.min, ms);
      fired.max = Math.max(fired.max, ms);
    }
    this.fail();
    return super.onError(err);
  }
}

// The connection pool under the retries: every attempt of RetryAgent goes
// through dispatch.  No limit on connections, so the client's own pool
// never queues an attempt.
class CountingAgent extends Agent {
  dispatch(opts, handler) {
    return super.dispatch(opts, new CountedAttempt(handler));
  }
}

const dispatcher = new RetryAgent(
  new CountingAgent({
    headersTimeout: POLICY.headersTimeout,
    bodyTimeout: POLICY.headersTimeout,
    connections: null,
  }),
  {
    maxRetries: POLICY.maxRetries,
    minTimeout: POLICY.minTimeout,
    timeoutFactor: POLICY.timeoutFactor,
    maxTimeout: POLICY.maxTimeout,
    statusCodes: POLICY.statusCodes,
    errorCodes: POLICY.errorCodes,
    methods: ["GET"],
  },
);

async function one() {
  totals.requests++;
  counters.inc("requests");
  try {
    const res = await request(url, { dispatcher });
    await res.body.text();
    if (res.statusCode === 200) totals.ok++;
  } catch {
    // the last attempt failed: the request is lost
  }
}

let rate = 0;
function readRate() {
  try {
    const r = Number(fs.readFileSync(rateFile, "utf8"));
    rate = r >= 0 ? r : 0;
  } catch {
    rate = 0;
  }
}

function writeTotals() {
  const t = totals;
  const f = fired;
  const timers = f.n > 0 ? `${f.n} ${f.sum.toFixed(1)} ${f.min.toFixed(1)} ${f.max.toFixed(1)}` : "0 0 0 0";
  fs.writeFileSync(`${totalsFile}.tmp`, `${t.requests} ${t.ok} ${t.attempts} ${t.failed} ${timers}\n`);
  fs.renameSync(`${totalsFile}.tmp`, totalsFile);
}

// Poisson arrivals: exponential gaps at the current rate; the arrivals
// due are sent together when the event loop comes back late.
let next = performance.now();
function arrive() {
  const now = performance.now();
  if (rate <= 0) {
    next = now + 100;
  } else {
    while (next <= now) {
      one();
      next += (-Math.log(1 - Math.random()) / rate) * 1000;
    }
  }
  setTimeout(arrive, Math.max(0, next - performance.now()));
}

readRate();
writeTotals();
setInterval(readRate, 100);
setInterval(writeTotals, 100);
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, async () => {
    await counters.close();
    process.exit(0);
  });
}
arrive();
