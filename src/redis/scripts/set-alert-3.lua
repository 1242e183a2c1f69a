-- set-alert: writes an alert only if it still reads as the writer read it (compare-and-set), so a change made in
-- between (another person's resolution, a raise refreshing it) is never overwritten: of two people resolving one
-- alert at once exactly one is recorded, and the other is answered with the alert as it now stands. The open-alerts
-- index is kept in the same step, so whoever reads only the open alerts (the exposure repair) reads every one of them.
-- KEYS[1] alerts hash (alert id -> alert JSON)   KEYS[2] alerts zset (alert id -> raised at)
-- KEYS[3] open alerts zset (alert id -> raised at: the alerts nobody has resolved)
-- ARGV[1] alert id   ARGV[2] the alert JSON as read ('' when it was absent)   ARGV[3] the alert JSON to write
-- ARGV[4] raised at (Redis ms), its score in KEYS[2] and KEYS[3]   ARGV[5] '1' when the alert written is open, else ''
-- Returns JSON {status}: SET | MOVED {alert: the JSON as it stands, '' when absent}
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then current = '' end
if current ~= ARGV[2] then return reply({ status = 'MOVED', alert = current }) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], tonumber(ARGV[4]), ARGV[1])
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[3], tonumber(ARGV[4]), ARGV[1])
else
  redis.call('ZREM', KEYS[3], ARGV[1])
end
return reply({ status = 'SET' })
