-- set-cap: sets the cap every agent shares on one subject. The subject's running total counts every cent the gate
-- has moved or has in flight on it, whenever the cap was set (issue 6, item 4), so a cap set after spending binds
-- at once. Each cap set counts one more in `capSets`, and writes `capSet`: that count and the call's own token, its
-- proof to replicas (a cap of the same value proves nothing of which call wrote it, nor does a count alone: a master a
-- failover left without this set reaches the same count with the next). A higher count on the master, or the same
-- count under another token, is a cap set after it.
-- Mode 'lower_only' (while Redis is not durable, only a brake is taken): the cap is set only when it is not above the
-- one in force (any cap lowers a subject with none). Compared in the step that writes, so a cap lowered by another
-- caller just before is never raised back.
-- KEYS[1] subject totals hash
-- ARGV[1] limit in cents   ARGV[2] the cap's name (for refusals)   ARGV[3] this call's token
-- ARGV[4] mode: 'any' | 'lower_only'
-- Returns JSON {status}, numbers as text (as Redis holds them: cjson writes a number with 14 digits, which misstates a
-- cap of 15 or more): OK {movedCents, limit, capSets, capSet} | NOT_LOWER {limit}: the cap in force, below ARGV[1];
-- nothing written
if ARGV[4] == 'lower_only' then
  local current = redis.call('HGET', KEYS[1], 'limit')
  if current and tonumber(ARGV[1]) > tonumber(current) then return reply({ status = 'NOT_LOWER', limit = current }) end
end
local sets = tostring(redis.call('HINCRBY', KEYS[1], 'capSets', 1))
local set = sets .. '.' .. ARGV[3]
redis.call('HSET', KEYS[1], 'limit', ARGV[1], 'name', ARGV[2], 'capSet', set)
return reply({ status = 'OK', movedCents = redis.call('HGET', KEYS[1], 'movedCents') or '0', limit = ARGV[1], capSets = sets, capSet = set })
