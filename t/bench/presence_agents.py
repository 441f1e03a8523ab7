#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Many TunnelMesh agents in one process, for the presence benchmark
(t/bench/tunnel_relay.sh; issue 27): each a WebSocket session of its own
agent id and token to a tunnel server, holding still (it answers the
server's pings, opens no stream and accepts none).

    presence_agents.py --admin PORT --admin-token-file F --owner alice \\
        --prefix n1- --n 1000 --url ws://127.0.0.1:P/tunnel \\
        --ready-file F --hold SECS

The agents and their tokens are made first through the admin API (one
kept-alive HTTP connection), then the sessions are opened, at most 50
handshakes at once, each again after it ended or was refused (50 ms
doubling to 1 s, as a real agent backs off); "ready N" goes to
--ready-file once N are up at once (the server answered AGENT_METADATA). Standard library only; the frames are
modules/tunnel_common/proto/tm_proto.h's, as t/lib/tm_peer.py speaks
them (a 10-byte header: type u8, flags u8, stream u32, length u32)."""
import argparse
import asyncio
import base64
import http.client
import json
import os
import struct
import sys
import urllib.parse

HDR = struct.Struct(">BBII")
PING, PONG, METADATA, METADATA_ACK = 0x06, 0x07, 0x09, 0x0A
SUBPROTO = "tunnelmesh.v1.open-result.flow-control, tunnelmesh.v1"
CAPS = ["stream_open_result.v1", "stream_flow_control.v1",
        "stream_fair_writer.v1"]


def make_tokens(args):
    with open(args.admin_token_file) as f:
        admin = f.read().strip()
    c = http.client.HTTPConnection("127.0.0.1", args.admin, timeout=30)
    hdr = {"Authorization": "Bearer " + admin,
           "Content-Type": "application/json"}

    def post(path, body):
        c.request("POST", path, json.dumps(body), hdr)
        r = c.getresponse()
        data = r.read()
        if r.status >= 300:
            raise SystemExit("presence_agents: %s %d %s" % (path, r.status, data[:200]))
        return json.loads(data)

    out = []
    for i in range(args.n):
        name = "%s%d" % (args.prefix, i)
        post("/v1/agents", {"name": name, "owner": args.owner})
        tok = post("/v1/tokens", {"user": args.owner, "agent": name})
        out.append((name, tok["bearer"]))
    c.close()
    return out


def frame(ftype, payload):
    msg = HDR.pack(ftype, 0, 0, len(payload)) + payload
    n = len(msg)
    head = bytes([0x82]) + (bytes([0x80 | n]) if n < 126 else
                            bytes([0x80 | 126]) + struct.pack(">H", n))
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i & 3] for i, b in enumerate(msg))


def ws_control(opcode, payload):
    key = os.urandom(4)
    return (bytes([0x80 | opcode, 0x80 | len(payload)]) + key +
            bytes(b ^ key[i & 3] for i, b in enumerate(payload)))


class Refused(Exception):
    pass


async def session(args, name, bearer, sem, up, stop):
    """One session until it ends: 0 after it was up, Refused before."""
    u = urllib.parse.urlsplit(args.url)
    async with sem:
        r, w = await asyncio.open_connection(u.hostname, u.port)
        key = base64.b64encode(os.urandom(16)).decode()
        w.write(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                 "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n"
                 "Authorization: Bearer %s\r\n\r\n" %
                 (u.path, u.netloc, key, SUBPROTO, bearer)).encode())
        try:
            head = await r.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            raise Refused()
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            w.close()
            raise Refused()
        w.write(frame(METADATA, json.dumps(
            {"agent_id": name, "version": "bench", "capabilities": CAPS}).encode()))
    acked = False
    try:
        while not stop.is_set():
            b0, b1 = await r.readexactly(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", await r.readexactly(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", await r.readexactly(8))[0]
            p = await r.readexactly(n)
            op = b0 & 0x0F
            if op == 0x9:
                w.write(ws_control(0xA, p))
            elif op == 0x8:
                break
            elif op == 0x2 and len(p) >= HDR.size:
                ftype = p[0]
                if ftype == PING:
                    w.write(frame(PONG, p[HDR.size:]))
                elif ftype == METADATA_ACK and not acked:
                    acked = True
                    up.add(name)
                    if len(up) == args.n and args.ready_file:
                        with open(args.ready_file, "w") as f:
                            f.write("ready %d\n" % len(up))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        up.discard(name)
        w.close()
    if not acked:
        raise Refused()


async def agent(args, name, bearer, sem, up, stop):
    """A session, again after it ended or was refused, with the real
    agent's backoff (50 ms doubling to 1 s, as the tests' agents)."""
    delay = 0.05
    while not stop.is_set():
        try:
            await session(args, name, bearer, sem, up, stop)
            delay = 0.05
        except (Refused, OSError):
            delay = min(delay * 2, 1.0)
        await asyncio.sleep(delay)


async def main_async(args, creds):
    sem = asyncio.Semaphore(50)
    up, stop = set(), asyncio.Event()
    tasks = [asyncio.ensure_future(agent(args, n, b, sem, up, stop))
             for n, b in creds]
    await asyncio.sleep(args.hold)
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--admin", type=int, required=True)
    ap.add_argument("--admin-token-file", required=True)
    ap.add_argument("--owner", default="alice")
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--url", required=True)
    ap.add_argument("--ready-file")
    ap.add_argument("--hold", type=float, default=600)
    args = ap.parse_args()
    creds = make_tokens(args)
    asyncio.run(main_async(args, creds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
