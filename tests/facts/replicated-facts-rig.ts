// A facts rig on the master of a replicated pair (a private master and its replica) with INTERLOCK_REDIS_MIN_REPLICAS=1,
// for one test file: started before its tests, the replica woken and everything stopped after them.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { startReplicatedPair, type ReplicatedPair } from '../redis/replicated-pair.js';
import { startFactsRig, type FactsRig } from './facts-rig.js';

/** The warning a facts job logs when it applied its event but too few replicas hold what it recorded (queues/facts.ts). */
export const APPLIED_UNHELD = 'facts job applied on the Redis masters, but too few of their replicas acknowledged it';

export type ReplicatedFacts = { readonly pair: ReplicatedPair; readonly rig: FactsRig };

/** `waitMs` is INTERLOCK_REDIS_WAIT_MS; `factsWorker: false` leaves the rig's own facts worker out (a test starts its own). */
export function replicatedFacts(options: { label: string; waitMs: number; factsWorker?: boolean }): ReplicatedFacts {
  let pair: ReplicatedPair | null = null;
  let rig: FactsRig | null = null;
  beforeAll(async () => {
    pair = await startReplicatedPair();
    rig = await startFactsRig({ ...(options.factsWorker === false ? { factsWorker: false } : {}), config: { redisUrl: pair.primary.url, redisMinReplicas: 1, redisWaitMs: options.waitMs, keyPrefix: `${options.label}${randomBytes(5).toString('hex')}` } });
  }, 60_000);
  afterAll(async () => {
    pair?.replica.process.kill('SIGCONT');
    await rig?.close();
    await pair?.stop();
  }, 60_000);
  const ready = <T>(value: T | null): T => {
    if (value === null) throw new Error('the replicated facts rig is used before its beforeAll ran');
    return value;
  };
  return {
    get pair() {
      return ready(pair);
    },
    get rig() {
      return ready(rig);
    },
  };
}
