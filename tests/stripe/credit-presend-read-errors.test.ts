// Rule: the credit target's own pre-send read (apply's check that the incident was not compensated yet, made when the
// gate read no incident_compensation right before) sends nothing when it fails, and its error goes with the fenced
// send (ReadBeforeSendFailed, SendResult `cause`), as the refund target's does: a 429 slows the queue down for Stripe's
// Retry-After (README "Rate limits"), and a 401/403 is the configuration error it is (target_misconfigured, naming the
// key), not a send in flight retried at once.
import { describe, expect, it } from 'vitest';
import { errorCode, slowDownOf } from '../../src/core/errors.js';
import { SendFenced } from '../../src/core/target.js';
import { approvalTerms } from '../support/harness.js';
import { callsSince, effectIdFor, gateOnStripe, mark, sendContext } from './stripe-support.js';

const RATE_LIMITED = { path: '/v1/credit_notes', method: 'GET', status: 429, type: 'rate_limit_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.', retry_after: 30 } as const;
const KEY_REFUSED = { path: '/v1/credit_notes', method: 'GET', status: 401, type: 'authentication_error', message: 'Invalid API Key provided: sk_test_****0001' } as const;

const { world, node, target } = gateOnStripe(
  { sendTimeoutMs: 1_500, settleMarginMs: 150, claimTtlMs: 3_000, heartbeatMs: 100, heartbeatTtlMs: 500, keyPrefix: `t-credit-presend-${Math.random().toString(36).slice(2, 10)}` },
  { kind: 'credit', workerId: 'credit-presend' },
);

const credit = (customer: string) => ({ kind: 'credit' as const, customer, amount: 1_000, incident: `INC-${customer}` });
const posts = async (since: number) => (await callsSince(world.sandbox, since)).filter((call) => call.startsWith('POST'));

describe("apply, when its own read of the customer fails", () => {
  it("a 429: fenced (nothing sent), carrying the read's Retry-After", async () => {
    const customer = (await world.stripe.customers.create({ name: 'limited' })).id;
    await world.sandbox.control.failNext({ ...RATE_LIMITED, count: 1 });
    const since = await mark(world.sandbox);
    const error = await target.apply(effectIdFor('limited'), credit(customer), sendContext(2_000, { attempt: null })).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SendFenced);
    expect(slowDownOf(error)).toEqual({ retryAfterMs: 30_000 });
    expect(await posts(since)).toEqual([]);
  });

  it('a 401: fenced (nothing sent), carrying the configuration error that names the key', async () => {
    const customer = (await world.stripe.customers.create({ name: 'key refused' })).id;
    await world.sandbox.control.failNext({ ...KEY_REFUSED, count: 1 });
    const error = await target.apply(effectIdFor('key'), credit(customer), sendContext(2_000, { attempt: null })).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SendFenced);
    expect(errorCode((error as Error).cause)).toBe('target_misconfigured');
  });
});

describe('through the gate: a credit decided without incident_compensation, whose pre-send read Stripe limits or refuses', () => {
  async function submit(fault: typeof RATE_LIMITED | typeof KEY_REFUSED): Promise<{ answer: unknown; posts: string[] }> {
    const customer = (await world.stripe.customers.create({ name: 'presend' })).id;
    const terms = approvalTerms({ scope: `customer:${customer}`, capCents: 10_000 });
    await node.approvals.grant(terms);
    await world.sandbox.control.failNext({ ...fault, count: 1 });
    const since = await mark(world.sandbox);
    try {
      const answer = await node.gate.submit({ requestId: `case-${customer}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null }, effect: credit(customer) }).catch((error: unknown) => error);
      return { answer, posts: await posts(since) };
    } finally {
      await world.sandbox.control.clearFaults();
    }
  }

  it('a 429 with Retry-After: 30 answers IN_FLIGHT with that slow-down, saying nothing was sent', async () => {
    const { answer, posts: sent } = await submit(RATE_LIMITED);
    expect(answer).toMatchObject({ outcome: 'IN_FLIGHT', slowDown: { retryAfterMs: 30_000 } });
    expect((answer as { reason?: string }).reason ?? '').toMatch(/^nothing was sent: /);
    expect(sent).toEqual([]);
  });

  it('a 401 is a configuration error naming the key (target_misconfigured), not a send in flight', async () => {
    const { answer, posts: sent } = await submit(KEY_REFUSED);
    expect(answer).toMatchObject({ code: 'target_misconfigured' });
    expect((answer as Error).message).toContain('STRIPE_SECRET_KEY');
    expect(sent).toEqual([]);
  });
});
