-- describe-approval: one consistent snapshot of an approval, its reservations and the Redis clock.
-- KEYS[1] approval hash   KEYS[2] approval reservations hash
-- ARGV none
-- Returns JSON {status}: OK {now, approval: {field: value}, reservedCents, uses} | UNKNOWN {now}
local now = now_ms()
if redis.call('EXISTS', KEYS[1]) == 0 then return reply({ status = 'UNKNOWN', now = now }) end
local fields = redis.call('HGETALL', KEYS[1])
local approval = {}
for i = 1, #fields, 2 do approval[fields[i]] = fields[i + 1] end
return reply({ status = 'OK', now = now, approval = approval, reservedCents = sum_values(KEYS[2]), uses = redis.call('HLEN', KEYS[2]) })
