-- SPDX-License-Identifier: BSD-2-Clause
-- usable: ARGV n, then n proxy ids. A proxy's counts count only when its
-- owner's session, the report's TTL (the counts hash exists), the
-- ownership lease and the report's epoch are valid at once (CP-2-15);
-- otherwise valid is 0 and the capacity is zero available (CP-2-16).
-- Returns {'ok', epoch, owner, valid, active, reserved, ...}.
local now = now_ms()
local epoch = epoch_now()
local res = {'ok', tonumber(epoch)}
local n = tonumber(ARGV[2])
for i = 3, n + 2 do
  local p = ARGV[i]
  local o = redis.call('HMGET', P .. 'owner:' .. p, 'worker', 'until')
  local owner, valid, a, r = o[1] or '', 0, 0, 0
  local c = o[1] and tonumber(o[2]) > now and valid_counts(o[1], 'p:' .. p)
  if c then
    valid = 1
    if c[3] then
      local sa, sr = string.match(c[3], '^(%d+):(%d+):')
      a, r = tonumber(sa), tonumber(sr)
    end
  end
  res[#res + 1] = owner
  res[#res + 1] = valid
  res[#res + 1] = a
  res[#res + 1] = r
end
return res
