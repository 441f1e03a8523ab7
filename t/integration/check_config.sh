#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Values that only a module understands (listen addresses, auth_local user
# entries, direct's policy rules and resolver servers) are refused by the
# modules' check callbacks: from --check-config and at start-up with
# "file:line: section.key: reason" and exit 2 before any init runs, and on
# SIGHUP as a whole (the old configuration keeps serving).
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
MODS="$top_builddir/modules"

# check_bad NAME MODULES BODY EXPECTED [ARGS...]: --check-config exits 2
# and prints EXPECTED. BODY starts at line 5 of bad.ini.
check_bad() {
  name=$1 mods=$2 body=$3 want=$4
  shift 4
  printf '[proxyhost]\nmodules = %s\nmodule_path = %s\n[admin]\n%b' \
    "$mods" "$MODS" "$body" >"$T/bad.ini"
  err=$("$PROXYHOST" -c "$T/bad.ini" --check-config "$@" 2>&1); rc=$?
  is "$rc" 2 "$name: exit 2"
  like "$err" "$want" "$name: names file:line, section and key"
}

# ---- the shipped local configuration passes -------------------------------
if have_module direct && have_module socks5 && have_module http_proxy &&
  have_module process_metrics; then
  out=$("$PROXYHOST" -c "$top_srcdir/conf/local.ini" --check-config 2>&1); rc=$?
  is "$rc" 0 "conf/local.ini passes --check-config"
  like "$out" "configuration ok: 4 module(s)" "and says so"
else
  skip "conf/local.ini needs direct, socks5, http_proxy and process_metrics"
fi

# ---- TunnelMesh's built-in defaults are the seed's ------------------------
# --print-config with nothing but the required keys set shows each key's
# value "from default". The seed's names map to these modules' keys:
# server.stream.* is tunnel_server's stream.*, server.authorization_cache.*
# is auth_cache plus the stores' TTLs and revision reads, agent.streams.*
# is tunnel_agent's streams.*, client.* is tunnel_client and
# remote_validation.
# defaults_of MODULES SECTION BODY: SECTION of the printed configuration
# (BODY goes after [admin]).
defaults_of() {
  printf '[proxyhost]\nmodules = %s\nmodule_path = %s\n[admin]\nlisten =\n%b' \
    "$1" "$MODS" "$3" >"$T/defaults.ini"
  "$PROXYHOST" -c "$T/defaults.ini" --print-config 2>&1 |
    sed -n "/^\[$2\]/,/^\[/p"
}
# has_default OUT KEY VALUE NAME: KEY is VALUE, and from the default.
has_default() {
  printf '%s\n' "$1" | grep -qxF "$2 = $3  ; from default"
  ok $? "$4: $2 = $3 by default"
}
if have_module tunnel_server; then
  out=$(defaults_of tunnel_server tunnel_server '')
  has_default "$out" stream.max_concurrent_opens 256 TM-CFG-2
  has_default "$out" stream.max_pending_opens 1024 TM-CFG-3
  has_default "$out" stream.initial_window 262144 TM-CFG-4
  has_default "$out" stream.window_update_threshold 131072 TM-CFG-5
  has_default "$out" stream.max_frame_payload 32768 TM-CFG-6
else
  skip "tunnel_server defaults: module not built"
fi
if have_module auth_cache && have_module auth_local; then
  out=$(defaults_of 'auth_local, auth_cache' auth_cache '[auth_cache]\nstore = auth_local\n')
  has_default "$out" enabled true "TM-CFG-7 auth_cache"
  has_default "$out" max_entries 100000 "TM-CFG-13 auth_cache"
  has_default "$out" max_negative_ttl 3s "TM-CFG-10 auth_cache's cap"
else
  skip "auth_cache defaults: module not built"
fi
if have_module store_sqlite; then
  out=$(defaults_of store_sqlite store_sqlite '')
  has_default "$out" positive_ttl 5s "TM-CFG-8 store_sqlite (local)"
else
  skip "store_sqlite defaults: module not built"
