// Effect ids: full-width SHA-256 over a domain-separated canonical encoding. The id is also the Stripe
// Idempotency-Key, so two different requests must never share one and the same request must always map to it.
import { canonicalJson, sha256Hex } from './json.js';

const REQUEST_DOMAIN = 'interlock/v1/effect-id/request';
const PAYLOAD_DOMAIN = 'interlock/v1/effect-id/payload';

export type EffectIdSource = { requestId?: string | undefined; effect: unknown };

export function effectIdFor(source: EffectIdSource): string {
  if (source.requestId !== undefined) {
    if (source.requestId.length === 0) throw new Error('requestId is empty: pass a stable id of the approved request, or omit it to key the effect by its payload.');
    return sha256Hex(canonicalJson([REQUEST_DOMAIN, source.requestId]));
  }
  return sha256Hex(canonicalJson([PAYLOAD_DOMAIN, source.effect]));
}

/** Hash that binds an effect id to its first payload (I5). */
export function payloadHash(effect: unknown): string {
  return sha256Hex(canonicalJson(['interlock/v1/payload', effect]));
}

const EFFECT_ID = /^[0-9a-f]{64}$/;

export function isEffectId(value: string): boolean {
  return value.length === 64 && EFFECT_ID.test(value);
}
