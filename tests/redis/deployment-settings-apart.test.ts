// Rule (interlock.ts enterWithKey): a process started with settings apart from the rest of its deployment says so at
// start, naming what differs and the setting to change, without refusing to start. Each started without a word: an API
// started after a rotation without INTERLOCK_RETIRED_PUBLIC_KEYS_FILE called every receipt signed before it invalid; a
// worker on another INTERLOCK_CREDIT_CURRENCY than the API refused every credit as stale; a worker on a mistyped
// INTERLOCK_KEY_PREFIX started an empty deployment of its own, and proposals made through the API waited for ever.
// A private Redis, so that the other deployments on it are only this file's.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enterWithKey, openStores, type Config, type SigningKey, type Stores } from '../../src/interlock.js';
import { holdDeploymentMarker } from '../../src/redis/durability.js';
import { createKeys } from '../../src/redis/keys.js';
import { tempDir } from '../cli/run-cli.js';
import { testConfig, testKey } from '../support/harness.js';
import { jsonLineSink } from '../support/json-lines.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

type Line = { level: number; msg: string } & Record<string, unknown>;

const temp = tempDir('settings-apart');
let server: PrivateRedis;
let redis: Redis;
const opened: Stores[] = [];
beforeAll(async () => {
  server = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
  redis = new Redis(server.url);
});
afterAll(async () => {
  await Promise.all(opened.map((stores) => stores.close().catch(() => undefined)));
  redis?.disconnect();
  await server?.stop();
  temp.remove();
});

/** Starts a process's stores on `config` with `key` and enters the deployment as serve does; returns its warn lines. */
async function start(config: Config, key: SigningKey): Promise<{ warned: Line[]; stores: Stores }> {
  const { sink, lines } = jsonLineSink<Line>();
  const stores = await openStores(config, { logger: pino({ level: 'info' }, sink), signingKey: key });
  opened.push(stores);
  // Twice, as serve enters: before its roles start, then in requireDurableIntake or startSender.
  await enterWithKey(stores);
  await enterWithKey(stores);
  return { warned: lines.filter((line) => line.level >= 40), stores };
}

function deploymentConfig(overrides: Partial<Config> = {}): Config {
  return testConfig({ redisUrl: server.url, ...overrides });
}

describe('a process started apart from its deployment', () => {
  it('without the retired key the deployment signed with before a rotation: warns once, naming the key and INTERLOCK_RETIRED_PUBLIC_KEYS_FILE', async () => {
    const config = deploymentConfig();
    const old = testKey();
    const rotated = testKey();
    const retiredFile = join(temp.dir, `retired-${config.keyPrefix}.pem`);
    writeFileSync(retiredFile, old.publicPem, { mode: 0o600 });
    expect((await start(config, old.key)).warned).toEqual([]);
    // The rotation: the new key, holding the old as retired, verifies both and says nothing.
    expect((await start({ ...config, retiredPublicKeysFile: retiredFile }, rotated.key)).warned).toEqual([]);
    // The API restarted on the new key, its retired keys file forgotten.
    const { warned } = await start(config, rotated.key);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ kid: old.key.kid, verifiesWith: [rotated.key.kid] });
    expect(warned[0]?.msg).toContain(`signed entries with ${old.key.kid}, a key it recorded but this process was not given`);
    expect(warned[0]?.msg).toContain('Set INTERLOCK_RETIRED_PUBLIC_KEYS_FILE to the file holding its public half');
    // A process started on the old key after the rotation is told to take the new one.
    const stale = await start(config, old.key);
    expect(stale.warned).toHaveLength(1);
    expect(stale.warned[0]?.msg).toContain(`with ${rotated.key.kid}, a key it recorded but this process was not given`);
    expect(stale.warned[0]?.msg).toContain('give this process that key (INTERLOCK_SIGNING_KEY_FILE)');
  });

  it('with another INTERLOCK_CREDIT_CURRENCY: warns naming both, records its own, and the next process on it says nothing', async () => {
    const config = deploymentConfig({ creditCurrency: 'usd' });
    const key = testKey();
    const currencyKey = createKeys(config.keyPrefix).creditCurrency;
    expect((await start(config, key.key)).warned).toEqual([]);
    expect(await redis.get(currencyKey)).toBe('usd');
    expect((await start(config, key.key)).warned).toEqual([]);
    const { warned } = await start({ ...config, creditCurrency: 'eur' }, key.key);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ creditCurrency: 'eur', deploymentCreditCurrency: 'usd' });
    expect(warned[0]?.msg).toContain(`This process gives credits in eur (INTERLOCK_CREDIT_CURRENCY), but the deployment on this Redis with key prefix ${config.keyPrefix} gave them in usd`);
    expect(warned[0]?.msg).toContain('credits decided in usd and not sent yet will be refused as stale');
    // A deliberate change: the record follows the process started last, so the next one on eur is not warned.
    expect(await redis.get(currencyKey)).toBe('eur');
    expect((await start({ ...config, creditCurrency: 'eur' }, key.key)).warned).toEqual([]);
    // And one still on usd is.
    expect((await start(config, key.key)).warned.map((line) => line.deploymentCreditCurrency)).toEqual(['eur']);
  });

  it('as the first on a key prefix beside other deployments on the same Redis: warns naming their prefixes and INTERLOCK_KEY_PREFIX', async () => {
    const config = deploymentConfig();
    const key = testKey();
    // The deployment's first process, alone with a marker on this Redis (the earlier tests held none).
    expect((await start(config, key.key)).warned).toEqual([]);
    await holdDeploymentMarker(redis, createKeys(config.keyPrefix).deployment);
    expect((await start(config, key.key)).warned).toEqual([]);
    const typo = `${config.keyPrefix}-typo`;
    const { warned } = await start({ ...config, keyPrefix: typo }, key.key);
    expect(warned).toHaveLength(1);
    expect(warned[0]?.msg).toContain(`This process starts a new, empty deployment on key prefix ${typo} (INTERLOCK_KEY_PREFIX)`);
    expect(warned[0]?.otherPrefixes).toContain(config.keyPrefix);
    expect(warned[0]?.otherPrefixes).not.toContain(typo);
    // Its restart is no first start: said once.
    expect((await start({ ...config, keyPrefix: typo }, key.key)).warned).toEqual([]);
    // A process holding the marker before it enters (`interlock recover`, an embedding's startSender) is not serve's
    // first start, and is not warned.
    const command = `${config.keyPrefix}-command`;
    await holdDeploymentMarker(redis, createKeys(command).deployment);
    expect((await start({ ...config, keyPrefix: command }, key.key)).warned).toEqual([]);
  });

  it('as the first on the only deployment of its Redis says nothing of other deployments', async () => {
    const alone = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
    try {
      const { warned, stores } = await start(testConfig({ redisUrl: alone.url }), testKey().key);
      expect(warned).toEqual([]);
      await stores.close();
    } finally {
      await alone.stop();
    }
  });
});
