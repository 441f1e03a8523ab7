#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The pool's health loop end to end (issue 26, round 2), every part real:
# a private redis-server, a controller (t/lib/controller.sh; checks every
# second, echo_url on an `echo` module instance, a target probe for group
# g), TWO `checker` processes, one gateway (controlplane_client,
# outcome_reporter, pool, http_proxy) and seven upstreams in group g:
#   pa  proxyhost `local` http_proxy (elite)
#   pb  proxyhost `local` socks5 with a password (the controller's
#       credential upstream-a; elite)
#   pk  proxyhost `local` http_proxy, killed then restarted
#   pt  tinyproxy, plain http (absolute form adds Via: anonymous)
#   pw  tinyproxy with BasicAuth, the controller's credential wrong
#   pc  a server answering everything with a canned page (bad_echo)
#   pf  t/lib/bad_upstream.py flaky_check: every (tier) check it serves
#       fails one time in three
#   ps  proxyhost `local` http_proxy, stopped with SIGSTOP then continued
# It proves, with no request through the gateway: the live proxies become
# AVAILABLE with the egress IP and anonymity EGRESS saw (CP-6-3, CP-6-4,
# CP-6-7), in proxyhostctl proxy show and the admin API; pw and pc are not
# AVAILABLE, for auth_failed and bad_echo; pf does not flap over ten
# rounds of its checks (counted in its connections, not in time); pk
# killed becomes UNHEALTHY by active checks alone and leaves the gateway's
# choices (its snapshot), then AVAILABLE again once restarted (rise); ps
# stopped (it accepts in the kernel, never answers) becomes UNHEALTHY for
# its timeouts, and AVAILABLE again once continued; one
# checker stopped mid-task and killed: its tasks go to the other and the
# checks go on, nothing counted against a proxy (CP-6-6); the echo
# endpoint stopped: no proxy becomes UNHEALTHY at EGRESS (CHECKER_ERROR is
# no verdict); the passwords are in no log, /metrics or Redis dump.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"
require_modules store_sqlite redis_ownership controlplane_server admin_api pool_api \
  controlplane_client outcome_reporter direct round_robin pool http_proxy socks5 \
  auth_local checker echo
command -v tinyproxy >/dev/null 2>&1
ok $? "tinyproxy is installed (scripts/install-deps.sh)"

MODS="$top_builddir/modules"
CTL="$top_builddir/tools/proxyhostctl"
PW_OK=pw-HealthLoop-Right-Never-Logged-5c3e
PW_BAD=pw-HealthLoop-Wrong-Never-Logged-9d71
TAP_ON_FAIL='grep -v "level=debug" "$T/ph.log" | tail -10; for f in k1 k2 g1; do echo "$f:"; grep -v "level=debug" "$T/$f.log" 2>/dev/null | tail -5; done; for p in pa pb pk pt pw pc pf ps; do ctl proxy show $p 2>&1 | grep -e "^health"; done'

# ---- the echo, the target and the upstreams --------------------------------------
E=$(free_port) UA=$(free_port) UB=$(free_port) UK=$(free_port) UT=$(free_port)
UW=$(free_port)
local_up() { # NAME MODULES FRONTEND PORT [EXTRA INI]: a proxyhost, pid in LAST_PID
  printf '[proxyhost]\nmodules = %s\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[%s]\nlisten = 127.0.0.1:%s\n%s' \
    "$2" "$MODS" "$(free_port)" "$3" "$4" "${5:-}" >"$T/$1.ini"
  "$PROXYHOST" -c "$T/$1.ini" >>"$T/$1.log" 2>&1 &
  LAST_PID=$!
  PIDS="$PIDS $!"
}
local_up echo echo echo "$E"
ECHO_PID=$LAST_PID
local_up ua "direct, http_proxy" http_proxy "$UA"
# 10,000 PBKDF2 rounds: a default verification is slow under ASan.
local_up ub "auth_local, direct, socks5" socks5 "$UB" \
  "$(printf 'auth = password\n[auth_local]\nusers = alice:%s\n' "$(password_hash "$PW_OK" 10000)")"
