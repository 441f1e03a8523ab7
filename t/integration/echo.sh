#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The echo endpoint (modules/echo, issue 26, CP-6-4) in a real proxyhost:
# its sample passes --check-config; a GET gets JSON with the address the
# listener saw, the headers and the nonce (header or query); other
# methods and over-size heads get their status; a client that sends no
# whole head is cut at read_timeout; the answers are counted.
. "$top_srcdir/t/lib/testlib.sh"

require_modules echo
MODS="$top_builddir/modules"
printf '[proxyhost]\nmodule_path = %s\ninclude = %s/conf.d/*.ini\n' "$MODS" "$T" >"$T/base.ini"
mkdir -p "$T/conf.d"
cp "$top_srcdir/modules/echo/echo.ini.sample" "$T/conf.d/echo.ini"
"$PROXYHOST" -c "$T/base.ini" --check-config >"$T/check.out" 2>&1
is $? 0 "the sample passes --check-config as a drop-in"
"$PROXYHOST" -c "$T/base.ini" --set echo.read_timeout=10ms --check-config >"$T/check.out" 2>&1
is $? 2 "--check-config refuses read_timeout below 100ms"

E=$(free_port) A=$(free_port)
printf '[proxyhost]\nmodules = echo\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[echo]\nlisten = 127.0.0.1:%s\nread_timeout = 300ms\n' \
  "$MODS" "$A" "$E" >"$T/echo.ini"
start_proxyhost "$T/echo.ini"
wait_for port_open "$E"
ok $? "the echo endpoint listens"
out=$("$CURL" -s -m 5 -H 'Via: 1.1 somewhere' "http://127.0.0.1:$E/?nonce=q-1")
like "$out" '"remote_addr":"127.0.0.1"' "CP-6-4 the address the echo saw"
like "$out" '"nonce":"q-1"' "CP-6-4 the nonce of the query"
like "$out" '["Via","1.1 somewhere"]' "CP-6-4 the request's headers"
out=$("$CURL" -s -m 5 -H 'X-Proxyhost-Nonce: h-2' "http://127.0.0.1:$E/x?nonce=q-2")
like "$out" '"nonce":"h-2"' "CP-6-4 the nonce header wins over the query"
is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$E/")" 405 "POST: 405"
hdrs=""
i=0
while [ $i -lt 70 ]; do hdrs="$hdrs -H X-F$i:v"; i=$((i + 1)); done
# shellcheck disable=SC2086
is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' $hdrs "http://127.0.0.1:$E/")" 431 "70 header fields: 431"
"${PYTHON3:-python3}" -c 'import socket,sys,time
s=socket.create_connection(("127.0.0.1",int(sys.argv[1])),2); s.sendall(b"GET / HTTP/1.1\r\n"); s.settimeout(5)
print("closed" if s.recv(100)==b"" else "answered")' "$E" >"$T/slow.out" 2>&1
is "$(cat "$T/slow.out")" closed "a head not whole within read_timeout: closed without an answer"
m=$(http_get "http://127.0.0.1:$A/metrics" | grep '^proxyhost_echo_requests_total')
like "$m" 'result="ok"} 2' "answers counted by result"
like "$m" 'result="timeout"} 1' "... and the timeouts"
done_testing
