#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The benchmark's own tools keep working: phtarget serves, phload counts
# operations and errors right (one process and several), refuses
# meaningless option sets, and t/bench/run.sh produces its tables for
# proxyhost with every operation completed. Only counts are asserted,
# never a rate or a time: performance is measured on demand (make bench),
# not here.
. "$top_srcdir/t/lib/testlib.sh"

LOAD="$top_builddir/t/bench/phload"
TARGET="$top_builddir/t/bench/phtarget"
MODS="$top_builddir/modules"

require_modules socks5 http_proxy direct

# field LINE KEY -> the value of KEY=VALUE in phload's result line
field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

"$TARGET" --listen 127.0.0.1:0 >"$T/target.out" 2>&1 &
PIDS="$PIDS $!"
wait_for grep -q '^port=' "$T/target.out"
ok $? "phtarget listens"
tport=$(sed -n 's/^port=//p' "$T/target.out")

out=$("$LOAD" --mode direct --target "127.0.0.1:$tport" --concurrency 4 \
  --duration 0.3 --warmup 0 --timeout 5)
ok $? "phload direct exits 0 (no error)"
ops=$(field "$out" ops)
[ "${ops:-0}" -gt 0 ]; ok $? "direct: operations completed ($ops)"
is "$(field "$out" errors)" 0 "direct: no errors"
like "$out" "cpu_s=" "the generator reports its own CPU time"

out=$("$LOAD" --mode direct --target "127.0.0.1:$tport" --concurrency 5 \
  --duration 0.3 --warmup 0.1 --timeout 5 --procs 2)
ok $? "phload --procs 2 exits 0"
ops=$(field "$out" ops)
all=$(field "$out" ops_all)
[ "${ops:-0}" -gt 0 ] && [ "$all" -ge "$ops" ]
ok $? "--procs 2: the children's counts are merged ($ops of $all)"
is "$(field "$out" errors)" 0 "--procs 2: no errors"

# Bursts (--rounds): exactly rounds x concurrency operations, each with a
# first-byte time; --sized ends each at its last byte, phload closing.
out=$("$LOAD" --mode direct --target "127.0.0.1:$tport" --rounds 3 \
  --concurrency 4 --gap 0 --response-size 1024 --timeout 5)
ok $? "phload --rounds exits 0"
is "$(field "$out" ops)" 12 "--rounds 3 --concurrency 4: 12 operations"
[ "$(field "$out" ttfb_p95_us)" -gt 0 ]
ok $? "first-byte times are reported ($(field "$out" ttfb_p95_us) us)"
out=$("$LOAD" --mode direct --target "127.0.0.1:$tport" --concurrency 2 \
  --duration 0.2 --warmup 0 --timeout 5 --sized)
ok $? "phload --sized exits 0"
[ "$(field "$out" ops)" -gt 0 ] && [ "$(field "$out" errors)" -eq 0 ]
ok $? "--sized: operations completed, no error"

# Nothing listens on a free port: every operation is a counted error.
dead=$(free_port)
out=$("$LOAD" --mode direct --target "127.0.0.1:$dead" --concurrency 2 \
  --duration 0.2 --warmup 0 --timeout 1 --procs 2)
is "$?" 1 "errors make phload exit 1"
is "$(field "$out" ops)" 0 "a refused connect never counts as an operation"
[ "$(field "$out" err_connect)" -gt 0 ]
ok $? "refused connects are counted as err_connect, summed over the children"

"$LOAD" --mode direct --target "127.0.0.1:$tport" --bulk 0 --procs 2 \
  >/dev/null 2>&1
is "$?" 2 "--procs with --bulk is refused"
"$LOAD" --mode direct --target "127.0.0.1:$tport" --concurrency 1 \
  --procs 2 >/dev/null 2>&1
is "$?" 2 "--procs above --concurrency is refused"

# The whole script on proxyhost alone, shortened; it must list both
# protocols with no error and print every table.
table=$(BENCH_SYSTEMS=proxyhost BENCH_REPEATS=1 BENCH_DURATION=0.3 \
  BENCH_WARMUP=0 BENCH_BULK_SECONDS=0.3 BENCH_CONCURRENCY=4 BENCH_IDLE=20 \
  BENCH_LOAD_PROCS=2 sh "$top_srcdir/t/bench/run.sh" "$top_builddir" 2>"$T/run.err")
ok $? "t/bench/run.sh exits 0"
# The first table's rows end with the errors summed over every run.
for proto in socks5 http; do
  row=$(printf '%s\n' "$table" | grep "^| proxyhost | $proto | [0-9.]* |" | head -1)
  case $row in *" | 0 |") r=0 ;; *) r=1 ;; esac
  ok $r "run.sh: proxyhost $proto measured with no error: $row"
done
like "$table" "CPU per operation at concurrency 4, by process" "the CPU budget table"
held=$(printf '%s\n' "$table" | grep '^| proxyhost | socks5 | 20 |' | wc -l)
is "$held" 1 "the idle streams were all held"
unlike "$table" "Skipped:" "nothing skipped"

done_testing
