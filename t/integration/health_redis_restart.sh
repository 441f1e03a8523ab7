#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The health loop across a Redis restarted empty (issue 26, report 1 of
# the dashboard test), every part real: a private redis-server, a
# controller (t/lib/controller.sh: checks every second), one checker and
# two proxyhost http_proxy upstreams in group g (pa, pb). Once both are
# AVAILABLE, redis-server is stopped and started again with nothing in
# it. Redis, not the controller's memory, is the authority (CP-6-7): the
# reducer writes its verdicts again within a few check intervals, the
# checker registers again once its session is gone (CP-6-1), and the
# snapshots' health (the controller's health_proxies gauge, what Redis
# holds) is AVAILABLE again, not "none". Fails on the code before: every
# proxy stayed "none" (the reducer kept its verdicts in memory only).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules store_sqlite redis_ownership controlplane_server admin_api pool_api \
  http_proxy direct checker echo

CTL="$top_builddir/tools/proxyhostctl"
TAP_ON_FAIL='grep -v "level=debug" "$T/ph.log" | tail -15; grep -v "level=debug" "$T/k1.log" | tail -5'

E=$(free_port) UA=$(free_port) UB=$(free_port)
plain_up echo echo "$E"
plain_up ua http_proxy "$UA"
plain_up ub http_proxy "$UB"
start_file_server "$T/www" "the target group's probe" target
r=0
for p in "$E" "$UA" "$UB" "$FILE_SERVER_PORT"; do wait_for port_open "$p" || r=1; done
ok $r "the echo, a target and two upstreams listen"

controller_up pw-unused-here
health_controller_start "$E" "$FILE_SERVER_PORT" \
  --set controlplane_server.task_deadline=3s \
  --set controlplane_server.session_ttl=4s --set redis_ownership.session_ttl=4s \
  --set controlplane_server.runtime_interval=1s
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
wait_long ready "$admin"; ok $? "the controller is ready"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
ctl route add all --position 100 --host '*' --group g --strategy round_robin >/dev/null &&
  ctl proxy add pa --protocol http_connect --host 127.0.0.1 --port "$UA" --groups g \
    --capacity 10 --zone z1 >/dev/null &&
  ctl proxy add pb --protocol http_connect --host 127.0.0.1 --port "$UB" --groups g \
    --capacity 10 --zone z1 >/dev/null
ok $? "proxyhostctl: a route and two proxies"

checker_up k1
sm() { metric "$(http_get "http://127.0.0.1:$admin/metrics")" "$1"; }
km() { metric "$(http_get "http://127.0.0.1:$ca_k1/metrics")" "$1"; }
avail() { [ "$(sm 'proxyhost_cp_controller_health_proxies{state="available"}')" = 2 ]; }
in_redis() { [ "$(redis_cli "$T/redis" HLEN "$(redis_cli "$T/redis" --scan --pattern '*health' | head -1)")" = 2 ]; }
wait_long avail; ok $? "CP-6-7 pa and pb become AVAILABLE"
in_redis; ok $? "CP-6-7 ... their verdicts are in Redis"
regs=$(km proxyhost_checker_reconnects_total)

stop_redis "$T/redis"
restart_redis "$T/redis"; ok $? "redis-server restarts (empty: no persistence)"
t0=$(date +%s)
# within a few check intervals (1 s) and one session_ttl (4 s)
# All at once: right after the restart the gauges still show the verdicts
# read before it, and the controller's next read of the empty hash turns
# them to none for a moment before its rewrite is read back.
none0() { [ "$(sm 'proxyhost_cp_controller_health_proxies{state="none"}')" = 0 ]; }
back() { in_redis && avail && none0; }
wait_long back
ok $? "CP-6-7 Redis back empty: both verdicts written again, AVAILABLE ($(($(date +%s) - t0)) s)"
is "$(sm 'proxyhost_cp_controller_health_proxies{state="none"}')" 0 \
  "... no proxy left without a verdict"
watching() { [ "$(km 'proxyhost_checker_session_state{state="watching"}')" = 1 ] &&
  [ "$(km proxyhost_checker_reconnects_total)" -gt "${regs:-0}" ]; }
wait_long watching; ok $? "CP-6-1 the checker, its session gone with Redis, registers again"
c0=$(sm 'proxyhost_cp_controller_health_observations_total{kind="active"}')
wait_long eval '[ "$(sm '"'"'proxyhost_cp_controller_health_observations_total{kind="active"}'"'"')" -ge $((${c0:-0} + 4)) ]'
ok $? "CP-6-6 ... and its checks reach the reducer again"
wait_long avail; ok $? "... pa and pb still AVAILABLE"
done_testing
