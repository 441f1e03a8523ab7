#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The proxy-pool demo (the 000 design on one machine): a private
# redis-server, a controller (conf/controller.ini: SQLite, Redis, the
# gRPC control plane on loopback), two upstream proxies (proxyhost `local`
# instances: an HTTP proxy that wants a password, and a SOCKS5 proxy), and
# two gateways (conf/gateway.ini: workers g1 and g2), the pool made with
# proxyhostctl, and the pool's health loop beside them: an `echo` endpoint
# (modules/echo) and a checker (conf/checker.ini: checker k1) that checks
# every proxy for the controller, which decides AVAILABLE, SUSPECT or
# UNHEALTHY. Then:
#
#   scripts/demo-pool.sh       # then: curl -x http://127.0.0.1:8080 http://example.org/
#
# goes client -> gateway g1 -> an upstream proxy its strategy picked ->
# target (g2 on 127.0.0.1:8082). It stays in the foreground; Ctrl-C (or
# SIGTERM) stops everything. Everything it writes is in DEMO_DIR (default
# ./demo-pool, mode 0700). Environment (for tests and busy machines):
# DEMO_DIR, DEMO_BUILDDIR (default the source tree), DEMO_PORT_BASE (the
# first of the ports it uses, default 8080: g1 8080, g2 8082, and the
# others above them, see `say` lines), DEMO_RESOLVER (host:port of the
# upstreams' DNS server; default the system's).
#
# Watching a proxy change state (the ports for DEMO_PORT_BASE 8080):
#
#   export PROXYHOSTCTL_TOKEN_FILE=demo-pool/admin.token
#   proxyhostctl --admin 127.0.0.1:8090 proxy list      # health: available
#   kill "$(cat demo-pool/u2.pid)"                       # stop upstream u2
#   proxyhostctl --admin 127.0.0.1:8090 proxy list      # u2: suspect, then
#                                                        # unhealthy (~6 s)
#   proxyhostctl --admin 127.0.0.1:8090 proxy show u2   # each tier's item,
#                                                        # reason dial_refused
#   curl -s http://127.0.0.1:8090/metrics | grep health_proxies
#       # proxyhost_cp_controller_health_proxies{state="unhealthy"} 1
#
# The gateways stop choosing u2 at the next snapshot (curl
# http://127.0.0.1:8093/v1/cp/view: "health":"unhealthy"). Start it again
# (its command line is in demo-pool/u2.cmd):
#
#   $(cat demo-pool/u2.cmd) >>demo-pool/u2.log 2>&1 &
#
# and after two good checks (health_rise) it is AVAILABLE again. The
# checker's own view: curl -s http://127.0.0.1:8096/metrics | grep checks_total.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${DEMO_BUILDDIR:-$SRC}
DIR=${DEMO_DIR:-$PWD/demo-pool}
BASE=${DEMO_PORT_BASE:-8080}
G1_HTTP=$BASE G1_SOCKS=$((BASE + 1)) G2_HTTP=$((BASE + 2)) G2_SOCKS=$((BASE + 3))
CTL_ADMIN=$((BASE + 10)) CP=$((BASE + 11)) REDIS=$((BASE + 12))
G1_ADMIN=$((BASE + 13)) G2_ADMIN=$((BASE + 14))
U1=$((BASE + 20)) U2=$((BASE + 21)) U1_ADMIN=$((BASE + 22)) U2_ADMIN=$((BASE + 23))
ECHO=$((BASE + 15)) K1_ADMIN=$((BASE + 16)) ECHO_ADMIN=$((BASE + 17))
PROXYHOST=$BUILD/host/proxyhost
CTL=$BUILD/tools/proxyhostctl
PASSWD=$BUILD/tools/proxyhost-passwd

say() { printf 'demo: %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

[ -x "$PROXYHOST" ] || die "no $PROXYHOST: build first (./autogen.sh && ./configure && make)"
command -v redis-server >/dev/null || die "no redis-server: run scripts/install-deps.sh"
for m in store_sqlite admin_api pool_api redis_ownership controlplane_server controlplane_client \
  outcome_reporter pool round_robin weighted least_active random sticky direct \
  http_proxy socks5 auth_local checker echo; do
  [ -f "$BUILD/modules/$m/.libs/$m.so" ] || die "module $m was not built (see ./configure's summary)"
done

mkdir -p "$DIR/secrets" "$DIR/redis"
chmod 700 "$DIR"
DIR=$(cd "$DIR" && pwd)
PIDS=
stop() {
  trap - INT TERM EXIT
  for p in $PIDS; do kill "$p" 2>/dev/null || true; done
  for p in $PIDS; do wait "$p" 2>/dev/null || true; done
}
trap 'stop; exit 0' INT TERM
trap stop EXIT
run() { # run NAME ARGS...: in the background, log in DIR/NAME.log, its
  # pid in DIR/NAME.pid and its command line in DIR/NAME.cmd
  _n=$1
  shift
  "$@" >>"$DIR/$_n.log" 2>&1 &
  PIDS="$PIDS $!"
  echo $! >"$DIR/$_n.pid"
  printf '%s\n' "$*" >"$DIR/$_n.cmd"
}
alive() { # every part started so far still runs
  for p in $PIDS; do
    kill -0 "$p" 2>/dev/null || die "a part of the demo exited (a port in use?); see the logs in $DIR"
  done
}
up() { # up URL WHAT [SECONDS]: until URL answers 200 (at most 30 s)
  i=0
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ]; do
    alive
    i=$((i + 1))
    [ $i -lt $((${3:-30} * 10)) ] || die "$2 not ready after ${3:-30} s; see the logs in $DIR"
    sleep 0.1
  done
}

