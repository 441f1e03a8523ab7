#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The checker dials names (issue 26, i26-dns): with `connector = direct`
# it resolves and dials its proxies and its echo endpoint through a
# `direct` instance, as the gateway's pool dials upstreams
# (pool.upstream_connector): c-ares on the loop, pointed here at the
# test's own DNS server (t/lib/dnsd.py). Real upstreams (proxyhost
# `local` http_proxy and socks5, their own `direct` on the same DNS
# server), the `echo` module, the fake controller's CheckerControlPlane
# (t/lib/cp_fake_controller.py, tasks from a file). It proves: a proxy
# named by DNS is checked BASIC, EGRESS and TARGET (CP-6-3, CP-6-4,
# CP-6-5), the echo URL by name fetched through the proxy and probed
# directly; a name without an address is the proxy's failure (FAILED
# dial_unresolved), a resolver that fails is the checker's
# (CHECKER_ERROR resolver_failed); address literals still pass through
# the connector; without a connector a name stays CHECKER_ERROR
# name_not_supported; the connector key validated.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/cp_fake.sh"

PY=/usr/bin/python3
MODS="$top_builddir/modules"
require_modules checker echo direct http_proxy socks5
cp_stubs

start_dnsd px.test=127.0.0.1 socks.test=127.0.0.1 echo.test=127.0.0.1
ok $? "DNS test server on loopback"
TAP_ON_FAIL='echo "events:"; tail -30 "$EV"; echo "checker log:"; tail -15 "$D/chk.log"'

# ---- upstreams and the echo ---------------------------------------------------
U1=$(free_port) U2=$(free_port) DEAD=$(free_port) E=$(free_port)
local_upstream() { # NAME FRONTEND PORT
  printf '[proxyhost]\nmodules = direct, %s\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[%s]\nlisten = 127.0.0.1:%s\n[direct]\nresolver_servers = 127.0.0.1:%s\n' \
    "$2" "$MODS" "$(free_port)" "$2" "$3" "$dns_port" >"$T/$1.ini"
  "$PROXYHOST" -c "$T/$1.ini" >>"$T/$1.log" 2>&1 &
  PIDS="$PIDS $!"
}
local_upstream u1 http_proxy "$U1"
local_upstream u2 socks5 "$U2"
printf '[proxyhost]\nmodules = echo\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[echo]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$E" >"$T/echo.ini"
"$PROXYHOST" -c "$T/echo.ini" >>"$T/echo.log" 2>&1 &
PIDS="$PIDS $!"
for p in "$U1" "$U2" "$E"; do
  wait_for port_open "$p" || echo "# port $p not open"
done
port_open "$U1" && port_open "$U2" && port_open "$E"
ok $? "upstreams and the echo endpoint listen"
ECHO="http://echo.test:$E/echo"

# ---- the checker, its connector on the test's DNS server --------------------------
# start SCENARIO [CHECKER-LINES]: a fake controller and a checker on it.
start() {
  D="$T/$1"
  mkdir -p "$D"
  : >"$D/tasks"
  export CP_FAKE_TASKS="$D/tasks"
  cp_fake_start "$D" "$1"
  admin=$(free_port)
  printf '[proxyhost]\nmodules = direct, checker\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n' "$MODS" "$admin" >"$D/chk.ini"
  printf '[direct]\nresolver_servers = 127.0.0.1:%s\ndns_timeout = 2s\n' "$dns_port" >>"$D/chk.ini"
  printf '[checker]\ntls.mode = disabled\nbackoff.min = 200ms\nbackoff.max = 1s\nbatch.flush = 100ms\n' >>"$D/chk.ini"
  printf 'max_concurrency = 16\necho.probe_interval = 1s\n%s\n' "${2:-}" >>"$D/chk.ini"
  "$PROXYHOST" -c "$D/chk.ini" -control-plane "127.0.0.1:$(cat "$D/port")" \
    -cluster-id c1 -checker-id k1 -instance-id k1-a -zone z1 >>"$D/chk.log" 2>&1 &
  CHK=$!
  PIDS="$PIDS $CHK"
}
N=0
# task TIER PROTOCOL HOST PORT [key=value ...]: appends a task.
task() {
  N=$((N + 1))
  extra=""
  tier=$1 proto=$2 host=$3 port=$4
  shift 4
  for kv in "$@"; do extra="$extra, \"${kv%%=*}\": \"${kv#*=}\""; done
  printf '{"task_id": "t%s", "proxy_id": "p%s", "tier": %s, "protocol": %s, "host": "%s", "port": %s, "echo_url": "%s", "nonce": "nonce-t%s", "deadline_ms": 4000%s}\n' \
    "$N" "$N" "$tier" "$proto" "$host" "$port" "$ECHO" "$N" "$extra" >>"$D/tasks"
  LAST=t$N
}
seen() { awk -v t="$1" '$1 == "OB" && $3 == t { r = $5 " " $6 " " $7 " " $8 } END { print r }' "$EV"; }
observed() { [ -n "$(seen "$1")" ]; }
mval() { http_get "http://127.0.0.1:$admin/metrics" | grep -v '^#' | grep -F "$1" | awk '{print $2}' | head -1; }

