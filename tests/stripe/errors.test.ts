// Stripe's answers that are not a success, one test per class (issue 9 §2 and §6), each through the official SDK
// against the sandbox, whose fault control answers 429/500/401/403, drops connections and slows requests. What the
// gate does next rests on the class: Rejected is a definite no, SendFenced means nothing left, anything else (here
// StripeUnavailable) keeps the claim for recovery.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { errorCode, isRetryable } from '../../src/core/errors.js';
import { Rejected, SendFenced, type Target } from '../../src/core/target.js';
import { StripeMisconfigured, StripeUnavailable } from '../../src/stripe/errors.js';
import { createStripeClient } from '../../src/stripe/client.js';
import { createStripeReads } from '../../src/stripe/reads.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { callsSince, effectIdFor, mark, pay, sendContext, sleep, startStripeWorld, TEST_ATTEMPT, TEST_KEY, type StripeWorld } from './stripe-support.js';

let world: StripeWorld;
let target: Target;
beforeAll(async () => {
  world = await startStripeWorld();
  target = createRefundTarget(world.client, { sendTimeoutMs: 2_000 });
});
afterAll(() => world.close());
beforeEach(() => world.sandbox.control.clearFaults());

const FACTS = ['chargebacks', 'refunded_by_others', 'refundable', 'charge_status'];
const refund = (paymentIntent: string, amount = 2_000) => ({ kind: 'refund' as const, paymentIntent, amount });

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

async function refundsOf(paymentIntent: string) {
  return (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
}

describe('definite refusals (400, 402, 404) are Rejected with Stripe\'s code and status', () => {
  it('400 charge_disputed: a refund of a charged-back charge', async () => {
    const { paymentIntent } = await pay(world.stripe, 'pm_card_createDispute');
    const error = await failure(target.apply(effectIdFor('disputed'), refund(paymentIntent), sendContext()));
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details).toMatchObject({ code: 'charge_disputed', status: 400, raw: { type: 'invalid_request_error' } });
    expect(error.message).toContain('has been charged back');
  });

  it('400 without a code: Stripe refuses an over-refund that a concurrent refund made possible after the premise read', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('concurrent');
    expect(await target.readFacts(effectId, refund(paymentIntent), FACTS, { timeoutMs: 2_000, premiseCheck: true, attempt: TEST_ATTEMPT })).toMatchObject({ refundable: 10_000 });
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 9_000 });
    const error = await failure(target.apply(effectId, refund(paymentIntent), sendContext()));
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details).toMatchObject({ code: null, status: 400, raw: { param: 'amount' } });
    expect(error.message).toContain('is greater than unrefunded amount on charge');
  });

  it('402 card_declined: a card error', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 402, code: 'card_declined', message: 'Your card was declined.' });
    const error = await failure(target.apply(effectIdFor('declined'), refund(paymentIntent), sendContext()));
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details).toMatchObject({ code: 'card_declined', status: 402, raw: { type: 'card_error' } });
  });

  it('404 resource_missing: a refund that does not exist, and a payment that does not exist (its facts read as null)', async () => {
    const reads = createStripeReads(world.client);
    const error = await failure(reads.readRefund('re_doesNotExist'));
    expect(error).toBeInstanceOf(Rejected);
    expect((error as Rejected).details).toMatchObject({ code: 'resource_missing', status: 404 });
    const sending = await failure(target.apply(effectIdFor('missing'), refund('pi_doesNotExist'), sendContext()));
    expect(sending).toBeInstanceOf(Rejected);
    expect((sending as Rejected).details).toMatchObject({ code: 'resource_missing', status: 404 });
    expect(await target.readFacts(effectIdFor('missing'), refund('pi_doesNotExist'), FACTS, { timeoutMs: 2_000 })).toEqual({ chargebacks: null, refunded_by_others: null, refundable: null, charge_status: null });
    expect(await target.query(effectIdFor('missing'), refund('pi_doesNotExist'), { timeoutMs: 2_000 })).toBeNull();
  });
});

