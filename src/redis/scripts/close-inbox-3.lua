-- close-inbox: marks an item closed in the index, after its RESOLVED entry was appended (act-3). The entry in the
-- effect's chain is what decides who acted; this only keeps the listing in step with it, so it is written once
-- (the first closure stands) and running it again changes nothing.
-- KEYS[1] closed items hash (item id -> closure JSON)   KEYS[2] open items zset   KEYS[3] closed items zset
-- ARGV[1] item id   ARGV[2] closure JSON   ARGV[3] closed at (Redis ms)
-- Returns JSON {status}: CLOSED | KNOWN
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return reply({ status = 'KNOWN' }) end
redis.call('ZADD', KEYS[3], tonumber(ARGV[3]), ARGV[1])
return reply({ status = 'CLOSED' })
