# SPDX-License-Identifier: BSD-2-Clause
# Shell helpers for the TunnelMesh tests (sourced after testlib.sh): the
# scriptable peer t/lib/tm_peer.py, and real tunnel_server, tunnel_agent
# and tunnel_client processes on loopback with their credentials.

# tm_peer ARGS...: t/lib/tm_peer.py (standard library only).
tm_peer() { "${PYTHON3:-/usr/bin/python3}" "$top_srcdir/t/lib/tm_peer.py" "$@"; }

# tn_peer_run NAME ARGS...: tm_peer ARGS in the foreground, its events in
# $T/NAME.ev, its exit status in RC; when it failed, the events that say
# why as TAP comments (for the log of a failing run).
tn_peer_run() {
  _name=$1
  shift
  tm_peer "$@" >"$T/$_name.ev" 2>&1
  RC=$?
  [ "$RC" = 0 ] || grep -E '"ev": "(fail|reset|closed|ws_close)"' "$T/$_name.ev" |
    head -5 | sed 's/^/#   /'
}

# The three roles as real proxyhost processes (or one process holding
# all three as named instances), on loopback, with a SQLite store:
#
#   tn_setup                       # admin token, DNS (dnsd.py), ports
#   tn_server s1 [EXTRA-INI]       # tunnel_server + store_sqlite +
#                                  # auth_cache + admin_api; s1_port (ws),
#                                  # s1_admin, s1_pid, $T/s1.log
#   tn_creds s1                    # user alice, agent edge-1, the client
#                                  # token ($T/client.token) and the agent
#                                  # token ($T/agent.token), a policy
#   tn_agent a1 s1 [EXTRA-INI]     # tunnel_agent + direct (dnsd.py)
#   tn_client c1 s1 [EXTRA-INI]    # tunnel_client + socks5; c1_socks
#   tn_all x [EXTRA-INI]           # all of it in one process: x_socks,
#                                  # x_admin, x_port
#   tn_wait_sessions a1_admin agent 1  # the agent is connected
#
# EXTRA-INI is appended, so its sections and keys win (read in order).

CTL=${CTL:-$top_builddir/tools/proxyhostctl}
TN_AGENT=${TN_AGENT:-edge-1}

tn_setup() {
  TN_ADMIN_TOKEN=$T/admin.token
  "$CTL" admin-token new "$TN_ADMIN_TOKEN" >/dev/null || return 1
  start_dnsd "ok.test=127.0.0.1" "page.test=127.0.0.1" || return 1
}

# tn_pg_setup: the several-server tests' start: a private PostgreSQL
# ($T/pg; t/lib/pg.sh sourced first), one database at the current schema
# in TN_DSN, TN_STORE=store_pg, then tn_setup.
tn_pg_setup() {
  start_pg "$T/pg" || return 1
  TN_DSN=$(pg_new_db authz) || return 1
  PROXYHOST_MIGRATE_DSN=$TN_DSN \
    "${MIGRATE:-$top_builddir/tools/proxyhost-migrate}" apply >/dev/null || return 1
  TN_STORE=store_pg
  tn_setup
}

# tn_ctl ADMIN-PORT ARGS...: proxyhostctl against that admin listener.
tn_ctl() {
  _p=$1
  shift
  "$CTL" --admin "127.0.0.1:$_p" --token-file "$TN_ADMIN_TOKEN" "$@"
}

# tn_bearer TEXT: the bearer line of token create's output.
tn_bearer() { printf '%s\n' "$1" | sed -n 's/^bearer  *//p' | head -1; }

