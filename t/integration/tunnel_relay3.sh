#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# TunnelMesh across three servers in two zones (issue 27 "Tests"): a
# (node-a) and b (node-y) in zone z1, c (node-c) in zone z2, one private
# PostgreSQL, presence and a plain relay on loopback. Node ids are chosen
# so that the view's order (by id: node-a, node-c, node-y) puts the other
# zone's node first: only the zone order sends a's streams to b.
#   - the agent edge-1 on b and c, a client on a: no local candidate is
#     remote, not an error (TM-P2-32), and the stream goes to b, the same
#     zone first (TM-P2-30), never to c;
#   - locality never bypasses policy (TM-P2-31): an agent edge-2 that the
#     client's user may not use, connected to a itself, is never chosen:
#     authorization/forbidden, no open reaches it;
#   - b stopped: new opens go to c (the other zone), with no error;
#   - b back (node-y again): streams return to it; after a burst through
#     the relay, open fds of a, b and c return exactly to their baseline
#     and their resident memory stays within RSS_SLACK_KIB of it
#     (TM-TEST-37, as local_burst.sh);
#   - an agent disabled through c's admin API closes the agent's session on
#     b, and the client's token revoked through c closes the client's
#     session on a, each with 4403 and audited where the session was, found
#     by that node's first revision poll after the write (the default 2 s
#     poll: within 3 s; issue 27 "Sessions end when their credentials do,
#     on every node", TM-P1-34);
#   - headless Chromium through the client on a loads a 30-image page
#     through relayed streams with one image that never answers: the other
#     29 load, and the hanging stream is torn down once Chromium is gone.
# Every wait is bounded (wait_for, wait_long).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/pg.sh"
require_modules tunnel_server tunnel_agent tunnel_client store_pg \
  auth_cache admin_api direct socks5
. "$top_srcdir/t/lib/tunnel.sh"
PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
RSS_SLACK_KIB=4096 # 4 MiB per node
# Under AddressSanitizer freed memory waits in a quarantine on purpose,
# which would read as growth (as local_burst.sh).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
export ASAN_OPTIONS

tn_pg_setup; ok $? "a private PostgreSQL at the current schema (TN_DSN), the admin token, dnsd.py"
start_file_server "$T/www" "hello from three servers"; ok $? "file server up"
web=$FILE_SERVER_PORT

mesh() { # NODE ZONE RELAY-PORT
  printf 'node_id = %s\npresence = true\npresence.zone = %s\n' "$1" "$2"
  printf 'presence.relay_addr = 127.0.0.1:%s\npresence.lease = 3s\n' "$3"
  printf 'relay = true\nrelay.listen = 127.0.0.1:%s\nrelay.allow_plain = true\n' "$3"
}
rb=$(free_port)
tn_server a "$(mesh node-a z1 "$(free_port)")"; ok $? "server a up (node-a, zone z1)"
tn_server b "$(mesh node-y z1 "$rb")"; ok $? "server b up (node-y, zone z1)"
tn_server c "$(mesh node-c z2 "$(free_port)")"; ok $? "server c up (node-c, zone z2)"
q() { pg_psql authz -c "$1"; }
three() { [ "$(q "SELECT string_agg(node_id || ':' || zone, ',' ORDER BY node_id) FROM tm_nodes")" = "node-a:z1,node-c:z2,node-y:z1" ]; }
wait_long three; ok $? "presence holds the three nodes and their zones"

tn_creds a; ok $? "credentials through a"
tn_agent agb b; tn_agent agc c
tn_wait_sessions "$agb_admin" agent 1 && tn_wait_sessions "$agc_admin" agent 1
ok $? "the agent edge-1 connected to b and to c"
tn_client cl a; wait_for tn_ready "$cl_admin"; ok $? "a client on a"
on_both() { [ "$(q "SELECT string_agg(node_id, ',' ORDER BY node_id) FROM tm_agent_presence WHERE agent_id = '$TN_AGENT'")" = "node-c,node-y" ]; }
wait_long on_both; ok $? "presence: edge-1 on node-c and node-y"

