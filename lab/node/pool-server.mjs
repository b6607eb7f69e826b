// SPDX-License-Identifier: MIT
// The node lab's server (lab/node-lab.sh, doc/storm-lab.md): a bounded
// pool.  SLOTS requests are served at once, each an exponential sleep of
// mean MEAN seconds times the slowdown factor in FACTOR_FILE (the
// trigger); up to PLACES more wait in a FIFO queue; an attempt that finds
// every slot and every place taken is answered 503 at once.  A request
// whose client gave up keeps its place and its slot to the end, as a
// worker pool that cannot see the client leave does: that wasted work is
// what a retry storm is made of.
//
//   node pool-server.mjs PORT SLOTS PLACES MEAN FACTOR_FILE APP_LOG TOTALS
//                        [STATSD_PORT PREFIX]
//
// APP_LOG gets "epoch asked took" (s) per request served: the lab compares
// the time each sleep took with the time it asked for, to tell a starved
// machine.  TOTALS is rewritten every 100 ms: "arrived rejected completed
// queue busy", counts since the start and the queue and slots now.  With
// STATSD_PORT, statsd on 127.0.0.1 gets every second the gauges
// PREFIX.queue (waiting) and PREFIX.busy (slots in use) and the counter
// PREFIX.completed (requests served, abandoned ones included): what
// calibration learns the service time from (busy / completed per second,
// the utilisation law).  Nothing but Node's standard library.
import dgram from "node:dgram";
import fs from "node:fs";
import http from "node:http";

const [port, slots, places, mean, factorFile, appLog, totalsFile, statsdPort, prefix] =
  process.argv.slice(2);
if (!totalsFile) {
  console.error("usage: pool-server.mjs PORT SLOTS PLACES MEAN FACTOR_FILE APP_LOG TOTALS [STATSD_PORT PREFIX]");
  process.exit(2);
}
const SLOTS = Number(slots);
const PLACES = Number(places);
const MEAN = Number(mean);

let factor = 1;
let busy = 0;
let arrived = 0;
let rejected = 0;
let completed = 0;
const queue = [];
const log = fs.createWriteStream(appLog, { flags: "a" });

function readFactor() {
  try {
    const f = Number(fs.readFileSync(factorFile, "utf8"));
    factor = f > 0 ? f : 1;
  } catch {
    factor = 1;
  }
}

function writeTotals() {
  fs.writeFileSync(`${totalsFile}.tmp`, `${arrived} ${rejected} ${completed} ${queue.length} ${busy}\n`);
  fs.renameSync(`${totalsFile}.tmp`, totalsFile);
}

// serve RES in a slot, then hand the slot to the head of the queue
function serve(res) {
  busy++;
  const asked = -Math.log(1 - Math.random()) * MEAN * factor;
  const t0 = performance.now();
  setTimeout(() => {
    const took = (performance.now() - t0) / 1000;
    completed++;
    busy--;
    log.write(`${(Date.now() / 1000).toFixed(3)} ${asked.toFixed(6)} ${took.toFixed(6)}\n`);
    res.end("ok\n");
    if (queue.length > 0) serve(queue.shift());
  }, asked * 1000);
}

const server = http.createServer((req, res) => {
  arrived++;
  req.resume();
  // a client that gave up closes the socket: the answer goes nowhere
  res.on("error", () => {});
  if (busy < SLOTS) serve(res);
  else if (queue.length < PLACES) queue.push(res);
  else {
    rejected++;
    res.writeHead(503, { "content-type": "text/plain", "content-length": "5" });
    res.end("busy\n");
  }
});
server.keepAliveTimeout = 10000;

readFactor();
writeTotals();
setInterval(readFactor, 100);
setInterval(writeTotals, 100);
if (statsdPort) {
  const socket = dgram.createSocket("udp4");
  let sent = 0;
  setInterval(() => {
    const lines = [
      `${prefix}.queue:${queue.length}|g`,
      `${prefix}.busy:${busy}|g`,
      `${prefix}.completed:${completed - sent}|c`,
    ];
    sent = completed;
    socket.send(lines.join("\n"), Number(statsdPort), "127.0.0.1");
  }, 1000);
}
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
server.listen(Number(port), "127.0.0.1", () => {
  console.error(`pool-server: 127.0.0.1:${port}, ${SLOTS} slots, ${PLACES} places, mean ${MEAN} s`);
});
