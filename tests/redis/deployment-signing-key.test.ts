// Rule (redis/durability.ts enterDeployment, enter-deployment-1.lua): a process that signs entries joins the deployment
// on its Redis and key prefix only with a key the deployment signs with, or one it rotated to (holding a key the
// deployment signed with as retired). Another deployment's process started on the same prefix (both left at the
// default) started without a word, recovered the first deployment's crashed refund and signed its refusal with its own
// key, so the first deployment's receipt no longer verified ("signed with an unknown key"). It is refused at start,
// naming both keys and what to do, before it recovers, records or signs anything.
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
});
