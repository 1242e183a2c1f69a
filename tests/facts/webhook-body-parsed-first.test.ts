// Rule: a webhook whose raw body was taken by a body parser mounted before the route (the classic integration
// mistake the SDK names: "Payload was provided as a parsed JavaScript object") is refused naming that cause,
// not with "The body is empty", which sends the operator to look for a sender that posts nothing.
import { randomBytes } from 'node:crypto';
import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createWebhookVerifier, signWebhookBody } from '../../src/interlock.js';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';

const secret = `whsec_${randomBytes(16).toString('hex')}`;

describe('a body parsed before the webhook route', () => {
  for (const [name, parser] of [['express.json()', express.json()], ["express.text({ type: '*/*' })", express.text({ type: '*/*' })]] as const) {
    it(`after ${name}: 400, not queued, and the answer does not say the body is empty`, async () => {
      const queued: unknown[] = [];
      const app = express().use(parser).use(stripeWebhookRouter({ verify: createWebhookVerifier([secret]), accept: async (event) => void queued.push(event) }));
      const body = JSON.stringify({ id: 'evt_parsed_first', object: 'event', type: 'refund.updated', created: 1, data: { object: { id: 're_1', object: 'refund', metadata: {} } } }, null, 2);
      const answer = await request(app).post('/webhooks/stripe').set('content-type', 'application/json').set('stripe-signature', signWebhookBody(body, secret)).send(body);
      expect(answer.status).toBe(400);
      expect(queued).toEqual([]);
      const { code, message } = (answer.body as { error: { code: string; message: string } }).error;
      // The request carried a 200-byte signed event; an earlier middleware consumed it.
      expect(message).not.toMatch(/body is empty/i);
      expect({ code, namesTheCause: /already parsed/.test(message) && message.includes('/webhooks/stripe') }).toEqual({ code: 'body_parsed_before_route', namesTheCause: true });
    });
  }
});
