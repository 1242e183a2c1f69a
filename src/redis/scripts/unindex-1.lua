-- unindex: drops one submit's entry from the open index. The submit itself drops its entry once it leaves
-- nothing open behind it (mode "own"). Recovery drops an entry whose effect it found not open (mode "stale"), but
-- only when the entry was written more than the bind window before that read: a dispatch from that binding would
-- have had to happen before the read, so the read would have found the effect open (bind-2, propose-5).
-- KEYS[1] open index zset
-- ARGV[1] mode: own | stale   ARGV[2] (stale) latest bound-at to drop, else 0   ARGV[3...] the entries ("<effect id>:<token>")
-- Returns JSON {status, removed}: OK {removed: how many were dropped}
local removed = 0
for i = 3, #ARGV do
  local keep = false
  if ARGV[1] == 'stale' then
    local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
    keep = (not score) or tonumber(score) > tonumber(ARGV[2])
  end
  if not keep then removed = removed + redis.call('ZREM', KEYS[1], ARGV[i]) end
end
return reply({ status = 'OK', removed = removed })
