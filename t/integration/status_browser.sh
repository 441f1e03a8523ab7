#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The operator's window in a real browser (issue 28): headless Chromium,
# driven through t/lib/cdp.py (DevTools over --remote-debugging-pipe),
# logs in through the status page's form and reads the DOM.
#   (a) the TunnelMesh demo (server, agent edge-1 and client of alice,
#       each with [admin] token_file): on the server's page the agent and
#       the client session by name, the host's own panel; on the agent's
#       and the client's pages their sessions to the server; a name with
#       markup is refused by the store (admin_api, 400); the cookie is ph_session_PORT,
#       HttpOnly,
#       SameSite=Strict, expiring after session_ttl, and refused once
#       expired; without it /ui/, a table's page and /v1/status are 401
#       (Chromium and curl); a token in a URL is 400; logout drops the
#       session; every request the page made went to the admin listener.
#   (b) markup that reaches a page: a host whose config path carries
#       <script> markup, with a tunnel_client whose server_url's path holds
#       ' and & (RFC 3986 allows them; a server_url with markup is refused
#       at start, as the stores refuse such names): both come back as text,
#       the DOM has no script element, no dialog opened, and /v1/status
#       carries the value as escaped JSON.
#   (c) the pool demo (controller, gateway g1, checker k1; proxies pa, pb):
#       the gateway and the proxies by id on the controller's page, the
#       proxies in the gateway's view, the checker's own panel.
# No page may open a JavaScript dialog (Page.javascriptDialogOpening).
# One screenshot per page is kept in $top_builddir/t/artefacts/status/
# (status-tunnel-server.png, status-tunnel-agent.png,
# status-tunnel-client.png, status-controller.png, status-gateway.png and
# status-checker.png are the ones docs/images/ holds: copy them there to
# refresh the docs).
# A missing chromium is a failure (scripts/install-deps.sh), never a skip.
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"
. "$top_srcdir/t/lib/redis.sh"
. "$top_srcdir/t/lib/controller.sh"

require_modules tunnel_server tunnel_agent tunnel_client store_sqlite \
  auth_cache admin_api direct socks5 redis_ownership controlplane_server \
  pool_api controlplane_client outcome_reporter round_robin pool http_proxy checker
ART=${PH_ARTEFACTS:-$top_builddir/t/artefacts}/status
mkdir -p "$ART"
TTL=60 # [admin] session_ttl = 1m, its minimum

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
export CHROMIUM
[ -n "$CHROMIUM" ]; ok $? "chromium is installed (scripts/install-deps.sh)"

# ui NAME STEP...: one browser runs the steps (t/lib/cdp.py), its files in $T/NAME
ui() {
  _n=$1
  shift
  "${PYTHON3:-python3}" "$top_srcdir/t/lib/cdp.py" "$T/$_n" "$@" 2>"$T/$_n.err"
  _r=$?
  [ $_r = 0 ] || sed 's/^/#   /' "$T/$_n.err" | head -5
  return $_r
}
code() { "$CURL" -s -m 5 -o /dev/null -w '%{http_code}' "$@"; }
# foreign NAME ORIGIN: the requests of browser NAME outside ORIGIN
foreign() { grep -v -c "^$2/" "$T/$1/requests.txt"; }
# no_script FILE: the DOM holds no script element at all (the page has no JavaScript)
no_script() { [ -s "$1" ] && ! grep -qi '<script' "$1"; }
# login_page NAME ORIGIN TOKEN-FILE SHOT: Chromium logs in through the form,
# dumps the page ($T/NAME/page.html, also in $page; its text in
# $T/NAME/page.txt) and keeps its screenshot as $ART/SHOT.png; the login is
# a 303 to /ui/, 200; no script element, no dialog (7 TAP lines).
login_page() {
  ui "$1" "goto:$2/ui/login" "login:$3" dump:page text:page shot:page cookies:cookies
  ok $? "Chromium logs in through the form of $2 ($1)"
  like "$(cat "$T/$1/documents.txt")" "303 $2/ui/login" "... the form's POST answers 303"
  is "$(tail -1 "$T/$1/documents.txt")" "200 $2/ui/" "... to /ui/, 200"
  cp "$T/$1/page.png" "$ART/$4.png" 2>/dev/null
  ok $? "... a screenshot kept as $ART/$4.png"
  page=$(cat "$T/$1/page.html" 2>/dev/null)
  no_script "$T/$1/page.html"; ok $? "... the page has no script element"
  [ -f "$T/$1/dialogs.txt" ] && [ ! -s "$T/$1/dialogs.txt" ]
  ok $? "... and opened no JavaScript dialog"
}
ADMIN_INI=$(printf '[admin]\ntoken_file = %s\n' "$T/admin.token") # tn_setup's, the controller's

