#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# TunnelMesh end to end, three real processes on loopback: a server
# (tunnel_server + store_sqlite + auth_cache + admin_api), an agent
# (tunnel_agent + direct resolving through dnsd.py) and a client
# (tunnel_client + socks5), credentials made with proxyhostctl; curl and
# t/lib/tunnel_load.py through the client's SOCKS5 listener.
#   - a page of 32 CONNECTs, one whose DNS hangs and one whose dial hangs:
#     the other 30 complete (TM-TEST-31, TM-P0-13);
#   - a refused target is answered 0x05 and the agent does not reconnect;
#   - strict on all three, counted open_mode="strict" (TM-TEST-33);
#   - a bulk download beside 31 small streams: the small ones finish
#     while the bulk one still runs (TM-TEST-36);
#   - fds and resident memory back to the baseline after rounds of
#     streams, in all three processes (TM-TEST-37);
#   - the Grafana dashboard's panels against the three scrapes;
#   - everything at debug level: no token secret in any log, in /metrics
#     or in the SQLite file (TM-SEC-9).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api direct socks5
PY=${PYTHON3:-python3}
LOAD="$PY $top_srcdir/t/lib/tunnel_load.py"
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
RSS_SLACK_KIB=4096
# Under AddressSanitizer freed memory waits in a quarantine on purpose,
# which would read as growth (TM-TEST-37): keep the leak checks, drop the
# quarantine (as t/integration/local_burst.sh does).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
export ASAN_OPTIONS
DEBUG='[log]
level = debug'

tn_setup; ok $? "admin token and dnsd.py"
# The target: a page, 32 small files and a 64 MiB one.
mkdir -p "$T/www"
i=0
while [ $i -lt 32 ]; do printf 'small %s\n' $i >"$T/www/s$i.txt"; i=$((i + 1)); done
head -c 67108864 /dev/zero >"$T/www/big.bin"
start_file_server "$T/www" "hello through the tunnel"; ok $? "file server up"
web=$FILE_SERVER_PORT
tn_blackhole; ok $? "a port whose connects hang"

tn_server s "$DEBUG"; ok $? "TM-TEST-31 server process healthy"
tn_creds s; ok $? "credentials: user, agent, client and agent tokens, policy (proxyhostctl)"
tn_agent a s "$DEBUG"; ok $? "agent process healthy"
tn_client c s "$DEBUG"; ok $? "client process healthy"
tn_wait_sessions "$a_admin" agent 1; ok $? "the agent holds a session with the server"
wait_for tn_ready "$c_admin"; ok $? "the client is ready (connected)"

body=$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")
is "$body" "hello through the tunnel" "curl socks5h through client -> server -> agent -> target (remote DNS)"

# 1. The page: 30 GETs complete while a DNS hang and a dial hang wait.
r=$($LOAD page --proxy "127.0.0.1:$c_socks" --target "ok.test:$web" \
  --path /s1.txt --n 30 --hang "x.hang.test:80" --hang "127.0.0.1:$bh")
is "$r" '{"completed": 30, "failed": 0, "hang_pending": 2}' \
  "TM-TEST-31 TM-P0-13 30 of 32 CONNECTs complete beside a hanging DNS name and a hanging dial"

# 2. A refused target: 0x05, and the agent keeps its session.
closed=$(free_port)
agent_closed0=$(tn_sum "$a_admin" '^proxyhost_stream_tunnel_sessions_closed_total')
r=$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "127.0.0.1:$closed" --atyp ipv4)
is "$r" 0x05 "TM-PROTO-34 TM-TEST-15 a refused target: SOCKS5 0x05 from the agent's connect (the local relay carries the failure)"
r=$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "nx.test:80")
is "$r" 0x04 "TM-PROTO-33 an unknown name (NXDOMAIN at the agent): 0x04"
body=$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")
is "$body" "hello through the tunnel" "the tunnel works after the refusals"
is "$(tn_sum "$a_admin" '^proxyhost_stream_tunnel_sessions_closed_total')" "$agent_closed0" \
  "TM-FAIL-1 a refused target does not close the agent's session"
is "$(tn_sessions "$a_admin" agent)" 1 "... the agent still has its one session"

# 3. Strict on all three.
[ "$(tn_opens "$c_admin" client strict)" -ge 30 ]; ok $? "TM-TEST-33 the client counts strict opens"
is "$(tn_opens "$c_admin" client legacy)" 0 "... and no legacy one"
[ "$(tn_opens "$s_admin" server strict)" -ge 30 ]; ok $? "... the server too"
[ "$(tn_opens "$a_admin" agent strict)" -ge 30 ]; ok $? "... and the agent"

# 4. A bulk download beside 31 small streams.
r=$($LOAD bulk --proxy "127.0.0.1:$c_socks" --bulk "ok.test:$web" \
  --bulk-path /big.bin --bulk-min 67108864 --bulk-sleep-ms 5 \
  --target "ok.test:$web" --path /s2.txt --n 31 --timeout 60)
