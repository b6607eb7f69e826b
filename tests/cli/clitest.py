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
