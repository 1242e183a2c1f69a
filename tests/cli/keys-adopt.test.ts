// Rule: rotating away from a signing key that leaked (so the new key must not hold it as retired) takes one command,
// `interlock keys adopt`, not two hand-typed redis-cli lines: a process with a key the deployment never rotated to is
// refused naming that command; without --yes it says what it would change and changes nothing; with --yes the
// configured key becomes the deployment's only key (the leaked one is no longer admitted) and a process with it
// starts; and an adoption finds the record as it was read or writes nothing (redis/durability.ts
// createDeploymentKeys, enter-deployment-2.lua 'adopt').
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createDeploymentKeys, DeploymentKeyError } from '../../src/redis/durability.js';
import { createKeys } from '../../src/redis/keys.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { REDIS_URL, removePrefixes, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('keys-adopt');
const prefixes: string[] = [];
const nodes: TestNode[] = [];
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
  await removePrefixes(prefixes);
  redis.disconnect();
  temp.remove();
});

/** A deployment that rotated K1 to K2 by the book, then K2 leaked; K3 is the key to rotate to, in a file of its own. */
async function leakedDeployment() {
  const config = testConfig();
  prefixes.push(config.keyPrefix);
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  const [k1, k2, k3] = [testKey(), testKey(), testKey()];
  const file = (name: string, text: string) => {
    const path = join(temp.dir, `${name}-${config.keyPrefix}.pem`);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };
  await (await startNode({ config, target, key: k1.key })).close();
  await (await startNode({ config: { ...config, retiredPublicKeysFile: file('k1', k1.publicPem) }, target, key: k2.key })).close();
  const keys = createKeys(config.keyPrefix);
  const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: config.keyPrefix, INTERLOCK_DATA_DIR: join(temp.dir, `data-${config.keyPrefix}`), INTERLOCK_SIGNING_KEY_FILE: file('k3-private', k3.privatePem) };
  const record = async () => ({ kids: (await redis.smembers(keys.signingKids)).sort(), newest: await redis.get(keys.signingKidNewest) });
  return { config, target, k1, k2, k3, keys, env, file, record };
}

describe('interlock keys adopt', { timeout: 60_000 }, () => {
  it('a process with a key the deployment never rotated to is refused, naming `interlock keys adopt`, not redis-cli lines', async () => {
    const { config, target, k1, k3, record } = await leakedDeployment();
    const before = await record();
    const refused: unknown = await startNode({ config, target, key: k3.key }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DeploymentKeyError);
    const { message } = refused as DeploymentKeyError;
    expect(message).toContain('make this key the deployment\'s only one on purpose with `npx interlock keys adopt --yes`');
    expect(message).not.toContain('redis-cli');
    expect(await record()).toEqual(before);
    expect(before.kids).toContain(k1.key.kid);
  });

  it('without --yes says what it would change, exits 2 and changes nothing', async () => {
    const { k1, k2, k3, env, record } = await leakedDeployment();
    const before = await record();
    const run = await runCli(['keys', 'adopt'], env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    const both = [k1.key.kid, k2.key.kid].sort().join(', ');
    expect(run.stderr).toContain(`Nothing was changed. With --yes this makes key ${k3.key.kid} (${env.INTERLOCK_SIGNING_KEY_FILE}) the only signing key of the deployment in the Redis at`);
    expect(run.stderr).toContain(`which records ${both} (rotated to ${k2.key.kid} last): a process or command signing with ${both} would be refused at its next start. Run it again with --yes`);
    expect(await record()).toEqual(before);
  });

  it('with --yes makes the configured key the only one: a process with it starts, one with the leaked key is refused', async () => {
    const { config, target, k1, k2, k3, env, file, record } = await leakedDeployment();
    // The new key's retired-keys file keeps K1 (not leaked) and, by mistake, K2: the command says K2 is still trusted there.
    const retired = file('retired', k1.publicPem + k2.publicPem);
    const run = await runCli(['keys', 'adopt', '--yes'], { ...env, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: retired });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ kid: k3.key.kid, keyPrefix: config.keyPrefix, changed: true, was: { kids: [k1.key.kid, k2.key.kid].sort(), newest: k2.key.kid }, now: { kids: [k3.key.kid], newest: k3.key.kid } });
    expect(run.stderr).toContain(`Key ${k3.key.kid} is now the only signing key of the deployment`);
    expect(run.stderr).toContain(`INTERLOCK_RETIRED_PUBLIC_KEYS_FILE (${retired}) still lists ${[k1.key.kid, k2.key.kid].sort().join(', ')}`);
    expect(await record()).toEqual({ kids: [k3.key.kid], newest: `${k3.key.kid}|1` });
    // K3 holding K1 only as retired, as the rotation away from the leaked K2 gives it, starts.
    nodes.push(await startNode({ config: { ...config, retiredPublicKeysFile: file('k1-only', k1.publicPem) }, target, key: k3.key }));
    // A process still given the leaked key is no longer the deployment's.
    await expect(startNode({ config, target, key: k2.key })).rejects.toBeInstanceOf(DeploymentKeyError);
  });

  it('an adoption whose record another process changed since it was read writes nothing and says so', async () => {
    const { config, target, k2, k3, keys, file, record } = await leakedDeployment();
    const deployment = createDeploymentKeys(redis, { key: keys.signingKids, newestKey: keys.signingKidNewest });
    const seen = await deployment.read();
    // Meanwhile a process rotates K2 (the leaked key, not yet known to be) to a key of its own.
    const other = testKey();
    await (await startNode({ config: { ...config, retiredPublicKeysFile: file('k2', k2.publicPem) }, target, key: other.key })).close();
    const changed = await record();
    expect(changed.newest).toBe(`${other.key.kid}|3`);
    expect(await deployment.adopt(k3.key.kid, seen)).toBe('changed');
    expect(await record()).toEqual(changed);
    // Read again, the same adoption is made.
    expect(await deployment.adopt(k3.key.kid, await deployment.read())).toBe('adopted');
    expect(await record()).toEqual({ kids: [k3.key.kid], newest: `${k3.key.kid}|1` });
  });
});
