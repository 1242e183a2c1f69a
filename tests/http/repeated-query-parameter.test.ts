// Rule: a query parameter given more than once is refused (400 invalid_request) naming it and how many times it was
// given ("is given twice; send it once"), as a body member named twice is (duplicate-members.test.ts): readers differ
// on which of the values counts, and the caller never sent the array zod would otherwise say it "received". Nothing
// is recorded, and the other problems of the query are still listed.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bearer, caseBody, rigSuite, TOKENS } from './rig.js';

const rig = rigSuite();

describe('a query parameter given more than once', () => {
  it('?limit=1&limit=2, ?subject=…&subject=…, ?limit=5&limit=5&limit=5, ?wait=1&wait=2: 400 naming it, given twice (or 3 times)', async () => {
    const asked = [
      { answer: await request(rig.app).get('/v1/effects?limit=1&limit=2').set(bearer(TOKENS.auditor)), field: { path: 'query.limit', message: 'is given twice; send it once' } },
      { answer: await request(rig.app).get('/v1/effects?subject=payment:pi_1&subject=payment:pi_2').set(bearer(TOKENS.auditor)), field: { path: 'query.subject', message: 'is given twice; send it once' } },
      { answer: await request(rig.app).get('/v1/alerts?limit=5&limit=5&limit=5').set(bearer(TOKENS.auditor)), field: { path: 'query.limit', message: 'is given 3 times; send it once' } },
      { answer: await request(rig.app).post('/v1/cases?wait=1&wait=2').set(bearer(TOKENS.support)).send(caseBody()), field: { path: 'query.wait', message: 'is given twice; send it once' } },
    ];
    for (const { answer, field } of asked) {
      expect([answer.status, answer.body.error?.code], JSON.stringify(answer.body)).toEqual([400, 'invalid_request']);
      expect(answer.body.error.fields).toEqual([field]);
      expect(answer.body.error.message).toContain(`${field.path}: ${field.message}`);
    }
    // Rule (webhooks/api/route.ts): only a request that would have recorded something says "Nothing was recorded.": a
    // read records nothing whatever it is asked.
    expect(asked.map(({ answer }) => (answer.body.error.message as string).endsWith('Nothing was recorded.'))).toEqual([false, false, false, true]);
  });

  it('beside another problem of the query: both are listed', async () => {
    const answer = await request(rig.app).get('/v1/effects?limit=1&limit=2&state=nonsense').set(bearer(TOKENS.auditor));
    expect(answer.status).toBe(400);
    expect(answer.body.error.fields).toEqual([{ path: 'query.limit', message: 'is given twice; send it once' }, { path: 'query.state', message: expect.any(String) }]);
  });

  it('an unknown name given twice is answered as unknown, with the names the route takes', async () => {
    const answer = await request(rig.app).get('/v1/effects?limits=1&limits=2').set(bearer(TOKENS.auditor));
    expect(answer.status).toBe(400);
    expect(answer.body.error.fields).toEqual([{ path: 'query.limits', message: expect.stringMatching(/^is not a field of this object/) }]);
  });
});
