# SPDX-License-Identifier: BSD-2-Clause
# Several controllers on one Redis and one PostgreSQL (issue 26 "Several
# controllers"), for t/integration/cp_multi_*.sh. Source after testlib.sh,
# redis.sh and pg.sh, with T, MODS and PROXYHOST set:
#
#   cpm_controller_ini ADMIN CP  # a controller's ini on stdout: the
#       cluster c1, store_pg on $PG_PORT, Redis on $REDIS_PORT, echo on
#       $E, the checks' keys short; CPM_LEASE (member_lease, default 2s),
#       CPM_CHECK, CPM_FAST, CPM_FALL (check_interval 500ms, fast_interval
#       200ms, health_fall 2) and CPM_EXTRA (more [controlplane_server]
#       lines, default tls.mode = disabled); CPM_CHECKS=0 leaves the
#       checkers' keys out (no echo needed), CPM_RO ([redis_ownership]
#       lines, default hold_fresh_state = false). Other values: through
#       testlib.sh's ini_set (t/integration/cp_e2e.sh, gateway_e2e.sh)
#   cpm_keys                     # $T/secrets, $T/ref.key, $T/admin.token
#   cpm_echo                     # the echo module on a free port: E
#   cpm_checker_ini ADMIN [EXTRA]  # a checker's ini on stdout

cpm_keys() {
  mkdir -p "$T/secrets"
  (umask 077 && head -c 32 /dev/urandom >"$T/ref.key")
  "$top_builddir/tools/proxyhostctl" admin-token new "$T/admin.token" >/dev/null
}

cpm_echo() {
  E=$(free_port)
  printf '[proxyhost]\nmodules = echo\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[echo]\nlisten = 127.0.0.1:%s\n' \
    "$MODS" "$(free_port)" "$E" >"$T/echo.ini"
  "$PROXYHOST" -c "$T/echo.ini" >>"$T/echo.log" 2>&1 &
  PIDS="$PIDS $!"
}

cpm_controller_ini() { # cpm_controller_ini ADMIN CP
  cat <<EOF2
[proxyhost]
modules = store_pg, admin_api, pool_api, redis_ownership, controlplane_server
module_path = $MODS
drain_timeout = 2s
[log]
level = debug
[admin]
listen = 127.0.0.1:$1
[store_pg]
dsn = host=127.0.0.1 port=$PG_PORT user=postgres dbname=pool
migrate = auto
revision_poll = 100ms
[admin_api]
store = store_pg
token_file = $T/admin.token
[pool_api]
store = store_pg
token_file = $T/admin.token
[redis_ownership]
address = 127.0.0.1:$REDIS_PORT
cluster_id = c1
${CPM_RO-hold_fresh_state = false}
session_ttl = 3s
runtime_ttl = 2s
ownership_lease = 8s
command_timeout = 300ms
reconnect.min = 100ms
reconnect.max = 500ms
[controlplane_server]
store = store_pg
cluster_id = c1
listen = 127.0.0.1:$2
secrets_dir = $T/secrets
reference_key_file = $T/ref.key
session_ttl = 3s
runtime_interval = 500ms
snapshot_validity = 10s
allocation_safety_margin = 1s
refresh_before = 5s
min_snapshot_interval = 0s
assign_interval = 300ms
watch_poll_interval = 100ms
${CPM_EXTRA:-tls.mode = disabled}
EOF2
  [ "${CPM_CHECKS:-1}" = 0 ] || cat <<EOF2
check_interval = ${CPM_CHECK:-500ms}
fast_interval = ${CPM_FAST:-200ms}
task_deadline = 2s
member_lease = ${CPM_LEASE:-2s}
echo_url = http://127.0.0.1:$E/echo
health_fall = ${CPM_FALL:-2}
health_sync_interval = 200ms
health_rise = 2
# three of five down at the end: not a checker fault here
health_panic_threshold = 80
EOF2
}

# cpm_checker_ini ADMIN [EXTRA]: a checker's ini on stdout (EXTRA: more
# [checker] lines, default tls.mode = disabled).
cpm_checker_ini() {
  printf '[proxyhost]\nmodules = checker\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[checker]\nbatch.flush = 100ms\nbackoff.min = 200ms\nbackoff.max = 1s\nmax_concurrency = 8\n%s\n' \
    "$MODS" "$1" "${2:-tls.mode = disabled}"
}

# cpm_stores: redis-server ($T/redis) and PostgreSQL ($T/pg) with the
# pool's database, each an ok line.
cpm_stores() {
  start_redis "$T/redis"; ok $? "redis-server starts"
  PG_LISTEN=127.0.0.1
  start_pg "$T/pg"; ok $? "PostgreSQL starts (a private cluster on 127.0.0.1)"
  pg_psql postgres -c 'CREATE DATABASE pool' >/dev/null
  ok $? "the pool's database is created"
}

# cpm_two: cpm_keys, then c1 and c2 from cpm_controller_ini (admin ports
# a1, a2, gRPC ports cp1, cp2, pids C1, C2), each waited for ready.
# cpm_first and cpm_second are its two halves, for a test that wants
# clients on c1 before c2 exists (gRPC's pick_first takes the first
# address that answers: on a loaded machine, not always the list's first).
cpm_ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }
cpm_first() {
  cpm_keys
  a1=$(free_port) a2=$(free_port) cp1=$(free_port) cp2=$(free_port)
  cpm_controller_ini "$a1" "$cp1" >"$T/c1.ini"
  cpm_controller_ini "$a2" "$cp2" >"$T/c2.ini"
  "$PROXYHOST" -c "$T/c1.ini" >>"$T/c1.log" 2>&1 &
  C1=$!
  PIDS="$PIDS $C1"
  wait_long cpm_ready "$a1"; ok $? "c1 is ready (store_pg migrated, Redis)"
}
cpm_second() {
  "$PROXYHOST" -c "$T/c2.ini" >>"$T/c2.log" 2>&1 &
  C2=$!
  PIDS="$PIDS $C2"
  wait_long cpm_ready "$a2"; ok $? "c2 is ready on the same store and Redis"
}
cpm_two() {
  cpm_first
  cpm_second
}
