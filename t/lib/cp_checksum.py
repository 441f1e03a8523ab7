# SPDX-License-Identifier: BSD-2-Clause
"""The snapshot checksum of docs/api/controlplane.md ("Checksum"), written
from that section alone (not from the C code), for
t/integration/cp_checksum_vector.sh. Reads JSON lines (one snapshot each,
as t/unit/cp/cp_checksum_vector prints them) on stdin and prints, per line,
"ok NAME" when the checksum it computes equals the line's, otherwise
"mismatch NAME ours theirs". Standard library only.

With --pack DIR NAME OUT it also writes vector NAME as protobuf wire
bytes (with the stubs protoc generated into DIR, so python3-protobuf is
needed then) followed by two fields this schema does not have, and prints
the checksum it computes: the C side unpacks those bytes and must get the
same 32 bytes (a peer's encoder, and unknown fields left out)."""
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


def end(own, lease):
    """end(t): the proxy's own time, or in the shared lease form the
    earlier of it (None: none) and the snapshot's."""
    if lease is None:
        return own
    if own is None or tuple(lease) < tuple(own):
        return lease
    return own


def proxy(p, le=None, lu=None):
    return (string(p["proxy_id"]) + i32(p["protocol"]) + string(p["host"]) +
            u32(p["port"]) + lst(p["groups"], string) + string(p["zone"]) +
            u32(p["capacity"]) + u32(p["weight"]) +
            ts(end(p["expires_at"], le)) +
            ts(end(p["usable_until"], lu)) + string(p["secret_ref"]) +
            u64(p["credential_version"]) + u8(1 if p["draining"] else 0) +
            (i32(p["health"]) if p.get("health") else b""))


def credential(c):
    return (string(c["secret_ref"]) + u64(c["credential_version"]) +
            string(c["username"]) + string(c["password"]))


def checksum(s):
    key = lambda s_: (s_ or "").encode("ascii")
    proxies = sorted(s["proxies"], key=lambda p: key(p["proxy_id"]))
    creds = sorted(s["credentials"],
                   key=lambda c: (key(c["secret_ref"]), c["credential_version"]))
    le, lu = s.get("lease_expires_at"), s.get("lease_usable_until")
    if le is None or lu is None:  # the shared lease form: both set
        le = lu = None
    e = (string(TAG) + u64(s["version"]) + u64(s["ownership_epoch"]) +
         ts(s["valid_until"]) + lst(s["routing"], rule) +
         lst(proxies, lambda p: proxy(p, le, lu)) + lst(creds, credential))
    return hashlib.sha256(e).hexdigest()


def pack(stubs, name, out):
    sys.path.insert(0, stubs)
    from controlplane.v1 import controlplane_pb2 as pb
    for line in sys.stdin:
        if not line.strip():
            continue
        s = json.loads(line)
        if s["name"] != name:
            continue
        m = pb.WorkerSnapshot(version=s["version"],
                              ownership_epoch=s["ownership_epoch"],
                              cluster_id="from-python")

        def set_time(field, t):
            if t is not None:
                field.seconds, field.nanos = t[0], t[1]

        set_time(m.valid_until, s["valid_until"])
        for r in s["routing"]:
            x = m.routing.add(rule_id=r["rule_id"],
                              host_pattern=r["host_pattern"],
                              port_min=r["port_min"], port_max=r["port_max"],
                              client_identity=r["client_identity"],
                              listener=r["listener"],
                              target_group=r["target_group"],
                              strategy=r["strategy"],
                              on_unavailable=r["on_unavailable"],
                              sticky_key=r["sticky_key"])
            set_time(x.wait_timeout, r["wait_timeout"])
        for p in s["proxies"]:
            x = m.proxies.add(proxy_id=p["proxy_id"], protocol=p["protocol"],
                              host=p["host"], port=p["port"],
                              groups=p["groups"], zone=p["zone"],
                              capacity=p["capacity"], weight=p["weight"],
                              secret_ref=p["secret_ref"],
                              credential_version=p["credential_version"],
                              draining=p["draining"],
                              health=p.get("health", 0))
            set_time(x.expires_at, p["expires_at"])
            set_time(x.usable_until, p["usable_until"])
        for c in s["credentials"]:
            m.credentials.add(**{k: c[k] for k in (
                "secret_ref", "credential_version", "username", "password")})
        # field 99 (varint 1) and 100 (bytes "ab"): unknown to the schema
        data = m.SerializeToString() + bytes([0x98, 0x06, 0x01,
                                              0xa2, 0x06, 0x02]) + b"ab"
        with open(out, "wb") as f:
            f.write(data)
        print(checksum(s))
        return 0
    return 1


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--pack":
        sys.exit(pack(sys.argv[2], sys.argv[3], sys.argv[4]))
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
