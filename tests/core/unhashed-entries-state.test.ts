// Rule: a filtered listing tells an effect's state from its stored chain read without hashes
// (unhashedEntriesOfStored); for every chain that reads back at all, that state and outcome are exactly the ones the
// hashed entries give (stateOf over currentOutcome: re-decisions, late landings, refusals of another payload), and a
// chain that does not parse, or holds an entry newer than this interlock, is no state at all: it is read in full,
// which refuses it as it always did.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completeBatch, ENTRY_VERSION, prepareBatch, sealAlone, type AnyDraft, type CommitVia } from '../../src/core/entries.js';
import { signingKeyFromPem } from '../../src/core/signing.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { entriesOfStored, unhashedEntriesOfStored } from '../../src/redis/journal.js';
import { stateOf } from '../../webhooks/api/effect-view.js';
import { chainEffectId, drafts, T0 } from './entry-chain.js';

const key = signingKeyFromPem(generateSigningKeyPem().privatePem);
const effectId = chainEffectId('unhashed-state');

/** What Redis holds for these batches: one stored entry a line, sealed as the journal seals them. */
function stored(batches: readonly (readonly AnyDraft[])[]): string {
  const lines: string[] = [];
  let prev: string | null = null;
  let at = T0;
  for (const batch of batches) {
    const prepared = prepareBatch(batch, { effectId, at, prev }, key.kid);
    lines.push(...completeBatch(prepared, sealAlone(prepared.lastHash, key)).stored);
    prev = prepared.lastHash;
    at += 7;
  }
  return lines.join('\n');
}

const VIAS: readonly CommitVia[] = ['send', 'failed-but-landed', 'recovery-query', 'late-result', 'retry-idempotent', 'recovery-reapply'];
const CODES = ['REFUSED:stale_premise', 'REFUSED:target_error', 'REFUSED:conflicting_payload', 'REFUSED:over_cap', 'REFUSED:lease'];

/** Every kind of entry, with the fields the outcome rules read varied. */
const anyDraft: fc.Arbitrary<AnyDraft> = fc.oneof(
  fc.constant(drafts.proposed()),
  fc.constant(drafts.authorized()),
  fc.constant(drafts.dispatched()),
  fc.constantFrom(...VIAS).map((via) => drafts.committed('re_unhashed', { via })),
  fc.record({ code: fc.constantFrom(...CODES), resolves: fc.boolean() }).map(({ code, resolves }): AnyDraft => ({ kind: 'REFUSED', code, reason: `refused: ${code}`, checks: null, rechecked: null, changes: [], resolves })),
  fc.constant<AnyDraft>({ kind: 'AMBIGUOUS', reason: 'no answer after the send', rechecked: null, epoch: 1 }),
  fc.constantFrom('landed' as const, 'rejected' as const, 'unknown' as const).map((outcome): AnyDraft => ({ kind: 'LATE_RESULT', owner: 'w-chain', epoch: 1, outcome, result: null, error: null })),
  fc.constant(drafts.observed({ objectType: 'refund', objectId: 're_unhashed', status: 'failed' })),
  fc.constant<AnyDraft>({ kind: 'RESOLVED', item: `ambiguous:${effectId}`, action: 'resolve', by: { name: 'dana', role: 'approver' }, note: 'checked at Stripe', resolution: null, reapproval: null }),
);

describe('the state of an effect read from its chain without hashes', () => {
  it('is the state and outcome its hashed entries give, for any chain of entries in any batches', () => {
    fc.assert(
      fc.property(fc.array(fc.array(anyDraft, { minLength: 1, maxLength: 4 }), { maxLength: 6 }), (batches) => {
        const text = stored(batches);
        const unhashed = unhashedEntriesOfStored(effectId, text);
        expect(unhashed).not.toBeNull();
        expect(stateOf(unhashed ?? [])).toEqual(stateOf(entriesOfStored(effectId, text)));
        expect(unhashed?.map((entry) => entry.kind)).toEqual(batches.flat().map((draft) => draft.kind));
      }),
      { numRuns: 500 },
    );
  });

  it('is no state for a chain that does not parse or holds a newer entry: reading it in full refuses it', () => {
    const committed = stored([[drafts.proposed(), drafts.authorized(), drafts.dispatched()], [drafts.committed('re_unhashed')]]);
    const cut = committed.slice(0, committed.length - 9);
    const newer = `${committed}\n${JSON.stringify({ v: ENTRY_VERSION + 1, kind: 'COMMITTED', at: T0 + 100, sig: null })}`;
    for (const text of [cut, newer, `${committed}\nnot an entry`]) {
      expect(unhashedEntriesOfStored(effectId, text)).toBeNull();
      expect(() => entriesOfStored(effectId, text)).toThrow();
    }
    expect(unhashedEntriesOfStored(effectId, null)).toEqual([]);
  });
});
