#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 24 item 10, TM-OBS-19: one trace id joins a stream's log lines on
# client, server and agent. The client makes it (32 lowercase hex digits,
# random) and sends it in OPEN_STREAM; the server logs it and passes it on
# in its OPEN_STREAM to the agent, which logs it. Real tunnel_client,
# tunnel_server and tunnel_agent processes; t/lib/tm_peer.py as a client
# that sends a malformed trace (replaced by the server, the stream works,
# the peer's bytes logged nowhere) and a trace field whose framing lies
# (the OPEN_STREAM is malformed: that stream is refused, the session
# stays), as docs/protocol/tunnel.md says. The trace field is sent only
# where stream_trace.v1 was negotiated (issue 27): tm_peer agents with and
# without it, the server's OPEN_STREAM to each as they decode it.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"
require_modules store_sqlite auth_cache admin_api tunnel_server \
  tunnel_agent tunnel_client direct socks5

tn_setup; ok $? "admin token and DNS"
start_file_server "$T/www" "traced"; ok $? "file server up"
web=$FILE_SERVER_PORT
tn_trio 1; ok $? "server, agent and client, connected"

# ---- one stream through the three ----------------------------------------
is "$(tn_get "$c1_socks" "http://ok.test:$web/hello.txt")" "traced" \
  "curl through client, server and agent"
wait_for grep -q 'msg="stream ended"' "$T/a1.log"
wait_for grep -q 'msg="stream end"' "$T/c1.log"
cline=$(grep 'msg="stream end"' "$T/c1.log" | head -1)
id=$(printf '%s\n' "$cline" | sed -n 's/.* trace_id=\([^ ]*\).*/\1/p')
like_re "$id" '^[0-9a-f]{32}$' \
  "issue 24 item 10: the client's stream end line has a trace id of 32 lowercase hex digits"
wait_for grep -q "msg=\"tunnel stream end\".*trace_id=$id" "$T/s1.log"
ok $? "TM-OBS-19 the server's line for that stream has the same trace id"
grep -q "msg=\"stream ended\".*trace_id=$id" "$T/a1.log"
ok $? "TM-OBS-19 ... and so has the agent's"
is "$(grep -c "trace_id=$id" "$T/c1.log" "$T/s1.log" "$T/a1.log" |
  awk -F: '{ s += $NF } END { print s }')" 3 "... one line on each of the three"

# ---- a peer sending a malformed trace id: replaced ---------------------------
# client NAME SCRIPT: a tm_peer client of s1; exit status in RC.
client() {
  tn_peer_run "$1" --as client --url "ws://127.0.0.1:$s1_port/tunnel" \
    --token-file "$T/client.token" --timeout 10 --lifetime 60 --script "$2"
}
BAD=NOT-A-TRACE-ID-xyzzy
client badtrace '[
 {"op":"open","sid":1,"host":"ok.test","port":'"$web"',"agent":"edge-1","trace":"'"$BAD"'"},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"send","sid":1,"data":"GET /hello.txt HTTP/1.0\r\nHost: ok.test\r\n\r\n","fin":true},
 {"op":"expect_data","sid":1,"contains":"traced","fin":true}]'
is "$RC" 0 "issue 24 item 10: an OPEN_STREAM with a malformed trace id opens and carries data"
wait_for grep -q 'msg="tunnel open: malformed trace id replaced"' "$T/s1.log"
ok $? "... the server replaces the trace id, with a warning"
rid=$(grep 'msg="tunnel open: malformed trace id replaced"' "$T/s1.log" |
  head -1 | sed -n 's/.* trace_id=\([^ ]*\).*/\1/p')
like_re "$rid" '^[0-9a-f]{32}$' "... naming its own trace id, of the form"
wait_for grep -q "msg=\"tunnel stream end\".*trace_id=$rid" "$T/s1.log"
ok $? "... which the server's line for that stream carries"
wait_for grep -q "msg=\"stream ended\".*trace_id=$rid" "$T/a1.log"
ok $? "... and the agent's: passed on"
unlike "$(cat "$T/s1.log" "$T/a1.log")" "$BAD" "the peer's bytes are logged nowhere"

# ---- a trace field whose framing lies: that OPEN_STREAM is refused ----------
client badframe '[
 {"op":"open","sid":1,"host":"ok.test","port":'"$web"',"agent":"edge-1","trace":"4bf92f3577b34da6a3ce929d0e0e4736","trace_len":40},
 {"op":"expect_reset","sid":1},
 {"op":"open","sid":3,"host":"ok.test","port":'"$web"',"agent":"edge-1","trace":"","trace_len":0},
 {"op":"expect_reset","sid":3},
 {"op":"open","sid":5,"host":"ok.test","port":'"$web"',"agent":"edge-1"},
 {"op":"expect_result","sid":5,"accepted":true},
 {"op":"ping"},{"op":"expect_pong"}]'
is "$RC" 0 \
  "issue 24 item 10: a trace length that is 0 or does not end the payload: that stream is refused (malformed), the session and the next open go on"

# ---- the trace field only where it was negotiated (stream_trace.v1) ---------
like "$(cat "$T/c1.log")" "subprotocol=tunnelmesh.v1.open-result.flow-control.trace" \
  "issue 27: the real client and server negotiated the trace field (the full subprotocol with .trace)"
for a in edge-2 edge-3; do
  tn_ctl "$s1_admin" agent create "$a" --owner alice >/dev/null &&
    out=$(tn_ctl "$s1_admin" token create --user alice --agent "$a") &&
    tn_bearer "$out" >"$T/$a.token" &&
    tn_ctl "$s1_admin" policy create --agent "$a" --user alice --host '*' \
      --ports 1-65535 >/dev/null || echo "# creating $a failed"
done
peer_agent() { # NAME ARGS...: a tm_peer agent of s1
  _n=$1
  shift
  tm_peer --as agent --url "ws://127.0.0.1:$s1_port/tunnel" \
    --token-file "$T/$_n.token" --agent-id "$_n" --stay --lifetime 60 \
    --answer ok --serve echo "$@" >"$T/$_n.ev" 2>&1 &
  PIDS="$PIDS $!"
}
peer_agent edge-2
peer_agent edge-3 --caps open_result,flow_control,fair_writer,trace
two_ready() { [ "$(grep -c 'msg="agent ready"' "$T/s1.log")" -ge 3 ]; }
wait_for two_ready; ok $? "two tm_peer agents: edge-2 (no stream_trace.v1), edge-3 (with it)"
like "$(cat "$T/edge-3.ev")" '"subprotocol": "tunnelmesh.v1.open-result.flow-control.trace"' \
  "edge-3's connection negotiated the trace subprotocol"
like "$(cat "$T/edge-2.ev")" '"subprotocol": "tunnelmesh.v1.open-result.flow-control"' \
  "edge-2's the full one without it"
TID=0af7651916cd43dd8448eb211c80319c
for a in edge-2 edge-3; do
  client "to-$a" '[
 {"op":"open","sid":1,"host":"ok.test","port":'"$web"',"agent":"'"$a"'","trace":"'"$TID"'"},
 {"op":"expect_result","sid":1,"accepted":true}]'
  is "$RC" 0 "a client's open with trace $TID to $a is accepted"
done
open_ev() { grep '"ev": "open"' "$T/$1.ev" | head -1; }
like "$(open_ev edge-2)" '"trace": ""' \
  "issue 27: the server's OPEN_STREAM to edge-2 (stream_trace.v1 not negotiated) has no trace field"
like "$(open_ev edge-3)" "\"trace\": \"$TID\"" \
  "... and to edge-3 (negotiated) carries the client's trace id"

done_testing
