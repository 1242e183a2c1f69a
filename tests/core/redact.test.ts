// Secrets in text that may reach a log, an API answer or a stored error are masked, one way for every kind: its
// prefix and, for a long secret, its last four characters (Stripe keys, webhook secrets, this service's tokens,
// Anthropic keys, and whatever follows "Bearer ").
import { describe, expect, it } from 'vitest';
import { redactDeep, redactSecrets, shownSetting, shownUrl } from '../../src/core/redact.js';

const ANTHROPIC = 'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789';

describe('redactSecrets', () => {
  it('masks every kind of secret it knows, keeping its kind and, for a long one, its last four characters', () => {
    const text = `stripe sk_test_51AbCdEfGh rk_live_ZyXwVuTs whsec_QwErTy1234 token itk_AsDfGhJkL anthropic ${ANTHROPIC}`;
    const masked = redactSecrets(text);
    for (const secret of ['51AbCdEfGh', 'ZyXwVuTs', 'QwErTy1234', 'AsDfGhJkL', 'AbCdEfGhIjKl']) expect(masked).not.toContain(secret);
    expect(masked).toContain('sk-ant-api03-…6789');
    expect(masked).toContain('stripe sk_test_… rk_live_… whsec_… token itk_… anthropic');
  });

  it("leaves the sandboxes' public key (sk_test_sandbox) as it is, so a logged `stripe listen` line runs as logged, and masks any longer key", () => {
    expect(redactSecrets('stripe listen --api-key sk_test_sandbox --skip-update')).toBe('stripe listen --api-key sk_test_sandbox --skip-update');
    expect(redactSecrets('key sk_test_sandboxAbCdEfGh1234 and rk_test_sandbox')).toBe('key sk_test_…1234 and rk_test_…');
  });

  it('masks a bearer credential whatever it is, as an SDK error quoting its header shows it', () => {
    const sdk = `Headers.append: "Bearer ${ANTHROPIC}\n# prod key" is an invalid header value.`;
    expect(redactSecrets(sdk)).not.toContain('EfGhIjKl');
    expect(redactSecrets('Authorization: Bearer 0123456789abcdef')).toBe('Authorization: Bearer …cdef');
    expect(redactSecrets('Authorization: Bearer 0123456789')).toBe('Authorization: Bearer …');
    // A bearer credential of a known kind is masked as that kind, once.
    expect(redactSecrets(`Bearer ${ANTHROPIC}`)).toBe('Bearer sk-ant-api03-…6789');
  });

  it('masks the credentials of a URL (a REDIS_URL with a password), keeping the host', () => {
    expect(redactSecrets('Cannot reach Redis at redis://default:Sup3rS3cret@127.0.0.1:6399. Start Redis')).toBe('Cannot reach Redis at redis://…@127.0.0.1:6399. Start Redis');
    expect(redactSecrets('rediss://:only-a-password@cache.internal:6380/0')).toBe('rediss://…@cache.internal:6380/0');
    expect(redactSecrets('http://127.0.0.1:3000/v1/effects?x=a@b')).toBe('http://127.0.0.1:3000/v1/effects?x=a@b');
    // An "@" inside the password: the parser (and the Redis client) take the last one as the host's start.
    expect(redactSecrets('Redis     redis://default:hunter2@Secret99@127.0.0.1:6379 up')).toBe('Redis     redis://…@127.0.0.1:6379 up');
    expect(redactSecrets('redis://:a@b@c@cache:6380/1?x=y@z')).toBe('redis://…@cache:6380/1?x=y@z');
  });

  it('reaches strings inside an answer body', () => {
    expect(JSON.stringify(redactDeep({ error: { message: `failed: ${ANTHROPIC}` } }))).not.toContain('IjKlMnOp');
  });
});

// RULE: a URL setting is shown from its parsed parts, never masked in its text; a value of an address setting where a
// secret can land by mistake is quoted only when it looks like an address.
describe('shownUrl and shownSetting', () => {
  it('shows a REDIS_URL as scheme, …@, host, port and database, whatever its password holds', () => {
    expect(shownUrl('redis://app:correct horse battery staple@127.0.0.1:6399/2')).toBe('redis://…@127.0.0.1:6399/2');
    // The client takes "ss" as the host and the rest as the fragment: neither part of the password is shown.
    expect(shownUrl('redis://app:p@ss#word@127.0.0.1:6379')).toBe('redis://…@ss');
    expect(shownUrl('rediss://cache.internal:6380?password=hunter2')).toBe('rediss://cache.internal:6380');
    expect(shownUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(shownUrl('redis://[::1]:6379/0')).toBe('redis://[::1]:6379/0');
    expect(shownUrl('not a url')).toBe('…');
  });

  it('masks URL credentials that hold spaces, or an "@" then a "#", in free text too', () => {
    const masked = redactSecrets('Cannot reach Redis at redis://app:correct horse battery staple@127.0.0.1:6399 (connect ECONNREFUSED). Start Redis');
    expect(masked).toBe('Cannot reach Redis at redis://…@127.0.0.1:6399 (connect ECONNREFUSED). Start Redis');
    expect(redactSecrets('redis://app:p@ss#word@127.0.0.1:6379/1')).toBe('redis://…@127.0.0.1:6379/1');
    // Line by line: an "@" on the next line is not taken for the end of credentials.
    expect(redactSecrets('at http://127.0.0.1:3000\nby lee@support')).toBe('at http://127.0.0.1:3000\nby lee@support');
  });

  it('quotes an address as given and a secret by its kind or its length only', () => {
    expect(shownSetting('127.0.0.1:12111')).toBe('127.0.0.1:12111');
    expect(shownSetting('localhost')).toBe('localhost');
    expect(shownSetting('http://user:pw@127.0.0.1:12111/v1')).toBe('http://…@127.0.0.1:12111/v1');
    expect(shownSetting('sk_live_51Hq7RvOpsReviewNotARealKey0123456789abcdef')).toBe('sk_live_…cdef');
    expect(shownSetting('whsec_RvOpsReviewNotARealSecret0123456789abcdef')).toBe('whsec_…cdef');
    expect(shownSetting('lee:approver:AbCdEf0123456789AbCdEf')).toBe('35 characters, not shown');
    expect(shownSetting('AbCdEf0123456789AbCdEf0123456789')).toBe('32 characters, not shown');
  });
});

