// The longest payment and customer ids the schemas take (a prefix and 200 letters, digits or _) work everywhere: a
// subject made of one (`customer:cus_…`, 213 characters) is a Redis partition like any other. The partition rule used
// to stop at 200 characters, past the check that took the id: a refund on such an id answered 500 after its binding
// was written, and from then on every unfiltered effects listing (the API's, the page's, reconcile's) failed on it.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { approvalBody, bearer, creditBody, refundBody, rigSuite, TOKENS } from './rig.js';

const rig = rigSuite();

describe('the longest ids the schemas take', () => {
  it('are granted, capped, proposed and listed like any other, and leave every listing working', async () => {
    const paymentIntent = `pi_${'a'.repeat(200)}`;
    const customer = `cus_${'b'.repeat(200)}`;
    rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 0 });
    const onPayment = approvalBody({ scope: `payment:${paymentIntent}` });
    const onCustomer = approvalBody({ scope: `customer:${customer}`, cap_cents: 5_000 });
    for (const body of [onPayment, onCustomer]) expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body)).status).toBe(201);
    expect((await request(rig.app).put(`/v1/caps/payment:${paymentIntent}`).set(bearer(TOKENS.approver)).send({ cap_cents: 5_000 })).status).toBeLessThan(300);
    const refund = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: paymentIntent, approval: onPayment.id }));
    expect(refund.status, JSON.stringify(refund.body)).toBe(202);
    const credit = await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send(creditBody({ customer, approval: onCustomer.id }));
    expect(credit.status, JSON.stringify(credit.body)).toBeLessThan(300);
    const listed = await request(rig.app).get(`/v1/effects?subject=payment:${paymentIntent}`).set(bearer(TOKENS.support));
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(JSON.stringify(listed.body)).toContain(refund.body.effect_id as string);
    expect((await request(rig.app).get('/v1/effects').set(bearer(TOKENS.support))).status).toBe(200);
    expect((await request(rig.app).get('/ui').set(bearer(TOKENS.support))).status).toBe(200);
  });
});
