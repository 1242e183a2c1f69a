// Proposing over HTTP against a real effects worker and the memory target: facts read at decision time become the
// premises, the same request answers the same effect, another payload is refused (I5 at the edge), ?wait hears the
// outcome, four eyes, and facts that cannot be read record nothing.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, type Receipt } from '../../src/interlock.js';
import { createApp } from '../../webhooks/app.js';
import { approvalBody, bearer, creditBody, refundBody, rigSuite, tokenRegistry, TOKENS, uid } from './rig.js';

const rig = rigSuite({ worker: true });

const support = () => bearer(TOKENS.support);

/** A fresh payment with its facts and an approval for it. */
async function payment(options: { facts?: Record<string, unknown>; approval?: Record<string, unknown>; token?: string } = {}): Promise<{ pi: string; approval: string }> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0, ...options.facts });
  const body = approvalBody({ scope: `payment:${pi}`, ...options.approval });
  const granted = await request(rig.app).post('/v1/approvals').set(bearer(options.token ?? TOKENS.approver)).send(body);
  expect(granted.status, JSON.stringify(granted.body)).toBe(201);
  return { pi, approval: String(body.id) };
}

async function receiptOf(effectId: string): Promise<Receipt> {
  const answer = await request(rig.app).get(`/v1/effects/${effectId}/receipt`).set(bearer(TOKENS.auditor));
  expect(answer.status).toBe(200);
  return answer.body as Receipt;
}

