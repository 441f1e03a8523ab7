#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The http_proxy frontend against hostile peers (issue 7): a real
# proxyhost process with the real direct connector, the well-behaved
# origin t/lib/http_target.py, and t/lib/hostile_origin.py, an origin that
# answers with canned raw bytes (malformed framing, interim heads, a
# response hidden in a chunk extension) and records the requests it read,
# plus its raw client that sends several requests on one proxy connection
# and checks what came back under RFC 9112's strict rules. Each section
# proves one defect of issue 7 fixed (D1, D2, D3, D5, D6; D4 has unit
# tests): it fails on the code the issue was filed against. A few
# well-behaved exchanges come first, so that a fix cannot overreach.
# Requirement IDs are cited next to the checks.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
TARGET="$PY $top_srcdir/t/lib/http_target.py"
HOSTILE="$PY $top_srcdir/t/lib/hostile_origin.py"
MODS="$top_builddir/modules"

require_modules http_proxy direct

metrics_of() { http_get "http://127.0.0.1:$1/metrics"; }
# hcurl ARGS...: curl through the proxy $HP, quiet, bounded.
hcurl() { "$CURL" -s -m 10 -x "http://127.0.0.1:$HP" "$@"; }
# raw [OPTIONS] REQUEST...: the hostile client, on one connection to $HP.
raw() { $HOSTILE client --port "$HP" "$@"; }
# The verdicts the raw client prints after the bytes it got.
finals_of() { printf '%s\n' "$1" | sed -n 's/^# finals *//p'; }
stream_of() { printf '%s\n' "$1" | sed -n 's/^# stream //p'; }
# sound OUT: what the client got is well framed, or ends in a closed
# connection inside a message (the proxy cut off what it could not frame).
sound() {
  case "$(stream_of "$1")" in ok | cut) return 0 ;; *) return 1 ;; esac
}
# bad_or_closed OUT: the client got through, and the final answer is 502
# or there is none (closed).
bad_or_closed() {
  printf '%s\n' "$1" | grep -q '^--- end 1: [a-z]*' || return 1
  case "$(finals_of "$1")" in 502 | "") return 0 ;; *) return 1 ;; esac
}
# reached PATH: how many requests for PATH the hostile origin read.
reached() { awk -v p="$1" '$1 == "REQ" && $4 == p' "$T/origin.rec" | wc -l; }
CR=$(printf '\r')

# ---- targets --------------------------------------------------------------
start_dnsd ok.test=127.0.0.1
ok $? "DNS test server on loopback"
$TARGET serve --port-file "$T/http.port" --lifetime 300 >"$T/http.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/http.port"; ok $? "well-behaved HTTP/1.1 origin on 127.0.0.1"
tp=$(cat "$T/http.port")
O="http://127.0.0.1:$tp"
: >"$T/origin.rec"
$HOSTILE serve --port-file "$T/hostile.port" --record "$T/origin.rec" \
  --lifetime 300 >"$T/hostile.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/hostile.port"; ok $? "hostile origin on 127.0.0.1"
hop=$(cat "$T/hostile.port")
H="http://127.0.0.1:$hop"
# get PATH [VERSION]: a raw request for PATH on the hostile origin.
get() { printf 'GET %s%s HTTP/%s\\r\\nHost: 127.0.0.1:%s\\r\\n\\r\\n' "$H" "$1" "${2:-1.1}" "$hop"; }

# ---- proxyhost A: http_proxy + direct ----------------------------------------
admin=$(free_port)
HP=$(free_port)
cat >"$T/a.ini" <<EOC
[proxyhost]
modules = http_proxy, direct
module_path = $MODS
drain_timeout = 3s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[http_proxy]
listen = 127.0.0.1:$HP
header_timeout = 3s
[direct]
resolver_servers = 127.0.0.1:$dns_port
connect_timeout = 1s
EOC
start_a() {
  : >>"$T/ph.log"
  a_log_from=$(($(wc -l <"$T/ph.log") + 1))
  start_proxyhost "$T/a.ini"
  A_PID=$PH_PID
  wait_for port_open "$HP"
}
start_a; ok $? "proxyhost with http_proxy + direct listens"
# A check that killed the process must not take the later ones with it.
restart_dead_a() {
  if ! running "$A_PID"; then
    echo "# proxyhost A died; its log says:"
    tail -n +"$a_log_from" "$T/ph.log" | grep -m1 -A6 'ERROR: AddressSanitizer' |
      sed 's/^/#   /'
    wait "$A_PID" 2>/dev/null
    start_a
  fi
}

