-- SPDX-License-Identifier: BSD-2-Clause
-- issue: ARGV worker, session, version, epoch, checksum_hex, max_refs.
-- Records an issued snapshot reference only while the session is current
-- (CP-1-36, CP-2-8). The set is bounded: the oldest versions go first.
-- It lives as long as the session (same TTL). Returns {'ok'} or {'stale'}.
local w = ARGV[2]
local sk = current(w, ARGV[3])
if not sk then
  return {'stale'}
end
local rk = wkey(w, 'refs')
redis.call('ZADD', rk, ARGV[4], ARGV[4] .. ':' .. ARGV[5] .. ':' .. ARGV[6])
local n, max = redis.call('ZCARD', rk), tonumber(ARGV[7])
if n > max then
  redis.call('ZREMRANGEBYRANK', rk, 0, n - max - 1)
end
local ttl = redis.call('PTTL', sk)
if ttl > 0 then
  redis.call('PEXPIRE', rk, ttl)
end
return {'ok'}
