#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A proxy added to the REAL controller by DNS name (issue 26, i26-dns):
# controlplane_server (redis_ownership on a private redis-server,
# store_sqlite; t/lib/controller.sh) with its echo_url by name, and a
# checker with `connector = direct` whose resolver is the test's DNS
# server (t/lib/dnsd.py). The controller schedules, the checker resolves
# and checks, the reducer decides: the proxy by name is AVAILABLE at
# BASIC and EGRESS (CP-6-3, CP-6-4, CP-6-6, CP-6-7); one whose name does
# not resolve is the proxy's failure (FAILED dial_unresolved), never
# AVAILABLE.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api \
  pool_api checker echo direct http_proxy

PY=/usr/bin/python3
MODS="$top_builddir/modules"
CTL="$top_builddir/tools/proxyhostctl"
TAP_ON_FAIL='grep -v "level=debug" "$T/ph.log" | tail -12; echo checker:; tail -12 "$T/chk.log"'

start_dnsd px.test=127.0.0.1 echo.test=127.0.0.1
ok $? "DNS test server on loopback"

# ---- an upstream and the echo ------------------------------------------------------
U1=$(free_port) E=$(free_port)
printf '[proxyhost]\nmodules = direct, http_proxy\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[http_proxy]\nlisten = 127.0.0.1:%s\n[direct]\nresolver_servers = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$U1" "$dns_port" >"$T/u1.ini"
"$PROXYHOST" -c "$T/u1.ini" >>"$T/u1.log" 2>&1 &
PIDS="$PIDS $!"
printf '[proxyhost]\nmodules = echo\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[echo]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$(free_port)" "$E" >"$T/echo.ini"
"$PROXYHOST" -c "$T/echo.ini" >>"$T/echo.log" 2>&1 &
PIDS="$PIDS $!"
wait_for port_open "$U1" && wait_for port_open "$E"
ok $? "an upstream (http_proxy) and the echo endpoint listen"

# ---- the controller, the echo URL by name -------------------------------------------
controller_up pw-unused
# shellcheck disable=SC2086
start_proxyhost "$T/ctl.ini" --set controlplane_server.check_interval=1s \
  --set controlplane_server.fast_interval=500ms \
  --set controlplane_server.task_deadline=3s \
  --set controlplane_server.max_checker_concurrency=16 \
  --set "controlplane_server.echo_url=http://echo.test:$E/echo"
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
wait_long ready; ok $? "the controller is ready"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
ctl proxy add p1 --protocol http_connect --host px.test --port "$U1" --groups g --capacity 10 >/dev/null
ok $? "p1 added by name: px.test"
ctl proxy add p2 --protocol http_connect --host nx.test --port "$U1" --groups g --capacity 10 >/dev/null
ok $? "p2 added by a name that does not resolve: nx.test"

# ---- the checker, its connector on the test's DNS server ---------------------------
cadmin=$(free_port)
printf '[proxyhost]\nmodules = direct, checker\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[direct]\nresolver_servers = 127.0.0.1:%s\n[checker]\nconnector = direct\ntls.mode = disabled\nbatch.flush = 100ms\nbackoff.min = 200ms\nbackoff.max = 1s\nmax_concurrency = 8\n' \
  "$MODS" "$cadmin" "$dns_port" >"$T/chk.ini"
"$PROXYHOST" -c "$T/chk.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
  -checker-id k1 -instance-id k1-a -zone z1 >>"$T/chk.log" 2>&1 &
PIDS="$PIDS $!"
cm() { metric "$(http_get "http://127.0.0.1:$cadmin/metrics")" "$1"; }
wait_long eval '[ "$(cm "proxyhost_checker_session_state{state=\"watching\"}")" = 1 ]'
ok $? "the checker registers with the controller"
item() { ctl proxy show "$1" 2>/dev/null | grep "health_items tier=$2 "; }
wait_long eval 'item p1 basic | grep -q "state=available"'
ok $? "CP-6-3 p1 by name: BASIC AVAILABLE"
wait_long eval 'item p1 egress | grep -q "state=available"'
ok $? "CP-6-4 p1 by name, the echo URL by name: EGRESS AVAILABLE"
like "$(item p1 egress)" "127.0.0.1" "... with the egress address the echo saw"
wait_long eval '[ "$(cm proxyhost_checker_echo_up)" = 1 ]'
ok $? "the checker's direct probe of the echo by name passes"
wait_long eval 'item p2 basic | grep -q "dial_unresolved"'
ok $? "p2: its name does not resolve: FAILED dial_unresolved reaches the controller"
unlike "$(item p2 basic)" "state=available" "... and p2 is never AVAILABLE"
wait_long eval 'item p2 basic | grep -Eq "state=(suspect|unhealthy)"'
ok $? "CP-6-6 the reducer counts it against p2: $(item p2 basic | grep -Eo 'state=[a-z]+')"
n=$(cm 'proxyhost_checker_checks_total{tier="basic",status="checker_error"}')
is "${n:-0}" 0 "no CHECKER_ERROR: the names are resolved, not refused"
done_testing
