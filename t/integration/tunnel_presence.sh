#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A tunnel server's presence on the database the servers share (issue 27,
# the first brick; TM-P2-29): a proxyhost with store_pg and tunnel_server
# (presence = true, node_id, presence.zone, presence.relay_addr,
# presence.lease 3s) registers its node in tm_nodes and renews its lease
# (the expiry moves on); an agent connecting appears in
# tm_agent_presence with its connection count, and is gone once it
# stops; a write that failed (a trigger refusing it) is made good after the
# next heartbeat, a failed "agent left" too (one sync statement deletes the
# rows of agents no longer connected); a clean stop deletes the node's row
# and its agents' at once (within the drain); a crash (SIGKILL) leaves the
# row, whose lease lapses in the database's clock. presence = true without node_id is refused by
# --check-config, and with store_sqlite (no tm.presence) the start fails
# saying why. Every wait is bounded (wait_for, wait_long).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules tunnel_server tunnel_agent store_pg store_sqlite \
  auth_cache admin_api direct
. "$top_srcdir/t/lib/tunnel.sh"

tn_pg_setup; ok $? "a private PostgreSQL at the current schema (TN_DSN), the admin token, dnsd.py"
q() { pg_psql authz -c "$1"; }
now_ms="(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

PRESENCE='node_id = node-1
presence = true
presence.zone = z1
presence.relay_addr = 127.0.0.1:7443
presence.lease = 3s'
tn_server s1 "$PRESENCE"; ok $? "server s1 up with presence = true"
tn_creds s1; ok $? "a user, an agent, tokens and a policy"

node_row() { [ "$(q 'SELECT node_id, zone, relay_addr FROM tm_nodes')" = "node-1|z1|127.0.0.1:7443" ]; }
wait_for node_row; ok $? "TM-P2-29: s1 registered node-1 with its zone and relay address"
left=$(q "SELECT lease_expires_ms - $now_ms FROM tm_nodes")
[ "$left" -gt 0 ] && [ "$left" -le 3000 ]; ok $? "its lease ends within 3 s of the database's now ($left ms left)"
exp1=$(q 'SELECT lease_expires_ms FROM tm_nodes')
renewed() { [ "$(q 'SELECT lease_expires_ms FROM tm_nodes')" -gt "$exp1" ]; }
wait_long renewed; ok $? "the heartbeat renews it (every third of the lease)"

tn_agent a s1; ok $? "agent a up, connected to s1"
agent_row() { [ "$(q 'SELECT agent_id, node_id, connections FROM tm_agent_presence')" = "$TN_AGENT|node-1|1" ]; }
wait_long agent_row; ok $? "TM-P2-29: the agent's connection is in presence on node-1, one connection"
kill -TERM "$a_pid"; wait_exit "$a_pid" 30
no_agent() { [ "$(q 'SELECT count(*) FROM tm_agent_presence')" = 0 ]; }
wait_long no_agent; ok $? "the agent stopped: its row is gone"
node_row; ok $? "node-1 stays"

# An agent write that fails (a trigger refuses it) is made good after the
# next good heartbeat: every agent is written again.
q "CREATE FUNCTION no_agents() RETURNS trigger LANGUAGE plpgsql AS
  \$\$ BEGIN RAISE EXCEPTION 'injected failure'; END \$\$" >/dev/null
q 'CREATE TRIGGER no_agents BEFORE INSERT OR UPDATE ON tm_agent_presence FOR EACH ROW EXECUTE FUNCTION no_agents()' >/dev/null
ok $? "a trigger refuses every agent write"
tn_agent b s1; tn_wait_sessions "$b_admin" agent 1
ok $? "agent b connected to s1 meanwhile"
failed_write() { grep -q 'presence: agent write failed' "$T/s1.log"; }
wait_long failed_write; ok $? "its write failed, logged (presence: agent write failed)"
no_agent; ok $? "and no row is there"
q 'DROP TRIGGER no_agents ON tm_agent_presence' >/dev/null
wait_long agent_row; ok $? "the trigger dropped: agent b is in presence (written again after a heartbeat)"
kill -TERM "$b_pid"; wait_exit "$b_pid" 30
wait_long no_agent; ok $? "agent b stopped: its row is gone"

