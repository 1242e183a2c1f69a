// Rule: the paths outside the API's route table answer a method they do not take as the route table's paths do: 405
// with Allow, not "No route". Stripe only posts to /webhooks/stripe (405 method_not_allowed, Allow: POST), and
// /metrics only reads (405 read_only, Allow: GET, HEAD, after the token is checked: it needs one). Both answered 404
// not_found, which sends an operator looking for a route that exists.
import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';
import { bearer, rigSuite, TOKENS } from './rig.js';

const rig = rigSuite({ metrics: true });

describe('a method a path outside the route table does not take', () => {
  it('GET or PUT /webhooks/stripe: 405 method_not_allowed with Allow: POST', async () => {
    const app = express().use(stripeWebhookRouter({ verify: () => ({ ok: false, reason: 'bad_signature', message: 'no' }), accept: async () => undefined }));
    for (const asked of [request(app).get('/webhooks/stripe'), request(app).put('/webhooks/stripe').send('{}')]) {
      const answer = await asked;
      expect([answer.status, answer.body.error?.code, answer.headers.allow]).toEqual([405, 'method_not_allowed', 'POST']);
      expect(answer.body.error.message).toMatch(/^\/webhooks\/stripe takes POST/);
    }
  });

  it('POST or DELETE /metrics: 405 read_only with Allow: GET, HEAD for a caller that may read it; 401 without a token', async () => {
    for (const asked of [request(rig.app).post('/metrics').set(bearer(TOKENS.operator)), request(rig.app).delete('/metrics').set(bearer(TOKENS.auditor))]) {
      const answer = await asked;
      expect([answer.status, answer.body.error?.code, answer.headers.allow]).toEqual([405, 'read_only', 'GET, HEAD']);
    }
    expect((await request(rig.app).post('/metrics')).status).toBe(401);
  });
});