local_up uk "direct, http_proxy" http_proxy "$UK"
UK_PID=$LAST_PID
US=$(free_port)
local_up us "direct, http_proxy" http_proxy "$US"
US_PID=$LAST_PID
tiny() { # NAME PORT [EXTRA LINE] (checker_role.sh's tinyproxy)
  printf 'Port %s\nListen 127.0.0.1\nTimeout 60\nMaxClients 50\nLogLevel Info\nLogFile "%s/%s.log"\nPidFile "%s/%s.pid"\nAllow 127.0.0.1\n%s\n' \
    "$2" "$T" "$1" "$T" "$1" "${3:-}" >"$T/$1.conf"
  tinyproxy -d -c "$T/$1.conf" >"$T/$1.out" 2>&1 &
  PIDS="$PIDS $!"
}
tiny ut "$UT"
tiny uw "$UW" "BasicAuth alice $PW_OK"
"$PY" "$top_srcdir/t/lib/bad_upstream.py" canned --port-file "$T/canned.port" \
  --lifetime 600 >"$T/canned.log" 2>&1 &
PIDS="$PIDS $!"
"$PY" "$top_srcdir/t/lib/bad_upstream.py" flaky_check --port-file "$T/flaky.port" \
  --lifetime 600 >"$T/flaky.log" 2>&1 &
PIDS="$PIDS $!"
start_file_server "$T/www" "the target group's probe" target
wait_file "$T/flaky.port" && wait_file "$T/canned.port"
UF=$(cat "$T/flaky.port") UC=$(cat "$T/canned.port")
r=0
for p in "$E" "$UA" "$UB" "$UK" "$UT" "$UW" "$UC" "$UF" "$US" "$FILE_SERVER_PORT"; do
  wait_for port_open "$p" || r=1
done
ok $r "the echo, a target and eight upstreams listen"

# ---- the controller ----------------------------------------------------------------
controller_up "$PW_OK"
(umask 077 && printf 'alice:%s\n' "$PW_BAD" >"$T/secrets/upstream-b")
health_controller_start "$E" "$FILE_SERVER_PORT" \
  --set controlplane_server.task_deadline=3s \
  --set pool_api.credentials=controlplane_server
ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
wait_long ready "$admin"; ok $? "the controller is ready"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
add() { # ID PROTOCOL PORT [ARGS...]
  _id=$1 _pr=$2 _po=$3
  shift 3
  ctl proxy add "$_id" --protocol "$_pr" --host 127.0.0.1 --port "$_po" --groups g \
    --capacity 10 --zone z1 "$@" >/dev/null
}
ctl credential add upstream-a >/dev/null && ctl credential add upstream-b >/dev/null &&
  ctl route add all --position 100 --host '*' --group g --strategy round_robin >/dev/null &&
  add pa http_connect "$UA" && add pb socks5 "$UB" --secret-ref upstream-a &&
  add pk http_connect "$UK" && add pt http "$UT" &&
  add pw http_connect "$UW" --secret-ref upstream-b && add pc http "$UC" &&
  add pf http_connect "$UF" && add ps http_connect "$US"
ok $? "proxyhostctl: two credentials, a route and the eight proxies"

