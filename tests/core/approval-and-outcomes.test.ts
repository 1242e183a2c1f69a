// An approval covers an effect only while it is live, unrevoked, unexpired, scoped to the effect's subject and
// large enough (I4); every outcome the gate can give comes with one plain sentence (DESIGN §4).
import { describe, expect, it } from 'vitest';
import { approvalProblems, termsProblems, type CoverageQuestion } from '../../src/core/approval.js';
import { explainOutcome, isRefusal, RECOVERY_OUTCOMES, SUBMIT_OUTCOMES, type Outcome } from '../../src/core/outcomes.js';
import { snapshot, T0 } from './entry-chain.js';

const AT_DISPATCH: CoverageQuestion = { now: T0, subject: 'payment:pi_chain', amount: 2_000, phase: 'dispatch' };

describe('approvalProblems', () => {
  it('finds nothing wrong with a live approval that covers the amount, up to exactly its cap', () => {
    expect(approvalProblems(snapshot(), AT_DISPATCH)).toEqual([]);
    expect(approvalProblems(snapshot({ capCents: 2_000 }), AT_DISPATCH)).toEqual([]);
  });

  it('refuses a missing approval', () => {
    expect(approvalProblems(null, AT_DISPATCH)).toEqual(['the approval does not exist']);
  });

  it.each([
    ['revoked', { revoked: true, revokedAt: T0 - 1 }, AT_DISPATCH, 'was revoked'],
    ['expired', { expiresAt: T0 - 1 }, AT_DISPATCH, 'expired at'],
    ['expiring at this very instant', { expiresAt: T0 }, AT_DISPATCH, 'expired at'],
    ['scoped to another payment', { scope: 'payment:pi_other' }, AT_DISPATCH, 'covers payment:pi_other, not payment:pi_chain'],
    ['smaller than the amount', { capCents: 1_999 }, AT_DISPATCH, 'covers at most 1999 (minor units, currency unknown), not 2000 (minor units, currency unknown)'],
    ['used up at dispatch', { uses: 5, maxUses: 5 }, AT_DISPATCH, 'has used all 5 of its uses'],
  ])('refuses an approval that is %s', (_what, overrides, question, problem) => {
    const problems = approvalProblems(snapshot(overrides), question);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(problem);
  });

  it('does not count uses at recovery: the effect being recovered already holds its use', () => {
    expect(approvalProblems(snapshot({ uses: 5, maxUses: 5 }), { ...AT_DISPATCH, phase: 'recovery' })).toEqual([]);
  });

  it('lists every problem at once, so a reader sees all reasons', () => {
    const problems = approvalProblems(snapshot({ revoked: true, expiresAt: T0 - 1, scope: 'payment:pi_x', capCents: 10, uses: 5 }), AT_DISPATCH);
    expect(problems).toHaveLength(5);
  });

  it('checks proposed terms with readable problems', () => {
    expect(termsProblems({ id: 'ap_1', approver: 'dana', capCents: 100, expiresAt: T0, maxUses: 1, scope: 'payment:pi_1' })).toEqual([]);
    expect(termsProblems({ id: 'bad id!', approver: ' ', capCents: 0.5, expiresAt: -1, maxUses: 0, scope: '' })).toHaveLength(6);
  });

  // Rule: an approver is named as the API names it: spaces around the name are refused, not recorded as another name.
  it('refuses an approver with spaces around it', () => {
    for (const approver of ['  dana ', 'dana ', ' dana']) {
      expect(termsProblems({ id: 'ap_1', approver, capCents: 100, expiresAt: T0, maxUses: 1, scope: 'payment:pi_1' })).toEqual(['approver may not start or end with spaces']);
    }
  });
});

describe('outcomes', () => {
  it('lists exactly the codes of DESIGN §4', () => {
    expect([...SUBMIT_OUTCOMES].sort()).toEqual([
      'AMBIGUOUS', 'COMMITTED', 'COMMITTED_ON_QUERY', 'DUPLICATE_IGNORED', 'IN_FLIGHT',
      'REFUSED:conflicting_payload', 'REFUSED:lease', 'REFUSED:over_cap', 'REFUSED:stale_premise', 'REFUSED:target_error',
    ]);
    expect([...RECOVERY_OUTCOMES].sort()).toEqual([
      'AMBIGUOUS', 'COMMITTED_BY_RETRY', 'COMMITTED_ON_QUERY', 'REAPPLIED_AFTER_QUERY', 'REFUSED:lease_at_recovery', 'REFUSED:stale_premise_at_recovery',
    ]);
  });

  it.each([...new Set<Outcome>([...SUBMIT_OUTCOMES, ...RECOVERY_OUTCOMES])])('explains %s in one plain sentence', (outcome) => {
    const sentence = explainOutcome(outcome);
    expect(typeof sentence).toBe('string');
    expect(sentence).toMatch(/^[A-Z].{20,}\.$/);
    expect(sentence).not.toContain(outcome);
  });

  it('gives each code its own sentence', () => {
    const codes = [...new Set<Outcome>([...SUBMIT_OUTCOMES, ...RECOVERY_OUTCOMES])];
    expect(new Set(codes.map(explainOutcome)).size).toBe(codes.length);
  });

  it('explains UNRESOLVED:<error> with the error named', () => {
    expect(explainOutcome('UNRESOLVED:lookup_failed')).toMatch(/^Recovery could not settle this effect yet \(lookup_failed\).*retried\.$/);
  });

  it('marks exactly the REFUSED:* codes as refusals', () => {
    expect(isRefusal('REFUSED:lease_at_recovery')).toBe(true);
    expect(isRefusal('COMMITTED')).toBe(false);
    expect(isRefusal('UNRESOLVED:x')).toBe(false);
  });
});
