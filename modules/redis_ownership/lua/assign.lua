-- SPDX-License-Identifier: BSD-2-Clause
-- assign: ARGV lease_ms, max_owned, hold_ms, rebalance_max, n, then n
-- times (proxy, capacity, zone), then m, then m draining (or removed)
-- proxy ids.
-- One proxy, one owner (CP-4-1): P..'owner:<proxy>' is a hash {worker,
-- until}; each worker's index P..'w:<worker>:owned' (a sorted set scored
-- by lease expiry) mirrors it and is written in the same step.
--  1. an ownership ends when its lease expired, whatever its worker's
--     session does (CP-4-6; issue 22 item 13): accepted runtime reports
--     renew the lease, and a worker that registers again and again without
--     ACKing or reporting keeps a live session but no lease; a proxy so
--     lapsed goes to another worker in 3 when one can take it;
--  2. a draining proxy's ownership ends when its owner's current report,
--     made on a snapshot version above the one current when the proxy
--     began draining and on the current epoch (CP-2-15: valid_counts),
--     shows active and reserved zero (CP-4-4);
--  3. a usable proxy without an owner goes to a live worker: one in its
--     zone first, then any; the least owned capacity first; at most
--     max_owned each (CP-1-16);
--     but none while the fresh-state hold lasts (below);
--  4. rebalancing (issue 23 item 4): while a live worker that reports on
--     the current epoch could take an owned proxy and still own less
--     capacity than its owner would keep, the proxy is moved through the
--     drain: P..'rebalance' (proxy -> the worker it goes to) marks it, its
--     owner's snapshots deliver it draining (owned.lua) and 2 ends the
--     ownership once it is idle (or 1 once its lease lapsed); 3 then gives
--     it, in that same step, to that worker. Never two owners; at most
--     rebalance_max proxies move at once (0: none);
--  5. the epoch rises when anything changed.
-- Extraction (extract.lua, CP-4-2..5): a RECLAIMING proxy (P..'reclaim')
-- drains as in 2 and, once it has no owner (2, or a crashed owner's
-- lapse in 1), becomes EXTRACTED in this same step; neither a RECLAIMING
-- nor an EXTRACTED proxy is given to anyone in 3.
-- The fresh-state hold (CP-4-1): Redis without P..'assign_from' has lost
-- the cluster's state or never had it. A gateway may still use an
-- ownership it forgot, at most until that lease ends: at most one lease
-- from now. So assign_from is set to now + hold_ms (one lease, or 0 when
-- the operator says Redis cannot lose writes) and no proxy is given
-- before it; ownerships Redis still knows are kept and released as usual.
-- Returns {'ok', epoch, assigned, released, extracted, moving, limited,
-- reclaiming_now, extracted_now}: moving, the proxies newly marked in 4;
-- limited 1 when rebalance_max held a move back; the last two, how many
-- proxies are RECLAIMING and EXTRACTED after this step (the controller's
-- status panel: extractions in progress).
local now = now_ms()
local lease, max_owned = tonumber(ARGV[2]), tonumber(ARGV[3])
local rebalance_max = tonumber(ARGV[5])
local from = redis.call('GET', P .. 'assign_from')
if not from then
  from = tostring(now + tonumber(ARGV[4]))
  redis.call('SET', P .. 'assign_from', from)
