-- release-claim: the holder gives its claim up early (it will not act before a later instant), so whoever
-- recovers at that instant takes over at once instead of waiting for the claim to lapse. With ARGV[3] the holder
-- says that no request of the dispatch left under its claim: `first` from the dispatching worker (a send held back
-- before it started), `unsent` from a recoverer that sent nothing. `unsentThrough` then says that no request of the
-- dispatch has left through this epoch, so a target that can neither dedupe nor be looked up is sent to, not
-- settled AMBIGUOUS, by the next recoverer (take-over-1 answers `neverSent`). A recoverer extends it only from the
-- epoch right before its own: one that took over after a send may have sent already.
-- With ARGV[4], the claim is released only while the chain's head is that entry: a dispatching worker that lost its
-- step's answer names the DISPATCHED it sealed, so it never speaks for a dispatch another attempt of its own opened
-- (the claim names the worker, not the attempt).
-- KEYS[1] effect state hash
-- ARGV[1] holder   ARGV[2] holder's epoch   ARGV[3] '' | first | unsent   ARGV[4] the head it must be at ('' for any)
-- Returns JSON {status}: OK | NOT_HELD
local state = KEYS[1]
local epoch = tonumber(ARGV[2])
if hget_str(state, 'open') ~= '1' or hget_str(state, 'owner') ~= ARGV[1] or hget_num(state, 'epoch') ~= epoch then
  return reply({ status = 'NOT_HELD' })
end
if (ARGV[4] or '') ~= '' and hget_str(state, 'head') ~= ARGV[4] then return reply({ status = 'NOT_HELD' }) end
local unsent = ARGV[3] or ''
if unsent == 'first' or (unsent == 'unsent' and hget_str(state, 'unsentThrough') == tostring(epoch - 1)) then
  redis.call('HSET', state, 'claimExpires', 0, 'unsentThrough', ARGV[2])
else
  redis.call('HSET', state, 'claimExpires', 0)
end
return reply({ status = 'OK' })
