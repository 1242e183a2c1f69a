-- note-fact: a fact about a payment (a dispute event, or a refund fact for an effect still in flight) has come; marks the
-- subject with the Redis time and, in the same
-- step, lists the effects that committed on it, the ones the fact is recorded on now. An effect still in flight (its
-- dispatch open) is not among them; settle-5 sees the mark when it commits that effect or settles it AMBIGUOUS and
-- tells its sender to re-read the effect's facts at once (src/gate/settle.ts). Marking and listing in one step leaves
-- no gap: an effect settled before this step is listed, one settled after it sees the mark. The mark stays: several
-- effects may be in flight on one payment, and a later settle on a disputed payment re-reads only what the reconciler
-- would, and such settles are few (Stripe refuses a refund on a charge already charged back: `charge_disputed`).
-- KEYS[1] subject totals hash (its `e:<effect id>` fields are its committed effects; the mark is field `factAt`)
-- ARGV none
-- Returns JSON {status}: OK {effects, now} | UNKNOWN_SUBJECT (nothing was ever dispatched on the subject; nothing marked)
local subject = KEYS[1]
if redis.call('EXISTS', subject) == 0 then return reply({ status = 'UNKNOWN_SUBJECT' }) end
local effects, now = mark_subject_fact(subject)
return reply({ status = 'OK', effects = effects, now = now })
