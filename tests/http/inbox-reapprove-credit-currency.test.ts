// Rule: a re-approval never moves a credit's amount in another currency than the one it was decided in. A credit's
// amount counts the smallest unit of the currency credits are given in (its `currency` premise), and the approval's cap
// has no currency: a credit decided as 5000 JPY and refused because credits are given in usd now would, re-approved,
// send $50.00. An item listing that change offers no re-approval (the API, the page and the CLI show its actions), and
// a re-approval of it is refused action_not_allowed, stating both sums and what to do, with nothing recorded and the
// item left open; an item whose facts changed to another currency only at the click is brought up to date the same way.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, reapprovalRequestId } from '../../src/interlock.js';
import { yenFacts, refusedYenCredit, appWithoutCurrency, yenCreditSuite } from './yen-credits.js';
import { bearer, refundBody, TOKENS, uid } from './rig.js';

const { rig, make } = yenCreditSuite();

const facts = yenFacts;

const refused = (then: Record<string, string | number>, through = rig.app) => refusedYenCredit(rig, make, then, through);

function expectCurrencyRefusal(answer: request.Response): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(409);
  expect(answer.body.error.code).toBe('action_not_allowed');
  const message = String(answer.body.error.message);
  expect(message).toContain('decided and approved in JPY, as 5000 JPY');
  expect(message).toContain('now gives credits in USD');
  expect(message).toContain('would send 5000 in USD, $50.00');
  expect(message).toContain('Dismiss this item with a note, and decide the credit again in USD');
  expect(message).toContain('Nothing was recorded, and the item stays open');
}

async function expectOpenAndUnproposed(item: string): Promise<void> {
  const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
  expect(shown.body).toMatchObject({ status: 'open', actions: ['dismiss'], facts_shown: null, cents_at_stake: 5_000, currency: 'jpy' });
  expect(await rig.hasEffect(effectIdFor({ requestId: reapprovalRequestId(item), effect: null }))).toBe(false);
}

describe('re-approving a credit decided in jpy where credits are given in usd now', () => {
  it('an item an earlier version opened, which still lists reapprove, shows only dismiss all the same', async () => {
    const { customer, item } = await refused({ currency: 'usd' });
    const stored = JSON.parse(String(await rig.redis.hget(rig.stores.keys.inbox, item))) as { actions: string[] };
    await rig.redis.hset(rig.stores.keys.inbox, item, JSON.stringify({ ...stored, actions: ['reapprove', 'dismiss'] }));
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.body).toMatchObject({ actions: ['dismiss'] });
    const listed = await request(rig.app).get(`/v1/inbox?subject=customer:${customer}`).set(bearer(TOKENS.approver));
    expect(listed.body.data).toMatchObject([{ id: item, actions: ['dismiss'] }]);
  });

  it('its item offers no re-approval, and one asked for is refused stating ¥ and $ sums, the item left open', async () => {
    const { customer, item, approval } = await refused({ currency: 'usd' });
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.body).toMatchObject({ cents_at_stake: 5_000, currency: 'jpy', changes: [{ field: 'currency', was: 'jpy', now: 'usd' }], actions: ['dismiss'], facts_shown: null });
    const listed = await request(rig.app).get(`/v1/inbox?subject=customer:${customer}`).set(bearer(TOKENS.approver));
    expect(listed.body.data).toMatchObject([{ id: item, actions: ['dismiss'] }]);

    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'the ¥5,000 stands' });
    expectCurrencyRefusal(reapproved);
    await expectOpenAndUnproposed(item);

    const dismissed = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.danaApprover)).send({ note: 'decided again in usd' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
  });

  it('an item whose currency changes only at the click is brought up to date without a re-approval, then refused as such', async () => {
    const { customer, item, approval } = await refused({ subscription_status: 'past_due' });
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.body).toMatchObject({ currency: 'jpy', actions: ['reapprove', 'dismiss'] });

    rig.target.world.set(`customer:${customer}`, facts({ subscription_status: 'past_due', currency: 'usd' }));
    const first = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'past due is fine', facts_shown: shown.body.facts_shown });
    expect(first.status, JSON.stringify(first.body)).toBe(409);
    expect(first.body.error.code).toBe('facts_changed');
    await expectOpenAndUnproposed(item);

    const again = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'past due is fine' });
    expectCurrencyRefusal(again);
    await expectOpenAndUnproposed(item);
  });

  it('a credit decided without its currency premise, in jpy, is refused where the facts read now give usd', async () => {
    const withoutCurrency = appWithoutCurrency(rig);
    const { customer, item, approval } = await refused({ subscription_status: 'past_due' }, withoutCurrency);
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.body).toMatchObject({ cents_at_stake: 5_000, currency: 'jpy', actions: ['reapprove', 'dismiss'] });

    rig.target.world.set(`customer:${customer}`, facts({ subscription_status: 'past_due', currency: 'usd' }));
    const reapproved = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'past due is fine', facts_shown: shown.body.facts_shown });
    expectCurrencyRefusal(reapproved);
    const after = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(after.body).toMatchObject({ status: 'open', actions: ['reapprove', 'dismiss'] });
    expect(await rig.hasEffect(effectIdFor({ requestId: reapprovalRequestId(item), effect: null }))).toBe(false);
  });

  it("a refund's item listing a currency change still offers its re-approval: only a credit's currency is the service's own", async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0, currency: 'usd' });
    const body = refundBody({ payment_intent: pi, approval: await make.grant(pi) });
    expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
    const effectId = effectIdFor({ requestId: String(body.request_id), effect: null });
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0, currency: 'jpy' });
    expect(await make.submitLatest(effectId)).toBe('REFUSED:stale_premise');
    const shown = await request(rig.app).get(`/v1/inbox/stale_premise:${effectId}`).set(bearer(TOKENS.approver));
    expect(shown.body).toMatchObject({ changes: [{ field: 'currency', was: 'usd', now: 'jpy' }], actions: ['reapprove', 'dismiss'] });
  });
});
