#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# controlplane_client in a real proxyhost against the scriptable fake
# controller t/lib/cp_fake_controller.py (Debian's python3-grpcio, stubs
# generated now; a double because it injects faults). Each scenario is a
# fresh controller and gateway; the controller writes one line per call
# it got, and the gateway's /readyz and /metrics say the rest:
# the order Register -> Watch -> ACK -> heartbeats (CP-2-3, CP-1-15);
# a snapshot with a bad checksum or an expired valid_until NACKed and the
# old view kept (CP-3-7, CP-3-14); a delta applied and a bad one making
# the gateway reopen the stream for a full snapshot (CP-3-15, CP-3-16);
# the stream's end -> backoff and a new session, no tight loop (CP-3-12);
# INVALID_ARGUMENT, PERMISSION_DENIED, FAILED_PRECONDITION at Register
# fatal: one clear log line, no retry (CP-3-13, CP-7-4); a client
# certificate the controller refuses in the TLS handshake: unauthenticated
# and fatal, not UNAVAILABLE for ever (issue 23 item 8); the view expiring
# while the controller is gone -> not ready (CP-1-28, CP-3-9); the
# controller back on its port after a 17 s outage -> a session within
# backoff.max, not gRPC's grown reconnect backoff (issue 23 item 3); the
# gateway's certificate passing the controller's SPIFFE worker check, and
# failing it for another worker id, against t/lib/cp_echo_server (CP-9-8).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/cp_fake.sh"

PY=/usr/bin/python3
MODS="$top_builddir/modules"
require_modules controlplane_client

