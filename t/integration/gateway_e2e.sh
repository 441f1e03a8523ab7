#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The gateway's data path end to end (issue 13), every part real: a
# private redis-server and PostgreSQL cluster, a controller proxyhost
# (store_pg, redis_ownership, controlplane_server, admin_api), two gateway
# proxyhosts (controlplane_client, outcome_reporter, the five strategy
# modules, pool, http_proxy and socks5 with connector = pool), and
# upstream proxies of three kinds: proxyhost `local` instances (HTTP
# CONNECT with a password, SOCKS5), Debian's microsocks (SOCKS5 with a
# password) and tinyproxy (HTTP CONNECT), and a second tinyproxy with
# BasicAuth as an `http` upstream, an ordinary forward proxy that the
# HTTP frontend's requests reach in absolute form (issue 13); plus
# upstreams that fail on purpose (t/lib/bad_upstream.py) for each outcome
# stage. curl and the load generator (t/bench/phload) go through the
# gateways, and what they report arrives at the controller: runtime
# counts in Redis, outcomes accepted.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/pg.sh"
. "$top_srcdir/t/lib/cp_multi.sh"
require_modules controlplane_server redis_ownership store_pg admin_api pool_api \
  controlplane_client outcome_reporter pool round_robin weighted \
  least_active random sticky http_proxy socks5 direct auth_local

PY=/usr/bin/python3
CTL="$top_builddir/tools/proxyhostctl"
PW_A=pw-A-Gateway-Never-Logged-31c9
PW_B=pw-B-Gateway-Never-Logged-8e07
PW_F=pw-F-Forward-Never-Logged-5d21
for b in microsocks tinyproxy; do
  command -v "$b" >/dev/null 2>&1
  ok $? "$b is installed (scripts/install-deps.sh)"
done
# On a failure: each log's last lines, every view g1 used, and the
# session's RPC results on both sides (a stalled lease renewal shows as
# runtime reports refused or missing, and a view that lost a proxy).
TAP_ON_FAIL='for f in ctl g1 g2; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -4; done
  echo "g1 views:"; grep -h "snapshot view in use\|proxy cut\|epoch moved" "$T/g1.log" 2>/dev/null | cut -c12-23,60-160 | tail -12
  for a in $admin $a1; do echo "metrics $a:"; curl -s -m 2 "http://127.0.0.1:$a/metrics" 2>/dev/null |
    grep -E "^proxyhost_cp_(controller_rpcs_total|controller_proxies_withheld_total|controller_assign_total|gateway_rpcs_total|gateway_epoch_waits_total|gateway_reconnects_total)" | grep -v " 0$"; done'

# ---- targets and upstreams ----------------------------------------------------
"$PY" "$top_srcdir/t/lib/http_target.py" serve --port-file "$T/target.port" \
  --lifetime 300 >"$T/target.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/target.port"; TGT=$(cat "$T/target.port")
ok $? "an HTTP target on 127.0.0.1:$TGT"

local_upstream() { # NAME FRONTEND PORT [HASH]: a proxyhost local instance
  {
    printf '[proxyhost]\nmodules = %sdirect, %s\nmodule_path = %s\n' \
      "${4:+auth_local, }" "$2" "$top_builddir/modules"
    printf '[admin]\nlisten = 127.0.0.1:%s\n' "$(free_port)"
    printf '[%s]\nlisten = 127.0.0.1:%s\n' "$2" "$3"
    [ -n "${4:-}" ] && printf 'auth = password\n[auth_local]\nusers = alice:%s\n' "$4"
    printf '[log]\nlevel = info\n'
  } >"$T/$1.ini"
  "$PROXYHOST" -c "$T/$1.ini" >>"$T/$1.log" 2>&1 &
  PIDS="$PIDS $!"
}
# Five ports that differ: free_port only says one was free a moment ago,
# and two upstreams on one port would pass for each other.
U1=$(free_port) U2=$(free_port) U3=$(free_port) U4=$(free_port) U5=$(free_port)
for i in 1 2 3 4 5 6 7 8; do
  [ "$(printf '%s\n' "$U1" "$U2" "$U3" "$U4" "$U5" | sort -u | wc -l)" -eq 5 ] && break
  U2=$(free_port) U3=$(free_port) U4=$(free_port) U5=$(free_port)
