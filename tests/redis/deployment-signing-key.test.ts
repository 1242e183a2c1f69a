// Rule (redis/durability.ts enterDeployment, enter-deployment-2.lua): a process that signs entries joins the deployment
// on its Redis and key prefix only with a key the deployment signs with, or one it rotated to (holding a key the
// deployment signed with as retired). Another deployment's process started on the same prefix (both left at the
// default) started without a word, recovered the first deployment's crashed refund and signed its refusal with its own
// key, so the first deployment's receipt no longer verified ("signed with an unknown key"). It is refused at start,
// naming both keys and what to do, before it recovers, records or signs anything. A new key is taken only holding the
// key the deployment rotated to last (its newest) as retired: a process holding only an older one (the shared
// retired-keys file on a host that made a key of its own) would fork the deployment onto a key its other processes
// call unknown.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { DeploymentKeyError } from '../../src/redis/durability.js';
import { createKeys } from '../../src/redis/keys.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { tempDir } from '../cli/run-cli.js';
import { REDIS_URL, removePrefixes, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';

const temp = tempDir('deployment-key');
const prefixes: string[] = [];
const nodes: TestNode[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
  await removePrefixes(prefixes);
  temp.remove();
});

function deployment() {
  const config = testConfig();
  prefixes.push(config.keyPrefix);
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  return { config, target };
}

