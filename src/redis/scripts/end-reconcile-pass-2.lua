-- end-reconcile-pass: the lease holder records where its pass stopped and gives the lease up, in one step, only
-- while the lease is still its own: a process that lost it mid-pass never writes over the cursor of the one that
-- took it over. Only a pass that ended records that it ended (`endedAt`, which the reconciler's lag counts from): a
-- pass its process's stop cut short (a start of 0) records where it got to and leaves `endedAt` as the last pass
-- that ended left it, so a deployment whose facts processes keep stopping mid-pass shows its lag growing.
-- A pass that read through to the last effect (ARGV[6]) closes the catch-up window (`catchUpFrom`,
-- take-reconcile-lease-2.lua): the passes since it opened, whichever process ran them, have read all of it. The
-- position is written with the window it was read under (`positionWindow`: the window's start, '' for none, a space,
-- the position), which the version before never writes: while a window is open, the passes go on only from a
-- position a pass of that window wrote.
-- KEYS[1] lease string   KEYS[2] reconcile cursor hash
-- ARGV[1] token   ARGV[2] position, JSON ('' for none: the next pass starts at the oldest)   ARGV[3] failed re-reads
--   in a row the pass ended on   ARGV[4] Redis ms the pass began, '0' for a pass cut short (it did not end)
--   ARGV[5] ms from now before which no pass on the schedule starts (Stripe's Retry-After; 0 for none)
--   ARGV[6] '1' when the pass read through to the last effect, '0' otherwise
-- Returns JSON {status}: OK {now} | LOST
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return reply({ status = 'LOST' }) end
local now = now_ms()
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[2], 'position')
else
  redis.call('HSET', KEYS[2], 'position', ARGV[2])
end
redis.call('HSET', KEYS[2], 'failedInARow', ARGV[3], 'startedAt', ARGV[4], 'notBefore', tostring(now + tonumber(ARGV[5])))
if tonumber(ARGV[4]) ~= 0 then redis.call('HSET', KEYS[2], 'endedAt', now) end
if ARGV[6] == '1' then redis.call('HDEL', KEYS[2], 'catchUpFrom') end
redis.call('HSET', KEYS[2], 'positionWindow', hget_str(KEYS[2], 'catchUpFrom') .. ' ' .. ARGV[2])
redis.call('DEL', KEYS[1])
return reply({ status = 'OK', now = now })
