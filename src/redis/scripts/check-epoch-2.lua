-- check-epoch: right before a request leaves the process, whether its sender may still send under the claim it
-- holds, judged on Redis's clock: the claim is still its own (open, owner, epoch), neither the claim nor the send
-- deadline has lapsed, and the approval the dispatch reserved on is still live (not revoked, not expired). A process
-- that froze after it dispatched (SIGSTOP, a suspended VM, a long pause: its monotonic clock stood still too, so it
-- cannot tell) wakes refused, whether or not another worker took the claim meanwhile: recovery trusts a lookup that
-- finds nothing once the send deadline plus the settle margin passed, and an approval that lapsed or was revoked
-- while the target read before its write must stop the write (DESIGN §1, §7).
-- KEYS[1] effect state hash   KEYS[2] approval hash (the dispatch's, same partition: same hash slot)
-- ARGV[1] holder   ARGV[2] holder's epoch   ARGV[3] approval id of KEYS[2]
-- Returns JSON {status}: OK {now}
--   | FENCED {reason, now, ...}: reason claim_moved {epoch, owner} | send_deadline {at} | claim_expired {at}
--     | approval_missing | approval_revoked {at} | approval_expired {at}
local state, approval = KEYS[1], KEYS[2]
local st = redis.call('HMGET', state, 'open', 'owner', 'epoch', 'sendDeadline', 'claimExpires', 'approvalId')
local now = now_ms()
if st[1] ~= '1' or st[2] ~= ARGV[1] or tonumber(st[3] or 0) ~= tonumber(ARGV[2]) then
  return reply({ status = 'FENCED', reason = 'claim_moved', epoch = tonumber(st[3] or 0), owner = st[2] or '', now = now })
end
local deadline, expires = tonumber(st[4] or 0), tonumber(st[5] or 0)
if deadline <= now then return reply({ status = 'FENCED', reason = 'send_deadline', at = deadline, now = now }) end
if expires <= now then return reply({ status = 'FENCED', reason = 'claim_expired', at = expires, now = now }) end
if st[6] ~= ARGV[3] then return redis.error_reply('check-epoch: the approval key is not the dispatch\'s') end
local ap = redis.call('HMGET', approval, 'termsSha', 'revoked', 'revokedAt', 'expiresAt')
if not ap[1] then return reply({ status = 'FENCED', reason = 'approval_missing', now = now }) end
if ap[2] == '1' then return reply({ status = 'FENCED', reason = 'approval_revoked', at = tonumber(ap[3] or 0), now = now }) end
local approval_expires = tonumber(ap[4] or 0)
if approval_expires <= now then return reply({ status = 'FENCED', reason = 'approval_expired', at = approval_expires, now = now }) end
return reply({ status = 'OK', now = now })
