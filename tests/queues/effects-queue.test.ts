// The effects queue on real BullMQ and Redis: a proposal is recorded before it is queued (I5 at the edge), a job per
// effect (a second enqueue is a no-op), the worker hands it to the gate, answers are heard without polling, and
// recovery wakes on its own schedule to settle what a dead worker left.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from 'bullmq';
import { afterTransientFailure, createEffectsQueue, disposition, startEffectsWorker, TRANSIENT_RETRY, type EffectsQueue, type EffectsWorker, type TransientFailures, type TransientRetry } from '../../queues/effects.js';
import { startRecovery, type Recovery } from '../../queues/recovery.js';
import { createMemoryTarget, InterlockError, openStores, settledOutcome, startSender, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';
import { startPrivateRedis } from '../support/private-redis.js';

type Rig = { stores: Stores; sender: Sender; target: MemoryTarget; queue: EffectsQueue; worker: EffectsWorker | null; recovery: Recovery | null };
const rigs: Rig[] = [];
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  rigs.length = 0;
});

async function rig(options: { prefix?: string; target?: MemoryTarget; worker?: boolean; recovery?: boolean; workerId?: string; redisUrl?: string; concurrency?: number; attempts?: number; transientRetry?: Partial<TransientRetry> } = {}): Promise<Rig> {
  const config = testConfig({ keyPrefix: options.prefix ?? `t${randomBytes(6).toString('hex')}`, ...(options.redisUrl === undefined ? {} : { redisUrl: options.redisUrl }) });
  const target = options.target ?? createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const sender = await startSender(stores, target, options.workerId === undefined ? {} : { workerId: options.workerId });
  const queue = createEffectsQueue(stores, { backoffMs: 50, ...(options.attempts === undefined ? {} : { attempts: options.attempts }) });
  const worker = options.worker === false ? null : startEffectsWorker(stores, sender, { concurrency: options.concurrency ?? 4, ...(options.transientRetry === undefined ? {} : { transientRetry: options.transientRetry }) });
  const recovery = options.recovery ? startRecovery(stores, sender, { safetyIntervalMs: 5_000 }) : null;
  const made: Rig = { stores, sender, target, queue, worker, recovery };
  closers.push(async () => {
    await recovery?.close();
    await worker?.close(true);
    await queue.close();
    await sender.close();
    await stores.close();
    const redis = new Redis(config.redisUrl);
    for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
      const stale = await redis.keys(pattern);
      for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
    }
    await redis.quit();
  });
  rigs.push(made);
  return made;
}

const keyPair = testKey();

