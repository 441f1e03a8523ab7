#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The status page and GET /v1/status (issue 28, SDK 1.7 status panels) in
# a real proxyhost process, with curl: off (404) without [admin]
# token_file; 401 without a cookie or token; the login form (a wrong
# token: 401; the right one: a session cookie HttpOnly, SameSite=Strict,
# Max-Age, Path=/); the page with the cookie shows the host's process
# panel and the probe module's panel, its <script> escaped; /v1/status
# with a Bearer token is JSON; paging; the token never in a URL (400);
# the security headers; logout ends the session; max_sessions drops the
# oldest. The cookie is named after the listener's port: two listeners
# on 127.0.0.1 keep their sessions in one cookie jar. The login throttle
# ([admin] login_failures): after 3 failures the right token gets 429
# with Retry-After, counted as throttled, while the other listener and
# the Bearer token are unaffected. Session expiry and the throttle's
# window are in t/unit/host/test_status.c (a test clock).
. "$top_srcdir/t/lib/testlib.sh"

port=$(free_port)
url="http://127.0.0.1:$port"
tok="$T/admin.token"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tok"
chmod 600 "$tok"
TOKEN=$(cat "$tok")
write_conf() { # TOKEN-FILE-LINE
  cat >"$T/run.ini" <<EOC
[proxyhost]
modules = probe
module_path = $TMOD, $top_builddir/modules
[admin]
listen = 127.0.0.1:$port
$1
max_sessions = 2
status_rows = 3
[probe]
panel_text = <script>alert(1)</script> & 'q' "d"
panel_rows = 7
EOC
}
code() { "$CURL" -s -m 5 -o /dev/null -w '%{http_code}' "$@"; }

# Off without token_file.
write_conf ""
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "proxyhost starts without token_file"
out=$("$CURL" -s -m 5 -w ' %{http_code}' "$url/ui/")
is "$out" "status page off: set [admin] token_file
 404" "/ui/ without token_file: 404 naming the key"
is "$(code -H "Authorization: Bearer $TOKEN" "$url/v1/status")" 404 \
  "/v1/status without token_file: 404"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10

