-- SPDX-License-Identifier: BSD-2-Clause
-- members: ARGV member, lease_ms, limit (ARGV[2..4]). The controllers
-- that schedule checks (issue 26 "Several controllers"): P..'members' is
-- a sorted set member -> the end of its lease (Unix ms, Redis time).
-- Lapsed leases go first; lease_ms > 0 renews member's lease to now +
-- lease_ms, 0 takes member out (a controller without a checker stream).
-- Returns {'ok', lease_end_ms, member, ...} (every live member, by id), or
-- {'limit'} when more than limit other members are live (member is then
-- not added).
local key, me = P .. 'members', ARGV[2]
local lease, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local till = 0
if lease > 0 then
  if not redis.call('ZSCORE', key, me) and redis.call('ZCARD', key) >= limit then
    return {'limit'}
  end
  till = now + lease
  redis.call('ZADD', key, till, me)
  -- the set lives as long as its longest lease
  if redis.call('PTTL', key) < lease then
    redis.call('PEXPIRE', key, lease)
  end
else
  redis.call('ZREM', key, me)
end
local out = {'ok', till}
local live = redis.call('ZRANGE', key, 0, -1)
table.sort(live)
for i = 1, #live do
  out[#out + 1] = live[i]
end
return out
