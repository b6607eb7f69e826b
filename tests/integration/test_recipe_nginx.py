#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The nginx and gunicorn recipes (doc/recipes.md) against the real
software.

nginx runs conf/recipes/nginx/nginx.conf in front of two gunicorn
instances, each conf/recipes/gunicorn/gunicorn.conf.py (4 sync workers,
statsd output); a private collectd (tests/harness.py) reads nginx's
metastable log with the recipe's tail block, the pool's accept queue with
the recipe's exec program, gunicorn's statsd output with the recipe's
statsd block, and runs the plugin with both recipes' services.  Only
paths, ports and users are replaced (tests/recipes.py).

The load: RATE requests a second, open loop, every SLOW_EVERY-th to a
path whose handler sleeps SLOW s, longer than proxy_read_timeout: nginx
times it out on one instance, tries the other (proxy_next_upstream_tries
2), times out again and answers 504.  So, per second: RATE requests,
RATE + slow attempts, 2 x slow failed attempts, slow 5xx responses.
gunicorn counts and times only the requests whose answer it could write:
an attempt nginx gave up on fails to write (EPIPE) and is neither counted
nor timed, so its statsd output shows the fast requests alone.

Asserted, over a window of steady load: each identifier's rate against
that (within counting noise); the latency gunicorn reports against the
handlers' sleeps; the accept-queue program against a socket with a known
number of waiting connections; both services reporting every interval,
with an offered load, attempt rate and failure ratio that match the load.
The pitfalls the recipe names, shown with the same nginx: an upstream of
one server never retries; with nginx's default max_fails=1 a timeout
takes the servers out and the next requests get 502 without an attempt,
which the log still counts as one failed attempt.
"""
import os
import shutil
import socket
import sys
import time

SRC = os.environ.get("MS_TOP_SRCDIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(
                         os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SRC, "tests"))
import harness  # noqa: E402
import recipes  # noqa: E402
from recipes import check, HOST  # noqa: E402

RATE = 30.0           # requests per second
SLOW_EVERY = 15       # every 15th request is slow: 2 a second
SLOW = 0.6            # s, past proxy_read_timeout (500ms)
FAST = 0.01           # s, every other request
WARMUP = 4            # s of load before the window
WINDOW = 10           # s
PROBE_WAITING = 5     # connections left waiting on the probe socket

APP = '''\
import time


def application(environ, start_response):
    slow = environ.get("PATH_INFO") == "/slow"
    time.sleep(%r if slow else %r)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok\\n"]
''' % (SLOW, FAST)


def recipe_nginx(work, name, port, apps, more=()):
    """The recipe's http-level file for the nginx called name, on port,
    in front of apps; more: further replacements."""
    return recipes.recipe("nginx", "nginx.conf", [
        ("10.0.0.11:8000", "127.0.0.1:%d" % apps[0]),
        ("10.0.0.12:8000", "127.0.0.1:%d" % apps[1]),
        ("listen 80;", "listen 127.0.0.1:%d;" % port),
        ("/var/log/nginx/access.log",
         os.path.join(work, name + "-access.log")),
        ("/var/log/nginx/metastable.log",
         os.path.join(work, name + "-metastable.log"))] + list(more))


def nginx_conf(work, name, *parts):
    """An nginx.conf for the nginx called name: http-level parts in a
    private shell."""
    temp = os.path.join(work, name)
    os.makedirs(temp, exist_ok=True)
    return recipes.write(os.path.join(work, name + ".conf"), """\
