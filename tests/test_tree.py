#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tree keeps its habits (CONTRIBUTING.md):

* every C function fits a reader's head: at most 120 lines from its
  signature to its closing brace (tools/func_lengths.py measures them);
* every source file says its licence in an SPDX-License-Identifier line
  near its top.

Both read $srcdir, so they hold in a git checkout and in the release
tarball alike (make distcheck).
"""
import os
import subprocess
import sys
import unittest

SRCDIR = os.path.abspath(os.environ.get(
    "srcdir", os.path.join(os.path.dirname(__file__), "..")))
MAX_LINES = 120
TAG = "SPDX-License-Identifier: MIT"
# The source kinds that carry the tag; data, prose, generated JSON and
# YAML examples (whose lines and columns tests quote) do not.
SOURCE_ENDINGS = (".c", ".h", ".py", ".sh", ".inc", ".am", ".ac", ".mjs",
                  ".php", ".1", ".5")
SKIP_DIRS = {".git", "autom4te.cache", "node_modules", "__pycache__", "m4",
             "build-aux"}


def source_files():
    """Paths relative to SRCDIR of the source files, build trees (any
    directory with a config.status: in-tree builds, distcheck's _build)
    left out."""
    for root, dirs, files in os.walk(SRCDIR):
        if root != SRCDIR and "config.status" in files:
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and
                         not d.startswith("build"))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), SRCDIR)
            if rel in ("configure", "config.status", "libtool",
                       "Makefile.in", "aclocal.m4") or \
                    rel.endswith("Makefile.in"):
                continue
            if name.endswith(SOURCE_ENDINGS) or name in ("run",) or \
                    rel.startswith("scripts/"):
                yield rel


class Tree(unittest.TestCase):
    def test_functions_fit(self):
        c_files = [os.path.join(SRCDIR, f) for f in source_files()
                   if f.endswith(".c")]
        self.assertGreater(len(c_files), 40)
        r = subprocess.run(
            [sys.executable, os.path.join(SRCDIR, "tools", "func_lengths.py"),
             str(MAX_LINES)] + c_files, capture_output=True, text=True)
        self.assertEqual(r.stdout, "", "functions over %d lines:\n%s" %
                         (MAX_LINES, r.stdout))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_measure_catches(self):
        """The measure itself: a made-up function of 130 lines is reported,
        one of 20 is not."""
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            long_c = os.path.join(d, "long.c")
            with open(long_c, "w") as f:
                f.write("static int big(int x) {\n" +
                        "  x += 1; /* } in a comment */\n" * 128 + "  return x;\n}\n"
                        "int small(void) {\n" + "  return 0;\n" * 18 + "}\n")
            r = subprocess.run(
                [sys.executable,
                 os.path.join(SRCDIR, "tools", "func_lengths.py"), "120",
                 long_c], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("big", r.stdout)
            self.assertNotIn("small", r.stdout)

    def test_spdx_headers(self):
        missing = []
        files = list(source_files())
        self.assertGreater(len(files), 100)
        for rel in files:
            with open(os.path.join(SRCDIR, rel), encoding="utf-8",
                      errors="replace") as f:
                head = [f.readline() for _ in range(3)]
            if not any(TAG in line for line in head):
                missing.append(rel)
        self.assertEqual(missing, [], "no %r in the first three lines" % TAG)


if __name__ == "__main__":
    unittest.main(verbosity=2)
