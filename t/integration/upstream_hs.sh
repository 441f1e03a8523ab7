#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The upstream handshakes (modules/upstream/up_hs.h, issue 13) against real
# proxies this project did not write, CP-5-3: Debian's microsocks (SOCKS5,
# with and without -u/-P) and tinyproxy (HTTP CONNECT, with and without
# BasicAuth), each started here with its own configuration on a free
# loopback port in the test's directory (never the system's tinyproxy
# service or its /etc configuration), and stopped here. t/lib/up_hs_probe
# runs the codec over blocking sockets to an echo target that speaks
# first: its banner must be the first bytes after the handshake (none
# eaten by it) and "ping" must come back. Missing proxies are a failure,
# not a skip (scripts/install-deps.sh installs them).
. "$top_srcdir/t/lib/testlib.sh"

PROBE="$top_builddir/t/lib/up_hs_probe"
BANNER="hello-from-target"
USER=alice
PASS=s3cr3t-pw

MICROSOCKS=$(command -v microsocks 2>/dev/null || true)
TINYPROXY=$(command -v tinyproxy 2>/dev/null || true)
[ -z "$TINYPROXY" ] && [ -x /usr/sbin/tinyproxy ] && TINYPROXY=/usr/sbin/tinyproxy
[ -n "$MICROSOCKS" ]
ok $? "microsocks is installed (Debian package microsocks)"
[ -n "$TINYPROXY" ]
ok $? "tinyproxy is installed (Debian package tinyproxy)"
[ -x "$PROBE" ]
ok $? "the probe is built"

# The echo target: 127.0.0.1 (and ::1 on the same port when the host has
# IPv6 loopback), the banner first, then every byte back; it writes
# "PORT V6" (V6: 1 or 0) to its port file and ends after 120 s or when
# this test goes away.
cat >"$T/echo.py" <<'EOF'
import os, socket, sys, threading, time
banner, port_file = sys.argv[1].encode() + b"\n", sys.argv[2]
parent = os.getppid()
v4 = socket.socket()
v4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
v4.bind(("127.0.0.1", 0))
v4.listen(16)
port = v4.getsockname()[1]
socks = [v4]
try:
    v6 = socket.socket(socket.AF_INET6)
    v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    v6.bind(("::1", port))
    v6.listen(16)
    socks.append(v6)
except OSError:
    pass
def serve(c):
    try:
        c.settimeout(10)
        c.sendall(banner)
        for _ in range(1000):
            d = c.recv(4096)
            if not d:
                break
            c.sendall(d)
    except OSError:
        pass
    finally:
        c.close()
def accept(s):
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
for s in socks:
    threading.Thread(target=accept, args=(s,), daemon=True).start()
with open(port_file + ".tmp", "w") as f:
    f.write("%d %d\n" % (port, len(socks) == 2))
os.rename(port_file + ".tmp", port_file)
for _ in range(1200):
    if os.getppid() != parent:
        break
    time.sleep(0.1)
EOF
python3 "$T/echo.py" "$BANNER" "$T/echo.port" >"$T/echo.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/echo.port"
ok $? "the echo target runs"
read -r ECHO_PORT ECHO_V6 <"$T/echo.port"
# A port nothing listens on: the target of the refusals.
CLOSED_PORT=$(free_port)