worker_processes 1;
daemon off;
pid %(t)s/nginx.pid;
error_log %(t)s/error.log error;
events { worker_connections 1024; }
http {
  client_body_temp_path %(t)s/body;
  proxy_temp_path %(t)s/proxy;
  fastcgi_temp_path %(t)s/fastcgi;
  uwsgi_temp_path %(t)s/uwsgi;
  scgi_temp_path %(t)s/scgi;
%(parts)s
}
""" % {"t": temp, "parts": "\n".join(parts)})


def pitfalls(work, d, apps):
    """The recipe's pitfalls on a second nginx: its upstream with one
    server, and without max_fails=0."""
    one, dflt = harness.free_port(), harness.free_port()
    single = recipe_nginx(work, "single", one, apps, [
        ("    server 127.0.0.1:%d max_fails=0;\n" % apps[1], "")])
    default = recipe_nginx(work, "maxfails", dflt, apps, [
        ("upstream app {", "upstream app_default {"),
        ("proxy_pass http://app;", "proxy_pass http://app_default;"),
        (" max_fails=0;", ";")])
    # the maps and the log format once: the second file from its upstream
    default = default[default.index("upstream app_default"):]
    d.start("nginx-pitfalls", ["nginx", "-p", os.path.join(work, "pitfalls"),
                               "-c", nginx_conf(work, "pitfalls", single,
                                                default)])
    for port in (one, dflt):
        recipes.wait(lambda: recipes.http_ok("http://127.0.0.1:%d/" % port),
                     "the pitfalls' nginx answers")
    def lines(name):
        with open(os.path.join(work, name + "-metastable.log")) as f:
            return f.read().splitlines()

    # one after the other, each to its answer and its log line: a slow
    # one given up on at 2 s on a busy machine let /work reach the
    # default upstream before the timeouts had taken its servers out (a
    # bare Debian 12 chroot running the whole test command), and nginx
    # writes the line after the answer has gone, so a fast client could
    # read the log without it (CI)
    for name, url in (("single", "http://127.0.0.1:%d/slow" % one),
                      ("maxfails", "http://127.0.0.1:%d/slow" % dflt),
                      ("maxfails", "http://127.0.0.1:%d/work" % dflt)):
        n = len(lines(name))
        recipes.http_ok(url, timeout=30)
        recipes.wait(lambda: len(lines(name)) > n,
                     "nginx logs the request to %s" % url)
    check(lines("single")[-1].startswith(
        'attempts=1 failed=1 status=504 ') and lines("single")[-1].endswith(
        'upstream_status="504"'), "an upstream of one server does not "
        "retry a timeout: %s" % lines("single")[-1])
    slow, after = lines("maxfails")[-2:]
    check(slow.endswith('upstream_status="504, 504"') and after.startswith(
        "attempts=1 failed=1 status=502 upstream_time=0.000 "),
        "with the default max_fails, one timeout on each server takes both "
        "out: the next request gets 502 at once, logged as a failed "
        "attempt: %s / %s" % (slow, after))


def collectd_config(work, statsd, apps, probe):
    """The recipes' collectd blocks, and one more accept-queue program
    on the probe socket."""
    queue = os.path.join(work, "accept-queue.sh")
    shutil.copy(os.path.join(recipes.RECIPES, "nginx", "accept-queue.sh"),
                queue)
    os.chmod(queue, 0o755)
    user = recipes.exec_user()
    nginx = recipes.recipe("nginx", "collectd.conf", [
        ("/var/log/nginx/metastable.log",
         os.path.join(work, "nginx-metastable.log")),
        ('"nobody"', '"%s"' % user),
        ("/usr/share/collectd-metastable/recipes/nginx/accept-queue.sh",
         queue),
        ('"app" "8000"', '"app" "%d" "%d"' % tuple(apps))])
    head, _, tail = nginx.rpartition("</Plugin>\n")
    nginx = head + '  Exec "%s" "%s" "probe" "%d"\n</Plugin>\n%s' % (
        user, queue, probe, tail)
    gunicorn = recipes.recipe("gunicorn", "collectd.conf",
                              [('Port "8125"', 'Port "%d"' % statsd)])
    return nginx + gunicorn + recipes.csv_config(work)


def gunicorn_conf(work, port, statsd, n):
    return recipes.write(
        os.path.join(work, "gunicorn-%d.conf.py" % n),
        recipes.recipe("gunicorn", "gunicorn.conf.py", [
            ('bind = "0.0.0.0:8000"', 'bind = "127.0.0.1:%d"' % port),
            ('statsd_host = "127.0.0.1:8125"',
             'statsd_host = "127.0.0.1:%d"' % statsd)]))


def expected():
    slow = RATE / SLOW_EVERY
    return {
        "requests": RATE, "attempts": RATE + slow, "failed_attempts": 2 * slow,
        "responses_5xx": slow,
        # what gunicorn counts and times: the answers it wrote
        "answered": RATE - slow, "latency": FAST}


def measure(work, cd, t0, t1):
    e = expected()
    for name in ("requests", "attempts", "failed_attempts",
                 "responses_5xx"):
        recipes.check_rate(work, "%s/tail-nginx/derive-%s" % (HOST, name),
                           e[name], t0, t1, "nginx's log")
    recipes.check_rate(work, "%s/statsd/derive-app.gunicorn.requests" % HOST,
                       e["answered"], t0, t1, "gunicorn's statsd (answers "
                       "written)")
    lat, n = recipes.mean_over(
        work, "%s/statsd/latency-app.gunicorn.request.duration-average"
        % HOST, t0, t1)
    # the handler sleeps; gunicorn adds well under 5 ms
    check(lat is not None and FAST <= lat <= FAST + 0.005,
          "gunicorn's mean handler time %s s: the fast handler's %.3f s "
          "(the slow ones are not timed)" % (lat, FAST))
    workers, n = recipes.mean_over(
        work, "%s/statsd/gauge-app.gunicorn.workers" % HOST, t0, t1)
    check(workers == 4, "gunicorn's workers gauge is one instance's "
          "workers, 4 of the pool's 8: %s" % workers)
    up, n = recipes.mean_over(work, "%s/tail-nginx/gauge-upstream_time"
                              % HOST, t0, t1)
    check(up is not None and FAST <= up < 0.1,
          "nginx's upstream time of 2xx answers %s s: the fast handler's "
          "%.3f s and little more" % (up, FAST))
    probe, n = recipes.mean_over(work, "%s/listen-probe/gauge-accept_queue"
                                 % HOST, t0, t1)
    check(probe == PROBE_WAITING, "accept-queue.sh counts the %d "
          "connections waiting on the probe socket: %s"
          % (PROBE_WAITING, probe))
    queue, n = recipes.mean_over(work, "%s/listen-app/gauge-accept_queue"
                                 % HOST, t0, t1)
    check(queue is not None and queue < 1, "gunicorn's accept queue "
          "nearly empty at this load: %s" % queue)
    for svc in ("app", "app_gunicorn"):
        recipes.check_reporting(work, svc, t0, t1)
        recipes.check_rate(work, "%s/metastable-%s/offered_load"
                           % (HOST, svc), RATE, t0, t1, "the plugin")
        recipes.check_rate(work, "%s/metastable-%s/observed_effective_load"
                           % (HOST, svc), e["attempts"], t0, t1,
                           "the plugin")
        ratio, n = recipes.mean_over(
            work, "%s/metastable-%s/observed_failure_ratio" % (HOST, svc),
            t0, t1)
        want = e["failed_attempts"] / e["attempts"]
        check(ratio is not None and abs(ratio - want) <= 0.03,
              "%s's observed failure ratio %s, the load's %.4f"
              % (svc, ratio, want))
    est, n = recipes.mean_over(work, "%s/metastable-app_gunicorn/"
                               "service_time_estimate" % HOST, t0, t1)
    check(est is not None and FAST <= est <= FAST + 0.005,
          "app_gunicorn's service time estimate %s s: gunicorn's latency "
          "of the answered requests (%.3f s)" % (est, FAST))
    check(cd.running(), "collectd still running")


def run(work, d):
    statsd = harness.free_port(socket.SOCK_DGRAM)
    apps = [harness.free_port(), harness.free_port()]
    port = harness.free_port()
    # the probe: a socket that accepts nothing, PROBE_WAITING connections
    # in its queue
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    probe.listen(16)
    waiting = [socket.create_connection(probe.getsockname())
               for _ in range(PROBE_WAITING)]
    service_file = recipes.write(
        os.path.join(work, "services.yaml"),
        recipes.services(("nginx", "service.yaml"),
                         ("gunicorn", "service.yaml")))
    cd = harness.Collectd(work, recipes.PLUGIN_DIR, recipes.TYPES_DB,
                          service_file, hostname=HOST, csv=False,
                          extra_config=collectd_config(
                              work, statsd, apps, probe.getsockname()[1]))
    with cd:
        cd.start()
        recipes.write(os.path.join(work, "app.py"), APP)
        for n, p in enumerate(apps):
            d.start("gunicorn-%d" % n, [
                "gunicorn", "-c", gunicorn_conf(work, p, statsd, n),
                "--chdir", work, "app:application"])
        d.start("nginx", ["nginx", "-p", os.path.join(work, "nginx"), "-c",
                          nginx_conf(work, "nginx",
                                     recipe_nginx(work, "nginx", port, apps))])
        url = "http://127.0.0.1:%d/" % port
        recipes.wait(lambda: recipes.http_ok(url), "nginx answers through "
                     "gunicorn")
        load = recipes.Load(
            lambda i: url + ("slow" if i % SLOW_EVERY == 0 else "work")
            + "?n=%d" % i, RATE, WARMUP + WINDOW + 2)
        load.start()
        time.sleep(WARMUP)
        t0 = time.time()
        time.sleep(WINDOW)
        t1 = time.time()
        load.join(30)
        time.sleep(1.5)  # the window's last interval written
        recipes.check_answers(load, SLOW_EVERY)
        measure(work, cd, t0, t1)
        pitfalls(work, d, apps)
    for c in waiting:
        c.close()
    probe.close()


def main():
    harness.require("collectd", "collectdctl", "nginx", "gunicorn", "ss",
                    root="nginx and collectd's exec plugin switch users")
    work = recipes.work_dir("metastable-recipe-nginx-")
    t0 = time.time()
    with recipes.Daemons(work) as d:
        run(work, d)
    print("nginx and gunicorn recipes: %.1f s" % (time.time() - t0))
    if not harness.FAILURES:
        shutil.rmtree(work)
    harness.finish(work)


if __name__ == "__main__":
    main()
