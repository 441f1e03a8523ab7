#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every control-plane role reloaded under traffic (issue 23 item 1): a
# private redis-server, a controller proxyhost (store_sqlite,
# redis_ownership, controlplane_server, admin_api; t/lib/controller.sh), a
# gateway proxyhost (controlplane_client, outcome_reporter, pool, http_proxy) with one
# upstream (a proxyhost `local` instance) in front of t/lib/http_target.py.
# While requests go through the gateway, the controller and the gateway
# are each sent SIGHUP three times. Before the fix, controlplane_client
# kept conf_str() pointers past the reload (docs/sdk.md: valid until the
# next reload): its next RegisterWorker/ACK/ReportRuntime read freed
# memory (ASan: heap-use-after-free; without it, "worker_id is missing or
# malformed" and a fatal session). After: one session throughout, the
# gateway ready, every request answered, the runtime reports going on,
# and no sanitizer report in either log (run it in an
# --enable-sanitizers / CFLAGS=-fsanitize=address,undefined build too).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
. "$top_srcdir/t/lib/cp_fake.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api pool_api \
  controlplane_client outcome_reporter pool round_robin http_proxy direct

CTL="$top_builddir/tools/proxyhostctl"
TAP_ON_FAIL='for f in ctl gw; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | grep -v "msg=access" | tail -8; done'
scrape() { http_get "http://127.0.0.1:$1/metrics"; }
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
reloads_ok() { # ADMIN N: proxyhost_reloads_total{result="ok"} reached N
  [ "$(metric "$(scrape "$1")" 'proxyhost_reloads_total{result="ok"}')" = "$2" ]
}
runtime_ok() { metric "$(scrape "$gwa")" 'proxyhost_cp_gateway_rpcs_total{rpc="runtime",status="ok"}'; }

# ---- the parts --------------------------------------------------------------
start_redis "$T/redis"; ok $? "redis-server starts"
"$PY" "$top_srcdir/t/lib/http_target.py" serve --port-file "$T/target.port" \
  --lifetime 300 >"$T/target.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/target.port"; TGT=$(cat "$T/target.port")
ok $? "an HTTP target on 127.0.0.1:$TGT"
up=$(free_port)
printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
  "$top_builddir/modules" "$(free_port)" "$up" >"$T/up.ini"
"$PROXYHOST" -c "$T/up.ini" >>"$T/up.log" 2>&1 &
PIDS="$PIDS $!"
wait_for port_open "$up"; ok $? "an upstream proxy (proxyhost local, HTTP CONNECT) on $up"

admin=$(free_port) cpp=$(free_port)
controller_ini "$T/ctl.ini" "$admin" "$cpp"
cat >>"$T/ctl.ini" <<EOF
runtime_interval = 200ms
EOF
"$PROXYHOST" -c "$T/ctl.ini" >>"$T/ctl.log" 2>&1 &
CTL_PID=$!
PIDS="$PIDS $CTL_PID"
wait_long healthy "$admin"; ok $? "the controller starts"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@" >/dev/null; }
# A credential whose password must live in one place in the gateway: its
# view (CP-1-18, issue 23 item 10). The upstream asks for none and ignores
# the header.
PW=pw-Reload-Held-Once-8c1e77
(umask 077 && printf 'ruser:%s\n' "$PW" >"$T/secrets/cred-r")
ctl credential add cred-r &&
  ctl proxy add u1 --protocol http_connect --host 127.0.0.1 --port "$up" --groups web --capacity 50 --secret-ref cred-r &&
  ctl route add web --position 100 --host 127.0.0.1 --group web --strategy round_robin
ok $? "proxyhostctl: one credential, one proxy naming it, one route"

gwa=$(free_port) gwh=$(free_port)
# The gateway's [admin] and [controlplane_client]: cp_client_ini
# (t/lib/cp_fake.sh: plaintext, a quick backoff).
{
  printf '[proxyhost]\nmodules = %s\nmodule_path = %s\n[log]\nlevel = debug\n' \
    "controlplane_client, outcome_reporter, direct, round_robin, pool, http_proxy" \
    "$top_builddir/modules"
  cp_client_ini "$gwa"
  printf '[outcome_reporter]\nflush_interval = 200ms\n[pool]\nstrategies = round_robin\n'
  printf '[http_proxy]\nlisten = 127.0.0.1:%s\nconnector = pool\n' "$gwh"
} >"$T/gw.ini"
"$PROXYHOST" -c "$T/gw.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
  -worker-id w1 -instance-id w1-a -zone z1 >>"$T/gw.log" 2>&1 &
