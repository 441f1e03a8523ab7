#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The installed tree (make install DESTDIR=...), issue 9: the daemon under
# sbin, the docs under docdir in the tree's layout, the man pages with the
# configured paths filled in, no build or source directory inside any
# installed file (reproducible builds) and no reference to the design
# documents; its configuration works as shipped (the local proxy from the
# conf.d drop-ins), every module sample is a valid drop-in, and
# --print-config names the drop-in lines.
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
ph="$dest$exec_prefix/sbin/proxyhost"

# ---- no build-tree paths or design-document references in text files -----
builddir=$(cd "$top_builddir" && pwd -P)
srcdir=$(cd "$top_srcdir" && pwd -P)
# The configured prefix may lie under the source tree (distcheck installs
# into SRCDIR/_inst, and the man pages name it): then the bare source
# directory is not searched for, only its build tree.
src_pat=$srcdir
case $prefix in "$srcdir"/*) src_pat="$builddir" ;; esac
for pat in "$builddir" "$src_pat" "SEED-" "../shared"; do
  hits=$(grep -rIl -F -- "$pat" "$dest" 2>/dev/null | sed "s|^$dest||")
  is "$hits" "" "no installed text file contains \"$pat\""
done
# The design documents ("the seed", "the 001 seed's"), as whole words:
# fuzzing's "seeds" (inputs) are another thing.
hits=$(grep -rIl -i -w -F -e "the seed" -e "seed's" -e "001 seed" -e "000 seed" \
  "$dest" 2>/dev/null | sed "s|^$dest||")
is "$hits" "" "no installed text file refers to the design documents"

# mkvar NAME: a fully expanded installation directory of this build.
mkvar() {
  printf 'include Makefile\nph-print-var:\n\t@echo $(%s)\n' "$1" |
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -s --no-print-directory \
      -C "$top_builddir" -f - ph-print-var
}
prefix=$(mkvar prefix)
sbindir=$(mkvar sbindir)
bindir=$(mkvar bindir)
sysconfdir=$(mkvar sysconfdir)
docdir=$(mkvar docdir)
mandir=$(mkvar mandir)
moduledir=$(mkvar moduledir)

[ -x "$dest$sbindir/proxyhost" ]; ok $? "the daemon is $sbindir/proxyhost"
[ ! -e "$dest$bindir/proxyhost" ]; ok $? "and not in $bindir"
if have_auth_local; then
  [ -x "$dest$bindir/proxyhost-passwd" ]; ok $? "proxyhost-passwd is a user command in $bindir"
fi

for d in README.md NEWS.md LICENSE docs/operations.md docs/configuration.md \
  docs/sdk.md docs/testing.md docs/benchmarks.md docs/user-guide/local.md \
  sdk/ABI.md; do
  [ -f "$dest$docdir/$d" ]; ok $? "doc installed: $docdir/$d"
done

# The authorization schema's SQL, for operators (the programs embed it),
# and proxyhost-migrate, built with either store.
pkgdatadir=$(mkvar pkgdatadir)
for f in ddl.sql baseline/v0008.sql incremental/v0008_to_v0009/sqlite.sql \
  incremental/v0008_to_v0009/postgres.sql incremental/v0009_to_v0010/sqlite.sql \
  incremental/v0009_to_v0010/postgres.sql incremental/v0010_to_v0011/sqlite.sql \
  incremental/v0010_to_v0011/postgres.sql README.md; do
  cmp -s "$top_srcdir/migrations/$f" "$dest$pkgdatadir/migrations/$f"
  ok $? "migrations installed: $pkgdatadir/migrations/$f"
done
have_migrate=
[ -x "$top_builddir/tools/proxyhost-migrate" ] && have_migrate=1
if [ -n "$have_migrate" ]; then
  [ -x "$dest$sbindir/proxyhost-migrate" ]; ok $? "proxyhost-migrate is $sbindir/proxyhost-migrate"
  out=$("$dest$sbindir/proxyhost-migrate" --help 2>&1)
  like "$out" "usage: proxyhost-migrate status|plan|apply" "the installed proxyhost-migrate runs"
fi

pages="man8/proxyhost.8 man5/proxyhost.ini.5 man5/proxyhost-modules.5"
have_auth_local && pages="$pages man1/proxyhost-passwd.1"
[ -n "$have_migrate" ] && pages="$pages man8/proxyhost-migrate.8"
for p in $pages; do
  f="$dest$mandir/$p"
  [ -f "$f" ]; ok $? "man page installed: $p"
  ! grep -n '@[a-zA-Z_]*@\|\$(' "$f" >"$T/subst" 2>&1; ok $? "$p: every path filled in"
  sed 's/^/#   /' "$T/subst" | head -5
done
like "$(cat "$dest$mandir/man8/proxyhost.8")" "$sysconfdir/proxyhost/proxyhost.ini" \
  "proxyhost(8) names the configured sysconfdir"
like "$(cat "$dest$mandir/man8/proxyhost.8")" "$moduledir" \
  "proxyhost(8) names the configured module directory"

# No build path in the installed binaries: the build tree, and the source
# tree's own directories (the prefix itself may lie under the source tree,
# as in distcheck, so the bare source directory is not searched for).
abs_src=$(cd "$top_srcdir" && pwd)
abs_build=$(cd "$top_builddir" && pwd)
# Sanitizer builds keep the source file names of their reports in the
# binaries (-ffile-prefix-map does not reach them) and are never shipped:
# there only the build tree is searched for.
pats="$abs_build $abs_src/host $abs_src/modules $abs_src/sdk $abs_src/tools"
what="no build or source path in any installed binary"
if grep -q -e '-fsanitize' "$top_builddir/Makefile"; then
  pats=$abs_build
  what="no build path in any installed binary (a sanitizer build)"
fi
found=
n=0
for f in $(find "$dest" -type f); do
  head -c 4 "$f" | grep -q 'ELF' || continue
  n=$((n + 1))
  for pat in $pats; do
    if grep -qaF "$pat" "$f"; then found="$found ${f#"$dest"}($pat)"; fi
  done
done
[ "$n" -ge 2 ]; ok $? "installed ELF files found ($n)"
is "$found" "" "$what"

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
start_file_server "$T/www" served; ok $? "an HTTP target on 127.0.0.1"
url="http://127.0.0.1:$FILE_SERVER_PORT/hello.txt"
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
