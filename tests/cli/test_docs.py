#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The documents say what is true of the tree they ship in.

* Examples: every block of README.md and doc/*.md that starts with
  `    $ metastable ...` (and has no pipe) is run from the source directory,
  and its output must be the block's text ("..." stands for omitted
  lines).
* Links: every relative markdown link and image of README.md,
  CONTRIBUTING.md, CHANGELOG.md and doc/*.md points at a file or directory
  of the source tree, and a `#anchor` at a heading of its target.  A path
  written in code (`model/loop.c`) must exist too, in the source tree or
  among the programs the build made.
* Pointers in the code: every `something.md` a source file names exists,
  and every "design.md §N.M" it cites is a section of doc/design.md.
* The output tables: doc/outputs.md and README.md list exactly the values
  of conf/types.db, in its order, with its data sources.
* Service files shown in the documents load and solve.
* The essential values (plugin/pacing.c, ESSENTIAL: dispatched every
  interval and first to collectd's write path) hold every value a paging
  alert of conf/metastable-alerts.yml reads, and doc/configuration.md and
  the man page list exactly them.

Everything is read from $srcdir (clitest.SRCDIR), so the test runs the same
from a git checkout and from an unpacked release tarball (make distcheck).
"""
import glob
import os
import re
import shlex
import tempfile
import unittest

import clitest
from clitest import BUILD, SRCDIR, CliTest


def read(rel):
    with open(os.path.join(SRCDIR, rel), encoding="utf-8") as f:
        return f.read()


def documents():
    """The markdown documents, as paths relative to SRCDIR."""
    docs = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
    docs += sorted(os.path.relpath(p, SRCDIR) for p in
                   glob.glob(os.path.join(SRCDIR, "doc", "*.md")))
    return [d for d in docs if os.path.exists(os.path.join(SRCDIR, d))]


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


# ---- links ----------------------------------------------------------------

FENCE = re.compile(r"^ {0,3}(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?"
                  r"(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
TREE_PATH = re.compile(r"^(model|service|plugin|cli|tests|bench|lab|tools|"
                       r"doc|conf|grafana|demo|scripts)/[A-Za-z0-9_./-]*$")


def prose_lines(text):
    """(line number, line) outside fenced code blocks and indented code."""
    fenced = False
    prev_blank = True
    for no, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            prev_blank = False
            continue
        if fenced:
            continue
        indented = line.startswith("    ") and prev_blank
        if indented:
            continue  # an indented code block keeps prev_blank as it is
        prev_blank = line.strip() == ""
        yield no, line


def slug(heading):
    """The anchor GitHub gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # link text
    text = text.lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    seen = {}
    out = set()
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if not m:
            continue
        s = slug(m.group(2))
        if s in seen:
            seen[s] += 1
            out.add("%s-%d" % (s, seen[s]))
        else:
            seen[s] = 0
            out.add(s)
    return out


def links(text):
    """(line number, target) of every markdown link and image, outside
    code."""
    for no, line in prose_lines(text):
        bare = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for m in LINK.finditer(bare):
            yield no, m.group(1)


def code_paths(text):
    """(line number, path) of code spans that name a path in the tree."""
    for no, line in prose_lines(text):
        for m in CODE_SPAN.finditer(line):
            span = m.group(2).strip()
            if TREE_PATH.match(span) and "..." not in span:
                yield no, span


def link_problems(doc, text):
    """What is wrong with the links of one document (a list of texts)."""
    problems = []
    here = os.path.dirname(os.path.join(SRCDIR, doc))
    for no, target in links(text):
        where = "%s:%d: %s" % (doc, no, target)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        if path.startswith("/"):
            problems.append(where + ": absolute path")
            continue
        full = os.path.normpath(os.path.join(here, path)) if path else \
            os.path.join(SRCDIR, doc)
        if os.path.relpath(full, SRCDIR).startswith(".."):
            problems.append(where + ": outside the source tree")
            continue
        if not os.path.exists(full):
            problems.append(where + ": no such file")
            continue
        if anchor:
            if not full.endswith(".md"):
                problems.append(where + ": anchor into a file that is not "
                                "markdown")
                continue
            with open(full, encoding="utf-8") as f:
                if anchor not in anchors(f.read()):
                    problems.append(where + ": no heading with that anchor")
    for no, path in code_paths(text):
        if not (os.path.exists(os.path.join(SRCDIR, path)) or
                os.path.exists(os.path.join(BUILD, path))):
            problems.append("%s:%d: `%s`: no such file" % (doc, no, path))
    return problems


class Links(unittest.TestCase):
    def test_documents_exist(self):
        for doc in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md",
                    "doc/design.md", "doc/configuration.md",
                    "doc/outputs.md", "doc/alerts-dashboard.md",
                    "doc/metastable.md", "doc/simulation.md",
                    "doc/storm-lab.md", "doc/performance.md",
                    "doc/fleets.md"):
            self.assertTrue(os.path.exists(os.path.join(SRCDIR, doc)), doc)

    def test_links(self):
        problems = []
        n = 0
        for doc in documents():
            text = read(doc)
            n += sum(1 for _ in links(text))
            problems += link_problems(doc, text)
        self.assertEqual(problems, [])
        self.assertGreater(n, 20)

    def test_checker_catches(self):
        """The checker itself: each of these is one problem."""
        bad = ["[a](no-such-file.md)", "![b](doc/nowhere.png)",
               "[c](doc/design.md#no-such-heading)", "[d](#nor-here)",
               "[e](../../outside.md)", "see `model/no_such.c`"]
        for text in bad:
            with self.subTest(text=text):
                self.assertEqual(len(link_problems("README.md", text)), 1)
        good = ("[a](doc/design.md#14-states) `model/loop.c`\n"
                "```\n[x](nothing.md)\n```\n\n    [y](nothing.md)\n"
                "`[z](nothing.md)` [w](https://example.org/x)")
        self.assertEqual(link_problems("README.md", good), [])

    def test_slugs(self):
        self.assertEqual(slug("§1.4 States"), "14-states")
        self.assertEqual(slug("Wiring collectd → Prometheus → Grafana"),
                         "wiring-collectd--prometheus--grafana")
        self.assertEqual(slug("The `metastable` command"),
                         "the-metastable-command")


# ---- pointers in the code -------------------------------------------------

SKIP_DIRS = {".git", "autom4te.cache", "node_modules", "__pycache__"}
MD_REF = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
CITE = re.compile(r"design\.md((?:(?:\s*,\s*|\s+and\s+|\s+)"
                  r"§\d+(?:\.\d+)?(?:\s*-\s*\d+(?:\.\d+)?)?)+)")
ITEM = re.compile(r"§(\d+)(?:\.(\d+))?(?:\s*-\s*(\d+)(?:\.(\d+))?)?")


def source_files():
    """(path relative to SRCDIR, text) of the tree's text files, this test
    (whose examples of wrong pointers are deliberate) excepted."""
    me = os.path.realpath(__file__)
    for root, dirs, files in os.walk(SRCDIR):
        # build directories (in-tree ones, distcheck's _build) hold copies
        if root != SRCDIR and "config.status" in files:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in files:
            path = os.path.join(root, name)
            try:
                if os.path.realpath(path) == me or \
                        os.path.getsize(path) > 1 << 20:
                    continue
            except OSError:
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, SRCDIR), f.read()
            except (UnicodeDecodeError, OSError):
                continue


def joined(text):
    """Comment continuation lines joined, so a citation split over two
    lines reads as one."""
    return re.sub(r"\s*\n\s*(?:\*|#|//|dnl)?\s*", " ", text)


def design_sections():
    out = set()
    for _, line in prose_lines(read("doc/design.md")):
        m = re.match(r"^#+\s+§(\d+(?:\.\d+)?)\s", line)
        if m:
            out.add(m.group(1))
    return out


def cited_sections(text):
    for m in CITE.finditer(joined(text)):
        for it in ITEM.finditer(m.group(1)):
            major, minor, major2, minor2 = it.groups()
            if major2 is None:
                yield major + ("." + minor if minor else "")
            elif minor is not None and minor2 is not None:  # §1.3-1.5
                for k in range(int(minor), int(minor2) + 1):
                    yield "%s.%d" % (major, k)
            elif minor is not None:  # §1.3-5
                for k in range(int(minor), int(major2) + 1):
                    yield "%s.%d" % (major, k)
            else:  # §1-3
                for k in range(int(major), int(major2) + 1):
                    yield str(k)


class Pointers(unittest.TestCase):
    def test_markdown_files_named_exist(self):
        missing = []
        for rel, text in source_files():
            here = os.path.dirname(rel)
            for m in MD_REF.finditer(text):
                ref = m.group(1)
                if not (os.path.exists(os.path.join(SRCDIR, ref)) or
                        os.path.exists(os.path.join(SRCDIR, here, ref))):
                    line = text.count("\n", 0, m.start()) + 1
                    missing.append("%s:%d: %s" % (rel, line, ref))
        self.assertEqual(missing, [])

    def test_design_citations(self):
        sections = design_sections()
        for want in ("1", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "2", "3",
                     "4", "5", "6"):
            self.assertIn(want, sections)
        wrong = []
        n = 0
        for rel, text in source_files():
            for sec in cited_sections(text):
                n += 1
                if sec not in sections:
                    wrong.append("%s: §%s" % (rel, sec))
        self.assertEqual(wrong, [])
        self.assertGreater(n, 40)

    def test_citation_parser(self):
        self.assertEqual(list(cited_sections("doc/design.md §1.3-1.5")),
                         ["1.3", "1.4", "1.5"])
        self.assertEqual(list(cited_sections(
            " * see doc/design.md\n * §1.6 and §2.")), ["1.6", "2"])
        self.assertEqual(list(cited_sections("(doc/design.md §1.1, §1.2)")),
                         ["1.1", "1.2"])


# ---- the output tables ----------------------------------------------------

def types_db(per_service=True):
    """The rows of conf/types.db: the per-service outputs, or (per_service
    false) the types after them, the shards' heartbeat."""
    rows = []
    text = read("conf/types.db")
    at = text.index("# Not per service")
    text = text[:at] if per_service else text[at:]
    for line in text.split("\n"):
        if line.strip() and not line.startswith("#"):
            name, ds = line.split()
            rows.append((name, ds))
    return rows


def table(text, header):
    """The rows (lists of cells) of the markdown table with that header."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(header):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split("|")])
            return rows
    return None


def header_outputs():
    """(name, unit) of each row of MS_OUTPUTS in service/outputs.h, the
    one home of the outputs."""
    text = read("service/outputs.h")
    body = text[text.index("#define MS_OUTPUTS(X)"):]
    body = body[:body.index("/* clang-format on */")]
    return re.findall(r'X\((?:\w+), (\w+), (?:analysis\.)?, MS_OUTPUT_\w+,'
                      r'\s*\\\s*"([^"]*)"', body)