# The sections, reused by the one-process configuration.
# TN_STORE=store_pg with TN_DSN: the cluster store instead of SQLite.
# TN_CA=FILE: agents and clients dial wss:// and verify the server against
# that CA (the server's tls.cert/tls.key come with its EXTRA-INI).
TN_STORE=${TN_STORE:-store_sqlite}
tn_server_sections() { # NAME WSPORT DB
  if [ "$TN_STORE" = store_pg ]; then
    printf '[store_pg]\ndsn = %s\n' "$TN_DSN"
  else
    printf '[store_sqlite]\npath = %s\nmigrate = auto\n' "$3"
  fi
  cat <<EOC
[auth_cache]
store = $TN_STORE
[admin_api]
store = $TN_STORE
access = auth_cache
token_file = $TN_ADMIN_TOKEN
[$1]
listen = 127.0.0.1:$2
store = $TN_STORE
access = auth_cache
EOC
}
tn_agent_sections() { # NAME SERVER-WSPORT DIRECT-INSTANCE
  cat <<EOC
[$3]
resolver_servers = 127.0.0.1:$dns_port
component = agent
[$1]
server_url = ws${TN_CA:+s}://127.0.0.1:$2/tunnel${TN_CA:+
tls.ca_file = $TN_CA}
agent_id = $TN_AGENT
token_file = ${TN_AGENT_TOKEN:-$T/agent.token}
connector = $3
reconnect.min = 50ms
reconnect.max = 1s
; the targets (file server, refused ports) are on loopback: opened
; explicitly, the agent refuses its own host by default (issue 22 item 5)
targets.allow_host_local = 127.0.0.0/8, ::1
EOC
}
tn_client_sections() { # NAME SERVER-WSPORT SOCKS-PORT CONNECTOR-NAME
  cat <<EOC
[$1]
server_url = ws${TN_CA:+s}://127.0.0.1:$2/tunnel${TN_CA:+
tls.ca_file = $TN_CA}
agent = $TN_AGENT
token_file = $T/client.token
reconnect.min = 50ms
reconnect.max = 1s
[socks5]
listen = 127.0.0.1:$3
auth = none
connector = $4
EOC
}

# tn_start NAME CONFIG: starts it (log $T/NAME.log); NAME_pid; waits for
# /healthz on NAME_admin.
tn_start() {
  "$PROXYHOST" -c "$2" >>"$T/$1.log" 2>&1 &
  eval "$1_pid=$!"
  PIDS="$PIDS $!"
  wait_for healthy "$(eval echo "\$$1_admin")"
}

tn_server() {
  eval "$1_port=$(free_port) $1_admin=$(free_port)"
  {
    printf '[proxyhost]\nmodules = %s, auth_cache, admin_api, tunnel_server\n' "$TN_STORE"
    printf 'module_path = %s\ndrain_timeout = 2s\n' "$top_builddir/modules"
    printf '[admin]\nlisten = 127.0.0.1:%s\n' "$(eval echo "\$$1_admin")"
    tn_server_sections tunnel_server "$(eval echo "\$$1_port")" "${TN_DB:-$T/authz.db}"
    printf '%s\n' "${2:-}"
  } >"$T/$1.ini"
  tn_start "$1" "$T/$1.ini"
}

tn_creds() {
  _a=$(eval echo "\$$1_admin")
  tn_ctl "$_a" user create alice >/dev/null || return 1
  tn_ctl "$_a" agent create "$TN_AGENT" --owner alice >/dev/null || return 1
  _out=$(tn_ctl "$_a" token create --user alice) || return 1
  TN_CLIENT_BEARER=$(tn_bearer "$_out")
  TN_CLIENT_TOKEN_ID=${TN_CLIENT_BEARER%%.*}
  _out=$(tn_ctl "$_a" token create --user alice --agent "$TN_AGENT") || return 1
  TN_AGENT_BEARER=$(tn_bearer "$_out")
  tn_ctl "$_a" policy create --agent "$TN_AGENT" --user alice --host '*' \
    --ports 1-65535 >/dev/null || return 1
  (umask 077 && printf '%s\n' "$TN_CLIENT_BEARER" >"$T/client.token" &&
    printf '%s\n' "$TN_AGENT_BEARER" >"$T/agent.token")
}

tn_agent() {
  eval "$1_admin=$(free_port)"
  {
    printf '[proxyhost]\nmodules = direct, tunnel_agent\n'
    printf 'module_path = %s\ndrain_timeout = 2s\n' "$top_builddir/modules"
    printf '[admin]\nlisten = 127.0.0.1:%s\n' "$(eval echo "\$$1_admin")"
    tn_agent_sections tunnel_agent "$(eval echo "\$$2_port")" direct
    printf '%s\n' "${3:-}"
  } >"$T/$1.ini"
  tn_start "$1" "$T/$1.ini"
}

tn_client() {
  eval "$1_admin=$(free_port) $1_socks=$(free_port)"
  {
    printf '[proxyhost]\nmodules = tunnel_client, socks5\n'
    printf 'module_path = %s\ndrain_timeout = 2s\n' "$top_builddir/modules"
    printf '[admin]\nlisten = 127.0.0.1:%s\n' "$(eval echo "\$$1_admin")"
    tn_client_sections tunnel_client "$(eval echo "\$$2_port")" \
      "$(eval echo "\$$1_socks")" tunnel_client
    printf '%s\n' "${3:-}"
  } >"$T/$1.ini"
  tn_start "$1" "$T/$1.ini"
}

