// RULE: a request the sandbox cannot read is the client's 4xx `invalid_request_error`, never a 500 `api_error`.
// stripe-facts.md §1.2 (line 66): stripe-node retries every status >= 500, and the service reads a 5xx on a write as
// "outcome unknown"; a 400/404 is `StripeInvalidRequestError` (§1.1, line 51), a refusal. Causes that answered 500:
// a malformed percent escape in a path id (router.ts, now no route matches: Stripe's 404 `Unrecognized request URL`),
// a JSON body that does not parse (server.ts), and form keys nested deep enough to overflow the recursive walks over
// parameters (form.ts, now capped at MAX_PARAM_DEPTH levels; JSON bodies too).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PARAM_DEPTH } from '../core/form.js';
import { startSandbox } from '../index.js';
import type { Sandbox } from '../index.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
});
afterAll(() => sandbox.close());

const send = async (method: string, path: string, body?: string, contentType = 'application/x-www-form-urlencoded') => {
  const response = await fetch(`${sandbox.url}${path}`, {
    method,
    headers: { Authorization: 'Bearer sk_test_bad', 'Content-Type': contentType },
    ...(body === undefined ? {} : { body }),
  });
  return { status: response.status, body: (await response.json()) as { error?: { type?: string; message?: string } } };
};

describe('sandbox: unreadable requests are the client\'s error, not a 500', () => {
  it('answers a malformed percent escape in an id with Stripe\'s 404 for a URL it does not recognise', async () => {
    const answer = await send('GET', '/v1/refunds/%E0%A4%A');
    expect(answer.status).toBe(404);
    expect(answer.body.error?.type).toBe('invalid_request_error');
    expect(answer.body.error?.message).toMatch(/^Unrecognized request URL \(GET: \/v1\/refunds\/%E0%A4%A\)/);
  });

  it('answers a JSON body that does not parse with a 400 invalid_request_error', async () => {
    const answer = await send('POST', '/v1/refunds', '{"payment_intent": ', 'application/json');
    expect(answer.status).toBe(400);
    expect(answer.body.error?.type).toBe('invalid_request_error');
  });

  it('refuses form keys nested deeper than the cap with a 400, even deeper than the stack', async () => {
    for (const depth of [MAX_PARAM_DEPTH, 200_000]) {
      const answer = await send('POST', '/v1/refunds', `metadata${'[a]'.repeat(depth)}=1`);
      expect(answer.status).toBe(400);
      expect(answer.body.error?.type).toBe('invalid_request_error');
    }
  });

  it('refuses a JSON body nested deeper than the cap with a 400', async () => {
    const answer = await send('POST', '/v1/refunds', `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`, 'application/json');
    expect(answer.status).toBe(400);
    expect(answer.body.error?.type).toBe('invalid_request_error');
  });

  it('still reads parameters nested to the cap', async () => {
    // One level under the cap reaches validation, which refuses it as an unknown parameter: read, not overflowed.
    const answer = await send('POST', '/v1/refunds', `expand${'[0]'.repeat(MAX_PARAM_DEPTH - 1)}=x`);
    expect(answer.status).toBe(400);
    expect(answer.body.error?.message).not.toMatch(/nested/);
  });

  // Rule: a control rule the sandbox could not honour is refused with a 400, not taken and bent: a wait past Node's
  // longest timer fired at once (the "slow" request answered without delay), and a duplicate rule's copies were
  // unbounded (a billion queued deliveries).
  it('refuses control waits past the longest timer and unbounded duplicate copies with a 400', async () => {
    const control = (path: string, body: string) => send('POST', `/_sandbox${path}`, body);
    for (const [path, body] of [
      ['/faults/slow', 'ms=3000000000'],
      ['/webhooks/rules', 'action=delay&delay_ms=3000000000'],
      ['/webhooks/rules', 'action=duplicate&copies=1000000000'],
      ['/webhooks/idle', 'timeout_ms=3000000000'],
      ['/config', 'webhook_timeout_ms=3000000000'],
    ] as const) {
      const answer = await control(path, body);
      expect(answer.status, `${path} ${body}`).toBe(400);
      expect(answer.body.error?.message).toMatch(/less than or equal to/);
    }
    expect((await control('/faults/slow', 'ms=2147483647&path=/v1/nothing')).status).toBe(200);
    await send('DELETE', '/_sandbox/faults');
  });
});