# A failed "agent left" (a trigger refuses deletes) is made good after the
# next good heartbeat: one sync names the agents still connected and
# deletes the node's other rows (otherwise the row stays for as long as
# the node renews its lease).
tn_agent c s1; wait_long agent_row; ok $? "agent c connected: its row is there"
q "CREATE TRIGGER no_agents BEFORE DELETE ON tm_agent_presence FOR EACH ROW EXECUTE FUNCTION no_agents()" >/dev/null
ok $? "a trigger refuses every delete of an agent row"
nfail=$(grep -c 'presence: agent write failed' "$T/s1.log")
kill -TERM "$c_pid"; wait_exit "$c_pid" 30
more_fails() { [ "$(grep -c 'presence: agent write failed' "$T/s1.log")" -gt "$nfail" ]; }
wait_long more_fails; ok $? "agent c stopped: its 'left' failed, logged"
agent_row; ok $? "its row is still there"
q 'DROP TRIGGER no_agents ON tm_agent_presence' >/dev/null
wait_long no_agent; ok $? "the trigger dropped: the row of agent c (no longer connected) is gone after a heartbeat"
node_row; ok $? "node-1 stays"

# A clean stop: the node leaves at once (its row and its agents' deleted
# in one statement within the drain, so other views drop it by NOTIFY),
# not after its lease.
tn_agent d s1; wait_long agent_row; ok $? "agent d connected to s1"
kill -TERM "$s1_pid"; wait_exit "$s1_pid" 30
is "$EXIT" 0 "s1 stops cleanly"
is "$(q 'SELECT count(*) FROM tm_nodes')|$(q 'SELECT count(*) FROM tm_agent_presence')" "0|0" \
  "a clean stop deletes node-1's row and its agent's when s1 exits (its lease had seconds left)"
like "$(cat "$T/s1.log")" "presence: this node left" "logged (info)"
kill -TERM "$d_pid"; wait_exit "$d_pid" 30

# A crash: the row stays, its lease lapses.
tn_server s2 "$PRESENCE"; ok $? "node-1 again (s2)"
wait_for node_row; ok $? "registered"
kill -KILL "$s2_pid"; wait_exit "$s2_pid" 30
node_row; ok $? "s2 killed (SIGKILL): its row stays"
lapsed() { [ "$(q "SELECT count(*) FROM tm_nodes WHERE lease_expires_ms > $now_ms")" = 0 ]; }
wait_long lapsed; ok $? "TM-P2-29: no heartbeat: node-1's lease lapses in the database's clock"

# The configuration's checks.
printf '[proxyhost]\nmodules = store_sqlite, auth_cache, tunnel_server\nmodule_path = %s\n[store_sqlite]\npath = %s\nmigrate = auto\n[auth_cache]\nstore = store_sqlite\n[tunnel_server]\nlisten = 127.0.0.1:%s\nstore = store_sqlite\naccess = auth_cache\npresence = true\n' \
  "$top_builddir/modules" "$T/one.db" "$(free_port)" >"$T/nonode.ini"
out=$("$PROXYHOST" --check-config -c "$T/nonode.ini" 2>&1)
[ $? -ne 0 ]; ok $? "presence = true without node_id: --check-config fails"
like "$out" "node_id" "naming node_id"
out=$("$PROXYHOST" --check-config -c "$T/nonode.ini" --set 'tunnel_server.node_id=a<b>/c' 2>&1)
[ $? -ne 0 ]; ok $? "a node_id with markup or a slash: --check-config fails"
like "$out" "node_id: only letters, digits" "... naming the key and the characters it takes"
printf 'node_id = one\n' >>"$T/nonode.ini"
"$PROXYHOST" -c "$T/nonode.ini" >"$T/sqlite.log" 2>&1 & p=$!
wait_exit "$p" 30
[ "$EXIT" != 0 ]; ok $? "with store_sqlite (one node, no tm.presence) the start fails"
like "$(cat "$T/sqlite.log")" "needs a store providing tm.presence" "saying why"
done_testing
