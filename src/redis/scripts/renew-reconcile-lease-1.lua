-- renew-reconcile-lease: the process running a reconciliation pass keeps its lease, by compare-and-set on its token.
-- LOST: the lease lapsed (the process stalled past its TTL) and maybe another process took it; the pass stops, and
-- what it ends with is not recorded (end-reconcile-pass-2).
-- KEYS[1] lease string
-- ARGV[1] token   ARGV[2] lease TTL ms
-- Returns JSON {status}: OK {now} | LOST
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return reply({ status = 'LOST' }) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return reply({ status = 'OK', now = now_ms() })
