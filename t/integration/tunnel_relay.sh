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
#   - b's agent gone too: the open fails once b's presence says so;
#   - the same with mutual TLS between nodes (relay.tls.*): each node's
#     certificate names it (spiffe://tm.test/tunnelmesh/node/<id>),
#     checked against presence; a node whose certificate is from another
#     CA never gets a link, one whose certificate names another node is
#     refused (reason=identity);
#   - b2 killed (TM-FAIL-9): the relayed download fails, a local one on a2
#     (another agent) finishes whole, a2's link is gone, a new open is
#     agent_offline, and selection's once b2's lease lapsed;
#   - node-z holding the agent with a certificate naming node-b: the
#     dialing node refuses the link;
#   - the agent on node-b and node-c: node-b killed, the next open goes
#     to node-c at once (node-b marked down, not waiting for its lease);
#   - node-c stopped with SIGSTOP: the links' heartbeat ends the link and
#     the stream through it fails;
#   - the status page (issue 28, the agents panel): a lists the agent b
#     holds with node = node-b, its connection count, streams unknown
#     (null); with the agent on both, a's own row first; after it left
#     a, a lists it online on node-b and offline here with a
#     last_seen_at; proxyhostctl agent list on a says online yes, node-b
#     both times; the agent stopped, b lists it offline with a
#     last_seen_at and a no longer online anywhere;
#   - the relay keys' checks (--check-config).
# Every wait is bounded (wait_for, wait_long).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules tunnel_server tunnel_agent tunnel_client store_pg \
  auth_cache admin_api direct socks5
. "$top_srcdir/t/lib/tunnel.sh"
PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"

tn_pg_setup; ok $? "a private PostgreSQL at the current schema (TN_DSN), the admin token, dnsd.py"
start_file_server "$T/www" "hello across servers"; ok $? "file server up"
web=$FILE_SERVER_PORT

ra=$(free_port)
rb=$(free_port)
mesh() { # NODE RELAY-PORT
  printf 'node_id = %s\npresence = true\npresence.zone = z1\n' "$1"
  printf 'presence.relay_addr = 127.0.0.1:%s\npresence.lease = 3s\n' "$2"
  printf 'relay = true\nrelay.listen = 127.0.0.1:%s\nrelay.allow_plain = true\n' "$2"
}
# The status page on (issue 28): [admin] token_file, then the mesh keys
# in [tunnel_server] again.
ADMIN="[admin]
token_file = $TN_ADMIN_TOKEN
[tunnel_server]"
tn_server a "$ADMIN
$(mesh node-a "$ra")"; ok $? "server a up (presence, relay, status page)"
tn_server b "$ADMIN
$(mesh node-b "$rb")"; ok $? "server b up (presence, relay, status page)"
tn_creds a; ok $? "credentials through a (the database both share)"
tn_agent ag b; ok $? "the agent, connected to b only"
tn_wait_sessions "$ag_admin" agent 1; ok $? "the agent holds a session with b"
tn_client c a; ok $? "the client, connected to a"
wait_for tn_ready "$c_admin"; ok $? "the client is ready"

q() { pg_psql authz -c "$1"; }
agent_on_b() { [ "$(q "SELECT node_id FROM tm_agent_presence WHERE agent_id = '$TN_AGENT'")" = node-b ]; }
wait_long agent_on_b; ok $? "TM-P2-29: presence says the agent is on node-b"

