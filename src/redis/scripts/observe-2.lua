-- observe: appends a post-send fact (OBSERVED) to an effect's chain at most once: a Stripe event delivered twice,
-- or a fact re-read that was already recorded, is acknowledged and not written again. The key of a fact is a
-- fingerprint of what it says (object, status, amounts; src/facts/apply.ts): the object is re-read before it is
-- recorded, so a redelivered event, a duplicate and a re-read that finds nothing new append nothing.
-- KEYS[1] effect state hash   KEYS[2] effect entries string
-- ARGV[1] effect id   ARGV[2] expected chain head   ARGV[3] entry time (Redis ms)   ARGV[4] max clock skew ms
-- ARGV[5] the fact's key (its fingerprint)   ARGV[6] entry hash   ARGV[7] stored entry JSON
-- Returns JSON {status}: OK {now} | DUPLICATE | UNKNOWN_EFFECT | HEAD_MOVED {head, lastAt, now} | BAD_TIME {head, lastAt, now}
local state = KEYS[1]
if redis.call('EXISTS', state) == 0 then return reply({ status = 'UNKNOWN_EFFECT' }) end
local seen = 'o:' .. ARGV[5]
if redis.call('HEXISTS', state, seen) == 1 then return reply({ status = 'DUPLICATE' }) end
local now = now_ms()
local at = tonumber(ARGV[3])
local misplaced = check_place(state, ARGV[2], at, tonumber(ARGV[4]), now)
if misplaced then return reply(misplaced) end
push_batch(state, KEYS[2], at, 6, 1)
redis.call('HSET', state, seen, '1')
return reply({ status = 'OK', now = now })
