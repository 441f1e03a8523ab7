#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# What `make install` puts where: the daemon under sbin, the docs under
# docdir in the tree's layout, the man pages with the configured paths
# filled in, and no build or source directory inside any installed binary
# (reproducible builds).
. "$top_srcdir/t/lib/testlib.sh"

dest="$T/dest"
${MAKE:-make} -C "$top_builddir" install DESTDIR="$dest" >"$T/install.log" 2>&1
ok $? "make install DESTDIR=..."

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

pages="man8/proxyhost.8 man5/proxyhost.ini.5 man5/proxyhost-modules.5"
have_auth_local && pages="$pages man1/proxyhost-passwd.1"
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
found=
n=0
for f in $(find "$dest" -type f); do
  head -c 4 "$f" | grep -q 'ELF' || continue
  n=$((n + 1))
  for pat in "$abs_build" "$abs_src/host" "$abs_src/modules" "$abs_src/sdk" \
    "$abs_src/tools"; do
    if grep -qaF "$pat" "$f"; then found="$found ${f#"$dest"}($pat)"; fi
  done
done
[ "$n" -ge 2 ]; ok $? "installed ELF files found ($n)"
is "$found" "" "no build or source path in any installed binary"

done_testing
