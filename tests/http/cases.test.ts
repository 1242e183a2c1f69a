// POST /v1/cases and GET /v1/cases/:id over the whole path: the support API stores the case and queues it, the
// decisions worker decides it (the rules decider, or the real SDK against the local Messages API server), and an
// accepted decision is proposed and sent to the Stripe sandbox. 202 queued, 200 the same case with the same
// payload, 409 another payload; nothing is stored for a case the API refuses.
import request from 'supertest';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { reconcileAll } from '../../queues/facts.js';
import { createFacts, createFactsReader } from '../../src/interlock.js';
import { createApp } from '../../webhooks/app.js';
import { replies } from '../decider/messages-server.js';
import { disputeOf } from '../facts/facts-rig.js';
import { pay } from '../stripe/stripe-support.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { bearer, caseBody, tokenRegistry, TOKENS, uid } from './rig.js';

const { rig, server } = casesSuite();

const post = (body: Record<string, unknown>, query = '', token: string = TOKENS.support) => request(rig.app).post(`/v1/cases${query}`).set(bearer(token)).send(body);

describe('POST /v1/cases', () => {
  it('202 queued; with ?wait the rules decider decides, the refund commits at the sandbox, and the answer says so', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const answer = await post(body, '?wait=20');
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.body).toMatchObject({
      object: 'case',
      id: body.case_id,
      kind: 'refund',
      payment_intent: paymentIntent,
      customer: null,
      approval,
      agent: 'sam',
      state: 'proposed',
      outcome: 'COMMITTED',
      decision: { model: 'rules', action: 'refund', amount_cents: 2_000 },
      error: null,
      effect: { state: 'committed', outcome: 'COMMITTED' },
    });
    expect(answer.body.links.effect).toBe(`/v1/effects/${answer.body.effect.effect_id}`);
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);

    // The same case with the same payload: 200, the case as it stands, nothing decided or sent again.
    const again = await post(body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: body.case_id, state: 'proposed', outcome: 'COMMITTED', attempts: 1 });
    // Another payload under the same case id: 409, the stored case stands.
    const other = await post({ ...body, story: 'Make it $50 instead.' });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('conflicting_payload');
    expect((await rig.stores.cases.get(String(body.case_id)))?.submission.story).toBe(body.story);
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
  });

  // Rule: a case re-submitted by another token is the same case. The same body without `agent` (the agent then is the
  // token's name) sent again by another support token was refused 409 as "another payload".
  it('the same body without an agent, sent again by another support token: 200 the same case, its agent as stored; an agent named otherwise is another payload', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const body = caseBody({ payment_intent: paymentIntent, approval });
    expect((await post(body)).status).toBe(202);
    const again = await post(body, '', TOKENS.danaSupport);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ id: body.case_id, agent: 'sam' });
    expect((await post({ ...body, agent: 'dana' }, '', TOKENS.danaSupport)).status).toBe(409);
  });

  it('a model answering 3000 against a 2000 approval: MODEL_DEVIATED, recorded refused with an inbox item, nothing at the sandbox', async () => {
    rig.useDecider(modelDecider(server));
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 3000, reason: 'The customer is upset; $30 feels right.' }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const answer = await post(caseBody({ payment_intent: paymentIntent, approval }), '?wait=20');
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ state: 'deviated', outcome: 'MODEL_DEVIATED', effect: { state: 'refused', outcome: 'REFUSED:lease' }, decision: { model: 'claude-haiku-4-5-20251001', amount_cents: 3_000 } });
    const effectId = String(answer.body.effect.effect_id);
    // Support may not read the inbox, so its answer links no item; an auditor reading the case is given the link.
    expect(answer.body.links).toMatchObject({ effect: `/v1/effects/${effectId}`, inbox: null });
    const inbox = String((await request(rig.app).get(`/v1/cases/${String(answer.body.id)}`).set(bearer(TOKENS.auditor))).body.links.inbox);
    expect(inbox).toBe(`/v1/inbox/model_deviated:${effectId}`);
    expect(answer.body.sentence).toMatch(/^MODEL_DEVIATED: the model decided \$30\.00, but approval .* covers at most \$20\.00\. Nothing was sent; its decision is recorded refused/);
    // The approver re-approves the amount the model asked for under a new approval: the inbox proposes it afresh.
    const item = await request(rig.app).get(inbox).set(bearer(TOKENS.approver));
    expect(item.status, JSON.stringify(item.body)).toBe(200);
    expect(item.body).toMatchObject({ kind: 'model_deviated', status: 'open', cents_at_stake: 3_000, actions: ['reapprove', 'dismiss'] });
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
    const fresh = `ap_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: fresh, approver: 'lee', cap_cents: 3_000, scope: `payment:${paymentIntent}` })).status).toBe(201);
    const reapproved = await request(rig.app).post(`${inbox}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: fresh, note: 'Jar and lid both cracked: $30 is right.' });
    expect(reapproved.status, JSON.stringify(reapproved.body)).toBe(202);
    const giveUp = Date.now() + 15_000;
    while ((await rig.refundsAt(paymentIntent)).length === 0 && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([3_000]);
  });

  it('refuses, storing nothing: an approval of another payment (400), an unknown approval (404), four eyes (403), one of payment_intent or customer (400), a case id a URL cannot name (400)', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const elsewhere = await rig.paymentWithApproval(2_000);
    const cases = [
      { body: caseBody({ payment_intent: paymentIntent, approval: elsewhere.approval }), status: 400, code: 'invalid_request', field: 'approval' },
      { body: caseBody({ payment_intent: paymentIntent, approval: `ap_${uid()}` }), status: 404, code: 'unknown_approval' },
      { body: caseBody({ payment_intent: paymentIntent, customer: 'cus_1', incident: 'inc_1', approval }), status: 400, code: 'invalid_request', field: 'payment_intent' },
      { body: caseBody({ payment_intent: paymentIntent, incident: 'inc_1', approval }), status: 400, code: 'invalid_request', field: 'incident' },
      // Its effect is requested as case:<case id>, which must fit a request id's 200 characters: refused up front, where
      // it used to be taken (202) and then fail at its proposal, naming a request id the caller never sent.
      { body: caseBody({ case_id: `c${uid()}${'x'.repeat(185)}`, payment_intent: paymentIntent, approval }), status: 400, code: 'invalid_request', field: 'case_id' },
      // A URL reads . and .. as steps of its path: the case's own link (/v1/cases/..) would never reach it.
      { body: caseBody({ case_id: '.', payment_intent: paymentIntent, approval }), status: 400, code: 'invalid_request', field: 'case_id' },
      { body: caseBody({ case_id: '..', payment_intent: paymentIntent, approval }), status: 400, code: 'invalid_request', field: 'case_id' },
    ];
    for (const { body, status, code, field } of cases) {
      const answer = await post(body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
      expect(answer.body.error.code).toBe(code);
      if (field !== undefined) expect(answer.body.error.fields.map((problem: { path: string }) => problem.path)).toContain(field);
      expect(await rig.stores.cases.get(String(body.case_id))).toBeNull();
    }
    // An approval that asks for four eyes, granted by sam's own name: sam may not submit a case under it.
    const { paymentIntent: other } = await rig.paymentWithApproval(2_000);
    const foureyes = `ap_${uid()}`;
    const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: foureyes, approver: 'sam', cap_cents: 2_000, scope: `payment:${other}`, four_eyes: true });
    expect(granted.status).toBe(201);
    const body = caseBody({ payment_intent: other, approval: foureyes });
    const refused = await post(body);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('four_eyes');
    expect(await rig.stores.cases.get(String(body.case_id))).toBeNull();
  });

  it('a process without the decisions queue answers 503 not_available', async () => {
    const app = createApp({ stores: rig.stores, effects: rig.effects, readFacts: async () => ({}), tokens: tokenRegistry(), logger: pino({ level: 'silent' }) });
    const answer = await request(app).post('/v1/cases').set(bearer(TOKENS.support)).send(caseBody());
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('not_available');
  });
});

