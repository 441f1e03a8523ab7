#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Established tunnels do not outlive ownership (issue 22 item 14; seed 000
# §3 "停止接收新流量并排空已有请求", §4 "避免双主"): a real gateway
# (controlplane_client, outcome_reporter, direct, round_robin, pool,
# http_proxy) on the scriptable fake controller t/lib/cp_fake_controller.py,
# two upstream proxies (proxyhost `local` instances, HTTP CONNECT) and one
# target per upstream (t/lib/lease_target.py's /drip: bytes every 20 ms
# for as long as the stream lives). Two long-lived CONNECT tunnels, one
# through each proxy, then:
#  (a) the controller revokes pA (revoke_proxy_ids, CP-4-7), or a new
#      snapshot drops it (extracted, CP-4-2): new opens through pA stop at
#      once, its tunnel ends after [pool] drain_timeout (the client sees the
#      connection closed), counted in proxyhost_pool_streams_cut_total and
#      logged once for pA;
#  (c) ... while the tunnel through pB, still in the view, is untouched;
#  (b) the controller goes away: once the view passes max_stale_age (4 s
#      here, CP-3-18) both tunnels end after the drain (CP-4-6: the
#      controller may give the proxies to another gateway by then), the
#      pool's gate closes and http_proxy stops accepting: a new
#      connection waits in the listen queue (issue 23 item 9);
#  (d) no drain outlives the proxies' expires_at (the end of this
#      gateway's ownership lease, 6 s after a snapshot never refreshed):
#      with drain_timeout = 1h both tunnels end at expires_at (the margin
#      before it, usable_until, was their drain: CP-3-5, CP-4-6).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/cp_fake.sh"

PY=/usr/bin/python3
MODS="$top_builddir/modules"
LT="$PY $top_srcdir/t/lib/lease_target.py"
require_modules controlplane_client outcome_reporter direct round_robin pool \
  http_proxy

cp_stubs

# ---- targets and upstreams ----------------------------------------------------
for x in A B; do
  $LT serve --port-file "$T/target$x.port" --lifetime 300 >"$T/target$x.log" 2>&1 &
  PIDS="$PIDS $!"
done
wait_file "$T/targetA.port" && wait_file "$T/targetB.port"
ok $? "two drip targets on 127.0.0.1"
TA=$(cat "$T/targetA.port") TB=$(cat "$T/targetB.port")
UA=$(free_port) UB=$(free_port)
for x in A B; do
  eval "up=\$U$x"
  printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n' \
    "$MODS" "$(free_port)" "$up" >"$T/u$x.ini"
  "$PROXYHOST" -c "$T/u$x.ini" >"$T/u$x.log" 2>&1 &
  PIDS="$PIDS $!"
done
wait_for port_open "$UA" && wait_for port_open "$UB"
ok $? "two upstream proxies (proxyhost http_proxy) listen"
export CP_FAKE_POOL="pA:$UA:$TA pB:$UB:$TB"

TAP_ON_FAIL='echo "events:"; tail -5 "$EV"; echo "gateway log:"; grep -v level=debug "$D/gw.log" | tail -12'
pm() { http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#' | grep -F "$1 " | awk '{print $2}' | head -1; }
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
not_ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 503 ]; }

