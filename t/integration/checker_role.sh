#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The checker role (issue 26) in a real proxyhost against real upstreams
# and the scriptable fake controller t/lib/cp_fake_controller.py (its
# CheckerControlPlane: tasks from a file, every call one line of events).
# Upstreams: proxyhost `local` (http_proxy and socks5: elite), tinyproxy
# (forwarding in absolute form adds Via: anonymous; with XTinyproxy it
# names the client: transparent; with BasicAuth and the wrong password:
# auth_failed), one killed (dial_refused), one stopped with SIGSTOP
# (TIMEOUT), one that serves a canned page (bad_echo); the echo endpoint
# is the `echo` module. It proves: RegisterChecker with max_concurrency
# and tiers (CP-6-1); every task answered within its deadline (CP-6-2);
# BASIC, EGRESS and TARGET through each kind (CP-6-3, CP-6-4, CP-6-5); the
# echo endpoint down makes EGRESS CHECKER_ERROR, never FAILED; batches
# numbered from 1 per session and resent with the same digest; a stale
# session and a fence refusal start a new session; no credential in the
# checker's log or metrics; lateness (a task with less than
# task.min_budget left, a check the checker's loop ended late) is
# CHECKER_ERROR late_task / short_budget, never TIMEOUT; a proxy's answer
# unread at the deadline is read (its result, or CHECKER_ERROR loop_late).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/cp_fake.sh"

PY=/usr/bin/python3
MODS="$top_builddir/modules"
require_modules checker echo
command -v tinyproxy >/dev/null 2>&1
ok $? "tinyproxy is installed (scripts/install-deps.sh)"
cp_stubs

PW=pw-Checker-Never-Logged-4f1a
TAP_ON_FAIL='echo "events:"; tail -30 "$EV"; echo "checker log:"; tail -15 "$D/chk.log"'

# ---- upstreams and the echo ---------------------------------------------------
U1=$(free_port) U2=$(free_port) U3=$(free_port) U4=$(free_port) U5=$(free_port)
U6=$(free_port) U7=$(free_port) E=$(free_port) CANNED=$(free_port)
local_upstream() { # NAME FRONTEND PORT
  printf '[proxyhost]\nmodules = direct, %s\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[%s]\nlisten = 127.0.0.1:%s\n' \
    "$2" "$MODS" "$(free_port)" "$2" "$3" >"$T/$1.ini"
  "$PROXYHOST" -c "$T/$1.ini" >>"$T/$1.log" 2>&1 &
  PIDS="$PIDS $!"
}
local_upstream u1 http_proxy "$U1"
local_upstream u2 socks5 "$U2"
local_upstream u5 socks5 "$U5"
U5_PID=$!
tiny() { # NAME PORT [EXTRA LINE]
  printf 'Port %s\nListen 127.0.0.1\nTimeout 60\nMaxClients 50\nLogLevel Info\nLogFile "%s/%s.log"\nPidFile "%s/%s.pid"\nAllow 127.0.0.1\n%s\n' \
    "$2" "$T" "$1" "$T" "$1" "${3:-}" >"$T/$1.conf"
  tinyproxy -d -c "$T/$1.conf" >"$T/$1.out" 2>&1 &
  PIDS="$PIDS $!"
}
tiny t3 "$U3"
tiny t4 "$U4" "XTinyproxy Yes"
tiny t6 "$U6" "BasicAuth alice $PW"
tiny t7 "$U7"
T7_PID=$!
"$PY" -c '
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16); s.settimeout(300)
page = b"<html><body>Welcome</body></html>"
def one(c):
    c.settimeout(5)
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(page), page))
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=one, args=(c,), daemon=True).start()
' "$CANNED" >"$T/canned.log" 2>&1 &
PIDS="$PIDS $!"
printf '[proxyhost]\nmodules = echo\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[echo]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$E" >"$T/echo.ini"
"$PROXYHOST" -c "$T/echo.ini" >>"$T/echo.log" 2>&1 &
ECHO_PID=$!
PIDS="$PIDS $ECHO_PID"
for p in "$U1" "$U2" "$U3" "$U4" "$U5" "$U6" "$U7" "$E" "$CANNED"; do
  wait_for port_open "$p" || echo "# port $p not open"
