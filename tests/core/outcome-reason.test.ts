// Why an effect settled as it did (core/verify.ts outcomeReason): the reason of the entry that settled it, so the
// caller of the API and the CLI hears the gate's own words, not only the outcome code.
import { describe, expect, it } from 'vitest';
import type { Draft, EntryKind } from '../../src/core/entries.js';
import { signingKeyFromPem } from '../../src/core/signing.js';
import { outcomeOf, outcomeReason } from '../../src/core/verify.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { chainEffectId, drafts, sealChain } from './entry-chain.js';

const key = signingKeyFromPem(generateSigningKeyPem().privatePem);
const chain = (name: string, list: readonly Draft<EntryKind>[]) => sealChain(chainEffectId(name), list, key);
const refused = (code: string, reason: string, extra: Partial<Draft<'REFUSED'>> = {}): Draft<'REFUSED'> => ({ kind: 'REFUSED', code, reason, checks: null, rechecked: null, changes: [], resolves: true, ...extra });

describe('the reason an effect settled', () => {
  it('is the refusal\'s own reason, and the latest refusal\'s after a re-proposal', () => {
    const entries = chain('reason-refused', [drafts.proposed(), refused('REFUSED:lease', 'approval ap_chain covers at most 2000 cents, not 2500'), drafts.proposed(), refused('REFUSED:lease', 'approval ap_chain was revoked')]);
    expect(outcomeOf(entries)).toBe('REFUSED:lease');
    expect(outcomeReason(entries)).toBe('approval ap_chain was revoked');
  });

  it('is AMBIGUOUS\'s reason, and none once a late result shows the send landed', () => {
    const ambiguous: Draft<'AMBIGUOUS'> = { kind: 'AMBIGUOUS', reason: 'the send timed out and Stripe could not be asked', rechecked: null, epoch: 1 };
    const open = chain('reason-ambiguous', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), ambiguous]);
    expect(outcomeReason(open)).toBe('the send timed out and Stripe could not be asked');
    const landed = chain('reason-late', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), ambiguous, { kind: 'LATE_RESULT', owner: 'w-chain', epoch: 1, outcome: 'landed', result: { id: 're_late' }, error: null }]);
    expect(outcomeOf(landed)).toBe('COMMITTED_ON_QUERY');
    expect(outcomeReason(landed)).toBeNull();
  });

  it('is none for a commit, and a refusal of another payload after it (evidence only) gives none either', () => {
    const entries = chain('reason-commit', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_reason'), refused('REFUSED:conflicting_payload', 'another payload under this request', { proposal: { effect: { amount: 3_000 } }, resolves: false })]);
    expect(outcomeOf(entries)).toBe('COMMITTED');
    expect(outcomeReason(entries)).toBeNull();
  });

  it('is none while a dispatch is open after a refusal was answered by a re-proposal', () => {
    const entries = chain('reason-open', [drafts.proposed(), refused('REFUSED:lease', 'approval ap_chain was used up'), drafts.proposed(), drafts.authorized(), drafts.dispatched()]);
    expect(outcomeOf(entries)).toBeNull();
    expect(outcomeReason(entries)).toBeNull();
  });
});
