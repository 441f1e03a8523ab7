#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# proxyhostctl status and agent list's live columns (issue 28: "proxyhostctl
# status prints a one-screen summary of whatever role it talks to (--json
# for scripts), proxyhostctl agent list shows online state, node and last
# seen"; exit codes and one-line errors as proxyhostctl(1) says).
#
# Against a real proxyhost (fakeaz, admin_api) with [admin] token_file
# set: status prints the version and the modules, --json is the JSON
# received, status proxyhost/process, an unknown instance exits 1 with one
# line, no token file exits 2, a wrong token 1 (401). A real proxyhost with no
# [admin] token_file: the error says how to turn the page on. agent list:
# against the real proxyhost without tunnel_server, online is "unknown"
# (never "no"); against status_fake.py (admin_api's agents and a
# tunnel_server's agents table, 2 rows a page) yes/no, node and "now",
# read one GET a page; a status answering 500 or off: "unknown".
. "$top_srcdir/t/lib/testlib.sh"
require_modules admin_api

CTL="$top_builddir/tools/proxyhostctl"
VERSION=$("$PROXYHOST" --version | sed -n '1s/^proxyhost \([^ ]*\) .*/\1/p')
"$CTL" admin-token new "$T/admin.token" >/dev/null
unset PROXYHOSTCTL_ADMIN PROXYHOSTCTL_TOKEN_FILE

# start_fake NAME [ARGS]: status_fake.py; sets fake_port.
start_fake() {
  _n=$1
  shift
  python3 "$top_srcdir/t/lib/status_fake.py" --port-file "$T/$_n.port" \
    --token-file "$T/admin.token" --version "$VERSION" --log "$T/$_n.log" \
    --lifetime 120 "$@" >"$T/$_n.out" 2>&1 &
  PIDS="$PIDS $!"
  wait_file "$T/$_n.port" && fake_port=$(cat "$T/$_n.port")
}

# ---- a real proxyhost with the admin token ---------------------------------
port=$(free_port)
admin_api_conf "$T/on.ini" "$port" "token_file = $T/admin.token"
start_proxyhost "$T/on.ini"
wait_for healthy "$port"; ok $? "proxyhost with [admin] token_file starts"
status_addr="127.0.0.1:$port"
ctl() { "$CTL" --admin "$status_addr" --token-file "$T/admin.token" "$@"; }

out=$(ctl status 2>"$T/err"); rc=$?
is "$rc" 0 "status: exit 0"
like "$(printf '%s\n' "$out" | head -1)" "proxyhost $VERSION (ABI 1.7), up " \
  "... its first line: the host's version, ABI and uptime"
like "$out" "ready: yes" "... ready"
like_re "$out" "modules \([0-9]+\): " "... the modules"
like_re "$out" "[ :]fakeaz [0-9][^ ,]*," "... fakeaz with its version"
like_re "$out" "[ ,]admin_api [0-9][^ ,]*" "... admin_api with its version"
like "$out" "open fds: " "... open fds and memory"
is "$(cat "$T/err")" "" "... nothing on stderr"
[ "$(printf '%s\n' "$out" | awk '{ if (length($0) > 100) n++ } END { print n + 0 }')" = 0 ]
ok $? "... no line over 100 characters (not a terminal)"

ctl --json status >"$T/status.json"; rc=$?
is "$rc" 0 "status --json: exit 0"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["status_version"] == 1; assert d["instances"][0]["instance"] == "proxyhost"' \
  "$T/status.json"
ok $? "... the JSON parses: status_version 1, the host's instance first"

out=$(ctl status proxyhost/process); rc=$?
is "$rc" 0 "status proxyhost/process: exit 0"
like "$out" "proxyhost $VERSION" "... the process panel"
out=$(ctl status proxyhost/process/modules); rc=$?
is "$rc" 0 "status proxyhost/process/modules: exit 0"
like "$out" "admin_api" "... the modules table"

ctl status no_such_instance >"$T/out" 2>"$T/err"; rc=$?
is "$rc" 1 "an unknown instance: exit 1 (the server refused)"
is "$(wc -l <"$T/err" | tr -d ' ')" 1 "... said in one line"
like "$(cat "$T/err")" "error: 404" "... the 404"
is "$(cat "$T/out")" "" "... nothing on stdout"
ctl status 'Bad/Name' >/dev/null 2>"$T/err"; rc=$?
is "$rc" 2 "a path that is no INSTANCE/PANEL/TABLE: exit 2, nothing sent"
ctl status proxyhost --offset 5 >/dev/null 2>&1; rc=$?
is "$rc" 2 "--offset without a table's path: exit 2"
for bad in a/b/c/d proxyhost/ /proxyhost .x x..y; do
  ctl status "$bad" >/dev/null 2>&1; rc=$?
  is "$rc" 2 "status '$bad': exit 2"
