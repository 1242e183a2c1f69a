-- probe-heartbeat: a worker's heartbeat as another worker sees it: its boot nonce and how long it has to live.
-- A recoverer that finds the holder alive schedules itself for the instant the heartbeat would lapse.
-- KEYS[1] heartbeat key
-- ARGV none
-- Returns JSON {nonce ('' when gone), ttlMs (-2 when gone), now}
local nonce = redis.call('GET', KEYS[1])
return reply({ nonce = nonce or '', ttlMs = redis.call('PTTL', KEYS[1]), now = now_ms() })
