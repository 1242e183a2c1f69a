-- Shared prelude, prepended to every script of this folder when it is loaded (see ../scripts.ts).
-- Replies are JSON strings, so RESP2 and RESP3 connections read them the same way.

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

local function sum_values(key)
  local total = 0
  for _, v in ipairs(redis.call('HVALS', key)) do total = total + tonumber(v) end
  return total
end

-- Checks a sealed entry against the stored chain head (compare-and-set) and the Redis clock, then appends it.
-- Returns nil on success, or a reply table naming why it was not appended.
local function append_entry(state_key, entries_key, eid, expected_head, entry_json, max_skew_ms)
  local head = hget_str(state_key, 'head')
  if head ~= expected_head then return { status = 'HEAD_MOVED', head = head } end
  local entry = cjson.decode(entry_json)
  if entry.effectId ~= eid then return { status = 'BAD_ENTRY', reason = 'entry names another effect' } end
  local prev = entry.prev
  if prev == cjson.null then prev = '' end
  if prev ~= head then return { status = 'BAD_ENTRY', reason = 'entry prev is not the chain head' } end
  local now = now_ms()
  local at = tonumber(entry.at)
  local last_at = hget_num(state_key, 'lastAt')
  if at == nil or at > now + 1000 or at < now - max_skew_ms or at < last_at then
    return { status = 'BAD_TIME', now = now, lastAt = last_at }
  end
  redis.call('RPUSH', entries_key, entry_json)
  redis.call('HSET', state_key, 'head', entry.hash, 'lastAt', at, 'count', hget_num(state_key, 'count') + 1)
  return nil
end
