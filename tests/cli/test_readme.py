#!/usr/bin/env python3
"""README.md shows real output: every example block that starts with
`$ metastable ...` (and has no pipe) is run from the source directory, and
its output must be the block's text ("..." stands for omitted lines)."""
import os
import re
import shlex

import clitest
from clitest import SRCDIR, CliTest


def examples():
    with open(os.path.join(SRCDIR, "README.md"),
              encoding="utf-8") as f:
        lines = f.read().split("\n")
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


class Readme(CliTest):
    def test_examples(self):
        n = 0
        for cmd, want in examples():
            if "|" in cmd:
                continue
            with self.subTest(cmd=cmd):
                args = shlex.split(cmd)[1:]
                got = self.ok(*args, cwd=SRCDIR).out.rstrip("\n").split("\n")
                if "..." in want:
                    k = want.index("...")
                    head, tail = want[:k], want[k + 1:]
                    self.assertEqual(got[:len(head)], head)
                    self.assertEqual(got[len(got) - len(tail):], tail)
                else:
                    self.assertEqual(got, want)
                n += 1
        self.assertGreaterEqual(n, 6)


if __name__ == "__main__":
    clitest.main()
