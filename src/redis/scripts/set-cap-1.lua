-- set-cap: sets the cap every agent shares on one subject. The subject's running total counts every cent the gate
-- has moved or has in flight on it, whenever the cap was set (issue 6, item 4), so a cap set after spending binds
-- at once. Each cap set counts one more in `capSets`, and writes `capSet`: that count and the call's own token, its
-- proof to replicas (a cap of the same value proves nothing of which call wrote it, nor does a count alone: a master a
-- failover left without this set reaches the same count with the next). A higher count on the master, or the same
-- count under another token, is a cap set after it.
-- KEYS[1] subject totals hash
-- ARGV[1] limit in cents   ARGV[2] the cap's name (for refusals)   ARGV[3] this call's token
-- Returns JSON {status}: OK {movedCents, limit, capSets, capSet}, all as text (as Redis holds them: cjson writes a
-- number with 14 digits, which misstates a cap of 15 or more)
local sets = tostring(redis.call('HINCRBY', KEYS[1], 'capSets', 1))
local set = sets .. '.' .. ARGV[3]
redis.call('HSET', KEYS[1], 'limit', ARGV[1], 'name', ARGV[2], 'capSet', set)
return reply({ status = 'OK', movedCents = redis.call('HGET', KEYS[1], 'movedCents') or '0', limit = ARGV[1], capSets = sets, capSet = set })