ui probe 'goto:data:text/html,<p>probe</p><script>alert("probe-7")</script>'
is "$(cat "$T/probe/dialogs.txt" 2>/dev/null)" probe-7 \
  "the dialog watch sees an alert (a data: page that calls one)"

# ---- (a) the TunnelMesh demo --------------------------------------------------------------
tn_setup; ok $? "admin token and dnsd.py"
tn_server s "$(printf '%s\nsession_ttl = 1m\n' "$ADMIN_INI")"
ok $? "the tunnel server (with [admin] token_file) is up"
tn_creds s; tn_agent a s "$ADMIN_INI"; tn_client c s "$ADMIN_INI"
tn_wait_sessions "$a_admin" agent 1 && wait_for tn_ready "$c_admin"
ok $? "agent $TN_AGENT and alice's client connected"
tn_get "$c_socks" "http://ok.test:$s_admin/healthz" >/dev/null # a stream for the panels
O=http://127.0.0.1:$s_admin

is "$(code "$O/ui/")" 401 "without the cookie /ui/ is 401 (curl)"
is "$(code "$O/ui/proxyhost/process/modules")" 401 "... and a table's page too"
is "$(code "$O/v1/status")" 401 "... and /v1/status"
like "$("$CURL" -s -m 5 "$O/v1/status")" '"code":"unauthorized"' "... with the unauthorized JSON error"
is "$(code "$O/ui/?token=$(cat "$TN_ADMIN_TOKEN")")" 400 "a token in a URL under /ui/ is 400"
is "$(code -H "Authorization: Bearer $(cat "$TN_ADMIN_TOKEN")" "$O/v1/status")" 200 \
  "/v1/status takes the admin token as a bearer"

ui anon "goto:$O/ui/" dump:anon
ok $? "Chromium opens /ui/ without a session"
is "$(head -1 "$T/anon/documents.txt")" "401 $O/ui/" "... 401"
like "$(cat "$T/anon/anon.html")" 'name="token"' "... with the login form"

