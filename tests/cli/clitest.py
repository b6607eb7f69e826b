# SPDX-License-Identifier: MIT
"""Helpers for the command-line tests (tests/cli/test_*.py).

The tests run from the build directory (automake's test harness); the
binary is ./cli/metastable there, or $METASTABLE.  Test data comes from
$srcdir/tests/cli/data ($srcdir is exported by the harness).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BUILD = os.getcwd()
SRCDIR = os.path.abspath(os.environ.get("srcdir", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")))
DATA = os.path.join(SRCDIR, "tests", "cli", "data")
EXAMPLES = os.path.join(SRCDIR, "cli", "examples")
FIXTURES = os.path.join(SRCDIR, "tests", "data")
METASTABLE = os.environ.get("METASTABLE",
                            os.path.join(BUILD, "cli", "metastable"))
SPEC = os.path.join(EXAMPLES, "services.yaml")


class Result:
    def __init__(self, args, proc):
        self.args = args
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return "metastable %s -> exit %d\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(self.args), self.code, self.out[:3000], self.err[:3000])


def run(*args, env=None, stdin=None, cwd=None):
    """Run metastable with args; returns a Result (never raises)."""
    e = dict(os.environ)
    if env:
        e.update(env)
    proc = subprocess.run([METASTABLE] + list(args), capture_output=True,
                          text=True, env=e, input=stdin, cwd=cwd,
                          timeout=300)
    return Result(list(args), proc)


def have(tool):
    """Whether a command is on the PATH.  Without it a check is left out,
    unless MS_REQUIRE_ALL=1 (.ci/run, scripts/test.sh), where every check
    must run: then its absence fails (tests/harness.py, skip)."""
    import shutil
    if shutil.which(tool):
        return True
    if os.environ.get("MS_REQUIRE_ALL") == "1":
        raise AssertionError("%s not found (MS_REQUIRE_ALL=1: every test must "
                             "run; scripts/install-deps.sh --test installs "
                             "it)" % tool)
    sys.stderr.write("%s not found: its checks are left out\n" % tool)
    return False


class CliTest(unittest.TestCase):
    def ok(self, *args, **kw):
        """Run, and require exit 0 and an empty stderr."""
        r = run(*args, **kw)
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.err, "", r)
        return r

    def fails(self, code, pattern, *args, **kw):
        """Run, and require exit `code`, nothing on stdout and pattern in
        stderr."""
        r = run(*args, **kw)
        self.assertEqual(r.code, code, r)
        self.assertEqual(r.out, "", r)
        self.assertIn(pattern, r.err, r)
        return r

    def assertRel(self, got, want, rel, msg=None):
        err = abs(got - want) / abs(want) if want else abs(got)
        self.assertLessEqual(err, rel, msg or "%r vs %r" % (got, want))

    def assertPluginVerdicts(self, svc, series, counted, queue=True):
        """Each window of a `simulate` series (JSON rows or CSV rows)
        judged by `solve`, the plugin's verdict on the same observations:
        the window's offered load, attempts, failure ratio and backlog
        (queue: the engine has a queue), the previous window's state and
        storm flag, and the window as the interval (counted: the DES; the
        fluid engine's rates are expectations, without counting noise:
        weighed over 1e15 s, MS_SIM_FLUID_TAU of model/sim.c).  The state
        and the storm flag must agree."""
        prev, t0 = None, 0.0
        for w in series:
            t, storm = float(w["time"]), int(w["storm"])
            model = list(svc)
            if "--servers" in model:
                # the pool of the window's end (a stall changes it); with
                # none there is no landscape and no verdict of the plugin:
                # the simulator calls it overloaded, in storm
                pool = int(w["servers"])
                if pool == 0:
                    self.assertEqual((w["state"], storm), ("overloaded", 1))
                    prev, t0 = (w["state"], storm), t
                    continue
                model[model.index("--servers") + 1] = str(pool)
            args = ["solve", *model, "--load", str(w["offered"]),
                    "--observed-load", str(w["attempts"]),
                    "--observed-failure", str(w["failure_ratio"]),
                    "--interval", str(t - t0) if counted else "1e15",
                    "--format", "json"]
            if queue:
                args += ["--queue-length", str(w["backlog"])]
            if prev is not None:
                args += ["--previous", prev[0], "--previous-storm",
                         str(prev[1])]
            v = self.ok(*args).json()
            self.assertEqual((w["state"], storm), (v["state"], v["storm"]),
                             w)
            prev, t0 = (w["state"], storm), t


class ScratchTest(CliTest):
    """A CliTest with a scratch directory of its own per test, removed
    after it; path(name) is a file in it."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)


def main():
    if not os.access(METASTABLE, os.X_OK):
        sys.exit("cannot run %s: build it first (make)" % METASTABLE)
    unittest.main(verbosity=2)
