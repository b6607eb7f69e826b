#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The pages an on-call engineer reads hold to the tree and to a register.

* The runbook (doc/runbook.md): one entry per alert of
  conf/metastable-alerts.yml and per notification the tracker sends, and
  no other; every alert's runbook_url opens its entry where the Debian
  package installs the page; every entry's silence matches the labels the
  alert carries (as the promtool tests expect them) and no other
  service's; every `metastable` command it shows runs.
* The log catalogue (doc/logs.md): every line the plugin logs appears by
  a stable fragment, at its level, and every fragment is still logged;
  the reasons the inputs and the service layer put into those lines
  likewise.
* The glossary (doc/glossary.md) defines the field's terms, each with a
  link to the page that defines it.
* The register: README.md at most 200 lines of prose, at most 22 words a
  sentence on average, none over 40; the same average and ceiling for the
  pages read during an incident.
* The new pages ship: in the tarball (EXTRA_DIST) and the package
  (debian/docs).

Everything is read from $srcdir, as tests/cli/test_docs.py does.
"""
import os
import re
import shlex
import tempfile
import unittest

import clitest
from clitest import SRCDIR, CliTest
from test_docs import anchors, prose_lines, slug

RUNBOOK = "doc/runbook.md"
GLOSSARY = "doc/glossary.md"
LOGS = "doc/logs.md"
ALERTS = "conf/metastable-alerts.yml"
ALERT_TESTS = "tests/alerts/metastable-alerts.test.yml"
# Where the package installs the runbook (debian/docs), kept uncompressed
# by debian/rules so that the anchors resolve.
RUNBOOK_URL = "file:///usr/share/doc/collectd-metastable/runbook.md#"
# The pages read during an incident, held to the README's register.
INCIDENT_PAGES = (RUNBOOK, GLOSSARY, LOGS, "doc/alerts-dashboard.md")
NEW_PAGES = (RUNBOOK, GLOSSARY, LOGS)
# Where the reasons logged after a service's name come from.
REASON_SOURCES = ("plugin/inputs.c", "service/tracker.c",
                  "service/calibration.c")

README_PROSE_LINES = 200
WORDS_PER_SENTENCE = 22
LONGEST_SENTENCE = 40


def read(rel):
    with open(os.path.join(SRCDIR, rel), encoding="utf-8") as f:
        return f.read()


# ---- the register -------------------------------------------------------

def prose_blocks(text):
    """The paragraphs of prose, each a list of lines: outside code blocks,
    tables, headings, image lines and lines all in bold (a label such as
    "**What to do.**"); each list item a paragraph of its own."""
    blocks, cur = [], []
    for _, line in prose_lines(text):
        s = line.strip()
        starts_item = re.match(r"^([*+-]|\d+[.)])\s", s)
        label = re.match(r"^\*\*[^*]+\*\*$", s)
        if not s or s.startswith(("#", "|", "![", "<!--")) or label or \
                starts_item:
            if cur:
                blocks.append(cur)
            cur = []
            if not s or not starts_item:
                continue
        cur.append(s)
    if cur:
        blocks.append(cur)
    return blocks


# A sentence ends at . ! or ? (and a closing bracket or quote) before a
# space and a capital, a digit, a code span, a link, emphasis or an opening
# bracket; "e.g. the" and "i.e. a" do not end one.
SENTENCE_END = re.compile(r"(?<=[.!?])[)\"'*_]*\s+(?=[A-Z0-9`(\"\[*])")


def sentences(text):
    """The sentences of the prose, each as its list of words (tokens with
    a letter or a digit; markup and link targets left out)."""
    out = []
    for block in prose_blocks(text):
        t = " ".join(block)
        t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", t)
        t = re.sub(r"^([*+-]|\d+[.)])\s+", "", t)
        pieces = []
        for s in SENTENCE_END.split(t):
            # "**2. Prometheus** scrapes": an enumerator ends no sentence
            if pieces and re.match(r"^\**\d+\.$", pieces[-1]):
                pieces[-1] += " " + s
            else:
                pieces.append(s)
        for s in pieces:
            words = [w for w in s.split() if re.search(r"\w", w)]
            if words:
                out.append(words)
    return out


def register(text):
    """(prose lines, sentences, mean words a sentence, sentences over
    LONGEST_SENTENCE words) of a markdown text."""
    lines = sum(len(b) for b in prose_blocks(text))
    lengths = [len(s) for s in sentences(text)]
    mean = sum(lengths) / len(lengths) if lengths else 0.0
    return lines, len(lengths), mean, \
        sum(1 for n in lengths if n > LONGEST_SENTENCE)


class Register(unittest.TestCase):
    def test_measure(self):
        """The measurement on a text counted by hand."""
        text = (
            "# Title\n\n"
            "One two three. Four five six seven, e.g. eight nine.\n"
            "Ten `eleven twelve` [thirteen](README.md#y).\n\n"
            "    indented code is left out\n\n"
            "```\nso is fenced code. And this.\n```\n\n"
            "| a table | left out |\n|---|---|\n| x | y |\n\n"
            "![an image](doc/x.png)\n\n"
            "**A label.**\n"
            "**2. Enumerated** items are one sentence.\n\n"
            "* a list item\n  of two lines\n"
            "* another item. Two sentences\n")
        lines, n, mean, long = register(text)
        # prose lines: 2 of the paragraph, 1 enumerated, 2 + 1 of the list
        self.assertEqual(lines, 6)
        # "One two three" 3, "Four ... nine" 7 (e.g. ends no sentence),
        # "Ten ... thirteen" 4, "2 Enumerated ... sentence" 6, "a list
        # item of two lines" 6, "another item" 2, "Two sentences" 2
        self.assertEqual([len(s) for s in sentences(text)],
                         [3, 7, 4, 6, 6, 2, 2])
        self.assertEqual(n, 7)
        self.assertAlmostEqual(mean, 30 / 7)
        self.assertEqual(long, 0)
        self.assertEqual(register(" ".join(["word"] * 41) + ".\n")[3], 1)

    def test_readme(self):
        lines, n, mean, long = register(read("README.md"))
        self.assertLessEqual(lines, README_PROSE_LINES)
        self.assertLessEqual(mean, WORDS_PER_SENTENCE)
        self.assertEqual(long, 0, [" ".join(s) for s in
                                   sentences(read("README.md"))
                                   if len(s) > LONGEST_SENTENCE])
        self.assertGreater(n, 20)

    def test_incident_pages(self):
        for page in INCIDENT_PAGES:
            with self.subTest(page=page):
                text = read(page)
                _, n, mean, long = register(text)
                self.assertLessEqual(mean, WORDS_PER_SENTENCE)
                self.assertEqual(long, 0, [" ".join(s) for s in
                                           sentences(text)
                                           if len(s) > LONGEST_SENTENCE])
                self.assertGreater(n, 10)


# ---- headings -------------------------------------------------------------

def sections(text, level):
    """{heading text: body} of the headings of that level (2 or 3), each
    body (code blocks included) up to the next heading of that level or
    above."""
    prose = {no for no, _ in prose_lines(text)}
    out = {}
    name, body = None, []
    for no, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^(#{1,6})\s+(.*?)\s*$", line) if no in prose else None
        if m and len(m.group(1)) <= level:
            if name is not None:
                out[name] = "\n".join(body)
            name = m.group(2) if len(m.group(1)) == level else None
            body = []
        elif name is not None:
            body.append(line)
    if name is not None:
        out[name] = "\n".join(body)
    return out


def runbook_part(title):
    """{H3 heading: body} under the runbook's H2 `title`."""
    return sections(sections(read(RUNBOOK), 2)[title], 3)


