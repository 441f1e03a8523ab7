#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The pool's health from gateway outcomes (issue 26, CP-6-7; CP-5 outcomes
# as passive observations), every part real: a private redis-server, a
# controller proxyhost (t/lib/controller.sh), one gateway proxyhost
# (controlplane_client, outcome_reporter, pool, http_proxy) and three
# upstream proxies behind the route '*': pa and pb (proxyhost `local`
# http_proxy) and pc (t/lib/bad_upstream.py flaky: one CONNECT in three
# answered with garbage), with a target (t/lib/lease_target.py).
#  - CP-6-7: pb's upstream killed, the gateway's failed dials (reported
#    outcomes) make pb SUSPECT (fall - 1 of them) or UNHEALTHY (fall) in
#    the controller, in Redis (the reducer's one atomic step) and in the
#    gateway's snapshot, whichever it reaches before the snapshot turns
#    the traffic away from it; from then on requests through the gateway
#    pay no failed dial (pb left its choices: others are AVAILABLE);
#  - CP-6-7: exclusive extraction refuses it (409) and still takes an
#    AVAILABLE proxy; proxyhostctl proxy list/show (the admin API) show
#    the verdict and the controller's passive item;
#  - CP-6-7: the flaky pc (a handshake failure in three) never becomes
#    SUSPECT or UNHEALTHY: no flap;
#  - CP-6-7: a verdict of the member's own (pc's) that Redis lost or that
#    another writer changed is written over at the member's next sync tick
#    (issue 26: a Redis restarted empty left every proxy at none);
#  - bounded: pb deleted from the pool, its verdict leaves Redis.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules store_sqlite redis_ownership controlplane_server admin_api pool_api \
  controlplane_client outcome_reporter direct round_robin pool http_proxy

MODS="$top_builddir/modules"
CTL="$top_builddir/tools/proxyhostctl"
LT="$PY $top_srcdir/t/lib/lease_target.py"
TAP_ON_FAIL='for f in ctl g1; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -8; done'

start_redis "$T/redis"; ok $? "redis-server starts"
admin=$(free_port) cpp=$(free_port)
controller_ini "$T/ctl.ini" "$admin" "$cpp"
# A passive verdict lasts (no active check comes to end it in this test).
"$PROXYHOST" -c "$T/ctl.ini" \
  --set controlplane_server.health_passive_hold=10m \
  --set pool_api.authority=redis_ownership \
  --set pool_api.credentials=controlplane_server \
  --set controlplane_server.health_sync_interval=200ms >>"$T/ctl.log" 2>&1 &
PIDS="$PIDS $!"
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
wait_long ready "$admin"; ok $? "the controller is ready"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }

# The target and the upstreams.
$LT serve --port-file "$T/target.port" --lifetime 300 >"$T/target.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/target.port"; TGT=$(cat "$T/target.port")
upstream() { # upstream NAME: a proxyhost http_proxy (port u_NAME, pid p_NAME)
  u=$(free_port)
  printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
    "$MODS" "$(free_port)" "$u" >"$T/$1.ini"
  "$PROXYHOST" -c "$T/$1.ini" >"$T/$1.log" 2>&1 &
  PIDS="$PIDS $!"
  eval "u_$1=$u p_$1=$!"
}
upstream a
upstream b
"$PY" "$top_srcdir/t/lib/bad_upstream.py" flaky --port-file "$T/flaky.port" \
  --lifetime 300 >"$T/flaky.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/flaky.port"; u_c=$(cat "$T/flaky.port")
wait_for port_open "$u_a" && wait_for port_open "$u_b"
ok $? "a target and three upstream proxies listen"

g_a=$(free_port) g_h=$(free_port)
gateway_up g1 "$g_a" "$g_h"
wait_long healthy "$g_a"; ok $? "the gateway runs"

ctl route add all --position 100 --host '*' --group g --strategy round_robin \
  >/dev/null &&
  ctl proxy add pa --protocol http_connect --host 127.0.0.1 --port "$u_a" \
    --groups g --capacity 10 --zone z1 >/dev/null &&
  ctl proxy add pb --protocol http_connect --host 127.0.0.1 --port "$u_b" \
    --groups g --capacity 10 --zone z1 >/dev/null &&
  ctl proxy add pc --protocol http_connect --host 127.0.0.1 --port "$u_c" \
    --groups g --capacity 10 --zone z1 >/dev/null
ok $? "proxyhostctl: a route and pa, pb, pc"

view() { curl -s -m 5 "http://127.0.0.1:$g_a/v1/cp/view"; }
# health ID: the proxy's health in the gateway's view ("" when absent)
health() { gw_health "$g_a" "$1"; }
owns3() { [ "$(view | grep -o '"proxy_id"' | grep -c .)" = 3 ]; }
wait_long owns3; ok $? "the gateway owns pa, pb and pc"
req() { curl -s -m 10 -x "http://127.0.0.1:$g_h" "http://127.0.0.1:$TGT/hello"; }
gm() { http_get "http://127.0.0.1:$g_a/metrics" | grep -v '^#'; }
cm() { http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#'; }
# the gateway's outcomes of STAGE and RESULT (labels as /metrics shows them)
outcomes() { metric "$(gm)" "proxyhost_pool_outcomes_total{stage=\"$1\",result=\"$2\"}"; }

# ---- traffic through all three; pc fails one handshake in three -----------
r=0
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
  case $(req) in *hello*) ;; *) r=1 ;; esac
done
ok $r "twelve requests through the gateway succeed (pc's failures are retried)"
hs=$(outcomes proxy_handshake failure)
[ "${hs:-0}" -ge 1 ]; ok $? "pc failed a handshake ($hs so far)"

