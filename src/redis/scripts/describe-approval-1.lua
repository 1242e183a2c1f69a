-- describe-approval: one consistent snapshot of an approval, its running totals and the Redis clock.
-- KEYS[1] approval hash
-- ARGV none
-- Returns JSON {status}: OK {now, approval: {field: value}} | UNKNOWN {now}
local now = now_ms()
if redis.call('EXISTS', KEYS[1]) == 0 then return reply({ status = 'UNKNOWN', now = now }) end
local fields = redis.call('HGETALL', KEYS[1])
local approval = {}
for i = 1, #fields, 2 do approval[fields[i]] = fields[i + 1] end
return reply({ status = 'OK', now = now, approval = approval })
