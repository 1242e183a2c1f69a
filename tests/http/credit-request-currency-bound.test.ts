// Rule: a credit request moves the money it was first decided as. A credit's amount counts the smallest unit of the
// currency it was decided in (its `currency` premise), which its payload does not name: a request decided as 5000 JPY,
// refused because credits are given in usd now, and posted again unchanged under the same request id with a fresh
// approval (a caller's retry after a refusal), is refused 409 conflicting_payload naming both currencies, and nothing
// is recorded or sent, where it was decided again and sent as $50.00. The same request decided again in its own
// currency is still a re-decision (202).
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { createItemMaker, type ItemMaker } from './inbox-items.js';
import { bearer, creditBody, startRig, TOKENS, uid, type Rig } from './rig.js';

let rig: Rig;
let make: ItemMaker;

beforeAll(async () => {
  rig = await startRig({ config: { creditCurrency: 'jpy' }, deps: { premises: { refund: ['chargebacks', 'refunded_by_others', 'currency'], credit: ['subscription_status', 'incident_compensation', 'currency'] } } });
  make = await createItemMaker(rig);
});
afterAll(async () => {
  await make.close();
  await rig.close();
});

const facts = (overrides: Record<string, string | number>) => ({ subscription_status: 'active', incident_compensation: 0, currency: 'jpy', ...overrides });

async function grant(customer: string): Promise<string> {
  const approval = `ap_${uid()}`;
  const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 20_000, scope: `customer:${customer}`, max_uses: 5 });
  expect(granted.status, JSON.stringify(granted.body)).toBe(201);
  return approval;
}

/** A credit of 5000 decided in jpy and refused on `then` (a stale premise): its body and effect id. */
async function refusedYenCredit(then: Record<string, string | number>): Promise<{ customer: string; body: Record<string, unknown>; effectId: string }> {
  const customer = `cus_${uid()}`;
  rig.target.world.set(`customer:${customer}`, facts({}));
  const body = creditBody({ customer, amount: 5_000, incident: `INC-${uid()}`, approval: await grant(customer) });
  expect((await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
  const effectId = effectIdFor({ requestId: String(body.request_id), effect: null });
  rig.target.world.set(`customer:${customer}`, facts(then));
  expect(await make.submitLatest(effectId)).toBe('REFUSED:stale_premise');
  return { customer, body, effectId };
}

describe('a credit request decided in jpy, posted again after credits are given in usd', () => {
  it('is refused as another payload naming both currencies, nothing recorded or sent', async () => {
    const { customer, body, effectId } = await refusedYenCredit({ currency: 'usd' });
    const before = (await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor))).body.journal.length as number;
    const again = await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send({ ...body, approval: await grant(customer) });
    expect(again.status, JSON.stringify(again.body)).toBe(409);
    expect(again.body.error.code).toBe('conflicting_payload');
    expect(again.body.error.message).toContain('first decided in JPY, and this decision is in USD');
    expect(again.body.error.message).toContain('decide the credit again under a new request id');
    const page = await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor));
    expect(page.body.journal.filter((entry: { kind: string }) => entry.kind === 'PROPOSED')).toHaveLength(1);
    expect(page.body.journal.length).toBeGreaterThanOrEqual(before);
    expect(page.body.outcome).toBe('REFUSED:stale_premise');
  });

  it('decided again in its own currency (another premise changed back) it is a re-decision, 202', async () => {
    const { customer, body, effectId } = await refusedYenCredit({ subscription_status: 'canceled' });
    rig.target.world.set(`customer:${customer}`, facts({}));
    const again = await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send({ ...body, approval: await grant(customer) });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(await make.submitLatest(effectId)).toBe('COMMITTED');
  });
});
