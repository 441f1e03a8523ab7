#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 9, "not an open proxy" and "access logs": real proxyhost
# processes with socks5, http_proxy and direct, curl through them.
#  - allow_clients: a client from 127.0.0.2 against 127.0.0.1/32 is closed
#    at accept (curl --interface 127.0.0.2), counted, logged; a reload
#    that widens the list lets it in;
#  - the configuration error for a non-loopback listener with auth = none
#    and no allow_clients (exact text, --check-config and at start: 2);
#  - one access line per SOCKS5 stream, per forwarded HTTP request and per
#    CONNECT, the target only with log_target (TM-SEC-9), at debug level
#    too; a known password never in any line (TM-SEC-9);
#  - [log] format = json: every stderr line is JSON, through start,
#    traffic, a refused reload and the drain.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
MODS="$top_builddir/modules"

require_modules socks5 http_proxy direct

start_dnsd ok.test=127.0.0.1
ok $? "DNS test server on loopback"
start_file_server "$T/www" hello; ok $? "HTTP target on 127.0.0.1"
hp=$FILE_SERVER_PORT

# conf FILE ADMIN SPORT HPORT EXTRA...: socks5 and http_proxy, each with
# the EXTRA lines (allow_clients, log_target).
conf() {
  f=$1 a=$2 s=$3 h=$4
  shift 4
  {
    printf '[proxyhost]\nmodules = socks5, http_proxy, direct\n'
    printf 'module_path = %s\ndrain_timeout = 2s\n' "$MODS"
    printf '[admin]\nlisten = 127.0.0.1:%s\n[log]\nlevel = debug\n' "$a"
    printf '[socks5]\nlisten = 127.0.0.1:%s\n' "$s"
    for l in "$@"; do printf '%s\n' "$l"; done
    printf '[http_proxy]\nlisten = 127.0.0.1:%s\n' "$h"
    for l in "$@"; do printf '%s\n' "$l"; done
    printf '[direct]\nresolver_servers = 127.0.0.1:%s\n' "$dns_port"
  } >"$f"
}

admin=$(free_port) sport=$(free_port) hport=$(free_port)
conf "$T/a.ini" "$admin" "$sport" "$hport" "allow_clients = 127.0.0.1/32"
start_proxyhost "$T/a.ini"
A_PID=$PH_PID
wait_for healthy "$admin"; ok $? "A starts with allow_clients = 127.0.0.1/32"
wait_for port_open "$sport"

U="http://ok.test:$hp/hello.txt"
out=$("$CURL" -s -m 10 --noproxy '' --proxy "socks5h://127.0.0.1:$sport" "$U")
is "$out" hello "socks5 from 127.0.0.1: allowed"
out=$("$CURL" -s -m 10 --noproxy '' --proxy "http://127.0.0.1:$hport" "$U")
is "$out" hello "http_proxy forward from 127.0.0.1: allowed"
out=$("$CURL" -s -m 10 --noproxy '' -p --proxy "http://127.0.0.1:$hport" "$U")
is "$out" hello "http_proxy CONNECT from 127.0.0.1: allowed"
"$CURL" -s -m 5 --noproxy '' --interface 127.0.0.2 \
  --proxy "socks5h://127.0.0.1:$sport" "$U" >/dev/null 2>&1
rc=$?
[ "$rc" -ne 0 ]; ok $? "socks5 from 127.0.0.2: refused (curl exit $rc)"
"$CURL" -s -m 5 --noproxy '' --interface 127.0.0.2 \
  --proxy "http://127.0.0.1:$hport" "$U" >/dev/null 2>&1
rc=$?
[ "$rc" -ne 0 ]; ok $? "http_proxy from 127.0.0.2: refused (curl exit $rc)"
m=$(http_get "http://127.0.0.1:$admin/metrics")
is "$(metric "$m" 'proxyhost_frontend_clients_denied_total{reason="not_allowed"}')" 2 \
  "both refusals counted, with a bounded reason label (TM-SEC-8)"
log=$(cat "$T/ph.log")
like_re "$log" 'level=warn module=socks5 msg="client refused: not in allow_clients" client=127.0.0.2:[0-9]+' \
  "a refused client is logged at warn with its address"
like_re "$log" 'module=socks5 msg=access stream=[0-9]+ client=127.0.0.1:[0-9]+ user=- method=CONNECT status=succeeded status_code=0 result=success bytes_up=[0-9]+ bytes_down=[0-9]+ duration_us=[0-9]+ end=closed upstream=-$' \
  "socks5: one access line, no target"
