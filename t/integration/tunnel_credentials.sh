#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Sessions bound to their credentials, and connections per tenant (issue
# 22 items 1 and 2), with real processes: a tunnel server (store_sqlite,
# auth_cache, admin_api), a real agent and a real client, the
# credentials changed through the server's own admin API, and
# t/lib/tm_peer.py as the hostile client that holds connections.
#
#   - the agent's token revoked, rotated, its agent deleted: the agent's
#     session is closed with 4403 at once (within the credential check),
#     audited and counted, and with agent.max_connections = 1 the real
#     agent's new token is accepted (its slot was freed);
#   - the client's token revoked, its user disabled, its expiry passed:
#     the client's session is closed with 4403;
#   - client.max_connections_per_token and _per_user (a user of its
#     own): a connection beyond them is closed with 1008, counted and
#     logged; another tenant still connects.
. "$top_srcdir/t/lib/testlib.sh"
require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api direct socks5
. "$top_srcdir/t/lib/tunnel.sh"

tn_setup; ok $? "admin token and dnsd.py"
start_file_server "$T/www" "through the tunnel"; ok $? "file server up"
web=$FILE_SERVER_PORT
tn_server s '[tunnel_server]
agent.max_connections = 1
client.max_connections_per_token = 2
client.max_connections_per_user = 3'
ok $? "server up (agent.max_connections = 1, 2 connections a token, 3 a user)"
tn_creds s; ok $? "credentials"
tn_agent a s; tn_client c s
tn_wait_sessions "$a_admin" agent 1 && wait_for tn_ready "$c_admin"
ok $? "agent and client connected"
is "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" "through the tunnel" \
  "a stream works"

# closed_with LOG CODE N: the log has at least N closes by the server with
# that code.
closes() { grep -c "tunnel connection closed by the server.* close_code=$2" "$1"; }
ended() { tn_sum "$s_admin" "^proxyhost_tunnel_server_credential_ends_total\\{role=\"$1\",reason=\"$2\""; }
agent_id=${TN_AGENT_BEARER%%.*}

# ---- the agent ------------------------------------------------------------
tn_ctl "$s_admin" token revoke "$agent_id" >/dev/null; ok $? "the agent token revoked"
wait_cond '[ "$(closes "$T/a.log" 4403)" -ge 1 ]'
ok $? "item 1: the agent's session is closed by the server with 4403"
like_re "$(cat "$T/s.log")" 'tunnel session ended: its credentials are no longer valid.*role=agent.*reason=denied' \
  "audited: one warning line with the role and the reason"
is "$(ended agent denied)" 1 "counted credential_ends{role=agent,reason=denied}"
wait_cond '[ "$(tn_sessions "$s_admin" server)" -eq 1 ]'
ok $? "its session is gone at the server (only the client's is left)"
r=$(${PYTHON3:-python3} "$top_srcdir/t/lib/socks5_probe.py" reply --proxy "127.0.0.1:$c_socks" --target "ok.test:$web")
is "$r" 0x04 "a stream for that agent now finds it offline (host unreachable)"

out=$(tn_ctl "$s_admin" token create --user alice --agent "$TN_AGENT") &&
  b=$(tn_bearer "$out") && (umask 077 && printf '%s\n' "$b" >"$T/agent.token")
ok $? "a new agent token in the agent's token file"
agent_id=${b%%.*}
wait_cond '[ "$(tn_sessions "$a_admin" agent)" -ge 1 ]'
ok $? "the real agent reconnects with it: its slot (agent.max_connections = 1) was freed"
unlike "$(cat "$T/s.log")" "limit=agent.max_connections" \
  "no connection-limit refusal on the way"
is "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" "through the tunnel" \
  "streams work again"

n=$(closes "$T/a.log" 4403)
out=$(tn_ctl "$s_admin" token rotate "$agent_id") && b=$(tn_bearer "$out")
ok $? "the agent token rotated"
wait_cond '[ "$(closes "$T/a.log" 4403)" -gt '"$n"' ]'
ok $? "item 1: the session opened with the old secret is closed with 4403"
(umask 077 && printf '%s\n' "$b" >"$T/agent.token")
wait_cond '[ "$(tn_sessions "$a_admin" agent)" -ge 1 ]'
ok $? "and the agent is back with the rotated secret"

n=$(closes "$T/a.log" 4403)
tn_ctl "$s_admin" agent delete "$TN_AGENT" >/dev/null; ok $? "the agent deleted"
wait_cond '[ "$(closes "$T/a.log" 4403)" -gt '"$n"' ]'
ok $? "item 1: its session is closed with 4403"
tn_ctl "$s_admin" agent create "$TN_AGENT" --owner alice >/dev/null &&
  out=$(tn_ctl "$s_admin" token create --user alice --agent "$TN_AGENT") &&
  b=$(tn_bearer "$out") && (umask 077 && printf '%s\n' "$b" >"$T/agent.token") &&
  tn_ctl "$s_admin" policy create --agent "$TN_AGENT" --user alice --host '*' \
    --ports 1-65535 >/dev/null
ok $? "re-created with a new token and policy"
wait_cond '[ "$(tn_sessions "$a_admin" agent)" -ge 1 ]'
ok $? "the re-created agent connects (one slot, freed)"
tn_get_ok() { [ "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" = "through the tunnel" ]; }
wait_for tn_get_ok; ok $? "streams work again"