# ---- the alerts -----------------------------------------------------------

def alert_rules():
    """[(alert name, rule text)] of conf/metastable-alerts.yml, one per
    rule (an alert with a page and a ticket rule appears twice), each
    rule's annotations shared through a YAML alias read from its anchor."""
    text = read(ALERTS)
    chunks = re.split(r"\n(?=\s*- (?:alert|record): )", text)
    rules = [(re.match(r"\s*- alert: (\S+)", c).group(1), c)
             for c in chunks if re.match(r"\s*- alert: ", c)]
    anchored = {}
    for _, c in rules:
        m = re.search(r"annotations: &(\w+)", c)
        if m:
            anchored[m.group(1)] = c
    out = []
    for name, c in rules:
        m = re.search(r"annotations: \*(\w+)", c)
        out.append((name, c + "\n" + anchored[m.group(1)] if m else c))
    return out


def alert_labels():
    """{alert: the label names its expected alerts carry} from the
    promtool tests (each exp_labels block), severity and job left out."""
    out = {}
    name, indent = None, None
    for line in read(ALERT_TESTS).split("\n"):
        m = re.match(r"^\s+alertname: (\S+)", line)
        if m:
            name, indent = m.group(1), None
            continue
        m = re.match(r"^(\s+)- exp_labels:\s*$", line)
        if m:
            out.setdefault(name, set())
            indent = len(m.group(1)) + 4
            continue
        if indent is None or not line.strip():
            continue
        if len(line) - len(line.lstrip()) < indent:
            indent = None
            continue
        m = re.match(r"^ {%d}(\w+): " % indent, line)
        if m and m.group(1) not in ("severity", "job"):
            out[name].add(m.group(1))
    return out


