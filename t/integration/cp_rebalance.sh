#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Readiness and rebalancing (issue 23 item 4; CP-4-1, CP-4-4, CP-4-6,
# CP-1-28), every part real: a private redis-server, a controller
# proxyhost (store_sqlite, redis_ownership, controlplane_server,
# admin_api; t/lib/controller.sh), two gateway proxyhosts
# (controlplane_client, pool, http_proxy) on plaintext loopback, one
# upstream proxy (a proxyhost `local` http_proxy) that four pool proxies
# p1..p4 name, and a drip target (t/lib/lease_target.py) for the
# streams. t/lib/cp_views.py samples both gateways' views and /readyz.
#  - a gateway whose view has no usable proxy is not ready (/readyz 503),
#    and ready once the pool gives it one;
#  - a gateway that joins gets its share (two of four) through the drain,
#    within a bounded time, while four streams through the first gateway
#    (shorter than [pool] drain_timeout) run until their clients close
#    them: no proxy usable by two gateways in any sample, no stream cut;
#  - a gateway partitioned (SIGSTOP) past its lease loses its proxies to
#    the other (CP-4-6), and once back gets its share again the same way.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
. "$top_srcdir/t/lib/cp_views.sh"
require_modules store_sqlite redis_ownership controlplane_server admin_api pool_api \
  controlplane_client outcome_reporter direct round_robin pool http_proxy

MODS="$top_builddir/modules"
CTL="$top_builddir/tools/proxyhostctl"
LT="$PY $top_srcdir/t/lib/lease_target.py"
TAP_ON_FAIL='for f in ctl g1 g2; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -6; done'

start_redis "$T/redis"; ok $? "redis-server starts"
admin=$(free_port) cpp=$(free_port)
controller_ini "$T/ctl.ini" "$admin" "$cpp"
# Short TTLs and leases (the constraints of controlplane_server's
# --check-config hold): a lease lapses 8 s after the last report.
"$PROXYHOST" -c "$T/ctl.ini" \
  --set redis_ownership.session_ttl=3s --set redis_ownership.runtime_ttl=2s \
  --set redis_ownership.ownership_lease=8s --set redis_ownership.rebalance_max=2 \
  --set controlplane_server.session_ttl=3s \
  --set controlplane_server.runtime_interval=500ms \
  --set controlplane_server.snapshot_validity=10s \
  --set controlplane_server.allocation_safety_margin=1s \
  --set controlplane_server.refresh_before=5s >>"$T/ctl.log" 2>&1 &
