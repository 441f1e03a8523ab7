# SPDX-License-Identifier: BSD-2-Clause
# Shell helpers for proxyhost's integration tests: TAP output, a private
# temporary directory, free loopback ports, and starting/stopping real
# proxyhost processes. Every wait here is bounded.

: "${top_builddir:?run through make check}"
: "${top_srcdir:?run through make check}"
PROXYHOST="$top_builddir/host/proxyhost"
TMOD="$top_builddir/t/modules/.libs"
CURL="${CURL:-curl}"
# The SDK ABI of the tree ("1.2"), read from abi.h as configure reads it.
abi_field() { sed -n "s/^#define PH_ABI_$1 \([0-9]*\)\$/\1/p" "$top_srcdir/sdk/proxyhost/abi.h"; }
PH_ABI="$(abi_field MAJOR).$(abi_field MINOR)"

tap_n=0
tap_failed=0
# TAP_ON_FAIL: a command a test may set; run after each "not ok", its
# output as TAP comments (what the scenario's logs said at that moment,
# so a failure seen once in CI can be read without a rerun).
TAP_ON_FAIL=
ok() { # ok STATUS NAME
  tap_n=$((tap_n + 1))
  if [ "$1" -eq 0 ]; then
    echo "ok $tap_n - $2"
  else
    echo "not ok $tap_n - $2"
    tap_failed=$((tap_failed + 1))
    [ -n "$tap_in_is" ] || tap_on_fail
    return 1 # so "ok $? NAME || diagnostics" works
  fi
}
tap_in_is=
tap_on_fail() {
  [ -z "$TAP_ON_FAIL" ] || eval "$TAP_ON_FAIL" 2>&1 | head -60 | sed 's/^/#   > /'
}
is() { # is GOT WANT NAME
  if [ "$1" = "$2" ]; then ok 0 "$3"; else
    tap_in_is=1
    ok 1 "$3"
    tap_in_is=
    echo "#   got '$1', want '$2'"
    tap_on_fail
    return 1
  fi
}
like() { # like TEXT PATTERN(fixed string) NAME
  if printf '%s' "$1" | grep -qF -- "$2"; then ok 0 "$3"; else
    ok 1 "$3"; echo "#   does not contain '$2'"; printf '%s\n' "$1" | head -20 | sed 's/^/#   | /'; fi
}
like_re() { # like_re TEXT EXTENDED-REGEX NAME
  if printf '%s' "$1" | grep -qE -- "$2"; then ok 0 "$3"; else
    ok 1 "$3"; echo "#   does not match '$2'"; printf '%s\n' "$1" | head -20 | sed 's/^/#   | /'; fi
}
unlike() {
  if printf '%s' "$1" | grep -qF -- "$2"; then ok 1 "$3"; echo "#   contains '$2'"; else ok 0 "$3"; fi
}
# have_module NAME: the module was built (configure may leave it out).
have_module() { [ -f "$top_builddir/modules/$1/.libs/$1.so" ]; }
# require_modules NAME...: the whole test is skipped, with the reason,
# when one of the modules was not built (configure --disable-module-NAME).
require_modules() {
  for m in "$@"; do
    if ! have_module "$m"; then
      echo "1..0 # SKIP module $m not built"
      exit 0
    fi
  done
}

# have_auth_local: auth_local and proxyhost-passwd were built.
have_auth_local() {
  have_module auth_local && [ -x "$top_builddir/tools/proxyhost-passwd" ]
}
# password_hash PW: the [auth_local] users hash of PW.
# password_hash PASSWORD [ITERATIONS]: an [auth_local] hash (600000 by default)
password_hash() { printf '%s\n' "$1" | "$top_builddir/tools/proxyhost-passwd" ${2:+-i "$2"} 2>/dev/null; }

skip() { # skip REASON: a TAP skip, counted as skipped by .ci/run
  tap_n=$((tap_n + 1))
  echo "ok $tap_n # SKIP $1"
}
done_testing() {
  echo "1..$tap_n"
  [ "$tap_failed" -eq 0 ]
}

# $T: the test's own directory, removed at the end unless PH_TEST_KEEP is
# set (for a look at the logs after a failure: its path goes to stderr).
T=$(mktemp -d "${TMPDIR:-/tmp}/proxyhost-test.XXXXXX")
PIDS=""
cleanup() {
  for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
  [ -f "$T/.ports" ] && (cd "${TMPDIR:-/tmp}/proxyhost-ports" 2>/dev/null && rm -f $(cat "$T/.ports"))
  [ -n "${PH_TEST_KEEP:-}" ] && echo "# kept $T" >&2 || rm -rf "$T"
}
trap cleanup EXIT

