#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The documentation's runnable examples: every fenced block that the line
# "<!-- test -->" directly precedes, in README.md and docs/, runs in a
# scratch directory laid out like the source tree after the README's
# in-tree build (host/, tools/, t/modules/ from the build, conf/ and the
# module samples copied from the source), on loopback only, each block
# within 60 s.
#
# In a block, lines starting with "$ " are commands (a trailing "\"
# continues one); every command must exit 0 (a block shows an intended
# failure with '; echo "exit $?"'). Every other line is expected output and
# must appear as a whole line of the block's output, except "..." and log
# records ("ts=...", whose times differ).
. "$top_srcdir/t/lib/testlib.sh"

docs="README.md docs/configuration.md docs/operations.md docs/sdk.md
  docs/testing.md docs/user-guide/local.md"

# Splits the marked blocks of one file into $T/blocks/FILE-LINE.{cmd,want}.
extract() { # FILE
  awk -v out="$T/blocks" -v file="$1" '
    function flush() { if (name != "") { close(cmd); close(want) } name = "" }
    /^<!-- test -->$/ { marked = NR; next }
    /^ *```/ {
      if (inblock) { inblock = 0; flush(); next }
      if (marked == NR - 1) {
        inblock = 1
        gsub(/[\/.]/, "_", file)
        name = out "/" file "-" NR
        cmd = name ".cmd"; want = name ".want"
        printf "" > cmd; printf "" > want
        cont = 0
      }
      next
    }
    inblock {
      line = $0
      if (cont || line ~ /^\$ /) {
        if (!cont) line = substr(line, 3)
        print line > cmd
        cont = line ~ /\\$/
      } else if (line != "..." && line !~ /^ts=/) {
        print line > want
      }
    }
  ' "$top_srcdir/$1"
}

# The examples use the local proxy's modules.
for m in direct socks5 http_proxy process_metrics; do
  if ! have_module "$m"; then
    skip "the documentation's examples need the module $m"
    done_testing
    exit $?
  fi
done

mkdir -p "$T/blocks"
for f in $docs; do extract "$f"; done
n=$(ls "$T/blocks"/*.cmd 2>/dev/null | wc -l)
[ "$n" -ge 3 ]; ok $? "the docs mark runnable blocks ($n found)"

for cmd in "$T/blocks"/*.cmd; do
  name=$(basename "$cmd" .cmd)
  dir="$T/run-$name"
  mkdir -p "$dir/t/modules" "$dir/modules"
  ln -s "$top_builddir/host" "$dir/host"
  ln -s "$top_builddir/tools" "$dir/tools"
  ln -s "$top_builddir/t/modules/.libs" "$dir/t/modules/.libs"
  cp -R "$top_srcdir/conf" "$dir/conf"
  for s in "$top_srcdir"/modules/*/*.ini.sample; do
    m=$(basename "$(dirname "$s")")
    mkdir -p "$dir/modules/$m"
    cp "$s" "$dir/modules/$m/"
  done
  chmod -R u+w "$dir/conf"
  # One shell runs the block: each command, stopping at the first failure.
  {
    echo 'PATH="$PWD/host:$PWD/tools:$PATH"'
    awk '{
      if (!cont) print "{"
      print
      cont = $0 ~ /\\$/
      if (!cont) print "} || { echo \"doc block: command failed\" >&2; exit 1; }"
    }' "$cmd"
  } >"$dir/block.sh"
  (cd "$dir" && timeout 60 sh ./block.sh >"$dir/out" 2>&1); rc=$?
  is "$rc" 0 "$name: every command succeeds"
  [ "$rc" = 0 ] || sed 's/^/# /' "$dir/out" | tail -20
  missing=
  while IFS= read -r line; do
    grep -qxF -- "$line" "$dir/out" || missing="$missing
$line"
  done <"$T/blocks/$name.want"
  is "$missing" "" "$name: the output shown is the output"
done

done_testing
