// Rule: `interlock serve` with the worker role sweeps the cases' outbox (queues/decisions.ts requeueUnqueued) with its
// recovery passes: a case an earlier process stored and stopped before queuing is queued by the next worker to start,
// without anyone submitting it again (tests/queues/case-outbox.test.ts has the sweep's own rules).
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { caseEffectId, createDecisionsQueue } from '../../queues/decisions.js';
import type { CaseSubmission } from '../../src/interlock.js';
import { openPipeline, spawnWorker, type Pipeline } from '../pipeline/pipeline-support.js';
import { sleep, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';

let world: StripeWorld;
let pipeline: Pipeline;
beforeAll(async () => {
  world = await startStripeWorld();
  pipeline = await openPipeline(world.sandbox);
});
afterAll(async () => {
  await pipeline?.close();
  await world?.close();
});

it('a worker queues at start the case a stopped submission stored and never queued', async () => {
  const { stores } = pipeline;
  const approval = `ap_outbox_${randomBytes(4).toString('hex')}`;
  await stores.approvals.grant({ id: approval, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: 'payment:pi_outbox' });
  const submission: CaseSubmission = { caseId: `case-${randomBytes(4).toString('hex')}`, kind: 'refund', subject: 'pi_outbox', incident: null, story: 'The parcel never arrived.', approval, agent: 'support-bot' };
  // The submitting process stops between storing the case and adding its job (its queue closed under it).
  const closing = createDecisionsQueue(stores);
  await closing.close();
  await expect(closing.submit(submission, 'sam')).rejects.toThrow(/was stored, but queuing it failed/);
  // Its note made long enough ago that no submission can still be on its way.
  const redis = new Redis(pipeline.config.redisUrl);
  const queue = createDecisionsQueue(stores);
  try {
    expect(await redis.zadd(stores.keys.casesUnqueued, 'XX', 'CH', 1, submission.caseId)).toBe(1);
    const serve = spawnWorker(pipeline.env({}), ['serve', '--roles', 'worker']);
    try {
      await serve.ready;
      // The worker adds the job, and its decisions worker takes the case off the note once the case is final (the
      // note stays while it waits): both are waited for (a check between the two steps would find the job and the note).
      let state: string | undefined;
      let noted = true;
      for (let i = 0; i < 100 && (state === undefined || noted); i += 1) {
        state = await (await queue.queue.getJob(caseEffectId(submission.caseId)))?.getState();
        noted = (await stores.cases.unqueued(Number.MAX_SAFE_INTEGER, 10)).includes(submission.caseId);
        if (state === undefined || noted) await sleep(100);
      }
      expect(state, serve.logs().slice(-3000)).toBeDefined();
      expect(noted, 'the case is still noted as not final').toBe(false);
    } finally {
      await serve.stop(2_000);
    }
  } finally {
    await queue.close();
    await redis.quit();
  }
}, 90_000);
