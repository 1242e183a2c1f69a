-- open-case-failure: opens a failed case's item (case_failed) once and, in the same step, closes the case's items of
-- earlier failures still open as superseded by it: one open item per case, its latest failure's. An item known
-- already (the same failure met again, or one a person dismissed) is left as it was. Only older failures are
-- superseded (the failure time each id ends with), never a newer one: an opening that comes late, for a failure the
-- case has since moved past, leaves the newer item open, and its caller, reading the case again, closes its own.
-- KEYS[1] inbox items hash (item id -> item JSON)   KEYS[2] open items zset   KEYS[3] closed items hash
-- KEYS[4] closed items zset   KEYS[5] the case's open case_failed ids (set, keys.inboxCaseFailures)
-- ARGV[1] item id   ARGV[2] item JSON   ARGV[3] opened at (Redis ms)   ARGV[4] closure JSON of a superseded item
-- Returns JSON {status, superseded}: OPENED (superseded: the ids closed now) | KNOWN

-- The failure time an id ends with, compared as text, length first: exact for every time an id may hold (up to 16
-- digits, written without leading zeros by caseFailureItemId), where a Lua number is not.
local function failed_before(a, b)
  local ta, tb = string.match(a, ':(%d+)$'), string.match(b, ':(%d+)$')
  if ta == nil or tb == nil then return false end
  if #ta ~= #tb then return #ta < #tb end
  return ta < tb
end

if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return reply({ status = 'KNOWN', superseded = {} }) end
redis.call('ZADD', KEYS[2], tonumber(ARGV[3]), ARGV[1])
local superseded = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[5])) do
  if failed_before(id, ARGV[1]) and close_case_failure(KEYS[2], KEYS[5], KEYS[3], KEYS[4], id, ARGV[4], tonumber(ARGV[3])) then
    superseded[#superseded + 1] = id
  end
end
redis.call('SADD', KEYS[5], ARGV[1])
return reply({ status = 'OPENED', superseded = superseded })