fi
if have_module store_pg; then
  out=$(defaults_of store_pg store_pg '')
  has_default "$out" positive_ttl 5m "TM-CFG-9 store_pg (cluster)"
  has_default "$out" negative_ttl 3s "TM-CFG-10 store_pg"
  has_default "$out" revision_poll 2s "TM-CFG-11 store_pg"
  has_default "$out" stale_allow 5s "TM-CFG-12 store_pg"
else
  skip "store_pg defaults: module not built"
fi
if have_module tunnel_agent; then
  out=$(defaults_of tunnel_agent tunnel_agent '[tunnel_agent]\nserver_url = ws://127.0.0.1:1/t\ntoken = x\n')
  has_default "$out" streams.inbound_buffer_bytes 262144 TM-CFG-18
  has_default "$out" connections.min 1 "TM-UPG-12 (the pool's rollback values)"
  has_default "$out" connections.max 1 "TM-UPG-12 (the pool's rollback values)"
else
  skip "tunnel_agent defaults: module not built"
fi
if have_module tunnel_client; then
  out=$(defaults_of tunnel_client tunnel_client '[tunnel_client]\nserver_url = ws://127.0.0.1:1/t\nagent = a\ntoken = x\n')
  has_default "$out" stream.open_timeout 8s TM-CFG-19
  has_default "$out" stream.inbound_buffer_bytes 262144 TM-CFG-20
else
  skip "tunnel_client defaults: module not built"
fi
if have_module remote_validation; then
  out=$(defaults_of remote_validation remote_validation '')
  has_default "$out" positive_ttl 15s TM-CFG-21
  has_default "$out" negative_ttl 2s TM-CFG-22
  has_default "$out" timeout 3s TM-CFG-23
  has_default "$out" max_entries 10000 TM-CFG-24
else
  skip "remote_validation defaults: module not built"
fi

# ---- the host's own [admin] listen -------------------------------------------
printf '[proxyhost]\n[admin]\nlisten = localhost:9470\n' >"$T/admin.ini"
err=$("$PROXYHOST" -c "$T/admin.ini" --check-config 2>&1); rc=$?
is "$rc" 2 "[admin] listen, a name: --check-config exits 2"
like "$err" 'admin.ini:3: admin.listen: "localhost:9470": invalid address' \
  "[admin] listen: names file:line, section and key"
err=$("$PROXYHOST" -c "$T/admin.ini" 2>&1); rc=$?
is "$rc" 2 "[admin] listen, a name: start-up exits 2, before binding anything"
err=$("$PROXYHOST" -c "$T/admin.ini" --set admin.listen='[::1]:0' --check-config 2>&1)
is "$?" 0 "[admin] listen = [::1]:0 passes"
err=$("$PROXYHOST" -c "$T/admin.ini" --set admin.listen= --check-config 2>&1)
is "$?" 0 "[admin] listen empty (no admin listener) passes"

# ---- socks5: the listen address -------------------------------------------
if have_module socks5 && have_module direct; then
  check_bad "socks5 listen, a name" "direct, socks5" \
    '[socks5]\nlisten = localhost:1080\n' \
    'bad.ini:6: socks5.listen: "localhost:1080"'
  check_bad "socks5 listen, no port" "direct, socks5" \
    '[socks5]\nlisten = 127.0.0.1\n' 'bad.ini:6: socks5.listen: "127.0.0.1"'
  check_bad "socks5 listen, port range" "direct, socks5" '' \
    'socks5.listen: "127.0.0.1:65536": invalid port' \
    --set socks5.listen=127.0.0.1:65536
  like "$err" "--set: socks5.listen" "socks5 listen, port range: names --set"
  check_bad "socks5 listen, IPv6 without brackets" "direct, socks5" \
    '[socks5]\nlisten = ::1:1080\n' 'bad.ini:6: socks5.listen: "::1:1080"'
  printf '[proxyhost]\nmodules = direct, socks5\nmodule_path = %s\n[socks5]\nlisten = [::1]:0\n' \
    "$MODS" >"$T/v6.ini"
  "$PROXYHOST" -c "$T/v6.ini" --check-config >/dev/null 2>&1
  is $? 0 "socks5 listen: [::1]:0 passes"