cp_stubs

ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
not_ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 503 ]; }
metric() { http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#' | grep -F "$1" | awk '{print $2}' | head -1; }
regs_ge() { [ "$(count '^REGISTER')" -ge "$1" ]; }
FAKE_CERTS=
# On a failure: what the controller saw and what the gateway logged.
TAP_ON_FAIL='echo "events:"; cat "$EV"; echo "gateway log:"; tail -15 "$D/ph.log"'
has() { grep -q "$1" "$EV"; }
count() { grep -c "$1" "$EV"; }

# start SCENARIO [--set ...]: a fake controller and a gateway on it
# (with FAKE_CERTS set: mTLS, the gateway with worker.pem).
start() {
  scen=$1
  shift
  D="$T/$scen"
  mkdir -p "$D"
  EV="$D/events"
  : >"$EV"
  rm -f "$D/port" # a scenario run again waits for its own controller
  # shellcheck disable=SC2086 # FAKE_CERTS: empty or one path
  "$PY" "$top_srcdir/t/lib/cp_fake_controller.py" "$T/gen" "$D/port" "$EV" \
    "$scen" $FAKE_CERTS >"$D/fake.log" 2>&1 &
  FAKE=$!
  PIDS="$PIDS $FAKE"
  wait_long test -s "$D/port"
  admin=$(free_port)
  cat >"$D/gw.ini" <<EOF2
[proxyhost]
modules = controlplane_client
module_path = $MODS
[admin]
listen = 127.0.0.1:$admin
[controlplane_client]
tls.mode = disabled
runtime_interval.min = 100ms
backoff.min = 200ms
backoff.max = 1s
EOF2
  "$PROXYHOST" -c "$D/gw.ini" -control-plane "127.0.0.1:$(cat "$D/port")" \
    -cluster-id c1 -worker-id w1 -instance-id i1 -zone z1 "$@" \
    >"$D/ph.log" 2>&1 &
  GW=$!
  PIDS="$PIDS $GW"
}
stop() {
  kill -TERM "$GW" 2>/dev/null
  wait_exit "$GW" 10
  kill -9 "$FAKE" 2>/dev/null
  wait "$FAKE" 2>/dev/null
}
# first_line PATTERN: the line number of its first match in the events.
first_line() { grep -n "$1" "$EV" | head -1 | cut -d: -f1; }

# ---- the order (CP-2-3, CP-1-15) ------------------------------------------
start ok
wait_long has "^RUNTIME 3 "
ok $? "CP-1-15 heartbeats follow (three runtime reports)"
is "$(sed -n 1p "$EV")" "REGISTER w1 i1 z1" "CP-2-5 RegisterWorker first, with worker, instance, zone"
is "$(sed -n 2p "$EV")" "WATCH s1 0" "CP-2-2 then WatchSnapshots with the session"
is "$(sed -n 3p "$EV")" "ACK 1 ACCEPTED 0" "CP-2-3 then the ACK of the snapshot"
is "$(sed -n 4p "$EV")" "RUNTIME 1 1 1 0" "CP-2-13 then ReportRuntime on the ACK baseline, sequence 1, no counters yet"
is "$(sed -n 5p "$EV" | cut -d' ' -f1-2)" "RUNTIME 2" "CP-2-9 the sequence grows"
wait_for ready
ok $? "CP-1-28 ready once the view is swapped in"
is "$(metric 'proxyhost_cp_gateway_snapshots_accepted_total ')" 1 "accepted snapshots counted"
is "$(metric 'proxyhost_cp_gateway_view_version ')" 1 "the view's version exported"
is "$(metric 'proxyhost_cp_gateway_session_state{state="running"}')" 1 "the session state exported"
# The controller logs a call before it answers: the third answer may still
# be on its way.
runtime_ok_ge() {
  r=$(metric 'proxyhost_cp_gateway_rpcs_total{rpc="runtime",status="ok"}')
  [ "${r:-0}" -ge "$1" ]
}
wait_long runtime_ok_ge 3
ok $? "RPCs counted by status ($r runtime ok)"
http_get "http://127.0.0.1:$admin/metrics" | sed 1d >"$T/scrape.txt"
$PY "$top_srcdir/t/lib/metrics_lint.py" "$T/scrape.txt" 600 cp_gateway >"$T/lint.out" 2>&1
ok $? "the scrape passes metrics_lint.py (proxyhost_cp_gateway_*)"
[ -s "$T/lint.out" ] && sed 's/^/#   /' "$T/lint.out" | head -10
stop
is "$EXIT" 0 "the gateway stops cleanly"

# ---- a bad checksum, an expired snapshot (CP-3-7, CP-3-14) ---------------
for scen in bad_checksum expired identity; do
  start $scen
  wait_long has "^ACK 2 "
  ok $? "CP-3-14 the second snapshot is acknowledged ($scen)"
  case $scen in bad_checksum) want=2 ;; expired) want=1 ;; *) want=5 ;; esac
  is "$(grep '^ACK 2 ' "$EV")" "ACK 2 REJECTED $want" "CP-3-7 it is NACKed with reason $want ($scen)"
  is "$(metric 'proxyhost_cp_gateway_view_version ')" 1 "CP-3-14 the old view stays ($scen)"
  wait_for ready
  ok $? "CP-3-14 still ready on the old view ($scen)"
  r=$(metric "proxyhost_cp_gateway_snapshots_rejected_total{reason=\"$scen\"}")
  is "$r" 1 "the rejection is counted by reason ($scen)"
  n=$(count '^REGISTER')
  is "$n" 1 "CP-3-14 a NACK keeps the session ($scen)"
  stop
done

# ---- deltas (CP-3-15, CP-3-16) --------------------------------------------
start delta
wait_long has "^ACK 3 "
ok $? "CP-3-16 a full snapshot after the reopen is acknowledged"
is "$(grep '^ACK 2 ' "$EV")" "ACK 2 ACCEPTED 0" "CP-3-15 a delta on the held version is applied and ACKed"
is "$(sed -n '/^ACK 2 /,$p' "$EV" | grep '^WATCH' | head -1)" "WATCH s1 2" \
  "CP-3-16 a delta on another base reopens the stream, naming the held version"
