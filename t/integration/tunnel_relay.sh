#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# TunnelMesh across servers, the relay's first slice (issue 27): two
# servers a and b (tunnel_server with store_pg on one private PostgreSQL,
# presence = true, relay = true, plain ws on loopback with
# relay.allow_plain), an agent on b only and a client on a:
#   - a stream through a reaches the agent on b through the relay
#     (TM-P2-29..31, TM-PROTO-2), counted scope="remote" on a;
#   - strict end to end (TM-PROTO-20): SOCKS5 success only after the
#     agent's dial, a refused target gives the client the agent's
#     connection_refused (0x05), an open counted open_mode="strict";
#   - the same agent also connected to a: the local connection is chosen
#     (TM-P2-30), no new remote open;
#   - it leaves a again: remote again (no local candidate is remote, not an
#     error: TM-P2-31); selection never queries the database (TM-P2-33:
#     the view is in memory, the counts of statements are not asserted
#     here);
#   - b's agent gone too: agent_offline (0x03 is SOCKS5's "network
#     unreachable" for it) once b's presence says so.
# Every wait is bounded (wait_for, wait_long).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules tunnel_server tunnel_agent tunnel_client store_pg \
  auth_cache admin_api direct socks5
. "$top_srcdir/t/lib/tunnel.sh"
MIGRATE=${MIGRATE:-$top_builddir/tools/proxyhost-migrate}
PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"

start_pg "$T/pg"; ok $? "a private PostgreSQL"
TN_DSN=$(pg_new_db authz) && PROXYHOST_MIGRATE_DSN=$TN_DSN "$MIGRATE" apply >/dev/null
ok $? "the schema (v11: presence)"
TN_STORE=store_pg
tn_setup; ok $? "admin token and dnsd.py"
start_file_server "$T/www" "hello across servers"; ok $? "file server up"
web=$FILE_SERVER_PORT

ra=$(free_port)
rb=$(free_port)
mesh() { # NODE RELAY-PORT
  printf 'node_id = %s\npresence = true\npresence.zone = z1\n' "$1"
  printf 'presence.relay_addr = 127.0.0.1:%s\npresence.lease = 3s\n' "$2"
  printf 'relay = true\nrelay.listen = 127.0.0.1:%s\nrelay.allow_plain = true\n' "$2"
}
tn_server a "$(mesh node-a "$ra")"; ok $? "server a up (presence, relay)"
tn_server b "$(mesh node-b "$rb")"; ok $? "server b up (presence, relay)"
tn_creds a; ok $? "credentials through a (the database both share)"
tn_agent ag b; ok $? "the agent, connected to b only"
tn_wait_sessions "$ag_admin" agent 1; ok $? "the agent holds a session with b"
tn_client c a; ok $? "the client, connected to a"
wait_for tn_ready "$c_admin"; ok $? "the client is ready"

q() { pg_psql authz -c "$1"; }
agent_on_b() { [ "$(q "SELECT node_id FROM tm_agent_presence WHERE agent_id = '$TN_AGENT'")" = node-b ]; }
wait_long agent_on_b; ok $? "TM-P2-29: presence says the agent is on node-b"

SUM='^tunnelmesh_stream_stage_duration_seconds_count\{component="server",stage="open",result="success",scope='
remote_ok() { tn_sum "$a_admin" "${SUM}\"remote\"\\}"; }
local_ok() { tn_sum "$a_admin" "${SUM}\"local\"\\}"; }

# The view may lag presence by a notification: the first stream is tried
# until it passes (bounded).
get_ok() { [ "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" = "hello across servers" ]; }
wait_for get_ok; ok $? "TM-P2-31 TM-PROTO-2: curl through a's client reaches the agent on b through the relay"
[ "$(remote_ok)" -ge 1 ]; ok $? "counted scope=\"remote\" on a ($(remote_ok))"
is "$(local_ok)" 0 "and no local open on a"
grep -q '"relay link up"' "$T/a.log" || grep -q 'relay link up' "$T/a.log"
ok $? "a logged its relay link to node-b"
grep -q 'relay link accepted' "$T/b.log"; ok $? "b accepted the link from node-a (a live node of presence)"

closed=$(free_port)
r=$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "127.0.0.1:$closed" --atyp ipv4)
is "$r" 0x05 "TM-PROTO-20 strict end to end: a refused target gives the client the agent's connection_refused (0x05), not success"
strict=$(tn_opens "$a_admin" server strict)
[ "$strict" -ge 2 ]; ok $? "a counts its relayed opens open_mode=\"strict\" ($strict)"
is "$(tn_opens "$a_admin" server legacy)" 0 "and none legacy"
body=$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")
is "$body" "hello across servers" "the relay works after the refusal"

# The same agent on a too: the local connection is chosen (TM-P2-30).
r0=$(remote_ok)
tn_agent al a; ok $? "the agent also connected to a"
tn_wait_sessions "$al_admin" agent 1; ok $? "... holding a session with a"
i=0
while [ $i -lt 5 ]; do
  body=$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")
  [ "$body" = "hello across servers" ] || break
  i=$((i + 1))
done
is "$i" 5 "five streams through a with the agent on both"
is "$(remote_ok)" "$r0" "TM-P2-30: none went remote"
[ "$(local_ok)" -ge 5 ]; ok $? "all five local ($(local_ok))"

# It leaves a: remote again, no error.
kill -TERM "$al_pid"; wait_exit "$al_pid" 30
body=$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")
is "$body" "hello across servers" "the agent left a: the next stream goes through b"
[ "$(remote_ok)" -gt "$r0" ]; ok $? "... counted remote again"

# b's agent gone: agent_offline once presence says so.
kill -TERM "$ag_pid"; wait_exit "$ag_pid" 30
no_agent() { [ "$(q 'SELECT count(*) FROM tm_agent_presence')" = 0 ]; }
wait_long no_agent; ok $? "the agent stopped: no row in presence"
offline() { [ "$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "ok.test:$web")" != 0x00 ]; }
wait_for offline; ok $? "no node holds the agent: the open fails (agent_offline)"

for p in a b c; do
  kill -TERM "$(eval echo "\$${p}_pid")"
  wait_exit "$(eval echo "\$${p}_pid")" 30
  is "$EXIT" 0 "$p stops cleanly"
done
done_testing