login_page tun "$O" "$TN_ADMIN_TOKEN" status-tunnel-server
login_at=$(date +%s)
like "$page" '>tunnel_server<' "the host's panel lists the tunnel_server instance"
like "$page" '>Process<' "... under its title Process"
like "$page" 'http-equiv="refresh"' "the page refreshes itself"
like "$page" ">$TN_AGENT<" "the tunnel server's panel names agent $TN_AGENT"
like_re "$page" ">(alice|$TN_CLIENT_TOKEN_ID)<" "... and alice's client session"
unlike "$page" "$(cat "$TN_ADMIN_TOKEN")" "the admin token is nowhere in the page"
is "$(foreign tun "$O")" 0 "every request the page made went to the admin listener ($O)"
like "$(cat "$T/tun/requests.txt")" "$O/ui/style.css" "... its one stylesheet included"
cookie=$("${PYTHON3:-python3}" -c '
import json, os, sys
for c in json.load(open(sys.argv[1])):
    if c["name"] == sys.argv[3]:  # left: its life when the cookies were read
        left = c["expires"] - os.path.getmtime(sys.argv[1])
        print(len(c["value"]), all(x in "0123456789abcdef" for x in c["value"]),
              c["httpOnly"], c["sameSite"], c["path"], -10 < left - int(sys.argv[2]) <= 1, c["value"])
' "$T/tun/cookies.json" "$TTL" "ph_session_$s_admin")
like "$cookie" "64 True True Strict / True " \
  "the session cookie: ph_session_$s_admin (the listener's port), 64 hex, HttpOnly, SameSite=Strict, Path=/, expires after session_ttl"
sid=${cookie##* }

is "$(code -H "Cookie: ph_session_$s_admin=$sid" "$O/ui/")" 200 "curl with the session cookie: /ui/ 200"
is "$(code -H "Cookie: ph_session_$s_admin=$sid" "$O/v1/status")" 200 "... and /v1/status 200"
json=$("$CURL" -s -m 5 -H "Cookie: ph_session_$s_admin=$sid" "$O/v1/status")
like "$json" "\"$TN_AGENT\"" "/v1/status names agent $TN_AGENT"

# Names are [a-z0-9._-]: markup never comes through an agent's, a user's
# or a proxy's name (the store refuses it; checked once, through admin_api).
INJ='<script>alert(1)</script>"'"'"'&'
is "$(code -X POST -H "Authorization: Bearer $(cat "$TN_ADMIN_TOKEN")" \
  -H 'Content-Type: application/json' --data '{"name":"<script>alert(1)</script>","owner":"alice"}' \
  "$O/v1/agents")" 400 "admin_api refuses an agent named <script>...: 400"

login_page agent "http://127.0.0.1:$a_admin" "$TN_ADMIN_TOKEN" status-tunnel-agent
like "$page" '>tunnel_agent<' "the agent's page lists the tunnel_agent instance"
like "$page" '>Sessions to the servers<' "... its panel Sessions to the servers"
like "$page" "<dt>agent</dt><dd>$TN_AGENT</dd>" "... which names agent $TN_AGENT"
like "$page" "<td>ws://127.0.0.1:$s_port/tunnel</td><td>up</td>" "... and its session to the server, up"

login_page client "http://127.0.0.1:$c_admin" "$TN_ADMIN_TOKEN" status-tunnel-client
like "$page" '>tunnel_client<' "the client's page lists the tunnel_client instance"
like "$page" '>Sessions to the server<' "... its panel Sessions to the server"
like "$page" '<dt>ready</dt><dd>yes</dd>' "... ready"
like "$page" "<td>ws://127.0.0.1:$s_port/tunnel</td><td>up</td>" "... and its session to the server, up"

ui out "goto:$O/ui/login" "login:$TN_ADMIN_TOKEN" cookies:before \
  'submit:form[action$="logout"]' "goto:$O/ui/" dump:after cookies:cookies
ok $? "Chromium logs in, logs out with the page's logout form, opens /ui/ again"
sid2=$(sed -n 's/.*"name": "ph_session_'"$s_admin"'", "value": "\([0-9a-f]*\)".*/\1/p' "$T/out/before.json")
is "${#sid2} $(code -H "Cookie: ph_session_$s_admin=$sid2" "$O/ui/")" "64 401" \
  "... the logged-out session is refused (curl, its old cookie)"
like "$(cat "$T/out/documents.txt")" "303 $O/ui/logout" "... the logout answers 303"
is "$(tail -1 "$T/out/documents.txt")" "401 $O/ui/" "... /ui/ is 401 again"
is "$(grep -c "\"ph_session_$s_admin\"" "$T/out/cookies.json")" 0 "... and the cookie is gone"
is "$(foreign out "$O")" 0 "... every request to the admin listener"

# ---- (b) markup in a value comes back escaped ---------------------------------------------
# Free text that reaches a page: the config path (the host's panel) and a
# tunnel_client's server_url, whose path may hold RFC 3986's sub-delims
# ("'", "&", ...; its panel shows the URL up to '?'); a server_url with
# markup is refused at start. Nothing listens there: the session stays
# down, the URL is on the page all the same.
mkdir -p "$T/<script>alert(1)<"
cfg="$T/<script>alert(1)</script>.ini"
x_admin=$(free_port)
x_port=$(free_port)
XPATH="/a'b&c=(1)!"
xini() {
  printf '[proxyhost]\nmodules = direct, tunnel_client\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\ntoken_file = %s\n[tunnel_client]\nserver_url = %s\nagent = %s\ntoken_file = %s\n' \
    "$top_builddir/modules" "$x_admin" "$TN_ADMIN_TOKEN" "$1" "$TN_AGENT" "$T/client.token"
}
xini "ws://127.0.0.1:$x_port/$INJ" >"$T/xbad.ini"
out=$("$PROXYHOST" -c "$T/xbad.ini" --check-config 2>&1)
is "$?" 2 "a server_url whose path holds $INJ is refused at start" || echo "# $out"
like "$out" "path has a byte RFC 3986 does not allow" "... naming the path and the rule"
xurl="ws://127.0.0.1:$x_port$XPATH"
xini "$xurl" >"$cfg"
tn_start x "$cfg"; ok $? "a host whose config path holds markup and server_url ' and & is up"
X=http://127.0.0.1:$x_admin
login_page x "$X" "$TN_ADMIN_TOKEN" status-escaped
like "$page" '&lt;script&gt;alert(1)&lt;/script&gt;.ini' "the config path comes back escaped, as text"
like "$page" "<td>ws://127.0.0.1:$x_port/a'b&amp;c=(1)!</td>" \
  "the server_url with ' and & comes back escaped in the client's sessions table"
like "$(cat "$T/x/page.txt")" "$xurl" "... and reads as that text in the page"
xjson=$("$CURL" -s -m 5 -H "Authorization: Bearer $(cat "$TN_ADMIN_TOKEN")" \
  "$X/v1/status/tunnel_client/sessions")
like "$xjson" "[\"$xurl\"," "/v1/status carries it as a JSON string"
is "$(printf '%s' "$xjson" | "${PYTHON3:-python3}" -c '
import json, sys
print(json.load(sys.stdin)["instances"][0]["panels"][0]["tables"][0]["rows"][0][0])')" "$xurl" \
  "... which decodes to the URL as written"

# ---- (c) the pool demo --------------------------------------------------------------------
controller_up pw-StatusBrowser-Never-Shown
printf '[admin]\ntoken_file = %s\n' "$T/admin.token" >>"$T/ctl.ini"
start_proxyhost "$T/ctl.ini"
wait_long healthy "$admin"; ok $? "the controller (with [admin] token_file) is up"
ctl() { "$CTL" --admin "127.0.0.1:$admin" --token-file "$T/admin.token" "$@"; }
ctl route add all --position 100 --host '*' --group g --strategy round_robin >/dev/null &&
  ctl proxy add pa --protocol http_connect --host 127.0.0.1 --port "$(free_port)" \
    --groups g --capacity 10 --zone z1 >/dev/null &&
  ctl proxy add pb --protocol http_connect --host 127.0.0.1 --port "$(free_port)" \
    --groups g --capacity 10 --zone z1 >/dev/null
ok $? "a route and proxies pa, pb"
g_admin=$(free_port)
GW_ADMIN_EXTRA="token_file = $T/admin.token" gateway_up g1 "$g_admin" "$(free_port)"
CHK_ADMIN_EXTRA="token_file = $T/admin.token" checker_up k1
cm() { metric "$(http_get "http://127.0.0.1:$admin/metrics")" "$1"; }
gm() { metric "$(http_get "http://127.0.0.1:$g_admin/metrics")" "$1"; }
wait_long eval '[ "$(cm proxyhost_cp_controller_checkers)" = 1 ] &&
  [ "$(gm "proxyhost_cp_gateway_session_state{state=\"running\"}")" = 1 ]'
ok $? "gateway g1 and checker k1 registered with the controller"
P=http://127.0.0.1:$admin
login_page pool "$P" "$T/admin.token" status-controller
like "$page" '>controlplane_server<' "the host's panel lists the controlplane_server instance"
like_re "$page" '>g1(-a)?<' "the controller's panel names gateway g1 (worker or instance id)"
like_re "$page" '>k1(-a)?<' "... and checker k1"
like "$page" '>pa<' "... and proxy pa"
like "$page" '>pb<' "... and proxy pb"
unlike "$page" pw-StatusBrowser-Never-Shown "no credential in the page"
is "$(foreign pool "$P")" 0 "every request the page made went to the controller's admin listener"

wait_long gw_has_view "$g_admin"; ok $? "gateway g1 holds an accepted view"
login_page gw "http://127.0.0.1:$g_admin" "$T/admin.token" status-gateway
like "$page" '>pool<' "the gateway's page lists the pool instance"
like "$page" '>Snapshot view<' "... its panel Snapshot view"
like "$page" '<dt>valid</dt><dd>yes</dd>' "... with a valid view"
like_re "$page" '<tr><td>pa</td><td class="n">[0-9]+</td>' "... holding proxy pa"
like_re "$page" '<tr><td>pb</td><td class="n">[0-9]+</td>' "... and proxy pb"
like "$page" '>Recent failures<' "... and its panel Recent failures"
like "$page" "$T/g1.ini" "... the host's panel names g1's config"

login_page chk "http://127.0.0.1:$ca_k1" "$T/admin.token" status-checker
like "$page" '>checker<' "the checker's page lists the checker instance"
like "$page" '>Checks<' "... its panel Checks"
like "$page" '<dt>max_concurrency</dt><dd>16</dd>' "... with k1's max_concurrency 16"
like_re "$page" '<dt>session</dt><dd>[0-9a-f]{8}</dd>' "... and its session to the controller"
like "$page" "$T/k1.ini" "... the host's panel names k1's config"

# ---- (a) again: the session expires -------------------------------------------------------
left=$((login_at + TTL + 2 - $(date +%s)))
[ "$left" -gt 0 ] && [ "$left" -le $((TTL + 2)) ] && sleep "$left"
is "${#sid} $(code -H "Cookie: ph_session_$s_admin=$sid" "$O/ui/")" "64 401" \
  "after session_ttl the tunnel server's session is refused: /ui/ 401"
is "${#sid} $(code -H "Cookie: ph_session_$s_admin=$sid" "$O/v1/status")" "64 401" "... and /v1/status 401"

done_testing
