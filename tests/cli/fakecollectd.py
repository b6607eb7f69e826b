# SPDX-License-Identifier: MIT
"""A stand-in for collectd's unixsock plugin, for the tests of `metastable
check --collectd` and `metastable init --collectd` that need no collectd
(tests/cli/test_collectd.py), and for the one thing collectd will not do
on request: hang (tests/integration/test_collectd_check.py).

It answers LISTVAL and GETVAL as collectd 5.12 does (collectd-unixsock(5);
the formats checked against a real collectd: "%.3f %s" lines for LISTVAL,
"%s=%e" or "%s=NaN" for GETVAL, "-1 No such value." for an identifier it
does not hold), from a dict {identifier: {data source: value}}.  Modes:
"serve", "hang" (accept, read, never answer), "garbage" (answer a line
that is not the protocol).  Standard library only; the socket is on the
file system, nothing on the network; stop() ends every thread.
"""
import math
import os
import socket
import threading
import time


def _unquote(arg):
    """An argument as collectd's option parser reads it: "..." with
    backslash escapes, or a bare word."""
    if not arg.startswith('"'):
        return arg
    out, i = [], 1
    while i < len(arg) and arg[i] != '"':
        if arg[i] == "\\" and i + 1 < len(arg):
            i += 1
        out.append(arg[i])
        i += 1
    return "".join(out)


class FakeCollectd:
    def __init__(self, path, values=None, mode="serve"):
        self.path = path
        self.values = dict(values or {})
        self.mode = mode
        self.commands = []  # every command line received
        self._conns = []
        self._stop = threading.Event()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        threads = []
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,),
                                 daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(5)

    def _answer(self, line):
        cmd, _, arg = line.partition(" ")
        if cmd == "LISTVAL":
            names = sorted(self.values)
            now = time.time()
            return ["%d Value%s found" % (len(names),
                                          "" if len(names) == 1 else "s")] + \
                   ["%.3f %s" % (now, n) for n in names]
        if cmd == "GETVAL":
            name = _unquote(arg.strip())
            if name not in self.values:
                return ["-1 No such value."]
            vals = self.values[name]
            return ["%d Value%s found" % (len(vals),
                                          "" if len(vals) == 1 else "s")] + \
                   ["%s=%s" % (k, "NaN" if math.isnan(v) else "%e" % v)
                    for k, v in vals.items()]
        return ["-1 Unknown command: %s" % cmd]

    def _serve(self, conn):
        conn.settimeout(0.1)
        buf = b""
        while not self._stop.is_set():
            try:
                data = conn.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.commands.append(line.decode())
                if self.mode == "hang":
                    continue
                if self.mode == "garbage":
                    reply = ["hello, this is not collectd"]
                else:
                    reply = self._answer(line.decode())
                try:
                    conn.sendall(("\n".join(reply) + "\n").encode())
                except OSError:
                    return

    def stop(self):
        self._stop.set()
        self._thread.join(5)
        for c in self._conns:
            c.close()
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
