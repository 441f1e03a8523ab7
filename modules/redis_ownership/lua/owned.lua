-- SPDX-License-Identifier: BSD-2-Clause
-- owned: ARGV worker, session. The worker's ownership index with each
-- lease's expiry (CP-1-16); an entry whose proxy another worker owns now
-- is left out. reclaim is 1 when an extraction waits for the proxy
-- (extract.lua), or a rebalance moves it to another worker (assign.lua,
-- issue 23 item 4): the worker's snapshots mark it draining (CP-4-2).
-- The zone the session registered comes third (the controller's status
-- panel shows it; a string, '' for none).
-- Returns {'ok', epoch, zone, proxy, until, reclaim, ...} or {'stale'}.
local w = ARGV[2]
local sk = current(w, ARGV[3])
if not sk then
  return {'stale'}
end
local res = {'ok', tonumber(epoch_now()), redis.call('HGET', sk, 'zone') or ''}
local idx = redis.call('ZRANGE', wkey(w, 'owned'), 0, -1, 'WITHSCORES')
for i = 1, #idx, 2 do
  if redis.call('HGET', P .. 'owner:' .. idx[i], 'worker') == w then
    res[#res + 1] = idx[i]
    res[#res + 1] = tonumber(idx[i + 1])
    local r = redis.call('SISMEMBER', P .. 'reclaim', idx[i])
    if r == 0 then
      r = redis.call('HEXISTS', P .. 'rebalance', idx[i])
    end
    res[#res + 1] = r
  end
end
return res
