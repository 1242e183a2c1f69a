-- upkeep: a worker's index upkeep when no bind comes soon to carry it (bind-5): drops the index entries of its
-- finished submits and puts the effects settled after a send that effects-by-time does not find on the reconciler's
-- watch list (apply_upkeep in lib.lua, which the binding scripts share). Also run right before a settle that may be
-- late (journal.ts settle), with the time Redis records that settle by at the latest as its settle time: the entry is
-- then written before the settle is, and no death after the settle can lose it.
-- KEYS[1] open index zset   KEYS[2] watch zset (effect id -> settled at)   KEYS[3] effects-by-time zset (read only)
-- ARGV[1] RECENT_COMMIT_MS   ARGV[2] number of entries to drop, d   ARGV[3 .. 2+d] entries
-- then pairs: effect id, settled at
-- Returns JSON {status}: OK
apply_upkeep(KEYS[1], KEYS[2], KEYS[3], 1)
return reply({ status = 'OK' })
