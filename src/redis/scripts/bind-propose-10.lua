-- bind-propose: a new effect's binding and its dispatch step in one atomic step, on a single Redis server (a
-- cluster keeps the binding's keys in another slot, so there the two are separate calls: bind-5, then propose-5).
-- It checks the deployment's marker, binds the effect and indexes this submit exactly as bind-5 does (a marker gone or
-- changed writes nothing: MARKER), then, unless the effect is bound to another
-- subject, judges and writes the batch exactly as propose-5 does. A submit that guessed wrong (the effect was bound
-- and has a chain) hears what propose-5 would say (the head or the epoch moved, in flight, committed ...) and
-- carries on from the binding it now holds.
-- KEYS[1] effect state hash   KEYS[2] effect entries   KEYS[3] approval hash   KEYS[4] approval open-effects set
-- KEYS[5] subject totals hash (KEYS[1] to KEYS[5] as propose-5)   KEYS[6] effect id -> partition hash
-- KEYS[7] open index zset   KEYS[8] watch zset   KEYS[9] effects-by-time zset   KEYS[10] the deployment marker
-- (KEYS[6] to KEYS[10] as bind-5)
-- ARGV[1 .. 21 + 2n] as propose-5 (ARGV[15], the binding time, is unused: the binding is made here), then
-- ARGV[22 + 2n] the marker this process holds, ARGV[23 + 2n] this submit's index token, then the index upkeep as
-- bind-5 takes it (RECENT_COMMIT_MS, count d, d entries, pairs)
-- A submit that expects a chain (ARGV[3], its head, not '': an effects job on its producer's PROPOSED, or an attempt
-- that read the chain) binds only as bind-existing-5 does: every writer of a chain binds first, so an effect not bound
-- has no chain, the submit's guess is wrong, and nothing is written (UNBOUND). A job added with only the queue's keys
-- thus binds no request id to the payment it names.
-- Returns JSON: bind-5's OTHER_SUBJECT {bound, now} or MARKER {found}, bind-existing-5's UNBOUND {now}, or propose-5's
-- reply with `bind` (NEW | BOUND) and `boundAt`.
local t = 22 + 2 * tonumber(ARGV[18])
local binding = bind_effect(KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], t, ARGV[3] ~= '')
if binding.status == 'OTHER_SUBJECT' or binding.status == 'MARKER' or binding.status == 'UNBOUND' then return reply(binding) end
local result = propose_effect(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], binding.now, binding.now)
result.bind = binding.status
result.boundAt = binding.now
return reply(result)