else
  skip "socks5 or direct not built"
fi

# ---- auth = password needs an authorizer module loaded ---------------------
for fe in socks5 http_proxy; do
  if have_module "$fe" && have_module direct; then
    check_bad "$fe auth = password, no authorizer" "direct, $fe" \
      "[$fe]\\nlisten = 127.0.0.1:0\\nauth = password\\n" \
      "bad.ini:7: $fe.auth: password needs a module that provides the \"authorizer\" service"
    if have_auth_local; then
      printf '[proxyhost]\nmodules = direct, %s, auth_local\nmodule_path = %s\n[%s]\nlisten = 127.0.0.1:0\nauth = password\n[auth_local]\nusers = alice:%s\n' \
        "$fe" "$MODS" "$fe" "$(password_hash pw)" >"$T/auth-ok.ini"
      "$PROXYHOST" -c "$T/auth-ok.ini" --check-config >/dev/null 2>&1
      is $? 0 "$fe auth = password with auth_local loaded passes"
    fi
  fi
done

# ---- http_proxy: the same listen check --------------------------------------
if have_module http_proxy && have_module direct; then
  check_bad "http_proxy listen, a name" "direct, http_proxy" \
    '[http_proxy]\nlisten = localhost:8080\n' \
    'bad.ini:6: http_proxy.listen: "localhost:8080"'
else
  skip "http_proxy or direct not built"
fi

# ---- direct: policy rules and resolver servers ----------------------------
if have_module direct; then
  check_bad "direct deny_cidrs prefix" direct '[direct]\ndeny_cidrs = 10.0.0.0/33\n' \
    'bad.ini:6: direct.deny_cidrs: "10.0.0.0/33"'
  check_bad "direct allow_cidrs address" direct \
    '[direct]\nallow_cidrs = 192.0.2.0/24, 300.1.2.3\n' \
    'bad.ini:6: direct.allow_cidrs: "300.1.2.3"'
  check_bad "direct deny_hosts" direct '[direct]\ndeny_hosts = bad name\n' \
    'bad.ini:6: direct.deny_hosts: "bad name"'
  check_bad "direct allow_ports" direct '[direct]\nallow_ports = 443, 9000-80\n' \
    'bad.ini:6: direct.allow_ports: "9000-80"'
  check_bad "direct deny_ports zero" direct '[direct]\ndeny_ports = 0\n' \
    'bad.ini:6: direct.deny_ports: "0"'
  check_bad "direct resolver_servers" direct \
    '[direct]\nresolver_servers = not-an-ip\n' \
    'bad.ini:6: direct.resolver_servers: "not-an-ip"'
  printf '[proxyhost]\nmodules = direct\nmodule_path = %s\n[direct]\nallow_cidrs = 10.0.0.0/8, 2001:db8::/32, ::ffff:10.0.0.0/104\nallow_hosts = example.com, .example.org\nallow_ports = 80, 8000-8999\nresolver_servers = 127.0.0.1:5353, [::1]:53\n' \
    "$MODS" >"$T/direct.ini"
  "$PROXYHOST" -c "$T/direct.ini" --check-config >/dev/null 2>&1
  is $? 0 "direct: good rules and servers pass"
else
  skip "direct not built"
fi

# ---- auth_local: user entries (a sensitive key: never echoed) -------------
if have_auth_local; then
  hash=$(password_hash s3cret)
  check_bad "auth_local users, no hash" auth_local \
    '[auth_local]\nusers = bob:plaintext-pw\n' \
    'bad.ini:6: auth_local.users: entry 1 is not NAME:HASH'
  unlike "$err" "plaintext-pw" "auth_local users: the entry is not echoed"
  check_bad "auth_local users, no name" auth_local \
    "[auth_local]\nusers = alice:$hash, :$hash\n" \
    'bad.ini:6: auth_local.users: entry 2 is not NAME:HASH'
  check_bad "auth_local users, duplicate" auth_local \
    "[auth_local]\nusers = alice:$hash, alice:$hash\n" \
    'bad.ini:6: auth_local.users: entry 2: duplicate user'
  unlike "$err" "$hash" "auth_local users: the hash is not echoed"
  printf '[proxyhost]\nmodules = auth_local\nmodule_path = %s\n[auth_local]\nusers = alice:%s\n' \
    "$MODS" "$hash" >"$T/auth.ini"
  "$PROXYHOST" -c "$T/auth.ini" --check-config >/dev/null 2>&1
  is $? 0 "auth_local: a NAME:HASH entry passes"
