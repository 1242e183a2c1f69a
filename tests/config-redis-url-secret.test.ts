// Rule: a refused setting quotes its value, secrets by kind or length only: a value that may be a secret put in the
// wrong setting (an env file's swapped line: the Redis password, a JWT, an API token where REDIS_URL goes) is shown by
// its kind or its length, never whole, however short: a Redis password is often under 16 characters and may read like
// a bare host name. REDIS_URL is quoted whole only as a host with its port, an IP address or localhost, and then only
// if redactSecrets leaves it as it is.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('REDIS_URL refused', () => {
  it.each([
    ['a dotted Redis password', 'Kx7.mQ2-vR9pL4wZt8Yb3'],
    ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJyb2xlIjoicmVkaXMifQ.k3tP9mWq2vLx8ZrN4bYc'],
    ['an API token with a dot', 'opsToken.0123456789abcdef'],
    ['a long dotted value, port and all', 'Kx7.mQ2-vR9pL4wZt8Yb3:6379x'],
  ])('shows %s by its length only', (_what, secret) => {
    const message = refusal({ REDIS_URL: secret });
    expect(message).toContain('REDIS_URL');
    expect(message).not.toContain(secret);
    expect(message).toContain(`(given: ${secret.length} characters, not shown)`);
  });

  it('shows a Stripe key by its kind only', () => {
    const key = `sk_live_${'a1B2c3D4'.repeat(4)}`;
    const message = refusal({ REDIS_URL: key });
    expect(message).not.toContain(key);
    expect(message).toMatch(/\(given: sk_live_…\w{4}\)/);
  });

  it.each(['localhost', 'redis.internal:6379', '127.0.0.1:6379', 'redis.internal.example.com:6380', '[::1]:6379', '10.0.0.5'])('quotes %s, a host with its port or an address, whole', (host) => {
    expect(refusal({ REDIS_URL: host })).toContain(`(given: ${JSON.stringify(host)})`);
  });

  // A bare name cannot be told from a short password (hunter2hunter2), so it is shown by its length.
  it.each(['cache.local', 'hunter2hunter2'])('shows %s, a bare name, by its length', (value) => {
    expect(refusal({ REDIS_URL: value })).toContain(`(given: ${value.length} characters, not shown)`);
  });

  it('shows a URL without its password', () => {
    const message = refusal({ REDIS_URL: 'http://default:Sup3rS3cretPw@127.0.0.1:6379' });
    expect(message).toContain('(given: http://…@127.0.0.1:6379)');
    expect(message).not.toContain('Sup3rS3cretPw');
  });
});

describe('REDIS_URL holding a short Redis password (REDIS_PASSWORD and REDIS_URL lines swapped)', () => {
  it.each(['hunter2hunter2', 'Tr0ub4dor&3', 'p@ssw0rd!2024', 'default:s3cr3t!'])('does not quote %s whole', (secret) => {
    const message = refusal({ REDIS_URL: secret });
    expect(message).toContain('REDIS_URL');
    expect(message).not.toContain(secret);
  });
});
