#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A service manager's notify socket for the tests: binds an AF_UNIX
datagram socket (a path, or @name for the abstract namespace), writes
"ready" to --ready-file once bound, then appends every datagram received
to --out, one per line with its newlines as '|', until --lifetime ends."""
import argparse
import socket
import time

ap = argparse.ArgumentParser()
ap.add_argument("--socket", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--ready-file", required=True)
ap.add_argument("--lifetime", type=float, default=60)
a = ap.parse_args()

s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
addr = "\0" + a.socket[1:] if a.socket.startswith("@") else a.socket
s.bind(addr)
with open(a.ready_file, "w") as f:
    f.write("ready\n")
end = time.monotonic() + a.lifetime
while time.monotonic() < end:
    s.settimeout(max(0.05, end - time.monotonic()))
    try:
        data = s.recv(4096)
    except socket.timeout:
        break
    with open(a.out, "a") as f:
        f.write(data.decode("utf-8", "replace").replace("\n", "|") + "\n")
