-- release-claim: the holder gives its claim up early (it will not act before a later instant), so whoever
-- recovers at that instant takes over at once instead of waiting for the claim to lapse.
-- KEYS[1] effect state hash
-- ARGV[1] holder   ARGV[2] holder's epoch
-- Returns JSON {status}: OK | NOT_HELD
local state = KEYS[1]
if hget_str(state, 'open') ~= '1' or hget_str(state, 'owner') ~= ARGV[1] or hget_num(state, 'epoch') ~= tonumber(ARGV[2]) then
  return reply({ status = 'NOT_HELD' })
end
redis.call('HSET', state, 'claimExpires', 0)
return reply({ status = 'OK' })
