#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Address lists over mTLS (issue 26 "Several controllers"), every part
# real: one redis-server, one PostgreSQL (store_pg), two controllers c1
# and c2 with tls.mode = mtls (certificates made now by openssl:
# t/unit/cp/cp_grpc_certs.sh; the controllers' certificate names
# 127.0.0.1 and localhost), a gateway (worker certificate, SPIFFE w1) and
# a checker (checker certificate, SPIFFE k1), each given both addresses
# with tls.mode = mtls and tls.server_name = localhost. What it shows:
#  - both clients connect to c1 over mTLS, c2 started only then (gRPC's
#    pick_first takes the first address that answers, which a loaded
#    machine's c1 is not always; the landing CI saw the gateway on c2);
#  - c1 killed -9: the gateway and the checker move to c2 over mTLS (c2
#    holds the checker and the gateway's stream), the gateway's session
#    runs again and keeps its proxy's ownership in Redis, the checker
#    watches its tasks again (CP-6-1) and c2 is the only member.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/pg.sh"
. "$top_srcdir/t/lib/cp_multi.sh"
require_modules controlplane_server redis_ownership store_pg admin_api \
  pool_api controlplane_client checker echo

CTL="$top_builddir/tools/proxyhostctl"
MODS="$top_builddir/modules"
TAP_ON_FAIL='for f in c1 c2 w1 k1; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -6; done'
P='ph:cp:{c1}:'

mt() { metric "$(http_get "http://127.0.0.1:$1/metrics")" "$2"; }
is_m() { [ "$(mt "$1" "$2")" = "$3" ]; }

cpm_stores
sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"
ok $? "certificates made with openssl: a CA, the controllers', a worker's and a checker's"
cpm_echo
wait_for port_open "$E"; ok $? "the echo endpoint listens"
CPM_EXTRA="tls.mode = mtls
tls.cert_file = $T/server.pem
tls.key_file = $T/server.key
tls.ca_file = $T/ca.pem
trust_domain = example.org
environment = prod" cpm_first
"$CTL" --admin "127.0.0.1:$a1" --token-file "$T/admin.token" proxy add p1 \
  --protocol http_connect --host 127.0.0.1 --port "$(free_port)" --groups g \
  --capacity 10 >/dev/null
ok $? "proxyhostctl proxy add p1"

TLS="tls.mode = mtls
tls.ca_file = $T/ca.pem
tls.server_name = localhost"
LIST="127.0.0.1:$cp1,127.0.0.1:$cp2"
gw=$(free_port) ka=$(free_port)
cat >"$T/w1.ini" <<EOC
[proxyhost]
modules = controlplane_client
module_path = $MODS
[admin]
listen = 127.0.0.1:$gw
[controlplane_client]
$TLS
tls.cert_file = $T/worker.pem
tls.key_file = $T/worker.key
runtime_interval.min = 200ms
backoff.min = 200ms
backoff.max = 1s
rpc_timeout = 2s
EOC
cpm_checker_ini "$ka" "$TLS
tls.cert_file = $T/checker.pem
tls.key_file = $T/checker.key" >"$T/k1.ini"
out=$("$PROXYHOST" -c "$T/w1.ini" -control-plane "$LIST" -cluster-id c1 \
  -worker-id w1 -instance-id w1-a -zone z1 --check-config 2>&1)
ok $? "a gateway's list of two addresses with mTLS and tls.server_name passes --check-config" || echo "# $out"
"$PROXYHOST" -c "$T/w1.ini" -control-plane "$LIST" -cluster-id c1 -worker-id w1 \
  -instance-id w1-a -zone z1 >>"$T/w1.log" 2>&1 &
W1=$!
"$PROXYHOST" -c "$T/k1.ini" -control-plane "$LIST" -cluster-id c1 -checker-id k1 \
  -instance-id k1-a -zone z1 >>"$T/k1.log" 2>&1 &
K1=$!
PIDS="$PIDS $W1 $K1"
running_gw() { is_m "$gw" 'proxyhost_cp_gateway_session_state{state="running"}' 1; }
watching() { is_m "$ka" 'proxyhost_checker_session_state{state="watching"}' 1; }
wait_long running_gw; ok $? "the gateway's session runs (mTLS)"
wait_long watching; ok $? "CP-6-1 the checker watches its tasks (mTLS)"
# The controller's gauges follow the sessions' first messages, which a
# loaded machine may deliver after the clients report their state.
on_c1() { is_m "$a1" proxyhost_cp_controller_checkers 1 && is_m "$a1" proxyhost_cp_controller_streams_open 1; }
wait_long on_c1
ok $? "both are on c1, the only controller up" ||
  for a in "$a1" "$a2"; do
    echo "# admin $a: checkers $(mt "$a" proxyhost_cp_controller_checkers), streams $(mt "$a" proxyhost_cp_controller_streams_open)"
  done
owner() { redis_cli "$T/redis" HGET "${P}owner:p1" worker; }
wait_long eval '[ "$(owner)" = w1 ]'; ok $? "w1 owns p1 in Redis"
cpm_second
is_m "$a1" proxyhost_cp_controller_checkers 1 && is_m "$a1" proxyhost_cp_controller_streams_open 1
ok $? "... and stay there once c2 is up (one connection kept)"

# ---- c1 killed: both move to c2, still over mTLS ------------------------------
kill -9 "$C1"; wait "$C1" 2>/dev/null
wait_long is_m "$a2" proxyhost_cp_controller_checkers 1
ok $? "the checker moved to c2 over mTLS"
wait_long is_m "$a2" proxyhost_cp_controller_streams_open 1
ok $? "the gateway moved to c2 over mTLS (its WatchSnapshots stream there)"
wait_long running_gw; ok $? "... its session runs"
wait_long watching; ok $? "CP-6-1 ... and the checker watches its tasks at c2"
is "$(owner)" w1 "CP-4-1 w1 still owns p1 in Redis"
wait_long is_m "$a2" proxyhost_cp_controller_members 1
ok $? "c2 holds the checker and is the only member"
serves_k1() { grep -a "RegisterChecker\|checker registered\|check task issued" "$T/c2.log" | grep -q k1; }
wait_long serves_k1
ok $? "c2 serves k1 (its log names it)"
unlike "$(cat "$T/w1.log" "$T/k1.log")" "certificate verify failed" \
  "no certificate verification failure at either client"

for pid in $W1 $K1 $C2; do kill "$pid"; done
for pid in $W1 $K1 $C2; do wait_exit "$pid" 10; done
done_testing
