// Rule: a not_judged alert says "a recorded proposal whose job failed for good before it was judged" (README metrics
// table, interlock_alerts_open{kind="not_judged"}). The effects worker resolves it once the effect is judged; a later
// proposal of the same effect (a re-decision after a refusal) whose job fails for good is a new failure nobody has
// seen: its alert opens again, and the gauge counts it. It used to stay resolved (only its updatedAt moved).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { openStores, settledOutcome, startSender } from '../../src/interlock.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { keyRefusingTarget } from './effects-rig.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const config = testConfig({ keyPrefix: `tnjr${randomBytes(6).toString('hex')}` });
const closers: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await removePrefixes([config.keyPrefix]);
});

function gauge(text: string, kind: string): number | undefined {
  const line = text.split('\n').find((one) => one.startsWith(`interlock_alerts_open{kind="${kind}"} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

it('a re-decision whose job fails for good after the effect\'s not_judged alert was resolved opens the alert again', async () => {
  const { target, refuse } = keyRefusingTarget(config);
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  const sender = await startSender(stores, target);
  const queue = createEffectsQueue(stores, { backoffMs: 50 });
  const worker = startEffectsWorker(stores, sender, { concurrency: 2 });
  closers.push(() => stores.close(), () => sender.close(), () => queue.close(), () => worker.close(true));
  const metrics = createMetrics({ stores, defaultMetrics: false });

  const first = approvalTerms();
  await stores.approvals.grant(first);
  const requestId = `case-${randomBytes(4).toString('hex')}`;
  const proposal = refundProposal({ requestId, approval: first.id });
  const { effectId } = await queue.propose(proposal);
  const alertId = `not_judged:${effectId}`;

  // Stripe refuses the key: the job fails for good, the alert opens.
  await expect.poll(async () => (await stores.alerts.get(alertId))?.resolvedAt, { timeout: 15_000 }).toBeNull();
  expect(gauge((await metrics.render()).text, 'not_judged')).toBe(1);

  // The key is fixed, the approval revoked meanwhile: the same request sent again is judged REFUSED:lease, which
  // resolves the alert.
  refuse(false);
  await stores.approvals.revoke(first.id, 'dana');
  await queue.propose(proposal);
  await expect.poll(async () => settledOutcome(stores, effectId), { timeout: 15_000 }).toBe('REFUSED:lease');
  await expect.poll(async () => (await stores.alerts.get(alertId))?.resolvedAt ?? null, { timeout: 10_000 }).not.toBeNull();
  expect(gauge((await metrics.render()).text, 'not_judged')).toBe(0);

  // A re-decision under a new approval; Stripe refuses the key again: its job (effectId.2) fails for good unjudged.
  refuse(true);
  const second = approvalTerms();
  await stores.approvals.grant(second);
  const redecided = await queue.propose(refundProposal({ requestId, approval: second.id }));
  expect(redecided.effectId).toBe(effectId);
  await expect.poll(async () => queue.queue.getJobState(`${effectId}.2`), { timeout: 15_000 }).toBe('failed');
  const resolved = await stores.alerts.get(alertId);
  // The worker's raise has run once the alert's updatedAt moved past its resolution.
  await expect.poll(async () => (await stores.alerts.get(alertId))?.updatedAt ?? 0, { timeout: 10_000 }).toBeGreaterThan(resolved?.resolvedAt ?? 0);
  expect(await settledOutcome(stores, effectId)).toBeNull();

  const alert = await stores.alerts.get(alertId);
  expect({ resolvedAt: alert?.resolvedAt, resolvedBy: alert?.resolvedBy }).toEqual({ resolvedAt: null, resolvedBy: null });
  expect(gauge((await metrics.render()).text, 'not_judged')).toBe(1);
}, 60_000);
