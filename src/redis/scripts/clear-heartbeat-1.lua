-- clear-heartbeat: a stopping worker removes its heartbeat so its claims read as a dead sender's at once, but only
-- while the key holds its own boot nonce: a worker another process replaced under its worker id must not remove
-- that process's heartbeat (every other worker would then take the live process's claims over while it sends).
-- KEYS[1] heartbeat key
-- ARGV[1] boot nonce
-- Returns JSON {status}: CLEARED | NOT_OURS
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return reply({ status = 'NOT_OURS' }) end
redis.call('DEL', KEYS[1])
return reply({ status = 'CLEARED' })
