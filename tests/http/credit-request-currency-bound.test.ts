// Rule: a credit request moves the money it was first decided as. A credit's amount counts the smallest unit of the
// currency it was decided in (its `currency` premise), which its payload does not name: a request decided as 5000 JPY,
// refused because credits are given in usd now, and posted again unchanged under the same request id with a fresh
// approval (a caller's retry after a refusal), is refused 409 conflicting_payload naming both currencies, and nothing
// is recorded or sent, where it was decided again and sent as $50.00. The same request decided again in its own
// currency is still a re-decision (202).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { yenFacts, grantOn, refusedYenCredit, yenCreditSuite } from './yen-credits.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = yenCreditSuite();

const facts = yenFacts;

const grant = (customer: string) => grantOn(rig, customer);

const refused = (then: Record<string, string | number>, through = rig.app) => refusedYenCredit(rig, make, then, through);

describe('a credit request decided in jpy, posted again after credits are given in usd', () => {
  it('is refused as another payload naming both currencies, nothing recorded or sent', async () => {
    const { customer, body, effectId } = await refused({ currency: 'usd' });
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
    const { customer, body, effectId } = await refused({ subscription_status: 'canceled' });
    rig.target.world.set(`customer:${customer}`, facts({}));
    const again = await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send({ ...body, approval: await grant(customer) });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(await make.submitLatest(effectId)).toBe('COMMITTED');
  });
});