is "$(count '^REGISTER')" 1 "CP-3-16 ... in the same session"
is "$(grep -c '^ACK 3 ' "$EV")" 1 "the bad delta is never acknowledged"
is "$(metric 'proxyhost_cp_gateway_view_version ')" 3 "the full snapshot's view is in use"
stop

# ---- the stream's end: backoff, a new session (CP-3-12) -------------------
start stream_end
wait_long regs_ge 3
ok $? "CP-3-12 the stream's end leads to a new session (three registrations)"
a=$(count '^REGISTER')
sleep 2
b=$(count '^REGISTER')
# backoff.min 200ms, max 1s: at most about ten sessions in 2 s, never a
# tight loop of hundreds.
[ $((b - a)) -le 12 ]
ok $? "no tight loop: $((b - a)) registrations in 2 s with backoff 200ms..1s"
r=$(metric 'proxyhost_cp_gateway_reconnects_total ')
[ "${r:-0}" -ge 2 ]
ok $? "reconnects counted ($r)"
stop

# ---- fatal answers at Register (CP-3-13, CP-7-4) ---------------------------
for code in invalid_argument permission_denied failed_precondition; do
  start fatal_$code
  wait_long grep -q "not retrying" "$D/ph.log"
  ok $? "CP-3-13 $code at Register: a clear log line"
  sleep 1.5
  is "$(count '^REGISTER')" 1 "CP-3-13 ... and no retry ($code)"
  is "$(grep -c 'not retrying' "$D/ph.log")" 1 "... logged once ($code)"
  not_ready
  ok $? "CP-1-28 ... not ready ($code)"
  is "$(metric 'proxyhost_cp_gateway_session_state{state="fatal"}')" 1 "... state fatal ($code)"
  stop
done

# ---- mTLS (CP-9-7, CP-8-2) ---------------------------------------------------
sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"
ok $? "certificates made with openssl"
FAKE_CERTS=$T
start ok --set controlplane_client.tls.mode=mtls \
  --set "controlplane_client.tls.cert_file=$T/worker.pem" \
  --set "controlplane_client.tls.key_file=$T/worker.key" \
  --set "controlplane_client.tls.ca_file=$T/ca.pem"
wait_long has "^RUNTIME 1 "
ok $? "CP-9-7 the session runs over mTLS" ||
  { tail -5 "$D/ph.log"; tail -5 "$D/fake.log"; } | sed 's/^/#   /'
is "$(sed -n 1p "$EV")" "REGISTER w1 i1 z1 spiffe://example.org/prod/worker/w1" \
  "CP-8-2 the controller sees the gateway's SPIFFE worker id"
stop
start ok --set controlplane_client.tls.mode=mtls \
  --set "controlplane_client.tls.cert_file=$T/other.pem" \
  --set "controlplane_client.tls.key_file=$T/other.key" \
  --set "controlplane_client.tls.ca_file=$T/ca.pem"
wait_long grep -q "register failed" "$D/ph.log"
ok $? "CP-9-7 a certificate of another CA: no session"
is "$(count '^REGISTER')" 0 "... the controller never sees a call"
not_ready
ok $? "... not ready"
# The controller refused the certificate in the TLS handshake: an
# authentication error, returned directly (CP-3-13, issue 23 item 8), not
# UNAVAILABLE retried for ever.
auth_failed() {
  r=$(metric 'proxyhost_cp_gateway_rpcs_total{rpc="register",status="unauthenticated"}')
  [ "${r:-0}" -ge 1 ]
}
wait_long auth_failed
ok $? "CP-3-13 issue 23 item 8 the handshake refusal counts as register unauthenticated"
fatal_now() { [ "$(metric 'proxyhost_cp_gateway_session_state{state="fatal"}')" = 1 ]; }
wait_long fatal_now
ok $? "CP-3-13 issue 23 item 8 ... and the gateway stops retrying (fatal)"
is "$(grep -c 'not retrying' "$D/ph.log")" 1 "issue 23 item 8 ... logged once"
is "$(metric 'proxyhost_cp_gateway_rpcs_total{rpc="register",status="unavailable"}')" 0 \
  "issue 23 item 8 ... never as unavailable"
