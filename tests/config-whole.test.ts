// Rule: a configuration given to openStores (createInterlock's `config`, built by hand rather than by loadConfig, or
// from an older version's shape) is held to loadConfig's shape before any field of it is used: one that lacks fields
// or holds one of the wrong kind is refused with invalid_config naming them, not with the sentence of whichever field
// happened to be read first (a missing retiredPublicKeysFile read as a file named "undefined"). And what loadConfig
// refuses with a live key (the durability opt-out, crash injection) it refuses there too: built in code, it ran.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { configProblems, loadConfig } from '../src/config.js';
import { createInterlock } from '../src/interlock.js';
import { createMemoryTarget } from '../src/targets/memory-target.js';
import { REDIS_URL, removePrefixes, testConfig, testKey } from './support/harness.js';

const prefixes: string[] = [];
afterEach(async () => {
  await removePrefixes(prefixes.splice(0));
});

async function refusal(config: unknown): Promise<(Error & { code?: string }) | null> {
  return createInterlock({ config: config as never, target: createMemoryTarget({ tier: 1 }), signingKey: testKey().key, logger: pino({ level: 'silent' }) }).then(
    async (interlock) => {
      await interlock.close();
      return null;
    },
    (caught: Error & { code?: string }) => caught,
  );
}

it('a config missing fields is refused naming what is missing, not a retired-keys file', async () => {
  const keyPrefix = `t-config-whole-${randomBytes(4).toString('hex')}`;
  prefixes.push(keyPrefix);
  const error = await refusal({ redisUrl: REDIS_URL, keyPrefix, unsafeDurability: true });
  expect(error?.code).toBe('invalid_config');
  expect(error?.message).not.toMatch(/RETIRED_PUBLIC_KEYS_FILE/);
  expect(error?.message).toMatch(/missing [^.]*retiredPublicKeysFile/);
  expect(error?.message).toMatch(/claimTtlMs/);
  expect(error?.message).not.toMatch(/missing [^.]*keyPrefix/);
});

it('a config holding a field of the wrong kind is refused naming that field', async () => {
  const keyPrefix = `t-config-whole-${randomBytes(4).toString('hex')}`;
  prefixes.push(keyPrefix);
  const error = await refusal({ ...testConfig({ keyPrefix }), heartbeatMs: '1000', unsafeDurability: 'yes', stripeWebhookSecrets: 'whsec_x' });
  expect(error?.code).toBe('invalid_config');
  expect(error?.message).toMatch(/heartbeatMs must be a finite number \(it is string\)/);
  expect(error?.message).toMatch(/unsafeDurability must be true or false/);
  expect(error?.message).toMatch(/stripeWebhookSecrets must be a list/);
});

it('what loadConfig builds, with fields overridden and nullable ones set, is whole', () => {
  expect(configProblems(loadConfig({}))).toEqual([]);
  expect(configProblems({ ...loadConfig({}), workerId: 'w-1', stripeRatePerSecond: 25, keyPrefix: 'mine' })).toEqual([]);
  expect(configProblems({ ...loadConfig({}), claimTtlMs: Number.NaN })).toEqual(['claimTtlMs must be a finite number (it is NaN)']);
  expect(configProblems(null)).toEqual(['the configuration (null) must be an object']);
});

it('a config built in code with a live key and the durability opt-out or crash injection is refused, as loadConfig refuses it', async () => {
  for (const override of [{ unsafeDurability: true }, { crashAt: 'before_send' as const, unsafeDurability: false }]) {
    const keyPrefix = `t-config-whole-${randomBytes(4).toString('hex')}`;
    prefixes.push(keyPrefix);
    const error = await refusal({ ...testConfig({ keyPrefix }), stripeSecretKey: 'sk_live_configWholeNotARealKey', allowLive: true, ...override });
    expect(error?.code).toBe('invalid_config');
    expect(error?.message).toMatch(override.unsafeDurability ? /INTERLOCK_UNSAFE_DURABILITY=1 .* refused with a live key/ : /INTERLOCK_CRASH_AT .* never with a live key/);
  }
});
