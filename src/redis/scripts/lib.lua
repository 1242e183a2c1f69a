-- Shared prelude, prepended to every script of this folder when it is loaded (see ../scripts.ts).
-- Replies are JSON strings, so RESP2 and RESP3 connections read them the same way. No script decodes an entry:
-- entries arrive as opaque strings with their hash beside them, so nothing an entry holds (its depth, its
-- size) can make a script fail halfway (issue 6, item 9); what a script must know arrives as plain ARGV.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function reply(tbl)
  return cjson.encode(tbl)
end

local function hget_str(key, field)
  local value = redis.call('HGET', key, field)
  if not value then return '' end
  return value
end

local function hget_num(key, field)
  local value = redis.call('HGET', key, field)
  if not value then return 0 end
  return tonumber(value)
end

-- A fact has come for subject totals hash `subject` (note-fact, note-deletion): marks it with the Redis time (field
-- `factAt`, which makes a later COMMITTED or AMBIGUOUS on it re-read its facts) and lists its committed effects (its
-- `e:<effect id>` fields), in the one step the caller runs. Returns the effects and the time.
local function mark_subject_fact(subject)
  local now = now_ms()
  redis.call('HSET', subject, 'factAt', now)
  local effects = {}
  for _, field in ipairs(redis.call('HKEYS', subject)) do
    if string.sub(field, 1, 2) == 'e:' then effects[#effects + 1] = string.sub(field, 3) end
  end
  return effects, now
end

-- Where a batch of sealed entries wants to go: after `expected_head`, at time `at` (Redis ms, the same for the
-- whole batch). Returns nil when the chain head is still `expected_head` (compare-and-set) and `at` agrees with
-- the Redis clock and follows the last entry; otherwise a reply table with what the writer needs to reseal.
-- A clock that stepped back behind the last entry (an NTP step; a failover to a replica whose clock is behind,
-- holding times the old master wrote) still takes a batch at up to a second past that entry: the chain stays in
-- order, and a send that landed is recorded now, not once the clock has caught up.
local function check_place_of(head, last_at, expected_head, at, max_skew_ms, now)
  if head ~= expected_head then return { status = 'HEAD_MOVED', head = head, lastAt = last_at, now = now } end
  if at == nil or at > math.max(now, last_at) + 1000 or at < now - max_skew_ms or at < last_at then
    return { status = 'BAD_TIME', head = head, lastAt = last_at, now = now }
  end
  return nil
end

local function check_place(state_key, expected_head, at, max_skew_ms, now)
  return check_place_of(hget_str(state_key, 'head'), hget_num(state_key, 'lastAt'), expected_head, at, max_skew_ms, now)
end

-- Appends the batch ARGV[first], ARGV[first + 1], ... as (hash, stored entry) pairs, `n` of them, and moves the
-- chain head to the last hash (with `fields`, other state fields in the same HSET). `count`, when the caller read
-- the state's entry count in this script already, saves two calls: the count is set in the same HSET, and an empty
-- chain is not read. The chain is one string of stored entries, one per line (JSON holds no raw line
-- break): a string costs Redis less memory than a list of the same entries. It is written whole with SET, not
-- APPEND, since APPEND reserves room to grow (up to twice the string) on every effect; a chain is a few entries.
-- `at` is the batch's time, a number or the ARGV text it arrived as (checked already by check_place_of).
local function push_batch(state_key, entries_key, at, first, n, fields, count)
  local items = {}
  local last_hash = ''
  for i = 0, n - 1 do
    last_hash = ARGV[first + 2 * i]
    items[#items + 1] = ARGV[first + 2 * i + 1]
  end
  local text = table.concat(items, '\n')
  if count ~= 0 then
    local before = redis.call('GET', entries_key)
    if before then text = before .. '\n' .. text end
  end
  redis.call('SET', entries_key, text)
  -- `fields`: more (field, value) pairs of the state the caller changes in the same step, set in the same call.
  local set = { 'head', last_hash, 'lastAt', at }
  if count then
    set[#set + 1] = 'count'
    set[#set + 1] = count + n
  end
  if fields then
    for i = 1, #fields do set[#set + 1] = fields[i] end
  end
  redis.call('HSET', state_key, unpack(set))
  if not count then redis.call('HINCRBY', state_key, 'count', n) end
end

-- A refund that held its payment's 'refunds' (propose_effect) landed, or was settled by a person: it lets go, and
-- `refunds:freed` says when, so a refund whose premise read began before that reads again.
local function free_refunds(subject_key, eid, now)
  if redis.call('HGET', subject_key, 'refunds') == eid then redis.call('HDEL', subject_key, 'refunds') end
  redis.call('HSET', subject_key, 'refunds:freed', now)
end

-- Takes `amount` cents (and one use) off an approval and the subject's running totals, or gives them back
-- (sign -1). Totals are kept beside the terms, so no script ever sums reservations (issue 8).
local function move_totals(approval_key, subject_key, amount, sign)
  if redis.call('EXISTS', approval_key) == 1 then
    redis.call('HINCRBY', approval_key, 'reservedCents', sign * amount)
    redis.call('HINCRBY', approval_key, 'uses', sign)
  end
  redis.call('HINCRBY', subject_key, 'movedCents', sign * amount)
end

-- A worker's index upkeep, from ARGV[u] to the end: ARGV[u] is RECENT_COMMIT_MS (journal.ts), ARGV[u + 1] the number d
-- of finished index entries to drop from `k_open`, then those d entries, then (effect id, settled at) pairs of effects
-- settled after a send. Each of those goes on the watch list `k_watch` unless the effects-by-time index `k_by_time`
-- finds it: the reconciler reads that index from RECENT_COMMIT_MS before its window, so an effect settled no later
-- than that after its binding (its score there) is found through it. Reading the binding's time here, rather than
-- taking it from the worker, places right a settle by a worker that did not make the binding: when that binding was
-- made (a producer that failed before recording, retried hours later) is known only here.
-- A time written '~<ms>' is a binding step's check of the settle its submit may make by then (journal.ts watchCheck):
-- an effect that `k_partitions` (the binding scripts') does not hold bound yet is passed over, since the binding this
-- step makes is new, and its maker knows its time; without `k_partitions` it is taken as any other pair. A check adds
-- an entry only where none is (it never moves one).
local function apply_upkeep(k_open, k_watch, k_by_time, u, k_partitions)
  local recent = tonumber(ARGV[u])
  local drops = tonumber(ARGV[u + 1])
  if drops > 0 then redis.call('ZREM', k_open, unpack(ARGV, u + 2, u + 1 + drops)) end
  for i = u + 2 + drops, #ARGV, 2 do
    local at = ARGV[i + 1]
    local checked = string.sub(at, 1, 1) == '~'
    if checked then at = string.sub(at, 2) end
    if not checked or not k_partitions or redis.call('HEXISTS', k_partitions, ARGV[i]) == 1 then
      local bound_at = redis.call('ZSCORE', k_by_time, ARGV[i])
      if not bound_at or tonumber(at) - tonumber(bound_at) > recent then
        -- A check never moves an entry already there (NX): a request sent again long after it settled must not push
        -- its effect's place on the watch list forward with every retry.
        if checked then redis.call('ZADD', k_watch, 'NX', at, ARGV[i]) else redis.call('ZADD', k_watch, at, ARGV[i]) end
      end
    end
  end
end

-- Binds effect ARGV[1] to subject ARGV[2] and indexes this submit as one that may dispatch it (bind-5.lua says
-- why). ARGV[t] is the deployment marker this process holds ('' for none), ARGV[t + 1] this submit's index token,
-- then from ARGV[t + 2] the index upkeep as apply_upkeep takes it. A marker held that `k_marker` no longer holds
-- (gone, or another) is a Redis that lost its data: nothing is written. With `existing`, an effect not bound yet is
-- not bound (UNBOUND: nothing but the upkeep is written): for a caller that expects the effect's chain to exist, which
-- only a binding's maker writes.
-- Returns a reply table: NEW {now} | BOUND {now} | OTHER_SUBJECT {bound, now} | MARKER {found} ('' when gone)
-- | UNBOUND {now} (only with `existing`).
local function bind_effect(k_partitions, k_open, k_watch, k_by_time, k_marker, t, existing)
  if ARGV[t] ~= '' then
    local found = redis.call('GET', k_marker)
    if found ~= ARGV[t] then return { status = 'MARKER', found = found or '' } end
  end
  local now = now_ms()
  apply_upkeep(k_open, k_watch, k_by_time, t + 2, k_partitions)
  local created = 0
  if existing then
    local bound = redis.call('HGET', k_partitions, ARGV[1])
    if not bound then return { status = 'UNBOUND', now = now } end
    if bound ~= ARGV[2] then return { status = 'OTHER_SUBJECT', bound = bound, now = now } end
  else
    created = redis.call('HSETNX', k_partitions, ARGV[1], ARGV[2])
    if created == 0 then
      local bound = redis.call('HGET', k_partitions, ARGV[1])
      if bound ~= ARGV[2] then return { status = 'OTHER_SUBJECT', bound = bound, now = now } end
    end
  end
  redis.call('ZADD', k_open, now, ARGV[1] .. ':' .. ARGV[t + 1])
  if created == 1 then
    redis.call('ZADD', k_by_time, now, ARGV[1])
    return { status = 'NEW', now = now }
  end
  return { status = 'BOUND', now = now }
end

-- The dispatch step (propose-5.lua says what it checks and writes, and lays out KEYS and ARGV[1 .. 21 + 2n]);
-- `bound_at` is when this submit's binding was made (Redis ms), `time_now` the Redis time if the caller read it
-- already. Returns a reply table.
local function propose_effect(state, entries, approval, open_set, subject, bound_at, time_now)
  local eid, partition, mode = ARGV[1], ARGV[2], ARGV[5]
  -- One read of each hash: this runs once per effect, and every call into Redis costs.
  local st = redis.call('HMGET', state, 'open', 'committed', 'ambiguous', 'payloadHash', 'targetRefused', 'epoch', 'head', 'lastAt', 'owner', 'nonce', 'claimExpires', 'sendDeadline', 'count', 'deathProvenAt', 'late')
  local count = tonumber(st[13] or 0)
  if st[1] == '1' then
    return { status = 'IN_FLIGHT', owner = st[9] or '', nonce = st[10] or '', claimExpires = tonumber(st[11] or 0), sendDeadline = tonumber(st[12] or 0) }
  end
  if st[2] == '1' then return { status = 'COMMITTED' } end
  if st[3] == '1' then return { status = 'AMBIGUOUS' } end
  local bound = st[4] or ''
  if bound ~= '' and bound ~= ARGV[6] then return { status = 'CONFLICTING_PAYLOAD' } end
  if st[5] == '1' then return { status = 'TARGET_ERROR' } end
  if tonumber(st[6] or 0) ~= tonumber(ARGV[4]) then return { status = 'EPOCH_MOVED' } end

  local now = time_now or now_ms()
  local at = tonumber(ARGV[11])
  local misplaced = check_place_of(st[7] or '', tonumber(st[8] or 0), ARGV[3], at, tonumber(ARGV[12]), now)
  if misplaced then return misplaced end
  if now - bound_at > tonumber(ARGV[16]) then return { status = 'REBIND' } end

  local amount = tonumber(ARGV[10])
  local aid = ARGV[13]
  local ap = redis.call('HMGET', approval, 'termsSha', 'revoked', 'revokedAt', 'expiresAt', 'scope', 'capCents', 'uses', 'maxUses', 'reservedCents')
  local ap_uses, ap_reserved = tonumber(ap[7] or 0), tonumber(ap[9] or 0)
  local function lease(reason, missing, cap)
    return { status = 'LEASE', reason = reason, missing = missing, revoked = ap[2] == '1', revokedAt = tonumber(ap[3] or 0),
      reservedCents = ap_reserved, uses = ap_uses, cap = cap, now = now }
  end
  if not ap[1] then return lease('approval ' .. aid .. ' does not exist', true) end
  if ap[1] ~= ARGV[14] then return { status = 'TERMS', terms = hget_str(approval, 'terms') } end
  if ap[2] == '1' then return lease('approval ' .. aid .. ' was revoked', false) end
  -- Judged at the later of Redis's time and the batch's (`at`, the worker's estimate, up to a second ahead): the entries
  -- are recorded at `at`, and a receipt must never show a dispatch at or after the expiry of the approval it quotes.
  if tonumber(ap[4] or 0) <= math.max(now, at) then return lease('approval ' .. aid .. ' has expired', false) end
  if ap[5] ~= partition then return lease('approval ' .. aid .. ' covers ' .. (ap[5] or '?') .. ', not ' .. partition, false) end
  local cap = tonumber(ap[6] or 0)
  -- Cents go into text and replies as Redis holds them: a Lua number prints (and cjson encodes) with 14 digits, which
  -- would misstate a cap of 15 or more. The reply carries the cap (`cap`), and the worker states it in the effect's
  -- currency, which this step does not know; the reason here names none, so it never reads as cents or dollars.
  if amount > cap then
    return lease('approval ' .. aid .. ' covers at most ' .. ap[6] .. ', not ' .. ARGV[10] .. ' (minor units)', false, ap[6])
  end

  local n = tonumber(ARGV[18])
  -- A first proposal fixes the payload (I5).
  local payload = bound == '' and { 'payloadHash', ARGV[6] } or nil
  if mode == 'refuse' then
    push_batch(state, entries, at, 22, n, payload, count)
    return { status = 'OK', now = now }
  end
  if mode ~= 'dispatch' then error(redis.error_reply('propose: unknown mode ' .. mode)) end
  -- A dispatch is sent on the facts its premise read found, so that read must be recent: one begun more than ARGV[21]
  -- ms (PREMISE_MAX_AGE_MS, journal.ts) ago, as a worker paused between its read and this step makes it, is read
  -- again (STALE_READ, nothing written). ARGV[20] is a lower bound of the read's start, so the age is never
  -- understated; a start not known (0) or later than Redis's time (its clock stepped back) dates nothing.
  local read_from = tonumber(ARGV[20])
  if read_from <= 0 or read_from > now or now - read_from > tonumber(ARGV[21]) then
    return { status = 'STALE_READ', readFrom = read_from, now = now }
  end

  local max_uses = tonumber(ap[8] or 0)
  if ap_uses >= max_uses then return lease('approval ' .. aid .. ' has used all ' .. max_uses .. ' of its uses', false) end
  if ap_reserved + amount > cap then
    return { status = 'OVER_CAP', cap = 'approval:' .. aid, limit = ap[6], reserved = ap[9] or '0',
      reservedCents = ap_reserved, uses = ap_uses, now = now }
  end
  -- ARGV[19]: what the effect may be sent for only once on its subject (a credit's incident), '' for nothing. Whichever
  -- effect was dispatched for it first holds it (in flight, landed or ambiguous); a resolving refusal lets it go.
  -- 'refunds' (REFUNDS_HOLD, src/core/effects.ts) is a refund decided on the payment's other refunds: one such refund
  -- is out at a time (in flight or ambiguous), and its landing lets go, at `refunds:freed`, since from then on a read
  -- of the payment at Stripe shows it. ARGV[20] is when this attempt's premise read began (Redis ms, a lower bound): a
  -- landing let go at or after that may be missing from the read, which is then made again (REREAD).
  local once = ARGV[19]
  local serial = once == 'refunds'
  local sub = serial and redis.call('HMGET', subject, 'limit', 'movedCents', 'name', once, 'refunds:freed')
    or once ~= '' and redis.call('HMGET', subject, 'limit', 'movedCents', 'name', once)
    or redis.call('HMGET', subject, 'limit', 'movedCents', 'name')
  local moved = tonumber(sub[2] or 0)
  if sub[1] and moved + amount > tonumber(sub[1]) then
    return { status = 'OVER_CAP', cap = sub[3] or '', limit = sub[1], reserved = sub[2] or '0',
      reservedCents = ap_reserved, uses = ap_uses, now = now }
  end
  if once ~= '' and sub[4] and sub[4] ~= eid then
    if serial then return { status = 'WAIT', holder = sub[4], now = now } end
    return { status = 'ONCE', once = once, holder = sub[4], reservedCents = ap_reserved, uses = ap_uses, now = now }
  end
  if serial and sub[5] and tonumber(sub[5]) >= read_from then
    return { status = 'REREAD', freed = tonumber(sub[5] or 0), now = now }
  end

  local epoch = tonumber(ARGV[4]) + 1
  local claim_expires = now + tonumber(ARGV[9])
  -- The worker started its stopwatch before this script ran, so now + timeout is never earlier than its abort;
  -- the deadline recovery counts from is the later of that and the one the entry records.
  local deadline = math.max(tonumber(ARGV[17]), now + tonumber(ARGV[17]) - at)
  -- Values that arrived as ARGV are written as they came: a Lua number handed to redis.call is printed back to text
  -- (%.14g): about 2 µs of the 27 this step took, replayed alone.
  local claim = { 'open', '1', 'epoch', epoch, 'owner', ARGV[7], 'nonce', ARGV[8], 'claimExpires', claim_expires,
    'sendDeadline', deadline, 'approvalId', aid, 'amount', ARGV[10] }
  if payload then claim[#claim + 1] = payload[1]; claim[#claim + 1] = payload[2] end
  -- Kept past the claim, so a settle or a late landing finds what the effect holds.
  if once ~= '' then claim[#claim + 1] = 'once'; claim[#claim + 1] = once end
  push_batch(state, entries, ARGV[11], 22, n, claim, count)
  if st[14] or st[15] then redis.call('HDEL', state, 'deathProvenAt', 'late') end
  redis.call('HINCRBY', approval, 'reservedCents', ARGV[10])
  redis.call('HINCRBY', approval, 'uses', '1')
  redis.call('HINCRBY', subject, 'movedCents', ARGV[10])
  if once ~= '' then redis.call('HSET', subject, once, eid) end
  redis.call('SADD', open_set, eid)
  return { status = 'OK', epoch = epoch, claimExpires = claim_expires, sendDeadline = deadline, now = now }
end

-- Closes a failed case's inbox item `id` (case_failed): out of the open index and the case's set of open items, its
-- closure recorded unless one stands already (the first closure stands). True when this call closed it.
local function close_case_failure(open_index, case_open, closures, closed_by_time, id, closure, at)
  redis.call('ZREM', open_index, id)
  redis.call('SREM', case_open, id)
  if redis.call('HSETNX', closures, id, closure) == 0 then return false end
  redis.call('ZADD', closed_by_time, at, id)
  return true
end
