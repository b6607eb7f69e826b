#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The <Plugin metastable> block as a real collectd reads it.

Each case is one collectd.conf with the built plugin and one line added
to its block, checked with `collectd -T` (read the configuration, run
every init and one read, exit): the exit status and what collectd prints
on standard error (no log plugin is loaded, so everything goes there).

What this holds: a misspelt option fails the start with a did-you-mean;
collectd's own scanner splits an unquoted 1.5m into a number and a
string, and the plugin still reads 90 s; an unquoted 20% reaches the
plugin as the number 20 and is refused with the hint to quote it, a
quoted "20%" is 0.2; a bare timeout that looks like milliseconds is
logged once at load and collectd starts.  The unit tests of tests/check_plugin_config.c give
the same lines to the collectd stand-in, whose scanner this test holds
to collectd's.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("MS_TOP_SRCDIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(
                         os.path.abspath(__file__)))))
BUILD = os.environ.get("MS_TOP_BUILDDIR", os.path.join(SRC, "build"))
sys.path.insert(0, os.path.join(SRC, "tests"))
import harness  # noqa: E402

PLUGIN_DIR = os.path.join(BUILD, "plugin", ".libs")
TYPES_DB = os.path.join(SRC, "conf", "types.db")
check = harness.check

SERVICE = ("services:\n  - name: a\n    model: capacity\n    capacity: 100\n"
           "    retries: 1\n    inputs:\n      offered_rate: 10\n")


def run(work, lines, service=SERVICE):
    """collectd -T with these lines in <Plugin metastable>: (exit status,
    what it printed)."""
    path = os.path.join(work, "services.yaml")
    with open(path, "w") as f:
        f.write(service)
    conf = os.path.join(work, "collectd.conf")
    with open(conf, "w") as f:
        f.write("\n".join([
            'Hostname "h"', "FQDNLookup false", 'BaseDir "%s"' % work,
            'PIDFile "%s/collectd.pid"' % work, "AutoLoadPlugin false",
            'TypesDB "/usr/share/collectd/types.db" "%s"' % TYPES_DB,
            'PluginDir "%s"' % PLUGIN_DIR, "LoadPlugin metastable",
            "<Plugin metastable>"] +
            ["  " + line.replace("@FILE@", path) for line in lines] +
            ["</Plugin>", ""]))
    r = subprocess.run(["collectd", "-T", "-C", conf], capture_output=True,
                       text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def main():
    harness.require("collectd")
    work = tempfile.mkdtemp(prefix="metastable-config-")
    print("work directory:", work)
    file_line = 'ServiceFile "@FILE@"'

    rc, out = run(work, ['ServicFile "@FILE@"'])
    check(rc == 1, "a misspelt ServiceFile fails the start (exit %d)" % rc)
    check('unknown option "ServicFile": did you mean "ServiceFile"?' in out
          and "collectd does not start until it is fixed" in out,
          "and says did you mean \"ServiceFile\"")

    rc, out = run(work, [file_line, "Interval 1.5m"])
    check(rc == 0 and "values per service every 90 s" in out,
          "Interval 1.5m, split by collectd's scanner, is 90 s (exit %d)"
          % rc)
    rc, out = run(work, [file_line, "Interval 500ms"])
    check(rc == 0 and "values per service every 0.5 s" in out,
          "Interval 500ms is 0.5 s (exit %d)" % rc)
    rc, out = run(work, [file_line, "Interval 99ms"])
    check(rc == 1 and "Interval 99ms is 0.099 s: it must be from 0.1 s to "
          "86400 s" in out, "Interval 99ms is refused (exit %d)" % rc)

    rc, out = run(work, [file_line, 'CycleBudget "20%"'])
    check(rc == 0, "CycleBudget \"20%%\" is accepted (exit %d)" % rc)
    rc, out = run(work, [file_line, "CycleBudget 20%"])
    check(rc == 1 and "CycleBudget 20: must be a share" in out and
          'for a percentage write "20%" in quotes' in out,
          "an unquoted 20%% reaches the plugin as 20, refused with the hint "
          "(exit %d)" % rc)

    bare = SERVICE.replace(
        "model: capacity\n    capacity: 100\n",
        "model: erlang\n    servers: 4\n    service_time: 100ms\n"
        "    timeout: 500\n")
    rc, out = run(work, [file_line], service=bare)
    said = [line for line in out.splitlines()
            if "timeout: 500 was read as 500 s, 5,000 times the service "
            "time; write 500ms if you meant milliseconds" in line]
    check(rc == 0 and len(said) == 1 and
          said[0].endswith("services.yaml:6:14); the plugin uses the value "
                           "as read, in seconds"),
          "a bare timeout: 500 beside 100ms is warned about once, with its "
          "place, and collectd starts (exit %d, %d lines)" % (rc, len(said)))

    if not harness.FAILURES:
        shutil.rmtree(work)
    harness.finish(work)


if __name__ == "__main__":
    main()
