// Rule: an amount an operator reads is stated in its money's currency (src/core/money-text.ts), so the over-cap
// refusal states the cap, what it holds and the effect's amount in the currency the effect was decided in (its
// `currency` premise): 2000 JPY is ¥2,000, not "2000 cents". Decided without that premise, the currency is not known
// there, and the reason says so rather than calling the amounts cents or dollars.
import { afterEach, expect, it } from 'vitest';
import { refundProposal, type World } from '../support/harness.js';
import { FACTS, PAYMENT, gateWorld, grant } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

it('states an over-cap refusal of a yen refund in JPY', async () => {
  world = await gateWorld();
  world.target.world.set(PAYMENT, { ...FACTS, currency: 'jpy' });
  const node = await world.node('a');
  const { id } = await grant(node);
  await node.approvals.setSubjectCap(PAYMENT, 1_000);
  const answer = await node.gate.submit(refundProposal({ approval: id, premises: { ...FACTS, currency: 'jpy' } }));
  expect(answer).toMatchObject({ outcome: 'REFUSED:over_cap', reason: `subject:${PAYMENT} allows 1000 JPY and 0 JPY are already moved or in flight; 2000 JPY more would pass it` });
});

it('says the currency is unknown when the refund was decided without its currency premise', async () => {
  world = await gateWorld();
  const node = await world.node('a');
  const { id } = await grant(node);
  await node.approvals.setSubjectCap(PAYMENT, 1_000);
  const answer = await node.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('REFUSED:over_cap');
  expect(answer.reason).toMatch(/allows 1000 \(minor units, currency unknown\) and 0 \(minor units, currency unknown\) are already moved or in flight; 2000 \(minor units, currency unknown\) more would pass it$/);
});
