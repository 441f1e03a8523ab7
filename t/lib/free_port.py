#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""free_port.py LIST OWNER: print a loopback TCP port for a test server.

A port taken with bind(0) comes from the kernel's ephemeral range, the
same range every outgoing connection's local port comes from: between
the pick and the server's bind, a curl or a Redis client of a test
running in parallel can take it ("Address already in use", seen in CI).
So the port is picked below that range, where no connect() lands, and
reserved across the tests of the machine by a file named after it in
$TMPDIR/proxyhost-ports (created exclusively, holding OWNER's pid; a
file whose owner is dead is taken over). The port is appended to LIST,
from which testlib.sh's cleanup removes the reservations. A port this
test reserved before is never handed out again.
"""
import os
import random
import socket
import sys


def ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def candidate_range():
    # 10000-19999: below the benches' port bases (t/bench: 21000 and up)
    # and below Linux's default ephemeral range (32768-60999).
    eph_lo, eph_hi = ephemeral_range()
    if eph_lo - 1 - 10000 >= 1000:
        return 10000, min(19999, eph_lo - 1)
    if 65535 - (eph_hi + 1) >= 1000:
        return eph_hi + 1, 65535
    return None


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def reserve(path, owner):
    """True when PATH is now ours; a dead owner's file is taken over once."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path) as f:
                    pid = int(f.read().strip() or "0")
            except (OSError, ValueError):
                return False
            if pid > 0 and alive(pid):
                return False
            try:
                os.unlink(path)
            except OSError:
                return False
            continue
        os.write(fd, str(owner).encode())
        os.close(fd)
        return True
    return False


def bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def main():
    listfile, owner = sys.argv[1], int(sys.argv[2])
    rng = candidate_range()
    if rng is None:  # no room outside the ephemeral range: the old way
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
    else:
        rdir = os.path.join(os.environ.get("TMPDIR") or "/tmp", "proxyhost-ports")
        os.makedirs(rdir, exist_ok=True)
        port = None
        for _ in range(500):
            p = random.randint(*rng)
            path = os.path.join(rdir, str(p))
            if not reserve(path, owner):
                continue
            if bindable(p):
                port = p
                break
            os.unlink(path)
        if port is None:
            sys.exit("free_port.py: no free port in %d-%d" % rng)
    with open(listfile, "a") as f:
        f.write("%d\n" % port)
    print(port)


if __name__ == "__main__":
    main()
