-- beat: refreshes a worker's heartbeat. A worker's first beat takes the key (a restart under the same worker id
-- replaces its previous boot); a later beat that finds another boot's nonce there does not write: two processes
-- configured with one worker id must not pass for each other, and the one that was replaced stops sending. A
-- replaced worker goes on asking (ARGV[3] = 'reclaim'): once the other process has gone (its key cleared or lapsed)
-- it takes the key back and sends again; while the other's nonce is there, it stays out.
-- KEYS[1] heartbeat key
-- ARGV[1] boot nonce   ARGV[2] TTL ms   ARGV[3] '1' for the first beat of this boot, 'reclaim' for a replaced one's,
--   else '0'
-- Returns JSON {status}: OK {now, kept} | SUPERSEDED {by}. `kept`: the key held this boot's nonce when the beat ran,
-- so it lived on without a gap; false when the beat wrote it anew (a first beat, or one that found it lapsed: another
-- worker may have read this one as dead meanwhile and taken its claims over).
local current = redis.call('GET', KEYS[1])
if ARGV[3] ~= '1' and current and current ~= ARGV[1] then return reply({ status = 'SUPERSEDED', by = current }) end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return reply({ status = 'OK', now = now_ms(), kept = current == ARGV[1] })
