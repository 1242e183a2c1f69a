-- act: appends a person's action on an inbox item (a RESOLVED entry) to the effect's chain, at most once per item:
-- two people acting on one item at once both reach this script, and exactly one appends; the other is told who
-- acted. Nothing is acted on while a dispatch is open (the effect is being sent; its outcome is not known yet).
-- KEYS[1] effect state hash   KEYS[2] effect entries string   KEYS[3] the effect's subject totals hash
-- ARGV[1] effect id   ARGV[2] expected chain head   ARGV[3] entry time (Redis ms)   ARGV[4] max clock skew ms
-- ARGV[5] the item id   ARGV[6] who acted and how (JSON, kept beside the state)
-- ARGV[7] what the effect must be: 'ambiguous' (AMBIGUOUS and no landing reported since: a resolve), 'unsent'
--   (never committed nor ambiguous, and not re-approved through another of its items: a re-approval, which must not
--   move money that may have moved, nor send one refused payload twice), or ''
-- ARGV[8] entry hash   ARGV[9] stored entry JSON   ARGV[10] 'release' when a person found the AMBIGUOUS effect did not
--   land: what it held on its subject to be sent once (a credit's incident, propose_effect) is let go, as a resolving
--   refusal lets it go, so a new request for the incident can be sent; a landing reported later takes it back (late-5).
--   A refund's hold on its payment's refunds (lib.lua free_refunds) is let go by any action on it while AMBIGUOUS.
-- Returns JSON {status}: OK {now} | ACTED {by} | OPEN | UNKNOWN_EFFECT | STATE {committed, ambiguous}
--   | REAPPROVED {item} | HEAD_MOVED {head, lastAt, now} | BAD_TIME {head, lastAt, now}
local state = KEYS[1]
if redis.call('EXISTS', state) == 0 then return reply({ status = 'UNKNOWN_EFFECT' }) end
local marker = 'i:' .. ARGV[5]
local acted = redis.call('HGET', state, marker)
if acted then return reply({ status = 'ACTED', by = acted }) end
if hget_str(state, 'open') == '1' then return reply({ status = 'OPEN' }) end
local committed = hget_str(state, 'committed') == '1'
local ambiguous = hget_str(state, 'ambiguous') == '1'
if (ARGV[7] == 'ambiguous' and (committed or not ambiguous)) or (ARGV[7] == 'unsent' and (committed or ambiguous)) then
  return reply({ status = 'STATE', committed = committed, ambiguous = ambiguous })
end
-- An effect can hold several items that allow a re-approval (refused on a stale premise, re-decided, refused again at
-- recovery): its payload is re-approved through one of them, once.
local reapproved = ARGV[7] == 'unsent' and hget_str(state, 'reapproved') or ''
if reapproved ~= '' then return reply({ status = 'REAPPROVED', item = reapproved }) end
local now = now_ms()
local at = tonumber(ARGV[3])
local misplaced = check_place(state, ARGV[2], at, tonumber(ARGV[4]), now)
if misplaced then return reply(misplaced) end
push_batch(state, KEYS[2], at, 8, 1)
if ARGV[7] == 'unsent' then
  redis.call('HSET', state, marker, ARGV[6], 'reapproved', ARGV[5])
else
  redis.call('HSET', state, marker, ARGV[6])
end
local once = hget_str(state, 'once')
if once == 'refunds' and ambiguous and not committed then
  -- A person acted on the ambiguous refund (resolved it, landed or not, or dismissed its item, after which nothing
  -- would ever settle it): the payment's next refund may go, after a fresh read that shows this one if it landed.
  free_refunds(KEYS[3], ARGV[1], now)
elseif ARGV[10] == 'release' and once ~= '' and once ~= 'refunds' and redis.call('HGET', KEYS[3], once) == ARGV[1] then
  redis.call('HDEL', KEYS[3], once)
end
return reply({ status = 'OK', now = now })
