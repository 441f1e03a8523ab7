#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 22 item 8: a RESET says what happened, on every hop, and is never
# held behind data. A real tunnel_server (and a real tunnel_agent and
# tunnel_client where that hop is the subject) with t/lib/tm_peer.py as
# the other peers:
#  - an agent's RESET reaches the client with the agent's code (not 0);
#  - also while the client's window is closed (the server's relay has
#    stopped reading the agent's stream): at once, not at the idle timeout;
#  - the real agent tells a target reset mid-stream as connection_refused
#    and its idle timeout as timeout, the server its own as timeout to
#    both sides;
#  - the real client's own open timeout is RESET timeout, which the
#    server passes on to the agent's open; the real client logs the code
#    of the RESET that ended a stream.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"
require_modules store_sqlite auth_cache admin_api tunnel_server \
  tunnel_agent tunnel_client direct socks5

tn_setup; ok $? "admin token and DNS"
tn_server s1; ok $? "tunnel_server runs"
tn_creds s1; ok $? "alice, agent edge-1, a client token, a policy"
# More agents, each with its own token and policy.
for a in edge-reset edge-full edge-never; do
  tn_ctl "$s1_admin" agent create "$a" --owner alice >/dev/null
  tn_bearer "$(tn_ctl "$s1_admin" token create --user alice --agent "$a")" \
    >"$T/$a.token"
  tn_ctl "$s1_admin" policy create --agent "$a" --user alice --host '*' \
    --ports 1-65535 >/dev/null
done
[ -s "$T/edge-never.token" ]; ok $? "agents edge-reset, edge-full and edge-never"

# peer_agent NAME ARGS...: a tm_peer agent; its events in $T/NAME.ev.
peer_agent() {
  name=$1
  shift
  tm_peer --as agent --url "ws://127.0.0.1:$s1_port/tunnel" \
    --token-file "$T/$name.token" --agent-id "$name" --stay --lifetime 120 \
    "$@" >"$T/$name.ev" 2>&1 &
  PIDS="$PIDS $!"
}
# client NAME SCRIPT [ARGS...]: a tm_peer client of s1 (of the server on
# $peer_port when set); exit status in RC.
client() {
  name=$1 script=$2
  shift 2
  tn_peer_run "$name" --as client --url "ws://127.0.0.1:${peer_port:-$s1_port}/tunnel" \
    --token-file "$T/client.token" --timeout 10 --lifetime 60 "$@" \
    --script "$script"
}
peer_agent edge-reset --serve reset:0:host_unreachable
peer_agent edge-full --serve reset:200000:connection_refused
peer_agent edge-never --answer never
tn_wait_sessions "$s1_admin" server 3; ok $? "three peer agents connected"

client passed '[
 {"op":"open","sid":1,"host":"a.ok.test","port":80,"agent":"edge-reset"},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"expect_reset","sid":1,"code":"host_unreachable"}]'
is "$RC" 0 "the agent's RESET reaches the client with its code (host_unreachable), not 0"

# The client's window: 16 KiB, never reopened. The agent's 200000 bytes
# fit in the server's buffers and window, so its RESET leaves at once.
client window '[
 {"op":"open","sid":1,"host":"a.ok.test","port":80,"agent":"edge-full"},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"expect_data","sid":1,"size":16384},
 {"op":"expect_reset","sid":1,"code":"connection_refused"}]' \
  --window 16384 --no-window-update
is "$RC" 0 "with the client's window closed the RESET still arrives, with the agent's code"
like "$(cat "$T/edge-full.ev")" '"ev": "reset_sent"' "... the agent had sent it"
unlike "$(cat "$T/window.ev")" '"ev": "violation"' "... and the client saw no window overrun"
like "$(cat "$T/s1.log")" 'code=connection_refused end=error' \
  "the server's stream line names the agent's code"

