// Rule: a verification says as of when the receipt answers: the head's signedAt (the export) and the time of the last
// entry, as the receipt carries them (ms since the epoch). Two genuine exports of one effect, taken before and after
// Stripe failed its refund, both verify valid and disagree (returned, then not_returned); without these times nothing
// in either verification (nor in `receipt verify`'s per-file line) told the older answer from the newer.
import { describe, expect, it } from 'vitest';
import { reportOf } from '../../src/cli/verify-pool.js';
import { sealEntry, type Entry } from '../../src/core/entries.js';
import { buildReceipt, unsignedReceipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainEffectId, drafts, sealChain, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();
const REFUND = 're_as_of';
const effectId = chainEffectId('verify_as_of');
const landed = sealChain(effectId, [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed(REFUND)], key);
const FAILED_AT = T0 + 3_600_000;
const failed = sealEntry(
  drafts.observed({ objectType: 'refund', objectId: REFUND, status: 'failed', failureReason: 'charge_for_pending_refund_disputed', amount: 2_000 }),
  { effectId, at: FAILED_AT, prev: landed.at(-1)?.hash ?? null },
  key,
) as Entry;
const EXPORTED_BEFORE = T0 + 60_000;
const EXPORTED_AFTER = FAILED_AT + 60_000;
const before = buildReceipt(effectId, landed, key, EXPORTED_BEFORE);
const after = buildReceipt(effectId, [...landed, failed], key, EXPORTED_AFTER);

/** A receipt as a file holds it, verified as a verifier reads it. */
function verified(receipt: unknown) {
  return verify(JSON.parse(JSON.stringify(receipt)), { publicKeys });
}

describe('as of when a receipt answers', () => {
  it('two genuine exports of one effect, before and after its refund failed, verify with the times that tell them apart', () => {
    const [older, newer] = [verified(before), verified(after)];
    expect([older.valid, newer.valid]).toEqual([true, true]);
    expect([older.finalMoney.status, newer.finalMoney.status]).toEqual(['returned', 'not_returned']);
    expect({ signedAt: older.signedAt, lastEntryAt: older.lastEntryAt }).toEqual({ signedAt: EXPORTED_BEFORE, lastEntryAt: landed.at(-1)?.at });
    expect({ signedAt: newer.signedAt, lastEntryAt: newer.lastEntryAt }).toEqual({ signedAt: EXPORTED_AFTER, lastEntryAt: FAILED_AT });
  });

  it("`receipt verify`'s per-file line carries the head's signedAt", () => {
    const line = JSON.parse(reportOf({ file: 'before.json', readable: true, verification: verified(before), error: null }).line) as Record<string, unknown>;
    expect(line).toMatchObject({ status: 'valid', signedAt: EXPORTED_BEFORE, finalMoney: 'returned' });
  });

  it('a head nobody signed (a chain judged before export), or a receipt that cannot be read, says no time', () => {
    const unsigned = verify(unsignedReceipt(effectId, landed));
    expect({ signedAt: unsigned.signedAt, lastEntryAt: unsigned.lastEntryAt }).toEqual({ signedAt: null, lastEntryAt: landed.at(-1)?.at });
    const unreadable = verify({ effectId, entries: 'none' }, { publicKeys });
    expect({ valid: unreadable.valid, signedAt: unreadable.signedAt, lastEntryAt: unreadable.lastEntryAt }).toEqual({ valid: false, signedAt: null, lastEntryAt: null });
  });
});
