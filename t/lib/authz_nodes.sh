# SPDX-License-Identifier: BSD-2-Clause
# Authorization nodes for tests and benchmarks, sourced after testlib.sh
# and pg.sh: proxyhost processes that share one PostgreSQL database, each
# running store_pg, auth_cache in front of it, and admin_api (whose GET
# /v1/authorize, `proxyhostctl access check`, asks the cache what a
# stream open would be answered).
#
#   az_setup "$T"                    # cluster, database authz (v10), admin token
#   az_node a "[auth_cache]
#   enabled = true"                  # starts node a; sets a_port
#   az_ctl "$a_port" user create alice
#   az_verdict "$b_port" TOK AGENT HOST PORT   # allow | deny | unavailable
#   az_wait_verdict "$b_port" deny TOK AGENT HOST PORT [MAX_TRIES]
#                                    # polls 20 ms apart; prints the ms
#   az_policy_queries                # authorization reads the database ran
#
# PostgreSQL runs with pg_stat_statements so that the store's queries can
# be counted on the database's side, not by the module that makes them.

CTL=${CTL:-$top_builddir/tools/proxyhostctl}
MIGRATE=${MIGRATE:-$top_builddir/tools/proxyhost-migrate}

# az_setup DIR: the cluster, database "authz" at the current schema, the
# pg_stat_statements view, and the admin token file DIR/admin.token.
az_setup() {
  PG_OPTS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
  start_pg "$1/pg" || return 1
  AZ_DSN=$(pg_new_db authz) || return 1
  PROXYHOST_MIGRATE_DSN=$AZ_DSN "$MIGRATE" apply >/dev/null || return 1
  pg_psql authz -c 'CREATE EXTENSION pg_stat_statements' >/dev/null ||
    return 1
  AZ_TOKEN_FILE=$1/admin.token
  "$CTL" admin-token new "$AZ_TOKEN_FILE" >/dev/null
}

# az_node NAME [EXTRA-INI]: starts a node; sets NAME_port and NAME_pid.
# EXTRA-INI is appended (later lines of a section win over earlier ones:
# they are read in order).
az_node() {
  _port=$(free_port)
  cat >"$T/$1.ini" <<EOC
[proxyhost]
modules = store_pg, auth_cache, admin_api
module_path = $top_builddir/modules
[admin]
listen = 127.0.0.1:$_port
[store_pg]
dsn = $AZ_DSN
[auth_cache]
store = store_pg
[admin_api]
store = store_pg
access = auth_cache
token_file = $AZ_TOKEN_FILE
${2:-}
EOC
  "$PROXYHOST" -c "$T/$1.ini" >>"$T/$1.log" 2>&1 &
  eval "$1_pid=$!"
  PIDS="$PIDS $!"
  eval "$1_port=$_port"
  wait_for healthy "$_port" && wait_for ready_port "$_port"
}

ready_port() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }

# az_ctl PORT ARGS...: proxyhostctl against the node on PORT.
az_ctl() {
  _p=$1
  shift
  "$CTL" --admin "127.0.0.1:$_p" --token-file "$AZ_TOKEN_FILE" "$@"
}

# az_verdict PORT TOKEN AGENT HOST TPORT: the verdict word, or "error".
az_verdict() {
  # exit 4 is a deny (proxyhostctl(1)), an answer like an allow's 0
  _out=$(az_ctl "$1" --json access check --token "$2" --agent "$3" \
    --host "$4" --port "$5" 2>/dev/null)
  _rc=$?
  [ "$_rc" = 0 ] || [ "$_rc" = 4 ] || { echo error; return; }
  printf '%s\n' "$_out" | sed -n 's/.*"verdict":"\([a-z]*\)".*/\1/p'
}

# az_wait_verdict PORT WANT TOKEN AGENT HOST TPORT [MAX_TRIES]: polls
# every 20 ms until the verdict is WANT (at most MAX_TRIES, default 500);
# prints the milliseconds it took and returns 0, or returns 1.
az_wait_verdict() {
  _t0=$(date +%s%N)
  _i=0
  while [ "$_i" -lt "${7:-500}" ]; do
    if [ "$(az_verdict "$1" "$3" "$4" "$5" "$6")" = "$2" ]; then
      echo $((($(date +%s%N) - _t0) / 1000000))
      return 0
    fi
    _i=$((_i + 1))
    sleep 0.02
  done
  return 1
}

# az_token_id TEXT: the token id in proxyhostctl's output.
az_token_id() { printf '%s\n' "$1" | sed -n 's/^id  *\(tok_[0-9a-f]*\).*/\1/p' | head -1; }

# az_policy_queries: how many times the database ran the store's
# authorization read of the policies (one per authorization the store
# answered), from pg_stat_statements.
az_policy_queries() {
  pg_psql authz -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
    WHERE query LIKE '%FROM agent_policies%port_min <=%'"
}
az_reset_queries() { pg_psql authz -c 'SELECT pg_stat_statements_reset()' >/dev/null; }
