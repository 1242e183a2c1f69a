// Once a proposal is recorded (or a case stored), no failure to queue it is answered "nothing was recorded": the
// queue closed under the call (a service stopping) or Redis refusing it gets the answer a timeout after the record
// gets: recorded, perhaps not queued, send the same request again. That request, sent again, queues it; a caller
// told "nothing was recorded" would have no reason to, and the recorded proposal would never reach a worker. The
// failure is marked (wasRecorded), so the CLI, which reports an unreachable Redis as "nothing was changed", does not.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { caseEffectId, createDecisionsQueue } from '../../queues/decisions.js';
import { createEffectsQueue, wasRecorded } from '../../queues/effects.js';
import { InterlockError, openStores, type CaseSubmission, type Stores } from '../../src/interlock.js';
import { asApiError } from '../../webhooks/api/errors.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function stores(): Promise<Stores> {
  const config = testConfig({ keyPrefix: `t${randomBytes(6).toString('hex')}` });
  const opened = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  closers.push(async () => {
    await opened.close();
    await removePrefixes([config.keyPrefix]);
  });
  return opened;
}

/** What the support API answers for `error` (webhooks/api/errors.ts). */
function answered(error: unknown): { code: string; message: string } {
  const { code, message } = asApiError(error);
  return { code, message };
}

describe('a proposal recorded while its queue closes', () => {
  it('is answered recorded and perhaps not queued (send it again), never "nothing was recorded"; sent again, it is queued', async () => {
    const opened = await stores();
    const terms = approvalTerms();
    await opened.approvals.grant(terms);
    const proposal = refundProposal({ requestId: `case-stop-${randomBytes(4).toString('hex')}`, approval: terms.id });
    // The process stops: its effects queue closes while the store (the journal) still answers.
    const closing = createEffectsQueue(opened);
    await closing.close();
    const failed = await closing.propose(proposal).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(InterlockError);
    // Marked, so a command that reports an unreachable Redis as "nothing was changed" (the CLI) tells it apart.
    expect(wasRecorded(failed)).toBe(true);
    const answer = answered(failed);
    expect(answer.code).toBe('redis_unavailable');
    expect(answer.message).toMatch(/^Effect [0-9a-f]{64} was recorded, but queuing it failed \(.+\), so it may or may not be queued\. Send the same request again/);
    expect(answer.message).not.toMatch(/nothing was recorded/i);
    const effectId = (failed as InterlockError).message.slice('Effect '.length, 'Effect '.length + 64);
    expect((await opened.journal.receipt(effectId))?.entries.map((entry) => entry.kind)).toEqual(['PROPOSED']);
    // The same request sent again (to a process that runs) is answered from the journal and queued.
    const running = createEffectsQueue(opened);
    closers.push(() => running.close());
    expect(await running.propose(proposal)).toMatchObject({ status: 'exists', effectId, queued: true });
    expect(await (await running.queue.getJob(effectId))?.getState()).toBe('waiting');
  });
});

describe('a case stored while its queue closes', () => {
  it('is answered stored and perhaps not queued (submit it again), never "nothing was recorded"; submitted again, it is queued', async () => {
    const opened = await stores();
    const terms = approvalTerms();
    await opened.approvals.grant(terms);
    const submission: CaseSubmission = { caseId: `case-${randomBytes(4).toString('hex')}`, kind: 'refund', subject: 'pi_1', incident: null, story: 'The parcel never arrived.', approval: terms.id, agent: 'support-bot' };
    const closing = createDecisionsQueue(opened);
    await closing.close();
    const failed = await closing.submit(submission, 'sam').catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(InterlockError);
    expect(wasRecorded(failed)).toBe(true);
    const answer = answered(failed);
    expect(answer.code).toBe('redis_unavailable');
    expect(answer.message).toMatch(new RegExp(`^Case ${submission.caseId} was stored, but queuing it failed \\(.+\\), so it may or may not be queued\\. Submit the same case again`));
    expect(answer.message).not.toMatch(/nothing was recorded/i);
    expect((await opened.cases.get(submission.caseId))?.status.state).toBe('queued');
    const running = createDecisionsQueue(opened);
    closers.push(() => running.close());
    expect(await running.submit(submission, 'sam')).toMatchObject({ status: 'exists' });
    expect(await (await running.queue.getJob(caseEffectId(submission.caseId)))?.getState()).toBe('waiting');
  });
});
