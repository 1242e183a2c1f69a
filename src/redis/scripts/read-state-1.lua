-- read-state: one consistent read of an effect's summary state and the Redis clock.
-- KEYS[1] effect state hash
-- ARGV none
-- Returns JSON {now, state: {field: value}}; state is empty for an unknown effect.
local fields = redis.call('HGETALL', KEYS[1])
local state = {}
for i = 1, #fields, 2 do state[fields[i]] = fields[i + 1] end
return reply({ now = now_ms(), state = state })
