-- SPDX-License-Identifier: BSD-2-Clause
-- outcomes: ARGV worker, session, sequence, digest_hex[, kind]. The
-- (session, sequence, SHA-256) fence of outcome batches (CP-1-30,
-- CP-5-11..14), and with kind 'c' of a checker's observation batches
-- (script "observations": the same text, CP-6-2).
-- Only one sequence and one digest per session, in the session hash, so
-- they go with it (CP-1-31, CP-5-18: no TTL of their own).
-- Returns {'ok'|'replay'|'seq_smaller'|'seq_conflict', last_sequence} or
-- {'stale'}.
local sk = current(ARGV[2], ARGV[3], ARGV[6])
if not sk then
  return {'stale'}
end
local seq = tonumber(ARGV[4])
local s = redis.call('HMGET', sk, 'out_seq', 'out_digest')
if s[1] then
  local last = tonumber(s[1])
  if seq < last then
    return {'seq_smaller', last}
  end
  if seq == last then
    if s[2] == ARGV[5] then
      return {'replay', last}
    end
    return {'seq_conflict', last}
  end
end
redis.call('HSET', sk, 'out_seq', ARGV[4], 'out_digest', ARGV[5])
return {'ok', seq}
