// Rule: the cap on decisions not judged yet (record.ts MAX_PROPOSALS) never wedges an effect that nothing will judge.
// When the jobs of an effect holding MAX_PROPOSALS decisions failed for good (Stripe's reads failing past the
// transient window: not_judged raised, and recovery leaves such jobs alone), the next re-decision is still refused
// (409 too_many_proposals, nothing written), but its producer queues the effect's latest decision again (its failed
// job replaced) and the refusal says so. That job judges the effect: a commit answers the next re-decision as the
// effect stands, its money landed once; a refusal takes the next re-decision again, which is recorded and commits once.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { EffectsQueue } from '../../queues/effects.js';
import { InterlockError, settledOutcome, type MemoryTarget, type Stores } from '../../src/interlock.js';
import { MAX_PROPOSALS } from '../../src/gate/record.js';
import { approvalTerms, refundProposal, testConfig } from '../support/harness.js';
import { startEffectsRig } from './effects-rig.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function rig() {
  const config = testConfig({ keyPrefix: `tcapfail-${randomBytes(5).toString('hex')}` });
  // A transient window of 1.5 s: a job whose premise reads keep failing fails for good soon after.
  return startEffectsRig(closers, config, { queue: { backoffMs: 50 }, worker: { concurrency: 4, transientRetry: { firstDelayMs: 100, maxDelayMs: 200, forMs: 1_500 } } });
}

/** The effect holding MAX_PROPOSALS decisions (an agent rewording each retry through a Stripe outage), every job of it failed for good. */
async function wedged(stores: Stores, queue: EffectsQueue, target: MemoryTarget) {
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  const base = refundProposal({ approval: terms.id });
  const reworded = (attempt: number) => ({ ...base, decision: { model: 'gpt-x', text: `Refund approved (attempt ${attempt}): the jar arrived cracked.` } });
  target.inject({ kind: 'premise-down' });
  let effectId = '';
  for (let attempt = 0; attempt < MAX_PROPOSALS; attempt += 1) effectId = (await queue.propose(reworded(attempt))).effectId;
  await expect
    .poll(
      async () => {
        const counts = await queue.queue.getJobCounts('waiting', 'active', 'delayed');
        return (await stores.alerts.get(`not_judged:${effectId}`)) !== null && Object.values(counts).every((count) => count === 0);
      },
      { timeout: 30_000, interval: 100 },
    )
    .toBe(true);
  target.heal();
  const proposed = async () => (await stores.journal.entries('payment:pi_1', effectId)).filter((entry) => entry.kind === 'PROPOSED').length;
  expect(await proposed()).toBe(MAX_PROPOSALS);
  return { effectId, reworded, proposed };
}

async function refusal(attempt: Promise<unknown>): Promise<InterlockError> {
  const error = await attempt.then(() => null, (thrown: unknown) => thrown);
  if (!(error instanceof InterlockError)) throw new Error(`expected an InterlockError, got ${String(error)}`);
  return error;
}

describe('a re-decision refused as too many, on an effect whose jobs failed for good', () => {
  it('queues the latest decision again, which commits the effect: the next re-decision is answered as it stands, the money landed once', async () => {
    const { stores, queue, target } = await rig();
    const { effectId, reworded, proposed } = await wedged(stores, queue, target);

    const error = await refusal(queue.propose(reworded(MAX_PROPOSALS)));
    expect([error.code, error.status, error.retryable]).toEqual(['too_many_proposals', 409, true]);
    expect(error.message).toContain(`Effect ${effectId} already holds ${MAX_PROPOSALS} decisions`);
    expect(error.message).toContain('so it was queued again now');
    expect(error.message).toContain('its not_judged alert');
    // Nothing of the refused decision was written.
    expect(await proposed()).toBe(MAX_PROPOSALS);

    await expect.poll(() => settledOutcome(stores, effectId), { timeout: 20_000, interval: 50 }).toBe('COMMITTED');
    await expect.poll(async () => (await stores.alerts.get(`not_judged:${effectId}`))?.resolvedAt ?? null, { timeout: 10_000, interval: 50 }).not.toBeNull();
    expect(await queue.propose(reworded(MAX_PROPOSALS + 1))).toMatchObject({ status: 'exists', outcome: 'COMMITTED' });
    expect(target.landedCount(effectId)).toBe(1);
    expect(await proposed()).toBe(MAX_PROPOSALS);
  }, 90_000);

  it('queues the latest decision again, which is refused on facts that moved: the next re-decision is recorded, and commits once', async () => {
    const { stores, queue, target } = await rig();
    const { effectId, reworded, proposed } = await wedged(stores, queue, target);
    // Charged back meanwhile: the latest decision, decided on no chargeback, is refused when judged.
    target.world.set('payment:pi_1', { chargebacks: ['du_1'], refunded_by_others: 0 });

    expect((await refusal(queue.propose(reworded(MAX_PROPOSALS)))).message).toContain('so it was queued again now');
    await expect.poll(() => settledOutcome(stores, effectId), { timeout: 20_000, interval: 50 }).toBe('REFUSED:stale_premise');

    // The dispute was withdrawn, and the agent decides again (reworded once more): a refusal lets re-decisions in again.
    target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
    expect(await queue.propose(reworded(MAX_PROPOSALS + 1))).toMatchObject({ status: 'recorded', proposals: MAX_PROPOSALS + 1 });
    expect(await proposed()).toBe(MAX_PROPOSALS + 1);
    await expect.poll(() => settledOutcome(stores, effectId), { timeout: 20_000, interval: 50 }).toBe('COMMITTED');
    expect(target.landedCount(effectId)).toBe(1);
  }, 90_000);
});

it('a decision refused as too many is answered so after one read of the caller\'s object', async () => {
  const { stores, queue, target } = await startEffectsRig(closers, testConfig({ keyPrefix: `tcapread-${randomBytes(5).toString('hex')}` }), { worker: { concurrency: 2, transientRetry: { firstDelayMs: 2_000, maxDelayMs: 5_000, forMs: 60_000 } } });
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  const base = refundProposal({ approval: terms.id });
  const reworded = (attempt: number) => ({ ...base, decision: { model: 'gpt-x', text: `Refund approved (attempt ${attempt}).` } });
  // Stripe's reads fail: nothing judges the effect while the decisions pile up.
  target.inject({ kind: 'premise-down' });
  for (let attempt = 0; attempt < MAX_PROPOSALS; attempt += 1) await queue.propose(reworded(attempt));
  // The next decision's request id is a getter that answers once: a second read (the producer parsing it again to find
  // the effect) would turn the 409 into a 400.
  let reads = 0;
  const { requestId, ...rest } = reworded(MAX_PROPOSALS);
  const once = Object.assign(Object.create({
    get requestId() {
      reads += 1;
      if (reads > 1) throw new Error('read twice');
      return requestId;
    },
  }) as Record<string, unknown>, rest);
  const error = await queue.propose(once).then(() => null, (thrown: unknown) => thrown);
  expect({ code: error instanceof InterlockError ? error.code : String(error), reads }).toEqual({ code: 'too_many_proposals', reads: 1 });
}, 60_000);
