// Rule: a refund case on a payment with less left to refund than its approval allows is proposed at what is refundable
// (the facts' `refundable`), so the refund goes out instead of being refused before the send with the case id spent.
// Before, a $20 approval on a $10 payment was proposed at $20 and refused by the target (REFUSED:target_error, "…more
// than the $10.00 still refundable…; it was not sent"), the case final under its id with nothing said of what to do.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { casesSuite } from '../support/cases-rig.js';
import { pay } from '../stripe/stripe-support.js';
import { bearer, caseBody, TOKENS } from './rig.js';

const { rig } = casesSuite();

describe('a case whose approval is more than the payment', () => {
  it('the rules decider refunds what is refundable, and it lands', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 1_000);
    const approval = `ap_over_${Date.now()}`;
    await rig.stores.approvals.grant({ id: approval, approver: 'lead', capCents: 2_000, scope: `payment:${paymentIntent}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
    const answer = await request(rig.app).post('/v1/cases?wait=20').set(bearer(TOKENS.support)).send(caseBody({ payment_intent: paymentIntent, approval }));
    expect(answer.status).toBe(202);
    expect(answer.body, JSON.stringify({ outcome: answer.body.outcome, sentence: answer.body.sentence })).toMatchObject({ state: 'proposed', outcome: 'COMMITTED', decision: { amount_cents: 1_000 } });
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([1_000]);
  });
});
