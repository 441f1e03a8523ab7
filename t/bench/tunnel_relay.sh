#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The relay between tunnel servers against a local stream, in the same
# run (issue 27), on demand (not in make check, no threshold). Started
# here: a private PostgreSQL (t/lib/pg.sh, with pg_stat_statements), two
# tunnel servers a and b on it (store_pg, presence, relay over mutual TLS
# with certificates made by openssl; RELAY_TLS=0: plain ws), agent edge-1
# on b and agent edge-2 on a, two clients on a: one for edge-1 (relayed:
# client -> a -> b -> agent) and one for edge-2 (local: client -> a ->
# agent), phtarget as the target, phload as the generator (SOCKS5 to the
# target's IPv4 literal, 128-byte answers).
#   1. opens at concurrency 1 and 32 for RELAY_DURATION seconds each,
#      local and relayed alternating (RELAY_REPEATS rounds): opens/s, open
#      latency p50/p99 (phload's, socket() to the last byte: SOCKS5, the
#      agent's dial, the request and the 128 bytes), and the CPU per open
#      summed over every tunnel process (both servers, both agents, both
#      clients; the generator, the target and PostgreSQL apart), split by
#      role; goal relayed <= 1.4x local;
#   2. one bulk stream (phtarget's endless /bulk/0) for
#      RELAY_BULK_SECONDS: MB/s; goal relayed >= 0.8x local;
#   3. presence: a third server c, then RELAY_AGENTS agents on each of the
#      three (t/bench/presence_agents.py, one process per node, each
#      agent a session of its own): the database statements per second in
#      steady state (pg_stat_statements, reset then read after
#      RELAY_PRESENCE_SECONDS), by statement, with 2 agents and with
#      3 x RELAY_AGENTS; goal O(nodes), not O(agents). RELAY_AGENTS=0
#      skips this part.
# Every server at its defaults (log level info: each stream's end line;
# the relay's links and heartbeat) but max_connections = 4096 (the
# agents of part 3). RELAY_EDGE_TLS=1: the clients and the agents reach
# their server over wss too (each server's tls.cert is its node
# certificate), as a deployment does: then every link on both paths is
# TLS, two on the local path and three on the relayed one.
#   sh ../t/bench/tunnel_relay.sh .     (from a configured build directory
#                                        with t/bench/phload, phtarget)
# Results as Markdown on stdout, progress on stderr.
set -u
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=tunnel_relay.sh BENCH_KITS="pg.sh tunnel.sh"
. "$top_srcdir/t/bench/bench_lib.sh"
PY=${PYTHON3:-python3}
MIGRATE=$top_builddir/tools/proxyhost-migrate
PHLOAD=$top_builddir/t/bench/phload
PHTARGET=$top_builddir/t/bench/phtarget
DUR=${RELAY_DURATION:-5}
BULK_SECS=${RELAY_BULK_SECONDS:-5}
REPEATS=${RELAY_REPEATS:-3}
AGENTS=${RELAY_AGENTS:-1000}
PSECS=${RELAY_PRESENCE_SECONDS:-30}
TLS=${RELAY_TLS:-1}
EDGE_TLS=${RELAY_EDGE_TLS:-0}
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
ms() { awk -v u="$1" 'BEGIN { if (u == "") print "-"; else printf "%.2f", u / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }'; }

for f in "$PHLOAD" "$PHTARGET" "$MIGRATE"; do
  [ -x "$f" ] || die "$f is missing: make t/bench/phload t/bench/phtarget tools/proxyhost-migrate"
done
for m in tunnel_server tunnel_agent tunnel_client store_pg auth_cache admin_api direct socks5; do
  have_module "$m" || die "module $m not built"
done

# ---- PostgreSQL, two servers, two agents, two clients -----------------------
say "PostgreSQL (pg_stat_statements)"
PG_OPTS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c max_connections=200"
start_pg "$T/pg" || die "PostgreSQL did not start"
TN_DSN=$(pg_new_db authz) && PROXYHOST_MIGRATE_DSN=$TN_DSN "$MIGRATE" apply >/dev/null ||
  die "the schema"
