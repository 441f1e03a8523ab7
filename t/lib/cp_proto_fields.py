#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Lists the field and enum numbers of a compiled proto (a descriptor set
from `protoc --descriptor_set_out`), one per line, for
t/integration/cp_proto_rules.sh:

    field <message> <name> <number>
    reserved <message> <number>      (one line per reserved number)
    reservedname <message> <name>
    enum <enum> <name> <number>
    method <service> <name> <unary|client_stream|server_stream|bidi>

Runs with Debian's python3-protobuf (/usr/bin/python3)."""
import sys
from google.protobuf import descriptor_pb2


def walk_enum(prefix, e, out):
    for v in e.value:
        out.append("enum %s.%s %s %d" % (prefix, e.name, v.name, v.number))


def walk_msg(prefix, m, out):
    full = "%s.%s" % (prefix, m.name)
    for f in m.field:
        out.append("field %s %s %d" % (full, f.name, f.number))
    for r in m.reserved_range:  # end is exclusive
        for n in range(r.start, min(r.end, r.start + 1000)):
            out.append("reserved %s %d" % (full, n))
    for n in m.reserved_name:
        out.append("reservedname %s %s" % (full, n))
    for e in m.enum_type:
        walk_enum(full, e, out)
    for n in m.nested_type:
        walk_msg(full, n, out)


def main():
    fds = descriptor_pb2.FileDescriptorSet()
    with open(sys.argv[1], "rb") as f:
        fds.ParseFromString(f.read())
    out = []
    for fd in fds.file:
        if not fd.package.startswith("controlplane."):
            continue
        for e in fd.enum_type:
            walk_enum(fd.package, e, out)
        for m in fd.message_type:
            walk_msg(fd.package, m, out)
        for svc in fd.service:
            for md in svc.method:
                kind = {(False, False): "unary", (True, False): "client_stream",
                        (False, True): "server_stream", (True, True): "bidi"}
                out.append("method %s.%s %s %s" % (
                    fd.package, svc.name, md.name,
                    kind[(md.client_streaming, md.server_streaming)]))
    sys.stdout.write("".join(line + "\n" for line in sorted(out)))


main()
