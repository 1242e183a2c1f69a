-- dispatch: the one atomic step before a send (I1, I2, I4, I5, I6). Checks, in order: an open dispatch, a
-- commit, an ambiguity, a conflicting payload, a settled refusal by the target, the approval (live,
-- unrevoked, unexpired, uses, covers the amount) and the shared caps; then appends the sealed DISPATCHED,
-- takes the claim with a fresh fencing epoch and a send deadline, reserves the amount on every cap, and
-- indexes the effect as open.
-- KEYS[1] effect state hash          KEYS[2] effect entries list        KEYS[3] partition open-dispatch zset
-- KEYS[4] approval hash              KEYS[5] approval reservations hash (effect id -> cents)
-- KEYS[6] approval open-effects set  KEYS[7] subject cap hash {limit}   KEYS[8] subject cap reservations hash
-- ARGV[1] effect id   ARGV[2] expected chain head   ARGV[3] expected current epoch   ARGV[4] sealed DISPATCHED JSON
-- ARGV[5] payload hash   ARGV[6] claim owner   ARGV[7] owner boot nonce   ARGV[8] claim TTL ms
-- ARGV[9] amount in cents   ARGV[10] max clock skew ms   ARGV[11] approval id
-- Returns JSON {status}: OK {epoch, claimExpires} | IN_FLIGHT {owner, nonce, claimExpires, sendDeadline}
--   | COMMITTED | AMBIGUOUS | CONFLICTING_PAYLOAD | TARGET_ERROR | LEASE {reason} | OVER_CAP {cap, limit, reserved}
--   | HEAD_MOVED | EPOCH_MOVED | BAD_ENTRY {reason} | BAD_TIME {now}
local state = KEYS[1]
local eid = ARGV[1]
if hget_str(state, 'open') == '1' then
  return reply({ status = 'IN_FLIGHT', owner = hget_str(state, 'owner'), nonce = hget_str(state, 'nonce'),
    claimExpires = hget_num(state, 'claimExpires'), sendDeadline = hget_num(state, 'sendDeadline') })
end
if hget_str(state, 'committed') == '1' then return reply({ status = 'COMMITTED' }) end
if hget_str(state, 'ambiguous') == '1' then return reply({ status = 'AMBIGUOUS' }) end
local bound = hget_str(state, 'payloadHash')
if bound ~= '' and bound ~= ARGV[5] then return reply({ status = 'CONFLICTING_PAYLOAD' }) end
if hget_str(state, 'targetRefused') == '1' then return reply({ status = 'TARGET_ERROR' }) end

local now = now_ms()
local amount = tonumber(ARGV[9])
if redis.call('EXISTS', KEYS[4]) == 0 then return reply({ status = 'LEASE', reason = 'approval ' .. ARGV[11] .. ' does not exist' }) end
if hget_str(KEYS[4], 'revoked') == '1' then return reply({ status = 'LEASE', reason = 'approval ' .. ARGV[11] .. ' was revoked' }) end
if hget_num(KEYS[4], 'expiresAt') <= now then return reply({ status = 'LEASE', reason = 'approval ' .. ARGV[11] .. ' has expired' }) end
local cap = hget_num(KEYS[4], 'capCents')
if amount > cap then return reply({ status = 'LEASE', reason = 'approval ' .. ARGV[11] .. ' covers at most ' .. cap .. ' cents' }) end
if redis.call('HLEN', KEYS[5]) >= hget_num(KEYS[4], 'maxUses') then
  return reply({ status = 'LEASE', reason = 'approval ' .. ARGV[11] .. ' has no uses left' })
end
local reserved = sum_values(KEYS[5])
if reserved + amount > cap then return reply({ status = 'OVER_CAP', cap = 'approval:' .. ARGV[11], limit = cap, reserved = reserved }) end
if redis.call('EXISTS', KEYS[7]) == 1 then
  local limit = hget_num(KEYS[7], 'limit')
  local taken = sum_values(KEYS[8])
  if taken + amount > limit then return reply({ status = 'OVER_CAP', cap = hget_str(KEYS[7], 'name'), limit = limit, reserved = taken }) end
end

if hget_num(state, 'epoch') ~= tonumber(ARGV[3]) then return reply({ status = 'EPOCH_MOVED' }) end
local failed = append_entry(state, KEYS[2], eid, ARGV[2], ARGV[4], tonumber(ARGV[10]))
if failed then return reply(failed) end
local entry = cjson.decode(ARGV[4])
local epoch = tonumber(ARGV[3]) + 1
if entry.kind ~= 'DISPATCHED' or tonumber(entry.epoch) ~= epoch or entry.owner ~= ARGV[6] then
  return redis.error_reply('dispatch: entry is not the DISPATCHED this script was asked to write')
end
local claim_expires = now + tonumber(ARGV[8])
redis.call('HSET', state, 'open', '1', 'epoch', epoch, 'owner', ARGV[6], 'nonce', ARGV[7], 'claimExpires', claim_expires,
  'sendDeadline', entry.sendDeadline, 'dispatchedAt', entry.at, 'approvalId', ARGV[11], 'amount', amount)
if bound == '' then redis.call('HSET', state, 'payloadHash', ARGV[5]) end
redis.call('ZADD', KEYS[3], entry.sendDeadline, eid)
redis.call('HSET', KEYS[5], eid, amount)
redis.call('SADD', KEYS[6], eid)
if redis.call('EXISTS', KEYS[7]) == 1 then redis.call('HSET', KEYS[8], eid, amount) end
return reply({ status = 'OK', epoch = epoch, claimExpires = claim_expires })
