// The worker of the durability test (tests/invariants/durable-redis-crash.test.ts): a gate on a private, durable
// Redis that dispatches one effect and then stops dead before the send, announcing the moment on stdout so the
// test can SIGKILL it there, after the DISPATCHED was acknowledged and before anything reached the target.
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { signingKeyFromPem } from '../../src/core/signing.js';
import { startNode, testConfig } from './harness.js';
import { createRedisTarget } from './redis-target.js';

function env(name: 'REDIS_URL' | 'DURABLE_PREFIX' | 'DURABLE_KEY_FILE' | 'DURABLE_PROPOSAL' | 'DURABLE_WORKER_ID'): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`durability worker: ${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  const prefix = env('DURABLE_PREFIX');
  const redis = new Redis(env('REDIS_URL'), { maxRetriesPerRequest: 1 });
  const target = createRedisTarget({
    redis,
    prefix,
    tier: 1,
    sendTimeoutMs: 1_000,
    beforeApply: (effectId) => {
      process.stdout.write(`sending ${effectId}\n`);
      // Never returns: the test kills this process here.
      return new Promise<void>(() => undefined);
    },
  });
  // No unsafe opt-out: the gate must accept this Redis as durable on its own.
  const config = testConfig({ redisUrl: env('REDIS_URL'), keyPrefix: prefix, unsafeDurability: false });
  const node = await startNode({ config, target, key: signingKeyFromPem(readFileSync(env('DURABLE_KEY_FILE'), 'utf8')), workerId: env('DURABLE_WORKER_ID') });
  process.stdout.write(`durable ${JSON.stringify(node.durability)}\n`);
  await node.gate.submit(JSON.parse(env('DURABLE_PROPOSAL')));
  process.stdout.write('submit returned\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`durability worker failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