PIDS="$PIDS $!"
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
not_ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 503 ]; }
healthy() { [ "$(http_get "http://127.0.0.1:$1/healthz" | head -1)" = 200 ]; }
wait_long ready "$admin"; ok $? "the controller is ready"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@" >/dev/null; }

# The target and the upstream proxy.
$LT serve --port-file "$T/target.port" --lifetime 300 >"$T/target.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/target.port"; TGT=$(cat "$T/target.port")
UP=$(free_port)
printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$UP" >"$T/up.ini"
"$PROXYHOST" -c "$T/up.ini" >"$T/up.log" 2>&1 &
PIDS="$PIDS $!"
wait_for port_open "$UP"; ok $? "a drip target and an upstream proxy listen"

# gateway NAME: starts it (sets its ports a_NAME, h_NAME and pid g_NAME)
gateway() {
  a=$(free_port) h=$(free_port)
  cat >"$T/$1.ini" <<EOF
[proxyhost]
modules = controlplane_client, outcome_reporter, direct, round_robin, pool, http_proxy
module_path = $MODS
drain_timeout = 2s
[log]
level = debug
[admin]
listen = 127.0.0.1:$a
[controlplane_client]
tls.mode = disabled
runtime_interval.min = 200ms
backoff.min = 200ms
backoff.max = 1s
[pool]
strategies = round_robin
[http_proxy]
listen = 127.0.0.1:$h
connector = pool
EOF
  "$PROXYHOST" -c "$T/$1.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
    -worker-id "$1" -instance-id "$1-a" -zone z1 >>"$T/$1.log" 2>&1 &
  PIDS="$PIDS $!"
  eval "a_$1=$a h_$1=$h g_$1=$!"
}
view_ids() {
  curl -s -m 5 "http://127.0.0.1:$1/v1/cp/view" |
    "$PY" -c 'import json,sys; print(",".join(p["proxy_id"] for p in json.load(sys.stdin)["proxies"] if not p["draining"]))' 2>/dev/null
}
# owns ADMIN N: the gateway's view has N proxies that are not draining
owns() { [ "$(view_ids "$1" | tr ',' '\n' | grep -c .)" = "$2" ]; }

# ---- no proxy, not ready (issue 23 item 4) ----------------------------------
gateway g1
wait_long healthy "$a_g1"; ok $? "gateway g1 runs"
wait_long owns "$a_g1" 0; ok $? "g1 has a view, with no proxy (an empty pool)"
sleep 1
not_ready "$a_g1"
ok $? "issue 23 item 4, CP-1-28: a gateway with no usable proxy is not ready (/readyz 503)"
ctl route add all --position 100 --host '*' --group g --strategy round_robin &&
  for p in p1 p2 p3 p4; do
    ctl proxy add "$p" --protocol http_connect --host 127.0.0.1 --port "$UP" \
      --groups g --capacity 10 --zone z1 || exit 1
  done
ok $? "proxyhostctl: a route and p1..p4 (one upstream, capacity 10 each)"
wait_long owns "$a_g1" 4; ok $? "g1 owns all four"
wait_long ready "$a_g1"; ok $? "... and is ready"

# ---- a gateway joins: its share through the drain ----------------------------
# Four streams through g1 first (round robin: one on each proxy), each
# held 4 s by its client: those on the proxies g1 gives up drain, and the
# moves wait for them; none is cut ([pool] drain_timeout is 30 s).
for k in 1 2 3 4; do
  $LT client --via connect --proxy "$h_g1" --port "$TGT" --path /drip --read 2048 \
    --hold 4 --until "$T/stop.s$k" >"$T/s$k.out" 2>&1 &
  eval "S$k=\$!"
  PIDS="$PIDS $!"
  wait_for grep -q '^open$' "$T/s$k.out" || break
done
ok $? "four streams through g1 are open"
active() { [ "$(http_get "http://127.0.0.1:$a_g1/metrics" | grep -v '^#' | grep -F 'proxyhost_pool_active ' | awk '{print $2}')" = "$1" ]; }
active 4; ok $? "... on g1 (proxyhost_pool_active 4)"
gateway g2
wait_long healthy "$a_g2"; ok $? "gateway g2 runs"
sampling join g1="$a_g1" g2="$a_g2"
wait_long owns "$a_g2" 2
ok $? "issue 23 item 4: the joining gateway gets its share (two of four) within a bounded time"
wait_long owns "$a_g1" 2; ok $? "... and g1 keeps the other two"
wait_long ready "$a_g2"; ok $? "g2 is ready"
for k in 1 2 3 4; do
  eval "wait_exit \$S$k 15"
  o=$(cat "$T/s$k.out")
  case $o in *got*) case $o in *eof*) r=1 ;; *) r=0 ;; esac ;; *) r=1 ;; esac
  ok $r "stream $k ran until its client closed it (not cut by the move): $(echo $o)"
done
unsample join
checks join "$T/join.jsonl" disjoint-usable
m=$(http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#' |
  grep -F 'proxyhost_cp_controller_rebalance_total{what="moved"}' | awk '{print $2}')
[ "${m:-0}" -ge 2 ]; ok $? "proxyhost_cp_controller_rebalance_total{what=\"moved\"} counts the moves ($m)"
cut=$(http_get "http://127.0.0.1:$a_g1/metrics" | grep -v '^#' |
  grep '^proxyhost_pool_streams_cut_total' | awk '{s += $2} END {print s + 0}')
is "$cut" 0 "g1 cut no stream"
body=$(curl -s -m 10 -x "http://127.0.0.1:$h_g2" "http://127.0.0.1:$TGT/hello")
like "$body" "hello" "a request through g2 reaches the target"

# ---- a partition: g2 stopped past its lease, then back ---------------------
sampling part g1="$a_g1" g2="$a_g2"
kill -STOP "$g_g2"
wait_long owns "$a_g1" 4
ok $? "CP-4-6 g2 stopped: its proxies reach g1 once its lease lapsed"
sleep 1
kill -CONT "$g_g2"
wait_long owns "$a_g2" 2
ok $? "issue 23 item 4: back, g2 gets its share again within a bounded time"
wait_long owns "$a_g1" 2; ok $? "... and g1 keeps the other two"
wait_long ready "$a_g2"; ok $? "g2 is ready"
unsample part
checks part "$T/part.jsonl" disjoint-usable
body=$(curl -s -m 10 -x "http://127.0.0.1:$h_g2" "http://127.0.0.1:$TGT/hello")
like "$body" "hello" "a request through g2 reaches the target again"
unlike "$(cat "$T/ctl.log" "$T/g1.log" "$T/g2.log")" "AddressSanitizer" "no sanitizer report"
stop_redis "$T/redis"
done_testing