# ---- the gateway and two checkers ----------------------------------------------------
g_a=$(free_port) g_h=$(free_port)
gateway_up g1 "$g_a" "$g_h"
checker_up k1
checker_up k2
km() { metric "$(http_get "http://127.0.0.1:$1/metrics")" "$2"; }
sm() { metric "$(http_get "http://127.0.0.1:$admin/metrics")" "$1"; }
gm() { metric "$(http_get "http://127.0.0.1:$g_a/metrics")" "$1"; }
# checks NAME: the checks checker NAME ran, every tier and status
checks() {
  eval "_p=\$ca_$1"
  http_get "http://127.0.0.1:$_p/metrics" | grep '^proxyhost_checker_checks_total{' |
    awk '{s += $2} END {print s + 0}'
}
watching() { [ "$(km "$1" 'proxyhost_checker_session_state{state="watching"}')" = 1 ]; }
wait_long watching "$ca_k1" && wait_long watching "$ca_k2"
ok $? "two checkers register with the controller and watch their tasks"
wait_long eval '[ "$(sm proxyhost_cp_controller_checkers)" = 2 ]'
ok $? "... the controller counts two checkers"
wait_long eval '[ "$(checks k1)" -ge 1 ] && [ "$(checks k2)" -ge 1 ]'
ok $? "CP-6-2 the controller splits the checks between them (k1 $(checks k1), k2 $(checks k2))"

# ---- verdicts ------------------------------------------------------------------------------
# health ID: the proxy's health in the gateway's snapshot ("" when absent)
health() { gw_health "$g_a" "$1"; }
is_h() { [ "$(health "$1")" = "$2" ]; }
verdict() { ctl proxy show "$1" 2>/dev/null | awk '$1 == "health" { print $2 }'; }
item() { ctl proxy show "$1" 2>/dev/null | grep "^health_items tier=$2 "; }
LIVE="pa pb pk pt pf ps"
all_available() {
  for p in $LIVE; do is_h "$p" available || return 1; done
}
wait_long all_available
ok $? "CP-6-7 pa, pb, pk, pt, pf and ps become AVAILABLE in the gateway's snapshot"
# items_ok ID: its BASIC, EGRESS and TARGET items all AVAILABLE
items_ok() {
  [ "$(ctl proxy show "$1" 2>/dev/null | grep -c '^health_items tier=[a-z]* .*state=available')" -ge 3 ]
}
r=0
for p in $LIVE; do wait_long items_ok "$p" || r=1; done
ok $r "CP-6-3 CP-6-4 CP-6-5 ... each with its BASIC, EGRESS and TARGET items AVAILABLE"
for p in $LIVE; do
  is "$(verdict "$p")" available "CP-6-7 proxyhostctl proxy show $p: health available"
done
for p in pa pb pk pf; do
  like_re "$(item "$p" egress)" "state=available.*egress_ip=127\\.0\\.0\\.1.*anonymity=elite" \
    "CP-6-4 $p: the egress IP the echo saw and anonymity elite"
done
like_re "$(item pt egress)" "state=available.*egress_ip=127\\.0\\.0\\.1.*anonymity=anonymous" \
  "CP-6-4 pt (tinyproxy adds Via): anonymous"
like_re "$(item pb basic)" "state=available" "CP-6-3 pb's BASIC passes with the controller's credential"
like_re "$(item pa target)" "target_group=g state=available" "CP-6-5 pa's TARGET probe of group g passes"
bad_tasks() {
  for _p in "$ca_k1" "$ca_k2"; do http_get "http://127.0.0.1:$_p/metrics"; done |
    grep -F 'reason="bad_task"}' | awk '{s += $2} END {print s + 0}'
}
is "$(bad_tasks)" 0 \
  "CP-6-3 no task the checkers could not act on: a BASIC task carries the echo URL its tunnel goes to"
json=$(curl -s -m 5 -H "Authorization: Bearer $(cat "$T/admin.token")" \
  "http://127.0.0.1:$admin/v1/pool/proxies/pt")
like "$json" '"anonymity":"anonymous"' "CP-6-4 the admin API's pt carries its anonymity"
like "$json" '"egress_ip":"127.0.0.1"' "... and its egress IP"
not_available() { # ID REASON TIER
  case $(verdict "$1") in suspect | unhealthy) ;; *) return 1 ;; esac
  item "$1" "$3" | grep -q "reason=$2"
}
wait_long not_available pw auth_failed basic
ok $? "CP-6-3 pw (wrong credential) is $(verdict pw): BASIC auth_failed"
wait_long not_available pc bad_echo egress
ok $? "CP-6-4 pc (a canned page) is $(verdict pc): EGRESS bad_echo"
like_re "$(health pw) $(health pc)" '^(suspect|unhealthy) (suspect|unhealthy)$' \
  "CP-6-7 ... both so in the gateway's snapshot"
outs=$(http_get "http://127.0.0.1:$g_a/metrics" | grep '^proxyhost_pool_outcomes_total' |
  awk '{s += $2} END {print s + 0}')
is "$outs" 0 "no request went through the gateway: the verdicts are the checks' alone"

# ---- the flaky pf over ten rounds of its checks --------------------------------------------
trans() {
  http_get "http://127.0.0.1:$admin/metrics" |
    grep '^proxyhost_cp_controller_health_transitions_total{' | awk '{s += $2} END {print s + 0}'
}
conns() { grep -c conn "$T/flaky.port.log"; }
# Settled first: pw and pc gone all the way down (fall failures).
settled() { [ "$(verdict pw)" = unhealthy ] && [ "$(verdict pc)" = unhealthy ]; }
wait_long settled
ok $? "CP-6-7 pw and pc settle UNHEALTHY (fall failures)"
t0=$(trans) c0=$(conns)
# Three tiers a round: thirty connections are ten rounds of every item.
wait_long eval '[ "$(conns)" -ge $((c0 + 30)) ]'
ok $? "pf served ten more rounds of checks ($c0 -> $(conns) connections)"
is "$(trans)" "$t0" "CP-6-7 no verdict changed meanwhile: pf, failing one check in three, does not flap"
is "$(verdict pf)" available "CP-6-7 ... pf is AVAILABLE"
unlike "$(grep 'proxy health changed' "$T/ph.log" | grep 'proxy_id=pf' | grep -v from=none)" "to=" \
  "CP-6-7 ... and the controller never logged a change of pf"

# ---- pk killed: UNHEALTHY by active checks alone, out of the snapshot; back after rise -----
kill "$UK_PID"
wait_exit "$UK_PID" 10
wait_long is_h pk unhealthy
ok $? "CP-6-7 pk killed: UNHEALTHY in the gateway's snapshot by active checks alone"
like_re "$(ctl proxy show pk | grep '^health_items tier=[a-z]* .*state=unhealthy')" \
  "reason=dial_refused" "CP-6-3 ... an item UNHEALTHY for dial_refused"
is "$(redis_cli "$T/redis" HGET 'ph:cp:{c1}:health' pk)" 3 \
  "CP-6-7 ... the pool's state in Redis (3 UNHEALTHY)"
outs=$(http_get "http://127.0.0.1:$g_a/metrics" | grep '^proxyhost_pool_outcomes_total' |
  awk '{s += $2} END {print s + 0}')
is "$outs" 0 "... with no traffic through the gateway"
r=0
for i in 1 2 3 4 5 6 7 8; do
  case $(curl -s -m 10 -x "http://127.0.0.1:$g_h" "http://127.0.0.1:$FILE_SERVER_PORT/hello.txt") in
    *probe*) ;; *) r=1 ;; esac
