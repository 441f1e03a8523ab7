#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The checkers' scheduler under overload (issue 26, "checks starved"),
# every part real: the controller (t/lib/controller.sh: controlplane_server
# with check_interval 1s, redis_ownership on a private redis-server,
# store_sqlite; health_rise 1: one check, one verdict), ONE checker with
# max_concurrency 4 (BASIC only, its own echo.url) and CHO_PROXIES (200)
# pool proxies served by one proxyhost http_proxy: 200 checks a second
# are due, the checker answers a small share of them. The scheduler must degrade fairly (oldest due first):
# every proxy gets a verdict within 2 x CHO_PROXIES accepted observations
# (a count, not a time: the same under any load), never some proxies
# checked every interval and others never (CP-6-1, CP-6-2). Before the
# fix the tick offered its due items from a cursor that moved one item a
# tick: the items just after it were checked every interval, the rest of
# the pool had no verdict for minutes. Then the tasks of a checker stopped
# with SIGSTOP expire (a checker failure): once it goes on, every proxy
# is still checked again, none UNHEALTHY (nothing failed).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules controlplane_server redis_ownership store_sqlite admin_api \
  pool_api checker echo direct http_proxy

MODS="$top_builddir/modules"
CTL="$top_builddir/tools/proxyhostctl"
N=${CHO_PROXIES:-200}
TAP_ON_FAIL='grep -v "level=debug" "$T/ph.log" | tail -8; echo checker:; tail -8 "$T/chk.log"'

# ---- one upstream for every proxy, the echo -----------------------------------------
U1=$(free_port) E=$(free_port)
plain_up u1 http_proxy "$U1"
plain_up echo echo "$E"
wait_for port_open "$U1" && wait_for port_open "$E"
ok $? "the upstream (http_proxy) and the echo endpoint listen"

# ---- the controller and the pool ------------------------------------------------------
controller_up unused-password
# info: N debug lines a second are not what this test reads
sed -i 's/^level = debug/level = info/' "$T/ctl.ini"
start_proxyhost "$T/ctl.ini" --set controlplane_server.check_interval=1s \
  --set controlplane_server.fast_interval=500ms \
  --set controlplane_server.task_deadline=2s \
  --set controlplane_server.health_rise=1
ready() { [ "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" = 200 ]; }
wait_long ready; ok $? "the controller is ready"
seq 1 "$N" | sed "s/.*/proxy add p& --protocol http_connect --host 127.0.0.1 --port $U1 --groups g --capacity 10/" |
  xargs -P 2 -L 1 "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" >/dev/null
ok $? "$N proxies added, all on the one upstream"
sm() { metric "$(http_get "http://127.0.0.1:$admin/metrics")" "$1"; }
none() { sm 'proxyhost_cp_controller_health_proxies{state="none"}'; }
accepted() { sm 'proxyhost_cp_controller_observations_total{result="accepted"}'; }
wait_long eval '[ "$(none)" = "$N" ]'
ok $? "the controller knows the $N proxies, none with a verdict yet"

# ---- one checker, far too small for the pool ----------------------------------------
cadmin=$(free_port)
printf '[proxyhost]\nmodules = checker\nmodule_path = %s\n[log]\nlevel = warn\n[admin]\nlisten = 127.0.0.1:%s\n[checker]\ntls.mode = disabled\nbatch.flush = 100ms\nbackoff.min = 200ms\nbackoff.max = 1s\nmax_concurrency = 4\ntiers = basic\necho.url = http://127.0.0.1:%s/echo\n' \
  "$MODS" "$cadmin" "$E" >"$T/chk.ini"
"$PROXYHOST" -c "$T/chk.ini" -control-plane "127.0.0.1:$cpp" -cluster-id c1 \
  -checker-id k1 -instance-id k1-a -zone z1 >>"$T/chk.log" 2>&1 &
CHK=$!
PIDS="$PIDS $CHK"
cm() { metric "$(http_get "http://127.0.0.1:$cadmin/metrics")" "$1"; }
wait_long eval '[ "$(cm "proxyhost_checker_session_state{state=\"watching\"}")" = 1 ]'
ok $? "the checker (max_concurrency 4) registers and watches its tasks"

# every proxy with a verdict, or 2 x N observations accepted without:
# bounded by the checks made, not by a time (any load)
verdicts() { # 0: all have one; 1: not yet; 2: 2 x N observations and not all
  [ "$(none)" = 0 ] && return 0
  [ "$(accepted)" -ge $((2 * N)) ] && return 2
  return 1
}
until_verdicts() {
  _i=0
  while [ $_i -lt 6000 ]; do # at most 10 min in all (a hung checker)
    verdicts
    case $? in 0) return 0 ;; 2) return 1 ;; esac
    sleep 0.1
    _i=$((_i + 1))
  done
  return 1
}
a0=$(accepted)
until_verdicts
ok $? "CP-6-1 under overload every proxy has a verdict within 2 x $N observations (none left: $(none), observations: $(($(accepted) - a0)))"
is "$(sm 'proxyhost_cp_controller_health_proxies{state="unhealthy"}')" 0 \
  "... and none is UNHEALTHY (nothing failed)"
