-- bind-approval: binds approval id ARGV[1] to partition ARGV[2] (its scope), the first binding for good, unless the
-- deployment marker is no longer the one this process holds: a Redis that lost its data (restarted without its
-- append-only file, flushed, failed over to a server without it) takes no grant, as bind_effect takes no effect. The
-- marker lives in the index's slot, beside the bindings, so it is read in the step that binds. A grant writes the
-- approval (grant-approval-1.lua, in its scope's slot) only after this bound it.
-- KEYS[1] approval id -> partition (HASH)   KEYS[2] the deployment marker
-- ARGV[1] approval id   ARGV[2] partition   ARGV[3] the marker this process holds ('' for none: nothing is checked)
-- Returns JSON {status}: BOUND {bound: the partition the id is bound to, this one or another's} | MARKER {found: the
--   marker Redis holds, '' when gone; nothing was written}
if ARGV[3] ~= '' then
  local found = redis.call('GET', KEYS[2])
  if found ~= ARGV[3] then return reply({ status = 'MARKER', found = found or '' }) end
end
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return reply({ status = 'BOUND', bound = redis.call('HGET', KEYS[1], ARGV[1]) })