done
# 10,000 PBKDF2 rounds, not 600,000: under ASan on a loaded machine one
# default verification (1.4 s of CPU) outlasts the gateway's 2 s handshake
# timeout, and a wrong password (x-407, never cached) would time out (504)
# instead of drawing its 407.
local_upstream u1 http_proxy "$U1" "$(password_hash "$PW_A" 10000)"
local_upstream u2 socks5 "$U2"
microsocks -i 127.0.0.1 -p "$U3" -u bob -P "$PW_B" >"$T/microsocks.log" 2>&1 &
PIDS="$PIDS $!"
cat >"$T/tinyproxy.conf" <<EOF
Port $U4
Listen 127.0.0.1
Timeout 60
MaxClients 50
LogLevel Info
LogFile "$T/tinyproxy.log"
PidFile "$T/tinyproxy.pid"
Allow 127.0.0.1
EOF
tinyproxy -d -c "$T/tinyproxy.conf" >"$T/tinyproxy.out" 2>&1 &
PIDS="$PIDS $!"
# The `http` upstream: a forward proxy with a password of its own.
cat >"$T/tinyproxy-fwd.conf" <<EOF
Port $U5
Listen 127.0.0.1
Timeout 60
MaxClients 50
LogLevel Info
LogFile "$T/tinyproxy-fwd.log"
PidFile "$T/tinyproxy-fwd.pid"
Allow 127.0.0.1
BasicAuth fwduser $PW_F
EOF
tinyproxy -d -c "$T/tinyproxy-fwd.conf" >"$T/tinyproxy-fwd.out" 2>&1 &
PIDS="$PIDS $!"
for p in "$U1" "$U2" "$U3" "$U4" "$U5"; do wait_for port_open "$p" || echo "# port $p not open"; done
port_open "$U4" && port_open "$U5"
ok $? "five upstreams listen: proxyhost http_proxy (password), proxyhost socks5, microsocks (password), tinyproxy, tinyproxy (BasicAuth)"
for m in garbage reset_early reset_late hold; do
  "$PY" "$top_srcdir/t/lib/bad_upstream.py" "$m" --port-file "$T/bad-$m.port" >"$T/bad-$m.log" 2>&1 &
  PIDS="$PIDS $!"
done
for m in garbage reset_early reset_late hold; do wait_file "$T/bad-$m.port"; done
BAD_G=$(cat "$T/bad-garbage.port") BAD_E=$(cat "$T/bad-reset_early.port")
BAD_L=$(cat "$T/bad-reset_late.port") HOLD=$(cat "$T/bad-hold.port")
REFUSED=$(free_port) # nothing listens there
# A second target, routed by port to a strategy built outside this tree.
"$PY" "$top_srcdir/t/lib/http_target.py" serve --port-file "$T/target2.port" \
  --lifetime 300 >"$T/target2.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/target2.port"; TGT2=$(cat "$T/target2.port")
# The sixth strategy (sdk/examples/strategy_first, `first_usable`): built
# on its own against the SDK's headers, loaded by path, selected by name.
${CC:-cc} -std=c11 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
  -I"$top_srcdir/sdk" -o "$T/first_usable.so" \
  "$top_srcdir/sdk/examples/strategy_first/first_usable.c" 2>"$T/cc.err"
ok $? "the example strategy first_usable builds outside the tree" || sed 's/^/#   /' "$T/cc.err"

# direct.test resolves to loopback, which the DIRECT connector refuses.
start_dnsd direct.test=127.0.0.1; ok $? "a DNS server for the test on loopback"

# ---- the controller -------------------------------------------------------------
cpm_stores
cpm_keys
( umask 077
  printf 'alice:%s\n' "$PW_A" >"$T/secrets/cred-a"
  printf 'bob:%s\n' "$PW_B" >"$T/secrets/cred-b"
  printf 'alice:wrong-%s\n' "$PW_B" >"$T/secrets/cred-wrong"
  printf 'fwduser:%s\n' "$PW_F" >"$T/secrets/cred-f" )
admin=$(free_port) cpp=$(free_port)
# t/lib/cp_multi.sh's controller without the checkers' keys, pool_api
# asking redis_ownership (loaded before it), and this test's timers.
MODS=$top_builddir/modules
CPM_CHECKS=0 cpm_controller_ini "$admin" "$cpp" | ini_set \
  "proxyhost.modules=store_pg, redis_ownership, admin_api, pool_api, controlplane_server" \
  pool_api.authority=redis_ownership \
  redis_ownership.reconnect.max=300ms controlplane_server.runtime_interval=300ms \
  controlplane_server.snapshot_validity=20s controlplane_server.assign_interval=200ms >"$T/ctl.ini"
