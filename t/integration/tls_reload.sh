#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 23 item 14: certificates are re-read on SIGHUP, under traffic,
# keeping established connections.
#   - tunnel_server with wss: a real agent and client connected over TLS
#     (tls.ca_file), a download through them; the certificate and key
#     files replaced (a renewal: same paths, a new certificate from the
#     same CA) and SIGHUP: a new TLS connection (openssl s_client) gets
#     the new certificate, the sessions established before keep working
#     (a download through them, no session closed, no reconnect); a
#     mismatched pair is refused with a log line and the certificate in
#     use stays; the reloads are counted;
#   - tunnel_agent and tunnel_client with a tls.ca_file that trusts
#     another CA: refused; the file replaced and SIGHUP: they connect.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"
TAP_ON_FAIL='tail -n 5 "$T/s.log" "$T/a.log" "$T/c.log"'

require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api direct socks5

# ---- certificates -------------------------------------------------------------
mkdir "$T/certs"
sh "$top_srcdir/t/unit/tunnel/tm_ws_certs.sh" "$T/certs"
ok $? "a CA and a server certificate for 127.0.0.1, made now"
# renewed.pem: the renewal, from the same CA, for the same names.
(
  cd "$T/certs" &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout renewed.key -out renewed.csr -subj /CN=tm-renewed-server &&
    openssl x509 -req -in renewed.csr -CA ca.pem -CAkey ca.key \
      -CAcreateserial -out renewed.pem -days 2 -extfile ext.cnf
) >"$T/openssl.log" 2>&1
ok $? "a renewed certificate from the same CA"
# The operator's paths: what certbot's live/ directory is.
cp "$T/certs/server.pem" "$T/live.pem"
cp "$T/certs/server.key" "$T/live.key"
chmod 600 "$T/live.key"

# served_cn PORT: the subject CN a new TLS connection is shown.
served_cn() {
  openssl s_client -connect "127.0.0.1:$1" -CAfile "$T/certs/ca.pem" \
    -verify_return_error </dev/null 2>/dev/null |
    openssl x509 -noout -subject 2>/dev/null | sed -n 's/.*CN *= *//p'
}

# ---- tunnel_server ---------------------------------------------------------------
tn_setup; ok $? "admin token and dnsd.py"
start_file_server "$T/www" "hello over wss"; ok $? "file server up"
web=$FILE_SERVER_PORT
tn_server s "[log]
level = info
[tunnel_server]
tls.cert = $T/live.pem
tls.key = $T/live.key"
ok $? "a tunnel server with wss"
tn_creds s; ok $? "credentials"
# The agent and the client as tn_agent and tn_client make them, over wss
# (their server_url rewritten: a key may be set only once in a file).
wss_role() { # NAME MODULES SECTIONS... (NAME_admin set)
  _n=$1 _mods=$2
  shift 2
  {
    printf '[proxyhost]\nmodules = %s\nmodule_path = %s\n' "$_mods" "$top_builddir/modules"
    printf '[admin]\nlisten = 127.0.0.1:%s\n' "$(eval echo "\$${_n}_admin")"
    "$@" | sed "s|^server_url = ws://|tls.ca_file = ${WSS_CA:-$T/certs/ca.pem}\\
server_url = wss://|"
  } >"$T/$_n.ini"
  tn_start "$_n" "$T/$_n.ini"
}
a_admin=$(free_port) c_admin=$(free_port) c_socks=$(free_port)
wss_role a "direct, tunnel_agent" tn_agent_sections tunnel_agent "$s_port" direct
ok $? "an agent over wss (tls.ca_file)"
wss_role c "tunnel_client, socks5" tn_client_sections tunnel_client "$s_port" "$c_socks" tunnel_client
ok $? "a client over wss"
tn_wait_sessions "$a_admin" agent 1; ok $? "the agent holds a session"
wait_for tn_ready "$c_admin"; ok $? "the client is connected"
is "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" "hello over wss" \
  "a download through the tunnel over wss"
