-- propose: the one atomic step before a send (I1, I2, I4, I5, I6). It appends the batch the worker sealed,
-- PROPOSED, AUTHORIZED and then DISPATCHED (mode "dispatch") or a REFUSED:stale_premise (mode "refuse", for
-- premises the worker found changed; the approval is still judged first, since a dead approval makes the premises
-- moot). Checks, in order: an open dispatch, a commit, an ambiguity, a conflicting payload, a settled refusal by
-- the target, the expected epoch and chain head, the bind window, then the approval (exists, same terms, not
-- revoked, not expired, scoped to this subject, covers the amount, uses left) and the shared caps (the approval's
-- and the subject's running totals). On dispatch it takes the claim with a fresh fencing epoch and a send deadline,
-- and moves the amount onto every total in the same step.
-- KEYS[1] effect state hash   KEYS[2] effect entries list   KEYS[3] approval hash
-- KEYS[4] approval open-effects set   KEYS[5] subject totals hash {movedCents, limit?, name?}
-- ARGV[1] effect id   ARGV[2] partition (the subject)   ARGV[3] expected chain head ('' for none)
-- ARGV[4] expected epoch   ARGV[5] mode: dispatch | refuse   ARGV[6] payload hash   ARGV[7] claim owner
-- ARGV[8] owner boot nonce   ARGV[9] claim TTL ms   ARGV[10] amount in cents   ARGV[11] entry time (Redis ms)
-- ARGV[12] max clock skew ms   ARGV[13] approval id   ARGV[14] sha1 of the approval terms the entries quote
-- ARGV[15] bound at (Redis ms, from bind-3)   ARGV[16] bind window ms   ARGV[17] send deadline (Redis ms)
-- ARGV[18] number of entries n, then n pairs from ARGV[19]: entry hash, stored entry JSON
-- Returns JSON {status}: OK {epoch, claimExpires, sendDeadline, now} | IN_FLIGHT {owner, nonce, claimExpires, sendDeadline}
--   | COMMITTED | AMBIGUOUS | CONFLICTING_PAYLOAD | TARGET_ERROR | EPOCH_MOVED | REBIND
--   | HEAD_MOVED {head, lastAt, now} | BAD_TIME {head, lastAt, now} | TERMS {terms}
--   | LEASE {reason, missing, revoked, revokedAt, reservedCents, uses, now}
--   | OVER_CAP {cap, limit, reserved, reservedCents, uses, now}
local state, approval, subject = KEYS[1], KEYS[3], KEYS[5]
local eid, partition, mode = ARGV[1], ARGV[2], ARGV[5]
if hget_str(state, 'open') == '1' then
  return reply({ status = 'IN_FLIGHT', owner = hget_str(state, 'owner'), nonce = hget_str(state, 'nonce'),
    claimExpires = hget_num(state, 'claimExpires'), sendDeadline = hget_num(state, 'sendDeadline') })
end
if hget_str(state, 'committed') == '1' then return reply({ status = 'COMMITTED' }) end
if hget_str(state, 'ambiguous') == '1' then return reply({ status = 'AMBIGUOUS' }) end
local bound = hget_str(state, 'payloadHash')
if bound ~= '' and bound ~= ARGV[6] then return reply({ status = 'CONFLICTING_PAYLOAD' }) end
if hget_str(state, 'targetRefused') == '1' then return reply({ status = 'TARGET_ERROR' }) end
if hget_num(state, 'epoch') ~= tonumber(ARGV[4]) then return reply({ status = 'EPOCH_MOVED' }) end

local now = now_ms()
local at = tonumber(ARGV[11])
local misplaced = check_place(state, ARGV[3], at, tonumber(ARGV[12]), now)
if misplaced then return reply(misplaced) end
if now - tonumber(ARGV[15]) > tonumber(ARGV[16]) then return reply({ status = 'REBIND' }) end

local amount = tonumber(ARGV[10])
local aid = ARGV[13]
local function lease(reason, missing)
  return reply({ status = 'LEASE', reason = reason, missing = missing, revoked = hget_str(approval, 'revoked') == '1',
    revokedAt = hget_num(approval, 'revokedAt'), reservedCents = hget_num(approval, 'reservedCents'),
    uses = hget_num(approval, 'uses'), now = now })
end
if redis.call('EXISTS', approval) == 0 then return lease('approval ' .. aid .. ' does not exist', true) end
if hget_str(approval, 'termsSha') ~= ARGV[14] then return reply({ status = 'TERMS', terms = hget_str(approval, 'terms') }) end
if hget_str(approval, 'revoked') == '1' then return lease('approval ' .. aid .. ' was revoked', false) end
if hget_num(approval, 'expiresAt') <= now then return lease('approval ' .. aid .. ' has expired', false) end
if hget_str(approval, 'scope') ~= partition then return lease('approval ' .. aid .. ' covers ' .. hget_str(approval, 'scope') .. ', not ' .. partition, false) end
local cap = hget_num(approval, 'capCents')
if amount > cap then return lease('approval ' .. aid .. ' covers at most ' .. cap .. ' cents', false) end

local n = tonumber(ARGV[18])
if mode == 'refuse' then
  push_batch(state, KEYS[2], at, 19, n)
  if bound == '' then redis.call('HSET', state, 'payloadHash', ARGV[6]) end
  return reply({ status = 'OK', now = now })
end
if mode ~= 'dispatch' then return redis.error_reply('propose: unknown mode ' .. mode) end

if hget_num(approval, 'uses') >= hget_num(approval, 'maxUses') then return lease('approval ' .. aid .. ' has used all ' .. hget_num(approval, 'maxUses') .. ' of its uses', false) end
local reserved = hget_num(approval, 'reservedCents')
if reserved + amount > cap then
  return reply({ status = 'OVER_CAP', cap = 'approval:' .. aid, limit = cap, reserved = reserved,
    reservedCents = reserved, uses = hget_num(approval, 'uses'), now = now })
end
local limit = redis.call('HGET', subject, 'limit')
local moved = hget_num(subject, 'movedCents')
if limit and moved + amount > tonumber(limit) then
  return reply({ status = 'OVER_CAP', cap = hget_str(subject, 'name'), limit = tonumber(limit), reserved = moved,
    reservedCents = reserved, uses = hget_num(approval, 'uses'), now = now })
end

push_batch(state, KEYS[2], at, 19, n)
local epoch = tonumber(ARGV[4]) + 1
local claim_expires = now + tonumber(ARGV[9])
-- The worker started its stopwatch before this script ran, so now + timeout is never earlier than its abort;
-- the deadline recovery counts from is the later of that and the one the entry records.
local deadline = math.max(tonumber(ARGV[17]), now + tonumber(ARGV[17]) - at)
redis.call('HSET', state, 'open', '1', 'epoch', epoch, 'owner', ARGV[7], 'nonce', ARGV[8], 'claimExpires', claim_expires,
  'sendDeadline', deadline, 'dispatchedAt', at, 'approvalId', aid, 'amount', amount, 'sends', 1)
redis.call('HDEL', state, 'deathProvenAt', 'late')
if bound == '' then redis.call('HSET', state, 'payloadHash', ARGV[6]) end
move_totals(approval, subject, amount, 1)
redis.call('SADD', KEYS[4], eid)
return reply({ status = 'OK', epoch = epoch, claimExpires = claim_expires, sendDeadline = deadline, now = now })