end
local held = now < tonumber(from)
local workers_key = P .. 'workers'
local live, names = {}, {}
for _, w in ipairs(redis.call('ZRANGE', workers_key, 0, -1)) do
  local s = redis.call('HMGET', wkey(w, 'session'), 'session', 'zone')
  local n = redis.call('ZCARD', wkey(w, 'owned'))
  if s[1] then
    live[w] = {session = s[1], zone = s[2] or '', cap = 0, n = n}
  elseif n == 0 then
    redis.call('ZREM', workers_key, w)
  end
  names[#names + 1] = w
end
local assigned, released = 0, 0
local lapsed = {} -- proxy -> the worker whose lease on it ended now
local function release(p, w)
  redis.call('DEL', P .. 'owner:' .. p)
  redis.call('ZREM', wkey(w, 'owned'), p)
  if live[w] then
    live[w].n = live[w].n - 1
  end
  released = released + 1
end
local n, i = tonumber(ARGV[6]), 7
local usable, cap_of = {}, {}
for k = 1, n do
  usable[k] = {id = ARGV[i], cap = tonumber(ARGV[i + 1]), zone = ARGV[i + 2]}
  cap_of[ARGV[i]] = tonumber(ARGV[i + 1])
  i = i + 3
end
-- 2. draining: the marks of proxies still draining are kept.
local m = tonumber(ARGV[i])
i = i + 1
local dkey = P .. 'draining'
local old, marks = redis.call('HGETALL', dkey), {}
for k = 1, #old, 2 do
  marks[old[k]] = old[k + 1]
end
redis.call('DEL', dkey)
local version = redis.call('GET', P .. 'version') or '0'
local xkey, rkey, bkey = P .. 'extracted', P .. 'reclaim', P .. 'rebalance'
local reclaim, taken = redis.call('SMEMBERS', rkey), {}
local moving = {} -- proxy -> the worker 4 moves it to
local mv = redis.call('HGETALL', bkey)
for k = 1, #mv, 2 do
  moving[mv[k]] = mv[k + 1]
end
for _, p in ipairs(reclaim) do
  taken[p] = true
end
for _, p in ipairs(redis.call('HKEYS', xkey)) do
  taken[p] = true
end
-- The store's draining ids, then the reclaimed ones not among them.
local drain, listed = {}, {}
for _ = 1, m do
  drain[#drain + 1] = ARGV[i]
  listed[ARGV[i]] = true
  i = i + 1
end
local in_reclaim = {}
for _, p in ipairs(reclaim) do
  in_reclaim[p] = true
  if not listed[p] then
    drain[#drain + 1] = p
  end
end
for p in pairs(moving) do
  if not listed[p] and not in_reclaim[p] then
    drain[#drain + 1] = p
  end
end
for _, p in ipairs(drain) do
  local mark = marks[p] or version
  redis.call('HSET', dkey, p, mark)
  local w = redis.call('HGET', P .. 'owner:' .. p, 'worker')
  if w and live[w] then
    local c = valid_counts(w, 'm:version', 'p:' .. p)
    if c and tonumber(c[3]) > tonumber(mark) then
      local idle = true
      if c[4] then
        local a, r = string.match(c[4], '^(%d+):(%d+):')
        idle = tonumber(a) == 0 and tonumber(r) == 0
      end
      if idle then
        release(p, w)
      end
    end
  end
end
-- 1. every index entry: stale ones dropped, dead ownerships ended, the
-- capacity each live worker owns summed.
for _, w in ipairs(names) do
  local idx = wkey(w, 'owned')
  for _, p in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
    local o = redis.call('HMGET', P .. 'owner:' .. p, 'worker', 'until')
    if o[1] ~= w then
      redis.call('ZREM', idx, p)
      if live[w] then
        live[w].n = live[w].n - 1
      end
    elseif tonumber(o[2]) <= now then
      release(p, w)
      lapsed[p] = w
    elseif live[w] then
      live[w].cap = live[w].cap + (cap_of[p] or 0)
    end
  end
end
-- Reclaimed proxies without an owner now leave the pool (CP-4-5).
local extracted = 0
for _, p in ipairs(reclaim) do
  if redis.call('EXISTS', P .. 'owner:' .. p) == 0 then
    redis.call('HSET', xkey, p, tostring(now))
    redis.call('SREM', rkey, p)
    redis.call('HDEL', dkey, p)
    extracted = extracted + 1
  end
end
-- A move is over once its proxy has no owner (2, or 1): its drain mark
-- goes unless the store or an extraction drains it too.
for p in pairs(moving) do
  if redis.call('EXISTS', P .. 'owner:' .. p) == 0 then
    redis.call('HDEL', bkey, p)
    if not listed[p] and not in_reclaim[p] then
      redis.call('HDEL', dkey, p)
    end
  end
end
-- 3. unowned usable proxies to live workers.
local order = {}
for _, w in ipairs(names) do
  if live[w] then
    order[#order + 1] = w
  end
end
local function pick(zone, same_zone, not_w, only)
  local best
  for _, w in ipairs(order) do
    local l = live[w]
    if w ~= not_w and l.n < max_owned and (not same_zone or l.zone == zone) and
        (not only or only[w]) then
      if not best or l.cap < live[best].cap or
          (l.cap == live[best].cap and l.n < live[best].n) then
        best = w
      end
    end
  end
  return best
end
local lease_until = now + lease
for _, u in ipairs(usable) do
  if not held and not taken[u.id] and
      redis.call('EXISTS', P .. 'owner:' .. u.id) == 0 then
    local x = lapsed[u.id]
    local w = moving[u.id]
    if not (w and live[w] and live[w].n < max_owned) then
      w = (u.zone ~= '' and pick(u.zone, true, x)) or pick(u.zone, false, x)
    end
    if not w and x then
      w = (u.zone ~= '' and pick(u.zone, true)) or pick(u.zone, false)
    end
    if w then
      redis.call('HSET', P .. 'owner:' .. u.id, 'worker', w,
        'until', tostring(lease_until))
      redis.call('ZADD', wkey(w, 'owned'), lease_until, u.id)
      live[w].cap = live[w].cap + u.cap
      live[w].n = live[w].n + 1
      assigned = assigned + 1
    end
  end
end
-- 4. Moves under way count as done; then, while budget lasts, the
-- worker owning the most capacity gives one proxy to the worker 3 would
-- pick for it (only among workers whose report counts now, CP-2-15: none
-- drains towards a stopped one), if that one would still own less than
-- it. Each move lowers the spread, so this ends; moves are never undone.
local function rebalance(pending)
  local zone_of, can_take = {}, {}
  for _, u in ipairs(usable) do
    zone_of[u.id] = u.zone
  end
  for _, w in ipairs(order) do
    can_take[w] = valid_counts(w) ~= nil
  end
  for p, to in pairs(moving) do
    local o = redis.call('HGET', P .. 'owner:' .. p, 'worker')
    if o and o ~= to and live[o] and live[to] and cap_of[p] then
      live[o].cap, live[o].n = live[o].cap - cap_of[p], live[o].n - 1
      live[to].cap, live[to].n = live[to].cap + cap_of[p], live[to].n + 1
    end
  end
  local budget = rebalance_max - pending
  for _ = 0, rebalance_max do
    local from
    for _, w in ipairs(order) do
      if not from or live[w].cap > live[from].cap then
        from = w
      end
    end
    if not from then
      return rebalance_max - pending - budget, 0
    end
    local f, moved = live[from], false
    -- The owner is always a home for its own proxies, whether or not its
    -- report counts now: a proxy moves only to a better home than staying.
    local took = can_take[from]
    can_take[from] = true
    for _, p in ipairs(redis.call('ZRANGE', wkey(from, 'owned'), 0, -1)) do
      local c, z = cap_of[p], zone_of[p]
      if c and not taken[p] and not moving[p] and not listed[p] then
        f.cap, f.n = f.cap - c, f.n - 1
        local w = (z ~= '' and pick(z, true, nil, can_take)) or
          pick(z, false, nil, can_take)
        f.cap, f.n = f.cap + c, f.n + 1
        if w and w ~= from and live[w].cap + c < f.cap then
          if budget <= 0 then
            return rebalance_max - pending - budget, 1
          end
          redis.call('HSET', bkey, p, w)
          redis.call('HSETNX', dkey, p, version)
          moving[p] = w
          f.cap, f.n = f.cap - c, f.n - 1
          live[w].cap, live[w].n = live[w].cap + c, live[w].n + 1
          budget = budget - 1
          moved = true
          break
        end
      end
    end
    can_take[from] = took
    if not moved then
      break
    end
  end
  return rebalance_max - pending - budget, 0
end
local marked, limited = 0, 0
if not held and rebalance_max > 0 then
  marked, limited = rebalance(redis.call('HLEN', bkey))
end
local epoch = epoch_now()
if assigned + released > 0 then
  epoch = tostring(redis.call('INCR', KEYS[1]))
end
return {'ok', tonumber(epoch), assigned, released, extracted, marked, limited,
        redis.call('SCARD', rkey), redis.call('HLEN', xkey)}
