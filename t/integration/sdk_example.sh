#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Installs proxyhost into a staging directory, builds the SDK example out of
# tree against the *installed* SDK with pkg-config, runs its unit test
# against the *installed* mock host library, and loads it into the
# *installed* host; then the stream connector example and the dispatch
# strategy example (sdk/examples/strategy_first) the same way.
. "$top_srcdir/t/lib/testlib.sh"

dest="$T/dest"
${MAKE:-make} -C "$top_builddir" install DESTDIR="$dest" >"$T/install.log" 2>&1
ok $? "make install DESTDIR=..."
tail -5 "$T/install.log" | sed 's/^/# /'

pcdir_build="$top_builddir/sdk"
v() { PKG_CONFIG_PATH="$pcdir_build" pkg-config --variable="$1" proxyhost-sdk; }
prefix=$(v prefix)
libdir=$(v libdir)
includedir=$(v includedir)
moduledir=$(v moduledir)
is "$(v abi_major).$(v abi_minor)" "$PH_ABI" "the .pc file carries the ABI version"
is "$moduledir" "$libdir/proxyhost/modules" "the .pc file carries moduledir"

exists() { [ -f "$dest$1" ]; ok $? "installed: $1"; }
sbindir=$(sed -n 's|^sbindir = ||p' "$top_builddir/Makefile" | sed "s|\${exec_prefix}|$prefix|")
exists "$sbindir/proxyhost"
sysconfdir=$(sed -n 's|^sysconfdir = ||p' "$top_builddir/Makefile" | sed "s|\${prefix}|$prefix|")
mods=hello
if have_module process_metrics; then
  exists "$moduledir/process_metrics.so"
  exists "$sysconfdir/proxyhost/conf.d/process_metrics.ini.sample"
  mods=hello,process_metrics
fi
exists "$includedir/proxyhost/module.h"
exists "$includedir/proxyhost/host.h"
for h in abi.h access.h authorizer.h config.h connector.h log.h metrics.h; do
  exists "$includedir/proxyhost/$h"
done
exists "$libdir/pkgconfig/proxyhost-sdk.pc"
exists "$libdir/pkgconfig/proxyhost-mock.pc"
exists "$includedir/proxyhost/mock.h"
exists "$libdir/libproxyhost-mock.so"
exists "$prefix/share/man/man8/proxyhost.8"
exists "$prefix/share/man/man5/proxyhost.ini.5"
exists "$sysconfdir/proxyhost/proxyhost.ini"
[ ! -e "$dest$moduledir/probe.so" ]; ok $? "test modules are not installed"
[ -z "$(find "$dest" -name '*.la')" ]; ok $? "no libtool archives installed"

# The installed headers stand alone: nothing includes a host-private header,
# and each one compiles by itself as well as all together.
bad=
for h in "$dest$includedir"/proxyhost/*.h; do
  printf '#include <proxyhost/%s>\n' "$(basename "$h")" >"$T/one.c"
  cc -std=c11 -Wall -Wextra -Werror -I"$dest$includedir" -c "$T/one.c" \
    -o "$T/one.o" 2>>"$T/hdr.err" || bad="$bad $(basename "$h")"
  printf '#include <proxyhost/%s>\n' "$(basename "$h")"
done >"$T/hdr.c"
is "$bad" "" "each installed SDK header compiles on its own"
printf 'int main(void) { return PH_ABI_MAJOR - 1; }\n' >>"$T/hdr.c"
cc -std=c11 -Wall -Wextra -Werror -I"$dest$includedir" "$T/hdr.c" -o "$T/hdr" 2>>"$T/hdr.err"
ok $? "installed SDK headers compile on their own"
sed 's/^/# /' "$T/hdr.err" | head -10

# The mock host library exports exactly the functions <proxyhost/mock.h>
# declares: the host core inside it stays private.
mocklib="$dest$libdir/libproxyhost-mock.so"
exported=$(nm -D --defined-only "$mocklib" 2>/dev/null | awk '{print $3}' | sort | tr '\n' ' ')
declared=$(sed -n 's/^[a-z][^(]*[ *]\(ph_mock_[a-z_]*\)(.*/\1/p' \
  "$dest$includedir/proxyhost/mock.h" | sort -u | tr '\n' ' ')
like "$declared" "ph_mock_new ph_mock_publish ph_mock_ready ph_mock_reload" "mock.h declares the ph_mock_* API"
is "$exported" "$declared" "the installed mock library exports only ph_mock_*"