# free_port: a loopback port for a test server, below the kernel's
# ephemeral range (where a parallel test's outgoing connection could take
# it before our bind), reserved machine-wide until this test ends, and
# never one this test got before (t/lib/free_port.py says how).
free_port() {
  python3 "$top_srcdir/t/lib/free_port.py" "$T/.ports" $$
}

# http_get URL -> prints "STATUS" on the first line, then the body.
http_get() {
  "$CURL" -s -m 5 -o "$T/body" -w '%{http_code}\n' "$1" 2>/dev/null || true
  cat "$T/body" 2>/dev/null
}

# start_proxyhost CONFIG [ARGS...]: runs it in the background with its log
# in $T/ph.log; sets PH_PID.
start_proxyhost() {
  cfg=$1
  shift
  "$PROXYHOST" -c "$cfg" "$@" >>"$T/ph.log" 2>&1 &
  PH_PID=$!
  PIDS="$PIDS $PH_PID"
}

# wait_for CMD...: retries a command up to 100 times, 50 ms apart. Its
# arguments are expanded once, at the call: a "$(...)" among them is read
# once and never again (test_scripts.sh refuses that); wait_cond re-reads.
wait_for() {
  i=0
  while [ $i -lt 100 ]; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    i=$((i + 1))
    sleep 0.05
  done
  return 1
}

# wait_long CMD...: as wait_for, for the slow transitions of a whole
# system (sessions, leases, expiries): up to 600 tries, 50 ms apart (30 s
# and the commands' own time).
wait_long() {
  i=0
  while [ $i -lt 600 ]; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    i=$((i + 1))
    sleep 0.05
  done
  return 1
}
wait_file() { wait_for test -s "$1"; }
# wait_cond 'CONDITION': wait_for on a shell condition given as one string,
# evaluated afresh on every try, e.g. wait_cond '[ "$(count)" -ge 3 ]'.
wait_cond() { wait_for eval "$1"; }
# start_file_server DIR TEXT [NAME]: socks5_probe.py's HTTP file server on
# a loopback port, serving DIR (created, with hello.txt holding TEXT), for
# at most 300 s; its port file and log are $T/NAME.port and $T/NAME.log
# (NAME: http). Sets FILE_SERVER_PORT (empty when it did not start);
# returns non-zero then.
start_file_server() {
  _fs_name=${3:-http}
  mkdir -p "$1"
  printf '%s\n' "$2" >"$1/hello.txt"
  ${PYTHON3:-python3} "$top_srcdir/t/lib/socks5_probe.py" httpd --dir "$1" \
    --port-file "$T/$_fs_name.port" --seconds 300 >"$T/$_fs_name.log" 2>&1 &
  PIDS="$PIDS $!"
  FILE_SERVER_PORT=
  wait_file "$T/$_fs_name.port" && FILE_SERVER_PORT=$(cat "$T/$_fs_name.port")
  [ -n "$FILE_SERVER_PORT" ]
}
port_open() { python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 1).close()"; }

# start_dnsd ZONE...: t/lib/dnsd.py on a loopback port, answering each
# NAME=ADDR zone (its other behaviours are named in dnsd.py); sets
# dns_port. Tests never use the system's nameserver.
start_dnsd() {
  zones=""
  for z in "$@"; do zones="$zones --zone $z"; done
  # shellcheck disable=SC2086 # $zones is split on purpose
  python3 "$top_srcdir/t/lib/dnsd.py" --port 0 --port-file "$T/dns.port" \
    $zones --lifetime 300 >"$T/dns.log" 2>&1 &
  PIDS="$PIDS $!"
  wait_file "$T/dns.port" || return 1
  dns_port=$(cat "$T/dns.port")
}