pg_psql authz -c 'CREATE EXTENSION pg_stat_statements' >/dev/null || die "pg_stat_statements"
TN_STORE=store_pg
tn_setup || die "set-up failed"
"$PHTARGET" --listen 127.0.0.1:0 >"$T/phtarget.out" 2>&1 &
PIDS="$PIDS $!"
wait_for grep -q '^port=' "$T/phtarget.out" || die "no phtarget"
TADDR=127.0.0.1:$(sed -n 's/^port=//p' "$T/phtarget.out")

P=$T/pki
mkdir -p "$P"
if [ "$TLS" = 1 ] || [ "$EDGE_TLS" = 1 ]; then
  tn_pki_ca "$P" ca && tn_pki_node "$P" node-a ca node-a &&
    tn_pki_node "$P" node-b ca node-b && tn_pki_node "$P" node-c ca node-c ||
    die "certificates"
fi
mesh() { # NODE
  _r=$(free_port)
  printf 'max_connections = 4096\nnode_id = %s\npresence = true\npresence.zone = z1\n' "$1"
  printf 'presence.relay_addr = 127.0.0.1:%s\nrelay = true\nrelay.listen = 127.0.0.1:%s\n' "$_r" "$_r"
  if [ "$TLS" = 1 ]; then
    printf 'relay.trust_domain = tm.test\nrelay.tls.cert = %s/%s.pem\n' "$P" "$1"
    printf 'relay.tls.key = %s/%s.key\nrelay.tls.ca = %s/ca.pem\n' "$P" "$1" "$P"
  else
    printf 'relay.allow_plain = true\n'
  fi
  if [ "$EDGE_TLS" = 1 ]; then
    printf 'tls.cert = %s/%s.pem\ntls.key = %s/%s.key\n' "$P" "$1" "$P" "$1"
  fi
}
if [ "$EDGE_TLS" = 1 ]; then
  # presence_agents.py (part 3) speaks plain ws only
  [ "$AGENTS" = 0 ] || die "RELAY_EDGE_TLS=1 needs RELAY_AGENTS=0"
  TN_CA=$P/ca.pem
fi
say "servers a and b, agents, clients"
tn_server a "$(mesh node-a)" || die "server a"
tn_server b "$(mesh node-b)" || die "server b"
tn_creds a || die "credentials"
tn_ctl "$a_admin" agent create edge-2 --owner alice >/dev/null &&
  _o=$(tn_ctl "$a_admin" token create --user alice --agent edge-2) &&
  (umask 077 && tn_bearer "$_o" >"$T/agent2.token") &&
  tn_ctl "$a_admin" policy create --agent edge-2 --user alice --host '*' \
    --ports 1-65535 >/dev/null || die "agent edge-2"
tn_agent ag1 b || die "agent edge-1 on b"
TN_AGENT=edge-2 TN_AGENT_TOKEN=$T/agent2.token tn_agent ag2 a || die "agent edge-2 on a"
tn_client cr a || die "client for edge-1"
TN_AGENT=edge-2 tn_client cl a || die "client for edge-2"
tn_wait_sessions "$ag1_admin" agent 1 && tn_wait_sessions "$ag2_admin" agent 1 ||
  die "agents not connected"
probe() { # SOCKS: one open through it
  [ "$("$PHLOAD" --mode socks5 --proxy "127.0.0.1:$1" --target "$TADDR" \
    --rounds 1 --concurrency 1 --response-size 128 --timeout 5 | tail -1 | tr ' ' '\n' | sed -n 's/^errors=//p')" = 0 ]
}
wait_long probe "$cr_socks" || die "no relayed stream: $(tail -3 "$T/a.log")"
wait_long probe "$cl_socks" || die "no local stream"
ALL="$a_pid $b_pid $ag1_pid $ag2_pid $cr_pid $cl_pid"

