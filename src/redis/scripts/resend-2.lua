-- resend: the claim holder announces a resend of the recorded payload (no second DISPATCHED is ever written).
-- Only the holder of the current fencing epoch may resend, only while the approval is still live (I4: the
-- re-check before it took time, and a revoke or an expiry during it must stop the resend, issue 6 item 2), and
-- never after a fenced-out sender reported a definite answer (item 7). A resend that relies on the target's
-- idempotency key must start while the target still remembers the key, judged here on the Redis clock. The send
-- deadline moves to the end of this resend and the claim is stretched to cover it, so a lookup that finds nothing
-- is only trusted once every send that was ever started for this effect has stopped.
-- KEYS[1] effect state hash   KEYS[2] approval hash
-- ARGV[1] effect id   ARGV[2] holder   ARGV[3] holder's epoch   ARGV[4] send timeout ms   ARGV[5] claim TTL ms
-- ARGV[6] latest start time in ms for this resend, or 0 for none   ARGV[7] approval id of KEYS[2]
-- ARGV[8] when the re-check's premise read began (Redis ms, a lower bound; 0 for not known)
-- ARGV[9] the oldest that read may be (ms, PREMISE_MAX_AGE_MS): a resend is sent on the facts it read, as a dispatch is
-- Returns JSON {status}: OK {sendDeadline, claimExpires, now} | NOT_OPEN | FENCED {epoch} | TOO_LATE {now}
--   | LEASE {reason, revoked, revokedAt, now} | LATE {late} | STALE_READ {readFrom, now}: the read began more than
--   ARGV[9] ms ago (or is not dated: 0, or later than Redis's time); nothing is written
local state, approval = KEYS[1], KEYS[2]
if hget_str(state, 'open') ~= '1' then return reply({ status = 'NOT_OPEN' }) end
if hget_num(state, 'epoch') ~= tonumber(ARGV[3]) or hget_str(state, 'owner') ~= ARGV[2] then
  return reply({ status = 'FENCED', epoch = hget_num(state, 'epoch') })
end
local late = hget_str(state, 'late')
if late ~= '' then return reply({ status = 'LATE', late = late }) end
local now = now_ms()
local aid = ARGV[7]
local function lease(reason)
  return reply({ status = 'LEASE', reason = reason, revoked = hget_str(approval, 'revoked') == '1', revokedAt = hget_num(approval, 'revokedAt'), now = now })
end
if hget_str(state, 'approvalId') ~= aid then return redis.error_reply('resend: the approval key is not the dispatch\'s') end
if redis.call('EXISTS', approval) == 0 then return lease('approval ' .. aid .. ' does not exist') end
if hget_str(approval, 'revoked') == '1' then return lease('approval ' .. aid .. ' was revoked') end
if hget_num(approval, 'expiresAt') <= now then return lease('approval ' .. aid .. ' has expired') end
local not_after = tonumber(ARGV[6])
if not_after > 0 and now > not_after then return reply({ status = 'TOO_LATE', now = now }) end
local read_from = tonumber(ARGV[8])
if read_from <= 0 or read_from > now or now - read_from > tonumber(ARGV[9]) then
  return reply({ status = 'STALE_READ', readFrom = read_from, now = now })
end
local deadline = math.max(hget_num(state, 'sendDeadline'), now + tonumber(ARGV[4]))
local claim_expires = math.max(hget_num(state, 'claimExpires'), now + tonumber(ARGV[5]))
redis.call('HSET', state, 'sendDeadline', deadline, 'claimExpires', claim_expires)
-- A new send starts: a death proven before it says nothing about when this one stops.
redis.call('HDEL', state, 'deathProvenAt')
return reply({ status = 'OK', sendDeadline = deadline, claimExpires = claim_expires, now = now })
