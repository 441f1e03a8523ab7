#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Named module instances (SDK 1.2) in a real proxyhost process: two socks5
# listeners with different authentication ([socks5] auth = none,
# [socks5.private] auth = password through auth_local), three connectors
# (direct, direct.strict with another target policy, and the memconn test
# connector), and each frontend naming its connector; an http_proxy on
# memconn. curl through each. Then --check-config for names that are not
# loaded, duplicates, sections of instances not loaded and instance
# overrides; a frontend without a named connector among several fails
# closed at start; /metrics labels the host's series by instance.
. "$top_srcdir/t/lib/testlib.sh"

PY=${PYTHON3:-python3}
PROBE="$PY $top_srcdir/t/lib/socks5_probe.py"
MODS="$top_builddir/modules"
MEMCONN="$top_builddir/t/modules/.libs/memconn.so"

require_modules socks5 direct http_proxy auth_local
if ! have_auth_local; then
  echo "1..0 # SKIP proxyhost-passwd not built"
  exit 0
fi

metrics_of() { http_get "http://127.0.0.1:$1/metrics"; }

# ---- targets ----------------------------------------------------------------
start_dnsd ok.test=127.0.0.1
ok $? "DNS test server on loopback"
for n in 1 2; do
  start_file_server "$T/www" "hello through an instance" "http$n"
  ok $? "HTTP target $n on 127.0.0.1"
done
http1=$(cat "$T/http1.port")
http2=$(cat "$T/http2.port")

# ---- one process, several instances -----------------------------------------
hash=$(password_hash s3cret-pw)
admin=$(free_port)
pub=$(free_port)
priv=$(free_port)
hport=$(free_port)
cat >"$T/a.ini" <<EOC
[proxyhost]
modules = socks5, socks5.private, http_proxy, auth_local
  direct, direct.strict, $MEMCONN
module_path = $MODS
drain_timeout = 2s
[admin]
listen = 127.0.0.1:$admin
[log]
level = info
[socks5]
listen = 127.0.0.1:$pub
connector = direct
[socks5.private]
listen = 127.0.0.1:$priv
auth = password
authorizer = auth_local
connector = direct.strict
[http_proxy]
listen = 127.0.0.1:$hport
connector = memconn
[auth_local]
users = alice:$hash
[direct]
resolver_servers = 127.0.0.1:$dns_port
[direct.strict]
resolver_servers = 127.0.0.1:$dns_port
allow_ports = $http1
EOC
out=$("$PROXYHOST" -c "$T/a.ini" --check-config 2>&1); rc=$?
is "$rc" 0 "two socks5, two direct and memconn pass --check-config"
like "$out" "configuration ok: 7 module(s)" "seven instances"

start_proxyhost "$T/a.ini"
A_PID=$PH_PID
wait_for healthy "$admin"; ok $? "proxyhost with the instances is healthy"
wait_for port_open "$pub"; ok $? "[socks5] listens"
wait_for port_open "$priv"; ok $? "[socks5.private] listens"

out=$("$CURL" -s -m 10 --noproxy '' --proxy "socks5h://127.0.0.1:$pub" \
  "http://ok.test:$http1/hello.txt" 2>&1)
is "$out" "hello through an instance" "curl through [socks5], auth = none"
out=$("$CURL" -s -m 10 --noproxy '' --proxy "socks5h://127.0.0.1:$pub" \
  "http://ok.test:$http2/hello.txt" 2>&1)
is "$out" "hello through an instance" \
  "[socks5] on direct: the second target is allowed"
out=$("$CURL" -s -m 10 --noproxy '' \
  --proxy "socks5h://alice:s3cret-pw@127.0.0.1:$priv" \
  "http://ok.test:$http1/hello.txt" 2>&1)
is "$out" "hello through an instance" \
  "curl through [socks5.private] with the right password"
"$CURL" -s -m 10 --noproxy '' --proxy "socks5h://127.0.0.1:$priv" \
  "http://ok.test:$http1/hello.txt" >/dev/null 2>&1
rc=$?
[ "$rc" -ne 0 ]; ok $? "[socks5.private] without a password is refused (curl $rc)"
"$CURL" -s -m 10 --noproxy '' \
  --proxy "socks5h://alice:wrong@127.0.0.1:$priv" \
  "http://ok.test:$http1/hello.txt" >/dev/null 2>&1
rc=$?
[ "$rc" -ne 0 ]; ok $? "[socks5.private] with a wrong password is refused"
r=$($PROBE reply --proxy "127.0.0.1:$pub" --target "ok.test:80" --auth alice:s3cret-pw)
is "$r" method-0xff "[socks5] offers no password method: its own auth = none"
r=$($PROBE reply --proxy "127.0.0.1:$priv" --target "127.0.0.1:$http2" \
  --atyp ipv4 --auth alice:s3cret-pw)
is "$r" 0x02 "[socks5.private] on direct.strict: its policy refuses the second target"

out=$("$CURL" -s -m 10 -x "http://127.0.0.1:$hport" -o /dev/null \
  -w '%{http_code}' "http://http.mem:1/" 2>&1)
is "$out" 200 "curl through [http_proxy] on the memconn connector it names"

m=$(metrics_of "$admin")
like "$m" 'proxyhost_module_threads{module="socks5.private"} 0' \
  "/metrics: the host's module label is the instance name"
