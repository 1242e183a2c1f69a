// Rule: a start the gate refuses (createGate's invalid_config: a target declared wrong, or with unsafe timing) leaves
// nothing running. startSender builds the gate before the first beat, so no heartbeat goes on announcing, under the
// worker id, a live worker that does not exist; on the caller's own Redis connection it would beat for as long as the
// process lived. The default worker id it would have taken stays free for the next sender of the process.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { createInterlock, defaultWorkerId } from '../../src/interlock.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { removePrefixes, REDIS_URL, sleep, testConfig, testKey } from '../support/harness.js';

const keyPrefix = `t-refused-start-${randomBytes(4).toString('hex')}`;
const redis = new Redis(REDIS_URL);
afterEach(async () => {
  await redis.quit();
  await removePrefixes([keyPrefix]);
});

it('a createInterlock refused for its target leaves no heartbeat beating and its default worker id free', async () => {
  const config = { ...testConfig({ keyPrefix, heartbeatMs: 100, heartbeatTtlMs: 400 }), workerId: 'refused-start' };
  // A tier-1 target that remembers keys for 0 ms: unsafe timing, refused by createGate.
  const target = { ...createMemoryTarget({ tier: 1 }), dedupWindowMs: 0 };
  const logger = pino({ level: 'silent' });
  const error = await createInterlock({ config, target, signingKey: testKey().key, logger, redis }).then(
    () => null,
    (caught: Error & { code?: string }) => caught.code,
  );
  expect(error).toBe('invalid_config');
  expect(await redis.exists(`${keyPrefix}:heartbeat:refused-start`)).toBe(0);
  // Well past the heartbeat TTL: nothing beats under the id later either.
  await sleep(1_000);
  expect(await redis.exists(`${keyPrefix}:heartbeat:refused-start`)).toBe(0);

  const defaulted = { ...config, workerId: null };
  const refused = await createInterlock({ config: defaulted, target, signingKey: testKey().key, logger, redis }).catch((caught: Error & { code?: string }) => caught.code);
  expect(refused).toBe('invalid_config');
  const next = await createInterlock({ config: defaulted, target: createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs }), signingKey: testKey().key, logger, redis });
  try {
    expect(next.gate.owner).toBe(defaultWorkerId());
  } finally {
    await next.close();
  }
});
