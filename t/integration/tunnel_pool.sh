#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The agent's connection pool controller in real processes (issue 27,
# TM-P2-23..28): a tunnel_server, a tunnel_agent with connections.min 1,
# max 4, watermarks 2 and 1, a 1 s evaluation interval and a 2 s
# cooldown, and a tunnel_client. Twelve streams through the client to a
# target that drips bytes (t/lib/lease_target.py), each held by its
# client for several seconds: the agent grows 1 -> 4 connections one at a
# time (proxyhost_tunnel_agent_connections, the server's agent sessions,
# pool_decisions_total{decision="grow_load"} 3) and never above max; every
# stream runs until its client closes it, none moves or is cut
# (TM-P2-27); then, idle, it drains back to 1 (shrink_idle 3, one per
# cooldown), and a stream opened afterwards still works. The decision's
# log line names every input (TM-P2-26). With the defaults (1/1) the same
# load never adds a connection (TM-P2-23, TM-P2-25). An agent given two
# nodes' URLs spreads its connections over both, and a killed node's
# connection comes back on the other (TM-FAIL-9).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api socks5 direct

PY=${PYTHON3:-python3}
LT="$top_srcdir/t/lib/lease_target.py"

tn_setup; ok $? "admin token and dnsd.py"
"$PY" "$LT" serve --port-file "$T/lt.port" --lifetime 120 >"$T/lt.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/lt.port"; ok $? "a dripping target (lease_target.py)"
lt=$(cat "$T/lt.port")

POOL='connections.min = 1
connections.max = 4
connections.high_watermark = 2
connections.low_watermark = 1
connections.evaluation_interval = 1s
connections.cooldown = 2s'

tn_server s; ok $? "server process healthy"
tn_creds s; ok $? "credentials (proxyhostctl)"
tn_agent a s "$POOL"; ok $? "agent process healthy, pool 1..4"
tn_client c s; ok $? "client process healthy"
tn_wait_sessions "$a_admin" agent 1; ok $? "the agent holds one session"
wait_for tn_ready "$c_admin"; ok $? "the client is ready"

conns() { tn_sum "$a_admin" '^proxyhost_tunnel_agent_connections '; }
decisions() { tn_sum "$a_admin" "^proxyhost_tunnel_agent_pool_decisions_total\\{decision=\"$1\""; }
is "$(conns)" 1 "TM-P2-23: one connection at the start (connections.min)"

# Twelve streams, each reading the drip's first bytes, then held 9 s.
i=0
while [ $i -lt 12 ]; do
  "$PY" "$LT" client --via socks5 --proxy "$c_socks" --port "$lt" \
    --path /drip --read 1024 --hold 9 >"$T/cl$i.out" 2>&1 &
  eval "cl_$i=$!"
  i=$((i + 1))
done

# Sample the pool while the load lasts: the largest count seen, bounded.
max_seen=0
n=0
while [ $n -lt 200 ]; do
  v=$(conns)
  [ "$v" -gt "$max_seen" ] && max_seen=$v
  [ "$v" -ge 4 ] && [ "$(decisions grow_load)" -ge 3 ] && break
  n=$((n + 1))
  sleep 0.05
done
is "$max_seen" 4 "TM-P2-24, TM-P2-26: under twelve streams the pool grew to connections.max (4)"
is "$(decisions grow_load)" 3 "one connection at a time: three growths for load"
wait_cond '[ "$(tn_sessions "$s_admin" server)" -eq 5 ]'
ok $? "the server holds the agent's four sessions (and the client's one)"
like "$(grep 'one more connection' "$T/a.log" | head -1)" "ttfb_p95_ms=" \
  "TM-P2-26: the decision's log line names its inputs (load, waits, open, TTFB, RTT, failures)"

# Every stream ends by its client, none cut by a drain or a move.
i=0
cut=0
while [ $i -lt 12 ]; do
  wait "$(eval echo "\$cl_$i")"
  grep -q '^eof' "$T/cl$i.out" && cut=$((cut + 1))
  grep -q '^got' "$T/cl$i.out" || cut=$((cut + 1))
  i=$((i + 1))
done
is "$cut" 0 "TM-P2-27: every stream ran until its client closed it (no move, no cut)"
[ "$max_seen" -le 4 ]; ok $? "never above connections.max"

# Idle: one drained per cooldown, back to connections.min.
wait_long eval '[ "$(conns)" -eq 1 ]'; ok $? "idle, the pool drained back to connections.min (1)"
is "$(decisions shrink_idle)" 3 "three drains, for idleness"
is "$(decisions hold_errors)" 0 "no growth was held for failures"
out=$("$PY" "$LT" client --via socks5 --proxy "$c_socks" --port "$lt" --path /hello --read 5 2>&1)
like "$out" "got" "a stream after the drains still works"

# The defaults (1/1): the same load adds nothing.
kill -TERM "$a_pid"; wait_exit "$a_pid" 10; is "$EXIT" 0 "the first agent stopped cleanly"
tn_agent d s ""; ok $? "a second agent with the default pool (1/1)"
wait_cond '[ "$(tn_sessions "$s_admin" server)" -eq 2 ]'
ok $? "the server holds the second agent's one session (and the client's)"
i=0
while [ $i -lt 12 ]; do
  "$PY" "$LT" client --via socks5 --proxy "$c_socks" --port "$lt" \
    --path /drip --read 1024 --hold 3 >/dev/null 2>&1 &
  eval "cl_$i=$!"
  i=$((i + 1))
done
i=0
while [ $i -lt 12 ]; do wait "$(eval echo "\$cl_$i")"; i=$((i + 1)); done
d_conns=$(tn_sum "$d_admin" '^proxyhost_tunnel_agent_connections ')
d_grow=$(tn_sum "$d_admin" '^proxyhost_tunnel_agent_pool_decisions_total')
is "$d_conns:$d_grow" "1:0" "TM-P2-23, TM-P2-25: with the defaults the pool never grows"

# Several nodes (cloudflared#1354): a second server process on the same
# store; an agent keeping two connections, given both URLs, holds one on
# each; the second node killed, its connection comes back on the first.
kill -TERM "$d_pid"; wait_exit "$d_pid" 10; is "$EXIT" 0 "the default agent stopped cleanly"
tn_server s2; ok $? "a second server node on the same store"
tn_agent e s "connections.min = 2
connections.max = 2
extra_server_urls = ws://127.0.0.1:$s2_port/tunnel"
ok $? "an agent with two connections and both nodes' URLs"
wait_cond '[ "$(tn_sessions "$s2_admin" server)" -eq 1 ] && [ "$(tn_sessions "$s_admin" server)" -eq 2 ]'
ok $? "one connection on each node (the first node also holds the client's)"
kill -9 "$s2_pid"; wait "$s2_pid" 2>/dev/null
wait_long eval '[ "$(tn_sessions "$s_admin" server)" -eq 3 ]'
ok $? "TM-FAIL-9: the killed node's connection comes back on the other node"
grep -q 'connection to the server failed.*server_url=ws://127.0.0.1:'"$s2_port" "$T/e.log"
ok $? "the failed node is named in the agent's log"
out=$("$PY" "$LT" client --via socks5 --proxy "$c_socks" --port "$lt" --path /hello --read 5 2>&1)
like "$out" "got" "streams go on through the remaining node"

done_testing