# ---- pb's upstream killed: outcomes make it UNHEALTHY ----------------------
kill "$p_b"
wait_exit "$p_b" 10
down() { req >/dev/null; case $(health pb) in suspect | unhealthy) ;; *) return 1 ;; esac; }
wait_long down
ok $? "CP-6-7: pb's upstream killed, the gateway's failed dials make pb $(health pb) in its snapshot"
like_re "$(redis_cli "$T/redis" HGET 'ph:cp:{c1}:health' pb)" '^[23]$' \
  "CP-6-7: the verdict is the pool's state in Redis (2 SUSPECT, 3 UNHEALTHY)"
t=$(cm | grep -E '^proxyhost_cp_controller_health_transitions_total\{to="(suspect|unhealthy)"\}' |
  awk '{s += $2} END {print s + 0}')
[ "${t:-0}" -ge 1 ]; ok $? "proxyhost_cp_controller_health_transitions_total counts it ($t)"
t=$(cm | grep '^proxyhost_cp_controller_health_moves_total{tier="passive",result="failed"}' | awk '{print $2}')
[ "${t:-0}" -ge 1 ]; ok $? "proxyhost_cp_controller_health_moves_total says a failed outcome moved it ($t)"
like "$(cat "$T/ctl.log")" "proxy health changed" "the controller logs the change"

before=$(outcomes dial failure)
r=0
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
  case $(req) in *hello*) ;; *) r=1 ;; esac
done
ok $r "fifteen more requests succeed"
is "$(outcomes dial failure)" "$before" \
  "CP-6-7: ... and none pays a failed dial: pb left the gateway's choices"

# ---- the admin API shows it --------------------------------------------------
st=$(health pb)
like_re "$(ctl proxy list | grep '^pb ')" "$st\$" \
  "CP-6-7: proxyhostctl proxy list shows pb's health ($st)"
show=$(ctl proxy show pb)
like "$show" "health       $st" "CP-6-7: proxy show pb shows its health"
like_re "$show" "health_items tier=passive state=(suspect|unhealthy)" \
  "CP-6-7: ... and the controller's passive item (gateway outcomes)"
like_re "$(ctl proxy list | grep '^pa ')" "(none|available)\$" \
  "CP-6-7: pa shows none or available"

# ---- extraction takes only AVAILABLE ---------------------------------------
out=$(ctl proxy extract pb 2>&1); rc=$?
[ $rc -ne 0 ]; ok $? "CP-6-7: extracting pb is refused (exit $rc)"
like_re "$out" "409 (suspect|unhealthy)" "... saying why: $out"
is "$(ctl proxy extraction pb 2>/dev/null | grep -c extracted)" 0 "... pb is not extracted"
ctl proxy extract pa >/dev/null 2>&1
ok $? "CP-6-7: an AVAILABLE proxy (pa) is still extracted"
ctl proxy return pa >/dev/null 2>&1; ok $? "... and returned"

# ---- the flaky pc never flaps ----------------------------------------------
# Every outcome the gateway counted reached the controller's reducer.
sum_gw() { gm | grep '^proxyhost_pool_outcomes_total' | awk '{s += $2} END {print s + 0}'; }
passive() { metric "$(cm)" 'proxyhost_cp_controller_health_observations_total{kind="passive"}'; }
seen() { [ "$(passive)" -ge "$(sum_gw)" ]; }
wait_long seen; ok $? "the controller reduced every outcome the gateway reported"
conns=$(grep -c conn "$T/flaky.port.log")
[ "$conns" -ge 9 ]; ok $? "pc took $conns connections (a third of them failed)"
case $(health pc) in suspect | unhealthy) r=1 ;; *) r=0 ;; esac
ok $r "CP-6-7: the flaky pc (one failure in three) is not SUSPECT or UNHEALTHY: $(health pc)"
unlike "$(grep 'proxy health changed' "$T/ctl.log" | grep 'proxy_id=pc')" "to=suspect" \
  "CP-6-7: ... and never was (no flap)"
unlike "$(grep 'proxy health changed' "$T/ctl.log" | grep 'proxy_id=pc')" "to=unhealthy" \
  "CP-6-7: ... not even once UNHEALTHY"
# ---- a verdict Redis lost, or that another writer changed -------------------
# One controller is the member for every proxy: a verdict it holds of its
# own (pc: it reduced pc's outcomes) is what Redis must hold, so another
# value, or none, is written over at its next sync tick. (Another
# controller's verdict reaching this one's snapshots: cp_multi_*.sh.)
pc_in_redis() { redis_cli "$T/redis" HGET 'ph:cp:{c1}:health' pc; }
own=$(pc_in_redis)
[ -n "$own" ]; ok $? "pc's own verdict is in Redis ($own)"
other=3; [ "$own" = 3 ] && other=2
redis_cli "$T/redis" HSET 'ph:cp:{c1}:health' pc "$other" >/dev/null
pc_back() { [ "$(pc_in_redis)" = "$own" ]; }
wait_long pc_back
ok $? "CP-6-7: another value over the member's own verdict is written over"
redis_cli "$T/redis" HDEL 'ph:cp:{c1}:health' pc >/dev/null
wait_long pc_back
ok $? "CP-6-7: ... and so is its removal (Redis lost it)"
# ---- a proxy that left the pool --------------------------------------------
ctl proxy delete pb >/dev/null; ok $? "pb deleted from the pool"
gone() { [ "$(redis_cli "$T/redis" HEXISTS 'ph:cp:{c1}:health' pb)" = 0 ]; }
wait_long gone
ok $? "CP-6-7: the reducer forgets a proxy that left the pool, its Redis field too"
unlike "$(cat "$T/ctl.log" "$T/g1.log")" "AddressSanitizer" "no sanitizer report"
stop_redis "$T/redis"
done_testing
