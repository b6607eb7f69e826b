#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Debian package, built, installed into this system, run and removed.

Installs into the system (apt-get), so it runs last in make
check-integration and make check-all (tests/Makefile.inc), as root; it
skips (77) without root, without the build tools of
scripts/install-deps.sh --test, or when collectd-metastable is installed
already (it would not remove what it did not install): an error instead
with MS_REQUIRE_ALL=1 (tests/harness.py, skip).

Asserted:
* make deb refuses a debian/changelog whose version is not configure's;
  it builds collectd-metastable_VERSION_ARCH.deb with configure's
  version, lintian finds no error and no warning in it;
* it holds what make install installs (--prefix=/usr), plus the Debian
  documents and lintian's overrides, nothing in /etc and no libtool .la;
  Depends has the shared libraries' packages and collectd-core (>= 5.12);
* a snippet configured for another plugin directory (configure
  --with-collectd-plugindir) has its PluginDir lines, and switched on
  collectd -T loads the plugin from there and a plugin after it from
  collectd's own directory; the package's snippet has none;
* apt-get install ./DEB installs it, every path the man pages' FILES
  sections name exists, it has no conffile, its snippet is only comments;
* the snippet with its four lines uncommented (as README.Debian says) and
  the example service file: collectd -t accepts it and collectd -T loads
  the plugin from /usr/lib/collectd and reads the file (a broken service
  file makes -T fail: -t of Debian 12's collectd 5.12.0 reads nothing);
* a real collectd with the user's copy in /etc/collectd/collectd.conf.d
  and a service file of numbers, on csv output in a private directory,
  maps /usr/lib/collectd/metastable.so and writes the values a hand
  calculation gives (capacity model, no base failure: the tipping load is
  the capacity, the healthy load gets no retries);
* an upgrade (the package repacked with a higher version and a changed
  snippet comment) with apt-get -y and stdin from /dev/null succeeds, keeps
  the user's copy as it was, and its postinst names the running collectd,
  which maps the replaced plugin as deleted; postinst is silent for a
  collectd that maps the current file;
* /usr/bin/metastable --help, and the bash completion registers;
* apt-get remove leaves only the user's copy, and a collectd with that
  copy switched on still starts (-T; with AutoLoadPlugin true it does not,
  as README.Debian warns); apt-get purge leaves the copy and otherwise the
  file system's listing (/etc /usr /opt /srv /var/lib) as it was before.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("MS_TOP_SRCDIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(
                         os.path.abspath(__file__)))))
BUILD = os.environ.get("MS_TOP_BUILDDIR", os.path.join(SRC, "build"))
sys.path.insert(0, os.path.join(SRC, "tests"))
import harness  # noqa: E402

PKG = "collectd-metastable"
SNIPPET = "/etc/collectd/collectd.conf.d/metastable.conf"
SHARE = "/usr/share/collectd-metastable"
PLUGIN = "/usr/lib/collectd/metastable.so"
# the lines README.Debian says to uncomment (PluginDir: only for a plugin
# directory not collectd's own)
SWITCHES = re.compile(r"^#(Include |PluginDir |<Plugin |  ServiceFile |"
                      r"</Plugin>)")
SNAPSHOT_ROOTS = ("/etc", "/usr", "/opt", "/srv", "/var/lib")
# what apt, dpkg and the system change by themselves
SNAPSHOT_SKIP = ("/var/lib/dpkg", "/var/lib/apt", "/var/lib/systemd",
                 "/var/lib/ucf", "/var/lib/man-db")
# what only the package has: /usr/share/doc's documents and lintian's
# overrides (and nothing in /etc)
DEBIAN_ONLY = ("/etc", "/usr/share/doc", "/usr/share/lintian")
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300"]
TIMES = []
check = harness.check
FAILURES = harness.FAILURES


def run(args, timeout=600, **kw):
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive",
               LC_ALL="C.UTF-8")
    return subprocess.run(args, capture_output=True, text=True,
                          timeout=timeout, env=env, **kw)