like_re "$log" 'module=socks5 msg="socks5 request" stream=[0-9]+$' \
  "the socks5 debug line carries the stream id, no target"
like_re "$log" 'module=http_proxy msg=access stream=[0-9]+ client=127.0.0.1:[0-9]+ user=- method=GET status=2xx status_code=200 result=success bytes_up=[0-9]+ bytes_down=[0-9]+ duration_us=[0-9]+ end=- upstream=-$' \
  "http forward: one access line, no target"
like_re "$log" 'module=http_proxy msg=access stream=[0-9]+ client=127.0.0.1:[0-9]+ user=- method=CONNECT status=2xx status_code=200 result=success' \
  "http CONNECT: one access line per tunnel"
like_re "$log" 'module=http_proxy msg="http request target" stream=[0-9]+ method_class=connect$' \
  "the http debug line carries the stream id, no target"
unlike "$log" "ok.test" "no target at any level, debug included (TM-SEC-9)"
unlike "$log" "hello.txt" "nor the URL"

# Reload: a wider list for new connections, and log_target on.
conf "$T/a.ini" "$admin" "$sport" "$hport" "allow_clients = 127.0.0.0/8" \
  "log_target = true"
: >"$T/ph.log"
kill -HUP "$A_PID"
wait_for grep -q "reload" "$T/ph.log"
sleep 0.3
out=$("$CURL" -s -m 10 --noproxy '' --interface 127.0.0.2 \
  --proxy "socks5h://127.0.0.1:$sport" "$U")
is "$out" hello "after the reload 127.0.0.2 is allowed (socks5)"
out=$("$CURL" -s -m 10 --noproxy '' --interface 127.0.0.2 \
  --proxy "http://127.0.0.1:$hport" "$U")
is "$out" hello "and on http_proxy"
log=$(cat "$T/ph.log")
like_re "$log" "module=socks5 msg=access stream=[0-9]+ client=127.0.0.2:[0-9]+ .* target=ok.test:$hp\$" \
  "log_target: the socks5 line has the target"
like_re "$log" "module=socks5 msg=\"socks5 request\" stream=[0-9]+ target=ok.test:$hp\$" \
  "and its debug line"
like_re "$log" "module=http_proxy msg=access .*method=GET .* target=ok.test:$hp url=http://ok.test:$hp/hello.txt\$" \
  "log_target: the http line has the target and the URL"
kill -TERM "$A_PID"
wait_exit "$A_PID" 10; is "$EXIT" 0 "A drains and exits 0"

# ---- the configuration error -------------------------------------------------
sport=$(free_port)
printf '[proxyhost]\nmodules = socks5, direct\nmodule_path = %s\n[socks5]\nlisten = 0.0.0.0:%s\n' \
  "$MODS" "$sport" >"$T/open.ini"
"$PROXYHOST" -c "$T/open.ini" --check-config >"$T/open.out" 2>&1
is "$?" 2 "--check-config: a non-loopback listener with auth = none is refused (exit 2)"
want="open.ini:5: socks5.listen: \"0.0.0.0:$sport\" is not a loopback address and auth = none: anyone who reaches it could use this proxy. Set auth = password, or list the client networks in allow_clients (allow_clients = 0.0.0.0/0, ::/0 allows everyone, on purpose)"
like "$(cat "$T/open.out")" "$want" "with the message that says how to allow it"
"$PROXYHOST" -c "$T/open.ini" >"$T/open2.out" 2>&1
is "$?" 2 "at start too (exit 2)"
like "$(cat "$T/open2.out")" "$want" "with the same message"
printf 'allow_clients = 0.0.0.0/0\n' >>"$T/open.ini"
"$PROXYHOST" -c "$T/open.ini" --check-config >"$T/open3.out" 2>&1
is "$?" 0 "allow_clients = 0.0.0.0/0 written out: accepted"
printf '[proxyhost]\nmodules = socks5, direct\nmodule_path = %s\n[socks5]\nallow_clients = 10.0.0.0/8, bogus\n' \
  "$MODS" >"$T/bad.ini"
"$PROXYHOST" -c "$T/bad.ini" --check-config >"$T/bad.out" 2>&1
is "$?" 2 "a bad network in allow_clients: exit 2"
like "$(cat "$T/bad.out")" 'bad.ini:5: socks5.allow_clients: "bogus" is not a network' \
  "with file:line and the item"