describe.concurrent('proposing refunds and credits', () => {
  it('reads the facts at decision time and records them as the premises, with the agent, the token and the decision', async () => {
    const { pi, approval } = await payment({ facts: { refunded_by_others: 150, unrelated: 'not read' } });
    const body = refundBody({ payment_intent: pi, approval, agent: 'claude-support', decision: { model: 'claude-x', text: 'Refund $20: the parcel never arrived.' } });
    const answer = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(body);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ request_id: body.request_id, state: 'committed', outcome: 'COMMITTED', sentence: 'The effect was sent once and Stripe accepted it.' });
    expect(answer.body.effect_id).toBe(effectIdFor({ requestId: String(body.request_id), effect: null }));
    // Support reads effects, not receipts: the receipt's link is null for it.
    expect(answer.body.links).toEqual({ self: `/v1/effects/${answer.body.effect_id}`, receipt: null });
    const [proposed] = (await receiptOf(answer.body.effect_id)).entries;
    expect(proposed).toMatchObject({
      kind: 'PROPOSED',
      agent: 'claude-support',
      approval,
      premises: { chargebacks: [], refunded_by_others: 150 },
      effect: { kind: 'refund', paymentIntent: pi, amount: 2_000, reason: 'requested_by_customer' },
      request: { request_id: body.request_id, token: 'sam' },
      decision: { model: 'claude-x', text: 'Refund $20: the parcel never arrived.' },
    });
    expect(rig.target.landedCount(answer.body.effect_id)).toBe(1);
  });

  it('the same request with the same payload answers 200 with the effect recorded; another payload is 409 and the recorded one stands', async () => {
    const { pi, approval } = await payment();
    const body = refundBody({ payment_intent: pi, approval });
    const first = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(body);
    expect(first.status).toBe(202);
    const again = await request(rig.app).post('/v1/refunds').set(support()).send(body);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body });
    const redecided = await request(rig.app).post('/v1/refunds').set(support()).send({ ...body, amount: 3_000 });
    expect(redecided.status).toBe(409);
    expect(redecided.body.error).toMatchObject({ code: 'conflicting_payload' });
    expect(redecided.body.error.message).toContain(first.body.effect_id);
    const landed = rig.target.landings.filter((landing) => landing.effectId === first.body.effect_id);
    expect(landed.map((landing) => landing.effect.amount)).toEqual([2_000]);
    // The refused payload is kept as evidence in the effect's receipt; the outcome is still the first one's.
    const detail = await request(rig.app).get(`/v1/effects/${first.body.effect_id}`).set(support());
    expect(detail.body.outcome).toBe('COMMITTED');
    expect(detail.body.journal.map((entry: { kind: string; code?: string }) => entry.code ?? entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REFUSED:conflicting_payload']);
  });

  it('a refusal tells the caller why, in the gate\'s words: the amount over the cap, the payment the approval does not cover; a commit gives no reason', async () => {
    const { pi, approval } = await payment({ approval: { cap_cents: 2_000 } });
    // An amount over the approval's cap, under a new request id, is refused before it is recorded, in the gate's words.
    const over = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: pi, approval, amount: 2_500 }));
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ code: 'invalid_approval', fields: [{ path: 'approval', message: `approval ${approval} covers at most 2000 (minor units, currency unknown), not 2500 (minor units, currency unknown)` }] });
    // So is one on a payment the approval does not cover.
    const other = `pi_${uid()}`;
    const elsewhere = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: other, approval, amount: 100 }));
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error).toMatchObject({ code: 'invalid_approval', fields: [{ path: 'approval', message: `approval ${approval} covers payment:${pi}, not payment:${other}` }] });
    // The gate says the same of one recorded without the API (its queue), and the effect itself says it to the support
    // role, which may not read receipts.
    const recorded = await rig.queue.propose({ requestId: `case-${uid()}`, agent: 'sam', approval, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: other, amount: 100 } });
    expect((await rig.queue.waitFor(recorded.effectId, 10_000))?.outcome).toBe('REFUSED:lease');
    const detail = await request(rig.app).get(`/v1/effects/${recorded.effectId}`).set(support());
    expect(detail.body.reason).toBe(`approval ${approval} covers payment:${pi}, not payment:${other}`);
    const committed = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: pi, approval, amount: 2_000 }));
    expect(committed.body).toMatchObject({ outcome: 'COMMITTED', reason: null });
  });

  it('a refused request decided again on facts that changed is answered with the new decision (?wait hears it), not the earlier refusal', async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = `ap_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approvalBody({ id: approval, scope: `payment:${pi}` }))).status).toBe(201);
    // The payment's cap stops all money on it for now.
    expect((await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 0 })).status).toBe(200);
    const body = refundBody({ payment_intent: pi, approval });
    const early = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(body);
    expect(early.body).toMatchObject({ state: 'refused', outcome: 'REFUSED:over_cap' });
    // The cap is lifted, and the payment's facts have moved on: the same request is a new decision.
    expect((await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 100_000 })).status).toBe(200);
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 100 });
    const again = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(body);
    expect(again.status).toBe(202);
    // Judged under this approval against the facts of its first proposal (core/decisions.ts premisesDecidedOn):
    // they changed, so the new answer is a stale premise, with what changed, and nothing is sent.
    expect(again.body).toMatchObject({ effect_id: early.body.effect_id, state: 'refused', outcome: 'REFUSED:stale_premise', reason: 'refunded_by_others: was 0, now 100' });
    const detail = await request(rig.app).get(`/v1/effects/${early.body.effect_id}`).set(support());
    expect(detail.body).toMatchObject({ state: 'refused', outcome: 'REFUSED:stale_premise' });
    expect(rig.target.landedCount(early.body.effect_id)).toBe(0);
  });

  it('a request id first used on another payment is 409, not a second effect', async () => {
    const a = await payment();
    const b = await payment();
    const body = refundBody({ payment_intent: a.pi, approval: a.approval });
    expect((await request(rig.app).post('/v1/refunds').set(support()).send(body)).status).toBe(202);
    const moved = await request(rig.app).post('/v1/refunds').set(support()).send({ ...body, payment_intent: b.pi, approval: b.approval });
    expect(moved.status).toBe(409);
    expect(moved.body.error.code).toBe('conflicting_payload');
  });

  it('a request id the service derives itself (case:<case id>, reapproval:<item id>) is refused with 400 naming request_id and why; nothing is recorded', async () => {
    const { pi, approval } = await payment();
    const item = `stale_premise:${'a'.repeat(64)}`;
    for (const [path, body] of [
      ['/v1/refunds', refundBody({ request_id: `case:${uid()}`, payment_intent: pi, approval, decision: { model: 'rules', text: 'forged' } })],
      ['/v1/refunds', refundBody({ request_id: `reapproval:${item}`, payment_intent: pi, approval })],
      ['/v1/credits', creditBody({ request_id: `case:${uid()}`, customer: `cus_${uid()}`, approval })],
      ['/v1/credits', creditBody({ request_id: `reapproval:${item}`, customer: `cus_${uid()}`, approval })],
    ] as const) {
      const answer = await request(rig.app).post(path).set(support()).send(body);
      expect(answer.status, `${path} ${String(body.request_id)}`).toBe(400);
      expect(answer.body.error.code).toBe('invalid_request');
      expect(answer.body.error.fields).toEqual([{ path: 'request_id', message: expect.stringMatching(/^may not start with "(case|reapproval):": the service derives the request ids of cases .* itself/) }]);
      expect(await rig.hasEffect(effectIdFor({ requestId: String(body.request_id), effect: null }))).toBe(false);
    }
    // Only the prefixes are reserved: a request id that merely holds the word is the caller's.
    const own = await request(rig.app).post('/v1/refunds').set(support()).send(refundBody({ request_id: `ticket-case:${uid()}`, payment_intent: pi, approval }));
    expect(own.status, JSON.stringify(own.body)).toBe(202);
  });

  it('a request id not in Unicode NFC (é as e + a combining accent) is refused with 400 naming request_id; the NFC spelling is taken', async () => {
    const { pi, approval } = await payment();
    const id = uid();
    const answer = await request(rig.app).post('/v1/refunds').set(support()).send(refundBody({ request_id: `ticket-cafe\u0301-${id}`, payment_intent: pi, approval }));
    expect(answer.status).toBe(400);
    expect(answer.body.error.fields).toEqual([{ path: 'request_id', message: expect.stringMatching(/^is not in Unicode normal form NFC/) }]);
    expect(await rig.hasEffect(effectIdFor({ requestId: `ticket-cafe\u0301-${id}`, effect: null }))).toBe(false);
    const nfc = await request(rig.app).post('/v1/refunds').set(support()).send(refundBody({ request_id: `ticket-caf\u00e9-${id}`, payment_intent: pi, approval }));
    expect(nfc.status, JSON.stringify(nfc.body)).toBe(202);
  });

  it('proposes a credit on the credit premises and commits it', async () => {
    const customer = `cus_${uid()}`;
    rig.target.world.set(`customer:${customer}`, { subscription_status: 'active', incident_compensation: 0 });
    const approval = approvalBody({ scope: `customer:${customer}` });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const body = creditBody({ customer, approval: approval.id, description: 'Outage on 3 May' });
    const answer = await request(rig.app).post('/v1/credits?wait=10').set(support()).send(body);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ state: 'committed', outcome: 'COMMITTED' });
    const [proposed] = (await receiptOf(answer.body.effect_id)).entries;
    expect(proposed).toMatchObject({ premises: { subscription_status: 'active', incident_compensation: 0 }, effect: { kind: 'credit', customer, amount: 500, incident: 'inc_1', description: 'Outage on 3 May' } });
  });


  it('answers the refusal when a fact changed between the decision and the send', async () => {
    const { pi, approval } = await payment();
    // The decision saw no chargeback; by the time the gate re-reads, there is one.
    const decidedEarlier = createApp({
      stores: rig.stores,
      effects: rig.queue,
      readFacts: async () => ({ chargebacks: [], refunded_by_others: 0 }),
      tokens: tokenRegistry(),
      logger: rig.stores.logger,
    });
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_1'], refunded_by_others: 0 });
    const answer = await request(decidedEarlier).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: pi, approval }));
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ state: 'refused', outcome: 'REFUSED:stale_premise', sentence: 'A fact this decision depends on is no longer true, so nothing was sent.' });
    expect(rig.target.landedCount(answer.body.effect_id)).toBe(0);
  });

  it.each([9_007_199_254_740_991, 123_456_789_012_345])('a cap of 15 or more digits (%d) is answered as set, not rounded to the 14 digits a Lua number prints', async (cents) => {
    const subject = `payment:pi_${uid()}`;
    const answer = await request(rig.app).put(`/v1/caps/${subject}`).set(bearer(TOKENS.approver)).send({ cap_cents: cents });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ cap_cents: cents, moved_cents: 0, sentence: expect.stringContaining(`(0 of ${cents} have moved`) });
    expect((await rig.stores.approvals.subjectCap(subject)).limitCents).toBe(cents);
  });

  it('a cap set to zero on the payment refuses the refund over the cap', async () => {
    const { pi, approval } = await payment();
    const cap = await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 0 });
    expect(cap.status).toBe(200);
    expect(cap.body).toEqual({ object: 'cap', subject: `payment:${pi}`, cap_cents: 0, moved_cents: 0, sentence: `0 minor units of its currency have moved (or are in flight) on payment:${pi}, at or over this cap of 0: nothing more may move on it until the cap is raised.` });
    const answer = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: pi, approval }));
    expect(answer.body).toMatchObject({ state: 'refused', outcome: 'REFUSED:over_cap' });
  });

  it('a cap set after money moved says what may still move, and says so when it is already used up', async () => {
    const { pi, approval } = await payment();
    const sent = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: pi, approval, amount: 1_500 }));
    expect(sent.body.outcome).toBe('COMMITTED');
    const room = await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 2_000 });
    expect(room.body).toMatchObject({ cap_cents: 2_000, moved_cents: 1_500, sentence: `500 more minor units of its currency may move on payment:${pi} (1500 of 2000 have moved or are in flight).` });
    const under = await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 1_000 });
    expect(under.body.sentence).toBe(`1500 minor units of its currency have moved (or are in flight) on payment:${pi}, at or over this cap of 1000: nothing more may move on it until the cap is raised.`);
  });

  it('facts that cannot be read: 503 premise_read_failed with Retry-After, and nothing recorded', async () => {
    const { pi, approval } = await payment();
    const failing = createApp({
      stores: rig.stores,
      effects: rig.queue,
      readFacts: async () => {
        throw new Error('Stripe answered 500 (sk_test_4eC39HqLyjWDarjtT1zdp7dc)');
      },
      tokens: tokenRegistry(),
      logger: rig.stores.logger,
    });
    const body = refundBody({ payment_intent: pi, approval });
    const answer = await request(failing).post('/v1/refunds').set(support()).send(body);
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe('premise_read_failed');
    expect(answer.headers['retry-after']).toBeDefined();
    expect(JSON.stringify(answer.body)).not.toContain('4eC39HqLyjWDarjtT1zdp7dc');
    expect(await rig.hasEffect(effectIdFor({ requestId: String(body.request_id), effect: null }))).toBe(false);
  });

  it('facts that take too long: 503 after the fact timeout, nothing recorded', async () => {
    const { pi, approval } = await payment();
    const hanging = createApp({ stores: rig.stores, effects: rig.queue, readFacts: () => new Promise(() => undefined), tokens: tokenRegistry(), logger: rig.stores.logger, limits: { factTimeoutMs: 100 } });
    const body = refundBody({ payment_intent: pi, approval });
    const answer = await request(hanging).post('/v1/refunds').set(support()).send(body);
    expect(answer.status).toBe(503);
    expect(answer.body.error.message).toMatch(/within 100 ms/);
    expect(await rig.hasEffect(effectIdFor({ requestId: String(body.request_id), effect: null }))).toBe(false);
  });

  it('premise names are a dependency: the target names its own facts', async () => {
    const { pi, approval } = await payment({ facts: { charge_status: 'succeeded' } });
    const named = createApp({
      stores: rig.stores,
      effects: rig.queue,
      readFacts: (effect, names, context) => rig.target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs }),
      premises: { refund: ['charge_status'], credit: [] },
      tokens: tokenRegistry(),
      logger: rig.stores.logger,
    });
    const answer = await request(named).post('/v1/refunds').set(support()).send(refundBody({ payment_intent: pi, approval }));
    expect(answer.status).toBe(202);
    const [proposed] = (await receiptOf(answer.body.effect_id)).entries;
    expect(proposed).toMatchObject({ premises: { charge_status: 'succeeded' } });
  });
});

describe.concurrent('four eyes', () => {
  it('an approval with four_eyes refuses its approver as proposer, by token name or as agent; someone else may propose', async () => {
    const { pi, approval } = await payment({ approval: { approver: 'dana', four_eyes: true }, token: TOKENS.danaApprover });
    const own = refundBody({ payment_intent: pi, approval });
    const byDana = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.danaSupport)).send(own);
    expect(byDana.status).toBe(403);
    expect(byDana.body.error.code).toBe('four_eyes');
    expect(await rig.hasEffect(effectIdFor({ requestId: String(own.request_id), effect: null }))).toBe(false);
    const asDana = await request(rig.app).post('/v1/refunds').set(support()).send(refundBody({ payment_intent: pi, approval, agent: 'Dana' }));
    expect(asDana.status).toBe(403);
    const bySam = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: pi, approval, agent: 'claude-support' }));
    expect(bySam.status).toBe(202);
    expect(bySam.body.outcome).toBe('COMMITTED');
  });

  it('the token that granted counts as an approver too, whoever the approval names', async () => {
    const { pi, approval } = await payment({ approval: { approver: 'lee@support', four_eyes: true }, token: TOKENS.danaApprover });
    const answer = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.danaSupport)).send(refundBody({ payment_intent: pi, approval }));
    expect(answer.status).toBe(403);
    expect(answer.body.error.code).toBe('four_eyes');
    const described = await request(rig.app).get(`/v1/approvals/${approval}`).set(bearer(TOKENS.operator));
    expect(described.body).toMatchObject({ approver: 'lee@support', four_eyes: true, granted_by: 'dana' });
  });

  it('without four_eyes the approver may propose under their own approval', async () => {
    const { pi, approval } = await payment({ approval: { approver: 'dana' }, token: TOKENS.danaApprover });
    const answer = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.danaSupport)).send(refundBody({ payment_intent: pi, approval }));
    expect(answer.status).toBe(202);
  });

  it('a support token cannot grant approvals, revoke them or set caps', async () => {
    const body = approvalBody();
    expect((await request(rig.app).post('/v1/approvals').set(support()).send(body)).status).toBe(403);
    expect((await request(rig.app).get(`/v1/approvals/${String(body.id)}`).set(bearer(TOKENS.approver))).status).toBe(404);
    expect((await request(rig.app).post('/v1/approvals/ap_x/revoke').set(support())).status).toBe(403);
    expect((await request(rig.app).put('/v1/caps/payment:pi_1').set(support()).send({ cap_cents: 1 })).status).toBe(403);
  });
});

describe.concurrent('approvals', () => {
  it('a retried grant answers the approval that stands (200); its expiry is the first one', async () => {
    const body = approvalBody({ expires_in: 600 });
    const first = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body);
    expect(first.status).toBe(201);
    const retried = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body);
    expect(retried.status).toBe(200);
    expect(retried.body.expires_at).toBe(first.body.expires_at);
    expect(first.body).toMatchObject({ object: 'approval', id: body.id, approver: 'alex', cap_cents: 5_000, scope: 'payment:pi_1', max_uses: 5, live: true, revoked: false, revoked_by: null, uses: 0, four_eyes: false, granted_by: 'alex' });
  });

  it('an approval with every use spent is still live (unrevoked, unexpired) but not usable: uses_left 0, and its cents left are what it did not move', async () => {
    const { pi, approval } = await payment({ approval: { max_uses: 1, cap_cents: 5_000 } });
    const fresh = await request(rig.app).get(`/v1/approvals/${approval}`).set(bearer(TOKENS.approver));
    expect(fresh.body).toMatchObject({ live: true, uses_left: 1, cents_left: 5_000, usable: true });
    const answer = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: pi, approval }));
    expect(answer.body.outcome).toBe('COMMITTED');
    const spent = await request(rig.app).get(`/v1/approvals/${approval}`).set(bearer(TOKENS.approver));
    expect(spent.body).toMatchObject({ live: true, uses: 1, uses_left: 0, reserved_cents: 2_000, cents_left: 3_000, usable: false });
  });

  // Rule: an approval is usable only while one more effect could go under it, and the cap every agent shares on its
  // scope limits that too: with that cap spent (here set to 0, "nothing more moves on this payment"), every effect is
  // refused over_cap, so the approval is not usable, whatever its own cap has left.
  it('an approval whose scope\'s shared cap has no cent left is not usable; subject_cents_left says what the shared cap leaves (null with none)', async () => {
    const { approval } = await payment({ approval: { max_uses: 5, cap_cents: 5_000 } });
    const fresh = await request(rig.app).get(`/v1/approvals/${approval}`).set(bearer(TOKENS.approver));
    expect(fresh.body).toMatchObject({ cents_left: 5_000, subject_cents_left: null, usable: true });
    const scope = fresh.body.scope as string;
    const stopped = await request(rig.app).put(`/v1/caps/${scope}`).set(bearer(TOKENS.approver)).send({ cap_cents: 0 });
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
    const capped = await request(rig.app).get(`/v1/approvals/${approval}`).set(bearer(TOKENS.approver));
    expect(capped.body).toMatchObject({ live: true, uses_left: 5, cents_left: 5_000, subject_cents_left: 0, usable: false });
    await request(rig.app).put(`/v1/caps/${scope}`).set(bearer(TOKENS.approver)).send({ cap_cents: 1_000 });
    const room = await request(rig.app).get(`/v1/approvals/${approval}`).set(bearer(TOKENS.approver));
    expect(room.body).toMatchObject({ cents_left: 5_000, subject_cents_left: 1_000, usable: true });
  });

  it('a refused grant changes nothing: an approval granted without options (as the CLI grants it) keeps none', async () => {
    const id = `ap_cli_${uid()}`;
    await rig.stores.approvals.grant({ id, approver: 'lee@support', capCents: 2_000, expiresAt: (await rig.stores.journal.serverTime()) + 3_600_000, maxUses: 1, scope: 'payment:pi_1' });
    const before = await request(rig.app).get(`/v1/approvals/${id}`).set(bearer(TOKENS.approver));
    expect(before.body).toMatchObject({ four_eyes: false, granted_by: null });
    const same = { id, approver: 'lee@support', cap_cents: 2_000, scope: 'payment:pi_1', max_uses: 1 };
    for (const refused of [{ ...same, cap_cents: 9_999, four_eyes: true }, { ...same, four_eyes: true }]) {
      const answer = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(refused);
      expect(answer.status).toBe(409);
      expect(answer.body.error.code).toBe('approval_conflict');
    }
    expect((await request(rig.app).get(`/v1/approvals/${id}`).set(bearer(TOKENS.approver))).body).toEqual(before.body);
    const retried = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(same);
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual(before.body);
  });

  it('an approval whose options were kept beside it, before they moved into its own hash, keeps its four-eyes rule', async () => {
    const id = `ap_old_${uid()}`;
    await rig.redis.hset(rig.stores.keys.approvalOptions, id, JSON.stringify({ four_eyes: true, granted_by: 'dana' }));
    await rig.stores.approvals.grant({ id, approver: 'lee@support', capCents: 2_000, expiresAt: (await rig.stores.journal.serverTime()) + 3_600_000, maxUses: 1, scope: 'payment:pi_1' });
    expect((await request(rig.app).get(`/v1/approvals/${id}`).set(bearer(TOKENS.approver))).body).toMatchObject({ four_eyes: true, granted_by: 'dana' });
  });

  it('of identical grants sent at once, one creates the approval with its options and the others answer it; those with other options are refused', async () => {
    const body = approvalBody({ four_eyes: true });
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, () => request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body)),
      request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ ...body, four_eyes: false }),
    ]);
    const standing = await request(rig.app).get(`/v1/approvals/${String(body.id)}`).set(bearer(TOKENS.approver));
    expect(answers.map((answer) => answer.status).filter((status) => status === 201)).toEqual([201]);
    // Whichever came first stands; every grant with its options is answered with it, every other one refused.
    for (const answer of answers.filter((one) => one.status !== 409)) {
      expect([200, 201]).toContain(answer.status);
      expect(answer.body).toEqual(standing.body);
    }
    expect(answers.filter((answer) => answer.status === 409)).toHaveLength(standing.body.four_eyes ? 1 : 5);
  });

});

// Faults belong to the one memory target, so the tests that inject them run one at a time, after the others.
describe('with a slow send', () => {
  it('without ?wait it answers at once with no outcome; with ?wait it holds the answer until the effect settles', async () => {
    const { pi, approval } = await payment();
    rig.target.inject({ kind: 'slow-answer', delayMs: 400, answer: 'landed' });
    const body = refundBody({ payment_intent: pi, approval });
    const early = await request(rig.app).post('/v1/refunds').set(support()).send(body);
    expect(early.status).toBe(202);
    expect(early.body.outcome).toBeNull();
    expect(['proposed', 'dispatched']).toContain(early.body.state);
    expect(early.body.sentence.length).toBeGreaterThan(10);
    const held = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(body);
    expect(held.status).toBe(200);
    expect(held.body).toMatchObject({ state: 'committed', outcome: 'COMMITTED' });
  });

  it('?wait gives up after its seconds and answers the state so far', async () => {
    const { pi, approval } = await payment();
    rig.target.inject({ kind: 'slow-answer', delayMs: 800, answer: 'landed' });
    const started = Date.now();
    const answer = await request(rig.app).post('/v1/refunds?wait=0.2').set(support()).send(refundBody({ payment_intent: pi, approval }));
    expect(Date.now() - started).toBeLessThan(700);
    expect(answer.status).toBe(202);
    expect(answer.body.outcome).toBeNull();
  });

  it('revoking answers the effects already dispatched, which may still land', async () => {
    const { pi, approval } = await payment();
    rig.target.inject({ kind: 'slow-answer', delayMs: 600, answer: 'landed' });
    const proposed = await request(rig.app).post('/v1/refunds').set(support()).send(refundBody({ payment_intent: pi, approval }));
    const effectId = String(proposed.body.effect_id);
    // Wait until the gate has dispatched it (the send is slow), then revoke.
    for (let i = 0; i < 100; i += 1) {
      const state = await request(rig.app).get(`/v1/effects/${effectId}`).set(support());
      if (state.body.state === 'dispatched') break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const revoked = await request(rig.app).post(`/v1/approvals/${approval}/revoke`).set(bearer(TOKENS.approver));
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ object: 'revocation', id: approval, already_revoked: false, revoked_by: 'alex', may_still_land: [{ effect_id: effectId, links: { self: null, receipt: null } }] });
    expect(revoked.body.sentence).toMatch(/1 effect was already dispatched and may still land/);
    // Who revoked it is said, to a second revoker too (dana, another approver): the first one's name stands.
    const again = await request(rig.app).post(`/v1/approvals/${approval}/revoke`).set(bearer(TOKENS.danaApprover)).send({});
    expect(again.body).toMatchObject({ already_revoked: true, revoked_by: 'alex' });
    const described = await request(rig.app).get(`/v1/approvals/${approval}`).set(bearer(TOKENS.approver));
    expect(described.body).toMatchObject({ revoked: true, live: false, revoked_by: 'alex' });
    // A new request under it is refused before anything is recorded (the gate could only refuse it, REFUSED:lease).
    const late = await request(rig.app).post('/v1/refunds?wait=10').set(support()).send(refundBody({ payment_intent: pi, approval }));
    expect(late.status).toBe(400);
    expect(late.body.error.code).toBe('invalid_approval');
    expect(late.body.error.message).toContain(`approval ${approval} was revoked`);
  });
});
