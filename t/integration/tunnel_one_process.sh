#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# TunnelMesh in one process: tunnel_server.hub, tunnel_agent.edge (over
# direct.edge) and tunnel_client.laptop (under socks5) as named instances
# of one proxyhost, with a SQLite store. The credentials are made after
# the start (the agent and the client read their token files at each
# connection attempt), as scripts/demo.sh does; then curl, a page of 32
# CONNECTs with a hanging DNS name and a hanging dial (TM-TEST-31), and
# the strict count.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api direct socks5
PY=${PYTHON3:-python3}

tn_setup; ok $? "admin token and dnsd.py"
mkdir -p "$T/www"
printf 'one\n' >"$T/www/one.txt"
start_file_server "$T/www" "one process"; ok $? "file server up"
web=$FILE_SERVER_PORT
$PY "$top_srcdir/t/lib/socks5_probe.py" blackhole --port-file "$T/bh.port" --seconds 120 >/dev/null 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/bh.port"

tn_all x; ok $? "one process with the three roles as named instances is healthy"
tn_ready "$x_admin"; ok $((1 - $?)) "not ready before the credentials exist"
tn_creds x; ok $? "credentials made through the same process's admin_api"
tn_wait_sessions "$x_admin" agent 1; ok $? "the agent instance connected to the server instance"
wait_for tn_ready "$x_admin"; ok $? "ready once the client and the agent are connected"
is "$(tn_get "$x_socks" "http://ok.test:$web/hello.txt")" "one process" \
  "curl socks5h -> tunnel_client.laptop -> tunnel_server.hub -> tunnel_agent.edge -> target"
r=$($PY "$top_srcdir/t/lib/tunnel_load.py" page --proxy "127.0.0.1:$x_socks" \
  --target "ok.test:$web" --path /one.txt --n 30 --hang "y.hang.test:80" \
  --hang "127.0.0.1:$(cat "$T/bh.port")")
is "$r" '{"completed": 30, "failed": 0, "hang_pending": 2}' \
  "TM-TEST-31 one process: 30 of 32 CONNECTs complete beside a DNS hang and a dial hang"
like_re "$(tn_metrics "$x_admin")" 'tunnelmesh_stream_open_total\{component="client",result="success",error_class="ok",open_mode="strict"\} [1-9]' \
  "TM-TEST-33 strict opens counted by the client instance"
kill "$x_pid"; wait_exit "$x_pid" 10
is "$EXIT" 0 "SIGTERM drains the three roles and exits 0"

done_testing
