-- open-inbox: indexes an escalation inbox item once. The item is written whole the first time and never replaced:
-- whoever meets the settled effect again (a redelivered job, the next recovery pass, a re-read fact) opens the same
-- item, and nothing it says changes. An item already closed is not reopened.
-- KEYS[1] inbox items hash (item id -> item JSON)   KEYS[2] open items zset (item id -> opened at)
-- ARGV[1] item id   ARGV[2] item JSON   ARGV[3] opened at (Redis ms)
-- Returns JSON {status}: OPENED | KNOWN
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return reply({ status = 'KNOWN' }) end
redis.call('ZADD', KEYS[2], tonumber(ARGV[3]), ARGV[1])
return reply({ status = 'OPENED' })
