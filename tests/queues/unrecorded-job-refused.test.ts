// Rule: an effects job is only a request to run its effect's latest RECORDED proposal (queues/README.md; "no job can
// make money move outside the gate"). Every producer records the proposal before it queues the job, and the edges
// that record it (API, CLI, decisions worker) check four eyes, the caller's token and the premises they read. So a job
// whose effect has no PROPOSED recorded, added by someone who can write only the queue keys ({prefix-queues}:*), is
// refused (invalid_proposal): it fails for good, nothing is recorded or sent, no alert is raised (there is no effect
// to judge), and an error is logged naming the job. Found: src/gate/submit.ts submitLatest recorded the job's carried
// copy as it stood and sent it (the "older producer" fallback, though no version ever queued unrecorded proposals):
// the approver's own refund under her four-eyes approval, on empty premises past an open chargeback, signed as asked
// by the `auditor` token, COMMITTED.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { effectIdFor } from '../../src/core/effect-id.js';
import { entryHash, ENTRY_VERSION } from '../../src/core/entries.js';
import { parseProposalAndEffect } from '../../src/core/proposal.js';
import { isOnlyEntryOf, proposedDraft } from '../../src/gate/record.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig } from '../support/harness.js';
import { startEffectsRig, type EffectsRig } from './effects-rig.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

type LogLine = { level: number; msg: string; jobId?: string; error?: string };

async function rig(): Promise<EffectsRig & { approval: string; lines: LogLine[]; forger: Queue }> {
  const prefix = `ur${randomBytes(6).toString('hex')}`;
  closers.push(() => removePrefixes([prefix, `{${prefix}-queues}`]));
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const made = await startEffectsRig(closers, testConfig({ keyPrefix: prefix }), { logger: pino({ level: 'error' }, sink), worker: { concurrency: 2 } });
  // The world: pi_1 has an open chargeback (the edge records it as a premise, and the gate refuses the refund).
  made.target.world.set('payment:pi_1', { chargebacks: ['du_open'], refunded_by_others: 0 });
  // A four-eyes approval granted by ops, for dana to approve.
  const terms = approvalTerms({ approver: 'dana@support', capCents: 5_000 });
  await made.stores.approvals.grant(terms, JSON.stringify({ four_eyes: true, granted_by: 'ops' }));
  // The forger: a plain BullMQ client on the queue's keys only.
  const conn = new Redis(made.config.redisUrl, { maxRetriesPerRequest: null });
  const forger = new Queue(made.stores.queues.effects, { connection: conn, ...made.stores.bullmq });
  closers.push(async () => {
    await forger.close();
    conn.disconnect();
  });
  return { ...made, approval: terms.id, lines, forger };
}

/** The approver's own refund under her four-eyes approval, on premises that name nothing, asked by no token. */
function forgedProposal(approval: string) {
  const requestId = `case-${randomBytes(4).toString('hex')}`;
  const effect = { kind: 'refund', paymentIntent: 'pi_1', amount: 5_000, reason: 'requested_by_customer' };
  return { requestId, agent: 'dana@support', approval, premises: {}, effect, request: { request_id: requestId, token: 'auditor' } };
}

async function finished(made: EffectsRig, jobId: string): Promise<{ state: string; failedReason: string; answer: unknown; job: Job }> {
  await expect.poll(async () => (await made.queue.queue.getJob(jobId))?.getState(), { timeout: 20_000 }).toMatch(/^(failed|completed)$/);
  const job = await made.queue.queue.getJob(jobId);
  if (job === undefined) throw new Error(`job ${jobId} is gone`);
  return { state: await job.getState(), failedReason: job.failedReason, answer: job.returnvalue, job };
}

async function expectRefused(made: Awaited<ReturnType<typeof rig>>, effectId: string): Promise<void> {
  const { state, failedReason, answer } = await finished(made, effectId);
  expect({ state, answer, landings: made.target.landings.length }).toEqual({ state: 'failed', answer: null, landings: 0 });
  expect(failedReason).toMatch(new RegExp(`^invalid_proposal: The job of effect ${effectId} carries a proposal no producer recorded, and no proposal of ${effectId} is recorded`));
  expect(failedReason).toContain('nothing was recorded or sent');
  expect(failedReason).toContain('propose it through the support API or the CLI');
  // No entry of the effect is written: no PROPOSED naming dana or the auditor token, no receipt.
  expect(await made.stores.journal.receipt(effectId)).toBeNull();
  await made.worker.close();
  expect(await made.stores.alerts.list({ all: true })).toEqual([]);
  expect(made.lines.filter((line) => line.level >= 50 && line.jobId === effectId).map((line) => line.msg)).toEqual([
    expect.stringContaining('no proposal of its effect is recorded, so nothing was recorded or sent'),
  ]);
}

describe('an effects job whose effect has no proposal recorded', () => {
  it('minted with only the queue keys (four-eyes approver, empty premises past an open chargeback, a token that never asked): fails for good, nothing recorded or sent', async () => {
    const made = await rig();
    const proposal = forgedProposal(made.approval);
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    await made.forger.add('effect', { proposal, recordedAt: Date.now() }, { jobId: effectId });
    await expectRefused(made, effectId);
  }, 30_000);

  it('carrying an `onlyEntry` made up to match its proposal (the fast path that dispatches without reading the chain): refused the same way', async () => {
    const made = await rig();
    const proposal = forgedProposal(made.approval);
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    const at = Date.now();
    const kid = 'made-up';
    const hash = entryHash(Object.assign({}, proposedDraft(parseProposalAndEffect(proposal).proposal), { v: ENTRY_VERSION, effectId, at, prev: null, kid }));
    const onlyEntry = { hash, v: ENTRY_VERSION, at, kid };
    expect(isOnlyEntryOf(onlyEntry, effectId, parseProposalAndEffect(proposal).proposal)).toBe(true);
    await made.forger.add('effect', { proposal, recordedAt: at, onlyEntry }, { jobId: effectId });
    await expectRefused(made, effectId);
  }, 30_000);

  it('a recorded proposal still runs, and a job carrying another copy of it runs the recorded one', async () => {
    const made = await rig();
    made.target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
    const proposal = refundProposal({ approval: made.approval, amount: 500 });
    const proposed = await made.queue.propose(proposal);
    expect((await finished(made, proposed.effectId)).answer).toMatchObject({ outcome: 'COMMITTED' });
    // A follow-up job added by hand carrying the approver as agent: the recorded proposal (support-bot) is what runs.
    const followUp = `${proposed.effectId}.2`;
    await made.forger.add('effect', { proposal: { ...proposal, agent: 'dana@support' }, recordedAt: Date.now() }, { jobId: followUp });
    expect((await finished(made, followUp)).answer).toMatchObject({ outcome: expect.stringMatching(/^(COMMITTED|DUPLICATE_IGNORED)$/) });
    const agents = (await made.stores.journal.receipt(proposed.effectId))?.entries.filter((entry) => entry.kind === 'PROPOSED').map((entry) => (entry as { agent: string }).agent);
    expect({ agents, landings: made.target.landings.length }).toEqual({ agents: ['support-bot'], landings: 1 });
  }, 30_000);
});