SUM='^tunnelmesh_stream_stage_duration_seconds_count\{component="server",stage="open",result="success",scope='
remote_ok() { tn_sum "$a_admin" "${SUM}\"remote\"\\}"; }
local_ok() { tn_sum "$a_admin" "${SUM}\"local\"\\}"; }
ends() { grep -c 'msg="tunnel stream end".*code=ok' "$T/$1.log"; }
get_ok() { [ "$(tn_get "$cl_socks" "http://ok.test:$web/hello.txt")" = "hello from three servers" ]; }

# The view may lag presence by a notification: the first stream is tried
# until it passes (bounded).
wait_for get_ok; ok $? "TM-P2-32: no local candidate on a: the stream goes remote, not an error"
i=0
while [ $i -lt 5 ]; do
  get_ok || break
  i=$((i + 1))
done
is "$i" 5 "five more streams through a"
# A stream's end line on b comes after the client has its body: waited for.
wait_cond '[ "$(ends b)" -ge 6 ]'; ok $? "TM-P2-30: they went to b, a's zone ($(ends b) ended on b)"
is "$(ends c)" 0 "... none to c (the other zone, first in the view's order)"
grep -q 'msg="relay link accepted".*peer_node=node-a' "$T/c.log"; is $? 1 "c never got a link from a"
[ "$(remote_ok)" -ge 6 ]; ok $? "a counts them scope=\"remote\" ($(remote_ok))"
is "$(local_ok)" 0 "and none local"

# ---- TM-P2-31: locality never bypasses policy ------------------------------
# edge-2, alice's too, connected to a itself, with no policy letting
# alice's client token use it.
tn_ctl "$a_admin" agent create edge-2 --owner alice >/dev/null &&
  out=$(tn_ctl "$a_admin" token create --user alice --agent edge-2) &&
  (umask 077 && tn_bearer "$out" >"$T/agent2.token")
ok $? "agent edge-2 and its token, no policy for it"
TN_AGENT=edge-2 TN_AGENT_TOKEN=$T/agent2.token
tn_agent ag2 a; tn_wait_sessions "$ag2_admin" agent 1; ok $? "edge-2 connected to a (local)"
tn_client cl2 a; wait_for tn_ready "$cl2_admin"; ok $? "a client naming edge-2 on a"
TN_AGENT=edge-1 TN_AGENT_TOKEN=
r=$($PROBE reply --proxy "127.0.0.1:$cl2_socks" --target "ok.test:$web")
is "$r" 0x02 "TM-P2-31: the local agent the token may not use is refused (forbidden, 0x02)"
grep 'msg="tunnel stream end"' "$T/a.log" | tail -1 | grep -q 'stage=authorization code=forbidden'
ok $? "... at authorization, before selection"
is "$(local_ok)" 0 "... and never opened on it (no local open on a)"
unlike "$(cat "$T/ag2.log")" "tunnel stream" "edge-2 saw no stream"
kill -TERM "$cl2_pid" "$ag2_pid"; wait_exit "$cl2_pid" 30; wait_exit "$ag2_pid" 30

# ---- b stopped: the other zone --------------------------------------------
kill -TERM "$agb_pid"; wait_exit "$agb_pid" 30
kill -TERM "$b_pid"; wait_exit "$b_pid" 30
is "$EXIT" 0 "b stops cleanly"
c0=$(ends c)
wait_for get_ok; ok $? "b stopped: the next streams through a still succeed"
wait_cond '[ "$(ends c)" -gt "$c0" ]'; ok $? "TM-P2-30, TM-P2-32: ... through c, the other zone ($(ends c) ended on c)"

# b back, the same node (node-y) on the same relay address.
tn_server b "$(mesh node-y z1 "$rb")"; ok $? "b back (node-y)"
tn_agent agb b; tn_wait_sessions "$agb_admin" agent 1; ok $? "edge-1 on b again"
b0=$(ends b)
b_again() { get_ok && [ "$(ends b)" -gt "$b0" ]; }
wait_long b_again; ok $? "streams go to b again (zone first)"

# ---- fds and memory back to their baseline on the three nodes --------------
fds() { ls "/proc/$1/fd" | wc -l; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
burst() { $PROBE burst --proxy "127.0.0.1:$cl_socks" --n "$1" --concurrency 10; }
is "$(burst 100)" "done=100 failed=0" "warm-up: 100 echoes through a and the relay"
base_a=$(fds "$a_pid") base_b=$(fds "$b_pid") base_c=$(fds "$c_pid")
rss_a=$(rss_kib "$a_pid") rss_b=$(rss_kib "$b_pid") rss_c=$(rss_kib "$c_pid")
echo "# baseline fds a=$base_a b=$base_b c=$base_c, KiB a=$rss_a b=$rss_b c=$rss_c"
is "$(burst 500)" "done=500 failed=0" "burst: 500 echoes through a and the relay to b, none failed"
fds_back() {
  [ "$(fds "$a_pid")" -eq "$base_a" ] && [ "$(fds "$b_pid")" -eq "$base_b" ] &&
    [ "$(fds "$c_pid")" -eq "$base_c" ]
}
wait_long fds_back
ok $? "TM-TEST-37: open fds of a, b and c back to the baseline exactly ($(fds "$a_pid") $(fds "$b_pid") $(fds "$c_pid"))"
for n in a b c; do
  _pid=$(eval echo "\$${n}_pid") _base=$(eval echo "\$rss_$n")
  _now=$(rss_kib "$_pid")
  [ "$_now" -le $((_base + RSS_SLACK_KIB)) ]
  ok $? "... $n's resident memory within $RSS_SLACK_KIB KiB of its baseline ($_base -> $_now KiB)"
done

# ---- a browser through the relay, one resource hanging ---------------------
# Headless Chromium through the client's SOCKS5 on a loads a page of 30
# images from page.test (resolved by the agent on b): 29 complete, one
# (/hang/0.svg) is accepted by the page server and never answered. The
# other 29 complete beside it (each image's onload counts into the DOM,
# dumped when Chromium's own --timeout stops the load: a budget for the
# browser, not an assertion); once Chromium is gone the hanging stream is
# torn down through a, b and the agent: the page server sees its
# connection closed, and b has logged the end of every stream a relayed.
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ]; ok $? "chromium is installed (scripts/install-deps.sh)"
mkdir -p "$T/page/img"
{
  printf '<!doctype html><html><head><title>tm</title></head><body>\n<p id="r">images=0</p>\n'
  printf '<script>window.n=0;function ld(){window.n++;'
  printf 'document.getElementById("r").textContent="images="+window.n;}</script>\n'
  printf '<img src="/hang/0.svg" onload="ld()">\n'
  i=0
  while [ $i -lt 29 ]; do printf '<img src="/img/%d.svg" onload="ld()">\n' $i; i=$((i + 1)); done
  printf '</body></html>\n'
} >"$T/page/index.html"
i=0
while [ $i -lt 29 ]; do
  printf '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="#%02x0000"/></svg>\n' $i >"$T/page/img/$i.svg"
  i=$((i + 1))
done
$PY "$top_srcdir/t/lib/page_server.py" "$T/page" "$T/page.port" "$T/access.log" >/dev/null 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/page.port"; ok $? "page server up (one path that never answers)"
page=$(cat "$T/page.port")
ends_all() { grep -c 'msg="tunnel stream end"' "$T/$1.log"; }
r0=$(remote_ok) a0=$(ends_all a) b0=$(ends_all b)
mkdir -p "$T/chrome"
dom=$(timeout 60 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu \
  --no-first-run --disable-background-networking --disable-extensions \
  --user-data-dir="$T/chrome" \
  --proxy-server="socks5://127.0.0.1:$cl_socks" --proxy-bypass-list='<-loopback>' \
  --host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE page.test, EXCLUDE 127.0.0.1' \
  --timeout=10000 --dump-dom "http://page.test:$page/index.html" 2>"$T/chrome.err")
like "$dom" "images=29" "Chromium through a's client: the 29 images that answer all load beside the hanging one (DOM)"
is "$(grep -c '^GET /img/' "$T/access.log")" 29 "... each of them in the page server's access log"
grep -q '^GET /hang/0.svg' "$T/access.log"; ok $? "... and the hanging one reached the page server"
# Chromium keeps its connections alive: the page's streams are its
# connections (at least the page's and the hanging one's).
r1=$(remote_ok)
[ "$r1" -ge $((r0 + 2)) ]; ok $? "Chromium's connections were relayed streams, counted remote on a ($r0 -> $r1)"
hang_closed() { grep -q '^closed /hang/0.svg' "$T/access.log"; }
wait_long hang_closed; ok $? "Chromium gone: the hanging stream is torn down through a, b and the agent (the page server sees it closed)"
# Every stream a relayed (Chromium's, and those of its own lookups that
# the agent answers NXDOMAIN) ends with one line on a and one on b.
all_ended() {
  [ $(($(ends_all a) - a0)) -eq $(($(ends_all b) - b0)) ] &&
    [ $(($(ends_all b) - b0)) -ge $((r1 - r0)) ]
}
wait_long all_ended; ok $? "... and every stream's end is logged on a and on b alike ($(($(ends_all a) - a0)) and $(($(ends_all b) - b0)))"

# ---- credentials ended through c close the sessions held by a and b ---------
polls() { tn_sum "$1" '^tunnelmesh_authorization_revision_poll_total\{result="success"\}'; }
polls_ge() { [ "$(polls "$1")" -ge "$2" ]; }
# after_poll ADMIN ACTION...: ACTION just after one of ADMIN's node's polls
# completed (P1: that count; T0: the time).
after_poll() {
  _adm=$1
  shift
  _p=$(polls "$_adm")
  wait_long polls_ge "$_adm" $((_p + 1)) || return 1
  P1=$(polls "$_adm")
  T0=$(date +%s%N)
  "$@" >/dev/null
}
closes() { grep -c "tunnel connection closed by the server.* close_code=4403" "$T/$1.log"; }
audits() { grep -c "tunnel session ended: its credentials are no longer valid.*role=$2.*reason=denied" "$T/$1.log"; }
seen() { [ "$(closes "$1")" -gt "$2" ] && [ "$(audits "$3" "$4")" -gt "$5" ]; }
when() { # WHAT ADMIN
  PAT=$(polls "$2")
  echo "# $1: seen $((($(date +%s%N) - T0) / 1000000)) ms after the write, polls $P1 -> $PAT"
}

n=$(closes agb) m=$(audits b agent)
after_poll "$b_admin" tn_ctl "$c_admin" agent disable "$TN_AGENT"
ok $? "edge-1 disabled through c's admin API, just after a poll of b"
wait_long seen agb "$n" b agent "$m"
ok $? "TM-P1-34: b closes the agent's session with 4403 and audits it (role=agent)"
when "agent disabled" "$b_admin"
[ "$PAT" -le $((P1 + 1)) ]; ok $? "... found by b's first poll after the write (2 s poll: within 3 s)"
tn_ctl "$c_admin" agent enable "$TN_AGENT" >/dev/null; ok $? "edge-1 enabled again through c"

n=$(closes cl) m=$(audits a client)
after_poll "$a_admin" tn_ctl "$c_admin" token revoke "$TN_CLIENT_TOKEN_ID"
ok $? "the client's token revoked through c's admin API, just after a poll of a"
wait_long seen cl "$n" a client "$m"
ok $? "TM-P1-34: a closes the client's session with 4403 and audits it (role=client)"
when "token revoked" "$a_admin"
[ "$PAT" -le $((P1 + 1)) ]; ok $? "... found by a's first poll after the write (2 s poll: within 3 s)"
unlike "$(cat "$T/a.log" "$T/b.log" "$T/c.log")" "${TN_CLIENT_BEARER#*.}" \
  "TM-SEC-9 no token secret in the servers' logs"

for n in a b c; do
  kill -TERM "$(eval echo "\$${n}_pid")"
  wait_exit "$(eval echo "\$${n}_pid")" 30
  is "$EXIT" 0 "$n stops cleanly"
done
done_testing
