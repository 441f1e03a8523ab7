#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Counts the occurrences of a string in a live process's writable memory.

    python3 mem_count.py PID TEXT

reads /proc/PID/maps and /proc/PID/mem (the test's own child: same user,
ptrace rules permitting) and prints one number: how many times TEXT's
bytes appear in its writable mappings (heap, stacks, anonymous memory, the
modules' data), freed but unwiped blocks included. Exit 1 when the memory
could not be read. For issue 23 item 10: a credential's password lives in
one place, the gateway's view (CP-1-18)."""
import re
import sys

CHUNK = 16 << 20


def main():
    pid, needle = sys.argv[1], sys.argv[2].encode()
    count = 0
    try:
        maps = open("/proc/%s/maps" % pid, encoding="ascii").read().splitlines()
        mem = open("/proc/%s/mem" % pid, "rb", 0)
    except OSError as e:
        print("cannot read: %s" % e, file=sys.stderr)
        return 1
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
        if not m or "w" not in m.group(3) or "r" not in m.group(3):
            continue
        if line.endswith("[vvar]") or line.endswith("[vsyscall]"):
            continue
        lo, hi = int(m.group(1), 16), int(m.group(2), 16)
        # In chunks (a needle across two is found: they overlap).
        pos, tail = lo, b""
        while pos < hi:
            n = min(CHUNK, hi - pos)
            try:
                mem.seek(pos)
                data = mem.read(n)
            except OSError:
                break
            count += (tail + data).count(needle)
            tail = data[-(len(needle) - 1):] if len(needle) > 1 else b""
            pos += n
    print(count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