# The demo's secrets, once: the admin token, the upstream's password (as
# the controller's secrets_dir file and the upstream's hash), the
# controller's reference key.
[ -f "$DIR/admin.token" ] || "$CTL" admin-token new "$DIR/admin.token" >/dev/null
if [ ! -s "$DIR/secrets/demo-upstream" ]; then
  (umask 077
   pw=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
   printf 'demo:%s\n' "$pw" >"$DIR/secrets/demo-upstream"
   printf '%s\n' "$pw" | "$PASSWD" >"$DIR/upstream.hash"
   head -c 32 /dev/urandom >"$DIR/ref.key")
fi

# Redis, private to the demo (no persistence: each start finds it empty).
# The controller keeps [redis_ownership] hold_fresh_state at its default,
# true: a Redis without the cluster's state gives no proxy for one
# ownership_lease (30 s), the longest a gateway may still use an
# ownership Redis forgot. false would give the proxies out at once, and
# after a Redis that lost its data two gateways could use the same proxy
# for up to one lease (docs/user-guide/controller.md, "A Redis that
# loses its data"): never a setting to copy from a demo.
run redis redis-server --bind 127.0.0.1 --port "$REDIS" --dir "$DIR/redis" \
  --save '' --appendonly no
# The two upstream proxies: proxyhost local instances.
cat >"$DIR/u1.ini" <<EOF
[proxyhost]
modules = auth_local, direct, http_proxy
[admin]
listen = 127.0.0.1:$U1_ADMIN
[http_proxy]
listen = 127.0.0.1:$U1
auth = password
[auth_local]
users = demo:$(cat "$DIR/upstream.hash")
${DEMO_RESOLVER:+[direct]
resolver_servers = $DEMO_RESOLVER}
EOF
cat >"$DIR/u2.ini" <<EOF
[proxyhost]
modules = direct, socks5
[admin]
listen = 127.0.0.1:$U2_ADMIN
[socks5]
listen = 127.0.0.1:$U2
${DEMO_RESOLVER:+[direct]
resolver_servers = $DEMO_RESOLVER}
EOF
run u1 "$PROXYHOST" -c "$DIR/u1.ini" --set "proxyhost.module_path=$BUILD/modules"
run u2 "$PROXYHOST" -c "$DIR/u2.ini" --set "proxyhost.module_path=$BUILD/modules"
# The echo endpoint the checks fetch through each proxy (EGRESS: the
# address the proxy's egress has and the headers it adds).
cat >"$DIR/echo.ini" <<EOF
[proxyhost]
modules = echo
[admin]
listen = 127.0.0.1:$ECHO_ADMIN
[echo]
listen = 127.0.0.1:$ECHO
EOF
run echo "$PROXYHOST" -c "$DIR/echo.ini" --set "proxyhost.module_path=$BUILD/modules"
# The controller: conf/controller.ini, its paths in DIR.
run controller "$PROXYHOST" -c "$SRC/conf/controller.ini" \
  --set "proxyhost.module_path=$BUILD/modules" \
  --set "admin.listen=127.0.0.1:$CTL_ADMIN" \
  --set "store_sqlite.path=$DIR/controller.db" \
  --set "admin_api.token_file=$DIR/admin.token" \
  --set "pool_api.token_file=$DIR/admin.token" \
  --set "redis_ownership.address=127.0.0.1:$REDIS" --set "redis_ownership.cluster_id=demo" \
  --set "controlplane_server.cluster_id=demo" \
  --set "controlplane_server.listen=127.0.0.1:$CP" --set "controlplane_server.tls.mode=disabled" \
  --set "controlplane_server.secrets_dir=$DIR/secrets" \
  --set "controlplane_server.reference_key_file=$DIR/ref.key" \
  --set "controlplane_server.echo_url=http://127.0.0.1:$ECHO/echo"
up "http://127.0.0.1:$CTL_ADMIN/readyz" "the controller"
say "controller running (SQLite $DIR/controller.db, Redis 127.0.0.1:$REDIS, gRPC 127.0.0.1:$CP)"

