-- SPDX-License-Identifier: BSD-2-Clause
-- The prelude of every redis_ownership script (prepended at build time).
-- KEYS[1] is the cluster's epoch key, ph:cp:{<cluster>}:epoch: every key a
-- script touches shares its {<cluster>} hash tag, so one script touches
-- one Redis Cluster slot. ARGV[1] is the prefix ph:cp:{<cluster>}:.
-- Time is Redis server time only (CP-2-12).
local P = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A key of worker (kind 'w') or checker (kind 'c') id: their sessions and
-- fences live apart, so a checker id may equal a worker id.
local function rkey(kind, id, what)
  return P .. kind .. ':' .. id .. ':' .. what
end
local function wkey(w, what)
  return rkey('w', w, what)
end
-- The session hash's key when session is the current session of worker
-- w (kind nil or 'w') or of checker w (kind 'c').
local function current(w, session, kind)
  local k = rkey(kind or 'w', w, 'session')
  if redis.call('HGET', k, 'session') == session then
    return k
  end
  return nil
end
local function epoch_now()
  local e = redis.call('GET', KEYS[1])
  if not e then
    redis.call('SET', KEYS[1], '1')
    e = '1'
  end
  return e
end
-- Fields of worker w's runtime counts (HMGET of its counts hash, the
-- names given) only while they count (CP-2-15): the report of w's
-- current session, not expired (runtime_ttl: the hash exists), made on
-- the current epoch; nil otherwise, which a caller must read as unknown,
-- never as idle (CP-2-16). The ownership's lease is the caller's check.
local function valid_counts(w, ...)
  local sess = redis.call('HGET', wkey(w, 'session'), 'session')
  if not sess then
    return nil
  end
  local c = redis.call('HMGET', wkey(w, 'counts'), 'm:session', 'm:epoch', ...)
  if c[1] ~= sess or c[2] ~= epoch_now() then
    return nil
  end
  return c
end
