#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 23 item 12 (CP-1-13): the control plane's keepalive settings are
# applied, seen on the wire. A real controller (controlplane_server over
# redis_ownership and store_sqlite, t/lib/controller.sh, plaintext on
# loopback so that frames can be read) with grpc.keepalive_time = 1s and
# grpc.min_ping_interval = 1s, and a real gateway (controlplane_client,
# grpc.keepalive_time = 10s) reaching it through t/lib/h2_probe.py's relay,
# which logs every HTTP/2 PING and GOAWAY:
#   - the controller pings the gateway's connection (gRPC's keepalive
#     trace), never closer than its keepalive_time (gRPC 1.51 pings after
#     keepalive_time without a frame read; its default is 2 h: a ping
#     seen at all is the setting applied), each PING on the wire, and no
#     GOAWAY on that connection;
#   - a peer that pings five times 1.2 s apart on an open call is within
#     min_ping_interval and is answered (with the default 10 s the fourth
#     ping is a third strike: GOAWAY, which makes this check fail); one pinging every 100 ms is closed with GOAWAY
#     ENHANCE_YOUR_CALM "too_many_pings" (t/lib/h2_probe.py pinger).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api pool_api \
  controlplane_client
PROBE="/usr/bin/python3 $top_srcdir/t/lib/h2_probe.py"
TAP_ON_FAIL='cat "$T/wire"; tail -n 5 "$T/ph.log" "$T/gw.log"'

start_redis "$T/redis"; ok $? "redis-server starts"
admin=$(free_port) cpp=$(free_port) gw=$(free_port)
controller_ini "$T/ctl.ini" "$admin" "$cpp"
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
GRPC_TRACE=http_keepalive GRPC_VERBOSITY=INFO start_proxyhost "$T/ctl.ini" --set controlplane_server.grpc.keepalive_time=1s \
  --set controlplane_server.grpc.min_ping_interval=1s
wait_for ready "$admin"; ok $? "a controller with keepalive_time = 1s, min_ping_interval = 1s"

# ---- a peer's pings against min_ping_interval ----------------------------------
WATCH=/controlplane.v1.WorkerControlPlane/WatchSnapshots
out=$($PROBE pinger --target "127.0.0.1:$cpp" --path "$WATCH" --pings 5 --every 1200)
is "$out" "no-goaway 5" "CP-1-13 five pings 1.2 s apart on an open call: within min_ping_interval (1s), each answered"
out=$($PROBE pinger --target "127.0.0.1:$cpp" --path "$WATCH" --pings 8 --every 100)
is "$out" "goaway 11 too_many_pings" \
  "issue 23 item 12: pings 100 ms apart: closed with GOAWAY ENHANCE_YOUR_CALM too_many_pings"

# ---- the controller's pings to a real gateway ------------------------------------
# gRPC's keepalive trace (GRPC_TRACE=http_keepalive) tells keepalive pings
# from flow-control (BDP) pings, which look the same on the wire; the
# relay shows the pings and any GOAWAY on the wire.
$PROBE relay --listen-port-file "$T/relay.port" --target "127.0.0.1:$cpp" \
  --events "$T/wire" --seconds 120 >"$T/relay.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/relay.port"; ok $? "the HTTP/2 relay is up"
: >>"$T/wire"
: >"$T/ph.log" # the pinger's connections are gone: what follows is the gateway's
{
  printf '[proxyhost]\nmodules = controlplane_client\nmodule_path = %s\n' "$top_builddir/modules"
  printf '[admin]\nlisten = 127.0.0.1:%s\n[controlplane_client]\ntls.mode = disabled\n' "$gw"
  printf 'grpc.keepalive_time = 10s\n'
} >"$T/gw.ini"
"$PROXYHOST" -c "$T/gw.ini" -control-plane "127.0.0.1:$(cat "$T/relay.port")" \
  -cluster-id c1 -worker-id w1 -instance-id w1-a -zone z1 >>"$T/gw.log" 2>&1 &
PIDS="$PIDS $!"
wait_long gw_has_view "$gw"; ok $? "a gateway through the relay has its session and view (it owns no proxy: not ready)"

starts() { grep -c "Start keepalive ping" "$T/ph.log"; }
wait_long eval '[ "$(starts)" -ge 3 ]'
ok $? "issue 23 item 12: the controller pings the gateway's connection (keepalive_time = 1s; gRPC's default is 2 h)"
# The shortest time between two of them (gRPC's log: "I1206 HH:MM:SS.ns").
g=$(grep "Start keepalive ping" "$T/ph.log" | awk '{ split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]
  if (n++) { d = s - p; if (m == "" || d < m) m = d } p = s } END { printf "%.3f\n", m }')
awk -v g="$g" 'BEGIN { exit !(g >= 0.95) }'
ok $? "CP-1-13 never closer than keepalive_time: a ping only after 1 s without a frame read (shortest gap ${g}s)"
wait_cond '[ "$(grep -c " ping s2c\$" "$T/wire")" -ge "$(starts)" ]'
ok $? "each is on the wire (PING frames from the controller, seen by the relay)"
grep -q "goaway" "$T/wire"
ok $(( ! $? )) "the gateway's pings (keepalive_time 10s >= min_ping_interval) are never too many: no GOAWAY"
gw_has_view "$gw"; ok $? "the gateway still has its session and view"

done_testing
