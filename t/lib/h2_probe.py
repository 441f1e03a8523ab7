#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""HTTP/2 on the wire for the control plane's keepalive test (issue 23
item 12, CP-1-13), standard library only, plaintext (tls.mode = disabled
on loopback).

h2_probe.py relay --listen-port-file F --target HOST:PORT --events E --seconds S
    A TCP relay that reads the HTTP/2 frames going through it, both ways,
    and writes one line per PING (not an ACK) and GOAWAY to E:
        <monotonic seconds> ping c2s|s2c
        <monotonic seconds> goaway c2s|s2c <error code> <debug data>
    It serves connections one after another's end is not needed: each
    accepted connection is relayed on its own thread. Ends after S s.

h2_probe.py pinger --target HOST:PORT --path P --pings N --every MS
    A client that opens one stream on P (HEADERS, no END_STREAM: a call
    left open, as a server stream waiting for its request), then sends N
    PINGs MS ms apart, answering the server's PINGs and SETTINGS; prints
    "goaway <code> <debug>" when the server sends GOAWAY (and stops), or
    "no-goaway <acks>" after the last PING and one more MS. Every wait is
    bounded.
"""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_forward import pump as forward  # noqa: E402 (the relay's loop)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
T_HEADERS, T_SETTINGS, T_PING, T_GOAWAY = 0x1, 0x4, 0x6, 0x7
F_ACK, F_END_HEADERS = 0x1, 0x4


def frame(ftype, flags, sid, payload):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, sid) + payload


class Frames:
    """Splits a byte stream into frames (after an optional preface)."""

    def __init__(self, preface):
        self.buf = b""
        self.skip = len(PREFACE) if preface else 0

    def feed(self, data):
        self.buf += data
        if self.skip:
            take = min(self.skip, len(self.buf))
            self.buf = self.buf[take:]
            self.skip -= take
        while len(self.buf) >= 9:
            hi, lo, ftype, flags, sid = struct.unpack(">BHBBI", self.buf[:9])
            n = (hi << 16) | lo
            if len(self.buf) < 9 + n:
                return
            payload = self.buf[9:9 + n]
            self.buf = self.buf[9 + n:]
            yield ftype, flags, sid & 0x7FFFFFFF, payload


def goaway_text(payload):
    code = struct.unpack(">I", payload[4:8])[0] if len(payload) >= 8 else -1
    return code, payload[8:].decode("latin-1", "replace").replace(" ", "_")


# ---- relay ---------------------------------------------------------------------

def relay(args):
    host, port = args["target"].rsplit(":", 1)
    lock = threading.Lock()
    out = open(args["events"], "a", buffering=1)

    def log(line):
        with lock:
            out.write("%.3f %s\n" % (time.monotonic(), line))

    def pump(src, dst, direction, preface):
        fr = Frames(preface)

        def tap(data):
            for ftype, flags, _, payload in fr.feed(data):
                if ftype == T_PING and not flags & F_ACK:
                    log("ping " + direction)
                elif ftype == T_GOAWAY:
                    code, dbg = goaway_text(payload)
                    log("goaway %s %d %s" % (direction, code, dbg or "-"))
        forward(src, dst, tap)

    def serve(c):
        try:
            u = socket.create_connection((host, int(port)), 5)
        except OSError:
            c.close()
            return
        threading.Thread(target=pump, args=(c, u, "c2s", True), daemon=True).start()
        pump(u, c, "s2c", False)

    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    ls.settimeout(0.5)
    with open(args["listen-port-file"] + ".tmp", "w") as f:
        f.write(str(ls.getsockname()[1]))
    os.rename(args["listen-port-file"] + ".tmp", args["listen-port-file"])
    end = time.monotonic() + float(args["seconds"])
    while time.monotonic() < end:
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(c,), daemon=True).start()
    return 0


# ---- pinger --------------------------------------------------------------------

def literal(name, value):
    """HPACK: a literal header field without indexing, new name, no
    Huffman (RFC 7541 section 6.2.2); short strings only."""
    name, value = name.encode(), value.encode()
    assert len(name) < 127 and len(value) < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def pinger(args):
    host, port = args["target"].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), 5)
    hdrs = b"".join(literal(k, v) for k, v in [
        (":method", "POST"), (":scheme", "http"), (":path", args["path"]),
        (":authority", args["target"]), ("content-type", "application/grpc"),
        ("te", "trailers")])
    s.sendall(PREFACE + frame(T_SETTINGS, 0, 0, b"") +
              frame(T_HEADERS, F_END_HEADERS, 1, hdrs))
    fr = Frames(False)
    acks = 0
    every = int(args["every"]) / 1000.0
    pings = int(args["pings"])
    sent = 0
    next_ping = time.monotonic() + every
    end = next_ping + every * pings + every
    while time.monotonic() < end:
        now = time.monotonic()
        if sent < pings and now >= next_ping:
            s.sendall(frame(T_PING, 0, 0, struct.pack(">Q", sent + 1)))
            sent += 1
            next_ping += every
        wait = max(0.01, min(next_ping, end) - time.monotonic())
        s.settimeout(wait)
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        if not data:
            print("closed %d" % acks)
            return 0
        for ftype, flags, _, payload in fr.feed(data):
            if ftype == T_SETTINGS and not flags & F_ACK:
                s.sendall(frame(T_SETTINGS, F_ACK, 0, b""))
            elif ftype == T_PING and flags & F_ACK:
                acks += 1
            elif ftype == T_PING:
                s.sendall(frame(T_PING, F_ACK, 0, payload))
            elif ftype == T_GOAWAY:
                code, dbg = goaway_text(payload)
                print("goaway %d %s" % (code, dbg or "-"))
                return 0
    print("no-goaway %d" % acks)
    return 0


def main(argv):
    mode, rest = argv[1], argv[2:]
    args = {rest[i].lstrip("-"): rest[i + 1] for i in range(0, len(rest), 2)}
    return relay(args) if mode == "relay" else pinger(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