n=$(sm 'proxyhost_cp_controller_health_proxies{state="available"}')
[ "${n:-0}" -gt 0 ]
ok $? "... some are AVAILABLE already ($n)"

# ---- the checker stops answering: its tasks expire (a checker failure) ----------------
stop_ms=$(($(date +%s%N) / 1000000))
kill -STOP "$CHK"
wait_long eval '[ "$(sm "proxyhost_cp_controller_check_tasks_total{tier=\"basic\",result=\"expired\"}")" -ge 1 ]'
ok $? "CP-6-2 the stopped checker's tasks expire"
kill -CONT "$CHK"
# Every proxy checked again after the stop (its BASIC item's observed_at_ms
# in proxyhostctl's JSON), those of the expired tasks too, within 2 x N
# more observations.
checked_since() { # the proxies whose BASIC item was observed at or after $1 (ms)
  "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" --json \
    proxy list --limit 1000 2>/dev/null | "$PY" -c 'import json, sys
n = 0
for p in json.load(sys.stdin)["items"]:
    n += any(x["tier"] == "basic" and x["observed_at_ms"] >= int(sys.argv[1])
             for x in p.get("health_items") or [])
print(n)' "$1"
}
a1=$(accepted)
i=0
while [ $i -lt 1200 ] && [ "$(checked_since "$stop_ms")" != "$N" ] &&
  [ "$(($(accepted) - a1))" -lt $((2 * N)) ]; do
  sleep 0.5
  i=$((i + 1))
done
is "$(checked_since "$stop_ms")" "$N" \
  "CP-6-2 every proxy is checked again after its checker came back, those of the expired tasks too"
is "$(sm 'proxyhost_cp_controller_health_proxies{state="unhealthy"}')" 0 \
  "the expired tasks counted against no proxy (none UNHEALTHY)"
# nothing failed: no verdict ever moved but none -> AVAILABLE, overload
# and expired tasks or not (issue 26 item 4)
tr() { sm "proxyhost_cp_controller_health_transitions_total{to=\"$1\"}"; }
is "$(tr suspect)/$(tr unhealthy)/$(tr none)/$(tr available)" "0/0/0/$N" \
  "CP-6-2 no verdict moved with nothing failing: $N transitions, each none -> AVAILABLE"
# what moved them (issue 26): only OK observations, one per item
mv() { sm "proxyhost_cp_controller_health_moves_total{tier=\"basic\",result=\"$1\"}"; }
is "$(mv ok)/$(mv failed)/$(mv timeout)" "$N/0/0" \
  "proxyhost_cp_controller_health_moves_total: each move an OK, none a failure or a timeout"
done_testing