# Out-of-tree build with the installed pkg-config file.
mkdir -p "$T/hello"
cp "$top_srcdir/sdk/examples/hello/hello.c" "$top_srcdir/sdk/examples/hello/Makefile" \
  "$top_srcdir/sdk/examples/hello/hello.ini" "$T/hello/"
PKG_CONFIG_PATH="$dest$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
  ${MAKE:-make} -C "$T/hello" >"$T/hello.log" 2>&1
ok $? "the example builds against the installed SDK"
sed 's/^/# /' "$T/hello.log" | tail -5
syms=$(nm -D --defined-only "$T/hello/hello.so" 2>/dev/null | awk '{print $3}' | grep -v '^_' | tr '\n' ' ')
is "$syms" "proxyhost_module " "the example exports only its descriptor"

# Its unit test, built with the installed proxyhost-mock.pc and run against
# the installed library only. A sanitizer build of the library needs the
# sanitizer runtime in the program too, so the test takes the build's
# CFLAGS and LDFLAGS.
build_var() { sed -n "s|^$1 = ||p" "$top_builddir/Makefile"; }
cp "$top_srcdir/sdk/examples/hello/test_hello.c" "$T/hello/"
PKG_CONFIG_PATH="$dest$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
  LD_LIBRARY_PATH="$dest$libdir" \
  ${MAKE:-make} -C "$T/hello" check CFLAGS="$(build_var CFLAGS)" \
  LDFLAGS="$(build_var LDFLAGS)" >"$T/check.log" 2>&1
ok $? "the example's unit test passes against the installed mock host"
sed 's/^/# /' "$T/check.log" | grep -v '^# ts=' | tail -15
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$T/check.log")
passed=$(grep -c '^ok ' "$T/check.log")
[ -n "$plan" ] && [ "$plan" -ge 8 ] && [ "$passed" = "$plan" ]
ok $? "all its checks ran and passed ($passed of ${plan:-no plan})"
lib=$(LD_LIBRARY_PATH="$dest$libdir" ldd "$T/hello/test_hello" 2>/dev/null |
  awk '/libproxyhost-mock/ {print $3}')
is "$lib" "$dest$libdir/libproxyhost-mock.so.0" "it ran with the installed library"

# The installed host loads it (and an installed module) and runs it.
port=$(free_port)
PROXYHOST="$dest$sbindir/proxyhost"
start_proxyhost "$T/hello/hello.ini" \
  --set proxyhost.module_path="$T/hello,$dest$moduledir" \
  --set proxyhost.modules="$mods" \
  --set admin.listen="127.0.0.1:$port"
wait_for healthy "$port"; ok $? "installed host runs the example"
is "$(metric "$(http_get "http://127.0.0.1:$port/metrics")" proxyhost_hello_greetings_total)" 1 "the example greeted once"
kill -HUP "$PH_PID"
twice() { [ "$(metric "$(http_get "http://127.0.0.1:$port/metrics")" proxyhost_hello_greetings_total)" = 2 ]; }
wait_for twice; ok $? "the example sees the host's reload message"
like "$(cat "$T/ph.log")" "hello from an out-of-tree module" "its configuration reached it"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "installed host stops cleanly"

# The example stream connector (SDK 1.2, stream.h), built out of tree
# against the installed SDK and driven by the installed socks5: every
# CONNECT is an echo that lives in the process.
if have_module socks5; then
  mkdir -p "$T/echo"
  cp "$top_srcdir/sdk/examples/echo_stream/echo_stream.c" \
    "$top_srcdir/sdk/examples/echo_stream/Makefile" "$T/echo/"
  PKG_CONFIG_PATH="$dest$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
    ${MAKE:-make} -C "$T/echo" >"$T/echo.log" 2>&1
  ok $? "the stream connector example builds against the installed SDK"
  sed 's/^/# /' "$T/echo.log" | tail -5
  port=$(free_port)
  sport=$(free_port)
  printf '[proxyhost]\nmodules = echo_stream, socks5\nmodule_path = %s\n[admin]\nlisten = 127.0.0.1:%s\n[socks5]\nlisten = 127.0.0.1:%s\n[echo_stream]\nwindow = 4KiB\n' \
    "$T/echo,$dest$moduledir" "$port" "$sport" >"$T/echo.ini"
  start_proxyhost "$T/echo.ini"
  wait_for healthy "$port"; ok $? "the installed host runs it behind the installed socks5"
  out=$(${PYTHON3:-python3} "$top_srcdir/t/lib/socks5_probe.py" burst \
    --proxy "127.0.0.1:$sport" --n 20 --concurrency 5 2>&1)
  is "$out" "done=20 failed=0" "20 SOCKS5 streams echoed 1 KiB each through it"
  kill -TERM "$PH_PID"
  wait_exit "$PH_PID" 10; is "$EXIT" 0 "and stops cleanly"