GW_PID=$!
PIDS="$PIDS $GW_PID"
through() { "$CURL" -s -m 5 -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$gwh" "http://127.0.0.1:$TGT/hello"; }
served() { [ "$(through)" = 200 ]; }
wait_long served; ok $? "the gateway is ready and serves through u1"

# ---- reloads under traffic (issue 23 item 1) --------------------------------
# 150 requests one after another in the background, each status on a line.
( i=0; while [ $i -lt 150 ]; do through; echo; i=$((i + 1)); done ) >"$T/codes" 2>&1 &
LOAD=$!
PIDS="$PIDS $LOAD"
rt0=$(runtime_ok)
# The session count before the reloads: the first ownership change may
# replace a session by itself (issue 23 item 2, not this test's subject).
rc0=$(metric "$(scrape "$gwa")" 'proxyhost_cp_gateway_reconnects_total')
for n in 1 2 3; do
  kill -HUP "$CTL_PID"
  wait_long reloads_ok "$admin" "$n"; ok $? "issue 23 item 1: the controller reloads ($n)"
  kill -HUP "$GW_PID"
  wait_long reloads_ok "$gwa" "$n"; ok $? "issue 23 item 1: the gateway reloads ($n)"
  # A few runtime reports (every 200 ms, the controller's runtime_interval) after each reload: each names the
  # worker from the configuration, which must outlive the reload.
  wait_cond "[ \"\$(runtime_ok)\" -ge $((${rt0:-0} + 4 * n)) ]"
  ok $? "issue 23 item 1: runtime reports go on after reload $n (CP-1-15)"
done
wait_exit "$LOAD" 120; is "$EXIT" 0 "the traffic ran to its end"
is "$(grep -c . "$T/codes")" 150 "150 requests made"
is "$(grep -vc '^200$' "$T/codes")" 0 "issue 23 item 1: every request through the reloads answered 200"
m=$(scrape "$gwa")
is "$(metric "$m" 'proxyhost_cp_gateway_reconnects_total')" "$rc0" \
  "issue 23 item 1: one session throughout the reloads (no reconnect)"
is "$(metric "$m" 'proxyhost_cp_gateway_session_state{state="running"}')" 1 \
  "issue 23 item 1: the session is running"
ready "$gwa"; ok $? "issue 23 item 1: the gateway is ready"
ready "$admin"; ok $? "the controller is ready"
for f in ctl gw; do
  grep -E 'malformed|not retrying|permission_denied' "$T/$f.log" >"$T/$f.bad"
  is "$(wc -l <"$T/$f.bad")" 0 "issue 23 item 1: no identity error, no fatal session ($f)"
  grep -E -A14 'AddressSanitizer|LeakSanitizer|runtime error:' "$T/$f.log" >"$T/$f.san"
  is "$(wc -l <"$T/$f.san")" 0 "issue 23 item 1: no sanitizer report ($f)"
  cat "$T/$f.bad" "$T/$f.san" | head -16 | sed "s/^/#   /"
done

# ---- credentials only in the view (CP-1-18, issue 23 item 10) --------------
# More proxies with the same credential, one at a time, until the
# controller has sent a delta (it sends a full snapshot instead when the
# last one is not acknowledged yet; at most four tries): the delta's
# result takes the material from the view (the held snapshot, the deltas'
# base, has none).
v0=$(metric "$(scrape "$gwa")" 'proxyhost_cp_gateway_view_version')
deltas() { metric "$(scrape "$admin")" 'proxyhost_cp_controller_deltas_sent_total'; }
in_view() { curl -s -m 5 "http://127.0.0.1:$gwa/v1/cp/view" | grep -q "\"$1\""; }
for k in 2 3 4 5; do
  ctl proxy add "u$k" --protocol http_connect --host 127.0.0.1 --port "$up" --groups web --capacity 50 --secret-ref cred-r
  wait_long in_view "u$k" || break
  d=$(deltas)
  [ "${d:-0}" -ge 1 ] && break
done
in_view "u$k"; ok $? "issue 23 item 10: proxies added with the same credential reach the gateway's view (u2..u$k)"
[ "${d:-0}" -ge 1 ]; ok $? "issue 23 item 10: the controller sent deltas ($d), the path under test"
is "$(metric "$(scrape "$gwa")" 'proxyhost_cp_gateway_snapshots_rejected_total{reason="delta"}')" 0 \
  "issue 23 item 10: every delta applied with the view's material (none dropped)"
i=0
while [ $i -lt 10 ] && ! served; do i=$((i + 1)); done
served; ok $? "requests still go through (with the credential)"
# The password's bytes in the gateway's writable memory: the view's copy
# only (the held snapshot, stream messages and snapshots are wiped before
# they are freed).
# Not under ASan: its quarantine and terabytes of shadow mappings are not
# a heap this scan can read.
if ldd "$PROXYHOST" 2>/dev/null | grep -q libasan; then
  skip "the memory scan of issue 23 item 10 (an ASan build)"
else
  n=$("$PY" "$top_srcdir/t/lib/mem_count.py" "$GW_PID" "$PW" 2>"$T/mem.err")
  ok $? "the gateway's memory was read (t/lib/mem_count.py)" || sed 's/^/#   /' "$T/mem.err"
  is "$n" 1 "CP-1-18 issue 23 item 10: the password is in the gateway's memory once (its view), v$v0 and later"
fi

for r in gw:"$GW_PID" ctl:"$CTL_PID"; do
  kill -TERM "${r#*:}"
  wait_exit "${r#*:}" 15
  # On a failure: the exit's own lines (a sanitizer's report, the drain).
  is "$EXIT" 0 "${r%%:*} stops cleanly after the reloads" ||
    grep -E -A6 'Sanitizer|runtime error:|drain|stopp' "$T/${r%%:*}.log" | grep -v 'msg=access' | tail -24 | sed 's/^/#   /'
done
done_testing
