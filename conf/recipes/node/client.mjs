// SPDX-License-Identifier: MIT
// collectd-metastable recipe: a Node.js client with a retry policy that
// counts its requests, attempts and failed attempts into collectd's statsd
// plugin (doc/recipes.md, "Node.js client").  Node 18 or later, nothing
// but its standard library.
//
//   import { Counters, fetchWithRetry } from "./client.mjs";
//   const counters = new Counters({ prefix: "checkout" });
//   const res = await fetchWithRetry("http://checkout.internal/api", { counters });
//
// Run alone, it is a load generator: RATE requests a second for SECONDS,
// each numbered (?n=...), then one line of JSON with what it counted.
//
//   node client.mjs URL RATE SECONDS [STATSD_HOST:PORT]
import dgram from "node:dgram";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";

// The retry policy, with the service file's key of each setting.
export const POLICY = {
  retries: 2, // retries: attempts after the first
  timeoutMs: 500, // timeout: one attempt, its body included
  backoffMs: 50, // the first wait, doubled each retry, full jitter
};

// Counters summed in the process and sent once a second, one packet:
// PREFIX.requests, PREFIX.attempts, PREFIX.failed_attempts.  totals: the
// counts since the start.
export class Counters {
  constructor({ prefix, host = "127.0.0.1", port = 8125, everyMs = 1000 }) {
    Object.assign(this, { prefix, host, port, counts: new Map(), totals: {} });
    this.socket = dgram.createSocket("udp4");
    this.socket.unref();
    this.timer = setInterval(() => this.flush(), everyMs);
    this.timer.unref();
  }

  inc(name, n = 1) {
    this.counts.set(name, (this.counts.get(name) ?? 0) + n);
    this.totals[name] = (this.totals[name] ?? 0) + n;
  }

  // Send what was counted since the last flush; resolves once sent.
  flush() {
    const lines = [...this.counts].map(([k, n]) => `${this.prefix}.${k}:${n}|c`);
    this.counts.clear();
    if (lines.length === 0) return Promise.resolve();
    return new Promise((resolve) =>
      this.socket.send(lines.join("\n"), this.port, this.host, () => resolve()),
    );
  }

  async close() {
    clearInterval(this.timer);
    await this.flush();
    this.socket.close();
  }
}

// GET url with POLICY: an attempt fails on a network error, a timeout or
// a 5xx, and is retried until retries run out; a 4xx is an answer.
// Resolves to { status, body }, or rejects with the last failure.
export async function fetchWithRetry(url, { counters, policy = POLICY } = {}) {
  counters?.inc("requests");
  for (let attempt = 0; ; attempt++) {
    counters?.inc("attempts");
    let failure;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(policy.timeoutMs) });
      const body = await res.arrayBuffer();
      if (res.status < 500) return { status: res.status, body };
      failure = new Error(`HTTP ${res.status}`);
    } catch (err) {
      failure = err;
    }
    counters?.inc("failed_attempts");
    if (attempt >= policy.retries) throw failure;
    await sleep(Math.random() * policy.backoffMs * 2 ** attempt);
  }
}

// The load generator: request i at start + i / rate, whatever the others do.
async function main([url, rate, seconds, statsd = "127.0.0.1:8125"]) {
  const [host, port] = statsd.split(":");
  const counters = new Counters({ prefix: "checkout", host, port: Number(port) });
  const n = Math.round(Number(rate) * Number(seconds));
  const start = performance.now();
  const pending = [];
  let failedRequests = 0;
  for (let i = 0; i < n; i++) {
    await sleep(Math.max(0, start + (i * 1000) / Number(rate) - performance.now()));
    const sep = url.includes("?") ? "&" : "?";
    pending.push(fetchWithRetry(`${url}${sep}n=${i}`, { counters }).catch(() => failedRequests++));
  }
  await Promise.all(pending);
  await counters.close();
  console.log(JSON.stringify({ ...counters.totals, failed_requests: failedRequests }));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
