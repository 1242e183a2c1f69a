-- late: records the answer a fenced-out sender got (LATE_RESULT) and makes the effect's state act on it, since a
-- definite answer is the truth about the effect (issue 6, item 7):
--   landed, dispatch still open   -> `late = landed`: whoever holds or takes the claim commits it, never resends;
--   landed, effect AMBIGUOUS      -> the landing settles what was ambiguous: committed;
--   landed, effect refused        -> money moved after all: committed again, and its amount is taken off the
--                                    approval it was sent under and the subject once more (the refusal had given
--                                    it back). A landing whose refund has failed since counts the same, and the failure then gives the amount
--                                    back once, as it does for any committed refund that fails
--                                    (release-failed-3): the totals never depend on whether the facts first read
--                                    the refund before or after it failed;
--   rejected, dispatch still open -> `late = rejected`: recovery looks the effect up and refuses, never resends;
--   otherwise                     -> evidence only.
-- A landing the post-send facts found (ARGV[7] = facts: a refund with the effect's id exists at Stripe) is recorded
-- only on an effect the journal settled without one: not open (its holder commits what it finds) and not committed
-- (the landing is known, whether the send committed or a landing was recorded already). Checked in this step, so
-- two facts of one landing handled at once write one LATE_RESULT; a fenced-out sender's own answer (ARGV[7] =
-- sender) is always kept.
-- KEYS[1] effect state hash   KEYS[2] effect entries list   KEYS[3] approval hash
-- KEYS[4] approval open-effects set   KEYS[5] subject totals hash
-- ARGV[1] effect id   ARGV[2] expected chain head   ARGV[3] entry time (Redis ms)   ARGV[4] max clock skew ms
-- ARGV[5] outcome: landed | rejected | unknown   ARGV[6] the approval id of KEYS[3]   ARGV[7] from: sender | facts
-- ARGV[8] entry hash   ARGV[9] stored entry JSON
-- Returns JSON {status}: OK {effect: open | committed | relanded | kept, now} | KNOWN {effect: open | committed |
--   unknown, now} (facts only; nothing written) | HEAD_MOVED {head, lastAt, now} | BAD_TIME {head, lastAt, now}
local state = KEYS[1]
local now = now_ms()
if ARGV[7] == 'facts' then
  local known = nil
  if hget_num(state, 'count') == 0 then known = 'unknown'
  elseif hget_str(state, 'open') == '1' then known = 'open'
  elseif hget_str(state, 'committed') == '1' then known = 'committed' end
  if known then return reply({ status = 'KNOWN', effect = known, now = now }) end
end
local at = tonumber(ARGV[3])
local misplaced = check_place(state, ARGV[2], at, tonumber(ARGV[4]), now)
if misplaced then return reply(misplaced) end
push_batch(state, KEYS[2], at, 8, 1)
local outcome = ARGV[5]
local effect = 'kept'
if hget_str(state, 'open') == '1' then
  if outcome == 'landed' or (outcome == 'rejected' and hget_str(state, 'late') == '') then
    redis.call('HSET', state, 'late', outcome)
  end
  effect = 'open'
elseif outcome == 'landed' and hget_str(state, 'committed') ~= '1' then
  if hget_str(state, 'ambiguous') == '1' then
    effect = 'committed'
  elseif hget_num(state, 'amount') > 0 then
    -- Charged to the approval the landing was sent under (ARGV[6]), which need not be the last dispatch's: a request
    -- refused and decided again under another approval keeps one state. The subject's total takes it whatever the
    -- approval, so its shared cap holds the money that moved.
    move_totals(KEYS[3], KEYS[5], hget_num(state, 'amount'), 1)
    effect = 'relanded'
  end
  -- Money that landed holds what it is sent for once (a credit's incident) again, whatever its refusal or a person's
  -- "did not land" let go, and whoever took it since: that one's refusal must not free it.
  -- A refund's hold on its payment's refunds is let go instead: what landed is in any read of the payment from now on.
  local once = hget_str(state, 'once')
  if once == 'refunds' then free_refunds(KEYS[5], ARGV[1], now)
  elseif once ~= '' then redis.call('HSET', KEYS[5], once, ARGV[1]) end
  redis.call('HSET', state, 'committed', '1', 'lateLanded', '1')
  redis.call('HSET', KEYS[5], 'e:' .. ARGV[1], '1')
end
return reply({ status = 'OK', effect = effect, now = now })
