// Rule: a fact about money (a dispute escalated) on a payment whose committed refund effect lost its journal in Redis
// (its state and chain gone, its binding left: a partial loss the deployment marker cannot see) is not counted as a
// duplicate in silence: a warn line names the effect, its subject and the object whose fact was not recorded.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { disputeOf, pay, startFactsRig, type FactsRig } from './facts-rig.js';

let rig: FactsRig;
beforeAll(async () => {
  rig = await startFactsRig();
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

it('says so when a chargeback comes for a refund effect whose journal is gone', async () => {
  const { paymentIntent } = await pay(rig.stripe, 'pm_card_createDisputeInquiry', 10_000);
  const effectId = await rig.refund(paymentIntent, 2_000);
  const inquiry = await disputeOf(rig.stripe, paymentIntent);
  await rig.until(effectId, (view) => view.finalMoney.refunds[0]?.status === 'succeeded');
  await rig.sandbox.control.idle();
  await rig.drained();
  const lost = await rig.redis.keys(`${rig.config.keyPrefix}:*${effectId}*`);
  expect(lost.length).toBeGreaterThan(0);
  await rig.redis.del(...lost);
  const warningsBefore = rig.warnings.length;
  await rig.sandbox.control.advanceClock(120);
  await rig.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
  await rig.sandbox.control.idle();
  await rig.drained();
  const said = rig.warnings.slice(warningsBefore).map((warning) => JSON.stringify(warning));
  const naming = said.filter((line) => line.includes(effectId) && line.includes('its journal was lost'));
  expect(naming.length, said.join('\n')).toBeGreaterThan(0);
  expect(naming[0]).toContain(`payment:${paymentIntent}`);
  expect(naming[0]).toContain(inquiry.id);
});
