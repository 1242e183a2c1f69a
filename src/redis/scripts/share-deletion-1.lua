-- share-deletion: hands out a deleted customer's balance across its landed credits, each credit's part once and for
-- good. The deletion is recorded on a credit by whoever reaches it first: the `customer.deleted` being applied, or the
-- re-read of a credit that committed after it (src/facts/apply.ts foldDeletion), possibly in another process at the
-- same moment. Each computing parts from its own read of the chains would give the balance out twice (two credits both
-- read lost for one credit's worth of balance) and record two different parts on one credit. Here a credit that has a
-- part keeps it (its fact is written again with the same part: a duplicate), and a credit without one takes what is
-- left of the balance after every part given before, up to its own unused amount, in the order ARGV lists them
-- (newest first). The parts given never sum to more than the balance held.
-- KEYS[1] the customer's deletion parts (HASH: field <balance transaction id> = its part, cents of credit; field
--   `:given` = the sum of the parts)
-- ARGV[1] the balance's credit at the deletion (cents, >= 0: what the kept deletion's balance held as credit)
-- ARGV[2..] triples, one per credit, newest first: its balance transaction id; what of it may take a part (cents,
--   >= 0: its unused amount, 0 for a credit in another currency or of unknown amount); the part its chain's deletion
--   fact already says ('' for none: a fact written before the parts were kept here, taken as it stands)
-- Returns JSON {status}: OK {parts (one per triple, in ARGV order, cents >= 0), given (the sum of all parts kept)}
local parts_key = KEYS[1]
local credit = tonumber(ARGV[1])
local given = hget_num(parts_key, ':given')
local parts = {}
for i = 2, #ARGV, 3 do
  local made = ARGV[i]
  local part = redis.call('HGET', parts_key, made)
  if part then
    part = tonumber(part)
  else
    if ARGV[i + 2] ~= '' then
      part = tonumber(ARGV[i + 2])
    else
      part = math.max(0, math.min(tonumber(ARGV[i + 1]), credit - given))
    end
    redis.call('HSET', parts_key, made, part)
    given = given + part
    redis.call('HSET', parts_key, ':given', given)
  end
  parts[#parts + 1] = part
end
return reply({ status = 'OK', parts = parts, given = given })