# start SCENARIO [ARGS...]: a fake controller and a gateway on it (ARGS:
# more for the gateway, --set ...).
start() {
  scen=$1
  shift
  D="$T/$scen"
  mkdir -p "$D"
  EV="$D/events"
  : >"$EV"
  CP_FAKE_TRIGGER="$D/trigger" "$PY" "$top_srcdir/t/lib/cp_fake_controller.py" \
    "$T/gen" "$D/port" "$EV" "$scen" >"$D/fake.log" 2>&1 &
  FAKE=$!
  PIDS="$PIDS $FAKE"
  wait_long test -s "$D/port"
  admin=$(free_port) hport=$(free_port)
  cat >"$D/gw.ini" <<EOF
[proxyhost]
modules = controlplane_client, outcome_reporter, direct, round_robin, pool, http_proxy
module_path = $MODS
drain_timeout = 2s
[log]
level = debug
$(cp_client_ini "$admin")
[outcome_reporter]
flush_interval = 200ms
[pool]
strategies = round_robin
drain_timeout = 1s
[http_proxy]
listen = 127.0.0.1:$hport
connector = pool
EOF
  "$PROXYHOST" -c "$D/gw.ini" -control-plane "127.0.0.1:$(cat "$D/port")" \
    -cluster-id c1 -worker-id w1 -instance-id i1 -zone z1 "$@" >"$D/gw.log" 2>&1 &
  GW=$!
  PIDS="$PIDS $GW"
  wait_long ready
  ok $? "the gateway is ready ($scen)"
}
stop() {
  kill -TERM "$GW" 2>/dev/null
  wait_exit "$GW" 10
  if [ "$EXIT" = timeout ]; then
    # Say where the gateway is (each thread's wait channel, system call
    # and kernel stack), then end it so the next scenario can run.
    echo "# the gateway did not exit within 10 s of SIGTERM; its last lines and threads:"
    tail -n 12 "$D/gw.log" | sed 's/^/# /'
    for t in /proc/"$GW"/task/*; do
      printf '# thread %s %s wchan=%s syscall=%s\n' "${t##*/}" \
        "$(cat "$t/comm" 2>/dev/null)" "$(cat "$t/wchan" 2>/dev/null)" \
        "$(cut -d' ' -f1-3 "$t/syscall" 2>/dev/null)"
      sed 's/^/#   /' "$t/stack" 2>/dev/null | head -8
    done
    kill -9 "$GW" 2>/dev/null
    wait "$GW" 2>/dev/null
  fi
  kill -9 "$FAKE" 2>/dev/null
  wait "$FAKE" 2>/dev/null
}
# tunnel NAME PORT: a CONNECT tunnel through the gateway to the drip on
# 127.0.0.1:PORT, held until the proxy closes it or $D/stop.NAME exists
# (at most 45 s); its output ("open", then "got N" and maybe "eof") in
# $D/NAME.out.
tunnel() {
  $LT client --via connect --proxy "$hport" --port "$2" --path /drip \
    --read 2048 --hold 45 --until "$D/stop.$1" >"$D/$1.out" 2>&1 &
  PIDS="$PIDS $!"
}
has() { grep -q "^$2\$" "$D/$1.out" 2>/dev/null; }
both_open() { has a open && has b open && [ "$(pm proxyhost_pool_active)" = 2 ]; }
new_open() { "$CURL" -s -m 10 -x "http://127.0.0.1:$hport" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/hello" 2>/dev/null; }

# ---- (a) revoked or extracted: pA's tunnel ends, pB's is untouched -----------------
for how in revoke remove; do
  case $how in revoke) reason=revoked ;; *) reason=removed ;; esac
  start drain_$how
  is "$(new_open "$TA")" 200 "a request through pA before ($how)"
  tunnel a "$TA"
  tunnel b "$TB"
  wait_long both_open
  ok $? "two long-lived CONNECT tunnels, through pA and pB ($how)"
  : >"$D/trigger"
  wait_long has a eof
  ok $? "CP-4-2 CP-4-7 the controller ${how}s pA: its tunnel ends after the drain, the client sees the connection closed (issue 22 item 14)"
  is "$(new_open "$TA")" 503 "CP-4-2 new opens through pA stop ($how: no candidate, REJECT)"
  is "$(pm "proxyhost_pool_streams_cut_total{reason=\"$reason\"}")" 1 "the cut stream is counted, reason $reason"
  n=$(grep -c 'msg="drained streams of a proxy cut".*proxy_id=pA' "$D/gw.log")
  is "$n" 1 "... and logged once for pA"
  # The drain came first: its start is logged before the cut.
  l0=$(grep -n "msg=\"a proxy may carry no more streams: they drain, then are cut\" proxy_id=pA reason=$reason drain_timeout_ms=1000" "$D/gw.log" | head -1 | cut -d: -f1)
  l1=$(grep -n 'msg="drained streams of a proxy cut".*proxy_id=pA' "$D/gw.log" | head -1 | cut -d: -f1)
  [ -n "$l0" ] && [ -n "$l1" ] && [ "$l0" -lt "$l1" ]
  ok $? "... after a drain of drain_timeout (1 s), logged when it began ($how)"
  grep -q 'msg="drained streams of a proxy cut".*proxy_id=pB' "$D/gw.log"
  isnt_b=$?
  is "$isnt_b" 1 "... nothing for pB"
  has b eof
  is $? 1 "(c) the tunnel through pB, still in the view, is untouched ($how)"
  is "$(pm proxyhost_pool_active)" 1 "... and still active"
  is "$(new_open "$TB")" 200 "... and new opens through pB go on"
  : >"$D/stop.b"
  wait_long has b 'got [0-9]*'
  ok $? "... its client closes it itself"
  has b eof
  is $? 1 "... the proxy never closed it"
  stop