class Outputs(unittest.TestCase):
    HEADER = "| name | unit | meaning |"

    def test_header_table_is_types_db(self):
        self.assertEqual([n for n, _ in header_outputs()],
                         [n for n, _ in types_db()])

    def test_man_page_lists_every_output(self):
        text = read("doc/collectd-metastable.5")
        values = text[text.index(".SH VALUES"):text.index(".SH NOTIFICATIONS")]
        for name, _ in header_outputs():
            self.assertRegex(values, r"\.BR? (.* )?%s\b" % name)

    def test_units_are_the_header_units(self):
        want = [("`%s`" % n, u) for n, u in header_outputs()]
        for doc in ("doc/outputs.md", "README.md"):
            with self.subTest(doc=doc):
                rows = table(read(doc), self.HEADER)
                self.assertEqual([(r[0], r[1]) for r in rows], want)

    def test_outputs_table(self):
        rows = table(read("doc/outputs.md"), self.HEADER)
        self.assertIsNotNone(rows, "doc/outputs.md has no output table")
        got = [(r[0], r[3]) for r in rows]
        want = [("`%s`" % n, "`%s`" % ds) for n, ds in types_db()]
        self.assertEqual(got, want)
        for r in rows:
            self.assertTrue(r[1] and r[2], r)

    def test_shard_and_probe_tables(self):
        # the types after the outputs: the shards' heartbeat, then the
        # write probe
        rows = []
        for header in ("| shard value | unit |", "| write value | unit |"):
            got = table(read("doc/outputs.md"), header)
            self.assertIsNotNone(got, "doc/outputs.md has no table %s"
                                 % header)
            rows += got
        self.assertEqual([(r[0], r[3]) for r in rows],
                         [("`%s`" % n, "`%s`" % ds)
                          for n, ds in types_db(per_service=False)])

    def test_readme_table(self):
        rows = table(read("README.md"), self.HEADER)
        self.assertIsNotNone(rows, "README.md has no output table")
        self.assertEqual([r[0] for r in rows],
                         ["`%s`" % n for n, _ in types_db()])