describe('a refused key (401, 403) is target_misconfigured: it names the key without showing it, and nothing was done', () => {
  it('401: Stripe refuses the API key', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 401, message: 'Expired API Key provided: sk_test_************0001' });
    const error = await failure(target.apply(effectIdFor('401'), refund(paymentIntent), sendContext()));
    expect(error).toBeInstanceOf(StripeMisconfigured);
    expect(error).not.toBeInstanceOf(Rejected);
    expect(errorCode(error)).toBe('target_misconfigured');
    expect(isRetryable(error)).toBe(false);
    expect(error.message).toContain('sk_test_…0001');
    expect(error.message).toContain('STRIPE_SECRET_KEY');
    expect(error.message).not.toContain(TEST_KEY);
    expect(await refundsOf(paymentIntent)).toEqual([]);
  });

  it('403: a restricted key without the permission, on a read too', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ path: '/v1/payment_intents', method: 'GET', status: 403, message: 'The provided key does not have the required permissions for this endpoint.' });
    const error = await failure(target.readFacts(effectIdFor('403'), refund(paymentIntent), FACTS, { timeoutMs: 2_000 }));
    expect(error).toBeInstanceOf(StripeMisconfigured);
    expect(errorCode(error)).toBe('target_misconfigured');
    expect(error.message).toMatch(/The API key sk_test_…0001 may not GET \/v1\/payment_intents\//);
  });

  it('a 404 for a URL the server does not serve is a configuration error, not a refusal of the refund', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 404, message: 'Unrecognized request URL (POST: /v1/refunds). Please see https://stripe.com/docs.' });
    const error = await failure(target.apply(effectIdFor('url'), refund(paymentIntent), sendContext()));
    expect(error).toBeInstanceOf(StripeMisconfigured);
    expect(error.message).toContain('STRIPE_API_BASE');
  });
});

describe('no definite answer to a send is an unknown outcome (not Rejected: the claim stays)', () => {
  it('409 idempotency_key_in_use: a second send of the same effect while the first is still running', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('409');
    await world.sandbox.control.slowDown({ path: '/v1/refunds', ms: 400 });
    const first = target.apply(effectId, refund(paymentIntent), sendContext());
    await sleep(100);
    const error = await failure(target.apply(effectId, refund(paymentIntent), sendContext()));
    expect(error).toBeInstanceOf(StripeUnavailable);
    expect(error).not.toBeInstanceOf(Rejected);
    expect(error).toMatchObject({ stripeStatus: 409, stripeCode: 'idempotency_key_in_use', outcomeUnknown: true });
    await expect(first).resolves.toMatchObject({ object: 'refund', amount: 2_000 });
    expect(await refundsOf(paymentIntent)).toHaveLength(1);
  });

  it('400 idempotency_error: a send under a key an earlier send of the effect used with other parameters (it ran, and may have landed)', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('idempotency error');
    // The first send (an earlier version's parameters, say) landed; this one asks for another amount under its key.
    await expect(target.apply(effectId, refund(paymentIntent, 2_000), sendContext())).resolves.toMatchObject({ amount: 2_000 });
    const error = await failure(target.apply(effectId, refund(paymentIntent, 1_500), sendContext()));
    expect(error).toBeInstanceOf(StripeUnavailable);
    expect(error).not.toBeInstanceOf(Rejected);
    expect(error).toMatchObject({ stripeStatus: 400, outcomeUnknown: true });
    expect(error.message).toContain('may have landed');
    expect(await refundsOf(paymentIntent)).toHaveLength(1);
  });

  it('429 on a send: unknown, rate limited, with how long Stripe asked to wait', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 429, code: 'rate_limit', retry_after: 3 });
    const error = await failure(target.apply(effectIdFor('429'), refund(paymentIntent), sendContext()));
    expect(error).toBeInstanceOf(StripeUnavailable);
    expect(error).not.toBeInstanceOf(Rejected);
    expect(error).toMatchObject({ stripeStatus: 429, rateLimited: true, retryAfterMs: 3_000, outcomeUnknown: true, code: 'target_unavailable' });
  });

  it('500 on a send: unknown', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'POST', status: 500 });
    const error = await failure(target.apply(effectIdFor('500'), refund(paymentIntent), sendContext()));
    expect(error).toBeInstanceOf(StripeUnavailable);
    expect(error).toMatchObject({ stripeStatus: 500, outcomeUnknown: true });
    expect(error.message).toContain('may or may not have happened');
  });

  it('a dropped connection: unknown; the SDK\'s one retry of a closed connection passed beforeWrite again first', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'before', count: 2 });
    const context = sendContext(3_000);
    const error = await failure(target.apply(effectIdFor('drop'), refund(paymentIntent), context));
    expect(error).toBeInstanceOf(StripeUnavailable);
    expect(error).toMatchObject({ stripeStatus: null, outcomeUnknown: true });
    expect(context.beforeWriteCalls).toBe(2);
  });

  it('a connection dropped after Stripe ran the request: the SDK\'s retry under the same key gets Stripe\'s replay, one refund', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'after' });
    const landed = await target.apply(effectIdFor('drop-after'), refund(paymentIntent), sendContext(3_000));
    expect(landed).toMatchObject({ object: 'refund', amount: 2_000, replayed: true });
    expect(await refundsOf(paymentIntent)).toHaveLength(1);
  });

  it('a timeout: the send gives up at its deadline, unknown, while the refund it started still lands', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.slowDown({ path: '/v1/refunds', ms: 500 });
    const started = performance.now();
    const error = await failure(target.apply(effectIdFor('timeout'), refund(paymentIntent), sendContext(250)));
    expect(performance.now() - started).toBeLessThan(450);
    expect(error).toBeInstanceOf(StripeUnavailable);
    expect(error.message).toContain('timeout');
    await sleep(400);
    expect(await refundsOf(paymentIntent)).toHaveLength(1);
  });
});

