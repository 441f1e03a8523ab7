# SPDX-License-Identifier: BSD-2-Clause
# A private PostgreSQL cluster for integration tests, sourced after
# testlib.sh: one cluster per test run (initdb + start take 2-4 s), a
# fresh database per case.
#
#   start_pg "$T/pg" || { ok 1 "PostgreSQL starts"; done_testing; exit 1; }
#   dsn=$(pg_new_db case1)        # "host=... port=... user=postgres dbname=case1"
#   pg_psql case1 -c 'SELECT 1'   # psql on that database, ON_ERROR_STOP on
#   stop_pg                       # also run on exit
#
# The cluster listens on a unix socket in its directory only (no TCP;
# PG_LISTEN=127.0.0.1 adds loopback TCP on PG_PORT), trusts local
# connections, and runs without fsync; PG_OPTS adds server options
# ("-c shared_preload_libraries=pg_stat_statements"). As root (CI) initdb and the server
# run as the postgres user, which must be able to enter the directory's
# parent: start_pg makes that parent 0711. PostgreSQL missing is a
# failure, never a skip: start_pg returns non-zero and says why.

# The newest installed server's bin directory (PG_BINDIR overrides).
pg_bindir() {
  if [ -n "${PG_BINDIR:-}" ]; then echo "$PG_BINDIR"; return; fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

# pg_as_server CMD...: runs a server command as the cluster's owner.
pg_as_server() {
  if [ "$(id -u)" = 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    (cd / && "$@")
  fi
}

PG_DIR=
# start_pg DIR: initdb into DIR/data and start the server with its socket
# in DIR; sets PG_DIR, PGHOST_DIR, PG_PORT, PG_BIN, PSQL. The log is
# DIR/server.log. Bounded: pg_ctl waits at most 60 s.
start_pg() {
  # The server is a daemon (pg_ctl detaches it): stop it however the test
  # ends, also when make check interrupts it (a signal would otherwise end
  # the shell without its EXIT trap). Set before initdb: stop_pg is safe
  # before the server runs.
  trap 'stop_pg; cleanup' EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
  PG_BIN=$(pg_bindir)
  if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
    echo "# PostgreSQL server binaries not found (install the Debian package postgresql; PG_BINDIR overrides)"
    return 1
  fi
  PSQL="$PG_BIN/psql"
  [ -x "$PSQL" ] || PSQL=psql
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    echo "# running as root, but there is no postgres user to run the server"
    return 1
  fi
  mkdir -p "$1" || return 1
  if [ "$(id -u)" = 0 ]; then
    chmod 0711 "$(dirname "$1")" && chown postgres "$1" || return 1
  fi
  PG_DIR=$(cd "$1" && pwd)
  PGHOST_DIR=$PG_DIR
  PG_PORT=${PG_PORT:-$(free_port)}
  if ! pg_as_server "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust \
    --no-sync -E UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1; then
    echo "# initdb failed:"; sed 's/^/#   /' "$PG_DIR/initdb.log" | tail -5
    PG_DIR=
    return 1
  fi
  listen=${PG_LISTEN:-}
  if ! pg_as_server "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" \
    -w -t 60 -o "-k $PG_DIR -p $PG_PORT -c listen_addresses='$listen' -c fsync=off -c synchronous_commit=off -c full_page_writes=off ${PG_OPTS:-}" \
    start >"$PG_DIR/pg_ctl.log" 2>&1; then
    echo "# the PostgreSQL server did not start:"
    sed 's/^/#   /' "$PG_DIR/server.log" | tail -5
    stop_pg
    return 1
  fi
}

# stop_pg: stops the cluster at once (-m immediate); safe to call twice.
stop_pg() {
  [ -n "$PG_DIR" ] || return 0
  pg_as_server "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -t 30 stop \
    >/dev/null 2>&1
  PG_DIR=
}

# pg_dsn NAME: the libpq connection string of database NAME.
pg_dsn() { echo "host=$PGHOST_DIR port=$PG_PORT user=postgres dbname=$1"; }

# pg_psql NAME ARGS...: psql on database NAME, quiet, stopping at the first
# error, unaligned and without headers (for comparing output).
pg_psql() {
  _db=$1
  shift
  "$PSQL" -X -q -v ON_ERROR_STOP=1 -A -t -d "$(pg_dsn "$_db")" "$@"
}

# pg_new_db NAME: creates the empty database NAME and prints its DSN.
pg_new_db() {
  pg_psql postgres -c "CREATE DATABASE \"$1\"" >/dev/null || return 1
  pg_dsn "$1"
}

# pg_pause: stops the running cluster (fast: clients see their
# connections end) and keeps it for pg_resume; pg_resume starts it again
# on the same directory and port. For fault tests (a database that goes
# away mid-run). Bounded as start_pg.
pg_pause() {
  pg_as_server "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 60 stop \
    >/dev/null 2>&1
}
pg_resume() {
  listen=${PG_LISTEN:-}
  pg_as_server "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" \
    -w -t 60 -o "-k $PG_DIR -p $PG_PORT -c listen_addresses='$listen' -c fsync=off -c synchronous_commit=off -c full_page_writes=off ${PG_OPTS:-}" \
    start >"$PG_DIR/pg_ctl.log" 2>&1
}
