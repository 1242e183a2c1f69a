-- end-reconcile-pass: the lease holder records where its pass stopped and gives the lease up, in one step, only
-- while the lease is still its own: a process that lost it mid-pass never writes over the cursor of the one that
-- took it over.
-- KEYS[1] lease string   KEYS[2] reconcile cursor hash
-- ARGV[1] token   ARGV[2] position, JSON ('' for none: the next pass starts at the oldest)   ARGV[3] failed re-reads
--   in a row the pass ended on   ARGV[4] Redis ms the pass began   ARGV[5] ms from now before which no pass on the
--   schedule starts (Stripe's Retry-After; 0 for none)
-- Returns JSON {status}: OK {now} | LOST
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return reply({ status = 'LOST' }) end
local now = now_ms()
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[2], 'position')
else
  redis.call('HSET', KEYS[2], 'position', ARGV[2])
end
redis.call('HSET', KEYS[2], 'failedInARow', ARGV[3], 'startedAt', ARGV[4], 'endedAt', now, 'notBefore', tostring(now + tonumber(ARGV[5])))
redis.call('DEL', KEYS[1])
return reply({ status = 'OK', now = now })
