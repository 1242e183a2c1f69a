// Stripe-shaped identifiers: a type prefix and base62 randomness (`pi_3UFLid88KhIqqdFL0ampZ1Yx` in the seeds).
import { randomBytes } from 'node:crypto';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += alphabet[byte % 62] ?? '0';
  return out;
}

export function newId(prefix: string): string {
  return `${prefix}_${base62(24)}`;
}

export function newRequestId(): string {
  return `req_${base62(14)}`;
}

export function newWebhookSecret(): string {
  return `whsec_${base62(32)}`;
}

export function newClientSecretSuffix(): string {
  return `secret_${base62(24)}`;
}