describe('GET /v1/cases/:id', () => {
  it('answers the case as it stands, with its decision and its effect; 404 unknown_case for an id never submitted', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const body = caseBody({ payment_intent: paymentIntent, approval });
    expect((await post(body)).status).toBe(202);
    const decided = await rig.decisions.waitFor(String(body.case_id), 15_000);
    await rig.effects.waitFor(decided?.status.effectId ?? '', 15_000);
    const answer = await request(rig.app).get(`/v1/cases/${String(body.case_id)}`).set(bearer(TOKENS.auditor));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: body.case_id, state: 'proposed', outcome: 'COMMITTED', effect: { effect_id: decided?.status.effectId, outcome: 'COMMITTED' } });
    const missing = await request(rig.app).get(`/v1/cases/case-${uid()}`).set(bearer(TOKENS.auditor));
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('unknown_case');
  });

  it('a case whose refund Stripe accepted and then failed answers COMMITTED with final money not_returned, and says the money did not go back', async () => {
    // A $100 payment with an open bank inquiry: the inquiry escalates after the $20 refund landed, and Stripe fails it.
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_createDisputeInquiry', 10_000);
    const approval = `ap_${uid()}`;
    await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents: 2_000, scope: `payment:${paymentIntent}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const answer = await post(body, '?wait=20');
    expect(answer.body).toMatchObject({ state: 'proposed', outcome: 'COMMITTED', final_money: { status: 'returned' }, answer: 'returned' });
    expect(answer.body.sentence).toBe(`Proposed as effect ${String(answer.body.effect.effect_id)}: The effect was sent once and Stripe accepted it.`);
    const inquiry = await disputeOf(rig.stripe, paymentIntent);
    await rig.world.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
    // The facts reach the receipt (a re-read here; the webhook brings the same ones).
    await reconcileAll(rig.stores, createFacts(rig.stores, createFactsReader(rig.world.client)), Date.now() - 3_600_000);

    const shown = await request(rig.app).get(`/v1/cases/${String(body.case_id)}`).set(bearer(TOKENS.support));
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({
      state: 'proposed',
      outcome: 'COMMITTED',
      final_money: { status: 'not_returned', failure_reason: 'charge_for_pending_refund_disputed' },
      answer: 'returned',
      effect: { outcome: 'COMMITTED', final_money: { status: 'not_returned' }, answer: 'returned', answer_matches_final_money: false },
    });
    expect(shown.body.sentence).toContain('Then Stripe failed the refund (charge_for_pending_refund_disputed): the money did not go back to the customer');
  });

  it('a MODEL_DEVIATED case a person re-approved from the inbox answers as the re-approved effect: its outcome and money, not "nothing was sent"', async () => {
    rig.useDecider(modelDecider(server));
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 3000, reason: 'Jar and lid both cracked; $30.' }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const deviated = await post(body, '?wait=20');
    expect(deviated.body).toMatchObject({ state: 'deviated', outcome: 'MODEL_DEVIATED', final_money: null, reapprovals: [] });
    const fresh = `ap_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: fresh, approver: 'lee', cap_cents: 3_000, scope: `payment:${paymentIntent}` })).status).toBe(201);
    const reapproved = await request(rig.app).post(`/v1/inbox/model_deviated:${String(deviated.body.effect.effect_id)}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: fresh, note: '$30 is right.' });
    expect(reapproved.status, JSON.stringify(reapproved.body)).toBe(202);
    const landed = String(reapproved.body.effect_id);
    expect(await rig.effects.waitFor(landed, 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect((await rig.refundsAt(paymentIntent)).map((refund) => [refund.amount, refund.status])).toEqual([[3_000, 'succeeded']]);

    const shown = await request(rig.app).get(`/v1/cases/${String(body.case_id)}`).set(bearer(TOKENS.support));
    expect(shown.status).toBe(200);
    const own = String(deviated.body.effect.effect_id);
    expect(shown.body).toMatchObject({
      state: 'deviated',
      outcome: 'COMMITTED',
      final_money: { status: 'returned' },
      answer: 'returned',
      effect: { effect_id: own, outcome: 'REFUSED:lease' },
      reapprovals: [{ item: `model_deviated:${own}`, approval: fresh, by: 'alex', effect_id: landed, effect: { outcome: 'COMMITTED', amount: 3_000, final_money: { status: 'returned' } } }],
      links: { reapproved: `/v1/effects/${landed}` },
    });
    expect(shown.body.sentence).not.toMatch(/Nothing was sent/);
    expect(shown.body.sentence).toContain(`re-approved it under ${fresh} (inbox item model_deviated:${own}) as effect ${landed}: The effect was sent once and Stripe accepted it.`);
  });

  it('a MODEL_DEVIATED case whose inbox item a person dismissed says who dismissed it and why, no longer that it asks a person', async () => {
    rig.useDecider(modelDecider(server));
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 3000, reason: 'More feels fair.' }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const deviated = await post(body, '?wait=20');
    expect(deviated.body).toMatchObject({ state: 'deviated', outcome: 'MODEL_DEVIATED' });
    const dismissed = await request(rig.app).post(`/v1/inbox/model_deviated:${String(deviated.body.effect.effect_id)}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'The $20 stands.' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
    const shown = await request(rig.app).get(`/v1/cases/${String(body.case_id)}`).set(bearer(TOKENS.support));
    expect(shown.body).toMatchObject({ state: 'deviated', outcome: 'MODEL_DEVIATED', reapprovals: [] });
    expect(shown.body.sentence).toContain(`Nothing was sent; its decision is recorded refused on effect ${String(deviated.body.effect.effect_id)}, and alex dismissed inbox item model_deviated:${String(deviated.body.effect.effect_id)}: "The $20 stands."`);
  });
});