# tn_all NAME [EXTRA-INI]: one process, the three roles as named
# instances (tunnel_server.hub, tunnel_agent.edge with direct.edge,
# tunnel_client.laptop under socks5). Credentials are made after start
# (the agent and the client read their token files at each attempt).
tn_all() {
  eval "$1_port=$(free_port) $1_admin=$(free_port) $1_socks=$(free_port)"
  {
    printf '[proxyhost]\nmodules = %s, auth_cache, admin_api, ' "$TN_STORE"
    printf 'tunnel_server.hub, direct.edge, tunnel_agent.edge, '
    printf 'tunnel_client.laptop, socks5\n'
    printf 'module_path = %s\ndrain_timeout = 2s\n' "$top_builddir/modules"
    printf '[admin]\nlisten = 127.0.0.1:%s\n' "$(eval echo "\$$1_admin")"
    tn_server_sections tunnel_server.hub "$(eval echo "\$$1_port")" "${TN_DB:-$T/authz.db}"
    tn_agent_sections tunnel_agent.edge "$(eval echo "\$$1_port")" direct.edge
    tn_client_sections tunnel_client.laptop "$(eval echo "\$$1_port")" \
      "$(eval echo "\$$1_socks")" tunnel_client.laptop
    printf '%s\n' "${2:-}"
  } >"$T/$1.ini"
  tn_start "$1" "$T/$1.ini"
}

# tn_trio ID [SERVER-EXTRA [AGENT-EXTRA [CLIENT-EXTRA]]]: a server sID,
# an agent aID and a client cID as three processes (credentials made on
# the first call), returning once the agent is connected and the client
# ready; the client's SOCKS5 port is in cID_socks. For the benchmarks.
tn_trio() {
  tn_server "s$1" "${2:-}" || return 1
  [ -s "$T/client.token" ] || tn_creds "s$1" || return 1
  tn_agent "a$1" "s$1" "${3:-}" || return 1
  tn_client "c$1" "s$1" "${4:-}" || return 1
  tn_wait_sessions "$(eval echo "\$a$1_admin")" agent 1 || return 1
  wait_for tn_ready "$(eval echo "\$c$1_admin")"
}

# tn_blackhole: a loopback port whose connects never complete
# (socks5_probe.py blackhole, for 120 s) in bh: a dial that hangs.
tn_blackhole() {
  "${PYTHON3:-python3}" "$top_srcdir/t/lib/socks5_probe.py" blackhole \
    --port-file "$T/bh.port" --seconds 120 >/dev/null 2>&1 &
  PIDS="$PIDS $!"
  wait_file "$T/bh.port" && bh=$(cat "$T/bh.port")
}

