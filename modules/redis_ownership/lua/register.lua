-- SPDX-License-Identifier: BSD-2-Clause
-- register: ARGV worker, instance, zone, session, session_ttl_ms,
-- max_workers (ARGV[2..7]). Replaces any session of the worker and clears
-- its issued references, ACK baseline, runtime counters and the runtime
-- and outcome fences (CP-2-7, CP-5-18: they live in the session hash or
-- die with it). Ownership stays with the worker id.
-- Returns {'ok', epoch, replaced, session_expires_ms} or {'limit'}.
local w, ttl = ARGV[2], tonumber(ARGV[6])
local workers = P .. 'workers'
if not redis.call('ZSCORE', workers, w) and
    redis.call('ZCARD', workers) >= tonumber(ARGV[7]) then
  return {'limit'}
end
local now = now_ms()
local sk = wkey(w, 'session')
local replaced = redis.call('EXISTS', sk)
redis.call('DEL', sk, wkey(w, 'refs'), wkey(w, 'counts'))
redis.call('HSET', sk, 'session', ARGV[5], 'instance', ARGV[3],
  'zone', ARGV[4], 'fence', '0', 'registered_ms', tostring(now))
redis.call('PEXPIRE', sk, ttl)
redis.call('ZADD', workers, now, w)
return {'ok', tonumber(epoch_now()), replaced, now + ttl}
