// Stripe's webhook signature (stripe-facts §6.3): `t=<unix seconds>,v1=<hex HMAC-SHA256>` over `${t}.${body}`,
// keyed with the whole `whsec_…` string. The signed bytes must be exactly the bytes sent.
// A test-mode delivery to an endpoint also carries a `v0=` entry, which verifiers ignore (stripe-node reads only
// `v1`). The sandbox keys its `v0` with a secret that is no endpoint's, so a receiver that does not ignore it fails
// against the sandbox as it would against Stripe. The sandbox's Stripe CLI sessions (stripe-cli.ts) send `t` and
// `v1` only.
import { createHmac } from 'node:crypto';

const V0_SECRET = 'sandbox_v0_is_no_endpoint_secret';

const hmac = (secret: string, signed: string): string => createHmac('sha256', secret).update(signed, 'utf8').digest('hex');

/** `v0`: add the test-mode `v0=` entry after `v1=`, as Stripe does for a webhook endpoint's deliveries. */
export function signatureHeader(payload: string, secret: string, timestampSeconds: number, options: { v0?: boolean } = {}): string {
  const signed = `${timestampSeconds}.${payload}`;
  const header = `t=${timestampSeconds},v1=${hmac(secret, signed)}`;
  return options.v0 === true ? `${header},v0=${hmac(V0_SECRET, signed)}` : header;
}
