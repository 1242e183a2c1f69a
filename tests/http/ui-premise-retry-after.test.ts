// Rule: the inbox page's 503 for a re-approval whose premise read Stripe rate-limited carries Stripe's wait in
// Retry-After, as POST /v1/inbox/:id/reapprove's does (sendError's retryAfterSeconds), not 1 s: a person or a tool that
// obeys the page's header would otherwise keep Stripe's limit going.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StripeUnavailable } from '../../src/interlock.js';
import { createItemMaker } from './inbox-items.js';
import { factsShownOnPage } from './page-facts-shown.js';
import { pageSession } from './page-sessions.js';
import { bearer, startRig, TOKENS, uid, type Rig } from './rig.js';

let rig: Rig;
let make: Awaited<ReturnType<typeof createItemMaker>>;
beforeAll(async () => {
  rig = await startRig({ config: { keyPrefix: `ui-premise-retry-after-${uid()}` } });
  make = await createItemMaker(rig);
});
afterAll(async () => {
  await make?.close();
  await rig?.close();
});

describe('a re-approval from the page while Stripe rate-limits the fact read, asking to wait 7 s', () => {
  it('answers 503 with Retry-After 7 from the page, as the API does', async () => {
    const pi = `pi_${uid()}`;
    const { item } = await make.staleOn(pi);
    const approval = `ap_ui_retry_after_${uid()}`;
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 2_000, scope: `payment:${pi}`, max_uses: 5 })).status).toBe(201);
    const dana = await pageSession(rig.app, TOKENS.danaApprover);
    const shown = await factsShownOnPage(rig.app, item, dana.cookie);
    const read = rig.target.readFacts.bind(rig.target);
    rig.target.readFacts = async () => {
      throw new StripeUnavailable(`Stripe answered 429 (rate_limit) to GET /v1/payment_intents/${pi}`, { stripeStatus: 429, stripeCode: 'rate_limit', requestId: 'req_1', retryAfterMs: 7_000, rateLimited: true, outcomeUnknown: false });
    };
    try {
      const api = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval, note: 'refund anyway' });
      expect({ status: api.status, code: api.body?.error?.code, retryAfter: api.headers['retry-after'] }).toEqual({ status: 503, code: 'premise_read_failed', retryAfter: '7' });
      const page = await request(rig.app).post(`/ui/inbox/${item}/reapprove`).type('form').set('Cookie', dana.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: dana.csrf, approval, note: 'refund anyway', token: TOKENS.danaApprover, facts_shown: shown });
      expect({ status: page.status, retryAfter: page.headers['retry-after'] }).toEqual({ status: 503, retryAfter: '7' });
    } finally {
      rig.target.readFacts = read;
    }
  });
});