# agents ADMIN-PORT: the tunnel server's agents table (issue 28), one line
# a row: agent node online connections streams last_seen_at (null: -).
agents() {
  "$CURL" -s -m 5 -H "Authorization: Bearer $(cat "$TN_ADMIN_TOKEN")" \
    "http://127.0.0.1:$1/v1/status/tunnel_server/agents/agents?key=$TN_AGENT" |
    $PY -c '
import json, sys
t = json.load(sys.stdin)["instances"][0]["panels"][0]["tables"][0]
for r in t["rows"]:
    d = dict(zip(t["columns"], r))
    print(" ".join("-" if d.get(k) in (None, "") else str(d[k]) for k in
          ("agent", "node", "online", "connections", "streams", "last_seen_at")))'
}
RFC3339='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
remote_row() { [ "$(agents "$a_admin")" = "$TN_AGENT node-b yes 1 - -" ]; }
wait_for remote_row
ok $? "TM-P2-29 issue 28: a's agents panel lists the agent b holds: node node-b, online, 1 connection, streams unknown (null, not 0) ($(agents "$a_admin"))"
# live AGENT LIST OUTPUT: the agent's ONLINE NODE LAST_SEEN.
live() { printf '%s\n' "$1" | awk -v n="$TN_AGENT" '$1 == n { print $(NF-2), $(NF-1), $NF }'; }
out=$(tn_ctl "$a_admin" agent list)
is "$(live "$out")" "yes node-b now" "proxyhostctl agent list on a: the agent online on node-b"

SUM='^tunnelmesh_stream_stage_duration_seconds_count\{component="server",stage="open",result="success",scope='
remote_ok() { tn_sum "$a_admin" "${SUM}\"remote\"\\}"; }
local_ok() { tn_sum "$a_admin" "${SUM}\"local\"\\}"; }

# The view may lag presence by a notification: the first stream is tried
# until it passes (bounded).
get_ok() { [ "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" = "hello across servers" ]; }
wait_for get_ok; ok $? "TM-P2-31 TM-PROTO-2 TM-TEST-15: curl through a's client reaches the agent on b through the relay (the remote relay carries the success)"
[ "$(remote_ok)" -ge 1 ]; ok $? "counted scope=\"remote\" on a ($(remote_ok))"
is "$(local_ok)" 0 "and no local open on a"
grep -q '"relay link up"' "$T/a.log" || grep -q 'relay link up' "$T/a.log"
ok $? "a logged its relay link to node-b"
grep -q 'relay link accepted' "$T/b.log"; ok $? "b accepted the link from node-a (a live node of presence)"
# The client's identity across the hop (issue 27): the link negotiated
# stream_principal.v1, so b's line for the relayed stream names the
# client's token id as a's does (never the secret), not principal=relay.
grep -q 'msg="relay link accepted".*with_principal=1' "$T/b.log"; ok $? "the link negotiated stream_principal.v1"
line_of() { grep 'msg="tunnel stream end"' "$T/$1.log" | grep 'code=ok' | head -1; }
like "$(line_of a)" "principal=$TN_CLIENT_TOKEN_ID " "a's line names the client's token id"
like "$(line_of b)" "principal=$TN_CLIENT_TOKEN_ID " "issue 27: b's line for the relayed stream names the same token id (carried in the relayed OPEN_STREAM)"
tr_a=$(line_of a | sed -n 's/.*trace_id=\([0-9a-f]*\).*/\1/p')
like "$(line_of b)" "trace_id=$tr_a" "... and the same trace id"
unlike "$(grep 'msg="tunnel stream end"' "$T/b.log")" "principal=relay" "no relayed line on b says principal=relay"
carried() { tn_sum "$b_admin" '^proxyhost_tunnel_server_relayed_opens_total\{principal="carried"\}'; }
[ "$(carried)" -ge 1 ]; ok $? "b counts the relayed opens that carried the principal ($(carried))"
is "$(tn_sum "$b_admin" '^proxyhost_tunnel_server_relayed_opens_total\{principal="absent"\}')" 0 "... and none without it"
unlike "$(cat "$T/a.log" "$T/b.log")" "${TN_CLIENT_BEARER#*.}" "TM-SEC-9 no token secret in either node's log"

closed=$(free_port)
r=$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "127.0.0.1:$closed" --atyp ipv4)
is "$r" 0x05 "TM-PROTO-20 TM-TEST-15 strict end to end: a refused target gives the client the agent's connection_refused (0x05) through the remote relay, not success"
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
both() { [ "$(agents "$a_admin" | cut -d' ' -f1-4 | tr '\n' ';')" = "$TN_AGENT node-a yes 1;$TN_AGENT node-b yes 1;" ]; }
wait_for both; ok $? "issue 28: with the agent on both, a lists its own connection first, then node-b's"
is "$(remote_ok)" "$r0" "TM-P2-30: none went remote"
[ "$(local_ok)" -ge 5 ]; ok $? "all five local ($(local_ok))"

