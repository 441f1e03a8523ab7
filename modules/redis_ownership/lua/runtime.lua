-- SPDX-License-Identifier: BSD-2-Clause
-- runtime: ARGV worker, session, sequence, digest_hex, version, epoch,
-- session_ttl_ms, runtime_ttl_ms, lease_ms, n (ARGV[2..11]), then n times
-- (proxy, active, reserved, draining) from ARGV[12].
-- Fence open, version/epoch equal to the ACK baseline (CP-2-13) and the
-- epoch current (CP-2-6); the sequence strictly increases (CP-2-9); the
-- same sequence is a replay only with the same digest (CP-2-10). An
-- accepted report replaces the counters (CP-2-14), which expire after
-- runtime_ttl; it renews the session's TTL (CP-1-9) and the leases of
-- the worker's owned proxies.
-- Returns {'ok'|'replay', session_expires_ms, revoke...} or
-- {'stale'|'fence_closed'|'baseline_mismatch'|'stale_epoch'|
-- 'seq_smaller'|'seq_conflict'}.
local w, sess, seq_s, digest = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local version, epoch = ARGV[6], ARGV[7]
local session_ttl, runtime_ttl = tonumber(ARGV[8]), ARGV[9]
local lease, n = tonumber(ARGV[10]), tonumber(ARGV[11])
local sk = current(w, sess)
if not sk then
  return {'stale'}
end
local s = redis.call('HMGET', sk, 'fence', 'base_version', 'base_epoch',
  'rt_seq', 'rt_digest')
if s[1] ~= '1' then
  return {'fence_closed'}
end
if s[2] ~= version or s[3] ~= epoch then
  return {'baseline_mismatch'}
end
if epoch_now() ~= epoch then
  return {'stale_epoch'}
end
local now = now_ms()
local seq = tonumber(seq_s)
if s[4] then
  local last = tonumber(s[4])
  if seq < last then
    return {'seq_smaller'}
  end
  if seq == last then
    if s[5] == digest then
      return {'replay', now + redis.call('PTTL', sk)}
    end
    return {'seq_conflict'}
  end
end
local ck = wkey(w, 'counts')
redis.call('DEL', ck)
redis.call('HSET', ck, 'm:session', sess, 'm:version', version,
  'm:epoch', epoch, 'm:at', tostring(now))
local i = 12
for _ = 1, n do
  redis.call('HSET', ck, 'p:' .. ARGV[i],
    ARGV[i + 1] .. ':' .. ARGV[i + 2] .. ':' .. ARGV[i + 3])
  i = i + 4
end
redis.call('PEXPIRE', ck, runtime_ttl)
redis.call('HSET', sk, 'rt_seq', seq_s, 'rt_digest', digest)
redis.call('PEXPIRE', sk, session_ttl)
if redis.call('EXISTS', wkey(w, 'refs')) == 1 then
  redis.call('PEXPIRE', wkey(w, 'refs'), session_ttl)
end
local res = {'ok', now + session_ttl}
local owned, lease_until = wkey(w, 'owned'), now + lease
local draining = P .. 'draining'
for _, p in ipairs(redis.call('ZRANGE', owned, 0, -1)) do
  local owner = P .. 'owner:' .. p
  if redis.call('HGET', owner, 'worker') == w then
    redis.call('HSET', owner, 'until', tostring(lease_until))
    redis.call('ZADD', owned, lease_until, p)
    if redis.call('HEXISTS', draining, p) == 1 then
      res[#res + 1] = p
    end
  else
    redis.call('ZREM', owned, p)
  end
end
return res
