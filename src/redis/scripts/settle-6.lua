-- settle: closes an open dispatch with COMMITTED, AMBIGUOUS or a resolving REFUSED, only for the holder of the
-- current fencing epoch. A resolving REFUSED gives the reserved amount back to every cap (nothing landed);
-- COMMITTED and AMBIGUOUS keep it (money moved, or may have).
-- KEYS[1] effect state hash   KEYS[2] effect entries list   KEYS[3] partition open-dispatch zset
-- KEYS[4] approval reservations hash   KEYS[5] approval open-effects set   KEYS[6] subject cap reservations hash
-- ARGV[1] effect id   ARGV[2] expected chain head   ARGV[3] the caller's epoch   ARGV[4] sealed entry JSON
-- ARGV[5] max clock skew ms
-- Returns JSON {status}: OK | NOT_OPEN | FENCED {epoch} | HEAD_MOVED | BAD_ENTRY {reason} | BAD_TIME {now}
local state = KEYS[1]
local eid = ARGV[1]
if hget_str(state, 'open') ~= '1' then return reply({ status = 'NOT_OPEN' }) end
if hget_num(state, 'epoch') ~= tonumber(ARGV[3]) then return reply({ status = 'FENCED', epoch = hget_num(state, 'epoch') }) end
local entry = cjson.decode(ARGV[4])
local kind = entry.kind
local releases = kind == 'REFUSED' and entry.resolves == true
if kind ~= 'COMMITTED' and kind ~= 'AMBIGUOUS' and not releases then
  return reply({ status = 'BAD_ENTRY', reason = kind .. ' does not settle a dispatch' })
end
local failed = append_entry(state, KEYS[2], eid, ARGV[2], ARGV[4], tonumber(ARGV[5]))
if failed then return reply(failed) end
redis.call('HSET', state, 'open', '0', 'claimExpires', 0)
redis.call('HDEL', state, 'owner', 'nonce')
if kind == 'COMMITTED' then redis.call('HSET', state, 'committed', '1') end
if kind == 'AMBIGUOUS' then redis.call('HSET', state, 'ambiguous', '1') end
if releases and entry.code == 'REFUSED:target_error' then redis.call('HSET', state, 'targetRefused', '1') end
redis.call('ZREM', KEYS[3], eid)
redis.call('SREM', KEYS[5], eid)
if releases then
  redis.call('HDEL', KEYS[4], eid)
  redis.call('HDEL', KEYS[6], eid)
end
return reply({ status = 'OK' })