class Alerts(unittest.TestCase):
    def test_one_entry_per_alert(self):
        names = {n for n, _ in alert_rules()}
        self.assertGreaterEqual(len(names), 10)
        self.assertEqual(set(runbook_part("Alerts")), names)

    def test_runbook_url(self):
        have = anchors(read(RUNBOOK))
        entries = {slug(h): h for h in runbook_part("Alerts")}
        rules = alert_rules()
        self.assertGreaterEqual(len(rules), 14)
        for name, rule in rules:
            with self.subTest(alert=name):
                urls = re.findall(r"^\s+runbook_url: (\S+)\s*$", rule, re.M)
                self.assertEqual(len(urls), 1)
                self.assertTrue(urls[0].startswith(RUNBOOK_URL), urls[0])
                anchor = urls[0][len(RUNBOOK_URL):]
                self.assertIn(anchor, have)
                self.assertEqual(entries.get(anchor), name)

    def test_entries_say_what_to_do(self):
        for name, body in runbook_part("Alerts").items():
            with self.subTest(alert=name):
                for part in ("**What it means.**", "**Look first.**",
                             "**What to do.**", "**Mute it.**"):
                    self.assertIn(part, body)

    def test_silences_match_the_alert(self):
        """Each entry's silence names its alert and only labels the alert
        carries, and every label that tells one service or shard from
        another."""
        labels = alert_labels()
        for name, body in runbook_part("Alerts").items():
            with self.subTest(alert=name):
                lines = [ln.strip() for ln in body.split("\n")
                         if ln.strip().startswith("amtool silence add ")]
                self.assertEqual(len(lines), 1)
                words = shlex.split(lines[0])[3:]
                matchers = dict(w.split("=", 1) for w in words
                                if not w.startswith("-"))
                self.assertEqual(matchers.pop("alertname"), name)
                carried = labels[name]
                self.assertLessEqual(set(matchers), carried)
                self.assertLessEqual(
                    carried & {"instance", "metastable", "shard"},
                    set(matchers))
                self.assertTrue(any(w.startswith("--comment=")
                                    for w in words))

    def test_alert_labels_read(self):
        labels = alert_labels()
        self.assertEqual(labels["MetastableRetryStorm"],
                         {"instance", "metastable"})
        self.assertEqual(labels["MetastableShardDown"], {"shard", "type"})
        self.assertEqual(labels["MetastableAbsent"], set())

    def test_package_keeps_the_page_at_the_url(self):
        docs = read("debian/docs").split()
        self.assertIn(RUNBOOK, docs)
        # dh_compress -X ITEM (--exclude=ITEM) leaves out every file whose
        # name contains ITEM
        items = re.findall(r"dh_compress\b.*?(?:-X\s*|--exclude=)(\S+)",
                           read("debian/rules"))
        name = os.path.basename(RUNBOOK)
        self.assertTrue(any(i in name for i in items), items)