"$PROXYHOST" -c "$T/ctl.ini" >>"$T/ctl.log" 2>&1 &
PIDS="$PIDS $!"
wait_long healthy "$admin"; ok $? "the controller starts (store_pg, Redis)"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@" >/dev/null; }
for c in cred-a cred-b cred-wrong cred-f; do ctl credential add "$c" || echo "# credential $c"; done
# Group "web": the four good upstreams, one per worker zone-free. Group
# "stages": the failing ones, one per rule. Group "one": a capacity-1 proxy.
ctl proxy add u1 --protocol http_connect --host 127.0.0.1 --port "$U1" --groups web --capacity 50 --secret-ref cred-a &&
ctl proxy add u2 --protocol socks5 --host 127.0.0.1 --port "$U2" --groups web --capacity 50 &&
ctl proxy add u3 --protocol socks5 --host 127.0.0.1 --port "$U3" --groups web --capacity 50 --secret-ref cred-b &&
ctl proxy add u4 --protocol http_connect --host 127.0.0.1 --port "$U4" --groups web --capacity 50
ok $? "proxyhostctl proxy add: u1 (proxyhost, password), u2 (proxyhost socks5), u3 (microsocks, password), u4 (tinyproxy)"
# Group "fwd": an `http` upstream (tinyproxy with BasicAuth).
ctl proxy add u5 --protocol http --host 127.0.0.1 --port "$U5" --groups fwd --capacity 50 --secret-ref cred-f
ok $? "proxyhostctl proxy add: u5, protocol http (tinyproxy, BasicAuth)"
ctl proxy add x-dial --protocol http_connect --host 127.0.0.1 --port "$REFUSED" --groups s-dial --capacity 5 &&
ctl proxy add x-hs --protocol socks5 --host 127.0.0.1 --port "$BAD_G" --groups s-hs --capacity 5 &&
ctl proxy add x-407 --protocol http_connect --host 127.0.0.1 --port "$U1" --groups s-407 --capacity 5 --secret-ref cred-wrong &&
ctl proxy add x-early --protocol http_connect --host 127.0.0.1 --port "$BAD_E" --groups s-early --capacity 5 &&
ctl proxy add x-late --protocol http_connect --host 127.0.0.1 --port "$BAD_L" --groups s-late --capacity 5 &&
ctl proxy add x-f407 --protocol http --host 127.0.0.1 --port "$U1" --groups s-f407 --capacity 5 --secret-ref cred-wrong &&
ctl proxy add x-hold --protocol http_connect --host 127.0.0.1 --port "$HOLD" --groups one --capacity 1
ok $? "proxyhostctl proxy add: the failing upstreams and a capacity-1 one"
# Rules by target host name (the gateways resolve nothing for the pool:
# the upstream does), first match wins.
ctl route add dial --position 10 --host dial.test --group s-dial --strategy round_robin &&
ctl route add hs --position 20 --host hs.test --group s-hs --strategy round_robin &&
ctl route add r407 --position 30 --host auth.test --group s-407 --strategy round_robin &&
ctl route add f407 --position 35 --host fwd-auth.test --group s-f407 --strategy round_robin &&
ctl route add early --position 40 --host early.test --group s-early --strategy round_robin &&
ctl route add late --position 50 --host late.test --group s-late --strategy round_robin &&
ctl route add wait --position 60 --host wait.test --group one --strategy least_active --on-unavailable wait --wait-timeout-ms 1500 &&
ctl route add reject --position 70 --host reject.test --group one --strategy random --on-unavailable reject &&
ctl route add direct --position 80 --host direct.test --group nothing --strategy round_robin --on-unavailable direct &&
ctl route add first --position 95 --host 127.0.0.1 --ports "$TGT2" --group web --strategy first_usable &&
ctl route add fwd --position 90 --host localhost --group fwd --strategy round_robin &&
ctl route add web --position 100 --host 127.0.0.1 --group web --strategy round_robin
ok $? "proxyhostctl route add: one rule per case, then web"