like "$r" '"small_ok": 31' "TM-TEST-36 31 small streams complete beside a 64 MiB download"
like "$r" '"small_before_bulk": 31' "... all of them while the bulk stream still runs"
like "$r" '"bulk_ok": 1' "... and the bulk one arrives whole"

# 5. fds and memory after rounds of streams.
fds() { ls "/proc/$1/fd" | wc -l; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
r=$($PROBE burst --proxy "127.0.0.1:$c_socks" --n 100 --concurrency 20)
is "$r" "done=100 failed=0" "TM-TEST-37 warm-up: 100 echo streams through the tunnel"
sleep 1
for p in s a c; do
  eval "base_fds_$p=\$(fds \$${p}_pid) base_rss_$p=\$(rss \$${p}_pid)"
done
round=0
while [ $round -lt 3 ]; do
  r=$($PROBE burst --proxy "127.0.0.1:$c_socks" --n 200 --concurrency 20)
  is "$r" "done=200 failed=0" "TM-TEST-37 round $round: 200 echo streams"
  round=$((round + 1))
done
for p in s a c; do
  pid=$(eval echo "\$${p}_pid")
  bf=$(eval echo "\$base_fds_$p")
  br=$(eval echo "\$base_rss_$p")
  back() { [ "$(fds "$pid")" -le "$bf" ]; }
  wait_for back
  is "$(fds "$pid")" "$bf" "TM-TEST-37 $p: open fds back to the baseline"
  now=$(rss "$pid")
  [ "$now" -le $((br + RSS_SLACK_KIB)) ]
  ok $? "TM-TEST-37 $p: resident memory within $RSS_SLACK_KIB KiB ($br -> $now KiB)"
done

# 6. Secrets (TM-SEC-9): the bearers' secrets never in a log, /metrics,
# or the SQLite file (only their hashes are stored).
csec=${TN_CLIENT_BEARER#*.}
asec=${TN_AGENT_BEARER#*.}
[ -n "$csec" ] && [ "$csec" != "$TN_CLIENT_BEARER" ]; ok $? "the client bearer has a secret part"
for f in s a c; do
  unlike "$(cat "$T/$f.log")" "$csec" "TM-SEC-9 $f log (debug): no client token secret"
  unlike "$(cat "$T/$f.log")" "$asec" "TM-SEC-9 $f log (debug): no agent token secret"
  adm=$(eval echo "\$${f}_admin")
  all=$(tn_metrics "$adm")
  unlike "$all" "$csec" "TM-SEC-9 $f /metrics: no client token secret"
  unlike "$all" "$asec" "TM-SEC-9 $f /metrics: no agent token secret"
done
if grep -aqF -e "$csec" -e "$asec" "$T/authz.db" "$T/authz.db-wal" 2>/dev/null; then
  ok 1 "TM-SEC-9 the SQLite file holds no token secret"
else
  ok 0 "TM-SEC-9 the SQLite file holds no token secret"
fi
tn_metrics "$c_admin" >"$T/c.prom"
$PY "$top_srcdir/t/lib/metrics_lint.py" "$T/c.prom" 1000 tunnel_client socks5 >"$T/c.lint" 2>&1
ok $? "the client's /metrics in the prefix scheme (metrics_lint.py)"
sed 's/^/# /' "$T/c.lint" | head -20
# The dashboard's panels against the three roles' scrapes (TM-DOC-9,
# TM-OBS-23..27); the local proxy's own panels are metrics_scrape.sh's.
tn_metrics "$s_admin" >"$T/s.prom"
tn_metrics "$a_admin" >"$T/a.prom"
$PY "$top_srcdir/t/lib/dashboard_check.py" --absent-ok '^(proxyhost_http_proxy_|process_)' --skip-panels '^Relay:' \
  "$top_srcdir/deploy/grafana/dashboards/tunnelmesh.json" "$T/s.prom" "$T/a.prom" "$T/c.prom" >"$T/dash.out" 2>&1
ok $? "TM-OBS-23..27 every tunnel metric of the dashboard's panels is in the roles' /metrics"
grep '^problem' "$T/dash.out" | sed 's/^/# /'
# The server's TTFB (its relay to the agent) and the client's SOCKS5
# TTFB are two series, one per role, each counted by the traffic above.
like_re "$(cat "$T/s.prom")" \
  'tunnelmesh_stream_stage_duration_seconds_count\{component="server",stage="ttfb",result="success",scope="local"\} [1-9]' \
  "TM-OBS-22 the server records its own TTFB"
like_re "$(cat "$T/c.prom")" \
  'tunnelmesh_stream_stage_duration_seconds_count\{component="client",stage="ttfb",result="success",scope="local"\} [1-9]' \
  "TM-OBS-22 the client records the SOCKS5 TTFB apart from it"
unlike "$(cat "$T/c.prom")" 'component="server"' "TM-OBS-22 ... and no server series in the client's"

done_testing
