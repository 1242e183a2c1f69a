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
-- ARGV[15] bound at (Redis ms, from bind-4)   ARGV[16] bind window ms   ARGV[17] send deadline (Redis ms)
-- ARGV[18] number of entries n, then n pairs from ARGV[19]: entry hash, stored entry JSON
-- Returns JSON {status}: OK {epoch, claimExpires, sendDeadline, now} | IN_FLIGHT {owner, nonce, claimExpires, sendDeadline}
--   | COMMITTED | AMBIGUOUS | CONFLICTING_PAYLOAD | TARGET_ERROR | EPOCH_MOVED | REBIND
--   | HEAD_MOVED {head, lastAt, now} | BAD_TIME {head, lastAt, now} | TERMS {terms}
--   | LEASE {reason, missing, revoked, revokedAt, reservedCents, uses, now}
--   | OVER_CAP {cap, limit, reserved, reservedCents, uses, now}
local state, approval, subject = KEYS[1], KEYS[3], KEYS[5]
local eid, partition, mode = ARGV[1], ARGV[2], ARGV[5]
-- One read of each hash: this script runs once per effect, and every call into Redis costs.
local st = redis.call('HMGET', state, 'open', 'committed', 'ambiguous', 'payloadHash', 'targetRefused', 'epoch', 'head', 'lastAt', 'owner', 'nonce', 'claimExpires', 'sendDeadline')
if st[1] == '1' then
  return reply({ status = 'IN_FLIGHT', owner = st[9] or '', nonce = st[10] or '', claimExpires = tonumber(st[11] or 0), sendDeadline = tonumber(st[12] or 0) })
end
if st[2] == '1' then return reply({ status = 'COMMITTED' }) end
if st[3] == '1' then return reply({ status = 'AMBIGUOUS' }) end
local bound = st[4] or ''
if bound ~= '' and bound ~= ARGV[6] then return reply({ status = 'CONFLICTING_PAYLOAD' }) end
if st[5] == '1' then return reply({ status = 'TARGET_ERROR' }) end
if tonumber(st[6] or 0) ~= tonumber(ARGV[4]) then return reply({ status = 'EPOCH_MOVED' }) end

local now = now_ms()
local at = tonumber(ARGV[11])
local misplaced = check_place_of(st[7] or '', tonumber(st[8] or 0), ARGV[3], at, tonumber(ARGV[12]), now)
if misplaced then return reply(misplaced) end
if now - tonumber(ARGV[15]) > tonumber(ARGV[16]) then return reply({ status = 'REBIND' }) end

local amount = tonumber(ARGV[10])
local aid = ARGV[13]
local ap = redis.call('HMGET', approval, 'termsSha', 'revoked', 'revokedAt', 'expiresAt', 'scope', 'capCents', 'uses', 'maxUses', 'reservedCents')
local ap_uses, ap_reserved = tonumber(ap[7] or 0), tonumber(ap[9] or 0)
local function lease(reason, missing)
  return reply({ status = 'LEASE', reason = reason, missing = missing, revoked = ap[2] == '1', revokedAt = tonumber(ap[3] or 0),
    reservedCents = ap_reserved, uses = ap_uses, now = now })
end
if not ap[1] then return lease('approval ' .. aid .. ' does not exist', true) end
if ap[1] ~= ARGV[14] then return reply({ status = 'TERMS', terms = hget_str(approval, 'terms') }) end
if ap[2] == '1' then return lease('approval ' .. aid .. ' was revoked', false) end
if tonumber(ap[4] or 0) <= now then return lease('approval ' .. aid .. ' has expired', false) end
if ap[5] ~= partition then return lease('approval ' .. aid .. ' covers ' .. (ap[5] or '?') .. ', not ' .. partition, false) end
local cap = tonumber(ap[6] or 0)
if amount > cap then return lease('approval ' .. aid .. ' covers at most ' .. cap .. ' cents', false) end

local n = tonumber(ARGV[18])
if mode == 'refuse' then
  push_batch(state, KEYS[2], at, 19, n)
  if bound == '' then redis.call('HSET', state, 'payloadHash', ARGV[6]) end
  return reply({ status = 'OK', now = now })
end
if mode ~= 'dispatch' then return redis.error_reply('propose: unknown mode ' .. mode) end

local max_uses = tonumber(ap[8] or 0)
if ap_uses >= max_uses then return lease('approval ' .. aid .. ' has used all ' .. max_uses .. ' of its uses', false) end
if ap_reserved + amount > cap then
  return reply({ status = 'OVER_CAP', cap = 'approval:' .. aid, limit = cap, reserved = ap_reserved,
    reservedCents = ap_reserved, uses = ap_uses, now = now })
end
local sub = redis.call('HMGET', subject, 'limit', 'movedCents', 'name')
local moved = tonumber(sub[2] or 0)
if sub[1] and moved + amount > tonumber(sub[1]) then
  return reply({ status = 'OVER_CAP', cap = sub[3] or '', limit = tonumber(sub[1]), reserved = moved,
    reservedCents = ap_reserved, uses = ap_uses, now = now })
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
redis.call('HINCRBY', approval, 'reservedCents', amount)
redis.call('HINCRBY', approval, 'uses', 1)
redis.call('HINCRBY', subject, 'movedCents', amount)
redis.call('SADD', KEYS[4], eid)
return reply({ status = 'OK', epoch = epoch, claimExpires = claim_expires, sendDeadline = deadline, now = now })
