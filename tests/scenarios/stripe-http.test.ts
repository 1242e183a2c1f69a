// The scenario harness's small Stripe client (scenarios/stripe-http.ts): when Stripe cannot be reached, its error
// says where it tried and what to do, not only the runtime's 'fetch failed'.
import { createServer } from 'node:net';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../src/redis/private-server.js';
import { createStripeHttp, STRIPE_API_VERSION } from '../../scenarios/stripe-http.js';

describe("the scenarios' Stripe client", () => {
  it('names the API it could not reach, the call and the cause, and says to unset the key for the sandbox', async () => {
    const port = await freePort();
    const stripe = createStripeHttp({ secretKey: 'sk_test_unreachable', apiBase: `http://127.0.0.1:${port}` });
    const error = await stripe.post('/v1/payment_intents', { amount: 10_000 }).then(() => null, (caught: unknown) => caught as Error);
    expect(error?.message).toContain(`http://127.0.0.1:${port}`);
    expect(error?.message).toContain('POST /payment_intents');
    expect(error?.message).toContain('ECONNREFUSED');
    expect(error?.message).toContain('unset STRIPE_SECRET_KEY');
  });

  it('says so when Stripe does not answer in time', async () => {
    const server = createServer(() => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const stripe = createStripeHttp({ secretKey: 'sk_test_unreachable', apiBase: `http://127.0.0.1:${port}`, timeoutMs: 200 });
      const error = await stripe.get('/v1/disputes').then(() => null, (caught: unknown) => caught as Error);
      expect(error?.message).toMatch(/GET \/disputes.*no answer within 0\.2 s/);
    } finally {
      server.close();
    }
  });

  it("names the API version the gate's SDK sends on every request, so an account pinned to an older version answers in the shape the scenarios read", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const server = createHttpServer((req, res) => {
      seen.push(req.headers);
      res.setHeader('content-type', 'application/json');
      res.end(req.url?.startsWith('/v1/customers?') === true ? '{"object":"list","data":[],"has_more":false}' : '{"id":"x"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const stripe = createStripeHttp({ secretKey: 'sk_test_version', apiBase: `http://127.0.0.1:${port}` });
      await stripe.get('/v1/subscriptions/sub_1');
      await stripe.post('/v1/refunds', { payment_intent: 'pi_1' }, { idempotencyKey: 'k' });
      await stripe.list('/v1/customers');
      expect(seen.map((headers) => headers['stripe-version'])).toEqual([STRIPE_API_VERSION, STRIPE_API_VERSION, STRIPE_API_VERSION]);
      expect(STRIPE_API_VERSION).toBe(Stripe.API_VERSION);
    } finally {
      server.close();
    }
  });
});

