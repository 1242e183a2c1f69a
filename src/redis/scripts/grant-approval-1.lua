-- grant-approval: creates an approval. Granting the same id again with identical terms is a no-op; with other
-- terms it is refused, so an approval's meaning never changes after effects were dispatched under it. The sha1 of
-- the terms lets the dispatch script check, in one comparison, that the terms a worker quotes are these. The
-- options the support API keeps beside the terms (four eyes, who granted it) are written with them, in this one
-- step: an approval never exists without the options it was granted with, and a grant that creates nothing (a
-- retry, a conflict) writes no options.
-- KEYS[1] approval hash
-- ARGV[1] terms JSON {id, approver, capCents, expiresAt, maxUses, scope}
-- ARGV[2] options JSON, or '' for none (a grant from the CLI)
-- Returns JSON {status}: CREATED {grantedAt} | EXISTS {grantedAt} | CONFLICT
local terms = ARGV[1]
local existing = redis.call('HGET', KEYS[1], 'terms')
if existing then
  if existing == terms then return reply({ status = 'EXISTS', grantedAt = hget_num(KEYS[1], 'grantedAt') }) end
  return reply({ status = 'CONFLICT' })
end
local t = cjson.decode(terms)
local now = now_ms()
redis.call('HSET', KEYS[1], 'terms', terms, 'termsSha', redis.sha1hex(terms), 'id', t.id, 'approver', t.approver,
  'capCents', t.capCents, 'expiresAt', t.expiresAt, 'maxUses', t.maxUses, 'scope', t.scope, 'revoked', '0',
  'grantedAt', now, 'reservedCents', 0, 'uses', 0)
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'options', ARGV[2]) end
return reply({ status = 'CREATED', grantedAt = now })
