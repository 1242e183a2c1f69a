-- unindex: drops one submit's entry from the open index. The submit itself drops its entry once it leaves
-- nothing open behind it (mode "own"). Recovery drops an entry whose effect it found not open (mode "stale"), but
-- only when the entry was written more than the bind window before that read: a dispatch from that binding would
-- have had to happen before the read, so the read would have found the effect open (bind-2, propose-5).
-- KEYS[1] open index zset
-- ARGV[1] the entry ("<effect id>:<token>")   ARGV[2] mode: own | stale   ARGV[3] (stale) latest bound-at to drop
-- Returns JSON {status}: REMOVED | KEPT
if ARGV[2] == 'stale' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not score or tonumber(score) > tonumber(ARGV[3]) then return reply({ status = 'KEPT' }) end
end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then return reply({ status = 'REMOVED' }) end
return reply({ status = 'KEPT' })
