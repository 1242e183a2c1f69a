// RULE: a proposal whose facts cannot be read (Stripe not answering) is still answered from the journal when its
// answer needs no facts, and never told "nothing was recorded" when its request is recorded. A support tool that
// retries a committed refund (a timeout on its side) gets the effect as it stands (200, COMMITTED, nothing sent
// again, as README "The same refund again" promises); another payload under that request id is 409
// conflicting_payload; a recorded request whose retry would be judged again on the facts stays 503, saying it is
// recorded; a new request stays 503 "nothing was recorded". The journal is asked only once the read failed.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../webhooks/app.js';
import { approvalBody, bearer, refundBody, rigSuite, tokenRegistry, TOKENS, uid } from './rig.js';

const rig = rigSuite({ worker: true });

/** The same service while Stripe does not answer fact reads. */
function stripeDown() {
  return createApp({
    stores: rig.stores,
    effects: rig.queue,
    readFacts: async () => {
      throw new Error('Stripe did not answer');
    },
    tokens: tokenRegistry(),
    logger: rig.stores.logger,
  });
}

/** A refund proposed and settled while Stripe answers; `cap` is the approval's cap in cents. */
async function settledRefund(cap = 5_000) {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${pi}`, cap_cents: cap });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  const body = refundBody({ payment_intent: pi, approval: approval.id });
  const first = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(body);
  return { body, first };
}

describe('a retry of a request already recorded, while the facts cannot be read', () => {
  it('answers the committed effect from the journal, not "nothing was recorded"', async () => {
    const { body, first } = await settledRefund();
    expect(first.body).toMatchObject({ state: 'committed', outcome: 'COMMITTED' });
    const retry = await request(stripeDown()).post('/v1/refunds').set(bearer(TOKENS.support)).send(body);
    expect(retry.body.error?.message ?? '').not.toMatch(/nothing was recorded/);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ effect_id: first.body.effect_id, state: 'committed', outcome: 'COMMITTED' });
    expect(rig.target.landedCount(first.body.effect_id)).toBe(1);
  });

  it('refuses another payload under the committed request id as conflicting (409), not 503 "nothing was recorded"', async () => {
    const { body, first } = await settledRefund();
    expect(first.body).toMatchObject({ state: 'committed', outcome: 'COMMITTED' });
    const other = await request(stripeDown()).post('/v1/refunds').set(bearer(TOKENS.support)).send({ ...body, amount: 1_999 });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('conflicting_payload');
    // Noted on the receipt as evidence, as a conflict met with the facts read is.
    const receipt = await request(rig.app).get(`/v1/effects/${first.body.effect_id}/receipt`).set(bearer(TOKENS.auditor));
    expect(JSON.stringify(receipt.body)).toContain('REFUSED:conflicting_payload');
  });

  it('keeps 503 for a recorded refusal a retry would judge again on the facts, saying it is recorded', async () => {
    // Refused on the payment's cap (a new request over its approval's own cap is refused before it is recorded,
    // invalid_approval): a retry is decided again (the cap may have been lifted, the facts moved).
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: `payment:${pi}` });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    expect((await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 0 })).status).toBe(200);
    const body = refundBody({ payment_intent: pi, approval: approval.id });
    const first = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(body);
    expect(first.body).toMatchObject({ state: 'refused', outcome: 'REFUSED:over_cap' });
    const retry = await request(stripeDown()).post('/v1/refunds').set(bearer(TOKENS.support)).send(body);
    expect(retry.status).toBe(503);
    expect(retry.body.error.code).toBe('premise_read_failed');
    expect(retry.body.error.message).toContain(`is recorded (effect ${first.body.effect_id})`);
    expect(retry.body.error.message).toContain('Stripe did not answer');
    expect(retry.body.error.message).not.toMatch(/nothing was recorded/);
  });

  it('keeps 503 "nothing was recorded" for a new request, and records nothing', async () => {
    const pi = `pi_${uid()}`;
    const approval = approvalBody({ scope: `payment:${pi}` });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const body = refundBody({ payment_intent: pi, approval: approval.id });
    const answer = await request(stripeDown()).post('/v1/refunds').set(bearer(TOKENS.support)).send(body);
    expect(answer.status).toBe(503);
    expect(answer.body.error.message).toMatch(/nothing was recorded/);
    const listed = await request(rig.app).get(`/v1/effects?request=${String(body.request_id)}`).set(bearer(TOKENS.support));
    expect(listed.body.data).toEqual([]);
  });
});
