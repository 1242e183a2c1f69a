// Rule (core/effects.ts metadataValue): an effect's metadata value may not be empty. Stripe reads an empty value as
// "unset this key", so the refund or credit it made would not carry what the effect (and its receipt) records; the
// caller is told to leave the key out. An effect already in the journal with one still reads as recorded.
import { describe, expect, it } from 'vitest';
import { EffectError, parseEffect } from '../../src/core/effects.js';

const refund = { kind: 'refund', paymentIntent: 'pi_1', amount: 2_000, metadata: { ticket: '' } };
const credit = { kind: 'credit', customer: 'cus_1', amount: 500, incident: 'inc_1', metadata: { ticket: 'T-1', note: '' } };

describe('an empty metadata value', () => {
  it.each([
    ['refund', refund, 'effect.metadata.ticket'],
    ['credit', credit, 'effect.metadata.note'],
  ])('is refused in a %s, naming the key and saying to leave it out', (_kind, effect, path) => {
    let thrown: unknown;
    try {
      parseEffect(effect);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(EffectError);
    expect((thrown as EffectError).message).toContain(`${path}: may not be empty`);
    expect((thrown as EffectError).message).toContain('leave the key out');
  });

  it('is read back from the journal as recorded', () => {
    expect(parseEffect(refund, 'effect', { recorded: true }).metadata).toEqual({ ticket: '' });
  });

  it('is not a value of spaces, which Stripe keeps', () => {
    expect(parseEffect({ ...refund, metadata: { ticket: ' ' } }).metadata).toEqual({ ticket: ' ' });
  });
});