def timed(what, args, **kw):
    t0 = time.time()
    r = run(args, **kw)
    TIMES.append((what, time.time() - t0))
    if r.returncode != 0:
        print(r.stdout[-4000:], r.stderr[-4000:], sep="\n")
    return r


def status():
    """dpkg's status abbreviation of the package ('ii ', 'rc '), or ''."""
    r = run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", PKG])
    return r.stdout if r.returncode == 0 else ""


def snapshot():
    """Every path under SNAPSHOT_ROOTS but SNAPSHOT_SKIP and __pycache__."""
    paths = set()
    for root in SNAPSHOT_ROOTS:
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x != "__pycache__" and
                       os.path.join(d, x) not in SNAPSHOT_SKIP]
            paths.update(os.path.join(d, x) for x in dirs + files)
    return paths


def make_variable(name):
    with open(os.path.join(BUILD, "Makefile")) as f:
        m = re.search(r"^%s = (.*)$" % name, f.read(), re.M)
    return m.group(1).strip()


def man_files():
    """The paths the FILES sections of both man pages name, but those
    they say are not installed: [(path, description)]."""
    out = []
    for page in ("metastable.1", "collectd-metastable.5"):
        with open(os.path.join(SRC, "doc", page)) as f:
            text = f.read()
        section = text.split("\n.SH FILES\n", 1)[1].split("\n.SH ", 1)[0]
        for entry in section.split(".TP\n")[1:]:
            tag, _, desc = entry.partition("\n")
            path = tag.split(None, 1)[1].replace("\\%", "").replace("\\-",
                                                                     "-")
            for p in path.split(", "):
                p = p if p.startswith("/") else os.path.join(
                    os.path.dirname(path.split(", ")[0]), p)
                if "not installed" not in desc:
                    out.append((p, page))
    return out


def deb_contents(deb):
    """The paths in the package's data archive."""
    r = subprocess.run("dpkg-deb --fsys-tarfile '%s' | tar -t" % deb,
                       shell=True, capture_output=True, text=True)
    return {"/" + p[2:].rstrip("/") for p in r.stdout.split()
            if p not in ("./",)}


def check_build():
    version = make_variable("PACKAGE_VERSION")
    r = run(["make", "-C", BUILD, "deb", "PACKAGE_VERSION=%s.1" % version])
    check(r.returncode != 0 and "debian/changelog is at %s, configure.ac "
          "at %s.1" % (version, version) in r.stderr,
          "make deb refuses a configure version that is not "
          "debian/changelog's, saying so %r" % r.stderr[-300:])
    r = timed("make deb", ["make", "-C", BUILD, "deb"], timeout=900)
    if not check(r.returncode == 0, "make deb builds the package"):
        return None
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    deb = os.path.join(BUILD, "deb", "%s_%s_%s.deb" % (PKG, version, arch))
    check(os.path.exists(deb), "the package is %s" % os.path.basename(deb))
    if not os.path.exists(deb):
        return None
    fields = run(["dpkg-deb", "-f", deb, "Version", "Depends"]).stdout
    check("Version: %s\n" % version in fields,
          "its version is configure's, %s" % version)
    depends = fields.split("Depends:", 1)[1]
    for need in ("libgmp10", "libyaml-0-2", "libjansson4", "libc6",
                 r"collectd-core \(>= 5\.12\)"):
        check(re.search(r"(^|, )%s( |,|$)" % need, depends.strip()),
              "Depends names %s" % need)
    r = timed("lintian", ["lintian", "--pedantic", "--info", deb])
    tags = [l for l in r.stdout.splitlines() + r.stderr.splitlines()
            if re.match(r"^[EW]: ", l)]
    check(r.returncode == 0 and not tags, "lintian: no error, no warning %s"
          % tags)
    return deb


