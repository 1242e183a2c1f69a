// Rule: the rules decider declines a refund on a payment with chargebacks whatever became of them (its facts name the
// disputes, not whether the merchant won them), and says so truthfully: a refund beside a chargeback returns the money
// twice unless the merchant won the dispute, which the facts do not show, so a person who checked the dispute sends the
// refund by hand. It never claims a refund after a won dispute would return the money twice, and sends nothing.
import { expect, it } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import { casesSuite } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';

const { rig } = casesSuite();

it('a $20 goodwill refund on a payment whose chargeback the merchant won: declined, saying the facts do not show how the dispute ended and how to send it by hand; nothing sent', async () => {
  const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
  const intent = await rig.stripe.paymentIntents.retrieve(paymentIntent);
  const charge = String(intent.latest_charge);
  const dispute = await rig.world.sandbox.control.openDispute({ charge, kind: 'chargeback' });
  await rig.stripe.disputes.update(dispute.id, { evidence: { uncategorized_text: 'winning_evidence' } });
  const deadline = Date.now() + 15_000;
  while ((await rig.stripe.disputes.retrieve(dispute.id)).status !== 'won') {
    if (Date.now() > deadline) throw new Error('the dispute was not won in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const caseId = `case-${uid()}`;
  await rig.decisions.submit({ caseId, kind: 'refund', subject: paymentIntent, incident: null, story: 'The jar arrived cracked; the bank dispute was decided for the merchant; support approved a $20 goodwill refund.', approval, agent: 'support-bot' }, 'sam');
  const record = await rig.decisions.waitFor(caseId, 15_000);
  expect(record?.status).toMatchObject({ state: 'declined', effectId: null, error: null, decision: { model: 'rules', action: 'decline', amountCents: null } });
  const text = record?.status.decision?.text ?? '';
  expect(text).not.toContain('would return it twice');
  expect(text).toContain(`Payment ${paymentIntent} has chargebacks (${dispute.id}): a refund beside a chargeback returns the money twice unless the merchant won the dispute, and the facts read at Stripe do not say how it ended, so no refund was proposed for case ${caseId}.`);
  expect(text).toContain(`if the dispute was won by the merchant and the customer is still owed money, a person sends it with POST /v1/refunds (npx interlock refund) under an approval that covers it (${approval}, if it has a use and room left: npx interlock approvals describe ${approval}).`);
  expect(await rig.stores.journal.partitionOf(caseEffectId(caseId))).toBeNull();
  expect(await rig.refundsAt(paymentIntent)).toEqual([]);
});
