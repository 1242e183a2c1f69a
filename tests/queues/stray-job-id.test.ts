// Rule: an effects job runs only the effect its id names (job id = effect id, or `<effect id>.<n>` for a follow-up).
// A job added by hand under an id no producer recorded, carrying a proposal of another effect nobody recorded, was
// run on its copy (the fallback meant for an older producer's job of that same effect): the refund was recorded and
// sent, and the job completed with the other effect's answer. Such a job, and one whose id is not an effect's at all,
// now fails for good with a message naming what is wrong; nothing is recorded or sent, and no not_judged alert is
// raised, as there is no effect to judge.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Job } from 'bullmq';
import { effectIdFor } from '../../src/core/effect-id.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig } from '../support/harness.js';
import { startEffectsRig, type EffectsRig } from './effects-rig.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function rig(): Promise<EffectsRig & { approval: string }> {
  const prefix = `sj${randomBytes(6).toString('hex')}`;
  closers.push(() => removePrefixes([prefix, `{${prefix}-queues}`]));
  const made = await startEffectsRig(closers, testConfig({ keyPrefix: prefix }), { worker: { concurrency: 2 } });
  const terms = approvalTerms();
  await made.stores.approvals.grant(terms);
  return { ...made, approval: terms.id };
}

/** Waits until the job has failed or completed, and answers its state, failure and answer. */
async function finished(made: EffectsRig, jobId: string): Promise<{ state: string; failedReason: string; answer: unknown; job: Job }> {
  await expect.poll(async () => (await made.queue.queue.getJob(jobId))?.getState(), { timeout: 20_000 }).toMatch(/^(failed|completed)$/);
  const job = await made.queue.queue.getJob(jobId);
  if (job === undefined) throw new Error(`job ${jobId} is gone`);
  return { state: await job.getState(), failedReason: job.failedReason, answer: job.returnvalue, job };
}

async function recordedAnything(made: EffectsRig, effectIds: readonly string[]): Promise<boolean> {
  const partitions = await Promise.all(effectIds.map((effectId) => made.stores.journal.partitionOf(effectId)));
  return partitions.some((partition) => partition !== null);
}

describe('an effects job whose id names no recorded effect', () => {
  it('carrying a proposal of another effect nobody recorded: fails for good naming both ids, records and sends nothing, raises no alert', async () => {
    const made = await rig();
    const stray = refundProposal({ approval: made.approval, amount: 700 });
    const strayEffect = effectIdFor({ requestId: stray.requestId, effect: stray.effect });
    const jobId = 'f'.repeat(64);
    await made.queue.queue.add('effect', { proposal: stray, recordedAt: Date.now() }, { jobId });
    const { state, failedReason, answer } = await finished(made, jobId);
    expect({ state, answer, landings: made.target.landings.length }).toEqual({ state: 'failed', answer: null, landings: 0 });
    expect(failedReason).toContain(jobId);
    expect(failedReason).toContain(strayEffect);
    expect(await recordedAnything(made, [jobId, strayEffect])).toBe(false);
    await made.worker.close();
    expect(await made.stores.alerts.list({ all: true })).toEqual([]);
  }, 30_000);

  for (const [what, jobIdOf] of [
    ['a follow-up suffix that is no number', (effectId: string) => `${effectId}.by-hand`],
    ['two suffixes', (effectId: string) => `${effectId}.2.3`],
    ['capital letters', (effectId: string) => effectId.toUpperCase()],
  ] as const) {
    it(`whose id is not an effect's (${what}): fails for good saying so, records and sends nothing, raises no alert`, async () => {
      const made = await rig();
      // The job carries the proposal of the very effect its id starts with: the id alone is what is refused.
      const carried = refundProposal({ approval: made.approval, amount: 900 });
      const effectId = effectIdFor({ requestId: carried.requestId, effect: carried.effect });
      const jobId = jobIdOf(effectId);
      await made.queue.queue.add('effect', { proposal: carried, recordedAt: Date.now() }, { jobId });
      const { state, failedReason } = await finished(made, jobId);
      expect({ state, landings: made.target.landings.length }).toEqual({ state: 'failed', landings: 0 });
      expect(failedReason).toMatch(/^invalid_effect: job id .* names no effect/);
      expect(await recordedAnything(made, [effectId])).toBe(false);
      await made.worker.close();
      expect(await made.stores.alerts.list({ all: true })).toEqual([]);
    }, 30_000);
  }

  it('a job the producer queued (the effect id) and its follow-up (`<effect id>.<n>`) still run', async () => {
    const made = await rig();
    const proposal = refundProposal({ approval: made.approval, amount: 500 });
    const proposed = await made.queue.propose(proposal);
    expect((await finished(made, proposed.effectId)).answer).toMatchObject({ outcome: 'COMMITTED' });
    const followUp = `${proposed.effectId}.2`;
    await made.queue.queue.add('effect', { proposal, recordedAt: Date.now() }, { jobId: followUp });
    expect((await finished(made, followUp)).answer).toMatchObject({ outcome: expect.stringMatching(/^(COMMITTED|DUPLICATE_IGNORED)$/) });
    expect(made.target.landings).toHaveLength(1);
  }, 30_000);
});
