-- revoke-approval: marks an approval revoked. Ordered against dispatch (same slot, atomic): every effect
-- dispatched before this point and not yet settled is returned, since it may still land; every later dispatch and
-- every resend is refused.
-- KEYS[1] approval hash   KEYS[2] approval open-effects set
-- ARGV[1] who revokes
-- Returns JSON {status}: REVOKED {revokedAt, mayStillLand} | ALREADY {revokedAt, mayStillLand} | UNKNOWN
if redis.call('EXISTS', KEYS[1]) == 0 then return reply({ status = 'UNKNOWN' }) end
local open = redis.call('SMEMBERS', KEYS[2])
if hget_str(KEYS[1], 'revoked') == '1' then
  return reply({ status = 'ALREADY', revokedAt = hget_num(KEYS[1], 'revokedAt'), mayStillLand = open })
end
local now = now_ms()
redis.call('HSET', KEYS[1], 'revoked', '1', 'revokedAt', now, 'revokedBy', ARGV[1])
return reply({ status = 'REVOKED', revokedAt = now, mayStillLand = open })
