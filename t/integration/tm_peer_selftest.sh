#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# t/lib/tm_peer.py against itself (a client or agent peer against a server
# peer): the WebSocket handshake, subprotocols and bearer, strict and
# legacy opens, windows, every scripted misbehaviour the role tests use
# (duplicate and oversized OPEN_RESULT, DATA during opening, malformed and
# unknown frames, window violations, metadata with and without
# capabilities, never reading) and the dial of an agent peer. The role
# tests trust the peer; this makes sure it does what they assume.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

# pair NAME 'SERVER ARGS' 'CLIENT ARGS' 'CLIENT SCRIPT': a server peer
# (stays up), then a client peer running the script; the events are in
# $T/NAME.s and $T/NAME.c, the client's exit status in RC.
pair() {
  rm -f "$T/$1.port"
  # shellcheck disable=SC2086 # the argument lists are split on purpose
  tm_peer --as server --port-file "$T/$1.port" --stay --lifetime 60 $2 \
    >"$T/$1.s" 2>&1 &
  sp=$!
  PIDS="$PIDS $sp"
  wait_file "$T/$1.port"
  # shellcheck disable=SC2086
  tm_peer ${5:---as client} --url "ws://127.0.0.1:$(cat "$T/$1.port")/tunnel" \
    --timeout 10 --lifetime 60 $3 --script "$4" >"$T/$1.c" 2>&1
  RC=$?
  sleep 0.2 # the server peer prints what it saw last
  kill "$sp" 2>/dev/null
  wait "$sp" 2>/dev/null
}
ev() { cat "$T/$1.$2"; }

# 1. strict with flow control: echo, a bulk transfer past the window, FIN, PING.
pair strict "--expect-bearer s3cret" "--token s3cret" '[
 {"op":"open","host":"example.test","port":80,"agent":"a1"},
 {"op":"expect_result","sid":1,"accepted":true,"code":"ok"},
 {"op":"send","sid":1,"data":"hello"},
 {"op":"expect_data","sid":1,"data":"hello"},
 {"op":"send","sid":1,"size":1000000,"fin":true},
 {"op":"expect_data","sid":1,"size":1000005,"fin":true},
 {"op":"ping"},{"op":"expect_pong"}]'
is "$RC" 0 "TM-PROTO-14 strict peer pair: every step passed"
like "$(ev strict c)" '"subprotocol": "tunnelmesh.v1.open-result.flow-control"' \
  "TM-PROTO-15 the server peer picks the full combination"
like "$(ev strict s)" '"agent": "a1", "conn": 0, "ev": "open", "host": "example.test", "port": 80' \
  "the server peer reports the OPEN_STREAM fields"
like "$(ev strict s)" '"ev": "window_update"' "TM-P2-12 WINDOW_UPDATE flows both ways"
unlike "$(ev strict c)$(ev strict s)" '"ev": "violation"' "no violation between two correct peers"
like "$(ev strict s)" '"bearer": true' "the bearer arrives in the Authorization header"

# 1b. a message in fragments (with a ping between them) is one frame.
pair frag "" "" '[
 {"op":"open","host":"example.test","port":80},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"fragmented","sid":1,"data":"in three parts","parts":3},
 {"op":"expect_data","sid":1,"data":"in three parts"}]'
is "$RC" 0 "a fragmented message is read whole (RFC 6455 continuation frames)"
unlike "$(ev frag s)" '"ev": "violation"' "... without a violation"

# 2. a wrong bearer is refused before the upgrade.
pair badtok "--expect-bearer s3cret" "--token wrong" '[]'
is "$RC" 1 "a wrong bearer: the client peer fails"
like "$(ev badtok c)" '"status": 401' "the server peer answers 401"

# 3. an old server (no subprotocol): legacy opens, no OPEN_RESULT.
pair legacy "--subproto none" "" '[
 {"op":"open","host":"h.test","port":7},
 {"op":"expect_no_result","sid":1,"ms":300},
 {"op":"send","sid":1,"data":"legacy"},
 {"op":"expect_data","sid":1,"data":"legacy"}]'
