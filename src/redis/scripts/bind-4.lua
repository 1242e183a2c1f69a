-- bind: binds an effect id to the subject its money moves on, and indexes this submit as one that may dispatch
-- it, before anything is written in its partition. The first binding wins for good: a later proposal of the same
-- request id on another subject is refused (issue 6, item 1). Each submit has its own index entry,
-- "<effect id>:<token>", which only that submit removes when it leaves nothing open, so a concurrent submit of
-- the same effect can never remove the entry of one that is still sending. The dispatch script refuses a binding
-- older than the bind window, so recovery may drop an entry whose effect is not open once the entry is older
-- than that (see unindex-1).
-- It also carries this worker's index upkeep, so that costs no command of its own: it drops the index entries of
-- earlier submits that have finished (their own entries, see unindex-1) and adds effects that committed to the
-- watch list the reconciler re-reads (issue 10 §3). A new binding also enters the effects-by-time index, which
-- lists effects newest first (GET /v1/effects, the page).
-- KEYS[1] effect id -> partition hash   KEYS[2] open index zset ("<effect id>:<token>" -> bound at)
-- KEYS[3] watch zset (effect id -> committed at)   KEYS[4] effects-by-time zset (effect id -> bound at)
-- ARGV[1] effect id   ARGV[2] partition   ARGV[3] this submit's token   ARGV[4] number of entries to drop, d
-- ARGV[5 .. 4+d] finished entries to drop   then pairs: effect id, committed at
-- Returns JSON {status}: NEW {now} | BOUND {now} | OTHER_SUBJECT {bound, now}
local now = now_ms()
local drops = tonumber(ARGV[4])
if drops > 0 then redis.call('ZREM', KEYS[2], unpack(ARGV, 5, 4 + drops)) end
for i = 5 + drops, #ARGV, 2 do redis.call('ZADD', KEYS[3], ARGV[i + 1], ARGV[i]) end
local created = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
if created == 0 then
  local bound = redis.call('HGET', KEYS[1], ARGV[1])
  if bound ~= ARGV[2] then return reply({ status = 'OTHER_SUBJECT', bound = bound, now = now }) end
end
redis.call('ZADD', KEYS[2], now, ARGV[1] .. ':' .. ARGV[3])
if created == 1 then
  redis.call('ZADD', KEYS[4], now, ARGV[1])
  return reply({ status = 'NEW', now = now })
end
return reply({ status = 'BOUND', now = now })