start chk_ok "connector = direct
echo.url = $ECHO"
wait_long grep -q '^CWATCH s1' "$EV"
ok $? "a checker with connector = direct registers"
wait_cond '[ "$(mval "proxyhost_checker_echo_up ")" = 1 ]'
ok $? "echo.url by name: the checker's direct probe of the echo passes"

# status: 1 OK, 2 FAILED, 3 TIMEOUT, 4 CHECKER_ERROR; anonymity 3 elite.
task 1 1 px.test "$U1"; B1=$LAST
task 1 2 socks.test "$U2"; B2=$LAST
task 2 1 px.test "$U1"; G1=$LAST
task 3 2 socks.test "$U2" "target=echo.test:$E"; T2=$LAST
task 3 1 px.test "$U1" "target=http://echo.test:$E/health"; T1=$LAST
task 1 1 nx.test "$U1"; NX=$LAST
task 1 1 px.servfail.test "$U1"; SF=$LAST
task 1 1 px.test "$DEAD"; DR=$LAST
task 1 1 127.0.0.1 "$U1"; LIT=$LAST
for id in $B1 $B2 $G1 $T2 $T1 $NX $SF $DR $LIT; do
  wait_long observed "$id" || echo "# no observation of $id"
done
like "$(seen "$B1")" "1 - 0" "CP-6-3 BASIC through an http_connect proxy named by DNS: OK"
like "$(seen "$B2")" "1 - 0" "CP-6-3 BASIC through a socks5 proxy named by DNS: OK"
like "$(seen "$G1")" "1 - 3 127.0.0.1" \
  "CP-6-4 EGRESS through a proxy by name, the echo URL by name: elite, the egress address"
like "$(seen "$T2")" "1 - 0" "CP-6-5 TARGET host:port by name through a proxy by name: OK"
like "$(seen "$T1")" "1 - 0" "CP-6-5 TARGET URL by name through a proxy by name: OK"
like "$(seen "$NX")" "2 dial_unresolved" \
  "a proxy whose name does not resolve: FAILED dial_unresolved (the proxy's failure)"
like "$(seen "$SF")" "4 resolver_failed" \
  "the resolver failing (SERVFAIL): CHECKER_ERROR resolver_failed, no verdict on the proxy"
like "$(seen "$DR")" "2 dial_refused" "a name resolved, nothing on its port: FAILED dial_refused"
like "$(seen "$LIT")" "1 - 0" "an address literal still passes through the connector"
is "$(mval 'proxyhost_checker_check_reasons_total{tier="basic",reason="dial_unresolved"}')" 1 \
  "the reasons metric counts dial_unresolved"
http_get "http://127.0.0.1:$admin/metrics" | grep -q -e 'px\.test' -e 'nx\.test' -e 'echo\.test'
is $? 1 "metrics carry no proxy or echo name"
kill "$CHK" "$FAKE"

# Without a connector the checker dials literals only: a name is not a
# verdict on the proxy.
start chk_ok
wait_long grep -q '^CWATCH s1' "$EV"
task 1 1 px.test "$U1"; NN=$LAST
wait_long observed "$NN"
like "$(seen "$NN")" "4 name_not_supported" \
  "no connector: a proxy by name is CHECKER_ERROR name_not_supported"
kill "$CHK" "$FAKE"

# The keys: connector must name a loaded connector; echo.url may hold a
# name only with one; conf/checker.ini (direct loaded, connector = direct)
# passes.
printf '[proxyhost]\nmodules = direct, checker\nmodule_path = %s\n[checker]\ntls.mode = disabled\n' "$MODS" >"$T/keys.ini"
ck() {
  "$PROXYHOST" -c "$T/keys.ini" -control-plane 127.0.0.1:7443 -cluster-id c1 \
    -checker-id k1 -instance-id k1-a -zone z1 "$@" --check-config >"$T/check.out" 2>&1
}
ck --set checker.connector=direct --set "checker.echo.url=http://echo.test:$E/"
is $? 0 "--check-config takes connector = direct with echo.url by name"
ck --set checker.connector=nope
is $? 2 "--check-config refuses a connector that is not loaded"
ck --set checker.connector=checker
is $? 2 "--check-config refuses the checker as its own connector"
ck --set "checker.echo.url=http://echo.test:$E/"
is $? 2 "--check-config refuses echo.url by name without a connector"
"$PROXYHOST" -c "$top_srcdir/conf/checker.ini" --set "proxyhost.module_path=$MODS" \
  -control-plane 127.0.0.1:7443 -cluster-id c1 -checker-id k1 -instance-id k1-a -zone z1 \
  --set checker.tls.mode=disabled --check-config >"$T/check.out" 2>&1
is $? 0 "conf/checker.ini (direct, connector = direct) passes --check-config"

done_testing