else
  skip "socks5 not built: the stream connector example is not run"
fi

# The sixth dispatch strategy (issue 13, strategy.h), built out of tree
# against the installed SDK and loaded by the installed host. The test
# module strategy_probe (t/modules, from the build tree) stands in for the
# gateway's pool: it looks "first_usable" up by name as the pool does
# (service_get_named "dispatch.strategy") and picks through it on a
# canned view of four proxies a b c d whose first `full` are full.
mkdir -p "$T/first"
cp "$top_srcdir/sdk/examples/strategy_first/first_usable.c" \
  "$top_srcdir/sdk/examples/strategy_first/Makefile" \
  "$top_srcdir/sdk/examples/strategy_first/first_usable.ini" "$T/first/"
PKG_CONFIG_PATH="$dest$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
  ${MAKE:-make} -C "$T/first" >"$T/first.log" 2>&1
ok $? "the strategy example builds against the installed SDK"
sed 's/^/# /' "$T/first.log" | tail -5
syms=$(nm -D --defined-only "$T/first/first_usable.so" 2>/dev/null | awk '{print $3}' | grep -v '^_' | tr '\n' ' ')
is "$syms" "proxyhost_module " "the strategy example exports only its descriptor"
listed=$("$PROXYHOST" -c "$T/first/first_usable.ini" \
  --set proxyhost.module_path="$T/first,$dest$moduledir" --list-modules 2>&1)
like "$listed" "first_usable         1.0.0" "the installed host lists it (--list-modules)"
"$PROXYHOST" -c "$T/first/first_usable.ini" \
  --set proxyhost.module_path="$T/first,$dest$moduledir" --check-config >"$T/fcheck.log" 2>&1
is $? 0 "its sample configuration passes --check-config"
probe_dir="$top_builddir/t/modules/.libs"
first_conf() { # STRATEGY PORT
  # One directory per (continuation) line, as docs/configuration.md
  # shows for long lists.
  printf '[proxyhost]\nmodules = first_usable, strategy_probe\nmodule_path = %s\n  %s\n  %s\n[admin]\nlisten = 127.0.0.1:%s\n[strategy_probe]\nstrategy = %s\n' \
    "$T/first" "$probe_dir" "$dest$moduledir" "$2" "$1" >"$T/first_run.ini"
}
port=$(free_port)
first_conf first_usable "$port"
: >"$T/ph.log"
start_proxyhost "$T/first_run.ini"
wait_for healthy "$port"; ok $? "the installed host runs it beside a consumer that found it by name"
like "$(cat "$T/ph.log")" 'msg="strategy found" strategy=first_usable' \
  "it provides dispatch.strategy as first_usable"
is "$(http_get "http://127.0.0.1:$port/readyz" | head -1)" 200 "ready with it loaded"
is "$(http_get "http://127.0.0.1:$port/v1/test/strategy?full=0" | tail -1)" "pick=a" \
  "CP-1-22 first_usable: the first candidate"
is "$(http_get "http://127.0.0.1:$port/v1/test/strategy?full=2" | tail -1)" "pick=c" \
  "CP-1-23 first_usable: a and b full, the first that takes (c)"
is "$(http_get "http://127.0.0.1:$port/v1/test/strategy?full=4" | tail -1)" "pick=none" \
  "CP-1-23 first_usable: all four full, none"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "and stops cleanly"
# The probe is a real check: a name no module provides fails the start.
port=$(free_port)
first_conf no_such_strategy "$port"
: >"$T/ph.log"
start_proxyhost "$T/first_run.ini"
wait_exit "$PH_PID" 10; is "$EXIT" 4 "a strategy name nobody provides: the consumer's start fails (exit 4)"
like "$(cat "$T/ph.log")" 'msg="no such strategy" strategy=no_such_strategy' "and says which"

done_testing
