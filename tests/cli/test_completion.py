#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The bash completion of metastable (cli/completion/metastable): sourced
into a plain bash, it registers for the command, and the completions of a
few command lines, simulated through COMP_WORDS and COMP_CWORD, are the
ones the man page and the program's own answers give: the commands of
metastable(1)'s SYNOPSIS, the options of check's synopsis, an option's
words, the services `metastable check` finds in a service file, files
where a file is asked for, nothing where a number is."""
import json
import os
import re
import subprocess
import tempfile
import unittest

import clitest
from clitest import EXAMPLES, SPEC, SRCDIR, CliTest

COMPLETION = os.path.join(SRCDIR, "cli", "completion", "metastable")
MAN = os.path.join(SRCDIR, "doc", "metastable.1")

# Prints one completion per line for the words given as arguments (the
# last one is the word being completed), as readline would ask for them.
DRIVER = r'''
source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_metastable
printf '%s\n' "${COMPREPLY[@]}"
'''


def complete(*words, cwd=None):
    """The completions bash offers for `metastable WORDS...`, the last
    word being completed (a set)."""
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", DRIVER,
                        "driver", COMPLETION, clitest.METASTABLE] +
                       list(words), capture_output=True, text=True,
                       cwd=cwd, timeout=60)
    if r.returncode != 0 or r.stderr:
        raise AssertionError("bash exit %d: %s" % (r.returncode, r.stderr))
    return {line for line in r.stdout.splitlines() if line}


def man_commands():
    """The commands of metastable(1)'s SYNOPSIS: the .B after each .SY."""
    with open(MAN) as f:
        text = f.read()
    synopsis = text.split(".SH SYNOPSIS", 1)[1].split(".SH ", 1)[0]
    return set(re.findall(r"^\.SY metastable\n\.B (\S+)", synopsis, re.M))


def man_synopsis_options(command):
    """The options the man page's synopsis gives COMMAND."""
    with open(MAN) as f:
        text = f.read()
    synopsis = text.split(".SH SYNOPSIS", 1)[1].split(".SH ", 1)[0]
    found = set()
    for block in re.findall(r"^\.SY metastable\n\.B %s\n(.*?)^\.YS" %
                            re.escape(command), synopsis, re.M | re.S):
        found |= {o.replace("\\-", "-") for o in
                  re.findall(r"(\\-\\-[a-z\\-]+)", block)}
    return found


class Completion(CliTest):
    def test_registered(self):
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                            'source "$1" && complete -p metastable', "x",
                            COMPLETION], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "complete -F _metastable metastable")

    def test_commands(self):
        commands = man_commands()
        self.assertGreaterEqual(len(commands), 12)
        self.assertEqual(complete(""), commands | {"help"})
        self.assertEqual(complete("s"), {c for c in commands
                                         if c.startswith("s")})
        self.assertEqual(complete("help", "re"),
                         {c for c in commands if c.startswith("re")})
        self.assertEqual(complete("--"), {"--help", "--version"})

    def test_options_of_check(self):
        """check's options are its synopsis's, and --help."""
        expected = man_synopsis_options("check")
        self.assertEqual(expected, {"--strict", "--shards", "--format",
                                    "--collectd", "--timeout"})
        self.assertEqual(complete("check", "--"), expected | {"--help"})

    def test_model_options_everywhere(self):
        """Every command that takes the model options completes them; each
        option completed is one the command knows (given alone, it is not
        an "unknown option")."""
        for cmd in ("solve", "sweep", "simulate", "tolerance", "recommend"):
            opts = complete(cmd, "--")
            for o in ("--servers", "--service-time", "--timeout",
                      "--retries", "--spec", "--service", "--format"):
                self.assertIn(o, opts, cmd)
        for cmd in ("tolerance", "check", "replay"):
            for o in sorted(complete(cmd, "--")):
                r = clitest.run(cmd, o)
                self.assertNotIn("unknown option", r.err, r)
                self.assertNotIn("ambiguous", r.err, r)
        self.assertIn("unknown option", clitest.run("tolerance",
                                                    "--memoryless").err)

    def test_values(self):
        self.assertEqual(complete("simulate", "--engine", ""),
                         {"fluid", "des"})
        self.assertEqual(complete("sweep", "--format", ""),
                         {"csv", "json", "text"})
        self.assertEqual(complete("solve", "--model", "e"), {"erlang"})
        self.assertEqual(complete("solve", "--format", "=", ""),
                         {"text", "json"})
        # a number is asked for: nothing to offer, not the options
        self.assertEqual(complete("solve", "--load", ""), set())
        # after a switch, options again
        self.assertEqual(complete("simulate", "--memoryless", "--eng"),
                         {"--engine"})

    def test_words_in_prose(self):
        """The words the completion lists itself (_metastable_words) are
        the ones the command's help names."""
        for cmd, opt in (("solve", "--previous"), ("sweep", "--vary"),
                         ("simulate", "--backoff"),
                         ("simulate", "--service-dist")):
            words = complete(cmd, opt, "")
            self.assertGreaterEqual(len(words), 4, (cmd, opt))
            help_text = clitest.run(cmd, "--help").out
            for w in words:
                self.assertRegex(help_text, r"(?<![\w-])%s(?![\w-])" %
                                 re.escape(w), (cmd, opt))
        r = clitest.run("solve", "--capacity", "1", "--retries", "3",
                        "--load", "0.5", "--previous", "overloaded")
        self.assertEqual(r.code, 0, r)

    def test_services_of_the_spec(self):
        names = {s["name"] for s in json.loads(
            clitest.run("check", "--format", "json", SPEC).out)["services"]}
        self.assertEqual(len(names), 3)
        self.assertEqual(complete("solve", "--spec", SPEC, "--service", ""),
                         names)
        self.assertEqual(complete("fit", "--spec",
                                  os.path.join(EXAMPLES, "fit.yaml"),
                                  "--service", ""), {"api"})

    def test_files(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("a.yaml", "a.csv", "b.svg"):
                open(os.path.join(d, name), "w").close()
            self.assertEqual(complete("check", "a", cwd=d),
                             {"a.yaml", "a.csv"})
            self.assertEqual(complete("sweep", "--plot", "", cwd=d),
                             {"a.yaml", "a.csv", "b.svg"})
            self.assertEqual(complete("solve", "--spec", "a.y", cwd=d),
                             {"a.yaml"})
            # a command without a file argument offers options, not files
            self.assertEqual(complete("solve", "", cwd=d),
                             complete("solve", "--", cwd=d))


if __name__ == "__main__":
    unittest.main(verbosity=2)
