#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The controller's CheckerControlPlane (issue 26: CP-1-3, CP-6-1, CP-6-2),
# every part real: a private redis-server, the controller proxyhost
# (t/lib/controller.sh) with five pool proxies, and checkers played by
# Debian's python3-grpcio (t/lib/cp_checker.py, stubs generated now):
#  - RegisterChecker's checks, tasks with deadlines, never more than the
#    registered max_concurrency out, the (session, sequence, SHA-256)
#    fence of ReportObservations (replay, conflict, smaller sequence,
#    stale session), stream replacement;
#  - a missed deadline gives the task to a second checker and the late
#    answer is dropped and counted; two checkers split the work; a killed
#    checker's tasks move to another within its session TTL; a stopped
#    one (SIGSTOP) loses its tasks, then its session and its stream;
#  - EGRESS tasks carry echo_url and a fresh nonce, TARGET tasks their
#    group's probe, spaced per target host; a proxy's credential
#    only in the task (not in the log, /metrics or Redis);
#  - mTLS: a checker certificate for checker RPCs only, a worker
#    certificate for worker RPCs only.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api pool_api

CTL="$top_builddir/tools/proxyhostctl"
CK="$top_srcdir/t/lib/cp_checker.py"
CP_PY=$CK CP_PY_ROLE=checker # for run_py (t/lib/controller.sh)
PASSWORD=pw-Checker-Never-Logged-5e1d
DEADLINE=2000
TAP_ON_FAIL='grep -v "level=debug" "$T/ph.log" | tail -20'
controller_up "$PASSWORD"
CHK="--set controlplane_server.check_interval=1s
  --set controlplane_server.fast_interval=500ms
  --set controlplane_server.task_deadline=${DEADLINE}ms
  --set controlplane_server.max_checker_concurrency=8
  --set controlplane_server.echo_url=http://127.0.0.1:9/echo
  --set controlplane_server.target_probes=g=www.example.test:443
  --set controlplane_server.target_host_interval=1s"
# shellcheck disable=SC2086
start_proxyhost "$T/ctl.ini" $CHK
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
wait_long ready; ok $? "the controller is ready"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@" >/dev/null; }
ctl credential add upstream-a; ok $? "proxyhostctl credential add upstream-a"
ctl proxy add p1 --protocol http_connect --host 127.0.0.1 --port 3128 \
  --groups g --capacity 10 --secret-ref upstream-a; ok $? "p1 (with a credential)"
for i in 2 3 4 5; do
  ctl proxy add "p$i" --protocol socks5 --host 127.0.0.1 --port "108$i" --groups g --capacity 5
done
ok $? "p2..p5"

