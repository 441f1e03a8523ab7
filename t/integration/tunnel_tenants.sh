#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One tenant cannot starve another at the server's open executor (issue
# 22 item 3; TM-SEC-6 "不能由单个 Client 占满所有拨号槽"), with a real
# tunnel server (store_sqlite, auth_cache, admin_api) and t/lib/tm_peer.py
# as agents and clients: alice holds four client connections, each
# opening 20 streams through an agent that never answers; bob opens one
# stream through a healthy agent. Before the per-principal caps alice
# took every running and waiting slot and bob got queue_full at once; now
# alice is held to stream.max_opens_per_principal running and
# stream.max_pending_per_principal waiting (each session to
# stream.max_pending_per_session), the refusals are logged naming the
# bound, and bob's stream opens. Then item 4: a client that never reads
# holds at most its session's and its user's memory budget at the server,
# however many streams it opens.
. "$top_srcdir/t/lib/testlib.sh"
require_modules tunnel_server store_sqlite auth_cache admin_api
. "$top_srcdir/t/lib/tunnel.sh"

tn_setup; ok $? "admin token and dnsd.py"
tn_server s '[tunnel_server]
stream.max_concurrent_opens = 16
stream.max_pending_opens = 64
stream.max_opens_per_session = 8
stream.max_opens_per_principal = 8
stream.max_pending_per_principal = 16
stream.max_pending_per_session = 8
stream.open_timeout = 60s'
ok $? "server up (16 running, 64 waiting; 8 and 16 a user, 8 and 8 a session)"

# creds USER AGENT: the user, its agent, a stream token (USER.token), an
# agent token (AGENT.token) and a policy letting the user reach anything
# through the agent.
creds() {
  tn_ctl "$s_admin" user create "$1" >/dev/null &&
    tn_ctl "$s_admin" agent create "$2" --owner "$1" >/dev/null &&
    _o=$(tn_ctl "$s_admin" token create --user "$1") &&
    tn_bearer "$_o" >"$T/$1.token" &&
    _o=$(tn_ctl "$s_admin" token create --user "$1" --agent "$2") &&
    tn_bearer "$_o" >"$T/$2.token" &&
    tn_ctl "$s_admin" policy create --agent "$2" --user "$1" --host '*' \
      --ports 1-65535 >/dev/null
}
creds alice silent && creds bob healthy; ok $? "alice with agent silent, bob with agent healthy"

url="ws://127.0.0.1:$s_port/tunnel"
tm_peer --as agent --url "$url" --token-file "$T/silent.token" --agent-id silent \
  --answer never --stay --lifetime 120 >"$T/silent.out" 2>&1 &
PIDS="$PIDS $!"
tm_peer --as agent --url "$url" --token-file "$T/healthy.token" --agent-id healthy \
  --answer ok --serve echo --stay --lifetime 120 >"$T/healthy.out" 2>&1 &
PIDS="$PIDS $!"
tn_wait_sessions "$s_admin" server 2; ok $? "both agents connected"

# alice: four connections, 20 opens each, held for a minute.
opens=$(i=0; printf '['; while [ $i -lt 20 ]; do
  printf '{"op":"open","host":"target.test","port":80,"agent":"silent"},'
  i=$((i + 1)); done; printf '{"op":"sleep","ms":60000}]')
for k in 1 2 3 4; do
  tm_peer --as client --url "$url" --token-file "$T/alice.token" \
    --script "$opens" --lifetime 90 >"$T/alice$k.out" 2>&1 &
  PIDS="$PIDS $!"
done
refused() { cat "$T"/alice?.out | grep '"open_result"' | grep -c queue_full; }
# 80 opens: 8 run, 16 wait (no more than 8 of one session), 56 refused.
wait_cond '[ "$(refused)" -ge 56 ]'
ok $? "item 3: alice's opens beyond her bounds are refused at once (queue_full)"
sleep 0.5
is "$(refused)" 56 "exactly 56 of 80: 8 running and 16 waiting are hers"
like_re "$(cat "$T/s.log")" 'open queue is full.*limit=stream.max_pending_per_(principal|session)' \
  "logged with the bound that refused them"

