-- mark-unknown: a request of the open dispatch left and the target gave no definite answer (a 5xx, a timeout, a
-- dropped connection). Stripe stores the first answer under the idempotency key, a 500 included, and replays it to
-- every later request with that key for 24 h (reference/stripe-facts.md §3), so from now on recovery looks the
-- effect up before it resends under the key, and spaces its resends by the number of such answers (decisions.ts,
-- planRecovery). Any sender of the open dispatch may record it, holder or not: it is a fact about the key, and it only
-- ever makes recovery look before it sends. Kept until the dispatch is settled (settle-5 drops it with the claim).
-- KEYS[1] effect state hash
-- ARGV none
-- Returns JSON {status}: OK {unknowns, now} | NOT_OPEN
local state = KEYS[1]
if hget_str(state, 'open') ~= '1' then return reply({ status = 'NOT_OPEN' }) end
local now = now_ms()
local unknowns = redis.call('HINCRBY', state, 'unknowns', 1)
redis.call('HSET', state, 'unknownAt', now)
return reply({ status = 'OK', unknowns = unknowns, now = now })
