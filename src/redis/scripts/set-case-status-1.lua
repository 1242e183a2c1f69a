-- set-case-status: stores a case's record only if it is still the one the caller read (compare and set), so two
-- runs of one case (a job handed to a second worker when the first one's lock lapsed) cannot write a status over
-- one they never saw. The caller decides from the record it read whether the new status may replace it.
-- KEYS[1] the case (keys.case)
-- ARGV[1] the record as the caller read it   ARGV[2] the record to store
-- Returns JSON {status}: OK (stored), CHANGED (the record is no longer ARGV[1]: read it and decide again),
-- MISSING (no case under KEYS[1])
local stored = redis.call('GET', KEYS[1])
if not stored then return reply({ status = 'MISSING' }) end
if stored ~= ARGV[1] then return reply({ status = 'CHANGED' }) end
redis.call('SET', KEYS[1], ARGV[2])
return reply({ status = 'OK' })
