// Rule: the effects producer reads a caller's proposal once: what the job carries is what was recorded, not the
// caller's object read (serialized) again. A request id held by a class getter is recorded, so the job's copy holds it
// too.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { approvalTerms, refundProposal, testConfig } from '../support/harness.js';
import { startEffectsRig } from './effects-rig.js';
import { RefundRequest } from '../support/class-proposal.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

describe('the effects job of a proposal held in a class instance', () => {
  it('carries the proposal as recorded (its request id included)', async () => {
    const config = testConfig({ keyPrefix: `session-${randomBytes(5).toString('hex')}` });
    // No worker runs the job: only what the producer queued is looked at.
    const { stores, queue, worker } = await startEffectsRig(closers, config);
    await worker.worker.pause(true);
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const plain = refundProposal({ approval: terms.id });
    const recorded = await queue.propose(new RefundRequest(plain));
    if (recorded.status === 'conflict') throw new Error(`not recorded: ${recorded.reason}`);
    const job = await queue.queue.getJob(recorded.effectId);
    const carried = job?.data.proposal as Record<string, unknown> | undefined;
    expect({ recorded: recorded.proposal.requestId, carried: carried?.requestId }).toEqual({ recorded: plain.requestId, carried: plain.requestId });
  });
});
