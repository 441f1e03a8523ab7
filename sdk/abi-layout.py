#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes t/unit/host/abi_layout.inc: every struct of the installed SDK headers
(module ABI and service contracts, not mock.h) with each member's offset
and size and the struct's size, as gdb reads them from a debug build on
this machine (LP64). test_abi_layout compares them with offsetof/sizeof,
so any change to a layout fails `make check` until this is run again on
purpose, and the change is named in abi.h's changelog.

Run from the source tree after an intended layout change (an addition at
the end of a struct, a reserved slot taken):
    python3 sdk/abi-layout.py > t/unit/host/abi_layout.inc
Needs gcc and gdb (developer tools, not build dependencies)."""
import os, re, subprocess, sys, tempfile

HEADERS = ["abi", "module", "host", "config", "log", "metrics", "stream",
           "listener_event", "connector", "open_ext", "open_lease",
           "open_http_forward", "open_upstream", "authorizer", "access",
           "validation", "authz_store", "pool_view", "pool_store",
           "outcome_sink", "strategy"]
top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
src = "".join(f"#include <proxyhost/{h}.h>\n" for h in HEADERS)
structs = []
for h in HEADERS:
    text = open(os.path.join(top, "sdk", "proxyhost", h + ".h")).read()
    for m in re.finditer(r"^(?:typedef )?struct (ph_\w+) \{", text, re.M):
        structs.append((h, m.group(1)))
# one object of each, so that the debug information has every type
src += "".join(f"struct {s} v_{s};\n" for _, s in structs)
src += "int main(void) { return 0; }\n"
with tempfile.TemporaryDirectory() as d:
    c, exe = os.path.join(d, "all.c"), os.path.join(d, "all")
    open(c, "w").write(src)
    subprocess.run(["gcc", "-g", "-O0", "-I", os.path.join(top, "sdk"),
                    "-o", exe, c], check=True)
    cmd = ["gdb", "-batch"]
    for _, s in structs:
        cmd += ["-ex", f"ptype /o struct {s}"]
    out = subprocess.run(cmd + [exe], check=True, capture_output=True,
                         text=True).stdout
# Each header's version: its service's PH_<X>_MAJOR/MINOR, or the module
# ABI's for the host's own headers. A contract's extension headers are
# versioned with their contract.
PART_OF = {"open_ext": "connector", "open_lease": "connector",
           "open_http_forward": "connector", "open_upstream": "connector"}
def version(h):
    h = PART_OF.get(h, h)
    text = open(os.path.join(top, "sdk", "proxyhost", h + ".h")).read()
    if h != "abi":
        m = re.search(r"^#define (PH_\w+)_MAJOR (\d+)$", text, re.M)
        if m:
            n = re.search(rf"^#define {m.group(1)}_MINOR (\d+)$", text, re.M)
            return m.group(1), m.group(2), n.group(1)
    abi = open(os.path.join(top, "sdk", "proxyhost", "abi.h")).read()
    return ("PH_ABI", re.search(r"^#define PH_ABI_MAJOR (\d+)$", abi, re.M).group(1),
            re.search(r"^#define PH_ABI_MINOR (\d+)$", abi, re.M).group(1))

lines = []
emit = lines.append
for h in HEADERS:
    p, major, minor = version(h)
    emit(f"PH_VERSION({h}, {p}_MAJOR, {p}_MINOR, {major}, {minor})")
blocks = re.split(r"^/\* offset\s+\|\s+size \*/\s+type = struct ", out, flags=re.M)[1:]
if len(blocks) != len(structs):
    sys.exit(f"gdb printed {len(blocks)} structs, expected {len(structs)}")
member = re.compile(r"^/\*\s+(\d+)\s+\|\s+(\d+) \*/ {4}(\S.*);$")
opening = re.compile(r"^/\*\s+(\d+)\s+\|\s+(\d+) \*/ {4}(?:union|struct) \{$")
closing = re.compile(r"^ {31}\} (\w+)(?:\[\d+\])*;$")
for (h, s), b in zip(structs, blocks):
    name = b.split(" ", 1)[0]
    if name != s:
        sys.exit(f"gdb order: {name} where {s} was expected")
    nested = None  # (offset, size) of an inner union or struct
    for line in b.splitlines()[1:]:
        m = opening.match(line)
        if m:
            nested = (m.group(1), m.group(2))
            continue
        m = closing.match(line)
        if m and nested:
            emit(f"PH_LAYOUT({h}, {s}, {m.group(1)}, {nested[0]}, {nested[1]})")
            nested = None
            continue
        m = member.match(line)
        if not m or nested:
            continue
        decl = m.group(3)
        f = re.search(r"\(\*(\w+)\)\(", decl) or re.search(r"(\w+)(?:\[\d+\])*$", decl)
        emit(f"PH_LAYOUT({h}, {s}, {f.group(1)}, {m.group(1)}, {m.group(2)})")
    total = re.findall(r"total size \(bytes\):\s+(\d+)", b)[-1]
    emit(f"PH_SIZE({h}, {s}, {total})")

# A layout that changed under the same version is refused: an addition
# raises the minor of its header's version (the ABI's or the service's),
# anything else the major (sdk/ABI.md), and abi.h's changelog says so.
def by_header(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"PH_(?:LAYOUT|SIZE|VERSION)\((\w+),", line)
        if m:
            out.setdefault(m.group(1), []).append(line)
    return out
old_path = os.path.join(top, "t", "unit", "host", "abi_layout.inc")
if os.path.exists(old_path):
    before, after = by_header(open(old_path).read()), by_header("\n".join(lines))
    for h in HEADERS:
        b, a = before.get(h, []), after.get(h, [])
        if b and b[1:] != a[1:] and b[0] == a[0]:
            sys.exit(f"{h}.h: its layout changed but its version did not ({a[0]}): "
                     "raise the minor for an addition, the major otherwise")
print("/* SPDX-License-Identifier: BSD-2-Clause */")
print("/* Generated by sdk/abi-layout.py from the installed SDK headers; do not")
print(" * edit. PH_VERSION(header, major macro, minor macro, major, minor),")
print(" * PH_LAYOUT(header, struct, member, offset, size), PH_SIZE(header,")
print(" * struct, size), for LP64. */")
print("\n".join(lines))
