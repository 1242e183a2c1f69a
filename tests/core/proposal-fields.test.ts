// The proposal's fields are checked by hand first (quickFields) and by the schema only when that check fails, for
// the readable problems. The hand check must never pass what the schema refuses: for any input, quickFields
// passing implies the schema passing, with the same fields.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseProposalAndEffect, proposalSchema, ProposalError, quickFields } from '../../src/core/proposal.js';

const good = { requestId: 'case-1', agent: 'support-bot', approval: 'ap_1', premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: 'pi_1', amount: 2_000 } };

// Strings near every rule's edge: empty, spaces around, control characters, a lone surrogate, the length limit.
const edgy = fc.oneof(
  fc.constantFrom('', ' a', 'a ', 'a\u0000b', 'a\u0085b', 'a\u007fb', 'a\tb', 'a\nb', '\uD800', 'ok\uDFFF', 'x'.repeat(200), 'x'.repeat(201), 'ap.1:2-3_x', 'ap 1', 'é', '1abc', 'a_b', 'A'.repeat(64), 'A'.repeat(65)),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
);
const anything = fc.oneof(edgy, fc.integer(), fc.constant(null), fc.constant(undefined), fc.array(fc.integer(), { maxLength: 2 }), fc.dictionary(edgy, fc.integer(), { maxKeys: 2 }));

// A good proposal with one or two fields replaced (or removed), so each rule is met alone.
const fields = ['requestId', 'agent', 'approval', 'premises', 'effect', 'request', 'decision', 'extra'] as const;
const replacement = fc.oneof(
  anything,
  fc.dictionary(edgy, fc.integer(), { maxKeys: 3 }),
  fc.record({ model: fc.oneof(edgy, anything), text: fc.oneof(edgy, anything) }, { requiredKeys: [] }),
  fc.record({ model: edgy, text: edgy, extra: edgy }),
);
const proposal = fc.array(fc.tuple(fc.constantFrom(...fields), replacement), { minLength: 1, maxLength: 2 }).map((changes) => {
  const input: Record<string, unknown> = { ...good };
  for (const [field, value] of changes) input[field] = value;
  return input;
});

describe('the proposal fields checked by hand', () => {
  it('pass only what the schema passes, for any input near the rules\' edges', () => {
    fc.assert(
      fc.property(proposal, (input) => {
        if (quickFields(input) !== null) expect(proposalSchema.safeParse(input).success).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it('pass a well-formed proposal, so the schema is left for the ones with problems', () => {
    expect(quickFields(good)).not.toBeNull();
    expect(quickFields({ ...good, decision: { model: 'claude-haiku-4-5-20251001', text: 'refund the duplicate\ncharge' } })).not.toBeNull();
  });

  it('leave every problem to the schema, which names the field: the answer is the same either way', () => {
    for (const [input, path] of [
      [{ ...good, agent: ' bot' }, 'agent'],
      [{ ...good, approval: 'ap 1' }, 'approval'],
      [{ ...good, premises: { '1st': 0 } }, 'premises'],
      [{ ...good, decision: { model: 'm', text: 'a\u0000' } }, 'decision.text'],
      [{ ...good, extra: 1 }, ''],
    ] as const) {
      expect(quickFields(input)).toBeNull();
      expect(() => parseProposalAndEffect(input)).toThrow(ProposalError);
      try {
        parseProposalAndEffect(input);
      } catch (error) {
        expect((error as ProposalError).message).toContain(path);
      }
    }
  });
});
