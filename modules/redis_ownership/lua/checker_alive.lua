-- SPDX-License-Identifier: BSD-2-Clause
-- checker_alive: ARGV checker, session, session_ttl_ms (ARGV[2..4]).
-- Renews the session's TTL while it is the checker's current one.
-- Returns {'ok', session_expires_ms, max_concurrency, tiers, zone} or
-- {'stale'} (zone: what the checker registered, '' for none).
local sk = current(ARGV[2], ARGV[3], 'c')
if not sk then
  return {'stale'}
end
local ttl = tonumber(ARGV[4])
redis.call('PEXPIRE', sk, ttl)
local s = redis.call('HMGET', sk, 'max', 'tiers', 'zone')
return {'ok', now_ms() + ttl, tonumber(s[1]) or 0, tonumber(s[2]) or 0,
        s[3] or ''}
