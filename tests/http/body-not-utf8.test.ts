// Rule: bad input gets a clear 400 and loses nothing: a JSON body whose bytes are not UTF-8 (a client that wrote
// Latin-1, "café" as 63 61 66 E9, with no charset or charset=utf-8) is refused 400 invalid_request naming the byte,
// and nothing is recorded. The parser read each such byte as U+FFFD, so the decision text was recorded as other text
// than the one sent, and two request_ids differing only in such bytes were one request.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { approvalBody, bearer, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

describe('a JSON body that is not UTF-8', () => {
  it('is refused 400 naming the first byte that is not, and nothing is recorded; the same body in UTF-8 is taken', async () => {
    const paymentIntent = `pi_${uid()}`;
    rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: `payment:${paymentIntent}` });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const before = await rig.effectCount();
    const send = (bytes: Buffer, type = 'application/json') => request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).set('Content-Type', type).serialize((body: unknown) => body as string).send(bytes);
    const body = (requestId: string, text: string) => `{"request_id":"${requestId}","payment_intent":"${paymentIntent}","amount":100,"approval":"${approval.id}","decision":{"model":"m","text":"${text}"}}`;

    const requestId = `r-${uid()}`;
    const text = body(requestId, 'caf\u00e9 customer');
    for (const type of ['application/json', 'application/json; charset=utf-8']) {
      const latin1 = await send(Buffer.from(text, 'latin1'), type);
      expect({ status: latin1.status, code: latin1.body.error?.code }).toEqual({ status: 400, code: 'invalid_request' });
      expect(latin1.body.error.message).toContain(`The body is not UTF-8 (byte ${text.indexOf('\u00e9')} (0xE9) is not part of a UTF-8 character), so nothing was recorded.`);
    }
    // A U+FFFD the body spells out in UTF-8 is text like any other: the byte named is the first one that is not UTF-8.
    const spelled = Buffer.concat([Buffer.from(body(`r-${uid()}`, '\ufffd'), 'utf8').subarray(0, -3), Buffer.from([0xff]), Buffer.from('"}}')]);
    const named = await send(spelled);
    expect(named.status).toBe(400);
    expect(named.body.error.message).toContain(`byte ${spelled.indexOf(0xff)} (0xFF)`);
    // A request_id that differs only in bytes that are not UTF-8 is refused, not read as another's.
    const ids = await send(Buffer.concat([Buffer.from(`{"request_id":"r-`), Buffer.from([0xc3, 0x28]), Buffer.from(`${body('', '').slice('{"request_id":"'.length)}`)]));
    expect(ids.status).toBe(400);
    expect(await rig.effectCount()).toBe(before);

    const utf8 = await send(Buffer.from(text, 'utf8'));
    expect(utf8.status, JSON.stringify(utf8.body)).toBe(202);
    expect(await rig.effectCount()).toBe(before + 1);
  });
});