# echo_stream URL USER AGENT: one stream opened and echoed (USER.out).
echo_stream() {
  tm_peer --as client --url "$1" --token-file "$T/$2.token" --script \
    '[{"op":"open","host":"target.test","port":80,"agent":"'"$3"'"},
      {"op":"expect_result","sid":1,"accepted":true,"timeout_ms":5000},
      {"op":"send","sid":1,"data":"hello"},
      {"op":"expect_data","sid":1,"data":"hello"}]' >"$T/$2.out" 2>&1
}
echo_stream "$url" bob healthy
ok $? "item 3: bob's open through a healthy agent is opened and relayed at once"
unlike "$(cat "$T/bob.out")" queue_full "bob never sees queue_full"

# ---- item 4: a memory budget per session and per user -----------------------
# A second server with small budgets: each relayed stream reserves
# 2 x (256 KiB + 256 KiB) = 1 MiB (the default queues), so a session holds
# 16 streams and a user 24. carol's client never grants window (it never
# reads what it is sent) and opens 40 streams on each of two connections
# through an agent that sends 2 MiB on each.
# Under ASan freed memory is not kept in quarantine for server m, so its
# resident size says what it holds (as local_burst.sh does).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
export ASAN_OPTIONS
tn_server m '[tunnel_server]
stream.memory_per_session = 16MiB
stream.memory_per_principal = 24MiB'
ok $? "server m up (16 MiB a session, 24 MiB a user)"
s_admin=$m_admin creds carol firehose && s_admin=$m_admin creds dave echo
ok $? "carol with agent firehose, dave with agent echo"
murl="ws://127.0.0.1:$m_port/tunnel"
tm_peer --as agent --url "$murl" --token-file "$T/firehose.token" --agent-id firehose \
  --answer ok --serve bytes:2097152 --stay --lifetime 120 >"$T/firehose.out" 2>&1 &
PIDS="$PIDS $!"
tm_peer --as agent --url "$murl" --token-file "$T/echo.token" --agent-id echo \
  --answer ok --serve echo --stay --lifetime 120 >"$T/echo.out" 2>&1 &
PIDS="$PIDS $!"
tn_wait_sessions "$m_admin" server 2; ok $? "both agents connected to m"
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$m_pid/status"; }
rss0=$(rss)
many=$(i=0; printf '['; while [ $i -lt 40 ]; do
  printf '{"op":"open","host":"target.test","port":80,"agent":"firehose"},'
  i=$((i + 1)); done; printf '{"op":"sleep","ms":60000}]')
for k in 1 2; do
  tm_peer --as client --url "$murl" --token-file "$T/carol.token" --no-window-update \
    --script "$many" --lifetime 90 >"$T/carol$k.out" 2>&1 &
  PIDS="$PIDS $!"
  results() { grep -c '"open_result"' "$T/carol$k.out"; }
  wait_cond '[ "$(results)" -ge 40 ]'
  ok $? "carol's connection $k: every open answered"
done
accepted() { grep '"open_result"' "$T/carol$1.out" | grep -c '"accepted": true'; }
is "$(accepted 1)" 16 "item 4: her first session opens 16 streams (stream.memory_per_session)"
is "$(accepted 2)" 8 "item 4: her second only 8 more (stream.memory_per_principal)"
like_re "$(cat "$T/m.log")" 'stream memory budget spent.*limit=stream.memory_per_session' \
  "logged naming the session's bound"
like_re "$(cat "$T/m.log")" 'stream memory budget spent.*limit=stream.memory_per_principal' \
  "and the user's"
is "$(tn_sum "$m_admin" '^proxyhost_tunnel_server_stream_memory_refused_total\{bound="session"')" 24 \
  "counted: 24 by the session's bound"
is "$(tn_sum "$m_admin" '^proxyhost_tunnel_server_stream_memory_refused_total\{bound="principal"')" 32 \
  "and 32 by the user's"
is "$(tn_sum "$m_admin" '^proxyhost_tunnel_server_stream_memory_reserved_bytes')" 25165824 \
  "24 MiB reserved"
sleep 1 # what the agent sends fills the windows
grown=$(( ($(rss) - rss0) / 1024 ))
echo "# server RSS grew by $grown MiB with carol's 24 streams full and never read"
[ "$grown" -le 24 ]; ok $? "item 4: the server holds at most carol's budget (24 MiB; grew $grown MiB)"
echo_stream "$murl" dave echo
ok $? "item 4: dave's stream opens and is relayed meanwhile"

done_testing
