#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A hostile local user against the admin listener (issue 22 item 9).

  admin_flood.py hold PORT N READY STOP [PREFIX]
      Holds N idle connections (connect, send PREFIX, default "G": the
      first byte of a request, then nothing) and re-opens each one the
      server closes, at once, until the file STOP exists. Writes READY once
      N are open, and at the end prints "reopened=K" (how many times a
      held connection had to be re-opened). Bounded: at most 200000
      re-opens and 120 s, whichever comes first.

  admin_flood.py idle PORT WAIT [PREFIX]
      Opens one connection, sends PREFIX (default "G") and nothing more,
      and prints "closed" when the
      server closes it within WAIT seconds, else "open".
"""
import os
import selectors
import socket
import sys
import time


def connect(port, prefix):
    s = socket.create_connection(("127.0.0.1", port), 5)
    s.sendall(prefix)
    s.setblocking(False)
    return s


def hold(port, n, ready, stop, prefix):
    sel = selectors.DefaultSelector()
    for _ in range(n):
        sel.register(connect(port, prefix), selectors.EVENT_READ)
    with open(ready, "w") as f:
        f.write("ready\n")
    reopened = 0
    deadline = time.monotonic() + 120
    while (not os.path.exists(stop) and reopened < 200000
           and time.monotonic() < deadline):
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""
            if data:
                continue  # nothing is expected; ignored
            sel.unregister(s)
            s.close()
            try:
                sel.register(connect(port, prefix), selectors.EVENT_READ)
                reopened += 1
            except OSError:
                pass
    print("reopened=%d" % reopened)


def idle(port, wait, prefix):
    s = socket.create_connection(("127.0.0.1", port), 5)
    s.sendall(prefix)
    s.settimeout(wait)
    try:
        data = s.recv(1)
        print("closed" if data == b"" else "data")
    except ConnectionResetError:
        print("closed")
    except socket.timeout:
        print("open")


def main():
    args = sys.argv[1:]
    if args[0] == "hold" and len(args) in (5, 6):
        prefix = (args[5] if len(args) == 6 else "G").encode()
        hold(int(args[1]), int(args[2]), args[3], args[4], prefix)
    elif args[0] == "idle" and len(args) in (3, 4):
        prefix = (args[3] if len(args) == 4 else "G").encode()
        idle(int(args[1]), float(args[2]), prefix)
    else:
        sys.exit("usage: admin_flood.py hold|idle ...")


if __name__ == "__main__":
    main()
