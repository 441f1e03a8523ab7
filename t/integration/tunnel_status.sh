#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The TunnelMesh panels of the status page (issue 28), read as scripts do
# (GET /v1/status with the admin token as a bearer, curl + python3 json)
# from real server, agent and client processes (t/lib/tunnel.sh), each
# with [admin] token_file:
#   - the server lists the agent (its name, the hash the logs use,
#     connections, streams, capabilities, rtt_ms, connected_s, this
#     node), the client's session (user alice, never a token, strict) and
#     the stream's result in `opens` (none/ok, counted, window_s);
#   - /v1/status/tunnel_server/agents/agents?key=NAME finds the agent,
#     key=other finds nothing;
#   - the client's and the agent's `sessions` list their session to the
#     server (URL, state up, streams, connected_s); no bearer anywhere;
#   - proxyhostctl status against the server, the client and the agent
#     (issue 28: "against each role"): exit 0, the one-screen summary
#     names each role's panels with the real agent, user and server
#     (the agent's row in 100 columns, node and online included), --json
#     parses and holds the same; a wrong token exits 1 with one line
#     (401), a dead admin port (the stopped agent's) exits 3;
#   - log_names: off, the server's log names the agent by its hash only;
#     after a SIGHUP to log_names = true every line with the hash also
#     carries agent_name=<name> (the stream's end, a new agent session).
#   - proxyhostctl agent list against the server (admin_api and its store
#     on the same admin listener): the connected agent ONLINE yes, NODE
#     node-1, LAST_SEEN now; once its processes stop, no / - / the time
#     it left this node.
# Every wait is bounded (wait_for, wait_long).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/tunnel.sh"

PY=${PYTHON3:-/usr/bin/python3}
require_modules tunnel_server tunnel_agent tunnel_client socks5 direct \
  store_sqlite auth_cache admin_api

tn_setup; ok $? "admin token and DNS"
ADMIN="[admin]
token_file = $TN_ADMIN_TOKEN"
start_file_server "$T/www" "hello"; ok $? "HTTP target"
web=$FILE_SERVER_PORT
tn_server s1 "$ADMIN
[tunnel_server]
node_id = node-1
log_names = false"
ok $? "tunnel_server with [admin] token_file, log_names = false"
tn_creds s1; ok $? "credentials (user alice, agent $TN_AGENT)"
tn_agent a1 s1 "$ADMIN"; ok $? "tunnel_agent with [admin] token_file"
tn_client c1 s1 "$ADMIN"; ok $? "tunnel_client with [admin] token_file"
tn_wait_sessions "$a1_admin" agent 1; ok $? "the agent is connected"
wait_for tn_ready "$c1_admin"; ok $? "the client is ready"

body=$(tn_get "$c1_socks" "http://ok.test:$web/hello.txt")
is "$body" "hello" "a stream through client -> server -> agent -> target"

# st ADMIN-PORT PATH: the JSON (curl with the admin token as a bearer).
st() {
  "$CURL" -s -m 5 -H "Authorization: Bearer $(cat "$TN_ADMIN_TOKEN")" \
    "http://127.0.0.1:$1$2"
}
# rows INSTANCE PANEL TABLE < JSON: each row as one JSON line.
rows() {
  "$PY" -c '
import json, sys
d = json.load(sys.stdin)
for i in d["instances"]:
    if i["instance"] != sys.argv[1]:
        continue
    for p in i["panels"]:
        if p["name"] != sys.argv[2]:
            continue
        for t in p["tables"]:
            if t["name"] == sys.argv[3]:
                for r in t["rows"]:
                    print(json.dumps(dict(zip(t["columns"], r)), sort_keys=True))
' "$@"
}
# field INSTANCE PANEL NAME < JSON
field() {
  "$PY" -c '
import json, sys
d = json.load(sys.stdin)
for i in d["instances"]:
    for p in i["panels"]:
        if i["instance"] == sys.argv[1] and p["name"] == sys.argv[2]:
            print(json.dumps(p["fields"].get(sys.argv[3])))
' "$@"
}

