#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The HAProxy and php-fpm recipes (doc/recipes.md) against the real
software.

HAProxy runs conf/recipes/haproxy/haproxy.cfg (timeout server 1s,
retries 2, retry-on response-timeout) in front of nginx, which passes
the requests to a php-fpm pool run with conf/recipes/php-fpm/pool.conf
(10 static workers on a unix socket) and serves its status page with
conf/recipes/php-fpm/nginx-status.conf.  A private collectd
(tests/harness.py) runs both recipes' collectd blocks (the exec plugin's
haproxy-collector.sh, curl_json) and the plugin with both recipes'
services.  Only paths, ports and users are replaced (tests/recipes.py).

The load: RATE requests a second, open loop, every SLOW_EVERY-th to a
script that sleeps SLOW s, past HAProxy's timeout server: HAProxy tries
it three times and answers 504.  So, per second: RATE requests, RATE +
2 x slow attempts, 2 x slow retries, 3 x slow failed attempts, slow 5xx
answers, and every attempt accepted by php-fpm.

Asserted, over a window of steady load: each identifier's rate against
that (within counting noise), the pool's size and its queue, the busy
workers against the utilisation law, and both services reporting every
interval with an offered load, attempt rate and failure ratio that match
the load.  Then the pitfall the recipe names, on a second HAProxy: the
recipe without retry-on sends a slow request once, however many retries.
"""
import os
import shutil
import subprocess
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
SLOW_EVERY = 30       # every 30th request is slow: 1 a second
SLOW = 1.1            # s, past timeout server (1s)
FAST = 0.01           # s, every other request
WARMUP = 5            # s of load before the window
WINDOW = 10           # s

WORK_PHP = '''<?php
usleep(isset($_GET['slow']) ? %d : %d);
echo "ok\\n";
''' % (SLOW * 1e6, FAST * 1e6)


def php_fpm_conf(work, status):
    sock = os.path.join(work, "php-fpm.sock")
    pool = recipes.recipe("php-fpm", "pool.conf", [
        ("user = www-data\ngroup = www-data",
         "user = nobody\ngroup = nogroup"),
        ("listen = /run/php/php8.2-fpm.sock", "listen = " + sock),
        ("listen.owner = www-data\nlisten.group = www-data",
         "listen.owner = nobody\nlisten.group = nogroup"),
        ("127.0.0.1:9001", "127.0.0.1:%d" % status)])
    conf = recipes.write(os.path.join(work, "php-fpm.conf"),
                         "[global]\npid = %s/php-fpm.pid\nerror_log = "
                         "%s/php-fpm-error.log\ndaemonize = no\n\n%s"
                         % (work, work, pool))
    return conf, sock


def nginx_conf(work, port, sock, status):
    """nginx passing /work to the pool, with the recipe's status page."""
    location = recipes.recipe("php-fpm", "nginx-status.conf", [
        ("include fastcgi_params;", "include /etc/nginx/fastcgi_params;"),
        ("127.0.0.1:9001", "127.0.0.1:%d" % status)])
    temp = os.path.join(work, "nginx")
    os.makedirs(temp, exist_ok=True)
    return recipes.write(os.path.join(work, "nginx.conf"), """\
worker_processes 1;
daemon off;
pid %(t)s/nginx.pid;
error_log %(t)s/error.log error;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %(t)s/body;
  proxy_temp_path %(t)s/proxy;
  fastcgi_temp_path %(t)s/fastcgi;
  uwsgi_temp_path %(t)s/uwsgi;
  scgi_temp_path %(t)s/scgi;
  server {
    listen 127.0.0.1:%(port)d;
    location = /work {
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME %(w)s/work.php;
      fastcgi_pass unix:%(sock)s;
    }
%(location)s
  }
}
""" % {"t": temp, "w": work, "port": port, "sock": sock,
       "location": location})


def haproxy_conf(work, name, port, nginx, more=()):
    """HAProxy's configuration, the recipe's, for the HAProxy called name;
    more: further replacements."""
    return recipes.write(
        os.path.join(work, name + ".cfg"),
        recipes.recipe("haproxy", "haproxy.cfg", [
            ("/run/haproxy/stats.sock",
             os.path.join(work, name + "-stats.sock")),
            ("bind :80", "bind 127.0.0.1:%d" % port),
            ("10.0.0.11:8080", "127.0.0.1:%d" % nginx),
            ("10.0.0.12:8080", "127.0.0.1:%d" % nginx)] + list(more)))