def check_like_make_install(deb):
    """The package's files are make install's with --prefix=/usr, plus
    DEBIAN_ONLY; no .la anywhere."""
    contents = deb_contents(deb)
    with tempfile.TemporaryDirectory() as d:
        r = timed("make install", ["make", "-C", BUILD, "install",
                                   "prefix=/usr", "DESTDIR=" + d])
        check(r.returncode == 0, "make install prefix=/usr DESTDIR=...")
        installed = set()
        for root, dirs, files in os.walk(d):
            for x in dirs + files:
                installed.add(os.path.join(root, x)[len(d):])
    pkg = {p[:-3] if p.startswith("/usr/share/man/") and p.endswith(".gz")
           else p for p in contents
           if not p.startswith(DEBIAN_ONLY)}
    check(pkg == installed, "the package holds what make install installs "
          "(only in the package: %s; only make install: %s)" %
          (sorted(pkg - installed), sorted(installed - pkg)))
    check(not [p for p in contents if p.startswith("/etc")],
          "and nothing in /etc (users copy the snippet)")
    check(not [p for p in contents | installed if p.endswith(".la")],
          "no libtool .la, in the package or from make install")


def check_installed():
    listed = run(["dpkg", "-L", PKG]).stdout.split()
    missing = [p for p in listed if not os.path.lexists(p)]
    check(listed and not missing, "dpkg -L: %d paths, all there %s" %
          (len(listed), missing))
    check(PLUGIN in listed, "the plugin is " + PLUGIN)
    for path, page in man_files():
        check(os.path.exists(path), "%s (%s, FILES) is installed" %
              (path, page))
    conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", PKG]).stdout
    check(not conffiles.strip(), "no conffile %r" % conffiles)
    with open(os.path.join(SHARE, "metastable.conf")) as f:
        lines = f.read().splitlines()
    check(all(not l.strip() or l.lstrip().startswith("#") for l in lines),
          "the snippet as shipped is comments only: a copy changes nothing")
    check(not [l for l in lines if l.startswith("#PluginDir")],
          "the package's snippet has no PluginDir")
    r = run(["/usr/bin/metastable", "--help"])
    check(r.returncode == 0 and r.stdout.startswith("Usage: metastable"),
          "/usr/bin/metastable --help")
    r = run(["bash", "--norc", "-c", "source /usr/share/bash-completion/"
             "completions/metastable && complete -p metastable"])
    check(r.stdout.strip() == "complete -F _metastable metastable",
          "the installed bash completion registers for metastable")
    return lines


def enable(lines, service_file, work, snippet=None, switches=4):
    """The snippet with README.Debian's lines uncommented, naming
    service_file, written to snippet (default: in work); returns the main
    configuration's path."""
    out, switched = [], 0
    for l in lines:
        if SWITCHES.match(l):
            l, switched = l[1:], switched + 1
        out.append(l.replace('"/etc/collectd/metastable.yaml"',
                             '"%s"' % service_file))
    check(switched == switches, "README.Debian's %d lines are there to "
          "uncomment (%d)" % (switches, switched))
    snippet = snippet or os.path.join(work, "metastable.conf")
    os.makedirs(os.path.dirname(snippet), exist_ok=True)
    with open(snippet, "w") as f:
        f.write("\n".join(out) + "\n")
    conf = os.path.join(work, "collectd.conf")
    with open(conf, "w") as f:
        f.write('Hostname "%s"\nFQDNLookup false\nInterval 1\n'
                'BaseDir "%s"\nPIDFile "%s/collectd.pid"\n'
                'AutoLoadPlugin false\nLoadPlugin logfile\n'
                '<Plugin logfile>\n  LogLevel info\n  File STDOUT\n'
                '</Plugin>\nLoadPlugin csv\n<Plugin csv>\n  DataDir '
                '"%s/csv"\n</Plugin>\nInclude "%s"\n' %
                (harness.HOSTNAME, work, work, work, snippet))
    return conf


def check_config(lines, work):
    example = os.path.join(work, "metastable.yaml")
    shutil.copy(os.path.join(SHARE, "metastable.yaml"), example)
    conf = enable(lines, example, work)
    r = run(["collectd", "-t", "-C", conf], timeout=60)
    check(r.returncode == 0, "collectd -t accepts the snippet with the "
          "example service file")
    r = run(["collectd", "-T", "-C", conf], timeout=60)
    out = r.stdout + r.stderr
    check(r.returncode == 0 and 'plugin "metastable" successfully loaded'
          in out and "Parsing the config file failed" not in out,
          "collectd -T loads the plugin and reads the example's services")
    broken = os.path.join(work, "broken.yaml")
    with open(broken, "w") as f:
        f.write("services:\n  - name: x\n    model: capacity\n"
                "    capacity: -5\n")
    r = run(["collectd", "-T", "-C", enable(lines, broken, work)],
            timeout=60)
    check(r.returncode != 0 and broken + ":4:15:" in r.stdout + r.stderr,
          "collectd -T fails on a broken service file, naming its line")


