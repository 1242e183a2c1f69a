// The rig of the tests on money labelled by hand with an effect's id (ReadContext.neverSent): the sandbox's Stripe,
// a config with short send and settle times, one signing key, the nodes a test starts (closed after the file), and a
// config for a worker whose first send is held back (it needs a replica the shared Redis does not have: nothing leaves).
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { Config } from '../../src/config.js';
import { testConfig, testKey, type TestNode } from '../support/harness.js';
import { startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';

export type HandLabelledRig = { world: StripeWorld; config: Config; key: ReturnType<typeof testKey>; nodes: TestNode[]; heldBack(): Config };

export function handLabelledRig(): HandLabelledRig {
  const rig = { nodes: [] as TestNode[] } as HandLabelledRig;
  rig.heldBack = () => ({ ...rig.config, redisMinReplicas: 1, redisWaitMs: 50 }) as Config;
  beforeAll(async () => {
    rig.world = await startStripeWorld();
    rig.config = testConfig({ sendTimeoutMs: 1_000, settleMarginMs: 300 });
    rig.key = testKey();
  });
  afterAll(async () => {
    await Promise.all(rig.nodes.map((node) => node.close().catch(() => undefined)));
    await rig.world?.close();
    const redis = new Redis(rig.config.redisUrl);
    const stale = await redis.keys(`${rig.config.keyPrefix}:*`);
    if (stale.length > 0) await redis.del(...stale);
    await redis.quit();
  });
  return rig;
}