# ---- two gateways -------------------------------------------------------------
gateway_ini() { # NAME ADMIN HTTP SOCKS
  cat <<EOF
[proxyhost]
modules = controlplane_client, outcome_reporter, direct, direct.out, round_robin, weighted, least_active, random, sticky, $T/first_usable.so, pool, http_proxy, socks5
module_path = $top_builddir/modules
drain_timeout = 2s
[log]
level = debug
[admin]
listen = 127.0.0.1:$2
[controlplane_client]
tls.mode = disabled
runtime_interval.min = 200ms
backoff.min = 200ms
backoff.max = 1s
rpc_timeout = 2s
[outcome_reporter]
flush_interval = 200ms
[direct]
resolver_servers = 127.0.0.1:$dns_port
[direct.out]
; DIRECT rules dial with this one: no loopback targets (CP-1-25)
deny_cidrs = 127.0.0.0/8
resolver_servers = 127.0.0.1:$dns_port
[pool]
strategies = round_robin, weighted, least_active, random, sticky, first_usable
direct_connector = direct.out
handshake_timeout = 2s
[http_proxy]
listen = 127.0.0.1:$3
connector = pool
proxy_status.next_hop = true
[socks5]
listen = 127.0.0.1:$4
connector = pool
EOF
}
a1=$(free_port) h1=$(free_port) s1=$(free_port)
a2=$(free_port) h2=$(free_port) s2=$(free_port)
gateway_ini g1 "$a1" "$h1" "$s1" >"$T/g1.ini"
gateway_ini g2 "$a2" "$h2" "$s2" >"$T/g2.ini"
start_gw() { # NAME: sets GW_PID
  "$PROXYHOST" -c "$T/$1.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
    -worker-id "$1" -instance-id "$1-a" -zone z1 >>"$T/$1.log" 2>&1 &
  GW_PID=$!
  PIDS="$PIDS $GW_PID"
}
out=$("$PROXYHOST" -c "$T/g1.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
  -worker-id g1 -instance-id g1-a -zone z1 --check-config 2>&1)
ok $? "the gateway's configuration passes --check-config" || echo "# $out"
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
view_ids() {
  curl -s -m 5 "http://127.0.0.1:$1/v1/cp/view" |
    "$PY" -c 'import json,sys; print(",".join(p["proxy_id"] for p in json.load(sys.stdin)["proxies"]))' 2>/dev/null
}
start_gw g1; G1=$GW_PID
wait_long ready "$a1"; ok $? "CP-1-26 gateway g1 is ready"
all_in_g1() { [ "$(view_ids "$a1")" = "u1,u2,u3,u4,u5,x-407,x-dial,x-early,x-f407,x-hold,x-hs,x-late" ]; }
wait_long all_in_g1; ok $? "CP-1-16 g1 owns every proxy (the only worker)"
[ -n "$(view_ids "$a1")" ] || echo "# view: $(curl -s "http://127.0.0.1:$a1/v1/cp/view" | head -c 400)"
# Nothing changes now: g1's leases are renewed by each runtime report
# (every 300 ms, and right after each ACK), which is no reason for a new
# snapshot; the refresh comes 5 s (refresh_before) before the earliest
# usable_until, about 2 s after each renewal here (8 s lease, 1 s margin).
# Resending on renewals sent one every watch round (100 ms): 25-30 in 3 s.
sent() { http_get "http://127.0.0.1:$admin/metrics" | grep '^proxyhost_cp_controller_snapshots_sent_total ' | awk '{print $2}'; }
before=$(sent); sleep 3; after=$(sent)
[ -n "$before" ] && [ $((after - before)) -le 4 ]
ok $? "CP-3-10 a steady worker gets a refresh, not a snapshot per lease renewal ($((after - before)) in 3 s)"

# ---- through the gateway ------------------------------------------------------------
via_http() { "$CURL" -s -m 10 -x "http://127.0.0.1:$1" -o "$T/body" -w '%{http_code}' "$2" 2>/dev/null; }
via_socks() { "$CURL" -s -m 10 --proxy "socks5h://127.0.0.1:$1" -o "$T/body" -w '%{http_code}' "$2" 2>/dev/null; }
is "$(via_http "$h1" "http://127.0.0.1:$TGT/hello")" 200 "CP-1-22 curl -x http://gateway: 200 through the pool"
is "$(cat "$T/body")" "hello through http_proxy" "... the target's body"
is "$(via_socks "$s1" "http://127.0.0.1:$TGT/hello")" 200 "curl --proxy socks5h://gateway: 200 through the pool"
# Round robin over u1..u4: 8 requests, each upstream carries two.
for i in 1 2 3 4 5 6 7 8; do via_http "$h1" "http://127.0.0.1:$TGT/hello" >/dev/null; done
pm() { http_get "http://127.0.0.1:$1/metrics" | grep -v '^#' | grep -F "$2 " | awk '{print $2}' | head -1; }
ten_ok() { [ "$(pm "$a1" 'proxyhost_pool_outcomes_total{stage="tunnel",result="success"}')" = 10 ]; }
wait_for ten_ok; ok $? "CP-5-5 the ten streams ended TUNNEL SUCCESS (their leases ended)"
is "$(pm "$a1" 'proxyhost_pool_opens_total{result="ok"}')" 10 "ten opens through an upstream"
# (the first_usable requests below come after these counts)
tp=$(grep -c 'CONNECT' "$T/tinyproxy.log" 2>/dev/null)
[ "${tp:-0}" -ge 2 ]; ok $? "CP-1-22 round robin reached tinyproxy (u4): ${tp:-0} CONNECTs"