done

# ---- (b) the controller goes away: max_stale_age ---------------------------------
start drain_stale
tunnel a "$TA"
tunnel b "$TB"
wait_long both_open
ok $? "two long-lived CONNECT tunnels (stale)"
kill -9 "$FAKE"
wait "$FAKE" 2>/dev/null
wait_long has a eof
ok $? "CP-3-18 the controller gone: once the view passes max_stale_age the tunnel through pA ends after the drain (issue 22 item 14)"
wait_long has b eof
ok $? "CP-4-6 ... and the one through pB: nothing carries traffic on a view the controller no longer backs"
not_ready
ok $? "CP-3-18 ... the gateway is not ready"
is "$(pm 'proxyhost_pool_streams_cut_total{reason="stale"}')" 2 "both cut streams counted, reason stale"
is "$(pm proxyhost_pool_active)" 0 "nothing active is left"
# No new traffic either (issue 23 item 9, CP-3-18): http_proxy's listener
# is paused, so a new connection waits in the kernel's accept queue
# (Recv-Q of the listening socket) instead of being taken and answered.
is "$(pm proxyhost_pool_accepting)" 0 "CP-3-18 issue 23 item 9 the pool's gate is closed"
grep -q 'module=http_proxy msg="not accepting new connections' "$D/gw.log"
ok $? "... http_proxy says it stops accepting"
"$PY" -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
time.sleep(30)' "$hport" &
held=$!
PIDS="$PIDS $held"
queued() { [ "$(ss -ltnH "sport = :$hport" | awk '{print $2}' | head -1)" -ge 1 ] 2>/dev/null; }
wait_long queued
ok $? "CP-3-18 issue 23 item 9 a new connection is not accepted (it waits in the listen queue)"
kill "$held" 2>/dev/null
stop
is "$EXIT" 0 "the gateway stops cleanly"

# ---- (d) the ownership lease ends first: expires_at --------------------------------
start drain_expire --set pool.drain_timeout=1h
tunnel a "$TA"
tunnel b "$TB"
wait_long both_open
ok $? "two long-lived CONNECT tunnels (expires_at 6 s away, drain_timeout 1h)"
wait_long has a eof
ok $? "CP-4-6 the proxies' expires_at passes: the tunnel through pA ends then, not after the 1 h drain (issue 22 item 14)"
wait_long has b eof
ok $? "... and the one through pB"
is "$(pm 'proxyhost_pool_streams_cut_total{reason="expired"}')" 2 "both cut streams counted, reason expired"
is "$(new_open "$TA")" 503 "CP-3-6 new opens through pA stopped (past usable_until: no candidate)"
stop

done_testing
