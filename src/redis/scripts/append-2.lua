-- append: adds one sealed entry that opens or closes nothing (PROPOSED, AUTHORIZED, a non-resolving REFUSED,
-- LATE_RESULT, OBSERVED). The first PROPOSED binds the payload hash (I5).
-- KEYS[1] effect state hash   KEYS[2] effect entries list
-- ARGV[1] effect id   ARGV[2] expected chain head ('' for none)   ARGV[3] sealed entry JSON
-- ARGV[4] payload hash (PROPOSED only, else '')   ARGV[5] max clock skew ms
-- Returns JSON {status}: OK | HEAD_MOVED {head} | BAD_ENTRY {reason} | BAD_TIME {now}
local entry = cjson.decode(ARGV[3])
local kind = entry.kind
if kind ~= 'PROPOSED' and kind ~= 'AUTHORIZED' and kind ~= 'REFUSED' and kind ~= 'LATE_RESULT' and kind ~= 'OBSERVED' then
  return reply({ status = 'BAD_ENTRY', reason = kind .. ' cannot be appended by append' })
end
if kind == 'REFUSED' and entry.resolves == true then
  return reply({ status = 'BAD_ENTRY', reason = 'a resolving REFUSED must go through settle' })
end
local failed = append_entry(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[5]))
if failed then return reply(failed) end
if kind == 'PROPOSED' and ARGV[4] ~= '' then
  redis.call('HSETNX', KEYS[1], 'payloadHash', ARGV[4])
end
return reply({ status = 'OK' })