# The sixth strategy, selected by the rule's name: the first candidate in
# the view's order (u1) takes every request while it has capacity.
u1_before=$(grep -c 'msg=access' "$T/u1.log")
tp_before=$(grep -c 'CONNECT' "$T/tinyproxy.log")
for i in 1 2 3; do
  is "$(via_http "$h1" "http://127.0.0.1:$TGT2/hello")" 200 "a rule naming first_usable (built out of tree) serves ($i)"
done
wait_cond '[ "$(grep -c msg=access "$T/u1.log")" -ge $((u1_before + 3)) ]'
ok $? "CP-1-22 ... all three through u1, the first candidate" || {
  echo "# u1 access lines: $u1_before before, $(grep -c 'msg=access' "$T/u1.log") now; tinyproxy CONNECTs: $tp_before before, $(grep -c 'CONNECT' "$T/tinyproxy.log") now"
  echo "# retries: $(pm "$a1" 'proxyhost_pool_retries_total')"
  grep -E 'upstream|pool' "$T/g1.log" | grep -v 'snapshot view in use' | tail -8 | sed 's/^/#   g1 /'
  tail -4 "$T/u1.log" | sed 's/^/#   u1 /'
}
is "$(grep -c 'CONNECT' "$T/tinyproxy.log")" "$tp_before" "... and none through u4"

# ---- each outcome stage from a real failing upstream (CP-5-2..5) -------------------
# Errors that name their cause (issue 28): RFC 9209 Proxy-Status with the
# stage and code the pool saw and, with proxy_status.next_hop, the proxy.
ps=$("$CURL" -s -m 10 -x "http://127.0.0.1:$h1" -D "$T/dial.head" -o /dev/null -w '%{http_code}' "http://dial.test/")
is "$ps" 502 "CP-5-2 a refused proxy port: 502"
is "$(tr -d '\r' <"$T/dial.head" | grep -i '^Proxy-Status:')" \
  'Proxy-Status: proxyhost; error=connection_refused; details="relay/connection_refused"; next-hop="x-dial"' \
  "issue 28: the 502 carries Proxy-Status: the error, its stage and code, the upstream proxy"
like "$(grep 'msg=access' "$T/g1.log" | grep 'status_code=502' | tail -1)" "upstream=x-dial" \
  "issue 28: the access line names the upstream it used"
# An outcome is counted when the lease ends, which may come just after
# the reply: wait for it.
wait_cond '[ "$(pm "$a1" "proxyhost_pool_outcomes_total{stage=\"dial\",result=\"failure\"}")" = 1 ]'
ok $? "... one DIAL FAILURE"
is "$(via_http "$h1" "http://hs.test/")" 502 "CP-5-3 a proxy that does not speak SOCKS5: 502"
wait_cond '[ "$(pm "$a1" "proxyhost_pool_outcomes_total{stage=\"proxy_handshake\",result=\"failure\"}")" = 1 ]'
ok $? "... one PROXY_HANDSHAKE FAILURE"
is "$(via_http "$h1" "http://auth.test/")" 502 "CP-5-3 upstream 407 (wrong password): 502"
wait_cond '[ "$(pm "$a1" "proxyhost_pool_outcomes_total{stage=\"proxy_handshake\",result=\"failure\"}")" = 2 ]'
ok $? "... a second PROXY_HANDSHAKE FAILURE"
code=$(via_http "$h1" "http://early.test/")
[ "$code" = 502 ] || [ "$code" = 000 ]; ok $? "CP-5-4 a tunnel reset before any target byte fails the request ($code)"
wait_cond '[ "$(pm "$a1" "proxyhost_pool_outcomes_total{stage=\"response_headers\",result=\"failure\"}")" = 1 ]'
ok $? "... one RESPONSE_HEADERS FAILURE"
via_http "$h1" "http://late.test/" >/dev/null
wait_cond '[ "$(pm "$a1" "proxyhost_pool_outcomes_total{stage=\"tunnel\",result=\"failure\"}")" = 1 ]'
ok $? "CP-5-5 a tunnel reset after the response began: one TUNNEL FAILURE"

