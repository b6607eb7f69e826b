#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The option lists of doc/metastable.1 and doc/metastable.md, made from
each command's --help, the one source of its options (cli/common.h,
ms_cli_option).

    tools/cli_docs.py METASTABLE [SRCDIR]          rewrite the lists
    tools/cli_docs.py --check METASTABLE [SRCDIR]  exit 1 if one differs
    make -C build cli-docs                         the first, after a build

The commands come from `METASTABLE --help`, the options of each from
`METASTABLE COMMAND --help`; the model options from solve's.  Each list
sits between two marker lines in the documents (a roff comment, an HTML
comment); only what is between them is rewritten.  SRCDIR is the top of
the source tree (default: this file's parent's parent).

tests/cli/test_help.py imports this file: the documents must be what it
makes from the program being tested.
"""
import os
import re
import subprocess
import sys

MAN = "doc/metastable.1"
MD = "doc/metastable.md"
MODEL = "model"  # the block of the model options
HEADING = re.compile(r"^(\S.*):$")
COLUMN = 27  # where --help starts an option's text (cli/common.c)


def run(program, *args):
    return subprocess.run([program, *args], capture_output=True, text=True,
                          check=True).stdout


def commands(program):
    """The commands `PROGRAM --help` lists, in its order."""
    out, listing = [], False
    for line in run(program, "--help").split("\n"):
        if line == "Commands:":
            listing = True
        elif listing and not line:
            break
        elif listing:
            out.append(line.split()[0])
    return out


def parse_help(text):
    """The options of a --help text: a list of groups (heading, options),
    each option (name, value or None, text).  The options start at the
    first line "  --" (with the heading just above it); from there every
    line must be blank, a heading ("Engine:"), an option, or the
    continuation of its text at the text's column: anything else raises
    ValueError, since the documents could not show it."""
    lines = text.rstrip("\n").split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("  --")),
                 None)
    if start is None:
        return []
    if start > 0 and HEADING.match(lines[start - 1]):
        start -= 1
    groups = []
    option = None
    for no, line in enumerate(lines[start:], start + 1):
        if not line:
            option = None
        elif HEADING.match(line):
            groups.append((line[:-1], []))
            option = None
        elif line.startswith("  --"):
            if not groups:
                groups.append(("Options", []))
            # the text on the same line is two spaces or more away
            same_line = (len(line) > COLUMN and
                         line[COLUMN - 2:COLUMN] == "  " and
                         line[COLUMN] != " ")
            left = line[:COLUMN].strip() if same_line else line.strip()
            name, _, value = left.partition(" ")
            option = [name, value or None, line[COLUMN:] if same_line else ""]
            groups[-1][1].append(option)
        elif line.startswith(" " * COLUMN) and option is not None:
            option[2] = (option[2] + " " + line.strip()).strip()
        else:
            raise ValueError("--help line %d is not an option: %r" %
                             (no, line))
    return [(h, [tuple(o) for o in opts]) for h, opts in groups]


def split_model(groups):
    """(the command's own groups, the model options or None)."""
    own = [g for g in groups if not g[0].startswith("Model options")]
    model = [o for h, opts in groups if h.startswith("Model options")
             for o in opts]
    return own, (model or None)


# ---- roff -----------------------------------------------------------------

def roff_text(text):
    """Help text as roff: backslashes escaped, every hyphen a minus (what is
    typed: --options, full-jitter, 1e-290), lines wrapped at 78, none
    starting with a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    out, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > 78:
            out.append(line)
            line = word
        else:
            line = (line + " " + word) if line else word
    out.append(line)
    return "\n".join("\\&" + l if l[:1] in (".", "'") else l for l in out)


def roff_tag(name, value):
    """The .TP tag of an option: the name bold, a value of words (a|b)
    bold too, a placeholder italic."""
    n = "\\%" + name.replace("-", "\\-")
    if value is None:
        return ".B " + n
    v = value.replace("\\", "\\e").replace("-", "\\-")
    if re.match(r"^[a-z0-9-]+(\|[a-z0-9-]+)+$", value):
        return '.BR %s " %s"' % (n, v)
    return '.BI %s " %s"' % (n, v)


def roff_options(groups, tail=None, indent=True):
    out = [".RS"] if indent else []
    for heading, opts in groups:
        if heading != "Options":
            out += [".PP", roff_text(heading + ":")]
        for name, value, text in opts:
            out += [".TP", roff_tag(name, value), roff_text(text)]
    if tail:
        out += [".PP", roff_text(tail)]
    if indent:
        out.append(".RE")
    return "\n".join(out)


# ---- markdown -------------------------------------------------------------

def md_text(text):
    """Help text as markdown: options as code, * and < escaped."""
    text = text.replace("*", "\\*").replace("<", "&lt;")
    return re.sub(r"(?<![\w`-])(--[a-z][a-z0-9-]*)", r"`\1`", text)


def md_item(name, value, text):
    """A list item, wrapped at 78 with continuation lines indented by two;
    no continuation line starts with what markdown would read as a nested
    list, a quote or a heading ("-", "1.", ">=", "#")."""
    words = ["- `%s%s`:" % (name, " " + value if value else "")] + \
        md_text(text).split(" ")
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > 78 and \
                not re.match(r"^([-+*]|[>#].*|\d+[.)])$", word):
            lines.append(line)
            line = "  " + word
        else:
            line = line + " " + word if line else word
    lines.append(line)
    return "\n".join(lines)


def md_options(groups, tail=None):
    out = []
    for heading, opts in groups:
        if heading != "Options":
            out += ["", "*%s:*" % heading, ""]
        out += [md_item(*o) for o in opts]
    if tail:
        out.append("- " + tail)
    return "\n".join(out).strip("\n")


# ---- the blocks -----------------------------------------------------------

def markers(kind, command):
    """The lines that open and close a command's block in a document."""
    what = "the model options" if command == MODEL else \
        "the options of %s" % command
    source = "solve" if command == MODEL else command
    if kind == "man":
        return ('.\\" %s: made from \'metastable %s --help\' by '
                'tools/cli_docs.py' % (what.capitalize(), source),
                '.\\" End of %s.' % what)
    return ("<!-- %s: made from `metastable %s --help` by tools/cli_docs.py "
            "-->" % (what.capitalize(), source),
            "<!-- end of %s -->" % what)


def model_tail(model, all_model, kind):
    """The line after a command's options that points at the model
    options, naming those the command shadows with its own."""
    if model is None:
        return None
    have = {o[0] for o in model}
    own = [o[0] for o in all_model if o[0] not in have]
    if kind == "man":
        text = "And the model options (MODEL OPTIONS)"
        if own:
            text += ", but %s: the one above" % ", ".join(own)
        return text + "."
    text = "the [model options](#model-options)"
    if own:
        text += ", but %s: the one above" % ", ".join("`%s`" % o for o in own)
    return text


def blocks(program):
    """{(kind, command): the text between its markers}, kind "man" or
    "md", command a command or MODEL."""
    helps = {c: parse_help(run(program, c, "--help"))
             for c in commands(program)}
    _, all_model = split_model(helps["solve"])
    out = {}
    for c, groups in helps.items():
        own, model = split_model(groups)
        out["man", c] = roff_options(own, model_tail(model, all_model, "man"))
        out["md", c] = "Options of `metastable %s`:\n\n%s" % (
            c, md_options(own, model_tail(model, all_model, "md")))
    out["man", MODEL] = roff_options([("Options", all_model)], indent=False)
    out["md", MODEL] = md_options([("Options", all_model)])
    return out


def replace_blocks(text, kind, made):
    """text with the blocks of this kind replaced by made's; raises
    ValueError for a block whose markers are missing or repeated."""
    for (k, command), body in sorted(made.items()):
        if k != kind:
            continue
        begin, end = markers(kind, command)
        if text.count(begin + "\n") != 1 or text.count(end + "\n") != 1:
            raise ValueError("%s: no single block for %s (%s)" %
                             (kind, command, begin))
        i = text.index(begin + "\n") + len(begin) + 1
        j = text.index(end + "\n", i)
        text = text[:i] + body + "\n" + text[j:]
    return text


def documents(srcdir, program):
    """[(path, its text now, its text made from the help)]."""
    made = blocks(program)
    out = []
    for rel, kind in ((MAN, "man"), (MD, "md")):
        path = os.path.join(srcdir, rel)
        with open(path, encoding="utf-8") as f:
            now = f.read()
        out.append((path, now, replace_blocks(now, kind, made)))
    return out


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if not 1 <= len(args) <= 2:
        sys.stderr.write(__doc__)
        return 2
    srcdir = args[1] if len(args) > 1 else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    stale = 0
    for path, now, want in documents(srcdir, args[0]):
        if now == want:
            continue
        stale += 1
        if check:
            print("%s: the option lists differ from --help" % path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(want)
            print("%s: rewritten" % path)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
