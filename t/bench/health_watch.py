#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""t/bench/health_watch.py: times one proxy's verdict (t/bench/checker.sh).

  health_watch.py REDIS_PORT HASH PROXY T0_MS WANT TIMEOUT_S [GW_ADMIN...]

Polls, every 20 ms, the reducer's verdict in Redis (HGET HASH PROXY: 1
AVAILABLE, 2 SUSPECT, 3 UNHEALTHY) and each gateway's view
(/v1/cp/view's "health", or the proxy absent from it). WANT: unhealthy
(Redis 3; a view "unhealthy" or without the proxy), out (Redis 2 or 3; a
view not "available") or available (Redis 1; every view that holds the
proxy "available", and one does: each gateway owns a share of the pool).
Prints "redis_ms=N gw_ms=N" (ms from T0_MS, epoch ms; -1: not within
TIMEOUT_S).

  health_watch.py REDIS_PORT HASH PROXY flaky SECONDS

Prints "changes=N states=..." : the verdict's changes over SECONDS after
the first verdict seen, polled every 100 ms.
"""
import json
import socket
import sys
import time
import urllib.request


def hget(sock, key, field):
    cmd = b"*3\r\n$4\r\nHGET\r\n"
    for a in (key, field):
        a = a.encode()
        cmd += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(cmd)
    buf = b""
    while b"\r\n" not in buf:
        buf += sock.recv(4096)
    if buf.startswith(b"$-1"):
        return 0
    n = int(buf[1:buf.index(b"\r\n")])
    while len(buf) < buf.index(b"\r\n") + 2 + n + 2:
        buf += sock.recv(4096)
    start = buf.index(b"\r\n") + 2
    return int(buf[start:start + n])


def view_health(admin, proxy):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%s/v1/cp/view" % admin, timeout=2) as r:
            v = json.load(r)
    except (OSError, ValueError):
        return "error"
    for p in v.get("proxies", []):
        if p.get("proxy_id") == proxy:
            return p.get("health", "none")
    return "absent"


def now_ms():
    return int(time.time() * 1000)


def main():
    port, key, proxy = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    sock = socket.create_connection(("127.0.0.1", port))
    if sys.argv[4] == "flaky":
        end = time.monotonic() + float(sys.argv[5])
        states, last = [], 0
        while time.monotonic() < end:
            s = hget(sock, key, proxy)
            if s and s != last:
                states.append(str(s))
                last = s
            time.sleep(0.1)
        print("changes=%d states=%s" % (max(len(states) - 1, 0), ",".join(states) or "-"))
        return
    t0, want, timeout = int(sys.argv[4]), sys.argv[5], float(sys.argv[6])
    gws = sys.argv[7:]
    r_ok = {"unhealthy": (3,), "out": (2, 3), "available": (1,)}[want]
    g_ok = {"unhealthy": ("unhealthy", "absent"), "out": ("suspect", "unhealthy", "absent"),
            "available": ("available", "absent")}[want]
    redis_ms = gw_ms = -1
    end = time.monotonic() + timeout
    while time.monotonic() < end and (redis_ms < 0 or gw_ms < 0):
        if redis_ms < 0 and hget(sock, key, proxy) in r_ok:
            redis_ms = now_ms() - t0
        hs = [view_health(g, proxy) for g in gws]
        held = [h for h in hs if h != "absent"]
        if gw_ms < 0 and all(h in g_ok for h in hs) and (want != "available" or held):
            gw_ms = now_ms() - t0
        time.sleep(0.02)
    print("redis_ms=%d gw_ms=%d" % (redis_ms, gw_ms))


main()