# What a collectd holds for the example service file: every input of
# conf/metastable.yaml, for `check --collectd` (a stand-in for collectd's
# unixsock plugin, tests/cli/fakecollectd.py).
EXAMPLE_VALUES = {
    "db1/statsd/derive-pricing_attempts": {"value": 212.5},
    "db1/statsd/derive-pricing_retries": {"value": 4.5},
    "db1/statsd/derive-pricing_errors": {"value": 1.75},
    "db1/statsd/gauge-pricing_workers": {"value": 30.0},
    "lb1/haproxy-checkout/derive-requests": {"value": 640.0},
    "lb1/haproxy-checkout/derive-attempts": {"value": 652.5},
}


class Commands(CliTest):
    def test_runbook_commands_run(self):
        """Every `metastable` command of the runbook, on the example
        service file (which has a service `checkout` too); the collectd
        it asks is the stand-in, holding every input of the file."""
        from fakecollectd import FakeCollectd
        n = 0
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, "collectd.sock")
            with FakeCollectd(sock, EXAMPLE_VALUES):
                for line in read(RUNBOOK).split("\n"):
                    if not re.match(r"^    metastable (?!plugin)", line):
                        continue
                    args = shlex.split(line.replace(
                        "/etc/collectd/metastable.yaml",
                        "conf/metastable.yaml").replace(
                        "/var/run/collectd-unixsock", sock))[1:]
                    with self.subTest(cmd=line.strip()):
                        self.ok(*args, cwd=SRCDIR)
                    n += 1
        self.assertGreaterEqual(n, 5)


# ---- the notifications ----------------------------------------------------

def c_code(rel):
    """A C file without its comments (line breaks kept)."""
    text = read(rel)
    return re.sub(r"/\*.*?\*/|//[^\n]*",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)


def calls(text):
    """(callee, argument text, line) of every call in C code."""
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", text):
        i = j = m.end()
        depth, in_string = 1, False
        while j < len(text) and depth:
            c = text[j]
            if in_string:
                if c == "\\":
                    j += 1
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            j += 1
        yield m.group(1), text[i:j - 1], text.count("\n", 0, m.start()) + 1


def literal_runs(args):
    """The runs of adjacent string literals in an argument text,
    PLUGIN_NAME read as "metastable"."""
    runs, cur = [], None
    for t in re.finditer(r'"(?:[^"\\]|\\.)*"|\bPLUGIN_NAME\b|[^\s"]', args):
        s = t.group(0)
        if s == "PLUGIN_NAME" or s.startswith('"'):
            part = "metastable" if s == "PLUGIN_NAME" else \
                s[1:-1].encode().decode("unicode_escape")
            cur = (cur or "") + part
        elif cur is not None:
            runs.append(cur)
            cur = None
    if cur is not None:
        runs.append(cur)
    return runs


CONVERSION = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?"
                        r"[diouxXeEfgGcsp]")


def skeleton(fmt):
    """A printf format as a reader finds it in the catalogue: each
    conversion a "…", "%%" a "%", and the plugin's prefix left out."""
    s = CONVERSION.sub("…", fmt).replace("%%", "%")
    return re.sub(r"^metastable plugin(?: …)?: ", "", s)


def notes():
    """[(severity, message skeleton)] of the tracker's notifications: the
    literal of each note(), and for a note of "%s" the texts the service
    layer writes into a msg buffer."""
    out, passed, msgs = [], [], []
    for rel in sorted(os.listdir(os.path.join(SRCDIR, "service"))):
        if not rel.endswith(".c"):
            continue
        for callee, args, _ in calls(c_code(os.path.join("service", rel))):
            m = re.match(r"\s*\w+\s*,\s*MS_NOTE_(\w+)\s*,", args)
            if callee == "note" and m:
                fmt = literal_runs(args)[0]
                if fmt == "%s":
                    passed.append(m.group(1))
                else:
                    out.append((m.group(1), skeleton(fmt)))
            elif callee == "snprintf" and re.match(r"\s*msg\s*,", args):
                msgs.append(skeleton(literal_runs(args)[0]))
    return out + [(sev, text) for sev in passed for text in msgs]


