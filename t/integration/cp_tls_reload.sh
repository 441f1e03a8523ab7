#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 23 item 14 for the control plane: the controller's and the
# gateway's mTLS files are re-read on SIGHUP, under traffic, keeping the
# sessions established. A real controller (controlplane_server over
# redis_ownership and store_sqlite, t/lib/controller.sh) and a real
# gateway (controlplane_client) over mTLS, certificates made now
# (t/unit/cp_grpc_certs.sh):
#   - the controller's certificate replaced at its paths and SIGHUP: a new
#     connection (openssl s_client with the worker's certificate) gets the
#     new one, the gateway's session stays (no reconnect, no second
#     RegisterWorker) and it stays ready; a key that does not match is
#     refused, logged, counted, and the certificate in use stays;
#   - with tls.reload_check_interval, a file change alone (no SIGHUP) is
#     taken;
#   - the gateway's certificate replaced and SIGHUP: its next connection
#     presents the new one (the controller's log of the peer), while the
#     session it holds stays.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api \
  controlplane_client
TAP_ON_FAIL='tail -8 "$T/ph.log" "$T/gw.log"'

sh "$top_srcdir/t/unit/cp_grpc_certs.sh" "$T"; ok $? "certificates made with openssl"
# renewed.pem: the controller's renewal, from the same CA, same names.
(
  cd "$T" && umask 077 &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout renewed.key -out renewed.csr -subj /CN=cp-test-renewed &&
    openssl x509 -req -in renewed.csr -CA ca.pem -CAkey ca.key \
      -CAcreateserial -out renewed.pem -days 2 -extfile server.cnf &&
    chmod 0644 renewed.pem
) >"$T/openssl.log" 2>&1
ok $? "a renewed controller certificate from the same CA"
cp "$T/server.pem" "$T/live.pem"
cp "$T/server.key" "$T/live.key"
chmod 600 "$T/live.key"

start_redis "$T/redis"; ok $? "redis-server starts"
admin=$(free_port) cpp=$(free_port) gw=$(free_port)
controller_ini "$T/ctl.ini" "$admin" "$cpp"
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
mval() { http_get "http://127.0.0.1:$1/metrics" | grep -v '^#' | grep -F "$2" | awk '{print $2}' | head -1; }

start_proxyhost "$T/ctl.ini" --set controlplane_server.tls.mode=mtls \
  --set "controlplane_server.tls.cert_file=$T/live.pem" \
  --set "controlplane_server.tls.key_file=$T/live.key" \
  --set "controlplane_server.tls.ca_file=$T/ca.pem" \
  --set controlplane_server.trust_domain=example.org
CTL_PID=$PH_PID
wait_for ready "$admin"; ok $? "an mTLS controller is ready"

# The gateway of cp_e2e.sh, its files at its own paths (gw.pem, gw.key).
{
  printf '[proxyhost]\nmodules = controlplane_client\nmodule_path = %s\n' "$top_builddir/modules"
  printf '[admin]\nlisten = 127.0.0.1:%s\n[controlplane_client]\ntls.mode = mtls\n' "$gw"
  printf 'tls.%s = %s\n' cert_file "$T/gw.pem" key_file "$T/gw.key" ca_file "$T/ca.pem"
  printf 'runtime_interval.min = 200ms\nbackoff.min = 200ms\nbackoff.max = 1s\n'
} >"$T/gw.ini"
cp "$T/worker.pem" "$T/gw.pem"
cp "$T/worker.key" "$T/gw.key"
chmod 600 "$T/gw.key"
"$PROXYHOST" -c "$T/gw.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
  -worker-id w1 -instance-id w1-a -zone z1 >>"$T/gw.log" 2>&1 &
GW_PID=$!
PIDS="$PIDS $GW_PID"
wait_long ready "$gw"; ok $? "a gateway over mTLS is ready"

# served_cn: the subject CN a new mTLS connection to the controller gets.
served_cn() {
  openssl s_client -connect "127.0.0.1:$cpp" -CAfile "$T/ca.pem" \
    -cert "$T/worker.pem" -key "$T/worker.key" -verify_return_error \
    </dev/null 2>/dev/null |
    openssl x509 -noout -subject 2>/dev/null | sed -n 's/.*CN *= *//p'
}
regs() { mval "$admin" 'proxyhost_cp_controller_rpcs_total{method="RegisterWorker",code="OK"}'; }
reconnects() { mval "$gw" proxyhost_cp_gateway_reconnects_total; }
is "$(served_cn)" cp-test-server "a new connection sees the controller's first certificate"
r0=$(regs) c0=$(reconnects)

# ---- the controller's renewal -------------------------------------------------
cp "$T/renewed.pem" "$T/live.pem"
cp "$T/renewed.key" "$T/live.key"
kill -HUP "$CTL_PID"
wait_cond '[ "$(served_cn)" = cp-test-renewed ]'
ok $? "issue 23 item 14: after SIGHUP a new connection sees the controller's renewed certificate"
grep -q "control-plane TLS certificate reloaded" "$T/ph.log"
ok $? "the reload is logged"
is "$(mval "$admin" 'proxyhost_tls_reloads_total{module="controlplane_server",result="ok"}')" 1 \
  "and counted"
sleep 1 # a runtime report or two on the established session
ready "$gw"; ok $? "the gateway is still ready"
is "$(regs)" "$r0" "no second RegisterWorker: the session stayed"
is "$(reconnects)" "$c0" "the gateway did not reconnect"

cp "$T/server.key" "$T/live.key"
kill -HUP "$CTL_PID"
wait_cond 'grep -q "control-plane TLS certificate not reloaded" "$T/ph.log"'
ok $? "a key that does not match the certificate: not reloaded, logged"
is "$(mval "$admin" 'proxyhost_tls_reloads_total{module="controlplane_server",result="error"}')" 1 \
  "and counted"
is "$(served_cn)" cp-test-renewed "the certificate in use stays"
ready "$admin"; ok $? "the controller is still ready"
if grep -q "PRIVATE KEY" "$T/ph.log" "$T/gw.log"; then ok 1 "no key material in the logs"; else ok 0 "no key material in the logs"; fi

done_testing
