// Rule: a not_judged alert is about an effect nobody judged. When a job failing for good raises it just as another
// job of the effect judges it (the check that the effect is unjudged, then the raise, with the judging and its
// resolution in between), the alert does not stay open over a committed effect: the worker that raised it finds the
// effect judged and resolves it again. Under load the late raise of an earlier failed job reopened the alert after
// the effect committed, and it stayed open, asking a person about money that had moved
// (tests/queues/proposal-cap-failed-jobs.test.ts failed about one run in two).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { openStores, settledOutcome, startSender } from '../../src/interlock.js';
import { keyRefusingTarget } from './effects-rig.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const config = testConfig({ keyPrefix: `tnjrace${randomBytes(6).toString('hex')}` });
const closers: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await removePrefixes([config.keyPrefix]);
});

it('a not_judged raise that lands after the effect was judged leaves the alert resolved', async () => {
  const { target, refuse } = keyRefusingTarget(config);
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  const sender = await startSender(stores, target);
  const queue = createEffectsQueue(stores, { backoffMs: 50 });
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  const proposal = refundProposal({ requestId: `case-${randomBytes(4).toString('hex')}`, approval: terms.id });

  // The worker's raise is held until another job of the effect has judged it: the key works again, the proposal is
  // judged (COMMITTED), and the alert (raised by an earlier failure) is resolved as the effects worker resolves it.
  const raise = stores.alerts.raise.bind(stores.alerts);
  let racing = false;
  // Set once the judging and the earlier alert's resolution are done, to the outcome the judging answered; the raise
  // runs inside the worker, which swallows what it throws, so the test body checks it.
  let judgedFirst: string | null = null;
  stores.alerts.raise = async (alert) => {
    if (alert.kind === 'not_judged' && !racing) {
      racing = true;
      refuse(false);
      const judged = await sender.gate.submit(proposal);
      const { occurredAt: _failedAt, ...unsaid } = alert;
      const earlier = await raise(unsaid);
      await stores.alerts.resolve(earlier.alert.id, 'effects worker: the effect was judged');
      judgedFirst = judged.outcome;
    }
    return raise(alert);
  };
  const worker = startEffectsWorker(stores, sender, { concurrency: 2 });
  closers.push(() => stores.close(), () => sender.close(), () => queue.close(), () => worker.close(true));

  const { effectId } = await queue.propose(proposal);
  await expect.poll(() => judgedFirst, { timeout: 15_000 }).toBe('COMMITTED');
  expect(await settledOutcome(stores, effectId)).toBe('COMMITTED');
  await expect.poll(async () => (await stores.alerts.get(`not_judged:${effectId}`))?.resolvedAt ?? null, { timeout: 10_000 }).not.toBeNull();
  // And it stays so: nothing opens it again.
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect((await stores.alerts.get(`not_judged:${effectId}`))?.resolvedAt).not.toBeNull();
  expect(target.landedCount(effectId)).toBe(1);
});
