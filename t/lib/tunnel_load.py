#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""SOCKS5 load shapes for the TunnelMesh end-to-end tests (standard
library only; the SOCKS5 client is t/lib/socks5_probe.py's).

  tunnel_load.py page --proxy P --target name:port --path /x --n 30 \\
        --hang name:port [--hang name:port ...]
      one CONNECT to each --hang target first, then n GETs to --target,
      all at once; prints one JSON line {"completed":K,"failed":F,
      "hang_pending":H}: H hanging CONNECTs still had no reply when the
      n GETs were all done (TM-TEST-31).

  tunnel_load.py bulk --proxy P --bulk name:port --bulk-path /big \\
        --target name:port --path /small --n 31
      starts the bulk download and waits for its first bytes, then n
      small GETs at once; prints {"small_ok":K,"small_before_bulk":B,
      "bulk_ok":0|1,"bulk_bytes":N}: B small streams finished while the
      bulk one was still running (TM-TEST-36: ordering, no clock).

  tunnel_load.py latency --proxy P --target name:port --path /x --n 31 \
        [--slow name:port] [--bulk name:port --bulk-path /big]
      (benchmarks) one CONNECT to --slow (a dial that hangs) and/or one
      bulk download first, then n GETs at once; for those n prints
      {"reply_p50_ms","reply_p95_ms","first_byte_p50_ms","first_byte_p95_ms",
      "ok":K}: the SOCKS5 reply after the CONNECT was sent (a legacy
      client replies before the agent dialled), and the response's first
      byte after the CONNECT was sent (what the browser waits for).

