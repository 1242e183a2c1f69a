-- settle: closes an open dispatch with COMMITTED, AMBIGUOUS or a resolving REFUSED, only for the holder of the
-- current fencing epoch. A resolving REFUSED gives the amount and the use back to the approval and the subject, and
-- what the effect held on the subject to be sent once (a credit's incident) (nothing landed); COMMITTED and AMBIGUOUS
-- keep them (money moved, or may have).
-- KEYS[1] effect state hash   KEYS[2] effect entries list   KEYS[3] approval hash
-- KEYS[4] approval open-effects set   KEYS[5] subject totals hash (also lists the subject's committed effects)
-- ARGV[1] effect id   ARGV[2] expected chain head   ARGV[3] the caller's epoch   ARGV[4] kind: COMMITTED | AMBIGUOUS | REFUSED
-- ARGV[5] refusal code ('' unless REFUSED)   ARGV[6] entry time (Redis ms)   ARGV[7] max clock skew ms
-- ARGV[8] the approval id KEYS[3] belongs to   ARGV[9] entry hash   ARGV[10] stored entry JSON
-- Returns JSON {status}: OK {now, reread} | NOT_OPEN | FENCED {epoch} | HEAD_MOVED {head, lastAt, now} | BAD_TIME {head, lastAt, now}
--   | BAD_ENTRY {reason} | LATE {late}: a landing was reported on the dispatch, so only COMMITTED settles it
-- `reread` is true when a COMMITTED or AMBIGUOUS settles an effect on a subject a payment fact has marked (note-fact-1):
-- that fact found no committed effect to be recorded on, perhaps this one while it was in flight, so the sender
-- re-reads this effect's facts now rather than leave them to the reconciler's next pass.
local state = KEYS[1]
local eid, kind = ARGV[1], ARGV[4]
-- One read of the state: this script runs once per effect, and every call into Redis costs.
local st = redis.call('HMGET', state, 'open', 'epoch', 'approvalId', 'head', 'lastAt', 'amount', 'count', 'once', 'late')
if st[1] ~= '1' then return reply({ status = 'NOT_OPEN' }) end
local epoch = tonumber(st[2] or 0)
if epoch ~= tonumber(ARGV[3]) then return reply({ status = 'FENCED', epoch = epoch }) end
if kind ~= 'COMMITTED' and kind ~= 'AMBIGUOUS' and kind ~= 'REFUSED' then
  return reply({ status = 'BAD_ENTRY', reason = kind .. ' does not settle a dispatch' })
end
if (st[3] or '') ~= ARGV[8] then return reply({ status = 'BAD_ENTRY', reason = 'the approval key is not the one the dispatch reserved on' }) end
-- A landing reported on the open dispatch (late-5: a fenced-out sender's request landed) is the truth about it: the
-- holder commits it. A refusal or an AMBIGUOUS settled now would give the landed amount back to the caps.
if kind ~= 'COMMITTED' and st[9] == 'landed' then return reply({ status = 'LATE', late = 'landed' }) end
local now = now_ms()
local at = tonumber(ARGV[6])
local misplaced = check_place_of(st[4] or '', tonumber(st[5] or 0), ARGV[2], at, tonumber(ARGV[7]), now)
if misplaced then return reply(misplaced) end
local settled = nil
if kind == 'COMMITTED' then settled = { 'committed', '1' } end
if kind == 'AMBIGUOUS' then settled = { 'ambiguous', '1' } end
if kind == 'REFUSED' and ARGV[5] == 'REFUSED:target_error' then settled = { 'targetRefused', '1' } end
push_batch(state, KEYS[2], at, 9, 1, settled, tonumber(st[7] or 0))
-- The claim is over (an absent `open` reads as closed); its fields would only cost memory on every settled effect.
-- `amount` and `approvalId` stay while a landing reported late may have to put the amount back on the approval it
-- was released from (late-5); a committed effect released nothing, is never dispatched again (so its fencing epoch
-- is over too), and late-5 leaves it as it is, so those go with the claim.
-- (`dispatchedAt` and `sends`, no longer written, are claim fields an older version wrote: deleted with the rest.)
local closed = { 'open', 'owner', 'nonce', 'claimExpires', 'deathProvenAt', 'late', 'sendDeadline', 'dispatchedAt', 'sends', 'unknowns', 'unknownAt', 'unsentThrough' }
if kind == 'COMMITTED' then
  closed[#closed + 1] = 'epoch'
  closed[#closed + 1] = 'approvalId'
  closed[#closed + 1] = 'amount'
end
redis.call('HDEL', state, unpack(closed))
-- The subject's committed effects, for facts that name the payment or the customer rather than the effect (a
-- dispute on the charge, a credit note for the customer).
if kind == 'COMMITTED' then redis.call('HSET', KEYS[5], 'e:' .. eid, '1') end
-- A refund that held its payment's refunds landed: a read of the payment shows it from now on (free_refunds).
if kind == 'COMMITTED' and st[8] == 'refunds' then free_refunds(KEYS[5], eid, now) end
if kind == 'REFUSED' then
  move_totals(KEYS[3], KEYS[5], tonumber(st[6] or 0), -1)
  -- Nothing landed: what the effect held on its subject (a credit's incident, propose_effect) is free again.
  if st[8] and redis.call('HGET', KEYS[5], st[8]) == eid then redis.call('HDEL', KEYS[5], st[8]) end
end
redis.call('SREM', KEYS[4], eid)
local reread = kind ~= 'REFUSED' and redis.call('HEXISTS', KEYS[5], 'factAt') == 1
return reply({ status = 'OK', now = now, reread = reread })
