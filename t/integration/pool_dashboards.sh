#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The pool's Grafana dashboards, one per role (issue 28):
# deploy/grafana/dashboards/controller.json, gateway.json and checker.json
# against live scrapes of that role, with t/lib/dashboard_check.py
# --moved --vars job,instance: every selector of every panel, with its
# label matchers, matches a series of that role's /metrics that moved
# from zero, the job and instance variables are label_values queries on
# a metric the role exports, and every selector filters on both.
#
# Real processes: a private redis-server, a controller (t/lib/
# controller.sh), one gateway, one checker, each with process_metrics;
# an echo, a target and four upstreams in group g:
#   pa  proxyhost http_proxy (AVAILABLE)
#   pk  proxyhost http_proxy, killed while requests go through the
#       gateway (dial failures, a retry, a verdict change)
#   pc  a canned page (bad_echo: failed checks)
#   pb  a port whose connects hang (checks in flight, timeouts)
# The faults: pk killed; pa extracted and returned; the checker stopped
# past its tasks' deadline and continued (late tasks, CHECKER_ERROR);
# Redis paused (Redis errors, RPC errors); a SIGHUP to
# each role. Held while scraping: a CONNECT tunnel through the gateway.
# Then the check fails on a wrong metric name and on a panel that does
# not filter on the instance.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules store_sqlite redis_ownership controlplane_server admin_api pool_api \
  controlplane_client outcome_reporter direct round_robin pool http_proxy checker echo \
  process_metrics

DASHES="$top_srcdir/deploy/grafana/dashboards"
CHECK="$PY $top_srcdir/t/lib/dashboard_check.py --moved --vars job,instance"
CTL="$top_builddir/tools/proxyhostctl"
TAP_ON_FAIL='for f in ph k1 g1; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -6; done'

# ---- the echo, the target, the upstreams ------------------------------------------
E=$(free_port) UA=$(free_port) UK=$(free_port)
plain_up echo echo "$E"
plain_up ua http_proxy "$UA"
plain_up uk http_proxy "$UK"
UK_PID=$LAST
"$PY" "$top_srcdir/t/lib/bad_upstream.py" canned --port-file "$T/canned.port" \
  --lifetime 300 >"$T/canned.log" 2>&1 &
PIDS="$PIDS $!"
"$PY" "$top_srcdir/t/lib/socks5_probe.py" blackhole --port-file "$T/bh.port" \
  --seconds 300 >/dev/null 2>&1 &
PIDS="$PIDS $!"
# hold: accepts connections and never answers (a CONNECT tunnel held open)
"$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held = [s.accept()[0] for _ in range(8)]
time.sleep(300)' "$T/hold.port" >/dev/null 2>&1 &
PIDS="$PIDS $!"
start_file_server "$T/www" "the pool dashboards' target" target
wait_file "$T/canned.port" && wait_file "$T/bh.port" && wait_file "$T/hold.port"
UC=$(cat "$T/canned.port") UB=$(cat "$T/bh.port") HOLD=$(cat "$T/hold.port")
r=0
for p in "$E" "$UA" "$UK" "$UC" "$FILE_SERVER_PORT"; do
  wait_for port_open "$p" || r=1
done
ok $r "the echo, a target and the upstreams listen"

# ---- the three roles -------------------------------------------------------------
controller_up pw-Dashboards-Never-Used-1b7e
sed -i 's/^modules = store_sqlite.*/&, process_metrics/' "$T/ctl.ini"
# health_panic_threshold 100: pb, pc and pk down are three of four, which
# the panic guard would otherwise publish SUSPECT, never UNHEALTHY.
health_controller_start "$E" "$FILE_SERVER_PORT" --set controlplane_server.task_deadline=2s \
  --set controlplane_server.health_panic_threshold=100
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
wait_long ready "$admin"; ok $? "the controller is ready"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
add() { # ID PROTOCOL PORT
  ctl proxy add "$1" --protocol "$2" --host 127.0.0.1 --port "$3" --groups g \
    --capacity 10 --zone z1 >/dev/null
}
ctl route add all --position 100 --host '*' --group g --strategy round_robin >/dev/null &&
  add pa http_connect "$UA" && add pk http_connect "$UK" && add pc http "$UC" &&
  add pb http_connect "$UB"
