#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Exit codes and messages: 0 for results, 2 for usage errors (naming the
option and its accepted range), 1 for runtime errors (naming the file and
the reason); --help for every command; the man page is clean."""
import os
import re
import subprocess
import tempfile

import clitest
from clitest import DATA, SPEC, SRCDIR, CliTest

CAP = ("--capacity", "1", "--retries", "3")
ERL = ("--servers", "10", "--service-time", "100ms", "--timeout", "1")
COMMANDS = ("solve", "erlang", "sweep", "lab", "replay", "simulate", "check",
            "fit", "tolerance", "recommend", "plan", "escapes")

# (arguments, exit code, text the message must contain)
ERRORS = [
    ((), 2, "metastable: no command given"),
    (("fly",), 2, "metastable: unknown command 'fly'"),
    (("help", "fly"), 2, "help: unknown command 'fly'"),
    (("solve", *CAP, "--observed-load", "2"), 2,
     "give the offered load with --load L"),
    (("solve", *CAP, "--load"), 2, "option '--load' needs a value"),
    (("solve", *CAP, "--load", "1", "--bogus"), 2,
     "unknown option '--bogus'"),
    (("solve", *CAP, "--load", "1", "-x"), 2, "unknown option '-x'"),
    (("solve", "--serv", "3"), 2, "option '--serv' is ambiguous: --servers, "
     "--service-time, --service-rate, --service"),
    (("solve", *CAP, "--load", "1", "extra"), 2,
     "unexpected argument 'extra'"),
    (("solve", *CAP, "--load", "-1"), 2, "--load: '-1' is negative: a rate is >= 0 per second"),
    (("solve", *CAP, "--load", "ten"), 2, "--load: 'ten' is not a rate"),
    (("solve", "--servers", "0", "--load", "1"), 2,
     "--servers: '0' is out of range: it must be in [1, 10000000]"),
    (("solve", *CAP, "--base-failure", "1", "--load", "1"), 2,
     "--base-failure: '1' is out of range: it must be in [0, 1)"),
    (("solve", *CAP, "--retries", "10001", "--load", "1"), 2,
     "--retries: '10001' is out of range: it must be in [0, 10000]"),
    (("solve", *CAP, "--tiers", "0", "--load", "1"), 2,
     "--tiers: '0' is out of range: it must be in [1, 10]"),
    (("solve", *CAP, "--retry-budget", "1.5", "--load", "1"), 2,
     "--retry-budget: '1.5' is out of range: it must be in [0, 1)"),
    (("solve", *CAP, "--token-ratio", "0", "--load", "1"), 2,
     "--token-ratio: '0' is out of range: it must be in (0, 1]"),
    (("solve", *ERL[:4], "--timeout", "5min", "--retries", "3", "--load",
      "1"), 2, "--timeout: '5min': unknown time unit 'min' (use us, ms, s, m or h)"),
    (("solve", "--model", "queue", "--load", "1"), 2,
     "--model: 'queue' is not one of: capacity, erlang"),
    (("solve", "--retries", "3", "--load", "1"), 2, "no model: give --model"),
    (("solve", *CAP, "--servers", "3", "--load", "1"), 2,
     "--servers belongs to the erlang model and --capacity to the capacity "
     "model"),
    (("solve", "--model", "erlang", *CAP, "--load", "1"), 2,
     "--capacity applies to the capacity model, and the model is erlang"),
    (("solve", "--servers", "10", "--timeout", "1", "--retries", "3",
      "--load", "1"), 2, "the erlang model needs --service-time S"),
    (("solve", *ERL[:4], "--retries", "3", "--load", "1"), 2,
     "the erlang model needs --timeout T"),
    (("solve", *ERL, "--service-rate", "5", "--retries", "3", "--load",
      "1"), 2, "give --service-time or --service-rate, not both"),
    (("solve", *ERL, "--load", "1"), 2, "give --retries R"),
    (("solve", "--spec", "no-such.yaml", "--load", "1"), 1,
     "no-such.yaml: cannot open: No such file or directory"),
    (("solve", "--spec", os.path.join(DATA, "bad.yaml"), "--load", "1"), 1,
     "bad.yaml:4:14: servers = -3 is outside [1, 10000000] (key 'servers')"),
    (("solve", "--spec", SPEC, "--load", "1"), 2,
     "has 3 services (checkout, unit-capacity, pool): choose one with --service"),
    (("solve", "--spec", SPEC, "--service", "cart", "--load", "1"), 2,
     "has no service 'cart' (it has: checkout, unit-capacity, pool)"),
    (("solve", "--spec", SPEC, "--service", "pool", "--load", "1"), 2,
     "service 'pool' takes its pool size from its pool_size input: give "
     "--servers N"),
    (("solve", "--spec", SPEC, "--service", "unit-capacity", "--servers", "3",
      "--load", "1"), 2,
     "--servers applies to the erlang model, and the model is capacity "
     "(service 'unit-capacity')"),
    (("solve", "--service", "checkout", "--load", "1"), 2,
     "--service needs --spec FILE"),
    (("solve", *CAP, "--load", "1", "--format", "yaml"), 2,
     "--format: 'yaml' is not one of: text, json"),
    (("solve", *CAP, "--load", "1", "--previous", "sad"), 2,
     "--previous: 'sad' is not one of: stable, vulnerable, metastable, "
     "overloaded"),
    (("erlang", "--offered", "3"), 2, "give the number of servers"),
    (("erlang", "--servers", "10"), 2, "give the offered traffic"),
    (("erlang", "--servers", "10", "--offered", "0"), 2,
     "--offered: '0' is out of range: it must be > 0"),
    (("erlang", "--servers", "10", "--offered", "5", "--service-rate", "2"),
     2, "P(W > T) needs both --timeout"),
    (("erlang", "--servers", "10", "--offered", "5", "--service-rate", "2",
      "--service-time", "1"), 2, "give --service-rate or --service-time"),
    (("sweep", *CAP, "--to", "2", "--steps", "3"), 2,
     "give the range of offered loads with --from L0 --to L1"),
    (("sweep", *CAP, "--from", "2", "--to", "1", "--steps", "3"), 2,
     "--from 2 must be below --to 1"),
    (("sweep", *CAP, "--from", "0", "--to", "1"), 2,
     "give the number of steps with --steps N"),
    (("sweep", *CAP, "--from", "0", "--to", "1", "--steps", "0"), 2,
     "--steps: '0' is out of range: it must be in [1, 100000000]"),
    (("sweep", *CAP, "--from", "0", "--to", "1", "--steps", "2", "--load",
      "1"), 2, "--load is for the plot: give --plot FILE too"),
    (("lab", "--base-failure", "0.1", "--retries", "3"), 2,
     "give the offered load with --load L"),
    (("lab", "--load", "0,95", "--base-failure", "0.1", "--retries", "3"),
     2, "--load: '0,95' is not a decimal or a fraction (0.95, 19/20)"),
    (("lab", "--load", "0", "--base-failure", "0.1", "--retries", "3"), 2,
     "--load: '0' is out of range: it must be > 0"),
    (("lab", "--load", "1", "--base-failure", "1", "--retries", "3"), 2,
     "--base-failure: '1' is out of range: it must be in [0, 1)"),
    (("lab", "--load", "1", "--base-failure", "0.1", "--retries", "101"), 2,
     "--retries: '101' is out of range: it must be in [0, 100] (exact "
     "arithmetic)"),
    (("lab", "--load", "1", "--base-failure", "0.1"), 2,
     "give the retries per request with --retries R"),
    (("lab", "--load", "1", "--base-failure", "0.1", "--retries", "3",
      "--digit-limit", "0"), 2,
     "--digit-limit: '0' is out of range: it must be in [1, 1000000]"),
    (("replay", "trace.csv"), 2, "give the service file with --spec FILE"),
    (("replay", "--spec", SPEC, "--service", "checkout"), 2,
     "give the trace: TRACE.csv"),
    (("replay", "--spec", SPEC, "--service", "checkout", "a.csv", "b.csv"),
     2, "unexpected argument 'b.csv' (one trace at a time)"),
    (("replay", "--spec", SPEC, "--service", "checkout", "no-such.csv"), 1,
     "no-such.csv: cannot open: No such file or directory"),
    (("replay", "--spec", SPEC, "--service", "checkout", "--write-trace",
      "x.csv", "a.csv"), 2, "--write-trace saves the trace built from"),
    (("replay", "--spec", SPEC, "--service", "checkout",
      "--prometheus-json", "offered_rate=no-such.json"), 1,
     "no-such.json: cannot open: No such file or directory"),
]


def service_parameters():
    """(key, unit, whole) of every MS_SCOPE_SERVICE row of MS_PARAMS in
    model/loop.h, the one home of the parameters."""
    with open(os.path.join(SRCDIR, "model", "loop.h"),
              encoding="utf-8") as f:
        text = f.read()
    body = text[text.index("#define MS_PARAMS(X)"):]
    body = body[:body.index("/* clang-format on */")].replace("\\\n", " ")
    rows = re.findall(r'X\(\w+, "(\w+)", "([^"]*)", .*?, ([01]), '
                      r'(MS_SCOPE_\w+)\)', body)
    return [(k, u, w == "1") for k, u, w, scope in rows
            if scope == "MS_SCOPE_SERVICE"]


def policy_fields():
    """The MS_SCOPE_POLICY rows of MS_PARAMS: (map, field)."""
    with open(os.path.join(SRCDIR, "model", "loop.h"),
              encoding="utf-8") as f:
        text = f.read()
    body = text[text.index("#define MS_PARAMS(X)"):]
    body = body[:body.index("/* clang-format on */")].replace("\\\n", " ")
    return re.findall(r'X\(\w+, "(\w+)\.(\w+)", .*?MS_SCOPE_POLICY\)', body)


BASES = (
    ["services:", "  - name: svc", "    model: erlang", "    servers: 3",
     "    service_time: 100ms", "    timeout: 1s", "    retries: 1",
     "    inputs:", "      offered_rate: 5"],
    ["services:", "  - name: svc", "    model: capacity", "    capacity: 9",
     "    retries: 1", "    inputs:", "      offered_rate: 5"],
)


def section(text, start, end):
    """The part of text from the line start to the line end."""
    i = text.index(start)
    return text[i:text.index(end, i)]


class Usage(CliTest):
    def test_every_policy_field_is_documented(self):
        """Each field of a named policy has its row in doc/configuration.md's
        table of retry policies and is named in collectd-metastable(5)."""
        fields = policy_fields()
        self.assertGreaterEqual(len(fields), 11)
        with open(os.path.join(SRCDIR, "doc/configuration.md"),
                  encoding="utf-8") as f:
            config = f.read()
        with open(os.path.join(SRCDIR, "doc/collectd-metastable.5"),
                  encoding="utf-8") as f:
            man5 = f.read()
        for table, field in fields:
            with self.subTest(field="%s.%s" % (table, field)):
                self.assertTrue(re.search(
                    r"^\| `%s`( \(a map\))? \| `%s` \|" % (table, field),
                    config, re.M), "no row for %s.%s" % (table, field))
                self.assertIn(".B %s" % table, man5)
                self.assertIn(".B %s" % field, man5)

    def test_every_parameter_is_wired(self):
        """Each parameter row of the model's table is a model option in
        --help and metastable(1), a key the service file loader reads and
        ranges by the table, and a key of collectd-metastable(5) and
        doc/configuration.md."""
        params = service_parameters()
        self.assertGreaterEqual(len(params), 10)
        help_text = self.ok("solve", "--help").out
        # each model option's range, as --help prints it from the table
        ranges = {}
        joined = re.sub(r"\n {27}", " ", help_text)
        for m in re.finditer(r"^  (--[\w-]+) \S+ +.*?, ((?:in |> |>= ).*)$",
                             joined, re.M):
            ranges[m.group(1)] = m.group(2)
        def doc(rel):
            with open(os.path.join(SRCDIR, rel), encoding="utf-8") as f:
                return f.read()
        man1 = section(doc("doc/metastable.1"), ".SH MODEL OPTIONS",
                       ".SH TRACES")
        man5 = section(doc("doc/collectd-metastable.5"), "Keys of a service",
                       ".SH VALUES")
        config = doc("doc/configuration.md")
        for key, unit, whole in params:
            with self.subTest(key=key):
                option = "--" + key.replace("_", "-")
                self.assertIn("  %s " % option, help_text)
                self.assertIn(option.replace("-", "\\-"), man1)
                self.assertRegex(man5, r"\.BR? (.* )?%s\b" % key)
                # the key's row in the table of keys, with the same range
                row = re.search(r"^\| `%s` \| [^|]+ \| [^|]+ \| ([^|]+) \|"
                                % key, config, re.M)
                self.assertIsNotNone(row, "no row for %s" % key)
                self.assertEqual(row.group(1).strip(), ranges.get(option))
                # a value above every range: the loader reads the key and
                # reports the table's range for it, in one model or the other
                said = []
                for base in BASES:
                    lines = [l for l in base
                             if l.split(":")[0].strip() not in
                             (key, "service_time" if key == "service_rate"
                              else key)] + ["    %s: 1e305" % key]
                    with tempfile.TemporaryDirectory() as d:
                        path = os.path.join(d, "p.yaml")
                        with open(path, "w") as f:
                            f.write("\n".join(lines) + "\n")
                        said.append(clitest.run("solve", "--spec", path,
                                                "--load", "1").err)
                self.assertTrue(any("%s = 1e+305" % key in e and
                                    "(key '%s')" % key in e for e in said),
                                said)

    def test_every_setting_is_wired(self):
        """Each setting of the service layer (clear_after and the
        calibration settings, service/service.h's MS_DEFAULT_ and MS_MAX_
        constants) is a key of collectd-metastable(5) and a row of
        doc/configuration.md whose range and default are the code's: the
        loader refuses a value just outside each end with that range."""
        with open(os.path.join(SRCDIR, "service", "service.h"),
                  encoding="utf-8") as f:
            header = f.read().replace("\\\n", " ")
        def constant(name):
            m = re.search(r"#define %s\s+(?:/\*.*?\*/\s*)*([0-9.e+]+)" % name,
                          header, re.S)
            self.assertIsNotNone(m, name)
            return float(m.group(1))
        # key: (lower end, open at it, a duration)
        settings = {"clear_after": (1, False, False),
                    "calibration_time": (0, True, True),
                    "calibration_threshold": (0, True, False),
                    "calibration_intervals": (2, False, False),
                    "misfit_threshold": (0, True, False),
                    "misfit_intervals": (1, False, False)}
        with open(os.path.join(SRCDIR, "doc/configuration.md"),
                  encoding="utf-8") as f:
            config = f.read()
        with open(os.path.join(SRCDIR, "doc/collectd-metastable.5"),
                  encoding="utf-8") as f:
            man5 = section(f.read(), "Keys of a service", ".SH VALUES")
        for key, (lo, lo_open, duration) in settings.items():
            with self.subTest(key=key):
                hi = constant("MS_MAX_" + key.upper())
                default = constant("MS_DEFAULT_" + key.upper())
                rng = "%s%g, %g]" % ("(" if lo_open else "[", lo, hi)
                row = re.search(r"^\| `%s` \| [^|]+ \| [^|]+ \| ([^|]+) \| "
                                r"([^|]+) \|" % key, config, re.M)
                self.assertIsNotNone(row, "no row for %s" % key)
                self.assertEqual(row.group(1).strip(), "in " + rng)
                self.assertEqual(row.group(2).strip(),
                                 "%g%s" % (default, " s" if duration else ""))
                self.assertRegex(man5, r"\.B %s\n" % key)
                outside = [lo if lo_open else lo - 1, hi * 2]
                for v in outside:
                    lines = BASES[0] + ["    %s: %g" % (key, v)]
                    with tempfile.TemporaryDirectory() as d:
                        path = os.path.join(d, "s.yaml")
                        with open(path, "w") as f:
                            f.write("\n".join(lines) + "\n")
                        err = clitest.run("solve", "--spec", path, "--load",
                                          "1").err
                    self.assertIn("%s = %g is outside %s (key '%s')"
                                  % (key, v, rng, key), err)

    def test_errors(self):
        for args, code, text in ERRORS:
            with self.subTest(args=args):
                r = self.fails(code, text, *args)
                # one diagnostic, naming the command; usage errors point
                # to --help
                self.assertTrue(r.err.startswith("metastable"), r)
                if code == 2:
                    self.assertIn("--help' for the", r.err)

    def test_help(self):
        top = self.ok("--help").out
        for c in COMMANDS:
            self.assertIn("\n  %-10s " % c, top)
            out = self.ok(c, "--help").out
            self.assertTrue(out.startswith("Usage: metastable " + c), out)
            self.assertEqual(self.ok("help", c).out, out)
            if c in ("solve", "sweep", "replay"):
                self.assertIn("--retry-budget B", out)
        self.assertEqual(self.ok("help").out, top)
        self.assertRegex(self.ok("--version").out,
                         r"^metastable \(collectd-metastable\) \d+\.\d+")

    def test_man_pages(self):
        pages = [os.path.join(SRCDIR, "doc", "metastable.1"),
                 os.path.join(SRCDIR, "doc/collectd-metastable.5")]
        dates = set()
        for page in pages:
            with self.subTest(page=page):
                with open(page, encoding="utf-8") as f:
                    text = f.read()
                th = re.match(r'\.TH \S+ \d "([^"]+)" "collectd-metastable '
                              r'([^"]+)"', text)
                dates.add(th.group(1))
                # the version is configure.ac's, as --version shows it
                self.assertEqual(
                    th.group(2),
                    self.ok("--version").out.split()[-1])
                # groff -ww warns about every questionable construct
                if clitest.have("groff"):
                    r = subprocess.run(["groff", "-man", "-ww", "-z", page],
                                       capture_output=True, text=True)
                    self.assertEqual((r.returncode, r.stderr), (0, ""))
                # mandoc: nothing but that it shows a month-and-year date
                # as written (it parses only full dates)
                if clitest.have("mandoc"):
                    r = subprocess.run(["mandoc", "-T", "lint", page],
                                       capture_output=True, text=True)
                    lines = [l for l in (r.stdout + r.stderr).splitlines()
                             if not l.endswith(
                                 "WARNING: cannot parse date, using it "
                                 "verbatim: TH " + th.group(1))]
                    self.assertEqual(lines, [])
                # each page points to the other
                other = ("collectd\\-metastable (5)" if page.endswith(".1")
                         else "metastable (1)")
                see_also = text[text.index(".SH SEE ALSO"):]
                self.assertIn(".BR " + other, see_also)
                # no internal documents in texts for users
                for word in ("DESIGN", "seed 0", "Seed 0", "issue"):
                    self.assertNotIn(word, text)
        # both pages carry the same month-and-year date, set at a release
        self.assertEqual(len(dates), 1, dates)
        self.assertRegex(dates.pop(), r"^(January|February|March|April|May|"
                         r"June|July|August|September|October|November|"
                         r"December) 20\d\d$")

    def test_man_page_text(self):
        page = os.path.join(SRCDIR, "doc", "metastable.1")
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for c in COMMANDS:
            self.assertIn(".B " + c + "\n", text)
        for opt in ("\\-\\-prometheus\\-json", "\\-\\-digit\\-limit",
                    "\\-\\-observed\\-load", "\\-\\-log\\-y",
                    "METASTABLE_GNUPLOT"):
            self.assertIn(opt, text)
        # every option a command's --help lists is in its synopsis
        synopsis = text[text.index(".SH SYNOPSIS"):text.index(".SH DESCRIPTION")]
        # a command may have several synopses (sweep, sweep --vary)
        blocks = {}
        for b in synopsis.split(".SY metastable")[1:]:
            c = b.split("\n")[1].split()[-1]
            blocks[c] = blocks.get(c, "") + b
        for c in ("lab", "sweep", "replay"):
            help_text = self.ok(c, "--help").out
            usage = help_text[:help_text.index("\n\n")]
            for opt in re.findall(r"--([a-z-]+)", usage):
                self.assertIn("\\-\\-" + opt.replace("-", "\\-"),
                              blocks[c], (c, opt))

    def test_rendered_service_label(self):
        if not clitest.have("groff"):
            self.skipTest("groff")
        page = os.path.join(SRCDIR, "doc/collectd-metastable.5")
        r = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", page],
                           capture_output=True, text=True)
        flat = re.sub(r"\s+|\u2010", "", r.stdout)  # blanks, hyphenation
        self.assertIn('collectd_metastable_type{metastable="service"}', flat)

    def test_no_internal_references(self):
        # --help and every command's help speak in plain words
        texts = [self.ok("--help").out] + [self.ok(c, "--help").out
                                           for c in COMMANDS]
        for t in texts:
            for word in ("DESIGN", "seed 0", "Seed 0", "issue"):
                self.assertNotIn(word, t)


if __name__ == "__main__":
    clitest.main()
