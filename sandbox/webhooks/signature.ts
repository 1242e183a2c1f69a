// Stripe's webhook signature (stripe-facts §6.3): `t=<unix seconds>,v1=<hex HMAC-SHA256>` over `${t}.${body}`,
// keyed with the whole `whsec_…` string. The signed bytes must be exactly the bytes sent.
import { createHmac } from 'node:crypto';

export function signatureHeader(payload: string, secret: string, timestampSeconds: number): string {
  const v1 = createHmac('sha256', secret).update(`${timestampSeconds}.${payload}`, 'utf8').digest('hex');
  return `t=${timestampSeconds},v1=${v1}`;
}
