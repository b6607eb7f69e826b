#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How long a real collectd takes to exit on SIGTERM with a heavy service
file (doc/performance.md, "The read cycle's budget").

    python3 bench/sigterm.py BUILD N RETRIES TIERS [WAIT] [MODEL] [LOAD]

Starts a private collectd (tests/harness.py, Interval 10) with the plugin
of BUILD watching N services of the model MODEL (YAML lines, default
"model: capacity / capacity: 100 / base_failure: 0.01") with RETRIES
retries and TIERS tiers and a constant offered load LOAD (default 0.5
req/s, a number of the file: no statsd needed), sends SIGTERM WAIT
seconds (default 0.3) after its start and prints how long it took to
exit, with the plugin's log lines about its cycles.
"""
import os
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests"))
import harness  # noqa: E402

DEFAULT_MODEL = "model: capacity\n    capacity: 100\n    base_failure: 0.01"


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    build, n = sys.argv[1], int(sys.argv[2])
    retries, tiers = int(sys.argv[3]), int(sys.argv[4])
    wait = float(sys.argv[5]) if len(sys.argv) > 5 else 0.3
    model = sys.argv[6] if len(sys.argv) > 6 else DEFAULT_MODEL
    load = float(sys.argv[7]) if len(sys.argv) > 7 else 0.5
    d = tempfile.mkdtemp(prefix="ms-sigterm-")
    svc = os.path.join(d, "services.yaml")
    with open(svc, "w") as f:
        f.write("services:\n")
        for i in range(n):
            f.write("  - name: s%d\n    %s\n    retries: %d\n    tiers: %d\n"
                    "    inputs:\n      offered_rate: %g\n"
                    % (i, model, retries, tiers, load))
    cd = harness.Collectd(d, os.path.join(build, "plugin", ".libs"),
                          os.path.join(SRC, "conf", "types.db"), svc,
                          interval=10)
    with cd:
        cd.start()
        time.sleep(wait)
        took = cd.terminate_timed(300)
    print("%d services, retries %d, tiers %d: SIGTERM %.1f s after the "
          "start, exit took %.3f s" % (n, retries, tiers, wait, took))
    for line in cd.log().splitlines():
        if "metastable" in line and ("cycle" in line or "took" in line):
            print("  " + line[:240])


if __name__ == "__main__":
    main()
