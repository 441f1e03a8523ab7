#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Several controllers (issue 26 "Several controllers"), every part real: one
# redis-server (t/lib/redis.sh), one PostgreSQL (t/lib/pg.sh) for
# store_pg, two controllers c1 and c2 on them (the same cluster, reference
# key and secrets), two gateways and two checkers each given both
# addresses (w1 and k1 "c1,c2", w2 and k2 "c2,c1"), proxyhost upstreams
# (p1..p4 on two live http_proxy upstreams, p5 on a port nobody listens
# on). What it shows:
#  - both controllers serve: each holds a checker stream and is a member
#    (proxyhost_cp_controller_members 2 on both);
#  - each proxy's checks are scheduled by one controller: over a bounded
#    number of rounds, every proxy's tasks ("check task issued") come from
#    one controller only, and each proxy is checked (CP-6-1);
#  - the dead upstream's proxy is UNHEALTHY in the gateways' views, with
#    one writer (CP-6-7);
#  - c1 killed -9: w1 and k1 move to c2 (the address list's next), keep
#    their sessions' ownership: every proxy owned by the same gateway in
#    Redis before and after, never two owners in any sample
#    (t/lib/cp_views.py), the gateways ready throughout;
#  - c2 schedules every proxy once c1's lease lapsed, and a live upstream
#    killed after the move becomes UNHEALTHY in both gateways' views: the
#    checks and the health loop go on.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/pg.sh"
. "$top_srcdir/t/lib/cp_views.sh"
. "$top_srcdir/t/lib/cp_multi.sh"
require_modules controlplane_server redis_ownership store_pg admin_api \
  pool_api controlplane_client checker echo direct http_proxy

PY=/usr/bin/python3
CTL="$top_builddir/tools/proxyhostctl"
MODS="$top_builddir/modules"
TAP_ON_FAIL='for f in c1 c2 w1 w2 k1 k2; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -6; done'