# json_only FILE: every line of FILE parses as JSON.
json_only() {
  $PY -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    json.loads(line)
' "$1"
}

# Start-up errors in JSON mode: the configuration error, and a port in use.
printf '[log]\nformat = json\n' >>"$T/bad.ini"
"$PROXYHOST" -c "$T/bad.ini" >"$T/bad.json" 2>&1
is "$?" 2 "JSON mode: a configuration error still exits 2"
json_only "$T/bad.json"; ok $? "and its stderr is JSON only"
like "$(cat "$T/bad.json")" '"level":"error","module":"host","msg":"configuration error","error":"' \
  "one error record per line"
busy=$(free_port)
$PY -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").write("1"); time.sleep(30)
' "$busy" "$T/busy.ready" &
PIDS="$PIDS $!"
wait_file "$T/busy.ready"
printf '[proxyhost]\nmodules = socks5, direct\nmodule_path = %s\n[log]\nformat = json\n[admin]\nlisten =\n[socks5]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$busy" >"$T/busy.ini"
"$PROXYHOST" -c "$T/busy.ini" >"$T/busy.json" 2>&1
is "$?" 4 "JSON mode: a port in use exits 4"
json_only "$T/busy.json"; ok $? "and its stderr is JSON only"
like "$(cat "$T/busy.json")" '"msg":"start-up failed"' "the host's error as a record"

# ---- JSON mode, auth = password, a refused reload ---------------------------
if have_auth_local; then
  hash=$(password_hash 'k9-Very-Secret')
  admin=$(free_port) sport=$(free_port) hport=$(free_port)
  cat >"$T/j.ini" <<EOC
[proxyhost]
modules = auth_local, socks5, http_proxy, direct
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = debug
format = json
[socks5]
listen = 127.0.0.1:$sport
auth = password
[http_proxy]
listen = 127.0.0.1:$hport
auth = password
[direct]
resolver_servers = 127.0.0.1:$dns_port
[auth_local]
users = alice:$hash
EOC
  : >"$T/ph.log"
  start_proxyhost "$T/j.ini"
  J_PID=$PH_PID
  wait_for healthy "$admin"; ok $? "JSON mode with auth = password starts"
  wait_for port_open "$sport"
  out=$("$CURL" -s -m 10 --noproxy '' \
    --proxy "socks5h://alice:k9-Very-Secret@127.0.0.1:$sport" "$U")
  is "$out" hello "socks5 with the password"
  out=$("$CURL" -s -m 10 --noproxy '' -U 'alice:k9-Very-Secret' \
    --proxy "http://127.0.0.1:$hport" "$U")
  is "$out" hello "http_proxy with the password"
  "$CURL" -s -m 5 --noproxy '' --proxy "socks5h://alice:wrong-Secret@127.0.0.1:$sport" \
    "$U" >/dev/null 2>&1
  sed -i 's/^auth = password$/auth = password\nallow_clients = not-a-network/' "$T/j.ini"
  kill -HUP "$J_PID"
  wait_for grep -q "refused" "$T/ph.log"
  sleep 0.3
  running "$J_PID"; ok $? "a refused reload keeps it running"
  kill -TERM "$J_PID"
  wait_exit "$J_PID" 10; is "$EXIT" 0 "JSON mode drains and exits 0"
  json_only "$T/ph.log" 2>"$T/json.err"
  ok $? "every stderr line is JSON ($(wc -l <"$T/ph.log") lines) $(head -c 200 "$T/json.err")"
  like "$(cat "$T/ph.log")" '"msg":"reload refused: configuration invalid; keeping the old one"' \
    "the refused reload was logged, as JSON"
  log=$(cat "$T/ph.log")
  like "$log" '"msg":"access"' "access lines in JSON"
  like "$log" '"user":"alice","method":"CONNECT","status":"succeeded"' \
    "the socks5 line names the authenticated user"
  like "$log" '"user":"alice","method":"GET","status":"2xx","status_code":200' \
    "the http line too"
  unlike "$log" "k9-Very-Secret" "the password is in no line, at debug level (TM-SEC-9)"
  unlike "$log" "wrong-Secret" "nor a wrong one"
  unlike "$log" "$(printf 'alice:k9-Very-Secret' | base64)" "nor the encoded credentials"
  unlike "$log" "ok.test" "no target without log_target"
else
  skip "auth_local not built"
fi

done_testing