grep -q "register failed.*status=unauthenticated.*certificate in the TLS handshake" "$D/ph.log"
ok $? "issue 23 item 8 ... the log line says the certificate was refused in the handshake"
stop
# ... while a controller that is gone is no authentication error: the
# gateway with the right certificate keeps retrying (UNAVAILABLE).
start ok --set controlplane_client.tls.mode=mtls \
  --set "controlplane_client.tls.cert_file=$T/worker.pem" \
  --set "controlplane_client.tls.key_file=$T/worker.key" \
  --set "controlplane_client.tls.ca_file=$T/ca.pem"
wait_long has "^RUNTIME 1 "
kill -9 "$FAKE"
wait "$FAKE" 2>/dev/null
reg_unavailable() {
  r=$(metric 'proxyhost_cp_gateway_rpcs_total{rpc="register",status="unavailable"}')
  [ "${r:-0}" -ge 2 ]
}
wait_long reg_unavailable
ok $? "issue 23 item 8 the controller gone over mTLS: register unavailable, retried"
is "$(metric 'proxyhost_cp_gateway_session_state{state="fatal"}')" 0 "issue 23 item 8 ... never fatal"
stop
FAKE_CERTS=

# The gateway's certificate against the controller's own identity check
# (CP-9-8): t/lib/cp_echo_server is a cp_grpc server that refuses a
# RegisterWorker whose worker_id is not the one its client certificate
# names by cp_ident.c's rule, the function controlplane_server calls
# (cp_spiffe_id, same rule as cp_spiffe_check), for
# spiffe://example.org/prod/worker/<id>; its configuration, echo-mtls.ini,
# comes with the certificates (cp_grpc_certs.sh).
# echo_gw WORKER: the echo server and a gateway with w1's certificate
# that says it is WORKER; waits for its register answer.
echo_gw() {
  D="$T/echo-$1"
  mkdir -p "$D"
  rm -f "$D/port"
  "$top_builddir/t/lib/cp_echo_server" "$T/echo-mtls.ini" "$D/port" >"$D/echo.log" 2>&1 &
  FAKE=$!
  PIDS="$PIDS $FAKE"
  wait_long test -s "$D/port"
  admin=$(free_port)
  printf '[proxyhost]\nmodules = controlplane_client\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[controlplane_client]\nbackoff.min = 200ms\nbackoff.max = 1s\n' \
    "$MODS" "$admin" >"$D/gw.ini"
  "$PROXYHOST" -c "$D/gw.ini" -control-plane "127.0.0.1:$(cat "$D/port")" \
    -cluster-id c1 -worker-id "$1" -instance-id i1 -zone z1 \
    --set "controlplane_client.tls.cert_file=$T/worker.pem" \
    --set "controlplane_client.tls.key_file=$T/worker.key" \
    --set "controlplane_client.tls.ca_file=$T/ca.pem" >"$D/ph.log" 2>&1 &
  GW=$!
  PIDS="$PIDS $GW"
  EV="$D/echo.log" # for TAP_ON_FAIL
}
reg_status() {
  r=$(metric "proxyhost_cp_gateway_rpcs_total{rpc=\"register\",status=\"$1\"}")
  [ "${r:-0}" -ge 1 ]
}
echo_gw w1
wait_long reg_status ok
ok $? "CP-9-8 the gateway's certificate (spiffe://example.org/prod/worker/w1, worker w1) passes the controller's SPIFFE worker check: RegisterWorker OK"
stop
echo_gw w2
wait_long reg_status permission_denied
ok $? "CP-9-8 the same certificate for worker w2 fails that check: PERMISSION_DENIED"
fatal_state() { [ "$(metric 'proxyhost_cp_gateway_session_state{state="fatal"}')" = 1 ]; }
wait_long fatal_state
ok $? "... and the gateway stops retrying (fatal, CP-3-13)"
stop

