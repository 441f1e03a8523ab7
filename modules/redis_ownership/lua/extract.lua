-- SPDX-License-Identifier: BSD-2-Clause
-- extract: ARGV op ('get', 'request' or 'release'), proxy, limit.
-- Exclusive extraction (CP-1-5, CP-4-2..5): P..'extracted' is a hash
-- proxy -> when it was extracted (Unix ms); P..'reclaim' the set of
-- proxies whose extraction waits for their owner to drain them. A proxy in
-- neither is AVAILABLE. Only a proxy without an owner becomes EXTRACTED,
-- here or in assign, in the same step that ends its ownership (CP-4-5).
--  get:     the state;
--  request: EXTRACTED at once without an owner; otherwise RECLAIMING, and
--           the drain mark is set now (assign ends the ownership only on a
--           report made on a snapshot built after it, CP-4-4);
--  release: AVAILABLE again (a pending reclaim is withdrawn, and its
--           drain mark with it, so no runtime answer names the proxy in
--           revoke_proxy_ids any more; a drain the store asks for gets a
--           mark again at the next assign).
-- At most limit proxies are RECLAIMING or EXTRACTED. A request for a proxy
-- whose health (P..'health', health.lua) is SUSPECT (2) or UNHEALTHY (3)
-- changes nothing: only an AVAILABLE proxy (or one without a verdict) is
-- extracted (CP-6-7; the seed's AVAILABLE -> EXTRACTED).
-- Returns {'ok', state, extracted_ms, owner, refused} (state 0 AVAILABLE,
-- 1 RECLAIMING, 2 EXTRACTED; owner '' unless RECLAIMING; refused 0, or the
-- health that refused a request) or {'limit'}.
local op, p, limit = ARGV[2], ARGV[3], tonumber(ARGV[4])
local xkey, rkey = P .. 'extracted', P .. 'reclaim'
if op == 'release' then
  redis.call('HDEL', xkey, p)
  if redis.call('SREM', rkey, p) == 1 then
    redis.call('HDEL', P .. 'draining', p)
  end
  return {'ok', 0, 0, '', 0}
end
local at = redis.call('HGET', xkey, p)
if at then
  return {'ok', 2, tonumber(at), '', 0}
end
local owner = redis.call('HGET', P .. 'owner:' .. p, 'worker') or ''
local reclaiming = redis.call('SISMEMBER', rkey, p) == 1
if op == 'get' then
  if reclaiming then
    return {'ok', 1, 0, owner, 0}
  end
  return {'ok', 0, 0, '', 0}
end
local health = tonumber(redis.call('HGET', P .. 'health', p) or '0')
if not reclaiming and health >= 2 then
  return {'ok', 0, 0, '', health}
end
if not reclaiming and
    redis.call('HLEN', xkey) + redis.call('SCARD', rkey) >= limit then
  return {'limit'}
end
if owner == '' then
  local now = now_ms()
  redis.call('HSET', xkey, p, tostring(now))
  redis.call('SREM', rkey, p)
  return {'ok', 2, now, '', 0}
end
if not reclaiming then
  redis.call('SADD', rkey, p)
  redis.call('HSETNX', P .. 'draining', p, redis.call('GET', P .. 'version') or '0')
end
return {'ok', 1, 0, owner, 0}