# ---- well-behaved exchanges: the fixes must keep them working -----------------
is "$(hcurl "$O/hello")" "hello through http_proxy" "Content-Length response"
is "$(hcurl "$O/chunked")" "chunk-one
chunk-two" "chunked response (http_target)"
is "$(hcurl "$H/chunked")" "hello world" "chunked response (hostile origin's valid one)"
is "$(hcurl "$O/close")" "framed by close" "close-delimited response (http_target)"
is "$(hcurl "$H/close")" "framed by close" "close-delimited response (hostile origin)"
out=$(hcurl -D - "$H/ext-trailer")
like "$out" "hello world" "valid chunked response with chunk extensions and a trailer: body decoded"
out=$(raw "$(get /ext-trailer)")
is "$(stream_of "$out")" ok "and what the client got is strictly framed"
like "$out" "body=b'hello world'" "with the whole body"
head -c 200000 /dev/urandom >"$T/post.bin"
hcurl -v -H 'Expect: 100-continue' --data-binary "@$T/post.bin" \
  -o "$T/post.out" "$O/echo" 2>"$T/post.err"
like "$(cat "$T/post.err")" "< HTTP/1.1 100 Continue" "Expect: 100-continue POST: the origin's 100 reaches curl"
cmp -s "$T/post.bin" "$T/post.out"; ok $? "and the body is echoed whole"
hcurl -v "$O/hello" "$H/ok" >"$T/ka.out" 2>"$T/ka.err"
like "$(cat "$T/ka.err")" "Re-using existing connection" "keep-alive across two origins still works"
like "$(cat "$T/ka.out")" "ok from the hostile origin" "and the second answer is the second origin's"

# ---- D1: interim (1xx) responses: no use-after-free ---------------------------
# A malformed final head after a 100, more 100s than the proxy takes, and
# a 101 nobody asked for: the client gets 502 or a closed connection, the
# process stays up (ASan in make check: no use-after-free), and the next
# client is served.
for p in /d1/bad-after-100 /d1/nine-100 /d1/100-101; do
  out=$(raw "$(get $p)")
  bad_or_closed "$out"
  ok $? "D1 $p: 502 or closed (got finals '$(finals_of "$out")')"
  # A process dying under ASan still accepts while it writes its report:
  # the next request waits for it, then the process is looked at (after a
  # moment: it may be exiting).
  is "$(hcurl "$O/hello")" "hello through http_proxy" "D1 $p: the next request succeeds"
  sleep 0.5
  running "$A_PID"; ok $? "D1 $p: the proxy process is still running"
  restart_dead_a
done

# ---- D2: response framing the proxy cannot parse strictly --------------------
# A chunk extension with a bare LF hides a whole response from the proxy:
# a client reusing its proxy connection must never read it as the answer
# to its next request to another origin.
out=$(hcurl -D - "$H/d2/inject" "$O/hello")
unlike "$out" "injected" "D2 inject (curl, two URLs): the injected response never reaches the client"
like "$out" "hello through http_proxy" "D2 inject (curl): the answer from origin B is B's"
out=$(raw "$(get /d2/inject)" \
  "GET $O/hello HTTP/1.1\\r\\nHost: 127.0.0.1:$tp\\r\\n\\r\\n")
unlike "$out" "injected" "D2 inject (raw, one connection): no byte of the hidden response"
sound "$out"; ok $? "D2 inject: what the client got is strictly framed or cut by close (got '$(stream_of "$out")')"
restart_dead_a
# Chunk data not followed by CRLF, a size line ended by a bare CR, a
# space after the size: never forwarded as they came; the proxy re-frames
# what it forwards, or cuts the response off.
out=$(raw "$(get /d2/no-crlf)")
unlike "$out" "helloXY" "D2 chunk data without CRLF is not forwarded verbatim"
sound "$out"; ok $? "D2 no-crlf: the client's stream is well framed or cut (got '$(stream_of "$out")')"
out=$(raw "$(get /d2/bare-cr)")
unlike "$out" "5${CR}X" "D2 size line ended by a bare CR (5 CR X) is not forwarded verbatim"
sound "$out"; ok $? "D2 bare-cr: the client's stream is well framed or cut (got '$(stream_of "$out")')"
out=$(raw "$(get /d2/size-space)")
unlike "$out" "5 $CR" "D2 size line with a space after the size (5 SP CRLF) is not forwarded verbatim"
sound "$out"; ok $? "D2 size-space: the client's stream is well framed or cut (got '$(stream_of "$out")')"
running "$A_PID"; ok $? "the process survived the hostile responses"
restart_dead_a