# The gateways: conf/gateway.ini, plaintext to the controller on loopback.
gateway() { # NAME HTTP SOCKS ADMIN
  run "$1" "$PROXYHOST" -c "$SRC/conf/gateway.ini" \
    --set "proxyhost.module_path=$BUILD/modules" \
    --set "admin.listen=127.0.0.1:$4" \
    --set "controlplane_client.tls.mode=disabled" \
    --set "http_proxy.listen=127.0.0.1:$2" --set "socks5.listen=127.0.0.1:$3" \
    -control-plane "127.0.0.1:$CP" -cluster-id demo -worker-id "$1" \
    -instance-id "$1-$$" -zone demo
}
gateway g1 "$G1_HTTP" "$G1_SOCKS" "$G1_ADMIN"
gateway g2 "$G2_HTTP" "$G2_SOCKS" "$G2_ADMIN"
# Running (/healthz): a gateway is ready (/readyz) only once it owns a
# usable proxy.
up "http://127.0.0.1:$G1_ADMIN/healthz" "gateway g1"
up "http://127.0.0.1:$G2_ADMIN/healthz" "gateway g2"
# The checker: conf/checker.ini, plaintext to the controller on loopback.
run k1 "$PROXYHOST" -c "$SRC/conf/checker.ini" \
  --set "proxyhost.module_path=$BUILD/modules" \
  --set "admin.listen=127.0.0.1:$K1_ADMIN" --set "checker.tls.mode=disabled" \
  -control-plane "127.0.0.1:$CP" -cluster-id demo -checker-id k1 \
  -instance-id "k1-$$" -zone demo
up "http://127.0.0.1:$K1_ADMIN/readyz" "checker k1"
say "checker k1 registered (echo endpoint 127.0.0.1:$ECHO)"
# The pool, once: the credential, the two proxies, one rule for all.
ctl() { "$CTL" --admin "127.0.0.1:$CTL_ADMIN" --token-file "$DIR/admin.token" "$@"; }
if ! ctl proxy show u1 >/dev/null 2>&1; then
  ctl credential add demo-upstream >/dev/null
  ctl proxy add u1 --protocol http_connect --host 127.0.0.1 --port "$U1" \
    --groups demo --capacity 100 --secret-ref demo-upstream >/dev/null
  ctl proxy add u2 --protocol socks5 --host 127.0.0.1 --port "$U2" \
    --groups demo --capacity 100 >/dev/null
  ctl route add all --position 100 --host '*' --group demo --strategy round_robin \
    --on-unavailable wait --wait-timeout-ms 2000 >/dev/null
  say "pool created: proxies u1 (HTTP CONNECT, password) and u2 (SOCKS5), route all"
fi

# The controller spreads the proxies over both gateways (one each) once
# the fresh-state hold is over (one ownership_lease after the first
# assign); one takes the other's over if it stops, and gives them back
# (through the drain) when it returns.
say "waiting for the fresh-state hold (one ownership_lease, 30 s) before the pool is spread"
owned() {
  v=$(curl -s "http://127.0.0.1:$G1_ADMIN/v1/cp/view"; curl -s "http://127.0.0.1:$G2_ADMIN/v1/cp/view")
  case $v in *'"u1"'*) case $v in *'"u2"'*) return 0 ;; esac ;; esac
  return 1
}
i=0
until owned; do
  alive
  i=$((i + 1))
  [ $i -lt 900 ] || die "no gateway received the pool within 90 s; see the logs in $DIR"
  sleep 0.1
done
# The first verdicts: two good checks of a proxy (health_rise) make it
# AVAILABLE.
i=0
until ctl proxy list 2>/dev/null | grep -q ' available$'; do
  alive
  i=$((i + 1))
  [ $i -lt 300 ] || die "no proxy became AVAILABLE within 30 s; see $DIR/k1.log"
  sleep 0.1
done
say "health: $(ctl proxy list | awk 'NR > 1 { printf "%s %s  ", $1, $NF }')"
say "ready: gateways g1 (HTTP 127.0.0.1:$G1_HTTP, SOCKS5 $G1_SOCKS) and g2 (HTTP $G2_HTTP, SOCKS5 $G2_SOCKS)"
say "try:   curl -x http://127.0.0.1:$G1_HTTP http://example.org/"
say "       curl --proxy socks5h://127.0.0.1:$G1_SOCKS http://example.org/"
say "       curl http://127.0.0.1:$G1_ADMIN/v1/cp/view     # what g1 owns"
say "       curl http://127.0.0.1:$G1_ADMIN/metrics | grep proxyhost_pool_"
say "watch: PROXYHOSTCTL_TOKEN_FILE=$DIR/admin.token $CTL --admin 127.0.0.1:$CTL_ADMIN proxy list"
say "       kill \$(cat $DIR/u2.pid)   # u2 goes SUSPECT, then UNHEALTHY (see the header)"
say "Ctrl-C stops it."
wait
