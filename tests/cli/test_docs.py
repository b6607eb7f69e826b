#!/usr/bin/env python3
"""The documents show real output: every block of README.md and doc/*.md
that starts with `    $ metastable ...` (and has no pipe) is run from the
source directory, and its output must be the block's text ("..." stands
for omitted lines).  Documents are read from $srcdir (clitest.SRCDIR)."""
import glob
import os
import shlex

import clitest
from clitest import SRCDIR, CliTest


def read(rel):
    with open(os.path.join(SRCDIR, rel), encoding="utf-8") as f:
        return f.read()


def documents():
    """The markdown documents, as paths relative to SRCDIR."""
    docs = ["README.md"]
    docs += sorted(os.path.relpath(p, SRCDIR) for p in
                   glob.glob(os.path.join(SRCDIR, "doc", "*.md")))
    return docs


# ---- examples -----------------------------------------------------------

def examples(text):
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("    $ metastable"):
            cmd = lines[i][6:]
            while cmd.endswith("\\"):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            out = []
            i += 1
            while i < len(lines) and (lines[i].startswith("    ") or
                                      lines[i] == ""):
                if lines[i].startswith("    $ "):
                    break
                out.append(lines[i][4:])
                i += 1
            while out and out[-1] == "":
                out.pop()
            yield cmd, out
        else:
            i += 1


class Examples(CliTest):
    def test_examples(self):
        n = 0
        files = set()
        for doc in documents():
            for cmd, want in examples(read(doc)):
                if "|" in cmd:
                    continue
                with self.subTest(doc=doc, cmd=cmd):
                    args = shlex.split(cmd)[1:]
                    got = self.ok(*args, cwd=SRCDIR).out.rstrip("\n")
                    got = got.split("\n")
                    if "..." in want:
                        k = want.index("...")
                        head, tail = want[:k], want[k + 1:]
                        self.assertEqual(got[:len(head)], head)
                        self.assertEqual(got[len(got) - len(tail):], tail)
                    else:
                        self.assertEqual(got, want)
                n += 1
                files.add(doc)
        self.assertGreaterEqual(n, 6)
        self.assertLessEqual({"doc/metastable.md", "doc/simulation.md"},
                             files)


if __name__ == "__main__":
    clitest.main()
