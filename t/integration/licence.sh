#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The licence (issue 9): LICENSE is BSD-2-Clause, and every source file
# of the tree (C, shell, Python, the build files, the man pages, the CI
# scripts, debian/rules and the maintainer scripts) names it
# with an SPDX line in its first three lines. Runs on whatever tree it is
# given, so in `make distcheck` it checks what the tarball ships.
. "$top_srcdir/t/lib/testlib.sh"

grep -q '^BSD 2-Clause License$' "$top_srcdir/LICENSE"
ok $? "LICENSE is the BSD 2-Clause licence"

tag='SPDX-License-Identifier: BSD-2-Clause'
# Build directories (_b*, _ci), tool caches and generated or third-party
# build files are not ours (gen: protoc-c's output, which an in-tree
# build writes next to the sources); fuzz seeds are data.
find "$top_srcdir" \
  \( -name '_*' -o -name 'autom4te.cache' -o -name 'build-aux' -o -name m4 \
     -o -name seeds -o -name .git -o -name .deps -o -name .libs \
     -o -path '*/modules/cp_common/proto/gen' \) -prune -o \
  -type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' -o -name '*.lua' \
     -o -name Makefile.am -o -name configure.ac -o -name '*.pc.in' \
     -o -path '*/man/*' -o -path '*/.ci/*' -o -path '*/debian/rules' \
     -o -name '*.postinst' \
     -o -path '*/sdk/examples/*/Makefile' \) -print | sort >"$T/files"
n=$(wc -l <"$T/files")
[ "$n" -ge 150 ]
ok $? "the tree has its source files ($n)"
: >"$T/missing"
while read -r f; do
  head -3 "$f" | grep -qF "$tag" || echo "${f#"$top_srcdir"/}" >>"$T/missing"
done <"$T/files"
sed 's/^/# no SPDX line: /' "$T/missing" | head -20
is "$(wc -l <"$T/missing" | tr -d ' ')" 0 "every source file carries the SPDX line"

done_testing
