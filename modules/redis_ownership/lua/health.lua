-- SPDX-License-Identifier: BSD-2-Clause
-- health: ARGV op ('set' or 'all'), then for set: proxy, state; for all:
-- limit. The pool's health (CP-6-7), written by the controller's reducer
-- alone: P..'health' is a hash proxy -> its verdict (1 AVAILABLE,
-- 2 SUSPECT, 3 UNHEALTHY); a proxy without a field has no verdict.
--  set: one proxy's verdict (0: the field is removed: no verdict, or the
--       proxy left the pool); returns {'ok'};
--  all: every field; returns {'ok', proxy, state, ...}, or {'limit'} when
--       the hash holds more than limit fields.
-- extract.lua reads the same hash: a SUSPECT or UNHEALTHY proxy is not
-- extracted.
local op, hkey = ARGV[2], P .. 'health'
if op == 'set' then
  local p, s = ARGV[3], tonumber(ARGV[4])
  if s == 0 then
    redis.call('HDEL', hkey, p)
  else
    redis.call('HSET', hkey, p, tostring(s))
  end
  return {'ok'}
end
if redis.call('HLEN', hkey) > tonumber(ARGV[3]) then
  return {'limit'}
end
local all = redis.call('HGETALL', hkey)
local out = {'ok'}
for i = 1, #all, 2 do
  out[#out + 1] = all[i]
  out[#out + 1] = tonumber(all[i + 1]) or 0
end
return out
