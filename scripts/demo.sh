#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The embedded TunnelMesh demo (the README's main command): one proxyhost
# process from this build tree running conf/demo.ini (a server, an agent
# and a client as named instances, a SQLite store), the demo credentials
# made with proxyhostctl, and a SOCKS5 listener on 127.0.0.1:1080 that
# goes client -> server -> agent -> target:
#
#   scripts/demo.sh            # then: curl --proxy socks5h://127.0.0.1:1080 http://example.org/
#
# It stays in the foreground; Ctrl-C (or SIGTERM) drains and stops it.
# Everything it writes is in DEMO_DIR (default ./demo, mode 0700): the
# database, the admin token, the two bearer tokens (0600), the log.
# Run again, it reuses them. Environment (for tests and busy machines):
#   DEMO_DIR, DEMO_BUILDDIR (where host/ and tools/ were built; default
#   the source tree), DEMO_SOCKS_PORT (1080), DEMO_ADMIN_PORT (9470),
#   DEMO_TUNNEL_PORT (8443), DEMO_RESOLVER (host:port of the agent's DNS
#   server; default the system's).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${DEMO_BUILDDIR:-$SRC}
DIR=${DEMO_DIR:-$PWD/demo}
SOCKS=${DEMO_SOCKS_PORT:-1080}
ADMIN=${DEMO_ADMIN_PORT:-9470}
TUNNEL=${DEMO_TUNNEL_PORT:-8443}
PROXYHOST=$BUILD/host/proxyhost
CTL=$BUILD/tools/proxyhostctl
AGENT=demo-agent

say() { printf 'demo: %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

[ -x "$PROXYHOST" ] || die "no $PROXYHOST: build first (./autogen.sh && ./configure && make)"
[ -x "$CTL" ] || die "no $CTL: build first"
for m in store_sqlite auth_cache admin_api tunnel_server tunnel_agent tunnel_client direct socks5; do
  [ -f "$BUILD/modules/$m/.libs/$m.so" ] || die "module $m was not built (see ./configure's summary)"
done

mkdir -p "$DIR"
chmod 700 "$DIR"
DIR=$(cd "$DIR" && pwd)
[ -f "$DIR/admin.token" ] || "$CTL" admin-token new "$DIR/admin.token" >/dev/null

set -- -c "$SRC/conf/demo.ini" \
  --set "proxyhost.module_path=$BUILD/modules" \
  --set "admin.listen=127.0.0.1:$ADMIN" \
  --set "store_sqlite.path=$DIR/authz.db" \
  --set "admin_api.token_file=$DIR/admin.token" \
  --set "admin.token_file=$DIR/admin.token" \
  --set "tunnel_server.hub.listen=127.0.0.1:$TUNNEL" \
  --set "tunnel_agent.edge.server_url=ws://127.0.0.1:$TUNNEL/tunnel" \
  --set "tunnel_agent.edge.token_file=$DIR/agent.token" \
  --set "tunnel_client.laptop.server_url=ws://127.0.0.1:$TUNNEL/tunnel" \
  --set "tunnel_client.laptop.token_file=$DIR/client.token" \
  --set "socks5.listen=127.0.0.1:$SOCKS"
if [ -n "${DEMO_RESOLVER:-}" ]; then
  set -- "$@" --set "direct.edge.resolver_servers=$DEMO_RESOLVER"
fi

"$PROXYHOST" "$@" >>"$DIR/proxyhost.log" 2>&1 &
PID=$!
echo "$PID" >"$DIR/proxyhost.pid"
stop() {
  trap - INT TERM EXIT
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  rm -f "$DIR/proxyhost.pid"
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

ctl() { "$CTL" --admin "127.0.0.1:$ADMIN" --token-file "$DIR/admin.token" "$@"; }
# up: the admin listener answers (at most 10 s).
i=0
until ctl user list >/dev/null 2>&1; do
  kill -0 "$PID" 2>/dev/null || die "proxyhost exited; see $DIR/proxyhost.log"
  i=$((i + 1))
  [ $i -lt 100 ] || die "proxyhost did not start; see $DIR/proxyhost.log"
  sleep 0.1
done
say "proxyhost $PID running conf/demo.ini (log: $DIR/proxyhost.log)"

# The demo credentials, once: a user, the agent, a stream token for the
# client, an agent token, and a policy allowing every host and port.
bearer() { sed -n 's/^bearer  *//p' | head -1; }
if [ ! -s "$DIR/client.token" ] || [ ! -s "$DIR/agent.token" ]; then
  ctl user create demo >/dev/null 2>&1 || true
  ctl agent create "$AGENT" --owner demo >/dev/null 2>&1 || true
  ctl policy list --agent "$AGENT" | grep -q pol_ ||
    ctl policy create --agent "$AGENT" --user demo --host '*' --ports 1-65535 >/dev/null
  (
    umask 077
    ctl token create --user demo --agent "$AGENT" | bearer >"$DIR/agent.token.new"
    ctl token create --user demo | bearer >"$DIR/client.token.new"
  )
  [ -s "$DIR/agent.token.new" ] && [ -s "$DIR/client.token.new" ] ||
    die "could not create the demo tokens"
  mv "$DIR/agent.token.new" "$DIR/agent.token"
  mv "$DIR/client.token.new" "$DIR/client.token"
  say "credentials created: user demo, agent $AGENT, tokens in $DIR (0600)"
fi

# ready: the agent and the client connected (at most 30 s).
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN/readyz")" = 200 ]; do
  kill -0 "$PID" 2>/dev/null || die "proxyhost exited; see $DIR/proxyhost.log"
  i=$((i + 1))
  [ $i -lt 300 ] || die "not ready after 30 s; see $DIR/proxyhost.log"
  sleep 0.1
done
say "ready: SOCKS5 on 127.0.0.1:$SOCKS -> client -> server -> agent -> target"
say "try:   curl --proxy socks5h://127.0.0.1:$SOCKS http://example.org/"
say "       curl http://127.0.0.1:$ADMIN/metrics | grep tunnelmesh_"
say "status: http://127.0.0.1:$ADMIN/ui/ (log in with the token in $DIR/admin.token)"
say "Ctrl-C stops it."
wait "$PID"
