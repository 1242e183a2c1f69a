-- enter-deployment: the signing keys of a deployment. A process that signs entries (a worker, the API, the webhook
-- route) joins the deployment on its Redis and key prefix only with a key the deployment signs with, or one it rotated
-- to: it holds a key the deployment signed with before as retired. Another deployment's process started on this prefix
-- by mistake (both left at the default) would otherwise recover its effects and sign its receipts with a key its
-- auditors do not hold. The first process records its key; a key rotated to is added. Writes only what is new, so a
-- restart on a full Redis (OOM) passes.
-- A one-off command that signs (`interlock refund`, `credit`, `inbox` …) only checks ('check'): it records no key.
-- KEYS[1] the deployment's signing kids (SET)
-- ARGV[1] 'join' | 'check'   ARGV[2] the kid this process signs with   ARGV[3..] the kids it holds as retired
-- Returns JSON {status}: OK {recorded: 'first' | 'added' | 'known' | 'unrecorded'} | FOREIGN {kids: the deployment's,
--   at most 10}
local kids = KEYS[1]
local join = ARGV[1] == 'join'
if redis.call('SISMEMBER', kids, ARGV[2]) == 1 then return reply({ status = 'OK', recorded = 'known' }) end
if redis.call('SCARD', kids) == 0 then
  if not join then return reply({ status = 'OK', recorded = 'unrecorded' }) end
  redis.call('SADD', kids, ARGV[2])
  return reply({ status = 'OK', recorded = 'first' })
end
for i = 3, #ARGV do
  if redis.call('SISMEMBER', kids, ARGV[i]) == 1 then
    if not join then return reply({ status = 'OK', recorded = 'unrecorded' }) end
    redis.call('SADD', kids, ARGV[2])
    return reply({ status = 'OK', recorded = 'added' })
  end
end
local known = redis.call('SRANDMEMBER', kids, 10)
table.sort(known)
return reply({ status = 'FOREIGN', kids = known })