Every socket has a timeout; every mode ends by itself.
"""

import argparse
import concurrent.futures
import json
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import socks5_probe as sp  # noqa: E402


def hang_open(proxy, target, replied, timeout):
    try:
        with sp.connect_proxy(proxy, timeout) as s:
            sp.handshake(s)
            s.sendall(sp.request(target))
            sp.read_reply(s)
    except (OSError, EOFError):
        pass
    replied.set()


def small_get(proxy, target, path, timeout):
    try:
        status, body = sp.get_once(proxy, target, path, timeout)
        return " 200 " in status + " " and len(body) > 0
    except (OSError, EOFError):
        return False


def do_page(a):
    hangs = []
    for h in a.hang:
        ev = threading.Event()
        threading.Thread(target=hang_open, args=(a.proxy, h, ev, a.hang_timeout),
                         daemon=True).start()
        hangs.append(ev)
    completed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(a.n) as ex:
        futs = [ex.submit(small_get, a.proxy, a.target, a.path, a.timeout)
                for _ in range(a.n)]
        for f in futs:
            if f.result():
                completed += 1
            else:
                failed += 1
    pending = sum(1 for ev in hangs if not ev.is_set())
    print(json.dumps({"completed": completed, "failed": failed,
                      "hang_pending": pending}, sort_keys=True))


def do_bulk(a):
    first = threading.Event()
    done = threading.Event()
    result = {"bulk_ok": 0, "bulk_bytes": 0}

    def bulk():
        try:
            with sp.connect_proxy(a.proxy, a.timeout) as s:
                sp.handshake(s)
                s.sendall(sp.request(a.bulk))
                if sp.read_reply(s) != 0:
                    return
                s.sendall(("GET %s HTTP/1.0\r\nHost: x\r\n\r\n" % a.bulk_path).encode())
                n = 0
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    n += len(chunk)
                    if n >= 65536:
                        first.set()
                    if a.bulk_sleep_ms:  # a slow reader keeps it running
                        threading.Event().wait(a.bulk_sleep_ms / 1000.0)
                result["bulk_bytes"] = n
                result["bulk_ok"] = 1 if n >= a.bulk_min else 0
        except (OSError, EOFError):
            pass
        finally:
            first.set()
            done.set()

    threading.Thread(target=bulk, daemon=True).start()
    first.wait(a.timeout)
    before = ok = 0
    lock = threading.Lock()

    def one():
        nonlocal before, ok
        good = small_get(a.proxy, a.target, a.path, a.timeout)
        with lock:
            if good:
                ok += 1
                if not done.is_set():
                    before += 1

    with concurrent.futures.ThreadPoolExecutor(a.n) as ex:
        for f in [ex.submit(one) for _ in range(a.n)]:
            f.result()
    done.wait(a.timeout * 6)
    result.update(small_ok=ok, small_before_bulk=before)
    print(json.dumps(result, sort_keys=True))


def timed_get(proxy, target, path, timeout):
    """(reply_s, first_byte_s) from the CONNECT, or None."""
    import time
    try:
        with sp.connect_proxy(proxy, timeout) as s:
            if sp.handshake(s):
                return None
            t0 = time.monotonic()
            s.sendall(sp.request(target))
            if sp.read_reply(s) != 0:
                return None
            t1 = time.monotonic()
            s.sendall(("GET %s HTTP/1.0\r\nHost: x\r\n\r\n" % path).encode())
            if not s.recv(1):
                return None
            t2 = time.monotonic()
            while s.recv(65536):
                pass
            return (t1 - t0, t2 - t0)
    except (OSError, EOFError):
        return None


def pct(values, p):
    v = sorted(values)
    if not v:
        return -1
    i = max(0, min(len(v) - 1, int((p * len(v) + 99) // 100) - 1))
    return round(v[i] * 1000, 1)


def do_latency(a):
    if a.slow:
        threading.Thread(target=hang_open, args=(a.proxy, a.slow, threading.Event(), 30),
                         daemon=True).start()
    if a.bulk:
        started = threading.Event()

        def bulk():
            try:
                with sp.connect_proxy(a.proxy, a.timeout) as s:
                    sp.handshake(s)
                    s.sendall(sp.request(a.bulk))
                    if sp.read_reply(s) != 0:
                        return
                    s.sendall(("GET %s HTTP/1.0\r\nHost: x\r\n\r\n" % a.bulk_path).encode())
                    n = 0
                    while True:
                        c = s.recv(65536)
                        if not c:
                            break
                        n += len(c)
                        if n > (1 << 20):
                            started.set()
            except (OSError, EOFError):
                pass
            started.set()
        threading.Thread(target=bulk, daemon=True).start()
        started.wait(a.timeout)
    else:
        threading.Event().wait(0.05)  # the slow one asks first
    with concurrent.futures.ThreadPoolExecutor(a.n) as ex:
        res = [f.result() for f in [ex.submit(timed_get, a.proxy, a.target, a.path, a.timeout)
                                    for _ in range(a.n)]]
    good = [r for r in res if r]
    print(json.dumps({"ok": len(good),
                      "reply_p50_ms": pct([r[0] for r in good], 50),
                      "reply_p95_ms": pct([r[0] for r in good], 95),
                      "first_byte_p50_ms": pct([r[1] for r in good], 50),
                      "first_byte_p95_ms": pct([r[1] for r in good], 95)},
                     sort_keys=True))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("page")
    p.add_argument("--proxy", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--path", default="/")
    p.add_argument("--n", type=int, default=30)
    p.add_argument("--hang", action="append", default=[])
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument("--hang-timeout", type=float, default=30.0)
    b = sub.add_parser("bulk")
    b.add_argument("--proxy", required=True)
    b.add_argument("--bulk", required=True)
    b.add_argument("--bulk-path", default="/big")
    b.add_argument("--bulk-min", type=int, default=1)
    b.add_argument("--bulk-sleep-ms", type=float, default=0)
    b.add_argument("--target", required=True)
    b.add_argument("--path", default="/")
    b.add_argument("--n", type=int, default=31)
    b.add_argument("--timeout", type=float, default=20.0)
    lt = sub.add_parser("latency")
    lt.add_argument("--proxy", required=True)
    lt.add_argument("--target", required=True)
    lt.add_argument("--path", default="/")
    lt.add_argument("--n", type=int, default=31)
    lt.add_argument("--slow")
    lt.add_argument("--bulk")
    lt.add_argument("--bulk-path", default="/big")
    lt.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args()
    socket.setdefaulttimeout(a.timeout)
    {"page": do_page, "bulk": do_bulk, "latency": do_latency}[a.mode](a)


if __name__ == "__main__":
    main()