# ---- D2: request framing the proxy cannot parse strictly ----------------------
# The same trick in a request body hides a second request from the proxy;
# an origin that ends lines at LF would read it. 400, and the origin reads
# one request at most (its head), never the hidden one.
sb=$($HOSTILE body smuggle)
out=$(raw "POST $H/d2/req-smuggle HTTP/1.1\\r\\nHost: 127.0.0.1:$hop\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n$sb")
sleep 0.3 # what the origin read is recorded at once; give it a moment
is "$(finals_of "$out")" 400 "D2 smuggling request body (bare LF in a chunk extension) -> 400"
like "$out" "body=b'400 Bad Request" "the body names the status only (TM-SEC-2)"
is "$(reached /smuggled)" 0 "D2 the origin never reads the hidden request"
[ "$(reached /d2/req-smuggle)" -le 1 ]; ok $? "D2 and reads the outer one at most once"
# RFC 9112 section 6.1: Transfer-Encoding in an HTTP/1.0 request is faulty framing.
out=$(raw "POST $H/d2/req-10-chunked HTTP/1.0\\r\\nHost: 127.0.0.1:$hop\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n0\\r\\n\\r\\n")
is "$(finals_of "$out")" 400 "D2 HTTP/1.0 request with Transfer-Encoding: chunked -> 400"
is "$(reached /d2/req-10-chunked)" 0 "D2 and nothing of it reaches the origin"
out=$(raw "POST $H/d2/req-identity-chunked HTTP/1.1\\r\\nHost: 127.0.0.1:$hop\\r\\nTransfer-Encoding: identity, chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n0\\r\\n\\r\\n")
case "$(finals_of "$out")" in 400 | 501) r=0 ;; *) r=1 ;; esac
ok $r "D2 Transfer-Encoding: identity, chunked -> 400 or 501 (got '$(finals_of "$out")')"
is "$(reached /d2/req-identity-chunked)" 0 "D2 and nothing of it reaches the origin"
out=$(raw "POST $H/d2/req-cl-te HTTP/1.1\\r\\nHost: 127.0.0.1:$hop\\r\\nContent-Length: 5\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n0\\r\\n\\r\\n")
is "$(finals_of "$out")" 400 "D2 Content-Length and Transfer-Encoding together -> 400"
is "$(reached /d2/req-cl-te)" 0 "D2 and nothing of it reaches the origin"

# ---- D2: an HTTP/1.0 client never receives chunked framing --------------------
out=$(raw "$(get /chunked 1.0)")
like "$out" "# response status=200 te=- " "D2 HTTP/1.0 client: no Transfer-Encoding in the response"
printf '%s\n' "$out" | grep -Eq "^# response status=200 te=- cl=[-0-9]+ framing=(close|length) body=b'hello world'\$"
ok $? "D2 HTTP/1.0 client: the plain body, framed by close or Content-Length"
like "$out" "--- end 1: closed ---" "D2 HTTP/1.0 client: the connection closes at its end"
is "$(stream_of "$out")" ok "D2 HTTP/1.0 client: the message is whole"

# ---- D6: what the user guide promises about request-targets and versions ------
out=$(raw "GET http://@127.0.0.1:$hop/d6/userinfo HTTP/1.1\\r\\nHost: 127.0.0.1:$hop\\r\\n\\r\\n")
is "$(finals_of "$out")" 400 "D6 empty userinfo (http://@host/) -> 400"
is "$(reached /d6/userinfo)" 0 "D6 and it is not forwarded"
out=$(raw "$(get /d6/http12 1.2)")
is "$(finals_of "$out")" 505 "D6 HTTP/1.2 -> 505"
is "$(reached /d6/http12)" 0 "D6 and it is not forwarded"

running "$A_PID"; ok $? "proxyhost A is still running at the end"
kill -TERM "$A_PID"
wait_exit "$A_PID" 10; is "$EXIT" 0 "A: SIGTERM, exit 0"

