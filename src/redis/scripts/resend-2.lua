-- resend: the claim holder announces a resend of the recorded payload (no second DISPATCHED is ever written).
-- Only the holder of the current fencing epoch may resend. The send deadline moves to the end of this resend,
-- and the claim is stretched to cover it, so a lookup that finds nothing is only trusted once every send that
-- was ever started for this effect has stopped.
-- KEYS[1] effect state hash   KEYS[2] partition open-dispatch zset
-- A resend that relies on the target's idempotency key must start while the target still remembers the key;
-- the re-check before it takes time, so that is judged here, on the Redis clock, at the last moment.
-- ARGV[1] effect id   ARGV[2] holder   ARGV[3] holder's epoch   ARGV[4] send timeout ms   ARGV[5] claim TTL ms
-- ARGV[6] latest start time in ms for this resend, or 0 for none
-- Returns JSON {status}: OK {sendDeadline, claimExpires} | NOT_OPEN | FENCED {epoch} | TOO_LATE {now}
local state = KEYS[1]
if hget_str(state, 'open') ~= '1' then return reply({ status = 'NOT_OPEN' }) end
if hget_num(state, 'epoch') ~= tonumber(ARGV[3]) or hget_str(state, 'owner') ~= ARGV[2] then
  return reply({ status = 'FENCED', epoch = hget_num(state, 'epoch') })
end
local now = now_ms()
local not_after = tonumber(ARGV[6])
if not_after > 0 and now > not_after then return reply({ status = 'TOO_LATE', now = now }) end
local deadline = math.max(hget_num(state, 'sendDeadline'), now + tonumber(ARGV[4]))
local claim_expires = math.max(hget_num(state, 'claimExpires'), now + tonumber(ARGV[5]))
redis.call('HSET', state, 'sendDeadline', deadline, 'claimExpires', claim_expires)
redis.call('ZADD', KEYS[2], deadline, ARGV[1])
return reply({ status = 'OK', sendDeadline = deadline, claimExpires = claim_expires })