# ---- the server ---------------------------------------------------------
st "$s1_admin" /v1/status >"$T/s1.json"
red=$(sed -n 's/.*"agent ready".*agent=\(agent-[0-9a-f]*\).*/\1/p' "$T/s1.log" | head -1)
[ -n "$red" ]; ok $? "the server's log names the agent by its hash ($red)"
rows tunnel_server agents agents <"$T/s1.json" >"$T/agents.out"
is "$(wc -l <"$T/agents.out" | tr -d ' ')" 1 "the server lists one agent"
"$PY" -c '
import json, sys
r = json.loads(open(sys.argv[1]).read())
assert r["agent"] == sys.argv[3] and r["log_id"] == sys.argv[2], r
assert r["connections"] >= 1 and r["streams"] == 0, r
assert "open_result" in r["capabilities"], r
assert r["node"] == "node-1", r
assert isinstance(r["connected_s"], int) and r["connected_s"] >= 0, r
assert r["rtt_ms"] is None or isinstance(r["rtt_ms"], int), r
' "$T/agents.out" "$red" "$TN_AGENT"
ok $? "its row: the name and the hash the logs use (log_names off), connections, streams, capabilities, node, connected_s: $(cat "$T/agents.out")"
is "$(field tunnel_server agents agents <"$T/s1.json")" 1 "field agents = 1"
rows tunnel_server sessions sessions <"$T/s1.json" >"$T/sessions.out"
"$PY" -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert len(rs) == 1, rs
r = rs[0]
assert r["user"] == "alice" and r["open_mode"] == "strict", r
assert isinstance(r["streams"], int) and isinstance(r["connected_s"], int), r
' "$T/sessions.out"
ok $? "the client session: user alice, strict, streams, connected_s: $(cat "$T/sessions.out")"
rows tunnel_server opens opens <"$T/s1.json" >"$T/opens.out"
grep -q '"code": "ok", "count": 1, "stage": "none", "window_s": [0-9]' "$T/opens.out"
ok $? "opens: the stream's result (none/ok, 1) over the window: $(cat "$T/opens.out")"

# ---- the client and the agent ------------------------------------------
st "$c1_admin" /v1/status | rows tunnel_client sessions sessions >"$T/c.out"
grep -q "\"server\": \"ws://127.0.0.1:$s1_port/tunnel\", \"state\": \"up\", \"streams\": 0" "$T/c.out"
ok $? "the client lists its session to the server, up: $(cat "$T/c.out")"
st "$a1_admin" /v1/status | rows tunnel_agent sessions sessions >"$T/a.out"
grep -q "\"connected_s\": [0-9]*, \"reconnects\": 0, \"server\": \"ws://127.0.0.1:$s1_port/tunnel\", \"state\": \"up\"" "$T/a.out"
ok $? "the agent lists its session to the server, up: $(cat "$T/a.out")"

[ -s "$T/s1.json" ] && [ -s "$T/c.out" ] && [ -s "$T/a.out" ] &&
  ! grep -qF -e "$TN_CLIENT_BEARER" -e "$TN_AGENT_BEARER" "$T/s1.json" \
    "$T/c.out" "$T/a.out"
ok $? "no bearer in any status answer"

# ---- proxyhostctl status against each role (issue 28: "proxyhostctl
# status against each role"): the one-screen summary, --json, and the
# exit codes of proxyhostctl(1) (1 for a refused request, 3 for a port
# nobody answers on).
tn_ctl "$s1_admin" status >"$T/ctl-s1.out" 2>"$T/ctl.err"; rc=$?
is "$rc" 0 "status against the server: exit 0"
out=$(cat "$T/ctl-s1.out")
like "$out" "tunnel_server/agents: Connected agents" "... its agents panel, by path and title"
like_re "$out" "  connected 1  agents 1" "... its fields: one agent, one connection"
like_re "$out" "^    $TN_AGENT +$red +1 +[0-9]+ .* node-1 +yes( |\$)" \
  "... the agent's row in 100 columns: name, hash, connections, node, online"
