# SPDX-License-Identifier: BSD-2-Clause
# For the tests that speak the control plane from Python (a gateway against
# t/lib/cp_fake_controller.py, a worker played by t/lib/cp_client.py)
# (sourced after testlib.sh; PY is Debian's python3, which sees
# python3-grpcio).

# cp_stubs: checks python3-grpcio and python3-grpc-tools, and generates
# the Python stubs of controlplane.proto into $T/gen (two TAP lines).
cp_stubs() {
  "$PY" -c 'import grpc, grpc_tools' 2>"$T/py.err"
  ok $? "python3-grpcio and python3-grpc-tools are installed"
  mkdir -p "$T/gen"
  "$PY" -m grpc_tools.protoc -I "$top_srcdir/proto" -I/usr/include \
    --python_out="$T/gen" --grpc_python_out="$T/gen" \
    controlplane/v1/controlplane.proto >"$T/protoc.log" 2>&1
  ok $? "stubs generated from controlplane.proto"
}

# cp_client_ini ADMIN_PORT: a gateway's [admin] and [controlplane_client]
# sections for the fake controller: plaintext on loopback, heartbeats
# every 100 ms, a quick backoff.
cp_client_ini() {
  printf '[admin]\nlisten = 127.0.0.1:%s\n' "$1"
  printf '[controlplane_client]\ntls.mode = disabled\nruntime_interval.min = 100ms\n'
  printf 'backoff.min = 200ms\nbackoff.max = 1s\n'
}

# cp_fake_start DIR SCENARIO [CERT_DIR]: t/lib/cp_fake_controller.py in
# DIR (its port in DIR/port, its events in DIR/events, its log in
# DIR/fake.log), with mTLS when CERT_DIR is given (cp_grpc_certs.sh's),
# waited for; sets EV and FAKE. The fake reads CP_FAKE_* from the
# environment (export them first).
cp_fake_start() {
  mkdir -p "$1"
  EV="$1/events"
  : >"$EV"
  rm -f "$1/port"
  "$PY" "$top_srcdir/t/lib/cp_fake_controller.py" "$T/gen" "$1/port" "$EV" \
    "$2" ${3:+"$3"} >"$1/fake.log" 2>&1 &
  FAKE=$!
  PIDS="$PIDS $FAKE"
  wait_long test -s "$1/port"
}