# ---- the client -------------------------------------------------------------
tn_ctl "$s_admin" token revoke "$TN_CLIENT_TOKEN_ID" >/dev/null
ok $? "the client token revoked"
wait_cond '[ "$(closes "$T/c.log" 4403)" -ge 1 ]'
ok $? "item 1: the client's session is closed with 4403"
is "$(ended client denied)" 1 "counted credential_ends{role=client,reason=denied}"

out=$(tn_ctl "$s_admin" token create --user alice) && b=$(tn_bearer "$out") &&
  (umask 077 && printf '%s\n' "$b" >"$T/client.token")
ok $? "a new client token"
wait_for tn_get_ok; ok $? "the client reconnects with it and streams work"
n=$(closes "$T/c.log" 4403)
tn_ctl "$s_admin" user disable alice >/dev/null; ok $? "user alice disabled"
wait_cond '[ "$(closes "$T/c.log" 4403)" -gt '"$n"' ]'
ok $? "item 1: the session of a disabled user's token is closed with 4403"
tn_ctl "$s_admin" user enable alice >/dev/null; ok $? "user alice enabled again"

old=$(sed -n 's/\..*//p' "$T/client.token")
exp=$(($(date +%s) + 3))
out=$(tn_ctl "$s_admin" token create --user alice --expires-at "$exp") &&
  b=$(tn_bearer "$out") && (umask 077 && printf '%s\n' "$b" >"$T/client.token")
ok $? "a client token that expires in 3 s"
tn_ctl "$s_admin" token revoke "$old" >/dev/null
ok $? "the one the client holds revoked, so it reconnects with the new one"
wait_cond 'grep -q "tunnel connection authenticated.*principal=${b%%.*}" "$T/s.log"'
ok $? "the client connects with the token that expires"
wait_cond '[ "$(ended client expired)" -ge 1 ]'
ok $? "item 1: at its expiry the session is closed (counted reason=expired), with no revision step"
like_re "$(cat "$T/s.log")" "tunnel session ended: its credentials are no longer valid.*principal=${b%%.*} role=client.*reason=expired" \
  "audited with the token id and reason=expired"

# ---- connections per token and per user (item 2) ----------------------------
# A user of its own, eve, so the real client's connections do not count.
tn_ctl "$s_admin" user create eve >/dev/null &&
  out=$(tn_ctl "$s_admin" token create --user eve) && tn_bearer "$out" >"$T/eve1.token" &&
  out=$(tn_ctl "$s_admin" token create --user eve) && tn_bearer "$out" >"$T/eve2.token"
ok $? "user eve with two stream tokens"
peer_hold() { # NAME TOKEN-FILE: a client connection held open
  tm_peer --as client --url "ws://127.0.0.1:$s_port/tunnel" \
    --token-file "$2" --script '[{"op":"expect_close","timeout_ms":60000}]' \
    --lifetime 60 >"$T/$1.out" 2>&1 &
  PIDS="$PIDS $!"
}
handshakes() { cat "$T"/h?.out 2>/dev/null | grep -c '"handshake"'; }
peer_hold h1 "$T/eve1.token"
peer_hold h2 "$T/eve1.token"
wait_cond '[ "$(handshakes)" -ge 2 ]' && sleep 0.3
peer_hold h3 "$T/eve1.token"
wait_cond 'grep -q ws_close "$T/h3.out"'
like "$(cat "$T/h3.out")" '"code": 1008' \
  "item 2: a third connection of one token is closed with 1008"
! grep -q ws_close "$T/h1.out" "$T/h2.out"; ok $? "the token's first two stay"
like_re "$(cat "$T/s.log")" 'connection limit.*limit=client.max_connections_per_token' \
  "logged with the limit's key"
is "$(tn_sum "$s_admin" '^proxyhost_tunnel_server_connections_refused_total\{reason="token_limit"')" 1 \
  "counted connections_refused{reason=token_limit}"
peer_hold h4 "$T/eve2.token"
wait_cond '[ "$(handshakes)" -ge 4 ]' && sleep 0.3
! grep -q ws_close "$T/h4.out"; ok $? "eve's second token holds her third connection"
peer_hold h5 "$T/eve2.token"
wait_cond 'grep -q ws_close "$T/h5.out"'
like "$(cat "$T/h5.out")" '"code": 1008' \
  "item 2: eve's fourth connection (another token) is closed with 1008"
is "$(tn_sum "$s_admin" '^proxyhost_tunnel_server_connections_refused_total\{reason="user_limit"')" 1 \
  "counted connections_refused{reason=user_limit}"
tn_ctl "$s_admin" user create bob >/dev/null &&
  out=$(tn_ctl "$s_admin" token create --user bob) && tn_bearer "$out" >"$T/bob.token"
ok $? "another tenant, bob"
tm_peer --as client --url "ws://127.0.0.1:$s_port/tunnel" --token-file "$T/bob.token" \
  --script '[{"op":"open","host":"ok.test","port":'"$web"',"agent":"'"$TN_AGENT"'"},
             {"op":"expect_result","sid":1,"accepted":false,"code":"forbidden"}]' \
  >"$T/bob.out" 2>&1
ok $? "bob still connects while eve is at her limits (his open is judged by policy: forbidden)"
unlike "$(cat "$T/s.log" "$T/a.log" "$T/c.log")" "${TN_CLIENT_BEARER#*.}" \
  "TM-SEC-9 no token secret in any log"

done_testing
