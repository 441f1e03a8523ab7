#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The outcome batch digest (CP-5-1, CP-5-12, CP-5-13) computed by
# another implementation: test_cp_outcomes --dump writes one batch as
# sent (with worker_id and session_id), the same batch packed with the
# ids empty, and the digest cp_outcome_digest() gave it. Python's
# protobuf (stubs generated from the proto here) parses the request,
# empties the ids and serialises it again; hashlib's SHA-256 of that must
# be the C digest, and the bytes must be the C packing's.
. "$top_srcdir/t/lib/testlib.sh"

command -v protoc >/dev/null 2>&1
ok $? "protoc is installed (Debian package protobuf-compiler)" || { done_testing; exit 1; }
/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null
ok $? "python3-protobuf is installed for /usr/bin/python3" || { done_testing; exit 1; }

"$top_builddir/t/unit/cp/test_cp_outcomes" --dump "$T"
ok $? "test_cp_outcomes --dump wrote one batch"
protoc -I"$top_srcdir/proto" -I"${PROTOBUF_INCLUDE:-/usr/include}" \
  --python_out="$T" controlplane/v1/controlplane.proto
ok $? "Python stubs generated from controlplane.proto"

out=$(cd "$T" && /usr/bin/python3 - <<'PY'
import hashlib, sys
sys.path.insert(0, ".")
from controlplane.v1 import controlplane_pb2 as pb
wire = open("wire.bin", "rb").read()
given = open("digest_input.bin", "rb").read()
digest = open("digest.hex").read().strip()
req = pb.ReportOutcomesRequest()
req.ParseFromString(wire)
print("ids", req.worker_id, req.session_id)
print("seq", req.sequence, "n", len(req.outcomes))
o = req.outcomes[0]
print("first", o.proxy_id, o.rule_id, o.latency.seconds, o.latency.nanos)
req.worker_id = ""
req.session_id = ""
again = req.SerializeToString()
print("same_bytes", again == given)
print("python_sha_of_python", hashlib.sha256(again).hexdigest() == digest)
print("python_sha_of_c", hashlib.sha256(given).hexdigest() == digest)
# One changed outcome changes the digest (what AlreadyExists rests on).
req.outcomes[1].latency.nanos += 1000
print("changed_differs", hashlib.sha256(req.SerializeToString()).hexdigest() != digest)
PY
)
ok $? "Python read the batch"
like "$out" "ids worker-7 0123456789abcdef" "the request as sent carries worker_id and session_id"
like "$out" "seq 1 n 37" "CP-5-8: sequence 1, 37 outcomes (min(512, 37))"
like "$out" "first px-0 rule-1 1 234567000" "the first outcome's ids and latency (1.234567 s)"
like "$out" "same_bytes True" "Python's packing with the ids empty is byte for byte the C packing"
like "$out" "python_sha_of_python True" "CP-5-12: hashlib's SHA-256 of Python's packing equals cp_outcome_digest()"
like "$out" "python_sha_of_c True" "hashlib's SHA-256 of the C packing equals it"
like "$out" "changed_differs True" "CP-5-13: one changed outcome gives another digest"
done_testing
