#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Log lines operators read as faults (issue 24 item 12), in the logs of
# real processes (t/lib/tunnel.sh), the server and one client in JSON:
#   - auth_cache at start, before the store's first revision: an info
#     line naming the state in words, never the warning "cannot vouch"
#     with a raw status=-8;
#   - the server's own drain (tunnel_server drain_timeout) cutting a
#     stream: the host's last line says drain_cut_short=true, and a
#     warning names tunnel_server;
#   - a client whose server_url reaches a plain HTTP/1.0 server (404): the
#     refusal says what a 404 means (the path), not "not HTTP/1.1";
#   - a client whose token is refused: close_code=4401 close=unauthorized;
#   - one type per field name across every JSON line of the processes
#     (code, version, drain_cut_short, ...: t/lib/log_fields.py), and in
#     the sources (every PH_STR/PH_INT/... field of host/ and modules/).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

PY=${PYTHON3:-/usr/bin/python3}
require_modules tunnel_server tunnel_agent tunnel_client socks5 direct \
  store_sqlite auth_cache admin_api

"$PY" "$top_srcdir/t/lib/log_fields.py" --sources "$top_srcdir/host" \
  "$top_srcdir/modules" >"$T/fields-src.out" 2>&1
ok $? "one type per log field name in the sources: $(tail -1 "$T/fields-src.out")"
[ -s "$T/fields-src.out" ] && sed 's/^/#   /' "$T/fields-src.out" | head -5

JSON='[log]
format = json'
tn_setup; ok $? "admin token and DNS"
start_file_server "$T/www" "hello"; ok $? "HTTP target (HTTP/1.0, 404 for /tunnel)"
# The server's own drain (300 ms) is shorter than the host's (2 s,
# tn_server): only the module cuts the stream.
tn_server s1 "$JSON
[tunnel_server]
drain_timeout = 300ms"
ok $? "tunnel_server (JSON log)"
tn_creds s1; ok $? "credentials"
tn_agent a1 s1; ok $? "tunnel_agent"
tn_client c1 s1 "$JSON"; ok $? "tunnel_client (JSON log)"
tn_wait_sessions "$a1_admin" agent 1; ok $? "the agent is connected"
wait_for tn_ready "$c1_admin"; ok $? "the client is ready"

# ---- auth_cache at start ----------------------------------------------------
slog=$(cat "$T/s1.log")
unlike "$slog" "cannot vouch" \
  "issue 24 item 12: no 'cannot vouch' warning at start"
unlike "$slog" '"status":-8' "... and no raw status=-8"
like_re "$slog" '"level":"info","module":"auth_cache","msg":"auth_cache: waiting for the store.s first revision[^"]*","state":"no_revision_yet"' \
  "the wait for the first revision is an info line naming the state"
like "$slog" "auth_cache: the store's first revision is read" \
  "and its end is said"

# ---- a wrong path: an HTTP/1.0 404 ------------------------------------------
c404_admin=$(free_port)
cat >"$T/c404.ini" <<EOC
[proxyhost]
modules = tunnel_client
module_path = $top_builddir/modules
[admin]
listen = 127.0.0.1:$c404_admin
[tunnel_client]
server_url = ws://127.0.0.1:$FILE_SERVER_PORT/tunnel
agent = $TN_AGENT
token_file = $T/client.token
reconnect.min = 50ms
reconnect.max = 1s
EOC
c404_pid=
tn_start c404 "$T/c404.ini"; ok $? "a client whose server_url is a plain web server"
wait_cond "grep -q 'tunnel handshake refused' '$T/c404.log'"
ok $? "its handshake is refused"
line=$(grep 'tunnel handshake refused' "$T/c404.log" | head -1)
like "$line" "http_status=404" "with the status ($line)"
like "$line" "404 Not Found: nothing serves the URL's path" \
  "issue 24 item 12: saying what a 404 means (the path)"
unlike "$line" "not HTTP/1.1" "not 'the answer is not HTTP/1.1'"
kill -TERM "$c404_pid"; wait_exit "$c404_pid" 10

# ---- a refused token: 4401 unauthorized ---------------------------------------
printf 'tok_0000000000000bad.not-a-secret-that-exists-AAAAAAAAAAAAAAAAAAAA\n' \
  >"$T/bad.token"
chmod 600 "$T/bad.token"
cbad_admin=$(free_port)
sed -e "s|^listen = 127.0.0.1:$c404_admin|listen = 127.0.0.1:$cbad_admin|" \
  -e "s|^server_url = .*|server_url = ws://127.0.0.1:$s1_port/tunnel|" \
  -e "s|^token_file = .*|token_file = $T/bad.token|" "$T/c404.ini" >"$T/cbad.ini"
cbad_pid=
tn_start cbad "$T/cbad.ini"; ok $? "a client with a token the server refuses"
wait_cond "grep -q 'tunnel connection closed by the server' '$T/cbad.log'"
ok $? "the server closes its connection"
line=$(grep 'tunnel connection closed by the server' "$T/cbad.log" | head -1)
like "$line" "close_code=4401 close=unauthorized" \
  "issue 24 item 12: 4401 spelled unauthorized ($line)"
like "$line" "level=warn" "at warning level"
kill -TERM "$cbad_pid"; wait_exit "$cbad_pid" 10

# ---- the server's own drain cuts a stream --------------------------------------
# A stream opened and then left open (the file server waits for a request
# that never comes) until the holder is killed.
"$PY" - "$c1_socks" "$FILE_SERVER_PORT" >"$T/hold.out" 2>&1 <<'PYEOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
s.sendall(b"\x05\x01\x00")
s.recv(2)
host = b"ok.test"
s.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host +
          int(sys.argv[2]).to_bytes(2, "big"))
print("reply", s.recv(64)[:2].hex(), flush=True)
time.sleep(60)
PYEOF
hold_pid=$!
PIDS="$PIDS $hold_pid"
wait_cond '[ "$(tn_opens "$s1_admin" server strict)" -ge 1 ]'
ok $? "a stream is open through the server"
kill -TERM "$s1_pid"
wait_exit "$s1_pid" 15; is "$EXIT" 0 "the server exits 0"
slog=$(cat "$T/s1.log")
like "$slog" '"msg":"tunnel drain deadline: closing what is left"' \
  "its own drain deadline closed the stream"
like_re "$slog" '"msg":"proxyhost stopped","exit_code":0,"drain_cut_short":"true"' \
  "issue 24 item 12: the last line says drain_cut_short=true"
like_re "$slog" '"level":"warn","module":"host","msg":"drain cut short: a module.s own drain deadline[^"]*","by":"tunnel_server","closed":[1-9]' \
  "and a warning names tunnel_server"
kill "$hold_pid" 2>/dev/null

# ---- one type per field name in the JSON lines -------------------------------
kill -TERM "$c1_pid"; wait_exit "$c1_pid" 10
"$PY" "$top_srcdir/t/lib/log_fields.py" --json "$T/s1.log" "$T/c1.log" \
  >"$T/fields-json.out" 2>&1
ok $? "one type per field name in the JSON logs: $(tail -1 "$T/fields-json.out")"
sed 's/^/#   /' "$T/fields-json.out" | head -5
like "$(cat "$T/s1.log")" '"version":"' "version is a string (the host's)"

kill -TERM "$a1_pid"; wait_exit "$a1_pid" 10
done_testing