def backend_attempts(sock):
    """The attempts HAProxy sent to be_app's servers (their stot)."""
    out = subprocess.run(["socat", "-t", "2", "-", "UNIX-CONNECT:" + sock],
                         input="show stat\n", capture_output=True,
                         text=True, timeout=10).stdout.splitlines()
    cols = out[0].lstrip("# ").split(",")
    return sum(int(r.split(",")[cols.index("stot")]) for r in out[1:]
               if r.startswith("be_app,") and
               r.split(",")[1] not in ("BACKEND", "FRONTEND"))


def pitfall_retry_on(work, d, nginx):
    """The recipe without its retry-on line: a slow answer is not
    retried."""
    port = harness.free_port()
    conf = haproxy_conf(work, "no-retry-on", port, nginx, [
        ("    retry-on conn-failure empty-response response-timeout\n", "")])
    d.start("haproxy-no-retry-on", ["haproxy", "-db", "-f", conf])
    url = "http://127.0.0.1:%d/work" % port
    recipes.wait(lambda: recipes.http_ok(url), "the second HAProxy answers")
    before = backend_attempts(os.path.join(work, "no-retry-on-stats.sock"))
    slow = recipes.http_ok(url + "?slow=1")
    after = backend_attempts(os.path.join(work, "no-retry-on-stats.sock"))
    check(not slow and after - before == 1, "without retry-on, retries 2 "
          "does not retry a response timeout: %d attempt(s) for the slow "
          "request" % (after - before))


def collectd_config(work, nginx):
    collector = os.path.join(work, "haproxy-collector.sh")
    shutil.copy(os.path.join(recipes.RECIPES, "haproxy",
                             "haproxy-collector.sh"), collector)
    os.chmod(collector, 0o755)
    user = recipes.exec_user()
    haproxy = recipes.recipe("haproxy", "collectd.conf", [
        ('"nobody:haproxy"', '"%s:haproxy"' % user),
        ("/usr/share/collectd-metastable/recipes/haproxy/"
         "haproxy-collector.sh", collector),
        ("/run/haproxy/stats.sock", os.path.join(work, "haproxy-stats.sock"))])
    fpm = recipes.recipe("php-fpm", "collectd.conf", [
        ("http://127.0.0.1/fpm-status",
         "http://127.0.0.1:%d/fpm-status" % nginx)])
    return haproxy + fpm + recipes.csv_config(work)


def expected():
    slow = RATE / SLOW_EVERY
    return {"requests": RATE, "attempts": RATE + 2 * slow,
            "retries": 2 * slow, "failed_attempts": 3 * slow,
            "responses_2xx": RATE - slow, "responses_5xx": slow,
            # by the utilisation law: every attempt holds a worker to its
            # end (php-fpm does not notice the client leave)
            "busy": (RATE - slow) * FAST + 3 * slow * SLOW}


