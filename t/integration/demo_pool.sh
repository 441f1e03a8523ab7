#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# scripts/demo-pool.sh, the README's pool demo (issue 13): run it as the
# README does (its ports moved by DEMO_PORT_BASE, its directory by
# DEMO_DIR), wait for its "ready" line, curl through each gateway that
# owns proxies to a loopback target (client -> gateway -> upstream proxy
# -> target), check that the controller's pool has both proxies owned
# and that it kept hold_fresh_state on (issue 23 item 5),
# check the pool's health loop beside them (issue 26 round 2: an `echo`
# and a checker k1 registered with the controller, a proxy AVAILABLE by
# its checks in proxyhostctl and in a gateway's snapshot),
# stop it with SIGTERM and check that nothing it started is left running.
# conf/controller.ini and conf/gateway.ini are what it runs.
. "$top_srcdir/t/lib/testlib.sh"
require_modules store_sqlite admin_api redis_ownership controlplane_server \
  controlplane_client outcome_reporter pool round_robin weighted least_active \
  random sticky direct http_proxy socks5 auth_local checker echo

grep -q 'scripts/demo-pool.sh' "$top_srcdir/README.md"; ok $? "the README names scripts/demo-pool.sh"
start_file_server "$T/www" "through the pool demo"; ok $? "a loopback target"
# 24 ports from a random base below the ephemeral range (32768..), where
# free_port and outgoing connections never land; the demo uses
# base..base+23, all free when it starts.
free_base() {
  for _try in 1 2 3 4 5 6 7 8 9 10; do
    b=$(python3 -c 'import random; print(random.randrange(20000, 32000, 100))')
    python3 -c "
import socket, sys
for p in range($b, $b + 24):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try: s.bind(('127.0.0.1', p))
    except OSError: sys.exit(1)
    finally: s.close()" && { echo "$b"; return 0; }
  done
  return 1
}
DEMO_PORT_BASE=$(free_base); ok $? "24 free ports from $DEMO_PORT_BASE"
DEMO_DIR=$T/demo
DEMO_BUILDDIR=$top_builddir
export DEMO_PORT_BASE DEMO_DIR DEMO_BUILDDIR
t0=$(date +%s%3N)
sh "$top_srcdir/scripts/demo-pool.sh" >"$T/demo.out" 2>&1 &
DEMO=$!
PIDS="$PIDS $DEMO"
said_ready() { grep -q '^demo: ready' "$T/demo.out"; }
i=0
while ! said_ready && [ $i -lt 900 ] && running "$DEMO"; do sleep 0.1; i=$((i + 1)); done
said_ready; ok $? "the demo says ready" || sed 's/^/#   /' "$T/demo.out" "$T/demo/"*.log 2>/dev/null | grep -v debug | tail -30
# Issue 23 item 5: the demo keeps hold_fresh_state on (a Redis without the
# cluster's state gives nothing for one ownership_lease, 30 s): assign_from
# in its Redis lies a lease after the first assign, which came after t0.
from=$(redis-cli -h 127.0.0.1 -p $((DEMO_PORT_BASE + 12)) GET 'ph:cp:{demo}:assign_from')
[ -n "$from" ] && [ "$from" -ge $((t0 + 30000)) ]
ok $? "issue 23 item 5: the demo runs with hold_fresh_state on (assign_from $from, started $t0)"
owns() { curl -s -m 5 "http://127.0.0.1:$1/v1/cp/view" | grep -c '"proxy_id"'; }
g1=$(owns $((DEMO_PORT_BASE + 13))) g2=$(owns $((DEMO_PORT_BASE + 14)))
is "$((g1 + g2))" 2 "CP-4-1 the two proxies are owned, each by one gateway (g1 $g1, g2 $g2)"
url="http://127.0.0.1:$FILE_SERVER_PORT/hello.txt"
n=0
for g in 0 2; do
  own=$g1; [ "$g" = 2 ] && own=$g2
  [ "$own" -gt 0 ] || continue
  body=$(curl -s -m 10 -x "http://127.0.0.1:$((DEMO_PORT_BASE + g))" "$url")
  is "$body" "through the pool demo" "curl -x through gateway on port base+$g reaches the target"
  body=$(curl -s -m 10 --proxy "socks5h://127.0.0.1:$((DEMO_PORT_BASE + g + 1))" "$url")
  is "$body" "through the pool demo" "... and through its SOCKS5 listener"
  n=$((n + 1))
done
[ "$n" -ge 1 ]; ok $? "at least one gateway served"
m=$(http_get "http://127.0.0.1:$((DEMO_PORT_BASE + 16))/metrics")
is "$(metric "$m" 'proxyhost_checker_session_state{state="watching"}')" 1 \
  "CP-6-1 the demo's checker k1 is registered and watches its tasks"
like "$(http_get "http://127.0.0.1:$((DEMO_PORT_BASE + 10))/metrics")" \
  'proxyhost_cp_controller_checkers 1' "... the controller counts it"
list=$("$top_builddir/tools/proxyhostctl" --admin "127.0.0.1:$((DEMO_PORT_BASE + 10))" \
  --token-file "$T/demo/admin.token" proxy list)
like_re "$list" 'u[12] .* available' "CP-6-7 proxyhostctl proxy list: a proxy AVAILABLE by its checks"
views=$(curl -s -m 5 "http://127.0.0.1:$((DEMO_PORT_BASE + 13))/v1/cp/view"
  curl -s -m 5 "http://127.0.0.1:$((DEMO_PORT_BASE + 14))/v1/cp/view")
like_re "$views" '"health": ?"available"' "CP-6-7 ... and in a gateway's snapshot"
like "$(cat "$T/demo.out")" "checker k1 registered" "the demo says its checker registered"
# The header's walk-through: kill u2, watch it go down in proxy list and
# in the controller's metric.
kill "$(cat "$T/demo/u2.pid")"
u2_down() {
  "$top_builddir/tools/proxyhostctl" --admin "127.0.0.1:$((DEMO_PORT_BASE + 10))" \
    --token-file "$T/demo/admin.token" proxy list | grep -q '^u2 .* unhealthy$'
}
wait_long u2_down
ok $? "CP-6-7 the header's walk-through: u2 killed, proxy list shows it unhealthy"
# The gauge is recounted at the reducer's next pass, not with the write.
u2_counted() {
  http_get "http://127.0.0.1:$((DEMO_PORT_BASE + 10))/metrics" |
    grep -qF 'proxyhost_cp_controller_health_proxies{state="unhealthy"} 1'
}
wait_long u2_counted
ok $? "... and so does the metric it names"
grep -q "demo:" "$T/demo/secrets/demo-upstream"; ok $? "the upstream's credential file was made (0600)"
unlike "$(cat "$T/demo/"*.log)" "$(cut -d: -f2 "$T/demo/secrets/demo-upstream")" "CP-8-5 the upstream password is in no log"
kill -TERM "$DEMO"
wait_exit "$DEMO" 20
is "$EXIT" 0 "SIGTERM stops the demo"
left=0
for p in 0 2 10 11 12 13 14 15 16 17 20 21; do port_open $((DEMO_PORT_BASE + p)) 2>/dev/null && left=$((left + 1)); done
is "$left" 0 "nothing it started still listens"
done_testing
