// Rule: the control routes (/_sandbox/…) take no key, so a write sent by a web page of another site is refused 403 and
// changes nothing: a browser says so by Sec-Fetch-Site (cross-site, same-site) or by an Origin whose host is not the
// one the request was sent to. A request no page sent (a script, a test, the CLI: neither header), or a page of the
// sandbox's own address, goes through, and reads (GET) are never refused this way.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pay, raw, startHarness } from './helpers.js';
import type { Harness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.sandbox.close());

const host = () => new URL(h.sandbox.url).host;

describe('a control write sent by a page of another site', () => {
  it.each([
    ['Sec-Fetch-Site cross-site', { 'Sec-Fetch-Site': 'cross-site' }],
    ['Sec-Fetch-Site same-site (another port)', { 'Sec-Fetch-Site': 'same-site' }],
    ['an Origin of another site', { Origin: 'https://evil.example' }],
    ['an Origin of another port of this host', { Origin: 'http://127.0.0.1:1' }],
    ['Origin: null (a sandboxed frame)', { Origin: 'null' }],
  ])('is refused 403 and resets nothing (%s)', async (_label, headers) => {
    const { intent } = await pay(h.stripe, 'pm_card_visa');
    const reset = await raw(h.sandbox, 'POST', '/_sandbox/reset', { headers });
    expect(reset.status).toBe(403);
    expect(JSON.stringify(reset.json)).toContain('sent by a web page of another site');
    expect((await h.stripe.paymentIntents.retrieve(intent.id)).id).toBe(intent.id);
  });

  it('cannot make the API fail: a fault asked for cross-site is not set', async () => {
    const fault = await raw(h.sandbox, 'POST', '/_sandbox/faults/fail', { body: 'method=POST&path=/v1/payment_intents&status=500&count=5', headers: { 'Sec-Fetch-Site': 'cross-site' } });
    expect(fault.status).toBe(403);
    expect((await pay(h.stripe, 'pm_card_visa')).intent.status).toBe('succeeded');
  });
});

describe('control requests no foreign page sent', () => {
  it('takes a write from a script (no Origin, no Sec-Fetch-Site) and from a page of its own address', async () => {
    expect((await raw(h.sandbox, 'POST', '/_sandbox/clock/advance', { body: 'seconds=1' })).status).toBe(200);
    expect((await raw(h.sandbox, 'POST', '/_sandbox/clock/advance', { body: 'seconds=1', headers: { Origin: `http://${host()}`, 'Sec-Fetch-Site': 'same-origin' } })).status).toBe(200);
  });

  it('answers a read whoever sent it', async () => {
    expect((await raw(h.sandbox, 'GET', '/_sandbox/health', { headers: { 'Sec-Fetch-Site': 'cross-site' } })).status).toBe(200);
  });
});
