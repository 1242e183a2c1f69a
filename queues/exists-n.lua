-- exists: which of n jobs a queue already holds, in one command (the webhook route's duplicate check for the events
-- of one batch; n EXISTS cost the client a command, a promise and a reply each, and a pipeline to carry them).
-- KEYS[1..n] job hashes of one queue (one cluster slot: BullMQ's keys share the queue's hash tag)
-- ARGV none
-- Returns an array of n integers: 1 where KEYS[i] exists, 0 where it does not.
local found = {}
for i, key in ipairs(KEYS) do
  found[i] = redis.call('EXISTS', key)
end
return found
