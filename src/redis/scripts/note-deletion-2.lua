-- note-deletion: a customer's deletion (`customer.deleted`) is applied. Keeps it for the customer unless one is kept
-- already (the first deletion stands: Stripe deletes a customer once), marks the subject as note-fact-1 does, and, in the
-- same step, lists the effects committed on it, the ones the deletion is recorded on now. A credit whose send landed
-- before the deletion but that commits after this step sees the mark at its settle (settle-5 `reread`), and its re-read
-- finds the deletion kept here (src/facts/apply.ts foldDeletion): Stripe shows a deleted customer's balance to nobody.
-- The deletion is kept for good, since a credit may commit (or its landing be learned) long after.
-- KEYS[1] subject totals hash (its `e:<effect id>` fields are its committed effects; the mark is field `factAt`)
-- KEYS[2] the customer's kept deletion (STRING, JSON)
-- ARGV[1] the deletion applied now (JSON)
-- Returns JSON {status}: OK {deletion (the one kept: the first), effects, now} | UNKNOWN_SUBJECT (nothing was ever
--   dispatched on the subject; nothing kept or marked)
local subject = KEYS[1]
if redis.call('EXISTS', subject) == 0 then return reply({ status = 'UNKNOWN_SUBJECT' }) end
redis.call('SET', KEYS[2], ARGV[1], 'NX')
local effects, now = mark_subject_fact(subject)
return reply({ status = 'OK', deletion = redis.call('GET', KEYS[2]), effects = effects, now = now })
