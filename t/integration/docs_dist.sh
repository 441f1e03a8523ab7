#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The documents ship: every relative link in the README and the docs
# resolves to a file of this tree (distcheck runs this from the tarball,
# so a document left out of the dist fails here), and in a git checkout
# every tracked document is listed in Makefile.am.
. "$top_srcdir/t/lib/testlib.sh"

cd "$top_srcdir" || exit 1
broken=
n=0
for doc in README.md NEWS.md docs/*.md docs/*/*.md sdk/ABI.md; do
  [ -f "$doc" ] || { broken="$broken $doc(missing)"; continue; }
  dir=$(dirname "$doc")
  for link in $(grep -o '](\([^)#: ]*\)' "$doc" | sed 's/^](//'); do
    n=$((n + 1))
    [ -e "$dir/$link" ] || broken="$broken $doc->$link"
  done
done
[ "$n" -gt 10 ]; ok $? "links found ($n)"
is "$broken" "" "every relative link of the docs resolves in this tree"

if [ -e .git ] && command -v git >/dev/null 2>&1 &&
  git ls-files >/dev/null 2>&1; then
  unlisted=
  # Makefile.am and the fragments it includes (the TunnelMesh parts'
  # local.mk files list their own documents).
  mk="Makefile.am $(sed -n 's/^include \$(srcdir)\///p' Makefile.am)"
  for f in $(git ls-files '*.md' LICENSE 'man/*'); do
    # shellcheck disable=SC2086 # $mk is a list of files
    grep -qF "$f" $mk || unlisted="$unlisted $f"
  done
  is "$unlisted" "" "every tracked document is in Makefile.am (installed or shipped)"
else
  skip "not a git checkout (a tarball): Makefile.am listing not checked"
fi
done_testing