# start_tls_target NAME: a certificate for NAME made now ($T/cert.pem,
# $T/key.pem) and `openssl s_server -www` on 127.0.0.1 with it; sets
# tls_port.
start_tls_target() {
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/key.pem" \
    -out "$T/cert.pem" -days 1 -subj "/CN=$1" \
    -addext "subjectAltName=DNS:$1" >"$T/openssl.log" 2>&1 || return 1
  tls_port=$(free_port)
  openssl s_server -quiet -www -accept "127.0.0.1:$tls_port" \
    -cert "$T/cert.pem" -key "$T/key.pem" </dev/null >"$T/tls.log" 2>&1 &
  PIDS="$PIDS $!"
  wait_for port_open "$tls_port"
}

# admin_api_conf FILE PORT [ADMIN-LINES]: writes FILE, a configuration
# running admin_api over the in-memory test store fakeaz, the admin token
# in $T/admin.token, the admin listener on 127.0.0.1:PORT with
# ADMIN-LINES added to its section.
admin_api_conf() {
  cat >"$1" <<EOC
[proxyhost]
modules = fakeaz, admin_api
module_path = $TMOD, $top_builddir/modules
[admin]
listen = 127.0.0.1:$2
${3:-}
[admin_api]
store = fakeaz
token_file = $T/admin.token
EOC
}

# ini_set SECTION.KEY=VALUE...: a filter from an ini file on stdin to
# stdout with each KEY of [SECTION] set to VALUE: the line replaced where
# the key stands, else added after the section's header (the section must
# be there). VALUE may be empty.
ini_set() {
  awk '
    BEGIN { for (i = 1; i < ARGC; i++) { a = ARGV[i]; e = index(a, "="); d = index(a, ".")
        sec[i] = substr(a, 1, d - 1); key[i] = substr(a, d + 1, e - d - 1); val[i] = substr(a, e + 1) }
      n = ARGC - 1; ARGC = 1 }
    /^\[/ { cur = substr($0, 2, index($0, "]") - 2); print
      for (i = 1; i <= n; i++) if (sec[i] == cur && !done[i]) { print key[i] " = " val[i]; done[i] = 1 }
      next }
    { k = $0; sub(/[ \t]*=.*/, "", k)
      for (i = 1; i <= n; i++) if (sec[i] == cur && key[i] == k && index($0, "=")) next
      print }' "$@"
}

# password_config FRONTEND PORT ADMIN [HASH]: prints the configuration of
# a proxyhost whose FRONTEND (socks5 or http_proxy) listens on
# 127.0.0.1:PORT with auth = password, over direct resolving through the
# test's dnsd ($dns_port). With HASH, auth_local holds user alice with it;
# without, no authorizer is loaded. ADMIN: host:port, or empty for none.
password_config() {
  mods="$1, direct"
  [ -n "${4:-}" ] && mods="auth_local, $mods"
  printf '[proxyhost]\nmodules = %s\nmodule_path = %s\ndrain_timeout = 2s\n' \
    "$mods" "$top_builddir/modules"
  printf '[admin]\nlisten = %s\n[%s]\nlisten = 127.0.0.1:%s\nauth = password\n' \
    "$3" "$1" "$2"
  printf '[direct]\nresolver_servers = 127.0.0.1:%s\n' "$dns_port"
  if [ -n "${4:-}" ]; then printf '[auth_local]\nusers = alice:%s\n' "$4"; fi
}

healthy() { [ "$(http_get "http://127.0.0.1:$1/healthz" | head -1)" = 200 ]; }

# running PID: true while the process exists and is not a zombie (kill -0
# succeeds on an exited child that was not waited for yet). A stat that
# cannot be read means gone: the shell reaps any exited child while it
# waits for another (the reader here), so the file may vanish between a
# test for it and its read (a reader's failure once counted as "running",
# and a gateway that had exited cleanly timed out in gateway_drain.sh).
# The state is the field after the last ')': a name may hold spaces.
running() {
  _st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  _st=${_st##*) }
  [ -n "$_st" ] && [ "${_st%% *}" != Z ]
}

# wait_exit PID SECONDS: sets EXIT to the exit status, or "timeout". Not in
# a $(...) subshell: only the parent shell can wait for its child.
wait_exit() {
  i=0
  max=$(($2 * 20))
  while running "$1" && [ $i -lt $max ]; do
    sleep 0.05
    i=$((i + 1))
  done
  if running "$1"; then EXIT=timeout; return; fi
  wait "$1"
  EXIT=$?
}

# metric TEXT NAME -> the value of the first sample line starting NAME.
metric() {
  printf '%s\n' "$1" | awk -v n="$2" 'index($0, n " ") == 1 { print $NF; exit }'
}
