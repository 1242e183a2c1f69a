// Rule: a worker starting up runs the effects of the active jobs whose holders are gone (a dead worker's job does not
// wait for its lock to lapse), and leaves a live worker's job to that worker: running it too would read its premises
// at Stripe a second time and, landing first, make the request's own job answer DUPLICATE_IGNORED to whoever waits
// on it. A holder that died a moment before the start (its heartbeat not lapsed yet) is still found dead.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { Worker } from 'bullmq';
import { afterEach, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, openStores, startSender, type Config, type MemoryTarget } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

const key = testKey().key;

/** A worker process: its stores and sender, closed after the test. */
async function processOf(config: Config, target: MemoryTarget, workerId: string) {
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key });
  const sender = await startSender(stores, target, { workerId });
  closers.push(async () => {
    await sender.close();
    await stores.close();
  });
  return { stores, sender };
}

async function world(name: string) {
  // Reads may take seconds (the test holds one) without timing out: the read timeout is the send timeout. A heartbeat
  // lives 3 s after its last beat, so a holder that just died still looks alive when the next worker starts.
  const config = testConfig({ keyPrefix: `t-${name}-${randomBytes(5).toString('hex')}`, sendTimeoutMs: 10_000, claimTtlMs: 30_000, dedupMarginMs: 60_000, heartbeatTtlMs: 3_000 });
  closers.push(() => removePrefixes([config.keyPrefix]));
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  return { config, target };
}

it("leaves a live worker's fresh job to it: the premises are read once, and the request hears COMMITTED", async () => {
  const { config, target } = await world('live');
  // Premise reads counted; the first (the live worker's) held until the starting worker has looked at the job.
  let reads = 0;
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const readFacts = target.readFacts.bind(target);
  target.readFacts = async (effectId, effect, names, context) => {
    reads += 1;
    if (reads === 1) await held;
    return readFacts(effectId, effect, names, context);
  };
  const live = await processOf(config, target, 'live-a');
  const queue = createEffectsQueue(live.stores);
  const running = startEffectsWorker(live.stores, live.sender, { concurrency: 1 });
  closers.push(async () => {
    release();
    await running.close(true);
    await queue.close();
  });
  const terms = approvalTerms();
  await live.stores.approvals.grant(terms);
  const { effectId } = await queue.propose(refundProposal({ approval: terms.id }));
  const waiting = queue.waitFor(effectId, 20_000);
  await expect.poll(() => reads, { timeout: 10_000 }).toBe(1);

  // Another worker process starts on the same queue (a rolling deploy, a scale-up).
  const starting = await processOf(config, target, 'starting-b');
  const starter = startEffectsWorker(starting.stores, starting.sender, { concurrency: 1 });
  closers.push(() => starter.close(true));
  expect(await starter.adopting).toBe(0);
  release();

  expect((await waiting)?.outcome).toBe('COMMITTED');
  expect({ reads, landed: target.landedCount(effectId) }).toEqual({ reads: 1, landed: 1 });
});

it('runs at once the job of an effects worker that died just before the start, its heartbeat not lapsed yet', async () => {
  const { config, target } = await world('dead');
  const dying = await processOf(config, target, 'dying-a');
  const queue = createEffectsQueue(dying.stores);
  closers.push(() => queue.close());
  const terms = approvalTerms();
  await dying.stores.approvals.grant(terms);
  // The dying process's effects worker (named as one is, after its heartbeat) takes the job and never finishes it.
  const { workerId, nonce } = dying.sender.heartbeat;
  const connection = dying.stores.queueConnection();
  let taken: () => void = () => undefined;
  const tookIt = new Promise<void>((resolve) => (taken = resolve));
  const holder = new Worker(
    dying.stores.queues.effects,
    () => {
      taken();
      return new Promise(() => undefined);
    },
    { connection, ...dying.stores.bullmq, name: `${workerId}:${nonce}`, lockDuration: 60_000, stalledInterval: 30_000 },
  );
  const { effectId } = await queue.propose(refundProposal({ approval: terms.id }));
  await tookIt;
  expect((await queue.queue.getJob(effectId))?.processedBy).toBe(`${workerId}:${nonce}`);
  // It dies: its heartbeat stops (the key lapses within its TTL), its worker is gone, the job's lock good for a minute.
  const next = await processOf(config, target, 'next-b');
  await dying.sender.heartbeat.stop();
  await holder.close(true);
  await connection.quit();

  const startedAt = Date.now();
  const starter = startEffectsWorker(next.stores, next.sender, { concurrency: 1 });
  closers.push(() => starter.close(true));
  expect(await starter.adopting).toBe(1);
  expect(Date.now() - startedAt).toBeLessThan(20_000);
  expect(target.landedCount(effectId)).toBe(1);
});
