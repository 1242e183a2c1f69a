-- refresh-inbox: rewrites what an open item says (an exposure whose alert was raised again with another dispute: the
-- money at stake now), only if it still reads as the writer read it (compare-and-set), so of two refreshes neither is
-- lost. A closed item is left as it was: it says what the person acted on.
-- KEYS[1] inbox items hash (item id -> item JSON)   KEYS[2] closed items hash (item id -> closure JSON)
-- ARGV[1] item id   ARGV[2] the item JSON as read   ARGV[3] the item JSON to write
-- Returns JSON {status}: REFRESHED | CLOSED | MOVED {item: the JSON as it stands, '' when absent}
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return reply({ status = 'CLOSED' }) end
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then current = '' end
if current ~= ARGV[2] then return reply({ status = 'MOVED', item = current }) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return reply({ status = 'REFRESHED' })
