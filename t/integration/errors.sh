#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Errors that say what to do: a port in use, a privileged port, a section
# for a module that is not loaded, a missing connector, an unknown key, a
# log file that cannot be opened. Each with its exact message and exit
# code (issue 9).
. "$top_srcdir/t/lib/testlib.sh"

MODS="$top_builddir/modules"
PY=${PYTHON3:-python3}

# ---- a section for a module that is not loaded ------------------------------
printf '[proxyhost]\nmodules =\n[socks5]\nlisten = 127.0.0.1:0\n' >"$T/nomod.ini"
err=$("$PROXYHOST" -c "$T/nomod.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "a section of a module not loaded: exit 2"
is "$err" "proxyhost: $T/nomod.ini:3: socks5: unknown section: no module of that name is loaded; add socks5 to [proxyhost] modules" \
  "a section of a module not loaded: says to add it to [proxyhost] modules"

# ---- an unknown key suggests the nearest one --------------------------------
printf '[proxyhost]\nmodules =\n[admin]\nlisten =\n[log]\nlevle = debug\n' >"$T/typo.ini"
err=$("$PROXYHOST" -c "$T/typo.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "an unknown key: exit 2"
is "$err" "proxyhost: $T/typo.ini:6: log.levle: unknown key (did you mean \"level\"?)" \
  "an unknown key: did you mean the nearest key"
err=$("$PROXYHOST" -c "$T/typo.ini" --set log.levle= --set admin.lisen=x --check-config 2>&1)
like "$err" "--set: admin.lisen: unknown key (did you mean \"listen\"?)" \
  "an unknown --set key: did you mean"

# ---- a log file that cannot be opened ---------------------------------------
printf '[proxyhost]\nmodules =\n[admin]\nlisten =\n[log]\nfile = %s/no/such/dir/ph.log\n' \
  "$T" >"$T/log.ini"
err=$("$PROXYHOST" -c "$T/log.ini" 2>&1); rc=$?
is "$rc" 1 "a log file that cannot be opened: start-up exits 1"
is "$err" "proxyhost: $T/log.ini:6: log.file: cannot open $T/no/such/dir/ph.log: No such file or directory" \
  "a log file that cannot be opened: names the file:line, the path and the reason"

if ! have_module direct || ! have_module socks5 || ! have_module http_proxy; then
  skip "direct, socks5 or http_proxy not built"
  done_testing
  exit $?
fi

# ---- a frontend without a connector -------------------------------------------
printf '[proxyhost]\nmodules = socks5\nmodule_path = %s\n[admin]\nlisten =\n[socks5]\nlisten = 127.0.0.1:0\n' \
  "$MODS" >"$T/noconn.ini"
# The connectors built here: direct, and pool and tunnel_client when
# configured in.
providers=direct
have_module pool && providers="$providers, pool"
have_module tunnel_client && providers="$providers, tunnel_client"
want="proxyhost: $T/noconn.ini:2: proxyhost.modules: socks5 requires the \"connector\" service, which no loaded module provides; add one to [proxyhost] modules: $providers"
err=$("$PROXYHOST" -c "$T/noconn.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "no connector: --check-config exits 2 (a configuration error)"
is "$err" "$want" "no connector: names the modules in the module path that provide one"
err=$("$PROXYHOST" -c "$T/noconn.ini" 2>&1); rc=$?
is "$rc" 2 "no connector: start-up exits 2 before anything starts"
is "$err" "$want" "no connector: the same message at start-up"
printf '[proxyhost]\nmodules = http_proxy\nmodule_path = %s/nonexistent, %s\n[admin]\nlisten =\n[http_proxy]\nlisten = 127.0.0.1:0\n' \
  "$T" "$TMOD" >"$T/noconn2.ini"
err=$("$PROXYHOST" -c "$T/noconn2.ini" --set "proxyhost.module_path=$TMOD,$MODS" --check-config 2>&1); rc=$?
is "$rc" 2 "no connector, several directories: exit 2"
like "$err" "http_proxy requires the \"connector\" service" "no connector: the frontend named"
# The test modules' directory first (leasecon, memconn), then the modules'.
like "$err" "memconn, direct" "no connector: every directory of the module path is searched"

# ---- a port in use ---------------------------------------------------------
# A listening socket held by a helper process for the test's length.
$PY -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
time.sleep(60)
' "$T/held.port" &
PIDS="$PIDS $!"
wait_file "$T/held.port"; ok $? "a port held by another process"
held=$(cat "$T/held.port")
printf '[proxyhost]\nmodules = direct, socks5\nmodule_path = %s\n[admin]\nlisten =\n[socks5]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$held" >"$T/inuse.ini"
err=$("$PROXYHOST" -c "$T/inuse.ini" 2>&1); rc=$?
is "$rc" 4 "a port in use: start-up exits 4 (module start)"
like "$err" "reason=\"127.0.0.1:$held (socks5.listen): address already in use; see who holds it: ss -ltnp 'sport = :$held'\"" \
  "a port in use: names the address, the module's key and how to see who holds it"
printf '[proxyhost]\nmodules = direct, http_proxy.b\nmodule_path = %s\n[admin]\nlisten =\n[http_proxy.b]\nlisten = 127.0.0.1:%s\n' \
  "$MODS" "$held" >"$T/inuse2.ini"
err=$("$PROXYHOST" -c "$T/inuse2.ini" 2>&1); rc=$?
is "$rc" 4 "a port in use, an instance: exit 4"
like "$err" "127.0.0.1:$held (http_proxy.b.listen): address already in use" \
  "a port in use, an instance: names the instance's key"

# ---- a privileged port as non-root ----------------------------------------
low=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null || echo 1024)
priv="proxyhost: module socks5: start failed"
printf '[proxyhost]\nmodules = direct, socks5\nmodule_path = %s\n[admin]\nlisten =\n[socks5]\nlisten = 127.0.0.1:1\n' \
  "$MODS" >"$T/priv.ini"
chmod 755 "$T"; chmod 644 "$T/priv.ini"
as_user=
if [ "$(id -u)" != 0 ]; then
  as_user=
elif command -v setpriv >/dev/null 2>&1 &&
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    --bounding-set=-all test -x "$PROXYHOST" 2>/dev/null; then
  as_user="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all"
else
  as_user=none
fi
if [ "$low" -le 1 ] || [ "$as_user" = none ]; then
  skip "a privileged port: needs a non-root user (or setpriv) and ip_unprivileged_port_start > 1"
else
  err=$($as_user "$PROXYHOST" -c "$T/priv.ini" 2>&1); rc=$?
  is "$rc" 4 "a privileged port as non-root: exit 4"
  like "$err" "reason=\"127.0.0.1:1 (socks5.listen): permission denied: a port below 1024 needs root or CAP_NET_BIND_SERVICE (or a lower net.ipv4.ip_unprivileged_port_start)\"" \
    "a privileged port as non-root: mentions CAP_NET_BIND_SERVICE"
  like "$err" "$priv" "a privileged port: the module that failed"
fi

done_testing
