// Rule (redis/durability.ts recordCreditCurrency, interlock.ts warnOfSettingsApart; README start-up warnings): a process
// whose INTERLOCK_CREDIT_CURRENCY differs from the one its deployment recorded is warned at start, naming both, even
// when Redis is at its memory limit and refuses the write of its own (OOM): the currency it read is still another, and
// it would decide credits a worker on that one refuses as stale. It still starts, and the record stays as it was.
// A private Redis, so that its maxmemory is only this file's.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { enterWithKey, openStores, type Config, type SigningKey, type Stores } from '../../src/interlock.js';
import { createKeys } from '../../src/redis/keys.js';
import { testConfig, testKey } from '../support/harness.js';
import { jsonLineSink } from '../support/json-lines.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

type Line = { level: number; msg: string } & Record<string, unknown>;

let server: PrivateRedis;
let redis: Redis;
const opened: Stores[] = [];
beforeAll(async () => {
  server = await startPrivateRedis(['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction']);
  redis = new Redis(server.url);
});
afterAll(async () => {
  await Promise.all(opened.map((stores) => stores.close().catch(() => undefined)));
  redis?.disconnect();
  await server?.stop();
});

/** Starts a process's stores on `config` with `key` and enters the deployment as serve does; returns its warn lines. */
async function start(config: Config, key: SigningKey): Promise<Line[]> {
  const { sink, lines } = jsonLineSink<Line>();
  const stores = await openStores(config, { logger: pino({ level: 'info' }, sink), signingKey: key });
  opened.push(stores);
  await enterWithKey(stores);
  return lines.filter((line) => line.level >= 40);
}

it('warns a process on eur beside a deployment recorded as usd on a full Redis, saying eur was not recorded', async () => {
  const config = testConfig({ redisUrl: server.url, creditCurrency: 'usd' });
  const key = testKey();
  const currencyKey = createKeys(config.keyPrefix).creditCurrency;
  expect(await start(config, key.key)).toEqual([]);
  await redis.config('SET', 'maxmemory', '1');
  try {
    const warned = await start({ ...config, creditCurrency: 'eur' }, key.key);
    const currency = warned.filter((line) => line.deploymentCreditCurrency !== undefined);
    expect(currency).toHaveLength(1);
    expect(currency[0]).toMatchObject({ creditCurrency: 'eur', deploymentCreditCurrency: 'usd', recorded: false });
    expect(currency[0]?.msg).toContain('This process gives credits in eur (INTERLOCK_CREDIT_CURRENCY), but the deployment on this Redis');
    expect(currency[0]?.msg).toContain('Redis is full');
    expect(currency[0]?.msg).not.toContain('This process recorded eur');
    expect(await redis.get(currencyKey)).toBe('usd');
    // A process on the recorded currency writes nothing and is not warned, full Redis or not.
    expect((await start(config, key.key)).filter((line) => line.deploymentCreditCurrency !== undefined)).toEqual([]);
  } finally {
    await redis.config('SET', 'maxmemory', '0');
  }
});
