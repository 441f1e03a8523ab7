-- SPDX-License-Identifier: BSD-2-Clause
-- checker_register: ARGV checker, instance, zone, session, session_ttl_ms,
-- max_checkers, max_concurrency, tiers (ARGV[2..9]). Makes session the
-- checker's only session (server-side TTL, like a worker's; its
-- observation fence lives in the session hash and dies with it). A new
-- checker is refused when max_checkers others hold a live session (the
-- index forgets checkers whose session expired, at most max_checkers + 1
-- looked at).
-- Returns {'ok', epoch, replaced, session_expires_ms} or {'limit'}.
local c, ttl, max = ARGV[2], tonumber(ARGV[6]), tonumber(ARGV[7])
local checkers = P .. 'checkers'
if not redis.call('ZSCORE', checkers, c) then
  for _, o in ipairs(redis.call('ZRANGE', checkers, 0, max)) do
    if redis.call('EXISTS', rkey('c', o, 'session')) == 0 then
      redis.call('ZREM', checkers, o)
    end
  end
  if redis.call('ZCARD', checkers) >= max then
    return {'limit'}
  end
end
local now = now_ms()
local sk = rkey('c', c, 'session')
local replaced = redis.call('EXISTS', sk)
redis.call('DEL', sk)
redis.call('HSET', sk, 'session', ARGV[5], 'instance', ARGV[3],
  'zone', ARGV[4], 'max', ARGV[8], 'tiers', ARGV[9],
  'registered_ms', tostring(now))
redis.call('PEXPIRE', sk, ttl)
redis.call('ZADD', checkers, now, c)
return {'ok', tonumber(epoch_now()), replaced, now + ttl}
