# SPDX-License-Identifier: BSD-2-Clause
"""The snapshot checksum of docs/api/controlplane.md ("Checksum"), written
from that section alone (not from the C code), for
t/integration/cp_checksum_vector.sh. Reads JSON lines (one snapshot each,
as t/unit/cp_checksum_vector prints them) on stdin and prints, per line,
"ok NAME" when the checksum it computes equals the line's, otherwise
"mismatch NAME ours theirs". Standard library only."""
import hashlib
import json
import struct
import sys

TAG = "controlplane.v1.WorkerSnapshot/checksum/1"


def u8(x):
    return struct.pack(">B", x)


def u32(x):
    return struct.pack(">I", x)


def u64(x):
    return struct.pack(">Q", x)


def i32(x):
    return struct.pack(">i", x)


def i64(x):
    return struct.pack(">q", x)


def string(s):
    b = (s or "").encode("ascii")
    return u32(len(b)) + b


def ts(t):
    if t is None:
        return u8(0)
    return u8(1) + i64(t[0]) + i32(t[1])


def lst(items, enc):
    return u32(len(items)) + b"".join(enc(x) for x in items)


def rule(r):
    return (string(r["rule_id"]) + string(r["host_pattern"]) +
            u32(r["port_min"]) + u32(r["port_max"]) +
            string(r["client_identity"]) + string(r["listener"]) +
            string(r["target_group"]) + string(r["strategy"]) +
            i32(r["on_unavailable"]) + ts(r["wait_timeout"]) +
            string(r["sticky_key"]))


def proxy(p):
    return (string(p["proxy_id"]) + i32(p["protocol"]) + string(p["host"]) +
            u32(p["port"]) + lst(p["groups"], string) + string(p["zone"]) +
            u32(p["capacity"]) + u32(p["weight"]) + ts(p["expires_at"]) +
            ts(p["usable_until"]) + string(p["secret_ref"]) +
            u64(p["credential_version"]) + u8(1 if p["draining"] else 0))


def credential(c):
    return (string(c["secret_ref"]) + u64(c["credential_version"]) +
            string(c["username"]) + string(c["password"]))


def checksum(s):
    key = lambda s_: (s_ or "").encode("ascii")
    proxies = sorted(s["proxies"], key=lambda p: key(p["proxy_id"]))
    creds = sorted(s["credentials"],
                   key=lambda c: (key(c["secret_ref"]), c["credential_version"]))
    e = (string(TAG) + u64(s["version"]) + u64(s["ownership_epoch"]) +
         ts(s["valid_until"]) + lst(s["routing"], rule) +
         lst(proxies, proxy) + lst(creds, credential))
    return hashlib.sha256(e).hexdigest()


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        s = json.loads(line)
        ours = checksum(s)
        if ours == s["checksum"]:
            print("ok", s["name"])
        else:
            print("mismatch", s["name"], ours, s["checksum"])


if __name__ == "__main__":
    main()
