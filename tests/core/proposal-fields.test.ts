// The proposal's fields are checked by hand first (quickFields) and by the schema only when that check fails, for
// the readable problems. The hand check must never pass what the schema refuses: for any input, quickFields
// passing implies the schema passing, with the same fields.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeEffect, parseEffect } from '../../src/core/effects.js';
import { assertJson, canonicalJson, canonicalLength } from '../../src/core/json.js';
import { parseProposalAndEffect, PROPOSAL_LIMITS, proposalSchema, ProposalError, quickFields } from '../../src/core/proposal.js';

const good = { requestId: 'case-1', agent: 'support-bot', approval: 'ap_1', premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: 'pi_1', amount: 2_000 } };

// Strings near every rule's edge: empty, spaces around, control characters, a lone surrogate, the length limit.
const edgy = fc.oneof(
  fc.constantFrom('', ' a', 'a ', 'a\u0000b', 'a\u0085b', 'a\u007fb', 'a\tb', 'a\nb', '\uD800', 'ok\uDFFF', 'x'.repeat(200), 'x'.repeat(201), 'ap.1:2-3_x', 'ap 1', 'é', 'e\u0301', 'caf\u00e9', 'cafe\u0301', '1abc', 'a_b', 'A'.repeat(64), 'A'.repeat(65), 'a\u202eb', 'a\u200bb', 'a\u2028b', '\u3164', 'a\u00adb', 'a\u200db'),
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
      [{ ...good, requestId: 'case-cafe\u0301' }, 'requestId'],
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

describe('request ids', () => {
  // The request id is the idempotency key: é written as one code point (NFC) or as e and a combining accent (NFD) must
  // not be two requests, so only the NFC spelling is taken, and the other is refused naming the field and the fix.
  it('takes a request id in NFC and refuses the same characters in another spelling', () => {
    expect(parseProposalAndEffect({ ...good, requestId: 'case-caf\u00e9' }).proposal.requestId).toBe('case-café');
    expect(() => parseProposalAndEffect({ ...good, requestId: 'case-cafe\u0301' })).toThrow(/requestId.*NFC/s);
    // Other identifiers keep their spelling as given: only the request id is a key.
    expect(parseProposalAndEffect({ ...good, agent: 'bote\u0301' }).proposal.agent).toBe('bote\u0301');
  });
});

describe('characters nobody sees', () => {
  // A direction override, a zero-width or invisible character, a line separator: an identifier that arrives holding
  // one is refused (a reader would see other text than what is recorded); one read back from the journal, recorded
  // before the rule, is taken as it was, so an accepted request is still sent.
  const hidden = [
    ['agent', { ...good, agent: 'support\u202ebot' }, 'U+202E'],
    ['requestId', { ...good, requestId: 'case\u200b-1' }, 'U+200B'],
    ['decision.model', { ...good, decision: { model: 'mod\u00adel', text: 'refund' } }, 'U+00AD'],
    ['effect.metadata', { ...good, effect: { ...good.effect, metadata: { 'ticket\u2060id': 'T-1' } } }, 'U+2060'],
  ] as const;

  it('refuses an identifier that arrives holding one, naming the field and the character', () => {
    for (const [path, input, point] of hidden) {
      if (!path.startsWith('effect')) expect(quickFields(input)).toBeNull();
      expect(() => parseProposalAndEffect(input), path).toThrow(new RegExp(`${path.replace('.', '\\.')}.*${point.replace('+', '\\+')}`, 's'));
    }
  });

  it('takes the same identifiers read back from the journal, as recorded', () => {
    for (const [path, input] of hidden) {
      expect(() => parseProposalAndEffect(input, { recorded: true }), path).not.toThrow();
    }
    const effect = { kind: 'credit', customer: 'cus_1', amount: 500, incident: 'inc_1', metadata: { 'note\u200b': 'x' } };
    expect(() => parseEffect(effect)).toThrow(/U\+200B/);
    expect(describeEffect(effect)).toEqual({ kind: 'credit', subject: 'customer:cus_1', amount: 500 });
  });
});

describe('the size limits, counted in characters of canonical JSON', () => {
  // Sizes are counted without writing the canonical form (canonicalLength): the count must be the canonical form's,
  // for keys out of order, escapes, non-ASCII text and every number spelling.
  // fast-check writes "__proto__" keys on purpose; assertJson refuses those, and only plain JSON is counted.
  const plain = fc.jsonValue().filter((value) => !JSON.stringify(value).includes('"__proto__"')).map((value) => assertJson(value));

  it('counts exactly what the canonical form holds, for any plain JSON value', () => {
    fc.assert(
      fc.property(plain, (value) => {
        expect(canonicalLength(value)).toBe(canonicalJson(value).length);
      }),
      { numRuns: 2_000 },
    );
    for (const value of [{ b: '\u0000"\\\n\u2028é😀', a: [1e21, 1e-7, -0, 0.1, 5e-324, 1.7976931348623157e308] }, { z: { y: null, x: true } }]) expect(canonicalLength(value)).toBe(canonicalJson(value).length);
  });

  /** Premises whose canonical form is exactly `chars` characters, their keys written out of order. */
  function premisesOf(chars: number): Record<string, unknown> {
    const shell = canonicalJson({ b: 0, a: '' }).length;
    return { b: 0, a: 'x'.repeat(chars - shell) };
  }

  it('takes premises of exactly the limit and refuses one character more', () => {
    const limit = PROPOSAL_LIMITS.premiseChars;
    expect(canonicalJson(premisesOf(limit)).length).toBe(limit);
    expect(parseProposalAndEffect({ ...good, premises: premisesOf(limit) }).proposal.premises).toEqual(premisesOf(limit));
    expect(() => parseProposalAndEffect({ ...good, premises: premisesOf(limit + 1) })).toThrow(`is larger than ${limit} characters of JSON`);
  });

  it('refuses a proposal over the total limit, naming its size as its canonical form counts it', () => {
    // Each part within its own limit; together over the total.
    const metadata = Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`note_${index}`, '\n'.repeat(10) + 'm'.repeat(480)]));
    const big = { ...good, premises: premisesOf(PROPOSAL_LIMITS.premiseChars), request: { notes: 'r'.repeat(PROPOSAL_LIMITS.requestChars - 20) }, decision: { model: 'm', text: 't'.repeat(PROPOSAL_LIMITS.decisionChars) }, effect: { ...good.effect, metadata } };
    const size = canonicalJson({ ...big, effect: assertJson(parseEffect(big.effect)) }).length;
    expect(size).toBeGreaterThan(PROPOSAL_LIMITS.totalChars);
    expect(() => parseProposalAndEffect(big)).toThrow(`is ${size} characters of JSON; at most ${PROPOSAL_LIMITS.totalChars}`);
  });
});
