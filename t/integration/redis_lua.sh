#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# redis_ownership's Lua scripts under redis-cli --eval, without any C: a
# reader sees the fences work in Redis itself. Each script is
# lua/prelude.lua followed by its own file, exactly what the module loads
# (KEYS[1] the cluster's epoch key, ARGV[1] the key prefix).
. "$top_srcdir/t/lib/testlib.sh"
. "$top_srcdir/t/lib/redis.sh"
require_modules redis_ownership

L="$top_srcdir/modules/redis_ownership/lua"
start_redis "$T/redis" || { ok 1 "redis-server starts"; done_testing; exit 1; }
ok 0 "redis-server starts"

for s in register issue ack runtime outcomes next_version; do
  cat "$L/prelude.lua" "$L/$s.lua" >"$T/$s.lua"
done
P='ph:cp:{lua}:'
E='ph:cp:{lua}:epoch'
# ev SCRIPT ARGS...: the script's reply, one element a line.
ev() {
  _s=$1
  shift
  redis_cli "$T/redis" --eval "$T/$_s.lua" "$E" , "$P" "$@" | tr '\n' ' ' | sed 's/ $//'
}
D1=$(printf 'a%.0s' $(seq 64))
D2=$(printf 'b%.0s' $(seq 64))
CK=$(printf 'c%.0s' $(seq 64))

r=$(ev register w1 i1 za s1 30000 16)
like "$r" "ok 1 0" "CP-1-7, CP-2-1: register answers ok, epoch 1, nothing replaced"
ttl=$(redis_cli "$T/redis" PTTL "${P}w:w1:session")
[ "$ttl" -gt 0 ] && [ "$ttl" -le 30000 ]
ok $? "CP-1-7: the session hash has a server-side TTL ($ttl ms)"
v=$(ev next_version | cut -d' ' -f2)
is "$(ev next_version | cut -d' ' -f2)" "$((v + 1))" "CP-3-1: versions are monotonic"
is "$(ev issue w1 other "$v" 1 "$CK" 8)" "stale" "CP-1-36: issuing for another session fails"
is "$(ev issue w1 s1 "$v" 1 "$CK" 8)" "ok" "CP-1-36: issuing for the current session"
is "$(ev runtime w1 s1 1 "$D1" "$v" 1 30000 15000 30000 0)" "fence_closed" \
  "CP-1-10: no runtime report before a positive ACK"
is "$(ev ack w1 s1 "$v" 1 "$D1" 1)" "not_issued 1" "CP-1-8: an ACK of a triple never issued"
is "$(ev ack w1 s1 "$v" 1 "$CK" 1)" "ok 1" "CP-1-8: the issued triple is accepted"
like "$(ev runtime w1 s1 5 "$D1" "$v" 1 30000 15000 30000 1 p1 2 0 0)" "ok " \
  "CP-2-13: a report on the baseline is accepted"
is "$(redis_cli "$T/redis" HGET "${P}w:w1:counts" p:p1)" "2:0:0" "CP-2-14: the counters as reported"
like "$(ev runtime w1 s1 5 "$D1" "$v" 1 30000 15000 30000 0)" "replay " \
  "CP-2-10: same sequence and digest: a replay"
is "$(redis_cli "$T/redis" HGET "${P}w:w1:counts" p:p1)" "2:0:0" "CP-2-10: ... not applied again"
is "$(ev runtime w1 s1 5 "$D2" "$v" 1 30000 15000 30000 0)" "seq_conflict" \
  "CP-2-10: same sequence, other digest"
is "$(ev runtime w1 s1 4 "$D2" "$v" 1 30000 15000 30000 0)" "seq_smaller" \
  "CP-2-9: a smaller sequence"
is "$(ev runtime w1 s1 6 "$D2" "$((v + 1))" 1 30000 15000 30000 0)" "baseline_mismatch" \
  "CP-2-13: a version ahead of the baseline"
like "$(ev runtime w1 s1 6 "$D2" "$v" 1 30000 15000 30000 0)" "ok " \
  "CP-1-9: an empty report is accepted"
is "$(redis_cli "$T/redis" HGET "${P}w:w1:counts" p:p1)" "" "CP-1-9: ... and every counter is zero"
is "$(ev ack w1 s1 "$v" 1 "$CK" 0)" "ok 1" "CP-1-10: a negative ACK"
is "$(ev runtime w1 s1 7 "$D1" "$v" 1 30000 15000 30000 0)" "fence_closed" \
  "CP-1-10: it closes the runtime fence"
is "$(ev outcomes w1 s1 3 "$D1")" "ok 3" "CP-1-30: an outcome batch"
is "$(ev outcomes w1 s1 3 "$D1")" "replay 3" "CP-5-12: the same batch again"
is "$(ev outcomes w1 s1 3 "$D2")" "seq_conflict 3" "CP-5-13: same sequence, other digest"
is "$(ev outcomes w1 s1 2 "$D2")" "seq_smaller 3" "CP-5-14: a smaller sequence"
like "$(ev register w1 i2 za s2 30000 16)" "ok 1 1" "CP-2-7: re-registering replaces the session"
is "$(ev outcomes w1 s2 1 "$D1")" "ok 1" "CP-5-18: the outcome fence went with the old session"
is "$(redis_cli "$T/redis" EXISTS "${P}w:w1:refs")" "0" "CP-2-7: the issued references went too"
stop_redis "$T/redis"
done_testing
