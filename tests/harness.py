# SPDX-License-Identifier: MIT
"""Run a private collectd (and Prometheus) for the demo and the tests.

Loopback only, free ports picked at run time, everything started is
stopped again (process groups, even on exceptions: use the objects as
context managers).  Standard library only.

A test that lacks a tool or root says so through require() or skip():
skipped outside CI, an error with MS_REQUIRE_ALL=1 (CONTRIBUTING.md,
"Test").  tests/require.sh does the same for the shell tests.
"""
import json
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

HOSTNAME = "mshost"

# Debian keeps daemons (collectd, php-fpm, haproxy, nginx) in /usr/sbin,
# which a normal user's PATH lacks: look there too, here and in the
# programs the tests start.
for _sbin in ("/usr/sbin", "/sbin"):
    if _sbin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + _sbin


def skip(why, test=None):
    """A test that cannot run here, why in one line.  Outside CI it is
    skipped: exit 77, automake's SKIP, or with test (a unittest.TestCase)
    that test is.  With MS_REQUIRE_ALL=1 in the environment (.ci/run and
    scripts/test.sh, which install everything first) nothing may be left
    out: exit 99, automake's ERROR, or the TestCase fails."""
    strict = os.environ.get("MS_REQUIRE_ALL") == "1"
    if test is not None:
        if strict:
            test.fail(why + " (MS_REQUIRE_ALL=1: every test must run)")
        test.skipTest(why)
    name = os.path.basename(sys.argv[0])
    if strict:
        print("%s: ERROR: %s (MS_REQUIRE_ALL=1: every test must run)"
              % (name, why), flush=True)
        sys.exit(99)
    print("%s: SKIP: %s" % (name, why), flush=True)
    sys.exit(77)


def require(*tools, root=None, test=None):
    """skip() unless every tool is a command on the PATH and, when root is
    given (why root is needed, in words), unless this runs as root."""
    if root is not None and os.geteuid() != 0:
        skip("needs root: %s" % root, test)
    for tool in tools:
        if shutil.which(tool) is None:
            skip("%s not found: scripts/install-deps.sh --test installs it"
                 % tool, test)

# The integration tests' checks: each prints a line, the failures are
# counted, and finish() reports them and sets the exit status.
FAILURES = []


def check(cond, what):
    """Print and count one check; returns cond."""
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)
    return cond


def wait(cond, what, timeout, step=0.2):
    """cond()'s first true result, polled every step seconds for timeout
    seconds; None and a failed check saying what did not happen."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = cond()
        if r:
            return r
        time.sleep(step)
    check(False, what + " (within %d s)" % timeout)
    return None


def finish(work):
    """Exit 1 with the count of failed checks and where the logs are, or
    say all passed."""
    if FAILURES:
        print("\n%d check(s) failed; logs in %s" % (len(FAILURES), work))
        sys.exit(1)
    print("all checks passed")


def free_port(kind=socket.SOCK_STREAM):
    """A port on 127.0.0.1 that is free now (TCP or UDP)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_group(proc, timeout=10):
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