is "$RC" 0 "TM-PROTO-16 no subprotocol: legacy open and echo"
like "$(ev legacy c)" '"subprotocol": null' "the client peer sees no subprotocol"
unlike "$(ev legacy s)" '"type": "OPEN_RESULT"' "no OPEN_RESULT on a legacy link"

# 4. the client offers only the base name; a client offering nothing.
pair base "" "--caps fair_writer" '[
 {"op":"open","host":"h.test","port":7},{"op":"send","sid":1,"data":"b"},
 {"op":"expect_data","sid":1,"data":"b"}]'
is "$RC" 0 "a client without open_result offers tunnelmesh.v1 only"
like "$(ev base s)" '"offer": "tunnelmesh.v1"' "the offer is the base name"

# 5. failures: strict (OPEN_RESULT) and legacy (RESET).
pair fail "--answer fail:dns:host_unreachable" "" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_result","sid":1,"accepted":false,"stage":"dns","code":"host_unreachable"}]'
is "$RC" 0 "TM-PROTO-24 a failure OPEN_RESULT with stage and code"
pair lfail "--subproto none --answer fail:connect:connection_refused" "" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_reset","sid":1,"code":"connection_refused"}]'
is "$RC" 0 "a legacy failure is a RESET with its code"

# 6. never, then late.
pair never "--answer never" "" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_no_result","sid":1,"ms":400}]'
is "$RC" 0 "--answer never: no OPEN_RESULT"
pair late "--answer late:300" "" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_result","sid":1,"accepted":true}]'
is "$RC" 0 "--answer late:MS: the OPEN_RESULT comes later"

# 7. duplicate and oversized OPEN_RESULT, DATA before the result.
pair dup "--dup-result" "" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"expect_event","ev":"violation","what":"duplicate_open_result"}]'
is "$RC" 0 "TM-P0-18 --dup-result sends OPEN_RESULT twice"
pair big "--oversized-result" "" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_event","ev":"violation","what":"bad_open_result"}]'
is "$RC" 0 "TM-PROTO-25 --oversized-result sends more than 1 KiB"
like_re "$(ev big c)" '"len": 1[0-9]{3}' "the oversized payload is past 1 KiB"
pair early "--data-before-result" "" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"expect_event","ev":"violation","what":"data_while_opening"}]'
is "$RC" 0 "TM-P0-17 --data-before-result sends DATA while opening"
pair custom '--result-json {"accepted":false,"stage":"relay","code":"brand_new","retryable":false,"retry_after_ms":0}' "" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_result","sid":1,"accepted":false,"code":"brand_new"}]'
is "$RC" 0 "TM-PROTO-29 --result-json sends an unknown code"

# 8. malformed and unknown frames, window violations, DATA while opening
# from the opener.
pair bad "--answer never" "" '[
 {"op":"raw","hex":"010203"},
 {"op":"frame","type":66,"sid":1,"text":"?"},
 {"op":"frame","type":"DATA","sid":9,"text":"abc","length":99},
 {"op":"open","host":"x.test","port":80},
 {"op":"send","sid":1,"data":"too early","raw":true},
 {"op":"ws","opcode":1,"hex":"6869"},
 {"op":"ping"},{"op":"expect_pong"}]'
is "$RC" 0 "malformed frames, an unknown type and a text message sent"
like "$(ev bad s)" '"what": "short_frame"' "a 3-byte message is short"
like "$(ev bad s)" '"type": "UNKNOWN"' "type 0x42 is unknown"
like "$(ev bad s)" '"what": "bad_length"' "a wrong length field is sent as is"
like "$(ev bad s)" '"what": "data_while_opening"' "DATA before the result from the opener"
like "$(ev bad s)" '"what": "text_message"' "a text message"
pair win "--window 65536 --no-window-update" "--window 65536" '[
 {"op":"open","host":"x.test","port":80},
 {"op":"expect_result","sid":1,"accepted":true},
 {"op":"send","sid":1,"size":70000,"ignore_window":true},
 {"op":"window_update","sid":1,"inc":0},
 {"op":"ping"},{"op":"expect_pong"}]'
