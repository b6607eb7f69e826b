# SPDX-License-Identifier: MIT
# The gunicorn lab's WSGI application (lab/gunicorn-lab.sh): each request
# sleeps an exponential time of mean LAB_SERVICE_TIME seconds, times the
# slowdown factor in LAB_FACTOR_FILE (the trigger), and appends
# "epoch asked took" (seconds) to LAB_APP_LOG: the lab compares the time
# it took against the time it asked for to tell a starved machine.
import os
import random
import time

MEAN = float(os.environ.get("LAB_SERVICE_TIME", "0.1"))
FACTOR_FILE = os.environ.get("LAB_FACTOR_FILE", "")
LOG = os.environ.get("LAB_APP_LOG", "")


def factor():
    try:
        with open(FACTOR_FILE) as f:
            return float(f.read())
    except (OSError, ValueError):
        return 1.0


def application(environ, start_response):
    asked = random.expovariate(1.0 / MEAN) * factor()
    t0 = time.monotonic()
    time.sleep(asked)
    took = time.monotonic() - t0
    if LOG:
        with open(LOG, "a") as f:
            f.write("%.3f %.6f %.6f\n" % (time.time(), asked, took))
    body = b"ok\n"
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
