// verify() re-derives the journal's story and rejects chains that are intact and correctly signed but tell an
// impossible story. Each chain here is sealed with the real signing code and key, so only the rule under test
// fires; and whatever verify() is given, it answers invalid with problems instead of throwing.
import { describe, expect, it } from 'vitest';
import type { Draft, EntryKind } from '../../src/core/entries.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { APPROVAL_ID, chainEffectId, chainReceipt, checks, drafts, refundObject, sealChain, snapshot } from './entry-chain.js';
import { RECEIPT_FORMAT, unsignedReceipt } from '../../src/core/receipt.js';

const { key, publicKeys } = testKey();

function problemsOf(name: string, list: readonly Draft<EntryKind>[]): string[] {
  const result = verify(JSON.parse(JSON.stringify(chainReceipt(name, list, key))), { publicKeys });
  expect(result).toMatchObject({ chainIntact: true, signed: true });
  expect(result.valid).toBe(result.problems.length === 0);
  return result.problems;
}

describe('journal structure', () => {
  it('accepts the well-formed chain the structural cases start from', () => {
    expect(problemsOf('well-formed', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_1'), drafts.observed({ objectType: 'refund', objectId: 're_1', status: 'succeeded' })])).toEqual([]);
  });

  it('rejects a COMMITTED that closes no dispatch: a commit without a send', () => {
    expect(problemsOf('commit-without-send', [drafts.proposed(), drafts.authorized(), drafts.committed('re_1')])).toEqual([
      'entry 3 (COMMITTED) closes no open dispatch: a commit without a send',
    ]);
  });

  it('rejects two DISPATCHED open at once', () => {
    expect(problemsOf('two-open', [drafts.proposed(), drafts.authorized(), drafts.dispatched(1), drafts.dispatched(2), drafts.committed('re_1', { epoch: 2 })])).toEqual([
      'entry 4 (DISPATCHED) opens a second dispatch while an earlier one is still open',
    ]);
  });

  it('counts a fenced-out send that landed as happened and settles what recovery left ambiguous (COMMITTED_ON_QUERY)', () => {
    const ambiguous: Draft<'AMBIGUOUS'> = { kind: 'AMBIGUOUS', reason: 'tier 3', rechecked: null, epoch: 2 };
    const late: Draft<'LATE_RESULT'> = { kind: 'LATE_RESULT', owner: 'w-chain', epoch: 1, outcome: 'landed', result: refundObject('re_late'), error: null };
    const result = verify(JSON.parse(JSON.stringify(chainReceipt('late-landing', [drafts.proposed(), drafts.authorized(), drafts.dispatched(1), ambiguous, late], key))), { publicKeys });
    expect(result).toMatchObject({ valid: true, happened: true, evidence: 're_late', outcome: 'COMMITTED_ON_QUERY', lateLanding: { evidence: 're_late', after: 'AMBIGUOUS' } });
    expect(result.finalMoney.status).toBe('returned');
  });

  it('names who approved a send that landed late, as for one that committed: the approver of the dispatch it went out under', () => {
    const ambiguous: Draft<'AMBIGUOUS'> = { kind: 'AMBIGUOUS', reason: 'tier 3', rechecked: null, epoch: 2 };
    const refusedAtRecovery: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:lease_at_recovery', reason: 'approval revoked', checks: null, rechecked: null, changes: [], resolves: true };
    const late: Draft<'LATE_RESULT'> = { kind: 'LATE_RESULT', owner: 'w-chain', epoch: 1, outcome: 'landed', result: refundObject('re_late'), error: null };
    for (const [name, closing] of [['late-after-ambiguous', ambiguous], ['late-after-refusal-approver', refusedAtRecovery]] as const) {
      const result = verify(JSON.parse(JSON.stringify(chainReceipt(name, [drafts.proposed(), drafts.authorized(), drafts.dispatched(1), closing, late], key))), { publicKeys });
      expect(result).toMatchObject({ valid: true, happened: true, outcome: 'COMMITTED_ON_QUERY', approvedBy: 'dana@support' });
    }
  });

  it('a landing after recovery refused the dispatch (its send went out and landed late): COMMITTED_ON_QUERY, fired under the checks it was sent on', () => {
    const refusedAtRecovery: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:lease_at_recovery', reason: 'approval revoked', checks: null, rechecked: null, changes: [], resolves: true };
    const late: Draft<'LATE_RESULT'> = { kind: 'LATE_RESULT', owner: 'w-chain', epoch: 1, outcome: 'landed', result: refundObject('re_late'), error: null };
    const result = verify(JSON.parse(JSON.stringify(chainReceipt('late-after-refusal', [drafts.proposed(), drafts.authorized(), drafts.dispatched(1), refusedAtRecovery, late], key))), { publicKeys });
    expect(result).toMatchObject({ valid: true, problems: [], happened: true, outcome: 'COMMITTED_ON_QUERY', refused: null, authorizedWhenFired: true, assumptionsHeld: true, lateLanding: { evidence: 're_late', after: 'REFUSED:lease_at_recovery' } });
    // A refusal before any send stays a refusal whatever lands under the effect's id.
    const beforeSend: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:stale_premise', reason: 'a chargeback', checks: null, rechecked: null, changes: [], resolves: false };
    expect(verify(JSON.parse(JSON.stringify(chainReceipt('late-after-unsent', [drafts.proposed(), drafts.authorized(), beforeSend, late], key))), { publicKeys }).outcome).toBe('REFUSED:stale_premise');
  });

  it('a landing after recovery refused the dispatch is COMMITTED_ON_QUERY even when a resubmit was refused before any send in between', () => {
    // Recovery refused the dispatch (its send went out, nothing found in time); the same request submitted again was
    // refused on its premises before any send; then the first send's refund showed up at Stripe.
    const atRecovery: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:stale_premise_at_recovery', reason: 'a chargeback', checks: null, rechecked: checks({ violations: ['chargebacks: was [], now ["dp_1"]'] }), changes: [], resolves: true };
    const resubmitRefused: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:stale_premise', reason: 'a chargeback', checks: checks({ violations: ['chargebacks: was [], now ["dp_1"]'] }), rechecked: null, changes: [], resolves: false };
    const late: Draft<'LATE_RESULT'> = { kind: 'LATE_RESULT', owner: 'facts', epoch: 1, outcome: 'landed', result: refundObject('re_late'), error: null };
    const result = verify(JSON.parse(JSON.stringify(chainReceipt('late-after-two-refusals', [drafts.proposed(), drafts.authorized(), drafts.dispatched(1), atRecovery, drafts.authorized(), resubmitRefused, late], key))), { publicKeys });
    expect(result).toMatchObject({ valid: true, problems: [], happened: true, outcome: 'COMMITTED_ON_QUERY', refused: null, authorizedWhenFired: true, assumptionsHeld: true });
  });

  it('names no refusal for an effect whose re-decision was sent after an earlier refusal: in flight or AMBIGUOUS, money may have moved', () => {
    // The first decision was refused (its approval was not granted yet); a re-decision under a granted approval was
    // dispatched and is in flight, then settled AMBIGUOUS.
    const noApproval: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:lease', reason: 'approval ap_chain does not exist', checks: checks({ approvalLive: false, approval: null, approvalProblems: ['approval ap_chain does not exist'] }), rechecked: null, changes: [], resolves: false };
    const ambiguous: Draft<'AMBIGUOUS'> = { kind: 'AMBIGUOUS', reason: 'tier 3', rechecked: null, epoch: 1 };
    const inFlight = [drafts.proposed(), noApproval, drafts.proposed(), drafts.authorized(), drafts.dispatched(1)];
    for (const [name, list] of [['refused-then-in-flight', inFlight], ['refused-then-ambiguous', [...inFlight, ambiguous]]] as const) {
      const result = verify(JSON.parse(JSON.stringify(chainReceipt(name, list, key))), { publicKeys });
      expect(result).toMatchObject({ valid: true, problems: [], happened: 'unknown', refused: null });
    }
    // A refusal that is the effect's outcome is still named.
    const refusedOnly = verify(JSON.parse(JSON.stringify(chainReceipt('refused-only', [drafts.proposed(), noApproval], key))), { publicKeys });
    expect(refusedOnly).toMatchObject({ happened: false, outcome: 'REFUSED:lease', refused: { code: 'REFUSED:lease', reason: 'approval ap_chain does not exist' } });
  });

  it('rejects a send after the target refused the effect outright', () => {
    const refusal: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:target_error', reason: 'the target refused', checks: null, rechecked: null, changes: [], resolves: true };
    expect(problemsOf('after-target-error', [drafts.proposed(), drafts.authorized(), drafts.dispatched(1), refusal, drafts.dispatched(2), drafts.committed('re_1', { epoch: 2 })])).toEqual([
      'entry 5 (DISPATCHED) sends again after the target refused this effect outright',
    ]);
  });

  it('rejects a send without a prior AUTHORIZED for its approval', () => {
    expect(problemsOf('unauthorized', [drafts.proposed(), drafts.dispatched(), drafts.committed('re_1')])).toEqual([
      `entry 2 (DISPATCHED) was sent without a prior AUTHORIZED for approval ${APPROVAL_ID}`,
    ]);
  });

  it('rejects a send whose AUTHORIZED was for another approval', () => {
    expect(problemsOf('other-approval', [drafts.proposed(), drafts.authorized(snapshot({ id: 'ap_other' })), drafts.dispatched(), drafts.committed('re_1')])).toEqual([
      `entry 3 (DISPATCHED) was sent without a prior AUTHORIZED for approval ${APPROVAL_ID}`,
    ]);
  });

  it('rejects a second COMMITTED, even after a second proper dispatch', () => {
    expect(problemsOf('two-commits', [drafts.proposed(), drafts.authorized(), drafts.dispatched(1), drafts.committed('re_1'), drafts.dispatched(2), drafts.committed('re_1', { epoch: 2 })])).toEqual([
      'entry 6 (COMMITTED) commits the effect a second time',
    ]);
  });

  it('rejects two COMMITTED in a row, the second closing nothing', () => {
    expect(problemsOf('back-to-back', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_1'), drafts.committed('re_1')])).toEqual([
      'entry 5 (COMMITTED) commits the effect a second time',
      'entry 5 (COMMITTED) closes no open dispatch: a commit without a send',
    ]);
  });

  it('rejects an OBSERVED refund other than the one the effect committed', () => {
    expect(problemsOf('other-refund', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_1'), drafts.observed({ objectType: 'refund', objectId: 're_2', status: 'succeeded' })])).toEqual([
      'an OBSERVED refund re_2 is not the refund the effect committed (re_1)',
    ]);
  });

  it('rejects an OBSERVED refund for an effect that never landed', () => {
    const refusal: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:stale_premise', reason: 'charged back', checks: checks({ violations: ['chargebacks changed'] }), rechecked: null, changes: [], resolves: false };
    expect(problemsOf('never-landed', [drafts.proposed(), refusal, drafts.observed({ objectType: 'refund', objectId: 're_9', status: 'succeeded' })])).toEqual([
      'an OBSERVED refund re_9 exists for an effect the journal says never landed',
    ]);
  });

  it('rejects a send recorded under a dead approval', () => {
    const dead = checks({ approvalLive: false, approval: snapshot({ revoked: true }), approvalProblems: ['approval ap_chain was revoked'] });
    const dispatched: Draft<'DISPATCHED'> = { ...drafts.dispatched(), checks: dead };
    expect(problemsOf('dead-approval', [drafts.proposed(), drafts.authorized(), dispatched, drafts.committed('re_1')])).toEqual([
      'a send went out with no record of a live approval covering it on its subject',
    ]);
  });

  it('rejects a resend recorded without its re-check', () => {
    expect(problemsOf('blind-resend', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_1', { via: 'retry-idempotent', rechecked: null })])).toEqual([
      'entry 4 (COMMITTED) resent the effect without a recorded re-check',
    ]);
  });

  it('rejects a chain that does not start with PROPOSED, as a broken chain', () => {
    const result = verify(chainReceipt('headless', [drafts.authorized(), drafts.dispatched(), drafts.committed('re_1', { result: refundObject('re_1') })], key), { publicKeys });
    expect(result).toMatchObject({ valid: false, chainIntact: false, signed: true, problems: ['receipt does not start with a PROPOSED entry'] });
  });
});

describe('verify() on garbage', () => {
  const { key: otherKey } = testKey();
  const good = chainReceipt('garbage-base', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_1')], otherKey);
  const deep = JSON.parse(`${'['.repeat(20_000)}${']'.repeat(20_000)}`) as unknown;

  it.each<[string, unknown]>([
    ['undefined', undefined],
    ['null', null],
    ['a number', 42],
    ['a string', 'receipt'],
    ['an array', [good]],
    ['an empty object', {}],
    ['a receipt without entries', { ...good, entries: undefined }],
    ['entries that are not a list', { ...good, entries: 'PROPOSED' }],
    ['a null entry', { ...good, entries: [null] }],
    ['an entry of an unknown kind', { ...good, entries: [{ ...good.entries[0], kind: 'DELETED' }] }],
    ['an entry with a wrong-typed field', { ...good, entries: [{ ...good.entries[0], at: 'yesterday' }] }],
    ['a head that is missing', { ...good, head: undefined }],
    ['another format', { ...good, format: 'interlock.receipt/v0' }],
    ['nesting far deeper than any receipt', { ...good, entries: [{ ...good.entries[0], request: deep }] }],
    ['a Date where JSON was expected', { ...good, entries: [{ ...good.entries[0], extra: new Date() }] }],
  ])('answers invalid with problems for %s, never throwing', (_what, input) => {
    const result = verify(input, { publicKeys });
    expect(result.valid).toBe(false);
    expect(result.problems.length).toBeGreaterThan(0);
    for (const problem of result.problems) expect(typeof problem).toBe('string');
  });

  it('answers invalid for an empty entry list with a signed head', () => {
    const result = verify({ ...good, entries: [], head: { ...good.head, count: 0, lastHash: null } });
    expect(result.valid).toBe(false);
    expect(result.problems).toContain('receipt has no entries');
  });
});

describe('a chain judged before any head is signed (what the facts consumer raises alerts from)', () => {
  const list = [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_1'), drafts.observed({ objectType: 'refund', objectId: 're_1', status: 'failed' })];

  it('gets the rules, the outcome and the final money, and is never valid without a signed head', () => {
    const effectId = chainEffectId('unsigned-head');
    const entries = sealChain(effectId, list, key);
    const unsigned = unsignedReceipt(effectId, entries);
    expect(unsigned.format).toBe(RECEIPT_FORMAT);
    const judged = verify(unsigned);
    expect(judged).toMatchObject({ valid: null, chainIntact: true, problems: [], outcome: 'COMMITTED', answer: 'returned', finalMoney: { status: 'not_returned' }, answerMatchesFinalMoney: false });
    // With a key, the entries' seals verify and the unsigned head does not.
    expect(verify(unsigned, { publicKeys }).valid).toBe(false);
  });

  it('still sees a chain edited after it was sealed', () => {
    const effectId = chainEffectId('unsigned-edited');
    const entries = sealChain(effectId, list, key).map((entry) => (entry.kind === 'COMMITTED' ? { ...entry, found: 're_other' } : entry));
    expect(verify(unsignedReceipt(effectId, entries)).valid).toBe(false);
  });
});
