#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A hostile HTTP origin and a raw multi-request client for the http_proxy
tests (t/integration/http_hostile.sh; standard library only).

    python3 hostile_origin.py serve --port-file F [--record R] [--lifetime S]

listens on 127.0.0.1 and answers every request with canned RAW bytes
chosen by its path (the table CANNED below), so it can send framing no
real server would. It reads requests the way a lenient origin does: lines
end at LF (a CR before it is dropped), a chunked body's size line ends at
its LF, whatever follows ";". It keeps the connection for the next
request unless the canned answer says "close". Every request head it
reads is recorded in R as one line, written and flushed at once:

    REQ <connection number> <method> <target> <version>
    BAD <connection number> <first line, repr>     (not a request line)

so a test can tell what the proxy sent upstream (a smuggled request shows
up as a second REQ line). A path not in the table gets a 200 with
Content-Length and the body "hostile origin: PATH\\n". The server exits
after --lifetime seconds or when its parent goes away.

    python3 hostile_origin.py client --port P [options] REQUEST...

connects once to 127.0.0.1:P and sends each REQUEST (text with \\r, \\n,
\\t, \\\\ and \\xHH escapes) on that one connection, in order. After each
it reads the answer: it waits up to --timeout seconds for the first byte,
then until nothing arrives for --quiet-ms (or the connection closes), and
prints

    --- response N ---
    <the raw bytes received>
    --- end N: closed|quiet|timeout ---

(a request after a close is not sent: "--- end N: not sent ---"). With
--ready F --go G it creates F after each answer but the last and waits
(at most --go-timeout seconds) for G to exist before the next request,
so the test can act (a reload) between two requests on one connection.
At the end it checks everything received as one stream of responses
under RFC 9112's strict rules (CRLF only, strict chunked framing) and
prints a line per response and one verdict:

    # response status=200 te=chunked cl=- framing=chunked body=b'hello'
    # finals 200 403        (statuses of the final responses: not 1xx, or 101)
    # stream ok | # stream cut (closed inside a message) |
    # stream incomplete | # stream bad: REASON

It exits 2 (and says "# stream no connection") when it cannot connect.

    python3 hostile_origin.py body smuggle

prints, in the client's escapes, a chunked request body that hides a
second request (GET /smuggled) from a reader that ends lines at LF.

