#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The controller against hostile or broken workers (issue 22, "Security
# and isolation", items 10 to 13): a real proxyhost running
# controlplane_server over redis_ownership (a private redis-server) and
# store_sqlite, the setup of controller.sh (t/lib/controller.sh), workers
# played by Debian's python3-grpcio (t/lib/cp_client.py).
#  - item 10: a TCP connection that never sends a byte is closed after
#    grpc.handshake_timeout; at most grpc.max_unauthenticated_connections
#    of them, one more closed at once, a worker's connection not counted;
#  - item 12: ids with a NUL byte inside are refused INVALID_ARGUMENT, at
#    the top level and nested (CP-8-2);
#  - item 11: a session's newer WatchSnapshots stream ends the older one
#    ABORTED, so 42 streams of one session cost Redis what one does;
#  - item 13: a worker registering again every second without ever
#    ACKing loses its proxies when its lease ends, to one that reports;
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api pool_api

cp_stubs
start_redis "$T/redis"; ok $? "redis-server starts"
admin=$(free_port) cpp=$(free_port)
controller_ini "$T/ctl.ini" "$admin" "$cpp"
ctl() { "$top_builddir/tools/proxyhostctl" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
mval() { http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#' | grep -F "$1" | awk '{print $2}' | head -1; }

start_proxyhost "$T/ctl.ini"
wait_for ready; ok $? "the controller is ready"
for p in p1 p2; do
  ctl proxy add "$p" --protocol http_connect --host 192.0.2.1 --port 3128 \
    --groups residential --capacity 10 --zone z1 >/dev/null
  ok $? "proxyhostctl proxy add $p"
done

# ---- item 12: NUL bytes inside ids ----------------------------------------
run_py nul "$cpp" nul "$T"

# ---- item 11: one WatchSnapshots stream per session -----------------------
# Redis's commands a second with one stream, then with 41 more opened:
# each stream polling (watch_poll_interval = 100ms) would multiply them,
# one left makes about as many (at most twice: the bound).
run_py watch_once "$cpp" watch_once "$T" "$REDIS_PORT" 40 2
r=$(mval proxyhost_cp_controller_streams_replaced_total)
[ "${r:-0}" -ge 41 ]; ok $? "issue 22 item 11 metrics: streams replaced ($r)"
grep -q 'a newer WatchSnapshots stream of the worker.s session replaced one' "$T/ph.log"
ok $? "issue 22 item 11 ... and logged (rate-limited)"

kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "the controller stops cleanly"

# ---- item 13: ownership ends with the lease -------------------------------
# A cluster of its own in Redis (no worker of the sections above), leases
# of 4 s renewed by reports every second.
: >"$T/ph.log"
start_proxyhost "$T/ctl.ini" --set controlplane_server.cluster_id=c13 \
  --set redis_ownership.cluster_id=c13 --set redis_ownership.ownership_lease=4s \
  --set controlplane_server.refresh_before=1s \
  --set controlplane_server.allocation_safety_margin=1s \
  --set controlplane_server.runtime_interval=1s
wait_for ready; ok $? "a controller with 4 s leases is ready"
run_py lease_move "$cpp" lease_move "$T" c13
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "... and stops cleanly"
# ---- item 10: connections that never authenticate -------------------------
# mTLS as in production, grpc.handshake_timeout = 2s (gRPC's default is
# 120 s): a TCP connection that never sends its ClientHello is closed; at
# most 4 connections that carried no call yet.
sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"; ok $? "certificates made with openssl"
: >"$T/ph.log"
start_proxyhost "$T/ctl.ini" --set controlplane_server.tls.mode=mtls \
  --set "controlplane_server.tls.cert_file=$T/server.pem" \
  --set "controlplane_server.tls.key_file=$T/server.key" \
  --set "controlplane_server.tls.ca_file=$T/ca.pem" \
  --set controlplane_server.trust_domain=example.org \
  --set controlplane_server.grpc.handshake_timeout=2s \
  --set controlplane_server.grpc.max_unauthenticated_connections=4
wait_for ready; ok $? "an mTLS controller with grpc.handshake_timeout = 2s is ready"
run_py idle_conn "$cpp" idle_conn "$T" 20
run_py conn_cap "$cpp" conn_cap "$T" "$T/worker.pem" "$T/worker.key" "$T/ca.pem" 4 20
n=$(mval 'proxyhost_cp_controller_connections_dropped_total{reason="limit"}')
[ "${n:-0}" -ge 1 ]; ok $? "issue 22 item 10 metrics: connections over the limit ($n)"
n=$(mval 'proxyhost_cp_controller_connections_dropped_total{reason="handshake_timeout"}')
is "${n:-x}" 5 "issue 22 item 10 metrics: connections without a call in time: the idle one and the 4 (a worker's never)"
n=$(mval 'proxyhost_cp_controller_connections_unauthenticated')
is "${n:-x}" 0 "issue 22 item 10 metrics: no unauthenticated connection left"
grep -q 'too many unauthenticated connections: one more closed' "$T/ph.log"
ok $? "issue 22 item 10 ... logged (rate-limited)"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "... and stops cleanly"

out=$("$PROXYHOST" -c "$T/ctl.ini" --set redis_ownership.ownership_lease=8s \
  --set controlplane_server.refresh_before=1s --set controlplane_server.runtime_interval=4s \
  --check-config 2>&1)
[ $? != 0 ]; ok $? "issue 22 item 13 --check-config refuses runtime_interval not below ownership_lease / 2"
like "$out" "controlplane_server.runtime_interval: must be below [redis_ownership] ownership_lease / 2" \
  "... naming the key and the rule"
done_testing