# ---- the controller back after an outage (issue 23 item 3) ----------------
# outage [--set ...]: a gateway ready on a fake controller, which is then
# killed (its port kept in $port).
outage() {
  start ok "$@"
  wait_long ready
  ok $? "issue 23 item 3 ready before the outage $*"
  port=$(cat "$D/port")
  kill -9 "$FAKE"
  wait "$FAKE" 2>/dev/null
}
# back NAME POLLS: the controller again on $port (its events in
# $D/events-NAME); then up to POLLS polls 50 ms apart for the new session.
# The view is still valid: the session shows in the controller's events
# (its snapshot acknowledged), not in /readyz. $i: the polls taken.
back() {
  rm -f "$D/port"
  EV="$D/events-$1"
  : >"$EV"
  CP_FAKE_PORT=$port "$PY" "$top_srcdir/t/lib/cp_fake_controller.py" "$T/gen" "$D/port" "$EV" ok \
    >>"$D/fake.log" 2>&1 &
  FAKE=$!
  PIDS="$PIDS $FAKE"
  wait_long test -s "$D/port"
  ok $? "the controller is back on its port ($port, $1)"
  i=0
  while [ $i -lt "$2" ] && ! has "^ACK 1 ACCEPTED"; do sleep 0.05; i=$((i + 1)); done
  has "^ACK 1 ACCEPTED"
}

# gRPC's own reconnect backoff (1 s x 1.6 up to 120 s) had grown to about
# 10 s between connection attempts after a 17 s outage; the gateway must
# follow [controlplane_client] backoff.max (1 s here) instead: a session
# again within backoff.max and its jitter of the controller's return,
# bounded here by 60 polls 50 ms apart.
outage
i=0
while [ $i -lt 17 ]; do sleep 1; i=$((i + 1)); done
back after17s 60
ok $? "issue 23 item 3 a new session (its snapshot ACKed) within backoff.max (+ jitter) of the controller's return ($i polls)"
stop

# The session's own timer must not add a second backoff.max (issue 23
# item 3): with backoff.min = backoff.max = 8 s the supervisor waits 4..8 s
# after each failed RegisterWorker, and one made while the channel is in
# TRANSIENT_FAILURE fails fast on the cached "Connection refused" even with
# the controller back. The controller returns just after a failed
# attempt; the channel reconnects within backoff.max and gRPC's 20 %
# jitter (9.6 s), and the session must come then, not at the timer's next
# try: within 210 polls 50 ms apart (10.5 s), the retry counted as one the
# channel's return started (proxyhost_cp_gateway_ready_retries_total).
# Before the fix: up to two backoff.max (16 s).
outage --set controlplane_client.backoff.min=8s --set controlplane_client.backoff.max=8s
reg_failed() {
  r=$(metric 'proxyhost_cp_gateway_rpcs_total{rpc="register",status="unavailable"}')
  [ "${r:-0}" -ge 1 ]
}
wait_long reg_failed
ok $? "issue 23 item 3 a RegisterWorker failed while the controller is gone"
back after-failed-attempt 210
ok $? "issue 23 item 3 a new session within backoff.max (8 s) + the channel's jitter of the controller's return, not the session timer's next try ($i polls)"
r=$(metric 'proxyhost_cp_gateway_ready_retries_total ')
[ "${r:-0}" -ge 1 ]
ok $? "issue 23 item 3 ... started by the channel's connection becoming ready (ready_retries ${r:-none})"
stop

# ---- the view expires while the controller is gone (CP-3-9, CP-1-28) -----
start short
wait_long ready
ok $? "ready on a snapshot valid for 3 s"
kill -9 "$FAKE"
wait "$FAKE" 2>/dev/null
wait_long not_ready
ok $? "CP-3-9 not ready (/readyz 503) once valid_until passed, controller unreachable"
is "$(metric 'proxyhost_cp_gateway_ready ')" 0 "CP-3-9 the ready gauge says no candidates"
stop

done_testing