# It leaves a: remote again, no error.
kill -TERM "$al_pid"; wait_exit "$al_pid" 30
body=$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")
is "$body" "hello across servers" "the agent left a: the next stream goes through b"
[ "$(remote_ok)" -gt "$r0" ]; ok $? "... counted remote again"
left_a() { agents "$a_admin" | tr '\n' ';' | grep -Eq "^$TN_AGENT node-b yes 1 - -;$TN_AGENT node-a no 0 - $RFC3339;\$"; }
wait_for left_a
ok $? "issue 28: a lists the agent online on node-b, then offline on node-a with a last_seen_at ($(agents "$a_admin" | tr '\n' ';'))"
out=$(tn_ctl "$a_admin" agent list)
is "$(live "$out")" "yes node-b now" "proxyhostctl agent list on a: online on node-b wins over the node it left"

# b's agent gone: agent_offline once presence says so.
kill -TERM "$ag_pid"; wait_exit "$ag_pid" 30
no_agent() { [ "$(q 'SELECT count(*) FROM tm_agent_presence')" = 0 ]; }
wait_long no_agent; ok $? "the agent stopped: no row in presence"
left_b() { agents "$b_admin" | grep -Eqx "$TN_AGENT node-b no 0 - $RFC3339"; }
wait_for left_b
ok $? "issue 28: b lists the agent offline with its last_seen_at ($(agents "$b_admin"))"
gone_a() { [ "$(agents "$a_admin" | grep -c ' yes ')" = 0 ]; }
wait_for gone_a; ok $? "a lists it online nowhere once presence says so"
seen=$(agents "$b_admin" | cut -d' ' -f6)
out=$(tn_ctl "$b_admin" agent list)
is "$(live "$out")" "no - $seen" "proxyhostctl agent list on b: offline, LAST_SEEN the time it left"
offline() { [ "$($PROBE reply --proxy "127.0.0.1:$c_socks" --target "ok.test:$web")" != 0x00 ]; }
wait_for offline; ok $? "no node holds the agent: the open fails (agent_offline)"

for p in a b c; do
  kill -TERM "$(eval echo "\$${p}_pid")"
  wait_exit "$(eval echo "\$${p}_pid")" 30
  is "$EXIT" 0 "$p stops cleanly"
done

