#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The shell tests themselves: a wait that can never see a change is a
# check that cannot fail for the right reason. wait_for and wait_long run
# their arguments as the shell expanded them at the call, so in
#   wait_for test "$(count)" -ge 3
# count runs once and the wait re-tests the same number a hundred times
# (gateway_e2e.sh failed under load that way). Such a condition belongs in
# wait_cond '...', which evaluates it afresh on every try.
. "$top_srcdir/t/lib/testlib.sh"

# A call whose condition is a test with a command substitution in it.
stale='(^|[;&|[:space:]])wait_(for|long)[[:space:]]+(test|\[)[[:space:]].*(\$\(|`)'
# (This file holds the pattern's examples: it is not scanned.)
find "$top_srcdir/t" -name '*.sh' -type f ! -name test_scripts.sh | sort >"$T/scripts"
n=$(wc -l <"$T/scripts")
[ "$n" -ge 40 ]
ok $? "the shell tests are there ($n)"
: >"$T/found"
while read -r f; do
  grep -nE "$stale" "$f" | grep -vE '^[0-9]+:[[:space:]]*#' |
    sed "s|^|${f#"$top_srcdir"/}:|" >>"$T/found"
done <"$T/scripts"
[ ! -s "$T/found" ]
ok $? "no wait_for/wait_long condition with a command substitution read once" ||
  sed 's/^/#   /' "$T/found"

# The pattern itself catches what it must and leaves the rest.
printf '%s\n' 'wait_for test "$(grep -c x f)" -ge 3' '  wait_long [ "$(n)" = 1 ]' >"$T/bad.sh"
printf '%s\n' 'wait_for test -s "$f"' 'wait_for healthy "$(eval echo port)"' \
  "wait_cond '[ \"\$(n)\" = 1 ]'" >"$T/good.sh"
is "$(grep -cE "$stale" "$T/bad.sh")" 2 \
  "the check finds both stale forms"
is "$(grep -cE "$stale" "$T/good.sh")" 0 \
  "and none of the fresh ones"

# wait_cond re-reads: a counter file that grows while it waits.
echo 0 >"$T/count"
( for k in 1 2 3; do sleep 0.1; echo "$k" >"$T/count"; done ) &
wait_cond '[ "$(cat "$T/count")" -ge 3 ]'
ok $? "wait_cond sees a value that changes while it waits"
wait
done_testing