# ---- absolute-form forwarding through an `http` upstream (issue 13) ---------------
# The HTTP frontend sends a plain-HTTP request on to an `http` upstream in
# absolute form with the upstream's own Proxy-Authorization: no CONNECT.
hs_before=$(pm "$a1" 'proxyhost_pool_outcomes_total{stage="proxy_handshake",result="failure"}')
ts_before=$(pm "$a1" 'proxyhost_pool_outcomes_total{stage="tunnel",result="success"}')
is "$(via_http "$h1" "http://localhost:$TGT/hello")" 200 "CP-1-22 curl -x gateway through an http upstream (tinyproxy, BasicAuth): 200"
is "$(cat "$T/body")" "hello through http_proxy" "... the target's body"
grep -q "Request (file descriptor [0-9]*): GET http://localhost:$TGT/hello HTTP/1.1" "$T/tinyproxy-fwd.log"
ok $? "... tinyproxy read a GET in absolute form"
grep -q 'Request (file descriptor [0-9]*): CONNECT' "$T/tinyproxy-fwd.log"; [ $? -ne 0 ]
ok $? "... and no CONNECT"
fwd_ok() { [ "$(pm "$a1" 'proxyhost_pool_outcomes_total{stage="tunnel",result="success"}')" = $((${ts_before:-0} + 1)) ]; }
wait_for fwd_ok; ok $? "CP-5-5 ... its stream ended TUNNEL SUCCESS"
is "$(pm "$a1" 'proxyhost_pool_outcomes_total{stage="proxy_handshake",result="failure"}')" "$hs_before" "... with no handshake stage"
# SOCKS5 has no HTTP to forward: the same upstream gets CONNECT.
is "$(via_socks "$s1" "http://localhost:$TGT/hello")" 200 "curl --proxy socks5h://gateway through the http upstream: 200"
grep -q "Request (file descriptor [0-9]*): CONNECT localhost:$TGT HTTP/1.1" "$T/tinyproxy-fwd.log"
ok $? "... as a CONNECT tunnel"
# A wrong password: the upstream's 407 is about the gateway's credentials,
# so the client gets 502 (u1, proxyhost's http_proxy, answers 407).
rh_before=$(pm "$a1" 'proxyhost_pool_outcomes_total{stage="response_headers",result="failure"}')
is "$(via_http "$h1" "http://fwd-auth.test/")" 502 "CP-5-4 an http upstream answers 407 (wrong password): the client gets 502"
rh_one() { [ "$(pm "$a1" 'proxyhost_pool_outcomes_total{stage="response_headers",result="failure"}')" = $((${rh_before:-0} + 1)) ]; }
wait_for rh_one; ok $? "... one RESPONSE_HEADERS FAILURE (a response, not a handshake)"
is "$(pm "$a1" 'proxyhost_pool_outcomes_total{stage="proxy_handshake",result="failure"}')" "$hs_before" "... and no PROXY_HANDSHAKE one"