# tn_metrics ADMIN-PORT: the scrape.
tn_metrics() { "$CURL" -s -m 5 "http://127.0.0.1:$1/metrics"; }
# tn_sum ADMIN-PORT REGEX: the sum of the samples whose line matches.
tn_sum() {
  tn_metrics "$1" | grep -E "$2" | awk '{ s += $NF } END { printf "%d\n", s }'
}
# tn_sessions ADMIN-PORT COMPONENT: the sessions (WebSockets) that
# process holds as COMPONENT (proxyhost_stream_tunnel_sessions; a server
# counts its clients' and agents' together).
tn_sessions() { tn_sum "$1" "^proxyhost_stream_tunnel_sessions\\{.*component=\"$2\""; }
# tn_opens ADMIN-PORT COMPONENT MODE: opens counted strict or legacy.
tn_opens() { tn_sum "$1" "^tunnelmesh_stream_open_total\\{.*component=\"$2\".*open_mode=\"$3\""; }
# tn_wait_sessions ADMIN-PORT COMPONENT N: until at least N (bounded).
tn_wait_sessions() { wait_for tn_sessions_ge "$@"; }
tn_sessions_ge() { [ "$(tn_sessions "$1" "$2")" -ge "$3" ]; }
# tn_ready ADMIN-PORT: /readyz answers 200.
tn_ready() { [ "$(http_get "http://127.0.0.1:$1/readyz" | head -1)" = 200 ]; }

# tn_get SOCKS-PORT URL: curl through the tunnel (remote DNS: socks5h);
# prints the body.
tn_get() { "$CURL" -s -m "${TN_CURL_MAX:-10}" --proxy "socks5h://127.0.0.1:$1" "$2"; }

# ---- the server peer for the agent's tests (tunnel_agent.sh,
# agent_targets.sh): a scriptable tm_peer.py server on a new $pport, its
# events in $T/peer-NAME.log; the agent under test is $PH_PID. A script
# that sources this and needs another peer defines its own after it
# (tunnel_client.sh).
#
# agent_peer_conf FILE DIRECT-LINES AGENT-LINES: direct + tunnel_agent
# towards that peer ($pport), admin on $admin, DNS at dnsd ($dns_port),
# the token in $T/token; the extra lines end [direct] and [tunnel_agent].
agent_peer_conf() {
  cat >"$1" <<EOC
[proxyhost]
modules = direct, tunnel_agent
module_path = $top_builddir/modules
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[direct]
component = agent
resolver_servers = 127.0.0.1:$dns_port
deny_own_listeners = false
$2
[tunnel_agent]
server_url = ws://127.0.0.1:$pport/tunnel
token_file = $T/token
agent_id = lab-1
reconnect.min = 20ms
reconnect.max = 200ms
$3
EOC
}
PEER_PID=
start_peer() { # start_peer NAME ARGS...: the server peer on a new $pport
  _name=$1
  shift
  pport=$(free_port)
  tm_peer --as server --listen "127.0.0.1:$pport" --stay --print-bearer \
    --lifetime 120 "$@" >"$T/peer-$_name.log" 2>&1 &
  PEER_PID=$!
  PIDS="$PIDS $PEER_PID"
  wait_for grep -q '"ev": *"listening"' "$T/peer-$_name.log"
}
stop_peer() {
  [ -n "$PEER_PID" ] && kill "$PEER_PID" 2>/dev/null
  [ -n "$PEER_PID" ] && wait "$PEER_PID" 2>/dev/null
  PEER_PID=
}
# peer_done NAME: the peer's script ended (its "done" event); 0 when it
# passed. Bounded: 600 x 50 ms.
peer_done() {
  i=0
  while [ $i -lt 600 ] && ! grep -q '"ev": "done"' "$T/peer-$1.log" 2>/dev/null; do
    i=$((i + 1))
    sleep 0.05
  done
  grep '"ev": "done"' "$T/peer-$1.log" | grep -q '"ok": true'
}
show_fail() { grep '"ev": *"fail"' "$T/peer-$1.log" | sed 's/^/#   /' | head -5; }
# peer_passed NAME TEST-NAME: one TAP line for the peer's script, its
# failures shown under it.
peer_passed() {
  peer_done "$1"
  ok $? "$2"
  show_fail "$1"
}
handshakes() { grep '"ev": "handshake"' "$T/peer-$1.log" | grep -c '"ok": true'; }
stop_agent() { # and every stop is clean (exit 0; under ASan: no leak)
  kill -TERM "$PH_PID" 2>/dev/null
  wait_exit "$PH_PID" 10
  is "$EXIT" 0 "the agent stops cleanly${1:+ ($1)}"
}

# Relay node certificates (issue 27), made by openssl in DIR (quietly):
#   tn_pki_ca DIR NAME             a CA: DIR/NAME.pem, DIR/NAME.key
#   tn_pki_node DIR NAME CA NODE   a leaf of CA for 127.0.0.1 naming NODE
#                                  (URI SAN spiffe://tm.test/tunnelmesh/
#                                  node/NODE; serverAuth and clientAuth)
tn_pki_ca() {
  (cd "$1" && umask 077 &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout "$2.key" -out "$2.pem" -days 2 -subj "/CN=$2" \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign) >/dev/null 2>&1
}
tn_pki_node() {
  (cd "$1" && umask 077 &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout "$2.key" -out "$2.csr" -subj "/CN=$2" &&
    printf 'subjectAltName=IP:127.0.0.1,URI:spiffe://tm.test/tunnelmesh/node/%s\nextendedKeyUsage=serverAuth,clientAuth\n' \
      "$4" >"$2.cnf" &&
    openssl x509 -req -in "$2.csr" -CA "$3.pem" -CAkey "$3.key" \
      -CAcreateserial -out "$2.pem" -days 2 -extfile "$2.cnf" && test -s "$2.pem") >/dev/null 2>&1
}
