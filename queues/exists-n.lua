-- exists: which of n jobs a queue already holds, in one command (the webhook route's duplicate check for the events
-- of one batch; n EXISTS cost the client a command, a promise and a reply each, and a pipeline to carry them), and
-- which of those failed for good (a redelivered event whose job failed is run again, not taken as a duplicate).
-- KEYS[1..n] job hashes of one queue, KEYS[n + 1] the queue's failed set (one cluster slot: BullMQ's keys share the
-- queue's hash tag)
-- ARGV[1..n] the job ids
-- Returns an array of n integers: 0 where KEYS[i] does not exist, 1 where it does, 2 where it does and is failed.
local n = #KEYS - 1
local found = {}
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    found[i] = 0
  elseif redis.call('ZSCORE', KEYS[n + 1], ARGV[i]) then
    found[i] = 2
  else
    found[i] = 1
  end
end
return found