mget() { metric "$(http_get "http://127.0.0.1:$admin/metrics")" "$1"; }

run_py flow "$cpp" flow "$T" "$DEADLINE"
run_py missed "$cpp" missed "$T" "$DEADLINE"
# The missed task is whichever k2 got first: any of the three tiers.
n=$(mget 'proxyhost_cp_controller_check_tasks_total{tier="basic",result="expired"}')
m=$(mget 'proxyhost_cp_controller_check_tasks_total{tier="egress",result="expired"}')
o=$(mget 'proxyhost_cp_controller_check_tasks_total{tier="target",result="expired"}')
[ $((${n:-0} + ${m:-0} + ${o:-0})) -ge 1 ]
ok $? "CP-6-2 metrics: the missed task counted expired ($n, $m, $o)"
n=$(mget 'proxyhost_cp_controller_observations_total{result="late"}')
[ "${n:-0}" -ge 1 ]; ok $? "CP-6-2 metrics: the late observation dropped as late ($n)"
n=$(mget 'proxyhost_cp_controller_observations_total{result="not_given"}')
[ "${n:-0}" -ge 1 ]; ok $? "CP-6-2 metrics: the observation of a task never given dropped ($n)"
n=$(mget 'proxyhost_cp_controller_observations_total{result="accepted"}')
[ "${n:-0}" -ge 3 ]; ok $? "CP-6-2 metrics: observations accepted ($n)"
run_py split "$cpp" split "$T" 4

# ---- a killed checker's tasks move to another within its TTL --------------
"$PY" "$CK" "$T/gen" "$cpp" hold "$T" k6 8 >"$T/hold.out" 2>"$T/hold.err" &
hold_pid=$!
PIDS="$PIDS $hold_pid"
wait_cond '[ "$(grep -c "^VALUE task" "$T/hold.out")" -ge 8 ]'
ok $? "k6 holds 8 tasks (its max_concurrency)"
"$PY" "$CK" "$T/gen" "$cpp" takeover "$T" k7 30 "$T/held.txt" 8 >"$T/take.out" 2>"$T/take.err" &
take_pid=$!
PIDS="$PIDS $take_pid"
wait_for grep -q '^VALUE started' "$T/take.out"; ok $? "k7 watches"
kill -KILL "$hold_pid"; wait_exit "$hold_pid" 5
killed=$("$PY" -c 'import time; print(int(time.time()*1000))')
sed -n 's/^VALUE task //p' "$T/hold.out" >"$T/held.tmp" && mv "$T/held.tmp" "$T/held.txt"
wait_exit "$take_pid" 40
miss=0 late=0
for k in $(sed -n 's/^VALUE task //p' "$T/hold.out"); do
  at=$(sed -n "s|^VALUE task $k ||p" "$T/take.out" | head -1)
  if [ -z "$at" ]; then miss=$((miss + 1)); continue; fi
  [ $((at - killed)) -le 30000 ] || late=$((late + 1))
done
is "$miss/$late" 0/0 "CP-6-2 every task of the killed checker went to another within the session TTL (30 s)"
grep -q '^VALUE cred p1 alice' "$T/take.out"
ok $? "CP-6-2 a task for a proxy with secret_ref carries its credential"
grep -q '^VALUE egress [0-9a-f]\{32\} http://127.0.0.1:9/echo' "$T/take.out"
ok $? "CP-6-4 an EGRESS task carries echo_url and a nonce"
n=$(sed -n 's/^VALUE egress \([0-9a-f]*\) .*/\1/p' "$T/take.out" | sort | uniq -d | wc -l)
is "$n" 0 "CP-6-4 every EGRESS task has a fresh nonce"
sed -n 's/^VALUE target //p' "$T/take.out" >"$T/target.txt"
n=$(wc -l <"$T/target.txt")
[ "$n" -ge 1 ] && ! grep -qv '^g www.example.test:443 ' "$T/target.txt"
ok $? "CP-6-5 TARGET tasks carry the group and its probe's target ($n)"
first=$(head -1 "$T/target.txt" | cut -d' ' -f3) last=$(tail -1 "$T/target.txt" | cut -d' ' -f3)
[ "$n" -le $(( (${last:-0} - ${first:-0}) / 1000 + 2 )) ]
ok $? "CP-6-5 TARGET tasks to one host at most one per target_host_interval ($n in $((${last:-0} - ${first:-0})) ms, five proxies)"
# Five TARGET items share one host (one task a second): in k7's 8 s each
# has its turn, the oldest due first (they tied at the host's next slot
# and p1 had it every time: 25 times in 30 s, p5 never).
turns=$(sed -n 's|^VALUE task \(p[0-9]\)/3/g .*|\1|p' "$T/take.out" | sort | uniq -c | tr -s ' ' | tr '\n' ',')
is "$(sed -n 's|^VALUE task \(p[0-9]\)/3/g .*|\1|p' "$T/take.out" | sort -u | wc -l)" 5 \
  "CP-6-5 every proxy's TARGET item has its turn at the shared host ($turns)"

m=$(http_get "http://127.0.0.1:$admin/metrics")
like "$m" 'proxyhost_cp_controller_rpcs_total{method="RegisterChecker",code="OK"}' \
  "metrics: RegisterChecker counted by code"
like "$m" 'proxyhost_cp_controller_checkers ' "metrics: the checkers gauge"
redis_dump "$T/redis" >"$T/redis.dump" 2>&1
grep -q ':c:k7:session' "$T/redis.dump"; ok $? "(Redis holds k7's checker session)"
for f in "$T/ph.log" "$T/redis.dump"; do
  grep -qa "$PASSWORD" "$f"; is $? 1 "CP-8-5 the proxy password is not in ${f##*/}"
done
printf '%s\n' "$m" | grep -qa "$PASSWORD"; is $? 1 "CP-8-5 the proxy password is not in /metrics"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "the controller stops cleanly"
# A stopping controller leaves the checks' members (several controllers)
# at once: the next one schedules the whole pool from its first read.
is "$(redis_cli "$T/redis" EXISTS "ph:cp:{c1}:members")" 0 \
  "the stopped controller left the checks' members at once"

# ---- a stopped checker (SIGSTOP) loses its tasks, then its session ------
# Short sessions (3 s; the other keys as cp_rebalance.sh's, so that
# --check-config accepts them) and a 1 s deadline.
: >"$T/ph.log"
# shellcheck disable=SC2086
start_proxyhost "$T/ctl.ini" $CHK \
  --set redis_ownership.session_ttl=3s --set redis_ownership.runtime_ttl=2s \
  --set redis_ownership.ownership_lease=8s \
  --set controlplane_server.session_ttl=3s \
  --set controlplane_server.runtime_interval=500ms \
  --set controlplane_server.snapshot_validity=10s \
  --set controlplane_server.allocation_safety_margin=1s \
  --set controlplane_server.refresh_before=5s \
  --set controlplane_server.task_deadline=1s
wait_long ready; ok $? "a controller with 3 s sessions is ready"
"$PY" "$CK" "$T/gen" "$cpp" hold "$T" k8 8 >"$T/stop.out" 2>"$T/stop.err" &
stop_pid=$!
PIDS="$PIDS $stop_pid"
wait_cond '[ "$(grep -c "^VALUE task" "$T/stop.out")" -ge 8 ]'
ok $? "k8 holds 8 tasks"
kill -STOP "$stop_pid"
sed -n 's/^VALUE task //p' "$T/stop.out" >"$T/held.txt"
"$PY" "$CK" "$T/gen" "$cpp" takeover "$T" k9 30 "$T/held.txt" >"$T/take2.out" 2>"$T/take2.err" &
take_pid=$!
PIDS="$PIDS $take_pid"
wait_exit "$take_pid" 40
miss=0
for k in $(cat "$T/held.txt"); do
  grep -q "^VALUE task $k " "$T/take2.out" || miss=$((miss + 1))
done
is "$miss" 0 "CP-6-2 every task of the stopped checker went to another after its deadline"
gone() { [ "$(redis_cli "$T/redis" EXISTS "ph:cp:{c1}:c:k8:session")" = 0 ]; }
wait_long gone; ok $? "CP-6-2 the stopped checker's session lapsed in Redis (no renewal while it owed answers)"
kill -CONT "$stop_pid"
wait_exit "$stop_pid" 20
is "$(sed -n 's/^VALUE ended //p' "$T/stop.out")" FAILED_PRECONDITION \
  "CP-6-2 ... and its stream ended FAILED_PRECONDITION"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "that controller stops cleanly"

# ---- mTLS: checker and worker certificates (issue 26 "The role") ----------
sh "$top_srcdir/t/unit/cp/cp_grpc_certs.sh" "$T"; ok $? "certificates made with openssl"
( cd "$T" && umask 077 &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout k1.key \
    -out k1.csr -subj /CN=cp-test-k1 >/dev/null 2>&1 &&
  printf 'subjectAltName=URI:spiffe://example.org/prod/checker/k1\nextendedKeyUsage=clientAuth\n' >k1.cnf &&
  openssl x509 -req -in k1.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -out k1.pem -days 2 -extfile k1.cnf >/dev/null 2>&1 ); ok $? "a checker certificate (spiffe://example.org/prod/checker/k1)"
! grep -q 'nothing to tunnel to' "$T/ph.log"
ok $? "with echo_url set, no 'nothing to tunnel to' warning"
cpt=$(free_port)
controller_mtls_ini "$T/ctl.ini" "$T/mtls.ini" "$cpt"
: >"$T/ph.log"
# This one has neither echo_url nor target probes: BASIC checks have
# nothing to tunnel to, and a registration says so.
# shellcheck disable=SC2086
start_proxyhost "$T/mtls.ini" $CHK --set controlplane_server.echo_url= \
  --set controlplane_server.target_probes=
wait_long ready; ok $? "the controller starts with tls.mode = mtls"
id() { # id CERT ID METHOD: the status code name
  "$PY" "$CK" "$T/gen" "$cpt" ident "$T" "$T/$1.pem" "$T/$1.key" "$T/ca.pem" "$2" "$3" \
    2>>"$T/ck-mtls.err" | sed -n 's/^VALUE code //p'
}
is "$(id k1 k1 checker_watch)" OK "CP-1-3 a checker certificate registers its checker and gets tasks"
grep -q 'level=warn .*nothing to tunnel to.*checker_id=k1' "$T/ph.log"
ok $? "without echo_url or target probes, a checker's registration warns that its checks have nothing to tunnel to"
is "$(id k1 k2 checker)" PERMISSION_DENIED "CP-1-3 a checker certificate naming another checker: PERMISSION_DENIED"
is "$(id worker w1 checker)" PERMISSION_DENIED "CP-1-3 a worker certificate for a checker RPC: PERMISSION_DENIED"
is "$(id k1 k1 worker)" PERMISSION_DENIED "CP-1-3 a checker certificate for a worker RPC: PERMISSION_DENIED"
is "$(id worker w1 worker)" OK "(a worker certificate still registers its worker)"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
is "$EXIT" 0 "the mTLS controller stops cleanly"
done_testing
