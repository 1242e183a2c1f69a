// The scenario harness's small Stripe client (scenarios/stripe-http.ts): when Stripe cannot be reached, its error
// says where it tried and what to do, not only the runtime's 'fetch failed'.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../src/redis/private-server.js';
import { createStripeHttp } from '../../scenarios/stripe-http.js';

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
});
