#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 22 item 9: a local user without a token cannot block the admin
# listener. A hostile peer (t/lib/admin_flood.py) holds max_connections
# idle connections and re-opens each one the server closes; meanwhile
# /readyz, /healthz, /metrics and proxyhostctl (an authenticated admin API
# call) all still answer, because a new connection takes the slot of the
# oldest one that has not sent a whole request. A connection that sends
# nothing is closed after [admin] header_timeout (long before the
# whole-request timeout). Both are counted in
# proxyhost_admin_connections_closed_total, logged, and the token never
# appears in the log.
. "$top_srcdir/t/lib/testlib.sh"
require_modules admin_api

CTL="$top_builddir/tools/proxyhostctl"
FLOOD="$top_srcdir/t/lib/admin_flood.py"
"$CTL" admin-token new "$T/admin.token" >/dev/null
port=$(free_port)
url="http://127.0.0.1:$port"
ctl() { "$CTL" --admin "127.0.0.1:$port" --token-file "$T/admin.token" "$@"; }
write_conf() { # EXTRA-ADMIN-LINES
  admin_api_conf "$T/run.ini" "$port" "max_connections = 4
timeout = 30s
$1"
}
code() { "$CURL" -s -m 5 -o /dev/null -w '%{http_code}' "$1"; }

# ---- the flood: every slot held by an idle connection, re-opened at once
write_conf ""
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "proxyhost with admin_api starts"
python3 "$FLOOD" hold "$port" 4 "$T/flood.ready" "$T/flood.stop" >"$T/flood.out" 2>&1 &
FLOOD_PID=$!
PIDS="$PIDS $FLOOD_PID"
wait_file "$T/flood.ready"; ok $? "the hostile peer holds max_connections idle connections"
ready=0 metrics=0 health=0 api=0
for i in 1 2 3 4 5; do
  [ "$(code "$url/readyz")" = 200 ] && ready=$((ready + 1))
  [ "$(code "$url/healthz")" = 200 ] && health=$((health + 1))
  [ "$(code "$url/metrics")" = 200 ] && metrics=$((metrics + 1))
  ctl user list >/dev/null 2>&1 && api=$((api + 1))
done
is "$ready" 5 "under the flood, /readyz answers 200 every time"
is "$health" 5 "... /healthz too"
is "$metrics" 5 "... /metrics too"
is "$api" 5 "... and proxyhostctl (an authenticated admin API call) succeeds"
touch "$T/flood.stop"
wait_exit "$FLOOD_PID" 10
like "$(cat "$T/flood.out")" "reopened=" "the hostile peer ran until told to stop"
unlike "$(cat "$T/flood.out")" "reopened=0" "... and its idle connections were closed to make room"
m=$("$CURL" -s -m 5 "$url/metrics")
evicted=$(metric "$m" 'proxyhost_admin_connections_closed_total{reason="evicted"}')
ok "$([ "${evicted:-0}" -ge 1 ] && echo 0 || echo 1)" \
  "proxyhost_admin_connections_closed_total{reason=\"evicted\"} counts them ($evicted)"
like "$(cat "$T/ph.log")" "admin connection closed" "... and the closing is logged"
unlike "$(cat "$T/ph.log")" "$(cat "$T/admin.token")" "the admin token is not in the log"
kill "$PH_PID"; wait_exit "$PH_PID" 10

# ---- header_timeout: a connection that sends nothing is closed early
port=$(free_port)
url="http://127.0.0.1:$port"
write_conf "header_timeout = 300ms"
: >"$T/ph.log"
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "proxyhost with header_timeout = 300ms starts"
is "$(python3 "$FLOOD" idle "$port" 20)" closed \
  "an idle connection is closed by header_timeout, not the 30 s timeout"
m=$("$CURL" -s -m 5 "$url/metrics")
is "$(metric "$m" 'proxyhost_admin_connections_closed_total{reason="header_timeout"}')" 1 \
  "... counted in proxyhost_admin_connections_closed_total{reason=\"header_timeout\"}"
is "$(code "$url/readyz")" 200 "a prompt request is still served"
kill "$PH_PID"; wait_exit "$PH_PID" 10

write_conf "header_timeout = 50ms"
"$PROXYHOST" -c "$T/run.ini" --check-config >"$T/out" 2>&1
ok "$([ $? -ne 0 ] && echo 0 || echo 1)" "header_timeout below its bound (100ms) is refused"
done_testing
