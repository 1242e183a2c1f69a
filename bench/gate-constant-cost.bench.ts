// Constant cost per effect (issue 8 §1): 50,000 effects under one approval, on one subject with a cap, committed
// through the gate at concurrency 64 on a private Redis. The last 5,000 must go through within 10% of the rate of
// the first 5,000 (no script sums what the approval or the subject has seen), and Redis memory per committed
// effect is reported (target ≤ 2 KB with no OBSERVED entries).
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { signingKeyFromPem } from '../src/core/signing.js';
import { createInterlock } from '../src/interlock.js';
import { generateSigningKeyPem } from '../src/keys/key-store.js';
import { createRedisClient } from '../src/redis/client.js';
import { createKeys } from '../src/redis/keys.js';
import { createMemoryTarget } from '../src/targets/memory-target.js';
import { startPrivateRedis } from '../tests/support/private-redis.js';
import { cutRatio, finish, markdownTable, progress, QUICK } from './support.js';

const TOTAL = Number(process.env.BENCH_CONSTANT_EFFECTS ?? (QUICK ? 5_000 : 50_000));
const SLICE = Math.min(5_000, Math.floor(TOTAL / 5));
const CONCURRENCY = 64;
const SUBJECT = 'payment:pi_constant';
const PREMISES = { chargebacks: [], refunded_by_others: 0 };

const durable = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '']);
const observer = new Redis(durable.url);
const redis = createRedisClient({ redisUrl: durable.url, redisCluster: false });
const target = createMemoryTarget({ tier: 1, sendTimeoutMs: 30_000 });
target.world.set(SUBJECT, { ...PREMISES });
const config = { ...loadConfig({}), redisUrl: durable.url, sendWatchdog: false, logLevel: 'silent' as const, workerId: 'constant' };
const interlock = await createInterlock({ config, target, signingKey: signingKeyFromPem(generateSigningKeyPem().privatePem), logger: pino({ level: 'silent' }), redis });

/** Bytes of a key as Redis counts them (its value, its name and its place in the keyspace), every element counted. */
const usage = async (key: string) => Number(await observer.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));

/**
 * Where a committed effect's bytes are: its own two keys (averaged over a sample of effects), and its share of each
 * index it is a member of (the index's bytes over its members, all effects of the run and the warm-up's). What is
 * left of the used_memory growth is the keyspace's own table and the allocator's rounding.
 */
async function whereTheBytesGo(effectIds: readonly string[], perEffect: number): Promise<{ part: string; bytes: number }[]> {
  const keys = createKeys(config.keyPrefix);
  const sample = effectIds.filter((_, index) => index % Math.max(1, Math.floor(effectIds.length / 500)) === 0);
  const averaged = async (keyOf: (effectId: string) => string) => {
    let sum = 0;
    for (const effectId of sample) sum += await usage(keyOf(effectId));
    return Math.round(sum / sample.length);
  };
  const members = effectIds.length + 1;
  const share = async (key: string) => Math.round((await usage(key)) / members);
  const parts = [
    { part: 'the chain (entries and seals, one string)', bytes: await averaged((effectId) => keys.entries(SUBJECT, effectId)) },
    { part: 'the state hash (chain head and count, payload hash, committed)', bytes: await averaged((effectId) => keys.state(SUBJECT, effectId)) },
    { part: 'its place in the effects-by-time index', bytes: await share(keys.effectsByTime) },
    { part: "its place on the reconciler's watch list (a commit long after its binding)", bytes: await share(keys.watch) },
    { part: 'its binding to its payment', bytes: await share(keys.effectPartitions) },
    { part: "its place in the payment's committed effects", bytes: await share(keys.subject(SUBJECT)) },
  ];
  const counted = parts.reduce((sum, item) => sum + item.bytes, 0);
  return [...parts, { part: "the rest (the keyspace's table, rounding)", bytes: perEffect - counted }];
}

