#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A TLS terminator for tests (standard library only): accepts TLS on
127.0.0.1 with --cert/--key and relays each connection's plaintext to
127.0.0.1:--to (a plain peer such as t/lib/tm_peer.py), so a test can
speak wss to a peer that only speaks ws.

    tls_forward.py --cert C --key K --to PORT --port-file F [--lifetime S]

Writes its port to F; exits after --lifetime seconds or when its parent
goes away. A handshake that fails (an unknown CA at the client) is
counted in the file F.fail, one line per failure."""

import argparse
import os
import socket
import ssl
import threading
import time


def pump(a, b, tap=None):
    """a's bytes to b until either end closes; tap(bytes) sees each read
    first (t/lib/h2_probe.py reads the frames going through)."""
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            if tap:
                tap(d)
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--to", type=int, required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--lifetime", type=float, default=120)
    args = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(tmp, args.port_file)
    parent = os.getppid()
    end = time.monotonic() + args.lifetime

    def guard():
        while time.monotonic() < end and os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=guard, daemon=True).start()

    def serve(c):
        c.settimeout(10)
        try:
            t = ctx.wrap_socket(c, server_side=True)
        except (ssl.SSLError, OSError):
            with open(args.port_file + ".fail", "a") as f:
                f.write("handshake failed\n")
            c.close()
            return
        t.settimeout(None)
        try:
            u = socket.create_connection(("127.0.0.1", args.to), 5)
        except OSError:
            t.close()
            return
        threading.Thread(target=pump, args=(t, u), daemon=True).start()
        pump(u, t)

    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
