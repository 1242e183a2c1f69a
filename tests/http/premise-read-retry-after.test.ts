// Rule (webhooks/api/errors.ts retryAfterSeconds): a proposal whose premise read Stripe rate-limits is answered 503
// premise_read_failed, nothing recorded, with a Retry-After no shorter than the one Stripe gave (up to 15 minutes, as
// the worker obeys it): a support tool that obeys the header is not told to come back in 1 s and keep Stripe's limit
// going. Without a wait from Stripe the answer says 1 s, as before.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { StripeUnavailable } from '../../src/interlock.js';
import { createApp } from '../../webhooks/app.js';
import { approvalBody, bearer, refundBody, rigSuite, tokenRegistry, TOKENS, uid } from './rig.js';

const rig = rigSuite({ worker: false });

/** The service while Stripe answers every fact read 429, with `retryAfterMs` as its Retry-After (null: none). */
function rateLimited(retryAfterMs: number | null) {
  return createApp({
    stores: rig.stores,
    effects: rig.queue,
    readFacts: async () => {
      throw new StripeUnavailable('Stripe answered 429 (rate_limit) to GET /v1/payment_intents/pi_x', { stripeStatus: 429, stripeCode: 'rate_limit', requestId: 'req_1', retryAfterMs, rateLimited: true, outcomeUnknown: false });
    },
    tokens: tokenRegistry(),
    logger: rig.stores.logger,
  });
}

async function proposedWhile(retryAfterMs: number | null) {
  const pi = `pi_${uid()}`;
  const approval = approvalBody({ scope: `payment:${pi}`, cap_cents: 5_000 });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  const body = refundBody({ payment_intent: pi, approval: approval.id });
  const answer = await request(rateLimited(retryAfterMs)).post('/v1/refunds').set(bearer(TOKENS.support)).send(body);
  expect(answer.status).toBe(503);
  expect(answer.body.error.code).toBe('premise_read_failed');
  const listed = await request(rig.app).get(`/v1/effects?request=${body.request_id}`).set(bearer(TOKENS.support));
  expect(listed.body.data).toEqual([]);
  return answer.headers['retry-after'];
}

describe('a proposal whose premise read Stripe rate-limits', () => {
  it("answers with Stripe's Retry-After, rounded up to whole seconds", async () => {
    expect(await proposedWhile(7_000)).toBe('7');
    expect(await proposedWhile(2_500)).toBe('3');
  });

  it('caps a wait longer than 15 minutes, and says 1 s when Stripe named none', async () => {
    expect(await proposedWhile(3_600_000)).toBe('900');
    expect(await proposedWhile(null)).toBe('1');
  });
});
