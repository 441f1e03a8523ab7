#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Interop of the gRPC layer (modules/cp_common/grpc/cp_grpc.h) with a client
# this project did not write: Debian's python3-grpcio, from stubs
# generated at test time from proto/controlplane/v1/controlplane.proto,
# calls every WorkerControlPlane RPC of t/lib/cp_echo_server (built on the
# layer), in plaintext on loopback and in mTLS with certificates made now
# (CP-1-2, CP-1-12, CP-8-1, CP-8-2). A missing python3-grpcio or
# python3-grpc-tools is a failure: scripts/install-deps.sh installs them.
. "$top_srcdir/t/lib/testlib.sh"

PY=/usr/bin/python3
ECHO="$top_builddir/t/lib/cp_echo_server"
if [ ! -x "$ECHO" ]; then
  echo "1..0 # SKIP the control-plane modules are disabled"
  exit 0
fi

"$PY" -c 'import grpc, grpc_tools' 2>"$T/py.err"
ok $? "python3-grpcio and python3-grpc-tools are installed (Debian's, $PY)"
mkdir -p "$T/gen"
"$PY" -m grpc_tools.protoc -I "$top_srcdir/proto" -I/usr/include \
  --python_out="$T/gen" --grpc_python_out="$T/gen" \
  controlplane/v1/controlplane.proto >"$T/protoc.log" 2>&1
ok $? "stubs generated from controlplane.proto by grpc_tools.protoc"

sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"
ok $? "certificates made with openssl"

# run_mode NAME CONFIG: starts the echo server with CONFIG, runs every
# call with the Python client, turns its results into TAP lines, stops
# the server and checks it exits cleanly.
run_mode() {
  rm -f "$T/port"
  "$ECHO" "$2" "$T/port" >"$T/echo-$1.log" 2>&1 &
  pid=$!
  PIDS="$PIDS $pid"
  wait_file "$T/port"
  ok $? "cp_echo_server serves ($1)"
  "$PY" "$top_srcdir/t/lib/cp_grpc_interop.py" "$T/gen" "$(cat "$T/port")" \
    "$1" "$T" >"$T/py-$1.out" 2>"$T/py-$1.err"
  ok $? "the Python client ran to the end ($1)"
  while read -r tag st name; do
    [ "$tag" = RESULT ] || continue
    ok "$st" "$name"
  done <"$T/py-$1.out"
  [ -s "$T/py-$1.err" ] && sed 's/^/#   /' "$T/py-$1.err" | head -20
  [ "$1" = mtls ] && tls_versions "$(cat "$T/port")"
  kill -TERM "$pid"
  wait_exit "$pid" 10
  is "$EXIT" 0 "cp_echo_server stops cleanly on SIGTERM ($1)"
}

# tls_versions PORT: what gRPC 1.51 core negotiates (its C API cannot set
# a minimum: docs/operations/control-plane-transport.md). TLS 1.3 by
# default, TLS 1.2 still accepted, TLS 1.1 refused.
tls_versions() {
  for v in tls1_3 tls1_2 tls1_1; do
    echo | timeout 10 openssl s_client -connect "127.0.0.1:$1" -"$v" \
      -alpn h2 -cert "$T/worker.pem" -key "$T/worker.key" \
      -CAfile "$T/ca.pem" >"$T/sclient-$v.out" 2>&1
  done
  grep -aq 'New, TLSv1.3' "$T/sclient-tls1_3.out"
  ok $? "mTLS negotiates TLS 1.3 with a TLS 1.3 client"
  grep -aq 'New, TLSv1.2, Cipher is ECDHE' "$T/sclient-tls1_2.out"
  ok $? "TLS 1.2 is still accepted (ECDHE AES-GCM): gRPC 1.51's floor"
  grep -aq 'Cipher is (NONE)' "$T/sclient-tls1_1.out"
  ok $? "TLS 1.1 is refused"
}

printf '[cp_echo]\nlisten = 127.0.0.1:0\ntls.mode = disabled\n' >"$T/plain.ini"
run_mode plain "$T/plain.ini"
n_plain=$(grep -c '^RESULT' "$T/py-plain.out")
is "$n_plain" 6 "every RPC was called in plaintext"

run_mode mtls "$T/echo-mtls.ini" # written by cp_grpc_certs.sh
n_mtls=$(grep -c '^RESULT' "$T/py-mtls.out")
is "$n_mtls" 9 "every RPC and every refusal was checked in mTLS"

done_testing
