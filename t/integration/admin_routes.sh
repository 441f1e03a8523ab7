#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Modules' routes on the admin listener (SDK 1.3) in a real proxyhost
# process, with curl: the probe test module serves /v1/probe and echoes
# what the host handed it (method, path, query, whether Authorization
# came, the content type, the body); bodies up to [admin] max_body, 413
# above, 411 for chunked; an answer given later; the deadline (504) and a
# client leaving both cancel the module's request; /metrics stays GET and
# HEAD; a prefix taken by two module instances stops the start, naming
# both.
. "$top_srcdir/t/lib/testlib.sh"

port=$(free_port)
write_conf() { # EXTRA-PROBE-LINES [EXTRA-SECTIONS]
  cat >"$T/run.ini" <<EOC
[proxyhost]
modules = probe
module_path = $TMOD, $top_builddir/modules
[admin]
listen = 127.0.0.1:$port
max_body = 2KiB
timeout = 1s
[probe]
route = /v1/probe
$1
EOC
}
url="http://127.0.0.1:$port"
write_conf ""
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "proxyhost with a module route starts"

out=$("$CURL" -s -m 5 -X POST -H 'Authorization: Bearer s3cr3t-value' \
  -H 'Content-Type: application/json' --data '{"a":1}' \
  -w '\n%{http_code} %{content_type}' "$url/v1/probe/x/y?q=1&r=2")
like "$out" "method=POST path=/v1/probe/x/y query=q=1&r=2 auth=present type=application/json len=7 body={\"a\":1}" \
  "POST with a body: the module gets method, path, query, type and body"
like "$out" "200 text/plain; charset=utf-8" "... and answers with its status and type"
unlike "$out" "s3cr3t-value" "... the Authorization value is not echoed"
for m in GET PATCH DELETE; do
  out=$("$CURL" -s -m 5 -X $m "$url/v1/probe")
  like "$out" "method=$m path=/v1/probe query= auth=absent" "$m reaches the route"
done
is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' -X PUT "$url/v1/probe")" 405 \
  "PUT: 405"
is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' "$url/v1/probez")" 404 \
  "a path beside the prefix: 404"
is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' -X POST "$url/metrics")" 405 \
  "/metrics is still GET and HEAD only"

head -c 2048 /dev/zero | tr '\0' 'x' >"$T/2k"
head -c 2049 /dev/zero | tr '\0' 'x' >"$T/2k1"
out=$("$CURL" -s -m 5 -X POST -H 'Content-Type: text/plain' --data-binary @"$T/2k" "$url/v1/probe")
like "$out" "len=2048 body=xxxx" "a body of exactly max_body is read whole"
is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' -X POST --data-binary @"$T/2k1" "$url/v1/probe")" 413 \
  "one byte more: 413"
is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' -X POST -H 'Transfer-Encoding: chunked' --data-binary @"$T/2k" "$url/v1/probe")" 411 \
  "a chunked body: 411"

# Answered later, and cancelled by the deadline or the client leaving.
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
write_conf "route_delay = 200ms"
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "restarted with route_delay"
out=$("$CURL" -s -m 5 -w ' %{http_code}' "$url/v1/probe/later")
like "$out" "path=/v1/probe/later" "an answer given 200 ms later arrives"
like "$out" " 200" "... with its status"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10
write_conf "route_delay = 60s"
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "restarted with a module that does not answer"
is "$("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' "$url/v1/probe")" 504 \
  "no answer by [admin] timeout: 504"
"$CURL" -s -m 1 "$url/v1/probe" >/dev/null 2>&1
cancels() { [ "$(metric "$(http_get "$url/metrics")" probe_route_cancels_total)" = 2 ]; }
wait_for cancels; ok $? "the deadline and a client leaving each cancelled the module's request"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "stops cleanly with requests cancelled"

# Two instances claiming one prefix: the start fails, naming both.
cat >"$T/dup.ini" <<EOC
[proxyhost]
modules = probe.a, probe.b
module_path = $TMOD
[admin]
listen = 127.0.0.1:$port
[probe.a]
route = /v1/probe
[probe.b]
route = /v1/probe/sub
EOC
"$PROXYHOST" -c "$T/dup.ini" >"$T/dup.out" 2>&1; rc=$?
is "$rc" 4 "a prefix inside another module's: exit 4"
like "$(cat "$T/dup.out")" "route /v1/probe/sub of module probe.b overlaps route /v1/probe of module probe.a" \
  "... naming both modules"

done_testing