ok $? "proxyhostctl: a route and the four proxies"
g_a=$(free_port) g_h=$(free_port)
GW_MODULES=process_metrics gateway_up g1 "$g_a" "$g_h"
G_PID=$LAST
checker_up k1 process_metrics

scrape() { http_get "http://127.0.0.1:$1/metrics" | sed 1d; }
m() { metric "$(scrape "$1")" "$2"; }
sum() { scrape "$1" | grep -E "^$2" | awk '{s += $NF} END {print s + 0}'; }
health() { gw_health "$g_a" "$1"; }
is_h() { [ "$(health "$1")" = "$2" ]; }
wait_long eval '[ "$(m "$ca_k1" "proxyhost_checker_session_state{state=\"watching\"}")" = 1 ]'
ok $? "the checker registers and watches its tasks"
wait_long eval 'is_h pa available && is_h pk available'
ok $? "CP-6-7 pa and pk become AVAILABLE in the gateway's view"
not_avail() { case $(health "$1") in suspect | unhealthy) return 0 ;; esac; return 1; }
wait_long not_avail pc
ok $? "CP-6-4 pc (a canned page) is not AVAILABLE ($(health pc))"

# ---- traffic and faults -----------------------------------------------------------
get() { curl -s -m 10 -x "http://127.0.0.1:$g_h" "http://127.0.0.1:$FILE_SERVER_PORT/hello.txt"; }
r=0
for i in 1 2 3 4 5 6; do case $(get) in *target*) ;; *) r=1 ;; esac; done
ok $r "six requests through the gateway"
ctl proxy extract pa >/dev/null 2>&1 && ctl proxy return pa >/dev/null 2>&1
ok $? "CP-1-5 pa extracted and returned (the controller's extraction panel)"
# The checker is held while pk dies and the requests go: its verdict
# would otherwise race them (a loaded machine's requests are slower than
# a check), and pk out of the view before a request meets it.
kill -STOP "$ck_k1"
kill "$UK_PID"
wait_exit "$UK_PID" 10
for i in 1 2 3 4 5 6 7 8; do get >/dev/null; done
dials() { sum "$g_a" 'proxyhost_pool_outcomes_total\{stage="dial",result="failure"'; }
wait_long eval '[ "$(dials)" -ge 1 ]'
ok $? "CP-5-2 pk killed: requests meet its refused dial ($(dials))"
kill -CONT "$ck_k1"
wait_long is_h pk unhealthy
ok $? "CP-6-7 ... and pk becomes UNHEALTHY"
# The checker stopped past its tasks' deadline: the tasks it reads once
# continued are late (refused without a check) and those it was running
# end as CHECKER_ERROR; the controller meanwhile expires them.
late() { sum "$ca_k1" 'proxyhost_checker_tasks_refused_total\{reason="late"'; }
late0=$(late)
kill -STOP "$ck_k1"
sleep 3
kill -CONT "$ck_k1"
wait_long eval '[ "$(late)" -gt "$late0" ]'
ok $? "the checker stopped for 3 s and continued: late tasks refused"
# Redis paused (CLIENT PAUSE): the controller's calls get no answer
# within command_timeout and fail; then everything goes on by itself.
# (Not a restart: Redis empty leaves every verdict at none for minutes.)
redis_cli "$T/redis" CLIENT PAUSE 1500 ALL >/dev/null
wait_long eval '[ "$(sum "$admin" "proxyhost_cp_redis_calls_total\{.*result=\"unavailable\"")" -ge 1 ]'
ok $? "CP-3-9 Redis paused: the controller's calls fail (unavailable)"
wait_long ready "$admin"; ok $? "... the controller is ready again"
wait_long eval '[ "$(m "$g_a" proxyhost_cp_gateway_ready)" = 1 ]'
ok $? "... and the gateway's view usable"
for i in 1 2 3 4; do get >/dev/null; done
for p in "$PH_PID" "$ck_k1" "$G_PID"; do
  kill -HUP "$p"