def csv_value(work, typ):
    files = glob.glob(os.path.join(work, "csv", harness.HOSTNAME,
                                   "metastable-pkgtest", typ + "-*"))
    for path in files:
        with open(path) as f:
            rows = [l for l in f.read().splitlines()
                    if l and not l.startswith("epoch")]
        if rows:
            return float(rows[-1].split(",")[1])
    return None


def check_collectd(lines, work, deb):
    """A real collectd with the user's copy of the snippet in
    collectd.conf.d: capacity 100/s, 3 retries, no base failure, 50 req/s
    offered.  By hand: the healthy equilibrium x = L exists while L <= C,
    so the tipping load is C = 100; at 50 nothing fails, so the effective
    load is the offered 50 and the retries add 0.  It keeps running
    through an upgrade (check_upgrade).  Returns the main configuration."""
    spec = os.path.join(work, "pkgtest.yaml")
    with open(spec, "w") as f:
        f.write("services:\n  - name: pkgtest\n    model: capacity\n"
                "    capacity: 100\n    retries: 3\n    inputs:\n"
                "      offered_rate: 50\n")
    conf = enable(lines, spec, work, snippet=SNIPPET)
    log = open(os.path.join(work, "collectd.log"), "w")
    t0 = time.time()
    proc = subprocess.Popen(["collectd", "-f", "-C", conf], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        values, maps = {}, ""
        deadline = time.time() + 30
        while time.time() < deadline and proc.poll() is None:
            values = {t: csv_value(work, t) for t in
                      ("tipping_load", "offered_load", "effective_load",
                       "self_inflicted_load")}
            if None not in values.values():
                with open("/proc/%d/maps" % proc.pid) as f:
                    maps = f.read()
                break
            time.sleep(0.2)
        if PLUGIN in maps:
            check_upgrade(deb, work, proc.pid)
    finally:
        harness._stop_group(proc)
        log.close()
    TIMES.append(("collectd run", time.time() - t0))
    with open(os.path.join(work, "collectd.log")) as f:
        text = f.read()
    check('plugin "metastable" successfully loaded' in text,
          "collectd's log: the plugin loaded")
    check(PLUGIN in maps, "the running collectd maps " + PLUGIN)
    check(values == {"tipping_load": 100, "offered_load": 50,
                     "effective_load": 50, "self_inflicted_load": 0},
          "its values in collectd's csv: %s" % values)
    if FAILURES:
        print(text[-3000:])
    return conf


def repack(deb, work):
    """The package with version VERSION+upgradetest1 and one more comment
    line in its snippet, as a next release would change it."""
    d = os.path.join(work, "repack")
    subprocess.run(["dpkg-deb", "-R", deb, d], check=True)
    rel = SHARE[1:] + "/metastable.conf"
    with open(os.path.join(d, rel), "a") as f:
        f.write("# a comment of the next version\n")
    with open(os.path.join(d, "DEBIAN", "control")) as f:
        control = f.read()
    version = re.search(r"^Version: (.*)$", control, re.M).group(1)
    with open(os.path.join(d, "DEBIAN", "control"), "w") as f:
        f.write(re.sub(r"^Version: .*$", "Version: %s+upgradetest1" %
                       version, control, flags=re.M))
    md5 = subprocess.run(["md5sum", rel], cwd=d, capture_output=True,
                         text=True, check=True).stdout
    with open(os.path.join(d, "DEBIAN", "md5sums")) as f:
        sums = [l for l in f.read().splitlines() if not l.endswith(rel)]
    with open(os.path.join(d, "DEBIAN", "md5sums"), "w") as f:
        f.write("\n".join(sums) + "\n" + md5)
    out = os.path.join(work, "next.deb")
    subprocess.run(["dpkg-deb", "-b", "-Zxz", d, out], check=True,
                   capture_output=True)
    return out, version + "+upgradetest1"


def check_upgrade(deb, work, pid):
    """The user's switched-on copy in collectd.conf.d, a collectd (pid)
    running the plugin: upgrade non-interactively."""
    with open(SNIPPET) as f:
        mine = f.read()
    postinst = "/var/lib/dpkg/info/%s.postinst" % PKG
    r = run(["sh", postinst, "configure", "0.1"])
    check(r.returncode == 0 and "collectd" not in r.stderr,
          "postinst is silent for a collectd that maps the current plugin "
          "%r" % r.stderr)
    nxt, version = repack(deb, work)
    r = timed("apt-get upgrade", APT + ["install", nxt],
              stdin=subprocess.DEVNULL)
    got = run(["dpkg-query", "-W", "-f=${Version}", PKG]).stdout
    check(r.returncode == 0 and status() == "ii " and got == version,
          "apt-get install -y of %s over it, stdin /dev/null: installed "
          "(%s)" % (version, got))
    with open(SNIPPET) as f:
        check(f.read() == mine, "the user's copy is as it was")
    want = ("a collectd (pid %d) still has the plugin that was installed "
            "before this upgrade loaded (its file was replaced): restart "
            "collectd" % pid)
    check(want in " ".join((r.stdout + r.stderr).split()),
          "postinst: " + want)


def check_removed(conf, work):
    """After apt-get remove: the user's copy switched on, collectd starts;
    with AutoLoadPlugin true it does not (README.Debian's warning)."""
    r = run(["collectd", "-T", "-C", conf], timeout=60)
    out = r.stdout + r.stderr
    check(r.returncode == 0 and "Parsing the config file failed" not in out
          and "load.conf" in out,
          "after remove collectd -T with the kept copy switched on starts "
          "(skipping the missing load.conf) %r" % out[-600:])
    with open(conf) as f:
        text = f.read()
    auto = os.path.join(work, "collectd-auto.conf")
    with open(auto, "w") as f:
        f.write(text.replace("AutoLoadPlugin false", "AutoLoadPlugin true"))
    r = run(["collectd", "-T", "-C", auto], timeout=60)
    check(r.returncode != 0 and 'Could not find plugin "metastable"' in
          r.stdout + r.stderr, "with AutoLoadPlugin true it does not, as "
          "README.Debian warns")


def check_plugindir(work):
    """configure --with-collectd-plugindir=DIR, DIR not collectd's own:
    the snippet's two PluginDir lines, switched on with the others, load
    the plugin from DIR (where only the build's copy is) and give collectd
    back its own directory for the plugins after it (csv)."""
    d = os.path.join(work, "pd")
    pfx = os.path.join(d, "pfx")
    plugindir = os.path.join(pfx, "lib", "collectd")
    os.makedirs(plugindir)
    t0 = time.time()
    r = run([os.path.join(SRC, "configure"), "--prefix=" + pfx,
             "--with-collectd-plugindir=" + plugindir], cwd=d)
    r2 = run(["make", "conf/metastable.conf", "conf/load.conf"], cwd=d)
    TIMES.append(("configure pd", time.time() - t0))
    if not check(r.returncode == 0 and r2.returncode == 0,
                 "configure --with-collectd-plugindir=%s, make the snippets"
                 % plugindir):
        print(r.stdout[-2000:], r.stderr[-2000:], r2.stderr[-2000:])
        return
    share = os.path.join(pfx, "share", "collectd-metastable")
    os.makedirs(share)
    shutil.copy(os.path.join(d, "conf", "load.conf"), share)
    shutil.copy(os.path.join(SRC, "conf", "types.db"), share)
    shutil.copy(os.path.join(BUILD, "plugin", ".libs", "metastable.so"),
                plugindir)
    with open(os.path.join(d, "conf", "metastable.conf")) as f:
        pdlines = f.read().splitlines()
    dirs = [l for l in pdlines if l.startswith("#PluginDir ")]
    check(dirs == ['#PluginDir "%s"' % plugindir,
                   '#PluginDir "/usr/lib/collectd"'],
          "its snippet has PluginDir DIR and then collectd's own %s" % dirs)
    example = os.path.join(work, "metastable.yaml")
    shutil.copy(os.path.join(SRC, "conf", "metastable.yaml"), example)
    snippet = os.path.join(d, "snippet.conf")
    conf = enable(pdlines, example, d, snippet=snippet, switches=6)
    with open(conf) as f:
        text = f.read()
    # the snippet first, csv after it (from collectd's own directory)
    text = re.sub(r"LoadPlugin csv\n<Plugin csv>\n.*?</Plugin>\n", "",
                  text, flags=re.S).replace(
        'Include "%s"\n' % snippet, 'Include "%s"\nLoadPlugin csv\n' %
        snippet)
    with open(conf, "w") as f:
        f.write(text)
    r = run(["collectd", "-T", "-C", conf], timeout=60)
    out = r.stdout + r.stderr
    check(r.returncode == 0 and 'plugin "metastable" successfully loaded'
          in out and 'plugin "csv" successfully loaded' in out,
          "collectd -T loads metastable from DIR and csv after it %r" %
          out[-600:])


def cleanup_copy(before):
    """Delete the copy of the snippet the test made as a user would (and
    collectd.conf.d when the test made it)."""
    if SNIPPET not in before and os.path.lexists(SNIPPET):
        os.unlink(SNIPPET)
    d = os.path.dirname(SNIPPET)
    if d not in before and os.path.isdir(d) and not os.listdir(d):
        os.rmdir(d)


def main():
    harness.require("dpkg-buildpackage", "dh", "lintian", "apt-get",
                    "collectd", root="it installs the package with apt-get")
    if status():
        harness.skip("%s is installed on this machine (%s): the test "
                     "installs and purges it, so it leaves one it did not "
                     "install alone" % (PKG, status().strip()))
    if os.path.lexists(SNIPPET):
        harness.skip("%s exists: the test writes it, as a user copies it"
                     % SNIPPET)
    deb = check_build()
    if deb is None:
        return 1
    check_like_make_install(deb)
    before = snapshot()
    work = tempfile.mkdtemp(prefix="test-deb-")
    if not os.path.lexists(PLUGIN):
        check_plugindir(work)
    installed = False
    conf = None
    try:
        r = timed("apt-get install", APT + ["install",
                                            "--no-install-recommends", deb])
        installed = check(r.returncode == 0 and status() == "ii ",
                          "apt-get install ./%s" % os.path.basename(deb))
        if installed:
            lines = check_installed()
            check_config(lines, work)
            conf = check_collectd(lines, work, deb)
        r = timed("apt-get remove", APT + ["remove", PKG])
        left = snapshot() - before
        check(r.returncode == 0 and status() in ("", "un ", "pn ", "rc "),
              "apt-get remove: the package is removed")
        check(left <= {SNIPPET, os.path.dirname(SNIPPET)} and
              SNIPPET in left, "after remove only the user's copy is left "
              "%s" % sorted(left))
        if conf:
            check_removed(conf, work)
        # without a conffile dpkg forgets a removed package: nothing to
        # purge then (apt-get purge would not know it)
        if status() == "rc ":
            r = timed("apt-get purge", APT + ["purge", PKG])
        installed = False
        check(status() in ("", "un ", "pn "),
              "apt-get remove (and purge): the package is not installed, "
              "nor its configuration")
        check(os.path.exists(SNIPPET), "purge leaves the user's copy")
        cleanup_copy(before)
        after = snapshot()
        check(after == before, "after purge and deleting the user's copy "
              "the file system is as before (new: %s; gone: %s)" %
              (sorted(after - before), sorted(before - after)))
    finally:
        if installed or status():
            run(APT + ["purge", PKG])
        cleanup_copy(before)
        shutil.rmtree(work, ignore_errors=True)
    for what, secs in TIMES:
        print("time %-16s %6.1f s" % (what, secs))
    if FAILURES:
        print("%d failed" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