is "$RC" 0 "TM-P2-13 window violations sent"
like "$(ev win s)" '"what": "window_overrun"' "DATA past the window"
like "$(ev win s)" '"what": "zero_window_update"' "a zero WINDOW_UPDATE"

# 9. agent metadata with and without capabilities.
pair meta "" "--agent-id edge-1" '[
 {"op":"expect_metadata","ack":true,"capabilities":["stream_open_result.v1","stream_flow_control.v1","stream_fair_writer.v1"]}]' "--as agent"
is "$RC" 0 "TM-PROTO-18 an agent peer sends metadata, the ack has the intersection"
like "$(ev meta s)" '"agent_id": "edge-1"' "the server peer reads the agent id"
pair oldmeta "" "--metadata-no-caps" '[
 {"op":"expect_metadata","ack":true,"capabilities":[]}]' "--as agent"
is "$RC" 0 "TM-PROTO-19 metadata without capabilities is an old agent"
like "$(ev oldmeta s)" '"has_caps": false' "the server peer sees no capabilities field"

# 10. never read: the server peer stops reading; a PING is answered only
# once it reads again. The server peer runs its own script here.
rm -f "$T/stop.port"
tm_peer --as server --port-file "$T/stop.port" --lifetime 60 --script '[
 {"op":"wait_conn","n":1},{"op":"stop_reading"},{"op":"sleep","ms":600},
 {"op":"resume_reading"},{"op":"expect_event","ev":"ping"},{"op":"sleep","ms":300}]' \
  >"$T/stop.s" 2>&1 &
sp=$!
PIDS="$PIDS $sp"
wait_file "$T/stop.port"
tm_peer --as client --url "ws://127.0.0.1:$(cat "$T/stop.port")/" --script '[
 {"op":"sleep","ms":200},{"op":"ping"},
 {"op":"expect_no_event","ev":"pong","ms":200},
 {"op":"expect_pong","timeout_ms":5000}]' >"$T/stop.c" 2>&1
is "$?" 0 "stop_reading: no PONG while the peer does not read, one after"
wait_exit "$sp" 10
is "$EXIT" 0 "the server peer's script passed"

# 11. the agent peer dials real targets: an HTTP server and a closed port.
start_file_server "$T/www" "hello through the peer"
closed=$(free_port)
rm -f "$T/dial.port"
tm_peer --as server --port-file "$T/dial.port" --lifetime 60 --script "[
 {\"op\":\"wait_conn\",\"n\":1},{\"op\":\"expect_metadata\"},
 {\"op\":\"open\",\"host\":\"127.0.0.1\",\"port\":$FILE_SERVER_PORT},
 {\"op\":\"expect_result\",\"sid\":1,\"accepted\":true},
 {\"op\":\"send\",\"sid\":1,\"data\":\"GET /hello.txt HTTP/1.0\\r\\n\\r\\n\"},
 {\"op\":\"expect_data\",\"sid\":1,\"contains\":\"hello through the peer\",\"fin\":true},
 {\"op\":\"open\",\"host\":\"127.0.0.1\",\"port\":$closed},
 {\"op\":\"expect_result\",\"sid\":2,\"accepted\":false,\"stage\":\"connect\",\"code\":\"connection_refused\"}]" \
  >"$T/dial.s" 2>&1 &
sp=$!
PIDS="$PIDS $sp"
wait_file "$T/dial.port"
tm_peer --as agent --url "ws://127.0.0.1:$(cat "$T/dial.port")/agent" \
  --serve dial --stay --lifetime 30 >"$T/dial.c" 2>&1 &
ap=$!
PIDS="$PIDS $ap"
wait_exit "$sp" 20
is "$EXIT" 0 "an agent peer with --serve dial fetches a page and reports a refused port"
kill "$ap" 2>/dev/null

done_testing