like "$out" "tunnel_server/sessions: Client sessions" "... the client sessions panel"
like_re "$out" "^    [0-9]+ +alice +[0-9]+ +strict +[0-9]+\$" "... the client's session: alice, strict"
like "$out" "tunnel_server/opens: Open results (last minutes)" "... the open results panel"
[ "$(awk '{ if (length($0) > 100) n++ } END { print n + 0 }' "$T/ctl-s1.out")" = 0 ]
ok $? "... no line over 100 characters (not a terminal)"
# ctl_role NAME INSTANCE TITLE FIELDS-RE: status against the client or
# the agent: exit 0, its sessions panel, its fields, its session.
ctl_role() {
  tn_ctl "$(eval echo "\$$1_admin")" status >"$T/ctl-$1.out" 2>>"$T/ctl.err"
  is "$?" 0 "status against the $2 ($1): exit 0"
  out=$(cat "$T/ctl-$1.out")
  like "$out" "$2/sessions: $3" "... its sessions panel, by path and title"
  like_re "$out" "$4" "... its fields: $4"
  like_re "$out" "^    ws://127.0.0.1:$s1_port/tunnel +up +0 +[0-9]+ +[0-9]+\$" \
    "... its session to the server, up"
}
ctl_role c1 tunnel_client "Sessions to the server" "  connections 1  up 1 .* ready yes"
ctl_role a1 tunnel_agent "Sessions to the servers" "  agent $TN_AGENT  up 1 "
is "$(cat "$T/ctl.err")" "" "... nothing on stderr for the three"
for r in s1 c1 a1; do
  tn_ctl "$(eval echo "\$${r}_admin")" --json status >"$T/ctl-$r.json"
  echo $? >"$T/ctl-$r.rc"
done
"$PY" -c '
import json, sys
def panel(path, inst, name):
    d = json.load(open(path))
    assert d["status_version"] == 1 and d["instances"][0]["instance"] == "proxyhost", d
    for i in d["instances"]:
        for p in i["panels"]:
            if i["instance"] == inst and p["name"] == name:
                return p
    raise AssertionError((path, inst, name))
def rows(p):
    t = p["tables"][0]
    return [dict(zip(t["columns"], r)) for r in t["rows"]]
T, agent, server = sys.argv[1:4]
a = rows(panel(T + "/ctl-s1.json", "tunnel_server", "agents"))
assert [(r["agent"], r["node"]) for r in a] == [(agent, "node-1")], a
u = rows(panel(T + "/ctl-s1.json", "tunnel_server", "sessions"))
assert [r["user"] for r in u] == ["alice"], u
for role in ("c1", "a1"):
    inst = "tunnel_client" if role == "c1" else "tunnel_agent"
    s = rows(panel(T + "/ctl-" + role + ".json", inst, "sessions"))
    assert [(r["server"], r["state"]) for r in s] == [(server, "up")], s
' "$T" "$TN_AGENT" "ws://127.0.0.1:$s1_port/tunnel"
ok $? "status --json of each role parses (python3 json) and holds the same rows"
is "$(cat "$T/ctl-s1.rc" "$T/ctl-c1.rc" "$T/ctl-a1.rc" | tr -d '\n')" 000 "... exit 0 for the three"
printf 'wrong-token-wrong-token-wrong-token-x\n' >"$T/wrong.token"
chmod 600 "$T/wrong.token"
for r in s1 c1 a1; do
  "$CTL" --admin "127.0.0.1:$(eval echo "\$${r}_admin")" --token-file "$T/wrong.token" \
    status >"$T/out" 2>"$T/err"; rc=$?
  is "$rc:$(wc -l <"$T/err" | tr -d ' '):$(cut -c1-24 "$T/err")" \
    "1:1:error: 401 unauthorized:" \
    "status with a wrong token ($r): exit 1, one line: 401 unauthorized"
done

