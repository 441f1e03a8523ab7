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

for s in register issue ack runtime outcomes next_version checker_register checker_alive; do
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

# Checkers (issue 26): sessions of their own, the outcome fence on them.
like "$(ev checker_register w1 ci za k1 30000 2 4 14)" "ok 1 0" \
  "CP-1-3: a checker registers (its id may equal a worker's)"
ttl=$(redis_cli "$T/redis" PTTL "${P}c:w1:session")
[ "$ttl" -gt 0 ] && [ "$ttl" -le 30000 ]
ok $? "CP-1-3: the checker's session has a server-side TTL ($ttl ms)"
is "$(redis_cli "$T/redis" HGET "${P}w:w1:session" session)" "s2" \
  "CP-1-3: ... kept apart from the worker w1's session"
like "$(ev checker_register c2 ci za k2 30000 2 4 14)" "ok 1 0" "CP-1-3: a second checker"
is "$(ev checker_register c3 ci za k3 30000 2 4 14)" "limit" \
  "CP-1-3: max_checkers (2) live checkers: a third is refused"
redis_cli "$T/redis" DEL "${P}c:c2:session" >/dev/null
like "$(ev checker_register c3 ci za k3 30000 2 4 14)" "ok 1 0" \
  "CP-1-3: ... and takes the place of one whose session expired"
like_re "$(ev checker_alive w1 k1 20000)" "^ok [0-9]+ 4 14 za$" \
  "CP-6-1: checker_alive renews the session and says max_concurrency, tiers and the zone"
is "$(ev checker_alive w1 nope 20000)" "stale" "CP-6-2: checker_alive of another session: stale"
is "$(ev outcomes w1 k1 3 "$D1" c)" "ok 3" "CP-6-2: an observation batch on the checker's session"
is "$(ev outcomes w1 k1 3 "$D1" c)" "replay 3" "CP-6-2: the same batch again: replay"
is "$(ev outcomes w1 k1 3 "$D2" c)" "seq_conflict 3" "CP-6-2: same sequence, other digest"
is "$(ev outcomes w1 k1 2 "$D2" c)" "seq_smaller 3" "CP-6-2: a smaller sequence"
is "$(ev outcomes w1 s2 9 "$D1" c)" "stale" "CP-6-2: a worker's session is no checker session"
is "$(redis_cli "$T/redis" HGET "${P}w:w1:session" out_seq)" "1" \
  "CP-6-2: ... and the worker's outcome fence is untouched"
stop_redis "$T/redis"
done_testing
