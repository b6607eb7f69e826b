#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The plots of `metastable sweep` and `metastable simulate`.

Safety: nothing a user gives (a --title, the plot's file name, a service
name in a spec file) makes gnuplot run a command or write elsewhere:
gnuplot runs `...` inside double-quoted strings, pipes output to a command
for a file name that starts with '|', and expands '~'.

Legibility, on the SVG gnuplot writes, across the shapes a landscape can
take (no band, a narrow band, a wide one, a million servers, a log axis):
no two texts overlap, no text hides a branch, an arrow or an operating
point, the legend names only what is drawn, the loads carry their unit and
the operating point its name.  Text extents come from DejaVu Sans's own
advance widths, read from the font file (independent of the estimate the
program lays texts out with); positions from the SVG.
"""
import html
import os
import re
import struct
import tempfile
import xml.etree.ElementTree as ET

import clitest
from clitest import SPEC, CliTest

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # fonts-dejavu-core
SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"

BLUE, VERMILION, GREY = "rgb(0,114,178)", "rgb(213,94,0)", "rgb(85,85,85)"
GREEN, ORANGE = "rgb(0,158,115)", "rgb(230,159,0)"


class Font:
    """Advance widths of a TrueType font (its cmap format 4 and hmtx)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            d = f.read()
        tables = {}
        for i in range(struct.unpack(">H", d[4:6])[0]):
            tag, _, off, _ = struct.unpack(">4sIII", d[12 + 16 * i:28 + 16 * i])
            tables[tag.decode("latin-1")] = off
        head, hhea, hmtx = tables["head"], tables["hhea"], tables["hmtx"]
        self.upem = struct.unpack(">H", d[head + 18:head + 20])[0]
        n = struct.unpack(">H", d[hhea + 34:hhea + 36])[0]
        self.adv = [struct.unpack(">H", d[hmtx + 4 * i:hmtx + 4 * i + 2])[0]
                    for i in range(n)]
        cmap, sub = tables["cmap"], None
        for i in range(struct.unpack(">H", d[cmap + 2:cmap + 4])[0]):
            pid, eid, off = struct.unpack(
                ">HHI", d[cmap + 4 + 8 * i:cmap + 12 + 8 * i])
            if (pid, eid) == (3, 1):  # Windows, Unicode BMP
                sub = cmap + off
        seg2 = struct.unpack(">H", d[sub + 6:sub + 8])[0]

        def arr(o):
            return struct.unpack(">%dH" % (seg2 // 2), d[o:o + seg2])
        self.end = arr(sub + 14)
        self.start = arr(sub + 16 + seg2)
        self.delta = arr(sub + 16 + 2 * seg2)
        self.ro_at = sub + 16 + 3 * seg2
        self.ro = arr(self.ro_at)
        self.d = d

    def glyph(self, ch):
        c = ord(ch)
        for i, e in enumerate(self.end):
            if c <= e:
                if c < self.start[i]:
                    return 0
                if self.ro[i] == 0:
                    return (c + self.delta[i]) & 0xFFFF
                o = self.ro_at + 2 * i + self.ro[i] + 2 * (c - self.start[i])
                g = struct.unpack(">H", self.d[o:o + 2])[0]
                return (g + self.delta[i]) & 0xFFFF if g else 0
        return 0

    def width(self, text, size):
        units = sum(self.adv[min(self.glyph(ch), len(self.adv) - 1)]
                    for ch in text)
        return units * size / self.upem


def segment_meets(seg, box):
    """Does the segment (x0, y0, x1, y1) meet box (x0, y0, x1, y1)?"""
    x0, y0, x1, y1 = seg
    t0, t1 = 0.0, 1.0
    dx, dy = x1 - x0, y1 - y0
    for p, q in ((-dx, x0 - box[0]), (dx, box[2] - x0), (-dy, y0 - box[1]),
                 (dy, box[3] - y0)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            if t > t1:
                return False
            t0 = max(t0, t)
        else:
            if t < t0:
                return False
            t1 = min(t1, t)
    return True


def overlap(a, b, slack=0.5):
    return (a[0] + slack < b[2] and b[0] + slack < a[2] and
            a[1] + slack < b[3] and b[1] + slack < a[3])


class Picture:
    """The texts, lines and points of a gnuplot SVG, in pixels."""
    NUM = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")

    def __init__(self, path, font):
        root = ET.parse(path).getroot()
        self.texts = {}   # (text, box) -> None, in order, without repeats
        self.sizes = {}   # text -> font size
        self.paths = []   # (colour, dashed, [(x0, y0, x1, y1)])
        self.points = []  # (x, y, r)
        self.polygons = []  # (fill, [(x, y)])
        self.walk(root, font)

    def walk(self, el, font):
        for child in el:
            tag = child.tag.replace(SVG, "")
            if tag == "g" and child.find(SVG + "text") is not None:
                self.text(child, font)
            elif tag == "path" and child.get("stroke"):
                self.path(child)
            elif tag == "use" and "gpPt" in (child.get(XLINK + "href") or ""):
                m = re.match(r"translate\(([\d.]+),([\d.]+)\) scale\(([\d.]+)\)",
                             child.get("transform") or "")
                if m:
                    self.points.append(tuple(float(v) for v in m.groups()))
            elif tag == "polygon":
                xy = [float(v) for v in self.NUM.findall(child.get("points"))]
                self.polygons.append((child.get("fill").replace(" ", ""),
                                      list(zip(xy[0::2], xy[1::2]))))
            self.walk(child, font)

    def text(self, g, font):
        m = re.match(r"translate\(([\d.]+),([\d.]+)\)( rotate\((-90|270)\))?",
                     g.get("transform") or "")
        size = float(g.get("font-size"))
        s = html.unescape("".join(g.find(SVG + "text").itertext()))
        if not m or not s.strip():
            return
        x, y, rotated = float(m.group(1)), float(m.group(2)), m.group(3)
        w = font.width(s, size)
        anchor = g.get("text-anchor")
        # along the text: from a to a + w; across: cap height above the
        # baseline, descenders below
        a = {"start": 0, "middle": -w / 2, "end": -w}[anchor]
        if rotated:  # reads upwards from (x, y + ...)
            box = (x - 0.73 * size, y - a - w, x + 0.24 * size, y - a)
        else:
            box = (x + a, y - 0.73 * size, x + a + w, y + 0.24 * size)
        self.texts.setdefault((s, box), None)
        self.sizes[s] = size

    def path(self, p):
        nums = []
        segs, last = [], None
        for cmd, args in re.findall(r"([MLZmlz])([^MLZmlz]*)",
                                    p.get("d") or ""):
            xy = [float(v) for v in self.NUM.findall(args)]
            if cmd == "M":
                last = tuple(xy[:2])
            elif cmd == "L":
                for i in range(0, len(xy), 2):
                    pt = (xy[i], xy[i + 1])
                    segs.append(last + pt)
                    last = pt
            nums.append(cmd)
        self.paths.append((p.get("stroke").replace(" ", ""),
                           bool(p.get("stroke-dasharray")), segs))

    def labels(self):
        return [s for s, _ in self.texts]


class PlotTest(CliTest):
    font = None

    @classmethod
    def setUpClass(cls):
        cls.font = Font(FONT)

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name

    def tearDown(self):
        self.dir.cleanup()


class Injection(PlotTest):
    """Every way a user's text reaches gnuplot, with a payload that would
    create a file if gnuplot ran it."""

    def pwned(self):
        """The files the payloads would have made."""
        return sorted(f for f in os.listdir(self.d) if f.startswith("pwned"))

    def sweep(self, path, *extra, cwd=None):
        return self.ok("sweep", "--capacity", "1", "--retries", "3",
                       "--from", "0", "--to", "2", "--steps", "2",
                       "--plot", path, *extra, cwd=cwd)

    def svg_title(self, path):
        sizes = Picture(path, self.font).sizes
        return [s for s in sizes if sizes[s] == 16][0]

    def test_title(self):
        for title in ("a `touch %s/pwned1` b" % self.d,
                      "x' . system('touch %s/pwned2') . 'y" % self.d,
                      'x" . system("touch %s/pwned3") . "y' % self.d,
                      "nl\n!touch %s/pwned4\nset output '%s/pwned5.svg'"
                      % (self.d, self.d),
                      "@x `echo 1 > %s/pwned6`" % self.d):
            f = os.path.join(self.d, "t.svg")
            for cmd in ("sweep", "simulate"):
                with self.subTest(cmd=cmd, title=title):
                    if cmd == "sweep":
                        self.sweep(f, "--title", title)
                    else:
                        self.ok("simulate", "--capacity", "10", "--retries",
                                "2", "--load", "5", "--duration", "10",
                                "--plot", f, "--title", title)
                    self.assertEqual(self.pwned(), [])
                    # drawn literally, line breaks as blanks
                    self.assertEqual(self.svg_title(f),
                                     title.replace("\n", " "))

    def test_file_name(self):
        names = ["q`touch pwned1`.svg", "|touch pwned2; cat > y.svg",
                 "it's \"x\" $(touch pwned3).svg", "nl\n!touch pwned4\n.png"]
        for name in names:
            with self.subTest(name=name):
                self.sweep(name, cwd=self.d)
                self.assertEqual(self.pwned(), [])
                with open(os.path.join(self.d, name), "rb") as f:
                    head = f.read(8)
                self.assertTrue(head.startswith(b"<?xml") or
                                head == b"\x89PNG\r\n\x1a\n", head)
        self.assertFalse(os.path.exists(os.path.join(self.d, "y.svg")))
        # '~' is a directory here, not the home directory
        os.mkdir(os.path.join(self.d, "~"))
        name = "ms-plot-test-%d.svg" % os.getpid()
        home = os.path.join(os.path.expanduser("~"), name)
        self.assertFalse(os.path.exists(home))
        try:
            self.sweep("~/" + name, cwd=self.d)
            self.assertTrue(os.path.exists(os.path.join(self.d, "~", name)))
            self.assertFalse(os.path.exists(home))
        finally:
            if os.path.exists(home):
                os.unlink(home)

    def test_service_name(self):
        # a spec file's name never reaches gnuplot unchecked: names are
        # [A-Za-z0-9_.-] and anything else is refused before any drawing
        spec = os.path.join(self.d, "s.yaml")
        with open(spec, "w") as f:
            f.write("services:\n  - name: \"a`touch %s/pwned1`\"\n"
                    "    model: capacity\n    capacity: 1\n    retries: 3\n"
                    "    inputs: {offered_rate: 1}\n" % self.d)
        r = clitest.run("sweep", "--spec", spec, "--from", "0", "--to", "2",
                        "--steps", "2", "--plot",
                        os.path.join(self.d, "s.svg"))
        self.assertEqual(r.code, 1, r)
        self.assertIn("s.yaml:2:", r.err)
        self.assertEqual(self.pwned(), [])
        self.assertFalse(os.path.exists(os.path.join(self.d, "s.svg")))


CHECKOUT = ("--spec", SPEC, "--service", "checkout")
SWEEPS = {
    # no fold: the storm starts and ends at one load
    "no band": ("--capacity", "100", "--retries", "3", "--from", "0",
                "--to", "150", "--load", "100"),
    "no band, base failure": ("--capacity", "1", "--base-failure", "0.05",
                              "--retries", "2", "--from", "0", "--to", "2",
                              "--load", "0.9"),
    # token bucket over layered retries: a band of 84.37..100 on 0..200
    "narrow band": ("--capacity", "100", "--retries", "1", "--tiers", "2",
                    "--token-ratio", "1", "--from", "0", "--to", "200",
                    "--load", "90"),
    "wide band": CHECKOUT + ("--from", "0", "--to", "120", "--load", "60"),
    "a million servers": ("--servers", "1000000", "--service-time", "0.1",
                          "--timeout", "1", "--timeout-covers", "wait", "--retries", "3", "--tiers", "2",
                          "--from", "0", "--to", "12e6", "--load", "5e6"),
    "a million servers, load near tipping": (
        "--servers", "1000000", "--service-time", "0.1", "--timeout", "1", "--timeout-covers", "wait",
        "--retries", "3", "--from", "0", "--to", "12e6", "--load", "9e6"),
    "log axis": ("--capacity", "100", "--retries", "3", "--tiers", "3",
                 "--from", "0", "--to", "150", "--load", "50"),
}


class Legible(PlotTest):
    def draw(self, name, *args):
        f = os.path.join(self.d, name.replace(" ", "_").replace(",", "") +
                         ".svg")
        self.ok(*args, "--plot", f)
        return Picture(f, self.font)

    def assert_clear(self, pic, data_colours):
        texts = list(pic.texts)
        for i, (s, box) in enumerate(texts):
            for t, other in texts[i + 1:]:
                self.assertFalse(overlap(box, other),
                                 "%r %s overlaps %r %s" % (s, box, t, other))
            for colour, _, segs in pic.paths:
                if colour not in data_colours:
                    continue
                for seg in segs:
                    self.assertFalse(segment_meets(seg, box),
                                     "%r %s hides a %s line %s" %
                                     (s, box, colour, seg))
            for x, y, r in pic.points:
                self.assertFalse(overlap(box, (x - r, y - r, x + r, y + r)),
                                 "%r %s hides the point at %s,%s" %
                                 (s, box, x, y))

    def test_sweeps(self):
        for name, args in SWEEPS.items():
            with self.subTest(name):
                pic = self.draw(name, "sweep", *args, "--steps", "2")
                self.assert_clear(pic, (BLUE, VERMILION, GREY))
                labels = pic.labels()
                load = args[args.index("--load") + 1]
                short = {"5e6": "5M", "9e6": "9M"}.get(load, load)
                # the operating point's line is named, with its unit
                self.assertIn("load %s req/s" % short, labels)
                # the legend names only what is drawn
                band = [p for fill, p in pic.polygons if fill == ORANGE and
                        max(x for x, _ in p) - min(x for x, _ in p) > 1.5 and
                        max(y for _, y in p) - min(y for _, y in p) > 100]
                dashed = [s for c, dash, s in pic.paths
                          if c == GREY and dash and s and
                          sum(abs(x1 - x0) + abs(y1 - y0)
                              for x0, y0, x1, y1 in s) > 10]
                self.assertEqual("hysteresis band (bistable)" in labels,
                                 bool(band), labels)
                self.assertEqual(
                    "unstable: boundary between the basins" in labels,
                    len(dashed) >= 2, labels)  # legend sample and branch
                if name.startswith("no band"):
                    self.assertFalse(band)
                    self.assertFalse([s for s in labels if "storm ends" in s])
                    self.assertNotIn("unstable one there", labels)
                    self.assertTrue([s for s in labels if s.startswith(
                        "tipping = recovery ") and s.endswith(
                        " req/s (no hysteresis band)")], labels)
                else:
                    self.assertTrue(band)
                    for word in ("tipping", "recovery"):
                        self.assertTrue([s for s in labels if re.fullmatch(
                            word + r" [\d.]+[kM]? req/s", s)], labels)

    def test_narrow_band_labels(self):
        pic = self.draw("narrow", "sweep", *SWEEPS["narrow band"], "--steps",
                        "2")
        labels = pic.labels()
        for want in ("recovery 84.37 req/s", "tipping 100 req/s",
                     "above 100 req/s: retry storm",
                     "below 84.37 req/s: storm ends",
                     "capacity C = 100 attempts/s"):
            self.assertIn(want, labels)

    def test_million_servers(self):
        pic = self.draw("big", "sweep", *SWEEPS["a million servers"],
                        "--steps", "2")
        self.assertIn("erlang model: 1M servers, service time 100 ms, "
                      "timeout 1 s on the wait, 3 retries x 2 tiers",
                      pic.labels())

    def test_replay_notifications(self):
        # a WARNING and a FAILURE ten seconds apart on a 5.5-hour replay:
        # their names above the plot are moved apart, not run together
        # ("WARNINGFAILURE"), measured with the font's advance widths.  (The
        # PNG's larger font ran them together where this SVG did not: the
        # layout now counts capitals wider, seen in the PNG by eye.)
        trace = os.path.join(self.d, "long.csv")
        with open(trace, "w") as f:
            f.write("time,offered_rate,retry_rate\n")
            for i in range(2000):
                o, r = ((60, 0) if i < 1000 else (100, 0) if i == 1000 else
                        (100, 300) if i < 1010 else (20, 60) if i < 1020 else
                        (20, 0))
                f.write("%d,%d,%d\n" % (1700000000 + 10 * i, o, r))
        pic = self.draw("replay", "replay", "--spec", SPEC, "--service",
                        "checkout", trace)
        labels = pic.labels()
        for name in ("WARNING", "FAILURE", "OKAY"):
            self.assertIn(name, labels)
        self.assert_clear(pic, ())

    def test_simulate(self):
        svc = ("--servers", "10", "--service-time", "100ms", "--timeout",
               "1", "--timeout-covers", "wait", "--retries", "3", "--base-failure", "0.01")
        for name, args in {
            "storm": svc + ("--load", "60", "--spike", "10,20,60", "--drop",
                            "60,150,50", "--duration", "240"),
            "no band": ("--capacity", "100", "--retries", "3", "--load", "90",
                        "--spike", "20,20,30", "--duration", "120"),
        }.items():
            with self.subTest(name):
                pic = self.draw(name, "simulate", *args)
                self.assert_clear(pic, (BLUE, VERMILION, GREEN))
                labels = pic.labels()
                if name == "no band":
                    self.assertIn("tipping = recovery load 100 req/s", labels)
                    self.assertFalse([s for s in labels
                                      if s.startswith("recovery load")])
                else:
                    self.assertIn("tipping load 93.66 req/s", labels)
                    self.assertIn("recovery load 25 req/s", labels)


if __name__ == "__main__":
    clitest.main()
