// A body naming a member twice is refused (400 invalid_request, naming it), and nothing is recorded: JSON.parse keeps
// the last of the two values and other readers the first, so a tool that checked `{"amount": 100, "amount": 4900}`
// before sending it saw 100 where 4900 would have been recorded and sent.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { approvalBody, bearer, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

/** A payment and an approval granted on it. */
async function grantedPayment() {
  const paymentIntent = `pi_${uid()}`;
  rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${paymentIntent}` });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  return { paymentIntent, approval };
}

describe('a JSON body that names a member twice', () => {
  it('is refused with the member named, and nothing is recorded; the same body with each member once is taken', async () => {
    const { paymentIntent, approval } = await grantedPayment();
    const before = await rig.effectCount();
    const send = (text: string) => request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).set('Content-Type', 'application/json').send(text);
    const twice = await send(`{"request_id":"r-${uid()}","payment_intent":"${paymentIntent}","amount":100,"amount":4900,"approval":"${approval.id}"}`);
    expect(twice.status).toBe(400);
    expect(twice.body.error).toMatchObject({ code: 'invalid_request', fields: [{ path: 'amount', message: 'is given twice' }] });
    expect(twice.body.error.message).toContain('"amount"');
    // Escaped spellings are the same name; a nested object's names are its own.
    const escaped = await send(`{"request_id":"r-${uid()}","payment_intent":"${paymentIntent}","amount":100,"\\u0061mount":4900,"approval":"${approval.id}"}`);
    expect(escaped.status).toBe(400);
    const nested = await send(`{"request_id":"r-${uid()}","payment_intent":"${paymentIntent}","amount":100,"approval":"${approval.id}","decision":{"model":"m","model":"n","text":"t"}}`);
    expect(nested.status).toBe(400);
    expect(nested.body.error.fields).toEqual([{ path: 'decision.model', message: 'is given twice' }]);
    expect(await rig.effectCount()).toBe(before);
    const once = await send(`{"request_id":"r-${uid()}","payment_intent":"${paymentIntent}","amount":100,"approval":"${approval.id}","decision":{"model":"m","text":"amount amount"}}`);
    expect(once.status, JSON.stringify(once.body)).toBe(202);
  });
});

describe('a JSON body in another charset than UTF-8', () => {
  it('is refused 415 before it is read, and nothing is recorded: the twice-named check reads UTF-8, so a UTF-16 body got past it (and one holding an escaped quote froze the service); charset=utf-8 is taken', async () => {
    const { paymentIntent, approval } = await grantedPayment();
    const before = await rig.effectCount();
    // In UTF-16LE, U+3A22 is the bytes of `":`, which a UTF-8 reading counts as member names: with 16 of them the
    // counts agreed and the second "amount" was recorded.
    const twice = `{"request_id":"r-${uid()}","payment_intent":"${paymentIntent}","amount":100,"approval":"${approval.id}","decision":{"model":"m","text":"${'\u3a22'.repeat(16)}"},"amount":2000}`;
    const escapedQuote = `{"request_id":"r-${uid()}\\"b","payment_intent":"${paymentIntent}","amount":100,"approval":"${approval.id}"}`;
    for (const [text, charset] of [[twice, 'utf-16le'], [escapedQuote, 'utf-16le'], [twice, 'UTF-16'], [twice, '"utf-32"']] as const) {
      const answer = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).set('Content-Type', `application/json; charset=${charset}`).send(Buffer.from(text, 'utf16le'));
      expect(answer.status, JSON.stringify(answer.body)).toBe(415);
      expect(answer.body.error).toMatchObject({ code: 'unsupported_media_type', message: expect.stringContaining('UTF-8') });
    }
    expect(await rig.effectCount()).toBe(before);
    const utf8 = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).set('Content-Type', 'application/json; charset=UTF-8').send(`{"request_id":"r-${uid()}","payment_intent":"${paymentIntent}","amount":100,"approval":"${approval.id}"}`);
    expect(utf8.status, JSON.stringify(utf8.body)).toBe(202);
  });
});