# probe PROXY_PORT PROTOCOL TARGET [USER PASS]: the probe's one line.
probe() {
  if [ $# -ge 5 ]; then
    "$PROBE" --proxy "127.0.0.1:$1" --protocol "$2" --target "$3" \
      --user "$4" --pass "$5" --banner "$BANNER
" 2>>"$T/probe.err"
  else
    "$PROBE" --proxy "127.0.0.1:$1" --protocol "$2" --target "$3" \
      --banner "$BANNER
" 2>>"$T/probe.err"
  fi
}
DONE="done banner=ok echo=ok"

# ---- microsocks ----------------------------------------------------------
if [ -n "$MICROSOCKS" ]; then
  MS=$(free_port)
  "$MICROSOCKS" -i 127.0.0.1 -p "$MS" >"$T/microsocks.log" 2>&1 &
  MS_PID=$!
  PIDS="$PIDS $MS_PID"
  MSA=$(free_port)
  "$MICROSOCKS" -i 127.0.0.1 -p "$MSA" -u "$USER" -P "$PASS" \
    >"$T/microsocks-auth.log" 2>&1 &
  MSA_PID=$!
  PIDS="$PIDS $MSA_PID"
  wait_for port_open "$MS" && wait_for port_open "$MSA"
  ok $? "microsocks runs on 127.0.0.1:$MS, and with -u/-P on :$MSA"

  is "$(probe "$MS" socks5 "127.0.0.1:$ECHO_PORT")" "$DONE" \
    "CP-5-3 microsocks: SOCKS5 CONNECT to an IPv4 literal (ATYP 1)"
  is "$(probe "$MS" socks5 "localhost:$ECHO_PORT")" "$DONE" \
    "CP-5-3 microsocks: SOCKS5 CONNECT to a name (ATYP 3)"
  if [ "$ECHO_V6" = 1 ]; then
    is "$(probe "$MS" socks5 "[::1]:$ECHO_PORT")" "$DONE" \
      "CP-5-3 microsocks: SOCKS5 CONNECT to an IPv6 literal (ATYP 4)"
  else
    skip "no IPv6 loopback here: SOCKS5 ATYP 4 not tried"
  fi
  is "$(probe "$MS" socks5 "127.0.0.1:$CLOSED_PORT")" "refused status=5" \
    "CP-5-3 microsocks: a refused target port is refused with REP 5"
  is "$(probe "$MS" socks5 "127.0.0.1:$ECHO_PORT" "$USER" "$PASS")" \
    "auth status=-1" \
    "CP-5-3 microsocks without auth: we offer only 0x02, it answers 0xFF"
  is "$(probe "$MSA" socks5 "127.0.0.1:$ECHO_PORT" "$USER" "$PASS")" \
    "$DONE" "CP-5-3 microsocks -u/-P: RFC 1929 username/password, then CONNECT"
  is "$(probe "$MSA" socks5 "127.0.0.1:$ECHO_PORT" "$USER" wrong-pw)" \
    "auth status=-1" "CP-5-3 microsocks -u/-P: a wrong password is auth"
  is "$(probe "$MSA" socks5 "127.0.0.1:$ECHO_PORT")" "auth status=-1" \
    "CP-5-3 microsocks -u/-P: no credentials is auth (method 0xFF)"
  is "$(probe "$MSA" socks5 "127.0.0.1:$CLOSED_PORT" "$USER" "$PASS")" \
    "refused status=5" \
    "CP-5-3 microsocks -u/-P: a refused target port after auth is REP 5"
fi

# ---- tinyproxy -----------------------------------------------------------
# tinyproxy_conf PORT NAME [EXTRA...]: a configuration of our own, every
# file it writes in $T.
tinyproxy_conf() {
  printf 'Port %s\nListen 127.0.0.1\nTimeout 30\nMaxClients 16\n' "$1"
  printf 'LogFile "%s/%s.log"\nLogLevel Connect\nPidFile "%s/%s.pid"\n' \
    "$T" "$2" "$T" "$2"
  shift 2
  for line in "$@"; do printf '%s\n' "$line"; done
}
if [ -n "$TINYPROXY" ]; then
  TP=$(free_port)
  # CONNECT only to the echo target's port: anything else is its 403.
  tinyproxy_conf "$TP" tinyproxy "ConnectPort $ECHO_PORT" >"$T/tinyproxy.conf"
  "$TINYPROXY" -d -c "$T/tinyproxy.conf" >"$T/tinyproxy.out" 2>&1 &
  TP_PID=$!
  PIDS="$PIDS $TP_PID"
  TPA=$(free_port)
  tinyproxy_conf "$TPA" tinyproxy-auth "BasicAuth $USER $PASS" \
    >"$T/tinyproxy-auth.conf"
  "$TINYPROXY" -d -c "$T/tinyproxy-auth.conf" >"$T/tinyproxy-auth.out" 2>&1 &
  TPA_PID=$!
  PIDS="$PIDS $TPA_PID"
  wait_for port_open "$TP" && wait_for port_open "$TPA"
  ok $? "tinyproxy runs on 127.0.0.1:$TP, and with BasicAuth on :$TPA"
  # shellcheck disable=SC2016 # expanded when a check fails
  TAP_ON_FAIL='tail -5 "$T/tinyproxy.log" "$T/tinyproxy-auth.log"'

  is "$(probe "$TP" connect "127.0.0.1:$ECHO_PORT")" "$DONE" \
    "CP-5-3 tinyproxy: CONNECT to an IPv4 literal"
  is "$(probe "$TP" connect "localhost:$ECHO_PORT")" "$DONE" \
    "CP-5-3 tinyproxy: CONNECT to a name"
  if [ "$ECHO_V6" = 1 ]; then
    is "$(probe "$TP" connect "[::1]:$ECHO_PORT")" "$DONE" \
      "CP-5-3 tinyproxy: CONNECT to an IPv6 literal in brackets"
  else
    skip "no IPv6 loopback here: CONNECT [::1] not tried"
  fi
  is "$(probe "$TP" connect "127.0.0.1:$CLOSED_PORT")" "refused status=403" \
    "CP-5-3 tinyproxy: a port outside ConnectPort is refused with its 403"
  is "$(probe "$TPA" connect "127.0.0.1:$ECHO_PORT" "$USER" "$PASS")" \
    "$DONE" "CP-5-3 tinyproxy BasicAuth: Proxy-Authorization Basic, then 200"
  is "$(probe "$TPA" connect "127.0.0.1:$ECHO_PORT")" "auth status=407" \
    "CP-5-3 tinyproxy BasicAuth: no credentials is its 407, auth"
  is "$(probe "$TPA" connect "127.0.0.1:$ECHO_PORT" "$USER" wrong-pw)" \
    "auth status=401" \
    "CP-5-3 tinyproxy BasicAuth: a wrong password is its 401, auth"
  is "$(probe "$TPA" connect "127.0.0.1:$CLOSED_PORT" "$USER" "$PASS")" \
    "refused status=500" \
    "CP-5-3 tinyproxy BasicAuth: a refused target port is its 500, refused"
  # The proxies that answered were ours: their logs, in $T, saw the
  # requests (not the system's tinyproxy, which the test never uses).
  grep -q "CONNECT 127.0.0.1:$ECHO_PORT" "$T/tinyproxy.log" &&
    grep -q "CONNECT 127.0.0.1:$ECHO_PORT" "$T/tinyproxy-auth.log"
  ok $? "the CONNECTs reached this test's own tinyproxy instances"
  TAP_ON_FAIL=
fi

[ ! -s "$T/probe.err" ]
ok $? "the probe met no socket error" || sed 's/^/#   /' "$T/probe.err"
unlike "$(cat "$T/probe.err" "$T"/*.out 2>/dev/null)" "$PASS" \
  "no password in what the probe and the proxies printed"

# Stop what this test started, each by its own pid.
for p in ${MS_PID:-} ${MSA_PID:-} ${TP_PID:-} ${TPA_PID:-}; do
  kill "$p" 2>/dev/null
  wait_exit "$p" 5
  [ "$EXIT" != timeout ]
  ok $? "proxy pid $p stopped"
done

done_testing