# ---- service files in the documents -----------------------------------------

def yaml_blocks(text):
    block = None
    for line in text.split("\n"):
        if block is None and line.strip() == "```yaml":
            block = []
        elif block is not None and line.strip() == "```":
            yield "\n".join(block) + "\n"
            block = None
        elif block is not None:
            block.append(line)


def essential_values():
    """The outputs of plugin/pacing.c's ESSENTIAL list, as type names."""
    text = read("plugin/pacing.c")
    block = text.split("ESSENTIAL[MS_OUT_COUNT] = {", 1)[1].split("};", 1)[0]
    return {m.lower() for m in re.findall(r"MS_OUT_([A-Z_]+)", block)}


def paging_alert_values():
    """{alert: the collectd_metastable_ values its expr reads} of the page
    alerts (each rule from its '- alert:' line to the next), a recording
    rule (collectd_metastable:a:b) read as the values of its own expr;
    the shards' heartbeats (not per service, never paced) left out."""
    text = read("conf/metastable-alerts.yml")
    recorded = {}
    for m in re.finditer(r"- record: (\S+)\n\s*expr: ([^\n]*)", text):
        recorded[m.group(1)] = set(
            re.findall(r"collectd_metastable_([a-z_]+)", m.group(2)))
    out = {}
    rules = re.split(r"\n\s*- alert: ", text)
    for rule in rules[1:]:
        name = rule.split("\n", 1)[0].strip()
        if not re.search(r"\bseverity: page\b", rule):
            continue
        expr = rule.split("expr:", 1)[1]
        expr = re.split(r"\n\s*(for|labels|annotations|keep_firing_for):",
                        expr)[0]
        used = set(re.findall(r"collectd_metastable_([a-z_]+)", expr))
        for rec in re.findall(r"collectd_metastable:[a-z_:]+", expr):
            used |= recorded[rec]
        out[name] = {v for v in used if not v.startswith("shard_")}
    return out