status_of() { http_get "http://127.0.0.1:$1/readyz" | head -1; }
ready() { [ "$(status_of "$1")" = 200 ]; }
mt() { metric "$(http_get "http://127.0.0.1:$1/metrics")" "$2"; }
# view_health ADMIN: "proxy=health" of a gateway's view, sorted, by commas.
view_health() {
  curl -s -m 5 "http://127.0.0.1:$1/v1/cp/view" |
    "$PY" -c 'import json,sys; print(",".join(sorted(p["proxy_id"] + "=" + p.get("health", "") for p in json.load(sys.stdin)["proxies"])))' 2>/dev/null
}
# both_views: the proxy ids of w1's and w2's views together, sorted.
both_views() {
  for g in "$gw1" "$gw2"; do
    curl -s -m 5 "http://127.0.0.1:$g/v1/cp/view" |
      "$PY" -c 'import json,sys; [print(p["proxy_id"]) for p in json.load(sys.stdin)["proxies"]]' 2>/dev/null
  done | sort | tr '\n' ' '
}
P='ph:cp:{c1}:'
owners() { # every proxy's owner in Redis: "p1=w1 p2=w2 ..."
  for p in p1 p2 p3 p4 p5; do
    printf '%s=%s ' "$p" "$(redis_cli "$T/redis" HGET "${P}owner:$p" worker)"
  done
}

# ---- Redis, PostgreSQL, upstreams -------------------------------------------
cpm_stores
U1=$(free_port) U2=$(free_port) DEAD=$(free_port)
for u in 1 2; do
  eval "port=\$U$u"
  printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
    "$MODS" "$(free_port)" "$port" >"$T/u$u.ini"
  "$PROXYHOST" -c "$T/u$u.ini" >>"$T/u$u.log" 2>&1 &
  eval "UP$u=\$!"
  PIDS="$PIDS $!"
done
cpm_echo
wait_for port_open "$U1" && wait_for port_open "$U2" && wait_for port_open "$E"
ok $? "two upstreams (proxyhost http_proxy) and the echo endpoint listen"

# ---- two controllers ----------------------------------------------------------
cpm_two
out=$("$PROXYHOST" -c "$T/c1.ini" --check-config 2>&1)
ok $? "the controllers' configuration passes --check-config" || echo "# $out"
ctl() { "$CTL" --admin "127.0.0.1:$a1" --token-file "$T/admin.token" "$@" >/dev/null; }
ctl proxy add p1 --protocol http_connect --host 127.0.0.1 --port "$U1" --groups g --capacity 10 &&
  ctl proxy add p2 --protocol http_connect --host 127.0.0.1 --port "$U2" --groups g --capacity 10 &&
  ctl proxy add p3 --protocol http_connect --host 127.0.0.1 --port "$U1" --groups g --capacity 10 &&
  ctl proxy add p4 --protocol http_connect --host 127.0.0.1 --port "$U2" --groups g --capacity 10 &&
  ctl proxy add p5 --protocol http_connect --host 127.0.0.1 --port "$DEAD" --groups g --capacity 10
ok $? "proxyhostctl proxy add p1..p5 (p2, p4 on the second upstream; p5 dead)"

# ---- gateways and checkers, each given both addresses --------------------------
g1a=$(free_port) g2a=$(free_port) k1a=$(free_port) k2a=$(free_port)
gw1=$g1a gw2=$g2a
for w in w1 w2; do
  printf '[proxyhost]\nmodules = controlplane_client\nmodule_path = %s\n[log]\nlevel = debug\n[admin]\nlisten = 127.0.0.1:%s\n[controlplane_client]\ntls.mode = disabled\nruntime_interval.min = 200ms\nbackoff.min = 200ms\nbackoff.max = 1s\nrpc_timeout = 2s\n' \
    "$MODS" "$(eval echo "\$g${w#w}a")" >"$T/$w.ini"
done
cpm_checker_ini "$k1a" >"$T/k1.ini"
cpm_checker_ini "$k2a" >"$T/k2.ini"
L1="127.0.0.1:$cp1,127.0.0.1:$cp2" L2="127.0.0.1:$cp2,127.0.0.1:$cp1"
out=$("$PROXYHOST" -c "$T/w1.ini" -control-plane "$L1" -cluster-id c1 \
  -worker-id w1 -instance-id w1-a -zone z1 --check-config 2>&1)
ok $? "a gateway's -control-plane takes a list of two addresses" || echo "# $out"
out=$("$PROXYHOST" -c "$T/w1.ini" -control-plane "127.0.0.1:$cp1,127.0.0.1:$cp1" \
  -cluster-id c1 -worker-id w1 -instance-id w1-a -zone z1 --check-config 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -q "controlplane_client.address"
ok $? "... and refuses one address twice, naming the key"
"$PROXYHOST" -c "$T/w1.ini" -control-plane "$L1" -cluster-id c1 -worker-id w1 \
  -instance-id w1-a -zone z1 >>"$T/w1.log" 2>&1 &
W1=$!
"$PROXYHOST" -c "$T/w2.ini" -control-plane "$L2" -cluster-id c1 -worker-id w2 \
  -instance-id w2-a -zone z2 >>"$T/w2.log" 2>&1 &
W2=$!
"$PROXYHOST" -c "$T/k1.ini" -control-plane "$L1" -cluster-id c1 -checker-id k1 \
  -instance-id k1-a -zone z1 >>"$T/k1.log" 2>&1 &
K1=$!
"$PROXYHOST" -c "$T/k2.ini" -control-plane "$L2" -cluster-id c1 -checker-id k2 \
  -instance-id k2-a -zone z2 >>"$T/k2.log" 2>&1 &
K2=$!
PIDS="$PIDS $W1 $W2 $K1 $K2"
watching() { [ "$(mt "$1" 'proxyhost_checker_session_state{state="watching"}')" = 1 ]; }
wait_long watching "$k1a" && wait_long watching "$k2a"
ok $? "CP-6-1 both checkers register and watch their tasks"
on() { [ "$(mt "$1" proxyhost_cp_controller_checkers)" = "$2" ]; }
on "$a1" 1 && on "$a2" 1
ok $? "k1 is on c1 and k2 on c2 (each list's first address)"
members() { [ "$(mt "$1" proxyhost_cp_controller_members)" = "$2" ]; }
wait_long members "$a1" 2 && wait_long members "$a2" 2
ok $? "both controllers hold a checker and are members (Redis lease)"
is "$(redis_cli "$T/redis" ZCARD "${P}members")" 2 "Redis holds two members"
all5() { [ "$(both_views)" = "p1 p2 p3 p4 p5 " ]; }
wait_long all5; ok $? "CP-4-1 every proxy is in one gateway's view"
wait_long ready "$gw1" && wait_long ready "$gw2"; ok $? "both gateways ready"

# ---- one scheduler per proxy ----------------------------------------------------
# From now on both see the same two members: count each proxy's tasks per
# controller until every proxy has three (bounded by wait_long).
n1=$(wc -l <"$T/c1.log") n2=$(wc -l <"$T/c2.log")
tasks() { # tasks LOG FROM PROXY: tasks of PROXY issued after line FROM
  tail -n "+$(($2 + 1))" "$T/$1.log" | grep "check task issued" | grep -c "proxy_id=$3 "
}
enough() {
  for p in p1 p2 p3 p4 p5; do
    [ $(($(tasks c1 "$n1" $p) + $(tasks c2 "$n2" $p))) -ge 3 ] || return 1
  done
}
wait_long enough; ok $? "CP-6-1 every proxy checked at least three times"
split=
for p in p1 p2 p3 p4 p5; do
  a=$(tasks c1 "$n1" $p) b=$(tasks c2 "$n2" $p)
  echo "#   $p: c1 $a, c2 $b"
  [ "$a" -eq 0 ] || [ "$b" -eq 0 ] || split="$split $p"
done
is "$split" "" "each proxy's checks come from one controller (rendezvous hashing)"
unhealthy5() { view_health "$1" | grep -q "p5=unhealthy"; }
wait_long unhealthy5 "$gw1" || wait_long unhealthy5 "$gw2"
v="$(view_health "$gw1"),$(view_health "$gw2")"
like "$v" "p5=unhealthy" "CP-6-7 p5 (nobody listens) is UNHEALTHY in its gateway's view"
unlike "$v" "p1=unhealthy" "... p1 is not"

# ---- c1 killed: w1 and k1 move to c2 ---------------------------------------
before=$(owners)
echo "# owners before: $before"
sampling kill --redis "$REDIS_PORT" --cluster c1 w1="$gw1" w2="$gw2"
kill -9 "$C1"; wait "$C1" 2>/dev/null
on2() { on "$a2" 2; }
wait_long on2; ok $? "k1 moved to c2 (both checkers on c2)"
streams2() { [ "$(mt "$a2" proxyhost_cp_controller_streams_open)" = 2 ]; }
wait_long streams2; ok $? "w1 moved to c2 (two WatchSnapshots streams on c2)"
wait_long members "$a2" 1; ok $? "c1's lease lapsed: c2 is the only member"
n2=$(wc -l <"$T/c2.log")
moved_all() { for p in p1 p2 p3 p4 p5; do [ "$(tasks c2 "$n2" $p)" -ge 2 ] || return 1; done; }
wait_long moved_all; ok $? "c2 schedules every proxy's checks now"
unsample kill
checks kill "$T/kill.jsonl" disjoint
checks kill-ready "$T/kill.jsonl" ready w1 w2
is "$(owners)" "$before" "CP-4-1 ownership not lost: each proxy's owner in Redis unchanged"
grep -q "RegisterWorker" "$T/c2.log" && echo "# (c2 saw a RegisterWorker)"

# ---- the health loop goes on through c2 ----------------------------------------
kill "$UP2"; wait "$UP2" 2>/dev/null
down24() { view_health "$1" | grep -q "p2=unhealthy" && view_health "$1" | grep -q "p4=unhealthy"; }
wait_long eval 'down24 "$gw1" || down24 "$gw2" || { view_health "$gw1" | grep -q p2=unhealthy && view_health "$gw2" | grep -q p4=unhealthy; } || { view_health "$gw1" | grep -q p4=unhealthy && view_health "$gw2" | grep -q p2=unhealthy; }'
ok $? "CP-6-7 the killed upstream's proxies (p2, p4) become UNHEALTHY in the gateways' views through c2"
is "$(redis_cli "$T/redis" HGET "${P}health" p1)" 1 "p1 stays AVAILABLE in Redis"

for pid in $W1 $W2 $K1 $K2 $C2; do kill "$pid"; done
for pid in $W1 $W2 $K1 $K2 $C2; do wait_exit "$pid" 10; done
done_testing
