-- check-epoch: right before a request leaves the process, whether its sender still holds the claim it sends
-- under. A process that froze after it dispatched (SIGSTOP, a suspended VM, a long pause) and woke fenced out
-- must not send (DESIGN §7).
-- KEYS[1] effect state hash
-- ARGV[1] holder   ARGV[2] holder's epoch
-- Returns JSON {status}: OK {now} | FENCED {epoch, owner}
local state = KEYS[1]
if hget_str(state, 'open') == '1' and hget_str(state, 'owner') == ARGV[1] and hget_num(state, 'epoch') == tonumber(ARGV[2]) then
  return reply({ status = 'OK', now = now_ms() })
end
return reply({ status = 'FENCED', epoch = hget_num(state, 'epoch'), owner = hget_str(state, 'owner') })
