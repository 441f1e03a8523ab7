#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A tiny UDP DNS server for tests (standard library only).

    python3 dnsd.py --port 0 --port-file F --zone ok.test=127.0.0.1,::1 ...

Answers, for a question of type A or AAAA (class IN):
  - a name given with --zone: its IPv4 (A) or IPv6 (AAAA) addresses; a name
    without addresses of the asked type gets an empty NOERROR answer;
  - a name under refused.test: REFUSED;
  - a name under servfail.test: SERVFAIL;
  - a name under hang.test: nothing at all (the query hangs);
  - a name under slow.test: as above (zone or NXDOMAIN), but only after
    --slow-ms milliseconds;
  - a name under once.test: 127.0.0.1 (A; AAAA empty) with a TTL of an
    hour to the first question of each type, NXDOMAIN to every later one:
    an answer that changed, which a resolver with a cache would not see;
  - any other name: NXDOMAIN.
Names compare case-insensitively, a trailing dot ignored. Binds 127.0.0.1
only. With --port 0 the kernel picks the port; --port-file receives it
(written atomically once the socket is bound). The server exits by itself
after --lifetime seconds, or when the process that started it goes away,
so that no test can leave it running; SIGTERM also stops it.
"""

import argparse
import ipaddress
import os
import select
import signal
import socket
import struct
import sys
import time

QTYPE_A = 1
QTYPE_AAAA = 28
RCODE_NOERROR = 0
RCODE_FORMERR = 1
RCODE_SERVFAIL = 2
RCODE_NXDOMAIN = 3
RCODE_REFUSED = 5
TTL = 5
ONCE_TTL = 3600
ONCE_SEEN = set()  # (name, qtype) already answered under once.test


def under(name, domain):
    return name == domain or name.endswith("." + domain)


def parse_zone(items):
    zone = {}
    for item in items:
        name, sep, addrs = item.partition("=")
        if not sep or not name:
            raise SystemExit("dnsd: --zone wants name=ip[,ip...]: " + item)
        v4, v6 = [], []
        for text in filter(None, addrs.split(",")):
            ip = ipaddress.ip_address(text)
            (v4 if ip.version == 4 else v6).append(ip.packed)
        zone[name.lower().rstrip(".")] = (v4, v6)
    return zone


def read_question(msg):
    """Returns (name, qtype, end offset of the question) or None."""
    pos, labels = 12, []
    while True:
        if pos >= len(msg):
            return None
        n = msg[pos]
        pos += 1
        if n == 0:
            break
        if n > 63 or pos + n > len(msg):
            return None  # no compression in questions, labels <= 63
        labels.append(msg[pos:pos + n].decode("ascii", "replace"))
        pos += n
    if pos + 4 > len(msg):
        return None
    qtype, _qclass = struct.unpack("!HH", msg[pos:pos + 4])
    return ".".join(labels).lower(), qtype, pos + 4


def answer(msg, zone):
    """The reply for one query, or None to stay silent."""
    if len(msg) < 12:
        return None
    qid, flags, qdcount = struct.unpack("!HHH", msg[:6])
    if flags & 0x8000:
        return None  # a response, not a query
    rd = flags & 0x0100
    q = read_question(msg) if qdcount == 1 else None
    if q is None:
        return struct.pack("!HHHHHH", qid, 0x8000 | rd | RCODE_FORMERR,
                           0, 0, 0, 0)
    name, qtype, end = q
    question = msg[12:end]
    records = []
    if under(name, "hang.test"):
        return None
    if under(name, "refused.test"):
        rcode = RCODE_REFUSED
    elif under(name, "servfail.test"):
        rcode = RCODE_SERVFAIL
    elif under(name, "once.test") and (name, qtype) not in ONCE_SEEN:
        ONCE_SEEN.add((name, qtype))
        rcode = RCODE_NOERROR
        if qtype == QTYPE_A:
            records = [(QTYPE_A, ipaddress.ip_address("127.0.0.1").packed)]
    elif name in zone:
        rcode = RCODE_NOERROR
        v4, v6 = zone[name]
        if qtype == QTYPE_A:
            records = [(QTYPE_A, a) for a in v4]
        elif qtype == QTYPE_AAAA:
            records = [(QTYPE_AAAA, a) for a in v6]
    else:
        rcode = RCODE_NXDOMAIN
    # QR, AA, RD copied, RA.
    out = struct.pack("!HHHHHH", qid, 0x8000 | 0x0400 | rd | 0x0080 | rcode,
                      1, len(records), 0, 0) + question
    for rtype, data in records:
        # A pointer to the question's name (offset 12).
        ttl = ONCE_TTL if under(name, "once.test") else TTL
        out += struct.pack("!HHHIH", 0xC00C, rtype, 1, ttl, len(data)) + data
    return out


def write_port_file(path, port):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, path)


def serve(sock, zone, slow_ms, deadline):
    delayed = []  # (due, peer, reply), for names under slow.test
    parent = os.getppid()
    while True:
        now = time.monotonic()
        if now >= deadline or os.getppid() != parent:
            return
        for item in [d for d in delayed if d[0] <= now]:
            delayed.remove(item)
            sock.sendto(item[2], item[1])
        wait = min(deadline - now, 0.5)  # also how often the parent is checked
        if delayed:
            wait = min(wait, max(0.0, min(d[0] for d in delayed) - now))
        readable, _, _ = select.select([sock], [], [], wait)
        if not readable:
            continue
        try:
            msg, peer = sock.recvfrom(4096)
        except OSError:
            continue
        reply = answer(msg, zone)
        if reply is None:
            continue
        q = read_question(msg)
        if q and under(q[0], "slow.test"):
            delayed.append((time.monotonic() + slow_ms / 1000.0, peer, reply))
        else:
            sock.sendto(reply, peer)


def main():
    ap = argparse.ArgumentParser(description="test DNS server")
    ap.add_argument("--addr", default="127.0.0.1",
                    help="the IPv4 address to answer on (guides.sh: 10.20.0.2 "
                    "in its own network namespace)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--zone", action="append", default=[],
                    help="name=ip[,ip...] (IPv4 and IPv6 mixed)")
    ap.add_argument("--slow-ms", type=int, default=300)
    ap.add_argument("--lifetime", type=float, default=120.0)
    args = ap.parse_args()
    if not 0 < args.lifetime <= 3600:
        raise SystemExit("dnsd: --lifetime must be in (0, 3600]")
    zone = parse_zone(args.zone)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((args.addr, args.port))
    if args.port_file:
        write_port_file(args.port_file, sock.getsockname()[1])
    serve(sock, zone, args.slow_ms, time.monotonic() + args.lifetime)


if __name__ == "__main__":
    main()
