#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The snapshot checksum (CP-1-19, CP-3-4) computed twice from fixed
# snapshots: by the C code (t/unit/cp/cp_checksum_vector, which prints each
# snapshot's fields and its checksum) and by t/lib/cp_checksum.py, written
# from docs/api/controlplane.md ("Checksum") alone. Equal 32 bytes mean a
# peer in another language can follow the definition.
. "$top_srcdir/t/lib/testlib.sh"

bin="$top_builddir/t/unit/cp/cp_checksum_vector"
if [ ! -x "$bin" ]; then
  skip "no control-plane module configured (cp_checksum_vector not built)"
  done_testing
  exit 0
fi

"$bin" >"$T/vectors"
ok $? "the C side prints its vectors"
is "$(wc -l <"$T/vectors" | tr -d ' ')" 4 "four vectors"
/usr/bin/python3 "$top_srcdir/t/lib/cp_checksum.py" <"$T/vectors" >"$T/py" 2>&1
ok $? "the Python side reads them"
for name in empty full rules-reordered shared-lease; do
  grep -qx "ok $name" "$T/py"
  ok $? "CP-3-4: checksum of '$name' equals Python's" || cat "$T/py" >&2
done
# Independence of order where the definition sorts, dependence where it
# does not: the reordered rules give another checksum.
full=$(sed -n 's/.*"name":"full".*"checksum":"\([0-9a-f]*\)".*/\1/p' "$T/vectors")
re=$(sed -n 's/.*"name":"rules-reordered".*"checksum":"\([0-9a-f]*\)".*/\1/p' "$T/vectors")
[ -n "$full" ] && [ "$full" != "$re" ]
ok $? "CP-1-19: routing order enters the checksum"
is "${#full}" 64 "the checksum is 32 bytes (SHA-256)"
sh=$(sed -n 's/.*"name":"shared-lease".*"checksum":"\([0-9a-f]*\)".*/\1/p' "$T/vectors")
[ -n "$sh" ] && [ "$sh" != "$full" ]
ok $? "issue 26: the shared lease enters through the proxies' ends"

# A peer's encoder: Python packs the full vector with stubs protoc makes
# now, plus two fields the schema does not have; the C side unpacks the
# bytes and computes the checksum, which must be Python's and the C
# vector's (CP-3-4: unknown fields do not enter it; CP-7-1).
protoc -I"$top_srcdir/proto" -I"${PROTOBUF_INCLUDE:-/usr/include}" \
  --python_out="$T" controlplane/v1/controlplane.proto 2>"$T/protoc.err"
ok $? "protoc makes the Python stubs" || cat "$T/protoc.err" >&2
py=$(/usr/bin/python3 "$top_srcdir/t/lib/cp_checksum.py" --pack "$T" full \
  "$T/full.bin" <"$T/vectors" 2>"$T/pack.err")
ok $? "Python packs the full vector with two unknown fields" || cat "$T/pack.err" >&2
"$bin" --wire "$T/full.bin" >"$T/wire" 2>&1
ok $? "the C side unpacks Python's bytes"
is "$(sed -n 1p "$T/wire")" "$py" "CP-3-4: the checksum of Python's wire bytes is Python's"
is "$py" "$full" "and the C vector's: unknown fields and identity do not enter it"
like "$(cat "$T/wire")" "unknown fields kept by the decoder: 2" "the two unknown fields reached the decoder"
done_testing