# ---- the real client: its own open timeout is RESET timeout -----------
TN_AGENT=edge-never tn_client c1 s1 "[tunnel_client]
stream.open_timeout = 300ms"
ok $? "a tunnel_client for edge-never with stream.open_timeout = 300ms"
wait_for tn_ready "$c1_admin"; ok $? "... ready"
TN_CURL_MAX=5 tn_get "$c1_socks" "http://ok.test:80/" >/dev/null 2>&1
reset_timeout() { grep '"ev": "reset"' "$T/edge-never.ev" | grep -q '"code": "timeout"'; }
wait_for reset_timeout
ok $? "the client's open timeout reaches the agent as RESET timeout (client, then server)"
unlike "$(grep '"ev": "reset"' "$T/edge-never.ev")" '"code": "ok"' "... never as code 0"
TN_AGENT=edge-reset tn_client c2 s1
ok $? "a tunnel_client for edge-reset"
wait_for tn_ready "$c2_admin"; ok $? "... ready"
TN_CURL_MAX=5 tn_get "$c2_socks" "http://ok.test:80/" >/dev/null 2>&1
client_line() { grep -q 'msg="stream end".*code=host_unreachable.*end=reset' "$T/c2.log"; }
wait_for client_line
ok $? "the client's stream line names the code of the RESET that ended it"

# ---- the real agent: a target failing mid-stream ----------------------
python3 "$top_srcdir/t/lib/bad_upstream.py" reset_late --port-file "$T/rst.port" \
  --lifetime 120 &
PIDS="$PIDS $!"
python3 "$top_srcdir/t/lib/bad_upstream.py" hold --port-file "$T/hold.port" \
  --lifetime 120 &
PIDS="$PIDS $!"
wait_file "$T/rst.port" && wait_file "$T/hold.port"; ok $? "a target that resets, one that holds"
tn_agent a1 s1 "[tunnel_agent]
streams.idle_timeout = 1s"
ok $? "a tunnel_agent (edge-1) with streams.idle_timeout = 1s"
tn_wait_sessions "$a1_admin" agent 1; ok $? "... connected"
client target_reset '[
 {"op":"open","sid":1,"host":"ok.test","port":'"$(cat "$T/rst.port")"',"agent":"edge-1"},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"send","sid":1,"data":"CONNECT t:1 HTTP/1.1\r\n\r\n"},
 {"op":"expect_data","sid":1,"contains":"200 Connection established"},
 {"op":"send","sid":1,"data":"GET / HTTP/1.1\r\n\r\n"},
 {"op":"expect_reset","sid":1,"code":"connection_refused"}]'
is "$RC" 0 "a target's reset mid-stream reaches the client as connection_refused"
client target_idle '[
 {"op":"open","sid":1,"host":"ok.test","port":'"$(cat "$T/hold.port")"',"agent":"edge-1"},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"send","sid":1,"data":"CONNECT t:1 HTTP/1.1\r\n\r\n"},
 {"op":"expect_data","sid":1,"contains":"200 Connection established"},
 {"op":"expect_reset","sid":1,"code":"timeout"}]'
is "$RC" 0 "the agent's idle timeout reaches the client as timeout"
like "$(cat "$T/a1.log")" 'code=connection_refused end=error' "the agent's stream line names the code"
like "$(cat "$T/a1.log")" 'code=timeout end=idle_timeout' "... and the idle one"

# ---- the server's own idle timeout: RESET timeout to both sides --------
# (last: a second server with its own store; tn_creds rewrites the token
# files the processes above read)
TN_DB=$T/s2.db tn_server s2 "[tunnel_server]
stream.idle_timeout = 1s"
ok $? "a second tunnel_server with stream.idle_timeout = 1s"
tn_creds s2; ok $? "... and its credentials"
tm_peer --as agent --url "ws://127.0.0.1:$s2_port/tunnel" \
  --token-file "$T/agent.token" --agent-id edge-1 --stay --lifetime 120 \
  --serve hold >"$T/held.ev" 2>&1 &
PIDS="$PIDS $!"
tn_wait_sessions "$s2_admin" server 1; ok $? "a peer agent that never sends"
peer_port=$s2_port
client server_idle '[
 {"op":"open","sid":1,"host":"ok.test","port":80,"agent":"edge-1"},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"expect_reset","sid":1,"code":"timeout"}]'
is "$RC" 0 "the server's idle timeout reaches the client as timeout"
agent_timeout() { grep '"ev": "reset"' "$T/held.ev" | grep -q '"code": "timeout"'; }
wait_for agent_timeout; ok $? "... and the agent as timeout"
done_testing