# RELAY_PERF=1: perf record over every tunnel process during each run
# (prof_start TAG SECS / prof_end TAG), the report's top lines on stderr
# and in $T/perf.TAG.txt (PH_TEST_KEEP=1 keeps them).
prof_start() {
  [ "${RELAY_PERF:-0}" = 1 ] || return 0
  perf record -q -o "$T/perf.$1.data" -p "$(echo $ALL | tr ' ' ',')" -- sleep "$2" \
    >/dev/null 2>&1 &
  PERF_PID=$!
}
prof_end() {
  [ "${RELAY_PERF:-0}" = 1 ] || return 0
  wait "$PERF_PID"
  perf report -q --stdio --sort dso,symbol -i "$T/perf.$1.data" 2>/dev/null |
    grep -v '^$' | sed 's/  *- *- *$//' | head -40 >"$T/perf.$1.txt"
  sed "s/^/  perf $1: /" "$T/perf.$1.txt" | head -12 >&2
}
# wakeups PID...: the voluntary context switches of every thread of those
# processes (each is a wait in epoll that something later woke).
wakeups() {
  for p in "$@"; do
    cat /proc/"$p"/task/*/status 2>/dev/null
  done | awk '/^voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }'
}
per_open() { awk -v v="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", v / n; else print "-" }'; }
# opens MODE SOCKS CONC: one phload run; prints its row
opens() {
  v_cli0=$(wakeups "$cr_pid" "$cl_pid") v_a0=$(wakeups "$a_pid")
  v_b0=$(wakeups "$b_pid") v_ag0=$(wakeups "$ag1_pid" "$ag2_pid")
  t_cli0=$(ticks "$cr_pid" "$cl_pid") t_a0=$(ticks "$a_pid") t_b0=$(ticks "$b_pid")
  t_ag0=$(ticks "$ag1_pid" "$ag2_pid") t0=$(ticks $ALL)
  prof_start "$1-c$3" "$DUR"
  w0=$(now_ms)
  out=$("$PHLOAD" --mode socks5 --proxy "127.0.0.1:$2" --target "$TADDR" \
    --concurrency "$3" --duration "$DUR" --warmup 0.5 --response-size 128 \
    --timeout 10 | tail -1)
  w1=$(now_ms)
  prof_end "$1-c$3"
  n=$(kv "$out" ops_all)
  t1=$(ticks $ALL)
  printf '| %s | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$3" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$(kv "$out" ops_per_sec)" \
    "$(ms "$(kv "$out" p50_us)")" "$(ms "$(kv "$out" p99_us)")" \
    "$(us_per $((t1 - t0)) "$n")" \
    "$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v idle="$IDLE" -v ms=$((w1 - w0)) -v n="$n" \
      'BEGIN { if (n > 0) printf "%.1f", (t / hz * 1e6 - idle * ms / 1000) / n; else print "-" }')" \
    "$(us_per $(($(ticks "$cr_pid" "$cl_pid") - t_cli0)) "$n")" \
    "$(us_per $(($(ticks "$a_pid") - t_a0)) "$n")" \
    "$(us_per $(($(ticks "$b_pid") - t_b0)) "$n")" \
    "$(us_per $(($(ticks "$ag1_pid" "$ag2_pid") - t_ag0)) "$n")" \
    "$(per_open $(($(wakeups "$cr_pid" "$cl_pid") - v_cli0)) "$n") / $(per_open $(($(wakeups "$a_pid") - v_a0)) "$n") / $(per_open $(($(wakeups "$b_pid") - v_b0)) "$n") / $(per_open $(($(wakeups "$ag1_pid" "$ag2_pid") - v_ag0)) "$n")" \
    "$(kv "$out" errors)"
}
bulk() { # MODE SOCKS
  prof_start "$1-bulk" "$((BULK_SECS - 1))"
  out=$("$PHLOAD" --mode socks5 --proxy "127.0.0.1:$2" --target "$TADDR" \
    --bulk 0 --duration "$BULK_SECS" --timeout 10 | tail -1)
  prof_end "$1-bulk"
  printf '| %s | %s | %s | %s |\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$(kv "$out" mbps)" "$(kv "$out" errors)"
}

# The processes' CPU at rest (timers, heartbeats, presence), µs per
# second: the "net" column takes it out of each run's sum.
say "idle CPU ($DUR s)"
t0=$(ticks $ALL)
sleep "$DUR"
IDLE=$(awk -v t=$(($(ticks $ALL) - t0)) -v hz="$HZ" -v d="$DUR" 'BEGIN { printf "%.0f", t / hz * 1e6 / d }')

echo "## TunnelMesh relay: relayed against local (issue 27)"
echo
echo "\`sh ../t/bench/tunnel_relay.sh .\`; relay TLS: $TLS; clients' and agents' TLS: $EDGE_TLS; $DUR s per open run, $BULK_SECS s bulk, $REPEATS rounds."
echo "CPU: µs of user + system time per open (phload's ops_all), summed over both servers, both agents and both clients; the generator, the target and PostgreSQL not counted. At rest the six use $IDLE µs/s together (timers, heartbeats, presence): \"net\" takes that out of the run's sum. Wakeups: voluntary context switches per open (clients / server a / server b / agents)."
echo
echo "| path | concurrency | load average | opens/s | latency p50 / p99 ms | CPU µs/open, all | net of rest | clients | server a | server b | agents | wakeups/open: clients / a / b / agents | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
r=1
while [ "$r" -le "$REPEATS" ]; do
  for c in 1 32; do
    say "round $r: c$c local, relayed"
    opens local "$cl_socks" "$c"
    opens relayed "$cr_socks" "$c"
  done
  r=$((r + 1))
done | tee "$T/opens.md"
echo
echo "| bulk path | load average | MB/s | errors |"
echo "|---|---|---|---|"
r=1
while [ "$r" -le "$REPEATS" ]; do
  say "round $r: bulk local, relayed"
  bulk local "$cl_socks"
  bulk relayed "$cr_socks"
  r=$((r + 1))
done | tee "$T/bulk.md"
# The medians' ratios, relayed over local.
med() { # FILE PATH CONC COLUMN (awk field of the row)
  awk -F'|' -v p=" $2 " -v c=" $3 " -v f="$4" '$2 == p && (c == "  " || $3 == c) { gsub(/ /, "", $f); print $f }' "$1" |
    sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}
lat() { # FILE PATH CONC p50|p99
  awk -F'|' -v p=" $2 " -v c=" $3 " -v w="$4" '$2 == p && $3 == c { split($6, x, "/"); gsub(/ /, "", x[1]); gsub(/ /, "", x[2]); print (w == "p50" ? x[1] : x[2]) }' "$1" |
    sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}
echo
echo "Medians, relayed ÷ local: CPU per open c1 $(ratio "$(med "$T/opens.md" local 1 7)" "$(med "$T/opens.md" relayed 1 7)") (net $(ratio "$(med "$T/opens.md" local 1 8)" "$(med "$T/opens.md" relayed 1 8)")), c32 $(ratio "$(med "$T/opens.md" local 32 7)" "$(med "$T/opens.md" relayed 32 7)") (net $(ratio "$(med "$T/opens.md" local 32 8)" "$(med "$T/opens.md" relayed 32 8)")) (goal ≤ 1.4);" \
  "p50 c1 $(ratio "$(lat "$T/opens.md" local 1 p50)" "$(lat "$T/opens.md" relayed 1 p50)"), p99 c1 $(ratio "$(lat "$T/opens.md" local 1 p99)" "$(lat "$T/opens.md" relayed 1 p99)")," \
  "p50 c32 $(ratio "$(lat "$T/opens.md" local 32 p50)" "$(lat "$T/opens.md" relayed 32 p50)"), p99 c32 $(ratio "$(lat "$T/opens.md" local 32 p99)" "$(lat "$T/opens.md" relayed 32 p99)");" \
  "bulk $(ratio "$(awk -F'|' '$2 == " local " { gsub(/ /, "", $4); print $4 }' "$T/bulk.md" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" \
    "$(awk -F'|' '$2 == " relayed " { gsub(/ /, "", $4); print $4 }' "$T/bulk.md" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')") (goal ≥ 0.8)."

# ---- presence: statements per second, 2 agents then 3 x AGENTS --------------
[ "$AGENTS" -gt 0 ] || exit 0 # RELAY_AGENTS=0: the relay's part only
say "server c"
tn_server c "$(mesh node-c)" || die "server c"
nodes3() { [ "$(pg_psql authz -c 'SELECT count(*) FROM tm_nodes')" = 3 ]; }
wait_long nodes3 || die "three nodes not in presence"
# stmts LABEL: pg_stat_statements reset, PSECS seconds, then one row of
# statements per second by kind.
stmts() {
  pg_psql authz -c 'SELECT pg_stat_statements_reset()' >/dev/null
  sleep "$PSECS"
  pg_psql authz -At -F' ' -c "SELECT
    CASE WHEN query LIKE '%INSERT INTO tm_nodes%' THEN 'heartbeat'
         WHEN query LIKE '%INSERT INTO tm_agent_presence%' THEN 'agent_up'
         WHEN query LIKE '%DELETE FROM tm_agent_presence WHERE agent_id%' THEN 'agent_left'
         WHEN query LIKE '%NOT (agent_id = ANY%' THEN 'agents_sync'
         WHEN query LIKE '%FROM t, tm_nodes n LEFT JOIN%' THEN 'read'
         WHEN query LIKE '%pg_stat_statements%' THEN 'bench'
         ELSE 'other' END AS kind, sum(calls)
    FROM pg_stat_statements GROUP BY 1 ORDER BY 1" >"$T/stmts.$1"
  # what "other" is (the authorization store's reads and polls), on stderr
  pg_psql authz -At -F' ' -c "SELECT calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 90)
    FROM pg_stat_statements WHERE query NOT LIKE '%tm_nodes%' AND query NOT LIKE
    '%tm_agent_presence%' AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT 6" |
    sed "s/^/  other ($1): /" >&2
  rows=$(pg_psql authz -c 'SELECT count(*) FROM tm_agent_presence')
  get() { awk -v k="$1" -v s="$PSECS" '$1 == k { printf "%.2f", $2 / s; f = 1 } END { if (!f) print "0" }' "$T/stmts.$2"; }
  tot=$(awk -v s="$PSECS" '$1 != "bench" { n += $2 } END { printf "%.2f", n / s }' "$T/stmts.$1")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$rows" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$(get heartbeat "$1")" "$(get agent_up "$1")" \
    "$(get agent_left "$1")" "$(get agents_sync "$1")" "$(get read "$1")" \
    "$(get other "$1")" "$tot"
}
echo
echo "Presence, three nodes on one PostgreSQL, $PSECS s per row (pg_stat_statements; statements per second; presence.lease and presence_poll at their defaults):"
echo
echo "| agents | rows in tm_agent_presence | load average | heartbeat | agent_up | agent_left | agents_sync | read (view) | other | all |"
echo "|---|---|---|---|---|---|---|---|---|---|"
say "presence with 2 agents ($PSECS s)"
stmts 2
for n in a b c; do
  bg "pa-$n" "$PY" "$top_srcdir/t/bench/presence_agents.py" \
    --admin "$(eval echo "\$${n}_admin")" --admin-token-file "$TN_ADMIN_TOKEN" \
    --prefix "n$n-" --n "$AGENTS" --url "ws://127.0.0.1:$(eval echo "\$${n}_port")/tunnel" \
    --ready-file "$T/pa-$n.ready" --hold 3600
done
say "$AGENTS agents on each node"
i=0
while [ $i -lt 1200 ] && ! { [ -s "$T/pa-a.ready" ] && [ -s "$T/pa-b.ready" ] && [ -s "$T/pa-c.ready" ]; }; do
  sleep 0.5
  i=$((i + 1))
done
[ -s "$T/pa-c.ready" ] || die "the agents did not all connect: $(tail -2 "$T/pa-a.out" "$T/pa-c.out")"
sleep 5 # the last agent_up writes, and the views' reads they caused
say "presence with 3 x $AGENTS agents ($PSECS s)"
stmts "2+3x$AGENTS"
