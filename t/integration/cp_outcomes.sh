#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# outcome_reporter in a real proxyhost gateway (controlplane_client +
# outcome_reporter + the test module t/modules/outcome_probe.c, which
# records N outcomes through "outcome.sink" when its admin route is
# asked), first against the scriptable fake controller
# t/lib/cp_fake_controller.py (a double: it injects the faults), then
# against the real controller (controlplane_server + redis_ownership on a
# redis-server this test starts). The fake writes one line per batch it
# read (session, sequence, outcomes, digest) and one per call's end:
# batches numbered from 1 per session (CP-5-1, CP-5-18), at most
# min(512, max_runtime_counters) outcomes each (CP-5-8) and 16 a call
# (CP-5-9); a full queue drops and counts without blocking (CP-5-7,
# CP-5-10); an unacknowledged batch resent byte for byte (CP-5-15); a
# transient error retried in the session (CP-5-16); a fence error handed
# to the supervisor, a new session numbering from 1 (CP-5-17); outcomes
# only once the session runs (CP-2-4); the real controller acknowledges
# the sequences and keeps no raw outcome in Redis (CP-1-30, CP-1-32).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/cp_fake.sh"

. "$top_srcdir/t/lib/redis.sh"

PY=/usr/bin/python3
MODS="$top_builddir/modules"
PROBE="$top_builddir/t/modules/.libs/outcome_probe.so"
require_modules controlplane_client outcome_reporter

cp_stubs

# ---- the configuration ------------------------------------------------------
IDS="-control-plane 127.0.0.1:7443 -cluster-id c1 -worker-id w1 -instance-id i1 -zone z1"
printf '[proxyhost]\nmodule_path = %s\ninclude = %s/conf.d/*.ini\n' "$MODS" "$T" >"$T/base.ini"
mkdir -p "$T/conf.d"
cp "$top_srcdir/modules/outcome_reporter/outcome_reporter.ini.sample" "$T/conf.d/or.ini"
"$PROXYHOST" -c "$T/base.ini" --check-config >"$T/check.out" 2>&1
is $? 0 "the sample passes --check-config as a drop-in (with controlplane_client)"
# shellcheck disable=SC2086
"$PROXYHOST" -c "$top_srcdir/conf/gateway.ini" --set "proxyhost.module_path=$MODS" $IDS \
  --set controlplane_client.tls.mode=disabled --check-config >"$T/check.out" 2>&1
is $? 0 "conf/gateway.ini (controlplane_client, outcome_reporter) passes --check-config"
for bad in "queue_capacity=1023" "queue_capacity=1048577" "flush_interval=0s" \
  "backoff.min=2s --set outcome_reporter.backoff.max=1s"; do
  # shellcheck disable=SC2086
  "$PROXYHOST" -c "$T/base.ini" $IDS --set outcome_reporter.$bad --check-config >"$T/check.out" 2>&1
  is $? 2 "CP-5-7 --check-config refuses outcome_reporter.$bad"
done
like "$(cat "$T/check.out")" "backoff.min" "... naming the key"

