-- take-over: moves the claim on an open dispatch to a new owner with a fresh fencing epoch. Allowed when the
-- caller already holds it (a restart under the same worker id and nonce), when the claim has expired on the Redis
-- clock, or when the caller proved the holder dead (heartbeat gone or boot nonce changed) and the claim is still
-- exactly the one it inspected. A proven death is recorded once per send: from then on the dead sender can write
-- nothing new, so recovery may count its quiet period from that instant (DESIGN §7, decisions.ts).
-- KEYS[1] effect state hash
-- ARGV[1] expected epoch   ARGV[2] expected holder   ARGV[3] expected holder nonce   ARGV[4] new owner
-- ARGV[5] new owner nonce   ARGV[6] claim TTL ms   ARGV[7] reason: own | expired | owner-dead
-- Returns JSON {status}: OK {epoch, claimExpires, sendDeadline, deathProvenAt, late, unknowns, unknownAt, neverSent, now}
--   | NOT_OPEN
--   | MOVED {epoch, owner} | LIVE {claimExpires, now}
local state = KEYS[1]
if hget_str(state, 'open') ~= '1' then return reply({ status = 'NOT_OPEN' }) end
local epoch = hget_num(state, 'epoch')
local owner = hget_str(state, 'owner')
if epoch ~= tonumber(ARGV[1]) or owner ~= ARGV[2] or hget_str(state, 'nonce') ~= ARGV[3] then
  return reply({ status = 'MOVED', epoch = epoch, owner = owner })
end
local now = now_ms()
local expires = hget_num(state, 'claimExpires')
local reason = ARGV[7]
if reason == 'own' then
  if owner ~= ARGV[4] or hget_str(state, 'nonce') ~= ARGV[5] then return reply({ status = 'MOVED', epoch = epoch, owner = owner }) end
elseif reason == 'expired' then
  if expires > now then return reply({ status = 'LIVE', claimExpires = expires, now = now }) end
elseif reason == 'owner-dead' then
  if hget_str(state, 'deathProvenAt') == '' then redis.call('HSET', state, 'deathProvenAt', now) end
else
  return redis.error_reply('take-over: unknown reason ' .. reason)
end
-- No request of this dispatch left under any claim up to the one taken over (release-claim-1 says why it matters).
local never_sent = hget_str(state, 'unsentThrough') == tostring(epoch)
local claim_expires = now + tonumber(ARGV[6])
redis.call('HSET', state, 'epoch', epoch + 1, 'owner', ARGV[4], 'nonce', ARGV[5], 'claimExpires', claim_expires)
local proven = redis.call('HGET', state, 'deathProvenAt')
return reply({ status = 'OK', epoch = epoch + 1, claimExpires = claim_expires, sendDeadline = hget_num(state, 'sendDeadline'),
  deathProvenAt = proven and tonumber(proven) or cjson.null, late = hget_str(state, 'late'),
  unknowns = hget_num(state, 'unknowns'), unknownAt = hget_num(state, 'unknownAt'), neverSent = never_sent, now = now })