describe("a process on a deployment's Redis and key prefix", () => {
  it('with another key, holding none of the deployment\'s as retired, is refused at start naming both keys', async () => {
    const { config, target } = deployment();
    const first = testKey();
    nodes.push(await startNode({ config, target, key: first.key }));
    const other = testKey();
    const refused = startNode({ config, target, key: other.key });
    await expect(refused).rejects.toBeInstanceOf(DeploymentKeyError);
    await expect(refused).rejects.toMatchObject({ code: 'invalid_config', message: expect.stringContaining(`This process signs with key ${other.key.kid} and holds no retired key, but the deployment on this Redis with key prefix ${config.keyPrefix} signs its receipts with ${first.key.kid}`) });
    // Nothing of the other key was recorded.
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.smembers(createKeys(config.keyPrefix).signingKids)).toEqual([first.key.kid]);
    } finally {
      redis.disconnect();
    }
  });

  it('with the same key (a restart, a second worker) is taken', async () => {
    const { config, target } = deployment();
    const key = testKey();
    nodes.push(await startNode({ config, target, key: key.key }));
    nodes.push(await startNode({ config, target, key: key.key }));
  });

  it('with a new key that holds the old one as retired (a rotation) is taken, and adds the new key', async () => {
    const { config, target } = deployment();
    const old = testKey();
    nodes.push(await startNode({ config, target, key: old.key }));
    const retiredFile = join(temp.dir, `retired-${config.keyPrefix}.pem`);
    writeFileSync(retiredFile, old.publicPem, { mode: 0o600 });
    const rotated = testKey();
    nodes.push(await startNode({ config: { ...config, retiredPublicKeysFile: retiredFile }, target, key: rotated.key }));
    // A process still on the old key (not restarted yet) is the deployment's too.
    nodes.push(await startNode({ config, target, key: old.key }));
    const redis = new Redis(REDIS_URL);
    try {
      expect((await redis.smembers(createKeys(config.keyPrefix).signingKids)).sort()).toEqual([old.key.kid, rotated.key.kid].sort());
    } finally {
      redis.disconnect();
    }
  });

  /** Writes `pems` as a retired-keys file of its own, for `config`'s deployment. */
  function retiredFileOf(config: { keyPrefix: string }, name: string, ...pems: string[]): string {
    const file = join(temp.dir, `${name}-${config.keyPrefix}.pem`);
    writeFileSync(file, pems.join(''), { mode: 0o600 });
    return file;
  }

  it('with a new key holding only a key the deployment rotated away from as retired, is refused, naming the newest key; nothing is recorded', async () => {
    const { config, target } = deployment();
    const [k1, k2, k3] = [testKey(), testKey(), testKey()];
    await (await startNode({ config, target, key: k1.key })).close();
    const withK1 = retiredFileOf(config, 'k1', k1.publicPem);
    nodes.push(await startNode({ config: { ...config, retiredPublicKeysFile: withK1 }, target, key: k2.key }));
    // A new host with the shared retired-keys file but a key it made itself.
    const forked = startNode({ config: { ...config, retiredPublicKeysFile: withK1 }, target, key: k3.key });
    await expect(forked).rejects.toBeInstanceOf(DeploymentKeyError);
    await expect(forked).rejects.toMatchObject({ message: expect.stringContaining(`it rotated to ${k2.key.kid} last, so a new key is taken only holding ${k2.key.kid} as retired`) });
    const redis = new Redis(REDIS_URL);
    try {
      expect((await redis.smembers(createKeys(config.keyPrefix).signingKids)).sort()).toEqual([k1.key.kid, k2.key.kid].sort());
      expect(await redis.get(createKeys(config.keyPrefix).signingKidNewest)).toBe(`${k2.key.kid}|2`);
    } finally {
      redis.disconnect();
    }
  });

  it('rotated twice by the book is taken each time, also once a key that may have leaked was removed from the retired-keys file', async () => {
    const { config, target } = deployment();
    const [k1, k2, k3] = [testKey(), testKey(), testKey()];
    await (await startNode({ config, target, key: k1.key })).close();
    await (await startNode({ config: { ...config, retiredPublicKeysFile: retiredFileOf(config, 'k1', k1.publicPem) }, target, key: k2.key })).close();
    // K1 leaked: the operator took it out of the file (README "Rotating the signing key", step 6) before rotating again.
    nodes.push(await startNode({ config: { ...config, retiredPublicKeysFile: retiredFileOf(config, 'k2', k2.publicPem) }, target, key: k3.key }));
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.get(createKeys(config.keyPrefix).signingKidNewest)).toBe(`${k3.key.kid}|3`);
    } finally {
      redis.disconnect();
    }
  });

  it('recorded before the newest key was kept (several keys, none newest) takes a new key only holding every recorded key as retired', async () => {
    const { config, target } = deployment();
    const [k1, k2, k3] = [testKey(), testKey(), testKey()];
    const keys = createKeys(config.keyPrefix);
    const redis = new Redis(REDIS_URL);
    try {
      // As an earlier release left it: both keys, no newest.
      await redis.sadd(keys.signingKids, k1.key.kid, k2.key.kid);
      const onlyK1 = startNode({ config: { ...config, retiredPublicKeysFile: retiredFileOf(config, 'k1', k1.publicPem) }, target, key: k3.key });
      await expect(onlyK1).rejects.toMatchObject({ message: expect.stringContaining('a new key is taken only holding every one of them as retired') });
      nodes.push(await startNode({ config: { ...config, retiredPublicKeysFile: retiredFileOf(config, 'both', k1.publicPem, k2.publicPem) }, target, key: k3.key }));
      expect(await redis.get(keys.signingKidNewest)).toBe(`${k3.key.kid}|3`);
    } finally {
      redis.disconnect();
    }
  });

  it('rotating away from a leaked key without holding it: refused, naming `interlock keys adopt`; once the new key is recorded on purpose (here by hand), taken', async () => {
    const { config, target } = deployment();
    const [k1, k2, k3] = [testKey(), testKey(), testKey()];
    const keys = createKeys(config.keyPrefix);
    await (await startNode({ config, target, key: k1.key })).close();
    await (await startNode({ config: { ...config, retiredPublicKeysFile: retiredFileOf(config, 'k1', k1.publicPem) }, target, key: k2.key })).close();
    // K2 leaked: the new key's retired-keys file holds K1 only.
    const withoutLeaked = { ...config, retiredPublicKeysFile: retiredFileOf(config, 'no-k2', k1.publicPem) };
    const refused = startNode({ config: withoutLeaked, target, key: k3.key });
    await expect(refused).rejects.toMatchObject({ message: expect.stringContaining('`npx interlock keys adopt --yes`') });
    const redis = new Redis(REDIS_URL);
    try {
      await redis.sadd(keys.signingKids, k3.key.kid);
      await redis.set(keys.signingKidNewest, `${k3.key.kid}|3`);
    } finally {
      redis.disconnect();
    }
    nodes.push(await startNode({ config: withoutLeaked, target, key: k3.key }));
  });

  it('rotated by an earlier release since its newest was recorded (a key added, the newest not moved): the newest is not trusted, and a new key must hold every recorded key as retired', async () => {
    const { config, target } = deployment();
    const [k1, k2, k3] = [testKey(), testKey(), testKey()];
    const keys = createKeys(config.keyPrefix);
    await (await startNode({ config, target, key: k1.key })).close();
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.get(keys.signingKidNewest)).toBe(`${k1.key.kid}|1`);
      // A process of the release before this rule rotates K1 to K2: it adds K2 and leaves the newest at K1.
      await redis.sadd(keys.signingKids, k2.key.kid);
      // A host holding only K1 as retired, with a key it made itself, would fork the deployment: refused.
      const forked = startNode({ config: { ...config, retiredPublicKeysFile: retiredFileOf(config, 'old-k1', k1.publicPem) }, target, key: k3.key });
      await expect(forked).rejects.toMatchObject({ message: expect.stringContaining('the key it rotated to last is not known') });
      // The rotation by the book (the retired-keys file gathers every old key) is taken.
      nodes.push(await startNode({ config: { ...config, retiredPublicKeysFile: retiredFileOf(config, 'old-both', k1.publicPem, k2.publicPem) }, target, key: k3.key }));
      expect(await redis.get(keys.signingKidNewest)).toBe(`${k3.key.kid}|3`);
    } finally {
      redis.disconnect();
    }
  });
});
