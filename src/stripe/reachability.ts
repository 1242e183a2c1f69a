// Whether Stripe (or the sandbox) answers this process's key, for /readyz: one cheap read, the newest refund (a list
// of at most one). It reads what the refund target needs anyway (a restricted key must read and write refunds), so
// it fails as a send would: StripeMisconfigured for a refused key or an API base that serves no Stripe API,
// StripeUnavailable when Stripe cannot answer now (down, slow, 5xx, rate limited, nothing listening there).
import { readBudget, readCall } from './calls.js';
import type { StripeClient } from './client.js';

/** Resolves when Stripe answered within `timeoutMs`; throws the adapter's errors otherwise (errors.ts). */
export async function probeStripe(client: StripeClient, timeoutMs: number): Promise<void> {
  await readCall(client, readBudget(timeoutMs), 'GET /v1/refunds?limit=1', (sdk, options) => sdk.refunds.list({ limit: 1 }, options));
}
