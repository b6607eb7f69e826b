#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The snippets of doc/recipes.md, copied from the files of conf/recipes/
that the recipe tests run (tests/integration/test_recipe_*.py): one
source for both.

    tools/recipes_docs.py [SRCDIR]           rewrite the snippets
    tools/recipes_docs.py --check [SRCDIR]   exit 1 if one differs
    make -C build recipes-docs               the first

Each snippet sits between two marker lines of doc/recipes.md, HTML
comments that name the file:

    <!-- conf/recipes/nginx/service.yaml: made by tools/recipes_docs.py -->
    <!-- end of conf/recipes/nginx/service.yaml -->

Only what is between them is rewritten: the whole file in a fenced block.
SRCDIR is the top of the source tree (default: this file's parent's
parent).  tests/test_recipes.py imports this file.
"""
import os
import re
import sys

DOC = "doc/recipes.md"
BEGIN = re.compile(r"^<!-- (conf/recipes/\S+): made by tools/recipes_docs.py"
                   r" -->$", re.M)
LANGS = {".yaml": "yaml", ".py": "python", ".mjs": "js", ".sh": "sh"}


def end_marker(rel):
    return "<!-- end of %s -->" % rel


def snippet(srcdir, rel):
    """The fenced block of file rel (relative to srcdir)."""
    with open(os.path.join(srcdir, rel), encoding="utf-8") as f:
        text = f.read()
    if "```" in text:
        raise ValueError("%s holds ``` and cannot be fenced" % rel)
    lang = LANGS.get(os.path.splitext(rel)[1], "")
    return "```%s\n%s```\n" % (lang, text if text.endswith("\n")
                                else text + "\n")


def shown(text):
    """The files doc/recipes.md shows, in order."""
    return BEGIN.findall(text)


def made(srcdir, text):
    """text with every snippet copied from its file; raises ValueError for
    a marker without its end, or a file shown twice."""
    names = shown(text)
    if len(set(names)) != len(names):
        raise ValueError("%s shows a file twice: %s" % (DOC, names))
    for rel in names:
        begin = "<!-- %s: made by tools/recipes_docs.py -->\n" % rel
        end = end_marker(rel) + "\n"
        i = text.index(begin) + len(begin)
        j = text.find(end, i)
        if j < 0:
            raise ValueError("%s: no '%s' after the snippet of %s"
                             % (DOC, end.strip(), rel))
        text = text[:i] + snippet(srcdir, rel) + text[j:]
    return text


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) > 1:
        sys.stderr.write(__doc__)
        return 2
    srcdir = args[0] if args else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    path = os.path.join(srcdir, DOC)
    with open(path, encoding="utf-8") as f:
        now = f.read()
    want = made(srcdir, now)
    if now == want:
        return 0
    if check:
        print("%s: a snippet differs from its file in conf/recipes/; make "
              "-C build recipes-docs copies them" % path)
        return 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(want)
    print("%s: rewritten" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
