-- append: adds a batch of sealed entries that open and close nothing: a proposal refused by the approval or the
-- caps (PROPOSED [AUTHORIZED] REFUSED), a refusal of another payload (a REFUSED:conflicting_payload, which never
-- becomes a PROPOSED), and post-send facts (OBSERVED). A batch that holds a PROPOSED binds the payload hash if
-- none is bound yet (I5).
-- KEYS[1] effect state hash   KEYS[2] effect entries list
-- ARGV[1] effect id   ARGV[2] expected chain head ('' for none)   ARGV[3] entry time (Redis ms)
-- ARGV[4] max clock skew ms   ARGV[5] payload hash to bind, or ''   ARGV[6] the entries' kinds, comma-separated
-- ARGV[7] number of entries n, then n pairs from ARGV[8]: entry hash, stored entry JSON
-- Returns JSON {status}: OK {now} | HEAD_MOVED {head, lastAt, now} | BAD_TIME {head, lastAt, now}
--   | CONFLICTING_PAYLOAD | BAD_ENTRY {reason}
local state = KEYS[1]
for kind in string.gmatch(ARGV[6], '[^,]+') do
  if kind ~= 'PROPOSED' and kind ~= 'AUTHORIZED' and kind ~= 'REFUSED' and kind ~= 'OBSERVED' then
    return reply({ status = 'BAD_ENTRY', reason = kind .. ' cannot be appended by append' })
  end
end
local bound = hget_str(state, 'payloadHash')
if ARGV[5] ~= '' and bound ~= '' and bound ~= ARGV[5] then return reply({ status = 'CONFLICTING_PAYLOAD' }) end
local now = now_ms()
local at = tonumber(ARGV[3])
local misplaced = check_place(state, ARGV[2], at, tonumber(ARGV[4]), now)
if misplaced then return reply(misplaced) end
push_batch(state, KEYS[2], at, 8, tonumber(ARGV[7]))
if ARGV[5] ~= '' and bound == '' then redis.call('HSET', state, 'payloadHash', ARGV[5]) end
return reply({ status = 'OK', now = now })
