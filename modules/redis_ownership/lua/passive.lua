-- SPDX-License-Identifier: BSD-2-Clause
-- passive: ARGV op, member (ARGV[2..3]). Gateway outcomes that reached a
-- controller which is not the proxies' member, as counters only (issue 26
-- "Several controllers"): P..'passive:'..member is a hash of
-- 'f:'..proxy -> failure units and 's:'..proxy -> success units.
--  'push', member, ttl_ms, limit, then proxy, fail_units, ok_units, ...:
--    adds them (a proxy new to the hash when it holds limit proxies is
--    dropped); the hash lives ttl_ms after this push.
--    Returns {'ok', dropped}.
--  'take', member: reads and deletes the hash in one step.
--    Returns {'ok', proxy, fail_units, ok_units, ...}.
local op, key = ARGV[2], P .. 'passive:' .. ARGV[3]
if op == 'push' then
  local ttl, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
  local dropped = 0
  for i = 6, #ARGV - 2, 3 do
    local id = ARGV[i]
    if redis.call('HEXISTS', key, 'f:' .. id) == 1 or
        redis.call('HLEN', key) < 2 * limit then
      redis.call('HINCRBY', key, 'f:' .. id, tonumber(ARGV[i + 1]))
      redis.call('HINCRBY', key, 's:' .. id, tonumber(ARGV[i + 2]))
    else
      dropped = dropped + 1
    end
  end
  redis.call('PEXPIRE', key, ttl)
  return {'ok', dropped}
end
local all = redis.call('HGETALL', key)
redis.call('DEL', key)
local s = {}
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 's:' then
    s[string.sub(all[i], 3)] = tonumber(all[i + 1])
  end
end
local out = {'ok'}
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'f:' then
    local id = string.sub(all[i], 3)
    out[#out + 1] = id
    out[#out + 1] = tonumber(all[i + 1])
    out[#out + 1] = s[id] or 0
  end
end
return out
