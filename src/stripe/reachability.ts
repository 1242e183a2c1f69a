// Whether Stripe (or the sandbox) answers this process's key, for /readyz: one cheap read, the newest refund (a list
// of at most one). It reads what the refund target needs anyway (a restricted key must read and write refunds), so
// it fails as a send would: StripeMisconfigured for a refused key or an API base that serves no Stripe API (it
// answers, and not as Stripe: servesNoStripeApi), StripeUnavailable when Stripe cannot answer now (down, slow, 5xx,
// rate limited, nothing listening there).
import type Stripe from 'stripe';
import { readBudget, readCall } from './calls.js';
import { sdkOf, type StripeClient } from './client.js';
import { servesNoStripeApi } from './errors.js';

const PROBE = { method: 'GET', path: '/v1/refunds?limit=1' } as const;

/** The SDK's event emitter (stripe-node's `on`/`off`, untyped in its declarations). */
type ResponseEvents = {
  on(event: 'response', listener: (answer: Stripe.ResponseEvent) => void): void;
  off(event: 'response', listener: (answer: Stripe.ResponseEvent) => void): void;
};

/**
 * Resolves when Stripe answered within `timeoutMs`; throws the adapter's errors otherwise (errors.ts). The status of
 * the answer is heard from the SDK's `response` event: stripe-node keeps none on the error for a body that is not JSON,
 * and it tells another server's HTML 404 page (misconfigured) from a proxy's HTML 502 in front of a Stripe that is down
 * (an outage). Only the probe reads this path, so a concurrent probe of the same client heard instead answers the same.
 */
export async function probeStripe(client: StripeClient, timeoutMs: number): Promise<void> {
  const events = sdkOf(client) as unknown as ResponseEvents;
  let heard: number | null = null;
  const hear = (answer: Stripe.ResponseEvent): void => {
    if (answer.method === PROBE.method && answer.path === PROBE.path) heard = answer.status;
  };
  events.on('response', hear);
  const what = `${PROBE.method} ${PROBE.path}`;
  try {
    await readCall(client, readBudget(timeoutMs), what, (sdk, options) => sdk.refunds.list({ limit: 1 }, options));
  } catch (error) {
    throw servesNoStripeApi(error, heard, { what, write: false }, client) ?? error;
  } finally {
    events.off('response', hear);
  }
}