describe('the deadline and the fencing check are honoured by every attempt', () => {
  it('sends nothing after timeLeftMs() ran out: the SDK\'s retry of a closed connection would start past the deadline and is stopped', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'before', count: 2 });
    const since = await mark(world.sandbox);
    const context = sendContext(300);
    const error = await failure(target.apply(effectIdFor('deadline'), refund(paymentIntent), context));
    expect(error).toBeInstanceOf(StripeUnavailable);
    // stripe-node waits at least 500 ms before that retry; give it time to have gone out if it were allowed to.
    await sleep(1_200);
    expect((await callsSince(world.sandbox, since)).filter((call) => call === 'POST /v1/refunds')).toHaveLength(1);
  });

  it('does not send when beforeWrite refuses (a fenced-out sender): SendFenced, and no request reached Stripe', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const since = await mark(world.sandbox);
    const context = sendContext(2_000, { fence: () => new SendFenced('this worker lost its claim') });
    const error = await failure(target.apply(effectIdFor('fenced'), refund(paymentIntent), context));
    expect(error).toBeInstanceOf(SendFenced);
    expect(error.message).toContain('lost its claim');
    expect(await callsSince(world.sandbox, since)).not.toContain('POST /v1/refunds');
    expect(await refundsOf(paymentIntent)).toEqual([]);
  });

  it('does not start a send whose deadline already passed', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const since = await mark(world.sandbox);
    await expect(target.apply(effectIdFor('late'), refund(paymentIntent), sendContext(0))).rejects.toBeInstanceOf(SendFenced);
    expect(await callsSince(world.sandbox, since)).toEqual([]);
  });
});

describe('a read that gets no definite answer is retryable (target_unavailable)', () => {
  it('429 on a read: retryable, with Retry-After', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ path: '/v1/payment_intents', method: 'GET', status: 429, retry_after: 1 });
    const error = await failure(target.readFacts(effectIdFor('read-429'), refund(paymentIntent), FACTS, { timeoutMs: 2_000 }));
    expect(error).toBeInstanceOf(StripeUnavailable);
    expect(error).toMatchObject({ code: 'target_unavailable', retryable: true, outcomeUnknown: false, rateLimited: true, retryAfterMs: 1_000 });
  });

  it('500 and a timeout on a read: retryable', async () => {
    const { paymentIntent } = await pay(world.stripe);
    await world.sandbox.control.failNext({ path: '/v1/refunds', method: 'GET', status: 500 });
    const lookup = await failure(target.query(effectIdFor('read-500'), refund(paymentIntent), { timeoutMs: 2_000 }));
    expect(lookup).toMatchObject({ code: 'target_unavailable', retryable: true, stripeStatus: 500 });
    await world.sandbox.control.slowDown({ path: '/v1/payment_intents', ms: 400 });
    const slow = await failure(target.readFacts(effectIdFor('read-slow'), refund(paymentIntent), FACTS, { timeoutMs: 150 }));
    expect(slow).toMatchObject({ code: 'target_unavailable', retryable: true });
    expect(slow.message).toContain('timeout');
  });
});

