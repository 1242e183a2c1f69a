-- close-case-failures: closes a failed case's items (case_failed) in the inbox index, their only record (no effect
-- stands behind them), and takes them out of the case's index of open items: one item (a person's dismissal, an item
-- opened for a failure the case no longer stands at), or every open one (the case is decided). The first closure
-- stands: an item closed already keeps its closure, and running this again changes nothing.
-- KEYS[1] closed items hash (item id -> closure JSON)   KEYS[2] open items zset   KEYS[3] closed items zset
-- KEYS[4] the case's open case_failed ids (set, keys.inboxCaseFailures)
-- ARGV[1] closure JSON   ARGV[2] closed at (Redis ms)   ARGV[3] the item id to close, or '' for each open item of the case
-- Returns JSON {closed}: the ids closed now
local ids
if ARGV[3] == '' then ids = redis.call('SMEMBERS', KEYS[4]) else ids = { ARGV[3] } end
local closed = {}
for _, id in ipairs(ids) do
  if close_case_failure(KEYS[2], KEYS[4], KEYS[1], KEYS[3], id, ARGV[1], tonumber(ARGV[2])) then closed[#closed + 1] = id end
end
return reply({ closed = closed })
