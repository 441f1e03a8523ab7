#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A target and a raw client for t/integration/frontend_lease.sh, which
checks how the frontends end the leases of the connector they open
through (standard library only). Every wait is bounded.

    python3 lease_target.py serve --port-file F [--lifetime S]

listens on 127.0.0.1 and answers HTTP/1.1 requests by their path, keeping
the connection for the next request unless said otherwise:
  /hello   200 with Content-Length, keep-alive
  /reset   200 announcing 100000 bytes, 1000 of them, a pause, then a
           TCP reset (SO_LINGER 0): a target failing mid-response
  /cut     the same, but closing cleanly (FIN) after the 1000 bytes: a
           response cut short
  /silent  no answer at all; the connection is held until its peer
           closes it (or --lifetime)
  /drip    200 announcing 100 MB, then 1 KiB every 20 ms until the peer
           goes away (or --lifetime)
The server exits after --lifetime seconds or when its parent goes away.

    python3 lease_target.py client --via socks5|connect|forward
        --proxy P --port T --path PATH [--read N] [--hold S] [--rst]

connects to the proxy on 127.0.0.1:P, asks it for 127.0.0.1:T (a SOCKS5
CONNECT, an HTTP CONNECT, or an absolute-form GET), sends GET PATH, reads
until N bytes of the answer came (or EOF, or 10 s), then with --hold
keeps the connection S seconds more (reading, to see the proxy close
it; with --until FILE only until FILE exists), and closes it: with --rst
abortively (a reset). It prints "got N" and "eof" when the proxy closed
the connection first; with --until also "open" once the stream is up
(flushed, for a test that waits on it).
"""

import argparse
import os
import socket
import struct
import sys
import threading
import time

HELLO = b"hello through a lease\n"


def read_head(conn, buf):
    """Reads up to the end of a request head: (head, rest) or (None, b"")."""
    while b"\r\n\r\n" not in buf:
        if len(buf) > 65536:
            return None, b""
        try:
            chunk = conn.recv(4096)
        except OSError:
            return None, b""
        if not chunk:
            return None, b""
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest


def hold_until_closed(conn, deadline):
    conn.settimeout(0.2)
    while time.time() < deadline:
        try:
            if not conn.recv(4096):
                return
        except socket.timeout:
            continue
        except OSError:
            return


def partial(conn, reset):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" +
                 b"x" * 1000)
    time.sleep(0.3)  # the bytes reach the client before the end
    if reset:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack("ii", 1, 0))
    conn.close()


def drip(conn, deadline):
    try:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n")
        while time.time() < deadline:
            conn.sendall(b"d" * 1024)
            time.sleep(0.02)
    except OSError:
        pass


def handle(conn, deadline):
    buf = b""
    try:
        while time.time() < deadline:
            head, buf = read_head(conn, buf)
            if head is None:
                return
            line = head.split(b"\r\n", 1)[0].split(b" ")
            path = line[1] if len(line) > 1 else b"/"
            if path.startswith(b"http://"):
                path = b"/" + path.split(b"/", 3)[-1]
            if path == b"/hello":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                             % len(HELLO) + HELLO)
            elif path in (b"/reset", b"/cut"):
                partial(conn, path == b"/reset")
                return
            elif path == b"/silent":
                hold_until_closed(conn, deadline)
                return
            elif path == b"/drip":
                drip(conn, deadline)
                return
            else:
                conn.sendall(b"HTTP/1.1 404 Not Found\r\n"
                             b"Content-Length: 0\r\n\r\n")
    except OSError:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def serve(args):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    ls.settimeout(0.2)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(tmp, args.port_file)
    parent = os.getppid()
    deadline = time.time() + args.lifetime
    while time.time() < deadline and os.getppid() == parent:
        try:
            conn, _ = ls.accept()
        except socket.timeout:
            continue
        threading.Thread(target=handle, args=(conn, deadline),
                         daemon=True).start()


def recv_exact(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            raise OSError("closed")
        got += chunk
    return got


def open_via(args):
    s = socket.create_connection(("127.0.0.1", args.proxy), timeout=10)
    target = "127.0.0.1:%d" % args.port
    if args.via == "socks5":
        s.sendall(b"\x05\x01\x00")
        if recv_exact(s, 2) != b"\x05\x00":
            raise OSError("socks5 method refused")
        s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") +
                  struct.pack(">H", args.port))
        rep = recv_exact(s, 10)
        if rep[1] != 0:
            raise OSError("socks5 reply %d" % rep[1])
        s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                  % (args.path.encode(), target.encode()))
    elif args.via == "connect":
        s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                  % (target.encode(), target.encode()))
        head, _ = read_head(s, b"")
        if not head or b" 200 " not in head.split(b"\r\n")[0] + b" ":
            raise OSError("CONNECT refused")
        s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                  % (args.path.encode(), target.encode()))
    else:
        s.sendall(b"GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n"
                  % (target.encode(), args.path.encode(), target.encode()))
    return s


def client(args):
    try:
        s = open_via(args)
    except OSError as e:
        print("failed: %s" % e)
        return 1
    got, eof = 0, False
    if args.until:
        print("open", flush=True)
    s.settimeout(0.2)
    deadline = time.time() + 10
    while got < args.read and time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            eof = True
            break
        if not chunk:
            eof = True
            break
        got += len(chunk)
    hold_end = time.time() + args.hold
    while not eof and time.time() < hold_end:
        if args.until and os.path.exists(args.until):
            break
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            eof = True
            break
        if not chunk:
            eof = True
            break
        got += len(chunk)
    if args.rst:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
    s.close()
    print("got %d" % got)
    if eof:
        print("eof")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("--port-file", required=True)
    sv.add_argument("--lifetime", type=float, default=120.0)
    cl = sub.add_parser("client")
    cl.add_argument("--via", choices=("socks5", "connect", "forward"),
                    required=True)
    cl.add_argument("--proxy", type=int, required=True)
    cl.add_argument("--port", type=int, required=True)
    cl.add_argument("--path", default="/hello")
    cl.add_argument("--read", type=int, default=1)
    cl.add_argument("--hold", type=float, default=0.0)
    cl.add_argument("--rst", action="store_true")
    cl.add_argument("--until", default="")
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args)
        return 0
    return client(args)


if __name__ == "__main__":
    sys.exit(main())
