-- index-open-alerts: one step of the one-time backfill of the open-alerts index, for alerts last written before
-- set-alert-3 kept that index (set-alert-2 wrote only the hash and the raised-at index). Reads a batch of the alerts
-- hash from `cursor` and adds each alert still open at its raised-at; a resolved one is left out. Each alert is read
-- and indexed in one step, so this agrees with any set-alert-3 write before or after it. The step whose scan comes
-- back to 0 sets the marker in the same step: from then on the index holds every open alert, and each step (another
-- process's backfill started at the same time, a later start) answers DONE and changes nothing. An alert whose JSON
-- does not decode is left out (no reader could list it either).
-- KEYS[1] alerts hash (alert id -> alert JSON)   KEYS[2] open alerts zset (alert id -> raised at)
-- KEYS[3] marker: set once the open alerts zset holds every open alert
-- ARGV[1] HSCAN cursor of KEYS[1] ('0' for the first step)   ARGV[2] alerts per step (HSCAN COUNT)
-- Returns JSON {status, added}: MORE {cursor: the next step's} | DONE (the marker is set, by this step or before)
if redis.call('EXISTS', KEYS[3]) == 1 then return reply({ status = 'DONE', added = 0 }) end
local scanned = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', tonumber(ARGV[2]))
local fields = scanned[2]
local added = 0
for i = 1, #fields, 2 do
  local ok, alert = pcall(cjson.decode, fields[i + 1])
  if ok and type(alert) == 'table' and alert.resolvedAt == cjson.null and type(alert.raisedAt) == 'number' then
    added = added + redis.call('ZADD', KEYS[2], alert.raisedAt, fields[i])
  end
end
if scanned[1] == '0' then
  redis.call('SET', KEYS[3], '1')
  return reply({ status = 'DONE', added = added })
end
return reply({ status = 'MORE', cursor = scanned[1], added = added })
