#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Each command's --help, the one source of its options, and the documents
made from it.

* --help says each thing once: no option twice, no line twice (replay's
  printed its whole body twice), and every line of its options section is
  an option, its text or a heading, within 79 columns.
* --help is true to the parser: every option it lists is one the command
  takes (not "unknown"), and an option shown with words (--format
  text|json) takes each of them and refuses another.
* doc/metastable.1 and doc/metastable.md hold exactly the option lists
  tools/cli_docs.py makes from --help, and name no option a command lacks:
  every --option in a command's part of either document (the man page's
  entry and synopsis, the markdown section) is one of its own, or one of
  another command named in the same paragraph ("as simulate --seeds N
  does").  The synopsis names exactly the options of --help's usage lines.
* The commands are the same everywhere: `metastable --help`, the man
  page's COMMANDS, the markdown's table and sections.
"""
import collections
import importlib.util
import os
import re
import unittest

import clitest
from clitest import METASTABLE, SRCDIR, CliTest

spec = importlib.util.spec_from_file_location(
    "cli_docs", os.path.join(SRCDIR, "tools", "cli_docs.py"))
cli_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cli_docs)

MAN = os.path.join(SRCDIR, "doc/metastable.1")
MD = os.path.join(SRCDIR, "doc/metastable.md")
WORDS = re.compile(r"^[a-z0-9-]+(\|[a-z0-9-]+)+$")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def repeats(text):
    """What a help text says twice: options listed twice, and lines of more
    than 30 characters that appear twice."""
    out = []
    try:
        groups = cli_docs.parse_help(text)
    except ValueError as e:
        return [str(e)]
    options = [o[0] for _, opts in groups for o in opts]
    out += ["option %s" % o for o, n in collections.Counter(options).items()
            if n > 1]
    lines = collections.Counter(l.strip() for l in text.split("\n")
                                if len(l.strip()) > 30)
    out += ["line %r" % l for l, n in lines.items() if n > 1]
    return out


def roff_plain(text):
    """roff as the words it shows: escapes and fonts gone."""
    text = re.sub(r"\\f[BIRP]|\\%|\\&|\\c", "", text)
    return text.replace("\\-", "-").replace("\\e", "\\")


def man_entries(text):
    """{command: its COMMANDS entry, as plain text}."""
    body = text[text.index(".SH COMMANDS\n"):text.index(".SH MODEL OPTIONS")]
    parts = re.split(r"^\.TP\n\.B (\w+)\n", body, flags=re.M)
    return {parts[i]: roff_plain(parts[i + 1])
            for i in range(1, len(parts), 2)}


def man_synopses(text):
    """{command: the options of its synopses}."""
    body = text[text.index(".SH SYNOPSIS\n"):text.index(".SH DESCRIPTION")]
    out = collections.defaultdict(set)
    for block in body.split(".SY metastable\n")[1:]:
        m = re.match(r"\.B (\w+)\n", block)
        if m:
            out[m.group(1)] |= set(OPTION.findall(roff_plain(block)))
    return out


def md_sections(text):
    """{command: its section of doc/metastable.md}."""
    parts = re.split(r"^## (\S+)\n", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def paragraphs(text, roff):
    """The paragraphs of a document's part; in markdown without the lines
    of code blocks that do not run metastable (curl's options)."""
    if roff:
        return re.split(r"\n(?:\.(?:PP|IP|TP|RS|RE)[^\n]*\n)+", text)
    text = "\n".join(l for l in text.split("\n")
                     if not l.startswith("    ") or "metastable " in l)
    return re.split(r"\n\s*\n", text)


class Help(CliTest):
    @classmethod
    def setUpClass(cls):
        cls.commands = cli_docs.commands(METASTABLE)
        cls.helps = {c: clitest.run(c, "--help").out for c in cls.commands}
        cls.options = {}
        for c, h in cls.helps.items():
            cls.options[c] = {o[0]: o[1] for _, opts in cli_docs.parse_help(h)
                              for o in opts}

    def test_commands(self):
        self.assertGreaterEqual(len(self.commands), 12)
        md = read(MD)
        listing = md[md.index("| command | what it answers |"):]
        listing = listing[:listing.index("\n\n")]
        table = re.findall(r"^\| `(\w+)` \|", listing, re.M)
        self.assertEqual(sorted(table), sorted(self.commands))
        self.assertLessEqual(set(self.commands), set(md_sections(md)))
        self.assertEqual(sorted(man_entries(read(MAN))),
                         sorted(self.commands))

    def test_says_each_thing_once(self):
        for c, h in self.helps.items():
            with self.subTest(command=c):
                self.assertEqual(repeats(h), [])
                self.assertGreaterEqual(len(self.options[c]), 3)
                self.assertEqual([l for l in h.split("\n") if len(l) > 79],
                                 [])

    def test_checker_catches_repeats(self):
        """replay's help as it was: its body again after the options."""
        body = ("Run a metrics trace through the plugin's per-interval "
                "logic\n\n")
        opts = "  --format text|csv|json   csv (default) or json\n"
        self.assertEqual(repeats("Usage: x\n\n" + body + opts), [])
        self.assertEqual(len(repeats("Usage: x\n\n" + body + body + opts)), 1)
        self.assertEqual(len(repeats("Usage: x\n\n" + opts + body)), 1)
        self.assertEqual(repeats("Usage: x\n\n" + opts + opts),
                         ["option --format", "line %r" % opts.strip()])

    def test_layout(self):
        """Every line of an options section is an option, its text or a
        heading; an option's text starts two spaces or more after it."""
        self.assertEqual(cli_docs.parse_help(
            "Usage: x\n\nOptions:\n  --a A                    one\n"
            "  --no-such-very-long-option X\n"
            "                           two\n"),
            [("Options", [("--a", "A", "one"),
                          ("--no-such-very-long-option", "X", "two")])])
        with self.assertRaises(ValueError):
            cli_docs.parse_help("Usage: x\n\n  --a A    one\nstray text\n")

    def test_options_are_taken(self):
        for c, opts in self.options.items():
            for o, value in opts.items():
                with self.subTest(command=c, option=o):
                    args = [o, "x"] if value else [o]
                    r = clitest.run(c, *args, "--help")
                    for word in ("unknown option", "ambiguous",
                                 "needs a value"):
                        self.assertNotIn(word, r.err)

    def test_words_are_accepted(self):
        n = 0
        for c, opts in self.options.items():
            for o, value in opts.items():
                if not value or not WORDS.match(value):
                    continue
                for word in value.split("|"):
                    with self.subTest(command=c, option=o, word=word):
                        r = clitest.run(c, o, word, "--help")
                        self.assertEqual((r.code, r.err), (0, ""))
                        n += 1
                r = clitest.run(c, o, "bogus", "--help")
                self.assertEqual(r.code, 2, (c, o))
                self.assertIn("'bogus' is not one of", r.err)
        self.assertGreaterEqual(n, 40)

    def test_documents_are_the_help(self):
        for path, now, want in cli_docs.documents(SRCDIR, METASTABLE):
            with self.subTest(document=path):
                self.assertTrue(now == want,
                                "%s: its option lists are not --help's: run "
                                "tools/cli_docs.py build/cli/metastable" %
                                path)

    def known(self, command, paragraph):
        """The options a paragraph of command's part may name."""
        ok = set(self.options[command]) | {"--help"}
        for other in self.commands:
            if re.search(r"(?<![\w-])%s(?![\w-])" % other, paragraph):
                ok |= set(self.options[other])
        return ok

    def unknown_options(self, parts, roff):
        """[(command, option)] named in a command's part of a document that
        neither it nor a command beside it takes."""
        out = []
        for c, text in parts.items():
            if c not in self.options:
                continue
            for p in paragraphs(text, roff):
                for o in set(OPTION.findall(p)) - self.known(c, p):
                    out.append((c, o))
        return sorted(out)

    def test_documents_name_real_options(self):
        man = read(MAN)
        self.assertEqual(self.unknown_options(man_entries(man), True), [])
        self.assertEqual(self.unknown_options(md_sections(read(MD)), False),
                         [])
        # the checker: an option of no command, and one of another command
        # not named beside it
        self.assertEqual(self.unknown_options(
            {"plan": "Try --warp.\n\nOr --seeds N.\n\nsimulate --seeds N"},
            False), [("plan", "--seeds"), ("plan", "--warp")])

    def test_synopsis_is_the_usage(self):
        synopses = man_synopses(read(MAN))
        for c, h in self.helps.items():
            with self.subTest(command=c):
                usage = h[:h.index("\n\n")]
                self.assertEqual(synopses[c], set(OPTION.findall(usage)))


if __name__ == "__main__":
    clitest.main()
