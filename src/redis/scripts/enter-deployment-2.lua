-- enter-deployment: the signing keys of a deployment. A process that signs entries (a worker, the API, the webhook
-- route) joins the deployment on its Redis and key prefix only with a key the deployment signs with, or the one it
-- rotates to next: it holds the key the deployment rotated to last (its newest) as retired. Another deployment's
-- process started on this prefix by mistake (both left at the default) would otherwise recover its effects and sign its
-- receipts with a key its auditors do not hold; and a process holding only an older key as retired (the shared
-- retired-keys file, its own key file forgotten so it made one) would fork the deployment onto a key the current one
-- never rotated to, signing entries the rest of the deployment calls signed by an unknown key. The first process
-- records its key, a key rotated to is added, and each becomes the newest. Writes only what is new, so a restart on a
-- full Redis (OOM) passes.
-- The newest is recorded as '<kid>|<how many kids the set held then>': a release before it (enter-deployment-1) adds a
-- rotated key without moving it, and a count that no longer matches says so. Without a newest that holds (none yet, or
-- one such a release left behind), a new key must hold every key the deployment recorded as retired; a one-key
-- deployment's newest is its key, recorded at the next start.
-- A one-off command that signs (`interlock refund`, `credit`, `inbox` …) only checks ('check'): it records nothing.
-- `interlock keys adopt` ('adopt') makes a key the deployment's only one and its newest, on purpose: the way away
-- from a key that leaked (a rotation would have to hold it as retired, and the leaked kid left in the set would still
-- admit a process signing with it) or was lost. It writes only if the record is still the one the operator was shown
-- (ARGV[3..]), so a process that joined or rotated meanwhile is never overwritten unseen. It writes the new kid first:
-- a full Redis (OOM) refuses that write before anything changed, never halfway.
-- KEYS[1] the deployment's signing kids (SET)   KEYS[2] its newest: '<kid>|<count>' (STRING)
-- ARGV[1] 'join' | 'check' | 'adopt'   ARGV[2] the kid this process signs with
-- ARGV[3..] join, check: the kids it holds as retired; adopt: ARGV[3] KEYS[2] as read ('' when absent), ARGV[4..]
--   KEYS[1]'s members as read
-- Returns JSON {status}: OK {recorded: 'first' | 'added' | 'known' | 'unrecorded' | 'adopted' | 'unchanged' (adopt:
--   the record was this kid alone already)} | FOREIGN {kids: the deployment's, at most 10; count: how many it has;
--   newest: the kid it rotated to last, or false when not known} | CHANGED (adopt: the record is not the one read;
--   nothing was written)
local kids = KEYS[1]
local newestKey = KEYS[2]
local join = ARGV[1] == 'join'
local kid = ARGV[2]
if ARGV[1] == 'adopt' then
  local count = redis.call('SCARD', kids)
  if (redis.call('GET', newestKey) or '') ~= ARGV[3] or count ~= #ARGV - 3 then return reply({ status = 'CHANGED' }) end
  for i = 4, #ARGV do
    if redis.call('SISMEMBER', kids, ARGV[i]) == 0 then return reply({ status = 'CHANGED' }) end
  end
  local only = kid .. '|1'
  if count == 1 and ARGV[4] == kid and ARGV[3] == only then return reply({ status = 'OK', recorded = 'unchanged' }) end
  redis.call('SADD', kids, kid)
  redis.call('SET', newestKey, only)
  for i = 4, #ARGV do
    if ARGV[i] ~= kid then redis.call('SREM', kids, ARGV[i]) end
  end
  return reply({ status = 'OK', recorded = 'adopted' })
end
local count = redis.call('SCARD', kids)
local newest = false
local recorded = redis.call('GET', newestKey)
if recorded then
  local newestKid, newestCount = string.match(recorded, '^(.+)|(%d+)$')
  if newestKid and tonumber(newestCount) == count then newest = newestKid end
end
if redis.call('SISMEMBER', kids, kid) == 1 then
  if join and not newest and count == 1 then redis.call('SET', newestKey, kid .. '|1') end
  return reply({ status = 'OK', recorded = 'known' })
end
if count == 0 then
  if not join then return reply({ status = 'OK', recorded = 'unrecorded' }) end
  redis.call('SADD', kids, kid)
  redis.call('SET', newestKey, kid .. '|1')
  return reply({ status = 'OK', recorded = 'first' })
end
local retired = {}
for i = 3, #ARGV do retired[ARGV[i]] = true end
local rotated
if newest then
  rotated = retired[newest] == true
else
  rotated = true
  for _, one in ipairs(redis.call('SMEMBERS', kids)) do
    if not retired[one] then rotated = false end
  end
end
if rotated then
  if not join then return reply({ status = 'OK', recorded = 'unrecorded' }) end
  redis.call('SADD', kids, kid)
  redis.call('SET', newestKey, kid .. '|' .. (count + 1))
  return reply({ status = 'OK', recorded = 'added' })
end
local known = redis.call('SRANDMEMBER', kids, 10)
table.sort(known)
return reply({ status = 'FOREIGN', kids = known, count = count, newest = newest })
