// checkDecision and the proposal fields, pure: what is inside an approval is accepted, what is outside is
// MODEL_DEVIATED and never becomes an effect; model text is repaired, never refused.
import { describe, expect, it } from 'vitest';
import { MAX_AMOUNT_CENTS } from '../../src/core/effects.js';
import { PROPOSAL_LIMITS } from '../../src/core/proposal.js';
import { checkDecision, cleanModelLine, cleanModelText, DECISION_TEXT_MAX_CHARS, MODEL_DEVIATED, proposalDecision, type Decision } from '../../src/decider/decider.js';
import { creditCase, refundCase } from './cases.js';

const refund = (amountCents: number): Decision => ({ action: 'refund', amountCents, reason: 'goodwill', model: 'm', text: 't' });
const { approval } = refundCase();

describe('checkDecision', () => {
  it('accepts the approved amount and anything below it', () => {
    expect(checkDecision(refund(2000), approval, 'refund', null).verdict).toBe('accepted');
    expect(checkDecision(refund(1), approval, 'refund', null).verdict).toBe('accepted');
  });

  it('MODEL_DEVIATED one cent over the cap, naming both amounts', () => {
    const check = checkDecision(refund(2001), approval, 'refund', null);
    expect(check).toMatchObject({ verdict: MODEL_DEVIATED, problems: ['the model decided 2001 (minor units, currency unknown), but approval ap_case_4471 covers at most 2000 (minor units, currency unknown)'] });
  });

  // Rule: a MODEL_DEVIATED problem names the limit the amount broke. Under a policy approval whose cap is above
  // MAX_AMOUNT_CENTS, an amount between the two was said to be over the cap it is below.
  it('MODEL_DEVIATED above what one effect moves but below a larger policy cap: names the per-effect maximum, not the cap', () => {
    const policy = { id: 'ap_policy', capCents: 150_000_000, scope: 'payment:pi_123' };
    expect(checkDecision(refund(120_000_000), policy, 'refund', null)).toMatchObject({ verdict: MODEL_DEVIATED, problems: [`the model decided 120000000 (minor units, currency unknown), but one refund moves at most ${MAX_AMOUNT_CENTS} (minor units, currency unknown) (approval ap_policy covers 150000000 (minor units, currency unknown) in all)`] });
  });

  it('MODEL_DEVIATED for amounts that are not cents at all', () => {
    for (const amount of [0, -5, 12.5, Number.NaN, 1e12]) expect(checkDecision(refund(amount), approval, 'refund', null).verdict).toBe(MODEL_DEVIATED);
  });

  it('MODEL_DEVIATED for a credit on a refund approval, and for a refund on a credit approval', () => {
    const credit: Decision = { action: 'credit', amountCents: 1000, description: 'd', model: 'm', text: 't' };
    expect(checkDecision(credit, approval, 'refund', null).verdict).toBe(MODEL_DEVIATED);
    expect(checkDecision(refund(500), creditCase().approval, 'credit', null).verdict).toBe(MODEL_DEVIATED);
    expect(checkDecision(credit, creditCase().approval, 'credit', null).verdict).toBe('accepted');
  });

  it('a decline is declined, whatever the approval', () => {
    expect(checkDecision({ action: 'decline', reason: 'charged back', model: 'm', text: 't' }, approval, 'refund', null).verdict).toBe('declined');
  });
});

describe('model text', () => {
  it('keeps tab and line breaks, drops other control characters, replaces lone surrogates', () => {
    expect(cleanModelText('a\tb\nc\r\nd\u0000e\u001bf\u007fg\u0085h', 100)).toBe('a\tb\nc\r\ndefgh');
    expect(cleanModelText('x\ud800y\udc00z', 100)).toBe('x\ufffdy\ufffdz');
    expect(cleanModelText('pair \ud83d\ude00 kept', 100)).toBe('pair \ud83d\ude00 kept');
  });

  it('cuts at the limit with an ellipsis and never splits a surrogate pair', () => {
    expect(cleanModelText('abcdefgh', 5)).toBe('abcd…');
    const cut = cleanModelText(`abc${'\ud83d\ude00'.repeat(5)}`, 5);
    expect(cut).toBe('abc…');
    expect(cut.length).toBeLessThanOrEqual(5);
  });

  it('a model id is one printable line; with nothing printable left the proposal names unknown-model', () => {
    expect(cleanModelLine(' claude\u0000haiku\n ', 200)).toBe('claude haiku');
    expect(proposalDecision({ action: 'decline', reason: 'r', model: '\u0000\u0001', text: 't' }).model).toBe('unknown-model');
  });

  it('the decision text limit leaves room inside the proposal limit', () => {
    expect(DECISION_TEXT_MAX_CHARS).toBeLessThanOrEqual(PROPOSAL_LIMITS.decisionChars);
    expect(proposalDecision({ action: 'decline', reason: 'r', model: 'm', text: 'y'.repeat(50_000) }).text.length).toBe(DECISION_TEXT_MAX_CHARS);
  });
});