# ---- log_names ------------------------------------------------------------
grep 'tunnel stream end' "$T/s1.log" >"$T/end1.out"
grep -q "agent=$red" "$T/end1.out" && ! grep -q agent_name= "$T/s1.log"
ok $? "log_names = false: the stream's end names the agent by its hash only"
sed 's/^log_names = false$/log_names = true/' "$T/s1.ini" >"$T/s1.new" &&
  mv "$T/s1.new" "$T/s1.ini"
kill -HUP "$s1_pid"
reloaded() { grep -q 'proxyhost_reloads_total{result="ok"} 1' "$T/m.out"; }
scrape_reloaded() { tn_metrics "$s1_admin" >"$T/m.out"; reloaded; }
wait_for scrape_reloaded; ok $? "a SIGHUP to log_names = true is applied"
st "$s1_admin" "/v1/status/tunnel_server/agents/agents?key=$TN_AGENT" |
  rows tunnel_server agents agents >"$T/key.out"
is "$(wc -l <"$T/key.out" | tr -d ' ')" 1 "?key=$TN_AGENT finds the agent (by its name)"
grep "\"agent\": \"$TN_AGENT\"" "$T/key.out" | grep -q "\"log_id\": \"$red\""
ok $? "its row names it, beside its hash: $(cat "$T/key.out")"
st "$s1_admin" "/v1/status/tunnel_server/agents/agents?key=nobody" |
  "$PY" -c '
import json, sys
t = json.load(sys.stdin)["instances"][0]["panels"][0]["tables"][0]
assert t["name"] == "agents" and t["rows"] == [], t
'
ok $? "?key=nobody: the agents table, no row"
body=$(tn_get "$c1_socks" "http://ok.test:$web/hello.txt")
is "$body" "hello" "a second stream"
end2() { grep 'tunnel stream end' "$T/s1.log" | grep -q "agent=$red.*agent_name=$TN_AGENT"; }
wait_for end2; ok $? "log_names = true: its end line carries agent=$red agent_name=$TN_AGENT"
tn_agent a2 s1; ok $? "a second agent process (the same agent)"
ready2() { grep 'agent ready' "$T/s1.log" | grep -q "agent=$red.*agent_name=$TN_AGENT"; }
wait_long ready2; ok $? "its 'agent ready' line carries agent_name too"
grep 'tunnel connection authenticated' "$T/s1.log" | grep 'role=client' |
  grep -q agent_name=
[ $? -ne 0 ]; ok $? "a client's lines name no agent"

# ---- proxyhostctl agent list against the real server (admin_api with its
# store on the same admin listener): ONLINE/NODE/LAST_SEEN from the live
# agents table; after the agent's processes stop, no / - / when it left.
alist() { tn_ctl "$s1_admin" agent list 2>"$T/alist.err"; }
out=$(alist); rc=$?
is "$rc" 0 "agent list against the server: exit 0"
like_re "$out" "^NAME +OWNER +ENABLED +CREATED_AT +ONLINE +NODE +LAST_SEEN\$" "... the live columns"
like_re "$out" "^$TN_AGENT +alice +yes +[-0-9T:Z]+ +yes +node-1 +now\$" \
  "... the connected agent: online yes, node node-1, last seen now"
is "$(cat "$T/alist.err")" "" "... nothing on stderr"
kill -TERM "$a1_pid" "$a2_pid"
wait_exit "$a1_pid" 10; e1=$EXIT
wait_exit "$a2_pid" 10
is "$e1:$EXIT" 0:0 "the agent's two processes stop cleanly"
offline() { alist | grep -qE "^$TN_AGENT +alice +yes +[-0-9T:Z]+ +no +- +[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\$"; }
wait_long offline; ok $? "agent list: the stopped agent is online no, node -, last seen when it left (RFC 3339 UTC, bounded wait)"
"$CTL" --admin "127.0.0.1:$a1_admin" --token-file "$TN_ADMIN_TOKEN" status \
  >"$T/out" 2>"$T/err"; rc=$?
is "$rc" 3 "status against the stopped agent's admin port: exit 3"
is "$(cat "$T/err")" "proxyhostctl: cannot reach the admin listener at 127.0.0.1:$a1_admin: Connection refused" \
  "... one line naming the address"

done_testing
