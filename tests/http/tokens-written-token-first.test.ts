// Rule: a refusal of INTERLOCK_API_TOKENS never repeats a token. An entry written in the wrong order (token:role:name,
// the token first) holds the token where the name should be, and that field passes the name's pattern: the entry is
// named by its position only, on stderr too (container and CI logs keep it), whichever check refuses it.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTokenRegistry, loadTokenRegistry, parseTokenEntries } from '../../webhooks/app.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { inTempDir, runCli } from '../cli/run-cli.js';

// A generated-looking token (base64url of 32 bytes, as loadOrCreateLocalTokens makes them).
const TOKEN = 'Zq8vN3xLkP2mR7tY9wB4cD6fG1hJ5sA0eUvWx_-kQ3o';
const OTHER = 'itk_other_token_0123456789';

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

let redis: PrivateRedis | null = null;
afterAll(async () => {
  await redis?.stop();
});

describe('INTERLOCK_API_TOKENS with the token written first', () => {
  it.each([
    ['token:role:name (the name is no token)', `${TOKEN}:approver:alice`, 'INTERLOCK_API_TOKENS, entry 1: the token must be 16-256'],
    ['token:name:role (the role is a name)', `${TOKEN}:alice:approver`, 'INTERLOCK_API_TOKENS, entry 1: the role must be one of'],
    ['a second entry so written', `sam:support:${OTHER},${TOKEN}:auditor:bo`, 'INTERLOCK_API_TOKENS, entry 2: the token must be 16-256'],
  ])('%s is refused by position, without the token', (_, spec, said) => {
    const message = refusal(() => loadTokenRegistry(spec));
    expect(message).toContain(said);
    expect(message).not.toContain(TOKEN);
  });

  it('token:role:name whose name would pass for a token (16 or more characters) is refused, the token never taken for the name', () => {
    // support-automation passes the token's pattern: without the check the registry held the secret as the caller's
    // name (logged, written into receipts) and the readable name as its bearer token.
    const message = refusal(() => createTokenRegistry(parseTokenEntries(`${TOKEN}:approver:support-automation`, 'INTERLOCK_API_TOKENS')));
    expect(message).toContain('INTERLOCK_API_TOKENS, entry 1: the name looks like a token');
    expect(message).not.toContain(TOKEN);
    // A hex token (openssl rand -hex 32) so written is refused too.
    const hex = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
    expect(refusal(() => parseTokenEntries(`${hex}:approver:support-automation`, 'INTERLOCK_API_TOKENS'))).toContain('entry 1: the name looks like a token');
  });

  it.each([['svc_3fA9kL2mN8pQ4rS6tU0vWxYz'], ['ZendeskSupportBotProd2024'], ['Support-Automation-Bot-V2-EU1'], ['customer-support-automation-bot-2']])('takes the name %s, as the README documents names', (name) => {
    expect(createTokenRegistry(parseTokenEntries(`${name}:support:${TOKEN}`, 'INTERLOCK_API_TOKENS')).callers()).toEqual([{ name, role: 'support' }]);
  });

  it('a token in the name field is not repeated when the registry finds a shared token or a name given a role twice', () => {
    // Entries handed to the registry as they are (the parser now refuses a name that looks like a token, but the
    // registry takes entries from other callers too).
    const shared = refusal(() => createTokenRegistry([{ name: 'sam', role: 'auditor', token: OTHER }, { name: TOKEN, role: 'support', token: OTHER }]));
    expect(shared).toContain('share one token (one of them is entry 2)');
    expect(shared).not.toContain(TOKEN);
    const twice = refusal(() => createTokenRegistry([{ name: TOKEN, role: 'support', token: OTHER }, { name: TOKEN, role: 'support', token: 'itk_third_token_0123456789' }]));
    expect(twice).toContain('Entry 2 gives a name the role support again');
    expect(twice).not.toContain(TOKEN);
    // A name that cannot be a token is still named.
    expect(refusal(() => createTokenRegistry(parseTokenEntries(`sam:support:${OTHER},sam:support:itk_third_token_0123456789`, 'test')))).toContain('sam:support is configured twice');
  });

  it('serve --roles api refuses it, exit 2, without printing the token on stderr', async () => {
    redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
    await inTempDir('tokens-first', async (dir) => {
      const run = await runCli(['serve', '--roles', 'api', '--port', '0'], {
        INTERLOCK_DATA_DIR: join(dir, 'data'),
        REDIS_URL: redis?.url,
        INTERLOCK_KEY_PREFIX: `tokfirst-${randomBytes(4).toString('hex')}`,
        STRIPE_SECRET_KEY: 'sk_test_tokensfirst',
        STRIPE_API_BASE: 'http://127.0.0.1:1',
        INTERLOCK_API_TOKENS: `${TOKEN}:approver:alice`,
        INTERLOCK_LOG_LEVEL: 'warn',
      });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain('INTERLOCK_API_TOKENS, entry 1');
      expect(run.stderr).not.toContain(TOKEN);
    });
  }, 60_000);
});
