// Token configuration: `name:role:token` entries from INTERLOCK_API_TOKENS or a file, refused with messages that
// never repeat a token; and the registry, which finds a caller by comparing every configured token.
import { timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTokenRegistry, loadApiLimits, loadTokenRegistry, parseTokenEntries } from '../../webhooks/app.js';
import { createRateLimiter } from '../../webhooks/api/rate-limit.js';

const SECRET = 'itk_s3cr3t_value_0123456789';

function refusal(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a refusal');
}

describe('token configuration', () => {
  it('reads comma-separated entries and a file of lines with comments', () => {
    const listed = loadTokenRegistry(`sam:support:${SECRET}, alex:approver:itk_another_token_012345`);
    expect(listed.callers()).toEqual([
      { name: 'sam', role: 'support' },
      { name: 'alex', role: 'approver' },
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'interlock-tokens-'));
    const file = join(dir, 'tokens');
    writeFileSync(file, `# support desk\nsam:support:${SECRET}\n\naud:auditor:itk_auditor_token_0123456\n`);
    expect(loadTokenRegistry(file).callers()).toEqual([
      { name: 'sam', role: 'support' },
      { name: 'aud', role: 'auditor' },
    ]);
    expect(refusal(() => loadTokenRegistry(join(dir, 'missing'))).message).toMatch(/cannot be read/);
    writeFileSync(join(dir, 'empty'), '# nobody yet\n');
    expect(refusal(() => loadTokenRegistry(join(dir, 'empty'))).message).toMatch(/file .*empty holds no name:role:token entry/);
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    [`sam:support`, /entry 1 is not name:role:token/],
    [`sam:admin:${SECRET}`, /the role must be one of support, approver, auditor, operator/],
    [`sam smith:support:${SECRET}`, /the name must be/],
    ['sam:support:short', /the token must be 16-256/],
    [`sam:support:${SECRET},alex:approver:${SECRET}`, /share one token/],
    [`sam:support:${SECRET},sam:support:itk_other_token_0123456`, /sam:support is configured twice/],
    [' ', /holds no name:role:token entry/],
    [',', /holds no name:role:token entry/],
    ['# none yet', /holds no name:role:token entry/],
  ])('refuses %s, never repeating the token', (spec, message) => {
    const error = refusal(() => loadTokenRegistry(spec));
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain(SECRET);
    expect((error as { code?: string }).code).toBe('invalid_config');
  });

  it('a name may hold several roles, one token each', () => {
    const registry = createTokenRegistry(parseTokenEntries(`dana:approver:${SECRET},dana:support:itk_dana_support_012345`, 'test'));
    expect(registry.authenticate('itk_dana_support_012345')).toEqual({ name: 'dana', role: 'support' });
    expect(registry.authenticate(SECRET)).toEqual({ name: 'dana', role: 'approver' });
  });
});

describe('the registry', () => {
  const registry = createTokenRegistry(parseTokenEntries(`a:support:${SECRET},b:auditor:itk_bbbbbbbbbbbbbbbbbbbb`, 'test'));

  it('knows exact tokens only: no prefix, no suffix, no other case', () => {
    expect(registry.authenticate(SECRET)).toEqual({ name: 'a', role: 'support' });
    for (const near of [SECRET.slice(0, -1), `${SECRET}x`, SECRET.toUpperCase(), '', ' '.repeat(SECRET.length)]) expect(registry.authenticate(near)).toBeNull();
  });

  it('compares every configured token whatever matched (no early exit), digest against digest', () => {
    const compared: number[] = [];
    const counting = createTokenRegistry(parseTokenEntries(`a:support:${SECRET},b:auditor:itk_bbbbbbbbbbbbbbbbbbbb,c:operator:itk_cccccccccccccccccccc`, 'test'), {
      equal: (x, y) => {
        compared.push(x.length, y.length);
        return timingSafeEqual(x, y);
      },
    });
    expect(counting.authenticate(SECRET)).toEqual({ name: 'a', role: 'support' });
    expect(counting.authenticate('x')).toBeNull();
    // Three comparisons each time, of 32-byte SHA-256 digests whatever the presented length.
    expect(compared).toEqual(Array(12).fill(32));
  });
});

describe('the rate limiter', () => {
  it('allows a burst, then one request per refill interval, per key', () => {
    let now = 0;
    const limiter = createRateLimiter({ perMinute: 60, burst: 2 }, () => now);
    expect(limiter.take('a')).toEqual({ allowed: true });
    expect(limiter.take('a')).toEqual({ allowed: true });
    expect(limiter.take('a')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(limiter.take('b')).toEqual({ allowed: true });
    now += 1_000;
    expect(limiter.take('a')).toEqual({ allowed: true });
    expect(limiter.take('a').allowed).toBe(false);
  });
});

describe('the API limits from the environment', () => {
  it('reads each variable, keeps the defaults for unset ones, and 0 turns the rate limit off', () => {
    expect(loadApiLimits({})).toEqual({});
    expect(loadApiLimits({ INTERLOCK_API_RATE_LIMIT: '120', INTERLOCK_API_RATE_BURST: '10', INTERLOCK_API_BODY_LIMIT: '4096', INTERLOCK_API_FACT_TIMEOUT_MS: '500' })).toEqual({ ratePerMinute: 120, rateBurst: 10, bodyBytes: 4096, factTimeoutMs: 500 });
    expect(loadApiLimits({ INTERLOCK_API_RATE_LIMIT: '0' })).toEqual({ ratePerMinute: null });
  });

  it('refuses what is not a whole number in range, naming the variable and the range it takes', () => {
    expect(refusal(() => loadApiLimits({ INTERLOCK_API_BODY_LIMIT: '1kb' })).message).toContain('INTERLOCK_API_BODY_LIMIT: must be a whole number from 1024 to 16777216');
    // Out of range says the range in the operator's words, not the schema library's ("Too small: expected number to be >=1024").
    expect(refusal(() => loadApiLimits({ INTERLOCK_API_BODY_LIMIT: '512' })).message).toContain('INTERLOCK_API_BODY_LIMIT: must be a whole number from 1024 to 16777216');
    expect(refusal(() => loadApiLimits({ INTERLOCK_API_FACT_TIMEOUT_MS: '5' })).message).toContain('INTERLOCK_API_FACT_TIMEOUT_MS: must be a whole number from 100 to 120000');
  });
});