const usedMemory = async () => Number(/used_memory:(\d+)/.exec(String(await observer.info('memory')))?.[1] ?? 0);
let result: Record<string, unknown>;
try {
  await interlock.approvals.grant({ id: 'ap_constant', approver: 'bench', capCents: 1e12, expiresAt: Date.now() + 3_600_000, maxUses: 1e9, scope: SUBJECT });
  await interlock.approvals.setSubjectCap(SUBJECT, 1e12);
  const warm = await interlock.gate.submit({ requestId: 'warm', agent: 'bench', approval: 'ap_constant', premises: PREMISES, effect: { kind: 'refund', paymentIntent: 'pi_constant', amount: 1 } });
  if (warm.outcome !== 'COMMITTED') throw new Error(`warm-up: ${warm.outcome}`);
  await interlock.journal.flushIndex();
  const memoryBefore = await usedMemory();
  const sliceRates: number[] = [];
  let next = 0;
  let done = 0;
  let sliceStart = performance.now();
  const effectIds: string[] = [];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let index = next++; index < TOTAL; index = next++) {
        const answer = await interlock.gate.submit({ requestId: `case-${index}`, agent: 'bench', approval: 'ap_constant', premises: PREMISES, effect: { kind: 'refund', paymentIntent: 'pi_constant', amount: 1, reason: 'requested_by_customer' } });
        if (answer.outcome !== 'COMMITTED') throw new Error(`effect ${index}: ${answer.outcome} ${answer.reason ?? ''}`);
        effectIds.push(answer.effectId);
        done += 1;
        if (done % SLICE === 0) {
          const now = performance.now();
          sliceRates.push(Math.round((SLICE * 1000) / (now - sliceStart)));
          sliceStart = now;
          progress(`${done}/${TOTAL} effects under one approval; last ${SLICE}: ${sliceRates.at(-1)}/s`);
        }
      }
    }),
  );
  progress('');
  await interlock.journal.flushIndex();
  const bytesPerEffect = Math.round(((await usedMemory()) - memoryBefore) / TOTAL);
  const bytes = await whereTheBytesGo(effectIds, bytesPerEffect);
  const first = sliceRates[0] ?? 0;
  const last = sliceRates.at(-1) ?? 0;
  const snapshot = (await interlock.approvals.describe('ap_constant')).snapshot;
  result = { effects: TOTAL, slice: SLICE, sliceRates, firstSlicePerSecond: first, lastSlicePerSecond: last, lastVsFirst: cutRatio(last, first), bytesPerEffect, bytes, approvalReservedCents: snapshot?.reservedCents ?? null, approvalUses: snapshot?.uses ?? null };
} finally {
  await interlock.close();
  await observer.quit();
  await durable.stop();
}

const markdown = [
  `${TOTAL.toLocaleString('en-US')} effects under one approval and one subject cap, concurrency ${CONCURRENCY}, in-memory target, private Redis with appendfsync always.`,
  '',
  `Effects/s per slice of ${SLICE.toLocaleString('en-US')}: ${(result.sliceRates as number[]).join(', ')}; last slice / first slice: ${String(result.lastVsFirst)}. Redis memory per committed effect: ${String(result.bytesPerEffect)} bytes.`,
  '',
  'Where the bytes of a committed effect go (`MEMORY USAGE`: its own keys averaged over a sample, its share of each index):',
  '',
  markdownTable(['part', 'bytes per effect'], (result.bytes as { part: string; bytes: number }[]).map((item) => [item.part, item.bytes])),
  '',
  `Approval totals: ${String(result.approvalReservedCents)} cents reserved over ${String(result.approvalUses)} uses (kept beside its terms, never summed).`,
].join('\n');
console.log(`\n${markdown}`);
const targets = [
  { target: `effects/s of the last ${SLICE} within 10% of the first ${SLICE} (one approval, one subject cap)`, value: Number(result.lastVsFirst), met: Number(result.lastVsFirst) >= 0.9 },
  { target: 'Redis memory per committed effect ≤ 2 KB (no OBSERVED entries)', value: Number(result.bytesPerEffect), met: Number(result.bytesPerEffect) <= 2_048 },
];
finish('gateConstantCost', 'Constant cost per effect under one approval (issue 8 §1)', markdown, result, targets);
