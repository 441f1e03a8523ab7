#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Remote validation on a TunnelMesh client (issue 24 item 6, TM-P1-37):
# a real tunnel_server and tunnel_agent (t/lib/tunnel.sh), and a client
# process with two tunnel_client instances naming two agents, each under
# its own socks5 listener with auth = password and the one
# remote_validation, against t/lib/validation_endpoint.py. The endpoint
# receives the agent the stream goes through (not null), and the same
# user, password and target through the other agent is another cache
# entry (another request), while a repeat through the first is a hit.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

require_modules tunnel_server tunnel_agent tunnel_client socks5 direct \
  remote_validation auth_local store_sqlite auth_cache admin_api
[ -x "$top_builddir/tools/proxyhost-passwd" ] || {
  echo "1..0 # SKIP proxyhost-passwd not built"
  exit 0
}

USER_OK=allow-tvuser
PASS=Pw-tv-s3cret-24

tn_setup; ok $? "admin token and DNS"
start_file_server "$T/www" "hello through the agent"
ok $? "HTTP target on 127.0.0.1"
tn_server s1; ok $? "tunnel_server"
tn_creds s1; ok $? "credentials (agent $TN_AGENT)"
tn_agent a1 s1; ok $? "tunnel_agent"
tn_wait_sessions "$a1_admin" agent 1; ok $? "the agent is connected"

/usr/bin/python3 "$top_srcdir/t/lib/validation_endpoint.py" \
  --port-file "$T/ep.port" --lifetime 300 >"$T/ep.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/ep.port"; ok $? "the validation endpoint on loopback"
ep_port=$(cat "$T/ep.port")
ep_requests() {
  http_get "http://127.0.0.1:$ep_port/stats" | sed -n 2p |
    sed -n 's/^requests=\([0-9]*\) .*/\1/p'
}
ep_agents() { http_get "http://127.0.0.1:$ep_port/agents" | sed -n 2p; }

hash=$(password_hash "$PASS")
c_admin=$(free_port)
sock_a=$(free_port)
sock_b=$(free_port)
cat >"$T/c.ini" <<EOC
[proxyhost]
modules = auth_local, remote_validation, tunnel_client, tunnel_client.b, socks5, socks5.b
module_path = $top_builddir/modules
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$c_admin
[auth_local]
users = $USER_OK:$hash
[remote_validation]
endpoint = http://127.0.0.1:$ep_port/validate
[tunnel_client]
server_url = ws://127.0.0.1:$s1_port/tunnel
agent = $TN_AGENT
token_file = $T/client.token
[tunnel_client.b]
server_url = ws://127.0.0.1:$s1_port/tunnel
agent = edge-2
token_file = $T/client.token
[socks5]
listen = 127.0.0.1:$sock_a
auth = password
connector = tunnel_client
validation = remote_validation
[socks5.b]
listen = 127.0.0.1:$sock_b
auth = password
connector = tunnel_client.b
validation = remote_validation
EOC
c_pid=
tn_start c "$T/c.ini"; ok $? "the client process (two agents, one validation)"
wait_for tn_ready "$c_admin"; ok $? "the client is ready"

through() { # through SOCKS-PORT: curl to the target, the body
  "$CURL" -s -m 10 --noproxy '' \
    --proxy "socks5h://$USER_OK:$PASS@127.0.0.1:$1" \
    "http://ok.test:$FILE_SERVER_PORT/hello.txt" 2>/dev/null
}

is "$(through "$sock_a")" "hello through the agent" \
  "allowed by the endpoint, relayed by the real server and agent"
is "$(ep_agents)" "$TN_AGENT" \
  "TM-P1-37: the endpoint received the stream's agent ($TN_AGENT), not null"
is "$(ep_requests)" 1 "one request"
through "$sock_a" >/dev/null
is "$(ep_requests)" 1 "the same user, target and agent again: a cache hit"
through "$sock_b" >/dev/null
is "$(ep_requests)" 2 \
  "TM-P1-37: the same user and target through another agent: another entry, another request"
is "$(ep_agents)" "$TN_AGENT,edge-2" "... carrying that agent (edge-2)"
through "$sock_b" >/dev/null
through "$sock_a" >/dev/null
is "$(ep_requests)" 2 "each agent's entry answers its repeats"

kill -TERM "$c_pid"
wait_exit "$c_pid" 10; is "$EXIT" 0 "the client exits 0"
done_testing
