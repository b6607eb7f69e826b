# SPDX-License-Identifier: MIT
"""What the recipe tests (tests/integration/test_recipe_*.py) share.

The recipes of doc/recipes.md are files of conf/recipes/; a test reads
them from there, replaces the few values a test cannot use (paths, ports,
users) and runs the real software with them.  Each replacement must find
its text, so a recipe changed under a test fails loudly instead of
testing something else.

Also here: daemons started in their own process group and stopped again,
an open-loop load generator that records what it sent, and the rates
collectd's csv plugin stored, averaged over a window and compared with
the load within counting noise.  Standard library only.
"""
import glob
import math
import os
import pwd
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import harness

SRC = os.environ.get("MS_TOP_SRCDIR",
                     os.path.dirname(os.path.dirname(os.path.abspath(
                         __file__))))
BUILD = os.environ.get("MS_TOP_BUILDDIR", os.path.join(SRC, "build"))
RECIPES = os.path.join(SRC, "conf", "recipes")
PLUGIN_DIR = os.path.join(BUILD, "plugin", ".libs")
TYPES_DB = os.path.join(SRC, "conf", "types.db")
# every recipe names this host; the tests' collectd takes it as Hostname
HOST = "web1"
check = harness.check


def recipe(stack, name, subs=()):
    """The text of conf/recipes/STACK/NAME with each (old, new) of subs
    replaced; an old text that is not there is an error."""
    with open(os.path.join(RECIPES, stack, name)) as f:
        text = f.read()
    for old, new in subs:
        if old not in text:
            raise RuntimeError("conf/recipes/%s/%s no longer holds %r: the "
                               "recipe changed, change its test too"
                               % (stack, name, old))
        text = text.replace(old, new)
    return text


def services(*parts):
    """One service file of the services of several recipe service files
    (each "services:" and a list)."""
    body = []
    for stack, name in parts:
        text = recipe(stack, name)
        body.append(text[text.index("services:\n") + len("services:\n"):])
    return "services:\n" + "".join(body)


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def work_dir(prefix):
    """A private directory that the users the daemons switch to (nobody)
    may enter."""
    work = tempfile.mkdtemp(prefix=prefix)
    os.chmod(work, 0o755)
    print("work directory:", work, flush=True)
    return work


def exec_user():
    """The user collectd's exec plugin runs a recipe's program as: the
    recipe's nobody as root; this user otherwise (exec cannot switch)."""
    if os.geteuid() == 0:
        return "nobody"
    return pwd.getpwuid(os.geteuid()).pw_name


def csv_config(work):
    """collectd's csv plugin storing rates, the tests' record of every
    value of every interval."""
    return ('LoadPlugin csv\n<Plugin csv>\n  DataDir "%s/csv"\n'
            "  StoreRates true\n</Plugin>\n" % work)


class Daemons:
    """Programs started in their own process group, each stopped (TERM,
    then KILL) when the block ends, newest first."""

    def __init__(self, work):
        self.work = work
        self.procs = []

    def start(self, name, args, **kw):
        log = open(os.path.join(self.work, name + ".log"), "w")
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL,
                             start_new_session=True, **kw)
        self.procs.append((name, p, log))
        return p

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for _, p, log in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(10)
                except ProcessLookupError:
                    pass
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(5)
            log.close()


def http_ok(url, timeout=2):
    """Whether url answers 200 within timeout s."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status == 200
    except (OSError, urllib.error.HTTPError):
        return False


class Load(threading.Thread):
    """Open-loop load: request i goes out at t0 + i / rate, whatever the
    earlier ones are doing, to url(i); what each got back is recorded.
    The same schedule as httperf's --rate, in Python."""

    def __init__(self, url, rate, seconds, timeout=10, threads=64):
        super().__init__(daemon=True)
        self.url, self.rate, self.seconds = url, rate, seconds
        self.timeout = timeout
        self.pool = ThreadPoolExecutor(max_workers=threads)
        self.sent = []      # (time, i)
        self.status = {}    # i: HTTP status, or 0 for no answer
        self.lock = threading.Lock()
        self.t0 = None
        self.planned = int(rate * seconds)

    def one(self, i):
        try:
            with urllib.request.urlopen(self.url(i),
                                        timeout=self.timeout) as r:
                r.read()
                code = r.status
        except urllib.error.HTTPError as e:
            code = e.code
        except OSError:
            code = 0
        with self.lock:
            self.status[i] = code

    def run(self):
        self.t0 = time.time()
        for i in range(self.planned):
            delay = self.t0 + i / self.rate - time.time()
            if delay > 0:
                time.sleep(delay)
            self.sent.append((time.time(), i))
            self.pool.submit(self.one, i)
        self.pool.shutdown(wait=True)


def check_answers(load, slow_every):
    """Check that every slow request (every slow_every-th) got 504 and the
    others 200; on a busy machine a few fast ones may come late and be
    retried, at most 1 %, whatever they got."""
    check(len(load.status) == load.planned, "the load sent its %d "
          "requests and heard back from %d" % (load.planned,
                                               len(load.status)))
    slow = [c for i, c in load.status.items() if i % slow_every == 0]
    fast = [c for i, c in load.status.items() if i % slow_every != 0]
    check(slow and all(c == 504 for c in slow),
          "the %d slow requests got 504: %s" % (len(slow), sorted(set(slow))))
    late = sum(c != 200 for c in fast)
    check(fast and late <= 0.01 * len(fast),
          "%d of the %d fast requests got 200" % (len(fast) - late,
                                                   len(fast)))


csv_series = harness.csv_series


def mean_over(work, ident, t0, t1):
    """(mean, count) of ident's values stamped in [t0, t1], NaN left
    out; (None, 0) without any."""
    vals = [v for t, v in csv_series(work, ident)
            if t0 <= t <= t1 and not math.isnan(v)]
    return (sum(vals) / len(vals), len(vals)) if vals else (None, 0)


def noise(rate, seconds):
    """How far an average rate over seconds may stray from rate by
    counting alone: three standard deviations of a Poisson count, and one
    event at each edge of the window.  The load is paced, so its counts
    vary less than Poisson's: a bound, not an estimate."""
    return (3 * math.sqrt(max(rate, 0) * seconds) + 2) / seconds


def check_rate(work, ident, expected, t0, t1, what, slack=0.0):
    """Check that ident's mean over [t0, t1] is expected within counting
    noise (plus slack, an absolute amount the caller justifies)."""
    mean, n = mean_over(work, ident, t0, t1)
    tol = noise(expected, t1 - t0) + slack
    ok = mean is not None and abs(mean - expected) <= tol
    check(ok, "%s: %s = %s/s over %d intervals, sent %.2f/s (within "
          "+-%.2f)" % (what, ident, "none" if mean is None else
                       "%.2f" % mean, n, expected, tol))
    return mean


def check_reporting(work, service, t0, t1):
    """Check that the service reported (reporting 1) in every interval of
    [t0, t1]."""
    vals = [v for t, v in csv_series(work, "%s/metastable-%s/reporting"
                                     % (HOST, service)) if t0 <= t <= t1]
    check(len(vals) >= (t1 - t0) - 2 and all(v == 1 for v in vals),
          "%s reports (reporting 1) in every interval of the window: %s"
          % (service, vals))


def wait(cond, what, timeout=20):
    return harness.wait(cond, what, timeout, 0.2)