class Collectd:
    """collectd -f with a private configuration in workdir."""

    def __init__(self, workdir, plugin_dir, types_db, service_file,
                 statsd_port=None, prometheus_port=None, interval=1,
                 extra_config="", hostname=HOSTNAME, metastable_options="",
                 csv=True):
        """service_file None: no metastable plugin (an edge host that only
        forwards); metastable_options: more lines of <Plugin metastable>;
        hostname: collectd's Hostname; csv False: no csv plugin when there
        is no write_prometheus (extra_config loads another writer)."""
        self.workdir = workdir
        self.socket = os.path.join(workdir, "collectd.sock")
        self.conf = os.path.join(workdir, "collectd.conf")
        self.logpath = os.path.join(workdir, "collectd.log")
        self.statsd_port = statsd_port
        self.prometheus_port = prometheus_port
        self.proc = None
        self._log_offset = 0
        group = _group_name()
        parts = [
            'Hostname "%s"' % hostname,
            "FQDNLookup false",
            "Interval %g" % interval,
            'BaseDir "%s"' % workdir,
            'PIDFile "%s/collectd.pid"' % workdir,
            'PluginDir "/usr/lib/collectd"',
            'TypesDB "/usr/share/collectd/types.db" "%s"' % types_db,
            "AutoLoadPlugin false",
            "LoadPlugin logfile",
            "<Plugin logfile>\n  LogLevel info\n  File STDOUT\n"
            "  PrintSeverity true\n</Plugin>",
            "LoadPlugin unixsock",
            '<Plugin unixsock>\n  SocketFile "%s"\n  SocketGroup "%s"\n'
            "</Plugin>" % (self.socket, group),
        ]
        if statsd_port:
            parts += ["LoadPlugin statsd",
                      '<Plugin statsd>\n  Host "127.0.0.1"\n  Port "%d"\n'
                      "</Plugin>" % statsd_port]
        if prometheus_port:
            parts += ["LoadPlugin write_prometheus",
                      '<Plugin write_prometheus>\n  Host "127.0.0.1"\n'
                      '  Port "%d"\n</Plugin>' % prometheus_port]
        elif csv:
            # a write plugin keeps collectd from logging that nothing is
            # written; the csv files are also handy when debugging
            parts += ["LoadPlugin csv",
                      '<Plugin csv>\n  DataDir "%s/csv"\n</Plugin>' % workdir]
        parts.append(extra_config)
        if service_file is not None:
            parts += ['PluginDir "%s"' % plugin_dir,
                      "LoadPlugin metastable",
                      '<Plugin metastable>\n  ServiceFile "%s"\n%s</Plugin>'
                      % (service_file, metastable_options)]
        with open(self.conf, "w") as f:
            f.write("\n".join(parts) + "\n")

    def check_config(self):
        r = subprocess.run(["collectd", "-t", "-C", self.conf],
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    def start(self, wait_for="Initialization complete", timeout=20):
        self.logfile = open(self.logpath, "w")
        self.proc = subprocess.Popen(
            ["collectd", "-f", "-C", self.conf], stdout=self.logfile,
            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("collectd exited early (%d):\n%s" %
                                   (self.proc.returncode, self.log()))
            if wait_for in self.log() and os.path.exists(self.socket):
                return self
            time.sleep(0.1)
        raise RuntimeError("collectd did not start:\n" + self.log())

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def terminate_timed(self, timeout=60):
        """SIGTERM to the daemon's process group; returns the seconds until
        it exited (collectd waits for the read cycle under way)."""
        t0 = time.time()
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout)
        return time.time() - t0

    def stop(self):
        _stop_group(self.proc)
        if getattr(self, "logfile", None):
            self.logfile.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def log(self):
        try:
            with open(self.logpath) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def new_log_lines(self):
        """Log lines written since the last call."""
        text = self.log()
        new = text[self._log_offset:]
        cut = new.rfind("\n") + 1
        self._log_offset += cut
        return new[:cut].splitlines()

    def notifications(self, text=None):
        """[(severity, plugin_instance, message)] from the logfile."""
        out = []
        for m in re.finditer(
                r"Notification: severity = (\w+), host = [^,]*, "
                r"plugin = metastable, plugin_instance = ([^,]*), "
                r"type = [^,]*, message = (.*)", text or self.log()):
            out.append((m.group(1), m.group(2), m.group(3)))
        return out

    def collectdctl(self, *args):
        return subprocess.run(["collectdctl", "-s", self.socket] + list(args),
                              capture_output=True, text=True, timeout=10)

    def getval(self, ident):
        """{ds: value} via collectdctl getval, or None when absent."""
        r = self.collectdctl("getval", ident)
        if r.returncode != 0:
            return None
        vals = {}
        for line in r.stdout.splitlines():
            k, _, v = line.partition("=")
            vals[k.strip()] = float(v)
        return vals

    def value(self, service, typ, host=HOSTNAME):
        v = self.getval("%s/metastable-%s/%s" % (host, service, typ))
        return None if v is None else v.get("value")

    def putval(self, ident, value, when=None):
        """PUTVAL through the unixsock plugin's socket.  (Not collectdctl
        putval: Debian's collectdctl 5.12 turns -5 into 2^64 - 5.)"""
        stamp = "N" if when is None else "%d" % int(when)
        cmd = "PUTVAL %s interval=1 %s:%s\n" % (ident, stamp, value)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.socket)
            s.sendall(cmd.encode())
            reply = s.makefile().readline()
        if not reply.startswith("0 "):
            raise RuntimeError("PUTVAL %s: %s" % (ident, reply.strip()))


def _group_name():
    import grp
    return grp.getgrgid(os.getgid()).gr_name


