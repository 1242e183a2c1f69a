// One worker process of the multi-process race (tests/invariants/multi-process-race.test.ts): a gate on the shared
// Redis prefix and the shared Redis target, submitting and recovering the same effects as every other worker
// until all of them are settled. The test SIGKILLs some of these processes at random moments.
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { signingKeyFromPem } from '../../src/core/signing.js';
import type { Tier } from '../../src/core/decisions.js';
import { ProcessCrash } from '../../src/core/target.js';
import { startNode, testConfig } from './harness.js';
import { createRedisTarget } from './redis-target.js';

export type RaceWorkerEnv = {
  REDIS_URL: string;
  RACE_PREFIX: string;
  RACE_TIER: string;
  RACE_KEY_FILE: string;
  RACE_PROPOSALS_FILE: string;
  /** Epoch ms after which the worker gives up, so a stuck race ends instead of hanging the suite. */
  RACE_DEADLINE: string;
  /** JSON of the claim, send, settle, dedup and heartbeat timings, the same for every process of the race. */
  RACE_TIMING: string;
};

type RaceTiming = { claimTtlMs: number; sendTimeoutMs: number; settleMarginMs: number; dedupMarginMs: number; heartbeatMs: number; heartbeatTtlMs: number };

function env(name: keyof RaceWorkerEnv): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`race worker: ${name} is not set`);
  return value;
}

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

async function main(): Promise<void> {
  const prefix = env('RACE_PREFIX');
  const tier = Number(env('RACE_TIER')) as Tier;
  const deadline = Number(env('RACE_DEADLINE'));
  const proposals = JSON.parse(readFileSync(env('RACE_PROPOSALS_FILE'), 'utf8')) as unknown[];
  const key = signingKeyFromPem(readFileSync(env('RACE_KEY_FILE'), 'utf8'));
  const redis = new Redis(env('REDIS_URL'), { maxRetriesPerRequest: 1 });
  const timing = JSON.parse(env('RACE_TIMING')) as RaceTiming;
  const config = testConfig({ redisUrl: env('REDIS_URL'), keyPrefix: prefix, ...timing });
  const target = createRedisTarget({
    redis,
    prefix,
    tier,
    sendTimeoutMs: timing.sendTimeoutMs,
    jitterMs: 25,
    // Tells the test a send is starting, so it can kill this process between DISPATCHED and its settle.
    beforeApply: async () => {
      process.stdout.write('sending\n');
    },
  });
  const node = await startNode({ config, target, key, workerId: `race-${process.pid}` });
  const effectIds = proposals.map((proposal) => node.gate.effectIdOf(proposal));
  const outcomes: Record<string, number> = {};
  const count = (outcome: string) => {
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  };
  process.stdout.write('ready\n');
  // The first workers start together, so they really race for the same effects; later replacements find the key set.
  while ((await redis.get(`${prefix}:race:go`)) === null) await new Promise((resolve) => setTimeout(resolve, 20));

  let done = false;
  while (!done && Date.now() < deadline) {
    for (const proposal of shuffled(proposals)) {
      try {
        count((await node.gate.submit(proposal)).outcome);
      } catch (error) {
        if (error instanceof ProcessCrash) throw error;
        count(`threw:${error instanceof Error ? error.name : 'unknown'}`);
      }
    }
    const report = await node.gate.recover();
    for (const settled of report.settled) count(`recovered:${settled.outcome}`);
    const states = await Promise.all(effectIds.map(async (effectId) => {
      const partition = await node.journal.partitionOf(effectId);
      return partition === null ? null : (await node.journal.readState(partition, effectId)).state;
    }));
    done = states.every((state) => state !== null && !state.open && (state.committed || state.ambiguous));
    // What is left waits on a dead holder's heartbeat or a settle margin; spinning would only starve the others.
    if (!done) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  process.stdout.write(`${JSON.stringify({ pid: process.pid, done, outcomes })}\n`);
  await node.close();
  await redis.quit();
  process.exit(done ? 0 : 3);
}

main().catch((error: unknown) => {
  process.stderr.write(`race worker ${process.pid} failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