describe('the effects queue', () => {
  it('records a proposal before queueing it, and the worker commits it once; its answer is heard, not polled', async () => {
    const { stores, queue, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const proposed = await queue.propose(proposal);
    expect(proposed).toMatchObject({ status: 'recorded', queued: true });
    const answer = await queue.waitFor(proposed.effectId, 10_000);
    expect(answer).toMatchObject({ outcome: 'COMMITTED', effectId: proposed.effectId });
    expect(target.landedCount(proposed.effectId)).toBe(1);
    // The receipt has one PROPOSED: the worker did not write the recorded one again.
    const receipt = await stores.journal.receipt(proposed.effectId);
    expect(receipt?.entries.map((entry) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  });

  it("carries the producer's PROPOSED to the job's first run when it began the chain, and nothing for a re-decision's follow-up", async () => {
    const { stores, sender, queue } = await rig({ worker: false });
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const given: unknown[] = [];
    const submitLatest = sender.gate.submitLatest.bind(sender.gate);
    sender.gate.submitLatest = (effectId, carried, onlyEntry) => {
      given.push(onlyEntry);
      return submitLatest(effectId, carried, onlyEntry);
    };
    const worker = startEffectsWorker(stores, sender, { concurrency: 1 });
    closers.push(() => worker.close(true));
    const stale = refundProposal({ approval: terms.id, premises: { chargebacks: [], refunded_by_others: 500 } });
    const first = await queue.propose(stale);
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
    const proposed = (await stores.journal.receipt(first.effectId))?.entries[0];
    expect(given).toEqual([{ hash: proposed?.hash, v: proposed?.v, at: proposed?.at, kid: proposed?.kid }]);
    const again = approvalTerms();
    await stores.approvals.grant(again);
    await queue.propose({ ...stale, approval: again.id, premises: { chargebacks: [], refunded_by_others: 0 } });
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect(given).toHaveLength(2);
    expect(given[1]).toBeNull();
  });

  it('a second enqueue of one effect is a no-op, and a re-decided payload is refused before anything is queued (I5)', async () => {
    const { stores, queue, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ requestId: 'case-dup', approval: terms.id });
    const first = await queue.propose(proposal);
    const again = await queue.propose(proposal);
    expect(again.effectId).toBe(first.effectId);
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    const redecided = await queue.propose(refundProposal({ requestId: 'case-dup', approval: terms.id, amount: 3_000 }));
    expect(redecided).toMatchObject({ status: 'conflict', queued: false });
    expect(target.landings.map((landing) => landing.effect.amount)).toEqual([2_000]);
  });

  it('a worker starting on a backlog runs each job once: its own jobs are not taken for a dead worker\'s, so every fresh effect answers COMMITTED', async () => {
    const { stores, sender, queue, target } = await rig({ worker: false });
    const terms = approvalTerms({ capCents: 100_000, maxUses: 100 });
    await stores.approvals.grant(terms);
    const effectIds: string[] = [];
    for (let i = 0; i < 24; i += 1) effectIds.push((await queue.propose(refundProposal({ requestId: `case-backlog-${i}`, approval: terms.id, amount: 100 }))).effectId);
    // Each job stays active a while (its premise read is slow), as jobs do against Stripe.
    for (let i = 0; i < effectIds.length; i += 1) target.inject({ kind: 'slow-read', delayMs: 150 });
    const answers: string[] = [];
    const worker = startEffectsWorker(stores, sender, { concurrency: 8, onAnswer: (answer) => void answers.push(answer.outcome) });
    try {
      expect(await worker.adopting).toBe(0);
      for (const effectId of effectIds) expect(await queue.waitFor(effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
      const giveUp = Date.now() + 10_000;
      while (answers.length < effectIds.length && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(answers).toEqual(effectIds.map(() => 'COMMITTED'));
    } finally {
      await worker.close(true);
    }
  });

  it('a refusal ends the job without retry, with the outcome as its answer', async () => {
    const { stores, queue, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    target.world.set('payment:pi_1', { chargebacks: ['du_1'], refunded_by_others: 0 });
    const proposed = await queue.propose(refundProposal({ approval: terms.id }));
    expect(await queue.waitFor(proposed.effectId, 10_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
    // The journal can hold the refusal a moment before BullMQ marks the job finished.
    await expect.poll(async () => (await queue.queue.getJob(proposed.effectId))?.finishedOn, { timeout: 5_000 }).toBeDefined();
    const job = await queue.queue.getJob(proposed.effectId);
    expect(job?.attemptsMade).toBe(1);
  });

  it('a job that comes back after its proposal was refused (it stalled while recovery refused the effect) finishes with that refusal and records nothing more', async () => {
    const { stores, sender, queue, target } = await rig({ worker: false });
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const { effectId } = await queue.propose(proposal);
    // Judged without the job (as recovery does for a dead worker's effect), and the job is still to run.
    target.world.set('payment:pi_1', { chargebacks: ['du_1'], refunded_by_others: 0 });
    expect((await sender.gate.submit(proposal)).outcome).toBe('REFUSED:stale_premise');
    const refusals = async () => (await stores.journal.entries('payment:pi_1', effectId)).filter((entry) => entry.kind === 'REFUSED').length;
    expect(await refusals()).toBe(1);
    const worker = startEffectsWorker(stores, sender, { concurrency: 1 });
    try {
      // The journal answers waitFor at once; the job itself is what must finish, without judging again.
      const giveUp = Date.now() + 10_000;
      while (!['completed', 'failed'].includes(await queue.queue.getJobState(effectId)) && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 20));
      const job = await queue.queue.getJob(effectId);
      expect(await job?.getState()).toBe('completed');
      expect(job?.returnvalue).toMatchObject({ effectId, outcome: 'REFUSED:stale_premise' });
      expect(await refusals()).toBe(1);
    } finally {
      await worker.close(true);
    }
  });

  it('a re-decision recorded after a refusal runs: a follow-up job submits the latest proposal, and waiting hears its answer, not the old refusal', async () => {
    const { stores, queue, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    // Decided on facts that no longer hold: refused.
    const stale = refundProposal({ requestId: 'case-redecided', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 500 } });
    const first = await queue.propose(stale);
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
    // Fresh premises under the same approval would not count (the first decision's premises bind the approval);
    // approved again and decided again on the facts as they are: recorded, queued and committed.
    const again = approvalTerms();
    await stores.approvals.grant(again);
    const redecided = await queue.propose({ ...stale, approval: again.id, premises: { chargebacks: [], refunded_by_others: 0 } });
    expect(redecided).toMatchObject({ status: 'recorded', queued: true, effectId: first.effectId });
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect(target.landedCount(first.effectId)).toBe(1);
    // Asked again once settled, the answer comes from the journal at once.
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
  });

  it('a re-decision whose enqueue failed is queued once by the same request sent again, as the error asks; sent again once settled, it queues nothing', async () => {
    const { stores, queue, target } = await rig();
    const proposal = refundProposal({ requestId: `case-requeue-${randomBytes(4).toString('hex')}`, approval: `ap_missing_${randomBytes(4).toString('hex')}` });
    const first = await queue.propose(proposal);
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'REFUSED:lease' });
    await expect.poll(async () => (await queue.queue.getJob(first.effectId))?.finishedOn, { timeout: 5_000 }).toBeDefined();
    const again = approvalTerms();
    await stores.approvals.grant(again);
    const redecided = { ...proposal, approval: again.id };
    // The re-decision is recorded, then its enqueue fails (Redis did not answer in time).
    const add = queue.queue.add.bind(queue.queue);
    let failures = 1;
    queue.queue.add = (async (...args: Parameters<typeof add>) => {
      if (failures > 0) {
        failures -= 1;
        throw Object.assign(new Error('Command timed out'), { name: 'RedisTimeout' });
      }
      return add(...args);
    }) as typeof add;
    await expect(queue.propose(redecided)).rejects.toThrow(/Command timed out/);
    // Sent again: answered from the journal (the earlier refusal does not answer it) and queued, once however often.
    const retried = await Promise.all([queue.propose(redecided), queue.propose(redecided)]);
    for (const answer of retried) expect(answer).toMatchObject({ status: 'exists', effectId: first.effectId, outcome: null, queued: true });
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect(target.landedCount(first.effectId)).toBe(1);
    const jobIds = async () => (await queue.queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed'])).map((job) => job.id).sort();
    expect(await jobIds()).toEqual([first.effectId, `${first.effectId}.2`]);
    // Settled: the same request again is answered with its outcome and queues nothing.
    expect(await queue.propose(redecided)).toMatchObject({ status: 'exists', outcome: 'COMMITTED', queued: false });
    expect(await jobIds()).toEqual([first.effectId, `${first.effectId}.2`]);
  });

  it('recovery at worker start settles what a dead worker left open, with no job and no wait for a claim to lapse', async () => {
    const prefix = `t${randomBytes(6).toString('hex')}`;
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 });
    const dying = await rig({ prefix, target, worker: false });
    const terms = approvalTerms();
    await dying.stores.approvals.grant(terms);
    target.inject({ kind: 'crash-before-send' });
    const proposal = refundProposal({ approval: terms.id });
    await expect(dying.sender.gate.submit(proposal)).rejects.toThrow(/simulated crash/);
    const effectId = dying.sender.gate.effectIdOf(proposal);
    // The dying worker's heartbeat goes with it.
    await dying.sender.heartbeat.stop({ clear: true });
    const restarted = await rig({ prefix, target, worker: false, recovery: true });
    await restarted.recovery?.started;
    const state = await restarted.stores.journal.readState('payment:pi_1', effectId);
    expect(state.state.committed).toBe(true);
    expect(target.landedCount(effectId)).toBe(1);
  });

  it('a worker that took a job and died before dispatching it: the next worker to start runs the effect at once, not when the dead lock lapses', async () => {
    const prefix = `t${randomBytes(6).toString('hex')}`;
    const first = await rig({ prefix, worker: false });
    const terms = approvalTerms();
    await first.stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    // The holder: takes the job, never finishes it, and dies (its lock, a minute long, is no longer renewed).
    const connection = first.stores.queueConnection();
    let taken: () => void = () => undefined;
    const tookIt = new Promise<void>((resolve) => (taken = resolve));
    const holder = new Worker(first.stores.queues.effects, () => { taken(); return new Promise(() => undefined); }, { connection, prefix: first.stores.queues.prefix, lockDuration: 60_000, stalledInterval: 30_000 });
    const { effectId } = await first.queue.propose(proposal);
    await tookIt;
    await holder.close(true);
    await connection.quit();
    expect(await first.queue.queue.getJobState(effectId)).toBe('active');
    const startedAt = Date.now();
    const next = await rig({ prefix, target: first.target });
    expect(await next.worker?.adopting).toBe(1);
    expect((await next.stores.journal.readState('payment:pi_1', effectId)).state.committed).toBe(true);
    expect(first.target.landedCount(effectId)).toBe(1);
    expect(Date.now() - startedAt).toBeLessThan(30_000);
  }, 60_000);

  it('a job taken but never run while Redis went away (its taking stored, the answer lost): the worker runs its effect once its connection is back, not when the lock lapses', async () => {
    const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
    closers.push(() => redis.stop());
    // The worker's one slot is held by a refund of 1 cent whose send waits for the test, so it takes no other job.
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: testConfig().sendTimeoutMs });
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const apply = target.apply.bind(target);
    target.apply = async (effectId, effect, options) => {
      if ((effect as { amount?: number }).amount === 1) await released;
      return apply(effectId, effect, options);
    };
    const running = await rig({ redisUrl: redis.url, target, concurrency: 1 });
    expect(await running.worker?.adopting).toBe(0);
    const terms = approvalTerms();
    await running.stores.approvals.grant(terms);
    const busy = await running.queue.propose(refundProposal({ approval: terms.id, amount: 1 }));
    await expect.poll(async () => (await running.queue.queue.getJob(busy.effectId))?.processedOn, { timeout: 10_000 }).toBeDefined();
    // Another worker takes the next job and is gone before it runs it: the job stays active, locked for a minute.
    const connection = running.stores.queueConnection();
    let taken: () => void = () => undefined;
    const tookIt = new Promise<void>((resolve) => (taken = resolve));
    const holder = new Worker(running.stores.queues.effects, () => { taken(); return new Promise(() => undefined); }, { connection, prefix: running.stores.queues.prefix, lockDuration: 60_000, stalledInterval: 30_000 });
    const { effectId } = await running.queue.propose(refundProposal({ approval: terms.id }));
    await tookIt;
    await holder.close(true);
    await connection.quit();
    release();
    expect(await running.queue.waitFor(busy.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect(await running.queue.queue.getJobState(effectId)).toBe('active');
    // Redis restarts from its append-only file: the job is still active, its holder gone, its lock good for a minute.
    const startedAt = Date.now();
    await redis.kill('SIGKILL');
    await redis.restart();
    await expect.poll(async () => (await running.stores.journal.readState('payment:pi_1', effectId)).state.committed, { timeout: 20_000, interval: 100 }).toBe(true);
    expect(Date.now() - startedAt).toBeLessThan(20_000);
    // Counted once the run that committed it is over (its connection closed), a moment after the commit is seen.
    await expect.poll(() => running.worker?.adoptedAfterOutages(), { timeout: 10_000 }).toBe(1);
    expect(target.landedCount(effectId)).toBe(1);
  }, 60_000);
});

/** A memory target whose premise reads fail with Stripe refusing the key (401) the first `times` times. */
function keyRefusedTarget(times: number): MemoryTarget {
  const inner = createMemoryTarget({ tier: 1, sendTimeoutMs: testConfig({ keyPrefix: 'unused' }).sendTimeoutMs });
  let left = times;
  return {
    ...inner,
    async readFacts(...args: Parameters<MemoryTarget['readFacts']>) {
      if (left > 0) {
        left -= 1;
        throw new InterlockError('target_misconfigured', 'Stripe refused the API key (401): the key may have been rotated.');
      }
      return inner.readFacts(...args);
    },
  };
}

describe('a recorded proposal whose job fails is never dropped (P)', () => {
  const failedForGood = (queue: EffectsQueue, jobId: string) => expect.poll(async () => queue.queue.getJobState(jobId), { timeout: 10_000 }).toBe('failed');

  it('the same request sent again after its job failed for good queues the effect again, and it is judged', async () => {
    const target = keyRefusedTarget(1);
    const { stores, queue } = await rig({ target });
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const first = await queue.propose(proposal);
    await failedForGood(queue, first.effectId);
    expect(await settledOutcome(stores, first.effectId)).toBeNull();
    // The key works again; the request is sent again, as the alert asks: it is answered queued, and it runs.
    const again = await queue.propose(proposal);
    expect(again).toMatchObject({ status: 'exists', effectId: first.effectId, outcome: null, queued: true });
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect(target.landedCount(first.effectId)).toBe(1);
    // Settled: sent once more, it is answered from the journal and queues nothing.
    expect(await queue.propose(proposal)).toMatchObject({ status: 'exists', outcome: 'COMMITTED', queued: false });
    expect(target.landedCount(first.effectId)).toBe(1);
  });

  it('a premise-read outage that outlasts BullMQ\'s attempts keeps the job waiting, and the effect is judged once Stripe answers', async () => {
    // Three attempts 50 ms apart would give up within a second; the worker's window (a minute here) is what counts.
    const { stores, queue, target } = await rig({ attempts: 3, transientRetry: { firstDelayMs: 50, maxDelayMs: 200, forMs: 60_000 } });
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    target.inject({ kind: 'premise-down' });
    const proposed = await queue.propose(refundProposal({ approval: terms.id }));
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const job = await queue.queue.getJob(proposed.effectId);
    expect(await job?.getState()).not.toBe('failed');
    expect((job?.data.transient as TransientFailures | undefined)?.failures).toBeGreaterThan(5);
    expect(await stores.alerts.list()).toEqual([]);
    target.heal();
    await expect.poll(async () => settledOutcome(stores, proposed.effectId), { timeout: 10_000 }).toBe('COMMITTED');
    expect(target.landedCount(proposed.effectId)).toBe(1);
  });

  it('a job that fails for good before its effect is judged raises a not_judged alert saying why and what to do; it is resolved once the same request sent again is judged', async () => {
    const target = keyRefusedTarget(1);
    const { stores, queue } = await rig({ target });
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id, amount: 2_000 });
    const first = await queue.propose(proposal);
    await failedForGood(queue, first.effectId);
    await expect.poll(async () => (await stores.alerts.list()).length, { timeout: 5_000 }).toBe(1);
    const [alert] = await stores.alerts.list();
    expect(alert).toMatchObject({ id: `not_judged:${first.effectId}`, kind: 'not_judged', effectId: first.effectId, subject: 'payment:pi_1', centsAtStake: 2_000, resolvedAt: null });
    expect(alert?.sentence).toMatch(/was recorded but not judged: its job failed for good \(target_misconfigured: Stripe refused the API key \(401\)/);
    expect(alert?.sentence).toContain('Nothing was sent');
    expect(alert?.action).toMatch(/^Fix the Stripe key or account the worker uses .*send the same request again/);
    await queue.propose(proposal);
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    await expect.poll(async () => (await stores.alerts.get(`not_judged:${first.effectId}`))?.resolvedAt ?? null, { timeout: 5_000 }).not.toBeNull();
    expect(await stores.alerts.list()).toEqual([]);
  });

  it('a job that failed for good and is retried from the queue (BullMQ\'s retry, as the queue board does) resolves its not_judged alert once judged', async () => {
    const target = keyRefusedTarget(1);
    const { stores, queue } = await rig({ target });
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const first = await queue.propose(refundProposal({ approval: terms.id }));
    await failedForGood(queue, first.effectId);
    await expect.poll(async () => (await stores.alerts.get(`not_judged:${first.effectId}`))?.resolvedAt, { timeout: 5_000 }).toBeNull();
    await (await queue.queue.getJob(first.effectId))?.retry('failed');
    expect(await queue.waitFor(first.effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    await expect.poll(async () => (await stores.alerts.get(`not_judged:${first.effectId}`))?.resolvedAt ?? null, { timeout: 5_000 }).not.toBeNull();
  });

  it('a job whose failures outlast the retry window fails for good and raises a not_judged alert too; a settled effect raises none', async () => {
    const { stores, queue, target } = await rig({ transientRetry: { firstDelayMs: 50, maxDelayMs: 100, forMs: 500 } });
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    target.inject({ kind: 'premise-down' });
    const proposed = await queue.propose(refundProposal({ approval: terms.id }));
    await failedForGood(queue, proposed.effectId);
    expect((await queue.queue.getJob(proposed.effectId))?.failedReason).toMatch(/ for \d+ s, \d+ tries: /);
    await expect.poll(async () => (await stores.alerts.list()).map((alert) => alert.id), { timeout: 5_000 }).toEqual([`not_judged:${proposed.effectId}`]);
    expect((await stores.alerts.get(`not_judged:${proposed.effectId}`))?.action).toMatch(/^Fix what kept Stripe or Redis from answering, then send the same request again/);
    // A refusal is an answer, not a failure: no alert.
    target.heal();
    target.world.set('payment:pi_1', { chargebacks: ['du_1'], refunded_by_others: 0 });
    const refused = await queue.propose(refundProposal({ approval: terms.id }));
    expect(await queue.waitFor(refused.effectId, 10_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });
    expect((await stores.alerts.list()).map((alert) => alert.id)).toEqual([`not_judged:${proposed.effectId}`]);
  });
});

describe('retrying a job that failed before its effect was judged', () => {
  /** The instants (ms from the first failure) at which a job failing every time is tried, until it gives up. */
  function tries(policy: TransientRetry): { at: number[]; gaveUpAt: number } {
    const at: number[] = [];
    let now = 0;
    let state: TransientFailures | null = null;
    for (;;) {
      const next = afterTransientFailure(state, now, policy);
      state = next.state;
      if (next.kind === 'give-up') return { at, gaveUpAt: now };
      at.push(next.at);
      now = next.at;
    }
  }

  it('by default waits a second, then doubling up to five minutes, and keeps trying for six hours: an hour-long Stripe or Redis outage ends with the effect judged', () => {
    const { at, gaveUpAt } = tries(TRANSIENT_RETRY);
    expect(at.slice(0, 4)).toEqual([1_000, 3_000, 7_000, 15_000]);
    const gaps = at.map((instant, i) => instant - (at[i - 1] ?? 0));
    expect(Math.max(...gaps)).toBe(5 * 60_000);
    // Once an hour-long outage ends, the next try comes within five minutes.
    expect(at.find((instant) => instant >= 3_600_000)).toBeLessThanOrEqual(3_600_000 + 5 * 60_000);
    expect(gaveUpAt).toBe(6 * 3_600_000);
    expect(at.at(-1)).toBe(6 * 3_600_000);
  });
});

describe('asking again about an effect recovery could not settle', () => {
  const answer = (outcome: string, retryAfterMs?: number) => ({ effectId: 'e'.repeat(64), outcome, sentence: '', ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }) as never;
  const waits = (outcome: string, before: number) => {
    const next = disposition(answer(outcome), before);
    return next.kind === 'later' ? next.at - Date.now() : null;
  };

  it('an UNRESOLVED effect (Stripe or its lookup not answering) is asked again a second later, doubling with each such answer in a row up to five minutes, not every second for ever', () => {
    const gaps = [0, 1, 2, 3, 8, 9, 40].map((before) => waits('UNRESOLVED:target_unavailable', before) ?? NaN);
    for (const [index, expected] of [1_000, 2_000, 4_000, 8_000, 256_000, 300_000, 300_000].entries()) expect(gaps[index]).toBeGreaterThanOrEqual(expected - 50);
    for (const [index, expected] of [1_000, 2_000, 4_000, 8_000, 256_000, 300_000, 300_000].entries()) expect(gaps[index]).toBeLessThanOrEqual(expected + 50);
    // In flight is asked again when its holder said, whatever came before; a settled effect is done.
    expect(waits('IN_FLIGHT', 9)).toBeLessThanOrEqual(1_050);
    expect(disposition(answer('COMMITTED'), 5)).toEqual({ kind: 'done' });
  });

  it('the job counts its UNRESOLVED answers in a row, so each waits longer than the one before', async () => {
    const { stores, queue, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    // The send's answer is lost, and every lookup fails: recovery cannot settle the effect (UNRESOLVED).
    target.inject({ kind: 'error-after-send' });
    target.inject({ kind: 'lookup-down' });
    const proposed = await queue.propose(refundProposal({ approval: terms.id }));
    await expect.poll(async () => ((await queue.queue.getJob(proposed.effectId))?.data.unresolved ?? 0), { timeout: 30_000, interval: 200 }).toBeGreaterThanOrEqual(2);
    const job = await queue.queue.getJob(proposed.effectId);
    expect(await job?.getState()).toBe('delayed');
    // The second UNRESOLVED answer in a row waits two seconds, the first one; a fixed second would be 1,000.
    expect(job?.delay ?? 0).toBeGreaterThanOrEqual(1_900);
  });
});