# ---- WAIT, REJECT, DIRECT (CP-1-24, CP-1-25) ---------------------------------------
# x-hold (capacity 1) keeps the first request until released.
( via_http "$h1" "http://wait.test/" >"$T/held.code"; cp "$T/body" "$T/held.body" ) &
HELD=$!
held_active() { [ "$(pm "$a1" proxyhost_pool_active)" = 1 ]; }
wait_for held_active; ok $? "the capacity-1 proxy carries one stream"
in_redis() { case $(redis_cli "$T/redis" HGET 'ph:cp:{c1}:w:g1:counts' p:x-hold) in 1:0:*) return 0 ;; esac; return 1; }
wait_long in_redis; ok $? "CP-2-4 CP-2-14 the runtime report carries x-hold active=1 (Redis counts)"
is "$(via_http "$h1" "http://reject.test/")" 503 "REJECT with no free capacity: 503 at once"
t0=$(date +%s%3N)
is "$(via_http "$h1" "http://wait.test/")" 504 "CP-1-24 WAIT times out after wait_timeout: 504"
t1=$(date +%s%3N)
[ $((t1 - t0)) -ge 1400 ]; ok $? "... after waiting $((t1 - t0)) ms (wait_timeout 1500 ms)"
( via_http "$h1" "http://wait.test/" >"$T/waiter.code" ) &
WAITER=$!
waiting() { [ "$(pm "$a1" proxyhost_pool_waiting)" = 1 ]; }
wait_for waiting; ok $? "a second WAIT request waits"
: >"$T/bad-hold.port.release"
wait "$HELD"; wait "$WAITER"
is "$(cat "$T/held.code")" 200 "the held request completes when released"
is "$(cat "$T/waiter.code")" 200 "CP-1-24 ... and the waiter gets the freed capacity: 200"
is "$(via_http "$h1" "http://direct.test/")" 403 "CP-1-25 DIRECT to a target the policy refuses: 403"
is "$(via_http "$h1" "http://nomatch.test/")" 403 "no matching rule: 403"

# ---- the load generator through both gateways' listeners --------------------------
# t/bench/phload keeps 8 streams in flight for a second through g1's HTTP
# CONNECT and SOCKS5 listeners to phtarget: every one checked, none lost.
"$top_builddir/t/bench/phtarget" --listen 127.0.0.1:0 >"$T/phtarget.out" 2>&1 &
PIDS="$PIDS $!"
wait_for grep -q '^port=' "$T/phtarget.out"; PHT=$(sed -n 's/^port=//p' "$T/phtarget.out")
field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
before=$(pm "$a1" 'proxyhost_pool_opens_total{result="ok"}')
for mode in http-connect socks5; do
  port=$h1; [ "$mode" = socks5 ] && port=$s1
  out=$("$top_builddir/t/bench/phload" --mode "$mode" --proxy "127.0.0.1:$port" \
    --target "127.0.0.1:$PHT" --concurrency 8 --duration 1 --warmup 0 --timeout 10)
  ok $? "phload $mode through the gateway exits 0"
  ops=$(field "$out" ops)
  [ "${ops:-0}" -gt 0 ]; ok $? "... $ops streams through the pool"
  is "$(field "$out" errors)" 0 "... none failed"
done
after=$(pm "$a1" 'proxyhost_pool_opens_total{result="ok"}')
[ "$((after - before))" -ge "$ops" ]; ok $? "every stream went through an upstream ($((after - before)) opens)"
idle() { [ "$(pm "$a1" proxyhost_pool_active)" = 0 ] && [ "$(pm "$a1" proxyhost_pool_reserved)" = 0 ]; }
wait_for idle; ok $? "CP-2-14 afterwards nothing is active or reserved"
# The hash must exist (a live report) and hold only the session's four
# fields: no proxy with a count (an expired hash would not pass).
no_counts() {
  [ "$(redis_cli "$T/redis" HKEYS 'ph:cp:{c1}:w:g1:counts' | sort | tr '\n' ' ')" = \
    "m:at m:epoch m:session m:version " ]
}
wait_long no_counts; ok $? "CP-2-14 ... and the controller's counts for g1 went back to the session's own fields"

# ---- outcomes and runtime at the controller ------------------------------------------
acked() { [ "$(pm "$a1" proxyhost_outcome_reporter_batches_acknowledged_total)" -ge 1 ]; }
wait_long acked; ok $? "CP-5-1 the controller acknowledged outcome batches"
rec=$(pm "$a1" proxyhost_outcome_reporter_recorded_total)
[ "${rec:-0}" -ge 15 ]; ok $? "every attempt became an outcome (${rec:-0} recorded)"

# ---- drain (CP-4-2, CP-4-3) ----------------------------------------------------------
ctl proxy drain u4; ok $? "proxyhostctl proxy drain u4"
gone() { case ",$(view_ids "$a1")," in *,u4,*) return 1 ;; esac; return 0; }
wait_long gone; ok $? "CP-4-4 u4 leaves g1's view once it carries nothing"
for i in 1 2 3 4; do via_http "$h1" "http://127.0.0.1:$TGT/hello" >/dev/null; done
tp2=$(grep -c 'CONNECT' "$T/tinyproxy.log" 2>/dev/null)
sleep 0.3
is "$(grep -c 'CONNECT' "$T/tinyproxy.log" 2>/dev/null)" "$tp2" "CP-4-2 no new stream reaches the drained u4"