done
ok $r "eight requests through the gateway succeed"
d=$(gm 'proxyhost_pool_outcomes_total{stage="dial",result="failure"}')
is "${d:-0}" 0 \
  "CP-6-7 ... none dialled pk: it left the gateway's choices"
local_up uk "direct, http_proxy" http_proxy "$UK"
UK_PID=$LAST_PID
wait_long is_h pk available
ok $? "CP-6-7 pk restarted: AVAILABLE again after rise successes"

# ---- ps stopped: its connects are accepted by the kernel, nothing answers ----------
# A check of ps times out; the timeout must reach the controller before
# the task's deadline (task.report_margin), or it is dropped as late and
# ps is never found out (CP-6-3, CP-6-7).
kill -STOP "$US_PID"
wait_long is_h ps unhealthy
ok $? "CP-6-7 ps stopped (SIGSTOP): UNHEALTHY in the gateway's snapshot by active checks alone"
# The proxy's verdict is its worst item's: BASIC may follow a moment later.
basic_timeout() {
  ctl proxy show ps | grep '^health_items tier=basic ' | grep 'state=unhealthy' |
    grep -q 'reason=handshake_timeout'
}
wait_long basic_timeout
ok $? "CP-6-3 ... its BASIC item UNHEALTHY for handshake_timeout"
kill -CONT "$US_PID"
wait_long is_h ps available
ok $? "CP-6-7 ps continued: AVAILABLE again after rise successes"