def measure(work, cd, t0, t1):
    e = expected()
    for ident, name in (("fe_web", "requests"), ("fe_web", "responses_2xx"),
                        ("fe_web", "responses_5xx"), ("be_app", "attempts"),
                        ("be_app", "retries"), ("be_app", "failed_attempts")):
        recipes.check_rate(work, "%s/haproxy-%s/derive-%s"
                           % (HOST, ident, name), e[name], t0, t1,
                           "HAProxy's stats socket")
    recipes.check_rate(work, "%s/phpfpm-www/derive-accepted_conn" % HOST,
                       e["attempts"], t0, t1, "php-fpm's status page")
    total, _ = recipes.mean_over(work, "%s/phpfpm-www/gauge-total_processes"
                                 % HOST, t0, t1)
    check(total == 10, "php-fpm's total processes: pm.max_children, 10: %s"
          % total)
    queue, _ = recipes.mean_over(work, "%s/phpfpm-www/gauge-listen_queue"
                                 % HOST, t0, t1)
    check(queue is not None and queue < 1,
          "php-fpm's listen queue nearly empty at this load: %s" % queue)
    busy, n = recipes.mean_over(work, "%s/phpfpm-www/gauge-active_processes"
                                % HOST, t0, t1)
    # a gauge read once a second: each reading scatters by about the
    # square root of the busy count (Poisson); php's own time per request
    # adds a few ms to each sleep
    tol = 3 * (e["busy"] ** 0.5) / max(n, 1) ** 0.5 + RATE * 0.005
    check(busy is not None and abs(busy - e["busy"]) <= tol,
          "php-fpm's busy workers %s, the utilisation law gives %.2f "
          "(within +-%.2f)" % (busy, e["busy"], tol))
    for svc in ("shop", "shop_fpm"):
        recipes.check_reporting(work, svc, t0, t1)
        recipes.check_rate(work, "%s/metastable-%s/offered_load"
                           % (HOST, svc), RATE, t0, t1, "the plugin")
        recipes.check_rate(work, "%s/metastable-%s/observed_effective_load"
                           % (HOST, svc), e["attempts"], t0, t1,
                           "the plugin")
        ratio, _ = recipes.mean_over(
            work, "%s/metastable-%s/observed_failure_ratio" % (HOST, svc),
            t0, t1)
        want = e["failed_attempts"] / e["attempts"]
        check(ratio is not None and abs(ratio - want) <= 0.03,
              "%s's observed failure ratio %s, the load's %.4f"
              % (svc, ratio, want))
    # busy workers over accepted attempts: the mean time an attempt holds
    # a worker, within the busy gauge's tolerance
    est, _ = recipes.mean_over(work, "%s/metastable-shop_fpm/"
                               "service_time_estimate" % HOST, t0, t1)
    want = e["busy"] / e["attempts"]
    check(est is not None and abs(est - want) <= tol / e["attempts"],
          "shop_fpm's service time estimate %s s, the sleeps give %.4f s "
          "(within +-%.4f)" % (est, want, tol / e["attempts"]))
    check(cd.running(), "collectd still running")


def run(work, d):
    port, nginx, status = (harness.free_port() for _ in range(3))
    service_file = recipes.write(
        os.path.join(work, "services.yaml"),
        recipes.services(("haproxy", "service.yaml"),
                         ("php-fpm", "service.yaml")))
    recipes.write(os.path.join(work, "work.php"), WORK_PHP)
    fpm_conf, sock = php_fpm_conf(work, status)
    d.start("php-fpm", ["php-fpm8.2", "-F", "-O", "-y", fpm_conf])
    d.start("nginx", ["nginx", "-p", os.path.join(work, "nginx"), "-c",
                      nginx_conf(work, nginx, sock, status)])
    d.start("haproxy", ["haproxy", "-db", "-f",
                        haproxy_conf(work, "haproxy", port, nginx)])
    url = "http://127.0.0.1:%d/work" % port
    recipes.wait(lambda: recipes.http_ok(url), "HAProxy answers through "
                 "nginx and php-fpm")
    recipes.wait(lambda: recipes.http_ok(
        "http://127.0.0.1:%d/fpm-status?json" % nginx),
        "php-fpm's status page answers")
    cd = harness.Collectd(work, recipes.PLUGIN_DIR, recipes.TYPES_DB,
                          service_file, hostname=HOST, csv=False,
                          extra_config=collectd_config(work, nginx))
    with cd:
        cd.start()
        load = recipes.Load(
            lambda i: url + ("?slow=1&" if i % SLOW_EVERY == 0 else "?")
            + "n=%d" % i, RATE, WARMUP + WINDOW + 2)
        load.start()
        time.sleep(WARMUP)
        t0 = time.time()
        time.sleep(WINDOW)
        t1 = time.time()
        load.join(30)
        time.sleep(1.5)  # the window's last interval written
        recipes.check_answers(load, SLOW_EVERY)
        measure(work, cd, t0, t1)
    pitfall_retry_on(work, d, nginx)


def main():
    harness.require("collectd", "collectdctl", "haproxy", "nginx",
                    "php-fpm8.2", "socat",
                    root="php-fpm, nginx and collectd's exec plugin switch "
                    "users")
    work = recipes.work_dir("metastable-recipe-haproxy-")
    t0 = time.time()
    with recipes.Daemons(work) as d:
        run(work, d)
    print("HAProxy and php-fpm recipes: %.1f s" % (time.time() - t0))
    if not harness.FAILURES:
        shutil.rmtree(work)
    harness.finish(work)


if __name__ == "__main__":
    main()
