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

-- Where a batch of sealed entries wants to go: after `expected_head`, at time `at` (Redis ms, the same for the
-- whole batch). Returns nil when the chain head is still `expected_head` (compare-and-set) and `at` agrees with
-- the Redis clock and follows the last entry; otherwise a reply table with what the writer needs to reseal.
local function check_place_of(head, last_at, expected_head, at, max_skew_ms, now)
  if head ~= expected_head then return { status = 'HEAD_MOVED', head = head, lastAt = last_at, now = now } end
  if at == nil or at > now + 1000 or at < now - max_skew_ms or at < last_at then
    return { status = 'BAD_TIME', head = head, lastAt = last_at, now = now }
  end
  return nil
end

local function check_place(state_key, expected_head, at, max_skew_ms, now)
  return check_place_of(hget_str(state_key, 'head'), hget_num(state_key, 'lastAt'), expected_head, at, max_skew_ms, now)
end

-- Appends the batch ARGV[first], ARGV[first + 1], ... as (hash, stored entry) pairs, `n` of them, and moves the
-- chain head to the last hash. The chain is one string of stored entries, one per line (JSON holds no raw line
-- break): a string costs Redis less memory than a list of the same entries. It is written whole with SET, not
-- APPEND, since APPEND reserves room to grow (up to twice the string) on every effect; a chain is a few entries.
local function push_batch(state_key, entries_key, at, first, n)
  local items = {}
  local last_hash = ''
  for i = 0, n - 1 do
    last_hash = ARGV[first + 2 * i]
    items[#items + 1] = ARGV[first + 2 * i + 1]
  end
  local text = table.concat(items, '\n')
  local before = redis.call('GET', entries_key)
  if before then text = before .. '\n' .. text end
  redis.call('SET', entries_key, text)
  redis.call('HSET', state_key, 'head', last_hash, 'lastAt', at)
  redis.call('HINCRBY', state_key, 'count', n)
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