done
wait_long eval '[ "$(sum "$g_a" "proxyhost_reloads_total")" -ge 1 ] &&
  [ "$(sum "$ca_k1" "proxyhost_reloads_total")" -ge 1 ] &&
  [ "$(sum "$admin" "proxyhost_reloads_total")" -ge 1 ]'
ok $? "a SIGHUP to each role: its reload counted"
# Held while scraping: a CONNECT tunnel through the gateway.
curl -s -m 60 -p -x "http://127.0.0.1:$g_h" "http://127.0.0.1:$HOLD/" >/dev/null 2>&1 &
CURL_PID=$!
PIDS="$PIDS $CURL_PID"
wait_long eval '[ "$(m "$g_a" proxyhost_pool_active)" = 1 ]'
ok $? "a CONNECT tunnel held through the gateway"

# ---- the dashboards against these scrapes -----------------------------------------
# The checker's in-flight gauge is read at the scrape: take a scrape made
# while a check (pb's, whose connects hang) is running, one in which
# every series of its dashboard moved (bounded: 300 scrapes; under ASan on
# a loaded machine 10 s of scrapes once saw no check running).
i=0
while [ $i -lt 300 ]; do
  scrape "$ca_k1" >"$T/checker.prom"
  [ "$(metric "$(cat "$T/checker.prom")" proxyhost_checker_running)" -ge 1 ] 2>/dev/null &&
    $CHECK "$DASHES/checker.json" "$T/checker.prom" >/dev/null 2>&1 && break
  i=$((i + 1))
  sleep 0.1
done
# The controller's Redis link is a gauge read at the scrape, and a loaded
# machine's reload can cost it a command_timeout and a reconnect: take the
# scrape once it is up.
wait_long eval '[ "$(m "$admin" proxyhost_cp_redis_connected)" = 1 ]'
scrape "$admin" >"$T/controller.prom"
scrape "$g_a" >"$T/gateway.prom"
for role in controller gateway checker; do
  $CHECK "$DASHES/$role.json" "$T/$role.prom" >"$T/$role.out" 2>&1
  ok $? "issue 28 $role.json: every panel's series in the $role's /metrics moved, all filtered on job and instance ($(grep -c '^checked' "$T/$role.out") names)"
  grep -E '^problem' "$T/$role.out" | sed 's/^/# /'
done

# A query naming a metric the role does not export fails the check, and
# so does a panel that does not filter on the instance.
"$PY" - "$DASHES/gateway.json" "$T" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["panels"] if p.get("targets")][0]
t = p["targets"][0]
wrong = json.loads(json.dumps(d))
[q for q in wrong["panels"] if q.get("id") == p["id"]][0]["targets"][0]["expr"] = \
    t["expr"].replace("proxyhost_", "proxyhost_no_such_", 1)
json.dump(wrong, open(sys.argv[2] + "/wrong.json", "w"))
t["expr"] = t["expr"].replace(',instance=~"$instance"', "")
json.dump(d, open(sys.argv[2] + "/unfiltered.json", "w"))
EOF
$CHECK "$T/wrong.json" "$T/gateway.prom" >"$T/wrong.out" 2>&1
[ $? -eq 1 ] && grep -q 'proxyhost_no_such_.* is not in /metrics' "$T/wrong.out"
ok $? "a dashboard query naming a metric the gateway does not export fails the check"
$CHECK "$T/unfiltered.json" "$T/gateway.prom" >"$T/unfiltered.out" 2>&1
[ $? -eq 1 ] && grep -q 'does not filter on instance' "$T/unfiltered.out"
ok $? "... and so does a panel that does not filter on the instance"
$CHECK "$DASHES/checker.json" "$T/gateway.prom" >"$T/cross.out" 2>&1
is $? 1 "... and the checker's dashboard against the gateway's scrape"

kill "$CURL_PID" 2>/dev/null
unlike "$(cat "$T/ph.log" "$T/k1.log" "$T/g1.log")" "AddressSanitizer" "no sanitizer report"
stop_redis "$T/redis"
done_testing