class Notifications(unittest.TestCase):
    def test_notes_read(self):
        got = notes()
        self.assertIn("FAILURE", {s for s, _ in got})
        self.assertIn("OKAY", {s for s, _ in got})
        self.assertGreaterEqual(len(got), 5)

    def test_one_entry_per_notification(self):
        entries = {}
        for heading in runbook_part("Notifications"):
            m = re.match(r"^(FAILURE|WARNING|OKAY): (.+)$", heading)
            self.assertIsNotNone(m, heading)
            entries[heading] = (m.group(1), m.group(2))
        used = set()
        for sev, text in notes():
            hits = [h for h, (s, frag) in entries.items()
                    if s == sev and text.startswith(frag)]
            self.assertTrue(hits, "%s %r has no runbook entry" % (sev, text))
            used.add(max(hits, key=lambda h: len(entries[h][1])))
        self.assertEqual(used, set(entries), "entries without a notification")


# ---- the log catalogue ----------------------------------------------------

LEVEL_OF = {"ERROR": "ERROR", "WARNING": "WARNING", "NOTICE": "NOTICE",
            "INFO": "INFO", "DEBUG": "DEBUG"}


def plugin_log_lines():
    """[(file:line, level, skeleton)] of every line the plugin logs: each
    call whose format starts with the plugin's name, at the level of its
    macro (ERROR, WARNING, NOTICE, INFO) or of its LOG_* argument."""
    out = []
    for rel in sorted(os.listdir(os.path.join(SRCDIR, "plugin"))):
        if not rel.endswith(".c"):
            continue
        code = c_code(os.path.join("plugin", rel))
        for callee, args, line in calls(code):
            runs = literal_runs(args)
            if not runs or not runs[0].startswith("metastable plugin"):
                continue
            level = LEVEL_OF.get(callee)
            if level is None:
                m = re.search(r"\bLOG_(ERR|WARNING|NOTICE|INFO|DEBUG)\b",
                              args)
                level = m and {"ERR": "ERROR"}.get(m.group(1), m.group(1))
            out.append(("plugin/%s:%d" % (rel, line), level,
                        skeleton(runs[0])))
    return out


def reasons():
    """[(file:line, skeleton)] of the reasons logged after a service's
    name: what the inputs write into `why`, what the service layer writes
    into a problem, the words of its bad_input() calls; texts of fewer
    than two words (wrappers such as "input %s: %s") left out."""
    out = []
    for rel in REASON_SOURCES:
        for callee, args, line in calls(c_code(rel)):
            if callee == "snprintf" and re.match(
                    r"\s*(why|problem|out->problem)\s*,", args):
                texts = literal_runs(args)[:1]
            elif callee == "bad_input":
                texts = literal_runs(args)
            else:
                continue
            for t in texts:
                s = skeleton(t)
                if len(re.findall(r"[A-Za-z]{2,}", s)) >= 2:
                    out.append(("%s:%d" % (rel, line), s))
    return out


def catalogue(title_filter):
    """[(fragment, level or None)] of the catalogue's tables: the first
    code span of each row, and its level column where the table has
    one; title_filter picks the sections by title."""
    out = []
    for title, body in sections(read(LOGS), 2).items():
        if not title_filter(title):
            continue
        for row in body.split("\n"):
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if not row.startswith("| `"):
                continue
            frag = re.match(r"`([^`]+)`", cells[0]).group(1)
            level = cells[1] if cells[1] in LEVEL_OF else None
            out.append((frag, level))
    return out


