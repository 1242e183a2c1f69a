-- release-reconcile-lease: a pass that failed (Redis went away mid-pass) gives its lease up without recording where it
-- stood, so the next pass starts where this one did. Only the holder's own token is removed: a lease that lapsed
-- and was taken by another process stays that process's.
-- KEYS[1] lease string
-- ARGV[1] token
-- Returns JSON {status}: RELEASED | NOT_OURS
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return reply({ status = 'NOT_OURS' }) end
redis.call('DEL', KEYS[1])
return reply({ status = 'RELEASED' })