# A token file the rules refuse stops --check-config.
cp "$tok" "$T/loose.token"; chmod 644 "$T/loose.token"
write_conf "token_file = $T/loose.token"
out=$("$PROXYHOST" -c "$T/run.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "a token file readable by others: --check-config exits 2"
like "$out" "admin.token_file: token_file $T/loose.token: readable or writable by group or others" \
  "... naming the file and the rule"

write_conf "token_file = $tok"
start_proxyhost "$T/run.ini"
wait_for healthy "$port"; ok $? "proxyhost starts with token_file"

is "$(code "$url/ui/")" 401 "/ui/ without a cookie: 401"
like "$("$CURL" -s -m 5 "$url/ui/")" 'action="/ui/login"' "... with the login form"
out=$("$CURL" -s -m 5 -w ' %{http_code}' "$url/v1/status")
like "$out" '{"error":{"code":"unauthorized"' "/v1/status without a token: 401 JSON"
like "$out" " 401" "... status 401"
is "$(code -H "Authorization: Bearer ${TOKEN}x" "$url/v1/status")" 401 \
  "/v1/status with a wrong token: 401"
is "$(code -H "Cookie: ph_session_$port=$(printf '%064d' 0)" "$url/ui/")" 401 \
  "/ui/ with a made-up session: 401"

# The security headers on every /ui/ answer.
hdr=$("$CURL" -s -m 5 -D - -o /dev/null "$url/ui/login")
like "$hdr" "Content-Security-Policy: default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'" \
  "/ui/login: the Content-Security-Policy"
like "$hdr" "X-Content-Type-Options: nosniff" "... nosniff"
like "$hdr" "Referrer-Policy: no-referrer" "... no-referrer"
like "$hdr" "Cache-Control: no-store" "... no-store"
css=$("$CURL" -s -m 5 -w ' %{http_code} %{content_type}' "$url/ui/style.css")
like "$css" "overflow-x:auto" "/ui/style.css: tables scroll sideways"
like "$css" " 200 text/css" "... served as text/css without a cookie"

# The token never in a URL.
is "$(code "$url/ui/?token=$TOKEN")" 400 "/ui/?token=...: 400"
is "$(code "$url/ui/login?token=$TOKEN")" 400 "/ui/login?token=...: 400"

# Logging in.
out=$("$CURL" -s -m 5 -w ' %{http_code}' --data-urlencode "token=${TOKEN}x" "$url/ui/login")
like "$out" "wrong token" "a wrong token: the form says so"
like "$out" " 401" "... 401"
unlike "$(cat "$T/ph.log")" "${TOKEN}" "the log never holds the token"
hdr=$("$CURL" -s -m 5 -D - -o /dev/null --data-urlencode "token=$TOKEN" "$url/ui/login")
like "$hdr" "HTTP/1.1 303" "the right token: 303"
like "$hdr" "Location: /ui/" "... to /ui/"
like_re "$hdr" "Set-Cookie: ph_session_$port=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict; Max-Age=1800" \
  "... a session cookie named after the listener's port: HttpOnly, SameSite=Strict, Max-Age, Path=/"
cookie=$(printf '%s\n' "$hdr" | sed -n 's/^Set-Cookie: \(ph_session_[0-9]*=[0-9a-f]*\);.*/\1/p')
is "$(code -H "Cookie: ph_session=${cookie#*=}" "$url/ui/")" 401 \
  "... the same id under the old shared name ph_session opens nothing"
page=$("$CURL" -s -m 5 -H "Cookie: $cookie" -w ' %{http_code}' "$url/ui/")
like "$page" " 200" "the page with the cookie: 200"
like "$page" "<h3>Process</h3>" "... the host's process panel"
like "$page" "<dt>abi</dt><dd>$(abi_field MAJOR).$(abi_field MINOR)</dd>" "... with the ABI"
like "$page" '<meta http-equiv="refresh" content="5">' "... refreshing itself"
like "$page" "<td>probe</td><td>probe</td>" "... the modules table lists the probe"
like "$page" "<h3>Probe &lt;panel&gt;</h3>" "... the module's panel, its title escaped"
like "$page" "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;q&#39; &quot;d&quot;" \
  "... the module's value escaped"
unlike "$page" "<script" "... no <script> anywhere"
unlike "$page" "http://" "... no external resource"
like "$page" '<a href="/ui/probe/probe/items?offset=3">next</a>' \
  "... a table longer than status_rows links to its next page"
tpage=$("$CURL" -s -m 5 -H "Cookie: $cookie" "$url/ui/probe/probe/items?offset=3")
like "$tpage" '<td>item-00003</td><td class="n">3</td>' "the table's page from offset 3"
like "$tpage" 'offset=0">previous</a>' "... links back"
like "$tpage" 'offset=6">next</a>' "... and on"
is "$(code -H "Cookie: $cookie" "$url/ui/probe/probe/nope")" 404 "an unknown table: 404"
is "$(code -H "Cookie: $cookie" -X DELETE "$url/ui/")" 405 "DELETE /ui/: 405"

# /v1/status for scripts.
"$CURL" -s -m 5 -H "Authorization: Bearer $TOKEN" "$url/v1/status" >"$T/status.json"
check=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
i = {x["instance"]: x for x in d["instances"]}
p = i["proxyhost"]["panels"][0]
f = p["fields"]
print(d["status_version"], i["proxyhost"]["module"], p["name"], p["title"],
      f["ready"], type(f["uptime_s"]).__name__, type(f["open_fds"]).__name__,
      type(f["rss_bytes"]).__name__, p["tables"][0]["columns"],
      p["tables"][0]["rows"])
pr = i["probe"]["panels"][0]
t = pr["tables"][0]
print(pr["fields"]["text"], pr["fields"]["rows"], t["rows"][0], t["offset"], t["more"])
' "$T/status.json" 2>&1)
like "$check" "1 proxyhost process Process yes int int int ['instance', 'module', 'version'] [['probe', 'probe', '1.0']]" \
  "/v1/status with the Bearer token: JSON with the host's process panel"
like "$check" "<script>alert(1)</script> & 'q' \"d\" 7 ['item-00000', 0, '<script>alert(1)</script> & \\'q\\' \"d\"'] 0 True" \
  "... the module's panel: text as is, numbers as numbers, more=true"
out=$("$CURL" -s -m 5 -H "Authorization: Bearer $TOKEN" "$url/v1/status/probe/probe/items?offset=5&limit=3")
like "$out" '"rows":[["item-00005",5,' "a table's page by offset and limit"
like "$out" '"offset":5,"more":false' "... its end: more=false"
out=$("$CURL" -s -m 5 -H "Authorization: Bearer $TOKEN" "$url/v1/status/probe/probe/items?key=item-00004")
like "$out" '"rows":[["item-00004",4,' "key= selects one row"
is "$(code -H "Authorization: Bearer $TOKEN" "$url/v1/status/probe/probe/items?limit=4")" 400 \
  "a limit above status_rows: 400"
is "$(code -H "Authorization: Bearer $TOKEN" "$url/v1/status/probe/probe/items?x=1")" 400 \
  "an unknown parameter: 400"
is "$(code -H "Authorization: Bearer $TOKEN" "$url/v1/status/nobody")" 404 \
  "an unknown instance: 404"
is "$(code -H "Cookie: $cookie" "$url/v1/status/proxyhost")" 200 \
  "/v1/status takes the session cookie too"
is "$(code -H "Authorization: Bearer $TOKEN" -X POST "$url/v1/status")" 405 \
  "POST /v1/status: 405"

# max_sessions = 2: a third login drops the oldest.
login() {
  "$CURL" -s -m 5 -D - -o /dev/null --data-urlencode "token=$TOKEN" "$url/ui/login" |
    sed -n 's/^Set-Cookie: \(ph_session_[0-9]*=[0-9a-f]*\);.*/\1/p'
}
c2=$(login); c3=$(login)
is "$(code -H "Cookie: $cookie" "$url/ui/")" 401 "a third login beyond max_sessions ends the oldest"
is "$(code -H "Cookie: $c2" "$url/ui/")" 200 "... the others stay"
m=$(http_get "$url/metrics")
is "$(metric "$m" 'proxyhost_admin_logins_total{result="ok"}')" 3 "logins counted: ok"
is "$(metric "$m" 'proxyhost_admin_logins_total{result="wrong_token"}')" 1 "... wrong_token"

# Logout.
hdr=$("$CURL" -s -m 5 -D - -o /dev/null -X POST -H "Cookie: $c3" "$url/ui/logout")
like "$hdr" "Location: /ui/login" "logout: 303 to the login form"
like "$hdr" "Set-Cookie: ph_session_$port=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" "... the cookie cleared"
is "$(code -H "Cookie: $c3" "$url/ui/")" 401 "... and the session is over"

# Two listeners on one address (a client's and an agent's on one laptop):
# the browser keeps cookies per host, not per port; each listener's cookie
# carries its port, so a login to one does not end the other's (one jar).
# The second one throttles logins after 3 failures.
PH1=$PH_PID
port2=$(free_port)
url2="http://127.0.0.1:$port2"
sed "s/127.0.0.1:$port\$/127.0.0.1:$port2/" "$T/run.ini" >"$T/run2.ini"
start_proxyhost "$T/run2.ini" --set admin.login_failures=3
PH2=$PH_PID
wait_for healthy "$port2"; ok $? "a second proxyhost on 127.0.0.1:$port2"
jar="$T/jar.txt"
jar_login() { "$CURL" -s -m 5 -o /dev/null -w '%{http_code}' -c "$jar" -b "$jar" \
  --data-urlencode "token=$TOKEN" "$1/ui/login"; }
is "$(jar_login "$url") $(jar_login "$url2")" "303 303" "logged in to both listeners with one cookie jar"
like "$(cat "$jar")" "ph_session_$port	" "... the jar holds ph_session_$port"
like "$(cat "$jar")" "ph_session_$port2	" "... and ph_session_$port2"
is "$(code -b "$jar" "$url/ui/") $(code -b "$jar" "$url2/ui/")" "200 200" \
  "... both stay logged in (issue 28)"

# [admin] login_failures = 3 on the second: the 4th try is 429 even with
# the right token (no oracle), with Retry-After; the first is unaffected.
bad=""
for i in 1 2 3; do
  bad="$bad $("$CURL" -s -m 5 -o /dev/null -w '%{http_code}' --data-urlencode "token=${TOKEN}x" "$url2/ui/login")"
done
is "$bad" " 401 401 401" "three wrong tokens: 401 each"
hdr=$("$CURL" -s -m 5 -D - --data-urlencode "token=$TOKEN" "$url2/ui/login")
like "$hdr" "HTTP/1.1 429" "then the right token: 429 Too Many Requests"
like_re "$hdr" "Retry-After: [1-9][0-9]?" "... with Retry-After"
unlike "$hdr" "Set-Cookie" "... and no session"
like "$hdr" "too many failed logins" "... the form says why"
is "$(code -H "Authorization: Bearer $TOKEN" "$url2/v1/status")" 200 \
  "... the Bearer token on /v1/status is not throttled"
is "$(code -b "$jar" "$url2/ui/")" 200 "... a session opened before stays"
m=$(http_get "$url2/metrics")
is "$(metric "$m" 'proxyhost_admin_logins_total{result="throttled"}')" 1 \
  "proxyhost_admin_logins_total{result=\"throttled\"} counts it"
is "$(metric "$m" 'proxyhost_admin_logins_total{result="wrong_token"}')" 3 "... and the 3 wrong tokens"
is "$(jar_login "$url")" 303 "the other listener's logins are not throttled"
kill -TERM "$PH2"; wait_exit "$PH2" 10; is "$EXIT" 0 "the second proxyhost stops cleanly"
PH_PID=$PH1

# The token file is read again on SIGHUP: a new token ends every session.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tok.new"
chmod 600 "$tok.new"; mv "$tok.new" "$tok"
kill -HUP "$PH_PID"
newtok() { [ "$(code -H "Authorization: Bearer $(cat "$tok")" "$url/v1/status")" = 200 ]; }
wait_for newtok; ok $? "SIGHUP reads the token file again"
is "$(code -H "Authorization: Bearer $TOKEN" "$url/v1/status")" 401 "... the old token is refused"
is "$(code -H "Cookie: $c2" "$url/ui/")" 401 "... and the sessions it opened are over"
out=$("$CURL" -s -m 5 -H "Authorization: Bearer $(cat "$tok")" "$url/v1/status/proxyhost/process")
like "$out" '"last_reload_result":"ok"' "the process panel shows the reload"
kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "stops cleanly"
done_testing