mval() { http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#' | grep -F "$1" | awk '{print $2}' | head -1; }
record() { http_get "http://127.0.0.1:$admin/v1/test/outcomes?$1" | sed -n 2p; }
TAP_ON_FAIL='echo "events:"; tail -40 "$EV"; echo "gateway log:"; tail -15 "$D/ph.log"'
has() { grep -q "$1" "$EV"; }
count() { grep -c "$1" "$EV"; }
# outcomes_in SESSION: the outcomes of the batches the fake read in it.
outcomes_in() { awk -v s="$1" '$1 == "OUTCOMES" && $2 == s { n += $4 } END { print n + 0 }' "$EV"; }
# acked_all SESSION N: every one of N outcomes acknowledged by a call.
acked_all() { [ "$(outcomes_in "$1")" -ge "$2" ] && [ "$(mval 'proxyhost_outcome_reporter_queue_depth ')" = 0 ]; }

# start SCENARIO [--set ...]: a fake controller and a gateway on it.
start() {
  scen=$1
  shift
  D="$T/$scen"
  mkdir -p "$D"
  EV="$D/events"
  : >"$EV"
  rm -f "$D/port"
  "$PY" "$top_srcdir/t/lib/cp_fake_controller.py" "$T/gen" "$D/port" "$EV" \
    "$scen" >"$D/fake.log" 2>&1 &
  FAKE=$!
  PIDS="$PIDS $FAKE"
  wait_long test -s "$D/port"
  gateway "127.0.0.1:$(cat "$D/port")" "$@"
}
# gateway ADDRESS [--set ...]: the gateway in $D.
gateway() {
  addr=$1
  shift
  admin=$(free_port)
  cat >"$D/gw.ini" <<EOF2
[proxyhost]
modules = controlplane_client, outcome_reporter, $PROBE
module_path = $MODS
[admin]
listen = 127.0.0.1:$admin
[controlplane_client]
tls.mode = disabled
runtime_interval.min = 100ms
backoff.min = 200ms
backoff.max = 1s
[outcome_reporter]
queue_capacity = 1024
flush_interval = 200ms
backoff.min = 200ms
backoff.max = 1s
EOF2
  "$PROXYHOST" -c "$D/gw.ini" -control-plane "$addr" \
    -cluster-id c1 -worker-id w1 -instance-id i1 -zone z1 "$@" \
    >"$D/ph.log" 2>&1 &
  GW=$!
  PIDS="$PIDS $GW"
}
stop() {
  kill -TERM "$GW" 2>/dev/null
  wait_exit "$GW" 10
  [ -n "$FAKE" ] && kill -9 "$FAKE" 2>/dev/null && wait "$FAKE" 2>/dev/null
  FAKE=
}
running_session() { grep -q "^RUNTIME 1 " "$EV"; }

# ---- acknowledged; the bounds (CP-5-7..10) --------------------------------
start oc_ack_all
wait_long running_session
ok $? "the session runs (the first ACK, then heartbeats)"
is "$(count '^OUTCOMES')" 0 "CP-2-4 no outcome call without outcomes"
out=$(record n=1500)
is "$out" "ok=1024 full=476 invalid=0" \
  "CP-5-7 CP-5-10 a full queue (1024) drops the rest, and record() returns at once"
wait_long acked_all s1 1024
ok $? "CP-1-30 every recorded outcome reaches the controller and is acknowledged"
is "$(outcomes_in s1)" 1024 "... each once (no resend after an acknowledgement)"
is "$(awk '$1 == "OUTCOMES" { print $3 }' "$EV" | tr '\n' ' ')" \
  "$(seq 1 "$(count '^OUTCOMES')" | tr '\n' ' ')" \
  "CP-5-1 batches numbered 1, 2, ... in the session"
is "$(awk '$1 == "OUTCOMES" && $4 > 50' "$EV" | wc -l)" 0 \
  "CP-5-8 no batch over min(512, max_runtime_counters = 50)"
is "$(awk '$1 == "OUTCALL" && $3 > 16' "$EV" | wc -l)" 0 "CP-5-9 no call over 16 batches"
is "$(awk '$1 == "OUTCALL" { print $3 }' "$EV" | head -1)" 16 \
  "CP-5-9 ... and 21 ready batches go as 16, then the rest"
is "$(mval 'proxyhost_outcome_reporter_recorded_total ')" 1024 "recorded counted"
is "$(mval 'proxyhost_outcome_reporter_dropped_total{reason="full"}')" 476 \
  "CP-5-10 drops counted by reason (full)"
is "$(mval 'proxyhost_outcome_reporter_batches_acknowledged_total ')" \
  "$(count '^OUTCOMES')" "acknowledged batches counted"
is "$(mval 'proxyhost_outcome_reporter_batches_resent_total ')" 0 "nothing resent"
n0=$(count '^OUTCOMES')
out=$(record n=7)
is "$out" "ok=7 full=0 invalid=0" "seven more recorded"
partial() { awk '$1 == "OUTCOMES" && $4 == 7' "$EV" | grep -q .; }
wait_long partial
ok $? "a partial batch (7) is cut on the flush interval"
is "$(awk '$1 == "OUTCOMES" && $4 == 7 { print $3 }' "$EV")" "$((n0 + 1))" "... under the next sequence"
out=$(record "n=3&bad=1")
is "$out" "ok=0 full=0 invalid=3" "malformed outcomes refused (PH_EINVAL)"
is "$(mval 'proxyhost_outcome_reporter_dropped_total{reason="invalid"}')" 3 "... and counted (invalid)"
is "$(mval 'proxyhost_cp_gateway_rpcs_total{rpc="outcomes",status="ok"}')" \
  "$(count '^OUTCALL')" "the session counts the outcome calls it made"
http_get "http://127.0.0.1:$admin/metrics" | sed 1d >"$T/scrape.txt"
$PY "$top_srcdir/t/lib/metrics_lint.py" "$T/scrape.txt" 600 cp_gateway outcome_reporter >"$T/lint.out" 2>&1
ok $? "the scrape passes metrics_lint.py (proxyhost_outcome_reporter_*)"
[ -s "$T/lint.out" ] && sed 's/^/#   /' "$T/lint.out" | head -10
stop
is "$EXIT" 0 "the gateway stops cleanly"

# ---- acknowledged nothing: the same bytes again (CP-5-15) -----------------
start oc_ack_none
wait_long running_session
# Two full batches (50 each): cut together, sent in one call.
is "$(record n=100)" "ok=100 full=0 invalid=0" "100 recorded"
wait_long acked_all s1 200
ok $? "CP-5-15 the unacknowledged batches come again and are acknowledged"
is "$(awk '$1 == "OUTCALL" { print $3, $4, $5 }' "$EV" | tr '\n' ' ')" "2 OK 0 2 OK 2 " \
  "two calls of the same two batches: acknowledged 0, then 2"
for sq in 1 2; do
  is "$(awk -v q=$sq '$1 == "OUTCOMES" && $3 == q { print $5 }' "$EV" | sort -u | wc -l)" 1 \
    "CP-5-15 batch $sq resent with the same digest (same bytes, same sequence)"
done
is "$(mval 'proxyhost_outcome_reporter_batches_resent_total ')" 2 "resends counted"
stop

# ---- UNAVAILABLE: retried in the same session (CP-5-16) -------------------
start oc_unavailable
wait_long running_session
is "$(record n=100)" "ok=100 full=0 invalid=0" "100 recorded"
wait_long acked_all s1 200
ok $? "CP-5-16 after UNAVAILABLE the same batches are sent again and acknowledged"
is "$(awk '$1 == "OUTCALL" { print $2, $3, $4 }' "$EV" | tr '\n' ' ')" "s1 2 UNAVAILABLE s1 2 OK " \
  "CP-5-16 ... in the same session"
is "$(count '^REGISTER')" 1 "CP-5-16 a transient error keeps the session"
is "$(mval 'proxyhost_outcome_reporter_calls_total{status="unavailable"}')" 1 "calls counted by status"
stop

# ---- FAILED_PRECONDITION: a new session numbering from 1 (CP-5-17) -------
start oc_failed_precondition
wait_long running_session
is "$(record n=100)" "ok=100 full=0 invalid=0" "100 recorded"
regs2() { [ "$(count '^REGISTER')" -ge 2 ] && grep -q "^RUNTIME 1 " "$EV" && [ "$(grep -c '^ACK' "$EV")" -ge 2 ]; }
wait_long regs2
ok $? "CP-5-17 FAILED_PRECONDITION from ReportOutcomes: the supervisor starts a new session"
s2_running() { [ "$(grep -c '^RUNTIME 1 ' "$EV")" -ge 2 ]; }
wait_long s2_running
is "$(record n=30)" "ok=30 full=0 invalid=0" "30 more recorded"
wait_long acked_all s2 30
ok $? "CP-5-18 the new session's batches are acknowledged"
is "$(awk '$1 == "OUTCOMES" && $2 == "s2" { print $3, $4 }' "$EV" | head -1)" "1 30" \
  "CP-5-18 ... numbered from 1 again"
is "$(mval 'proxyhost_outcome_reporter_dropped_total{reason="session"}')" 100 \
  "CP-5-18 the old session's sent, unacknowledged outcomes dropped and counted"
is "$(grep -c "refused the session's outcome batches" "$D/ph.log")" 1 "the refusal logged once"
like "$(grep "refused the session's outcome batches" "$D/ph.log")" "failed_precondition" "... with its status"
stop

# ---- the real controller (CP-1-30, CP-1-32) --------------------------------
if ! have_module controlplane_server || ! have_module redis_ownership ||
  ! have_module store_sqlite || ! have_module admin_api ||
  ! have_module pool_api; then
  skip "the controller's modules are not built"
  done_testing
  exit
fi
start_redis "$T/redis"
ok $? "redis-server starts"
CTL="$top_builddir/tools/proxyhostctl"
"$CTL" admin-token new "$T/admin.token" >/dev/null
mkdir -p "$T/secrets"
umask 077
head -c 32 /dev/urandom >"$T/ref.key"
umask 022
cadmin=$(free_port) cpp=$(free_port)
cat >"$T/ctl.ini" <<EOC
[proxyhost]
modules = store_sqlite, redis_ownership, controlplane_server, admin_api, pool_api
module_path = $MODS
[admin]
listen = 127.0.0.1:$cadmin
[store_sqlite]
path = $T/pool.db
revision_recheck = 100ms
[admin_api]
store = store_sqlite
token_file = $T/admin.token
[pool_api]
store = store_sqlite
token_file = $T/admin.token
[redis_ownership]
# a new Redis for this test: no gateway can hold an ownership it forgot
hold_fresh_state = false
address = 127.0.0.1:$REDIS_PORT
cluster_id = c1
[controlplane_server]
listen = 127.0.0.1:$cpp
tls.mode = disabled
cluster_id = c1
secrets_dir = $T/secrets
reference_key_file = $T/ref.key
assign_interval = 200ms
watch_poll_interval = 100ms
min_snapshot_interval = 0s
EOC
"$PROXYHOST" -c "$T/ctl.ini" >"$T/ctl.log" 2>&1 &
CPID=$!
PIDS="$PIDS $CPID"
wait_for healthy "$cadmin"
ok $? "the controller starts (controlplane_server, redis_ownership, store_sqlite)"
"$CTL" --admin "127.0.0.1:$cadmin" --token-file "$T/admin.token" proxy add p1 \
  --protocol http_connect --host 192.0.2.1 --port 3128 --groups g --capacity 10 \
  --zone z1 >/dev/null
ok $? "proxyhostctl proxy add p1"
D="$T/real"
mkdir -p "$D"
EV="$D/events"
: >"$EV"
TAP_ON_FAIL='echo "gateway:"; grep -v "snapshot view in use" "$D/ph.log" | tail -15; http_get "http://127.0.0.1:$admin/metrics" | grep -E "outcome_reporter_[a-z_]+(_total)?[{ ]" | grep -v " 0$"; echo "controller log:"; grep -iv debug "$T/ctl.log" | tail -15'
gateway "127.0.0.1:$cpp"
gw_running() { [ "$(mval 'proxyhost_cp_gateway_rpcs_total{rpc="runtime",status="ok"}')" -ge 1 ]; }
wait_long gw_running
ok $? "the gateway's session runs on the real controller"
MARK=rule-outcome-marker-7f3a
is "$(record "n=120&rule=$MARK")" "ok=120 full=0 invalid=0" "120 outcomes recorded"
# The controller's max_runtime_counters (controlplane_server's) sizes the
# batches: one call of the 120, then another of 7, sequences 1 and 2.
acked_n() { [ "$(mval 'proxyhost_outcome_reporter_batches_acknowledged_total ')" -ge "$1" ] &&
  [ "$(mval 'proxyhost_outcome_reporter_queue_depth ')" = 0 ]; }
wait_long acked_n 1
ok $? "CP-1-30 the real controller acknowledges the gateway's batch"
is "$(record "n=7&rule=$MARK")" "ok=7 full=0 invalid=0" "7 more recorded"
wait_long acked_n 2
ok $? "CP-1-30 ... and the next sequence"
cm=$(http_get "http://127.0.0.1:$cadmin/metrics")
oc_ok=$(printf '%s\n' "$cm" | grep -F 'proxyhost_cp_controller_rpcs_total{method="ReportOutcomes",code="OK"}' | awk '{print $2}')
[ "${oc_ok:-0}" -ge 1 ]
ok $? "the controller counts its ReportOutcomes calls OK ($oc_ok)"
is "$(mval 'proxyhost_outcome_reporter_calls_total{status="ok"}')" "$oc_ok" \
  "... as many as the gateway made"
is "$(mval 'proxyhost_outcome_reporter_batches_resent_total ')" 0 "nothing resent"
redis_dump "$T/redis" >"$T/redis.dump" 2>&1
grep -q 'out_seq' "$T/redis.dump"
ok $? "CP-5-11 Redis holds the session's outcome fence (its last sequence)"
seq_now=$(grep -A1 '^out_seq$' "$T/redis.dump" | sed -n 2p)
is "$seq_now" 2 "CP-1-30 ... at the gateway's last acknowledged sequence (2)"
grep -q "$MARK" "$T/redis.dump"
is $? 1 "CP-1-32 no raw outcome in Redis (the outcomes' rule id is nowhere)"
kill -TERM "$GW" 2>/dev/null
wait_exit "$GW" 10
is "$EXIT" 0 "the gateway stops cleanly"
kill -TERM "$CPID"
wait_exit "$CPID" 10
is "$EXIT" 0 "the controller stops cleanly"
stop_redis "$T/redis"

done_testing
