#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The checker (modules/checker) against the REAL controller (issue 26):
# controlplane_server with redis_ownership on a private redis-server and
# store_sqlite (t/lib/controller.sh), three pool proxies (proxyhost
# `local` http_proxy, a socks5 one with the controller's credential, one
# whose port nobody listens on) and the `echo` module as the echo
# endpoint. The controller schedules, the checker checks and reports: its
# registration, its observations accepted by the controller's fence
# (CP-6-2; several tasks in one stream message), the three tiers' verdicts on real proxies (CP-6-3, CP-6-4),
# the credential from the task used and never logged (CP-8-5).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api \
  pool_api checker echo direct http_proxy socks5 auth_local

PY=/usr/bin/python3
MODS="$top_builddir/modules"
CTL="$top_builddir/tools/proxyhostctl"
PASSWORD=pw-CheckerCtl-Never-Logged-77b2
TAP_ON_FAIL='grep -v "level=debug" "$T/ph.log" | tail -12; echo checker:; tail -12 "$T/chk.log"'

# ---- upstreams and the echo -----------------------------------------------------
U1=$(free_port) U2=$(free_port) DEAD=$(free_port) E=$(free_port)
printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$U1" >"$T/u1.ini"
"$PROXYHOST" -c "$T/u1.ini" >>"$T/u1.log" 2>&1 &
PIDS="$PIDS $!"
# 10,000 PBKDF2 rounds: a default verification is slow under ASan.
printf '[proxyhost]\nmodules = auth_local, direct, socks5\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[socks5]\nlisten = 127.0.0.1:%s\nauth = password\n[auth_local]\nusers = alice:%s\n' \
  "$MODS" "$(free_port)" "$U2" "$(password_hash "$PASSWORD" 10000)" >"$T/u2.ini"
"$PROXYHOST" -c "$T/u2.ini" >>"$T/u2.log" 2>&1 &
PIDS="$PIDS $!"
printf '[proxyhost]\nmodules = echo\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[echo]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$E" >"$T/echo.ini"
"$PROXYHOST" -c "$T/echo.ini" >>"$T/echo.log" 2>&1 &
PIDS="$PIDS $!"
wait_for port_open "$U1" && wait_for port_open "$U2" && wait_for port_open "$E"
ok $? "two upstreams (http_proxy; socks5 with a password) and the echo endpoint listen"

# ---- the controller ---------------------------------------------------------------
controller_up "$PASSWORD"
# shellcheck disable=SC2086
start_proxyhost "$T/ctl.ini" --set controlplane_server.check_interval=1s \
  --set controlplane_server.fast_interval=500ms \
  --set controlplane_server.task_deadline=3s \
  --set controlplane_server.max_checker_concurrency=16 \
  --set "controlplane_server.echo_url=http://127.0.0.1:$E/echo"
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
wait_long ready; ok $? "the controller is ready"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@" >/dev/null; }
ctl credential add upstream-a; ok $? "proxyhostctl credential add upstream-a"
ctl proxy add p1 --protocol http_connect --host 127.0.0.1 --port "$U1" --groups g --capacity 10
ok $? "p1: proxyhost http_proxy"
ctl proxy add p2 --protocol socks5 --host 127.0.0.1 --port "$U2" --groups g \
  --capacity 10 --secret-ref upstream-a
ok $? "p2: proxyhost socks5, its credential in the controller"
ctl proxy add p3 --protocol socks5 --host 127.0.0.1 --port "$DEAD" --groups g --capacity 10
ok $? "p3: nobody listens on its port"

# ---- the checker --------------------------------------------------------------------
cadmin=$(free_port)
printf '[proxyhost]\nmodules = checker\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[checker]\ntls.mode = disabled\nbatch.flush = 100ms\nbackoff.min = 200ms\nbackoff.max = 1s\nmax_concurrency = 8\n' \
  "$MODS" "$cadmin" >"$T/chk.ini"
"$PROXYHOST" -c "$T/chk.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
  -checker-id k1 -instance-id k1-a -zone z1 >>"$T/chk.log" 2>&1 &
PIDS="$PIDS $!"
cm() { metric "$(http_get "http://127.0.0.1:$cadmin/metrics")" "$1"; }
sm() { metric "$(http_get "http://127.0.0.1:$admin/metrics")" "$1"; }
wait_long eval '[ "$(cm "proxyhost_checker_session_state{state=\"watching\"}")" = 1 ]'
ok $? "the checker registers with the controller and watches its tasks"
like "$(http_get "http://127.0.0.1:$admin/metrics")" \
  'proxyhost_cp_controller_rpcs_total{method="RegisterChecker",code="OK"}' \
  "the controller counted the registration"
wait_long eval '[ "$(cm "proxyhost_checker_checks_total{tier=\"basic\",status=\"ok\"}")" -ge 2 ]'
ok $? "CP-6-3 BASIC passes through p1 and p2 (p2 with the task's credential)"
wait_long eval '[ "$(cm "proxyhost_checker_check_reasons_total{tier=\"basic\",reason=\"dial_refused\"}")" -ge 1 ]'
ok $? "CP-6-3 BASIC of p3: FAILED dial_refused"
wait_long eval '[ "$(cm "proxyhost_checker_checks_total{tier=\"egress\",status=\"ok\"}")" -ge 2 ]'
ok $? "CP-6-4 EGRESS through p1 and p2 passes: the controller's echo_url and nonce came back"
# Tasks due in the same scheduler tick go in one stream message
# (task_batch.max, default 256): six items due within one interval, at
# most five ticks in it, so some message carries two. One task per
# message would keep messages >= checks for ever.
# (one scrape: both counts from the same moment)
batched() {
  http_get "http://127.0.0.1:$cadmin/metrics" | awk '
    index($0, "proxyhost_checker_checks_total{") == 1 { c += $NF }
    index($0, "proxyhost_checker_task_messages_total ") == 1 { m = $NF }
    END { exit !(m != "" && m < c) }'
}
wait_long batched
ok $? "CP-6-2 several check tasks arrive in one WatchCheckTasks message"
n=$(cm 'proxyhost_checker_check_reasons_total{tier="basic",reason="auth_failed"}')
is "${n:-0}" 0 "the credential the controller sent opens p2 (no auth_failed)"
wait_long eval '[ "$(sm "proxyhost_cp_controller_observations_total{result=\"accepted\"}")" -ge 5 ]'
ok $? "CP-6-2 the controller accepts the checker's observation batches"
wait_long eval '[ "$(cm "proxyhost_checker_rpcs_total{rpc=\"report\",status=\"ok\"}")" -ge 1 ]'
ok $? "... and the checker counts its reports OK"
n=$(cm 'proxyhost_checker_rpcs_total{rpc="report",status="already_exists"}')
m=$(sm 'proxyhost_cp_controller_rpcs_total{method="ReportObservations",code="ABORTED"}')
is "${n:-0}/${m:-0}" 0/0 "no batch refused by the fence"
for f in "$T/ph.log" "$T/chk.log"; do
  grep -qa "$PASSWORD" "$f"; is $? 1 "CP-8-5 the proxy password is not in ${f##*/}"
done
done_testing