describe('a read ends within its budget', () => {
  it('an answer that trickles in (a byte every 50 ms, so the socket is never idle) is given up at the budget, not when its last byte arrives', async () => {
    const body = JSON.stringify({ id: 'pi_trickle', object: 'payment_intent', latest_charge: null });
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      let sent = 0;
      const timer = setInterval(() => {
        if (res.destroyed || sent >= body.length) {
          clearInterval(timer);
          res.end();
          return;
        }
        res.write(body.charAt(sent));
        sent += 1;
      }, 50);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const slow = createRefundTarget(createStripeClient({ secretKey: TEST_KEY, apiBase: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }), { sendTimeoutMs: 2_000 });
      const started = performance.now();
      const error = await failure(slow.readFacts(effectIdFor('trickle'), refund('pi_trickle'), FACTS, { timeoutMs: 300 }));
      expect(performance.now() - started).toBeLessThan(800);
      expect(error).toBeInstanceOf(StripeUnavailable);
      expect(error).toMatchObject({ code: 'target_unavailable', retryable: true, outcomeUnknown: false });
      expect(error.message).toMatch(/timeout: no complete answer came within the read's \d+ ms/);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('an answer that is not Stripe\'s (a proxy, another service at STRIPE_API_BASE) is never taken for one', () => {
  /** A server that answers a read of the payment with a payment of 10000 cents, and every other request with `answer`. */
  async function withServer(answer: { status: number; body: string }, run: (client: ReturnType<typeof createStripeClient>) => Promise<void>): Promise<void> {
    const intent = { id: 'pi_proxy', object: 'payment_intent', latest_charge: { id: 'ch_proxy', object: 'charge', status: 'succeeded', captured: true, amount: 10_000, amount_captured: 10_000, disputed: false, refunds: { object: 'list', data: [], has_more: false } } };
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const [status, body] = req.url?.startsWith('/v1/payment_intents/') ? [200, JSON.stringify(intent)] : [answer.status, answer.body];
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await run(createStripeClient({ secretKey: TEST_KEY, apiBase: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  it('a 502 or 404 with a JSON body that is no Stripe error, or a 200 that is no Stripe object: a send\'s outcome is unknown (not a landed refund), a read cannot tell; both name STRIPE_API_BASE', async () => {
    for (const answer of [{ status: 502, body: JSON.stringify({ message: 'Bad Gateway' }) }, { status: 404, body: JSON.stringify({ message: 'Not Found' }) }, { status: 200, body: '{}' }]) {
      await withServer(answer, async (client) => {
        const proxied = createRefundTarget(client, { sendTimeoutMs: 2_000 });
        const error = await failure(proxied.apply(effectIdFor('proxy'), refund('pi_proxy'), sendContext()));
        expect(error).toBeInstanceOf(StripeUnavailable);
        expect(error).toMatchObject({ outcomeUnknown: true, stripeStatus: answer.status });
        expect(error.message).toContain('STRIPE_API_BASE');
        for (const reading of [proxied.query(effectIdFor('proxy'), refund('pi_proxy'), { timeoutMs: 2_000 }), createStripeReads(client).readRefund('re_proxy')]) {
          const read = await failure(reading);
          expect(read).toBeInstanceOf(StripeUnavailable);
          expect(read).toMatchObject({ code: 'target_unavailable', retryable: true, outcomeUnknown: false });
          expect(read.message).toContain('STRIPE_API_BASE');
        }
      });
    }
  });
});

describe('a connection that fails says what failed and where', () => {
  it('nothing listening at STRIPE_API_BASE: a read names the address and the system\'s error (ECONNREFUSED), not only "an error occurred with our connection"', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const apiBase = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const nowhere = createRefundTarget(createStripeClient({ secretKey: TEST_KEY, apiBase }), { sendTimeoutMs: 2_000 });
    const read = await failure(nowhere.query(effectIdFor('nowhere'), refund('pi_nowhere'), { timeoutMs: 2_000 }));
    expect(read).toMatchObject({ code: 'target_unavailable', retryable: true });
    expect(read.message).toContain('ECONNREFUSED');
    expect(read.message).toContain(`${apiBase} (STRIPE_API_BASE)`);
  });

  it('a send whose connection is reset, twice (the SDK\'s one retry included): unknown, naming ECONNRESET and the address', async () => {
    const intent = { id: 'pi_reset', object: 'payment_intent', latest_charge: { id: 'ch_reset', object: 'charge', status: 'succeeded', captured: true, amount: 10_000, amount_captured: 10_000, disputed: false, refunds: { object: 'list', data: [], has_more: false } } };
    const server = createServer((req, res) => {
      if (req.method === 'POST') {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(intent));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const resetting = createRefundTarget(createStripeClient({ secretKey: TEST_KEY, apiBase }), { sendTimeoutMs: 3_000 });
      const send = await failure(resetting.apply(effectIdFor('reset'), refund('pi_reset'), sendContext(3_000)));
      expect(send).toBeInstanceOf(StripeUnavailable);
      expect(send).toMatchObject({ outcomeUnknown: true });
      expect(send.message).toContain('ECONNRESET');
      expect(send.message).toContain(`${apiBase} (STRIPE_API_BASE)`);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
