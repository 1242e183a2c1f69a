// Stripe-shaped identifiers: a type prefix and base62 randomness (`pi_3UFLid88KhIqqdFL0ampZ1Yx` in the seeds).
import { randomBytes } from 'node:crypto';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn in blocks: one syscall per ~4 KB of ids instead of one per id keeps the hot path cheap.
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let offset = 0;

function base62(length: number): string {
  if (offset + length > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  let out = '';
  for (let i = offset; i < offset + length; i++) out += alphabet[(pool[i] ?? 0) % 62] ?? '0';
  offset += length;
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