Everything is bounded: no wait is longer than its option.
"""

import argparse
import os
import re
import socket
import sys
import threading
import time

KEEP, CLOSE = "keep", "close"


def cl_response(body, extra=b"", status=b"200 OK"):
    return (b"HTTP/1.1 " + status + b"\r\n" + extra +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


def lf_hidden(hidden, pause=0.5):
    """Segments of a chunked body that two readers split differently
    (issue 7, D2).

    A reader that ends the size line at LF (curl, Python, many origins)
    sees a chunk of N bytes "A"*N, then the last chunk: the message ends
    with the first segment, and `hidden`, sent `pause` seconds later, is
    the next message on the connection (the answer to its next request).
    A reader that takes everything after ";" up to a CR as the extension
    (the lenient http_parser) sees the As as extension, then N bytes of
    data: `0\\r\\n\\r\\n` + `hidden`, then a last chunk of its own."""
    data = b"0\r\n\r\n" + hidden
    n = len(data)
    return [(0, b"%x;\n" % n + b"A" * n + b"\r\n0\r\n\r\n"),
            (pause, hidden + b"\r\n0\r\n\r\n")]


INJECTED = cl_response(b"injected\n", b"Set-Cookie: injected=1\r\n")
# A request body that hides a second request from an origin ending lines
# at LF (the client side of the same trick): `body smuggle` prints it.
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: smuggled.test\r\n\r\n"
BODIES = {"smuggle": b"".join(d for _, d in lf_hidden(SMUGGLED))}

# path -> (the answer, KEEP or CLOSE the connection after it); the answer
# is raw bytes, or a list of (seconds to wait first, raw bytes) segments.
CANNED = {
    "/ok": (cl_response(b"ok from the hostile origin\n"), KEEP),
    "/chunked": (CHUNKED_HEAD + b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                 KEEP),
    "/close": (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
               b"framed by close\n", CLOSE),
    # A valid chunked answer with chunk extensions and a trailer.
    "/ext-trailer": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                     b"Trailer: X-Trail\r\n\r\n"
                     b"5;a=b\r\nhello\r\n"
                     b"6 ; name=\"q v\"\r\n world\r\n"
                     b"0\r\nX-Trail: t\r\n\r\n", KEEP),
    # D1: a malformed final head after an interim one; more interim heads
    # than the proxy takes; a 101 nobody asked for after a 100.
    "/d1/bad-after-100": (b"HTTP/1.1 100 Continue\r\n\r\n"
                          b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nok",
                          KEEP),
    "/d1/nine-100": (b"HTTP/1.1 100 Continue\r\n\r\n" * 9 +
                     cl_response(b"ok"), KEEP),
    "/d1/100-101": (b"HTTP/1.1 100 Continue\r\n\r\n"
                    b"HTTP/1.1 101 Switching Protocols\r\n"
                    b"Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n", KEEP),
    # D2: a response that hides another one behind a bare LF in a chunk
    # extension; chunk data not followed by CRLF; a bare CR ending a size
    # line; a space after the size.
    "/d2/inject": ([(0, CHUNKED_HEAD)] + lf_hidden(INJECTED), KEEP),
    "/d2/no-crlf": (CHUNKED_HEAD + b"5\r\nhelloXY0\r\n\r\n", KEEP),
    "/d2/bare-cr": (CHUNKED_HEAD + b"5\rXhello\r\n0\r\n\r\n", KEEP),
    "/d2/size-space": (CHUNKED_HEAD + b"5 \r\nhello\r\n0\r\n\r\n", KEEP),
}

# ---- the origin --------------------------------------------------------------


class Recorder:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.n = 0

    def next_conn(self):
        with self.lock:
            self.n += 1
            return self.n

    def write(self, line):
        if not self.path:
            return
        with self.lock:
            with open(self.path, "a", encoding="latin-1") as f:
                f.write(line + "\n")
                f.flush()


class Conn:
    """Buffered lenient reading of one origin connection."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def line(self, limit=65536):
        while b"\n" not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("line too long")
            self.fill()
        i = self.buf.index(b"\n")
        ln, self.buf = self.buf[:i], self.buf[i + 1:]
        return ln[:-1] if ln.endswith(b"\r") else ln

    def read(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d


def read_body(c, headers):
    te = headers.get("transfer-encoding", "").lower()
    if "chunked" in te:
        body = b""
        while True:
            size = int(c.line().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while c.line() != b"":
                    pass
                return body
            body += c.read(size)
            c.line()
    n = headers.get("content-length")
    return c.read(int(n)) if n and n.strip().isdigit() else b""


def handle(sock, rec, n):
    c = Conn(sock)
    sock.settimeout(60)
    try:
        while True:
            first = c.line()
            while first == b"":
                first = c.line()
            parts = first.split()
            if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
                rec.write("BAD %d %r" % (n, first))
                return
            method, target, version = (p.decode("latin-1") for p in parts)
            rec.write("REQ %d %s %s %s" % (n, method, target, version))
            headers = {}
            while True:
                h = c.line()
                if h == b"":
                    break
                k, _, v = h.partition(b":")
                headers[k.strip().lower().decode("latin-1")] = \
                    v.strip().decode("latin-1")
            if headers.get("expect", "").lower() == "100-continue":
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            read_body(c, headers)
            path = target.split("?", 1)[0]
            if path in CANNED:
                answer, after = CANNED[path]
            else:
                answer = cl_response(b"hostile origin: %s\n" %
                                     path.encode("latin-1"))
                after = KEEP
            if isinstance(answer, bytes):
                answer = [(0, answer)]
            for pause, data in answer:
                time.sleep(pause)
                sock.sendall(data)
            if after == CLOSE or version == "HTTP/1.0":
                return
    except (EOFError, OSError, ValueError):
        return
    finally:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()


def serve(args):
    rec = Recorder(args.record)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.getsockname()[1])
    os.rename(tmp, args.port_file)
    parent = os.getppid()
    deadline = time.time() + args.lifetime
    while time.time() < deadline and os.getppid() == parent:
        try:
            s, _ = srv.accept()
        except socket.timeout:
            continue
        except OSError:
            break
        threading.Thread(target=handle, args=(s, rec, rec.next_conn()),
                         daemon=True).start()
    srv.close()


# ---- the client ----------------------------------------------------------------

def unescape(text):
    out = bytearray()
    b = text.encode("latin-1")
    i = 0
    simple = {ord("r"): b"\r", ord("n"): b"\n", ord("t"): b"\t",
              ord("\\"): b"\\"}
    while i < len(b):
        if b[i] == ord("\\") and i + 1 < len(b):
            nxt = b[i + 1]
            if nxt in simple:
                out += simple[nxt]
                i += 2
                continue
            if nxt == ord("x") and i + 4 <= len(b):
                out.append(int(b[i + 2:i + 4], 16))
                i += 4
                continue
        out.append(b[i])
        i += 1
    return bytes(out)


def escape(data):
    """The client's escapes for data (unescape's inverse)."""
    out = []
    for b in data:
        c = chr(b)
        if c == "\\":
            out.append("\\\\")
        elif c == "\r":
            out.append("\\r")
        elif c == "\n":
            out.append("\\n")
        elif 0x20 <= b < 0x7f:
            out.append(c)
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def read_answer(s, timeout, quiet):
    """(bytes, how it ended): closed, quiet or timeout."""
    got = b""
    end = time.time() + timeout
    while True:
        left = end - time.time() if not got else quiet
        if left <= 0:
            return got, "timeout"
        s.settimeout(left)
        try:
            d = s.recv(65536)
        except socket.timeout:
            return got, "quiet" if got else "timeout"
        except OSError:
            return got, "closed"
        if not d:
            return got, "closed"
        got += d


def wait_go(path, limit):
    end = time.time() + limit
    while not os.path.exists(path) and time.time() < end:
        time.sleep(0.05)


def client(args):
    reqs = [unescape(r) for r in args.request]
    try:
        s = socket.create_connection(("127.0.0.1", args.port), timeout=5)
    except OSError as e:
        print("# connect failed: %s\n# finals\n# stream no connection" % e)
        return 2
    stream = b""
    closed = False
    out = sys.stdout.buffer
    for i, req in enumerate(reqs, 1):
        if i > 1 and args.ready:
            with open(args.ready, "w") as f:
                f.write("%d\n" % (i - 1))
            if args.go:
                wait_go(args.go, args.go_timeout)
        out.write(b"--- response %d ---\n" % i)
        if closed:
            out.write(b"--- end %d: not sent ---\n" % i)
            continue
        try:
            s.sendall(req)
        except OSError:
            pass  # the proxy may answer and close before reading it all
        got, how = read_answer(s, args.timeout, args.quiet_ms / 1000.0)
        stream += got
        closed = how == "closed"
        out.write(got)
        out.write(b"\n--- end %d: %s ---\n" % (i, how.encode()))
        out.flush()
    s.close()
    for line in strict_summary(stream, closed):
        out.write(line.encode("latin-1", "replace") + b"\n")
    out.flush()
    return 0


# ---- RFC 9112 strict reading of what the client received --------------------

TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
QUOTED = rb'"(?:[^"\\\r\n]|\\[^\r\n])*"'
SIZE_LINE = re.compile(rb"([0-9A-Fa-f]+)((?:[ \t]*;[ \t]*" + TOKEN +
                       rb"(?:[ \t]*=[ \t]*(?:" + TOKEN + rb"|" + QUOTED +
                       rb"))?)*)")
FIELD_LINE = re.compile(TOKEN + rb":[ \t]*[^\r\n]*")
STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([0-9]{3}) [^\r\n]*")


class Incomplete(Exception):
    pass


class Bad(Exception):
    pass


def crlf_line(data, pos):
    """The line at pos, ended by CRLF, and the position after it; Bad on
    a bare CR or LF, Incomplete when the line is not all here."""
    i = data.find(b"\r\n", pos)
    seg = data[pos:] if i < 0 else data[pos:i]
    if b"\n" in seg or b"\r" in (seg if i >= 0 else seg[:-1]):
        raise Bad("bare CR or LF at byte %d" % pos)
    if i < 0:
        raise Incomplete()
    return seg, i + 2


def parse_one(data, pos):
    """One response from pos: (summary dict, next pos). Raises Bad, or
    Incomplete (with the summary so far once the head is complete)."""
    line, pos = crlf_line(data, pos)
    m = STATUS_LINE.fullmatch(line)
    if not m:
        raise Bad("status line %r" % line[:60])
    status = int(m.group(1))
    fields = []
    while True:
        line, pos = crlf_line(data, pos)
        if line == b"":
            break
        if not FIELD_LINE.fullmatch(line):
            raise Bad("field line %r" % line[:60])
        k, _, v = line.partition(b":")
        fields.append((k.lower(), v.strip()))
    te = [v for k, v in fields if k == b"transfer-encoding"]
    cl = [v for k, v in fields if k == b"content-length"]
    r = {"status": status, "te": b", ".join(te) or b"-",
         "cl": b",".join(cl) or b"-", "body": b"", "framing": "none"}
    if status // 100 == 1 or status in (204, 304):
        return r, pos
    try:
        return body(data, pos, r, te, cl)
    except Incomplete as e:
        raise Incomplete(r) if not e.args else e
    except Bad as e:
        raise Bad(e.args[0], r)


def body(data, pos, r, te, cl):
    if te and cl:
        raise Bad("both Transfer-Encoding and Content-Length")
    if te and b",".join(te).split(b",")[-1].strip().lower() == b"chunked":
        r["framing"] = "chunked"
        while True:
            line, pos = crlf_line(data, pos)
            m = SIZE_LINE.fullmatch(line)
            if not m:
                raise Bad("chunk size line %r" % line[:60])
            size = int(m.group(1), 16)
            if size == 0:
                break
            r["body"] += data[pos:pos + size]
            if len(data) < pos + size + 2:
                raise Incomplete(r)
            if data[pos + size:pos + size + 2] != b"\r\n":
                raise Bad("chunk data not followed by CRLF")
            pos += size + 2
        while True:
            line, pos = crlf_line(data, pos)
            if line == b"":
                return r, pos
            if not FIELD_LINE.fullmatch(line):
                raise Bad("trailer line %r" % line[:60])
    if cl and not te:
        if len(cl) != 1 or not cl[0].isdigit():
            raise Bad("Content-Length %r" % b",".join(cl))
        r["framing"] = "length"
        n = int(cl[0])
        r["body"] = data[pos:pos + n]
        if len(data) < pos + n:
            raise Incomplete(r)
        return r, pos + n
    r["framing"] = "close"
    r["body"] = data[pos:]
    raise Incomplete(r)


def fmt(r):
    return ("# response status=%d te=%s cl=%s framing=%s body=%r" %
            (r["status"], r["te"].decode("latin-1"),
             r["cl"].decode("latin-1"), r["framing"], r["body"][:200]))


def final(r):
    return r["status"] >= 200 or r["status"] == 101


def strict_summary(data, closed):
    lines, finals, pos, verdict = [], [], 0, "ok"
    while pos < len(data):
        try:
            r, pos = parse_one(data, pos)
        except Incomplete as e:
            r = e.args[0] if e.args else None
            if r:
                lines.append(fmt(r))
                if final(r):
                    finals.append(str(r["status"]))
            if r and r["framing"] == "close" and closed:
                verdict = "ok"  # framed by the close
            else:
                verdict = "cut" if closed else "incomplete"
            break
        except Bad as e:
            if len(e.args) > 1:
                lines.append(fmt(e.args[1]))
            verdict = "bad: %s" % e.args[0]
            break
        lines.append(fmt(r))
        if final(r):
            finals.append(str(r["status"]))
        if r["status"] == 101:
            break  # what follows is another protocol
    lines.append("# finals %s" % " ".join(finals))
    lines.append("# stream %s" % verdict)
    return lines


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("--port-file", required=True)
    sv.add_argument("--record")
    sv.add_argument("--lifetime", type=float, default=120.0)
    cl = sub.add_parser("client")
    cl.add_argument("--port", type=int, required=True)
    cl.add_argument("--timeout", type=float, default=5.0)
    cl.add_argument("--quiet-ms", type=int, default=300)
    cl.add_argument("--ready")
    cl.add_argument("--go")
    cl.add_argument("--go-timeout", type=float, default=10.0)
    cl.add_argument("request", nargs="+")
    bd = sub.add_parser("body")
    bd.add_argument("name", choices=sorted(BODIES))
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args)
    elif args.cmd == "body":
        print(escape(BODIES[args.name]))
    else:
        return client(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
