// The effect id is the Stripe Idempotency-Key: the same approved request must always map to it, and two different
// requests (or a request id and a payload that happen to spell the same text) must never share one.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { effectIdFor, isEffectId, payloadHash } from '../../src/core/effect-id.js';
import { canonicalJson } from '../../src/core/json.js';

const refund = { kind: 'refund', paymentIntent: 'pi_1', amount: 2_000, reason: 'requested_by_customer' };

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

describe('effect ids', () => {
  it('is a full-width SHA-256: 64 lowercase hex characters, never truncated', () => {
    for (const id of [effectIdFor({ requestId: 'case-1', effect: refund }), effectIdFor({ effect: refund })]) {
      expect(id).toMatch(/^[0-9a-f]{64}$/);
      expect(isEffectId(id)).toBe(true);
    }
    expect(isEffectId('a'.repeat(63))).toBe(false);
    expect(isEffectId('A'.repeat(64))).toBe(false);
  });

  it('keys a request by its request id alone: a different payload under the same request id keeps the id', () => {
    const first = effectIdFor({ requestId: 'case-1', effect: refund });
    expect(effectIdFor({ requestId: 'case-1', effect: { ...refund, amount: 3_000 } })).toBe(first);
    expect(effectIdFor({ requestId: 'case-2', effect: refund })).not.toBe(first);
  });

  it('separates the request-id domain from the payload domain: request id "x" and payload "x" differ', () => {
    const byRequest = effectIdFor({ requestId: 'x', effect: refund });
    const byPayload = effectIdFor({ effect: 'x' });
    expect(byRequest).not.toBe(byPayload);
    // Neither is the bare hash of the text, so no other system's plain sha256("x") can collide with it.
    for (const id of [byRequest, byPayload]) {
      expect(id).not.toBe(sha256('x'));
      expect(id).not.toBe(sha256(canonicalJson('x')));
    }
  });

  it('keys an effect without a request id by its canonical payload, so key order does not matter', () => {
    const reordered = { reason: 'requested_by_customer', amount: 2_000, paymentIntent: 'pi_1', kind: 'refund' };
    expect(effectIdFor({ effect: reordered })).toBe(effectIdFor({ effect: refund }));
    expect(effectIdFor({ requestId: undefined, effect: reordered })).toBe(effectIdFor({ effect: refund }));
    expect(effectIdFor({ effect: { ...refund, amount: 2_001 } })).not.toBe(effectIdFor({ effect: refund }));
  });

  it('refuses an empty request id instead of keying every such request the same', () => {
    expect(() => effectIdFor({ requestId: '', effect: refund })).toThrow(/requestId is empty/);
  });

  it('refuses a payload without a canonical form instead of hashing a coerced one', () => {
    expect(() => effectIdFor({ effect: { ...refund, amount: Number.NaN } })).toThrow(/\$\[1\]\.amount/);
  });

  it('binds a payload by a hash in its own domain, independent of key order', () => {
    const reordered = { amount: 2_000, kind: 'refund', reason: 'requested_by_customer', paymentIntent: 'pi_1' };
    expect(payloadHash(reordered)).toBe(payloadHash(refund));
    expect(payloadHash({ ...refund, amount: 3_000 })).not.toBe(payloadHash(refund));
    expect(payloadHash(refund)).not.toBe(effectIdFor({ effect: refund }));
  });
});
