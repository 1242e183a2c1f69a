// Rule: one effect takes at most MAX_DECISIONS decisions in all, judged or not. A refusal judges the decisions before it
// (MAX_PROPOSALS counts the unjudged ones from there), and the gate records a refusal over a subject's shared cap in
// the answer itself, so an agent rewording its decision on every retry of a refused request would grow the effect's
// receipt (and the one string every later submit and GET of it reads) by a PROPOSED and its refusal each time, without
// bound. Past MAX_DECISIONS a new decision is `409 too_many_decisions` (not retryable), saying what happened and that a
// new request id decides it again, and nothing is written; the latest decision sent again is still answered from the
// journal. A request refused over the cap and decided again once the approver raised it still goes through.
import request from 'supertest';
import { expect, it } from 'vitest';
import { MAX_DECISIONS } from '../../src/gate/record.js';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid } from '../http/rig.js';

const rig = rigSuite({ worker: true, deps: { limits: { ratePerMinute: null } } });

/** A payment whose shared cap (100 cents) is below the 1,000 its refund asks, under an approval that would allow it. */
async function cappedPayment(): Promise<{ pi: string; body: Record<string, unknown> }> {
  const pi = `pi_dcap${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${pi}`, max_uses: 1_000, cap_cents: 1_000_000 });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  expect((await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 100 })).status).toBe(200);
  return { pi, body: refundBody({ payment_intent: pi, approval: approval.id, amount: 1_000 }) };
}

/** The request decided again with its decision text reworded (`n`), as an AI agent retrying it does. */
const decide = (body: Record<string, unknown>, n: number) =>
  request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send({ ...body, decision: { model: 'agent-model', text: `Attempt ${n}: the parcel never arrived, refund it.` } });

const journalOf = async (effectId: string) => (await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor))).body.journal as { kind: string }[];

it('answers 409 too_many_decisions to a reworded retry of a refused request past MAX_DECISIONS, and writes nothing', async () => {
  const { body } = await cappedPayment();
  let effectId = '';
  for (let n = 0; n < MAX_DECISIONS; n += 1) {
    const answer = await decide(body, n);
    expect([answer.status, answer.body.outcome]).toEqual([202, 'REFUSED:over_cap']);
    effectId = String(answer.body.effect_id);
  }
  const before = await journalOf(effectId);
  expect(before.filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(MAX_DECISIONS);

  const refused = await decide(body, MAX_DECISIONS);
  expect([refused.status, refused.body.error?.code]).toEqual([409, 'too_many_decisions']);
  const message = String(refused.body.error.message);
  expect(message).toContain(`Effect ${effectId} holds ${MAX_DECISIONS} decisions already`);
  expect(message).toContain('nothing was written');
  expect(message).toContain('Its latest decision was refused (REFUSED:over_cap)');
  expect(message).toContain('under a new request id');
  expect(await journalOf(effectId)).toEqual(before);
  // More retries change nothing either.
  expect((await decide(body, MAX_DECISIONS + 1)).status).toBe(409);
  expect(await journalOf(effectId)).toEqual(before);

  // The latest decision sent again is the request recorded before, answered as it stands.
  const again = await decide(body, MAX_DECISIONS - 1);
  expect([again.status, again.body.outcome]).toEqual([200, 'REFUSED:over_cap']);
  // The refusal is one the route's document lists.
  const doc = (await request(rig.app).get('/v1/openapi.json')).body;
  expect(String(doc.paths['/v1/refunds'].post.responses['409'].description)).toContain('too_many_decisions');
});

it('commits a request refused over the cap and decided again once the approver raised it, even as its last decision', async () => {
  const { pi, body } = await cappedPayment();
  let effectId = '';
  for (let n = 0; n < MAX_DECISIONS - 1; n += 1) {
    const answer = await decide(body, n);
    expect(answer.body.outcome).toBe('REFUSED:over_cap');
    effectId = String(answer.body.effect_id);
  }
  expect((await request(rig.app).put(`/v1/caps/payment:${pi}`).set(bearer(TOKENS.approver)).send({ cap_cents: 10_000 })).status).toBe(200);
  const committed = await decide(body, MAX_DECISIONS - 1);
  expect([committed.status, committed.body.effect_id, committed.body.outcome]).toEqual([202, effectId, 'COMMITTED']);
  // Settled for good: a decision past the bound is answered as the effect stands, not refused.
  const after = await decide(body, MAX_DECISIONS);
  expect([after.status, after.body.outcome]).toEqual([200, 'COMMITTED']);
  const verified = (await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor))).body;
  expect(verified.journal.filter((entry: { kind: string }) => entry.kind === 'PROPOSED')).toHaveLength(MAX_DECISIONS);
  expect(verified.receipt_valid).toBe(true);
});
