#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The input recipes (doc/recipes.md, conf/recipes/) hold together:

* doc/recipes.md shows each file of conf/recipes/ as it is (the copies
  tools/recipes_docs.py makes), or links it;
* every file of conf/recipes/ is installed and in the tarball
  (conf/recipes/Makefile.inc), the programs executable;
* every recipe's service passes `metastable check --strict`, and its
  inputs name only what its collectd blocks dispatch (with the blocks of
  the recipes it builds on);
* the page ships: EXTRA_DIST, debian/docs, and the links to it.

Seconds, no server: the unit tier.  The recipes against the real
software are tests/integration/test_recipe_*.py.
"""
import importlib.util
import os
import re
import subprocess
import unittest

SRCDIR = os.path.abspath(os.environ.get(
    "MS_TOP_SRCDIR", os.environ.get(
        "srcdir", os.path.join(os.path.dirname(__file__), ".."))))
BUILDDIR = os.environ.get("MS_TOP_BUILDDIR", os.path.join(SRCDIR, "build"))
METASTABLE = os.path.join(BUILDDIR, "cli", "metastable")
RECIPES = os.path.join(SRCDIR, "conf", "recipes")
DOC = "doc/recipes.md"
# the recipes whose services take inputs from another recipe's blocks
BUILDS_ON = {"php-fpm": ["haproxy"], "gunicorn": ["nginx"]}

spec = importlib.util.spec_from_file_location(
    "recipes_docs", os.path.join(SRCDIR, "tools", "recipes_docs.py"))
recipes_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recipes_docs)


def read(rel):
    with open(os.path.join(SRCDIR, rel), encoding="utf-8") as f:
        return f.read()


def recipe_files():
    """Paths relative to SRCDIR of every file of conf/recipes/ but its
    Makefile.inc."""
    out = []
    for stack in sorted(os.listdir(RECIPES)):
        d = os.path.join(RECIPES, stack)
        if os.path.isdir(d):
            out += ["conf/recipes/%s/%s" % (stack, n)
                    for n in sorted(os.listdir(d))]
    return out


def stacks():
    return sorted(n for n in os.listdir(RECIPES)
                  if os.path.isdir(os.path.join(RECIPES, n)))


def dispatched(stack):
    """The identifiers (without the host) the collectd blocks of stack
    and the recipes it builds on dispatch, as regular expressions."""
    out = []
    for s in [stack] + BUILDS_ON.get(stack, []):
        conf = read("conf/recipes/%s/collectd.conf" % s)
        if "LoadPlugin tail" in conf:
            inst = re.search(r'<File [^>]*>\s*Instance "([^"]+)"',
                             conf).group(1)
            for typ, ti in re.findall(r'Type "(\w+)"\s*Instance "(\w+)"',
                                      conf):
                out.append(re.escape("tail-%s/%s-%s" % (inst, typ, ti)))
        if "LoadPlugin curl_json" in conf:
            inst = re.search(r'Plugin "(\w+)"\s*Instance "(\w+)"', conf)
            for typ, ti in re.findall(r'Type "(\w+)"\s*Instance "(\w+)"',
                                      conf):
                out.append(re.escape("%s-%s/%s-%s" % (
                    inst.group(1), inst.group(2), typ, ti)))
        if "LoadPlugin statsd" in conf:
            out.append(r"statsd/(derive|gauge|latency)-[\w.-]+")
        for prog in re.findall(r'Exec "[^"]*" "[^"]*/([\w.-]+)"', conf):
            text = read("conf/recipes/%s/%s" % (s, prog))
            for ident in re.findall(r"PUTVAL \"%s/([^\"]+)\"", text):
                out.append(re.escape(ident).replace("%s", r"[\w.-]+"))
            for ident in re.findall(r"^#\s+(\S+-\S+/\w+-\w+)", text, re.M):
                out.append(re.escape(ident).replace("FRONTEND", r"\w+")
                           .replace("BACKEND", r"\w+")
                           .replace("NAME", r"\w+"))
    return out


class Doc(unittest.TestCase):
    def test_snippets_are_the_files(self):
        now = read(DOC)
        self.assertEqual(now, recipes_docs.made(SRCDIR, now),
                         "%s differs from conf/recipes/: make -C build "
                         "recipes-docs" % DOC)

    def test_every_file_shown_or_linked(self):
        text = read(DOC)
        shown = set(recipes_docs.shown(text))
        for rel in recipe_files():
            if rel.endswith("Makefile.inc"):
                continue
            with self.subTest(file=rel):
                self.assertTrue(rel in shown or "(../%s)" % rel in text,
                                "%s neither shown nor linked" % rel)

    def test_one_section_per_stack(self):
        headings = re.findall(r"^## (.+)$", read(DOC), re.M)
        for stack, title in (("haproxy", "HAProxy"), ("nginx", "nginx"),
                             ("php-fpm", "php-fpm"),
                             ("gunicorn", "gunicorn"),
                             ("node", "Node.js client")):
            self.assertIn(stack, stacks())
            self.assertIn(title, headings)
            section = read(DOC).split("\n## %s\n" % title)[1].split(
                "\n## ")[0]
            for part in ("collectd.conf", "service.yaml"):
                self.assertIn("conf/recipes/%s/%s" % (stack, part), section)
            self.assertIn("| service key |", section)
            self.assertIn("Pitfalls:", section)

    def test_made_catches(self):
        """The copy itself: a stale block is rewritten, a marker without
        its end refused."""
        rel = "conf/recipes/node/service.yaml"
        begin = "<!-- %s: made by tools/recipes_docs.py -->\n" % rel
        end = recipes_docs.end_marker(rel) + "\n"
        stale = "x\n" + begin + "```yaml\nold\n```\n" + end + "y\n"
        self.assertEqual(recipes_docs.made(SRCDIR, stale),
                         "x\n" + begin + recipes_docs.snippet(SRCDIR, rel)
                         + end + "y\n")
        with self.assertRaises(ValueError):
            recipes_docs.made(SRCDIR, begin + "no end\n")


class Shipping(unittest.TestCase):
    def test_installed_and_distributed(self):
        inc = read("conf/recipes/Makefile.inc").replace("\\\n", " ")
        for rel in recipe_files():
            if rel.endswith("Makefile.inc"):
                continue
            with self.subTest(file=rel):
                kind = "SCRIPTS" if os.access(os.path.join(SRCDIR, rel),
                                              os.X_OK) else "DATA"
                stack = rel.split("/")[2].replace("-", "")
                m = re.search(r"^dist_recipes_%s_%s = (.*)$" % (stack, kind),
                              inc, re.M)
                self.assertTrue(m and rel in m.group(1).split(),
                                "%s not in dist_recipes_%s_%s"
                                % (rel, stack, kind))

    def test_page_ships_and_is_linked(self):
        self.assertIn(DOC, read("debian/docs").split())
        self.assertIn(DOC, read("conf/recipes/Makefile.inc"))
        self.assertIn("(%s)" % DOC, read("README.md"))
        # links between the pages of doc/ name the page alone
        link = "(%s)" % os.path.basename(DOC)
        self.assertIn(link, read("doc/configuration.md"))
        runbook = read("doc/runbook.md")
        working = runbook.split("## Is it working?")[1].split("\n## ")[0]
        self.assertIn(link, working)


class Services(unittest.TestCase):
    def test_check_strict(self):
        if not os.access(METASTABLE, os.X_OK):
            self.skipTest("%s not built" % METASTABLE)
        for stack in stacks():
            rel = "conf/recipes/%s/service.yaml" % stack
            with self.subTest(file=rel):
                r = subprocess.run([METASTABLE, "check", "--strict",
                                    os.path.join(SRCDIR, rel)],
                                   capture_output=True, text=True,
                                   timeout=30)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_inputs_are_dispatched(self):
        """Each input names an identifier the recipe's collectd blocks
        dispatch: a typo in a recipe would silence its service."""
        for stack in stacks():
            pats = dispatched(stack)
            text = read("conf/recipes/%s/service.yaml" % stack)
            for key, ident in re.findall(
                    r'^\s+(\w+): (?:\{source: )?"([^"]+)"', text, re.M):
                with self.subTest(stack=stack, input=key):
                    rest = ident.split("/", 1)[1]
                    self.assertTrue(any(re.fullmatch(p, rest)
                                        for p in pats),
                                    "%s: %s is dispatched by no block of "
                                    "the recipe (%s)" % (stack, ident, pats))


class Programs(unittest.TestCase):
    def test_shell_syntax(self):
        for rel in recipe_files():
            if rel.endswith(".sh"):
                with self.subTest(file=rel):
                    r = subprocess.run(["sh", "-n", os.path.join(SRCDIR,
                                                                 rel)],
                                       capture_output=True, text=True)
                    self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
