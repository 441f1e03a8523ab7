#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Outcomes at a controller that is not the proxy's member move its verdict
# (issue 26 "Several controllers", CP-6-7), every part real: one
# redis-server, one PostgreSQL (store_pg), two controllers: c1 with a
# checker (the only member, so every proxy's verdict is c1's to write),
# c2 without one; a gateway (t/lib/controller.sh gateway_up) talking to c2
# only, routing to pa (a live proxyhost http_proxy) and pd (nobody
# listens). The active checks are slow (check_interval and fast_interval
# 60 s, health_fall 3: one failed check in this test's time, not enough
# for SUSPECT). What it shows:
#  - requests through the gateway: its failed dials to pd are outcomes
#    at c2, which hands their counts to c1 through Redis
#    (proxyhost_cp_controller_passive_forwarded_total{result="sent"} at c2,
#    {result="taken"} at c1), and c1's reducer makes pd SUSPECT or
#    UNHEALTHY in Redis (c1 writes it: c2 never does) while c1 has issued
#    at most one check task for pd;
#  - pa stays AVAILABLE or without a verdict; nothing but counters is in
#    the hand-over hash (no target, no address).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/pg.sh"
. "$top_srcdir/t/lib/controller.sh"
. "$top_srcdir/t/lib/cp_multi.sh"
require_modules controlplane_server redis_ownership store_pg admin_api \
  pool_api checker echo direct http_proxy controlplane_client \
  outcome_reporter round_robin pool

CTL="$top_builddir/tools/proxyhostctl"
MODS="$top_builddir/modules"
LT="$PY $top_srcdir/t/lib/lease_target.py"
TAP_ON_FAIL='for f in c1 c2 k1 g1; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -6; done'
P='ph:cp:{c1}:'

ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
mt() { metric "$(http_get "http://127.0.0.1:$1/metrics")" "$2"; }
members() { [ "$(mt "$1" proxyhost_cp_controller_members)" = "$2" ]; }

cpm_stores
UA=$(free_port) DEAD=$(free_port)
printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$UA" >"$T/ua.ini"
"$PROXYHOST" -c "$T/ua.ini" >>"$T/ua.log" 2>&1 &
PIDS="$PIDS $!"
cpm_echo
$LT serve --port-file "$T/target.port" --lifetime 300 >"$T/target.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/target.port"; TGT=$(cat "$T/target.port")
wait_for port_open "$UA" && wait_for port_open "$E"
ok $? "an upstream, the echo endpoint and a target listen"

CPM_CHECK=60s CPM_FAST=60s CPM_FALL=3 cpm_two
ctl() { "$CTL" --admin "127.0.0.1:$a1" --token-file "$T/admin.token" "$@" >/dev/null; }
ctl route add all --position 100 --host '*' --group g --strategy round_robin &&
  ctl proxy add pa --protocol http_connect --host 127.0.0.1 --port "$UA" --groups g --capacity 10 &&
  ctl proxy add pd --protocol http_connect --host 127.0.0.1 --port "$DEAD" --groups g --capacity 10
ok $? "proxyhostctl: a route, pa (live) and pd (nobody listens)"

k1a=$(free_port)
cpm_checker_ini "$k1a" >"$T/k1.ini"
"$PROXYHOST" -c "$T/k1.ini" -control-plane "127.0.0.1:$cp1" -cluster-id c1 \
  -checker-id k1 -instance-id k1-a -zone z1 >>"$T/k1.log" 2>&1 &
PIDS="$PIDS $!"
wait_long members "$a1" 1 && wait_long members "$a2" 1
ok $? "c1 holds the checker and is the only member; c2 knows it"
is "$(mt "$a2" proxyhost_cp_controller_member)" 0 "c2 is not a member"

g_a=$(free_port) g_h=$(free_port)
cpp=$cp2 gateway_up g1 "$g_a" "$g_h"
owns2() { [ "$(curl -s -m 5 "http://127.0.0.1:$g_a/v1/cp/view" | grep -o '"proxy_id"' | grep -c .)" = 2 ]; }
wait_long owns2; ok $? "the gateway (on c2) owns pa and pd"

# ---- the gateway's failed dials to pd, at c2 -----------------------------------
req() { curl -s -m 10 -x "http://127.0.0.1:$g_h" "http://127.0.0.1:$TGT/hello" >/dev/null; }
down() { req; case $(redis_cli "$T/redis" HGET "${P}health" pd) in 2 | 3) ;; *) return 1 ;; esac; }
wait_long down
ok $? "CP-6-7 outcomes at c2 make pd SUSPECT or UNHEALTHY in Redis ($(redis_cli "$T/redis" HGET "${P}health" pd))"
n=$(grep "check task issued" "$T/c1.log" | grep -c "proxy_id=pd ")
[ "$n" -le 1 ]
ok $? "... before the active checks could have (c1 issued $n task(s) for pd)"
grep -q "proxy health changed.*proxy_id=pd" "$T/c1.log"
ok $? "... by c1's reducer, pd's member"
grep -q "proxy health changed.*proxy_id=pd" "$T/c2.log"
ok $((1 - $?)) "... never by c2's"
s=$(mt "$a2" 'proxyhost_cp_controller_passive_forwarded_total{result="sent"}')
[ "${s:-0}" -ge 1 ]; ok $? "c2 handed pd's counts over ($s sent)"
s=$(mt "$a1" 'proxyhost_cp_controller_passive_forwarded_total{result="taken"}')
[ "${s:-0}" -ge 1 ]; ok $? "c1 took them ($s taken)"
v=$(redis_cli "$T/redis" HGET "${P}health" pa)
[ -z "$v" ] || [ "$v" = 1 ]; ok $? "pa stays AVAILABLE or without a verdict ($v)"
# What the hand-over hash holds (while requests go on): counters only.
fields=
for i in 1 2 3 4 5 6 7 8 9 10; do
  req
  fields="$fields $(redis_cli "$T/redis" --scan --pattern "${P}passive:*" |
    while read -r k; do redis_cli "$T/redis" HGETALL "$k"; done | tr '\n' ' ')"
done
unlike "$fields" "127.0.0.1" "the hand-over hash holds no address"
unlike "$fields" "$TGT" "... and no target"
done_testing