like "$m" 'proxyhost_module_threads{module="direct.strict"} 0' \
  "for every instance"
like "$m" 'proxyhost_module_threads{module="socks5"} 0' \
  "and the default instance keeps the module's name"
log=$(cat "$T/ph.log")
like "$log" "module=socks5.private msg=\"socks5 listening\"" \
  "logs name the instance (module=socks5.private)"
unlike "$log" "s3cret-pw" "the password never reaches the log"
kill -TERM "$A_PID"
wait_exit "$A_PID" 10; is "$EXIT" 0 "SIGTERM: every instance drained, exit 0"

# ---- several connectors, none named: fail closed at start -------------------
admin=$(free_port)
sport=$(free_port)
cat >"$T/b.ini" <<EOC
[proxyhost]
modules = socks5, direct, direct.lab
module_path = $MODS
[admin]
listen = 127.0.0.1:$admin
[socks5]
listen = 127.0.0.1:$sport
EOC
: >"$T/ph.log"
"$PROXYHOST" -c "$T/b.ini" >"$T/b.out" 2>&1
rc=$?
is "$rc" 4 "two connectors and none named: start fails (exit 4)"
like "$(cat "$T/b.out")" 'has 2 providers (direct, direct.lab): name the one to use' \
  "the error names both providers"
like "$(cat "$T/b.out")" 'key=connector' "and the key to set"

# ---- configuration errors ------------------------------------------------------
# check_bad NAME RC MODULES BODY EXPECTED: --check-config exits RC and prints
# EXPECTED. BODY starts at line 5.
check_bad() {
  printf '[proxyhost]\nmodules = %s\nmodule_path = %s\n[admin]\n%b' \
    "$3" "$MODS" "$4" >"$T/bad.ini"
  err=$("$PROXYHOST" -c "$T/bad.ini" --check-config 2>&1); rc=$?
  is "$rc" "$2" "$1: exit $2"
  like "$err" "$5" "$1: the reason"
}
check_bad "a named connector not loaded" 2 "socks5, direct" \
  '[socks5]\nlisten = 127.0.0.1:1\nconnector = direct.lab\n' \
  'bad.ini:7: socks5.connector: "direct.lab" is not a loaded module instance that provides the "connector" service'
check_bad "a named connector that is not a connector" 2 "socks5, direct" \
  '[socks5]\nlisten = 127.0.0.1:1\nconnector = socks5\n' \
  'bad.ini:7: socks5.connector: "socks5" is not a loaded module instance'
check_bad "a named authorizer not loaded" 2 "socks5, socks5.b, direct, auth_local" \
  "[socks5.b]\nlisten = 127.0.0.1:1\nauth = password\nauthorizer = auth_local.staff\n[auth_local]\nusers = alice:$hash\n" \
  'bad.ini:8: socks5.b.authorizer: "auth_local.staff" is not a loaded module instance that provides the "authorizer" service'
check_bad "an authorizer with auth = none" 2 "socks5, direct, auth_local" \
  "[socks5]\nlisten = 127.0.0.1:1\nauthorizer = auth_local\n[auth_local]\nusers = alice:$hash\n" \
  'bad.ini:7: socks5.authorizer: names an authorizer, but auth = none'
check_bad "a section of an instance not loaded" 2 "socks5, direct" \
  '[socks5.ghost]\nlisten = 127.0.0.1:1\n' \
  'bad.ini:5: socks5.ghost: unknown section'
check_bad "an unknown key in an instance section" 2 "socks5, socks5.b, direct" \
  '[socks5.b]\nlisten = 127.0.0.1:1\nnope = 1\n' \
  'bad.ini:7: socks5.b.nope: unknown key'
check_bad "a duplicate entry" 3 "socks5, direct, socks5" '' \
  'duplicate module name "socks5"'
check_bad "an instance on a path" 3 "$MODS/socks5/.libs/socks5.so.x, direct" '' \
  'an instance is not given with a path'

# ---- overrides address instances -----------------------------------------------
printf '[proxyhost]\nmodules = socks5, socks5.b, direct\nmodule_path = %s\n[socks5.b]\nlisten = 127.0.0.1:2\n' \
  "$MODS" >"$T/o.ini"
out=$(PROXYHOST_SOCKS5__B_MAX_CLIENTS=77 "$PROXYHOST" -c "$T/o.ini" \
  --set socks5.b.backlog=99 --set socks5.backlog=98 --print-config 2>&1)
rc=$?
is "$rc" 0 "--print-config with instance overrides"
like "$out" "[socks5.b]
listen = 127.0.0.1:2  ; from $T/o.ini:5" "the instance section, with its source"
like "$out" "backlog = 99  ; from --set" "--set socks5.b.backlog reaches [socks5.b]"
like "$out" "backlog = 98  ; from --set" "--set socks5.backlog reaches [socks5]"
like "$out" "max_clients = 77  ; from env PROXYHOST_SOCKS5__B_MAX_CLIENTS" \
  "PROXYHOST_SOCKS5__B_MAX_CLIENTS reaches [socks5.b]"
n=$(printf '%s\n' "$out" | grep -c "max_clients = 77")
is "$n" 1 "and only [socks5.b]"

done_testing
