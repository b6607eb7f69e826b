#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tree keeps its habits (CONTRIBUTING.md):

* every C function fits a reader's head: at most 120 lines from its
  signature to its closing brace (tools/func_lengths.py measures them);
* every source file says its licence in an SPDX-License-Identifier line
  near its top;
* doc/design.md §3 lists every source file of the code rooms (model/,
  service/, plugin/, cli/), and every top-level directory, as they are.

Both read $srcdir, so they hold in a git checkout and in the release
tarball alike (make distcheck).
"""
import os
import re
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


# The rooms whose every .c and .h doc/design.md §3 names.
ROOMS = ("model", "service", "plugin", "cli")


def layout():
    """{directory: set of names} from doc/design.md §3's listing: a line
    "dir/  ..." opens a directory, a line "  name  ..." names one of its
    entries (a file, or a subdirectory with its slash)."""
    with open(os.path.join(SRCDIR, "doc/design.md"), encoding="utf-8") as f:
        text = f.read()
    sec = text[text.index("## §3 Layout"):text.index("## §4")]
    block = sec[sec.index("```\n") + 4:]
    block = block[:block.index("```")]
    dirs, current = {}, None
    for line in block.split("\n"):
        m = re.match(r"^([\w.-]+)/\s", line)
        if m:
            current = dirs.setdefault(m.group(1), set())
            continue
        m = re.match(r"^  ([\w.-]+/?)(?:\s|$)", line)
        if m and current is not None:
            current.add(m.group(1))
    return dirs


def top_directories():
    """The tree's top-level directories, build trees and tools' caches
    left out."""
    out = set()
    for name in os.listdir(SRCDIR):
        path = os.path.join(SRCDIR, name)
        if not os.path.isdir(path) or name.startswith((".", "build", "_")) \
                or name in SKIP_DIRS or \
                os.path.exists(os.path.join(path, "config.status")):
            continue
        out.add(name)
    return out


class Tree(unittest.TestCase):
    def test_layout_lists_every_source_file(self):
        listed = layout()
        for room in ROOMS:
            with self.subTest(room=room):
                self.assertIn(room, listed, "doc/design.md §3 has no %s/" %
                              room)
                names = os.listdir(os.path.join(SRCDIR, room))
                files = {n for n in names if n.endswith((".c", ".h"))}
                subdirs = {n + "/" for n in names
                           if os.path.isdir(os.path.join(SRCDIR, room, n))
                           and n not in SKIP_DIRS and n != ".libs"
                           and n != ".deps"}
                in_doc = listed[room]
                self.assertEqual(sorted(files - in_doc), [],
                                 "in %s/ but not in doc/design.md §3" % room)
                self.assertEqual(sorted(in_doc - files - subdirs), [],
                                 "in doc/design.md §3 but not in %s/" % room)

    def test_layout_names_every_directory(self):
        self.assertEqual(sorted(top_directories() - set(layout())), [],
                         "top-level directories doc/design.md §3 omits")
        self.assertEqual(sorted(set(layout()) - top_directories()), [],
                         "doc/design.md §3 names directories that are gone")

    def test_layout_parser_catches(self):
        """The parser itself reads the listing's shape: the rooms and a
        few of their files are found."""
        listed = layout()
        self.assertIn("erlang.c", listed["model"])
        self.assertIn("examples/", listed["cli"])
        self.assertIn("tracker.c", listed["service"])

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