done
ctl status proxyhost/process/modules --limit 0 >/dev/null 2>&1; rc=$?
is "$rc" 2 "--limit 0: exit 2"
"$CTL" --admin "$status_addr" status >/dev/null 2>"$T/err"; rc=$?
is "$rc" 2 "no token file: exit 2 (usage), nothing sent"
like "$(cat "$T/err")" "no admin token: give --token-file FILE" "... says how"
printf 'wrong-token-wrong-token-wrong-token-x\n' >"$T/wrong.token"; chmod 600 "$T/wrong.token"
"$CTL" --admin "$status_addr" --token-file "$T/wrong.token" status >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "a wrong token: exit 1 (401, the documented unauthorized exit)"
like "$(cat "$T/err")" "error: 401 unauthorized" "... one line: 401 unauthorized"
is "$(wc -l <"$T/err" | tr -d ' ')" 1 "... and nothing more"
dead=$(free_port)
"$CTL" --admin "127.0.0.1:$dead" --token-file "$T/admin.token" status >/dev/null 2>"$T/err"; rc=$?
is "$rc" 3 "nothing listening: exit 3"
is "$(cat "$T/err")" "proxyhostctl: cannot reach the admin listener at 127.0.0.1:$dead: Connection refused" \
  "... one line naming the address"

# ---- a real proxyhost without [admin] token_file ----------------------------
port2=$(free_port)
admin_api_conf "$T/off.ini" "$port2"
start_proxyhost "$T/off.ini"
wait_for healthy "$port2"; ok $? "proxyhost without [admin] token_file starts"
"$CTL" --admin "127.0.0.1:$port2" --token-file "$T/admin.token" status >"$T/out" 2>"$T/err"; rc=$?
is "$rc" 1 "status without [admin] token_file: exit 1"
is "$(wc -l <"$T/err" | tr -d ' ')" 1 "... one line"
like "$(cat "$T/err")" "set [admin] token_file" "... saying how to turn the status page on"

# agent list there: admin_api's agents, no tunnel_server: online unknown.
c2() { "$CTL" --admin "127.0.0.1:$port2" --token-file "$T/admin.token" "$@"; }
c2 user create alice >/dev/null && c2 agent create edge-1 --owner alice >/dev/null
ok $? "an agent in the store"
out=$(c2 agent list 2>"$T/err"); rc=$?
is "$rc" 0 "agent list without a tunnel_server's status: exit 0"
like_re "$out" "^NAME +OWNER +ENABLED +CREATED_AT +ONLINE +NODE +LAST_SEEN" \
  "... the live columns in the header"
like_re "$out" "edge-1 +alice +yes +[-0-9T:Z]+ +unknown +- +-" \
  "... online unknown, never no (the status cannot say)"
is "$(cat "$T/err")" "" "... a 404 (no such status) is no error"
like "$(c2 --json agent list)" '"items":[{"name":"edge-1"' "agent list --json: the store's JSON as it is"

# ---- agent list against a tunnel_server's status (status_fake.py) ----------
start_fake tun --rows 2; ok $? "status_fake.py with a tunnel_server's agents, 2 rows a page"
c3() { "$CTL" --admin "127.0.0.1:$fake_port" --token-file "$T/admin.token" "$@"; }
out=$(c3 agent list 2>"$T/err"); rc=$?
is "$rc" 0 "agent list: exit 0"
like_re "$out" "edge-1 +alice +yes +[-0-9T:Z]+ +yes +n1 +now" "a connected agent: online yes, its node, last seen now"
like_re "$out" "edge-2 +alice +yes +[-0-9T:Z]+ +no +- +-" "an agent the status has no row for: no, -, -"
like_re "$out" "edge-3 +alice +yes +[-0-9T:Z]+ +yes +n2 +now" "... one on the second page, on another node"
unlike "$out" "stranger" "an agent the store does not list is not added"
is "$(grep -c '^GET /v1/status/tunnel_server/agents/agents' "$T/tun.log")" 2 \
  "one GET a page: 3 rows at 2 a page are 2 GETs"
like "$(cat "$T/tun.log")" "agents?offset=2" "... the second from offset 2"
out=$(c3 status); rc=$?
like "$out" "tunnel_server/agents: Connected agents" "status: a module's panel by its path and title"
like "$out" "  agents: 2+ rows" "... its table's count with + (more)"
like_re "$out" "    edge-1 +agent-5a1c7f0e +2 +1 " "... its rows, aligned"

start_fake bad --mode error; c4() { "$CTL" --admin "127.0.0.1:$fake_port" --token-file "$T/admin.token" "$@"; }
out=$(c4 agent list 2>"$T/err"); rc=$?
is "$rc" 0 "agent list with a status answering 500: exit 0 (the store's list)"
like_re "$out" "edge-2 +alice +yes +[-0-9T:Z]+ +unknown" "... online unknown"
like "$(cat "$T/err")" "online state unknown: 127.0.0.1:$fake_port answered 500" "... and why, on stderr"
start_fake off --mode off; c5() { "$CTL" --admin "127.0.0.1:$fake_port" --token-file "$T/admin.token" "$@"; }
like_re "$(c5 agent list 2>/dev/null)" "edge-1 +alice +yes +[-0-9T:Z]+ +unknown +- +-" \
  "the status page off (404): online unknown"
c5 status >/dev/null 2>"$T/err"; rc=$?
is "$rc" 1 "status with the page off: exit 1"
is "$(cat "$T/err")" "error: 404: status page off: set [admin] token_file" "... the host's reason in one line"

kill -TERM "$PH_PID"; wait_exit "$PH_PID" 10; is "$EXIT" 0 "proxyhost stops cleanly"
unlike "$(cat "$T/ph.log")" "$(cat "$T/admin.token")" "the admin token is in no log"
done_testing
