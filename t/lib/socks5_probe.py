#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A raw SOCKS5 client for proxyhost's tests (standard library only).

Every socket operation has a timeout, and every mode ends by itself.

  socks5_probe.py reply --proxy 127.0.0.1:1080 --target name:port
        [--atyp domain|ipv4|ipv6|N] [--cmd N] [--auth user:pass]
      prints the REP byte of the reply as 0xNN, or "method-0xNN" when the
      method was refused, "auth-refused", "closed" or "timeout".

  socks5_probe.py get --proxy P --target name:port --path /x
      one CONNECT then an HTTP/1.0 GET; prints the status line and the
      body length.

  socks5_probe.py concurrent --proxy P --target name:port --path /x
        --hang name:port --n 32
      n-1 GETs through the proxy to --target and one CONNECT to --hang,
      all at once; prints "completed=K hang_pending=0|1" where
      hang_pending=1 means the hanging CONNECT had no reply yet when the
      others were all done.

  socks5_probe.py malformed --proxy P --target name:port --path /x
      a good client starts its handshake; then garbage, a truncated
      greeting, oversized lengths and a wrong version arrive on other
      connections; each must be closed without a success reply; then
      the good client finishes its GET. Prints one "name=ok|bad" line
      per case.

  socks5_probe.py hold --proxy P --target name:port --seconds S
      sends a CONNECT and keeps the connection open (no reply expected)
      for S seconds, or until killed.

  socks5_probe.py burst --proxy P --n 1000 --concurrency 50
      runs its own echo target on 127.0.0.1, then n CONNECTs through the
      proxy with at most `concurrency` at once, each echoing 1 KiB; prints
      "done=K failed=F".

  socks5_probe.py httpd --dir D --port-file F --seconds S
      a threaded HTTP file server on 127.0.0.1 with a deep accept queue
      (python -m http.server listens with a backlog of 5, too few for 32
      connects at once); writes its port to F.

  socks5_probe.py blackhole --port-file F --seconds S
      a listening socket whose accept queue is full, so a connect to it
      never completes (loopback only); writes its port to F.
"""

import argparse
import concurrent.futures
import ipaddress
import os
import socket
import struct
import sys
import threading
import time

TIMEOUT = 5.0


def hostport(text):
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError("closed")
        data += chunk
    return data


def address(host, atyp):
    if atyp == "ipv4":
        return b"\x01" + ipaddress.IPv4Address(host).packed
    if atyp == "ipv6":
        return b"\x04" + ipaddress.IPv6Address(host).packed
    if atyp == "domain":
        name = host.encode()
        return b"\x03" + bytes([len(name)]) + name
    return bytes([int(atyp, 0)]) + b"\x01\x02\x03\x04"


def request(target, atyp="domain", cmd=1):
    host, port = hostport(target)
    return b"\x05" + bytes([cmd, 0]) + address(host, atyp) + struct.pack(
        "!H", port)


def read_reply(s):
    """The REP byte, after reading the whole reply."""
    head = recv_exact(s, 4)
    atyp = head[3]
    if atyp == 1:
        recv_exact(s, 4 + 2)
    elif atyp == 4:
        recv_exact(s, 16 + 2)
    elif atyp == 3:
        recv_exact(s, recv_exact(s, 1)[0] + 2)
    return head[1]


def handshake(s, auth=None):
    """Greeting (and RFC 1929); returns None or a failure text."""
    if auth:
        s.sendall(b"\x05\x01\x02")
    else:
        s.sendall(b"\x05\x01\x00")
    method = recv_exact(s, 2)
    if method[1] == 0xFF or method[1] not in (0, 2):
        return "method-0x%02x" % method[1]
    if method[1] == 2:
        user, _, password = (auth or ":").partition(":")
        u, p = user.encode(), password.encode()
        s.sendall(b"\x01" + bytes([len(u)]) + u + bytes([len(p)]) + p)
        status = recv_exact(s, 2)
        if status[1] != 0:
            return "auth-refused"
    return None


def connect_proxy(proxy, timeout=TIMEOUT):
    return socket.create_connection(hostport(proxy), timeout=timeout)


def do_reply(a):
    try:
        with connect_proxy(a.proxy, a.timeout) as s:
            failed = handshake(s, a.auth)
            if failed:
                return failed
            s.sendall(request(a.target, a.atyp, a.cmd))
            return "0x%02x" % read_reply(s)
    except socket.timeout:
        return "timeout"
    except (EOFError, ConnectionError):
        return "closed"


def http_get(s, path, host):
    s.sendall(("GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" % (path, host)).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(errors="replace"), body


def get_once(proxy, target, path, timeout=TIMEOUT):
    with connect_proxy(proxy, timeout) as s:
        failed = handshake(s)
        if failed:
            return failed, b""
        s.sendall(request(target))
        rep = read_reply(s)
        if rep != 0:
            return "reply-0x%02x" % rep, b""
        return http_get(s, path, target)


def do_get(a):
    try:
        status, body = get_once(a.proxy, a.target, a.path)
        return "%s len=%d" % (status, len(body))
    except (OSError, EOFError) as e:
        return "error %s" % type(e).__name__


def do_concurrent(a):
    hang_done = threading.Event()

    def hang():
        try:
            with connect_proxy(a.proxy, 30) as s:
                handshake(s)
                s.sendall(request(a.hang))
                read_reply(s)
        except (OSError, EOFError):
            pass
        hang_done.set()

    t = threading.Thread(target=hang, daemon=True)
    t.start()
    time.sleep(0.05)  # the hanging one asks first
    completed = 0
    with concurrent.futures.ThreadPoolExecutor(a.n - 1) as ex:
        futs = [ex.submit(get_once, a.proxy, a.target, a.path)
                for _ in range(a.n - 1)]
        for f in futs:
            try:
                status, body = f.result()
                if " 200 " in status + " " and len(body) > 0:
                    completed += 1
            except (OSError, EOFError):
                pass
    pending = 0 if hang_done.is_set() else 1
    return "completed=%d hang_pending=%d" % (completed, pending)


def closed_without_success(s, timeout):
    """True when the proxy closes (maybe after a non-success answer)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        return False
    except ConnectionError:
        return True
    # A SOCKS5 success would be 05 00 after the method bytes.
    return not (len(data) >= 4 and data[2:4] == b"\x05\x00")


