// Rule: entrySignatures() calls an unsigned entry `covered` only when the signed entry that claims to cover it really
// does: its signature commits to the covered entry through the `prev` links, its own and those of the entries between.
// It used to check only that the covered entry matched its own `hash` and that the signer's seal verified, so an
// entry replaced whole, with a hash computed for it (no key needed), was shown as authenticated ("covered by the
// signature of entry N") while verify() called the receipt invalid.
import { describe, expect, it } from 'vitest';
import { entryHash, sealBatch, sealEntry, type Entry } from '../../src/core/entries.js';
import { buildReceipt, type Receipt } from '../../src/core/receipt.js';
import { entrySignatures, verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainEffectId, drafts, snapshot, T0 } from './entry-chain.js';

describe('entrySignatures on a batch of unsigned entries and the signed one that covers them', () => {
  const { key, publicKeys } = testKey();
  const effectId = chainEffectId('covered-forgery');
  const first = sealEntry(drafts.proposed(), { effectId, at: T0, prev: null }, key) as Entry;
  // One batch: AUTHORIZED (unsigned, covered) then DISPATCHED (signed, covers 1).
  const batch = sealBatch([drafts.authorized(), drafts.dispatched()], { effectId, at: T0 + 1, prev: first.hash }, key);
  const receipt: Receipt = buildReceipt(effectId, [first, ...batch], key, T0 + 60_000);

  it('calls the unsigned entry covered by the signed one its links lead to', () => {
    expect(verify(receipt, { publicKeys }).valid).toBe(true);
    expect(entrySignatures(receipt, publicKeys)).toEqual([
      { status: 'signed', kid: key.kid, by: null },
      { status: 'covered', kid: key.kid, by: 2 },
      { status: 'signed', kid: key.kid, by: null },
    ]);
  });

  it('does not call a forged unsigned entry covered when the signer does not link to it', () => {
    const copy = JSON.parse(JSON.stringify(receipt)) as Receipt;
    const authorized = copy.entries[1] as unknown as Record<string, unknown>;
    expect(authorized.sig).toBeNull();
    // The forger raises the approver's cap, names another approver, and recomputes the entry's own hash.
    authorized.approval = snapshot({ approver: 'mallory@evil', capCents: 99_999_999 });
    authorized.hash = entryHash(authorized);

    expect(verify(copy, { publicKeys }).valid).toBe(false);
    expect(entrySignatures(copy, publicKeys).map((signature) => signature.status)).toEqual(['signed', 'unsigned', 'signed']);
  });
});