is "$(served_cn "$s_port")" tm-test-server "a new connection sees the first certificate"

closed() { tn_sum "$1" '^proxyhost_stream_tunnel_sessions_closed_total'; }
a_closed=$(closed "$a_admin")
c_closed=$(closed "$c_admin")

# The renewal: same paths, new contents, then SIGHUP.
cp "$T/certs/renewed.pem" "$T/live.pem"
cp "$T/certs/renewed.key" "$T/live.key"
kill -HUP "$s_pid"
wait_cond '[ "$(served_cn "$s_port")" = tm-renewed-server ]'
ok $? "issue 23 item 14: after SIGHUP a new connection sees the renewed certificate"
is "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" "hello over wss" \
  "the sessions established before the reload still carry streams"
is "$(closed "$a_admin")" "$a_closed" "the agent's session was not closed"
is "$(closed "$c_admin")" "$c_closed" "the client's session was not closed"
is "$(tn_sessions "$s_admin" server)" 2 "the server still holds the same two sessions"
like "$(cat "$T/s.log")" "tunnel TLS certificate reloaded" "the reload is logged"
is "$(tn_sum "$s_admin" '^proxyhost_tls_reloads_total\{.*module="tunnel_server".*result="ok"')" 1 \
  "and counted (proxyhost_tls_reloads_total result=ok)"

# A key that does not match the certificate: refused, the renewed one stays.
cp "$T/certs/server.key" "$T/live.key"
kill -HUP "$s_pid"
wait_cond 'grep -q "tunnel TLS certificate not reloaded" "$T/s.log"'
ok $? "a mismatched certificate and key: not reloaded, logged"
is "$(served_cn "$s_port")" tm-renewed-server "the certificate in use stays"
is "$(tn_sum "$s_admin" '^proxyhost_tls_reloads_total\{.*module="tunnel_server".*result="error"')" 1 \
  "the failure is counted (result=error)"
wait_for tn_ready "$s_admin"; ok $? "the server is still ready"
is "$(tn_get "$c_socks" "http://ok.test:$web/hello.txt")" "hello over wss" \
  "and streams still work"
unlike "$(cat "$T/s.log")" "PRIVATE KEY" "no key material in the log"

# ---- the client's and the agent's CA file --------------------------------------
# A second agent and client whose CA file trusts another CA at first (the
# server's renewal came from a new CA): they cannot connect until the
# file holds the right CA and they get SIGHUP.
cp "$T/certs/other-ca.pem" "$T/live-ca.pem"
WSS_CA=$T/live-ca.pem
a2_admin=$(free_port) c2_admin=$(free_port) c2_socks=$(free_port)
wss_role a2 "direct, tunnel_agent" tn_agent_sections tunnel_agent "$s_port" direct
ok $? "an agent trusting another CA"
wss_role c2 "tunnel_client, socks5" tn_client_sections tunnel_client "$s_port" "$c2_socks" tunnel_client
ok $? "a client trusting another CA"
wait_cond 'grep -q "tunnel TLS handshake failed" "$T/a2.log" && grep -q "tunnel TLS handshake failed" "$T/c2.log"'
ok $? "both refuse the server's certificate"
cp "$T/certs/ca.pem" "$T/live-ca.pem"
kill -HUP "$a2_pid" "$c2_pid"
tn_wait_sessions "$a2_admin" agent 1
ok $? "issue 23 item 14: after SIGHUP the agent verifies with the new CA file and connects"
wait_for tn_ready "$c2_admin"
ok $? "issue 23 item 14: so does the client"
like "$(cat "$T/a2.log")" "tunnel agent TLS CA reloaded" "the agent's reload is logged"
is "$(tn_sum "$c2_admin" '^proxyhost_tls_reloads_total\{.*module="tunnel_client".*result="ok"')" 1 \
  "the client's is counted"
is "$(tn_get "$c2_socks" "http://ok.test:$web/hello.txt")" "hello over wss" \
  "a download through the new client"

done_testing
