#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Upstream proxies that fail on purpose, for the gateway's outcome stages
(issue 13, CP-5-3..5); standard library only.

    python3 bad_upstream.py MODE --port-file F [--lifetime S]

listens on 127.0.0.1 (port written to F) and, per connection, by MODE:
  garbage        answers a SOCKS5 greeting (or anything) with bytes that
                 are not SOCKS5: a PROXY_HANDSHAKE failure
  reset_early    answers an HTTP CONNECT with 200, then resets the
                 connection (SO_LINGER 0) when the client sends its first
                 bytes, before any byte of the target's: RESPONSE_HEADERS
  reset_late     answers CONNECT with 200, then on the client's first
                 bytes sends the start of a response and resets: TUNNEL
  hold           answers CONNECT with 200 and then serves the target
                 bytes "HTTP/1.1 200 OK ... held" only after the file
                 F.release exists (for counts held while a stream is open)
  flaky          an HTTP CONNECT proxy that forwards to the target asked
                 for, except every third connection (the 3rd, 6th, ...),
                 answered like garbage: one PROXY_HANDSHAKE failure in
                 three (issue 26, CP-6-7: it must not flap)
  flaky_check    the same forwarder, but it counts per check: per (CONNECT
                 target, method of the first request in the tunnel), and
                 resets the tunnel of the third, sixth... of each, so every
                 (proxy, tier) item a checker keeps fails one check in
                 three whatever order the tiers come in (health_loop.sh)
  canned         answers every request with the same 200 page (a proxy
                 that serves a canned page: the checker's bad_echo)
  when_told      numbers the connections that send anything (N from 1:
                 "got N" in F.log) and answers the Nth only once the file
                 F.go.N exists (at most 60 s): an HTTP CONNECT with 200,
                 a SOCKS5 greeting with "no auth" ("answered N" in F.log),
                 then its request with success (issue 26: the checker's
                 loop stopped while the answer comes, checker_role.sh)
Each accepted connection is appended as a line "conn" to F.log.
"""

import argparse
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_forward import pump  # noqa: E402


def rst(c):
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def read_head(c):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 8192:
        b = c.recv(4096)
        if not b:
            return None
        data += b
    return data


COUNT = [0]
COUNT_LOCK = threading.Lock()


KEYED = {}


def keyed_fail(host, port, first):
    """Whether this tunnel is the 3rd, 6th... of its (target, method)."""
    key = (host, port, first.split(b" ", 1)[0])
    with COUNT_LOCK:
        KEYED[key] = KEYED.get(key, 0) + 1
        return KEYED[key] % 3 == 0


def forward(c, per_check=False):
    head = read_head(c)
    if head is None:
        c.close()
        return
    line = head.split(b"\r\n", 1)[0].split()
    if len(line) < 2 or line[0] != b"CONNECT":
        c.sendall(b"HTTP/1.1 405 CONNECT only\r\n\r\n")
        c.close()
        return
    host, _, port = line[1].decode().rpartition(":")
    try:
        t = socket.create_connection((host, int(port)), timeout=5)
    except (OSError, ValueError):
        c.sendall(b"HTTP/1.1 502 no target\r\n\r\n")
        c.close()
        return
    t.settimeout(None)
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    if per_check:
        first = c.recv(4096)
        if not first or keyed_fail(host, port, first):
            t.close()
            rst(c)
            return
        t.sendall(first)
    threading.Thread(target=pump, args=(t, c), daemon=True).start()
    pump(c, t)


def note(port_file, line):
    with open(port_file + ".log", "a") as f:
        f.write(line + "\n")


def when_told(c, port_file):
    first = c.recv(4096)
    if not first:  # a port probe: not numbered
        c.close()
        return
    with COUNT_LOCK:
        COUNT[0] += 1
        n = COUNT[0]
    note(port_file, "got %d" % n)
    deadline = time.time() + 60
    while not os.path.exists("%s.go.%d" % (port_file, n)) and time.time() < deadline:
        time.sleep(0.01)
    socks = first[:1] == b"\x05"
    c.sendall(b"\x05\x00" if socks
              else b"HTTP/1.1 200 Connection established\r\n\r\n")
    note(port_file, "answered %d" % n)
    if socks and c.recv(4096):
        c.sendall(b"\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x50")
    c.recv(4096)
    c.close()


def serve(c, mode, port_file):
    with open(port_file + ".log", "a") as f:
        f.write("conn\n")
    try:
        if mode == "canned":
            c.recv(4096)
            page = b"<html><body>Welcome</body></html>"
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                      b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                      % (len(page), page))
            c.close()
            return
        if mode == "when_told":
            when_told(c, port_file)
            return
        if mode == "flaky_check":
            forward(c, per_check=True)
            return
        if mode == "flaky":
            with COUNT_LOCK:
                COUNT[0] += 1
                n = COUNT[0]
            if n % 3:
                forward(c)
                return
            mode = "garbage"
        if mode == "garbage":
            c.recv(512)
            c.sendall(b"HTTP/1.0 400 not socks\r\n\r\n")
            time.sleep(0.2)
            c.close()
            return
        if read_head(c) is None:
            c.close()
            return
        c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        first = c.recv(4096)
        if mode == "reset_early" or not first:
            rst(c)
            return
        if mode == "reset_late":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
            time.sleep(0.1)
            rst(c)
            return
        if mode == "hold":
            deadline = time.time() + 60
            while not os.path.exists(port_file + ".release") and time.time() < deadline:
                time.sleep(0.05)
            body = b"held\n"
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n%s" % (len(body), body))
            time.sleep(0.1)
            c.close()
    except OSError:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["garbage", "reset_early", "reset_late", "hold",
                                     "flaky", "flaky_check", "canned",
                                     "when_told"])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--lifetime", type=float, default=300)
    a = ap.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(tmp, a.port_file)
    s.settimeout(0.5)
    end = time.time() + a.lifetime
    parent = os.getppid()
    while time.time() < end and os.getppid() == parent:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(c, a.mode, a.port_file),
                         daemon=True).start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