# ---- mutual TLS between nodes: each node's certificate names it -----------
# (URI SAN spiffe://tm.test/tunnelmesh/node/<node_id>, checked exactly on
# both ends against the node presence names); a wrong certificate refused.
mkdir -p "$T/pki"
( cd "$T/pki" && umask 077 &&
  q1() { "$@" >/dev/null 2>&1; } &&
  ca() { q1 openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=$1" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign; } &&
  leaf() { # NAME CA NODE
    q1 openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" &&
    printf 'subjectAltName=IP:127.0.0.1,URI:spiffe://tm.test/tunnelmesh/node/%s\nextendedKeyUsage=serverAuth,clientAuth\n' \
      "$3" >"$1.cnf" &&
    q1 openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
      -CAcreateserial -out "$1.pem" -days 2 -extfile "$1.cnf" && test -s "$1.pem"; } &&
  ca ca && ca other-ca &&
  leaf node-a ca node-a && leaf node-b ca node-b &&
  leaf node-x other-ca node-x && leaf y-as-a ca node-a && leaf z-as-b ca node-b && leaf node-c ca node-c )
ok $? "certificates: node-a, node-b (the CA), node-x (another CA), node-y's naming node-a, node-z's naming node-b, node-c"
mtls() { # NODE RELAY-PORT CERT
  printf 'node_id = %s\npresence = true\npresence.zone = z1\n' "$1"
  printf 'presence.relay_addr = 127.0.0.1:%s\npresence.lease = 3s\n' "$2"
  printf 'relay = true\nrelay.listen = 127.0.0.1:%s\nrelay.trust_domain = tm.test\n' "$2"
  printf 'relay.tls.cert = %s/pki/%s.pem\nrelay.tls.key = %s/pki/%s.key\nrelay.tls.ca = %s/pki/ca.pem\n' \
    "$T" "$3" "$T" "$3" "$T"
  # a heartbeat that finds a stopped peer in seconds (the relay links'
  # sessions use the server's)
  printf 'ping_interval = 500ms\nping_timeout = 1500ms\n'
}
tn_server a2 "$(mtls node-a "$(free_port)" node-a)"; ok $? "server a2 (node-a) with mutual TLS between nodes"
tn_server b2 "$(mtls node-b "$(free_port)" node-b)"; ok $? "server b2 (node-b) with mutual TLS between nodes"
grep -q 'msg="relay listening".*scheme=wss' "$T/a2.log"; ok $? "its relay listener speaks wss"
tn_agent ag2 b2; tn_wait_sessions "$ag2_admin" agent 1; ok $? "the agent, on b2 only"
tn_client c2 a2; wait_for tn_ready "$c2_admin"; ok $? "a client on a2"
get2() { [ "$(tn_get "$c2_socks" "http://ok.test:$web/hello.txt")" = "hello across servers" ]; }
wait_for get2; ok $? "TM-PROTO-2: a stream through a2 reaches the agent on b2 over the mTLS relay"
grep -q 'msg="relay link accepted".*peer_node=node-a' "$T/b2.log"; ok $? "b2 accepted node-a (its certificate names node-a, a live node)"
r=$($PROBE reply --proxy "127.0.0.1:$c2_socks" --target "127.0.0.1:$closed" --atyp ipv4)
is "$r" 0x05 "TM-PROTO-20 strict through the mTLS relay: a refused target is 0x05"

# intruder NAME NODE CERT LOG-FILE PATTERN: a server NAME (NODE, CERT)
# with a client; its streams fail, and LOG-FILE says why (PATTERN).
intruder() {
  tn_server "$1" "$(mtls "$2" "$(free_port)" "$3")" || return 1
  tn_client "c$1" "$1" && wait_for tn_ready "$(eval echo "\$c${1}_admin")" || return 1
  _socks=$(eval echo "\$c${1}_socks") _log=$4 _pat=$5
  wait_for intruder_failed
}
intruder_failed() {
  [ "$($PROBE reply --proxy "127.0.0.1:$_socks" --target "ok.test:$web")" != 0x00 ] &&
    grep -q "$_pat" "$_log"
}
# node-x: a certificate of another CA: b2's TLS handshake refuses it.
intruder x node-x node-x "$T/x.log" 'relay link failed to connect.*peer_node=node-b'
ok $? "node-x (its certificate from another CA) dials b2, the link never comes up: its stream fails"
grep -q 'peer_node=node-x' "$T/b2.log"; is $? 1 "b2 accepted nothing from node-x"
# node-y: a certificate of the CA that names node-a: the link names node-y.
intruder y node-y y-as-a "$T/b2.log" 'msg="relay link refused".*reason=identity'
ok $? "b2 refuses node-y's link: its certificate names node-a (reason=identity)"
get2; ok $? "a2's streams still go through"

# ---- b2 killed (TM-FAIL-9): only the relayed streams fail --------------------
# A second agent, edge-2, connected to a2 (its streams stay on a2), and a
# client for it; a slow download through each client at once.
BIG=16777216
head -c $BIG /dev/zero >"$T/www/big.bin"
tn_ctl "$a2_admin" agent create edge-2 --owner alice >/dev/null &&
  out=$(tn_ctl "$a2_admin" token create --user alice --agent edge-2) &&
  (umask 077 && tn_bearer "$out" >"$T/agent2.token") &&
  tn_ctl "$a2_admin" policy create --agent edge-2 --user alice --host '*' \
    --ports 1-65535 >/dev/null
ok $? "agent edge-2: its token and policy"
TN_AGENT=edge-2 TN_AGENT_TOKEN=$T/agent2.token
tn_agent al3 a2
tn_wait_sessions "$al3_admin" agent 1; ok $? "edge-2 connected to a2"
tn_client cl3 a2
wait_for tn_ready "$cl3_admin"; ok $? "a client for edge-2 on a2"
TN_AGENT=edge-1 TN_AGENT_TOKEN=
slow() { # NAME SOCKS: big.bin at 2 MB/s in the background (8 s); slow_pid
  "$CURL" -s -m 60 --limit-rate 2M --proxy "socks5h://127.0.0.1:$2" \
    -o "$T/$1.out" -w '%{size_download}\n' "http://ok.test:$web/big.bin" \
    >"$T/$1.size" 2>/dev/null &
  slow_pid=$!
}
started() { [ -s "$T/$1.out" ]; }
slow remote "$c2_socks"; pr=$slow_pid
slow local "$cl3_socks"; pl=$slow_pid
wait_for started remote && wait_for started local
ok $? "a download through the relay (edge-1 on b2) and one local to a2 (edge-2) run"
kill -9 "$b2_pid"
wait "$pr"; rr=$?
[ "$rr" -ne 0 ]; ok $? "TM-FAIL-9: b2 killed: the relayed download fails (curl $rr)"
wait "$pl"; rl=$?
is "$rl:$(cat "$T/local.size")" "0:$BIG" "... a2's local download finishes whole"
is "$(tn_get "$cl3_socks" "http://ok.test:$web/hello.txt")" "hello across servers" \
  "... and a2's local streams go on"
links_open() { tn_sum "$a2_admin" '^proxyhost_tunnel_server_relay_links\{state="open"\}'; }
no_link() { [ "$(links_open)" = 0 ]; }
wait_for no_link; ok $? "a2 has no open relay link left"
r=$($PROBE reply --proxy "127.0.0.1:$c2_socks" --target "ok.test:$web")
is "$r" 0x04 "a new open for edge-1 (only on b2): agent_offline (0x04)"
lapsed() {
  $PROBE reply --proxy "127.0.0.1:$c2_socks" --target "ok.test:$web" >/dev/null
  grep 'msg="tunnel stream end"' "$T/a2.log" | tail -1 | grep -q 'stage=selection code=agent_offline'
}
wait_long lapsed; ok $? "once b2's lease lapsed no node holds edge-1: selection/agent_offline, no dial"

# The dialing end checks too: node-z holds edge-1 but its certificate (of
# the CA) names node-b: a2 never uses the link.
tn_server z "$(mtls node-z "$(free_port)" z-as-b)"; ok $? "server z (node-z), its certificate naming node-b"
tn_agent ag4 z; tn_wait_sessions "$ag4_admin" agent 1; ok $? "edge-1 connected to z"
z_refused() {
  [ "$($PROBE reply --proxy "127.0.0.1:$c2_socks" --target "ok.test:$web")" != 0x00 ] &&
    grep -q "relay link refused: the peer's certificate is not the node's.*peer_node=node-z" "$T/a2.log"
}
wait_for z_refused; ok $? "a2 dials node-z, finds a certificate naming node-b, refuses the link: the open fails"
grep -q 'relay link up.*peer_node=node-z' "$T/a2.log"; is $? 1 "... and never used it"

# Failover (TM-FAIL-9): the agent on node-b (again) and node-c, both in
# a2's zone; node-b first (the view's order). node-b killed: the next
# open goes to node-c at once, without waiting for node-b's lease.
kill -TERM "$z_pid"; wait_exit "$z_pid" 30
tn_server b3 "$(mtls node-b "$(free_port)" node-b)"; ok $? "server b3 (node-b again)"
tn_server c3 "$(mtls node-c "$(free_port)" node-c)"; ok $? "server c3 (node-c)"
tn_agent ag5 b3; tn_agent ag6 c3
tn_wait_sessions "$ag5_admin" agent 1 && tn_wait_sessions "$ag6_admin" agent 1
ok $? "edge-1 connected to b3 and to c3"
via_b3() { get2 && grep -q 'msg="relay link accepted".*peer_node=node-a' "$T/b3.log"; }
wait_long via_b3; ok $? "a2's streams for edge-1 go to node-b (first in the view)"
grep -q 'peer_node=node-a' "$T/c3.log"; is $? 1 "... none to node-c yet"
kill -9 "$b3_pid"
b_link_gone() { grep -q 'msg="relay link closed".*peer_node=node-b' "$T/a2.log"; }
wait_for b_link_gone; ok $? "a2's link to node-b ends"
get2; ok $? "TM-FAIL-9: the next open goes to node-c at once (node-b marked down)"
grep -q 'msg="relay link accepted".*peer_node=node-a' "$T/c3.log"; ok $? "... through a link node-c accepted"
rtt_seen() { [ "$(tn_sum "$a2_admin" '^proxyhost_tunnel_server_relay_rtt_seconds_count')" -ge 1 ]; }
wait_long rtt_seen; ok $? "the open link's heartbeat round trip is sampled (proxyhost_tunnel_server_relay_rtt_seconds, every 5 s)"
# The dashboard's relay panels plot series that moved (issue 27
# "Observability"; the single-server dashboard test skips them).
tn_metrics "$a2_admin" >"$T/a2.prom"
"${PYTHON3:-python3}" "$top_srcdir/t/lib/dashboard_check.py" --moved --vars job,instance --panels '^(Relay:|Local / remote)' \
  "$top_srcdir/deploy/grafana/dashboards/tunnelmesh.json" "$T/a2.prom" >"$T/dash.out" 2>&1
ok $? "TM-OBS-15 the relay panels (remote TTFB, links and RTT, the local/remote ratio) move on the ingress node"
grep '^problem' "$T/dash.out" | sed 's/^/# /'

# node-c stopped (SIGSTOP): its socket stays open, the heartbeat finds it.
slow stopped "$c2_socks"; ps=$slow_pid
wait_for started stopped; ok $? "a download through node-c runs"
kill -STOP "$c3_pid"
c_link_gone() { grep -q 'msg="relay link closed".*peer_node=node-c' "$T/a2.log"; }
wait_long c_link_gone; ok $? "node-c stopped: a2's heartbeat ends the link (ping_timeout 1.5 s)"
wait "$ps"; rs=$?
[ "$rs" -ne 0 ]; ok $? "... and the download through it fails (curl $rs)"
is "$(tn_get "$cl3_socks" "http://ok.test:$web/hello.txt")" "hello across servers" \
  "a2's local streams go on"
kill -CONT "$c3_pid"

# The keys' checks (--check-config).
relay_conf() { # EXTRA-LINES: a server section with them, checked
  { sed -n '1,/^\[tunnel_server\]/p' "$T/a.ini"
    printf 'listen = 127.0.0.1:%s\nstore = store_pg\naccess = auth_cache\n%s\n' "$(free_port)" "$1"
  } >"$T/check.ini"
  "$PROXYHOST" --check-config -c "$T/check.ini" 2>&1
}
# relay_refused ADDR EXTRA PATTERN WHAT: relay = true on ADDR with EXTRA
# (presence on), refused by --check-config saying PATTERN.
relay_refused() {
  like "$(relay_conf "node_id = n1
presence = true
presence.relay_addr = $1
relay = true
relay.listen = $1
$2")" "$3" "$4"
}
like "$(relay_conf 'node_id = n1
relay = true
relay.listen = 127.0.0.1:1')" "needs presence = true" \
  "relay = true without presence: --check-config fails saying why"
relay_refused 127.0.0.1:1 "" "relay.tls.cert" \
  "neither relay.tls.* nor relay.allow_plain: refused, naming relay.tls.cert"
relay_refused 127.0.0.1:1 "relay.tls.cert = $T/pki/node-a.pem" "go together" \
  "relay.tls.cert without its key and CA: refused"
relay_refused 10.1.1.1:1 "relay.allow_plain = true" "loopback" \
  "a plain relay off loopback: refused"
done_testing