def assign(texts, fragments):
    """{fragment: [texts]}: each text to the longest fragment it
    contains (a text without one goes to None)."""
    out = {f: [] for f in fragments}
    out[None] = []
    for t in texts:
        hits = [f for f in fragments if f in t]
        out[max(hits, key=len) if hits else None].append(t)
    return out


class LogCatalogue(unittest.TestCase):
    def test_code_read(self):
        lines = plugin_log_lines()
        self.assertGreaterEqual(len(lines), 40)
        self.assertEqual([x for x in lines if x[1] is None], [])
        self.assertGreaterEqual(len(reasons()), 15)
        self.assertEqual(skeleton('metastable plugin %s: watching %zu '
                                  'service%s, %.1f%%'),
                         "watching … service…, …%")

    def test_every_line_and_level(self):
        rows = catalogue(lambda t: t != "Reasons")
        levels = dict(rows)
        self.assertEqual(len(levels), len(rows), "a fragment twice")
        lines = plugin_log_lines()
        got = assign([s for _, _, s in lines], list(levels))
        self.assertEqual(got.pop(None), [], "lines not in the catalogue")
        unused = [f for f, texts in got.items() if not texts]
        self.assertEqual(unused, [], "catalogue entries no line has")
        for where, level, s in lines:
            frag = max((f for f in levels if f in s), key=len)
            self.assertEqual(levels[frag], level, "%s: %s" % (where, s))

    def test_every_reason(self):
        frags = [f for f, _ in catalogue(lambda t: t == "Reasons")]
        self.assertEqual(len(set(frags)), len(frags), "a fragment twice")
        found = reasons()
        got = assign([s for _, s in found], frags)
        self.assertEqual(got.pop(None), [], "reasons not in the catalogue")
        # the other direction: every fragment is in some text of the
        # sources (wrappers such as "model: %s" included)
        texts = [skeleton(t) for rel in REASON_SOURCES
                 for _, args, _ in calls(c_code(rel))
                 for t in literal_runs(args)]
        missing = [f for f in frags if not any(f in t for t in texts)]
        self.assertEqual(missing, [])

    def test_assignment(self):
        got = assign(['service "…": …', 'service "…": …; nothing reported'],
                     ['service "…": …', "nothing reported"])
        self.assertEqual(got['service "…": …'], ['service "…": …'])
        self.assertEqual(got["nothing reported"],
                         ['service "…": …; nothing reported'])


# ---- the glossary -----------------------------------------------------------

TERMS = ("Offered load", "Effective load", "Attempt", "Amplification",
         "Erlang B", "Erlang C", "Wait tail", "Equilibrium", "Tipping load",
         "Recovery load", "Bistable band", "Metastable state", "Storm flag",
         "Retry budget", "Blocking probability", "Calibration", "Residual",
         "Headroom", "Shed load", "Drain time")


class Glossary(unittest.TestCase):
    def test_terms(self):
        entries = sections(read(GLOSSARY), 2)
        for term in TERMS:
            self.assertIn(term, entries)
        self.assertEqual(list(entries), sorted(entries, key=str.lower),
                         "the terms in alphabetical order")

    def test_each_entry_short_with_its_source(self):
        for term, body in sections(read(GLOSSARY), 2).items():
            with self.subTest(term=term):
                self.assertRegex(body, r"\]\((design|outputs|fleets)\.md#")
                self.assertLessEqual(len(sentences(body)), 4)


# ---- shipping ---------------------------------------------------------------

class Shipping(unittest.TestCase):
    def test_in_tarball_and_package(self):
        extra = " ".join(re.findall(r"EXTRA_DIST \+?= ((?:.*\\\n)*.*)",
                                    read("Makefile.am")))
        docs = read("debian/docs").split()
        for page in NEW_PAGES:
            self.assertIn(page, extra.split())
            self.assertIn(page, docs)

    def test_is_it_working_linked(self):
        self.assertIn("is-it-working", anchors(read(RUNBOOK)))
        self.assertIn("doc/runbook.md#is-it-working", read("README.md"))
        self.assertIn("(#is-it-working)", read(RUNBOOK))


if __name__ == "__main__":
    clitest.main()
