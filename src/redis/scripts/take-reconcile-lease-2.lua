-- take-reconcile-lease: a process asks to run a reconciliation pass. It gets the lease (its random token, with a TTL
-- it renews while the pass runs) unless another process holds it; a pass on the schedule also waits while the last
-- pass, whichever process ran it, began less than ARGV[3] ago (several facts processes make one pass an interval
-- between them, not one each), and while Stripe's Retry-After of the last pass lasts (`notBefore`). With the lease
-- comes where the passes stand, read in the same step.
-- The catch-up (a process's pass at start, ARGV[4] given) opens the deployment's catch-up window: `catchUpFrom`, back
-- to the horizon as of the last pass that ended (never further back than ARGV[5]), and the passes start over at its
-- oldest effect. Every pass, whichever process runs it, reads from there while it is open; only a pass that read
-- through to the last effect closes it (end-reconcile-pass-2.lua), so neither a restart, nor a pass stopped part way,
-- nor another process's pass narrows it. A catch-up that finds a window open (one its passes left part way: a pass
-- rate-limited, stopped, or of more effects than one pass reads) keeps its start where that lies further back, and
-- starts the passes over at its oldest effect too: nothing re-sent what Stripe did while no facts process ran, to the
-- effects the window's passes had read already nor to those settled meanwhile whose place lies behind where they stood
-- (a settle recovery committed while the facts processes were down goes on the watch list, which a position on the
-- effects-by-time index has gone past), and once the window closes no pass reads those beyond the horizon again.
-- While it is open, the passes go on only from a position read under it: `positionWindow` (written by this version's
-- scripts only, with the position) names the window and the position. A position any other pass wrote (a process of
-- the version before, which knows no window, reading its own horizon during a rolling upgrade) is not gone on from:
-- the passes start the window over at its oldest effect, so no pass of the window's goes on after effects it skipped.
-- A window opens back to where the passes stand when that lies before the horizon as of the last pass that ended (and
-- before the window open, if any, when a pass other than the window's wrote it): a catch-up the version before left
-- part way (it kept its window in memory) is taken up, not dropped.
-- KEYS[1] lease string   KEYS[2] reconcile cursor hash
-- ARGV[1] token   ARGV[2] lease TTL ms   ARGV[3] least time since the last pass began, ms, for a pass on the
--   schedule ('' for a pass asked for now: neither that nor the Retry-After holds it back)
--   ARGV[4] the horizon, ms, for the catch-up ('' for any other pass)   ARGV[5] the furthest back a window reaches, ms
--   ARGV[6] how far before a window its passes read the bound list (journal.ts RECENT_COMMIT_MS), ms
-- Returns JSON {status, now}: OK {position, failedInARow, catchUpFrom (0: no window open), opened (the catch-up opened
--   the window, or found it open: the passes start over at its oldest effect), endedAt (0: none), takenUp (the position
--   a window opened back to, '' for none)} | HELD | EARLY {startedAt, notBefore}
local now = now_ms()
if redis.call('EXISTS', KEYS[1]) == 1 then return reply({ status = 'HELD', now = now }) end
local started_at = hget_num(KEYS[2], 'startedAt')
local not_before = hget_num(KEYS[2], 'notBefore')
local ended_at = hget_num(KEYS[2], 'endedAt')
-- A hold written before Redis's clock stepped back (the last pass ended "in the future"), or longer than any
-- Retry-After is obeyed (15 minutes), holds nothing back: the schedule must not stall for the size of a clock step.
if ended_at > now or not_before - now > 900000 then not_before = 0 end
if ARGV[3] ~= '' and ((now >= started_at and now - started_at < tonumber(ARGV[3])) or now < not_before) then
  return reply({ status = 'EARLY', now = now, startedAt = started_at, notBefore = not_before })
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
-- A cursor hash written before the window was kept here has no `catchUpFrom`: no window is open.
local catch_up_from = hget_num(KEYS[2], 'catchUpFrom')
local position = hget_str(KEYS[2], 'position')
local failed_in_a_row = hget_num(KEYS[2], 'failedInARow')
local opened = false
local taken_up = ''
-- The position a pass of the open window wrote (none when no window is open).
local own = catch_up_from ~= 0 and hget_str(KEYS[2], 'positionWindow') == hget_str(KEYS[2], 'catchUpFrom') .. ' ' .. position
if ARGV[4] ~= '' then
  local ended = ended_at
  if ended == 0 or ended > now then ended = now end
  local from = ended - tonumber(ARGV[4])
  if catch_up_from ~= 0 and catch_up_from < from then from = catch_up_from end
  if not own then
    -- How far back a pass must have read to stand at the position: its score on the watch list; on the bound list
    -- (effects-by-time, read from ARGV[6] before the window) that much after it. A pass over the horizon reads from
    -- the horizon as of its start (`startedAt`; 0 for a pass cut short, which began after the last pass ended): a
    -- position further back was left by a catch-up part way through its window, and the new one reaches back to it.
    local began = ended
    if started_at > 0 and started_at < began then began = started_at end
    local ok, place = pcall(cjson.decode, position)
    if ok and type(place) == 'table' and type(place.score) == 'number' and (place.list == 'watch' or place.list == 'bound') then
      local reach = math.floor(place.score)
      if place.list == 'bound' then reach = reach + tonumber(ARGV[6]) end
      if reach < began - tonumber(ARGV[4]) and reach < from then
        from = reach
        taken_up = position
      end
    end
  end
  catch_up_from = math.max(now - tonumber(ARGV[5]), from)
  opened = true
  position = ''
  failed_in_a_row = 0
  redis.call('HSET', KEYS[2], 'catchUpFrom', tostring(catch_up_from), 'failedInARow', '0', 'positionWindow', tostring(catch_up_from) .. ' ')
  redis.call('HDEL', KEYS[2], 'position')
elseif catch_up_from ~= 0 and not own then
  -- Written by no pass of this window: its failures in a row were counted at that position, not at the window's start.
  position = ''
  failed_in_a_row = 0
end
return reply({ status = 'OK', now = now, position = position, failedInARow = failed_in_a_row, catchUpFrom = catch_up_from, opened = opened, endedAt = ended_at, takenUp = taken_up })