class Essential(unittest.TestCase):
    def test_paging_alerts_read_essential_values(self):
        essential = essential_values()
        alerts = paging_alert_values()
        self.assertGreaterEqual(len(alerts), 5)
        self.assertGreaterEqual(sum(1 for u in alerts.values() if u), 5)
        for name, used in alerts.items():
            self.assertLessEqual(used, essential, name)

    def test_documents_list_them(self):
        essential = essential_values()
        doc = read("doc/fleets.md")
        listed = doc.split("The essential values:", 1)[1].split("\n\n")[0]
        self.assertEqual(set(re.findall(r"`([a-z_]+)`", listed)), essential)
        man = joined(read("doc/collectd-metastable.5"))
        listed = man.split("The essential values:", 1)[1].split(".PP")[0]
        self.assertEqual(set(re.findall(r"\b([a-z]+(?:_[a-z]+)+|state|"
                                        r"storm|reporting|recovering)\b",
                                        listed.replace("\\fB", " ")
                                        .replace("\\fR", " "))),
                         essential)


class ServiceFiles(CliTest):
    def test_service_files_load(self):
        n = 0
        with tempfile.TemporaryDirectory() as tmp:
            for doc in documents():
                for k, block in enumerate(yaml_blocks(read(doc))):
                    if not block.lstrip().startswith("services:"):
                        continue
                    name = re.search(r"- name:\s*(\S+)", block).group(1)
                    path = os.path.join(tmp, "%d.yaml" % n)
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(block)
                    with self.subTest(doc=doc, block=k):
                        self.ok("solve", "--spec", path, "--service", name,
                                "--load", "1")
                    n += 1
        self.assertGreaterEqual(n, 2)


if __name__ == "__main__":
    clitest.main()
