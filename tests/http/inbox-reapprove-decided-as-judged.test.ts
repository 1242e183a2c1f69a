// Rule: the facts a re-approval is held to are the ones the item shows, told against the premises the gate judged the
// refusal against (premisesDecidedOn: the first proposal under the approval of the latest one), not the latest
// proposal's own premises. A retry of the request under the same approval recorded a second proposal on other facts
// (another refund of 3 $ out, since canceled); the item listed only the chargeback, yet a re-approval on exactly its
// facts was refused "refunded_by_others: shown 300, now 0", and the refresh rewrote the item's `was` to 300, a value the
// gate never judged against.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { bearer, refundBody, TOKENS, uid } from './rig.js';

const { rig, make } = inboxSuite();

/** A refund proposed twice under one approval (on refunded_by_others 0, then 300), refused at the send on a chargeback. */
async function retriedThenRefused(): Promise<{ pi: string; item: string }> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const body = refundBody({ payment_intent: pi, approval: await make.grant(pi) });
  expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
  const effectId = effectIdFor({ requestId: String(body.request_id), effect: null });
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 300 });
  expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.danaSupport)).send(body)).status).toBe(202);
  const partition = (await rig.stores.journal.partitionOf(effectId)) ?? '';
  const proposals = (await rig.stores.journal.entries(partition, effectId)).filter((entry) => entry.kind === 'PROPOSED');
  expect(proposals.map((entry) => (entry as { premises: Record<string, unknown> }).premises['refunded_by_others'])).toEqual([0, 300]);
  rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened'], refunded_by_others: 0 });
  expect(await make.submitLatest(effectId)).toBe('REFUSED:stale_premise');
  const item = `stale_premise:${effectId}`;
  const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
  expect(shown.body.changes).toEqual([{ field: 'chargebacks', was: [], now: ['du_opened'] }]);
  return { pi, item };
}

describe('a re-approval of an item whose effect holds two proposals under one approval', () => {
  it('is taken on the facts the item showed, told against what the gate judged', async () => {
    const { pi, item } = await retriedThenRefused();
    const facts = (await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body.facts_shown as string;
    const answer = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: await make.grant(pi), note: 'du_opened is an inquiry; refund anyway.', facts_shown: facts });
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.body.premises).toEqual({ chargebacks: ['du_opened'], refunded_by_others: 0 });
  });

  it('is refused naming only what changed since, and the item then shows the changes against what the gate judged', async () => {
    const { pi, item } = await retriedThenRefused();
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened', 'du_second'], refunded_by_others: 0 });
    const refused = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: await make.grant(pi), note: 'refund anyway' });
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 409, code: 'facts_changed' });
    expect(refused.body.error.message).toContain('chargebacks: shown ["du_opened"], now ["du_opened","du_second"]');
    expect(refused.body.error.message).not.toContain('refunded_by_others');
    const again = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(again.body.changes).toEqual([{ field: 'chargebacks', was: [], now: ['du_opened', 'du_second'] }]);
  });
});
