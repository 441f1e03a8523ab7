#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The installed tree (make install DESTDIR=...): its configuration works as
# shipped (the local proxy from the conf.d drop-ins), every module sample
# is a valid drop-in, --print-config names the drop-in lines, and no
# installed text file names the build tree or a seed (issue 9).
. "$top_srcdir/t/lib/testlib.sh"

dest="$T/dest"
${MAKE:-make} -C "$top_builddir" install DESTDIR="$dest" >"$T/install.log" 2>&1
ok $? "make install DESTDIR=..."
v() { sed -n "s|^$1 = ||p" "$top_builddir/Makefile"; }
prefix=$(v prefix)
exec_prefix=$(v exec_prefix | sed "s|\${prefix}|$prefix|")
sysconfdir=$(v sysconfdir | sed "s|\${prefix}|$prefix|")
libdir=$(v libdir | sed "s|\${exec_prefix}|$exec_prefix|")
etc="$dest$sysconfdir/proxyhost"
mods="$dest$libdir/proxyhost/modules"
ph="$dest$exec_prefix/bin/proxyhost"

# ---- no build-tree paths or seed references in installed text files -------
builddir=$(cd "$top_builddir" && pwd -P)
srcdir=$(cd "$top_srcdir" && pwd -P)
for pat in "$builddir" "$srcdir" "seed" "SEED-" "../shared"; do
  hits=$(grep -rIl -i -F -- "$pat" "$dest" 2>/dev/null | sed "s|^$dest||")
  is "$hits" "" "no installed text file contains \"$pat\""
done

# The binaries too, once their debug information (which names the
# compilation directory, and which packages strip) is gone.
if command -v strip >/dev/null 2>&1; then
  bad=
  for f in $(find "$dest" -type f \( -perm -u+x -o -name '*.so*' \)); do
    head -c 4 "$f" | grep -q 'ELF' || continue
    strip --strip-debug -o "$T/stripped" "$f" 2>/dev/null || continue
    if grep -q -F -e "$builddir" -e "$srcdir" "$T/stripped"; then
      bad="$bad ${f#$dest}"
    fi
  done
  is "$bad" "" "no installed binary names the build or source tree"
else
  skip "strip not installed"
fi

# ---- the installed configuration as shipped --------------------------------
for f in proxyhost.ini local.ini conf.d/README conf.d/direct.ini \
  conf.d/socks5.ini conf.d/http_proxy.ini; do
  [ -f "$etc/$f" ]; ok $? "installed: \$(sysconfdir)/proxyhost/$f"
done
if ! have_module direct || ! have_module socks5 || ! have_module http_proxy; then
  skip "direct, socks5 or http_proxy not built"
  done_testing
  exit $?
fi
set_mods="proxyhost.module_path=$mods"
out=$("$ph" -c "$etc/proxyhost.ini" --set "$set_mods" --check-config 2>&1); rc=$?
is "$rc" 0 "the installed proxyhost.ini passes --check-config"
is "$out" "configuration ok: 3 module(s)" "and loads the three modules of its drop-ins"
out=$("$ph" -c "$etc/proxyhost.ini" --set "$set_mods" --print-config 2>&1)
like "$out" "modules = direct,http_proxy,socks5  ; from $etc/conf.d/direct.ini:5, $etc/conf.d/http_proxy.ini:6, $etc/conf.d/socks5.ini:5" \
  "--print-config names each drop-in line of the module list"
like "$out" "listen = 127.0.0.1:1080  ; from $etc/conf.d/socks5.ini:8" \
  "--print-config names the drop-in a value came from"
like "$out" "module_path = $mods  ; from --set" "--print-config: --set"
like "$out" "max_clients = 1024  ; from default" "--print-config: default"
out=$(PROXYHOST_SOCKS5_BACKLOG=7 "$ph" -c "$etc/proxyhost.ini" --set "$set_mods" --print-config 2>&1)
like "$out" "backlog = 7  ; from env PROXYHOST_SOCKS5_BACKLOG" "--print-config: env NAME"
if have_module process_metrics; then
  out=$("$ph" -c "$etc/local.ini" --set "$set_mods" --check-config 2>&1)
  is "$out" "configuration ok: 4 module(s)" "the installed local.ini: the drop-ins and process_metrics"
fi

# It runs and serves: the shipped drop-ins, on ports of the test's own.
mkdir -p "$T/www"
printf 'served\n' >"$T/www/hello.txt"
${PYTHON3:-python3} "$top_srcdir/t/lib/socks5_probe.py" httpd --dir "$T/www" \
  --port-file "$T/http.port" --seconds 120 >"$T/http.log" 2>&1 &
PIDS="$PIDS $!"
wait_file "$T/http.port"; ok $? "an HTTP target on 127.0.0.1"
url="http://127.0.0.1:$(cat "$T/http.port")/hello.txt"
admin=$(free_port) s5=$(free_port) hp=$(free_port)
start_proxyhost "$etc/proxyhost.ini" --set "$set_mods" \
  --set "admin.listen=127.0.0.1:$admin" --set "socks5.listen=127.0.0.1:$s5" \
  --set "http_proxy.listen=127.0.0.1:$hp"
wait_for healthy "$admin"; ok $? "the installed default starts"
is "$(http_get "http://127.0.0.1:$admin/readyz" | head -1)" 200 "and is ready"
is "$("$CURL" -s -m 5 --proxy "http://127.0.0.1:$hp" "$url")" served \
  "the HTTP proxy of the default serves"
is "$("$CURL" -s -m 5 --proxy "socks5h://127.0.0.1:$s5" "$url")" served \
  "the SOCKS5 proxy of the default serves"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "stops cleanly"

# ---- every sample is a drop-in ---------------------------------------------
# Copied over the shipped default of the same name (or next to them), into
# the installed layout: proxyhost.ini and conf.d/.
for sample in "$etc"/conf.d/*.ini.sample; do
  name=$(basename "$sample" .ini.sample)
  rm -rf "$T/etc"
  mkdir -p "$T/etc/conf.d"
  cp "$etc/proxyhost.ini" "$T/etc/"
  cp "$etc"/conf.d/*.ini "$T/etc/conf.d/"
  cp "$sample" "$T/etc/conf.d/$name.ini"
  out=$("$ph" -c "$T/etc/proxyhost.ini" --set "$set_mods" --check-config 2>&1); rc=$?
  is "$rc" 0 "conf.d/$name.ini from $name.ini.sample passes --check-config"
  [ "$rc" = 0 ] || printf '# %s\n' "$out"
done

# ---- /readyz with no module loaded -----------------------------------------
rm -f "$T/etc/conf.d/"*.ini
admin=$(free_port)
start_proxyhost "$T/etc/proxyhost.ini" --set "$set_mods" \
  --set "admin.listen=127.0.0.1:$admin"
wait_for healthy "$admin"; ok $? "no drop-ins: the host starts (healthy)"
out=$(http_get "http://127.0.0.1:$admin/readyz")
like "$out" "503" "no modules loaded: /readyz is 503"
like "$out" "no modules loaded: add them to [proxyhost] modules" "and says why"
kill -TERM "$PH_PID"
wait_exit "$PH_PID" 10; is "$EXIT" 0 "stops cleanly"

done_testing
