// Rule: a refund or credit is sent only while the facts it was decided on hold (I3), and an effect that was never
// dispatched has no object of its own at Stripe ("only an effect that was ever dispatched can land"). A refund (or
// credit) made by hand between the decision and the first send, labelled with the effect's id (metadata
// interlock_effect_id, copied from the API's answer) and of the same amount, is someone else's money out: the gate's
// premise read counts it (ReadContext.neverSent), finds the premise stale and sends nothing, so Stripe holds one
// refund (one credit), not two with a receipt saying the effect happened once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../../webhooks/app.js';
import { REFUND_FACTS, CREDIT_FACTS, type Effect } from '../../src/interlock.js';
import { bearer, tokenRegistry, TOKENS } from '../http/rig.js';
import { startFactsRig, type FactsRig } from '../facts/facts-rig.js';

let rig: FactsRig;
/** The support API as serve wires it: its decision reads the facts at Stripe. */
let app: Express;
beforeAll(async () => {
  rig = await startFactsRig();
  app = apiWith(async () => undefined);
});
afterAll(async () => {
  await rig?.close();
});
const uid = () => randomBytes(4).toString('hex');

/** The support API, whose decision-time read is followed (before the proposal is recorded and queued) by `between`. */
function apiWith(between: (effectId: string, effect: Effect) => Promise<void>): Express {
  return createApp({
    stores: rig.stores,
    effects: rig.effects,
    readFacts: async (effect, names, context) => {
      const facts = await rig.target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs });
      await between(context.effectId, effect);
      return facts;
    },
    premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
    tokens: tokenRegistry(),
    logger: pino({ level: 'silent' }),
    limits: { ratePerMinute: null },
  });
}

async function grant(body: Record<string, unknown>): Promise<void> {
  const answer = await request(app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body);
  if (answer.status !== 201) throw new Error(`grant failed ${answer.status} ${JSON.stringify(answer.body)}`);
}

describe('a refund made by hand between the decision and the first send', () => {
  it('unlabelled: refused as a stale premise, one refund at Stripe', async () => {
    const intent = await rig.stripe.paymentIntents.create({ amount: 10_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    const approval = `ap_${uid()}`;
    await grant({ id: approval, approver: 'alex', cap_cents: 10_000, scope: `payment:${intent.id}` });
    const api = apiWith(async () => {
      await rig.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000 });
    });
    const answer = await request(api).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send({ request_id: `r-${uid()}`, payment_intent: intent.id, amount: 2_000, approval });
    expect(answer.body.outcome).toBe('REFUSED:stale_premise');
    expect((await rig.stripe.refunds.list({ payment_intent: intent.id })).data.map((r) => r.amount)).toEqual([2_000]);
  });

  it('labelled with the effect id and of its amount: refused as a stale premise, no second refund at Stripe', async () => {
    const intent = await rig.stripe.paymentIntents.create({ amount: 10_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    const approval = `ap_${uid()}`;
    await grant({ id: approval, approver: 'alex', cap_cents: 10_000, scope: `payment:${intent.id}` });
    const api = apiWith(async (effectId) => {
      await rig.stripe.refunds.create({ payment_intent: intent.id, amount: 2_000, metadata: { interlock_effect_id: effectId } });
    });
    const answer = await request(api).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send({ request_id: `r-${uid()}`, payment_intent: intent.id, amount: 2_000, approval });
    const refunded = (await rig.stripe.refunds.list({ payment_intent: intent.id })).data.filter((r) => r.status === 'succeeded' || r.status === 'pending').map((r) => r.amount);
    expect({ outcome: answer.body.outcome, refunded }).toEqual({ outcome: 'REFUSED:stale_premise', refunded: [2_000] });
  });
});

describe('a credit made by hand between the decision and the first send', () => {
  it('labelled with the effect id and tagged with the incident, of its amount: refused as a stale premise, no second credit', async () => {
    const customer = await rig.stripe.customers.create({ name: 'credited by hand' });
    const incident = `INC-${uid()}`;
    const approval = `ap_${uid()}`;
    await grant({ id: approval, approver: 'alex', cap_cents: 10_000, scope: `customer:${customer.id}` });
    const api = apiWith(async (effectId) => {
      await rig.stripe.customers.createBalanceTransaction(customer.id, { amount: -1_000, currency: 'usd', metadata: { interlock_effect_id: effectId, interlock_incident: incident } });
    });
    const answer = await request(api).post('/v1/credits?wait=10').set(bearer(TOKENS.support)).send({ request_id: `r-${uid()}`, customer: customer.id, amount: 1_000, incident, approval });
    const credited = (await rig.stripe.customers.listBalanceTransactions(customer.id)).data.filter((txn) => txn.amount < 0).map((txn) => txn.amount);
    expect({ outcome: answer.body.outcome, credited }).toEqual({ outcome: 'REFUSED:stale_premise', credited: [-1_000] });
  });
});
