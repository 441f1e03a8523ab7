-- SPDX-License-Identifier: BSD-2-Clause
-- ack: ARGV worker, session, version, epoch, checksum_hex, positive (0/1).
-- Either kind only for a triple this session was issued (CP-1-8: any
-- other triple is rejected; issue 23 item 7: a forged negative ACK must
-- not close the fence). Positive: only the current epoch (CP-2-6), never
-- older than the baseline; it sets the ACK baseline and opens the runtime
-- fence. Negative: closes the fence (CP-1-10), whatever the epoch.
-- Returns {'ok', epoch} or {'stale'|'not_issued'|'stale_epoch'|
-- 'baseline_mismatch', epoch}.
local w = ARGV[2]
local sk = current(w, ARGV[3])
local epoch = epoch_now()
if not sk then
  return {'stale', tonumber(epoch)}
end
local member = ARGV[4] .. ':' .. ARGV[5] .. ':' .. ARGV[6]
if not redis.call('ZSCORE', wkey(w, 'refs'), member) then
  return {'not_issued', tonumber(epoch)}
end
if ARGV[7] ~= '1' then
  redis.call('HSET', sk, 'fence', '0')
  return {'ok', tonumber(epoch)}
end
if ARGV[5] ~= epoch then
  return {'stale_epoch', tonumber(epoch)}
end
local base = redis.call('HGET', sk, 'base_version')
if base and tonumber(ARGV[4]) < tonumber(base) then
  return {'baseline_mismatch', tonumber(epoch)}
end
redis.call('HSET', sk, 'base_version', ARGV[4], 'base_epoch', ARGV[5],
  'base_checksum', ARGV[6], 'fence', '1')
return {'ok', tonumber(epoch)}
