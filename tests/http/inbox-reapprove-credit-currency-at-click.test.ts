// Rule: a credit's re-approval is judged on the currency the facts read at the click give, against the currency its
// item shows (the one the person read) as well as the one its request was decided in. A change of currency the item
// lists that the facts no longer bear out (a rolling change rolled back) does not take the re-approval away for good:
// the item is brought up to date (facts_changed), offering it again, and any refusal names the currency read now. An
// item showing a credit in jpy is never re-approved where the facts give usd, even when its request was decided
// again in usd since the item opened (the same 5000 would go out as $50.00).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, reapprovalRequestId } from '../../src/interlock.js';
import { yenFacts, grantOn, refusedYenCredit, appWithoutCurrency, yenCreditSuite } from './yen-credits.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = yenCreditSuite();

const facts = yenFacts;

const grant = (customer: string) => grantOn(rig, customer);

const refused = (then: Record<string, string | number>, through = rig.app) => refusedYenCredit(rig, make, then, through);

const reapprovalEffect = (item: string) => effectIdFor({ requestId: reapprovalRequestId(item), effect: null });

describe('a credit item listing a currency change the facts read at the click no longer bear out', () => {
  it('is brought up to date when the facts give the decided currency again, then re-approved in it', async () => {
    const { customer, item, approval } = await refused({ currency: 'usd' });
    const listed = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(listed.body).toMatchObject({ changes: [{ field: 'currency', was: 'jpy', now: 'usd' }], actions: ['dismiss'] });

    // The worker's setting is rolled back: credits are given in jpy again, every fact as decided.
    rig.target.world.set(`customer:${customer}`, facts({}));
    const first = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'the ¥5,000 stands; the worker is fixed' });
    expect(first.status, JSON.stringify(first.body)).toBe(409);
    expect(first.body.error.code).toBe('facts_changed');
    expect(String(first.body.error.message)).toContain('currency: shown "usd", now "jpy"');
    expect(String(first.body.error.message)).not.toContain('now gives credits in USD');
    expect(await rig.hasEffect(reapprovalEffect(item))).toBe(false);

    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.body).toMatchObject({ status: 'open', changes: [], actions: ['reapprove', 'dismiss'], cents_at_stake: 5_000, currency: 'jpy' });
    expect(shown.body.facts_shown).toEqual(expect.any(String));
    const again = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'the ¥5,000 stands; the worker is fixed', facts_shown: shown.body.facts_shown });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body.premises).toMatchObject({ currency: 'jpy' });
    expect(await rig.hasEffect(reapprovalEffect(item))).toBe(true);
  });

  it('is refused naming the currency the facts give now, not the one the item recorded', async () => {
    const { customer, item, approval } = await refused({ currency: 'usd' });
    rig.target.world.set(`customer:${customer}`, facts({ currency: 'eur' }));
    const answer = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval, note: 'the ¥5,000 stands' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(409);
    expect(answer.body.error.code).toBe('action_not_allowed');
    const message = String(answer.body.error.message);
    expect(message).toContain('decided and approved in JPY, as 5000 JPY');
    expect(message).toContain('now gives credits in EUR');
    expect(message).not.toContain('USD');
    expect(message).toContain('Nothing was recorded, and the item stays open');
    const after = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(after.body).toMatchObject({ status: 'open', changes: [{ field: 'currency', was: 'jpy', now: 'usd' }], actions: ['dismiss'] });
    expect(await rig.hasEffect(reapprovalEffect(item))).toBe(false);
  });
});

describe('a credit item showing jpy whose request was decided again in usd since it opened', () => {
  it('is not re-approved where the facts give usd: the ¥5,000 the person read would go out as $50.00', async () => {
    // Decided without its currency premise (in jpy, INTERLOCK_CREDIT_CURRENCY), so the request may be decided again
    // with one; refused on a premise other than the currency, the item offers its re-approval, in jpy.
    const withoutCurrency = appWithoutCurrency(rig);
    const { customer, body, effectId, item } = await refused({ subscription_status: 'past_due' }, withoutCurrency);
    const opened = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(opened.body).toMatchObject({ status: 'open', cents_at_stake: 5_000, currency: 'jpy', actions: ['reapprove', 'dismiss'] });

    // Credits are given in usd now; the same request is decided again under a new approval, then refused (lease).
    rig.target.world.set(`customer:${customer}`, facts({ subscription_status: 'past_due', currency: 'usd' }));
    const redecidedUnder = await grant(customer);
    const redecided = await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send({ ...body, approval: redecidedUnder });
    expect(redecided.status, JSON.stringify(redecided.body)).toBe(202);
    const revoked = await request(rig.app).post(`/v1/approvals/${redecidedUnder}/revoke`).set(bearer(TOKENS.approver)).send({});
    expect(revoked.status, JSON.stringify(revoked.body)).toBeLessThan(300);
    expect(await make.submitLatest(effectId)).toBe('REFUSED:lease');

    const before = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(before.body).toMatchObject({ status: 'open', cents_at_stake: 5_000, currency: 'jpy' });
    const answer = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: await grant(customer), note: 'the ¥5,000 stands', facts_shown: before.body.facts_shown });
    expect(answer.status, JSON.stringify(answer.body)).toBe(409);
    expect(answer.body.error.code).toBe('action_not_allowed');
    const message = String(answer.body.error.message);
    expect(message).toContain('decided and approved in JPY, as 5000 JPY');
    expect(message).toContain('would send 5000 in USD, $50.00');
    expect(message).toContain('Nothing was recorded, and the item stays open');
    expect((await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body).toMatchObject({ status: 'open' });
    expect(await rig.hasEffect(reapprovalEffect(item))).toBe(false);
  });
});
