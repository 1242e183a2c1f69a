// Rule: the API says the unit of every amount and cap a person sends: the OpenAPI descriptions of a refund's and a
// credit's `amount`, an approval's `cap_cents` and a shared cap's `cap_cents` name the smallest unit of the currency with
// a zero-decimal example (2000 is ¥2000 in jpy, not ¥20), the field names staying as they are. A shared cap's answer
// sentence states what may move in minor units of the subject's currency (which the cap route does not know), never
// as cents.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, rigSuite, TOKENS, uid } from './rig.js';

type Schema = { properties?: Record<string, { description?: string }> };

const rig = rigSuite();
let schemas: Record<string, Schema>;

beforeAll(async () => {
  schemas = ((await request(rig.app).get('/v1/openapi.json')).body as { components: { schemas: Record<string, Schema> } }).components.schemas;
});

describe('the unit of amounts and caps in the API', () => {
  it.each([
    ['RefundRequest', 'amount'],
    ['CreditRequest', 'amount'],
    ['ApprovalRequest', 'cap_cents'],
    ['CapRequest', 'cap_cents'],
  ])('%s.%s is described in the smallest unit, with what 2000 is in jpy', (schema, field) => {
    const description = schemas[schema]?.properties?.[field]?.description ?? '';
    expect(description).toContain('smallest unit');
    expect(description).toContain('2000 is $20.00 in usd, ¥2000 in jpy');
    expect(description).not.toMatch(/^(Most )?cents\b/i);
  });

  it('a shared cap\'s sentence says minor units of the subject\'s currency, not cents', async () => {
    const subject = `payment:pi_${uid()}`;
    const set = await request(rig.app).put(`/v1/caps/${subject}`).set(bearer(TOKENS.approver)).send({ cap_cents: 2_000 });
    expect(set.status).toBe(200);
    expect(set.body.sentence).toBe(`2000 more minor units of its currency may move on ${subject} (0 of 2000 have moved or are in flight).`);
    const none = await request(rig.app).put(`/v1/caps/${subject}`).set(bearer(TOKENS.approver)).send({ cap_cents: 0 });
    expect(none.body.sentence).toBe(`0 minor units of its currency have moved (or are in flight) on ${subject}, at or over this cap of 0: nothing more may move on it until the cap is raised.`);
    expect(`${set.body.sentence} ${none.body.sentence}`).not.toContain('cents');
  });
});
