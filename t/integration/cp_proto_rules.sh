#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The control-plane proto's evolution rules (CP-7-1, CP-7-2, CP-7-3)
# against t/data/controlplane.v1.fields, the numbers published so far:
#  - every published field still has its number, or its number and name
#    are both reserved (a deleted field);
#  - no published number carries another name (never reused);
#  - every published enum value keeps its number;
#  - every enum's zero value is <ENUM>_UNSPECIFIED;
# and the shape of the Worker API the 000 seed fixes: the unary and
# streaming RPCs (CP-1-6) and no exclusive extraction (CP-1-4).
. "$top_srcdir/t/lib/testlib.sh"

# A missing tool is a failure, never a skip (scripts/install-deps.sh).
command -v protoc >/dev/null 2>&1
ok $? "protoc is installed (Debian package protobuf-compiler)" || { done_testing; exit 1; }
/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null
ok $? "python3-protobuf is installed for /usr/bin/python3" || { done_testing; exit 1; }

protoc -I"$top_srcdir/proto" -I"${PROTOBUF_INCLUDE:-/usr/include}" \
  --descriptor_set_out="$T/cp.desc" controlplane/v1/controlplane.proto
ok $? "controlplane.proto compiles (CP-1-1)"
/usr/bin/python3 "$top_srcdir/t/lib/cp_proto_fields.py" "$T/cp.desc" >"$T/now"
ok $? "its numbers are listed"

grep -v '^#' "$top_srcdir/t/data/controlplane.v1.fields" >"$T/published"
: >"$T/bad"
while read -r kind scope name num; do
  case $kind in
  field)
    grep -qx "field $scope $name $num" "$T/now" && continue
    if grep -qx "reserved $scope $num" "$T/now" &&
      grep -qx "reservedname $scope $name" "$T/now"; then
      continue
    fi
    echo "field $scope.$name = $num is gone without reserving both its number and name" >>"$T/bad"
    ;;
  enum)
    grep -qx "enum $scope $name $num" "$T/now" ||
      echo "enum value $scope.$name = $num changed or vanished" >>"$T/bad"
    ;;
  esac
done <"$T/published"
[ ! -s "$T/bad" ]
ok $? "published field numbers are kept or reserved, never reused (CP-7-1, CP-7-2)" || cat "$T/bad" >&2

# A number reused under another name in the same message.
awk '$1 == "field" { k = $2 " " $4; if ((k in seen) && seen[k] != $3) print k; seen[k] = $3 }' \
  "$T/published" "$T/now" >"$T/reused"
[ ! -s "$T/reused" ]
ok $? "no field number carries a second name (CP-7-1)" || cat "$T/reused" >&2

# Zero values of every enum.
awk '$1 == "enum" && $4 == 0 { n = $2; sub(/.*\./, "", n); print n, $3 }' "$T/now" |
  while read -r enum zero; do
    want=$(printf '%s' "$enum" | sed 's/\([a-z0-9]\)\([A-Z]\)/\1_\2/g' | tr a-z A-Z)_UNSPECIFIED
    [ "$zero" = "$want" ] || echo "$enum: zero value $zero, want $want"
  done >"$T/zeros"
[ ! -s "$T/zeros" ]
ok $? "every enum's zero value is <ENUM>_UNSPECIFIED (CP-7-3)" || cat "$T/zeros" >&2
n=$(grep -c '^enum .* 0$' "$T/now")
[ "$n" -ge 9 ]
ok $? "all $n enums were checked"

# The calls and their kinds, from the compiled descriptor (not the text).
W=controlplane.v1.WorkerControlPlane
for m in RegisterWorker AcknowledgeSnapshot ReportRuntime; do
  grep -qx "method $W $m unary" "$T/now"
  ok $? "CP-1-6: $m is a unary RPC" || grep "method $W $m " "$T/now" >&2
done
grep -qx "method $W WatchSnapshots server_stream" "$T/now"
ok $? "WatchSnapshots is server-streaming"
grep -qx "method $W ReportOutcomes client_stream" "$T/now"
ok $? "ReportOutcomes is client-streaming"
[ "$(grep -c "^method $W " "$T/now")" -eq 5 ]
ok $? "WorkerControlPlane has exactly these five RPCs"

# No exclusive extraction for clients: no RPC of any service, and no
# message, field or enum value anywhere, about extraction; no RPC leases
# or releases a proxy (CP-1-4). ("expires_at ... of the lease" is the
# ownership lease's expiry, a field, not an RPC.)
grep -i '^method .*\(extract\|exclusive\|lease\|release\|acquire\|checkout\)' \
  "$T/now" >"$T/extract"
grep -i '^\(field\|enum\) .*\(extract\|exclusive\)' "$T/now" >>"$T/extract"
[ ! -s "$T/extract" ]
ok $? "CP-1-4: the protocol has no extraction, lease or release RPC and no extraction field" ||
  cat "$T/extract" >&2
n=$(grep -c '^method ' "$T/now")
[ "$n" -eq 8 ]
ok $? "all $n RPCs of both services were checked"
done_testing
