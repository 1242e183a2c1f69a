// Rule: a secret put in REDIS_URL by a swapped env line (REDIS_PASSWORD and REDIS_URL exchanged) is never quoted whole
// in the refusal, however short: a Redis password is often under 16 characters and may read like a bare host name.
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

describe('REDIS_URL holding a short Redis password (REDIS_PASSWORD and REDIS_URL lines swapped)', () => {
  it.each(['hunter2hunter2', 'Tr0ub4dor&3', 'p@ssw0rd!2024', 'default:s3cr3t!'])('does not quote %s whole', (secret) => {
    const message = refusal({ REDIS_URL: secret });
    expect(message).toContain('REDIS_URL');
    expect(message).not.toContain(secret);
  });
});