# ---- D3: a reload that tightens the policy applies to kept connections --------
# A client keeps its proxy connection (and the proxy its upstream) across a
# SIGHUP that makes direct deny the origin's port: its next request on the
# same connection gets 403, as a new connection does.
# reloads: how many reloads the log reports; reloaded_since N: more than N.
reloads() { grep -c 'msg="configuration reloaded"' "$T/ph.log"; }
reloaded_since() { [ "$(reloads)" -gt "$1" ]; }
# across_reload NAME REQUEST CONFIG-AFTER PID: sends REQUEST twice on one
# connection; between the two, CONFIG-AFTER replaces $T/NAME.ini and PID
# gets SIGHUP; the raw client's output is in $T/NAME.out.
across_reload() {
  rm -f "$T/$1.ready" "$T/$1.go"
  raw --timeout 20 --ready "$T/$1.ready" --go "$T/$1.go" --go-timeout 15 "$2" "$2" \
    >"$T/$1.out" 2>&1 &
  cl=$!
  PIDS="$PIDS $cl"
  wait_file "$T/$1.ready" || echo "# the first answer did not come"
  n=$(reloads)
  cp "$3" "$T/$1.ini"
  kill -HUP "$4"
  wait_for reloaded_since "$n"
  ok $? "$1: the reload happened (logged) before the second request"
  : >"$T/$1.go"
  wait_exit "$cl" 15
}
HP=$(free_port)
admin=$(free_port)
cat >"$T/policy.ini" <<EOC
[proxyhost]
modules = http_proxy, direct
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[http_proxy]
listen = 127.0.0.1:$HP
[direct]
resolver_servers = 127.0.0.1:$dns_port
deny_ports =
EOC
sed "s/^deny_ports =.*/deny_ports = $hop/" "$T/policy.ini" >"$T/policy.after"
start_proxyhost "$T/policy.ini"
C_PID=$PH_PID
wait_for port_open "$HP"; ok $? "proxyhost C (policy reload) listens"
across_reload policy "$(get /ok)" "$T/policy.after" "$C_PID"
out=$(cat "$T/policy.out")
is "$(finals_of "$out" | cut -d' ' -f1)" 200 "D3 before the reload: 200"
is "$(finals_of "$out")" "200 403" "D3 after a reload denying the port, the same connection gets 403"
is "$(hcurl -o /dev/null -w '%{http_code}' "$H/ok")" 403 "and a new connection gets 403 too"
kill -TERM "$C_PID"
wait_exit "$C_PID" 10; is "$EXIT" 0 "C exits 0"

# Likewise a verified Proxy-Authorization does not outlive a reload that
# removed its user: 407 on the same connection.
if have_auth_local; then
  hash=$(password_hash s3cret-pw)
  HP=$(free_port)
  admin=$(free_port)
  password_config http_proxy "$HP" "127.0.0.1:$admin" "$hash" >"$T/auth.ini"
  sed 's/^users = alice:/users = bob:/' "$T/auth.ini" >"$T/auth.after"
  start_proxyhost "$T/auth.ini"
  D_PID=$PH_PID
  wait_for port_open "$HP"; ok $? "proxyhost D (auth = password, auth_local) listens"
  cred=$(printf 'alice:s3cret-pw' | base64)
  req="GET $H/ok HTTP/1.1\\r\\nHost: 127.0.0.1:$hop\\r\\nProxy-Authorization: Basic $cred\\r\\n\\r\\n"
  across_reload auth "$req" "$T/auth.after" "$D_PID"
  out=$(cat "$T/auth.out")
  is "$(finals_of "$out" | cut -d' ' -f1)" 200 "D3 alice verified: 200"
  is "$(finals_of "$out")" "200 407" "D3 after a reload removing alice, the same connection gets 407"
  is "$(hcurl -U alice:s3cret-pw -o /dev/null -w '%{http_code}' "$H/ok")" 407 \
    "and a new connection gets 407 too"
  unlike "$(cat "$T/ph.log")" "s3cret-pw" "the password never reaches the log"
  kill -TERM "$D_PID"
  wait_exit "$D_PID" 10; is "$EXIT" 0 "D exits 0"
else
  skip "auth_local or proxyhost-passwd not built (configure --disable-module-auth_local)"
fi

# ---- D5: a partial request head does not hold up shutdown ---------------------
# A client that sent half a request line is not a stream in progress:
# SIGTERM closes it and exits 0 at once, not after drain_timeout.
HP=$(free_port)
admin=$(free_port)
cat >"$T/drain.ini" <<EOC
[proxyhost]
modules = http_proxy, direct
module_path = $MODS
drain_timeout = 10s
[admin]
listen = 127.0.0.1:$admin
[http_proxy]
listen = 127.0.0.1:$HP
header_timeout = 60s
[direct]
resolver_servers = 127.0.0.1:$dns_port
EOC
start_proxyhost "$T/drain.ini"
E_PID=$PH_PID
wait_for healthy "$admin"; ok $? "proxyhost E (drain_timeout = 10s) is healthy"
raw --timeout 20 'GET http://ok.te' >"$T/half.out" 2>&1 &
HALF=$!
PIDS="$PIDS $HALF"
one_client() { [ "$(metric "$(metrics_of "$admin")" proxyhost_http_proxy_clients)" = 1 ]; }
wait_for one_client; ok $? "the half-head client is connected"
sleep 0.2 # its bytes are read
t0=$(date +%s)
kill -TERM "$E_PID"
wait_exit "$E_PID" 5
is "$EXIT" 0 "D5 SIGTERM with a half-sent head: exit 0 within 5 s (drain_timeout is 10 s)"
if [ "$EXIT" = timeout ]; then
  wait_exit "$E_PID" 10
  echo "# it exited $EXIT after $(($(date +%s) - t0)) s"
fi
wait_exit "$HALF" 10
like "$(cat "$T/half.out")" "--- end 1: closed ---" "the half-head client saw its connection closed"

done_testing
