#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Streams without a socket (SDK 1.2, stream.h) in real proxyhost
# processes: the socks5 and http_proxy frontends with the memconn test
# connector (t/modules/memconn.c), whose streams are in-memory queues
# with a window. curl fetches an HTTP response the stream itself makes
# (http.mem), through SOCKS5, an HTTP CONNECT tunnel and HTTP
# forwarding; no
# queue goes above its window, every stream is closed, and SIGTERM
# drains. Requirements: TM-SEC-1 (bounded queues), TM-SEC-7 (nothing of
# a stream remains after its close).
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
MODS="$top_builddir/modules"
MEMCONN="$top_builddir/t/modules/.libs/memconn.so"

require_modules socks5 http_proxy

metrics_of() { http_get "http://127.0.0.1:$1/metrics"; }

admin=$(free_port)
sport=$(free_port)
hport=$(free_port)
cat >"$T/s.ini" <<EOC
[proxyhost]
modules = socks5, http_proxy, $MEMCONN
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[socks5]
listen = 127.0.0.1:$sport
[http_proxy]
listen = 127.0.0.1:$hport
[memconn]
window = 8KiB
EOC
start_proxyhost "$T/s.ini"
PID=$PH_PID
wait_for healthy "$admin"; ok $? "socks5 and http_proxy on the memconn connector"

# The body http.mem sends: PORT KiB of byte i = i % 251.
$PY -c 'import sys; n=int(sys.argv[1])*1024; sys.stdout.buffer.write(bytes(i % 251 for i in range(n)))' 300 >"$T/want"

"$CURL" -s -m 20 --socks5-hostname "127.0.0.1:$sport" -o "$T/got.socks" \
  -w '%{http_code}' "http://http.mem:300/" >"$T/code.socks" 2>&1
is "$(cat "$T/code.socks")" 200 "curl through SOCKS5 to a stream: 200"
cmp -s "$T/want" "$T/got.socks"; ok $? "and 300 KiB from the stream, intact"

"$CURL" -s -m 20 -p -x "http://127.0.0.1:$hport" -o "$T/got.http" \
  -w '%{http_code}' "http://http.mem:300/" >"$T/code.http" 2>&1
is "$(cat "$T/code.http")" 200 "curl through an HTTP CONNECT tunnel to a stream: 200"
cmp -s "$T/want" "$T/got.http"; ok $? "and the same 300 KiB"

"$CURL" -s -m 20 -x "http://127.0.0.1:$hport" -o "$T/got.fwd" \
  -w '%{http_code}' "http://http.mem:300/" >"$T/code.fwd" 2>&1
is "$(cat "$T/code.fwd")" 200 "curl forwarded by http_proxy over a stream: 200"
cmp -s "$T/want" "$T/got.fwd"; ok $? "and the same 300 KiB, reframed"

err=$("$CURL" -sS -m 10 -o /dev/null \
  --socks5-hostname "127.0.0.1:$sport" "http://nowhere.test/" 2>&1)
like "$err" "nowhere.test. (5)" "a target the connector refuses: SOCKS5 reply 0x05"

m=$(metrics_of "$admin")
qmax=$(metric "$m" memconn_queue_max_bytes)
[ "${qmax:-0}" -gt 0 ] && [ "${qmax:-0}" -le 8192 ]
ok $? "no stream queue held more than its 8 KiB window ($qmax, TM-SEC-1)"
is "$(metric "$m" memconn_streams)" 0 "every stream closed (TM-SEC-7)"
is "$(metric "$m" memconn_streams_closed_total)" 3 "each exactly once"
v=$(metric "$m" 'tunnelmesh_stream_open_total{component="client",result="success",error_class="ok",open_mode="strict"}')
[ "${v:-0}" -ge 3 ]; ok $? "the opens counted as successes ($v)"

kill -TERM "$PID"
wait_exit "$PID" 10; is "$EXIT" 0 "SIGTERM: drained, exit 0"

done_testing