# ---- exclusive extraction through a real owner (CP-1-5, CP-4-2..5) ------------------
# u3 belongs to g1: a request reclaims it (202, naming g1); g1's
# snapshots deliver it draining, g1 reports it with zero counts, and the
# next assign ends the ownership and extracts it in the same Redis step.
api_x() { # METHOD ID: the HTTP status, the body in $T/x.json
  "$CURL" -s -m 10 -o "$T/x.json" -w '%{http_code}' -X "$1" \
    -H "Authorization: Bearer $(cat "$T/admin.token")" \
    "http://127.0.0.1:$admin/v1/pool/proxies/$2/extraction"
}
xfield() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], "-"))' "$T/x.json" "$1"; }
is "$(api_x POST u3):$(xfield state):$(xfield owner)" "202:reclaiming:g1" \
  "CP-4-2 extracting u3, which g1 owns: 202 reclaiming, owner g1"
extracted() { [ "$(api_x GET u3):$(xfield state)" = "200:extracted" ]; }
wait_long extracted; ok $? "CP-4-4 CP-4-5 once g1 drained it, u3 is extracted"
is "$(redis_cli "$T/redis" EXISTS 'ph:cp:{c1}:owner:u3')" 0 "CP-4-5 ... and has no owner in Redis"
u3_gone() { case ",$(view_ids "$a1")," in *,u3,*) return 1 ;; esac; return 0; }
wait_long u3_gone; ok $? "CP-1-5 u3 left g1's view"
is "$(via_http "$h1" "http://127.0.0.1:$TGT/hello")" 200 "the pool still serves through the others"
is "$(api_x DELETE u3):$(xfield state)" "200:available" "returning u3: available"
u3_back() { case ",$(view_ids "$a1")," in *,u3,*) return 0 ;; esac; return 1; }
wait_long u3_back; ok $? "... and the next assign gives it to g1 again"

# ---- a second gateway, and the expiry of a view ------------------------------------
start_gw g2; G2=$GW_PID
# Issue 23 item 4: g2 is ready only with a usable proxy, which it gets
# from g1 through the drain (rebalancing).
wait_long ready "$a2"; ok $? "issue 23 item 4: gateway g2 gets a share from g1 and is ready"
kill -9 "$G1"; wait "$G1" 2>/dev/null
moved() { for p in u1 u2 u3; do case ",$(view_ids "$a2")," in *,$p,*) ;; *) return 1 ;; esac; done; }
wait_long moved; ok $? "CP-4-6 g1 killed: its proxies move to g2 after the lease" || {
  echo "# g2's view: $(curl -s -m 5 "http://127.0.0.1:$a2/v1/cp/view")"
  for p in u1 u2 u3; do echo "# $p: $(redis_cli "$T/redis" HGETALL "ph:cp:{c1}:owner:$p" | tr '\n' ' ')"; done
  echo "# rebalance: $(redis_cli "$T/redis" HGETALL 'ph:cp:{c1}:rebalance' | tr '\n' ' ')"
  grep -v level=debug "$T/g2.log" | tail -15 | sed 's/^/#   g2: /'
}
is "$(via_socks "$s2" "http://127.0.0.1:$TGT/hello")" 200 "g2 serves through the proxies it took over"

# ---- no secret anywhere ------------------------------------------------------------------
# The Basic token the gateway sends the http upstream is as secret as
# the password it encodes.
TOK_F=$(printf 'fwduser:%s' "$PW_F" | base64 -w0)
for f in ctl g1 g2; do
  grep -q -e "$PW_A" -e "$PW_B" -e "$PW_F" -e "$TOK_F" "$T/$f.log"; [ $? -ne 0 ]
  ok $? "CP-8-5 no upstream password (nor the Basic token) in the $f log (debug level)"
done
m=$(http_get "http://127.0.0.1:$a2/metrics")
unlike "$m" "$PW_A" "CP-8-5 no password in g2's /metrics"
unlike "$m" "$PW_F" "CP-8-5 no http upstream password in g2's /metrics"
r=$(for k in $(redis_cli "$T/redis" KEYS '*'); do echo "$k"; redis_cli "$T/redis" DUMP "$k"; done)
unlike "$r" "$PW_A" "CP-8-5 no password in Redis"
unlike "$r" "$PW_F" "CP-8-5 no http upstream password in Redis"
done_testing
