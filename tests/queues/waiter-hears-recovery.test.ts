// Rule: a request waiting on an effect (POST /v1/refunds?wait=, `interlock refund --wait`) is answered within about a
// heartbeat once the journal holds the effect's outcome, however it got there. A worker that dies after dispatching
// leaves its job active until BullMQ's lock lapses (60-90 s), and recovery settles the effect (COMMITTED_BY_RETRY)
// within seconds with no job finishing: the wait heard only job events, so it sat out its whole time and answered null.
// The journal is asked again once per heartbeat per waited-on effect, shared by every wait on it in the process, and
// the re-reads stop on every way a wait ends (answer, timeout, the caller hanging up).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { Worker } from 'bullmq';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createRecheck, jobEvents, waitForJob } from '../../queues/job-events.js';
import { startRecovery } from '../../queues/recovery.js';
import { createMemoryTarget, openStores, settledOutcome, startSender, type MemoryTarget } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function node(prefix: string, target: MemoryTarget, opts: { worker?: boolean; recovery?: boolean } = {}) {
  const config = testConfig({ keyPrefix: prefix, sendTimeoutMs: 3_000, claimTtlMs: 6_000 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const sender = await startSender(stores, target);
  const queue = createEffectsQueue(stores);
  const worker = opts.worker === false ? null : startEffectsWorker(stores, sender, { concurrency: 2 });
  const recovery = opts.recovery === true ? startRecovery(stores, sender, { safetyIntervalMs: 60_000 }) : null;
  closers.push(async () => {
    await recovery?.close();
    await worker?.close(true);
    await queue.close();
    await sender.close();
    await stores.close();
  });
  return { stores, sender, queue, recovery };
}

describe('waiting on an effect that recovery settles', () => {
  it('a wait on a refund whose worker died mid-send hears the outcome recovery settled, before the wait is over', async () => {
    const prefix = `wr${randomBytes(6).toString('hex')}`;
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: 3_000 });
    target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
    const dying = await node(prefix, target, { worker: false });
    closers.unshift(() => removePrefixes([prefix, `{${prefix}-queues}`]));
    const terms = approvalTerms();
    await dying.stores.approvals.grant(terms);
    // The worker that takes the job dispatches, dies before the send, and never finishes the job (its lock holds 60 s).
    const connection = dying.stores.queueConnection();
    let took: () => void = () => undefined;
    const taken = new Promise<void>((resolve) => (took = resolve));
    target.inject({ kind: 'crash-before-send' });
    const holder = new Worker(
      dying.stores.queues.effects,
      async (job) => {
        await dying.sender.gate.submitLatest(job.id ?? '', (job.data as { proposal: unknown }).proposal).catch(() => undefined);
        took();
        return new Promise(() => undefined);
      },
      { connection, prefix: dying.stores.queues.prefix, lockDuration: 60_000, stalledInterval: 30_000 },
    );
    const proposed = await dying.queue.propose(refundProposal({ approval: terms.id }));
    // What POST /v1/refunds?wait=20 does; before the fix it answered null once the 20 s were over.
    const waiting = dying.queue.waitFor(proposed.effectId, 20_000);
    await taken;
    await holder.close(true);
    await connection.quit();
    await dying.sender.heartbeat.stop({ clear: true });
    // The process restarts: recovery settles the effect at once, while BullMQ still counts the dead holder's job as active.
    const next = await node(prefix, target, { recovery: true });
    await next.recovery?.started;
    expect(await settledOutcome(next.stores, proposed.effectId)).toBe('COMMITTED_BY_RETRY');
    expect(await (await dying.queue.queue.getJob(proposed.effectId))?.getState()).toBe('active');
    expect((await waiting)?.outcome ?? null).toBe('COMMITTED_BY_RETRY');
    expect(target.landedCount(proposed.effectId)).toBe(1);
  }, 60_000);

  it('many waits on one effect share one read of the store per interval, and the reads stop when the last wait stops', async () => {
    vi.useFakeTimers();
    let reads = 0;
    let outcome: string | null = null;
    const recheck = createRecheck<string>(1_000, async () => {
      reads += 1;
      return outcome;
    });
    const heard: string[] = [];
    const unwatches = Array.from({ length: 50 }, () => recheck.watch('e1', (value) => heard.push(value)));
    const other = recheck.watch('e2', () => undefined);
    await vi.advanceTimersByTimeAsync(3_000);
    // Three intervals, two effects: six reads, not 153.
    expect(reads).toBe(6);
    outcome = 'COMMITTED';
    await vi.advanceTimersByTimeAsync(1_000);
    expect(heard).toHaveLength(50);
    for (const unwatch of unwatches) unwatch();
    other();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(reads).toBe(8);
  });

  it('a wait stops watching the store however it ends: answered, timed out, or its caller gone', async () => {
    const config = testConfig({ keyPrefix: `wr${randomBytes(6).toString('hex')}` });
    const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
    const events = jobEvents(stores, stores.queues.effects);
    closers.push(async () => {
      await events.close();
      await stores.close();
    });
    let watching = 0;
    let answerNow: (value: string) => void = () => undefined;
    const recheck = (heard: (value: string) => void) => {
      watching += 1;
      answerNow = heard;
      return () => {
        watching -= 1;
      };
    };
    const wait = (options: { timeoutMs: number; signal?: AbortSignal }) =>
      waitForJob<string | null>(events, { ours: () => false, settled: async () => null, recheck, answer: () => null, ...options });

    expect(await wait({ timeoutMs: 50 })).toBeNull();
    expect(watching).toBe(0);

    const answered = wait({ timeoutMs: 30_000 });
    await vi.waitFor(() => expect(watching).toBe(1));
    answerNow('COMMITTED_BY_RETRY');
    expect(await answered).toBe('COMMITTED_BY_RETRY');
    expect(watching).toBe(0);

    const hangUp = new AbortController();
    const gone = wait({ timeoutMs: 30_000, signal: hangUp.signal });
    await vi.waitFor(() => expect(watching).toBe(1));
    hangUp.abort(new Error('client went away'));
    await expect(gone).rejects.toThrow('client went away');
    expect(watching).toBe(0);
  });
});