class Statsd:
    """Sends statsd lines over UDP to 127.0.0.1:port."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def gauge(self, name, value):
        # a leading sign would make it a delta: gauges here are >= 0
        self.sock.sendto(("%s:%s|g" % (name, value)).encode(),
                         ("127.0.0.1", self.port))

    def count(self, name, n):
        self.sock.sendto(("%s:%s|c" % (name, n)).encode(),
                         ("127.0.0.1", self.port))

    def timer(self, name, ms):
        # collectd's statsd dispatches a timer's mean as latency-<name>-
        # average, in seconds
        self.sock.sendto(("%s:%s|ms" % (name, ms)).encode(),
                         ("127.0.0.1", self.port))

    def close(self):
        self.sock.close()


def browse(url, workdir, screenshot=None, size=(1280, 2000),
           budget_ms=10000, timeout=120):
    """Open url in headless Chromium (Debian's chromium) and let its scripts
    run for budget_ms of virtual time.  Returns (dom, console): the page's
    DOM as serialised after the scripts ran, and every line the page wrote
    to the browser console (messages, uncaught errors, failed loads).  With
    screenshot, a second run saves a PNG of size (width, height) pixels
    there.  A private profile under workdir; nothing outlives the call."""
    exe = shutil.which("chromium")
    if exe is None:
        raise RuntimeError("chromium not found: apt-get install chromium")
    profile = os.path.join(workdir, "chromium-profile")
    base = [exe, "--headless=new", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--user-data-dir=" + profile,
            "--enable-logging=stderr", "--v=0",
            "--virtual-time-budget=%d" % budget_ms]

    def run(args):
        p = subprocess.run(base + args + [url], capture_output=True,
                           text=True, timeout=timeout,
                           start_new_session=True)
        console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
        if p.returncode != 0:
            raise RuntimeError("chromium exited %d: %s" %
                               (p.returncode, p.stderr[-2000:]))
        return p.stdout, console

    dom, console = run(["--dump-dom"])
    if screenshot is not None:
        _, more = run(["--hide-scrollbars", "--screenshot=" + screenshot,
                       "--window-size=%d,%d" % size])
        console += more
    return dom, console


class Prometheus:
    """A private Prometheus scraping collectd's write_prometheus."""

    # the console libraries (prom.lib, menu.lib) Debian's prometheus package
    # ships; the classic console assets they load are served by the binary
    CONSOLE_LIBRARIES = "/usr/share/doc/prometheus/examples/console_libraries"

    def __init__(self, workdir, target_port, rule_files=(), interval="1s",
                 consoles=None):
        """target_port: the write_prometheus port to scrape, or a list of
        them; consoles: a directory of console templates to serve under
        /consoles/ (with CONSOLE_LIBRARIES), or None."""
        ports = target_port if isinstance(target_port, (list, tuple)) else [
            target_port]
        self.workdir = workdir
        self.consoles = consoles
        self.port = free_port()
        self.proc = None
        conf = os.path.join(workdir, "prometheus.yml")
        rules = ""
        if rule_files:
            rules = "rule_files:\n" + "".join(
                "  - %s\n" % json.dumps(os.path.abspath(r))
                for r in rule_files)
        with open(conf, "w") as f:
            f.write(
                "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n"
                "%s"
                "scrape_configs:\n"
                "  - job_name: collectd\n"
                "    honor_labels: true\n"
                "    static_configs:\n"
                "      - targets: [%s]\n"
                % (interval, interval, rules,
                   ", ".join("'127.0.0.1:%d'" % p for p in ports)))
        self.conf = conf

    def start(self, timeout=60):
        exe = shutil.which("prometheus")
        if exe is None:
            raise RuntimeError("prometheus not found: apt-get install "
                               "prometheus")
        self.logfile = open(os.path.join(self.workdir, "prometheus.log"),
                            "w")
        self.proc = subprocess.Popen(
            [exe, "--config.file=" + self.conf,
             "--storage.tsdb.path=" + os.path.join(self.workdir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--web.enable-lifecycle"] + self._console_flags(),
            stdout=self.logfile, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.started = time.time()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("prometheus exited early")
            try:
                with urllib.request.urlopen(
                        "http://127.0.0.1:%d/-/ready" % self.port,
                        timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError("prometheus did not become ready")

    def _console_flags(self):
        if self.consoles is None:
            return []
        if not os.path.isdir(self.CONSOLE_LIBRARIES):
            raise RuntimeError("%s missing: apt-get install prometheus" %
                               self.CONSOLE_LIBRARIES)
        return ["--web.console.libraries=" + self.CONSOLE_LIBRARIES,
                "--web.console.templates=" + os.path.abspath(self.consoles)]

    def console_url(self, page, **params):
        """The URL of a console template page, e.g. "metastable.html"."""
        url = "http://127.0.0.1:%d/consoles/%s" % (self.port, page)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        return url

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s" % (self.port, path)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)

    def query(self, expr):
        """[(labels, value)] of an instant query."""
        d = self.api("query", query=expr)
        if d.get("status") != "success":
            raise RuntimeError("query %s: %s" % (expr, d))
        return [(s["metric"], float(s["value"][1]))
                for s in d["data"]["result"]]

    def stop(self):
        _stop_group(self.proc)
        if getattr(self, "logfile", None):
            self.logfile.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def put(path, text):
    """Write the file as an editor or a configuration manager does: a new
    file renamed over the old."""
    with open(path + ".new", "w") as f:
        f.write(text)
    os.replace(path + ".new", path)


def csv_series(work, ident):
    """[(time, value)] the csv plugin stored for ident
    (host/plugin-instance/type-instance), by time."""
    host, plugin, typ = ident.split("/")
    out = []
    for name in glob.glob(os.path.join(work, "csv", host, plugin,
                                       glob.escape(typ) + "-*")):
        with open(name) as f:
            for line in f:
                t, _, v = line.strip().partition(",")
                try:
                    out.append((float(t), float(v)))
                except ValueError:
                    pass  # the header, or a line being written
    return sorted(out)


def samples(work, service):
    """[(time, offered_load)] the csv plugin wrote for service, by time."""
    return csv_series(work, "%s/metastable-%s/offered_load"
                      % (HOSTNAME, service))
