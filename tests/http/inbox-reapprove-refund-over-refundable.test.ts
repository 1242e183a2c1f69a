// Rule: a re-approval of a refund is refused at the click, nothing recorded and the item left open, when the facts read
// then say the payment has less still refundable than the refund's amount (`refundable`): the payload cannot change,
// and the refund target refuses such a refund before the send (amount_exceeds_refundable). It used to answer 202 and
// close the item, and the new request then settled REFUSED:target_error: the approver was told it went ahead, and
// nothing was left to act on. The refusal is 409 action_not_allowed, as for a credit the target would refuse, stating
// both sums in the payment's currency and saying what to do (dismiss, decide a smaller refund under a new request id).
// The page's form takes the same action and says the same.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectIdFor, reapprovalRequestId } from '../../src/interlock.js';
import { createItemMaker, type ItemMaker } from './inbox-items.js';
import { factsShownOnPage } from './page-facts-shown.js';
import { pageSession } from './page-sessions.js';
import { bearer, refundBody, startRig, TOKENS, uid, type Rig } from './rig.js';

let rig: Rig;
let make: ItemMaker;

beforeAll(async () => {
  rig = await startRig({ deps: { premises: { refund: ['chargebacks', 'refunded_by_others', 'refundable', 'currency'], credit: ['subscription_status', 'incident_compensation'] } } });
  make = await createItemMaker(rig);
});
afterAll(async () => {
  await make.close();
  await rig.close();
});

const yen = (refundedByOthers: number) => ({ chargebacks: [], refunded_by_others: refundedByOthers, refundable: 9_000 - refundedByOthers, currency: 'jpy' });

/**
 * A ¥3,000 refund of a ¥9,000 jpy payment, refused on a stale premise because `refundedByHand` yen were refunded by
 * hand after it was decided; an approval of its own to re-approve it under.
 */
async function staleYenRefund(refundedByHand: number): Promise<{ pi: string; item: string; approval: string }> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, yen(0));
  const body = refundBody({ payment_intent: pi, approval: await make.grant(pi), amount: 3_000 });
  expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
  const effectId = effectIdFor({ requestId: String(body.request_id), effect: null });
  rig.target.world.set(`payment:${pi}`, yen(refundedByHand));
  expect(await make.submitLatest(effectId)).toBe('REFUSED:stale_premise');
  return { pi, item: `stale_premise:${effectId}`, approval: await make.grant(pi) };
}

async function expectOpenAndUnproposed(item: string): Promise<void> {
  const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
  expect(shown.body).toMatchObject({ status: 'open', actions: ['reapprove', 'dismiss'] });
  expect(await rig.hasEffect(effectIdFor({ requestId: reapprovalRequestId(item), effect: null }))).toBe(false);
}

describe('re-approving a refund of more than the payment still has refundable', () => {
  it('is refused 409 action_not_allowed stating both sums in yen, nothing recorded, the item left open to dismiss', async () => {
    const { pi, item, approval } = await staleYenRefund(7_000);
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.body.changes).toContainEqual({ field: 'refundable', was: 9_000, now: 2_000 });
    expect(shown.body.actions).toEqual(['reapprove', 'dismiss']);

    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'refund anyway', facts_shown: shown.body.facts_shown });
    expect(reapproved.status, JSON.stringify(reapproved.body)).toBe(409);
    expect(reapproved.body.error.code).toBe('action_not_allowed');
    const message = String(reapproved.body.error.message);
    expect(message).toContain(`a refund of 3000 JPY is more than the 2000 JPY still refundable on ${pi}`);
    expect(message).toContain('amount_exceeds_refundable');
    expect(message).toContain('dismiss this item with a note and decide a refund of at most 2000 JPY under a new request id');
    expect(message).toContain('Nothing was recorded, and the item stays open');
    await expectOpenAndUnproposed(item);

    const dismissed = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.danaApprover)).send({ note: 'most of it went back by hand; ¥2,000 decided again' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
  });

  it('is refused from the page too, saying the same', async () => {
    const { item, approval } = await staleYenRefund(7_000);
    const dana = await pageSession(rig.app, TOKENS.danaApprover);
    const shown = await factsShownOnPage(rig.app, item, dana.cookie);
    const page = await request(rig.app).post(`/ui/inbox/${item}/reapprove`).type('form').set('Cookie', dana.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: dana.csrf, approval, note: 'refund anyway', token: TOKENS.danaApprover, facts_shown: shown });
    expect({ status: page.status, location: page.headers.location ?? null }).toEqual({ status: 409, location: null });
    expect(page.text).toContain('is more than the 2000 JPY still refundable');
    await expectOpenAndUnproposed(item);
  });

  it('is re-approved when what is still refundable covers it', async () => {
    const { item, approval } = await staleYenRefund(6_000);
    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'exactly what is left' });
    expect(reapproved.status, JSON.stringify(reapproved.body)).toBe(202);
    expect(reapproved.body.premises).toMatchObject({ refundable: 3_000, currency: 'jpy' });
  });
});
