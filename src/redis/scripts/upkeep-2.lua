-- upkeep: a worker's index upkeep when no bind comes soon to carry it (bind-5): drops the index entries of its
-- finished submits and adds the effects that committed to the reconciler's watch list.
-- KEYS[1] open index zset   KEYS[2] watch zset (effect id -> committed at)
-- ARGV[1] number of entries to drop, d   ARGV[2 .. 1+d] entries   then pairs: effect id, committed at
-- Returns JSON {status}: OK
local drops = tonumber(ARGV[1])
if drops > 0 then redis.call('ZREM', KEYS[1], unpack(ARGV, 2, 1 + drops)) end
for i = 2 + drops, #ARGV, 2 do redis.call('ZADD', KEYS[2], ARGV[i + 1], ARGV[i]) end
return reply({ status = 'OK' })