# ---- one checker stopped mid-task, then killed ----------------------------------------------
avail_now=$(sm 'proxyhost_cp_controller_health_transitions_total{to="unhealthy"}')
# moved: the tasks the controller took back (expired or released), every tier
moved() {
  http_get "http://127.0.0.1:$admin/metrics" |
    grep -E '^proxyhost_cp_controller_check_tasks_total\{.*result="(expired|released)"' |
    awk '{s += $2} END {print s + 0}'
}
m0=$(moved)
kill -STOP "$ck_k1"
wait_long eval '[ "$(moved)" -gt "$m0" ]'
ok $? "CP-6-2 k1 stopped holding tasks: they expire at their deadline and go elsewhere"
kill -KILL "$ck_k1"
wait_long eval '[ "$(sm proxyhost_cp_controller_checkers)" = 1 ]'
ok $? "k1 killed: the controller counts one checker"
c2=$(checks k2)
wait_long eval '[ "$(checks k2)" -ge $((c2 + 21)) ]'
ok $? "CP-6-6 k2 goes on with every check (a round more: $c2 -> $(checks k2))"
wait_long all_available
ok $? "CP-6-7 every live proxy is still AVAILABLE"
is "$(sm 'proxyhost_cp_controller_health_transitions_total{to="unhealthy"}')" "$avail_now" \
  "CP-6-7 a checker's death made no proxy UNHEALTHY"

# ---- the echo endpoint stopped: no verdict at EGRESS -------------------------------------
kill "$ECHO_PID"
wait_exit "$ECHO_PID" 10
ce0=$(sm 'proxyhost_cp_controller_health_observations_total{kind="checker_error"}')
wait_long eval '[ "$(km "$ca_k2" proxyhost_checker_echo_up)" = 0 ]'
ok $? "the checker sees the echo down (proxyhost_checker_echo_up 0)"
# Two rounds of BASIC and EGRESS to the echo through the five live proxies.
wait_long eval '[ "$(sm "proxyhost_cp_controller_health_observations_total{kind=\"checker_error\"}")" -ge $((${ce0:-0} + 20)) ]'
ok $? "CP-6-4 the checks through the echo come back CHECKER_ERROR ($(sm 'proxyhost_cp_controller_health_observations_total{kind="checker_error"}'))"
r=0
for p in $LIVE; do
  item "$p" egress | grep -q "state=unhealthy" && r=1
  is_h "$p" available || r=1
done
ok $r "CP-6-4 CP-6-7 with the echo down no proxy is UNHEALTHY at EGRESS: the live ones stay AVAILABLE"
is "$(sm 'proxyhost_cp_controller_health_transitions_total{to="unhealthy"}')" "$avail_now" \
  "CP-6-7 ... and none became UNHEALTHY"

# ---- no password anywhere -------------------------------------------------------------------
redis_dump "$T/redis" >"$T/redis.dump" 2>&1
[ -s "$T/redis.dump" ]; ok $? "the Redis dump was taken"
{
  http_get "http://127.0.0.1:$admin/metrics"
  http_get "http://127.0.0.1:$ca_k2/metrics"
  http_get "http://127.0.0.1:$g_a/metrics"
} >"$T/metrics.all"
for f in ph.log k1.log k2.log g1.log metrics.all redis.dump; do
  grep -qa -e "$PW_OK" -e "$PW_BAD" "$T/$f"
  is $? 1 "CP-8-5 the upstream passwords are not in $f"
done
unlike "$(cat "$T/ph.log" "$T/k2.log" "$T/g1.log")" "AddressSanitizer" "no sanitizer report"
stop_redis "$T/redis"
done_testing
