# SPDX-License-Identifier: BSD-2-Clause
# A private redis-server for tests, on 127.0.0.1 in a directory of its
# own, without persistence. Source it after testlib.sh:
#
#   start_redis "$T/redis" || { ok 1 "redis-server starts"; done_testing; exit 1; }
#   redis_cli "$T/redis" PING          # redis-cli on it
#   stop_redis "$T/redis"; restart_redis "$T/redis"   # same port again
#   redis_dump "$T/redis" >"$T/dump"   # every key: type, TTL, value, DUMP
#
# or run it (a C test does, through system()):
#
#   sh t/lib/redis.sh start|stop|restart|dump|cli DIR [ARGS...]
#
# start prints the port; the server also listens on the unix socket
# DIR/redis.sock. REDIS_PASSWORD set: the server requires it
# (requirepass) and redis_cli sends it. redis-server missing is a
# failure, never a skip. Every wait is bounded (5 s).

REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}

_redis_free_port() {
  # testlib.sh's picker when a test sourced it (see free_port.py: a port
  # from bind(0) can be taken by a parallel test's connection first)
  if command -v free_port >/dev/null 2>&1; then free_port; return; fi
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# redis_cli DIR ARGS...: redis-cli against the server of DIR.
redis_cli() {
  _rd=$1
  shift
  if [ -n "${REDIS_PASSWORD:-}" ]; then
    REDISCLI_AUTH=$REDIS_PASSWORD "$REDIS_CLI" -h 127.0.0.1 -p "$(cat "$_rd/port")" "$@"
  else
    "$REDIS_CLI" -h 127.0.0.1 -p "$(cat "$_rd/port")" "$@"
  fi
}

_redis_wait_up() {
  _i=0
  while [ $_i -lt 100 ]; do
    if [ "$(redis_cli "$1" PING 2>/dev/null)" = PONG ]; then return 0; fi
    _i=$((_i + 1))
    sleep 0.05
  done
  return 1
}

# restart_redis DIR: starts the server of DIR again, on the port it had.
restart_redis() {
  command -v "$REDIS_SERVER" >/dev/null 2>&1 || {
    echo "# redis-server not found (install the Debian package redis-server)"
    return 1
  }
  set -- "$1" --port "$(cat "$1/port")" --bind 127.0.0.1 --save '' \
    --appendonly no --dir "$1" --daemonize yes --pidfile "$1/redis.pid" \
    --logfile "$1/redis.log" --unixsocket "$1/redis.sock" --unixsocketperm 700
  _rd=$1
  shift
  if [ -n "${REDIS_PASSWORD:-}" ]; then
    "$REDIS_SERVER" "$@" --requirepass "$REDIS_PASSWORD" >/dev/null || return 1
  else
    "$REDIS_SERVER" "$@" >/dev/null || return 1
  fi
  _redis_wait_up "$_rd" || { echo "# redis-server did not answer PING"; return 1; }
  [ -z "${PIDS+x}" ] || PIDS="$PIDS $(cat "$_rd/redis.pid")"
}

# start_redis DIR: a new server on a free port; prints nothing, sets
# REDIS_PORT.
start_redis() {
  mkdir -p "$1" || return 1
  _redis_free_port >"$1/port" || return 1
  restart_redis "$1" || return 1
  REDIS_PORT=$(cat "$1/port")
}

# stop_redis DIR: SIGTERM, then SIGKILL; returns once the process is gone.
stop_redis() {
  [ -f "$1/redis.pid" ] || return 0
  _pid=$(cat "$1/redis.pid")
  kill "$_pid" 2>/dev/null || { rm -f "$1/redis.pid"; return 0; }
  _i=0
  while kill -0 "$_pid" 2>/dev/null && [ $_i -lt 100 ]; do
    _i=$((_i + 1))
    sleep 0.05
  done
  kill -9 "$_pid" 2>/dev/null
  rm -f "$1/redis.pid"
}

# redis_dump DIR: every key with its type, TTL, value and DUMP (hex), one
# block per key, for tests that look for what must never be there.
redis_dump() {
  redis_cli "$1" --scan | sort | while IFS= read -r _k; do
    _t=$(redis_cli "$1" TYPE "$_k")
    echo "key $_k type $_t pttl $(redis_cli "$1" PTTL "$_k")"
    case $_t in
      string) redis_cli "$1" GET "$_k" ;;
      hash) redis_cli "$1" HGETALL "$_k" ;;
      zset) redis_cli "$1" ZRANGE "$_k" 0 -1 WITHSCORES ;;
      set) redis_cli "$1" SMEMBERS "$_k" ;;
      list) redis_cli "$1" LRANGE "$_k" 0 -1 ;;
    esac
    redis_cli "$1" --no-raw DUMP "$_k"
  done
}

case "${0##*/}" in
  redis.sh)
    _cmd=$1
    shift
    case $_cmd in
      start) start_redis "$1" && cat "$1/port" ;;
      restart) restart_redis "$1" ;;
      stop) stop_redis "$1" ;;
      dump) redis_dump "$1" ;;
      cli) redis_cli "$@" ;;
      *) echo "usage: redis.sh start|stop|restart|dump|cli DIR [ARGS...]" >&2; exit 2 ;;
    esac
    ;;
esac