else
  skip "auth_local not built"
fi

if ! have_module socks5 || ! have_module direct; then
  done_testing
  exit $?
fi

# ---- every failure, and start-up -------------------------------------------
check_bad "two modules" "direct, socks5" \
  '[socks5]\nlisten = nowhere\n[direct]\ndeny_cidrs = 10.0.0.0/33\n' \
  'bad.ini:6: socks5.listen: "nowhere"'
like "$err" 'bad.ini:8: direct.deny_cidrs: "10.0.0.0/33"' \
  "two modules: the second failure is reported too"
# Without --check-config: exit 2 before anything starts (direct's init
# would fail with exit 4 if it ran).
printf '[proxyhost]\nmodules = direct, socks5\nmodule_path = %s\n[admin]\nlisten =\n[direct]\ndeny_cidrs = 10.0.0.0/33\n' \
  "$MODS" >"$T/start.ini"
err=$("$PROXYHOST" -c "$T/start.ini" 2>&1); rc=$?
is "$rc" 2 "start-up with a value a module's check refuses exits 2"
like "$err" 'start.ini:7: direct.deny_cidrs: "10.0.0.0/33"' "start-up: the same message"
unlike "$err" "init failed" "start-up: no init ran"

# ---- SIGHUP: a refused value keeps the old configuration serving ----------
start_file_server "$T/www" "still served"; ok $? "HTTP target on 127.0.0.1"
http_port=$FILE_SERVER_PORT
admin=$(free_port)
sport=$(free_port)
write_run() { # DIRECT-LINES
  printf '[proxyhost]\nmodules = socks5, direct\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[socks5]\nlisten = 127.0.0.1:%s\n[direct]\n%b' \
    "$MODS" "$admin" "$sport" "$1" >"$T/run.ini"
}
fetch() {
  "$CURL" -s -m 5 --proxy "socks5://127.0.0.1:$sport" \
    "http://127.0.0.1:$http_port/hello.txt" 2>/dev/null
}
reloads() { # RESULT COUNT: proxyhost_reloads_total{result=RESULT} is COUNT
  http_get "http://127.0.0.1:$admin/metrics" |
    grep -qF "proxyhost_reloads_total{result=\"$1\"} $2"
}
write_run ''
start_proxyhost "$T/run.ini"
wait_for healthy "$admin"; ok $? "socks5 and direct start"
is "$(fetch)" "still served" "a request goes through"
# Refused as a whole: the valid deny_ports line (which would block the
# target) must not apply either.
write_run "deny_ports = $http_port\ndeny_cidrs = 10.0.0.0/33\n"
kill -HUP "$PH_PID"
wait_for reloads failed 1; ok $? "SIGHUP with a value direct's check refuses is refused and counted"
running "$PH_PID"; ok $? "the process keeps running"
like "$(cat "$T/ph.log")" 'run.ini:10: direct.deny_cidrs: \"10.0.0.0/33\"' \
  "the refusal names file:line: section.key: reason"
unlike "$(cat "$T/ph.log")" "module reload failed" "no module reloaded"
is "$(fetch)" "still served" "the old configuration keeps serving (deny_ports not applied)"
# The same change without the bad rule applies: the refusal was the check.
write_run "deny_ports = $http_port\n"
kill -HUP "$PH_PID"
wait_for reloads ok 1; ok $? "a valid reload is applied"
is "$(fetch)" "" "the new deny_ports rule is in force"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "stops cleanly"

done_testing