def do_malformed(a):
    lines = []
    good = connect_proxy(a.proxy)
    good.sendall(b"\x05\x01\x00")
    recv_exact(good, 2)
    cases = [
        ("garbage", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 3),
        ("wrong_version", b"\x04\x01\x00\x50\x7f\x00\x00\x01\x00", 3),
        ("zero_methods", b"\x05\x00", 3),
        ("truncated_greeting", b"\x05\x05\x00", 15),
        ("oversized_name", b"\x05\x01\x00\x05\x01\x00\x03\xff" + b"a" * 40,
         15),
        ("empty_name", b"\x05\x01\x00\x05\x01\x00\x03\x00\x00\x50", 3),
        ("bad_request_version", b"\x05\x01\x00\x04\x01\x00\x01", 3),
        ("random", b"\x06" + os.urandom(700), 15),
    ]
    socks = []
    for name, data, wait in cases:
        s = connect_proxy(a.proxy)
        try:
            s.sendall(data)
        except OSError:
            pass
        socks.append((name, s, wait))
    # The good client finishes while the hostile ones are still open.
    try:
        good.sendall(request(a.target))
        rep = read_reply(good)
        status, body = http_get(good, a.path, a.target) if rep == 0 else (
            "reply-0x%02x" % rep, b"")
        good_ok = " 200 " in status + " " and len(body) > 0
    except (OSError, EOFError):
        good_ok = False
    good.close()
    for name, s, wait in socks:
        try:
            good_close = closed_without_success(s, wait)
        except OSError:
            good_close = True
        lines.append("%s=%s" % (name, "ok" if good_close else "bad"))
        s.close()
    lines.append("good_client=%s" % ("ok" if good_ok else "bad"))
    return "\n".join(lines)


def do_hold(a):
    s = connect_proxy(a.proxy)
    handshake(s)
    s.sendall(request(a.target))
    print("sent", flush=True)
    s.settimeout(a.seconds)
    try:
        s.recv(64)
    except OSError:
        pass
    s.close()
    return "held"


def echo_server(stop):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(512)
    ls.settimeout(0.2)

    def serve(c):
        c.settimeout(TIMEOUT)
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                c.sendall(d)
        except OSError:
            pass
        c.close()

    def loop():
        while not stop.is_set():
            try:
                c, _ = ls.accept()
            except socket.timeout:
                continue
            threading.Thread(target=serve, args=(c,), daemon=True).start()
        ls.close()

    threading.Thread(target=loop, daemon=True).start()
    return ls.getsockname()[1]


def echo_once(proxy, port):
    payload = os.urandom(1024)
    with connect_proxy(proxy) as s:
        if handshake(s):
            return False
        s.sendall(request("127.0.0.1:%d" % port, "ipv4"))
        if read_reply(s) != 0:
            return False
        s.sendall(payload)
        got = recv_exact(s, len(payload))
        s.shutdown(socket.SHUT_WR)
        return got == payload and s.recv(1) == b""


def do_burst(a):
    stop = threading.Event()
    port = echo_server(stop)
    done = failed = 0
    with concurrent.futures.ThreadPoolExecutor(a.concurrency) as ex:
        for f in [ex.submit(echo_once, a.proxy, port) for _ in range(a.n)]:
            try:
                if f.result():
                    done += 1
                else:
                    failed += 1
            except (OSError, EOFError):
                failed += 1
    stop.set()
    return "done=%d failed=%d" % (done, failed)


def do_httpd(a):
    import functools
    import http.server

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 512  # many connects at once (default: 5)
        daemon_threads = True

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=a.dir)
    srv = Server(("127.0.0.1", 0), handler)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    srv.timeout = 0.5
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        srv.handle_request()
    return "httpd done"


def do_blackhole(a):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    port = ls.getsockname()[1]
    fillers = []
    # Fill the accept queue; later SYNs are dropped, connects hang.
    for _ in range(4):
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(c)
        time.sleep(0.05)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, a.port_file)
    time.sleep(a.seconds)
    return "blackhole done"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["reply", "get", "concurrent",
                                     "malformed", "hold", "burst",
                                     "blackhole", "httpd"])
    ap.add_argument("--proxy")
    ap.add_argument("--target")
    ap.add_argument("--path", default="/")
    ap.add_argument("--hang")
    ap.add_argument("--atyp", default="domain")
    ap.add_argument("--cmd", type=int, default=1)
    ap.add_argument("--auth")
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--timeout", type=float, default=TIMEOUT)
    ap.add_argument("--port-file")
    ap.add_argument("--dir", default=".")
    a = ap.parse_args()
    out = {"reply": do_reply, "get": do_get, "concurrent": do_concurrent,
           "malformed": do_malformed, "hold": do_hold, "burst": do_burst,
           "blackhole": do_blackhole, "httpd": do_httpd}[a.mode](a)
    print(out, flush=True)


if __name__ == "__main__":
    sys.exit(main())