done
port_open "$U7" && port_open "$E" && port_open "$CANNED"
ok $? "upstreams, the canned page and the echo endpoint listen"
ECHO="http://127.0.0.1:$E/echo"
out=$("$CURL" -s -m 5 -H 'X-Proxyhost-Nonce: n-direct' "$ECHO")
like "$out" '"nonce":"n-direct"' "CP-6-4 the echo endpoint answers with the nonce"
like "$out" '"remote_addr":"127.0.0.1"' "CP-6-4 ... and the address it saw"

kill "$U5_PID"
wait_exit "$U5_PID" 10
kill -STOP "$T7_PID"

# CP-6-6: the checker observes and reports; it has no way to write pool
# state: it links no Redis, PostgreSQL or SQLite client.
ldd "$MODS/checker/.libs/checker.so" >"$T/ldd.out" 2>&1
ok $? "ldd reads checker.so"
grep -E 'hiredis|libpq|sqlite' "$T/ldd.out"
is $? 1 "CP-6-6 the checker links no Redis, PostgreSQL or SQLite client"

# ---- the checker against the fake controller -------------------------------------
# start SCENARIO [--set ...]: a fake controller and a checker on it (with
# FAKE_CERTS set: mTLS, the checker with checker.pem).
FAKE_CERTS=
start() {
  scen=$1
  shift
  D="$T/$scen${FAKE_CERTS:+-mtls}"
  mkdir -p "$D"
  : >"$D/tasks"
  export CP_FAKE_TASKS="$D/tasks"
  cp_fake_start "$D" "$scen" "$FAKE_CERTS"
  admin=$(free_port)
  printf '[proxyhost]\nmodules = checker\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n' "$MODS" "$admin" >"$D/chk.ini"
  printf '[checker]\ntls.mode = disabled\nbackoff.min = 200ms\nbackoff.max = 1s\nbatch.flush = 100ms\ntask.report_margin = 100ms\n' >>"$D/chk.ini"
  printf 'max_concurrency = 16\ntiers = basic,egress,target\necho.probe_interval = 1s\n' >>"$D/chk.ini"
  "$PROXYHOST" -c "$D/chk.ini" -control-plane "127.0.0.1:$(cat "$D/port")" \
    -cluster-id c1 -checker-id k1 -instance-id k1-a -zone z1 "$@" >>"$D/chk.log" 2>&1 &
  CHK=$!
  PIDS="$PIDS $CHK"
}
N=0
# task TIER PROTOCOL PORT [key=value ...]: appends a task; prints its id.
task() {
  N=$((N + 1))
  id="t$N"
  extra=""
  tier=$1 proto=$2 port=$3
  shift 3
  for kv in "$@"; do extra="$extra, \"${kv%%=*}\": \"${kv#*=}\""; done
  printf '{"task_id": "%s", "proxy_id": "p%s", "tier": %s, "protocol": %s, "port": %s, "echo_url": "%s", "nonce": "nonce-%s", "deadline_ms": 3000%s}\n' \
    "$id" "$N" "$tier" "$proto" "$port" "$ECHO" "$id" "$extra" >>"$D/tasks"
  LAST=$id
}
# seen ID: the last observation of task ID: "status reason anonymity egress".
seen() { awk -v t="$1" '$1 == "OB" && $3 == t { r = $5 " " $6 " " $7 " " $8 } END { print r }' "$EV"; }
observed() { [ -n "$(seen "$1")" ]; }
mval() { http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#' | grep -F "$1" | awk '{print $2}' | head -1; }

start chk_ok
wait_long grep -q '^CWATCH s1' "$EV"
ok $? "the checker registers and opens its task stream"
like "$(grep '^CREGISTER' "$EV" | head -1)" "CREGISTER k1 k1-a z1 16 1,2,3" \
  "CP-6-1 RegisterChecker carries the identity, max_concurrency and the tiers"

# BASIC (1) through each kind: http_connect 1, socks5 2, http 3.
task 1 1 "$U1"; B1=$LAST
task 1 2 "$U2"; B2=$LAST
task 1 1 "$U3"; B3=$LAST
task 1 1 "$U6" user=alice pass=wrong-password; B6=$LAST
task 1 1 "$U6" user=alice "pass=$PW"; B6OK=$LAST
task 1 2 "$U5"; B5=$LAST
task 1 1 "$U7" deadline_ms=1500; B7=$LAST
# EGRESS (2)
task 2 1 "$U1"; G1=$LAST
task 2 3 "$U3"; G3=$LAST
task 2 3 "$U4"; G4=$LAST
task 2 3 "$CANNED"; GC=$LAST
# TARGET (3): a tunnel to host:port, a GET of a URL.
task 3 2 "$U2" "target=127.0.0.1:$E"; T2=$LAST
task 3 3 "$U3" "target=http://127.0.0.1:$E/health"; T3=$LAST
for id in $B1 $B2 $B3 $B6 $B6OK $B5 $B7 $G1 $G3 $G4 $GC $T2 $T3; do
  wait_long observed "$id" || echo "# no observation of $id"
done
# status: 1 OK, 2 FAILED, 3 TIMEOUT, 4 CHECKER_ERROR; anonymity: 1
# transparent, 2 anonymous, 3 elite.
like "$(seen "$B1")" "1 - 0" "CP-6-3 BASIC through proxyhost's http_proxy (CONNECT): OK"
like "$(seen "$B2")" "1 - 0" "CP-6-3 BASIC through proxyhost's socks5: OK"
like "$(seen "$B3")" "1 - 0" "CP-6-3 BASIC through tinyproxy (CONNECT): OK"
like "$(seen "$B6")" "2 auth_failed" "CP-6-3 wrong credentials: FAILED auth_failed"
like "$(seen "$B6OK")" "1 - 0" "CP-6-3 the right credentials from the task: OK"
like "$(seen "$B5")" "2 dial_refused" "CP-6-3 a killed proxy: FAILED dial_refused"
like "$(seen "$B7")" "3 handshake_timeout" "CP-6-2 a stopped proxy: TIMEOUT at the task's deadline"
like "$(seen "$G1")" "1 - 3 127.0.0.1" "CP-6-4 EGRESS through proxyhost: elite, the egress address the echo saw"
like "$(seen "$G3")" "1 - 2 127.0.0.1" "CP-6-4 EGRESS through tinyproxy, which adds Via: anonymous"
like "$(seen "$G4")" "1 - 1 127.0.0.1" "CP-6-4 tinyproxy naming the client (X-Tinyproxy): transparent"
like "$(seen "$GC")" "2 bad_echo" "CP-6-4 a proxy serving a canned page: FAILED bad_echo"
like "$(seen "$T2")" "1 - 0" "CP-6-5 TARGET host:port through socks5: OK"
like "$(seen "$T3")" "1 - 0" "CP-6-5 TARGET URL through an http proxy: OK"
grep '^OBS s1 ' "$EV" | awk '{print $3}' >"$D/seqs"
[ "$(head -1 "$D/seqs")" = 1 ] && sort -n -c "$D/seqs" 2>/dev/null
ok $? "CP-6-2 batches numbered from 1 in the session, increasing"
is "$(mval 'proxyhost_checker_checks_total{tier="basic",status="ok"}')" 4 \
  "the checks metric counts by tier and status"
is "$(mval 'proxyhost_checker_running ')" 0 "nothing runs once every task was answered"
grep -q "$PW" "$D/chk.log" "$EV" "$D/fake.log"
is $? 1 "the task's password is in no log"
http_get "http://127.0.0.1:$admin/metrics" | grep -q -e "$PW" -e "127.0.0.1:$U" -e '"p[0-9]'
is $? 1 "metrics carry no credential, no proxy id, no address"
http_get "http://127.0.0.1:$admin/metrics" | sed 1d >"$D/metrics.txt"
"$PROMTOOL" check metrics <"$D/metrics.txt" >"$D/promtool.out" 2>&1
ok $? "promtool accepts the checker's exposition"
sed 's/^/# promtool: /' "$D/promtool.out"

# Lateness is the checker's or the controller's, never the proxy's
# (issue 26): a task that comes with less than task.min_budget (500 ms)
# left is refused CHECKER_ERROR late_task; a check the checker's own loop
# ended late (the checker stopped past its deadline), served less than
# task.min_budget, is CHECKER_ERROR short_budget. Both through the stopped
# proxy, which would be a TIMEOUT.
task 1 1 "$U7" deadline_ms=450; BL=$LAST
wait_long observed "$BL"
like "$(seen "$BL")" "4 late_task" \
  "CP-6-2 a task arriving with less than task.min_budget left: CHECKER_ERROR late_task, no TIMEOUT"
wait_cond '[ "$(mval "proxyhost_checker_check_reasons_total{tier=\"basic\",reason=\"late_task\"}")" = 1 ]'
ok $? "late_task counted in check_reasons_total"
wait_cond '[ "$(mval "proxyhost_checker_tasks_refused_total{reason=\"late\"}")" = 1 ]'
ok $? "... and in tasks_refused_total{reason=\"late\"}"
task 1 1 "$U7" deadline_ms=1500; BS=$LAST
wait_long grep -q "^TASK s1 $BS\$" "$EV"
# The check runs: the checker's socket to the stopped proxy is connected
# (its kernel accepts; every earlier check of it has closed its socket).
wait_long eval '[ -n "$(ss -Htn state established dst "127.0.0.1:$U7")" ]'
ok $? "the check of the stopped proxy runs"
kill -STOP "$CHK"
# Its deadline is at most 1.5 s after now: stopped until 1.1 s past it,
# the check was served at most 400 ms of its budget.
until_ms=$(($(date +%s%3N) + 2600))
wait_long eval '[ "$(date +%s%3N)" -ge "$until_ms" ]'
kill -CONT "$CHK"
wait_long observed "$BS"
like "$(seen "$BS")" "4 short_budget" \
  "CP-6-2 a check its own checker ended late (served < task.min_budget): CHECKER_ERROR short_budget, not TIMEOUT"

# The proxy's answer waiting unread at the deadline (issue 26, envoy#28699):
# the checker's loop stopped across a check's deadline, the proxy having
# answered meanwhile: at the deadline the timer and the answer are ready
# together and the timer runs first. A check that the answer ends is the
# proxy's result (OK here); one that the answer moves on a step (SOCKS5's
# method reply, the CONNECT still to send) was held up by the checker:
# CHECKER_ERROR loop_late. Neither is TIMEOUT (both were before). The
# proxy (bad_upstream.py when_told) answers its Nth connection only once
# the test has stopped the checker and made $T/slow.go.N.
"$PY" "$top_srcdir/t/lib/bad_upstream.py" when_told --port-file "$T/slow" \
  >"$T/slow.out" 2>&1 &
PIDS="$PIDS $!"
wait_long test -s "$T/slow"
SLOW=$(cat "$T/slow")
# late_answer N TIER PROTOCOL: the checker stopped with a check of the
# slow proxy's Nth connection in flight, the proxy answering, the checker
# resumed 200 ms past the task's deadline (5 s: it would be short_budget
# only if resumed more than 4.5 s late, and the checker has up to 5 s to
# send its first bytes before it is stopped); the task id in _id.
late_answer() {
  task "$2" "$3" "$SLOW" deadline_ms=5000
  _id=$LAST
  wait_long grep -q "^TASK s1 $_id\$" "$EV"
  until_ms=$(($(date +%s%3N) + 5200))
  wait_long grep -q "^got $1\$" "$T/slow.log"
  kill -STOP "$CHK"
  : >"$T/slow.go.$1"
  wait_long grep -q "^answered $1\$" "$T/slow.log"
  wait_long eval '[ "$(date +%s%3N)" -ge "$until_ms" ]'
  kill -CONT "$CHK"
  wait_long observed "$_id"
}
late_answer 1 1 1
like "$(seen "$_id")" "1 - 0" \
  "issue 26: the CONNECT answer unread at the deadline (the checker's loop stopped across it) is read: OK, not TIMEOUT"
late_answer 2 1 2
like "$(seen "$_id")" "4 loop_late" \
  "issue 26: SOCKS5's method reply unread at the deadline, the request still the checker's to send: CHECKER_ERROR loop_late, not TIMEOUT"
wait_cond '[ "$(mval "proxyhost_checker_check_reasons_total{tier=\"basic\",reason=\"loop_late\"}")" = 1 ]'
ok $? "loop_late counted in check_reasons_total"

# The echo endpoint down: EGRESS is the checker's failure, not the proxy's.
kill "$ECHO_PID"
wait_exit "$ECHO_PID" 10
task 2 1 "$U1"; GD=$LAST
wait_long observed "$GD"
like "$(seen "$GD")" "4 echo_unreachable" \
  "CP-6-4 the echo endpoint down: EGRESS is CHECKER_ERROR echo_unreachable, never FAILED"
wait_cond '[ "$(mval "proxyhost_checker_echo_up ")" = 0 ]'
ok $? "proxyhost_checker_echo_up says the echo is down"
task 1 1 "$U1"; BD=$LAST
task 1 1 "$U1" "target=127.0.0.1:$CANNED"; BT=$LAST
wait_long observed "$BD"
wait_long observed "$BT"
like "$(seen "$BD")" "4 echo_unreachable" \
  "CP-6-3 BASIC tunnelling to the echo, which is down: CHECKER_ERROR, not FAILED"
like "$(seen "$BT")" "1 - 0" "... while BASIC to a live target still passes"
kill "$CHK" "$FAKE"

# A stale session: the task stream refused, a new RegisterChecker at once.
start chk_stale
wait_long grep -q '^CWATCH s2' "$EV"
ok $? "a stream refused for a stale session: the checker registers again"
is "$(grep -c '^CREGISTER' "$EV")" 2 "... once"
kill "$CHK" "$FAKE"

# A transient failure: the same batch again, the same sequence and digest.
# With max_concurrency 2, three checks of the stopped proxy at once: the
# third is refused at once, never queued beyond what was registered.
start chk_unavailable --set checker.max_concurrency=2
wait_long grep -q '^CWATCH s1' "$EV"
like "$(grep '^CREGISTER' "$EV")" "CREGISTER k1 k1-a z1 2 " "CP-6-1 max_concurrency 2 registered"
task 1 1 "$U7" deadline_ms=2000 "target=127.0.0.1:$CANNED"; S1=$LAST
task 1 1 "$U7" deadline_ms=2000 "target=127.0.0.1:$CANNED"; S2=$LAST
task 1 1 "$U7" deadline_ms=2000 "target=127.0.0.1:$CANNED"; S3=$LAST
for id in $S1 $S2 $S3; do wait_long observed "$id"; done
is "$(for id in $S1 $S2 $S3; do seen "$id" | cut -d' ' -f1-2; done | sort | tr '\n' ' ')" \
  "3 handshake_timeout 3 handshake_timeout 4 no_resources " \
  "CP-6-1 a task beyond max_concurrency: CHECKER_ERROR no_resources, the others run"
wait_long grep -q '^OBCALL s1 OK' "$EV"
ok $? "after UNAVAILABLE the batch is acknowledged in the same session"
[ "$(grep -c '^OBS s1 1 ' "$EV")" -ge 2 ]
ok $? "the batch of sequence 1 was sent again"
is "$(grep '^OBS s1 1 ' "$EV" | awk '{print $5}' | sort -u | wc -l)" 1 \
  "CP-6-2 resent byte for byte: one digest for sequence 1"
kill "$CHK" "$FAKE"

# A fence refusal: a new session numbers its batches from 1 again.
start chk_fence
wait_long grep -q '^CWATCH s1' "$EV"
task 1 1 "$U1" "target=127.0.0.1:$CANNED"
wait_long grep -q '^OBS s2 1 ' "$EV"
ok $? "CP-6-2 ALREADY_EXISTS: a new session, its batches from 1"
kill "$CHK" "$FAKE"

# The controller gone and back on its port: the checker waits out its
# backoff (state backoff, not a tight loop) and registers again.
start chk_ok
wait_long grep -q '^CWATCH s1' "$EV"
port=$(cat "$D/port")
kill "$FAKE"
wait_exit "$FAKE" 10
wait_long eval '[ "$(mval "proxyhost_checker_session_state{state=\"backoff\"}")" = 1 ]'
ok $? "the controller gone: the checker's session waits in backoff"
export CP_FAKE_PORT="$port"
cp_fake_start "$D" chk_ok
unset CP_FAKE_PORT
wait_long grep -q '^CWATCH' "$EV"
ok $? "the controller back on its port: a new session with its task stream"
[ "$(mval 'proxyhost_checker_reconnects_total ')" -ge 1 ]
ok $? "... counted in proxyhost_checker_reconnects_total"
kill "$CHK" "$FAKE"

# mTLS: the checker presents its own certificate, and the controller sees
# its SPIFFE id (.../checker/<checker-id>), as a gateway's (issue 26 "The
# role"). The configuration files pass --check-config.
"$PROXYHOST" -c "$top_srcdir/conf/checker.ini" --set "proxyhost.module_path=$MODS" \
  -control-plane 127.0.0.1:7443 -cluster-id c1 -checker-id k1 -instance-id k1-a -zone z1 \
  --set checker.tls.mode=disabled --check-config >"$T/check.out" 2>&1
is $? 0 "conf/checker.ini passes --check-config"
printf '[proxyhost]\nmodule_path = %s\ninclude = %s/conf.d/*.ini\n' "$MODS" "$T" >"$T/base.ini"
mkdir -p "$T/conf.d"
cp "$top_srcdir/modules/checker/checker.ini.sample" "$T/conf.d/checker.ini"
"$PROXYHOST" -c "$T/base.ini" --check-config >"$T/check.out" 2>&1
is $? 0 "the sample passes --check-config as a drop-in"
for bad in "tiers=basic,nope" "tiers=basic,basic" "max_concurrency=0" \
  "echo.url=http://echo.example:8089/" "batch.max=9000" "response_max=512" \
  "task.min_budget=5ms" "task.min_budget=40s" "task.report_margin=200ms" \
  "task.report_margin=2min"; do
  "$PROXYHOST" -c "$T/base.ini" --set "checker.$bad" --check-config >"$T/check.out" 2>&1
  is $? 2 "--check-config refuses checker.$bad"
done
sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"
ok $? "certificates made (a checker's with spiffe://example.org/prod/checker/k1)"
FAKE_CERTS=$T
start chk_ok --set checker.tls.mode=mtls --set "checker.tls.cert_file=$T/checker.pem" \
  --set "checker.tls.key_file=$T/checker.key" --set "checker.tls.ca_file=$T/ca.pem"
wait_long grep -q '^CWATCH s1' "$EV"
like "$(grep '^CREGISTER' "$EV")" "spiffe://example.org/prod/checker/k1" \
  "over mTLS the controller sees the checker's SPIFFE id"
task 1 1 "$U1" "target=127.0.0.1:$CANNED"
wait_long observed "$LAST"
like "$(seen "$LAST")" "1 - 0" "... and gets its observations"
# Renewed files on SIGHUP: a new channel presents them (cp_client_tls.c,
# the gateway's code); the open stream stays.
kill -HUP "$CHK"
wait_cond '[ "$(mval "proxyhost_tls_reloads_total{module=\"checker\",result=\"ok\"}")" = 1 ]'
ok $? "SIGHUP re-reads the checker's TLS files (proxyhost_tls_reloads_total{module=checker})"
task 1 1 "$U1" "target=127.0.0.1:$CANNED"
wait_long observed "$LAST"
like "$(seen "$LAST")" "1 - 0" "... and the checks go on"
kill "$CHK" "$FAKE"

done_testing
