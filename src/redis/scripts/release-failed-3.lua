-- release-failed: a committed refund that Stripe failed (or canceled) for good moved no money in the end (Stripe sent it
-- back to the merchant), so the cents it was counted with are given back to the approval's reserved cents and to the
-- subject's total, as a resolving refusal gives them back (settle-5): the subject's shared cap counts money moved, and
-- the new request the `failed_after_landed` alert advises must find its room. The approval's use stays spent: a new
-- request needs a new approval. Once per effect: the flag `failedReleased` is set in this step, so a redelivered event,
-- a re-read finding the refund failed again, a retried job or two facts jobs at once give nothing back twice. Only a
-- committed effect gives anything back: one never committed holds nothing (a resolving refusal gave it back already),
-- and one whose landing is recorded later (late-5) is committed, and counted, by then.
-- No total goes below zero: a total that holds less than the amount (written by a version that counted otherwise) is
-- brought to zero, never to a negative that would leave more room than its cap.
-- KEYS[1] effect state hash   KEYS[2] approval hash   KEYS[3] subject totals hash
-- ARGV[1] the approval id of KEYS[2]: the one the send is counted on, read from the chain (src/facts/apply.ts countedOn)
-- ARGV[2] the cents it is counted with (the effect's amount)
-- Returns JSON {status}: OK {released, now} | RELEASED (given back before; nothing written) | NOT_COMMITTED (nothing
--   written)
local state = KEYS[1]
local st = redis.call('HMGET', state, 'committed', 'failedReleased')
if st[1] ~= '1' then return reply({ status = 'NOT_COMMITTED' }) end
if st[2] == '1' then return reply({ status = 'RELEASED' }) end
local amount = tonumber(ARGV[2])
local function give_back(key, field)
  local held = tonumber(redis.call('HGET', key, field) or '0') or 0
  if held > 0 then redis.call('HINCRBY', key, field, -math.min(amount, held)) end
end
if redis.call('EXISTS', KEYS[2]) == 1 then give_back(KEYS[2], 'reservedCents') end
give_back(KEYS[3], 'movedCents')
redis.call('HSET', state, 'failedReleased', '1')
return reply({ status = 'OK', released = amount, now = now_ms() })
